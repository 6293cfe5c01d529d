//! `netc check FILE...`: diagnostics only.
//!
//! Parses, checks and lowers; prints the errors and warnings (the first 20,
//! then how many more: `commands::report`) with their
//! location; `--dump-after=<pass>` prints that pass's output on stdout.
//! With `--intent`, the files are intent: they are checked together with the
//! standard rules and evaluated, and bad intent (`error_*` rows) is reported
//! as by `netc compile`, without writing anything.

use super::{evaluate_intent, output, report, Outcome};
use netc_compiler::{compile_files, plan::Plan, Compilation};
use std::path::{Path, PathBuf};

pub struct CheckArgs<'a> {
    pub files: &'a [PathBuf],
    pub dump_after: Option<&'a str>,
    pub intent: bool,
    pub rules: Option<&'a Path>,
}

pub fn run(args: CheckArgs) -> Outcome {
    if args.dump_after.is_some() && output::json() {
        return Outcome::InputError(
            "--dump-after prints text on stdout; it does not go with --json".into(),
            Some("drop one of the two".into()),
        );
    }
    if args.intent {
        let ev = match evaluate_intent(args.files, args.rules, 1) {
            Ok(e) => e,
            Err(outcome) => return outcome,
        };
        dump(&ev.compilation, args.dump_after);
        for f in &ev.findings {
            eprint!("{}", f.render(&ev.compilation.sources));
        }
        if !ev.findings.is_empty() {
            output::hold_findings(&ev.findings, &ev.compilation.sources);
            let n = ev.findings.len();
            eprintln!(
                "\n{n} problem{} in the intent",
                if n == 1 { "" } else { "s" }
            );
            return Outcome::ProgramErrors;
        }
        ok(&ev.plan, &ev.compilation);
        return Outcome::Ok;
    }
    let c = compile_files(args.files);
    dump(&c, args.dump_after);
    if report(&c) {
        return Outcome::ProgramErrors;
    }
    let Some(plan) = &c.plan else {
        return Outcome::ProgramErrors;
    };
    ok(plan, &c);
    Outcome::Ok
}

/// The success line (stderr), and with `--json` the summary on stdout.
fn ok(plan: &Plan, c: &Compilation) {
    if output::json() {
        let rules: usize = plan.strata.iter().map(|s| s.rules.len()).sum();
        output::emit(serde_json::json!({
            "ok": true,
            "relations": plan.relations.len(),
            "rules": rules,
            "strata": plan.strata.len(),
            "facts": plan.facts.len(),
            "warnings": c.diagnostics.items.len() - c.diagnostics.error_count(),
        }));
    }
    eprintln!("{} {}", output::Paint::stderr().green("ok:"), summary(plan));
}

fn dump(c: &Compilation, pass: Option<&str>) {
    match pass {
        Some("parse") => println!("{:#?}", c.program),
        Some("check") | Some("plan") => {
            if let Some(plan) = &c.plan {
                print!("{}", netc_compiler::lower::dump(plan));
            }
        }
        _ => {}
    }
}

fn summary(plan: &Plan) -> String {
    let rules: usize = plan.strata.iter().map(|s| s.rules.len()).sum();
    format!(
        "{} relations, {} rules, {} strata, {} facts",
        plan.relations.len(),
        rules,
        plan.strata.len(),
        plan.facts.len()
    )
}
