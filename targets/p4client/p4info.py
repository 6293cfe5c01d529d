"""P4Info of p4/netc.p4, loaded with the official classes and indexed by id."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

DEFAULT = Path(__file__).resolve().parents[2] / "p4" / "netc.p4info.txtpb"


@dataclass
class Index:
    """Tables, actions and profiles of one P4Info, by id and by name."""

    info: p4info_pb2.P4Info
    tables: dict = field(default_factory=dict)
    actions: dict = field(default_factory=dict)
    profiles: dict = field(default_factory=dict)
    names: dict = field(default_factory=dict)

    def fields(self, table_id: int) -> dict:
        return {f.id: f for f in self.tables[table_id].match_fields}

    def table_actions(self, table_id: int, default: bool = False) -> set:
        """Ids of the actions an entry (or, with `default`, the default entry)
        of the table may use: an action's `scope` keeps DEFAULT_ONLY actions
        (p4c's NoAction on tables that declare no default) out of entries and
        members, TABLE_ONLY ones out of the default."""
        banned = p4info_pb2.ActionRef.TABLE_ONLY if default else p4info_pb2.ActionRef.DEFAULT_ONLY
        return {a.id for a in self.tables[table_id].action_refs if a.scope != banned}

    def prioritized(self, table_id: int) -> bool:
        MF = p4info_pb2.MatchField
        return any(
            f.match_type in (MF.TERNARY, MF.RANGE, MF.OPTIONAL) for f in self.tables[table_id].match_fields
        )


def load(path: Path | str = DEFAULT) -> Index:
    return index(text_format.Parse(Path(path).read_text(), p4info_pb2.P4Info()))


def index(info: p4info_pb2.P4Info) -> Index:
    ix = Index(info)
    for t in info.tables:
        ix.tables[t.preamble.id] = t
        ix.names[t.preamble.name] = t.preamble.id
    for a in info.actions:
        ix.actions[a.preamble.id] = a
        ix.names[a.preamble.name] = a.preamble.id
    for p in info.action_profiles:
        ix.profiles[p.preamble.id] = p
        ix.names[p.preamble.name] = p.preamble.id
    return ix
