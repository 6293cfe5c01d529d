//! How a rebuilt bridge changed: its flows added and removed, per table, and its groups.
//!
//! Expects a bridge's flows and groups in two generations, and the pairing
//! of its flows by text. Guarantees: [`BridgeChange::untouched`] is false
//! for every table lookup (table and field values) an added or removed flow
//! can match, and for every table whose kept flows changed order.

use super::Moves;
use crate::artifacts::{FlowText, GroupText};
use crate::bridge::Val;
use crate::ofctl::Constraint;
use crate::space::Field;
use std::collections::{BTreeMap, BTreeSet};

impl BridgeChange {
    /// Whether table `t`, reached with these field values, behaves as
    /// before: not changed as a whole, and no added or removed flow can
    /// match the values.
    pub(super) fn untouched(&self, t: u8, key: &[(Field, Val)]) -> bool {
        !self.tables.contains(&t)
            && self.flows.get(&t).into_iter().flatten().all(|m| {
                m.iter().any(|c| {
                    key.iter().any(|(f, v)| {
                        *f == c.field
                            && matches!(v, Val::Const(x) if (x & c.mask) != (c.value & c.mask))
                    })
                })
            })
    }
}

/// How one bridge changed: flows added or removed (with their matches),
/// tables whose flows changed order (wholly changed), groups changed.
#[derive(Clone, Default)]
pub(super) struct BridgeChange {
    /// Per table, the matches of the flows added or removed.
    pub(super) flows: BTreeMap<u8, Vec<Vec<Constraint>>>,
    pub(super) tables: BTreeSet<u8>,
    pub(super) groups: BTreeSet<u32>,
}

pub(super) type FlowKey<'a> = (u8, u16, u64, &'a str, &'a str);

pub(super) fn flows_by_table(fs: Option<&Vec<FlowText>>) -> BTreeMap<u8, Vec<&FlowText>> {
    let mut m: BTreeMap<u8, Vec<&FlowText>> = BTreeMap::new();
    for f in fs.into_iter().flatten() {
        m.entry(f.table).or_default().push(f);
    }
    m
}

pub(super) fn flow_key<'a>(f: &&'a FlowText) -> FlowKey<'a> {
    (
        f.table,
        f.priority,
        f.cookie,
        f.matches.as_str(),
        f.actions.as_str(),
    )
}

/// How a bridge changed. `moved` pairs its flows (old position → new, by
/// [`moves_by`]; `None`: the same flows): when the kept flows keep their
/// order, the flows added and removed are read off its middle (a few
/// flows of tens of thousands at a Hoverboard, without a pass over every
/// flow); otherwise each table is compared as a set
/// ([`bridge_change_by_sets`]).
pub(super) fn bridge_change(
    of: Option<&Vec<FlowText>>,
    nf: Option<&Vec<FlowText>>,
    og: Option<&Vec<GroupText>>,
    ng: Option<&Vec<GroupText>>,
    moved: Option<&Moves>,
) -> BridgeChange {
    let (ofs, nfs) = (
        of.map(Vec::as_slice).unwrap_or(&[]),
        nf.map(Vec::as_slice).unwrap_or(&[]),
    );
    let in_order = moved.is_none_or(Moves::in_order);
    let mut bc = match (in_order, moved) {
        (false, _) => bridge_change_by_sets(of, nf),
        (true, None) => BridgeChange::default(),
        (true, Some(m)) => {
            let mut bc = BridgeChange::default();
            let nm = m.new_middle();
            let mut hit = vec![false; nm.len()];
            for j in m.middle.iter().flatten() {
                hit[*j as usize - nm.start] = true;
            }
            let removed = ofs[m.old_middle()]
                .iter()
                .zip(&m.middle)
                .filter(|(_, j)| j.is_none())
                .map(|(f, _)| f);
            let added = nfs[nm].iter().zip(&hit).filter(|(_, h)| !**h);
            for f in removed.chain(added.map(|(f, _)| f)) {
                match crate::ofctl::parse_match(&f.matches) {
                    Ok(m) => bc.flows.entry(f.table).or_default().push(m),
                    Err(_) => {
                        bc.tables.insert(f.table);
                    }
                }
            }
            bc
        }
    };
    bc.groups = changed_groups(og, ng);
    bc
}

/// [`bridge_change`]'s flows by comparing each table's flows as sets: a
/// table whose kept flows changed order, or with duplicates, changed as a
/// whole.
pub(super) fn bridge_change_by_sets(
    of: Option<&Vec<FlowText>>,
    nf: Option<&Vec<FlowText>>,
) -> BridgeChange {
    let mut bc = BridgeChange::default();
    let (o, n) = (flows_by_table(of), flows_by_table(nf));
    let k = flow_key;
    let tables: BTreeSet<u8> = o.keys().chain(n.keys()).copied().collect();
    for t in tables {
        let (ot, nt) = (
            o.get(&t).map(Vec::as_slice).unwrap_or(&[]),
            n.get(&t).map(Vec::as_slice).unwrap_or(&[]),
        );
        let os: BTreeSet<FlowKey> = ot.iter().map(k).collect();
        let ns: BTreeSet<FlowKey> = nt.iter().map(k).collect();
        let common_o: Vec<FlowKey> = ot.iter().map(k).filter(|x| ns.contains(x)).collect();
        let common_n: Vec<FlowKey> = nt.iter().map(k).filter(|x| os.contains(x)).collect();
        // duplicates or a new order of the kept flows: the table changed as a whole
        if os.len() != ot.len() || ns.len() != nt.len() || common_o != common_n {
            bc.tables.insert(t);
            continue;
        }
        for f in ot.iter().chain(nt) {
            let x = k(f);
            if os.contains(&x) != ns.contains(&x) {
                match crate::ofctl::parse_match(&f.matches) {
                    Ok(m) => bc.flows.entry(t).or_default().push(m),
                    Err(_) => {
                        bc.tables.insert(t);
                    }
                }
            }
        }
    }
    bc
}

/// The ids of the groups that differ between two generations of a bridge.
pub(super) fn changed_groups(
    og: Option<&Vec<GroupText>>,
    ng: Option<&Vec<GroupText>>,
) -> BTreeSet<u32> {
    pub(super) fn groups(gs: Option<&Vec<GroupText>>) -> BTreeMap<u32, (&str, &str)> {
        gs.into_iter()
            .flatten()
            .map(|g| (g.id, (g.kind.as_str(), g.buckets.as_str())))
            .collect()
    }
    let (og, ng) = (groups(og), groups(ng));
    og.keys()
        .chain(ng.keys())
        .filter(|id| og.get(id) != ng.get(id))
        .copied()
        .collect()
}

/// Equal text (`file:line` aside).
pub(crate) fn same_flow_text(a: &FlowText, b: &FlowText) -> bool {
    a.table == b.table
        && a.priority == b.priority
        && a.cookie == b.cookie
        && a.matches == b.matches
        && a.actions == b.actions
}

pub(crate) fn same_group_text(a: &GroupText, b: &GroupText) -> bool {
    a.id == b.id && a.kind == b.kind && a.buckets == b.buckets
}
