//! `POST /v1/apply`: the daemon's apply, made at once or staged.
//!
//! Expects the session locked at the store's latest generation
//! (`api::current`). A change is verified through the gate `netc apply`
//! runs (`super::candidate`); refused, it leaves the session, the store and
//! the delta stream as they were. A change whose only violations are AFF-2
//! remaps on switches is staged as `netc apply` stages it
//! (`commands::stages`, Duet §2.5): the three stages — withdraw the VIPs to
//! the SMuxes, change their DIPs there, return them to the switches — are
//! verified first, all of them, and then each is made as its own warm
//! change: verified again against the generation before it, pushed,
//! committed with the note `stage K/3 (...)`, and streamed as its own
//! deltas. The *change* stage is committed only after `drain` seconds
//! (default 300); a daemon stopped during the wait leaves the store at the
//! *withdraw* stage, and the next apply goes on from there. A stage that
//! fails stops the change; the store holds the stage before it.

use super::api::{
    bad_intent, change_json, current, delta_json, file_changes, flag, intent_of, warm_error,
    ApiError, Daemon, Reply, Shared,
};
use super::candidate::{base_outputs, candidate_from, verdict_of, waivers_of, Candidate};
use super::devices::{self, Rolled};
use super::warm::{Change, IntentText, Warm};
use crate::commands::staged::changes_json;
use crate::commands::stages::{self, StagedChange};
use crate::store::{DeviceOutput, IntentFile, NewGeneration, Store};
use netc_verify::report::Waiver;
use serde_json::{json, Value as Json};
use std::time::Duration;

/// What an accepted apply did, read back after the session kept it.
struct Applied {
    id: i64,
    committed: bool,
    gen: NewGeneration,
    cand: Candidate,
    rolled: Option<Rolled>,
}

/// What [`accept`] decided about a change.
enum Accepted {
    Done(Box<Applied>),
    /// Not made: it must be staged.
    Stage(StagedChange),
}

/// How a change is to be made: the request's options, and per stage.
struct How {
    verify: bool,
    force: bool,
    note: String,
    actor: String,
    waivers: Vec<Waiver>,
    /// Whether a change that needs staging is staged (the direct change).
    may_stage: bool,
    /// Wait this long after the push, before the commit.
    drain: Option<Duration>,
}

/// `"drain"`: seconds the *change* stage waits before it is committed.
const DEFAULT_DRAIN: Duration = Duration::from_secs(300);

pub(super) fn apply(shared: &Shared, body: &Json) -> Reply {
    let mut how = How {
        verify: flag(body, "verify", true)?,
        force: flag(body, "force", false)?,
        note: body
            .get("note")
            .and_then(Json::as_str)
            .unwrap_or("")
            .to_string(),
        actor: body
            .get("actor")
            .and_then(Json::as_str)
            .unwrap_or("netc serve")
            .to_string(),
        // each waiver names this request's `actor` (waivers_of reads it too)
        waivers: waivers_of(body)?,
        may_stage: true,
        drain: None,
    };
    let drain = match body.get("drain") {
        None => DEFAULT_DRAIN,
        Some(v) => Duration::from_secs(v.as_u64().ok_or_else(|| {
            ApiError::new(400, "bad_request", "`drain` must be a number of seconds")
                .hint("e.g. {\"drain\": 300} (the default)")
        })?),
    };
    let mut guard = current(shared)?;
    let d = &mut *guard;
    // the daemon's applies are one at a time already (the session lock); this
    // one also keeps a `netc apply` on the same state directory out
    let _lock = crate::store::ApplyLock::take(d.store.dir()).map_err(|e| {
        let hint = e.hint().unwrap_or_default();
        ApiError::new(409, "apply_running", e.to_string()).hint(hint)
    })?;
    let files = intent_of(body, shared.intent_dir.as_deref())?.ok_or_else(|| {
        ApiError::new(400, "bad_request", "nothing to apply").hint("send `files` or `paths`")
    })?;
    let base = d.generation;
    // a plan names its base: applying it after the base moved is refused
    if let Some(planned) = body.get("base") {
        let planned = planned.as_i64().ok_or_else(|| {
            ApiError::new(400, "bad_request", "`base` must be a generation number")
        })?;
        if planned != base {
            return Err(ApiError::new(
                409,
                "base_moved",
                format!(
                    "the plan was made against generation {planned}, but the devices now hold generation {base}"
                ),
            )
            .detail(json!({"planned_base": planned, "base": base}))
            .hint("plan again (`netc plan --server URL`), review the new plan, then apply it"));
        }
    }
    match change(shared, d, files.clone(), &how)? {
        Made::Done(reply) => Ok(reply),
        Made::Stage(staged) => {
            how.may_stage = false;
            apply_staged(shared, d, files, staged, how, drain)
        }
    }
}

enum Made {
    Done(Json),
    Stage(StagedChange),
}

/// One warm change to `files`, accepted (verified, pushed, committed) or
/// not kept; on success the session, `d` and the delta stream move on.
fn change(
    shared: &Shared,
    d: &mut Daemon,
    files: Vec<IntentText>,
    how: &How,
) -> Result<Made, ApiError> {
    let base = d.generation;
    let Daemon {
        warm,
        store,
        outputs,
        ..
    } = d;
    let (change, outcome) = warm
        .change(files, |w, ch| {
            if !ch.findings.is_empty() {
                return (false, Err(bad_intent(ch)));
            }
            let a = accept(shared, (w, ch), store, outputs, base, how);
            (matches!(a, Ok(Accepted::Done(_))), a)
        })
        .map_err(warm_error)?;
    let Applied {
        id,
        committed,
        gen,
        cand,
        rolled,
    } = match outcome? {
        Accepted::Done(a) => *a,
        Accepted::Stage(s) => return Ok(Made::Stage(s)),
    };
    let changes = file_changes(outputs, &gen.outputs);
    let not_pushed = not_pushed(&gen, rolled.is_some());
    *outputs = gen.outputs;
    d.generation = id;
    shared.deltas.append(
        change
            .devices
            .iter()
            .map(|x| delta_json(x, id, &cand.devices))
            .collect(),
    );
    let pushed = rolled.as_ref().map_or(json!([]), Rolled::pushed_json);
    shared.log.event(
        "applied",
        json!({"generation": id, "committed": committed, "devices_changed": change.devices.len(),
               "pushed": pushed.as_array().map_or(0, Vec::len), "forced": gen.forced}),
    );
    Ok(Made::Done(json!({
        "generation": id,
        "committed": committed,
        "base": base,
        "change": change_json(&change),
        "changes": changes,
        "devices": changes_json(&cand.devices, true),
        "pushed": pushed,
        "not_pushed": not_pushed,
        "push": shared.devices.describe(),
        "interrupted": rolled.as_ref().map_or(Json::Null, Rolled::interrupted_json),
        "verdict": verdict_of(&cand, how.verify).as_str(),
        "forced": gen.forced,
        "report": cand.report,
        "report_text": cand.report_text,
        "verify_error": cand.verify_error,
        "deltas": {"last": shared.deltas.last()},
    })))
}

/// The stages of `staged`, verified already as a whole (refused, with the
/// stages' reports, when one is not proven), made one after the other.
fn apply_staged(
    shared: &Shared,
    d: &mut Daemon,
    files: Vec<IntentText>,
    staged: StagedChange,
    mut how: How,
    drain: Duration,
) -> Reply {
    let plan = staged.json(true);
    if staged.verdict() != crate::store::Verdict::Proven {
        return Err(ApiError::new(
            422,
            "violation",
            "refused: the verifier found a violation in a stage of the staged change; nothing was pushed",
        )
        .detail(json!({
            "refused": "the verifier found a violation in a stage of the staged change",
            "verdict": staged.verdict().as_str(),
            "staged": plan,
        }))
        .hint("each stage's report is under `staged`; fix the intent, or accept the remap (`accept`)"));
    }
    let base = d.generation;
    let vips = staged.vips.clone();
    let note = std::mem::take(&mut how.note);
    let intents = [
        with_withdrawn(d.warm.files().to_vec(), &vips),
        with_withdrawn(files.clone(), &vips),
        files,
    ];
    let n = staged.stages.len();
    let mut done = Vec::new();
    for (i, (stage, intent)) in staged.stages.iter().zip(intents).enumerate() {
        // an apply stopped during the drain left the store at stage 1: the
        // session holds that stage already, and the change goes on from it
        if i + 1 < n && d.warm.files() == intent.as_slice() {
            done.push(
                json!({"stage": i + 1, "name": stage.name, "what": stage.what, "applied": null,
                             "held_already": true}),
            );
            continue;
        }
        let what = format!("stage {}/{n} ({}): {}", i + 1, stage.name, stage.what);
        how.note = match (i + 1 == n, note.is_empty()) {
            (true, false) => format!("{note}; {what}"),
            _ => what,
        };
        how.drain = stage.drain_after.then_some(drain);
        match change(shared, d, intent, &how) {
            Ok(Made::Done(reply)) => done.push(json!({
                "stage": i + 1, "name": stage.name, "what": stage.what, "applied": reply,
            })),
            Ok(Made::Stage(_)) => unreachable!("a stage is never staged again (may_stage is off)"),
            Err(mut e) => {
                e.message = format!("stage {}/{n} ({}): {}", i + 1, stage.name, e.message);
                e.hint = Some(format!(
                    "the staged change stopped at stage {}/{n}; the store holds the stage before it \
                     (generation {}): apply again to go on from there",
                    i + 1,
                    d.generation
                ));
                return Err(e);
            }
        }
    }
    let last = done
        .last()
        .map(|s| s["applied"].clone())
        .unwrap_or(Json::Null);
    let mut reply = last;
    reply["base"] = json!(base);
    reply["staged"] = json!({
        "vips": vips.iter().map(ToString::to_string).collect::<Vec<_>>(),
        "verdict": staged.verdict().as_str(),
        "stages": done,
    });
    Ok(reply)
}

/// `files` with the `vip_withdrawn` facts of a stage (`stages::with_withdrawn`).
fn with_withdrawn(
    files: Vec<IntentText>,
    vips: &std::collections::BTreeSet<std::net::Ipv4Addr>,
) -> Vec<IntentText> {
    let files = files
        .into_iter()
        .map(|f| IntentFile::new(&f.name, f.text))
        .collect();
    stages::with_withdrawn(files, vips)
        .into_iter()
        .map(IntentText::from)
        .collect()
}

/// Devices (and target kinds) of the generation that no route reached, as
/// `netc apply` lists them (every device when the daemon does not push).
fn not_pushed(gen: &NewGeneration, pushing: bool) -> Vec<String> {
    let mut v: Vec<String> = gen
        .outputs
        .iter()
        .filter(|o| !pushing || !o.pushed)
        .map(|o| format!("{} ({})", o.device, o.kind))
        .collect();
    v.dedup();
    v
}

/// With the session in its new state: verify (refuse as `netc apply`
/// does), push to the devices, commit. An `Err` means the session goes back.
fn accept(
    shared: &Shared,
    (w, ch): (&Warm, &Change),
    store: &mut Store,
    outputs: &[DeviceOutput],
    base: i64,
    how: &How,
) -> Result<Accepted, ApiError> {
    let (run_verifier, force, waivers) = (how.verify, how.force, &how.waivers[..]);
    let cand = candidate_from(w, ch, outputs, store, base, run_verifier, waivers)?;
    if how.may_stage && !force {
        if let Some(change) = cand.staged_change(w, store, outputs, base, waivers)? {
            return Ok(Accepted::Stage(change));
        }
    }
    let refused = cand.refused(run_verifier);
    if let (Some(why), false) = (&refused, force) {
        return Err(ApiError::new(
            422,
            "violation",
            format!("refused: {why}; nothing was pushed"),
        )
        .detail(json!({
            "refused": why,
            "report": cand.report,
            "report_text": cand.report_text,
            "verify_error": cand.verify_error,
            "verdict": verdict_of(&cand, run_verifier).as_str(),
            "devices": changes_json(&cand.devices, true),
        }))
        .hint(
            "fix the intent, or send \"force\": true (`--force`; recorded with the generation)",
        ));
    }
    let mut gen = cand.gen.clone();
    gen.verdict = Some(verdict_of(&cand, run_verifier));
    gen.forced = force && refused.is_some();
    gen.actor = how.actor.clone();
    gen.command = "netc serve: POST /v1/apply".into();
    gen.note = netc_verify::report::note_with_waivers(&how.note, &cand.accepted);
    let previous = base_outputs(outputs, base);
    let rolled = match devices::inventory(&shared.devices, store, w)? {
        Some(inv) => Some(devices::roll(
            store,
            &inv,
            &mut gen,
            previous,
            (base > 0).then_some(base),
        )?),
        None => None,
    };
    let same_routes = rolled.is_none()
        || store
            .generation(base)
            .is_ok_and(|g| g.inventory == gen.inventory);
    if ch.devices.is_empty() && base > 0 && same_routes && how.note.is_empty() {
        if rolled.is_some() {
            store.abort_apply().map_err(devices::store_error)?;
        }
        return Ok(Accepted::Done(Box::new(Applied {
            id: base,
            committed: false,
            gen,
            cand,
            rolled,
        })));
    }
    if let Some(d) = how.drain.filter(|d| !d.is_zero()) {
        // the connections the SMuxes pinned before this stage end first;
        // the stage is committed after the wait (as `netc apply --drain`)
        shared
            .log
            .event("draining", json!({"seconds": d.as_secs(), "base": base}));
        std::thread::sleep(d);
    }
    let id = store
        .commit_generation(&gen)
        .map_err(devices::store_error)?;
    Ok(Accepted::Done(Box::new(Applied {
        id,
        committed: true,
        gen,
        cand,
        rolled,
    })))
}
