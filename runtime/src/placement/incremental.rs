//! A placement kept up to date as VIPs change (for the warm daemon).
//!
//! Rules first, in the manner of an incremental engine:
//! - [`Placement::compute`] runs the greedy from scratch with the given
//!   previous placement (the sticky rule's `s_c`).
//! - [`Placement::update`] takes changed VIPs ([`VipChange`]: traffic, DIPs,
//!   TIPs, added, removed). Its result is defined as the from-scratch run on
//!   the new model with `previous` = the current placement — Duet's Sticky
//!   re-assignment (§2.3.2). It gets there by keeping every step before the
//!   first endpoint whose position or input changed (those steps are a fixed
//!   point of that run: same state, and the sticky rule keeps their switch)
//!   and going through the rest with `reuse.rs`: an endpoint whose previous
//!   switch the sticky rule provably keeps is confirmed with that one
//!   candidate, the others are re-decided over every switch;
//!   [`UpdateStats`] says how many endpoints it re-decided and confirmed.
//! - A change of the fabric or of the parameters re-decides every endpoint
//!   ([`Placement::set_fabric`], [`Placement::set_params`]), still sticky.
//! - The returned [`Delta`] is exactly the difference of `vip_placement`
//!   before and after: an endpoint that keeps its switch appears in neither
//!   list; one that moves is one delete and one insert.

use super::greedy::{self, Ctx, Item, Outcome, Step};
use super::model::{Endpoint, Fabric, Inputs, Model, Params, VipSpec};
use super::reuse;
use super::routes::Routes;
use crate::engine::Transaction;
use netc_compiler::plan::RelId;
use netc_compiler::value::{Row, Sym, Value};
use std::collections::{BTreeMap, BTreeSet};

/// One VIP's new inputs, or its removal.
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
    /// Endpoints in greedy order.
    pub endpoints: usize,
}

/// A computed placement and what it was computed from.
#[derive(Debug)]
pub struct Placement {
    model: Model,
    routes: Routes,
    steps: Vec<Step>,
    assignment: BTreeMap<Endpoint, Sym>,
    stats: UpdateStats,
}

/// One `vip_placement` row.
pub fn row(ep: Endpoint, switch: Sym) -> Row {
    vec![Value::Ipv4(u32::from(ep)), Value::Symbol(switch)]
}

impl Placement {
    /// The greedy from scratch; `previous` feeds the sticky rule.
    pub fn compute(model: Model, previous: &BTreeMap<Endpoint, Sym>) -> Placement {
        let routes = Routes::new(&model.fabric);
        let mut p = Placement {
            model,
            routes,
            steps: Vec::new(),
            assignment: BTreeMap::new(),
            stats: UpdateStats::default(),
        };
        p.replay(0, previous);
        p
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
        self.steps
            .iter()
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
        self.steps
            .iter()
            .map(|s| (s.item.ep, s.outcome.clone()))
            .collect()
    }

    /// Applies VIP changes and re-places what must move (see the module doc).
    pub fn update(&mut self, changes: Vec<VipChange>) -> Delta {
        let mut dirty = BTreeSet::new();
        for c in changes {
            match c {
                VipChange::Set(v, spec) => {
                    dirty.insert(v);
                    self.model.vips.insert(v, spec);
                }
                VipChange::Remove(v) => {
                    dirty.insert(v);
                    self.model.vips.remove(&v);
                }
            }
        }
        let order = greedy::order(&self.model);
        let same = |i: usize| {
            let (old, new) = (&self.steps[i].item, &order[i]);
            old == new && !dirty.contains(&old.vip)
        };
        let n = self.steps.len().min(order.len());
        let from = (0..n).find(|&i| !same(i)).unwrap_or(n);
        let previous = std::mem::take(&mut self.assignment);
        let ctx = Ctx::new(&self.model, &self.routes);
        let mut work = reuse::Work::default();
        let steps = reuse::rerun(
            &ctx,
            &order,
            std::mem::take(&mut self.steps),
            from,
            &dirty,
            &previous,
            &mut work,
        );
        let assignment = assignment_of(&ctx, &steps);
        self.stats = UpdateStats {
            replayed_from: from,
            evaluated: work.evaluated,
            confirmed: work.confirmed,
            endpoints: order.len(),
        };
        self.steps = steps;
        self.assignment = assignment;
        diff(&previous, &self.assignment)
    }

    /// Replaces the fabric (switch capacities, links) and re-decides every
    /// endpoint, sticky to the current placement.
    pub fn set_fabric(&mut self, fabric: Fabric) -> Delta {
        self.model.fabric = fabric;
        self.routes = Routes::new(&self.model.fabric);
        let current = self.assignment.clone();
        self.replay(0, &current)
    }

    /// Replaces the parameters and re-decides every endpoint, sticky to the
    /// current placement.
    pub fn set_params(&mut self, params: Params) -> Delta {
        self.model.params = params;
        let current = self.assignment.clone();
        self.replay(0, &current)
    }

    fn replay(&mut self, from: usize, previous: &BTreeMap<Endpoint, Sym>) -> Delta {
        let order = greedy::order(&self.model);
        self.replay_order(order, from, previous)
    }

    fn replay_order(
        &mut self,
        order: Vec<Item>,
        from: usize,
        previous: &BTreeMap<Endpoint, Sym>,
    ) -> Delta {
        let from = from.min(self.steps.len()).min(order.len());
        let ctx = Ctx::new(&self.model, &self.routes);
        let mut evaluated = 0;
        let steps = greedy::run(&ctx, &order, &self.steps[..from], previous, &mut evaluated);
        let assignment = assignment_of(&ctx, &steps);
        let delta = diff(&self.assignment, &assignment);
        self.stats = UpdateStats {
            replayed_from: from,
            evaluated,
            confirmed: 0,
            endpoints: order.len(),
        };
        self.steps = steps;
        self.assignment = assignment;
        delta
    }
}

/// Endpoint -> switch of the placed steps.
fn assignment_of(ctx: &Ctx, steps: &[Step]) -> BTreeMap<Endpoint, Sym> {
    steps
        .iter()
        .filter_map(|s| match &s.outcome {
            Outcome::Placed(l) => Some((s.item.ep, ctx.switches[l.switch])),
            _ => None,
        })
        .collect()
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
