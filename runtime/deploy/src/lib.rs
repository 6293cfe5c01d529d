//! netc-deploy: compiled intent taken to devices, and remembered.
//!
//! Map of this crate, in the order an apply meets it:
//! - [`rollout`]: evaluated intent → a candidate generation, the gate (the
//!   verifier, AFF-2, PLAN-1) and the push to every device, all or nothing;
//! - [`store`]: every applied generation (SQLite under `.netc/`), the apply
//!   lock, recovery;
//! - [`lab`]: a local Open vSwitch lab, one `ovs-vswitchd` per host
//!   (`netc lab`, `netc trace`, and `netc apply` without an inventory);
//! - [`agent`]: `netc agent`, a host's daemon (bridge sync, DIP probes);
//! - [`record`]: the warm session (`netc serve`, `netc repl`) as a store
//!   generation and back (recovery), through the same gate as `netc apply`.
//!
//! Architecture invariant: nothing here imports the command-line crate
//! (netc-cli); what a command and a module here both need lives here or
//! lower. The lower crates are imported as `engine`, `intent` and `io`
//! below, so a path reads `crate::intent::...` wherever the module sits.

pub mod agent;
pub mod lab;
pub mod record;
pub mod rollout;
pub mod store;

use netc_engine as engine;
use netc_intent as intent;
use netc_intent::{io, warm};
