//! The `netc` subcommands: one module each, all sharing [`Outcome`] and the
//! rule that errors are reported once, here at the edge, on stderr.
//!
//! Exit codes (also in `netc --help`): 0 success; 1 the program or intent has
//! errors (diagnostics were printed); 2 usage, input or I/O errors. With
//! `--json` a failure is also one JSON document on stdout, made here
//! ([`output::failure`]) from the exit code and what the command held.

pub mod agent;
pub mod apply;
pub mod capacity;
pub mod check;
pub mod compile;
pub mod diff;
pub mod decode_p4;
pub mod export;
pub mod gen;
pub mod history;
pub mod lab;
pub mod output;
pub mod plan;
pub mod predict;
pub mod remote;
pub mod repl;
pub mod rollback;
pub mod run;
pub mod serve;
pub mod staged;
pub mod stages;
pub mod status;
pub mod tofino;
pub mod trace;
pub mod verify;

use crate::intent;
pub use crate::intent::EvaluatedIntent;
use netc_compiler::{Compilation, SourceInput};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

/// How a command ended.
pub enum Outcome {
    Ok,
    /// Diagnostics or a verification failure: exit 1.
    ProgramErrors,
    /// Bad usage, unreadable or malformed input files: exit 2.
    InputError(String, Option<String>),
}

impl Outcome {
    pub fn exit(self) -> ExitCode {
        let (code, message, hint) = match &self {
            Outcome::Ok => return ExitCode::SUCCESS,
            Outcome::ProgramErrors => (1, None, None),
            Outcome::InputError(msg, hint) => (2, Some(msg.as_str()), hint.as_deref()),
        };
        if output::json() && !output::emitted() {
            if let Some(doc) = output::failure(code, message, hint) {
                output::emit(doc);
            }
        }
        if let Some(msg) = message {
            output::clear_progress();
            eprintln!("{} {msg}", output::Paint::stderr().red("error:"));
            if let Some(h) = hint {
                eprintln!("   = hint: {h}");
            }
        }
        ExitCode::from(code)
    }
}

impl From<crate::io::IoError> for Outcome {
    fn from(e: crate::io::IoError) -> Outcome {
        let hint = e.hint().map(str::to_string);
        Outcome::InputError(e.to_string(), hint)
    }
}

/// Prints a compilation's diagnostics on stderr with a summary line; true if
/// it had errors.
pub fn report(c: &Compilation) -> bool {
    if c.diagnostics.has_errors() {
        output::hold_diagnostics(c);
    }
    if !c.diagnostics.items.is_empty() {
        output::clear_progress();
        let (text, left_out) = c.diagnostics.render_first(&c.sources, SHOWN_DIAGNOSTICS);
        eprint!("{text}");
        if left_out > 0 {
            eprintln!(
                "\n... and {left_out} more not shown (the first {SHOWN_DIAGNOSTICS} are; --json lists every one)"
            );
        }
    }
    let errors = c.diagnostics.error_count();
    let warnings = c.diagnostics.items.len() - errors;
    if errors > 0 {
        eprintln!(
            "\n{} error{}{} found",
            errors,
            plural(errors),
            if warnings > 0 {
                format!(", {warnings} warning{}", plural(warnings))
            } else {
                String::new()
            }
        );
        if let Some(hint) = intent_hint(c) {
            eprintln!("hint: {hint}");
            output::hold_hint(&hint);
        }
    }
    errors > 0
}

/// How many diagnostics a command prints before it says how many more
/// there are (as compilers cap theirs): an intent file checked as a plain
/// program has one error per fact.
const SHOWN_DIAGNOSTICS: usize = 20;

/// A hint when undeclared relations are the standard rules' own (`vm`,
/// `switch`, ...): the files are network intent, read without the rules.
fn intent_hint(c: &Compilation) -> Option<String> {
    // In the order the files first use them, each once.
    let mut names: Vec<&str> = Vec::new();
    for d in c.diagnostics.sorted() {
        let name = (d.code == "E0101")
            .then(|| {
                d.message
                    .strip_prefix("undeclared relation `")?
                    .strip_suffix('`')
            })
            .flatten();
        if let Some(n) = name.filter(|n| !names.contains(n)) {
            names.push(n);
        }
    }
    names.retain(|n| intent::rules::declares(n));
    if names.is_empty() {
        return None;
    }
    let shown: Vec<String> = names.iter().take(4).map(|n| format!("`{n}`")).collect();
    let more = if names.len() > 4 { ", ..." } else { "" };
    Some(format!(
        "{}{more} {} declared by netc's standard rules: these files look like network intent; \
         check them with `netc check --intent FILE...` or compile them with `netc compile FILE...`",
        shown.join(", "),
        if names.len() == 1 { "is" } else { "are" },
    ))
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// Loads the rules and intent, reports diagnostics (program errors → exit 1),
/// and evaluates. Findings are returned, not printed.
pub fn evaluate_intent(
    files: &[PathBuf],
    rules: Option<&Path>,
    workers: usize,
) -> Result<EvaluatedIntent, Outcome> {
    evaluate_intent_beside(files, rules, workers, &mut intent::Timings::start(), |_| ())
        .map(|(e, ())| e)
}

/// [`evaluate_intent`], closing a phase of `timings` after each step (load,
/// the phases of `intent::evaluate_beside`, findings), and running `beside`
/// on a second thread while the placement is computed (what `netc compile`
/// writes early); returns what it returned.
pub fn evaluate_intent_beside<T: Send>(
    files: &[PathBuf],
    rules: Option<&Path>,
    workers: usize,
    timings: &mut intent::Timings,
    beside: impl for<'e> FnOnce(intent::Beside<'e>) -> T + Send,
) -> Result<(EvaluatedIntent, T), Outcome> {
    let inputs = files.iter().cloned().map(SourceInput::File).collect();
    evaluate_inputs_beside(inputs, rules, workers, timings, beside)
}

/// [`evaluate_intent_beside`] of intent given as files or texts.
pub fn evaluate_inputs_beside<T: Send>(
    inputs: Vec<SourceInput>,
    rules: Option<&Path>,
    workers: usize,
    timings: &mut intent::Timings,
    beside: impl for<'e> FnOnce(intent::Beside<'e>) -> T + Send,
) -> Result<(EvaluatedIntent, T), Outcome> {
    let compilation = intent::load_inputs(inputs, rules).map_err(|e| {
        Outcome::InputError(
            format!("cannot read the rules: {e}"),
            Some("--rules takes a directory of .ndl files".into()),
        )
    })?;
    if report(&compilation) {
        return Err(Outcome::ProgramErrors);
    }
    let plan = Arc::new(compilation.plan.clone().ok_or(Outcome::ProgramErrors)?);
    timings.lap("load", "load: parse, check, lower");
    let (engine, beside_out) = intent::evaluate_beside(plan.clone(), workers, timings, beside)
        .map_err(|e| Outcome::InputError(format!("engine: {e}"), None))?;
    let findings = intent::findings::collect(&plan, |r| engine.contents(r));
    timings.lap("findings", "findings (error_* rows)");
    Ok((
        EvaluatedIntent {
            compilation,
            plan,
            engine,
            findings,
        },
        beside_out,
    ))
}
