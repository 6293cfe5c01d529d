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
//! intended artifacts; on `Err`, every target it changed — and the failed
//! one when its state is unknown (a timeout), read back first — was
//! re-pushed the previous artifacts (the [`Failure`] lists any that could
//! not be, and what the read back showed), and the caller commits nothing.

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
    /// When the failed device's state was unknown (a timeout: it may have
    /// committed the transaction), what reading it back showed.
    pub read_back: Option<ReadBack>,
}

/// What the failed device held when read back after a failure that left
/// its state unknown.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReadBack {
    /// It held the previous generation: nothing reached it.
    Unchanged,
    /// It held (some of) the new generation: N entries were put back.
    PutBack(usize),
    /// It could not be read or put back (the error is in `not_restored`).
    Unknown,
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
                // A refused OVS bundle or P4 write changed nothing; an agent
                // directory may hold some new files; a device whose client
                // timed out may have committed everything it was sent, so it
                // is read back and put back like the others (a push is a
                // reconcile: on an unchanged device it changes nothing).
                let mut back: Vec<&Target> = done.iter().map(|(t, _)| t).collect();
                let agent = matches!(t.route, inventory::Route::Agent { .. });
                if agent || error.state_unknown {
                    back.push(t);
                }
                let mut restored = Vec::new();
                let mut not_restored = Vec::new();
                let mut read_back = None;
                for b in back.into_iter().rev() {
                    let failed_one = b == t && error.state_unknown;
                    match push::push(b, &carried(previous, b), &inv.defaults) {
                        Ok(p) => {
                            restored.push(b.device.clone());
                            if failed_one {
                                read_back = Some(match p.changes {
                                    0 => ReadBack::Unchanged,
                                    n => ReadBack::PutBack(n),
                                });
                            }
                        }
                        Err(e) => {
                            if failed_one {
                                read_back = Some(ReadBack::Unknown);
                            }
                            not_restored.push(e);
                        }
                    }
                }
                restored.reverse();
                return Err(Box::new(Failure {
                    error,
                    restored,
                    not_restored,
                    read_back,
                }));
            }
        }
    }
    Ok(done)
}
