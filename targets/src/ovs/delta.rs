//! Intended state − observed state → one ordered OpenFlow bundle.
//!
//! Expects: the intended [`BridgeState`] (from rows or `.flows`/`.groups`)
//! and what the bridge holds ([`Observed`]). Guarantees: applying
//! [`Delta::bundle_lines`] to the observed bridge yields exactly the
//! intended flows (by cookie, and, given their canonical texts, by what
//! they do: a flow edited in place keeps its cookie, so its match, priority
//! and actions are compared too) and groups (by marker and bucket
//! fingerprint); nothing already right is touched. [`Delta::entries`] lists
//! each difference (table, match, expected, found) for `netc status -v`. Order inside the bundle (OVS executes bundled mods in order,
//! all or nothing): new groups, changed groups, flow deletes, flow adds,
//! group deletes — so no flow ever refers to a missing group, and a flow
//! whose actions changed (a new cookie) replaces the old one in the same
//! transaction.

use super::dump::{
    canonical_seen, fingerprint, group_marker_cookie, marker_match, Observed, SeenFlow,
    MARKER_TABLE,
};
use super::text::{BridgeState, Flow, Group};
use std::collections::BTreeMap;

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

/// One entry a bridge holds differently from the intended state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DriftEntry {
    /// `flow` or `group`.
    pub what: &'static str,
    /// The flow's table (none for a group).
    pub table: Option<u8>,
    /// `priority=P,MATCH` of a flow, `group_id=G` of a group.
    pub matches: String,
    /// The intended line (none: the bridge holds an entry netc did not put there).
    pub expected: Option<String>,
    /// The line as the bridge reported it (none: missing on the bridge).
    pub found: Option<String>,
}

impl Delta {
    /// Computes the difference by cookie alone (see [`Delta::between_canonical`]).
    pub fn between(intended: &BridgeState, seen: &Observed) -> Delta {
        Delta::between_canonical(intended, seen, &BTreeMap::new())
    }

    /// Computes the difference; `canonical` holds, by cookie, the intended
    /// flows in OVS's spelling ([`super::dump::canonical_parsed`]): a
    /// flow on the bridge with an intended cookie whose text differs from
    /// it was edited in place, and is replaced. A cookie `canonical` lacks is
    /// compared by cookie alone.
    pub fn between_canonical(
        intended: &BridgeState,
        seen: &Observed,
        canonical: &BTreeMap<u64, String>,
    ) -> Delta {
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
        // one flow with the cookie, doing what the intended one does
        let intact = |cookie: u64, flows: &[SeenFlow]| {
            flows.len() == 1
                && canonical
                    .get(&cookie)
                    .is_none_or(|want| canonical_seen(&flows[0].text) == *want)
        };
        for (&cookie, flows) in &seen.flows {
            let intended_one = want_cookies.contains(&cookie) && intact(cookie, flows);
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
            seen.flows.get(&c).is_some_and(|v| intact(c, v))
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

    /// Each difference, flows then groups (group markers, netc's
    /// bookkeeping, are left out: their group is listed instead).
    pub fn entries(&self, seen: &Observed) -> Vec<DriftEntry> {
        let mut out = Vec::new();
        let added: BTreeMap<u64, &Flow> = self
            .add_flows
            .iter()
            .filter(|f| f.table != MARKER_TABLE)
            .map(|f| (f.cookie, f))
            .collect();
        for (cookie, text) in &self.del_flows {
            let Some(flows) = seen.flows.get(cookie) else {
                continue; // a marker
            };
            for f in flows {
                let canon = canonical_seen(&f.text);
                let matches = canon
                    .split_once(' ')
                    .map_or("", |x| x.1)
                    .split(" actions=")
                    .next()
                    .unwrap_or("")
                    .to_string();
                out.push(DriftEntry {
                    what: "flow",
                    table: Some(f.table),
                    matches,
                    expected: added.get(cookie).map(|w| w.line()),
                    found: Some(if f.text.is_empty() {
                        text.clone()
                    } else {
                        f.text.clone()
                    }),
                });
            }
        }
        for (cookie, f) in &added {
            if seen.flows.contains_key(cookie) {
                continue; // listed with what the bridge holds
            }
            let sep = if f.matches.is_empty() { "" } else { "," };
            out.push(DriftEntry {
                what: "flow",
                table: Some(f.table),
                matches: format!("priority={}{sep}{}", f.priority, f.matches),
                expected: Some(f.line()),
                found: None,
            });
        }
        for g in self.add_groups.iter().chain(&self.mod_groups) {
            out.push(DriftEntry {
                what: "group",
                table: None,
                matches: format!("group_id={}", g.id),
                expected: Some(g.line()),
                found: seen.group_lines.get(&g.id).cloned(),
            });
        }
        for id in &self.del_groups {
            out.push(DriftEntry {
                what: "group",
                table: None,
                matches: format!("group_id={id}"),
                expected: None,
                found: seen.group_lines.get(id).cloned(),
            });
        }
        out
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
