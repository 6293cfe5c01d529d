//! The `netc` binary (in progress).
fn main() {}
