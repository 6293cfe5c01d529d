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
        staged: s
            .staged
            .as_ref()
            .map_or(serde_json::Value::Null, |st| st.json(args.verbose)),
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
    /// The staged change instead of the direct one (`super::stages`:
    /// JSON, null when the change is made at once).
    pub staged: serde_json::Value,
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
            "staged": v.staged,
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
        if !v.staged.is_null() {
            print_stages(&v.staged, verbose, &paint);
            if verbose {
                println!("the change made at once:");
                if let Some(r) = &v.report_text {
                    print!("{r}");
                }
            }
            match v.verdict {
                Verdict::Proven => println!(
                    "verify: {} (each stage against the one before)",
                    paint.green("proven, staged")
                ),
                other => println!("verify: staged change {}", other.as_str()),
            }
        } else {
            match (&v.report_text, &v.verify_error) {
                (Some(r), _) if violated || verbose => print!("{r}"),
                (Some(_), _) => println!("verify: {}", paint.green("proven")),
                (None, Some(e)) => println!("verify: not run: {e}"),
                (None, None) => {}
            }
        }
    }
    if !v.staged.is_null() {
        return match v.verdict {
            Verdict::Proven => Outcome::Ok,
            Verdict::Violated => Outcome::ProgramErrors,
            _ => Outcome::InputError(
                "the verifier cannot check a stage of the staged change".into(),
                Some("`netc plan -v` shows each stage and why".into()),
            ),
        };
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

/// The stages of a staged change (its JSON, [`super::stages::StagedChange::json`]).
pub fn print_stages(st: &serde_json::Value, verbose: bool, paint: &Paint) {
    let vips = st["vips"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default();
    println!(
        "{} changing {vips} at once would move established connections on a switch, which\n        \
         chooses by the hash alone (AFF-2); the change goes through the SMuxes, which keep\n        \
         their connections, in stages (Duet §2.5):",
        paint.bold("staged:")
    );
    for s in st["stages"].as_array().into_iter().flatten() {
        let devices = s["devices"].as_object().map_or(0, |d| d.len());
        let verdict = s["verdict"].as_str().unwrap_or("?");
        let verdict = if verdict == "proven" {
            paint.green(verdict)
        } else {
            paint.red(verdict)
        };
        println!(
            "  {}. {:<9} {:<60} {devices:>3} device{}  verify {verdict}",
            s["stage"],
            s["name"].as_str().unwrap_or(""),
            s["what"].as_str().unwrap_or(""),
            if devices == 1 { "" } else { "s" },
        );
        if s["drain_after"].as_bool() == Some(true) {
            println!("     then wait --drain: connections the SMuxes pinned before this stage end");
        }
        if let Some(e) = s["verify_error"].as_str() {
            println!("     not verified: {e}");
        }
        let violated = s["verdict"].as_str() == Some("violated");
        if verbose || violated {
            print_stage_detail(s, verbose, paint);
        }
    }
}

/// One stage's device changes (with `verbose`) and the verdicts that
/// are not proven.
fn print_stage_detail(s: &serde_json::Value, verbose: bool, paint: &Paint) {
    if verbose {
        if let Some(d) = s["devices"].as_object() {
            for (device, c) in d {
                println!(
                    "       {device}  {} {}",
                    paint.green(&format!("+{}", c["added"])),
                    paint.red(&format!("-{}", c["removed"]))
                );
            }
        }
    }
    for v in s["report"]["verdicts"].as_array().into_iter().flatten() {
        if v["status"].as_str() == Some("violated") {
            println!(
                "     VIOLATED {} {}",
                v["invariant"].as_str().unwrap_or(""),
                v["detail"].as_str().unwrap_or("")
            );
            for c in v["counterexamples"].as_array().into_iter().flatten() {
                println!("       {}", c["summary"].as_str().unwrap_or(""));
            }
        }
    }
}
