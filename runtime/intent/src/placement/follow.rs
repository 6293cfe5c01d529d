//! Following the placement's model commit by commit, so that a warm engine
//! re-places only the VIPs a change touched.
//!
//! Expects: [`Follower::new`] on an engine whose placement is current, and
//! then every commit's [`Changes`] passed to [`Follower::follow`], in order,
//! with the model the [`Placement`](super::Placement) holds.
//! Guarantees:
//! - FOLLOW: the follower keeps the per-endpoint rows of the model's
//!   relations (`model::ByEndpoint`), updated from each commit's changes of
//!   `placement_need`, `placement_member_tor` and `placement_traffic`; for
//!   every VIP whose rows (or whose TIPs' rows) changed it assembles the
//!   spec exactly as [`super::model::read`] does and returns a
//!   [`VipChange`] where it differs from the model's: `Set`, or `Remove`
//!   when the VIP has no need row any more. So the model after
//!   `Placement::update` equals a fresh `read`'s (a test holds the two
//!   equal over random commits).
//! - REREAD: a change of the fabric (`placement_switch`, `placement_link`),
//!   the parameters, the previous placement or the TIPs, or a negative
//!   traffic row (which `read` reports as an error), is not followed VIP by
//!   VIP: [`Follow::Reread`] asks the caller to read the whole model again,
//!   and the follower re-indexes from the engine. A change of
//!   `placement_route_free` asks for it only when the least free count (the
//!   route budget) moved: adding a host changes every switch's row.
//! - Cost: O(rows changed × log) per commit, plus one spec per touched VIP.
//!
//! Why: the placement reads ~10 relations over every VIP; a warm engine
//! that re-read them after each change paid O(VIPs) (tens of ms at 30,000
//! VIPs) for a change that touched one VIP's need, where
//! `Placement::update` itself takes a millisecond.

use super::incremental::diff;
use super::model::{self, addr, ByEndpoint, Endpoint, Model, READS};
use super::{Delta, Placement, PlacementError, VipChange};
use crate::engine::{Changes, Engine, Transaction};
use netc_compiler::plan::RelId;
use netc_compiler::value::{Row, Value};
use std::collections::{BTreeMap, BTreeSet};

/// What a commit asks of the placement.
#[derive(Clone, Debug, PartialEq)]
pub enum Follow {
    /// The VIPs whose spec changed (empty: nothing to re-place).
    Vips(Vec<VipChange>),
    /// Read the whole model again (see the module docs: REREAD).
    Reread,
}

/// The model's relations, by role.
#[derive(Clone, Debug)]
struct Rels {
    need: RelId,
    members: RelId,
    traffic: RelId,
    /// Changes of these are followed by a re-read.
    whole: Vec<RelId>,
    /// `placement_route_free`, if the rules have it.
    routes_free: Option<RelId>,
}

/// See the module docs.
#[derive(Clone, Debug)]
pub struct Follower {
    rels: Rels,
    index: ByEndpoint,
}

impl Follower {
    /// `None` when the program lacks one of the placement's relations (then
    /// there is no placement to follow).
    pub fn new(engine: &Engine) -> Option<Follower> {
        let plan = engine.plan();
        let keyed = [
            "placement_need",
            "placement_member_tor",
            "placement_traffic",
        ];
        let [need, members, traffic] = keyed.map(|n| plan.relation_id(n));
        let budget = "placement_route_free";
        let whole = READS
            .iter()
            .filter(|n| !keyed.contains(n) && **n != budget)
            .map(|n| plan.relation_id(n))
            .collect::<Option<Vec<RelId>>>()?;
        let (need, members, traffic) = (need?, members?, traffic?);
        let mut f = Follower {
            rels: Rels {
                need,
                members,
                traffic,
                whole,
                routes_free: plan.relation_id(budget),
            },
            index: ByEndpoint::default(),
        };
        f.reindex(engine);
        Some(f)
    }

    /// The index rebuilt from the engine's contents.
    fn reindex(&mut self, engine: &Engine) {
        let plan = engine.plan();
        let tip = plan
            .relation_id("placement_tip")
            .map(|r| engine.contents(r))
            .unwrap_or_default();
        let mut index = ByEndpoint::default();
        // a TIP of two VIPs: `read` reports it when the caller re-reads
        let _ = index.add_tips(&tip);
        index.add_rows(
            engine.contents(self.rels.need),
            engine.contents(self.rels.members),
            engine.contents(self.rels.traffic),
        );
        self.index = index;
    }

    /// What `changes` (one commit's, on `engine`, now current) ask of the
    /// placement whose model is `model`.
    pub fn follow(&mut self, engine: &Engine, changes: &Changes, model: &Model) -> Follow {
        let negative_traffic = changes
            .inserted(self.rels.traffic)
            .any(|row| matches!(row[2], Value::Number(n) if n < 0));
        let budget_moved = self.rels.routes_free.is_some_and(|r| {
            !changes.get(r).is_empty()
                && model::routes_free(&engine.contents(r)) != model.fabric.routes_free
        });
        if negative_traffic
            || budget_moved
            || self.rels.whole.iter().any(|r| !changes.get(*r).is_empty())
        {
            self.reindex(engine);
            return Follow::Reread;
        }
        let mut touched = BTreeSet::new();
        for (rel, into) in [
            (self.rels.need, &mut self.index.need),
            (self.rels.members, &mut self.index.members),
            (self.rels.traffic, &mut self.index.traffic),
        ] {
            apply(changes.get(rel), into, &mut touched);
        }
        let vips: BTreeSet<Endpoint> = touched
            .into_iter()
            .map(|ep| self.index.tip_of.get(&ep).copied().unwrap_or(ep))
            .collect();
        let mut out = Vec::new();
        for v in vips {
            match (self.index.vip_spec(v), model.vips.get(&v)) {
                (Some(new), Some(old)) if new == *old => {}
                (Some(new), _) => out.push(VipChange::Set(v, new)),
                (None, Some(_)) => out.push(VipChange::Remove(v)),
                (None, None) => {}
            }
        }
        Follow::Vips(out)
    }
}

/// How many times a commit of the placement's own delta may move its
/// inputs again before [`settle`] gives up (the standard rules
/// never do: `vip_placement` feeds no placement input).
const MAX_ROUNDS: usize = 8;

/// Commits `tx`, then [`settle`]s the placement; returns every commit's
/// changes, merged per relation in commit order.
pub fn commit_and_follow(
    engine: &mut Engine,
    placement: &mut Placement,
    follower: &mut Follower,
    tx: Transaction,
) -> Result<Changes, PlacementError> {
    let mut all = engine.commit(tx)?;
    let more = settle(engine, placement, follower, &all)?;
    for (rel, rows) in more.by_rel {
        all.by_rel.entry(rel).or_default().extend(rows);
    }
    Ok(all)
}

/// After a commit whose changes are `changes`: keeps `placement` current —
/// what the follower says is applied ([`re_place`]) and the
/// `vip_placement` delta committed, until a commit moves no placement
/// input. Returns the changes of those commits (empty when nothing moved).
pub fn settle(
    engine: &mut Engine,
    placement: &mut Placement,
    follower: &mut Follower,
    changes: &Changes,
) -> Result<Changes, PlacementError> {
    let vp = engine.plan().relation_id("vip_placement");
    let mut all = Changes::default();
    let mut last = None;
    for _ in 0..MAX_ROUNDS {
        let follow = follower.follow(engine, last.as_ref().unwrap_or(changes), placement.model());
        let delta = re_place(placement, engine, follow)?;
        let Some(vp) = vp.filter(|_| !delta.is_empty()) else {
            return Ok(all);
        };
        let ch = engine.commit(delta.transaction(vp))?;
        for (rel, rows) in &ch.by_rel {
            all.by_rel
                .entry(*rel)
                .or_default()
                .extend(rows.iter().cloned());
        }
        last = Some(ch);
    }
    Err(PlacementError::NoFixpoint { rounds: MAX_ROUNDS })
}

/// Brings `placement` up to date with what a follower said, sticky to its
/// current assignment; returns the `vip_placement` delta.
pub fn re_place(
    placement: &mut Placement,
    engine: &Engine,
    follow: Follow,
) -> Result<Delta, PlacementError> {
    match follow {
        Follow::Vips(changes) if changes.is_empty() => Ok(Delta::default()),
        Follow::Vips(changes) => Ok(placement.update(changes)),
        Follow::Reread => {
            let model = model::read(engine)?.map(|i| i.model).unwrap_or_default();
            let next = Placement::compute(model, placement.assignment());
            let delta = diff(placement.assignment(), next.assignment());
            *placement = next;
            Ok(delta)
        }
    }
}

/// Applies one relation's changes to its rows by endpoint (deletions
/// first), noting the endpoints touched.
fn apply(
    changes: &[(Row, isize)],
    into: &mut BTreeMap<Endpoint, BTreeSet<Row>>,
    touched: &mut BTreeSet<Endpoint>,
) {
    for (row, d) in changes
        .iter()
        .filter(|(_, d)| *d < 0)
        .chain(changes.iter().filter(|(_, d)| *d > 0))
    {
        let ep = addr(&row[0]);
        touched.insert(ep);
        let rows = into.entry(ep).or_default();
        if *d < 0 {
            rows.remove(row);
            if rows.is_empty() {
                into.remove(&ep);
            }
        } else {
            rows.insert(row.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::placement;
    use proptest::prelude::*;
    use std::sync::Arc;

    /// The Duet example (8 VIPs, two of them two-level with TIPs), placed.
    fn duet() -> (Engine, Placement) {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/duet/intent.ndl");
        let c = crate::load(std::slice::from_ref(&path), None).unwrap();
        let plan = Arc::new(c.plan.expect("the Duet example compiles"));
        let mut e = Engine::new(plan, 1).unwrap();
        e.commit(Transaction::new()).unwrap();
        let p = placement::place_into(&mut e)
            .unwrap()
            .expect("VIPs to place");
        (e, p)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 6, ..ProptestConfig::default() })]

        /// FOLLOW and REREAD: after every commit (DIPs, VMs, VIPs, traffic
        /// and the switches' capacities toggled at random), the placement's
        /// model equals a fresh read of the engine, and the engine's
        /// `vip_placement` rows are the placement's.
        #[test]
        fn the_followed_model_equals_a_fresh_read(
            picks in proptest::collection::vec((0usize..5, any::<u32>()), 12)
        ) {
            let (mut e, mut p) = duet();
            let mut f = Follower::new(&e).expect("the placement's relations");
            let plan = e.plan().clone();
            let rels: Vec<RelId> = ["dip_pool", "vm", "vip", "placement_traffic", "switch"]
                .iter()
                .map(|n| plan.relation_id(n).unwrap())
                .collect();
            let vp = plan.relation_id("vip_placement").unwrap();
            let mut removed: Vec<(RelId, Row)> = Vec::new();
            for (which, n) in picks {
                let rel = rels[which];
                let mut tx = Transaction::new();
                // put a removed fact back, or remove another one
                if let Some(i) = removed.iter().position(|(r, _)| *r == rel).filter(|_| n % 3 == 0) {
                    let (r, row) = removed.swap_remove(i);
                    tx.insert(r, row);
                } else {
                    let facts = e.base_facts(rel);
                    let row = facts[n as usize % facts.len()].clone();
                    tx.delete(rel, row.clone());
                    removed.push((rel, row));
                }
                commit_and_follow(&mut e, &mut p, &mut f, tx).unwrap();
                let read = model::read(&e).unwrap().map(|i| i.model).unwrap_or_default();
                prop_assert_eq!(&p.model().vips, &read.vips);
                prop_assert_eq!(&p.model().fabric, &read.fabric);
                let mut rows = e.contents(vp);
                rows.sort();
                let mut want = p.rows();
                want.sort();
                prop_assert_eq!(rows, want);
            }
        }
    }

    /// A commit that moves one VIP's DIPs asks for that VIP only; one that
    /// changes a switch asks for a re-read.
    #[test]
    fn a_dip_change_names_its_vip_and_a_switch_change_rereads() {
        let (mut e, p) = duet();
        let mut f = Follower::new(&e).unwrap();
        let plan = e.plan().clone();
        let dip_pool = plan.relation_id("dip_pool").unwrap();
        let row = e.base_facts(dip_pool)[0].clone();
        let ch = e
            .commit(Transaction::new().delete(dip_pool, row.clone()).clone())
            .unwrap();
        match f.follow(&e, &ch, p.model()) {
            Follow::Vips(v) => {
                assert_eq!(v.len(), 1, "{v:?}");
                let VipChange::Set(ep, _) = &v[0] else {
                    panic!("{v:?}")
                };
                assert_eq!(Value::Ipv4(u32::from(*ep)), row[0]);
            }
            other => panic!("{other:?}"),
        }
        let switch = plan.relation_id("switch").unwrap();
        let sw = e.base_facts(switch)[0].clone();
        let ch = e
            .commit(Transaction::new().delete(switch, sw).clone())
            .unwrap();
        assert_eq!(f.follow(&e, &ch, p.model()), Follow::Reread);
    }
}
