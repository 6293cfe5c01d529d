//! Lowering of a checked program to the plan IR (in progress).
