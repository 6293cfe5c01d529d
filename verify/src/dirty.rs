//! What may differ between two generations, named by device and relation.
//!
//! Expects two complete artifact sets, or a caller that already knows what
//! it changed (the engine's per-device deltas, a test's own edit).
//! Guarantees: [`Dirty::between`] names every device whose flows or groups
//! differ (text or `file:line`), every relation whose rows differ, and
//! every device (first column) of a relation row whose values differ; so
//! a device it does not name has the same flows, groups and — in every
//! relation — the same row values in the same order. An update given a
//! [`Dirty`] reads only what it names ([`crate::incremental::Verifier::update_dirty`]);
//! a hint that leaves out a change makes the incremental report wrong.

use crate::artifacts::{Artifacts, FlowText, GroupText, Row};
use crate::incremental::{same_flow_text, same_group_text};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

/// What may differ between the current generation and the next.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Dirty {
    /// Devices whose flows or groups may differ, or whose rows' values in
    /// some relation may differ.
    pub devices: BTreeSet<String>,
    /// Relations whose rows may differ (values, order or `file:line`).
    pub relations: BTreeSet<String>,
}

impl Dirty {
    /// Found by comparing the two generations in full (O(artifacts)).
    pub fn between(old: &Artifacts, new: &Artifacts) -> Dirty {
        let mut d = Dirty::default();
        let names: BTreeSet<&String> = old
            .flows
            .keys()
            .chain(old.groups.keys())
            .chain(new.flows.keys())
            .chain(new.groups.keys())
            .collect();
        for name in names {
            let flows = same(old.flows.get(name), new.flows.get(name), same_flow);
            if !flows || !same(old.groups.get(name), new.groups.get(name), same_group) {
                d.devices.insert(name.clone());
            }
        }
        let rels: BTreeSet<&String> = old.relations.keys().chain(new.relations.keys()).collect();
        for rel in rels {
            let (o, n) = (old.rows(rel), new.rows(rel));
            if same_rows(o, n) {
                continue;
            }
            d.relations.insert(rel.clone());
            d.devices.extend(devices_of_changed_rows(o, n));
        }
        d
    }

    /// Whether relation `rel` may have changed.
    pub fn relation(&self, rel: &str) -> bool {
        self.relations.contains(rel)
    }
}

/// The first columns of the rows whose values are in one generation and
/// not the other (as multisets); if the values are equal as multisets but
/// not in order, every device of either side (a reorder can change which
/// duplicate wins).
fn devices_of_changed_rows(o: &[Arc<Row>], n: &[Arc<Row>]) -> BTreeSet<String> {
    let mut count: HashMap<&[String], i64> = HashMap::new();
    for r in o {
        *count.entry(r.vals.as_slice()).or_default() += 1;
    }
    for r in n {
        *count.entry(r.vals.as_slice()).or_default() -= 1;
    }
    let mut out: BTreeSet<String> = count
        .iter()
        .filter(|(_, c)| **c != 0)
        .filter_map(|(vals, _)| vals.first().cloned())
        .collect();
    let same_order = o.len() == n.len() && o.iter().zip(n).all(|(x, y)| x.vals == y.vals);
    if out.is_empty() && !same_order {
        out.extend(o.iter().chain(n).filter_map(|r| r.vals.first().cloned()));
    }
    out
}

pub(crate) fn same<T>(a: Option<&Vec<T>>, b: Option<&Vec<T>>, eq: impl Fn(&T, &T) -> bool) -> bool {
    let (a, b) = (
        a.map(Vec::as_slice).unwrap_or(&[]),
        b.map(Vec::as_slice).unwrap_or(&[]),
    );
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| eq(x, y))
}

/// Equal text and `file:line`.
fn same_flow(a: &FlowText, b: &FlowText) -> bool {
    same_flow_text(a, b) && a.at == b.at
}

fn same_group(a: &GroupText, b: &GroupText) -> bool {
    same_group_text(a, b) && a.at == b.at
}

/// Rows equal in order, values and `file:line` (which counterexamples cite).
pub(crate) fn same_rows(a: &[Arc<Row>], b: &[Arc<Row>]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| Arc::ptr_eq(x, y) || (x.vals == y.vals && x.at == y.at))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(vals: &[&str], at: &str) -> Arc<Row> {
        Arc::new(Row {
            vals: vals.iter().map(|s| s.to_string()).collect(),
            at: at.into(),
        })
    }

    #[test]
    fn names_the_devices_of_changed_rows_only() {
        let mut old = Artifacts::default();
        old.relations.insert(
            "agent_mux_member".into(),
            vec![row(&["m1", "a"], "f:1"), row(&["m2", "b"], "f:2")],
        );
        let mut new = old.clone();
        assert_eq!(Dirty::between(&old, &new), Dirty::default());
        new.relations.get_mut("agent_mux_member").unwrap().remove(0);
        let d = Dirty::between(&old, &new);
        assert_eq!(d.devices, BTreeSet::from(["m1".to_string()]));
        assert!(d.relation("agent_mux_member"));
        // only a line moved: the relation, no device
        let mut moved = old.clone();
        Arc::make_mut(&mut moved.relations.get_mut("agent_mux_member").unwrap()[1]).at =
            "f:3".into();
        let d = Dirty::between(&old, &moved);
        assert!(d.devices.is_empty() && d.relation("agent_mux_member"));
        // reordered: every device of the relation
        let mut swapped = old.clone();
        swapped
            .relations
            .get_mut("agent_mux_member")
            .unwrap()
            .swap(0, 1);
        assert_eq!(Dirty::between(&old, &swapped).devices.len(), 2);
    }
}
