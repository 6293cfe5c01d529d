"""The P4Runtime client (targets/p4client) against a gRPC server stand-in.

The stand-in (targets/p4client/standin.py) implements the P4Runtime
PROTOCOL only — arbitration, pipeline config, per-update errors, reads —
over real gRPC on 127.0.0.1. It never stands in for data-plane behaviour
(p4c/BMv2/Tofino are not available here). Inputs are the golden
WriteRequests netc renders (tests/golden/p4).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "targets"))
import p4client  # noqa: E402,F401
from google.protobuf import text_format  # noqa: E402
from google.rpc import code_pb2  # noqa: E402
from p4.v1 import p4runtime_pb2  # noqa: E402
from p4client import p4info, standin  # noqa: E402
from p4client.client import NotPrimary, P4ClientError, P4RuntimeClient, WriteFailed  # noqa: E402
from p4client.validate import entity_key  # noqa: E402

GOLDEN = REPO / "tests" / "golden" / "p4"
U = p4runtime_pb2.Update


def golden(ex, sw):
    return text_format.Parse((GOLDEN / ex / f"{sw}.txtpb").read_text(), p4runtime_pb2.WriteRequest())


@pytest.fixture(scope="module")
def ix():
    return p4info.load()


@pytest.fixture
def switch():
    server, port, svc = standin.serve(device_id=7)
    try:
        yield f"127.0.0.1:{port}", svc
    finally:
        server.stop(grace=None).wait(5)


def state(svc):
    return {k: e.SerializeToString(deterministic=True) for k, e in svc.store.items()}


def want(req):
    return {entity_key(u.entity): u.entity.SerializeToString(deterministic=True) for u in req.updates}


def test_arbitration_primary_backup_and_takeover(switch, ix):
    addr, svc = switch
    with P4RuntimeClient(addr, 7, ix, "tor1", election_id=(0, 5)) as a:
        a.set_pipeline(ix.info)
        with pytest.raises(NotPrimary, match="tor1.*ALREADY_EXISTS"):
            P4RuntimeClient(addr, 7, ix, "tor1", election_id=(0, 3)).connect()
        with P4RuntimeClient(addr, 7, ix, "tor1", election_id=(1, 0)) as b:
            # b took over; a's writes are refused as a whole
            with pytest.raises(WriteFailed, match="PERMISSION_DENIED"):
                a.write(list(golden("athena", "tor1").updates))
            b.set_pipeline(ix.info)
            assert b.apply(golden("athena", "tor1")) > 0
    with pytest.raises(NotPrimary, match="NOT_FOUND"):
        P4RuntimeClient(addr, 99, ix, "nosuch").connect()


def test_apply_installs_exactly_the_file_and_is_idempotent(switch, ix):
    addr, svc = switch
    req = golden("duet", "agg1")
    with P4RuntimeClient(addr, 7, ix, "agg1", batch_size=100) as c:
        c.set_pipeline(ix.info)
        n = c.apply(req)
        assert n == len(req.updates)
        assert state(svc) == want(req)
        # batches: each phase split at 100 updates
        members = sum(1 for u in req.updates if u.entity.WhichOneof("entity") != "table_entry")
        entries = len(req.updates) - members
        assert svc.writes == -(-members // 100) + -(-entries // 100)
        before = svc.writes
        assert c.apply(req) == 0, "reconciling an up-to-date switch sends nothing"
        assert svc.writes == before


def test_reconcile_moves_between_states_by_reading_the_switch(switch, ix):
    addr, svc = switch
    a, b = golden("duet", "agg1"), golden("duet", "agg2")
    with P4RuntimeClient(addr, 7, ix, "agg1") as c:
        c.set_pipeline(ix.info)
        c.apply(a)
        # someone adds an entry behind netc's back: reconciliation removes it
        stray = p4runtime_pb2.Update(type=U.INSERT)
        stray.entity.CopyFrom(next(u.entity for u in b.updates if u.entity.table_entry.table_id == 0x0200000D
                                   and entity_key(u.entity) not in want(a)))
        c.write([stray])
        assert c.apply(a) == 1 and state(svc) == want(a)
        c.apply(b)
        assert state(svc) == want(b)


def test_a_rejected_update_is_named_and_nothing_is_half_applied(switch, ix):
    addr, svc = switch
    first, second = golden("athena", "tor1"), golden("duet", "agg1")
    with P4RuntimeClient(addr, 7, ix, "agg1") as c:
        c.set_pipeline(ix.info)
        c.apply(first)
        before = state(svc)
        seen = {"n": 0}

        def full_tunnel_table(u):
            te = u.entity.table_entry
            if u.entity.WhichOneof("entity") == "table_entry" and te.table_id == 0x0200000A and u.type == U.INSERT:
                seen["n"] += 1
                if seen["n"] > 200:
                    return (code_pb2.RESOURCE_EXHAUSTED, "tunnel table full")
            return None

        svc.reject = full_tunnel_table
        with pytest.raises(WriteFailed) as e:
            c.apply(second)
        msg = str(e.value)
        assert "switch `agg1`" in msg and "table `NetcIngress.tunnel`" in msg
        assert "RESOURCE_EXHAUSTED" in msg and "tunnel table full" in msg and "member=" in msg
        assert e.value.rolled_back is True and "as before" in msg
        assert state(svc) == before, "the switch is exactly as it was"


def test_an_invalid_request_is_refused_before_anything_is_sent(switch, ix):
    addr, svc = switch
    req = golden("athena", "tor1")
    bad = next(u for u in req.updates if u.entity.WhichOneof("entity") == "table_entry" and not u.entity.table_entry.is_default_action)
    bad.entity.table_entry.match[0].exact.value = b"\x7f" * 6
    with P4RuntimeClient(addr, 7, ix, "tor1") as c:
        c.set_pipeline(ix.info)
        writes = svc.writes
        with pytest.raises(WriteFailed, match=r"\(not sent\).*does not fit"):
            c.apply(req)
        assert svc.writes == writes and svc.store == {}


def test_write_before_pipeline_is_a_clear_error(switch, ix):
    addr, _ = switch
    with P4RuntimeClient(addr, 7, ix, "tor1") as c:
        with pytest.raises(P4ClientError, match="FAILED_PRECONDITION"):
            c.write(list(golden("athena", "tor1").updates))


def test_the_cli_applies_a_file(switch, tmp_path):
    import subprocess
    addr, svc = switch
    f = GOLDEN / "athena" / "spine2.txtpb"
    env = {"PYTHONPATH": str(REPO / "targets"), "PATH": "/usr/bin:/bin"}
    r = subprocess.run([sys.executable, "-m", "p4client", "apply", "--address", addr, "--device-id", "7",
                        "--file", str(f), "--set-pipeline"], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "spine2" in r.stderr and state(svc) == want(golden("athena", "spine2"))


def foreign_p4info(ix):
    """netc's P4Info with one table renamed and re-numbered: another program."""
    other = p4runtime_pb2.ForwardingPipelineConfig().p4info.__class__()
    other.CopyFrom(ix.info)
    other.tables[0].preamble.name = "OtherIngress.firewall"
    other.tables[0].preamble.id = 0x02FFFFFF
    return other


def test_ensure_pipeline_sets_it_once_and_reads_it_back(switch, ix):
    addr, svc = switch
    with P4RuntimeClient(addr, 7, ix, "tor1") as c:
        assert c.get_pipeline() is None
        assert c.ensure_pipeline(ix.info, b"any bytes: no p4c here") == "set"
        assert c.get_pipeline() == ix.info
        assert svc.config.p4_device_config == b"any bytes: no p4c here"
        c.apply(golden("athena", "tor1"))
        # kept: setting it again would wipe the entries just written
        assert c.ensure_pipeline(ix.info) == "kept"
        assert state(svc) == want(golden("athena", "tor1"))


def test_a_switch_running_another_program_is_refused_and_nothing_written(switch, ix):
    from p4client.client import ForeignPipeline
    addr, svc = switch
    with P4RuntimeClient(addr, 7, ix, "tor1") as c:
        c.set_pipeline(foreign_p4info(ix))
        writes = svc.writes
        with pytest.raises(ForeignPipeline, match=r"switch `tor1` .* runs another P4 program .*OtherIngress.firewall.*nothing written"):
            c.ensure_pipeline(ix.info)
        assert svc.writes == writes and svc.store == {}
        assert c.get_pipeline() == foreign_p4info(ix)


def test_diff_names_what_differs_and_writes_nothing(switch, ix):
    addr, svc = switch
    req = golden("athena", "tor1")
    with P4RuntimeClient(addr, 7, ix, "tor1") as c:
        c.set_pipeline(ix.info)
        assert len(c.diff(req)) == len(req.updates)  # empty switch: everything
        c.apply(req)
        assert c.diff(req) == []
        # someone deletes one entry and adds one by hand
        gone = next(k for k, e in svc.store.items()
                    if e.WhichOneof("entity") == "table_entry" and not e.table_entry.is_default_action)
        del svc.store[gone]
        extra = p4runtime_pb2.Entity()
        extra.CopyFrom(next(e for e in svc.store.values() if e.table_entry.table_id == 0x02000002))
        extra.table_entry.match[0].exact.value = b"\x01\xff"
        svc.store[entity_key(extra)] = extra
        writes, before = svc.writes, state(svc)
        d = c.diff(req)
        assert len(d) == 2 and any(x.startswith("INSERT") for x in d) and any(
            x.startswith("DELETE table `NetcIngress.port_role`") and "0x1ff" in x for x in d), d
        assert svc.writes == writes and state(svc) == before


def test_the_cli_ensures_the_pipeline_and_diffs(switch, tmp_path):
    import subprocess
    addr, svc = switch
    f = GOLDEN / "athena" / "spine2.txtpb"
    env = {"PYTHONPATH": str(REPO / "targets"), "PATH": "/usr/bin:/bin"}

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "p4client", *args, "--address", addr, "--device-id", "7",
                               "--switch", "spine2", "--file", str(f)], capture_output=True, text=True, env=env, timeout=60)

    r = cli("apply", "--ensure-pipeline")
    assert r.returncode == 0, r.stderr
    assert "forwarding pipeline set" in r.stderr and state(svc) == want(golden("athena", "spine2"))
    r = cli("diff")
    assert r.returncode == 0 and "0 updates differ" in r.stderr and r.stdout == ""
    svc.store.pop(next(iter(svc.store)))
    r = cli("diff")
    assert r.returncode == 0 and "1 updates differ" in r.stderr and len(r.stdout.splitlines()) == 1
    # another program on the switch: its own exit code (netc status: foreign-program), nothing written
    with P4RuntimeClient(addr, 7, p4info.load(), "spine2") as c:
        c.set_pipeline(foreign_p4info(p4info.load()))
    writes = svc.writes
    for args in (("diff", "--check-pipeline"), ("apply", "--ensure-pipeline")):
        r = cli(*args)
        assert r.returncode == 3 and "runs another P4 program" in r.stderr, (args, r.returncode, r.stderr)
    assert svc.writes == writes


def test_diff_with_check_pipeline_counts_a_missing_one_and_refuses_a_foreign_one(switch, ix):
    from p4client.client import ForeignPipeline
    addr, svc = switch
    req = golden("athena", "tor1")
    with P4RuntimeClient(addr, 7, ix, "tor1") as c:
        d = c.diff(req, check_pipeline=True)
        assert d[0].startswith("SET forwarding pipeline") and len(d) == len(req.updates) + 1
        assert svc.pipelines_set == 0 and svc.writes == 0, "a dry run sets and writes nothing"
        c.ensure_pipeline(ix.info)
        c.apply(req)
        assert c.diff(req, check_pipeline=True) == []
        c.set_pipeline(foreign_p4info(ix))
        with pytest.raises(ForeignPipeline, match="runs another P4 program"):
            c.diff(req, check_pipeline=True)


def test_the_device_config_file_is_read_only_when_the_pipeline_is_set(switch, tmp_path):
    import subprocess
    addr, svc = switch
    f = GOLDEN / "athena" / "spine2.txtpb"
    program = tmp_path / "netc.bin"
    program.write_bytes(bytes(range(256)))
    env = {"PYTHONPATH": str(REPO / "targets"), "PATH": "/usr/bin:/bin"}

    def apply(config):
        return subprocess.run([sys.executable, "-m", "p4client", "apply", "--ensure-pipeline", "--device-config",
                               str(config), "--address", addr, "--device-id", "7", "--switch", "spine2",
                               "--file", str(f)], capture_output=True, text=True, env=env, timeout=60)

    r = apply(tmp_path / "missing.bin")  # the switch has no pipeline: the program is needed
    assert r.returncode == 2 and "switch `spine2`" in r.stderr and "missing.bin" in r.stderr, r.stderr
    assert svc.config is None and svc.store == {}
    r = apply(program)
    assert r.returncode == 0, r.stderr
    assert svc.config.p4_device_config == bytes(range(256)) and svc.pipelines_set == 1
    r = apply(tmp_path / "missing.bin")  # kept: never opened
    assert r.returncode == 0 and "0 updates applied" in r.stderr, r.stderr
    assert svc.pipelines_set == 1


def _reconcile_case(ix):
    """(desired request, foreign table entries: desired ones with the low byte
    of their first exact key changed, so their keys are new to the switch)."""
    desired = golden("duet", "tor1")
    keys = {entity_key(u.entity) for u in desired.updates}
    strays = {}
    for u in desired.updates:
        te = u.entity.table_entry
        if (u.entity.WhichOneof("entity") != "table_entry" or te.is_default_action or not te.match
                or te.match[0].WhichOneof("field_match_type") != "exact"
                or te.action.WhichOneof("type") != "action"):
            continue
        e = p4runtime_pb2.Entity()
        e.CopyFrom(u.entity)
        v = e.table_entry.match[0].exact.value
        e.table_entry.match[0].exact.value = v[:-1] + bytes([v[-1] ^ 0x55])
        if entity_key(e) not in keys:
            strays[entity_key(e)] = e
    return desired, list(strays.values())


@given(data=st.data())
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_diff_counts_exactly_what_apply_then_changes_from_any_starting_state(switch, ix, data):
    """From any mix — some of the desired entities lost, some foreign entries
    added behind netc's back — `diff --check-pipeline` names exactly that many
    updates, `apply` sends exactly those, and the switch then holds the file."""
    addr, svc = switch
    desired, strays = _reconcile_case(ix)
    assert strays, "the case needs entries only another switch has"
    with P4RuntimeClient(addr, 7, ix, "tor1") as c:
        if c.ensure_pipeline(ix.info) == "set":  # the first example; the others start from its result
            c.apply(desired)
            svc.full = dict(svc.store)
        svc.store = dict(svc.full)
        held = sorted(svc.store)
        lost = data.draw(st.lists(st.sampled_from(held), unique=True, max_size=len(held)), label="lost")
        extra = data.draw(st.lists(st.sampled_from(strays), unique_by=entity_key, max_size=len(strays)), label="extra")
        for k in lost:  # out of band: the stand-in's table, not through netc
            del svc.store[k]
        for e in extra:
            svc.store[entity_key(e)] = e
        d = c.diff(desired, check_pipeline=True)
        assert len(d) == len(lost) + len(extra), d
        assert sum(x.startswith("DELETE") for x in d) == len(extra)
        assert c.apply(desired) == len(d)
        assert state(svc) == want(desired) and c.diff(desired, check_pipeline=True) == []


def test_the_cli_exits_when_the_process_that_started_it_dies(tmp_path):
    """`netc apply` killed -9 mid-push must not leave a client behind holding
    a switch's stream: the client notices its parent is gone and exits."""
    import os
    import signal
    import socket
    import subprocess
    import time

    # a switch that accepts the connection and never answers: the client would wait on it
    silent = socket.create_server(("127.0.0.1", 0))
    held = []
    port = silent.getsockname()[1]
    env = {"PYTHONPATH": str(REPO / "targets"), "PATH": "/usr/bin:/bin"}
    f = GOLDEN / "athena" / "spine2.txtpb"
    client = f"{sys.executable} -m p4client diff --address 127.0.0.1:{port} --switch spine2 --file {f}"
    parent = subprocess.Popen(["bash", "-c", f"{client} 2>{tmp_path / 'err'} & echo $!; wait"],
                              stdout=subprocess.PIPE, text=True, env=env)
    child = None
    try:
        child = int(parent.stdout.readline())
        silent.settimeout(30)
        held.append(silent.accept()[0])  # the client is connected and waiting
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(timeout=10)

        def alive(pid):
            try:
                state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
            except FileNotFoundError:
                return False
            return state != "Z"

        deadline = time.monotonic() + 10
        while alive(child) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not alive(child), "p4client outlived the process that started it"
        assert "the process that started p4client died" in (tmp_path / "err").read_text()
    finally:
        if child is not None and Path(f"/proc/{child}").exists():
            os.kill(child, signal.SIGKILL)
        if parent.poll() is None:
            parent.kill()
            parent.wait(timeout=10)
        for c in held:
            c.close()
        silent.close()
