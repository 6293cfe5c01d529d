"""`netc apply` through its other routes: a host agent's directory and
P4Runtime switches (targets/p4client, as a subprocess), and P4 switches
beside real OVS bridges (tests/ovs_fixture.py, daemons stopped by pid).

The P4Runtime side runs against the PROTOCOL stand-in
(targets/p4client/standin.py: real gRPC on 127.0.0.1, arbitration, pipeline
config, writes, reads, per-update errors), never a data plane: p4c/BMv2/
Tofino are not available here. The first test's switches get their pipeline
from the test, as an operator would; the others start with none, and
`netc apply` sets it (P4Info of p4/netc.p4info.txtpb, the inventory's
device_config bytes).
"""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

import pytest

from ovs_fixture import Fabric
from test_apply import (
    QS_HOSTS,
    QUICKSTART,
    ROOT,
    assert_bridges_hold,
    assert_store_consistent,
    committed,
    compiled,
    expected_counts,
    netc,
    plan_counts,
)

sys.path.insert(0, str(ROOT / "targets"))
import p4client  # noqa: E402,F401  (sets up the protobuf runtime the p4 classes need)
from google.protobuf import text_format  # noqa: E402
from google.rpc import code_pb2  # noqa: E402
from p4.v1 import p4runtime_pb2  # noqa: E402
from p4client import p4info, standin  # noqa: E402
from p4client.client import P4RuntimeClient  # noqa: E402
from p4client.validate import entity_key  # noqa: E402


@pytest.fixture
def switches():
    ix = p4info.load()
    started = {}
    try:
        for name in ("tor1", "tor2"):
            server, port, svc = standin.serve(device_id=1)
            started[name] = (server, f"127.0.0.1:{port}", svc)
            with P4RuntimeClient(f"127.0.0.1:{port}", 1, ix, name, election_id=(0, 1)) as c:
                c.set_pipeline(ix.info)
        yield {n: (addr, svc) for n, (_, addr, svc) in started.items()}
    finally:
        for server, _, _ in started.values():
            server.stop(grace=None).wait(5)


def installed(svc) -> set[bytes]:
    return {e.SerializeToString(deterministic=True) for e in svc.store.values()}


def wanted(text: str) -> set[bytes]:
    req = text_format.Parse(text, p4runtime_pb2.WriteRequest())
    return {u.entity.SerializeToString(deterministic=True) for u in req.updates
            if u.type != p4runtime_pb2.Update.DELETE and entity_key(u.entity) is not None}


def inventory(path: Path, switches, agent_dir: Path) -> Path:
    text = "[agent]\nh1 = \"%s\"\n" % agent_dir
    for name, (addr, _) in sorted(switches.items()):
        text += f'[p4.{name}]\naddress = "{addr}"\ndevice_id = 1\n'
    path.write_text(text)
    return path


def test_agent_dir_and_p4_switches_then_a_rejected_write_puts_everything_back(switches, tmp_path):
    state, agent = tmp_path / "state", tmp_path / "agent-h1"
    inv = inventory(tmp_path / "inv.toml", switches, agent)
    art = compiled(QUICKSTART, tmp_path / "c0")

    r = netc("apply", "--json", "--state", state, "--inventory", inv, QUICKSTART)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    routes = {p["device"]: p["route"] for p in out["pushed"]}
    assert routes == {"h1": "agent", "tor1": "p4", "tor2": "p4"}
    # what no route reaches is listed, not silently dropped
    assert "agg1 (p4)" in out["not_pushed"] and "h2 (ovs)" in out["not_pushed"]
    for path, text in art["h1"].items():
        assert (agent / path).read_text() == text
    for sw, (_, svc) in switches.items():
        assert installed(svc) == wanted(art[sw][f"p4/{sw}.txtpb"]), sw
    g1 = committed(state)[0]

    r = netc("status", "--json", "--state", state)
    devs = {d["device"]: d["state"] for d in json.loads(r.stdout)["devices"]}
    assert devs == {"h1": "in-sync", "tor1": "in-sync", "tor2": "in-sync"}
    (agent / "host" / "h1.json").write_text("{}\n")
    r = netc("status", "--json", "--state", state)
    assert r.returncode == 1
    assert {d["device"]: d["state"] for d in json.loads(r.stdout)["devices"]}["h1"] == "drifted"
    r = netc("apply", "--state", state, "--inventory", inv, QUICKSTART)  # repairs the drift
    assert r.returncode == 0 and (agent / "host" / "h1.json").read_text() == art["h1"]["host/h1.json"]

    # a change that touches h1 and both ToRs; tor2 refuses every write
    changed = tmp_path / "changed.ndl"
    changed.write_text(QUICKSTART.read_text().replace(
        'vm("acme", "web2", 02:00:00:00:01:02, 10.1.1.12, "h3").',
        'vm("acme", "web2", 02:00:00:00:01:02, 10.1.1.12, "h1").').replace(
        'vm_port("h3", "acme", "web2", 10).', 'vm_port("h1", "acme", "web2", 12).'))
    new = compiled(changed, tmp_path / "c1")
    assert new["h1"] != art["h1"] and new["tor1"] != art["tor1"]
    before = {sw: installed(svc) for sw, (_, svc) in switches.items()}
    switches["tor2"][1].reject = lambda u: (code_pb2.RESOURCE_EXHAUSTED, "table full")
    r = netc("apply", "--json", "--state", state, "--inventory", inv, changed)
    assert r.returncode == 1, r.stdout + r.stderr
    out = json.loads(r.stdout)
    assert out["error"]["device"] == "tor2" and "table full" in out["error"]["reason"]
    assert out["restored"] == ["h1", "tor1"] and out["committed"] is False
    assert {sw: installed(svc) for sw, (_, svc) in switches.items()} == before
    for path, text in art["h1"].items():
        assert (agent / path).read_text() == text, path
    assert committed(state)[0] == g1

    switches["tor2"][1].reject = None
    r = netc("apply", "--json", "--state", state, "--inventory", inv, changed)
    assert r.returncode == 0, r.stderr
    for sw, (_, svc) in switches.items():
        assert installed(svc) == wanted(new[sw][f"p4/{sw}.txtpb"]), sw


# ---------------------------------------------------------------- P4 beside OVS

QS_SWITCHES = ("agg1", "agg2", "tor1", "tor2")  # the quickstart's P4 switches


@pytest.fixture(scope="module")
def fabric():
    f = Fabric(QS_HOSTS)
    try:
        yield f
    finally:
        f.stop()


@pytest.fixture
def bare_switches():
    """The quickstart's switches as stand-ins with NO forwarding pipeline."""
    started = {}
    try:
        for name in QS_SWITCHES:
            server, port, svc = standin.serve(device_id=1)
            started[name] = (server, f"127.0.0.1:{port}", svc)
        yield {n: (addr, svc) for n, (_, addr, svc) in started.items()}
    finally:
        for server, _, _ in started.values():
            server.stop(grace=None).wait(5)


def full_inventory(path: Path, fabric, switches, configs: dict[str, str]) -> Path:
    """Every OVS bridge and every switch; `configs`: switch -> device_config (relative)."""
    text = '[defaults]\ntimeout_secs = 30\n[ovs]\n'
    text += "".join(f'{h} = "{fabric.hosts[h].bridge}"\n' for h in sorted(QS_HOSTS))
    for name, (addr, _) in sorted(switches.items()):
        text += f'[p4.{name}]\naddress = "{addr}"\n'
        if name in configs:
            text += f'device_config = "{configs[name]}"\n'
    path.write_text(text)
    return path


def moved_web2(tmp_path: Path) -> Path:
    """The quickstart with acme's web2 moved from h3 to h1 (changes OVS hosts and ToRs)."""
    p = tmp_path / "moved.ndl"
    p.write_text(QUICKSTART.read_text().replace(
        'vm("acme", "web2", 02:00:00:00:01:02, 10.1.1.12, "h3").',
        'vm("acme", "web2", 02:00:00:00:01:02, 10.1.1.12, "h1").').replace(
        'vm_port("h3", "acme", "web2", 10).', 'vm_port("h1", "acme", "web2", 12).'))
    return p


def serialized(msg) -> bytes:
    return msg.SerializeToString(deterministic=True)


def foreign_p4info(ix):
    """netc's P4Info with one table renamed and re-numbered: another program."""
    other = p4runtime_pb2.ForwardingPipelineConfig().p4info.__class__()
    other.CopyFrom(ix.info)
    other.tables[0].preamble.name = "OtherIngress.firewall"
    other.tables[0].preamble.id = 0x02FFFFFF
    return other


def status_of(state: Path) -> tuple[int, dict[str, dict]]:
    r = netc("status", "--json", "--state", state)
    return r.returncode, {d["device"]: d for d in json.loads(r.stdout)["devices"]}


def test_bare_switches_get_the_pipeline_then_entries_and_status_plan_rollback_see_them(
        fabric, bare_switches, tmp_path):
    ix = p4info.load()
    state = tmp_path / "state"
    program = bytes(range(256)) * 3  # what p4c would have made for tor1 (none can be built here)
    (tmp_path / "tor1.bin").write_bytes(program)
    inv = full_inventory(tmp_path / "inv.toml", fabric, bare_switches, {"tor1": "tor1.bin"})
    base = compiled(QUICKSTART, tmp_path / "c0")
    assert set(QS_SWITCHES) <= set(base)

    # 1. the pipeline is set (P4Info + device_config bytes), then the entries written
    r = netc("apply", "--json", "--state", state, "--inventory", inv, QUICKSTART)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["generation"] == 1
    assert not [d for d in out["not_pushed"] if not d.endswith("(host)")], out["not_pushed"]
    pushed = {p["device"]: p for p in out["pushed"]}
    for sw, (_, svc) in bare_switches.items():
        assert svc.pipelines_set == 1, sw
        assert serialized(svc.config.p4info) == serialized(ix.info), sw
        assert svc.config.p4_device_config == (program if sw == "tor1" else b""), sw
        text = base[sw][f"p4/{sw}.txtpb"]
        assert installed(svc) == wanted(text), sw
        assert pushed[sw]["route"] == "p4"
        assert pushed[sw]["changes"] == len(text_format.Parse(text, p4runtime_pb2.WriteRequest()).updates), sw
    assert assert_bridges_hold(fabric, state) == 1

    # a second apply writes nothing and sets no pipeline again
    writes = {sw: svc.writes for sw, (_, svc) in bare_switches.items()}
    r = netc("apply", "--json", "--state", state, "--inventory", inv, QUICKSTART)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["generation"] is None and all(p["changes"] == 0 for p in out["pushed"]), out["pushed"]
    assert {sw: svc.writes for sw, (_, svc) in bare_switches.items()} == writes
    assert all(svc.pipelines_set == 1 for _, svc in bare_switches.values())

    # 2. status: every device in sync (the recorded inventory reaches the switches)
    rc, devs = status_of(state)
    assert rc == 0 and {d: v["state"] for d, v in devs.items()} == dict.fromkeys([*QS_HOSTS, *QS_SWITCHES], "in-sync")
    assert all(v["drift"] == 0 for v in devs.values()), devs
    # an out-of-band controller (same election id) deletes two of tor2's entries
    addr2, svc2 = bare_switches["tor2"]
    victims = [e for e in svc2.store.values()
               if e.WhichOneof("entity") == "table_entry" and not e.table_entry.is_default_action][:2]
    assert len(victims) == 2
    with P4RuntimeClient(addr2, 1, ix, "tor2", election_id=(0, 1)) as c:
        c.write([p4runtime_pb2.Update(type=p4runtime_pb2.Update.DELETE, entity=e) for e in victims])
    rc, devs = status_of(state)
    assert rc == 1
    assert devs["tor2"]["state"] == "drifted" and devs["tor2"]["detail"] == "2 entries differ", devs["tor2"]
    assert devs["tor2"]["drift"] == 2
    assert all(v["state"] == "in-sync" and v["drift"] == 0 for d, v in devs.items() if d != "tor2")
    r = netc("status", "--state", state)
    assert any(ln.split()[:3] == ["tor2", "p4", "drifted"] and "2 entries differ" in ln
               for ln in r.stdout.splitlines()), r.stdout

    # plan counts P4 devices' adds/removes exactly as OVS hosts', and touches no switch
    changed = moved_web2(tmp_path)
    new = compiled(changed, tmp_path / "c1")
    want = expected_counts(base, new)
    assert {"h1", "h3"} <= set(want) and set(want) & set(QS_SWITCHES), want
    before = {sw: (installed(svc), svc.writes) for sw, (_, svc) in bare_switches.items()}
    r = netc("plan", "--json", "--state", state, changed)
    assert r.returncode == 0, r.stderr
    assert plan_counts(r.stdout) == want
    assert all("p4" in json.loads(r.stdout)["devices"][d]["kinds"] for d in set(want) & set(QS_SWITCHES))
    r = netc("plan", "-v", "--state", state, changed)
    for d in set(want) & set(QS_SWITCHES):
        line = next(ln for ln in r.stdout.splitlines() if ln.split()[:1] == [d])
        assert line.split()[1] == "p4" and f"+{want[d][0]} -{want[d][1]}" in line, line
    assert any(ln.strip().startswith(("+ p4/", "- p4/")) for ln in r.stdout.splitlines()), r.stdout
    assert {sw: (installed(svc), svc.writes) for sw, (_, svc) in bare_switches.items()} == before

    r = netc("apply", "--json", "--state", state, "--inventory", inv, changed)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["generation"] == 2
    for sw, (_, svc) in bare_switches.items():
        assert installed(svc) == wanted(new[sw][f"p4/{sw}.txtpb"]), sw  # tor2's drift repaired too
    assert assert_bridges_hold(fabric, state) == 2

    # 3. rollback (the recorded inventory) restores generation 1's entries
    r = netc("rollback", "--json", "--state", state)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["generation"] == 3
    for sw, (_, svc) in bare_switches.items():
        assert installed(svc) == wanted(base[sw][f"p4/{sw}.txtpb"]), sw
        assert svc.pipelines_set == 1, "the pipeline is kept, never re-set (that would wipe the entries)"
    assert assert_bridges_hold(fabric, state) == 3
    assert committed(state, 3)[1] == committed(state, 1)[1]
    rc, devs = status_of(state)
    assert rc == 0 and all(v["state"] == "in-sync" for v in devs.values()), devs
    assert_store_consistent(state)


def test_a_switch_running_another_program_aborts_and_every_device_goes_back(fabric, bare_switches, tmp_path):
    ix = p4info.load()
    state = tmp_path / "state"
    inv = full_inventory(tmp_path / "inv.toml", fabric, bare_switches, {})
    base = compiled(QUICKSTART, tmp_path / "c0")
    r = netc("apply", "--state", state, "--inventory", inv, QUICKSTART)
    assert r.returncode == 0, r.stderr
    g1 = assert_bridges_hold(fabric, state)

    # someone loads another program on tor2 (it wipes tor2's entries)
    addr2, svc2 = bare_switches["tor2"]
    with P4RuntimeClient(addr2, 1, ix, "tor2", election_id=(0, 1)) as c:
        c.set_pipeline(foreign_p4info(ix))
    writes2 = svc2.writes
    rc, devs = status_of(state)
    assert rc == 1 and "another P4 program" in devs["tor2"]["detail"], devs["tor2"]
    assert devs["tor2"]["state"] == "foreign-program" and devs["tor2"]["drift"] is None

    changed = moved_web2(tmp_path)
    new = compiled(changed, tmp_path / "c1")
    assert new["h1"] != base["h1"] and new["tor1"] != base["tor1"]
    r = netc("apply", "--json", "--state", state, "--inventory", inv, changed)
    assert r.returncode == 1, r.stdout + r.stderr
    out = json.loads(r.stdout)
    assert out["error"]["device"] == "tor2" and out["error"]["kind"] == "p4"
    assert "runs another P4 program" in out["error"]["reason"], out["error"]
    assert "OtherIngress.firewall" in out["error"]["reason"] and "nothing written" in out["error"]["reason"]
    assert out["committed"] is False and out["not_restored"] == []
    assert {"h1", "h3", "tor1"} <= set(out["restored"]) and "tor2" not in out["restored"], out["restored"]
    assert "device `tor2`" in r.stderr and "nothing was committed" in r.stderr
    # every device holds generation 1 again; tor2 was not written at all
    assert assert_bridges_hold(fabric, state) == g1
    for sw in ("agg1", "agg2", "tor1"):
        assert installed(bare_switches[sw][1]) == wanted(base[sw][f"p4/{sw}.txtpb"]), sw
    assert serialized(svc2.config.p4info) == serialized(foreign_p4info(ix))
    assert svc2.store == {} and svc2.writes == writes2
    assert committed(state)[0] == g1
    assert_store_consistent(state)


def test_a_switch_that_is_down_aborts_cleanly_and_the_next_apply_converges(fabric, bare_switches, tmp_path):
    state = tmp_path / "state"
    inv = full_inventory(tmp_path / "inv.toml", fabric, bare_switches, {})
    base = compiled(QUICKSTART, tmp_path / "c0")
    r = netc("apply", "--state", state, "--inventory", inv, QUICKSTART)
    assert r.returncode == 0, r.stderr
    g1 = assert_bridges_hold(fabric, state)

    # tor2's P4Runtime server goes away (a free port: nothing listens there now)
    down = dict(bare_switches)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        free = sock.getsockname()[1]
    down["tor2"] = (f"127.0.0.1:{free}", None)
    bad = full_inventory(tmp_path / "down.toml", fabric, down, {})
    changed = moved_web2(tmp_path)
    new = compiled(changed, tmp_path / "c1")
    r = netc("apply", "--json", "--state", state, "--inventory", bad, changed)
    assert r.returncode == 1, r.stdout + r.stderr
    out = json.loads(r.stdout)
    assert out["error"]["device"] == "tor2" and f"127.0.0.1:{free}" in out["error"]["address"]
    assert "UNAVAILABLE" in out["error"]["reason"], out["error"]
    assert out["committed"] is False and {"h1", "h3", "tor1"} <= set(out["restored"])
    assert assert_bridges_hold(fabric, state) == g1
    for sw in ("agg1", "agg2", "tor1", "tor2"):
        assert installed(bare_switches[sw][1]) == wanted(base[sw][f"p4/{sw}.txtpb"]), sw
    assert committed(state)[0] == g1
    assert_store_consistent(state)

    r = netc("apply", "--json", "--state", state, "--inventory", inv, changed)
    assert r.returncode == 0, r.stderr
    for sw, (_, svc) in bare_switches.items():
        assert installed(svc) == wanted(new[sw][f"p4/{sw}.txtpb"]), sw
    assert assert_bridges_hold(fabric, state) == g1 + 1


def test_a_missing_device_config_is_located_before_anything_is_pushed(fabric, bare_switches, tmp_path):
    state = tmp_path / "state"
    inv = full_inventory(tmp_path / "inv.toml", fabric, bare_switches, {"tor1": "build/netc.json"})
    r = netc("apply", "--state", state, "--inventory", inv, QUICKSTART)
    assert r.returncode == 2, r.stdout + r.stderr
    line = next(i for i, ln in enumerate(inv.read_text().splitlines(), 1) if ln.startswith("device_config"))
    assert f"inv.toml:{line}:17" in r.stderr and "switch `tor1`" in r.stderr and "netc.json" in r.stderr, r.stderr
    assert "hint" in r.stderr and "Traceback" not in r.stderr and "panicked" not in r.stderr
    assert all(svc.config is None and svc.writes == 0 for _, svc in bare_switches.values())
    assert not (state / "state.db").exists() or committed(state)[0] is None


def test_a_failed_first_apply_empties_the_bare_switches_it_reached_and_keeps_their_pipeline(
        fabric, bare_switches, tmp_path):
    """Emptied of entries; what stays is the pipeline and the keyless
    switch_config's default action (netc resets no default it is not given:
    P4Runtime cannot tell a program's initial default from one set later)."""
    ix = p4info.load()
    state = tmp_path / "state"
    addr2, svc2 = bare_switches["tor2"]
    with P4RuntimeClient(addr2, 1, ix, "tor2", election_id=(0, 1)) as c:
        c.set_pipeline(foreign_p4info(ix))
    inv = full_inventory(tmp_path / "inv.toml", fabric, bare_switches, {})
    r = netc("apply", "--json", "--state", state, "--inventory", inv, QUICKSTART)
    assert r.returncode == 1, r.stdout + r.stderr
    out = json.loads(r.stdout)
    assert out["error"]["device"] == "tor2" and out["committed"] is False
    assert {"agg1", "agg2", "tor1"} <= set(out["restored"]), out["restored"]
    for sw in ("agg1", "agg2", "tor1"):
        svc = bare_switches[sw][1]
        assert svc.writes > 0, sw
        left = [e.table_entry for e in svc.store.values()]
        assert [(te.table_id, te.is_default_action) for te in left] == [(ix.names["NetcIngress.switch_config"], True)], sw
        assert serialized(svc.config.p4info) == serialized(ix.info), sw
    assert svc2.writes == 0 and svc2.store == {}
    assert committed(state)[0] is None
