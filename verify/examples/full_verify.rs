//! One full verification of an artifact directory, with its phases and peak RSS.
//!
//! Expects an artifact directory written by `netc compile` and the intent it
//! came from. The policy is read from the intent's *base facts* only
//! (parsed and checked against `rules/schema.ndl`; no rule is evaluated),
//! so the figures are the verifier's own — `netc verify --artifacts DIR
//! INTENT` also evaluates the whole intent for provenance, whose memory is
//! the compiler's (issue 8), not the verifier's. What it runs is exactly
//! [`netc_verify::verify`], the function `netc verify` calls.
//!
//! Prints one JSON object: wall time per step (load, policy, verify and its
//! phases), peak RSS after each step, the stats and every verdict (`--json
//! OUT` also writes it). Not a test: times are what this machine did.
//!
//! ```text
//! cargo run --release -p netc-verify --example full_verify -- \
//!     --artifacts OUT --intent l.ndl [--json OUT.json] [--vms N]
//! ```
//!
//! `--vms N` stops short of a verdict: it builds the model and traces only
//! the first N sending VMs (`checks::run_first`), to measure or profile the
//! path phase of a scenario too large to wait for. `--p4-only` runs only
//! the P4 switches' symbolic checks (the report phase's largest part).

use netc_compiler::value::Value;
use netc_verify::artifacts::{Artifacts, Row};
use netc_verify::policy::{Facts, Policy};
use netc_verify::{Input, NoProvenance};
use std::path::{Path, PathBuf};
use std::time::Instant;

struct Args {
    artifacts: PathBuf,
    intent: PathBuf,
    schema: PathBuf,
    json: Option<PathBuf>,
    /// Trace only this many sending VMs (no verdict).
    vms: Option<usize>,
    /// Run only the P4 switches' checks (no verdict).
    p4_only: bool,
}

fn args() -> Result<Args, String> {
    let usage =
        "usage: full_verify --artifacts DIR --intent FILE [--schema FILE] [--json OUT] [--vms N | --p4-only]";
    let mut a = Args {
        artifacts: PathBuf::new(),
        intent: PathBuf::new(),
        schema: PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../rules/schema.ndl")),
        json: None,
        vms: None,
        p4_only: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut value = || it.next().ok_or(format!("{k} needs a value; {usage}"));
        match k.as_str() {
            "--artifacts" => a.artifacts = value()?.into(),
            "--intent" => a.intent = value()?.into(),
            "--schema" => a.schema = value()?.into(),
            "--json" => a.json = Some(value()?.into()),
            "--p4-only" => a.p4_only = true,
            "--vms" => {
                let v = value()?;
                let n = v
                    .parse()
                    .map_err(|_| format!("--vms takes a number of VMs, not `{v}`; {usage}"))?;
                a.vms = Some(n);
            }
            _ => return Err(format!("unknown argument `{k}`; {usage}")),
        }
    }
    if a.artifacts.as_os_str().is_empty() || a.intent.as_os_str().is_empty() {
        return Err(usage.into());
    }
    Ok(a)
}

/// The intent's base facts, as the verifier's policy reads them.
fn base_facts(schema: &Path, intent: &Path) -> Result<Facts, String> {
    let compiled = netc_compiler::compile_files(&[schema.to_path_buf(), intent.to_path_buf()]);
    let plan = compiled.plan.as_ref().ok_or_else(|| {
        format!(
            "{}: the intent does not parse or check against {}",
            intent.display(),
            schema.display()
        )
    })?;
    let mut facts = Facts::new();
    for ((rel, row), span) in plan.facts.iter().zip(&plan.fact_spans) {
        let vals = row
            .iter()
            .map(|v| match v {
                Value::Symbol(s) => s.as_str().to_string(),
                other => other.to_string(),
            })
            .collect();
        let at = compiled.sources.location(*span);
        facts
            .entry(plan.relations[*rel].name.clone())
            .or_default()
            .push(Row { vals, at });
    }
    Ok(facts)
}

/// The process's peak resident set so far (VmHWM), in MB.
fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// Records one phase: its wall time since `t` and the peak RSS so far
/// (printed as it ends, so a long run shows its progress).
fn step(steps: &mut serde_json::Map<String, serde_json::Value>, name: &str, t: Instant) {
    let s = serde_json::json!({
        "seconds": t.elapsed().as_secs_f64(),
        "peak_rss_mb": peak_rss_mb(),
    });
    eprintln!("{name}: {s}");
    steps.insert(name.to_string(), s);
}

fn run() -> Result<(serde_json::Value, Option<PathBuf>), String> {
    let a = args()?;
    let mut steps = serde_json::Map::new();
    let t = Instant::now();
    let artifacts = Artifacts::load(&a.artifacts).map_err(|e| e.to_string())?;
    step(&mut steps, "load_artifacts", t);
    let t = Instant::now();
    let facts = base_facts(&a.schema, &a.intent)?;
    let policy = Policy::from_facts(&facts);
    drop(facts);
    step(&mut steps, "policy", t);
    if a.p4_only {
        let t = Instant::now();
        let sw =
            netc_verify::p4::invariants::check(&artifacts, &policy).map_err(|e| e.to_string())?;
        step(&mut steps, "p4_switches", t);
        return Ok((
            serde_json::json!({
                "artifacts": a.artifacts,
                "steps": steps,
                "switches": sw.switches,
                "outcomes": sw.outcomes,
                "counterexamples": sw.counterexamples.iter().map(|c| &c.invariant).collect::<Vec<_>>(),
                "peak_rss_mb": peak_rss_mb(),
            }),
            a.json,
        ));
    }
    if let Some(n) = a.vms {
        return Ok((prefix(&a, &artifacts, &policy, n, steps)?, a.json));
    }
    let t = Instant::now();
    let report = netc_verify::verify(&Input {
        artifacts: &artifacts,
        policy: &policy,
        against: None,
        provenance: &NoProvenance,
        limit: 3,
        accept: &[],
    })
    .map_err(|e| format!("cannot model the artifacts: {e}"))?;
    step(&mut steps, "verify", t);
    let verdicts: Vec<serde_json::Value> = report
        .verdicts
        .iter()
        .map(|v| {
            serde_json::json!({
                "invariant": v.invariant,
                "status": v.status,
                "violations": v.violations,
                "detail": v.detail,
            })
        })
        .collect();
    let out = serde_json::json!({
        "artifacts": a.artifacts,
        "intent": a.intent,
        "steps": steps,
        "stats": report.stats,
        "violated": report.violated(),
        "verdicts": verdicts,
        "peak_rss_mb": peak_rss_mb(),
    });
    Ok((out, a.json))
}

/// The model and the path phase for the first `n` sending VMs: no verdict.
fn prefix(
    a: &Args,
    artifacts: &Artifacts,
    policy: &Policy,
    n: usize,
    mut steps: serde_json::Map<String, serde_json::Value>,
) -> Result<serde_json::Value, String> {
    let t = Instant::now();
    let net = netc_verify::network::Network::build(artifacts, policy)
        .map_err(|e| format!("cannot model the artifacts: {e}"))?;
    step(&mut steps, "model", t);
    let t = Instant::now();
    let res = netc_verify::checks::run_first(&net, policy, 3, n);
    step(&mut steps, "paths_prefix", t);
    if std::env::var_os("NETC_VERIFY_CACHE_SIZES").is_some() {
        netc_verify::cache_sizes(&net);
    }
    let traced = n.min(policy.vms.len());
    Ok(serde_json::json!({
        "artifacts": a.artifacts,
        "intent": a.intent,
        "vms_traced": traced,
        "vms": policy.vms.len(),
        "steps": steps,
        "outcomes": res.outcomes,
        "pairs": res.pairs_checked,
        "violations": res.counts,
        "peak_rss_mb": peak_rss_mb(),
    }))
}

fn main() {
    match run() {
        Ok((out, json)) => {
            let text = serde_json::to_string_pretty(&out).unwrap_or_default();
            println!("{text}");
            if let Some(p) = json {
                if let Err(e) = std::fs::write(&p, text) {
                    eprintln!("error: cannot write `{}`: {e}", p.display());
                    std::process::exit(2);
                }
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    }
}
