"""`netc verify --against GEN` on a real store, and `netc apply` following PLAN-1's order on real OVS.

One local lab (its own state directory, `ovs-vswitchd --enable-dummy` per
quickstart host, stopped by pid with `netc lab stop` at the end):

1. `netc apply` the quickstart: generation 1.
2. `netc verify --against 1 --state S INTENT` for three changes:
   db1 moved h2 → h3 (AFF-2 and PLAN-1 proven, exit 0); the same move
   planned in the flat order (`NETC_ROLLOUT=flat`: PLAN-1 violated, a
   black-holed packet, exit 1); web1's DIP weight 1 → 3 (AFF-2 violated:
   a quarter of the VIP's hashes leave a DIP present in both, exit 1).
   A generation that is not in the store: exit 2, named, with a hint.
3. `netc apply` of the move in the flat order is refused (exit 1), nothing
   is committed.
4. `netc apply` of the move holds after phase 2 (`NETC_ROLLOUT_HOLD_AFTER_PHASE`):
   in that intermediate state the real bridges deliver web1 → db1 through
   h2's hairpin (h1 → h2 → h3, flows with cookie concern 9 on h2); once
   released, the apply commits generation 2, the hairpin is gone and the
   packet goes h1 → h3.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from ovs_fixture import ensure_ovs

pytestmark = pytest.mark.netc

REPO = Path(__file__).resolve().parent.parent
QUICKSTART = REPO / "examples" / "quickstart" / "intent.ndl"


def run(bin_: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([bin_, *args], capture_output=True, text=True, timeout=600,
                          env={**os.environ, **(env or {})})


def verdicts(stdout: str) -> dict[str, dict]:
    return {v["invariant"]: v for v in json.loads(stdout)["verdicts"]}


def trace(bin_: str, state: Path) -> dict:
    r = run(bin_, "trace", "acme/web1", "acme/db1", "tcp/5432", "--state", str(state), "--json")
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout)


def generations(bin_: str, state: Path) -> list[int]:
    r = run(bin_, "history", "--state", str(state), "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    rows = doc["generations"] if isinstance(doc, dict) else doc
    return sorted(g["generation"] for g in rows)


def h2_hairpin_flows(state: Path) -> list[str]:
    mgmt = state / "lab" / "h2" / "br-int.mgmt"
    dump = subprocess.run(["ovs-ofctl", "-O", "OpenFlow15", "--no-stats", "dump-flows", f"unix:{mgmt}"],
                          capture_output=True, text=True, timeout=60, check=True).stdout
    return [ln for ln in dump.splitlines() if "cookie=0x9" in ln]


@pytest.fixture(scope="module")
def lab(netc_bin: str, tmp_path_factory: pytest.TempPathFactory):
    ensure_ovs()
    base = tmp_path_factory.mktemp("against")
    state = base / "st"
    text = QUICKSTART.read_text()
    moved = text.replace('10.1.2.21, "h2")', '10.1.2.21, "h3")').replace(
        'vm_port("h2", "acme", "db1", 10).', 'vm_port("h3", "acme", "db1", 11).')
    weighted = text.replace('"acme", "web1", 8080, 1)', '"acme", "web1", 8080, 3)')
    assert moved != text and weighted != text
    files = {"moved": base / "moved.ndl", "weighted": base / "weighted.ndl"}
    files["moved"].write_text(moved)
    files["weighted"].write_text(weighted)
    try:
        r = run(netc_bin, "apply", str(QUICKSTART), "--state", str(state))
        assert r.returncode == 0, r.stdout + r.stderr
        yield state, files
    finally:
        st = run(netc_bin, "lab", "status", "--state", str(state), "--json")
        seen = [p for h in json.loads(st.stdout or '{"hosts": []}')["hosts"]
                for p in (h["ovsdb_server"], h["ovs_vswitchd"]) if p]
        s = run(netc_bin, "lab", "stop", "--state", str(state), "--json")
        assert s.returncode == 0, s.stderr
        assert sorted(json.loads(s.stdout)["stopped"]) == sorted(seen)


def test_safe_move_against_a_stored_generation_is_proven(netc_bin: str, lab) -> None:
    state, files = lab
    assert generations(netc_bin, state) == [1]
    r = run(netc_bin, "verify", "--against", "1", "--state", str(state), str(files["moved"]), "--json")
    assert r.returncode == 0, r.stderr
    v = verdicts(r.stdout)
    assert v["AFF-2"]["status"] == "proven", v["AFF-2"]
    assert v["PLAN-1"]["status"] == "proven", v["PLAN-1"]
    assert "1 VM move(s) (acme/db1 h2 → h3)" in v["PLAN-1"]["detail"], v["PLAN-1"]


def test_flat_order_against_a_stored_generation_is_a_plan1_violation(netc_bin: str, lab) -> None:
    state, files = lab
    r = run(netc_bin, "verify", "--against", "1", "--state", str(state), str(files["moved"]), "--json",
            env={"NETC_ROLLOUT": "flat"})
    assert r.returncode == 1, r.stderr
    v = verdicts(r.stdout)
    assert v["PLAN-1"]["status"] == "violated", v["PLAN-1"]
    cx = v["PLAN-1"]["counterexamples"][0]
    assert "black-holed" in cx["summary"] and cx["packet"]["headers"]["nw_dst"] == "10.1.2.21", cx
    assert v["AFF-2"]["status"] == "proven", v["AFF-2"]


def test_remapping_dips_against_a_stored_generation_is_an_aff2_violation(netc_bin: str, lab) -> None:
    state, files = lab
    r = run(netc_bin, "verify", "--against", "1", "--state", str(state), str(files["weighted"]), "--json")
    assert r.returncode == 1, r.stderr
    v = verdicts(r.stdout)
    assert v["AFF-2"]["status"] == "violated", v["AFF-2"]
    assert "move away from a DIP that is in both generations" in v["AFF-2"]["counterexamples"][0]["summary"]
    # the stateless HMux breaks what moves; the software Mux keeps its connections (a note)
    on = [c["summary"] for c in v["AFF-2"]["counterexamples"]]
    assert any("`agg1`" in c for c in on) and not any("`mux1`" in c for c in on), on
    notes = json.loads(r.stdout)["notes"]
    assert any("on `mux1`: a software Mux" in n for n in notes), notes
    assert v["PLAN-1"]["status"] == "proven", v["PLAN-1"]


def test_a_generation_not_in_the_store_is_an_input_error(netc_bin: str, lab) -> None:
    state, files = lab
    r = run(netc_bin, "verify", "--against", "7", "--state", str(state), str(files["moved"]))
    assert r.returncode == 2, r.stdout + r.stderr
    assert "generation 7 is not in the store" in r.stderr, r.stderr
    assert "netc history" in r.stderr, r.stderr
    assert "panicked" not in r.stderr


def test_apply_refuses_the_flat_order(netc_bin: str, lab) -> None:
    state, files = lab
    r = run(netc_bin, "apply", str(files["moved"]), "--state", str(state), env={"NETC_ROLLOUT": "flat"})
    assert r.returncode == 1, r.stdout + r.stderr
    assert "PLAN-1" in r.stdout + r.stderr
    assert generations(netc_bin, state) == [1]
    assert trace(netc_bin, state)["fates"][0]["host"] == "h2"  # devices untouched: db1 still on h2


def test_apply_passes_through_the_hairpin_state(netc_bin: str, lab, tmp_path: Path) -> None:
    state, files = lab
    err = tmp_path / "apply.err"
    with err.open("w") as e:
        p = subprocess.Popen([netc_bin, "apply", str(files["moved"]), "--state", str(state)],
                             stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=e, text=True,
                             env={**os.environ, "NETC_ROLLOUT_HOLD_AFTER_PHASE": "2"})
    try:
        deadline = time.monotonic() + 300
        while "holding after phase 2" not in err.read_text():
            assert p.poll() is None, err.read_text()
            assert time.monotonic() < deadline, "the apply never reached phase 2"
            time.sleep(0.2)
        # the intermediate state: h1 still sends db1's packets to h2, whose hairpin sends them on to h3
        assert h2_hairpin_flows(state), "no hairpin flows on h2"
        t = trace(netc_bin, state)
        assert t["reached"], t
        assert [h["host"] for h in t["hops"]] == ["h1", "h2", "h3"], t
        assert t["fates"] == [{"fate": "delivered", "host": "h3", "ofport": 11, "tenant": "acme", "vm": "db1"}]
        assert p.stdin is not None
        p.stdin.write("\n")
        p.stdin.flush()
        assert p.wait(timeout=300) == 0, err.read_text()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(timeout=30)
    assert generations(netc_bin, state) == [1, 2]
    assert not h2_hairpin_flows(state), "the hairpin is removed in phase 4"
    t = trace(netc_bin, state)
    assert t["reached"] and [h["host"] for h in t["hops"]] == ["h1", "h3"], t
