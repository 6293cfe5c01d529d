//! `netc compile INTENT... --out DIR`: intent → per-device artifacts.
//!
//! Compiles the standard rules with the intent files, evaluates them, and
//! refuses (exit 1, nothing written) when the program has errors or any
//! `error_*` relation is non-empty. Otherwise writes every located output
//! relation under `DIR/relations/` — replacing DIR as a whole, so DIR always
//! holds one complete compilation.

use super::{evaluate_intent, output, EvaluatedIntent, Outcome};
use crate::intent;
use std::path::{Path, PathBuf};

pub struct CompileArgs<'a> {
    pub intent: &'a [PathBuf],
    pub rules: Option<&'a Path>,
    pub out: &'a Path,
    pub workers: usize,
}

pub fn run(args: CompileArgs) -> Outcome {
    let stages = output::Stages::start("compile", "compiling the rules and evaluating the intent");
    let EvaluatedIntent {
        compilation: c,
        plan,
        mut engine,
        findings,
    } = match evaluate_intent(args.intent, args.rules, args.workers) {
        Ok(e) => e,
        Err(outcome) => return outcome,
    };
    if !findings.is_empty() {
        drop(stages);
        output::hold_findings(&findings, &c.sources);
        for f in &findings {
            eprint!("{}", f.render(&c.sources));
        }
        eprintln!(
            "\n{} problem{} in the intent; nothing was written to `{}`",
            findings.len(),
            if findings.len() == 1 { "" } else { "s" },
            args.out.display()
        );
        return Outcome::ProgramErrors;
    }
    // Only reads from here on: free the dataflow before rendering.
    engine.release_dataflow();
    let (mut relations, mut artifacts) = (0, 0);
    let mut render_error = None;
    stages.set("rendering and writing the device artifacts");
    let result = intent::write_atomically(args.out, |dir| {
        match intent::write_outputs(&plan, &engine, dir) {
            Ok((r, a)) => (relations, artifacts) = (r, a),
            Err(intent::ArtifactError::Io(e)) => return Err(e),
            Err(intent::ArtifactError::Render(e)) => {
                render_error = Some(e);
                return Err(std::io::Error::other(
                    "a device's rows could not be rendered",
                ));
            }
        }
        Ok(())
    });
    drop(stages);
    if let Some(e) = render_error {
        output::hold_message(&e.to_string());
        eprintln!(
            "error: {e}\nnothing was written to `{}`",
            args.out.display()
        );
        return Outcome::ProgramErrors;
    }
    if let Err(e) = result {
        return Outcome::InputError(
            format!("cannot write `{}`: {e}", args.out.display()),
            Some("check that the --out directory is writable".into()),
        );
    }
    if output::json() {
        output::emit(serde_json::json!({
            "out": args.out,
            "intent_files": args.intent.len(),
            "relations": relations,
            "artifacts": artifacts,
        }));
    }
    eprintln!(
        "{} {} intent file{} into {} ({relations} located relations, {artifacts} device artifacts)",
        output::Paint::stderr().green("compiled"),
        args.intent.len(),
        if args.intent.len() == 1 { "" } else { "s" },
        args.out.display()
    );
    Outcome::Ok
}
