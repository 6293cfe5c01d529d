//! PLAN-1 (Anolis part): a key range whose chain changes keeps a first
//! common node, and its sync op runs there.
//!
//! Expects two generations' artifacts. Each holds, per Anolis cluster, the
//! chains its nodes receive (`agent_anolis_chain(@node, cluster, version,
//! lo, hi, idx, member)`: the range (lo, hi] of the 32-bit ring, idx 0 the
//! head) and the sync ops (`agent_anolis_sync(@node, cluster, version, lo,
//! hi)`). Read here from the rows, never from the rules' `anolis_fcn`
//! (translation validation).
//!
//! The two generations may cut the ring at different positions, so the
//! ring is cut at every range end of either; each piece lies in exactly one
//! range of each generation. For a piece whose chain's members differ:
//! - its *first common node* is the first member of the old chain (from the
//!   head) that is also in the new chain; none = a violation (no node holds
//!   the range's connection state across the change: Anolis §4.3);
//! - a sync op of the new generation covering the piece must be at a node
//!   of both chains (it copies the state the old chain holds to the new
//!   members), else a violation.
//!
//! Guarantees: every violation cites the chain and sync rows (`file:line`).
//! Returns also the number of pieces whose chain changed.

use super::duet::cx;
use crate::artifacts::{Artifacts, Row};
use crate::report::Counterexample;
use std::collections::{BTreeMap, BTreeSet};

/// A chain: idx → (member, a row naming it).
type Chain<'a> = BTreeMap<u64, (String, &'a Row)>;

/// One generation's view of a cluster: its version and range end → chain.
#[derive(Default)]
struct Ring<'a> {
    version: String,
    /// hi → (lo, the range's chain).
    ranges: BTreeMap<u64, (u64, Chain<'a>)>,
}

impl Ring<'_> {
    /// The range holding the piece that ends at `hi` (the first range end at
    /// or after it, wrapping to the smallest).
    fn at(&self, hi: u64) -> Option<(u64, u64)> {
        let (&end, &(lo, _)) = self
            .ranges
            .range(hi..)
            .next()
            .or_else(|| self.ranges.iter().next())?;
        Some((lo, end))
    }

    fn chain(&self, end: u64) -> Vec<(&str, &Row)> {
        self.ranges.get(&end).map_or_else(Vec::new, |(_, m)| {
            m.values().map(|(x, r)| (x.as_str(), *r)).collect()
        })
    }
}

fn rings(a: &Artifacts) -> BTreeMap<String, Ring<'_>> {
    let mut out: BTreeMap<String, Ring> = BTreeMap::new();
    for r in a.rows("agent_anolis_chain") {
        let v = &r.vals;
        let nums: Option<Vec<u64>> = [3, 4, 5].iter().map(|&i| v.get(i)?.parse().ok()).collect();
        let (Some(nums), Some(member)) = (nums, v.get(6)) else {
            continue;
        };
        let ring = out.entry(v[1].clone()).or_default();
        ring.version.clone_from(&v[2]);
        ring.ranges
            .entry(nums[1])
            .or_insert_with(|| (nums[0], BTreeMap::new()))
            .1
            .entry(nums[2])
            .or_insert_with(|| (member.clone(), r));
    }
    out
}

fn names(chain: &[(&str, &Row)]) -> String {
    let v: Vec<&str> = chain.iter().map(|(x, _)| *x).collect();
    format!("[{}]", v.join(", "))
}

/// The Anolis part of PLAN-1 for `old` → `new`; also the number of ring
/// pieces whose chain changed.
pub fn chains(old: &Artifacts, new: &Artifacts) -> (Vec<Counterexample>, usize) {
    let (or, nr) = (rings(old), rings(new));
    let (mut out, mut changed) = (Vec::new(), 0);
    for (cluster, n) in &nr {
        let Some(o) = or.get(cluster) else {
            continue; // a new cluster: no state to keep
        };
        let cuts: BTreeSet<u64> = o.ranges.keys().chain(n.ranges.keys()).copied().collect();
        let mut prev = cuts.iter().next_back().copied();
        for &hi in &cuts {
            let lo = prev.replace(hi).unwrap_or(hi);
            let (Some((_, oe)), Some((nlo, ne))) = (o.at(hi), n.at(hi)) else {
                continue;
            };
            let (oc, nc) = (o.chain(oe), n.chain(ne));
            let members = |c: &[(&str, &Row)]| -> BTreeSet<String> {
                c.iter().map(|(x, _)| x.to_string()).collect()
            };
            let (om, nm) = (members(&oc), members(&nc));
            if om == nm {
                continue;
            }
            changed += 1;
            let piece = format!(
                "cluster {cluster}, keys ({lo}, {hi}]: chain {} (version {}) → {} (version {})",
                names(&oc),
                o.version,
                names(&nc),
                n.version
            );
            let mut cites: Vec<String> = oc.iter().chain(&nc).map(|(_, r)| r.at.clone()).collect();
            let fcn = oc.iter().map(|(x, _)| *x).find(|x| nm.contains(*x));
            let Some(fcn) = fcn else {
                out.push(cx(
                    format!(
                        "{piece}: no first common node (no node of the old chain is in the new one), \
                         so the connection state of these keys is lost"
                    ),
                    cites,
                ));
                continue;
            };
            for s in new.rows("agent_anolis_sync") {
                let v = &s.vals;
                let (Some(slo), Some(shi)) = (
                    v.get(3).and_then(|t| t.parse::<u64>().ok()),
                    v.get(4).and_then(|t| t.parse::<u64>().ok()),
                ) else {
                    continue;
                };
                // the sync op names a range of the new generation
                if v.get(1) != Some(cluster) || (slo, shi) != (nlo, ne) {
                    continue;
                }
                let at = &v[0];
                if !(om.contains(at) && nm.contains(at)) {
                    cites.push(s.at.clone());
                    out.push(cx(
                        format!(
                            "{piece}: the sync op is at {at}, which is not in both chains \
                             (the first common node is {fcn})"
                        ),
                        cites.clone(),
                    ));
                }
            }
        }
    }
    (out, changed)
}
