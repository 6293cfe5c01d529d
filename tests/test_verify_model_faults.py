"""Faults no invariant covered before (issue: the verifier's model is the
device), each a finding with a counterexample, through the user's paths:

- a multicast member losing its copy — its host's group bucket removed
  (REACH-1 on the VM traces) or a ToR's replica toward its host removed
  (REACH-1 on the switches' multicast tree);
- a host load-balancer bucket removed on one host: the hosts of one VIP
  endpoint no longer choose alike (AFF-1, host load balancers);
- a DSR reply delivered to another VM of the tenant (ISO-1, rewritten
  sources).

Each counterexample carries a concrete packet, its path, the artifact line
and the intent lines behind it. The examples themselves stay proven through
`netc verify INTENT` (which compiles them) and `--artifacts DIR INTENT`.
The catch rate over many mutants of each class is bench/mutants.py's
(tests/test_mutation_suite.py).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from test_verify_p4 import compile_examples

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = ["quickstart", "athena", "ananta", "rubik"]

pytestmark = pytest.mark.netc


def intent(example: str) -> str:
    return str(REPO / "examples" / example / "intent.ndl")


@pytest.fixture(scope="module")
def compiled(netc_bin: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return compile_examples(netc_bin, tmp_path_factory.mktemp("model-faults"), EXAMPLES)


def verify(netc: str, *args: str) -> tuple[int, dict]:
    r = subprocess.run([netc, "verify", "--json", *args], capture_output=True, text=True, timeout=600)
    return r.returncode, (json.loads(r.stdout) if r.stdout.strip().startswith("{") else {})


def violated(report: dict, inv: str) -> list[dict]:
    v = next(v for v in report["verdicts"] if v["invariant"] == inv)
    assert v["status"] == "violated", v
    return v["counterexamples"]


def mutant(base: Path, tmp: Path, rel: str, edit) -> Path:
    d = tmp / "m"
    shutil.copytree(base, d)
    f = d / rel
    f.write_text(edit(f.read_text()))
    return d


@pytest.mark.parametrize("example", EXAMPLES)
def test_examples_stay_proven(netc_bin: str, compiled: dict[str, Path], example: str) -> None:
    for args in ([intent(example)], ["--artifacts", str(compiled[example]), intent(example)]):
        rc, report = verify(netc_bin, *args)
        assert rc == 0, [v for v in report.get("verdicts", []) if v["status"] == "violated"][:1]


def test_multicast_bucket_removed(netc_bin: str, compiled: dict[str, Path], tmp_path: Path) -> None:
    # quickstart: web1 on h1 and web2 on h3 are acme's members of 239.1.1.1
    d = mutant(compiled["quickstart"], tmp_path, "ovs/h1.groups",
               lambda t: t.replace("group_id=1000,type=all,bucket=output:10", "group_id=1000,type=all"))
    rc, report = verify(netc_bin, "--artifacts", str(d), intent("quickstart"))
    assert rc == 1
    cx = violated(report, "REACH-1")[0]
    assert "group 239.1.1.1" in cx["summary"] and "acme/web1" in cx["summary"], cx["summary"]
    assert cx["packet"]["headers"]["nw_dst"] == "239.1.1.1"
    text = json.dumps(cx)
    assert "group 1000 has no buckets" in text and f"{d}/ovs/h1.flows:" in text
    assert re.search(r"intent\.ndl:\d+:\d+\s+the receiving VM acme/web1", "\n".join(cx["cites"])), cx["cites"]


def test_multicast_replica_removed(netc_bin: str, compiled: dict[str, Path], tmp_path: Path) -> None:
    # athena: tor2's group 1 (red) replicates to host port 1 (h3, member r1)
    old = '        replicas {\n          instance: 1\n          port: "\\001"\n        }\n'
    base = compiled["athena"]
    assert old in (base / "p4" / "tor2.txtpb").read_text()
    d = mutant(base, tmp_path, "p4/tor2.txtpb", lambda t: t.replace(old, "", 1))
    rc, report = verify(netc_bin, "--artifacts", str(d), intent("athena"))
    assert rc == 1
    cxs = [c for c in violated(report, "REACH-1") if "never reaches host h3" in c["summary"]]
    assert cxs, [c["summary"] for c in violated(report, "REACH-1")]
    cx = cxs[0]
    assert cx["packet"]["headers"]["vxlan_vni"] == "100" and cx["packet"]["headers"]["outer_nw_dst"] == "239.1.1.1"
    hops = "\n".join(cx["paths"][0]["hops"])
    assert f"{d}/p4/tor2.txtpb:" in hops and "tor2 multicast group 1" in hops, hops
    cites = "\n".join(cx["cites"])
    assert "vm red/r1 (member of 239.1.1.1)" in cites and re.search(r"intent\.ndl:\d+:\d+\s+host h3", cites), cites


def test_host_lb_bucket_removed(netc_bin: str, compiled: dict[str, Path], tmp_path: Path) -> None:
    def drop_last(t: str) -> str:
        out = []
        for line in t.splitlines(keepends=True):
            if line.startswith("group_id=2000,") and line.count("bucket=") >= 2:
                line = line.rstrip("\n").rsplit(",bucket=", 1)[0] + "\n"
            out.append(line)
        return "".join(out)
    d = mutant(compiled["ananta"], tmp_path, "ovs/h2.groups", drop_last)
    rc, report = verify(netc_bin, "--artifacts", str(d), intent("ananta"))
    assert rc == 1
    cx = violated(report, "AFF-1")[0]
    assert "131.107.0.20:1433" in cx["summary"] and "h2 group" in cx["summary"], cx["summary"]
    assert cx["packet"]["headers"]["nw_dst"] == "131.107.0.20"
    cites = "\n".join(cx["cites"])
    assert f"{d}/ovs/h2.groups:1" in cites and re.search(r"intent\.ndl:\d+:\d+\s+vip 131\.107\.0\.20", cites), cites
    assert any("group 2000 bucket 1" in h for p in cx["paths"] for h in p["hops"]), cx["paths"]


def test_dsr_reply_to_another_vm(netc_bin: str, compiled: dict[str, Path], tmp_path: Path) -> None:
    # rubik h1a: idx1 (port 10) and idx2 (port 11) are DIPs of one VIP; the
    # reply flow to client 10.40.1.1 (idx1) turned to idx2's port
    base = compiled["rubik"]
    text = (base / "ovs" / "h1a.flows").read_text()
    m = re.search(r"^table=32,.*nw_dst=10\.40\.1\.1,actions=.*output:10$", text, re.M)
    assert m, "rubik's reply flow to idx1"
    d = mutant(base, tmp_path, "ovs/h1a.flows", lambda t: t.replace(m.group(0), m.group(0)[:-2] + "11"))
    rc, report = verify(netc_bin, "--artifacts", str(d), intent("rubik"))
    assert rc == 1
    cx = next(c for c in violated(report, "ISO-1") if "source rewritten to 100.70.0.1" in c["summary"])
    assert "reach search/idx2" in cx["summary"], cx["summary"]
    assert cx["packet"]["headers"]["tp_src"] == "9000" and cx["packet"]["headers"]["nw_dst"] != "10.40.1.2"
    hops = "\n".join(cx["paths"][0]["hops"])
    assert f"{d}/ovs/h1a.flows:" in hops and "table=32" in hops, hops
