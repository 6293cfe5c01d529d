"""netc plan / apply / status / history / diff / rollback against real OVS.

Every bridge is a real ovs-vswitchd (--enable-dummy) started by
tests/ovs_fixture.py and stopped by pid; the state is a real SQLite store in
a temporary directory. The bridges are checked with `ovs-ofctl dump-flows`
and `dump-groups`, and compared with what the store says was committed.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

from ovs_fixture import Fabric

ROOT = Path(__file__).resolve().parent.parent
NETC = os.environ.get("NETC_BIN", str(ROOT / "target" / "release" / "netc"))
QUICKSTART = ROOT / "examples" / "quickstart" / "intent.ndl"

# (underlay ip, VM ports) of the quickstart's hosts
QS_HOSTS = {"h1": ("192.168.0.11", [10, 11]), "h2": ("192.168.0.12", [10]),
            "h3": ("192.168.0.13", [10]), "h4": ("192.168.0.14", [10])}


def netc(*args: str, cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([NETC, *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=timeout)


def write_inventory(path: Path, bridges: dict[str, str]) -> Path:
    lines = ["[defaults]", "timeout_secs = 20", "[ovs]"]
    lines += [f'{h} = "{b}"' for h, b in sorted(bridges.items())]
    path.write_text("\n".join(lines) + "\n")
    return path


def entries(path: str, text: str) -> set[str]:
    """An independent reading of what netc counts: lines of flows/groups/json,
    top-level blocks of a P4Runtime text request."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("#")]
    if not path.endswith(".txtpb"):
        return {ln.rstrip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("#")}
    out, cur, depth = set(), [], 0
    for ln in lines:
        cur.append(ln)
        depth += ln.count("{") - ln.count("}")
        if depth <= 0:
            out.add(" ".join(cur))
            cur, depth = [], 0
    return out


def compiled(intent: Path, out: Path) -> dict[str, dict[str, str]]:
    """device -> {relative path: text} from `netc compile`."""
    r = netc("compile", intent, "--out", out)
    assert r.returncode == 0, r.stderr
    devs: dict[str, dict[str, str]] = {}
    for kind in ("ovs", "p4", "host"):
        for f in sorted((out / kind).glob("*")) if (out / kind).is_dir() else []:
            devs.setdefault(f.stem, {})[f"{kind}/{f.name}"] = f.read_text()
    return devs


def expected_counts(old: dict, new: dict) -> dict[str, tuple[int, int]]:
    counts = {}
    for dev in sorted(set(old) | set(new)):
        o = {(p, e) for p, t in old.get(dev, {}).items() for e in entries(p, t)}
        n = {(p, e) for p, t in new.get(dev, {}).items() for e in entries(p, t)}
        if o != n:
            counts[dev] = (len(n - o), len(o - n))
    return counts


def db(state: Path) -> sqlite3.Connection:
    return sqlite3.connect(state / "state.db")


def committed(state: Path, gen: int | None = None) -> tuple[int, dict[str, dict[str, str]]]:
    """(generation, host -> {path: text}) of the last (or given) generation."""
    with db(state) as c:
        if gen is None:
            gen = c.execute("SELECT max(id) FROM generation").fetchone()[0]
        rows = c.execute("SELECT device, path, text FROM device_output WHERE gen = ?", (gen,)).fetchall()
    out: dict[str, dict[str, str]] = {}
    for dev, path, text in rows:
        out.setdefault(dev, {})[path] = text
    return gen, out


def cookies_of(text: str) -> set[int]:
    return {int(tok.split("=")[1].rstrip(","), 16) for ln in text.splitlines()
            for tok in ln.split(",") if tok.strip().startswith("cookie=")}


def bridge_holds(host, files: dict[str, str]) -> tuple[set[int], set[int], set[int], set[int]]:
    """(cookies on the bridge, cookies intended, groups on the bridge, groups intended);
    the group markers (table 253) are netc's bookkeeping and left out."""
    dump = host.ofctl("dump-flows", "--no-stats")
    seen = {int(ln.split("cookie=")[1].split(",")[0], 16) for ln in dump.splitlines()
            if "cookie=" in ln and "table=253" not in ln}
    want = cookies_of(files.get(f"ovs/{host.name}.flows", ""))
    groups = {int(ln.split("group_id=")[1].split(",")[0]) for ln in host.ofctl("dump-groups").splitlines()
              if "group_id=" in ln}
    want_g = {int(ln.split("group_id=")[1].split(",")[0])
              for ln in files.get(f"ovs/{host.name}.groups", "").splitlines() if "group_id=" in ln}
    return seen, want, groups, want_g


def assert_bridges_hold(fabric: Fabric, state: Path, gen: int | None = None) -> int:
    g, outs = committed(state, gen)
    for name, host in fabric.hosts.items():
        seen, want, groups, want_g = bridge_holds(host, outs.get(name, {}))
        assert want, f"{name}: generation {g} has no flows for it"
        assert seen == want, f"{name}: bridge differs from generation {g}: +{len(seen - want)} -{len(want - seen)}"
        assert groups == want_g, f"{name}: groups differ from generation {g}"
    return g


def assert_store_consistent(state: Path) -> None:
    with db(state) as c:
        assert c.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert c.execute("PRAGMA application_id").fetchone()[0] == 0x6E657463
        assert c.execute("SELECT count(*) FROM applying").fetchone()[0] == 0, "journal left behind"
        for t in ("intent_file", "device_output", "relation_file", "intent_fact"):
            orphans = c.execute(f"SELECT count(*) FROM {t} WHERE gen NOT IN (SELECT id FROM generation)").fetchone()[0]
            assert orphans == 0, t
        for (g,) in c.execute("SELECT id FROM generation").fetchall():
            n = c.execute("SELECT count(*) FROM device_output WHERE gen = ? AND kind = 'ovs'", (g,)).fetchone()[0]
            assert n > 0, f"generation {g} has no OVS outputs: half-written"


@pytest.fixture(scope="module")
def quickstart_fabric():
    f = Fabric(QS_HOSTS)
    try:
        yield f
    finally:
        f.stop()


def changed_quickstart(tmp_path: Path) -> Path:
    """The quickstart with one line changed: acme's db1 moves from port 10 of h2 to port 10 of h4."""
    text = QUICKSTART.read_text()
    old = 'vm_port("h2", "acme", "db1", 10).'
    assert old in text
    p = tmp_path / "intent.ndl"
    p.write_text(text.replace(old, 'vm_port("h2", "acme", "db1", 12).'))
    return p


def plan_counts(out: str) -> dict[str, tuple[int, int]]:
    data = json.loads(out)
    return {d: (v["added"], v["removed"]) for d, v in data["devices"].items()}


def test_plan_counts_exact_then_apply_status_history_diff_rollback(quickstart_fabric, tmp_path):
    fabric, state = quickstart_fabric, tmp_path / "state"
    inv = write_inventory(tmp_path / "inv.toml", {h: fabric.hosts[h].bridge for h in QS_HOSTS})
    base = compiled(QUICKSTART, tmp_path / "c0")
    changed = changed_quickstart(tmp_path)
    after = compiled(changed, tmp_path / "c1")

    # plan before anything was applied: every entry is an add; no state dir created
    r = netc("plan", "--json", "--state", state, QUICKSTART)
    assert r.returncode == 0, r.stderr
    assert plan_counts(r.stdout) == expected_counts({}, base)
    assert json.loads(r.stdout)["verdict"] == "proven"
    assert not state.exists()

    r = netc("apply", "--state", state, "--inventory", inv, QUICKSTART)
    assert r.returncode == 0, r.stderr
    assert "applied generation 1" in r.stdout
    assert assert_bridges_hold(fabric, state) == 1

    # the one-line change: counts per device, exactly
    r = netc("plan", "--json", "-v", "--state", state, changed)
    assert r.returncode == 0, r.stderr
    want = expected_counts(base, after)
    assert want and plan_counts(r.stdout) == want
    assert set(want) == {"h2"}, want  # only db1's host changes
    r = netc("plan", "--state", state, changed)
    assert "h2" in r.stdout and f"+{want['h2'][0]} -{want['h2'][1]}" in r.stdout

    r = netc("apply", "--json", "--state", state, "--inventory", inv, changed)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["generation"] == 2
    assert assert_bridges_hold(fabric, state) == 2

    # the same intent again: nothing to change, no new generation
    r = netc("apply", "--state", state, "--inventory", inv, changed)
    assert r.returncode == 0 and "no changes" in r.stdout, r.stdout + r.stderr

    r = netc("status", "--json", "--state", state)
    assert r.returncode == 0, r.stdout + r.stderr
    st = json.loads(r.stdout)
    assert st["generation"] == 2 and st["verdict"] == "proven" and not st["forced"]
    assert sorted(d["device"] for d in st["devices"]) == sorted(QS_HOSTS)
    assert all(d["state"] == "in-sync" for d in st["devices"])

    # drift: delete a flow behind netc's back; status sees it, apply repairs it
    fabric.hosts["h3"].ofctl("del-flows", "table=0")
    r = netc("status", "--json", "--state", state)
    assert r.returncode == 1
    drifted = {d["device"]: d["state"] for d in json.loads(r.stdout)["devices"]}
    assert drifted["h3"] == "drifted" and drifted["h1"] == "in-sync"

    r = netc("history", "--json", "--state", state)
    hist = json.loads(r.stdout)
    assert [g["generation"] for g in hist] == [1, 2]
    assert hist[1]["files"] == [str(changed)]

    r = netc("diff", "--json", "--state", state, "1", "2")
    assert r.returncode == 0
    assert plan_counts(r.stdout) == want

    r = netc("rollback", "--state", state)
    assert r.returncode == 0, r.stderr
    assert "applied generation 3" in r.stdout
    assert assert_bridges_hold(fabric, state) == 3
    _, g1 = committed(state, 1)
    _, g3 = committed(state, 3)
    assert g1 == g3, "rollback re-pushed generation 1's artifacts exactly"
    r = netc("history", "--json", "--state", state)
    assert json.loads(r.stdout)[-1]["note"] == "rollback to 1"
    r = netc("status", "--state", state)
    assert r.returncode == 0, r.stdout  # rollback repaired h3's drift too
    assert_store_consistent(state)

    r = netc("diff", "--state", state, "1", "9")
    assert r.returncode == 2 and "generation 9 is not in the store" in r.stderr


def test_verifier_violation_refused_then_forced_and_recorded(quickstart_fabric, tmp_path):
    """A rules override whose flows let acme's web1 reach globex's app2 (ISO-1)."""
    fabric, state = quickstart_fabric, tmp_path / "state"
    inv = write_inventory(tmp_path / "inv.toml", {h: fabric.hosts[h].bridge for h in QS_HOSTS})
    rules = tmp_path / "rules"
    rules.mkdir()
    for f in (ROOT / "rules").glob("*.ndl"):
        (rules / f.name).write_text(f.read_text())
    # the fault: every VM's traffic is also allowed into the other tenant's VNI
    (rules / "zz_fault.ndl").write_text(
        'ovs_flow(h, 0, 200, cat("in_port=1,tun_id=", to_string(v2)), '
        'cat("load:", to_string(v1), "->NXM_NX_REG6[],resubmit(,40)"), 1) :-\n'
        '    vm(t1, _, _, _, h), tenant(t1, v1), tenant(t2, v2), t1 != t2.\n')
    r = netc("plan", "--rules", rules, "--state", state, QUICKSTART)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "VIOLATED" in r.stdout, r.stderr  # ISO-1, with counterexamples

    before = {h: fabric.hosts[h].ofctl("dump-flows", "--no-stats") for h in QS_HOSTS}
    r = netc("apply", "--rules", rules, "--state", state, "--inventory", inv, QUICKSTART)
    assert r.returncode == 1
    assert "refused" in r.stderr and "nothing was pushed" in r.stderr
    assert {h: fabric.hosts[h].ofctl("dump-flows", "--no-stats") for h in QS_HOSTS} == before
    assert not (state / "state.db").exists() or committed(state)[0] is None

    r = netc("apply", "--force", "--json", "--rules", rules, "--state", state, "--inventory", inv, QUICKSTART)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["forced"] is True and out["verdict"] == "violated"
    assert assert_bridges_hold(fabric, state) == out["generation"]
    r = netc("history", "--json", "--state", state)
    last = json.loads(r.stdout)[-1]
    assert last["forced"] is True and last["verdict"] == "violated"
    assert "--force" in last["command"]


def test_unreachable_device_aborts_cleanly_and_restores_the_others(quickstart_fabric, tmp_path):
    fabric, state = quickstart_fabric, tmp_path / "state"
    bridges = {h: fabric.hosts[h].bridge for h in QS_HOSTS}
    inv = write_inventory(tmp_path / "inv.toml", bridges)
    r = netc("apply", "--state", state, "--inventory", inv, QUICKSTART)
    assert r.returncode == 0, r.stderr
    g = assert_bridges_hold(fabric, state)

    # h3's bridge points at a socket that does not exist; h1 and h2 come before it
    bad = write_inventory(tmp_path / "bad.toml", {**bridges, "h3": f"unix:{tmp_path}/missing.mgmt"})
    changed = tmp_path / "changed.ndl"
    changed.write_text(QUICKSTART.read_text().replace(
        'acl("acme", "no-ssh-to-db", 150,', 'acl("acme", "no-ssh-to-db", 160,'))
    assert expected_counts(compiled(QUICKSTART, tmp_path / "a"), compiled(changed, tmp_path / "b")).keys() >= {"h1", "h3"}
    r = netc("apply", "--json", "--state", state, "--inventory", bad, changed)
    assert r.returncode == 1, r.stdout + r.stderr
    out = json.loads(r.stdout)
    assert out["error"]["device"] == "h3" and out["committed"] is False
    assert "missing.mgmt" in out["error"]["address"]
    assert "h1" in out["restored"] and "h2" in out["restored"]
    assert "device `h3`" in r.stderr and "nothing was committed" in r.stderr
    # every bridge (h4 never touched, h3 unreachable) holds the previous generation
    assert assert_bridges_hold(fabric, state) == g
    assert_store_consistent(state)

    # a device whose vswitchd died: same clean abort, and the next apply converges
    fabric.hosts["h4"].kill_vswitchd()
    try:
        r = netc("apply", "--state", state, "--inventory", inv, changed)
        assert r.returncode == 1 and "device `h4`" in r.stderr
        assert assert_bridges_hold(_subset(fabric, "h1", "h2", "h3"), state) == g
    finally:
        fabric.hosts["h4"].start_vswitchd()
    r = netc("apply", "--state", state, "--inventory", inv, changed)
    assert r.returncode == 0, r.stderr
    assert assert_bridges_hold(fabric, state) == g + 1


class _Subset:
    def __init__(self, hosts):
        self.hosts = hosts


def _subset(fabric: Fabric, *names: str):
    return _Subset({n: fabric.hosts[n] for n in names})


@pytest.mark.parametrize("damage", ["garbage", "foreign", "newer", "truncated"])
def test_untrusted_state_is_refused_with_exit_2(tmp_path, damage):
    state = tmp_path / "state"
    state.mkdir()
    dbf = state / "state.db"
    if damage == "garbage":
        dbf.write_bytes(bytes((i * 7919) % 251 for i in range(16384)))
    elif damage == "foreign":
        with sqlite3.connect(dbf) as c:
            c.execute("CREATE TABLE photos (id INTEGER, path TEXT)")
    else:
        r = netc("plan", "--state", state, QUICKSTART)  # plan never creates state
        assert not dbf.exists()
        r = netc("apply", "--state", state, "--inventory", write_inventory(tmp_path / "i.toml", {}), QUICKSTART)
        assert r.returncode == 0, r.stderr
        if damage == "newer":
            with sqlite3.connect(dbf) as c:
                c.execute("PRAGMA user_version = 99")
        else:
            with sqlite3.connect(dbf) as c:
                c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            data = dbf.read_bytes()
            dbf.write_bytes(data[:100] + b"\xa5" * (len(data) - 100))
    before = dbf.read_bytes()
    for cmd in (["plan", QUICKSTART], ["apply", "--inventory", tmp_path / "none.toml", QUICKSTART],
                ["status"], ["history"], ["rollback"], ["diff", "1", "2"]):
        r = netc(*cmd[:1], "--state", state, *cmd[1:])
        assert r.returncode == 2, (cmd, r.stdout, r.stderr)
        assert "Traceback" not in r.stderr and "panicked" not in r.stderr
        assert str(dbf) in r.stderr, r.stderr
        want = {"garbage": "not a netc state database", "truncated": "not a netc state database",
                "foreign": "another program", "newer": "schema version 99"}[damage]
        assert want in r.stderr, r.stderr
        assert "hint:" in r.stderr
    assert dbf.read_bytes() == before, "an untrusted file is never written"


def test_inventory_mistakes_are_located(tmp_path):
    bad = tmp_path / "inv.toml"
    bad.write_text('[ovs]\nh1 = "unix:/x.mgmt"\n[p4.tor1]\naddres = "127.0.0.1:9559"\n')
    r = netc("apply", "--state", tmp_path / "s", "--inventory", bad, QUICKSTART)
    assert r.returncode == 2
    assert f"{bad}:3:" in r.stderr or f"{bad}:4:" in r.stderr, r.stderr
    assert "addres" in r.stderr and "hint:" in r.stderr
    assert not (tmp_path / "s").exists(), "a bad inventory creates no state"
