//! Rollout: from compiled intent to devices, all or nothing.
//!
//! Reading order: [`candidate`] (evaluated intent → a generation's contents:
//! files, facts, per-device artifacts, relations) → [`entries`] (per-device
//! adds/removes between two generations, for `plan` and `diff`) →
//! [`verdict`] (the gate: the verifier on a candidate, AFF-2 and PLAN-1
//! against the last generation; [`provenance`] cites the intent behind a
//! counterexample) → [`inventory`] (how each device is reached) → [`push`] (one
//! device, atomically) → [`phases`] (the order PLAN-1 verified: a moving
//! VM's new host, its old host with a hairpin, the rest, the hairpin
//! removed) → [`roll_out_phased`] here (every device in that order; on a
//! failure, the devices already changed go back to the previous generation).
//!
//! Expects: the previous generation's artifacts (empty for the first apply).
//! Guarantees: [`roll_out`] returns `Ok` only when every target holds the
//! intended artifacts; on `Err`, every target it changed was re-pushed the
//! previous artifacts (the [`Failure`] lists any that could not be), and the
//! caller commits nothing.

pub mod candidate;
pub mod entries;
pub mod provenance;
pub mod verdict;
pub mod inventory;
pub mod phases;
pub mod push;

use crate::store::DeviceOutput;
use inventory::{Inventory, Target};
use push::{PushError, Pushed};

/// The artifacts of `outputs` that travel to `t`.
pub fn carried<'a>(outputs: &'a [DeviceOutput], t: &Target) -> Vec<&'a DeviceOutput> {
    outputs
        .iter()
        .filter(|o| o.device == t.device && t.route.carries(&o.kind))
        .collect()
}

/// Marks which outputs some target of `inv` carries (`pushed`).
pub fn mark_pushed(outputs: &mut [DeviceOutput], inv: &Inventory) {
    for o in outputs {
        o.pushed = inv
            .targets
            .iter()
            .any(|t| t.device == o.device && t.route.carries(&o.kind));
    }
}

/// A rollout that stopped at a device.
#[derive(Debug)]
pub struct Failure {
    pub error: PushError,
    /// Devices that were changed and are back at the previous generation.
    pub restored: Vec<String>,
    /// Devices that were changed and could not be put back.
    pub not_restored: Vec<PushError>,
}

/// Pushes `intended` to every target in order; on the first failure puts
/// the targets already pushed back to `previous`. `each` is told about every
/// target when it is done (progress).
pub fn roll_out(
    inv: &Inventory,
    intended: &[DeviceOutput],
    previous: &[DeviceOutput],
    each: impl FnMut(&Target, &Pushed),
) -> Result<Vec<(Target, Pushed)>, Box<Failure>> {
    roll_out_phased(inv, intended, previous, None, each)
}

/// [`roll_out`] in the order of `phases` (the one PLAN-1 verified:
/// [`phases::schedule`]); a device with a hairpin step is pushed twice.
/// `NETC_ROLLOUT_HOLD_AFTER_PHASE=k` (tests) stops after phase k's last
/// push, says so on stderr, and goes on after a line on stdin.
pub fn roll_out_phased(
    inv: &Inventory,
    intended: &[DeviceOutput],
    previous: &[DeviceOutput],
    phases: Option<&netc_verify::plan::migration::Phases>,
    mut each: impl FnMut(&Target, &Pushed),
) -> Result<Vec<(Target, Pushed)>, Box<Failure>> {
    let hold: Option<u8> = std::env::var("NETC_ROLLOUT_HOLD_AFTER_PHASE")
        .ok()
        .and_then(|v| v.parse().ok());
    let sched = phases::schedule(inv, phases);
    let mut done: Vec<(Target, Pushed)> = Vec::new();
    for (i, step) in sched.iter().enumerate() {
        let t = step.target;
        let mine = carried(intended, t);
        let pinned;
        let outputs = match (step.content, phases) {
            (netc_verify::plan::migration::Content::NewWithHairpin, Some(p)) => {
                pinned = phases::with_hairpin(&mine, &t.device, p);
                pinned.iter().collect()
            }
            _ => mine,
        };
        match push::push(t, &outputs, &inv.defaults) {
            Ok(p) => {
                each(t, &p);
                match done.iter_mut().find(|(d, _)| d == t) {
                    Some((_, q)) => q.changes += p.changes,
                    None => done.push((t.clone(), p)),
                }
                let phase_ends = sched.get(i + 1).is_none_or(|n| n.phase != step.phase);
                if hold == Some(step.phase) && phase_ends {
                    eprintln!(
                        "rollout: holding after phase {} (press Enter to go on)",
                        step.phase
                    );
                    let mut line = String::new();
                    let _ = std::io::stdin().read_line(&mut line);
                }
            }
            Err(error) => {
                // OVS bundles and P4 writes are atomic, so the failed target is
                // unchanged; an agent directory may hold some new files.
                let mut back: Vec<&Target> = done.iter().map(|(t, _)| t).collect();
                if matches!(t.route, inventory::Route::Agent { .. }) {
                    back.push(t);
                }
                let mut restored = Vec::new();
                let mut not_restored = Vec::new();
                for b in back.into_iter().rev() {
                    match push::push(b, &carried(previous, b), &inv.defaults) {
                        Ok(_) => restored.push(b.device.clone()),
                        Err(e) => not_restored.push(e),
                    }
                }
                restored.reverse();
                return Err(Box::new(Failure {
                    error,
                    restored,
                    not_restored,
                }));
            }
        }
    }
    Ok(done)
}
