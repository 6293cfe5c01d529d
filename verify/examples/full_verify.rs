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
//!     --artifacts OUT --intent l.ndl [--json OUT.json]
//! ```

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
}

fn args() -> Result<Args, String> {
    let usage = "usage: full_verify --artifacts DIR --intent FILE [--schema FILE] [--json OUT]";
    let mut a = Args {
        artifacts: PathBuf::new(),
        intent: PathBuf::new(),
        schema: PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../rules/schema.ndl")),
        json: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut value = || it.next().ok_or(format!("{k} needs a value; {usage}"));
        match k.as_str() {
            "--artifacts" => a.artifacts = value()?.into(),
            "--intent" => a.intent = value()?.into(),
            "--schema" => a.schema = value()?.into(),
            "--json" => a.json = Some(value()?.into()),
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

fn run() -> Result<(serde_json::Value, Option<PathBuf>), String> {
    let a = args()?;
    let mut steps = serde_json::Map::new();
    let mut step = |name: &str, t: Instant| {
        let s = serde_json::json!({
            "seconds": t.elapsed().as_secs_f64(),
            "peak_rss_mb": peak_rss_mb(),
        });
        eprintln!("{name}: {s}");
        steps.insert(name.to_string(), s);
    };
    let t = Instant::now();
    let artifacts = Artifacts::load(&a.artifacts).map_err(|e| e.to_string())?;
    step("load_artifacts", t);
    let t = Instant::now();
    let facts = base_facts(&a.schema, &a.intent)?;
    let policy = Policy::from_facts(&facts);
    drop(facts);
    step("policy", t);
    let t = Instant::now();
    let report = netc_verify::verify(&Input {
        artifacts: &artifacts,
        policy: &policy,
        against: None,
        provenance: &NoProvenance,
        limit: 3,
    })
    .map_err(|e| format!("cannot model the artifacts: {e}"))?;
    step("verify", t);
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
