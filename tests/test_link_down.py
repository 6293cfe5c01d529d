"""A link or switch that goes down is a fact; failover is recompiled from it.

`link_down(switch, port)` and `switch_down(switch)` (specs/intent.md) are
what a controller reports (the ONOS app posts them). The rules route the
underlay, the multicast trees and the VIP placement around what is down,
and a VIP on a switch that is down is held by the SMuxes only (Duet's HMux
failover). The verifier's fabric has no wire where a link is down, so
artifacts that still forward onto it are a violation — checked by verifying
the artifacts compiled before the link went down against the intent after.
Everything runs through `netc compile`, `netc verify`, `netc check` and a
real `netc serve` (the warm change a link-down is).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from test_vm_without_port import rows

pytestmark = pytest.mark.netc

REPO = Path(__file__).resolve().parent.parent
QUICKSTART = (REPO / "examples" / "quickstart" / "intent.ndl").read_text()
# quickstart: tor1 port 49 - agg1 port 1; tor1 port 50 - agg2 port 1
TOR1_AGG1_DOWN = 'link_down("tor1", 49).\n'


def netc(netc_bin: str, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([netc_bin, *args], capture_output=True, text=True, timeout=600, cwd=cwd)


def compiled(netc_bin: str, tmp_path: Path, name: str, extra: str) -> Path:
    intent = tmp_path / f"{name}.ndl"
    intent.write_text(QUICKSTART + extra)
    out = tmp_path / name
    r = netc(netc_bin, "compile", str(intent), "--out", str(out), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    return out


def ports_used(out: Path, switch: str) -> set[str]:
    """The ports a switch's underlay routes and route members send on."""
    used = {r[2] for r in rows(out, "p4_underlay") if r[0] == switch}
    used |= {r[-1] for r in rows(out, "p4_route_member") if r[0] == switch}
    return used


def test_a_link_down_is_routed_around_and_verified(netc_bin: str, tmp_path: Path) -> None:
    up = compiled(netc_bin, tmp_path, "up", "")
    down = compiled(netc_bin, tmp_path, "down", TOR1_AGG1_DOWN)
    # before: tor1 uses both uplinks; after: only port 50 (agg2), and agg1 no longer sends to tor1 on port 1
    assert {"49", "50"} <= ports_used(up, "tor1"), ports_used(up, "tor1")
    assert "49" not in ports_used(down, "tor1") and "50" in ports_used(down, "tor1"), ports_used(down, "tor1")
    assert "1" in ports_used(up, "agg1") and "1" not in ports_used(down, "agg1")
    # the new artifacts verify against the intent that says the link is down
    r = netc(netc_bin, "verify", str(tmp_path / "down.ndl"), cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr
    # the old artifacts still send on the dead link: the verifier's fabric has no wire there
    r = netc(netc_bin, "verify", "--artifacts", str(up), str(tmp_path / "down.ndl"), cwd=tmp_path)
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr
    assert "VIOLATED    REACH-1" in r.stdout or "VIOLATED    REACH-2" in r.stdout, r.stdout[-3000:]
    # and the same artifacts are fine while the link is up (the violation is the link, not the artifacts)
    r = netc(netc_bin, "verify", "--artifacts", str(up), str(tmp_path / "up.ndl"), cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr


def test_a_switch_down_moves_its_vip_to_the_smuxes_and_out_of_the_placement(netc_bin: str, tmp_path: Path) -> None:
    up = compiled(netc_bin, tmp_path, "up", "")
    holders = {r[0] for r in rows(up, "p4_vip")}
    assert holders, "quickstart's VIP is placed on a switch"
    (held_on,) = holders
    down = compiled(netc_bin, tmp_path, "down", f'switch_down("{held_on}").\n')
    assert not [r for r in rows(down, "p4_vip") if r[0] == held_on], "a switch that is down holds no VIP"
    assert not [r for r in rows(down, "p4_announce") if r[0] == held_on]
    # the software Mux still holds it (the aggregate carries the traffic)
    assert "203.0.113.10" in {r[2] for r in rows(down, "agent_mux_vip")}, rows(down, "agent_mux_vip")
    # no route leads through the switch that is down: both ToRs reach it on port 49 (agg1) or 50 (agg2)
    dead = "49" if held_on == "agg1" else "50"
    for tor in ("tor1", "tor2"):
        assert ports_used(down, tor) and dead not in ports_used(down, tor), (tor, ports_used(down, tor))
    r = netc(netc_bin, "verify", str(tmp_path / "down.ndl"), cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr


def test_a_port_or_switch_the_intent_lacks_is_bad_intent(netc_bin: str, tmp_path: Path) -> None:
    intent = tmp_path / "i.ndl"
    intent.write_text(QUICKSTART + 'link_down("tor1", 77).\nswitch_down("agg9").\n')
    r = netc(netc_bin, "check", "--intent", str(intent), cwd=tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    out = r.stdout + r.stderr
    assert "error_link_down_unknown" in out and "error_switch_down_unknown" in out, out
    n = len(QUICKSTART.splitlines())
    assert f"i.ndl:{n + 1}:" in out and f"i.ndl:{n + 2}:" in out, out


def test_a_link_going_down_is_a_warm_change_with_only_its_deltas(netc_bin: str, tmp_path: Path) -> None:
    from test_serve import Daemon

    first = tmp_path / "quickstart.ndl"
    first.write_text(QUICKSTART)
    d = Daemon(netc_bin, tmp_path / "st", first)
    try:
        status, reply = d.call("POST", "/v1/apply", {"files": [{"name": "intent.ndl", "text": QUICKSTART}]})
        assert status == 200, reply
        files = [{"name": "intent.ndl", "text": QUICKSTART + TOR1_AGG1_DOWN}]
        status, reply = d.call("POST", "/v1/apply", {"files": files})
        assert status == 200 and reply["verdict"] == "proven", reply
        change = reply["change"]
        assert change["full_evaluation"] is False, change
        changed = {x["device"] for x in change["devices"]}
        # the fabric's switches change; no host's flows do (its overlay does not depend on the underlay path)
        assert changed and changed <= {"tor1", "tor2", "agg1", "agg2"}, changed
        assert "tor1" in changed and "agg1" in changed, changed
        # and back up: the inverse change
        status, back = d.call("POST", "/v1/apply", {"files": [{"name": "intent.ndl", "text": QUICKSTART}]})
        assert status == 200 and {x["device"] for x in back["change"]["devices"]} == changed, back["change"]
    finally:
        d.stop()


def test_a_wiped_switch_gets_its_whole_state_in_a_plan(netc_bin: str, tmp_path: Path) -> None:
    """A switch that was down lost what a controller wrote on it: `wiped`
    asks the plan to list its whole state (every entry added), the rest as a
    change. An unchanged intent then plans only that switch."""
    from test_serve import Daemon

    first = tmp_path / "quickstart.ndl"
    first.write_text(QUICKSTART)
    d = Daemon(netc_bin, tmp_path / "st", first)
    try:
        files = [{"name": "intent.ndl", "text": QUICKSTART}]
        status, reply = d.call("POST", "/v1/apply", {"files": files})
        assert status == 200, reply
        status, plain = d.call("POST", "/v1/plan", {"files": files})
        assert status == 200 and plain["devices"] == {}, plain["devices"]
        status, plan = d.call("POST", "/v1/plan", {"files": files, "wiped": ["agg1"]})
        assert status == 200 and set(plan["devices"]) == {"agg1"}, plan["devices"]
        agg1 = plan["devices"]["agg1"]
        assert agg1["removed"] == 0 and agg1["added"] > 0, agg1
        # the whole state: as many entries as compiling from nothing lists for agg1
        out = tmp_path / "out"
        r = netc(netc_bin, "compile", str(first), "--out", str(out), cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        text = (out / "p4" / "agg1.txtpb").read_text()
        assert agg1["added"] == text.count("updates {"), (agg1, text.count("updates {"))
        status, bad = d.call("POST", "/v1/plan", {"files": files, "wiped": "agg1"})
        assert status == 400 and "wiped" in bad["error"]["message"], bad
    finally:
        d.stop()
