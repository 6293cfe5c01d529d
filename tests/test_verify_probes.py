"""AFF-1's health probes (specs/invariants.md §4): a probe a host agent
runs (`probes` of the pushed `host/<h>.json`) must aim at a DIP endpoint
that host serves, or the Muxes act on another endpoint's health (issue 29:
"a probe aimed at the wrong target"). Mutants, in every example whose hosts
probe DIPs: the target port changed, the address changed to another VM's,
the probe moved to a VM of another host. Each is caught by `netc verify
--artifacts D` as AFF-1, with the intent and without it, citing the
document's line; the unchanged documents, and a document whose keys are
written in another order, verify as before.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from test_verify_p4 import compile_examples, status, verify

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = ["quickstart", "ananta", "yoda", "rubik"]

pytestmark = pytest.mark.netc


def intent(example: str) -> str:
    return str(REPO / "examples" / example / "intent.ndl")


@pytest.fixture(scope="module")
def compiled(netc_bin: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return compile_examples(netc_bin, tmp_path_factory.mktemp("probes"), EXAMPLES)


def prober(d: Path) -> tuple[Path, dict]:
    """The first host document with a probe, and the document."""
    for f in sorted((d / "host").glob("*.json")):
        doc = json.loads(f.read_text())
        if doc.get("probes"):
            return f, doc
    pytest.fail(f"{d}: no host probes a DIP")


def write(f: Path, doc: dict) -> int:
    """Writes `doc` as netc does (sorted keys, indent 2); the line of the first probe's `{`."""
    f.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    lines = f.read_text().splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.strip() == '"probes": [')
    return start + 2


def mutants(compiled: dict[str, Path], example: str):
    base = compiled[example]
    _, doc = prober(base)
    vms = [(d["host"], v) for f in sorted((base / "host").glob("*.json"))
           for d in [json.loads(f.read_text())] for v in d.get("vms", [])]
    p = doc["probes"][0]
    other_ip = next(v["ip"] for _, v in vms if v["ip"] != p["dip"])
    elsewhere = next((v for h, v in vms if h != doc["host"] and v["tenant"] == p["tenant"]
                      and v["ip"] != p["dip"]), None)
    yield "target port", {"target_port": p["target_port"] + 1}
    yield "address", {"dip": other_ip}
    if elsewhere:
        yield "another host's VM", {"vm": elsewhere["vm"], "dip": elsewhere["ip"]}


def caught(netc_bin: str, d: Path, args: list[str], f: Path, line: int) -> None:
    rc, report, err = verify(netc_bin, ["--artifacts", str(d), *args])
    assert rc == 1, (err, status(report))
    aff1 = next(v for v in report["verdicts"] if v["invariant"] == "AFF-1")
    assert aff1["status"] == "violated", aff1
    cxs = [cx for cx in aff1["counterexamples"] if "health probe" in cx["summary"]]
    assert cxs, [cx["summary"] for cx in aff1["counterexamples"]]
    assert any(re.search(re.escape(f"{f}:{line}") + r"(?!\d)", c) for cx in cxs for c in cx["cites"]), cxs


@pytest.mark.parametrize("example", EXAMPLES)
def test_the_unchanged_probes_verify(netc_bin: str, compiled: dict[str, Path], example: str,
                                     tmp_path: Path) -> None:
    for args in ([intent(example)], []):
        rc, report, err = verify(netc_bin, ["--artifacts", str(compiled[example]), *args])
        assert status(report)["AFF-1"] == "proven", (example, args, err)
    # the same document with its probe's keys in another order: the same verdict
    d = tmp_path / example
    shutil.copytree(compiled[example], d)
    f, doc = prober(d)
    doc["probes"][0] = dict(reversed(list(doc["probes"][0].items())))
    f.write_text(json.dumps(doc, indent=2) + "\n")
    rc, report, err = verify(netc_bin, ["--artifacts", str(d), intent(example)])
    assert status(report)["AFF-1"] == "proven", err


@pytest.mark.parametrize("example", EXAMPLES)
@pytest.mark.parametrize("with_intent", [True, False])
def test_a_probe_aimed_at_the_wrong_target_is_caught(netc_bin: str, compiled: dict[str, Path], example: str,
                                                     with_intent: bool, tmp_path: Path) -> None:
    for k, (what, change) in enumerate(mutants(compiled, example)):
        d = tmp_path / f"{example}-{k}"
        shutil.copytree(compiled[example], d)
        f, doc = prober(d)
        doc["probes"][0].update(change)
        line = write(f, doc)
        caught(netc_bin, d, [intent(example)] if with_intent else [], f, line)
