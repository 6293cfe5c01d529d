//! `p4_*` rows of one switch → P4Runtime entities (table entries, action
//! profile members, multicast groups), checked against the P4Info widths.
//!
//! Expects: the rows of one device, each with its location in column 0, as
//! grouped by `group_by_device`; the relations and columns of
//! specs/targets.md §1. Guarantees: every value fits its field or parameter
//! (else [`P4Error::Width`] naming switch, table and row); no two rows give
//! one key different actions ([`P4Error::Conflict`]); every member and
//! multicast group an entry refers to is among the entities; output is
//! sorted, so the same rows always give the same entities.

use super::members::MemberIds;
use super::schema::{self, ActionSpec, ProfileSpec, TableSpec};
use super::P4Error;
use crate::DeviceRows;
use netc_compiler::value::{Row, Value};
use std::collections::{BTreeMap, BTreeSet};

/// A match on one key field (values are unsigned integers of the field width).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Match {
    Exact(u128),
    Lpm(u128, u32),
    Ternary(u128, u128),
    Range(u128, u128),
}

/// An action with its arguments, in parameter order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ActionCall {
    pub spec: &'static ActionSpec,
    pub args: Vec<u128>,
}

/// What a table entry does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    Action(ActionCall),
    Member(u32),
    /// Only for a default entry: restore the program's default action.
    ResetDefault,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableEntry {
    pub table: &'static TableSpec,
    /// (field id, match); don't-care fields are omitted, as P4Runtime requires.
    pub matches: Vec<(u32, Match)>,
    /// 0 unless the table is prioritized.
    pub priority: i32,
    pub target: Target,
    pub is_default: bool,
    /// The row this entry came from, for error messages.
    pub source: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    pub profile: &'static ProfileSpec,
    pub id: u32,
    pub action: ActionCall,
    pub source: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McastGroup {
    pub id: u32,
    /// (instance, egress port), sorted.
    pub replicas: Vec<(u32, u32)>,
    pub source: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Entity {
    Member(Member),
    Mcast(McastGroup),
    Table(TableEntry),
}

/// The identity of an entity on the switch (what INSERT/DELETE address).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EntityKey {
    Member {
        profile: u32,
        id: u32,
    },
    Mcast {
        id: u32,
    },
    Table {
        table: u32,
        default: bool,
        priority: i32,
        matches: Vec<(u32, Match)>,
    },
}

impl Entity {
    pub fn key(&self) -> EntityKey {
        match self {
            Entity::Member(m) => EntityKey::Member {
                profile: m.profile.id,
                id: m.id,
            },
            Entity::Mcast(g) => EntityKey::Mcast { id: g.id },
            Entity::Table(t) => EntityKey::Table {
                table: t.table.id,
                default: t.is_default,
                priority: t.priority,
                matches: t.matches.clone(),
            },
        }
    }
    pub fn source(&self) -> &str {
        match self {
            Entity::Member(m) => &m.source,
            Entity::Mcast(g) => &g.source,
            Entity::Table(t) => &t.source,
        }
    }
    /// The table (or profile / PRE) name, for messages.
    pub fn place(&self) -> &'static str {
        match self {
            Entity::Member(m) => m.profile.name,
            Entity::Mcast(_) => "multicast group (PRE)",
            Entity::Table(t) => t.table.name,
        }
    }
}

/// Located relations this target renders, with the table they fill.
pub const RELATIONS: &[(&str, &str)] = &[
    ("p4_switch_config", "switch_config"),
    ("p4_host_port", "port_role"),
    ("p4_port_vni", "port_tenant"),
    ("p4_acl", "acl"),
    ("p4_mcast", "mcast"),
    ("p4_mcast_replica", "multicast group (PRE)"),
    ("p4_vip_local", "vip_local"),
    ("p4_vip", "vip"),
    ("p4_ecmp_member_local", "ecmp_local"),
    ("p4_ecmp_member", "ecmp"),
    ("p4_tunnel", "tunnel"),
    ("p4_route", "route"),
    ("p4_route_member", "route_member"),
    ("p4_underlay", "underlay"),
    // announced by the switch's BGP speaker, not a table: rendered as a comment
    ("p4_announce", "(BGP announcement)"),
];

/// Reads one row's columns for one table, naming the row in errors.
struct Cols<'a> {
    device: &'a str,
    table: &'static str,
    row: &'a Row,
    source: String,
}

impl<'a> Cols<'a> {
    fn new(device: &'a str, rel: &str, table: &'static str, row: &'a Row) -> Self {
        let args: Vec<String> = row.iter().map(|v| v.to_string()).collect();
        Cols {
            device,
            table,
            row,
            source: format!("{rel}({})", args.join(", ")),
        }
    }
    fn err_width(&self, field: &str, value: String, bits: u32) -> P4Error {
        P4Error::Width {
            device: self.device.to_string(),
            table: self.table,
            entry: self.source.clone(),
            field: field.to_string(),
            value,
            bits,
        }
    }
    fn err_value(&self, field: &str, expected: &str) -> P4Error {
        P4Error::Value {
            device: self.device.to_string(),
            table: self.table,
            entry: self.source.clone(),
            field: field.to_string(),
            expected: expected.to_string(),
        }
    }
    fn get(&self, i: usize, field: &str) -> Result<&Value, P4Error> {
        self.row
            .get(i)
            .ok_or_else(|| self.err_value(field, "a column here (the row is too short)"))
    }
    /// An unsigned integer column that must fit `bits`.
    fn uint(&self, i: usize, field: &str, bits: u32) -> Result<u128, P4Error> {
        let v = match self.get(i, field)? {
            Value::Number(n) => {
                if *n < 0 {
                    return Err(self.err_width(field, n.to_string(), bits));
                }
                *n as u128
            }
            Value::Unsigned(u) => *u as u128,
            _ => return Err(self.err_value(field, "a number")),
        };
        if bits < 128 && v >> bits != 0 {
            return Err(self.err_width(field, v.to_string(), bits));
        }
        Ok(v)
    }
    fn ipv4(&self, i: usize, field: &str) -> Result<u128, P4Error> {
        match self.get(i, field)? {
            Value::Ipv4(a) => Ok(*a as u128),
            _ => Err(self.err_value(field, "an IPv4 address")),
        }
    }
    fn prefix4(&self, i: usize, field: &str) -> Result<(u128, u32), P4Error> {
        match self.get(i, field)? {
            Value::Prefix4(a, l) => Ok((*a as u128, *l as u32)),
            _ => Err(self.err_value(field, "an IPv4 prefix")),
        }
    }
    fn mac(&self, i: usize, field: &str) -> Result<u128, P4Error> {
        match self.get(i, field)? {
            Value::Mac(m) => Ok(*m as u128),
            _ => Err(self.err_value(field, "a MAC address")),
        }
    }
    fn symbol(&self, i: usize, field: &str) -> Result<String, P4Error> {
        match self.get(i, field)? {
            Value::Symbol(s) => Ok(s.as_str().to_string()),
            _ => Err(self.err_value(field, "a symbol")),
        }
    }
    fn entry(
        &self,
        table: &'static TableSpec,
        matches: Vec<(u32, Match)>,
        target: Target,
    ) -> TableEntry {
        TableEntry {
            table,
            matches,
            priority: 0,
            target,
            is_default: false,
            source: self.source.clone(),
        }
    }
}

fn call(spec: &'static ActionSpec, args: Vec<u128>) -> Target {
    Target::Action(ActionCall { spec, args })
}

fn ternary_prefix((net, len): (u128, u32)) -> Option<Match> {
    if len == 0 {
        return None;
    }
    let mask = ((1u128 << len) - 1) << (32 - len);
    Some(Match::Ternary(net, mask))
}

/// Rows of one switch → its entities, sorted. `ids` keeps action-profile
/// member ids stable across generations (see [`MemberIds`]).
pub fn build(device: &str, rows: &DeviceRows, ids: &mut MemberIds) -> Result<Vec<Entity>, P4Error> {
    let known: BTreeSet<&str> = RELATIONS.iter().map(|(r, _)| *r).collect();
    if let Some(unknown) = rows.keys().find(|r| !known.contains(r.as_str())) {
        return Err(P4Error::UnknownRelation {
            device: device.to_string(),
            relation: unknown.clone(),
        });
    }
    let rel = |name: &str| rows.get(name).map(Vec::as_slice).unwrap_or(&[]);
    let mut tables: Vec<TableEntry> = Vec::new();

    for r in rel("p4_switch_config") {
        let c = Cols::new(device, "p4_switch_config", schema::SWITCH_CONFIG.name, r);
        let mut e = c.entry(
            &schema::SWITCH_CONFIG,
            vec![],
            call(&schema::SET_CONFIG, vec![c.ipv4(1, "loopback")?]),
        );
        e.is_default = true;
        tables.push(e);
    }
    for r in rel("p4_host_port") {
        let c = Cols::new(device, "p4_host_port", schema::PORT_ROLE.name, r);
        let port = c.uint(1, "ingress_port", 9)?;
        tables.push(c.entry(
            &schema::PORT_ROLE,
            vec![(1, Match::Exact(port))],
            call(&schema::SET_HOST_PORT, vec![]),
        ));
    }
    for r in rel("p4_port_vni") {
        let c = Cols::new(device, "p4_port_vni", schema::PORT_TENANT.name, r);
        let m = vec![
            (1, Match::Exact(c.uint(1, "ingress_port", 9)?)),
            (2, Match::Exact(c.uint(2, "vni", 24)?)),
        ];
        tables.push(c.entry(&schema::PORT_TENANT, m, call(&schema::NOP, vec![])));
    }
    for r in rel("p4_acl") {
        let c = Cols::new(device, "p4_acl", schema::ACL.name, r);
        let prio = match c.get(1, "priority")? {
            Value::Number(n) if (1..=i32::MAX as i64).contains(n) => *n as i32,
            _ => {
                return Err(c.err_value(
                    "priority",
                    "a priority in 1..=2147483647 (P4Runtime priorities are positive)",
                ))
            }
        };
        let mut m = Vec::new();
        if let Some(x) = ternary_prefix(c.prefix4(2, "src")?) {
            m.push((1, x));
        }
        if let Some(x) = ternary_prefix(c.prefix4(3, "dst")?) {
            m.push((2, x));
        }
        let proto = c.uint(4, "proto", 8)?;
        if proto != 0 {
            m.push((3, Match::Ternary(proto, 0xff)));
        }
        let (lo, hi) = (c.uint(5, "dport", 16)?, c.uint(6, "dport", 16)?);
        if lo > hi {
            return Err(c.err_value("dport", "port_lo <= port_hi"));
        }
        if (lo, hi) != (0, 0xffff) {
            m.push((4, Match::Range(lo, hi)));
        }
        let action = match c.symbol(7, "action")?.as_str() {
            "drop" | "deny" => &schema::DROP,
            "allow" | "permit" => &schema::NOP,
            _ => return Err(c.err_value("action", "\"drop\"/\"deny\" or \"allow\"/\"permit\"")),
        };
        let mut e = c.entry(&schema::ACL, m, call(action, vec![]));
        e.priority = prio;
        tables.push(e);
    }
    let mut groups: BTreeMap<u32, McastGroup> = BTreeMap::new();
    for r in rel("p4_mcast") {
        let c = Cols::new(device, "p4_mcast", schema::MCAST.name, r);
        let mgid = c.uint(3, "mgid", schema::MGID_BITS)?;
        if mgid == 0 {
            return Err(c.err_value(
                "mgid",
                "a multicast group id in 1..=65535 (0 means no multicast)",
            ));
        }
        let m = vec![
            (1, Match::Exact(c.uint(1, "vni", 24)?)),
            (2, Match::Exact(c.ipv4(2, "group")?)),
        ];
        tables.push(c.entry(&schema::MCAST, m, call(&schema::SET_MCAST_GRP, vec![mgid])));
        groups.entry(mgid as u32).or_insert_with(|| McastGroup {
            id: mgid as u32,
            replicas: vec![],
            source: c.source.clone(),
        });
    }
    for r in rel("p4_mcast_replica") {
        let c = Cols::new(device, "p4_mcast_replica", "multicast group (PRE)", r);
        let mgid = c.uint(1, "mgid", schema::MGID_BITS)? as u32;
        let port = c.uint(2, "port", schema::PORT_BITS)? as u32;
        if mgid == 0 {
            return Err(c.err_value("mgid", "a multicast group id in 1..=65535"));
        }
        let g = groups.entry(mgid).or_insert_with(|| McastGroup {
            id: mgid,
            replicas: vec![],
            source: c.source.clone(),
        });
        g.replicas.push((port, port));
    }
    for (rname, table, action) in [
        ("p4_vip_local", &schema::VIP_LOCAL, &schema::LB_LOCAL),
        ("p4_vip", &schema::VIP, &schema::LB),
    ] {
        for r in rel(rname) {
            let c = Cols::new(device, rname, table.name, r);
            let m = vec![
                (1, Match::Exact(c.uint(1, "vni", 24)?)),
                (2, Match::Exact(c.ipv4(2, "vip")?)),
                (3, Match::Exact(c.uint(3, "proto", 8)?)),
                (4, Match::Exact(c.uint(4, "port", 16)?)),
            ];
            let n = c.uint(5, "n", 16)?;
            if n == 0 {
                return Err(c.err_value("n", "a vector size n >= 1 (idx = hash5 % n)"));
            }
            tables.push(c.entry(table, m, call(action, vec![n])));
        }
    }
    // members first: collect every (profile, mvni, member) the rows need
    let mut ecmp_rows = Vec::new();
    for (rname, profile) in [
        ("p4_ecmp_member_local", &schema::ECMP_LOCAL_PROFILE),
        ("p4_ecmp_member", &schema::ECMP_PROFILE),
    ] {
        for r in rel(rname) {
            let c = Cols::new(device, rname, profile.table.name, r);
            let m = vec![
                (1, Match::Exact(c.ipv4(1, "vip")?)),
                (2, Match::Exact(c.uint(2, "proto", 8)?)),
                (3, Match::Exact(c.uint(3, "port", 16)?)),
                (4, Match::Exact(c.uint(4, "idx", 16)?)),
            ];
            let key = (
                profile.id,
                c.uint(5, "mvni", 24)? as u32,
                c.ipv4(6, "member")? as u32,
            );
            ecmp_rows.push((profile, key, m, c.source.clone()));
        }
    }
    ids.assign(ecmp_rows.iter().map(|(_, k, _, _)| *k).collect());
    let mut members: BTreeMap<(u32, u32), Member> = BTreeMap::new();
    for (profile, key, m, source) in ecmp_rows {
        let id = ids.get(key).ok_or(P4Error::Internal(
            "member id allocated for every needed member",
        ))?;
        members.entry((profile.id, id)).or_insert_with(|| Member {
            profile,
            id,
            action: ActionCall {
                spec: &schema::TO_MEMBER,
                args: vec![key.1 as u128, key.2 as u128],
            },
            source: source.clone(),
        });
        tables.push(TableEntry {
            table: profile.table,
            matches: m,
            priority: 0,
            target: Target::Member(id),
            is_default: false,
            source,
        });
    }
    for r in rel("p4_tunnel") {
        let c = Cols::new(device, "p4_tunnel", schema::TUNNEL.name, r);
        let m = vec![
            (1, Match::Exact(c.uint(1, "mvni", 24)?)),
            (2, Match::Exact(c.ipv4(2, "member")?)),
        ];
        let args = vec![c.ipv4(3, "underlay")?, c.mac(4, "dmac")?];
        tables.push(c.entry(&schema::TUNNEL, m, call(&schema::ENCAP, args)));
    }
    for r in rel("p4_route") {
        let c = Cols::new(device, "p4_route", schema::ROUTE.name, r);
        let (net, len) = c.prefix4(1, "dst")?;
        let n = c.uint(2, "n", 16)?;
        if n == 0 {
            return Err(c.err_value("n", "a vector size n >= 1"));
        }
        // a /0 route is the LPM don't-care: it becomes the table's default.
        let m = if len == 0 {
            vec![]
        } else {
            vec![(1, Match::Lpm(net, len))]
        };
        let mut e = c.entry(
            &schema::ROUTE,
            m,
            call(&schema::ROUTE_ECMP, vec![net, len as u128, n]),
        );
        e.is_default = len == 0;
        tables.push(e);
    }
    for r in rel("p4_route_member") {
        let c = Cols::new(device, "p4_route_member", schema::ROUTE_MEMBER.name, r);
        let (net, len) = c.prefix4(1, "net")?;
        let m = vec![
            (1, Match::Exact(net)),
            (2, Match::Exact(len as u128)),
            (3, Match::Exact(c.uint(2, "idx", 16)?)),
        ];
        tables.push(c.entry(
            &schema::ROUTE_MEMBER,
            m,
            call(&schema::SET_NEXTHOP, vec![c.ipv4(3, "nexthop")?]),
        ));
    }
    for r in rel("p4_underlay") {
        let c = Cols::new(device, "p4_underlay", schema::UNDERLAY.name, r);
        let (net, len) = c.prefix4(1, "nexthop")?;
        let port = c.uint(2, "port", schema::PORT_BITS)?;
        let m = if len == 0 {
            vec![]
        } else {
            vec![(1, Match::Lpm(net, len))]
        };
        let mut e = c.entry(&schema::UNDERLAY, m, call(&schema::FORWARD, vec![port]));
        e.is_default = len == 0;
        tables.push(e);
    }

    // one entry per key: identical duplicates collapse, different actions conflict
    let mut by_key: BTreeMap<EntityKey, Entity> = BTreeMap::new();
    let all = members
        .into_values()
        .map(Entity::Member)
        .chain(groups.into_values().map(Entity::Mcast))
        .chain(tables.into_iter().map(Entity::Table));
    for e in all {
        let k = e.key();
        match by_key.get(&k) {
            Some(prev) if !same_effect(prev, &e) => {
                return Err(P4Error::Conflict {
                    device: device.to_string(),
                    table: e.place(),
                    entry: e.source().to_string(),
                    other: prev.source().to_string(),
                })
            }
            Some(_) => {}
            None => {
                by_key.insert(k, e);
            }
        }
    }
    let mut out: Vec<Entity> = by_key.into_values().collect();
    canonical(&mut out);
    Ok(out)
}

/// Whether two entities with one key would program the same thing.
pub fn same_effect(a: &Entity, b: &Entity) -> bool {
    match (a, b) {
        (Entity::Table(x), Entity::Table(y)) => x.target == y.target,
        (Entity::Member(x), Entity::Member(y)) => x.action == y.action,
        (Entity::Mcast(x), Entity::Mcast(y)) => {
            let (mut p, mut q) = (x.replicas.clone(), y.replicas.clone());
            p.sort();
            q.sort();
            p == q
        }
        _ => false,
    }
}

/// Sorts a group's replicas and removes duplicates (rows are sets already;
/// this keeps hand-built entities canonical too).
pub fn canonical(entities: &mut [Entity]) {
    for e in entities {
        if let Entity::Mcast(g) = e {
            g.replicas.sort();
            g.replicas.dedup();
        }
    }
}

/// The announcements (`p4_announce`) of a switch, as text, sorted.
pub fn announcements(rows: &DeviceRows) -> Vec<String> {
    let mut out: Vec<String> = rows
        .get("p4_announce")
        .map(|v| {
            v.iter()
                .filter_map(|r| r.get(1).map(|p| p.to_string()))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}
