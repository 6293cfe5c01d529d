//! netc's runtime: the engine on differential dataflow and I/O (CLI arriving).

pub mod engine;
pub mod io;
