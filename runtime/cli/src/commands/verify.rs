//! `netc verify`: prove the invariants on the artifacts that will be pushed.
//!
//! Two inputs: `netc verify INTENT...` compiles the intent and verifies the
//! result through the gate `plan` and `apply` run
//! (`rollout::verdict::gate`: the same artifacts, policy and verdict;
//! artifact sets a report cites are kept under `STATE/verified/`);
//! `netc verify --artifacts DIR [INTENT...]` verifies an artifact directory
//! (as `netc compile` wrote it, possibly edited by hand) — against the
//! intent's facts when intent files are given, else against the rows the
//! host agents receive. `--against OLD` also checks AFF-2 and PLAN-1 for
//! the change from OLD: an artifact directory, or a generation number of
//! the store (`--state DIR`, default `.netc`), rebuilt exactly as `netc
//! compile` wrote it. `--since OLD` verifies OLD first and then re-checks
//! only what the change to the verified directory can affect
//! (`netc_verify::incremental`); the report is the same as a full one.
//!
//! Output: a human report on stdout (or `--json`), `--junit FILE` for CI,
//! `--pcap FILE` the counterexample packets. Exit 0 proven, 1 violated,
//! 2 input errors (unreadable or malformed artifacts, bad intent).

use super::{evaluate_intent, EvaluatedIntent, Outcome};
use crate::rollout::candidate;
use crate::rollout::provenance::IntentProvenance;
use crate::rollout::verdict::{self, Against, GateError};
use netc_verify::artifacts::Artifacts;
use netc_verify::incremental::Verifier;
use netc_verify::policy::Policy;
use netc_verify::report::Report;
use netc_verify::Provenance;
use std::path::{Path, PathBuf};

pub struct VerifyArgs<'a> {
    pub intent: &'a [PathBuf],
    pub artifacts: Option<&'a Path>,
    pub against: Option<&'a Path>,
    /// A previous generation: verify it, then re-verify incrementally.
    pub since: Option<&'a Path>,
    pub since_intent: &'a [PathBuf],
    /// The store of `--against GEN`.
    pub state: Option<&'a Path>,
    pub json: bool,
    pub junit: Option<&'a Path>,
    pub pcap: Option<&'a Path>,
    pub rules: Option<&'a Path>,
    pub limit: usize,
}

/// Evaluates the intent; program errors and findings are input errors
/// here (exit 2): there is nothing to verify.
pub(super) fn evaluate(
    intent: &[PathBuf],
    rules: Option<&Path>,
) -> Result<EvaluatedIntent, Outcome> {
    let ev = evaluate_intent(intent, rules, 1).map_err(|o| match o {
        Outcome::ProgramErrors => {
            Outcome::InputError("the intent has errors (see above)".into(), None)
        }
        other => other,
    })?;
    if !ev.findings.is_empty() {
        super::output::hold_findings(&ev.findings, &ev.compilation.sources);
        for f in &ev.findings {
            eprint!("{}", f.render(&ev.compilation.sources));
        }
        return Err(Outcome::InputError(
            format!(
                "{} problem(s) in the intent; nothing to verify",
                ev.findings.len()
            ),
            Some("fix the intent first: `netc check --intent` shows the same problems".into()),
        ));
    }
    Ok(ev)
}

fn load(dir: &Path) -> Result<Artifacts, Outcome> {
    Artifacts::load(dir).map_err(|e| Outcome::InputError(e.to_string(), e.hint.clone()))
}

fn gate_err(e: GateError) -> Outcome {
    let hint = e.hint();
    Outcome::InputError(e.to_string(), hint)
}

/// `--against`: an artifact directory, or a generation number of the store
/// (`Some(id)`: read from the store at `state`).
fn against_generation(arg: &Path) -> Option<i64> {
    let gen = arg.to_str().and_then(|t| t.parse::<i64>().ok());
    gen.filter(|_| !arg.exists())
}

fn open_store(dir: &Path, id: i64) -> Result<crate::store::Store, Outcome> {
    crate::store::Store::open_existing(dir).map_err(|e| {
        let hint = e.hint().or_else(|| {
            Some(format!(
                "`--against {id}` reads generation {id} of the store in `{}`; `netc history` lists them (or pass an artifact directory)",
                dir.display()
            ))
        });
        Outcome::InputError(e.to_string(), hint)
    })
}

pub fn run(args: VerifyArgs) -> Outcome {
    match run_inner(&args) {
        Ok(o) | Err(o) => o,
    }
}

fn run_inner(args: &VerifyArgs) -> Result<Outcome, Outcome> {
    if args.artifacts.is_none() && args.intent.is_empty() {
        return Err(Outcome::InputError(
            "nothing to verify".into(),
            Some("give intent files (`netc verify INTENT...`) or `--artifacts DIR`".into()),
        ));
    }
    if args.since.is_some() && args.artifacts.is_none() {
        return Err(Outcome::InputError(
            "`--since OLD` re-verifies an artifact directory".into(),
            Some("`netc verify --artifacts NEW --since OLD [INTENT...]`".into()),
        ));
    }
    let state = super::staged::state_dir(args.state);
    let keep = verdict::keep_dir(&state);
    let stages = super::output::Stages::start("verify", "compiling the intent");
    let ev = if args.intent.is_empty() {
        None
    } else {
        Some(evaluate(args.intent, args.rules)?)
    };
    let names: Vec<String> = args
        .intent
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    let provenance = ev
        .as_ref()
        .map(|ev| IntentProvenance::new(&ev.compilation.sources, &ev.plan, &names));
    stages.set("modelling the artifacts and proving the invariants");
    let store = match args.against.and_then(against_generation) {
        Some(id) => Some((open_store(&state, id)?, id)),
        None => None,
    };
    let report = match (args.artifacts, &ev, &provenance) {
        // the gate, exactly as `plan`/`apply` run it
        (None, Some(ev), Some(prov)) => {
            let gen = candidate::build(args.intent, ev).map_err(|e| {
                Outcome::InputError(format!("cannot render the artifacts: {e}"), None)
            })?;
            let against = match (&store, args.against) {
                (Some((s, id)), _) => Some(Against::Stored(s, *id)),
                (None, Some(d)) => Some(Against::Dir(d)),
                (None, None) => None,
            };
            verdict::gate(&gen, against, Some(prov), &keep, args.limit, &[])
                .map_err(gate_err)?
                .report
        }
        (Some(dir), _, _) => {
            let artifacts = load(dir)?;
            let policy = match &ev {
                Some(ev) => verdict::policy_of_facts(&candidate::intent_facts(args.intent, ev)),
                None => Policy::from_artifacts(&artifacts),
            };
            let mut written = Vec::new();
            let against = match (&store, args.against) {
                (Some((s, id)), _) => {
                    let (d, a) = verdict::stored_set(s, *id, &keep).map_err(gate_err)?;
                    written.push(d);
                    Some(a)
                }
                (None, Some(d)) => Some(load(d)?),
                (None, None) => None,
            };
            let none = netc_verify::NoProvenance;
            let provenance: &dyn Provenance = match &provenance {
                Some(p) => p,
                None => &none,
            };
            let report = match args.since {
                None => verdict::verify_loaded(
                    &artifacts,
                    &policy,
                    against.as_ref(),
                    provenance,
                    args.limit,
                    &[],
                ),
                Some(old_dir) => since(
                    args,
                    old_dir,
                    artifacts,
                    policy,
                    provenance,
                    against.as_ref(),
                ),
            };
            verdict::keep_cited(report.as_ref().ok(), written, &keep);
            report.map_err(gate_err)?
        }
        (None, _, _) => unreachable!("checked above"),
    };
    drop(stages);
    if args.json {
        super::output::emit(report.json());
    } else {
        print!("{}", report.human());
    }
    let write = |p: &Path, bytes: &[u8]| {
        std::fs::write(p, bytes)
            .map_err(|e| Outcome::InputError(format!("cannot write `{}`: {e}", p.display()), None))
    };
    if let Some(p) = args.junit {
        write(p, report.junit().as_bytes())?;
    }
    if let Some(p) = args.pcap {
        write(p, &netc_verify::packet::pcap(&report.frames()))?;
    }
    Ok(if report.violated() {
        Outcome::ProgramErrors
    } else {
        Outcome::Ok
    })
}

/// `--since OLD`: verifies OLD, then re-checks only what the change to the
/// verified directory can affect; the report equals a full one.
fn since(
    args: &VerifyArgs,
    old_dir: &Path,
    artifacts: Artifacts,
    policy: Policy,
    provenance: &dyn Provenance,
    against: Option<&Artifacts>,
) -> Result<Report, GateError> {
    // cited from the new directory, so only what differs is re-checked
    let mut old = Artifacts::load(old_dir).map_err(GateError::Load)?;
    old.rebase(&artifacts.dir);
    let old_policy = if !args.since_intent.is_empty() {
        let ev = evaluate(args.since_intent, args.rules).map_err(|_| {
            GateError::Load(netc_verify::artifacts::ArtifactError {
                at: args
                    .since_intent
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(" "),
                message: "the --since-intent files do not evaluate".into(),
                hint: Some("`netc check --intent FILE` shows why".into()),
            })
        })?;
        verdict::policy_of_facts(&candidate::intent_facts(args.since_intent, &ev))
    } else if !args.intent.is_empty() {
        policy.clone()
    } else {
        Policy::from_artifacts(&old)
    };
    let mut v = Verifier::new(old, old_policy, args.limit).map_err(GateError::Model)?;
    let up = v.update(artifacts, policy).map_err(GateError::Model)?;
    let mut r = v.report(provenance, against).map_err(GateError::Model)?;
    r.stats.incremental = Some(up);
    Ok(r)
}
