"""Every P4Runtime message netc writes decodes with the official classes and
is valid against p4/netc.p4info.txtpb; it says exactly what the `p4_*` rows
say; Duet and Athena are pinned by golden files; rows that do not fit the
program are errors that name the switch, table and row.

p4c, BMv2 and Tofino are not available here: these tests check messages
against the official P4Runtime schema (`p4runtime` on PyPI) and the P4Info,
not data-plane behaviour. Regenerate goldens with UPDATE_EXPECT=1.
"""

from __future__ import annotations

import ipaddress
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "targets"))
import p4client  # noqa: E402,F401  (selects the protobuf runtime)
from google.protobuf import text_format  # noqa: E402
from p4.v1 import p4runtime_pb2  # noqa: E402
from p4client import p4info  # noqa: E402
from p4client.validate import check_write_request  # noqa: E402

EXAMPLES = ["quickstart", "ananta", "duet", "rubik", "yoda", "anolis", "athena", "andromeda"]
GOLDEN = REPO / "tests" / "golden" / "p4"
UPDATE = "UPDATE_EXPECT" in os.environ  # as the Rust tests read it
U = p4runtime_pb2.Update

pytestmark = pytest.mark.netc


@pytest.fixture(scope="module")
def ix():
    return p4info.load()


@pytest.fixture(scope="module")
def compiled(netc_bin, tmp_path_factory):
    out = {}
    for ex in EXAMPLES:
        files = [REPO / "examples" / ex / "intent.ndl"]
        d = tmp_path_factory.mktemp(ex) / "out"
        r = subprocess.run([netc_bin, "compile", *map(str, files), "--out", str(d)], capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, f"{ex}: {r.stderr}"
        out[ex] = d
    return out


def parse(path: Path) -> p4runtime_pb2.WriteRequest:
    return text_format.Parse(path.read_text(), p4runtime_pb2.WriteRequest())


def uncommented(text: str) -> str:
    return "".join(line + "\n" for line in text.splitlines() if not line.startswith("#"))


# ------------------------------------------------------------ decode back to rows
def _int(b: bytes) -> int:
    return int.from_bytes(b, "big")


def _ip(b: bytes) -> str:
    return str(ipaddress.IPv4Address(_int(b)))


def _mac(b: bytes) -> str:
    return ":".join(f"{x:02x}" for x in _int(b).to_bytes(6, "big"))


def _prefix(value: bytes, length: int) -> str:
    return f"{_ip(value)}/{length}"


def decode(sw: str, req: p4runtime_pb2.WriteRequest, ix) -> dict[str, set]:
    """The `p4_*` rows a full-install WriteRequest stands for (an independent inverse of the renderer)."""
    rows: dict[str, set] = {}
    members = {}
    entries = []
    for u in req.updates:
        e = u.entity
        k = e.WhichOneof("entity")
        if k == "action_profile_member":
            m = e.action_profile_member
            members[(m.action_profile_id, m.member_id)] = [p.value for p in m.action.params]
        elif k == "packet_replication_engine_entry":
            g = e.packet_replication_engine_entry.multicast_group_entry
            for r in g.replicas:
                assert r.instance == _int(r.port)
                rows.setdefault("p4_mcast_replica", set()).add((sw, str(g.multicast_group_id), str(_int(r.port))))
        else:
            entries.append(e.table_entry)
    for te in entries:
        t = ix.tables[te.table_id]
        name = t.preamble.alias
        m = {f.field_id: f for f in te.match}
        ex = lambda i: _int(m[i].exact.value)  # noqa: E731
        a = te.action.action
        args = [p.value for p in a.params]
        if te.action.WhichOneof("type") == "action_profile_member_id":
            args = members[(t.implementation_id, te.action.action_profile_member_id)]
        def add(rel, *cols):
            rows.setdefault(rel, set()).add((sw, *map(str, cols)))
        if name == "switch_config":
            add("p4_switch_config", _ip(args[0]))
        elif name == "port_role":
            add("p4_host_port", ex(1))
        elif name == "port_tenant":
            add("p4_port_vni", ex(1), ex(2))
        elif name == "acl":
            def tern(i):
                if i not in m:
                    return "0.0.0.0/0"
                return _prefix(m[i].ternary.value, bin(_int(m[i].ternary.mask)).count("1"))
            proto = _int(m[3].ternary.value) if 3 in m else 0
            lo, hi = (_int(m[4].range.low), _int(m[4].range.high)) if 4 in m else (0, 65535)
            act = "drop" if ix.actions[a.action_id].preamble.alias == "drop" else "allow"
            add("p4_acl", te.priority, tern(1), tern(2), proto, lo, hi, act)
        elif name == "mcast":
            add("p4_mcast", ex(1), _ip(m[2].exact.value), _int(args[0]))
        elif name in ("vip", "vip_local"):
            add("p4_" + name, ex(1), _ip(m[2].exact.value), ex(3), ex(4), _int(args[0]))
        elif name in ("ecmp", "ecmp_local"):
            rel = "p4_ecmp_member" + ("_local" if name == "ecmp_local" else "")
            add(rel, _ip(m[1].exact.value), ex(2), ex(3), ex(4), _int(args[0]), _ip(args[1]))
        elif name == "tunnel":
            add("p4_tunnel", ex(1), _ip(m[2].exact.value), _ip(args[0]), _mac(args[1]))
        elif name == "route":
            add("p4_route", _prefix(args[0], _int(args[1])), _int(args[2]))
        elif name == "route_member":
            add("p4_route_member", _prefix(m[1].exact.value, ex(2)), ex(3), _ip(args[0]))
        elif name == "underlay":
            add("p4_underlay", _prefix(m[1].lpm.value, m[1].lpm.prefix_len) if 1 in m else "0.0.0.0/0", _int(args[0]))
        else:
            raise AssertionError(f"unexpected table {name}")
    return rows


def csv_rows(out: Path, sw: str) -> dict[str, set]:
    rows: dict[str, set] = {}
    for f in sorted((out / "relations").glob("p4_*.csv")):
        rel = f.stem
        if rel == "p4_announce":
            continue
        for line in f.read_text().splitlines():
            cols = tuple(line.split("\t"))
            if cols and cols[0] == sw:
                rows.setdefault(rel, set()).add(cols)
    return rows


# ------------------------------------------------------------ tests
@pytest.mark.parametrize("ex", EXAMPLES)
def test_every_message_is_valid_against_the_p4info(compiled, ix, ex):
    files = sorted((compiled[ex] / "p4").glob("*.txtpb"))
    switches = {line.split("\t")[0] for line in (compiled[ex] / "relations" / "p4_switch_config.csv").read_text().splitlines()}
    assert {f.stem for f in files} == switches, "one WriteRequest per switch"
    for f in files:
        req = parse(f)
        assert req.updates, f
        problems = check_write_request(req, ix)
        assert problems == [], f"{f.name}:\n" + "\n".join(problems[:20])
        # the Rust text is exactly protobuf's own text form of the message
        assert uncommented(f.read_text()) == text_format.MessageToString(req), f.name
        # and it is exactly the rows, no more, no less
        assert decode(f.stem, req, ix) == csv_rows(compiled[ex], f.stem), f.name


@pytest.mark.parametrize("ex", EXAMPLES)
def test_updates_are_in_dependency_order(compiled, ex):
    for f in sorted((compiled[ex] / "p4").glob("*.txtpb")):
        kinds = [u.entity.WhichOneof("entity") for u in parse(f).updates]
        first_table = kinds.index("table_entry") if "table_entry" in kinds else len(kinds)
        assert all(k == "table_entry" for k in kinds[first_table:]), f"{f.name}: members/groups after entries"
        types = [u.type for u in parse(f).updates]
        assert set(types) <= {U.INSERT, U.MODIFY}


def test_athena_keeps_tenants_apart_in_the_fabric(compiled, ix):
    # ISO-2 in the messages: (vni, group) keys, and no group shared by two VNIs
    for f in sorted((compiled["athena"] / "p4").glob("*.txtpb")):
        req = parse(f)
        by_mgid = {}
        for u in req.updates:
            te = u.entity.table_entry
            if u.entity.WhichOneof("entity") == "table_entry" and ix.tables[te.table_id].preamble.alias == "mcast":
                vni = _int(te.match[0].exact.value)
                mgid = _int(te.action.action.params[0].value)
                by_mgid.setdefault(mgid, set()).add(vni)
        assert all(len(v) == 1 for v in by_mgid.values()), f"{f.name}: {by_mgid}"


@pytest.mark.parametrize("ex", ["duet", "athena"])
def test_golden(compiled, ex):
    gold = GOLDEN / ex
    got = {f.name: f.read_text() for f in sorted((compiled[ex] / "p4").glob("*.txtpb"))}
    if UPDATE:
        if gold.exists():
            for old in gold.glob("*.txtpb"):
                old.unlink()
        gold.mkdir(parents=True, exist_ok=True)
        for name, text in got.items():
            (gold / name).write_text(text)
    want = {f.name: f.read_text() for f in sorted(gold.glob("*.txtpb"))}
    assert sorted(got) == sorted(want), "switch set changed (UPDATE_EXPECT=1 to accept)"
    for name in want:
        assert got[name] == want[name], f"{ex}/{name} differs from tests/golden/p4 (UPDATE_EXPECT=1 to accept)"


# ------------------------------------------------------------ the validator can fail
def _mutations(req):
    """(description, mutated copy) pairs a P4Runtime server would reject."""
    def copy():
        c = p4runtime_pb2.WriteRequest()
        c.CopyFrom(req)
        return c

    def first(c, pred):
        return next(u for u in c.updates if pred(u))

    is_entry = lambda u: u.entity.WhichOneof("entity") == "table_entry" and not u.entity.table_entry.is_default_action  # noqa: E731
    c = copy()
    first(c, is_entry).entity.table_entry.table_id = 0x02FFFFFF
    yield "unknown table", c
    c = copy()
    first(c, is_entry).entity.table_entry.match[0].exact.value = b"\xff" * 8
    yield "too wide", c
    c = copy()
    first(c, is_entry).entity.table_entry.match[0].exact.value = b"\x00\x01"
    yield "non-canonical", c
    c = copy()
    c.updates.add().CopyFrom(first(c, is_entry))
    yield "duplicate insert", c
    c = copy()
    del first(c, is_entry).entity.table_entry.match[-1]
    yield "missing exact field", c
    c = copy()
    u = first(c, lambda u: u.entity.table_entry.action.WhichOneof("type") == "action_profile_member_id")
    u.entity.table_entry.action.action_profile_member_id = 999999
    yield "dangling member", c
    c = copy()
    u = first(c, lambda u: u.entity.WhichOneof("entity") == "action_profile_member")
    del u.entity.action_profile_member.action.params[-1]
    yield "missing parameter", c
    c = copy()
    first(c, lambda u: u.entity.table_entry.is_default_action).type = U.INSERT
    yield "inserted default", c


def test_the_validator_rejects_what_a_server_would(compiled, ix):
    req = parse(compiled["duet"] / "p4" / "agg1.txtpb")
    assert check_write_request(req, ix) == []
    seen = 0
    for what, bad in _mutations(req):
        assert check_write_request(bad, ix), f"mutation not caught: {what}"
        seen += 1
    assert seen == 8


# ------------------------------------------------------------ bad input
def _compile(netc_bin, tmp_path, text):
    src = tmp_path / "intent.ndl"
    src.write_text(text)
    out = tmp_path / "out"
    r = subprocess.run([netc_bin, "compile", str(src), "--out", str(out)], capture_output=True, text=True, timeout=300)
    return r, out


def test_a_value_wider_than_its_field_is_an_error_naming_switch_table_and_row(netc_bin, tmp_path):
    r, out = _compile(netc_bin, tmp_path, "\n".join([
        'switch("tor1", "tor", 10.255.0.1, 16384, 4096, 512).',
        'host("h1", 192.168.1.1, "tor1", 600).',
        'tenant("red", 100).', 'vnet("red", "r", 10.0.0.0/16).',
        'vm("red", "r0", 02:00:00:00:0a:00, 10.0.0.10, "h1").', ""]))
    assert r.returncode == 1, r.stderr
    assert "switch `tor1`" in r.stderr and "table `port_role`" in r.stderr
    assert "p4_host_port(tor1, 600)" in r.stderr and "9 bits" in r.stderr
    assert "panicked" not in r.stderr
    assert not out.exists(), "nothing is written"


def test_a_switch_over_capacity_is_an_error_and_nothing_is_written(netc_bin, tmp_path):
    # the intent grants huge capacities; the program's tunnel table holds 512
    lines = ['switch("tor1", "tor", 10.255.0.1, 100000, 100000, 100000).',
             'tenant("web", 7002).', 'vnet("web", "front", 10.30.0.0/16).',
             'smux("smux1", 192.168.100.1).', 'vip_aggregate(100.64.0.0/16).']
    for v in (1, 2):
        lines += [f'vip("web", 100.64.1.{v}, 6, 80, "public").', f'vip_placement(100.64.1.{v}, "tor1").']
    for i in range(600):
        h = f"h{i // 20}"
        if i % 20 == 0:
            lines.append(f'host("{h}", 192.168.{i // 20}.1, "tor1", {1 + i // 20}).')
        lines.append(f'vm("web", "w{i}", 02:00:00:00:{i >> 8:02x}:{i & 255:02x}, 10.30.{i >> 8}.{i & 255}, "{h}").')
        lines.append(f'vm_port("{h}", "web", "w{i}", {10 + i % 20}).')
        lines.append(f'dip_pool(100.64.1.{1 + i % 2}, 6, 80, "web", "w{i}", 8080, 1).')
    r, out = _compile(netc_bin, tmp_path, "\n".join(lines) + "\n")
    assert r.returncode == 1, r.stderr
    assert "switch `tor1`" in r.stderr and "over capacity" in r.stderr and "tunnel" in r.stderr
    assert "600" in r.stderr and "512" in r.stderr
    assert not out.exists()
