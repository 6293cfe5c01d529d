//! Intended state − observed state → one ordered OpenFlow bundle.
//!
//! Expects: the intended [`BridgeState`] (from rows or `.flows`/`.groups`)
//! and what the bridge holds ([`Observed`]). Guarantees: applying
//! [`Delta::bundle_lines`] to the observed bridge yields exactly the
//! intended flows (by cookie) and groups (by marker); nothing already right
//! is touched. Order inside the bundle (OVS executes bundled mods in order,
//! all or nothing): new groups, changed groups, flow deletes, flow adds,
//! group deletes — so no flow ever refers to a missing group, and a flow
//! whose actions changed (a new cookie) replaces the old one in the same
//! transaction.

use super::dump::{fingerprint, group_marker_cookie, marker_match, Observed, MARKER_TABLE};
use super::text::{BridgeState, Flow, Group};

/// One line of a bundle and what it does (for error messages).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BundleLine {
    /// `flow add …`, `group delete …`, as `ovs-ofctl bundle` reads it.
    pub text: String,
    /// The cookie the line adds or deletes (flows and markers), if any.
    pub cookie: Option<u64>,
    /// The group the line adds, modifies or deletes, if any.
    pub group: Option<u32>,
}

/// The changes that take a bridge from observed to intended.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Delta {
    pub add_groups: Vec<Group>,
    pub mod_groups: Vec<Group>,
    /// Cookies of flows (and markers) to delete, with one flow as OVS printed it.
    pub del_flows: Vec<(u64, String)>,
    pub add_flows: Vec<Flow>,
    pub del_groups: Vec<u32>,
}

impl Delta {
    /// Computes the difference.
    pub fn between(intended: &BridgeState, seen: &Observed) -> Delta {
        let mut d = Delta::default();
        let mut want_flows: Vec<Flow> = intended.sorted_flows().into_iter().cloned().collect();
        // group markers are flows of the intended state too
        for g in intended.groups.values() {
            want_flows.push(marker_flow(g));
            let marker_ok = seen.markers.get(&g.id) == Some(&group_marker_cookie(g))
                && seen
                    .group_prints
                    .get(&g.id)
                    .is_none_or(|p| *p == fingerprint(&g.kind, &g.buckets));
            if !seen.groups.contains(&g.id) {
                d.add_groups.push(g.clone());
            } else if !marker_ok {
                d.mod_groups.push(g.clone());
            }
        }
        let want_cookies: std::collections::BTreeSet<u64> =
            want_flows.iter().map(|f| f.cookie).collect();
        for (&cookie, flows) in &seen.flows {
            let intended_one = want_cookies.contains(&cookie) && flows.len() == 1;
            if !intended_one {
                let text = flows.first().map(|f| f.text.clone()).unwrap_or_default();
                d.del_flows.push((cookie, text));
            }
        }
        for (&id, &cookie) in &seen.markers {
            if !want_cookies.contains(&cookie) {
                d.del_flows.push((cookie, format!("marker of group {id}")));
            }
        }
        let present = |c: u64| {
            seen.flows.get(&c).is_some_and(|v| v.len() == 1)
                || seen.markers.values().any(|&m| m == c)
        };
        for f in want_flows {
            if !present(f.cookie) {
                d.add_flows.push(f);
            }
        }
        for &id in &seen.groups {
            if !intended.groups.contains_key(&id) {
                d.del_groups.push(id);
            }
        }
        d
    }

    /// True if the bridge already matches.
    pub fn is_empty(&self) -> bool {
        self.add_groups.is_empty()
            && self.mod_groups.is_empty()
            && self.del_flows.is_empty()
            && self.add_flows.is_empty()
            && self.del_groups.is_empty()
    }

    /// Number of flow and group mods.
    pub fn len(&self) -> usize {
        self.add_groups.len()
            + self.mod_groups.len()
            + self.del_flows.len()
            + self.add_flows.len()
            + self.del_groups.len()
    }

    /// The bundle, in execution order.
    pub fn bundle_lines(&self) -> Vec<BundleLine> {
        let mut out = Vec::with_capacity(self.len());
        for g in &self.add_groups {
            out.push(BundleLine {
                text: format!("group add {}", g.line()),
                cookie: None,
                group: Some(g.id),
            });
        }
        for g in &self.mod_groups {
            out.push(BundleLine {
                text: format!("group modify {}", g.line()),
                cookie: None,
                group: Some(g.id),
            });
        }
        for (c, _) in &self.del_flows {
            out.push(BundleLine {
                text: format!("flow delete cookie={c:#x}/-1"),
                cookie: Some(*c),
                group: None,
            });
        }
        for f in &self.add_flows {
            out.push(BundleLine {
                text: format!("flow add {}", f.line()),
                cookie: Some(f.cookie),
                group: None,
            });
        }
        for id in &self.del_groups {
            out.push(BundleLine {
                text: format!("group delete group_id={id}"),
                cookie: None,
                group: Some(*id),
            });
        }
        out
    }
}

/// The marker flow of a group ([`MARKER_TABLE`]).
pub fn marker_flow(g: &Group) -> Flow {
    Flow {
        table: MARKER_TABLE,
        priority: 1,
        matches: marker_match(g.id),
        actions: "drop".into(),
        cookie: group_marker_cookie(g),
    }
}
