//! PLAN-1: a rollout never passes through an unsafe state.
//!
//! Expects two generations' artifacts (old: `--against`, new: the one
//! verified) and the new intent's policy. Three parts, one module each:
//! - [`duet`]: a VIP moves between HMux switches via the SMuxes;
//! - [`anolis`]: a key range whose chain changes keeps a first common node,
//!   and its sync op runs at a node of both chains;
//! - [`migration`]: a VM that moves between hosts stays reachable (and
//!   isolated) in every intermediate state of the rollout order
//!   ([`migration::Phases`], which `netc apply` follows): its hairpin first.
//!
//! Guarantees: [`check`] returns every violation (a counterexample citing
//! rows `file:line`, with a packet and path for the migration part) and a
//! detail line that says what was checked.

pub mod anolis;
pub mod duet;
pub mod migration;

use crate::artifacts::Artifacts;
use crate::policy::Policy;
use crate::report::Counterexample;

pub use duet::duet_moves;

/// What PLAN-1 found for one change.
#[derive(Clone, Debug, Default)]
pub struct Findings {
    pub counterexamples: Vec<Counterexample>,
    /// What was checked (the verdict's detail when nothing is violated).
    pub detail: String,
}

/// PLAN-1 for the change `old` → `new`.
pub fn check(old: &Artifacts, new: &Artifacts, policy: &Policy, limit: usize) -> Findings {
    let (mut cxs, vips) = duet::duet_moves(old, new);
    let (an, pieces) = anolis::chains(old, new);
    cxs.extend(an);
    let phases = migration::Phases::plan(old, new);
    let (mi, moved) = migration::check(old, new, policy, &phases, limit);
    cxs.extend(mi);
    Findings {
        counterexamples: cxs,
        detail: format!(
            "Duet: {vips} VIP move(s) between HMux switches, each via the SMuxes; \
             Anolis: {pieces} key range(s) whose chain changed, each with a first common node \
             and any sync op at a node of both chains; Andromeda: {moved}"
        ),
    }
}
