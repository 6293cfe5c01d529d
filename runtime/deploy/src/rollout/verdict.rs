//! The gate: the verifier on exactly the artifact set that will be pushed.
//!
//! Every path that decides whether artifacts may reach devices — `netc
//! verify INTENT`, `plan`, `apply`, `rollback`, `serve`'s plan/apply/verify
//! and the REPL's `:whatif` — calls [`gate`] with the candidate generation
//! (its artifacts, relations and intent facts, in memory) and, when there
//! is one, the generation the devices hold now. `netc verify --artifacts
//! DIR` loads a directory the user gave and calls [`verify_loaded`], the
//! same verification. There is no other way to a verdict.
//!
//! Guarantees:
//! - the artifacts verified are the candidate's, complete: they are written
//!   once under the keep directory and loaded from there in full (the P4
//!   requests included) before any check runs, so no check can read an
//!   empty or changed directory;
//! - the policy comes from the candidate's intent facts, and counterexamples
//!   cite the intent `file:line` behind them (a [`Provenance`] built from
//!   the rules when they are at hand, else from the stored facts);
//! - every `file:line` a report cites exists when the command ends: an
//!   artifact set the report cites is kept (`KEEP/candidate-<sha>/`,
//!   `KEEP/gen-<N>/`, where KEEP is `STATE/verified/`); one it does not cite
//!   is removed. Only the newest [`KEPT`] sets are kept.
//!
//! [`gate`] also returns the rollout order PLAN-1 checked, which `netc
//! apply` then follows ([`super::roll_out_phased`]).

use crate::store::{IntentFact, NewGeneration, Store};
use netc_verify::artifacts::{Artifacts, Row};
use netc_verify::plan::migration::Phases;
use netc_verify::policy::{Facts, Policy};
use netc_verify::report::{Report, Waiver};
use netc_verify::{Input, Provenance};
use std::collections::BTreeSet;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

/// Artifact sets kept for their citations, newest first; older ones go.
pub const KEPT: usize = 8;

/// The directory that holds cited artifact sets: `STATE/verified/`, or,
/// when the state directory cannot be written (a read-only mount, another
/// user's store), one of the system's temporary directory named after the
/// state directory — so `plan` and `verify` still work and what they cite
/// still exists, while nothing in the store changes.
pub fn keep_dir(state: &Path) -> PathBuf {
    let dir = state.join("verified");
    if writable(&dir) {
        return dir;
    }
    let name = std::fs::canonicalize(state).unwrap_or_else(|_| state.to_path_buf());
    let id = crate::store::sha256_hex(name.as_os_str().as_encoded_bytes());
    // SAFETY: getuid has no preconditions and cannot fail.
    let uid = unsafe { libc::getuid() };
    std::env::temp_dir()
        .join(format!("netc-verified-{uid}"))
        .join(&id[..12])
}

/// Whether `dir` (or, while it does not exist, its nearest existing
/// ancestor) may be written by this process: access(2) answers for the
/// mount (read-only) as well as for the modes, root included.
fn writable(dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let mut at = dir;
    loop {
        if at.as_os_str().is_empty() {
            at = Path::new(".");
        }
        if at.exists() {
            let Ok(c) = std::ffi::CString::new(at.as_os_str().as_bytes()) else {
                return false;
            };
            // SAFETY: `c` is a valid NUL-terminated path for the call's duration.
            return unsafe { libc::access(c.as_ptr(), libc::W_OK) } == 0;
        }
        match at.parent() {
            Some(p) => at = p,
            None => return false,
        }
    }
}

/// The generation the devices hold now, to verify the change from.
pub enum Against<'a> {
    /// A generation of the store.
    Stored(&'a Store, i64),
    /// An artifact directory the user gave.
    Dir(&'a Path),
    /// A candidate not yet applied (a stage of a staged change).
    Candidate(&'a NewGeneration),
}

/// What the gate decided, and on what.
pub struct Gate {
    pub report: Report,
    /// The rollout order PLAN-1 checked (from empty without a base).
    pub phases: Phases,
    /// The VIPs and TIPs whose AFF-2 violations no waiver accepts: each
    /// held by a switch (HMux) that chooses by the hash alone, so the
    /// change must move them through the SMuxes (`super::stages`).
    pub remapped_on_switches: BTreeSet<Ipv4Addr>,
}

/// Why the gate could not decide: an artifact set that could not be
/// written or read, or artifacts outside what the verifier models. Never
/// a verdict.
#[derive(Debug, thiserror::Error)]
pub enum GateError {
    #[error("cannot write the artifacts to verify under `{dir}`: {source}")]
    Write {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("{message}")]
    Store {
        id: i64,
        message: String,
        hint: Option<String>,
    },
    #[error("cannot read the artifacts: {0}")]
    Load(netc_verify::artifacts::ArtifactError),
    #[error("cannot model the artifacts: {0}")]
    Model(netc_verify::VerifyError),
}

impl GateError {
    /// What to do about it.
    pub fn hint(&self) -> Option<String> {
        match self {
            GateError::Load(e) => e.hint.clone(),
            GateError::Model(_) => Some(
                "the verifier models the OVS/P4/Mux subset of specs/targets.md; see specs/invariants.md §5"
                    .into(),
            ),
            GateError::Store { id, hint, .. } => hint.clone().or_else(|| {
                Some(format!("generation {id} of the store: `netc history` lists them"))
            }),
            _ => None,
        }
    }
}

/// The policy a generation's intent facts state.
pub fn policy_of(gen: &NewGeneration) -> Policy {
    policy_of_facts(&gen.facts)
}

/// The policy intent facts state.
pub fn policy_of_facts(intent: &[IntentFact]) -> Policy {
    let mut facts = Facts::new();
    for f in intent {
        facts.entry(f.relation.clone()).or_default().push(Row {
            vals: f.row.split('\t').map(str::to_string).collect(),
            at: f.at.clone(),
        });
    }
    Policy::from_facts(&facts)
}

/// Verifies `gen` (and the change from `against`), keeping under `keep`
/// the artifact sets the report cites. `provenance` defaults to the
/// generation's own intent facts.
pub fn gate(
    gen: &NewGeneration,
    against: Option<Against>,
    provenance: Option<&dyn Provenance>,
    keep: &Path,
    limit: usize,
    accept: &[Waiver],
) -> Result<Gate, GateError> {
    let dir = keep.join(format!("candidate-{}", content_id(gen)));
    // a state directory made only to hold a set that is not kept goes again
    let state = keep
        .parent()
        .filter(|p| !p.as_os_str().is_empty() && !p.exists());
    write_set(&dir, |d| super::candidate::write_dir(gen, d))?;
    let mut written = vec![dir.clone()];
    let result = (|| {
        let old = match against {
            None => None,
            Some(Against::Dir(d)) => Some(Artifacts::load(d).map_err(GateError::Load)?),
            Some(Against::Stored(store, id)) => {
                let (d, a) = stored_set(store, id, keep)?;
                written.push(d);
                Some(a)
            }
            Some(Against::Candidate(g)) => {
                let d = keep.join(format!("candidate-{}", content_id(g)));
                if d != dir {
                    write_set(&d, |d| super::candidate::write_dir(g, d))?;
                    written.push(d.clone());
                }
                Some(Artifacts::load(&d).map_err(GateError::Load)?)
            }
        };
        let artifacts = Artifacts::load(&dir).map_err(GateError::Load)?;
        let policy = policy_of(gen);
        let from_facts;
        let provenance = match provenance {
            Some(p) => p,
            None => {
                from_facts = super::provenance::IntentProvenance::from_facts(&gen.facts);
                &from_facts
            }
        };
        let report = verify_loaded(&artifacts, &policy, old.as_ref(), provenance, limit, accept)?;
        let phases = Phases::plan(old.as_ref().unwrap_or(&Artifacts::default()), &artifacts);
        let remapped = match &old {
            Some(old) if aff2_violated(&report) => remapped_on_switches(old, &artifacts, accept),
            _ => BTreeSet::new(),
        };
        Ok((report, phases, remapped))
    })();
    let kept = keep_cited(result.as_ref().ok().map(|(r, _, _)| r), written, keep);
    if let (Some(state), true) = (state, kept.is_empty()) {
        let _ = std::fs::remove_dir(state);
    }
    let (report, phases, remapped_on_switches) = result?;
    Ok(Gate {
        report,
        phases,
        remapped_on_switches,
    })
}

fn aff2_violated(r: &Report) -> bool {
    r.verdicts
        .iter()
        .any(|v| v.invariant == "AFF-2" && v.status == netc_verify::report::Status::Violated)
}

/// Every endpoint address with an AFF-2 violation no waiver in `accept`
/// names (the report lists only a few counterexamples).
fn remapped_on_switches(old: &Artifacts, new: &Artifacts, accept: &[Waiver]) -> BTreeSet<Ipv4Addr> {
    let (cxs, _) = netc_verify::tables::aff2(old, new);
    cxs.iter()
        .filter_map(|c| c.key.as_deref())
        .filter(|k| !accept.iter().any(|w| w.invariant == "AFF-2" && w.key == *k))
        .filter_map(|k| k.split(':').next()?.parse().ok())
        .collect()
}

/// Generation `id` of `store` written as an artifact set under `keep`
/// (`gen-<id>/`) and loaded: its `file:line`s name files a user can open.
pub fn stored_set(store: &Store, id: i64, keep: &Path) -> Result<(PathBuf, Artifacts), GateError> {
    let d = keep.join(format!("gen-{id}"));
    // a generation the store does not hold is named as such, with its hint
    store.generation(id).map_err(|e| GateError::Store {
        id,
        message: e.to_string(),
        hint: e.hint(),
    })?;
    // a generation whose content fails its hashes is a store error, not a write error
    let mut refused = None;
    let written = write_set(&d, |d| {
        store.write_artifact_dir(id, d).map_err(|e| {
            let io = std::io::Error::other(e.to_string());
            if matches!(e, crate::store::StoreError::Tampered { .. }) {
                refused = Some(e);
            }
            io
        })
    });
    if let Some(e) = refused {
        return Err(GateError::Store {
            id,
            message: e.to_string(),
            hint: e.hint(),
        });
    }
    written?;
    let a = Artifacts::load(&d).map_err(GateError::Load);
    if a.is_err() {
        let _ = std::fs::remove_dir_all(&d);
    }
    Ok((d, a?))
}

/// Of the artifact sets `written` under `keep`, keeps those `report`
/// cites and removes the rest (and all but the newest [`KEPT`] sets).
pub fn keep_cited(report: Option<&Report>, written: Vec<PathBuf>, keep: &Path) -> Vec<PathBuf> {
    let cited = report.map(Report::json).unwrap_or_default();
    let mut kept = Vec::new();
    for d in written {
        if cited.contains(&d.display().to_string()) {
            kept.push(d);
        } else {
            let _ = std::fs::remove_dir_all(&d);
        }
    }
    prune(keep, &kept);
    kept
}

/// The one verification every path runs, on artifacts already loaded.
pub fn verify_loaded(
    artifacts: &Artifacts,
    policy: &Policy,
    against: Option<&Artifacts>,
    provenance: &dyn Provenance,
    limit: usize,
    accept: &[Waiver],
) -> Result<Report, GateError> {
    netc_verify::verify(&Input {
        artifacts,
        policy,
        against,
        provenance,
        limit,
        accept,
    })
    .map_err(GateError::Model)
}

/// A short name for a candidate's contents: equal contents, equal name.
/// Hashed piece by piece: the artifacts are never copied into one text.
fn content_id(gen: &NewGeneration) -> String {
    use sha2::Digest;
    let mut h = sha2::Sha256::new();
    for (name, body) in &gen.relations {
        for part in [name.as_str(), body.as_str()] {
            h.update(part.as_bytes());
            h.update([0]);
        }
    }
    for o in &gen.outputs {
        for part in [o.path.as_str(), o.text.as_str()] {
            h.update(part.as_bytes());
            h.update([0]);
        }
    }
    for f in &gen.facts {
        h.update(f.at.as_bytes());
        h.update([0]);
    }
    h.finalize()[..6]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Writes an artifact set into `dir` through a temporary sibling renamed
/// into place, so `dir` is either complete or absent.
fn write_set(
    dir: &Path,
    write: impl FnOnce(&Path) -> std::io::Result<()>,
) -> Result<(), GateError> {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let parent = dir.parent().unwrap_or(Path::new("."));
    let err = |source| GateError::Write {
        dir: parent.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(parent).map_err(err)?;
    let tmp = parent.join(format!(".tmp-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    if let Err(e) = write(&tmp) {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(err(e));
    }
    let _ = std::fs::remove_dir_all(dir);
    std::fs::rename(&tmp, dir).map_err(|e| {
        let _ = std::fs::remove_dir_all(&tmp);
        err(e)
    })
}

/// Removes all but the newest [`KEPT`] artifact sets under `keep` (never
/// one of `now`, just cited).
fn prune(keep: &Path, now: &[PathBuf]) {
    let Ok(rd) = std::fs::read_dir(keep) else {
        return;
    };
    let mut sets: Vec<(std::time::SystemTime, PathBuf)> = rd
        .filter_map(|e| e.ok())
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.starts_with("candidate-") || name.starts_with("gen-")
        })
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect();
    sets.sort_by_key(|s| std::cmp::Reverse(s.0));
    for (_, p) in sets.into_iter().skip(KEPT) {
        if !now.contains(&p) {
            let _ = std::fs::remove_dir_all(p);
        }
    }
    // nothing kept: leave no empty directory behind
    let _ = std::fs::remove_dir(keep);
}
