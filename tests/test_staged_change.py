"""A DIP change to a VIP that a switch holds goes through the SMuxes in
stages (Duet §2.5; specs/invariants.md AFF-2, README "Staged changes").

Quickstart's VIP 203.0.113.10 is placed on agg1 (an HMux, which chooses a
DIP by the hash alone) and held by the software Mux mux1 (which keeps a
connection table). Adding a DIP at once would move established
connections on agg1 (AFF-2); `plan` and `apply` instead withdraw the VIP
to the SMuxes, change its DIPs there, and return it to a switch after
`--drain` — each stage a generation verified against the one before.
Everything runs through the commands a user runs (`plan`, `apply`,
`rollback`, `history`, `diff`), against the store; no device is reached
(an inventory without devices), so the verdicts and the store are what is
checked.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

from test_gate import NEW_DIP, REPO, doc, run

VIP_KEY = "203.0.113.10:80/6"


def setup(netc_bin: str, tmp_path: Path, extra: str = "") -> tuple[list[str], Path]:
    """Generation 1 is quickstart (plus `extra`); the intent file then holds
    quickstart with a DIP added to its VIP."""
    state, inventory, intent = tmp_path / "st", tmp_path / "none.toml", tmp_path / "intent.ndl"
    inventory.write_text("# no device is reached\n")
    base = (REPO / "examples" / "quickstart" / "intent.ndl").read_text()
    intent.write_text(base + extra)
    common = ["--state", str(state), "--inventory", str(inventory)]
    r = run(netc_bin, "apply", *common, str(intent), cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    intent.write_text(base + NEW_DIP)
    return common, intent


def notes(tmp_path: Path) -> list[str]:
    db = sqlite3.connect(tmp_path / "st" / "state.db")
    return [n for (n,) in db.execute("SELECT note FROM generation ORDER BY id")]


def diff_devices(netc_bin: str, tmp_path: Path, a: int, b: int) -> dict:
    r = run(netc_bin, "diff", "--json", "--state", str(tmp_path / "st"), str(a), str(b), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    return doc(r.stdout)["devices"]


def test_plan_stages_a_dip_added_to_a_vip_on_a_switch(netc_bin: str, tmp_path: Path) -> None:
    common, intent = setup(netc_bin, tmp_path)
    r = run(netc_bin, "plan", "--json", "--state", common[1], str(intent), cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    plan = doc(r.stdout)
    assert plan["verdict"] == "proven", plan["verdict"]
    # the change made at once is what the stages avoid: AFF-2 on agg1
    aff2 = next(v for v in plan["report"]["verdicts"] if v["invariant"] == "AFF-2")
    assert aff2["status"] == "violated" and {c["key"] for c in aff2["counterexamples"]} == {VIP_KEY}, aff2
    st = plan["staged"]
    assert st["vips"] == ["203.0.113.10"] and st["verdict"] == "proven", st
    assert [s["name"] for s in st["stages"]] == ["withdraw", "change", "return"], st
    for s in st["stages"]:
        assert s["verdict"] == "proven", s
        verdicts = {v["invariant"]: v["status"] for v in s["report"]["verdicts"]}
        assert verdicts["AFF-2"] == "proven" and verdicts["PLAN-1"] == "proven", verdicts
    switches = {"agg1", "agg2", "tor1", "tor2"}
    withdraw, change, back = (set(s["devices"]) for s in st["stages"])
    # the switches drop the VIP (and the /32 routes toward it), nothing else moves
    assert withdraw == switches, withdraw
    assert all(d["added"] == 0 for d in st["stages"][0]["devices"].values()), st["stages"][0]
    # the DIPs change where a connection table keeps established connections
    assert "mux1" in change and not change & switches, change
    assert back == switches, back
    assert st["stages"][1]["drain_after"] is True

    r = run(netc_bin, "plan", "--state", common[1], str(intent), cwd=tmp_path)
    assert r.returncode == 0 and "staged:" in r.stdout and "proven, staged" in r.stdout, r.stdout
    assert "withdraw 203.0.113.10 from the switches to the SMuxes" in r.stdout, r.stdout


def test_apply_commits_each_stage_and_rollback_stages_the_way_back(netc_bin: str, tmp_path: Path) -> None:
    common, intent = setup(netc_bin, tmp_path)
    r = run(netc_bin, "apply", "--json", *common, "--drain", "0", str(intent), cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    done = doc(r.stdout)["staged"]
    assert [d["generation"] for d in done] == [2, 3, 4], done
    assert all(d["verdict"] == "proven" and not d["forced"] for d in done), done
    assert [n.split(":")[0] for n in notes(tmp_path)[1:]] == [
        "stage 1/3 (withdraw)", "stage 2/3 (change)", "stage 3/3 (return)"], notes(tmp_path)
    # generation 2: agg1 holds the VIP no longer; generation 4: back, with the new DIP
    assert set(diff_devices(netc_bin, tmp_path, 1, 2)) == {"agg1", "agg2", "tor1", "tor2"}
    assert "mux1" in diff_devices(netc_bin, tmp_path, 2, 3)
    assert set(diff_devices(netc_bin, tmp_path, 3, 4)) == {"agg1", "agg2", "tor1", "tor2"}
    # what was applied is what the intent says: nothing left to plan
    r = run(netc_bin, "plan", "--json", "--state", common[1], str(intent), cwd=tmp_path)
    assert r.returncode == 0 and doc(r.stdout)["devices"] == {} and doc(r.stdout)["staged"] is None, r.stdout

    # rolling back removes the DIP: the same rules stage the way back, no --force, no --accept
    r = run(netc_bin, "rollback", "1", *common, "--drain", "0", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "stage 1/3: withdraw 203.0.113.10" in r.stdout, r.stdout
    last = notes(tmp_path)[-1]
    assert last.startswith("rollback to 1; stage 3/3 (return)"), last
    assert diff_devices(netc_bin, tmp_path, 1, 7) == {}, "the rollback ends exactly at generation 1"


def test_accept_makes_the_change_at_once(netc_bin: str, tmp_path: Path) -> None:
    common, intent = setup(netc_bin, tmp_path)
    r = run(netc_bin, "apply", "--json", *common, "--accept", f"AFF-2:{VIP_KEY}",
            "--reason", "no connections to keep", str(intent), cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    d = doc(r.stdout)
    assert d["generation"] == 2 and "staged" not in d, d
    assert "accepted AFF-2:203.0.113.10:80/6" in notes(tmp_path)[-1]


def test_a_vip_coming_back_to_a_switch_with_other_dips_is_a_violation(netc_bin: str, tmp_path: Path) -> None:
    """The soundness of the last stage: a switch newly holding a VIP is
    compared with what served it before (the SMux). With the VIP withdrawn in
    generation 1 and its DIPs changed in the same step as its return, the
    change made at once moves the SMux's connections onto agg1's hash."""
    common, intent = setup(netc_bin, tmp_path, extra="vip_withdrawn(203.0.113.10).\n")
    r = run(netc_bin, "plan", "--json", "--state", common[1], str(intent), cwd=tmp_path)
    plan = doc(r.stdout)
    aff2 = next(v for v in plan["report"]["verdicts"] if v["invariant"] == "AFF-2")
    assert aff2["status"] == "violated", aff2
    assert any("`agg1` (before: `mux1`)" in c["summary"] for c in aff2["counterexamples"]), aff2
    # staged from there: the VIP is withdrawn already, so stage 1 changes nothing
    stages = plan["staged"]["stages"]
    assert stages[0]["devices"] == {} and plan["verdict"] == "proven", stages


def test_an_apply_stopped_during_the_drain_never_skips_it(netc_bin: str, tmp_path: Path) -> None:
    """Stage 2 is committed only after the drain: killed while waiting, the
    store holds stage 1, and the next apply pushes stage 2 again and waits
    again rather than returning the VIP to a switch at once."""
    common, intent = setup(netc_bin, tmp_path)
    p = subprocess.Popen(
        [netc_bin, "apply", *common, "--drain", "60s", str(intent)],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert p.stderr is not None
        deadline = time.monotonic() + 120
        line = ""
        while time.monotonic() < deadline and "--drain" not in line:
            line = p.stderr.readline()
            if not line and p.poll() is not None:
                break
        assert "waiting 60 s (--drain)" in line, line
    finally:
        os.kill(p.pid, signal.SIGKILL)
        p.wait(timeout=30)
    assert [n.split(":")[0] for n in notes(tmp_path)[1:]] == ["stage 1/3 (withdraw)"], notes(tmp_path)
    r = run(netc_bin, "apply", "--json", *common, "--drain", "1s", str(intent), cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    done = doc(r.stdout)["staged"]
    assert [d["generation"] for d in done] == [3, 4], done
    assert "waiting 1 s (--drain)" in r.stderr, r.stderr
    assert [n.split(":")[0] for n in notes(tmp_path)[1:]] == [
        "stage 1/3 (withdraw)", "stage 2/3 (change)", "stage 3/3 (return)"], notes(tmp_path)


def test_a_withdrawn_vip_must_exist(netc_bin: str, tmp_path: Path) -> None:
    intent = tmp_path / "intent.ndl"
    intent.write_text((REPO / "examples" / "quickstart" / "intent.ndl").read_text() + "vip_withdrawn(203.0.113.99).\n")
    r = run(netc_bin, "check", "--intent", str(intent), cwd=tmp_path)
    assert r.returncode == 1 and "vip withdrawn unknown" in r.stderr and "203.0.113.99" in r.stderr, r.stderr
    assert f"{intent}:" in r.stderr, r.stderr


def test_drain_takes_durations(netc_bin: str, tmp_path: Path) -> None:
    r = run(netc_bin, "apply", "--drain", "soon", str(tmp_path / "x.ndl"), cwd=tmp_path)
    assert r.returncode == 2 and "not a duration" in r.stderr, r.stderr
    help_text = run(netc_bin, "apply", "--help", cwd=tmp_path).stdout
    assert "--drain" in help_text and "three stages" in help_text, help_text


def test_the_daemon_stages_the_change_as_the_cli_does(netc_bin: str, tmp_path: Path) -> None:
    """`netc serve` gives the verdict `netc plan` gives (the staged change,
    proven) and its apply makes the same three generations, each with its
    own deltas on the stream, the change stage committed after `drain`."""
    from test_serve import Daemon

    base = (REPO / "examples" / "quickstart" / "intent.ndl").read_text()
    first = tmp_path / "quickstart.ndl"
    first.write_text(base)
    d = Daemon(netc_bin, tmp_path / "st", first)
    try:
        files = [{"name": "intent.ndl", "text": base}]
        status, reply = d.call("POST", "/v1/apply", {"files": files})
        assert status == 200 and reply["generation"] == 1, reply
        files = [{"name": "intent.ndl", "text": base + NEW_DIP}]
        status, plan = d.call("POST", "/v1/plan", {"files": files})
        assert status == 200, plan
        assert plan["verdict"] == "proven" and plan["staged"]["vips"] == ["203.0.113.10"], plan["verdict"]
        assert [s["name"] for s in plan["staged"]["stages"]] == ["withdraw", "change", "return"]
        # the CLI's plan of the same change on the same store says the same
        (tmp_path / "intent.ndl").write_text(base + NEW_DIP)
        r = run(netc_bin, "plan", "--json", "--state", str(tmp_path / "st"), str(tmp_path / "intent.ndl"), cwd=tmp_path)
        assert r.returncode == 0, r.stdout + r.stderr
        cli = doc(r.stdout)
        assert cli["verdict"] == plan["verdict"]
        assert [set(s["devices"]) for s in cli["staged"]["stages"]] == [
            set(s["devices"]) for s in plan["staged"]["stages"]]

        status, stream = d.call("GET", "/v1/deltas?since=0&wait=0")
        since = stream["next"]
        t0 = time.monotonic()
        status, applied = d.call("POST", "/v1/apply", {"files": files, "drain": 2})
        took = time.monotonic() - t0
        assert status == 200, applied
        assert took >= 2, f"the change stage was committed without its drain ({took:.1f} s)"
        stages = applied["staged"]["stages"]
        assert [s["applied"]["generation"] for s in stages] == [2, 3, 4], stages
        assert all(s["applied"]["verdict"] == "proven" for s in stages), stages
        assert applied["generation"] == 4 and applied["base"] == 1, applied
        assert [n.split(":")[0] for n in notes(tmp_path)[1:]] == [
            "stage 1/3 (withdraw)", "stage 2/3 (change)", "stage 3/3 (return)"], notes(tmp_path)
        # each stage's deltas are on the stream, in order: a consumer programs the stages
        status, later = d.call("GET", f"/v1/deltas?since={since}&wait=0")
        gens = [e["generation"] for e in later["deltas"]]
        assert gens == sorted(gens) and set(gens) == {2, 3, 4}, gens
        assert {e["device"] for e in later["deltas"] if e["generation"] == 2} == {"agg1", "agg2", "tor1", "tor2"}
        assert "mux1" in {e["device"] for e in later["deltas"] if e["generation"] == 3}
        # the same result as the CLI: nothing left to plan
        status, again = d.call("POST", "/v1/plan", {"files": files})
        assert status == 200 and again["devices"] == {} and again["staged"] is None, again
    finally:
        d.stop()


def test_the_daemon_refuses_a_bad_drain(netc_bin: str, tmp_path: Path) -> None:
    from test_serve import Daemon

    first = tmp_path / "quickstart.ndl"
    first.write_text((REPO / "examples" / "quickstart" / "intent.ndl").read_text())
    d = Daemon(netc_bin, tmp_path / "st", first)
    try:
        status, reply = d.call("POST", "/v1/apply", {"files": [{"name": "i.ndl", "text": first.read_text()}],
                                                     "drain": "soon"})
        assert status == 400 and "drain" in reply["error"]["message"], reply
    finally:
        d.stop()
