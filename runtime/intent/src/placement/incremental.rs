//! A placement kept up to date as VIPs change (for the warm daemon).
//!
//! Rules first, in the manner of an incremental engine:
//! - [`Placement::compute`] runs the greedy from scratch with the given
//!   previous placement (the sticky rule's `s_c`).
//! - [`Placement::update`] takes changed VIPs ([`VipChange`]: traffic, DIPs,
//!   TIPs, added, removed). Its result is defined as the from-scratch run on
//!   the new model with `previous` = the current placement — Duet's Sticky
//!   re-assignment (§2.3.2). It gets there through `blocks.rs`: the steps
//!   are kept in blocks of consecutive keys; the blocks holding a changed
//!   VIP are walked again (`reuse.rs`: an endpoint whose previous switch the
//!   sticky rule provably keeps is confirmed with that one candidate, the
//!   others are re-decided over every switch), a later block is kept
//!   without a visit when a bound proves the sticky rule keeps all of it,
//!   and nothing after the last change is visited once nothing differs;
//!   [`UpdateStats`] says how many endpoints it re-decided, confirmed and
//!   kept. The order is never sorted again and the assignment and the
//!   delta are built from the endpoints that moved only.
//! - A change of the fabric or of the parameters re-decides every endpoint
//!   ([`Placement::set_fabric`], [`Placement::set_params`]), still sticky.
//! - The returned [`Delta`] is exactly the difference of `vip_placement`
//!   before and after: an endpoint that keeps its switch appears in neither
//!   list; one that moves is one delete and one insert.

use super::blocks::Blocks;
use super::greedy::{self, Ctx, Item, Key, Outcome, Resources};
use super::model::{Endpoint, Fabric, Inputs, Model, Params, VipSpec};
use super::reuse;
use super::routes::Routes;
use crate::engine::Transaction;
use netc_compiler::plan::RelId;
use netc_compiler::value::{Row, Sym, Value};
use std::collections::{BTreeMap, BTreeSet};

/// One VIP's new inputs, or its removal. A TIP belongs to one VIP (as
/// [`super::model::read`] guarantees).
#[derive(Clone, Debug, PartialEq)]
pub enum VipChange {
    /// Adds the VIP or replaces everything known about it (with its TIPs).
    Set(Endpoint, VipSpec),
    Remove(Endpoint),
}

/// Rows of `vip_placement` that disappear and appear, sorted by endpoint.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Delta {
    pub deleted: Vec<(Endpoint, Sym)>,
    pub inserted: Vec<(Endpoint, Sym)>,
}

impl Delta {
    pub fn is_empty(&self) -> bool {
        self.deleted.is_empty() && self.inserted.is_empty()
    }

    /// The delta as a transaction on the relation `vip_placement`.
    pub fn transaction(&self, vip_placement: RelId) -> Transaction {
        let mut tx = Transaction::new();
        for (e, s) in &self.deleted {
            tx.delete(vip_placement, row(*e, *s));
        }
        for (e, s) in &self.inserted {
            tx.insert(vip_placement, row(*e, *s));
        }
        tx
    }
}

/// What the latest compute or update did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UpdateStats {
    /// Position in greedy order of the first re-decided endpoint.
    pub replayed_from: usize,
    /// Endpoints whose switch was evaluated over every candidate.
    pub evaluated: usize,
    /// Endpoints whose previous switch was confirmed with one candidate
    /// (`update` only).
    pub confirmed: usize,
    /// Endpoints in blocks a bound proved unchanged without visiting them
    /// (`update` only; `blocks.rs`).
    pub kept: usize,
    /// Blocks walked (`update` only).
    pub walked_blocks: usize,
    /// Endpoints in greedy order.
    pub endpoints: usize,
}

/// A computed placement and what it was computed from.
#[derive(Debug)]
pub struct Placement {
    model: Model,
    routes: Routes,
    /// [`Resources::new`] of `model`'s fabric and parameters.
    resources: Resources,
    blocks: Blocks,
    assignment: BTreeMap<Endpoint, Sym>,
    stats: UpdateStats,
}

/// One `vip_placement` row.
pub fn row(ep: Endpoint, switch: Sym) -> Row {
    vec![Value::Ipv4(u32::from(ep)), Value::Symbol(switch)]
}

/// `vip`'s items (itself, then its TIPs) with their keys, if the model has it.
fn keyed_items(model: &Model, vip: Endpoint) -> Vec<(Key, Item)> {
    let Some(spec) = model.vips.get(&vip) else {
        return Vec::new();
    };
    let traffic = spec.total_traffic();
    std::iter::once(Item {
        ep: vip,
        vip,
        tip: false,
    })
    .chain(spec.tips.keys().map(|t| Item {
        ep: *t,
        vip,
        tip: true,
    }))
    .map(|item| (Key::of(&item, traffic), item))
    .collect()
}

impl Placement {
    /// The greedy from scratch; `previous` feeds the sticky rule.
    pub fn compute(model: Model, previous: &BTreeMap<Endpoint, Sym>) -> Placement {
        let target = Blocks::target_for(model.vips.len());
        Placement::compute_in_blocks(model, previous, target)
    }

    /// [`Placement::compute`] with blocks of about `target` steps (tests
    /// use small ones, so that small models span many blocks).
    pub(super) fn compute_in_blocks(
        model: Model,
        previous: &BTreeMap<Endpoint, Sym>,
        target: usize,
    ) -> Placement {
        let routes = Routes::new(&model.fabric);
        let resources = Resources::new(&model, &routes);
        let (blocks, assignment, stats) =
            Placement::run(&model, &routes, &resources, previous, target);
        Placement {
            model,
            routes,
            resources,
            blocks,
            assignment,
            stats,
        }
    }

    /// The greedy from scratch over `model`: its blocks, assignment, stats.
    fn run(
        model: &Model,
        routes: &Routes,
        resources: &Resources,
        previous: &BTreeMap<Endpoint, Sym>,
        target: usize,
    ) -> (Blocks, BTreeMap<Endpoint, Sym>, UpdateStats) {
        let ctx = Ctx::new(model, routes, resources);
        let traffic: BTreeMap<Endpoint, i64> = model
            .vips
            .iter()
            .map(|(v, s)| (*v, s.total_traffic()))
            .collect();
        let items: Vec<(Key, Item)> = greedy::order(model)
            .into_iter()
            .map(|item| (Key::of(&item, traffic[&item.vip]), item))
            .collect();
        let mut work = reuse::Work::default();
        let blocks = Blocks::build(&ctx, items, previous, target, &mut work);
        let assignment = blocks
            .steps()
            .filter_map(|s| match &s.outcome {
                Outcome::Placed(l) => Some((s.item.ep, ctx.switches[l.switch])),
                _ => None,
            })
            .collect();
        let stats = UpdateStats {
            replayed_from: 0,
            evaluated: work.evaluated,
            endpoints: blocks.len(),
            ..UpdateStats::default()
        };
        (blocks, assignment, stats)
    }

    /// [`Placement::compute`] on what [`super::model::read`] returned.
    pub fn from_inputs(inputs: Inputs) -> Placement {
        Placement::compute(inputs.model, &inputs.previous)
    }

    /// Endpoint -> switch; endpoints absent stay on the SMuxes.
    pub fn assignment(&self) -> &BTreeMap<Endpoint, Sym> {
        &self.assignment
    }

    /// The `vip_placement` rows, sorted by endpoint.
    pub fn rows(&self) -> Vec<Row> {
        self.assignment.iter().map(|(e, s)| row(*e, *s)).collect()
    }

    /// The endpoint at which the greedy stopped (fit nowhere), if any.
    pub fn stopped_at(&self) -> Option<Endpoint> {
        self.blocks
            .steps()
            .find(|s| s.outcome == Outcome::Stopped)
            .map(|s| s.item.ep)
    }

    pub fn model(&self) -> &Model {
        &self.model
    }

    pub fn stats(&self) -> &UpdateStats {
        &self.stats
    }

    /// Every endpoint in greedy order with its outcome (tests compare runs
    /// step by step: same order, same switch, same load).
    #[cfg(test)]
    pub(super) fn outcomes(&self) -> Vec<(Endpoint, Outcome)> {
        self.blocks
            .steps()
            .map(|s| (s.item.ep, s.outcome.clone()))
            .collect()
    }

    /// Applies VIP changes and re-places what must move (see the module doc).
    pub fn update(&mut self, changes: Vec<VipChange>) -> Delta {
        let mut dirty = BTreeSet::new();
        let mut old_keys = Vec::new();
        for c in changes {
            let v = match &c {
                VipChange::Set(v, _) | VipChange::Remove(v) => *v,
            };
            if dirty.insert(v) {
                old_keys.extend(keyed_items(&self.model, v).into_iter().map(|(k, _)| k));
            }
            match c {
                VipChange::Set(v, spec) => {
                    self.model.vips.insert(v, spec);
                }
                VipChange::Remove(v) => {
                    self.model.vips.remove(&v);
                }
            }
        }
        old_keys.sort_unstable();
        let mut new_items: Vec<(Key, Item)> = dirty
            .iter()
            .flat_map(|v| keyed_items(&self.model, *v))
            .collect();
        new_items.sort_unstable_by_key(|(k, _)| *k);
        let ctx = Ctx::new(&self.model, &self.routes, &self.resources);
        let mut work = reuse::Work::default();
        let (moves, visit) = self.blocks.update(
            &ctx,
            &dirty,
            &old_keys,
            new_items,
            &self.assignment,
            &mut work,
        );
        self.stats = UpdateStats {
            replayed_from: visit.from,
            evaluated: work.evaluated,
            confirmed: work.confirmed,
            kept: visit.kept,
            walked_blocks: visit.walked_blocks,
            endpoints: self.blocks.len(),
        };
        let mut delta = Delta::default();
        for (ep, (was, now)) in moves {
            if was == now {
                continue;
            }
            if let Some(s) = was {
                delta.deleted.push((ep, s));
                self.assignment.remove(&ep);
            }
            if let Some(s) = now {
                delta.inserted.push((ep, s));
                self.assignment.insert(ep, s);
            }
        }
        delta
    }

    /// Replaces the fabric (switch capacities, links) and re-decides every
    /// endpoint, sticky to the current placement.
    pub fn set_fabric(&mut self, fabric: Fabric) -> Delta {
        self.model.fabric = fabric;
        self.routes = Routes::new(&self.model.fabric);
        self.resources = Resources::new(&self.model, &self.routes);
        self.rerun_all()
    }

    /// Replaces the parameters and re-decides every endpoint, sticky to the
    /// current placement.
    pub fn set_params(&mut self, params: Params) -> Delta {
        self.model.params = params;
        self.resources = Resources::new(&self.model, &self.routes);
        self.rerun_all()
    }

    fn rerun_all(&mut self) -> Delta {
        let target = self.blocks.target();
        let (blocks, assignment, stats) = Placement::run(
            &self.model,
            &self.routes,
            &self.resources,
            &self.assignment,
            target,
        );
        let delta = diff(&self.assignment, &assignment);
        self.blocks = blocks;
        self.assignment = assignment;
        self.stats = stats;
        delta
    }
}

/// The rows of `new` not in `old` and of `old` not in `new`.
pub fn diff(old: &BTreeMap<Endpoint, Sym>, new: &BTreeMap<Endpoint, Sym>) -> Delta {
    let mut d = Delta::default();
    for (e, s) in old {
        if new.get(e) != Some(s) {
            d.deleted.push((*e, *s));
        }
    }
    for (e, s) in new {
        if old.get(e) != Some(s) {
            d.inserted.push((*e, *s));
        }
    }
    d
}
