//! netc's language: from source text to a plan the engine can run.
//!
//! The modules are declared in the order data flows:
//!
//! - [`source`] registers files and gives spans; [`diagnostics`] reports a
//!   user's mistakes at those spans.
//! - [`syntax`] lexes and parses `.dl`/`.ndl` text into the [`ast`], splicing
//!   `.include`d files in place; [`names`] suggests the name a typo meant.
//! - [`types`] and [`value`] are the vocabulary of types and values;
//!   [`functors`] defines every built-in (strings, arithmetic, network
//!   functions, `hash5`) once, for the checker and the engine alike.
//! - [`check`] resolves names, infers and checks types, and stratifies.
//! - [`lower`] turns the checked program into the [`plan`] IR.
//! - [`souffle_export`] prints a plan as a pure-Souffle program.
//! - [`fxhash`] is the fast hasher the engine and the verifier share.
//!
//! [`compile`] runs the whole pipeline. This crate knows nothing about
//! differential dataflow: the plan is plain data.

pub mod source;
pub mod diagnostics;
pub mod names;
pub mod syntax;
pub mod ast;
pub mod types;
pub mod value;
pub mod functors;
pub mod check;
pub mod lower;
pub mod plan;
pub mod souffle_export;
pub mod fxhash;

use diagnostics::Diagnostics;
use source::SourceMap;
use std::path::PathBuf;

/// The passes of [`compile`], by name, for `--dump-after=<pass>`.
pub const PASSES: &[&str] = &["parse", "check", "plan"];

/// Everything one compilation produced: the files it read, what it had to
/// say about them, and the plan if there were no errors.
pub struct Compilation {
    pub sources: SourceMap,
    pub diagnostics: Diagnostics,
    pub program: ast::Program,
    pub plan: Option<plan::Plan>,
}

/// Parses, checks and lowers the given files as one program.
pub fn compile_files(paths: &[PathBuf]) -> Compilation {
    let mut sources = SourceMap::new();
    let mut diagnostics = Diagnostics::new();
    let program = syntax::parse_files(&mut sources, paths, &mut diagnostics);
    finish(sources, diagnostics, program)
}

/// One input of a compilation: a file on disk, or text with a display name
/// (rules embedded in the binary, stdin, tests).
pub enum SourceInput {
    File(PathBuf),
    Text { name: String, text: String },
}

/// Parses, checks and lowers texts and files, in order, as one program.
pub fn compile_inputs(inputs: &[SourceInput]) -> Compilation {
    compile_inputs_in(inputs, None)
}

/// [`compile_inputs`], with the `.include`s of the texts confined to
/// `scope` (a daemon compiling its callers' texts: `syntax::confine`).
pub fn compile_inputs_in(
    inputs: &[SourceInput],
    scope: Option<&syntax::confine::Scope>,
) -> Compilation {
    let mut sources = SourceMap::new();
    let mut diagnostics = Diagnostics::new();
    let mut program = ast::Program::default();
    for input in inputs {
        let part = match input {
            SourceInput::File(p) => {
                syntax::parse_files(&mut sources, std::slice::from_ref(p), &mut diagnostics)
            }
            SourceInput::Text { name, text } => match scope {
                Some(scope) => {
                    syntax::parse_text_in(&mut sources, name, text, &mut diagnostics, scope)
                }
                None => syntax::parse_text(&mut sources, name, text, &mut diagnostics),
            },
        };
        program.items.extend(part.items);
    }
    finish(sources, diagnostics, program)
}

/// Parses, checks and lowers program text (tests, stdin, embedded rules).
pub fn compile_text(name: &str, text: &str) -> Compilation {
    let mut sources = SourceMap::new();
    let mut diagnostics = Diagnostics::new();
    let program = syntax::parse_text(&mut sources, name, text, &mut diagnostics);
    finish(sources, diagnostics, program)
}

/// The pipeline after parsing: check → lower. Checking runs even when parsing
/// reported errors, so one run shows every problem it can; the plan is built
/// only from an error-free program.
fn finish(
    sources: SourceMap,
    mut diagnostics: Diagnostics,
    mut program: ast::Program,
) -> Compilation {
    syntax::expand(&mut program, &mut diagnostics);
    let parse_ok = !diagnostics.has_errors();
    let checked = check::check(&program, &mut diagnostics);
    let plan = match checked {
        Some(c) if parse_ok => match lower::try_lower(&c) {
            Ok(plan) => Some(plan),
            Err(e) => {
                diagnostics.push(e.to_diagnostic());
                None
            }
        },
        _ => None,
    };
    Compilation {
        sources,
        diagnostics,
        program,
        plan,
    }
}
