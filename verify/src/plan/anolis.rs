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

#[cfg(test)]
mod tests {
    //! The piece logic against a brute-force reading of both rings at
    //! random keys: a piece whose chains share no node is a violation, one
    //! whose chains share a node is not, and `changed` counts the pieces
    //! whose members differ.
    use super::*;
    use proptest::prelude::*;

    /// A ring: (position, chain members) per range, positions distinct.
    type Spec = Vec<(u32, Vec<u8>)>;

    fn ring() -> impl Strategy<Value = Spec> {
        prop::collection::btree_map(
            any::<u32>(),
            prop::collection::btree_set(0u8..6, 1..4),
            1..6,
        )
        .prop_map(|m| {
            m.into_iter()
                .map(|(p, s)| (p, s.into_iter().collect()))
                .collect()
        })
    }

    fn artifacts(spec: &Spec, version: u32) -> Artifacts {
        let mut rows = Vec::new();
        for (i, (hi, members)) in spec.iter().enumerate() {
            let lo = spec[(i + spec.len() - 1) % spec.len()].0;
            for (idx, m) in members.iter().enumerate() {
                rows.push(Row {
                    vals: [
                        format!("N{m}"),
                        "c".into(),
                        version.to_string(),
                        lo.to_string(),
                        hi.to_string(),
                        idx.to_string(),
                        format!("N{m}"),
                    ]
                    .to_vec(),
                    at: format!("v{version}:{}", rows.len() + 1),
                });
            }
        }
        let mut a = Artifacts::default();
        a.relations.insert(
            "agent_anolis_chain".into(),
            rows.into_iter().map(std::sync::Arc::new).collect(),
        );
        a
    }

    /// The chain members of the range holding `key` (wrapping).
    fn members_at(spec: &Spec, key: u32) -> BTreeSet<u8> {
        let (_, m) = spec.iter().find(|(p, _)| *p >= key).unwrap_or(&spec[0]);
        m.iter().copied().collect()
    }

    /// The piece (lo, hi] of the cut ring holding `key`.
    fn piece(cuts: &BTreeSet<u32>, key: u32) -> (u32, u32) {
        let hi = cuts
            .range(key..)
            .next()
            .or(cuts.iter().next())
            .copied()
            .unwrap();
        let lo = cuts
            .range(..hi)
            .next_back()
            .or(cuts.iter().next_back())
            .copied()
            .unwrap();
        (lo, hi)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        #[test]
        fn pieces_agree_with_brute_force(old in ring(), new in ring(), keys in prop::collection::vec(any::<u32>(), 1..20)) {
            let (oa, na) = (artifacts(&old, 1), artifacts(&new, 2));
            let (cxs, changed) = chains(&oa, &na);
            let cuts: BTreeSet<u32> = old.iter().chain(&new).map(|(p, _)| *p).collect();
            let differing = cuts.iter().filter(|&&c| members_at(&old, c) != members_at(&new, c)).count();
            prop_assert_eq!(changed, differing);
            for k in keys.into_iter().chain(cuts.iter().copied()) {
                let (o, n) = (members_at(&old, k), members_at(&new, k));
                let (lo, hi) = piece(&cuts, k);
                let tag = format!("keys ({lo}, {hi}]:");
                let flagged = cxs.iter().any(|c| c.summary.contains(&tag) && c.summary.contains("no first common node"));
                prop_assert_eq!(flagged, o != n && o.is_disjoint(&n), "key {} piece {}", k, tag);
            }
        }
    }
}
