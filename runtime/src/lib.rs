//! netc's runtime: the engine on differential dataflow, I/O, and the CLI.
//!
//! - [`engine`] (the netc-engine crate) renders a plan on differential
//!   dataflow and applies transactions of fact changes, reporting each
//!   commit's output changes; [`cpu`] (in it) reads CPU time.
//! - [`io`] reads facts and update scripts, writes outputs (Souffle formats).
//! - [`intent`] applies the standard rules to intent files (`netc compile`);
//!   [`placement`] is its VIP-placement built-in (Duet's greedy), and
//!   [`gen`] writes synthetic intent at any scale (`netc gen`).
//! - [`agent`] is `netc agent`, a host's daemon (bridge sync, DIP probes).
//! - [`store`] remembers every applied generation (SQLite under `.netc/`);
//!   [`rollout`] pushes a generation to every device, all or nothing.
//! - [`serve`] is `netc serve`, the warm daemon (HTTP+JSON), and holds the
//!   warm session [`repl`] (`netc repl`) shares.
//! - [`commands`] implements each `netc` subcommand on top of those; the
//!   binary (`main.rs`) only parses arguments and maps outcomes to exit codes.
//!
//! Architecture invariant: `engine` knows the plan IR and values, never the
//! syntax tree or the command line.

pub use netc_engine as engine;
pub use netc_engine::cpu;
pub mod oom;
pub mod io;
pub mod intent;
pub mod placement;
pub mod gen;
pub mod agent;
pub mod store;
pub mod rollout;
pub mod lab;
pub mod serve;
pub mod repl;
pub mod commands;
