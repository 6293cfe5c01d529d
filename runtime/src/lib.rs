//! netc's runtime: the engine on differential dataflow, I/O and the CLI.

pub mod engine;
