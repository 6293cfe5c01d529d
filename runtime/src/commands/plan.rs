//! `netc plan INTENT...`: what `netc apply` would change, and whether the
//! verifier accepts it — touching no device.
//!
//! Compiles the intent, diffs every device's artifacts against the last
//! applied generation of the store (`--state DIR`, default `.netc/`; none yet
//! = everything is an add), prints per-device `+adds -removes` (the entries
//! with `-v`), and runs the verifier (AFF-2 against the last generation).
//! Exit 0 proven, 1 bad intent or a violation, 2 usage/input/state errors.
//! Never creates the state directory.

use super::staged::{self, Paint};
use super::Outcome;
use std::path::{Path, PathBuf};

pub struct PlanArgs<'a> {
    pub intent: &'a [PathBuf],
    pub rules: Option<&'a Path>,
    pub state: Option<&'a Path>,
    pub verbose: bool,
    pub json: bool,
}

pub fn run(args: PlanArgs) -> Outcome {
    match run_inner(&args) {
        Ok(o) | Err(o) => o,
    }
}

fn run_inner(args: &PlanArgs) -> Result<Outcome, Outcome> {
    let dir = staged::state_dir(args.state);
    let store = staged::existing_store(&dir)?;
    let s = staged::stage_intent(args.intent, args.rules, store.as_ref())?;
    let base = s.base.as_ref().map(|b| b.id);
    if args.json {
        let v = serde_json::json!({
            "base": base,
            "devices": staged::changes_json(&s.changes, args.verbose),
            "verdict": s.verdict().as_str(),
            "verify_error": s.verify_error,
            "report": staged::report_json(&s),
        });
        println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
    } else {
        let paint = Paint::stdout();
        let against = base.map_or("nothing applied yet".to_string(), |b| {
            format!("generation {b}")
        });
        println!(
            "{} {} device{} change (against {against})",
            paint.bold("plan:"),
            s.changes.len(),
            if s.changes.len() == 1 { "" } else { "s" }
        );
        staged::print_changes(&s.changes, args.verbose, &paint);
        match (&s.report, &s.verify_error) {
            (Some(r), _) if r.violated() || args.verbose => print!("{}", r.human()),
            (Some(_), _) => println!("verify: {}", paint.green("proven")),
            (None, Some(e)) => println!("verify: not run: {e}"),
            (None, None) => {}
        }
    }
    Ok(match (&s.report, &s.verify_error) {
        (Some(r), _) if r.violated() => Outcome::ProgramErrors,
        (None, Some(e)) => Outcome::InputError(
            format!("the verifier cannot check these artifacts: {e}"),
            Some("see specs/invariants.md §5 for what it models".into()),
        ),
        _ => Outcome::Ok,
    })
}
