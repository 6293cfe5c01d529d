"""REACH-2 (specs/invariants.md §5b): balanced traffic reaches its holder.

The Duet example places its two-level VIP blob (100.64.0.1, 600 DIPs) on
core1 and its two TIPs (100.64.255.0/1) on agg1 and agg2. Compiled, every
switch routes each announced VIP/TIP /32 toward the switch that announces
it, and `netc verify` proves REACH-2 on the `.txtpb` requests: a packet to
each VIP and TIP, entering any switch, is walked switch by switch over the
compiled entries to a switch that balances it, and core1's TIP slots to the
TIPs' holders. Two mutants of the requests, the faults a rule or renderer
could make, must be caught with exit 1, REACH-2 named and the `.txtpb`
cited: core1 without its TIP routes (what the Duet example compiled to
before netc routed announcements: every packet to blob dropped at core1),
and tor1's route to blob's holder pointed at a host port.

Each verification of the Duet example takes about two minutes.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from test_verify_p4 import blocks, edit_block, line_of, status, verify

REPO = Path(__file__).resolve().parent.parent
INTENT = str(REPO / "examples" / "duet" / "intent.ndl")
UNDERLAY = "table_id: 33554445\n"
TIPS = ('"d@\\377\\000"', '"d@\\377\\001"')  # 100.64.255.0 and .1, as the requests spell them
BLOB = '"d@\\000\\001"'  # 100.64.0.1

pytestmark = pytest.mark.netc


@pytest.fixture(scope="module")
def duet(netc_bin: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("reach2") / "duet"
    r = subprocess.run([netc_bin, "compile", INTENT, "--out", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return out


def reach2(report: dict) -> dict:
    return next(v for v in report["verdicts"] if v["invariant"] == "REACH-2")


def test_every_switch_routes_the_announced_vips_and_tips(duet: Path) -> None:
    announced: dict[str, str] = {}
    for line in (duet / "relations" / "p4_announce.csv").read_text().splitlines():
        sw, pfx = line.split("\t")
        announced[pfx] = sw
    assert announced["100.64.0.1/32"] == "core1", announced
    assert {announced["100.64.255.0/32"], announced["100.64.255.1/32"]} == {"agg1", "agg2"}, announced
    routes = {tuple(line.split("\t")[:2]) for line in (duet / "relations" / "p4_underlay.csv").read_text().splitlines()}
    switches = sorted(p.stem for p in (duet / "p4").glob("*.txtpb"))
    for pfx, holder in announced.items():
        missing = [s for s in switches if s != holder and (s, pfx) not in routes]
        assert not missing, (pfx, holder, missing)
    # and the request core1 is pushed carries both TIP routes
    core1 = (duet / "p4" / "core1.txtpb").read_text()
    for tip in TIPS:
        assert sum(1 for _, b in blocks(core1) if UNDERLAY in b and f"value: {tip}\n" in b) == 1, tip


def test_duet_verifies_with_reach2_proven(netc_bin: str, duet: Path) -> None:
    for args in ([INTENT], ["--artifacts", str(duet), INTENT]):
        rc, report, err = verify(netc_bin, args)
        violated = [v for v in report.get("verdicts", []) if v["status"] == "violated"]
        assert rc == 0, (args, err, violated[:1])
        assert status(report)["REACH-2"] == "proven", status(report)
        # blob, table, queue, www and the two TIPs: the addresses switches announce
        assert reach2(report)["detail"].startswith("6 VIP/TIP addresses walked"), reach2(report)


def run_mutant(netc_bin: str, d: Path) -> list[dict]:
    rc, report, err = verify(netc_bin, ["--artifacts", str(d), INTENT])
    assert rc == 1, err
    assert status(report)["REACH-2"] == "violated", status(report)
    cxs = reach2(report)["counterexamples"]
    assert cxs, report
    for cx in cxs:
        assert cx["packet"] and cx["packet"]["ingress"].startswith("switch "), cx
        assert any(re.search(r"\.txtpb:\d+", h) for p in cx["paths"] for h in p["hops"]) or \
            "dropped" in cx["paths"][0]["end"], cx["paths"]
        assert any("intent.ndl:" in c for c in cx["cites"]), cx["cites"]
    return cxs


def test_core1_without_its_tip_routes_is_caught(netc_bin: str, duet: Path, tmp_path: Path) -> None:
    d = tmp_path / "no-tip-routes"
    shutil.copytree(duet, d)
    f = d / "p4" / "core1.txtpb"
    for tip in TIPS:
        edit_block(f, lambda b, tip=tip: UNDERLAY in b and f"value: {tip}\n" in b, lambda b: None)
    cxs = run_mutant(netc_bin, d)
    at_core1 = [cx for cx in cxs if cx["summary"].startswith("switch core1 balances 100.64.0.1's slot")]
    assert at_core1 and all("TIP 100.64.255." in cx["summary"] for cx in at_core1), [c["summary"] for c in cxs]
    for cx in at_core1:
        # the packet enters core1 plain, to the VIP; core1's vip, ecmp and tunnel entries send it nowhere
        assert cx["packet"]["ingress"].startswith("switch core1 "), cx["packet"]
        assert "underlay: no route" in cx["paths"][0]["end"], cx["paths"]
        assert any(re.search(re.escape(str(f)) + r":\d+  core1\.tunnel", c) for c in cx["cites"]), cx["cites"]
        assert any("duet_tip_range" in c for c in cx["cites"]), cx["cites"]
    # the rest are packets to a TIP that enter at core1 or cross it: every violation is core1's
    assert all("switch core1" in cx["summary"] for cx in cxs), [c["summary"] for c in cxs]


def test_a_route_to_a_vip_holder_on_the_wrong_port_is_caught(netc_bin: str, duet: Path, tmp_path: Path) -> None:
    # tor1 routes blob (held by core1) out of 49, its uplink to agg1; point it at port 2, host h1-02
    d = tmp_path / "wrong-port"
    shutil.copytree(duet, d)
    f = d / "p4" / "tor1.txtpb"
    edit_block(f, lambda b: UNDERLAY in b and f"value: {BLOB}\n" in b,
               lambda b: b.replace('value: "1"\n', 'value: "\\002"  # mutated\n'))
    line = line_of(f, "# mutated")
    cxs = run_mutant(netc_bin, d)
    hit = [cx for cx in cxs if "switch tor1 sends packets to 100.64.0.1" in cx["summary"]]
    assert hit and "to host h1-02" in hit[0]["summary"], [c["summary"] for c in cxs]
    assert any(re.search(re.escape(f"{f}:{line}") + r"(?!\d)", c) for c in hit[0]["cites"]), (line, hit[0]["cites"])
    assert all("100.64.0.1" in cx["summary"] for cx in cxs), [c["summary"] for c in cxs]
