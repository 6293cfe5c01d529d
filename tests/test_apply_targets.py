"""`netc apply` through its other routes: a host agent's directory and
P4Runtime switches (targets/p4client, as a subprocess).

The P4Runtime side runs against the PROTOCOL stand-in
(targets/p4client/standin.py: real gRPC on 127.0.0.1, arbitration, writes,
reads, per-update errors), never a data plane: p4c/BMv2/Tofino are not
available here. The pipeline is set once by the test, as an operator would.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from test_apply import QUICKSTART, ROOT, committed, compiled, netc

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
    assert devs == {"h1": "in-sync", "tor1": "unchecked", "tor2": "unchecked"}
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
