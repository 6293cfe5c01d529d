//! A switch's tables after its WriteRequest, and what they say as rows.
//!
//! Expects: the decoded updates of one `p4/<switch>.txtpb` and the P4Info.
//! Guarantees: the updates are applied in order to an empty switch as a
//! P4Runtime server would (an INSERT of a key that exists, a MODIFY or
//! DELETE of one that does not, an entry pointing to a member its table's
//! action profile does not hold, or a default entry set by INSERT is an
//! error at the update's `file:line`); the result is the switch's state, read back as rows of the
//! located `p4_*` relations (specs/targets.md §1), each row citing the line
//! of the update that installed it. Tables are found by their P4Info alias,
//! members are resolved through their action profile (`to_member(mvni,
//! member)`), so the rows say what the switch will do, not what the rules
//! meant it to do.

use super::request::{
    Action, Entity, EntryAction, FieldMatch, P4Info, TableEntry, Update, UpdateType,
};
use crate::artifacts::Row;
use std::collections::BTreeMap;

/// The state of one switch.
pub struct Switch {
    pub name: String,
    /// Path of the `.txtpb`, for citations.
    pub file: String,
    /// Table entries by key, each with the line that installed it.
    pub entries: BTreeMap<EntryKey, (TableEntry, u32)>,
    /// (profile id, member id) → action.
    pub members: BTreeMap<(u32, u32), (Action, u32)>,
    /// multicast group id → replicas (port, instance).
    pub groups: BTreeMap<u32, (Vec<(u32, u32)>, u32)>,
    /// table id → the action profile that implements it (P4Info): an
    /// entry's member id names a member of that profile only.
    profile_of: BTreeMap<u32, u32>,
}

/// A table entry's identity on the switch.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct EntryKey {
    pub table: u32,
    pub default: bool,
    pub priority: i32,
    pub matches: Vec<(u32, Vec<u128>)>,
}

fn key_of(e: &TableEntry) -> EntryKey {
    let mut matches: Vec<(u32, Vec<u128>)> = e
        .matches
        .iter()
        .map(|(f, m)| {
            let v = match m {
                FieldMatch::Exact(v) => vec![0, *v],
                FieldMatch::Lpm(v, l) => vec![1, *v, u128::from(*l)],
                FieldMatch::Ternary(v, k) => vec![2, *v, *k],
                FieldMatch::Range(a, b) => vec![3, *a, *b],
            };
            (*f, v)
        })
        .collect();
    matches.sort();
    EntryKey {
        table: e.table_id,
        default: e.is_default,
        priority: e.priority,
        matches,
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: {message}")]
pub struct StateError {
    pub file: String,
    pub line: u32,
    pub message: String,
}

impl Switch {
    /// The member an entry of `table` names by `id`, with its line: one of
    /// the table's own action profile, as the switch resolves it (two
    /// profiles may both have a member `id`).
    pub fn member(&self, table: u32, id: u32) -> Option<&(Action, u32)> {
        self.members.get(&(*self.profile_of.get(&table)?, id))
    }

    /// Applies `updates` to an empty switch running the program of `info`.
    pub fn apply(
        name: &str,
        file: &str,
        updates: &[Update],
        info: &P4Info,
    ) -> Result<Switch, StateError> {
        let profile_of = info
            .profile_tables
            .iter()
            .flat_map(|(p, ts)| ts.iter().map(move |t| (*t, *p)))
            .collect();
        let mut s = Switch {
            name: name.to_string(),
            file: file.to_string(),
            entries: BTreeMap::new(),
            members: BTreeMap::new(),
            groups: BTreeMap::new(),
            profile_of,
        };
        let err = |line: u32, message: String| StateError {
            file: file.to_string(),
            line,
            message,
        };
        for u in updates {
            match (&u.entity, u.kind) {
                (
                    Entity::Member {
                        profile_id,
                        member_id,
                        action,
                    },
                    kind,
                ) => {
                    let k = (*profile_id, *member_id);
                    match (kind, s.members.contains_key(&k)) {
                        (UpdateType::Insert, true) => {
                            return Err(err(
                                u.line,
                                format!("member {member_id} is inserted twice"),
                            ))
                        }
                        (UpdateType::Modify | UpdateType::Delete, false) => {
                            return Err(err(u.line, format!("member {member_id} does not exist")))
                        }
                        (UpdateType::Delete, true) => {
                            s.members.remove(&k);
                        }
                        _ => {
                            s.members.insert(k, (action.clone(), u.line));
                        }
                    }
                }
                (Entity::McastGroup { id, replicas }, kind) => {
                    match (kind, s.groups.contains_key(id)) {
                        (UpdateType::Insert, true) => {
                            return Err(err(
                                u.line,
                                format!("multicast group {id} is inserted twice"),
                            ))
                        }
                        (UpdateType::Modify | UpdateType::Delete, false) => {
                            return Err(err(u.line, format!("multicast group {id} does not exist")))
                        }
                        (UpdateType::Delete, true) => {
                            s.groups.remove(id);
                        }
                        _ => {
                            s.groups.insert(*id, (replicas.clone(), u.line));
                        }
                    }
                }
                (Entity::Table(e), kind) => {
                    let k = key_of(e);
                    if e.is_default && kind != UpdateType::Modify {
                        return Err(err(
                            u.line,
                            "a default entry can only be set by MODIFY".into(),
                        ));
                    }
                    if let Some(EntryAction::Member(m)) = &e.action {
                        if s.member(e.table_id, *m).is_none() {
                            let whose = match s.profile_of.get(&e.table_id) {
                                Some(p) => format!("action profile {p}"),
                                None => "no action profile (the table has none)".into(),
                            };
                            return Err(err(u.line, format!("the entry points to member {m}, which {whose} does not hold (members must come first; P4Runtime refuses the entry)")));
                        }
                    }
                    match (kind, s.entries.contains_key(&k)) {
                        (UpdateType::Insert, true) => {
                            return Err(err(
                                u.line,
                                "an entry with this key is already installed (duplicate key)"
                                    .into(),
                            ))
                        }
                        (UpdateType::Modify | UpdateType::Delete, false) if !e.is_default => {
                            return Err(err(u.line, "no installed entry has this key".into()))
                        }
                        (UpdateType::Delete, _) => {
                            s.entries.remove(&k);
                        }
                        _ => {
                            s.entries.insert(k, (e.clone(), u.line));
                        }
                    }
                }
            }
        }
        Ok(s)
    }

    /// The switch's state as rows of the located `p4_*` relations.
    pub fn rows(&self, info: &P4Info) -> Result<BTreeMap<&'static str, Vec<Row>>, StateError> {
        let mut out: BTreeMap<&'static str, Vec<Row>> = BTreeMap::new();
        let sw = self.name.clone();
        let at = |line: u32| format!("{}:{line}", self.file);
        let err = |line: u32, message: String| StateError {
            file: self.file.clone(),
            line,
            message,
        };
        for (e, line) in self.entries.values() {
            let Some(t) = info.tables.get(&e.table_id) else {
                continue;
            };
            let m = |fid: u32| e.matches.iter().find(|(f, _)| *f == fid).map(|(_, m)| m);
            let exact = |fid: u32| match m(fid) {
                Some(FieldMatch::Exact(v)) => Ok(*v),
                _ => Err(err(
                    *line,
                    format!("table `{}`: field {fid} must be matched exactly", t.name),
                )),
            };
            let lpm = |fid: u32| match m(fid) {
                Some(FieldMatch::Lpm(v, l)) => (*v, *l),
                _ => (0, 0),
            };
            let ternary = |fid: u32| match m(fid) {
                Some(FieldMatch::Ternary(v, k)) => (*v, *k),
                _ => (0, 0),
            };
            let action = match &e.action {
                Some(EntryAction::Action(a)) => Some(a.clone()),
                Some(EntryAction::Member(id)) => {
                    let found = self.member(e.table_id, *id).map(|(a, _)| a.clone());
                    Some(found.ok_or_else(|| err(*line, format!("member {id} is not installed")))?)
                }
                None => None,
            };
            let aname = action
                .as_ref()
                .and_then(|a| info.actions.get(&a.id))
                .map_or("", |a| a.name.as_str());
            let arg = |i: usize| {
                action
                    .as_ref()
                    .and_then(|a| a.params.iter().find(|(p, _)| *p == i as u32))
                    .map_or(0, |(_, v)| *v)
            };
            let row = |vals: Vec<String>| Row {
                vals: std::iter::once(sw.clone()).chain(vals).collect(),
                at: at(*line),
            };
            let (rel, vals): (&'static str, Vec<String>) = match (t.name.as_str(), aname) {
                ("switch_config", "set_config") => ("p4_switch_config", vec![ip(arg(1))]),
                ("port_role", "set_host_port") => ("p4_host_port", vec![exact(1)?.to_string()]),
                ("port_tenant", "nop") => (
                    "p4_port_vni",
                    vec![exact(1)?.to_string(), exact(2)?.to_string()],
                ),
                ("acl", a @ ("drop" | "nop")) => {
                    let (s, sm) = ternary(1);
                    let (d, dm) = ternary(2);
                    let (p, _) = ternary(3);
                    let (lo, hi) = match m(4) {
                        Some(FieldMatch::Range(a, b)) => (*a, *b),
                        _ => (0, 0xffff),
                    };
                    let act = if a == "drop" { "drop" } else { "allow" };
                    (
                        "p4_acl",
                        vec![
                            e.priority.to_string(),
                            prefix(s, sm.count_ones()),
                            prefix(d, dm.count_ones()),
                            p.to_string(),
                            lo.to_string(),
                            hi.to_string(),
                            act.to_string(),
                        ],
                    )
                }
                ("mcast", "set_mcast_grp") => (
                    "p4_mcast",
                    vec![exact(1)?.to_string(), ip(exact(2)?), arg(1).to_string()],
                ),
                (tab @ ("vip" | "vip_local"), "lb" | "lb_local") => (
                    if tab == "vip" {
                        "p4_vip"
                    } else {
                        "p4_vip_local"
                    },
                    vec![
                        exact(1)?.to_string(),
                        ip(exact(2)?),
                        exact(3)?.to_string(),
                        exact(4)?.to_string(),
                        arg(1).to_string(),
                    ],
                ),
                (tab @ ("ecmp" | "ecmp_local"), "to_member") => (
                    if tab == "ecmp" {
                        "p4_ecmp_member"
                    } else {
                        "p4_ecmp_member_local"
                    },
                    vec![
                        ip(exact(1)?),
                        exact(2)?.to_string(),
                        exact(3)?.to_string(),
                        exact(4)?.to_string(),
                        arg(1).to_string(),
                        ip(arg(2)),
                    ],
                ),
                ("tunnel", "encap") => (
                    "p4_tunnel",
                    vec![
                        exact(1)?.to_string(),
                        ip(exact(2)?),
                        ip(arg(1)),
                        mac(arg(2)),
                    ],
                ),
                ("route", "route_ecmp") => (
                    "p4_route",
                    vec![prefix(arg(1), arg(2) as u32), arg(3).to_string()],
                ),
                ("route_member", "set_nexthop") => (
                    "p4_route_member",
                    vec![
                        prefix(exact(1)?, exact(2)? as u32),
                        exact(3)?.to_string(),
                        ip(arg(1)),
                    ],
                ),
                ("underlay", "forward") => {
                    let (v, l) = lpm(1);
                    ("p4_underlay", vec![prefix(v, l), arg(1).to_string()])
                }
                // defaults left as the program's (nop/drop) say nothing
                _ => continue,
            };
            out.entry(rel).or_default().push(row(vals));
        }
        for (id, (replicas, line)) in &self.groups {
            for (port, _) in replicas {
                out.entry("p4_mcast_replica").or_default().push(Row {
                    vals: vec![sw.clone(), id.to_string(), port.to_string()],
                    at: at(*line),
                });
            }
        }
        Ok(out)
    }
}

fn ip(v: u128) -> String {
    std::net::Ipv4Addr::from(v as u32).to_string()
}

fn prefix(v: u128, len: u32) -> String {
    format!("{}/{len}", ip(v))
}

fn mac(v: u128) -> String {
    let b = (v as u64).to_be_bytes();
    b[2..]
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}
