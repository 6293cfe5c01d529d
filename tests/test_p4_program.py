"""p4/netc.p4 and p4/netc.p4info.txtpb agree (p4c is not available here).

A small, honest parser reads the P4 source: it strips comments, then finds
every `@id(...) action NAME(params)`, `@id(...) action_profile(...) NAME;`
and `@id(...) table NAME { key = {...} actions = {...} default_action = ...;
implementation = ...; size = N; }`, resolving parameter and key widths from
`typedef`s, header and struct fields. Everything it finds must be in the
P4Info with the same id, name, widths and match kinds, and vice versa, plus
what p4c adds: core.p4's `NoAction` on every table that declares no default
action (tests/test_p4_p4info_rules.py checks those rules one by one).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "targets"))
import p4client  # noqa: E402,F401  (selects the protobuf runtime)
from p4client import p4info  # noqa: E402

P4 = REPO / "p4" / "netc.p4"
PREFIX = "NetcIngress."
# core.p4's NoAction: p4c adds it (DEFAULT_ONLY, the initial default) to a
# table that declares no default_action; its id is p4c's hash of the name
NOACTION = "NoAction"
NOACTION_ID = 21257015
KINDS = {"exact": 2, "lpm": 3, "ternary": 4, "range": 5}  # p4info MatchField.MatchType values


def cp_name(name: str) -> str:
    """The P4Info name of an action or table of NetcIngress (NoAction is top level)."""
    return name if name == NOACTION else PREFIX + name


def table_action_names(t: dict) -> set:
    """The actions p4c lists for a parsed table: its own, plus NoAction without a default."""
    return set(t["actions"]) | ({NOACTION} if t["default"] is None else set())


def program_action_names(prog: dict) -> set:
    return set(prog["actions"]) | ({NOACTION} if any(t["default"] is None for t in prog["tables"].values()) else set())


def strip_comments(src: str) -> str:
    src = re.sub(r"/\*.*?\*/", " ", src, flags=re.S)
    return re.sub(r"//[^\n]*", "", src)


def block(src: str, start: int) -> tuple[str, int]:
    """The text between the `{` at/after `start` and its matching `}`."""
    i = src.index("{", start)
    depth = 0
    for j in range(i, len(src)):
        if src[j] == "{":
            depth += 1
        elif src[j] == "}":
            depth -= 1
            if depth == 0:
                return src[i + 1 : j], j + 1
    raise ValueError("unbalanced braces")


def width_of(ty: str, typedefs: dict) -> int:
    ty = ty.strip()
    if ty in typedefs:
        return width_of(typedefs[ty], typedefs)
    m = re.fullmatch(r"bit<(\d+)>", ty)
    if not m:
        raise ValueError(f"unknown type {ty}")
    return int(m.group(1))


def parse_program(src: str) -> dict:
    src = strip_comments(src)
    typedefs = dict((n, t) for t, n in re.findall(r"typedef\s+(bit<\d+>)\s+(\w+)\s*;", src))
    # field widths of headers and structs: type name -> field -> width
    types: dict[str, dict[str, int]] = {}
    for m in re.finditer(r"\b(header|struct)\s+(\w+)\s*\{", src):
        body, _ = block(src, m.end() - 1)
        fields = {}
        for t, n in re.findall(r"([\w<>]+)\s+(\w+)\s*;", body):
            try:
                fields[n] = width_of(t, typedefs)
            except ValueError:
                fields[n] = t  # a nested header/struct type
        types[m.group(2)] = fields
    # control parameters: name -> type (for `hdr`, `meta`, `std`, `ig_intr_md`)
    params = {"std": "standard_metadata_t"}
    for t, n in re.findall(r"\b(?:inout|in|out)\s+(\w+)\s+(\w+)", src):
        params.setdefault(n, t)
    # architecture metadata (v1model standard_metadata, TNA ingress intrinsic metadata)
    intrinsic = {
        "std": {"ingress_port": 9, "egress_spec": 9, "egress_port": 9, "mcast_grp": 16},
        "ig_intr_md": {"ingress_port": 9},
    }

    def expr_width(expr: str) -> int:
        sl = re.fullmatch(r"(.*)\[(\d+):(\d+)\]", expr)
        if sl:  # a slice of a field: hi - lo + 1 bits
            return int(sl.group(2)) - int(sl.group(3)) + 1
        parts = expr.split(".")
        if parts[0] in intrinsic:
            return intrinsic[parts[0]][parts[1]]
        ty = params[parts[0]]
        for p in parts[1:]:
            w = types[ty][p]
            if isinstance(w, int):
                return w
            ty = w
        raise ValueError(expr)

    out = {"actions": {}, "tables": {}, "profiles": {}}
    for m in re.finditer(r"@id\((0x[0-9a-fA-F]+|\d+)\)\s*action\s+(\w+)\s*\(([^)]*)\)", src):
        ps = []
        for p in filter(None, (x.strip() for x in m.group(3).split(","))):
            t, n = p.rsplit(None, 1)
            ps.append((n, width_of(t, typedefs)))
        out["actions"][m.group(2)] = (int(m.group(1), 0), ps)
    # v1model `action_profile(32wN) name;`, TNA `ActionProfile(N) name;`
    for m in re.finditer(r"@id\((0x[0-9a-fA-F]+|\d+)\)\s*(?:action_profile|ActionProfile)\((?:32w)?(\d+)\)\s*(\w+)\s*;", src):
        out["profiles"][m.group(3)] = (int(m.group(1), 0), int(m.group(2)))
    for m in re.finditer(r"@id\((0x[0-9a-fA-F]+|\d+)\)\s*table\s+(\w+)\s*\{", src):
        body, _ = block(src, m.end() - 1)
        kb = re.search(r"key\s*=\s*\{([^}]*)\}", body).group(1)
        keys = [
            (name, expr_width(expr), KINDS[kind])
            for expr, kind, name in re.findall(r"([\w.]+(?:\[\d+:\d+\])?)\s*:\s*(\w+)\s*@name\(\"(\w+)\"\)\s*;", kb)
        ]
        acts = re.findall(r"(\w+)\s*;", re.search(r"actions\s*=\s*\{([^}]*)\}", body).group(1))
        impl = re.search(r"implementation\s*=\s*(\w+)\s*;", body)
        size = int(re.search(r"size\s*=\s*(\d+)\s*;", body).group(1))
        # `default_action = NAME(args);` → (NAME, [int args]); None when absent
        d = re.search(r"\bdefault_action\s*=\s*(\w+)\s*(?:\(([^)]*)\))?\s*;", body)
        default = None
        if d:
            default = (d.group(1), [int(x, 0) for x in (d.group(2) or "").split(",") if x.strip()])
        out["tables"][m.group(2)] = {
            "id": int(m.group(1), 0),
            "keys": keys,
            "actions": acts,
            "impl": impl.group(1) if impl else None,
            "size": size,
            "default": default,
        }
    return out


@pytest.fixture(scope="module")
def prog():
    return parse_program(P4.read_text())


@pytest.fixture(scope="module")
def ix():
    return p4info.load()


def test_parser_finds_the_program(prog):
    # guards the parser itself: a regex that silently matched nothing would pass the rest
    assert len(prog["tables"]) == 13 and len(prog["actions"]) == 12 and len(prog["profiles"]) == 2
    assert prog["tables"]["acl"]["keys"] == [("src", 32, 4), ("dst", 32, 4), ("proto", 8, 4), ("dport", 16, 5)]
    assert prog["actions"]["encap"][1] == [("underlay", 32), ("dmac", 48)]
    assert prog["tables"]["switch_config"]["default"] == ("set_config", [0])
    assert prog["tables"]["tunnel"]["default"] == ("drop", [])
    assert prog["tables"]["ecmp"]["default"] is None


def test_every_action_matches_the_p4info(prog, ix):
    assert {a.preamble.name for a in ix.info.actions} == {cp_name(n) for n in program_action_names(prog)}
    assert ix.actions[NOACTION_ID].preamble.name == NOACTION and not ix.actions[NOACTION_ID].params
    for name, (id_, params) in prog["actions"].items():
        a = ix.actions.get(id_)
        assert a is not None and a.preamble.name == PREFIX + name, name
        assert [(p.name, p.bitwidth) for p in a.params] == params, name
        assert [p.id for p in a.params] == list(range(1, len(params) + 1)), name


def test_every_table_matches_the_p4info(prog, ix):
    assert {t.preamble.name for t in ix.info.tables} == {PREFIX + n for n in prog["tables"]}
    for name, t in prog["tables"].items():
        pt = ix.tables.get(t["id"])
        assert pt is not None and pt.preamble.name == PREFIX + name, name
        assert [(f.name, f.bitwidth, f.match_type) for f in pt.match_fields] == t["keys"], name
        assert [f.id for f in pt.match_fields] == list(range(1, len(t["keys"]) + 1)), name
        assert {ix.actions[r.id].preamble.name for r in pt.action_refs} == {cp_name(a) for a in table_action_names(t)}, name
        assert pt.size == t["size"], name
        if t["impl"]:
            assert pt.implementation_id == prog["profiles"][t["impl"]][0], name
        else:
            assert pt.implementation_id == 0, name


def test_every_profile_matches_the_p4info(prog, ix):
    assert {p.preamble.name for p in ix.info.action_profiles} == {PREFIX + n for n in prog["profiles"]}
    for name, (id_, size) in prog["profiles"].items():
        p = ix.profiles[id_]
        assert p.preamble.name == PREFIX + name and p.size == size and not p.with_selector
        users = [t["id"] for t in prog["tables"].values() if t["impl"] == name]
        assert list(p.table_ids) == users


def test_ids_carry_the_p4runtime_resource_prefixes(ix):
    # P4Runtime spec §6.3: the top byte of an id is the resource type
    assert all(t >> 24 == 0x02 for t in ix.tables)
    assert all(a >> 24 == 0x01 for a in ix.actions)
    assert all(p >> 24 == 0x11 for p in ix.profiles)


def test_the_hash_is_hash5_as_specs_functors_md_defines_it():
    src = strip_comments(P4.read_text())
    m = re.search(r"hash\(\s*meta\.h5\s*,\s*HashAlgorithm\.crc32\s*,\s*\(bit<32>\)\s*0\s*,\s*\{([^}]*)\}\s*,\s*\(bit<64>\)\s*0x100000000\s*\)", src)
    assert m, "hash5 call (crc32, base 0, max 2^32) not found"
    fields = [f.strip() for f in m.group(1).split(",")]
    assert fields == ["meta.l4_proto", "meta.l4_src", "meta.l4_dst", "meta.l4_sport", "meta.l4_dport"]
    # widths of the five fields: 8, 32, 32, 16, 16 (specs/functors.md §6.2)
    meta = re.search(r"struct metadata_t\s*\{([^}]*)\}", src).group(1)
    widths = dict((n, t) for t, n in re.findall(r"([\w<>]+)\s+(\w+)\s*;", meta))
    assert [widths[f.split(".")[1]] for f in fields] == ["bit<8>", "ip4_t", "ip4_t", "bit<16>", "bit<16>"]


def test_parser_rejects_a_changed_width(ix):
    # the comparison can fail: widen a key in a copy of the source
    src = P4.read_text().replace("bit<16>  idx;", "bit<12>  idx;")
    prog = parse_program(src)
    pt = ix.tables[prog["tables"]["ecmp"]["id"]]
    assert [(f.name, f.bitwidth, f.match_type) for f in pt.match_fields] != prog["tables"]["ecmp"]["keys"]
