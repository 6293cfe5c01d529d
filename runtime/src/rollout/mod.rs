//! Rollout: from compiled intent to devices, all or nothing.
//!
//! Reading order: [`candidate`] (evaluated intent → a generation's contents:
//! files, facts, per-device artifacts, relations) → [`entries`] (per-device
//! adds/removes between two generations, for `plan` and `diff`) →
//! [`verdict`] (the verifier on a candidate, AFF-2 against the last
//! generation) → [`inventory`] (how each device is reached) → [`push`] (one
//! device, atomically) → [`roll_out`] here (every device in order; on a
//! failure, the devices already changed go back to the previous generation).
//!
//! Expects: the previous generation's artifacts (empty for the first apply).
//! Guarantees: [`roll_out`] returns `Ok` only when every target holds the
//! intended artifacts; on `Err`, every target it changed was re-pushed the
//! previous artifacts (the [`Failure`] lists any that could not be), and the
//! caller commits nothing.

pub mod candidate;
pub mod entries;
pub mod verdict;
pub mod inventory;
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
    mut each: impl FnMut(&Target, &Pushed),
) -> Result<Vec<(Target, Pushed)>, Box<Failure>> {
    let mut done: Vec<(Target, Pushed)> = Vec::new();
    for t in &inv.targets {
        match push::push(t, &carried(intended, t), &inv.defaults) {
            Ok(p) => {
                each(t, &p);
                done.push((t.clone(), p));
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
