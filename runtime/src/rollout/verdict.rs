//! The verifier on a candidate generation, as `netc verify` runs it.
//!
//! Expects: a candidate (its artifacts and intent facts) and, optionally,
//! the artifact directory of the generation the devices hold now (for
//! AFF-2). Guarantees: the report is the one `netc verify INTENT...` prints
//! for the same intent (policy from the intent facts), without the rule
//! citations (`netc verify` adds those); the temporary directory is removed.
//! [`verify_planned`] also returns the rollout order PLAN-1 checked, which
//! `netc apply` then follows ([`super::roll_out_phased`]).

use crate::store::NewGeneration;
use netc_verify::artifacts::{Artifacts, Row};
use netc_verify::plan::migration::Phases;
use netc_verify::policy::{Facts, Policy};
use netc_verify::report::Report;
use netc_verify::Input;
use std::path::Path;

/// Verifies `g`; `against` is the previous generation's artifact directory.
/// `Err` is a message: the artifacts are outside what the verifier models.
pub fn verify(g: &NewGeneration, against: Option<&Path>, limit: usize) -> Result<Report, String> {
    verify_planned(g, against, limit).map(|(r, _)| r)
}

/// [`verify`], and the rollout order of the change that PLAN-1 checked
/// (`netc_verify::plan::migration::Phases`; without `against`, every device
/// from empty: no moves, one phase).
pub fn verify_planned(
    g: &NewGeneration,
    against: Option<&Path>,
    limit: usize,
) -> Result<(Report, Phases), String> {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("netc-plan-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let loaded = super::candidate::write_dir(g, &dir)
        .map_err(|e| format!("cannot write {}: {e}", dir.display()))
        .and_then(|_| Artifacts::load(&dir).map_err(|e| e.to_string()));
    let _ = std::fs::remove_dir_all(&dir);
    let artifacts = loaded?;
    let old = against
        .map(|d| Artifacts::load(d).map_err(|e| e.to_string()))
        .transpose()?;
    let mut facts = Facts::new();
    for f in &g.facts {
        facts.entry(f.relation.clone()).or_default().push(Row {
            vals: f.row.split('\t').map(str::to_string).collect(),
            at: f.at.clone(),
        });
    }
    let policy = Policy::from_facts(&facts);
    let report = netc_verify::verify(&Input {
        artifacts: &artifacts,
        policy: &policy,
        against: old.as_ref(),
        provenance: &netc_verify::NoProvenance,
        limit,
    })
    .map_err(|e| format!("cannot model the artifacts: {e}"))?;
    let phases = Phases::plan(old.as_ref().unwrap_or(&Artifacts::default()), &artifacts);
    Ok((report, phases))
}
