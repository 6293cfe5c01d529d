//! netc-cli: the `netc` command line on top of the runtime's crates.
//!
//! The lower crates are imported here under the module names the commands
//! use (`crate::engine`, `crate::intent`, `crate::store`, ...):
//!
//! - `engine` (netc-engine): a plan on differential dataflow;
//! - `intent`, `io`, `oom` (netc-intent): the standard rules, evaluation,
//!   findings, placement, I/O and the warm session (`intent::warm`) the
//!   daemon and the REPL share;
//! - `store`, `rollout`, `lab`, `agent`, `record` (netc-deploy):
//!   generations, the gate and the push to devices, the local OVS lab, the
//!   host agent, the warm session stored and recovered.
//!
//! Its own modules:
//! - [`commands`] implements each `netc` subcommand on top of those; the
//!   binary (`main.rs`) only parses arguments and maps outcomes to exit codes;
//! - [`serve`] is `netc serve`, the warm daemon (HTTP+JSON);
//! - [`repl`] is `netc repl`, a prompt over the warm intent;
//! - [`gen`] writes synthetic intent at any scale (`netc gen`).
//!
//! Architecture invariant: nothing imports this crate; what a command shares
//! with a lower module lives in that module's crate.

use netc_deploy::{agent, lab, record, rollout, store};
use netc_engine as engine;
use netc_intent as intent;
use netc_intent::{io, oom};

pub mod commands;
pub mod gen;
pub mod repl;
pub mod serve;
