"""Faults an apply must survive, on real OVS: two applies at once, a flow edited
in place behind netc's back (its cookie kept), a device that rejects a mod.

Every bridge is a real ovs-vswitchd started by tests/ovs_fixture.py and stopped
by pid; every `netc` process a test starts is waited for (bounded).
"""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest

from ovs_fixture import Fabric
from test_apply import NETC, assert_bridges_hold, assert_store_consistent, db, netc, write_inventory
from test_apply_crash import SMALL, VARIANTS

HOSTS = {"h1": ("192.168.0.11", [10]), "h2": ("192.168.0.12", [10]), "h3": ("192.168.0.13", [10, 11])}
BUSY = "another apply is running"


@pytest.fixture(scope="module")
def fabric():
    f = Fabric(HOSTS)
    try:
        yield f
    finally:
        f.stop()


def _inventory(fabric: Fabric, tmp_path):
    return write_inventory(tmp_path / "inv.toml", {h: fabric.hosts[h].bridge for h in HOSTS})


def _intents(tmp_path):
    paths = []
    for i, text in enumerate(VARIANTS):
        p = tmp_path / f"v{i}.ndl"
        p.write_text(text)
        paths.append(p)
    return paths


def _wait_for_line(p: subprocess.Popen, needle: str, timeout: float = 120) -> str:
    """Reads p's stderr until a line holds `needle` (bounded)."""
    deadline = time.monotonic() + timeout
    seen = []
    while time.monotonic() < deadline:
        line = p.stderr.readline()
        if not line:
            break
        seen.append(line)
        if needle in line:
            return line
    p.kill()
    p.wait(timeout=10)
    raise AssertionError(f"`{needle}` never came; stderr: {''.join(seen)}")


def test_second_apply_is_refused_before_it_plans(fabric, tmp_path):
    """An apply holding the lock (planned, not yet pushed) makes a second one
    exit 2 at once, naming its pid: the second never plans against the
    generation the first is about to replace, and commits nothing."""
    inv = _inventory(fabric, tmp_path)
    v = _intents(tmp_path)
    state = tmp_path / "state"
    assert netc("apply", "--state", state, "--inventory", inv, v[0]).returncode == 0
    first = subprocess.Popen([NETC, "apply", "--state", str(state), "--inventory", str(inv), str(v[1])],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=dict(os.environ, NETC_APPLY_HOLD_AFTER_PLAN="1"))
    try:
        _wait_for_line(first, "holding after planning")
        t0 = time.monotonic()
        second = netc("apply", "--state", state, "--inventory", inv, v[2])
        took = time.monotonic() - t0
        assert second.returncode == 2, second.stdout + second.stderr
        assert BUSY in second.stderr and f"pid {first.pid} since" in second.stderr, second.stderr
        assert "nothing was planned or pushed" in second.stderr, second.stderr
        assert second.stdout == "", "the refused apply printed a plan"
        assert took < 10, f"the refused apply took {took:.1f} s: it planned"
        # --json says the same
        j = netc("apply", "--json", "--state", state, "--inventory", inv, v[2])
        assert j.returncode == 2 and BUSY in json.loads(j.stdout)["error"]["message"], j.stdout
    finally:
        out, err = first.communicate("\n", timeout=120)
    assert first.returncode == 0, out + err
    assert_store_consistent(state)
    with db(state) as c:
        files = [r[0] for r in c.execute("SELECT path FROM intent_file ORDER BY gen")]
    assert files == [str(v[0]), str(v[1])], files
    assert_bridges_hold(fabric, state)


def test_two_applies_on_an_empty_state_directory(fabric, tmp_path):
    """Started together on an empty state directory: each one either applies
    or is refused with the clean message — never a raw SQLite or OVS error."""
    inv = _inventory(fabric, tmp_path)
    v = _intents(tmp_path)
    refused = 0
    for trial in range(4):
        state = tmp_path / f"state{trial}"
        procs = [subprocess.Popen([NETC, "apply", "--state", str(state), "--inventory", str(inv), str(p)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for p in v[:2]]
        results = [(p.wait(timeout=120), p.stdout.read(), p.stderr.read()) for p in procs]
        for p in procs:
            p.stdout.close()
            p.stderr.close()
        for rc, out, err in results:
            assert rc == 0 or (rc == 2 and BUSY in err), f"trial {trial}: exit {rc}\n{out}{err}"
            assert "sqlite" not in err.lower() and "ovs-ofctl" not in err, err
        refused += sum(rc == 2 for rc, _, _ in results)
        assert any(rc == 0 for rc, _, _ in results), results
        assert_store_consistent(state)
    # the two really overlapped at least once (an apply takes seconds; they start together)
    assert refused >= 1


def _canon(dump: str, needle: str) -> str:
    return next(ln for ln in dump.splitlines() if needle in ln)


def test_flow_edited_in_place_is_drift_and_apply_repairs_it(fabric, tmp_path):
    inv = _inventory(fabric, tmp_path)
    state = tmp_path / "state"
    intent = tmp_path / "i.ndl"
    intent.write_text(SMALL)
    assert netc("apply", "--state", state, "--inventory", inv, intent).returncode == 0
    h1 = fabric.hosts["h1"]
    needle = "nw_dst=10.1.1.12"
    before = _canon(h1.ofctl("dump-flows", "--no-stats", "table=30"), needle)
    cookie = before.split("cookie=")[1].split(",")[0]
    # the flow to web2 made to drop, its cookie unchanged
    h1.ofctl("mod-flows", "--strict", "table=30,priority=100,ip,reg6=5001,nw_src=10.1.0.0/16,nw_dst=10.1.1.12,actions=drop")
    edited = _canon(h1.ofctl("dump-flows", "--no-stats", "table=30"), needle)
    assert f"cookie={cookie}," in edited and "actions=drop" in edited, edited

    r = netc("status", "--state", state)
    assert r.returncode == 1, r.stdout + r.stderr
    line = next(ln for ln in r.stdout.splitlines() if ln.strip().startswith("h1"))
    assert "drifted" in line and "2 entries differ" in line, r.stdout  # delete + re-add
    assert "in-sync" in next(ln for ln in r.stdout.splitlines() if ln.strip().startswith("h2"))

    r = netc("status", "-v", "--state", state)
    assert r.returncode == 1
    lines = r.stdout.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.strip().startswith("h1 table 30 flow priority=100") and needle in ln)
    assert "expected:" in lines[at + 1] and "set_field:192.168.0.12->tun_dst" in lines[at + 1], lines[at + 1]
    assert "found:" in lines[at + 2] and "actions=drop" in lines[at + 2], lines[at + 2]

    r = netc("status", "--json", "--state", state)
    devs = {d["device"]: d for d in json.loads(r.stdout)["devices"]}
    assert devs["h1"]["state"] == "drifted" and devs["h1"]["drift"] == 2
    [e] = devs["h1"]["entries"]
    assert e["what"] == "flow" and e["table"] == 30 and needle in e["match"]
    assert "actions=drop" in e["found"] and "output:1" in e["expected"]
    assert devs["h2"]["entries"] == []

    r = netc("apply", "--state", state, "--inventory", inv, intent)
    assert r.returncode == 0, r.stderr
    assert "no changes" in r.stdout and "2 drifted entries corrected" in r.stdout, r.stdout
    assert _canon(h1.ofctl("dump-flows", "--no-stats", "table=30"), needle) == before
    r = netc("status", "--state", state)
    assert r.returncode == 0, r.stdout


def test_group_bucket_edited_in_place_is_listed(fabric, tmp_path):
    """A group's buckets changed behind netc's back: listed as a group entry."""
    inv = _inventory(fabric, tmp_path)
    state = tmp_path / "state"
    intent = tmp_path / "i.ndl"
    intent.write_text(SMALL)
    assert netc("apply", "--state", state, "--inventory", inv, intent).returncode == 0
    h1 = fabric.hosts["h1"]
    h1.ofctl("add-group", "group_id=4242,type=all,bucket=actions=output:10")
    r = netc("status", "--json", "--state", state)
    devs = {d["device"]: d for d in json.loads(r.stdout)["devices"]}
    assert {"what": "group", "table": None, "match": "group_id=4242", "expected": None} .items() <= \
        devs["h1"]["entries"][0].items(), devs["h1"]["entries"]
    assert netc("apply", "--state", state, "--inventory", inv, intent).returncode == 0
    assert "group_id=4242" not in h1.ofctl("dump-groups")


def _slow_ofctl(tmp_path, bridge: str, trigger) -> str:
    """An `ovs-ofctl` that, once `trigger` exists, runs a bundle for `bridge`
    to the end (OVS commits it) and then hangs: a client that times out after
    the device committed. One shot: the trigger is removed when it fires."""
    real = subprocess.run(["sh", "-c", "command -v ovs-ofctl || echo /usr/bin/ovs-ofctl"],
                          capture_output=True, text=True).stdout.strip()
    script = tmp_path / "slow-ofctl"
    script.write_text(f"""#!/bin/sh
case " $* " in
  *" bundle {bridge} "*)
    if rm "{trigger}" 2>/dev/null; then
      "{real}" "$@" || exit $?
      exec sleep 60
    fi;;
esac
exec "{real}" "$@"
""")
    script.chmod(0o755)
    return str(script)


def test_timeout_after_the_bundle_committed_is_read_back_and_put_back(fabric, tmp_path):
    """h2's bundle commits but its client times out: the apply must not say
    "nothing was committed" while h2 holds the new generation — it reads h2
    back, puts it (and h1) back, and says so; no generation is recorded."""
    v = _intents(tmp_path)
    state = tmp_path / "state"
    trigger = tmp_path / "fire"
    slow = _slow_ofctl(tmp_path, fabric.hosts["h2"].bridge, trigger)
    inv = tmp_path / "inv.toml"
    inv.write_text("[defaults]\ntimeout_secs = 3\n" f'ofctl = "{slow}"\n[ovs]\n'
                   + "".join(f'{h} = "{fabric.hosts[h].bridge}"\n' for h in HOSTS))
    r = netc("apply", "--state", state, "--inventory", inv, v[0])
    assert r.returncode == 0, r.stderr
    trigger.touch()
    r = netc("apply", "--json", "--state", state, "--inventory", inv, v[1])
    assert r.returncode == 1, r.stdout + r.stderr
    assert not trigger.exists(), "the slow bundle never ran"
    assert "did not finish within 3 s" in r.stderr, r.stderr
    assert "`h2` was read back after the failure: it had committed the new generation's changes anyway" in r.stderr
    out = json.loads(r.stdout)
    assert out["error"]["device"] == "h2" and out["committed"] is False and out["journal_cleared"] is True
    assert "h2" in out["restored"] and "h1" in out["restored"] and out["not_restored"] == []
    assert "put back" in out["read_back"]
    # every bridge, h2 included, holds generation 1 again; nothing recorded, no journal
    assert_store_consistent(state)
    assert assert_bridges_hold(fabric, state) == 1


def test_no_room_for_the_commit_refuses_before_any_push(fabric, tmp_path):
    """Under a file size limit too small for the new generation's rows, the
    apply used to push every device, then die at the commit (SIGXFSZ, or
    "database or disk is full"), leaving the devices on a generation the
    store does not have. Room is now reserved before the push: exit 2,
    nothing pushed, no journal, and the same apply without the limit works."""
    inv = _inventory(fabric, tmp_path)
    v = _intents(tmp_path)
    state = tmp_path / "state"
    assert netc("apply", "--state", state, "--inventory", inv, v[0]).returncode == 0
    r = subprocess.run(["prlimit", "--fsize=40000", NETC, "apply", "--state", str(state), "--inventory", str(inv),
                        str(v[1])], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "cannot hold the new generation" in r.stderr and "nothing was pushed" in r.stderr, r.stderr
    assert_store_consistent(state)
    assert assert_bridges_hold(fabric, state) == 1
    assert not (state / "commit.reserve").exists()
    r = netc("apply", "--state", state, "--inventory", inv, v[1])
    assert r.returncode == 0, r.stderr
    assert assert_bridges_hold(fabric, state) == 2


def test_commit_failing_after_the_push_puts_every_device_back(fabric, tmp_path):
    """The store refuses the commit after every device took the new
    generation (injected with a real SQLite trigger that aborts the insert,
    as a disk filling up between the reservation and the commit would): the
    apply exits 2, names each device it put back, records nothing, clears
    the journal, and every bridge holds the previous generation again."""
    inv = _inventory(fabric, tmp_path)
    v = _intents(tmp_path)
    state = tmp_path / "state"
    assert netc("apply", "--state", state, "--inventory", inv, v[0]).returncode == 0
    with db(state) as c:
        c.execute("CREATE TRIGGER refuse_commit BEFORE INSERT ON generation "
                  "BEGIN SELECT RAISE(ABORT, 'injected: the commit is refused'); END")
    r = netc("apply", "--state", state, "--inventory", inv, v[1])
    assert r.returncode == 2, r.stdout + r.stderr
    assert "the store could not commit the new generation" in r.stderr, r.stderr
    assert "injected: the commit is refused" in r.stderr, r.stderr
    back = r.stderr.split("put back to the previous generation:", 1)
    assert len(back) == 2, r.stderr
    assert set(back[1].split(";", 1)[0].replace(",", " ").split()) == set(HOSTS), r.stderr
    assert "every device holds the previous generation" in r.stderr, r.stderr
    with db(state) as c:
        c.execute("DROP TRIGGER refuse_commit")
    assert_store_consistent(state)
    assert assert_bridges_hold(fabric, state) == 1
    r = netc("apply", "--state", state, "--inventory", inv, v[1])
    assert r.returncode == 0, r.stderr
    assert assert_bridges_hold(fabric, state) == 2


def test_table_full_rejection_keeps_ovs_reason(fabric, tmp_path):
    """A bridge whose table 30 holds at most 2 flows refuses the bundle: the
    error names the device, the rejected flow and OVS's reason."""
    inv = _inventory(fabric, tmp_path)
    state = tmp_path / "state"
    intent = tmp_path / "i.ndl"
    intent.write_text(SMALL)
    h1 = fabric.hosts["h1"]
    h1.ofctl("del-flows")
    h1.vsctl("--", "--id=@ft", "create", "Flow_Table", "flow_limit=2", "overflow_policy=refuse",
             "--", "set", "Bridge", "br-int", "flow_tables:30=@ft")
    try:
        r = netc("apply", "--state", state, "--inventory", inv, intent)
        assert r.returncode == 1, r.stdout + r.stderr
        assert "device `h1`" in r.stderr and "TABLE_FULL" in r.stderr, r.stderr
        assert "rejected flow (cookie" in r.stderr and "table=30" in r.stderr, r.stderr
    finally:
        h1.vsctl("clear", "Bridge", "br-int", "flow_tables")
    assert netc("apply", "--state", state, "--inventory", inv, intent).returncode == 0
