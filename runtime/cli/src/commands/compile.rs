//! `netc compile INTENT... --out DIR`: intent → per-device artifacts.
//!
//! Compiles the standard rules with the intent files, evaluates them, and
//! refuses (exit 1, nothing written) when the program has errors or any
//! `error_*` relation is non-empty. Otherwise writes every located output
//! relation under `DIR/relations/` — replacing DIR as a whole, so DIR always
//! holds one complete compilation. With `--timings`, prints each phase's
//! wall and CPU time (`intent::Timings`) on stderr, and in the JSON.

use super::{evaluate_intent_beside, output, EvaluatedIntent, Outcome};
use crate::intent::{self, timings::Mark, Timings};
use std::path::{Path, PathBuf};

pub struct CompileArgs<'a> {
    pub intent: &'a [PathBuf],
    pub rules: Option<&'a Path>,
    pub out: &'a Path,
    pub workers: usize,
    /// Print each phase's wall and CPU time (`--timings`).
    pub timings: bool,
}

pub fn run(args: CompileArgs) -> Outcome {
    let mut timings = Timings::start();
    let stages = output::Stages::start("compile", "compiling the rules and evaluating the intent");
    // The output directory is begun now, so that what the placement cannot
    // change is dumped and rendered while it is computed (`write_early`);
    // if it cannot be made, that is reported where the outputs are written.
    let staging = intent::Staging::begin(args.out);
    let early_dir = staging.as_ref().ok().map(|s| s.dir().to_path_buf());
    let beside = |b: intent::Beside<'_>| match &early_dir {
        Some(dir) => intent::write_early(b.plan, b.view, dir, b.settled),
        None => intent::Early::none(),
    };
    let (
        EvaluatedIntent {
            compilation: c,
            plan,
            mut engine,
            findings,
        },
        mut early,
    ) = match evaluate_intent_beside(args.intent, args.rules, args.workers, &mut timings, beside) {
        Ok(e) => e,
        Err(outcome) => return outcome,
    };
    if let Some(phase) = timings.phase_mut("placement") {
        phase.parts = std::mem::take(&mut early.parts);
    }
    if !findings.is_empty() {
        // Stop the early renderer before the staging directory is removed.
        drop(early);
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
    timings.lap("release", "release the dataflow");
    let mut written = intent::Written::default();
    let mut render_error = None;
    let mut built = None;
    stages.set("rendering and writing the device artifacts");
    let result = staging.and_then(|staging| {
        match intent::write_outputs(&plan, &engine, staging.dir(), early) {
            Ok(w) => written = w,
            Err(intent::ArtifactError::Io(e)) => return Err(e),
            Err(intent::ArtifactError::Render(e)) => {
                render_error = Some(e);
                return Err(std::io::Error::other(
                    "a device's rows could not be rendered",
                ));
            }
        }
        built = Some(Mark::thread());
        staging.finish()
    });
    let replaced = built.map(|m| m.span());
    let phase = timings.lap("write_outputs", "write outputs");
    phase.parts = std::mem::take(&mut written.parts);
    if let Some(span) = replaced {
        phase.parts.push(intent::timings::Part {
            name: "replace_dir",
            label: "replace the --out directory",
            thread: "main",
            span,
        });
    }
    let (relations, artifacts) = (written.relations, written.artifacts);
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
    if args.timings {
        eprint!("{}", timings.table());
    }
    if output::json() {
        let mut doc = serde_json::json!({
            "out": args.out,
            "intent_files": args.intent.len(),
            "relations": relations,
            "artifacts": artifacts,
        });
        if args.timings {
            doc["timings"] = timings.json();
        }
        output::emit(doc);
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
