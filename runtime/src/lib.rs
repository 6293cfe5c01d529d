//! netc's runtime: the engine on differential dataflow, I/O, and the CLI.
//!
//! - [`engine`] renders a plan on differential dataflow and applies
//!   transactions of fact changes, reporting each commit's output changes.
//! - [`io`] reads facts and update scripts, writes outputs (Souffle formats).
//! - [`intent`] applies the standard rules to intent files (`netc compile`).
//! - [`intent`] applies the standard rules to intent files (`netc compile`).
//! - [`commands`] implements each `netc` subcommand on top of those; the
//!   binary (`main.rs`) only parses arguments and maps outcomes to exit codes.
//!
//! Architecture invariant: `engine` knows the plan IR and values, never the
//! syntax tree or the command line.

pub mod agent;
pub mod commands;
pub mod engine;
pub mod gen;
pub mod intent;
pub mod io;
pub mod placement;
