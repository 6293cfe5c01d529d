//! Where the daemon's applies go: the devices, and rolling a generation out.
//!
//! The daemon pushes as `netc apply` does (`commands/apply.rs`), through the
//! same public steps of `crate::rollout`: mark what the inventory carries,
//! write the store's `applying` journal before any device is touched,
//! [`rollout::roll_out`] (every device to its complete state; on a failure
//! the changed ones are put back), then the caller commits.
//!
//! Devices, chosen when the daemon starts ([`Devices`]): an inventory file
//! (`--inventory`), the local lab (the default, as `netc apply`: one OVS
//! bridge per host of the intent, under `STATE/lab/`), or none
//! (`--no-push`: generations are recorded and deltas published for
//! consumers that program the devices themselves).
//!
//! Guarantees of [`roll`]: `Ok` only when every target holds the generation
//! (the caller then commits, which clears the journal); on `Err` nothing is
//! to be committed, the devices that were changed are back at `previous`
//! (or listed as not restored, and then the journal stays so the next apply
//! knows devices may hold a mix), and the error names the device.

use super::api::ApiError;
use super::warm::Warm;
use crate::rollout::inventory::{Inventory, Target};
use crate::rollout::push::Pushed;
use crate::rollout::{self, Failure};
use crate::store::{DeviceOutput, Journal, NewGeneration, Store};
use serde_json::{json, Value as Json};

/// How the daemon reaches devices.
#[derive(Clone, Debug)]
pub enum Devices {
    /// `--inventory FILE`, read once at start.
    Inventory(Inventory),
    /// No inventory: the local lab under the state directory.
    Lab,
    /// `--no-push`: record and publish only.
    None,
}

impl Devices {
    /// For `/v1/status` and the startup line.
    pub fn describe(&self) -> &'static str {
        match self {
            Devices::Inventory(_) => "inventory",
            Devices::Lab => "lab",
            Devices::None => "none",
        }
    }
}

/// A rollout that reached every device.
pub struct Rolled {
    pub pushed: Vec<(Target, Pushed)>,
    /// An earlier apply's journal found when this one began.
    pub interrupted: Option<Journal>,
}

impl Rolled {
    pub fn pushed_json(&self) -> Json {
        Json::Array(
            self.pushed
                .iter()
                .map(|(t, p)| {
                    json!({"device": t.device, "route": t.route.kind(), "address": t.route.address(), "changes": p.changes})
                })
                .collect(),
        )
    }
    pub fn interrupted_json(&self) -> Json {
        self.interrupted
            .as_ref()
            .map_or(Json::Null, |j| json!({"pid": j.pid, "started": j.started}))
    }
}

/// The inventory for the session's current state (the lab is started or
/// kept for the hosts of the intent the session holds now).
pub fn inventory(
    devices: &Devices,
    store: &Store,
    w: &Warm,
) -> Result<Option<Inventory>, ApiError> {
    match devices {
        Devices::None => Ok(None),
        Devices::Inventory(i) => Ok(Some(i.clone())),
        Devices::Lab => {
            let topo = crate::lab::Topology::from_engine(w.plan(), w.engine());
            let bridges = crate::lab::ensure(store.dir(), &topo).map_err(|e| {
                ApiError::new(
                    503,
                    "lab",
                    format!("the local lab (the daemon has no --inventory): {e}"),
                )
                .hint("install Open vSwitch, or restart `netc serve` with --inventory FILE (or --no-push)")
            })?;
            Ok(Some(Inventory::of_bridges(&bridges)))
        }
    }
}

/// Journal, then push `gen` to every target of `inv`; `previous` is what the
/// devices held (the base generation's outputs; empty before the first).
pub fn roll(
    store: &mut Store,
    inv: &Inventory,
    gen: &mut NewGeneration,
    previous: &[DeviceOutput],
    base: Option<i64>,
) -> Result<Rolled, ApiError> {
    rollout::mark_pushed(&mut gen.outputs, inv);
    gen.inventory = inv.to_toml();
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let interrupted = store
        .begin_apply(&Journal {
            pid: std::process::id(),
            started,
            base,
            command: gen.command.clone(),
        })
        .map_err(store_error)?;
    match rollout::roll_out(inv, &gen.outputs, previous, |_, _| {}) {
        Ok(pushed) => Ok(Rolled {
            pushed,
            interrupted,
        }),
        Err(f) => Err(failed(store, &f)),
    }
}

fn failed(store: &mut Store, f: &Failure) -> ApiError {
    // As `netc apply`: the journal stays when a device could not be put back.
    let cleared = f.not_restored.is_empty() && store.abort_apply().is_ok();
    ApiError::new(502, "device_failed", f.error.to_string())
        .hint(if cleared {
            "nothing was committed; the devices changed before it are back at the previous generation"
        } else {
            "no generation was recorded, but some devices could NOT be put back and may hold the new one's entries — the next apply re-pushes every device"
        })
        .detail(json!({
            "device": f.error.device,
            "kind": f.error.kind,
            "address": f.error.address,
            "reason": f.error.reason,
            "restored": f.restored,
            "not_restored": f.not_restored.iter().map(|e| e.to_string()).collect::<Vec<_>>(),
            "read_back": f.read_back.as_ref().map(|r| crate::commands::apply::read_back_text(&f.error.device, r)),
            "journal_cleared": cleared,
            "committed": false,
        }))
}

pub fn store_error(e: crate::store::StoreError) -> ApiError {
    let hint = e.hint().unwrap_or_default();
    ApiError::new(500, "store", e.to_string()).hint(hint)
}
