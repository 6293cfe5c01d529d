//! VIP placement (Duet thesis §2.3): the built-in between two evaluations.
//!
//! Placement is a sequential greedy with a sticky rule, not natural Datalog,
//! so it is a Rust built-in that reads relations and writes one
//! (specs/intent.md §5):
//!
//! ```text
//! rules --placement_need/_switch/_link/_member_tor/_tip (derived),
//!         placement_traffic/_previous/_params (input)--> built-in
//!       --vip_placement(vip, switch)--> rules (p4_vip, p4_ecmp_member, ...)
//! ```
//!
//! Map, in the order data flows:
//! - `model.rs`: the inputs grouped by VIP ([`Model`], [`VipSpec`]) and
//!   [`model::read`], which reads them from an [`Engine`];
//! - `routes.rs`: hop-by-hop ECMP legs over shortest paths;
//! - `greedy.rs`: the greedy (decreasing traffic, lowest max resource
//!   utilisation, stop at the first endpoint that fits nowhere, sticky δ);
//! - `incremental.rs`: [`Placement`], computed once and then updated per VIP
//!   change ([`Placement::update`] returns the minimal [`Delta`]);
//! - `follow.rs`: [`Follower`], which turns each commit's changes of the
//!   model's relations into those VIP changes (or asks for a re-read);
//! - `blocks.rs`: the steps in blocks of consecutive keys with checkpoints,
//!   so that an update walks only the blocks a change can alter (a bound
//!   proves the others kept);
//! - `reuse.rs`: walking a block again, confirming a later endpoint's
//!   previous switch with one candidate where the sticky rule provably
//!   keeps it.
//!
//! [`place_into`] ([`compute`], then [`commit`]) is what `netc
//! compile`/`check` run (from `intent::evaluate`): after the first
//! evaluation, unless the intent pins the placement itself with
//! `vip_placement` facts (explicit facts win, all of them: the built-in
//! then writes nothing), it computes the placement and commits it as
//! `vip_placement` rows.
//!
//! Architecture invariant: the built-in reads and writes relations only
//! through [`Engine::contents`] and [`Engine::commit`] (or `apply`); the rules never see
//! anything but `vip_placement`.

mod blocks;
pub mod follow;
pub mod greedy;
pub mod incremental;
pub mod model;
mod reuse;
pub mod routes;

#[cfg(test)]
mod tests;

pub use follow::{Follow, Follower};
pub use incremental::{Delta, Placement, UpdateStats, VipChange};
pub use model::{Endpoint, EndpointSpec, Fabric, Inputs, Model, Params, VipSpec};

use crate::engine::{Engine, EngineError};

/// The placement inputs hold a value the built-in cannot use and that no
/// `error_*` rule reports.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlacementError {
    #[error(
        "relation `{relation}`, column `{column}`: `{value}` cannot be used: expected {expected}"
    )]
    BadValue {
        relation: String,
        column: String,
        value: String,
        expected: String,
    },
    /// The rules make the placement's inputs depend on `vip_placement`, and
    /// re-placing did not settle (`follow::commit_and_follow`).
    #[error(
        "the VIP placement did not settle after {rounds} rounds: the rules make its inputs depend on vip_placement"
    )]
    NoFixpoint { rounds: usize },
    #[error(transparent)]
    Engine(#[from] EngineError),
}

impl From<PlacementError> for EngineError {
    /// `intent::evaluate` reports engine errors; a bad placement input is
    /// reported like a row of the wrong type (relation, column, value, what
    /// was expected).
    fn from(e: PlacementError) -> EngineError {
        match e {
            PlacementError::BadValue {
                relation,
                column,
                value,
                expected,
            } => EngineError::Type {
                relation,
                column,
                expected,
                value,
            },
            PlacementError::NoFixpoint { .. } => EngineError::Internal(e.to_string()),
            PlacementError::Engine(e) => e,
        }
    }
}

/// The built-in as `intent::evaluate` runs it: if the program has the
/// placement relations, the intent has no `vip_placement` facts and there
/// is at least one endpoint, computes the placement, commits its rows and
/// returns it. `Ok(None)` when it did nothing.
pub fn place_into(engine: &mut Engine) -> Result<Option<Placement>, PlacementError> {
    let Some(placement) = compute(engine)? else {
        return Ok(None);
    };
    commit(engine, &placement)?;
    Ok(Some(placement))
}

/// [`place_into`]'s first half: the placement the engine's relations ask
/// for, or `None` when the built-in has nothing to do (no placement
/// relations, `vip_placement` pinned by the intent, no endpoint).
pub fn compute(engine: &Engine) -> Result<Option<Placement>, PlacementError> {
    let Some(vp) = engine.plan().relation_id("vip_placement") else {
        return Ok(None);
    };
    if !engine.base_facts(vp).is_empty() {
        return Ok(None);
    }
    let Some(inputs) = model::read(engine)? else {
        return Ok(None);
    };
    if inputs.model.vips.is_empty() {
        return Ok(None);
    }
    Ok(Some(Placement::from_inputs(inputs)))
}

/// [`place_into`]'s second half: commits a placement's rows as
/// `vip_placement` facts. Nobody reads the commit's changes, so they are
/// not built (`Engine::apply`: at 30k VIPs that is every placed row and
/// all it derives, turned into rows and sorted for nothing).
pub fn commit(engine: &mut Engine, placement: &Placement) -> Result<(), PlacementError> {
    let Some(vp) = engine.plan().relation_id("vip_placement") else {
        return Ok(());
    };
    let mut tx = crate::engine::Transaction::new();
    for row in placement.rows() {
        tx.insert(vp, row);
    }
    engine.apply(tx)?;
    Ok(())
}
