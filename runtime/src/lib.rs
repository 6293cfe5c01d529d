//! netc's runtime: the engine on differential dataflow, I/O, and the CLI.
//!
//! - [`engine`] (the netc-engine crate) renders a plan on differential
//!   dataflow and applies transactions of fact changes, reporting each
//!   commit's output changes; [`cpu`] (in it) reads CPU time.
//! - [`intent`] (the netc-intent crate) applies the standard rules to
//!   intent files (`netc compile`) and holds the warm session the daemon
//!   and the REPL share; [`placement`] is its VIP-placement built-in
//!   (Duet's greedy), [`io`] reads facts and update scripts and writes
//!   outputs (Souffle formats), [`oom`] reports out of memory.
//! - [`gen`] writes synthetic intent at any scale (`netc gen`).
//! - [`agent`] is `netc agent`, a host's daemon (bridge sync, DIP probes).
//! - [`store`] remembers every applied generation (SQLite under `.netc/`);
//!   [`rollout`] pushes a generation to every device, all or nothing; with
//!   [`lab`] and [`agent`] they are the netc-deploy crate.
//! - [`serve`] is `netc serve`, the warm daemon (HTTP+JSON); [`repl`] is
//!   `netc repl`; both hold the warm session (`intent::warm`).
//! - [`commands`] implements each `netc` subcommand on top of those; the
//!   binary (`main.rs`) only parses arguments and maps outcomes to exit codes.
//!
//! Architecture invariant: `engine` knows the plan IR and values, never the
//! syntax tree or the command line.

pub use netc_engine as engine;
pub use netc_engine::cpu;
pub use netc_intent as intent;
pub use netc_intent::{io, oom, placement};
pub mod gen;
pub use netc_deploy::{agent, lab, rollout, store};
pub mod serve;
pub mod repl;
pub mod commands;
