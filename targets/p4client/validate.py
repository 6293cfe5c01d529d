"""Checks P4Runtime messages against the P4Info, with the official classes.

`check_write_request(req, ix)` returns a list of problems (empty = valid),
each naming the update, table and field. It checks what a P4Runtime server
would reject (P4Runtime spec 1.x, §8 and §9): ids exist; match kinds and
bit widths fit; bytestrings are canonical; LPM/ternary values have no bits
outside their prefix/mask; don't-care fields are omitted and exact fields
present; priorities exactly on tables with ternary/range keys; action
parameters complete and within width; member and multicast-group references
resolve (to an entity inserted earlier in the same request or to one in
`existing`); no two INSERTs of one key; default entries only by MODIFY;
actions within their scope (no DEFAULT_ONLY action in an entry or member,
no TABLE_ONLY one as a default).
"""

from __future__ import annotations

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from .p4info import Index

MF = p4info_pb2.MatchField
U = p4runtime_pb2.Update


def _int(b: bytes) -> int:
    return int.from_bytes(b, "big")


def _bytes_problem(b: bytes, width: int) -> str | None:
    if len(b) == 0:
        return "empty bytestring"
    if len(b) > 1 and b[0] == 0:
        return f"bytestring {b!r} is not canonical (leading zero byte)"
    if _int(b) >> width:
        return f"value {_int(b)} does not fit in {width} bits"
    return None


def table_key(te: p4runtime_pb2.TableEntry) -> tuple:
    """The identity of a table entry on the switch."""
    return (
        "table",
        te.table_id,
        te.is_default_action,
        te.priority,
        tuple(sorted(m.SerializeToString(deterministic=True) for m in te.match)),
    )


def entity_key(e: p4runtime_pb2.Entity) -> tuple:
    kind = e.WhichOneof("entity")
    if kind == "table_entry":
        return table_key(e.table_entry)
    if kind == "action_profile_member":
        m = e.action_profile_member
        return ("member", m.action_profile_id, m.member_id)
    if kind == "packet_replication_engine_entry":
        return ("mcast", e.packet_replication_engine_entry.multicast_group_entry.multicast_group_id)
    return ("other", e.SerializeToString(deterministic=True))


def _check_action(a: p4runtime_pb2.Action, allowed: set, ix: Index, where: str, out: list) -> None:
    if a.action_id not in ix.actions:
        out.append(f"{where}: action id {a.action_id} is not in the P4Info")
        return
    spec = ix.actions[a.action_id]
    if a.action_id not in allowed:
        out.append(f"{where}: action `{spec.preamble.name}` is not an action of this table")
    params = {p.id: p for p in spec.params}
    seen = set()
    for p in a.params:
        if p.param_id not in params:
            out.append(f"{where}: action `{spec.preamble.name}` has no parameter id {p.param_id}")
            continue
        if p.param_id in seen:
            out.append(f"{where}: parameter id {p.param_id} given twice")
        seen.add(p.param_id)
        prob = _bytes_problem(p.value, params[p.param_id].bitwidth)
        if prob:
            out.append(f"{where}: parameter `{params[p.param_id].name}`: {prob}")
    missing = set(params) - seen
    if missing:
        names = ", ".join(params[i].name for i in sorted(missing))
        out.append(f"{where}: action `{spec.preamble.name}` misses parameters {names}")


def _check_table_entry(te, utype, ix: Index, where: str, members: set, groups: set, out: list) -> None:
    if te.table_id not in ix.tables:
        out.append(f"{where}: table id {te.table_id} is not in the P4Info")
        return
    t = ix.tables[te.table_id]
    where = f"{where} table `{t.preamble.name}`"
    fields = ix.fields(te.table_id)
    seen = set()
    for m in te.match:
        if m.field_id not in fields:
            out.append(f"{where}: no match field id {m.field_id}")
            continue
        if m.field_id in seen:
            out.append(f"{where}: match field id {m.field_id} given twice")
        seen.add(m.field_id)
        f = fields[m.field_id]
        fw = f"{where} field `{f.name}`"
        kind = m.WhichOneof("field_match_type")
        expected = {MF.EXACT: "exact", MF.LPM: "lpm", MF.TERNARY: "ternary", MF.RANGE: "range"}.get(f.match_type)
        if kind != expected:
            out.append(f"{fw}: match kind {kind}, the P4Info says {expected}")
            continue
        w = f.bitwidth
        if kind == "exact":
            prob = _bytes_problem(m.exact.value, w)
            if prob:
                out.append(f"{fw}: {prob}")
        elif kind == "lpm":
            prob = _bytes_problem(m.lpm.value, w)
            if prob:
                out.append(f"{fw}: {prob}")
            elif not 1 <= m.lpm.prefix_len <= w:
                out.append(f"{fw}: prefix length {m.lpm.prefix_len} outside 1..{w} (/0 must be omitted)")
            elif _int(m.lpm.value) & ((1 << (w - m.lpm.prefix_len)) - 1):
                out.append(f"{fw}: bits set beyond the prefix length")
        elif kind == "ternary":
            p1, p2 = _bytes_problem(m.ternary.value, w), _bytes_problem(m.ternary.mask, w)
            if p1 or p2:
                out.append(f"{fw}: {p1 or p2}")
            elif _int(m.ternary.mask) == 0:
                out.append(f"{fw}: all-zero mask (a wildcard must be omitted)")
            elif _int(m.ternary.value) & ~_int(m.ternary.mask):
                out.append(f"{fw}: value has bits outside the mask")
        elif kind == "range":
            p1, p2 = _bytes_problem(m.range.low, w), _bytes_problem(m.range.high, w)
            if p1 or p2:
                out.append(f"{fw}: {p1 or p2}")
            elif _int(m.range.low) > _int(m.range.high):
                out.append(f"{fw}: low > high")
            elif (_int(m.range.low), _int(m.range.high)) == (0, (1 << w) - 1):
                out.append(f"{fw}: full range (a wildcard must be omitted)")
    if te.is_default_action:
        if te.match:
            out.append(f"{where}: a default entry has no match")
        if utype != U.MODIFY:
            out.append(f"{where}: a default entry can only be modified, not {U.Type.Name(utype)}")
    else:
        for fid, f in fields.items():
            if f.match_type == MF.EXACT and fid not in seen:
                out.append(f"{where}: exact field `{f.name}` is missing")
        prio = ix.prioritized(te.table_id)
        if prio and te.priority <= 0:
            out.append(f"{where}: the table needs a priority > 0")
        if not prio and te.priority != 0:
            out.append(f"{where}: priority {te.priority} on a table without ternary/range keys")
    if utype == U.DELETE:
        return
    kind = te.action.WhichOneof("type")
    if kind is None:
        if not (te.is_default_action and utype == U.MODIFY):
            out.append(f"{where}: no action")
    elif kind == "action":
        _check_action(te.action.action, ix.table_actions(te.table_id, te.is_default_action), ix, where, out)
        if t.implementation_id:
            out.append(f"{where}: a direct action on a table with an action profile")
        if te.action.action.action_id == ix.names.get("NetcIngress.set_mcast_grp"):
            mgid = _int(te.action.action.params[0].value) if te.action.action.params else 0
            if mgid not in groups:
                out.append(f"{where}: multicast group {mgid} does not exist")
    elif kind == "action_profile_member_id":
        if not t.implementation_id:
            out.append(f"{where}: member reference on a table without an action profile")
        elif (t.implementation_id, te.action.action_profile_member_id) not in members:
            out.append(f"{where}: member {te.action.action_profile_member_id} does not exist")
    else:
        out.append(f"{where}: unsupported action kind {kind}")


def check_write_request(req: p4runtime_pb2.WriteRequest, ix: Index, existing=()) -> list[str]:
    """Problems of `req` against `ix`; `existing` = entity keys already on the switch."""
    out: list[str] = []
    present = set(existing)
    members = {(k[1], k[2]) for k in present if k[0] == "member"}
    groups = {k[1] for k in present if k[0] == "mcast"}
    inserted = set()
    for i, u in enumerate(req.updates):
        where = f"update {i} ({U.Type.Name(u.type)})"
        kind = u.entity.WhichOneof("entity")
        key = entity_key(u.entity)
        if u.type == U.INSERT:
            if key in inserted or key in present:
                out.append(f"{where}: duplicate key {key[:2]}")
            inserted.add(key)
        if kind == "table_entry":
            _check_table_entry(u.entity.table_entry, u.type, ix, where, members, groups, out)
        elif kind == "action_profile_member":
            m = u.entity.action_profile_member
            if m.action_profile_id not in ix.profiles:
                out.append(f"{where}: action profile id {m.action_profile_id} is not in the P4Info")
                continue
            prof = ix.profiles[m.action_profile_id]
            if m.member_id == 0:
                out.append(f"{where}: member id 0")
            if u.type != U.DELETE:
                allowed = set().union(*(ix.table_actions(t) for t in prof.table_ids))
                _check_action(m.action, allowed, ix, f"{where} profile `{prof.preamble.name}`", out)
                members.add((m.action_profile_id, m.member_id))
            else:
                members.discard((m.action_profile_id, m.member_id))
        elif kind == "packet_replication_engine_entry":
            g = u.entity.packet_replication_engine_entry.multicast_group_entry
            if g.multicast_group_id == 0:
                out.append(f"{where}: multicast group id 0")
            reps = [(r.instance, r.port) for r in g.replicas]
            if len(set(reps)) != len(reps):
                out.append(f"{where}: duplicate replicas in group {g.multicast_group_id}")
            for r in g.replicas:
                if r.WhichOneof("port_kind") != "port":
                    out.append(f"{where}: replica without `port`")
                else:
                    prob = _bytes_problem(r.port, 9)
                    if prob:
                        out.append(f"{where}: replica port: {prob}")
            if u.type == U.DELETE:
                groups.discard(g.multicast_group_id)
            else:
                groups.add(g.multicast_group_id)
        else:
            out.append(f"{where}: unexpected entity {kind}")
    return out
