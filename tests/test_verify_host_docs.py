"""The verifier reads the host-agent documents that are pushed.

`netc apply` pushes `host/<device>.json` to the agents (the software Muxes'
VIP maps, the hosts' DIPs, probes, SNAT ranges, NF chains, L7 rules); the
`relations/agent_*.csv` beside them are a printout. So `netc verify` reads
the documents: a DIP slot or a tunnel changed in `host/mux1.json` alone is
caught, citing the document's line, while the same change in the printout
alone changes nothing that is verified. A document missing while the
relations name its device is an incomplete set (exit 2), a document that is
not one is an error at its file, and the same document written another way
(keys in another order, another indentation) verifies alike.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from test_verify_p4 import status, verify

REPO = Path(__file__).resolve().parent.parent
INTENT = str(REPO / "examples" / "quickstart" / "intent.ndl")

pytestmark = pytest.mark.netc


@pytest.fixture(scope="module")
def quickstart(netc_bin: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("host-docs") / "qs"
    r = subprocess.run([netc_bin, "compile", INTENT, "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return out


def copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def object_line(path: Path, section: str, index: int) -> int:
    """The line of the `{` of item `index` of `section` in a pretty document."""
    lines = path.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith(f'"{section}": ['))
    opens = [i for i in range(start + 1, len(lines)) if lines[i].strip() == "{"]
    return opens[index] + 1


def violated(report: dict) -> list[dict]:
    return [v for v in report.get("verdicts", []) if v["status"] == "violated"]


def test_the_unchanged_set_verifies(netc_bin: str, quickstart: Path) -> None:
    rc, report, err = verify(netc_bin, ["--artifacts", str(quickstart), INTENT])
    assert rc == 0, (err, violated(report)[:1])


def test_a_dip_slot_changed_in_the_pushed_document_is_caught(netc_bin: str, quickstart: Path, tmp_path: Path) -> None:
    d = copy(quickstart, tmp_path / "slot")
    f = d / "host" / "mux1.json"
    doc = json.loads(f.read_text())
    members = doc["mux_members"]
    assert len({m["member"] for m in members}) > 1, members
    # slot 1 takes slot 0's member: the Mux now sends slot 1's connections elsewhere than the switch does
    members[1]["member"] = members[0]["member"]
    f.write_text(json.dumps(doc, indent=2) + "\n")
    line = object_line(f, "mux_members", 1)
    rc, report, err = verify(netc_bin, ["--artifacts", str(d), INTENT])
    assert rc == 1, (err, status(report))
    cited = [cx for v in violated(report) for cx in v["counterexamples"]
             if any(re.search(re.escape(f"{f}:{line}") + r"(?!\d)", c) for c in cx["cites"])]
    assert cited, [(v["invariant"], [cx["cites"] for cx in v["counterexamples"]]) for v in violated(report)]


def test_a_tunnel_removed_from_the_pushed_document_is_caught(netc_bin: str, quickstart: Path,
                                                             tmp_path: Path) -> None:
    d = copy(quickstart, tmp_path / "tunnel")
    f = d / "host" / "mux1.json"
    doc = json.loads(f.read_text())
    doc["mux_tunnels"] = doc["mux_tunnels"][1:]
    f.write_text(json.dumps(doc, indent=2) + "\n")
    rc, report, err = verify(netc_bin, ["--artifacts", str(d), INTENT])
    assert rc == 1, (err, status(report))
    assert status(report)["AFF-1"] == "violated", status(report)


def test_the_relations_printout_is_not_what_is_verified(netc_bin: str, quickstart: Path, tmp_path: Path) -> None:
    d = copy(quickstart, tmp_path / "printout")
    csv = d / "relations" / "agent_mux_member.csv"
    rows = [line.split("\t") for line in csv.read_text().splitlines()]
    rows[1][6] = rows[0][6]
    csv.write_text("".join("\t".join(r) + "\n" for r in rows))
    rc, report, err = verify(netc_bin, ["--artifacts", str(d), INTENT])
    assert rc == 0, (err, violated(report)[:1])


def test_the_same_document_written_another_way_verifies_alike(netc_bin: str, quickstart: Path,
                                                              tmp_path: Path) -> None:
    d = copy(quickstart, tmp_path / "reformatted")
    for f in (d / "host").glob("*.json"):
        doc = json.loads(f.read_text())
        # keys in reverse order, items' keys too, one-space indentation
        rev = {k: ([dict(reversed(list(o.items()))) for o in v] if isinstance(v, list) else v)
               for k, v in reversed(list(doc.items()))}
        f.write_text(json.dumps(rev, indent=1) + "\n")
    rc, report, err = verify(netc_bin, ["--artifacts", str(d), INTENT])
    assert rc == 0, (err, violated(report)[:1])


def test_a_missing_document_is_an_incomplete_set(netc_bin: str, quickstart: Path, tmp_path: Path) -> None:
    d = copy(quickstart, tmp_path / "missing")
    (d / "host" / "mux1.json").unlink()
    rc, report, err = verify(netc_bin, ["--artifacts", str(d), INTENT])
    assert rc == 2, (rc, err)
    assert "mux1" in err and "incomplete" in err, err


@pytest.mark.parametrize("edit, expect", [
    (lambda doc: doc.update(schema="other/1"), "schema"),
    (lambda doc: doc.update(host="mux2"), '"host": "mux1"'),
    (lambda doc: doc.update(surprise=[]), "unknown section `surprise`"),
    (lambda doc: doc["mux_members"][0].pop("member"), "has no `member`"),
    (lambda doc: doc["mux_members"][0].update(member=[1]), "neither a string nor a number"),
])
def test_a_document_that_is_not_one_is_an_error_at_its_file(netc_bin: str, quickstart: Path, tmp_path: Path,
                                                            edit, expect: str) -> None:
    d = copy(quickstart, tmp_path / "bad")
    f = d / "host" / "mux1.json"
    doc = json.loads(f.read_text())
    edit(doc)
    f.write_text(json.dumps(doc, indent=2) + "\n")
    rc, report, err = verify(netc_bin, ["--artifacts", str(d), INTENT])
    assert rc == 2, (rc, err)
    assert str(f) in err and expect in err, err
