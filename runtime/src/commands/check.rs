//! `netc check FILE...`: diagnostics only.
//!
//! Parses, checks and lowers; prints every error and warning with its
//! location; `--dump-after=<pass>` prints that pass's output on stdout.
//! With `--intent`, the files are intent: they are checked together with the
//! standard rules and evaluated, and bad intent (`error_*` rows) is reported
//! as by `netc compile`, without writing anything.

use super::{report, Outcome};
use crate::intent;
use netc_compiler::{compile_files, plan::Plan, Compilation};
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub struct CheckArgs<'a> {
    pub files: &'a [PathBuf],
    pub dump_after: Option<&'a str>,
    pub intent: bool,
    pub rules: Option<&'a Path>,
}

pub fn run(args: CheckArgs) -> Outcome {
    let c = if args.intent {
        match intent::load(args.files, args.rules) {
            Ok(c) => c,
            Err(e) => return Outcome::InputError(format!("cannot read the rules: {e}"), None),
        }
    } else {
        compile_files(args.files)
    };
    dump(&c, args.dump_after);
    if report(&c) {
        return Outcome::ProgramErrors;
    }
    let Some(plan) = &c.plan else {
        return Outcome::ProgramErrors;
    };
    if args.intent {
        let plan = Arc::new(plan.clone());
        let engine = match intent::evaluate(plan.clone(), 1) {
            Ok(e) => e,
            Err(e) => return Outcome::InputError(format!("engine: {e}"), None),
        };
        let findings = intent::findings::collect(&plan, |r| engine.contents(r));
        for f in &findings {
            eprint!("{}", f.render(&c.sources));
        }
        if !findings.is_empty() {
            eprintln!(
                "\n{} problem{} in the intent",
                findings.len(),
                if findings.len() == 1 { "" } else { "s" }
            );
            return Outcome::ProgramErrors;
        }
    }
    eprintln!("ok: {}", summary(plan));
    Outcome::Ok
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
