//! netc's language: from source text to a plan the engine can run.
//!
//! The modules are declared in the order data flows:
//!
//! - [`source`] registers files and gives spans; [`diagnostics`] reports a
//!   user's mistakes at those spans.
//! - [`syntax`] lexes and parses `.dl`/`.ndl` text into the [`ast`], splicing
//!   `.include`d files in place.
//! - [`types`] and [`value`] are the vocabulary of types and values;
//!   [`functors`] defines every built-in (strings, arithmetic, network
//!   functions, `hash5`) once, for the checker and the engine alike.
//! - [`check`] resolves names, infers and checks types, and stratifies.
//! - [`lower`] turns the checked program into the [`plan`] IR.
//!
//! [`compile`] runs the whole pipeline. This crate knows nothing about
//! differential dataflow: the plan is plain data.

pub mod source;
pub mod diagnostics;
pub mod syntax;
pub mod ast;
pub mod types;
pub mod value;
pub mod functors;
pub mod check;
pub mod lower;
pub mod plan;
