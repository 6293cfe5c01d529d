//! `netc plan INTENT...`: what `netc apply` would change, and whether the
//! verifier accepts it — touching no device.
//!
//! Compiles the intent, diffs every device's artifacts against the last
//! applied generation of the store (`--state DIR`, default `.netc/`; none yet
//! = everything is an add), prints per-device `+adds -removes` (the entries
//! with `-v`), and runs the verifier (AFF-2 against the last generation).
//! Exit 0 proven, 1 bad intent or a violation, 2 usage/input/state errors.
//! Never creates the state directory. With `--server URL` a running `netc
//! serve` plans against its own state (`super::remote`) and the answer is
//! printed by the same [`print_plan`].

use super::staged::{self, Paint};
use super::Outcome;
use crate::rollout::entries::DeviceChange;
use crate::store::Verdict;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub struct PlanArgs<'a> {
    pub intent: &'a [PathBuf],
    pub rules: Option<&'a Path>,
    pub state: Option<&'a Path>,
    pub verbose: bool,
    pub json: bool,
    /// `--server URL`: plan through a running `netc serve`.
    pub server: Option<&'a str>,
    pub token_file: Option<&'a Path>,
    pub waivers: &'a staged::WaiverArgs,
}

pub fn run(args: PlanArgs) -> Outcome {
    if let Some(url) = args.server {
        let r = super::remote::Remote {
            url,
            token_file: args.token_file,
            state: args.state,
        };
        return super::remote::plan(&r, args.intent, args.waivers, args.verbose, args.json);
    }
    match run_inner(&args) {
        Ok(o) | Err(o) => o,
    }
}

fn run_inner(args: &PlanArgs) -> Result<Outcome, Outcome> {
    let dir = staged::state_dir(args.state);
    let store = staged::existing_store(&dir)?;
    let accept = args.waivers.waivers()?;
    let s = staged::stage_intent(args.intent, args.rules, store.as_ref(), &dir, &accept)?;
    staged::check_waivers(&s)?;
    let view = PlanView {
        base: s.base.as_ref().map(|b| b.id),
        changes: &s.changes,
        verdict: s.verdict(),
        verify_error: s.verify_error.clone(),
        report: staged::report_json(&s),
        report_text: s.report.as_ref().map(|r| r.human()),
    };
    Ok(print_plan(&view, args.verbose, args.json))
}

/// A plan, as printed.
pub struct PlanView<'a> {
    /// The generation planned against (none: nothing applied yet).
    pub base: Option<i64>,
    pub changes: &'a BTreeMap<String, DeviceChange>,
    pub verdict: Verdict,
    /// Why the verifier could not run.
    pub verify_error: Option<String>,
    /// The verifier's report (JSON; null when it did not run) and its text.
    pub report: serde_json::Value,
    pub report_text: Option<String>,
}

/// Prints a plan; the outcome is the plan's exit code.
pub fn print_plan(v: &PlanView, verbose: bool, json: bool) -> Outcome {
    let violated = v.verdict == Verdict::Violated;
    if json {
        let out = serde_json::json!({
            "base": v.base,
            "devices": staged::changes_json(v.changes, verbose),
            "verdict": v.verdict.as_str(),
            "verify_error": v.verify_error,
            "report": v.report,
        });
        super::output::emit(serde_json::to_string_pretty(&out).unwrap_or_default());
    } else {
        let paint = Paint::stdout();
        let against = v.base.map_or("nothing applied yet".to_string(), |b| {
            format!("generation {b}")
        });
        println!(
            "{} {} device{} change (against {against})",
            paint.bold("plan:"),
            v.changes.len(),
            if v.changes.len() == 1 { "" } else { "s" }
        );
        staged::print_changes(v.changes, verbose, &paint);
        match (&v.report_text, &v.verify_error) {
            (Some(r), _) if violated || verbose => print!("{r}"),
            (Some(_), _) => println!("verify: {}", paint.green("proven")),
            (None, Some(e)) => println!("verify: not run: {e}"),
            (None, None) => {}
        }
    }
    match (&v.report_text, &v.verify_error) {
        _ if violated => Outcome::ProgramErrors,
        (None, Some(e)) => Outcome::InputError(
            format!("the verifier cannot check these artifacts: {e}"),
            Some("see specs/invariants.md §5 for what it models".into()),
        ),
        _ => Outcome::Ok,
    }
}
