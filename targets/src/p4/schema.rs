//! The P4Info of `p4/netc.p4`, as constants: table, match-field, action,
//! parameter and action-profile ids and bit widths.
//!
//! Expects: `p4/netc.p4info.txtpb` lists exactly these (the Python tests
//! validate every rendered message against that file with the official
//! `p4.config.v1.p4info_pb2` classes, and check the file against the P4
//! source). Guarantees: one place in Rust that knows the ids.

/// A match kind of a P4 table key field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MatchKind {
    Exact,
    Lpm,
    Ternary,
    Range,
}

/// One key field of a table.
#[derive(Debug, PartialEq, Eq)]
pub struct FieldSpec {
    pub id: u32,
    pub name: &'static str,
    pub bits: u32,
    pub kind: MatchKind,
}

/// One parameter of an action.
#[derive(Debug, PartialEq, Eq)]
pub struct ParamSpec {
    pub id: u32,
    pub name: &'static str,
    pub bits: u32,
}

/// An action of the program.
#[derive(Debug, PartialEq, Eq)]
pub struct ActionSpec {
    pub id: u32,
    pub name: &'static str,
    pub params: &'static [ParamSpec],
}

/// A table of the program.
#[derive(Debug, PartialEq, Eq)]
pub struct TableSpec {
    pub id: u32,
    pub name: &'static str,
    pub fields: &'static [FieldSpec],
    /// The table's `size` in the P4Info (entries).
    pub size: u64,
    /// True if entries carry a priority (ternary or range keys).
    pub prioritized: bool,
}

/// An action profile (members only; no selector, see `p4/netc.p4`).
#[derive(Debug, PartialEq, Eq)]
pub struct ProfileSpec {
    pub id: u32,
    pub name: &'static str,
    pub table: &'static TableSpec,
    pub size: u64,
}

const fn f(id: u32, name: &'static str, bits: u32, kind: MatchKind) -> FieldSpec {
    FieldSpec {
        id,
        name,
        bits,
        kind,
    }
}
const fn p(id: u32, name: &'static str, bits: u32) -> ParamSpec {
    ParamSpec { id, name, bits }
}
use MatchKind::{Exact, Lpm, Range, Ternary};

pub const DROP: ActionSpec = ActionSpec {
    id: 0x0100_0001,
    name: "drop",
    params: &[],
};
pub const NOP: ActionSpec = ActionSpec {
    id: 0x0100_0002,
    name: "nop",
    params: &[],
};
pub const SET_CONFIG: ActionSpec = ActionSpec {
    id: 0x0100_0003,
    name: "set_config",
    params: &[p(1, "loopback", 32)],
};
pub const SET_HOST_PORT: ActionSpec = ActionSpec {
    id: 0x0100_0004,
    name: "set_host_port",
    params: &[],
};
pub const SET_MCAST_GRP: ActionSpec = ActionSpec {
    id: 0x0100_0005,
    name: "set_mcast_grp",
    params: &[p(1, "mgid", 16)],
};
pub const LB: ActionSpec = ActionSpec {
    id: 0x0100_0006,
    name: "lb",
    params: &[p(1, "n", 16)],
};
pub const LB_LOCAL: ActionSpec = ActionSpec {
    id: 0x0100_0007,
    name: "lb_local",
    params: &[p(1, "n", 16)],
};
pub const TO_MEMBER: ActionSpec = ActionSpec {
    id: 0x0100_0008,
    name: "to_member",
    params: &[p(1, "mvni", 24), p(2, "member", 32)],
};
pub const ENCAP: ActionSpec = ActionSpec {
    id: 0x0100_0009,
    name: "encap",
    params: &[p(1, "underlay", 32), p(2, "dmac", 48)],
};
pub const ROUTE_ECMP: ActionSpec = ActionSpec {
    id: 0x0100_000a,
    name: "route_ecmp",
    params: &[p(1, "net", 32), p(2, "len", 8), p(3, "n", 16)],
};
pub const SET_NEXTHOP: ActionSpec = ActionSpec {
    id: 0x0100_000b,
    name: "set_nexthop",
    params: &[p(1, "nexthop", 32)],
};
pub const FORWARD: ActionSpec = ActionSpec {
    id: 0x0100_000c,
    name: "forward",
    params: &[p(1, "port", 9)],
};

pub const SWITCH_CONFIG: TableSpec = TableSpec {
    id: 0x0200_0001,
    name: "switch_config",
    fields: &[],
    size: 1,
    prioritized: false,
};
pub const PORT_ROLE: TableSpec = TableSpec {
    id: 0x0200_0002,
    name: "port_role",
    fields: &[f(1, "ingress_port", 9, Exact)],
    size: 512,
    prioritized: false,
};
pub const PORT_TENANT: TableSpec = TableSpec {
    id: 0x0200_0003,
    name: "port_tenant",
    fields: &[f(1, "ingress_port", 9, Exact), f(2, "vni", 24, Exact)],
    size: 4096,
    prioritized: false,
};
pub const ACL: TableSpec = TableSpec {
    id: 0x0200_0004,
    name: "acl",
    fields: &[
        f(1, "src", 32, Ternary),
        f(2, "dst", 32, Ternary),
        f(3, "proto", 8, Ternary),
        f(4, "dport", 16, Range),
    ],
    size: 1024,
    prioritized: true,
};
pub const MCAST: TableSpec = TableSpec {
    id: 0x0200_0005,
    name: "mcast",
    fields: &[f(1, "vni", 24, Exact), f(2, "group", 32, Exact)],
    size: 4096,
    prioritized: false,
};
const VIP_KEY: &[FieldSpec] = &[
    f(1, "vni", 24, Exact),
    f(2, "vip", 32, Exact),
    f(3, "proto", 8, Exact),
    f(4, "port", 16, Exact),
];
pub const VIP_LOCAL: TableSpec = TableSpec {
    id: 0x0200_0006,
    name: "vip_local",
    fields: VIP_KEY,
    size: 16384,
    prioritized: false,
};
pub const VIP: TableSpec = TableSpec {
    id: 0x0200_0007,
    name: "vip",
    fields: VIP_KEY,
    size: 16384,
    prioritized: false,
};
const ECMP_KEY: &[FieldSpec] = &[
    f(1, "vip", 32, Exact),
    f(2, "proto", 8, Exact),
    f(3, "port", 16, Exact),
    f(4, "idx", 16, Exact),
];
pub const ECMP: TableSpec = TableSpec {
    id: 0x0200_0008,
    name: "ecmp",
    fields: ECMP_KEY,
    size: 4096,
    prioritized: false,
};
pub const ECMP_LOCAL: TableSpec = TableSpec {
    id: 0x0200_0009,
    name: "ecmp_local",
    fields: ECMP_KEY,
    size: 4096,
    prioritized: false,
};
pub const TUNNEL: TableSpec = TableSpec {
    id: 0x0200_000a,
    name: "tunnel",
    fields: &[f(1, "mvni", 24, Exact), f(2, "member", 32, Exact)],
    size: 512,
    prioritized: false,
};
pub const ROUTE: TableSpec = TableSpec {
    id: 0x0200_000b,
    name: "route",
    fields: &[f(1, "dst", 32, Lpm)],
    size: 1024,
    prioritized: false,
};
pub const ROUTE_MEMBER: TableSpec = TableSpec {
    id: 0x0200_000c,
    name: "route_member",
    fields: &[
        f(1, "net", 32, Exact),
        f(2, "len", 8, Exact),
        f(3, "idx", 16, Exact),
    ],
    size: 4096,
    prioritized: false,
};
pub const UNDERLAY: TableSpec = TableSpec {
    id: 0x0200_000d,
    name: "underlay",
    fields: &[f(1, "nexthop", 32, Lpm)],
    size: 4096,
    prioritized: false,
};

pub const ECMP_PROFILE: ProfileSpec = ProfileSpec {
    id: 0x1100_0001,
    name: "ecmp_profile",
    table: &ECMP,
    size: 4096,
};
pub const ECMP_LOCAL_PROFILE: ProfileSpec = ProfileSpec {
    id: 0x1100_0002,
    name: "ecmp_local_profile",
    table: &ECMP_LOCAL,
    size: 4096,
};

/// Every table, in P4Info order.
pub const TABLES: [&TableSpec; 13] = [
    &SWITCH_CONFIG,
    &PORT_ROLE,
    &PORT_TENANT,
    &ACL,
    &MCAST,
    &VIP_LOCAL,
    &VIP,
    &ECMP,
    &ECMP_LOCAL,
    &TUNNEL,
    &ROUTE,
    &ROUTE_MEMBER,
    &UNDERLAY,
];

/// The multicast group id is a `bit<16>` (`standard_metadata.mcast_grp`);
/// 0 means "no multicast".
pub const MGID_BITS: u32 = 16;
/// Egress ports are `bit<9>` in v1model.
pub const PORT_BITS: u32 = 9;

// ---- Tofino only (p4/netc_tna.p4, p4/netc_tna.p4info.txtpb): the tables
// that compute `hash5 % n` without `%`; see `tna.rs`.

pub const ADD_RESIDUE: ActionSpec = ActionSpec {
    id: 0x0100_000d,
    name: "add_residue",
    params: &[p(1, "r", 32)],
};
pub const REDUCE: ActionSpec = ActionSpec {
    id: 0x0100_000e,
    name: "reduce",
    params: &[p(1, "sub", 32)],
};
pub const MOD_B0: TableSpec = TableSpec {
    id: 0x0200_000e,
    name: "mod_b0",
    fields: &[f(1, "n", 16, Exact), f(2, "b0", 8, Exact)],
    size: 65536,
    prioritized: false,
};
pub const MOD_B1: TableSpec = TableSpec {
    id: 0x0200_000f,
    name: "mod_b1",
    fields: &[f(1, "n", 16, Exact), f(2, "b1", 8, Exact)],
    size: 65536,
    prioritized: false,
};
pub const MOD_B2: TableSpec = TableSpec {
    id: 0x0200_0010,
    name: "mod_b2",
    fields: &[f(1, "n", 16, Exact), f(2, "b2", 8, Exact)],
    size: 65536,
    prioritized: false,
};
pub const MOD_B3: TableSpec = TableSpec {
    id: 0x0200_0011,
    name: "mod_b3",
    fields: &[f(1, "n", 16, Exact), f(2, "b3", 8, Exact)],
    size: 65536,
    prioritized: false,
};
pub const MOD_REDUCE: TableSpec = TableSpec {
    id: 0x0200_0012,
    name: "mod_reduce",
    fields: &[f(1, "n", 16, Exact), f(2, "acc", 32, Range)],
    size: 1024,
    prioritized: true,
};

/// The Tofino-only tables, in P4Info order; `MOD_BYTES[i]` reads byte i of h5.
pub const MOD_BYTES: [&TableSpec; 4] = [&MOD_B0, &MOD_B1, &MOD_B2, &MOD_B3];
pub const TNA_TABLES: [&TableSpec; 5] = [&MOD_B0, &MOD_B1, &MOD_B2, &MOD_B3, &MOD_REDUCE];
