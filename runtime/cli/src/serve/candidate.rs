//! A candidate state of the daemon's session: what a plan or an apply
//! found about it, through the gate `netc plan` runs.
//!
//! Expects: the session in its new state (inside `Warm::change`), the
//! store and the generation the devices hold. Guarantees: the candidate's
//! artifacts are rendered (only the devices the change touched), diffed
//! against the base generation as `netc plan` diffs them, and verified by
//! `rollout::verdict::gate` (AFF-2 and PLAN-1 against the base, the
//! request's waivers applied; a waiver that accepts nothing is refused).

use super::api::{internal, ApiError};
use super::record;
use super::warm::{Change, Warm};
use crate::commands::staged::Staged;
use crate::commands::stages::{self, StagedChange};
use crate::commands::Outcome;
use crate::rollout::entries::{self, DeviceChange};
use crate::store::{DeviceOutput, NewGeneration, Store, Verdict};
use netc_verify::report::{Report, Waiver};
use serde_json::Value as Json;
use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;

/// What a plan or an apply found about a candidate state (computed while the
/// session holds it).
pub(super) struct Candidate {
    pub(super) gen: NewGeneration,
    pub(super) report: Option<Json>,
    /// The report as `netc plan`/`netc apply` print it.
    pub(super) report_text: Option<String>,
    pub(super) violated: bool,
    pub(super) verify_error: Option<String>,
    /// Per device, the entries added and removed against the base generation.
    pub(super) devices: BTreeMap<String, DeviceChange>,
    /// The waivers given, each with the violations it accepted.
    pub(super) accepted: Vec<(Waiver, usize)>,
    /// The gate's report itself (what `report` renders).
    pub(super) verified: Option<Report>,
    /// VIPs/TIPs whose connections the change remaps on a switch (AFF-2,
    /// not accepted): what a staged change moves through the SMuxes.
    pub(super) remapped_on_switches: BTreeSet<Ipv4Addr>,
}

impl Candidate {
    /// Why `netc apply` would refuse it (a violation, or artifacts the
    /// verifier cannot check), when the verifier ran.
    pub(super) fn refused(&self, ran: bool) -> Option<String> {
        match (ran, &self.verify_error) {
            (false, _) => None,
            _ if self.violated => Some("the verifier found a violation".into()),
            (true, Some(e)) => Some(format!("the verifier cannot check these artifacts: {e}")),
            _ => None,
        }
    }

    /// The staged change `netc plan` would make instead of this one
    /// (`commands::stages`: withdraw, change, return, each verified
    /// against the stage before), when this one violates nothing but
    /// AFF-2 on switches. `None`: the change is made as it is.
    pub(super) fn staged_change(
        &self,
        w: &Warm,
        store: &Store,
        outputs: &[DeviceOutput],
        base: i64,
        waivers: &[Waiver],
    ) -> Result<Option<StagedChange>, ApiError> {
        if self.remapped_on_switches.is_empty() || base == 0 {
            return Ok(None);
        }
        let direct = Staged {
            gen: self.gen.clone(),
            base: Some(
                store
                    .generation(base)
                    .map_err(super::devices::store_error)?,
            ),
            base_outputs: base_outputs(outputs, base).to_vec(),
            changes: self.devices.clone(),
            report: self.verified.clone(),
            verify_error: self.verify_error.clone(),
            evaluated: None,
            phases: None,
            remapped_on_switches: self.remapped_on_switches.clone(),
            staged: None,
        };
        let state =
            std::fs::canonicalize(store.dir()).unwrap_or_else(|_| store.dir().to_path_buf());
        stages::plan(&direct, w.rules(), Some(store), &state, waivers).map_err(|o| match o {
            Outcome::InputError(m, h) => {
                let e = ApiError::new(422, "staging", m);
                match h {
                    Some(h) => e.hint(h),
                    None => e,
                }
            }
            _ => internal(
                "a stage of the staged change could not be evaluated (see the daemon's log)",
            ),
        })
    }
}

pub(super) fn verdict_of(c: &Candidate, ran: bool) -> Verdict {
    match (ran, &c.report) {
        (false, _) | (_, None) => Verdict::NotRun,
        (true, Some(_)) if c.violated => Verdict::Violated,
        _ => Verdict::Proven,
    }
}

/// `"accept": ["AFF-2:KEY", ...]` with `"reason"`: violations of a
/// change's invariants accepted for this change (as `--accept`).
pub(super) fn waivers_of(body: &Json) -> Result<Vec<Waiver>, ApiError> {
    let Some(list) = body.get("accept") else {
        return Ok(Vec::new());
    };
    let bad = |m: String| {
        ApiError::new(400, "bad_request", m)
            .hint("{\"accept\": [\"AFF-2:203.0.113.10:80/6\"], \"reason\": \"why\"}")
    };
    let items = list
        .as_array()
        .ok_or_else(|| bad("`accept` must be a list of INVARIANT:KEY strings".into()))?;
    let reason = body
        .get("reason")
        .and_then(Json::as_str)
        .filter(|r| !r.trim().is_empty())
        .ok_or_else(|| bad("`accept` needs `reason`: why the violation is acceptable".into()))?;
    let actor = body
        .get("actor")
        .and_then(Json::as_str)
        .unwrap_or("netc serve");
    items
        .iter()
        .map(|i| {
            let t = i
                .as_str()
                .ok_or_else(|| bad("`accept` must be a list of INVARIANT:KEY strings".into()))?;
            Waiver::parse(t, reason, actor).map_err(bad)
        })
        .collect()
}

/// The outputs the devices hold at `base` (none before the first generation).
pub(super) fn base_outputs(outputs: &[DeviceOutput], base: i64) -> &[DeviceOutput] {
    if base > 0 {
        outputs
    } else {
        &[]
    }
}

/// The session's new state as a candidate generation, diffed and verified
/// as `netc plan` does (`rollout::verdict`, AFF-2 against `base`).
pub(super) fn candidate_from(
    w: &Warm,
    change: &Change,
    outputs: &[DeviceOutput],
    store: &Store,
    base: i64,
    run_verifier: bool,
    waivers: &[Waiver],
) -> Result<Candidate, ApiError> {
    let touched: BTreeSet<String> = change.devices.iter().map(|x| x.device.clone()).collect();
    let previous = (!change.full).then_some((outputs, &touched));
    let gen = record::generation(w, previous).map_err(internal)?;
    let devices = entries::changes(base_outputs(outputs, base), &gen.outputs);
    let (mut report, mut report_text, mut violated, mut verify_error) = (None, None, false, None);
    let mut accepted = Vec::new();
    let (mut verified, mut remapped_on_switches) = (None, BTreeSet::new());
    if run_verifier {
        // the gate, as `netc plan` runs it: AFF-2/PLAN-1 against `base`
        let against = (base > 0).then_some(crate::rollout::verdict::Against::Stored(store, base));
        let state =
            std::fs::canonicalize(store.dir()).unwrap_or_else(|_| store.dir().to_path_buf());
        let names: Vec<String> = w.files().iter().map(|f| f.name.clone()).collect();
        let provenance =
            crate::rollout::provenance::IntentProvenance::new(w.sources(), w.plan(), &names);
        let result = crate::rollout::verdict::gate(
            &gen,
            against,
            Some(&provenance),
            &crate::rollout::verdict::keep_dir(&state),
            3,
            waivers,
        );
        match result {
            Ok(g) => {
                if let Some(w) = g.report.unused_waiver() {
                    return Err(ApiError::new(
                        422,
                        "waiver_unused",
                        format!("`{}` accepts no violation of this change", w.name()),
                    )
                    .hint("drop it; a plan's report gives each violation's key"));
                }
                accepted = g.report.accepted.clone();
                violated = g.report.violated();
                report = serde_json::from_str(&g.report.json()).ok();
                report_text = Some(g.report.human());
                remapped_on_switches = g.remapped_on_switches;
                verified = Some(g.report);
            }
            Err(e) => verify_error = Some(e.to_string()),
        }
    }
    Ok(Candidate {
        gen,
        report,
        report_text,
        violated,
        verify_error,
        devices,
        accepted,
        verified,
        remapped_on_switches,
    })
}
