"""The committed P4Infos are what p4c writes for the committed programs.

p4c is not installable here, so the rules by which p4c (1.2.5) derives a
P4Info from a program are checked one by one, against the program text
parsed by tests/test_p4_program.py's parser, for p4/netc.p4 (v1model) and
p4/netc_tna.p4 (TNA):

- every table has an `initial_default_action`: the action its
  `default_action` names, with each argument at its parameter's full byte
  width (p4c writes `set_config(0)` as four zero bytes), or core.p4's
  `NoAction` when the table declares none;
- a table that declares no default (the action-profile tables `ecmp` and
  `ecmp_local`, and TNA's modulo tables) carries `NoAction` as an action
  ref with `scope: DEFAULT_ONLY` and no other default; a table that
  declares one carries no NoAction; no table has a const default;
- `NoAction` (id 21257015, p4c's hash of the name) is an action exactly
  when some table carries it;
- `pkg_info` names only the architecture (`v1model`, `tna`);
- every `@id` of an action, table and action profile in the program is the
  P4Info's id for that name, and the P4Info has no other; match field ids
  are 1..n in key order, parameter ids 1..n in declaration order.

And the program itself compiles on p4c's front end in the ways checked
here: no run-time `%` or `/` (p4c rejects both), and the member index of
`lb`, `lb_local` and `route_ecmp` is v1model's `hash` over hash5's fields
with hash5's algorithm, base 0 and max n, which BMv2 computes as
`base + crc % max` = `hash5 % n`.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "targets"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import p4client  # noqa: E402,F401  (selects the protobuf runtime)
from google.protobuf import text_format  # noqa: E402
from p4.config.v1 import p4info_pb2  # noqa: E402
from test_p4_program import NOACTION, NOACTION_ID, block, cp_name, parse_program, strip_comments  # noqa: E402

PROGRAMS = {
    "v1model": (REPO / "p4" / "netc.p4", REPO / "p4" / "netc.p4info.txtpb"),
    "tna": (REPO / "p4" / "netc_tna.p4", REPO / "p4" / "netc_tna.p4info.txtpb"),
}
DEFAULT_ONLY = p4info_pb2.ActionRef.DEFAULT_ONLY
TABLE_AND_DEFAULT = p4info_pb2.ActionRef.TABLE_AND_DEFAULT


def load(path: Path) -> p4info_pb2.P4Info:
    return text_format.Parse(path.read_text(), p4info_pb2.P4Info())


def problems(prog: dict, info: p4info_pb2.P4Info, arch: str) -> list[str]:
    """Every way `info` differs from what p4c writes for `prog` under the rules above."""
    out: list[str] = []
    actions = {a.preamble.id: a for a in info.actions}
    by_name = {a.preamble.name: a for a in info.actions}
    tables = {t.preamble.name: t for t in info.tables}

    # pkg_info: the architecture only
    set_fields = [(f.name, v) for f, v in info.pkg_info.ListFields()]
    if set_fields != [("arch", arch)]:
        out.append(f"pkg_info is {set_fields}, p4c writes only arch {arch!r}")

    # ids: the program's @id for every action, table and profile, and nothing else
    want = {cp_name(n): i for n, (i, _) in prog["actions"].items()}
    carries_noaction = any(t["default"] is None for t in prog["tables"].values())
    if carries_noaction:
        want[NOACTION] = NOACTION_ID
    have = {a.preamble.name: a.preamble.id for a in info.actions}
    if have != want:
        out.append(f"action ids {sorted(set(have.items()) ^ set(want.items()))} differ from the program's")
    want_t = {cp_name(n): t["id"] for n, t in prog["tables"].items()}
    have_t = {t.preamble.name: t.preamble.id for t in info.tables}
    if have_t != want_t:
        out.append(f"table ids {sorted(set(have_t.items()) ^ set(want_t.items()))} differ from the program's")
    want_p = {cp_name(n): i for n, (i, _) in prog["profiles"].items()}
    have_p = {p.preamble.name: p.preamble.id for p in info.action_profiles}
    if have_p != want_p:
        out.append(f"action profile ids {sorted(set(have_p.items()) ^ set(want_p.items()))} differ")
    for n, (_, params) in prog["actions"].items():
        a = by_name.get(cp_name(n))
        if a is not None and [(p.id, p.name) for p in a.params] != [(k + 1, p) for k, (p, _) in enumerate(params)]:
            out.append(f"action {n}: parameter ids are not 1..n in declaration order")
    if carries_noaction and NOACTION in by_name:
        na = by_name[NOACTION]
        if na.preamble.alias != NOACTION or na.params:
            out.append("NoAction: alias must be NoAction and it has no parameters")

    # tables: defaults and match field ids
    for n, t in prog["tables"].items():
        pt = tables.get(cp_name(n))
        if pt is None:
            continue
        if [(f.id, f.name) for f in pt.match_fields] != [(k + 1, key[0]) for k, key in enumerate(t["keys"])]:
            out.append(f"table {n}: match field ids are not 1..n in key order")
        if pt.const_default_action_id:
            out.append(f"table {n}: const_default_action_id, but no default action is const")
        if not pt.HasField("initial_default_action"):
            out.append(f"table {n}: no initial_default_action")
            continue
        ida = pt.initial_default_action
        defaults_only = [r for r in pt.action_refs if r.scope == DEFAULT_ONLY]
        if t["default"] is None:
            if ida.action_id != NOACTION_ID or list(ida.arguments):
                out.append(f"table {n}: declares no default, so its initial default is NoAction, not {ida.action_id}")
            if [(r.id, list(r.annotations)) for r in defaults_only] != [(NOACTION_ID, ["@defaultonly"])]:
                out.append(f"table {n}: must carry NoAction as its one DEFAULT_ONLY action (@defaultonly)")
        else:
            name, args = t["default"]
            a = by_name.get(cp_name(name))
            if a is None or ida.action_id != a.preamble.id:
                out.append(f"table {n}: initial default {ida.action_id} is not the program's {name}")
            else:
                want_args = [(p.id, v.to_bytes((p.bitwidth + 7) // 8, "big")) for p, v in zip(a.params, args)]
                if [(x.param_id, x.value) for x in ida.arguments] != want_args:
                    out.append(f"table {n}: initial default arguments {list(ida.arguments)} are not {name}{tuple(args)}")
            if any(r.id == NOACTION_ID for r in pt.action_refs) or defaults_only:
                out.append(f"table {n}: declares a default, so it carries no DEFAULT_ONLY NoAction")
        for r in pt.action_refs:
            if r.id != NOACTION_ID and (r.scope != TABLE_AND_DEFAULT or list(r.annotations)):
                out.append(f"table {n}: action {r.id} is declared without a scope annotation")
        if t["impl"] and t["default"] is not None:
            out.append(f"table {n}: a table with an action profile cannot take a default_action")
    if NOACTION_ID in actions and not carries_noaction:
        out.append("NoAction is listed but no table carries it")
    return out


@pytest.fixture(scope="module", params=sorted(PROGRAMS))
def case(request):
    arch = request.param
    src, info = PROGRAMS[arch]
    return arch, parse_program(src.read_text()), load(info)


def test_the_committed_p4info_is_what_p4c_writes_for_the_program(case):
    arch, prog, info = case
    assert problems(prog, info, arch) == []


def test_the_action_profile_tables_have_noaction_as_their_only_default(case):
    # spelled out for the tables the issue names, beside the general rule
    _, prog, info = case
    tables = {t.preamble.alias: t for t in info.tables}
    for name in ("ecmp", "ecmp_local"):
        assert prog["tables"][name]["impl"] and prog["tables"][name]["default"] is None
        t = tables[name]
        assert t.implementation_id
        assert [(r.id, r.scope) for r in t.action_refs if r.scope == DEFAULT_ONLY] == [(NOACTION_ID, DEFAULT_ONLY)]
        assert t.initial_default_action.action_id == NOACTION_ID
    noaction = [a for a in info.actions if a.preamble.id == NOACTION_ID]
    assert [(a.preamble.name, a.preamble.alias) for a in noaction] == [("NoAction", "NoAction")]


def test_the_initial_defaults_are_the_programs(case):
    _, _, info = case
    names = {a.preamble.id: a.preamble.alias for a in info.actions}
    got = {t.preamble.alias: names[t.initial_default_action.action_id] for t in info.tables}
    assert got["switch_config"] == "set_config"
    sc = next(t for t in info.tables if t.preamble.alias == "switch_config")
    assert [(a.param_id, a.value) for a in sc.initial_default_action.arguments] == [(1, b"\0\0\0\0")]
    assert {t for t, a in got.items() if a == "drop"} == {"port_tenant", "tunnel", "route_member", "underlay"}
    assert {t for t, a in got.items() if a == "nop"} == {"port_role", "acl", "mcast", "vip_local", "vip", "route"}


def drift(info: p4info_pb2.P4Info, edit) -> p4info_pb2.P4Info:
    copy = p4info_pb2.P4Info()
    copy.CopyFrom(info)
    edit(copy)
    return copy


def table(info, alias):
    return next(t for t in info.tables if t.preamble.alias == alias)


@pytest.mark.parametrize(
    "what, edit, says",
    [
        ("pkg_info name", lambda i: setattr(i.pkg_info, "name", "netc"), "pkg_info"),
        ("a lost initial default", lambda i: table(i, "vip").ClearField("initial_default_action"), "vip: no initial_default_action"),
        ("a wrong initial default", lambda i: setattr(table(i, "tunnel").initial_default_action, "action_id", 16777218), "tunnel: initial default"),
        ("a canonical argument", lambda i: setattr(table(i, "switch_config").initial_default_action.arguments[0], "value", b"\0"), "switch_config: initial default arguments"),
        ("no NoAction on ecmp", lambda i: table(i, "ecmp").action_refs.pop(), "ecmp: must carry NoAction"),
        ("NoAction in table scope", lambda i: setattr(table(i, "ecmp_local").action_refs[1], "scope", TABLE_AND_DEFAULT), "ecmp_local: must carry NoAction"),
        ("a renumbered action", lambda i: setattr(next(a for a in i.actions if a.preamble.alias == "lb").preamble, "id", 16777299), "action ids"),
        ("a renumbered table", lambda i: setattr(table(i, "acl").preamble, "id", 33554499), "table ids"),
        ("swapped key ids", lambda i: setattr(table(i, "acl").match_fields[0], "id", 9), "acl: match field ids"),
    ],
)
def test_a_drifted_p4info_is_caught(what, edit, says):
    src, info_path = PROGRAMS["v1model"]
    prog, info = parse_program(src.read_text()), load(info_path)
    found = problems(prog, drift(info, edit), "v1model")
    assert any(says in p for p in found), (what, found)


def test_a_default_on_an_action_profile_table_is_caught():
    src, info_path = PROGRAMS["v1model"]
    text = src.read_text().replace("implementation = ecmp_profile;", "implementation = ecmp_profile;\n        default_action = to_member(0, 0);")
    found = problems(parse_program(text), load(info_path), "v1model")
    assert any("ecmp: a table with an action profile cannot take a default_action" in p for p in found), found


# ------------------------------------------------------- the program compiles


def code_only(src: str) -> str:
    """The program without comments, `#include` lines and string literals."""
    src = strip_comments(src)
    src = re.sub(r"^\s*#.*$", "", src, flags=re.M)
    return re.sub(r'"[^"\n]*"', '""', src)


@pytest.mark.parametrize("arch", sorted(PROGRAMS))
def test_no_run_time_modulo_or_division(arch):
    # p4c: "meta.h5 % (bit<32>)n: could not evaluate expression at compilation time"
    code = code_only(PROGRAMS[arch][0].read_text())
    assert [m.group(0) for m in re.finditer(r"[%/]", code)] == []
    assert re.findall(r"[%/]", code_only("x = a % b; // c / d\n")) == ["%"]  # the check can fail


HASH = r"hash\(\s*{dst}\s*,\s*HashAlgorithm\.(\w+)\s*,\s*\(bit<(\d+)>\)\s*0\s*,\s*\{{([^}}]*)\}}\s*,\s*([^;]*?)\)\s*;"


def test_the_member_index_is_hash5_mod_n():
    code = code_only(PROGRAMS["v1model"][0].read_text())
    h5 = re.search(HASH.format(dst=r"meta\.h5"), code)
    assert h5, "hash5 call not found"
    algo, fields, top = h5.group(1), [f.strip() for f in h5.group(3).split(",")], h5.group(4).strip()
    assert (algo, top) == ("crc32", "(bit<64>) 0x100000000")  # max 2^32: h5 is the whole crc
    for name in ("lb", "lb_local", "route_ecmp"):
        m = re.search(rf"action\s+{name}\s*\(([^)]*)\)\s*\{{", code)
        body, _ = block(code, m.end() - 1)
        assert "bit<16> n" in m.group(1), name
        calls = list(re.finditer(HASH.format(dst=r"meta\.idx"), body))
        assert len(calls) == 1, name
        c = calls[0]
        assert c.group(1) == algo, name  # the same algorithm as h5
        assert [f.strip() for f in c.group(3).split(",")] == fields, name  # over the same fields
        assert c.group(2) == "16", name  # base 0, of idx's width
        assert c.group(4).strip() == "n", name  # max n: base + crc % n
        assert "meta.idx" not in body.replace(c.group(0), ""), name  # nothing else writes idx


# ------------------------------------------- readers keep the action scopes


def test_p4client_keeps_noaction_out_of_entries_and_members():
    from p4.v1 import p4runtime_pb2
    from p4client import p4info as p4info_index
    from p4client import validate

    ix = p4info_index.load()
    ecmp = ix.names["NetcIngress.ecmp"]
    req = p4runtime_pb2.WriteRequest()
    u = req.updates.add(type=p4runtime_pb2.Update.INSERT)
    m = u.entity.action_profile_member
    m.action_profile_id, m.member_id, m.action.action_id = ix.tables[ecmp].implementation_id, 1, NOACTION_ID
    u = req.updates.add(type=p4runtime_pb2.Update.INSERT)
    te = u.entity.table_entry
    te.table_id = ecmp
    for fid, v in ((1, b"\n"), (2, b"\x06"), (3, b"P"), (4, b"\x00")):
        te.match.add(field_id=fid).exact.value = v
    te.action.action.action_id = NOACTION_ID
    found = validate.check_write_request(req, ix)
    assert any("update 0" in p and "`NoAction` is not an action of this table" in p for p in found), found
    assert any("update 1" in p and "`NoAction` is not an action of this table" in p for p in found), found
    # NoAction is the tables' default: as a default entry it is in scope
    assert ix.table_actions(ecmp, default=True) >= {NOACTION_ID} and NOACTION_ID not in ix.table_actions(ecmp)
