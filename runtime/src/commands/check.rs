//! `netc check FILE...`: diagnostics only.
//!
//! Parses, checks and lowers; prints every error and warning with its
//! location; `--dump-after=<pass>` prints that pass's output on stdout.

use super::{report, Outcome};
use netc_compiler::{compile_files, plan::Plan};
use std::path::PathBuf;

pub fn run(files: &[PathBuf], dump_after: Option<&str>) -> Outcome {
    let c = compile_files(files);
    match dump_after {
        Some("parse") => println!("{:#?}", c.program),
        Some("check") | Some("plan") => {
            if let Some(plan) = &c.plan {
                print!("{}", netc_compiler::lower::dump(plan));
            }
        }
        _ => {}
    }
    if report(&c) {
        return Outcome::ProgramErrors;
    }
    if let Some(plan) = &c.plan {
        eprintln!("ok: {}", summary(plan));
    }
    Outcome::Ok
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
