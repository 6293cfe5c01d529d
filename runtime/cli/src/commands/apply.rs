//! `netc apply INTENT...`: plan → verify → push every device → commit.
//!
//! The steps, and what each guarantees:
//! 0. lock ([`ApplyLock`]): a second apply on the same state directory is
//!    refused at once (exit 2, naming the running one's pid and start), so
//!    no apply plans against a generation another is about to replace;
//! 1. stage ([`super::staged`]): compile, diff against the last generation,
//!    verify; a violation refuses (exit 1, nothing pushed) unless `--force`,
//!    which is recorded with the generation;
//! 2. journal ([`Store::begin_apply`]) before any device is touched; an
//!    earlier apply's journal means it was interrupted, and is reported;
//! 3. push ([`rollout::roll_out_phased`]): every device of the inventory, in
//!    the order PLAN-1 verified (a VM move: its new host, then its old host
//!    with a hairpin, then the rest, then the hairpin removed), each atomically, each to its COMPLETE intended state (reconcile), so a
//!    mix left by an interrupted apply converges; on a failure the devices
//!    already changed are put back to the last generation, nothing is
//!    committed, and the error names the device and the reason (exit 1);
//! 4. commit ([`Store::commit_generation`]): one transaction, which also
//!    clears the journal. Room for it is reserved before step 2
//!    ([`Reserve`]: a full disk refuses with nothing pushed); a commit that
//!    fails anyway puts every device back and names any it could not. When nothing changed (same artifacts, same
//!    routes), no generation is added.
//!
//! Devices come from `--inventory FILE`, or, without one, the local lab.
//! With `--server URL` the intent goes to a running `netc serve` instead
//! (`super::remote`), which does steps 1–4 with its own devices; what is
//! printed ([`Done`], [`FailedAt`]) is the same either way.

use super::staged::{self, Paint, Staged};
use super::Outcome;
use crate::rollout::entries::DeviceChange;
use crate::rollout::inventory::{Inventory, Target};
use crate::rollout::push::Pushed;
use crate::rollout::{self, Failure, ReadBack};
use crate::store::Verdict;
use crate::store::{ApplyLock, Journal, NewGeneration, Reserve, Store};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub struct ApplyArgs<'a> {
    pub intent: &'a [PathBuf],
    pub rules: Option<&'a Path>,
    pub state: Option<&'a Path>,
    pub inventory: Option<&'a Path>,
    pub force: bool,
    /// A staged change's wait before its VIPs return to the switches.
    pub drain: std::time::Duration,
    pub verbose: bool,
    pub json: bool,
    /// `--server URL`: apply through a running `netc serve`.
    pub server: Option<&'a str>,
    pub token_file: Option<&'a Path>,
    pub waivers: &'a staged::WaiverArgs,
}

pub fn run(args: ApplyArgs) -> Outcome {
    if let Some(url) = args.server {
        let r = super::remote::Remote {
            url,
            token_file: args.token_file,
            state: args.state,
        };
        return super::remote::apply(
            &r,
            args.intent,
            args.waivers,
            args.force,
            args.verbose,
            args.json,
        );
    }
    match run_inner(&args) {
        Ok(o) | Err(o) => o,
    }
}

fn run_inner(args: &ApplyArgs) -> Result<Outcome, Outcome> {
    let dir = staged::state_dir(args.state);
    // The lock is held until the commit: the plan and its verification are
    // made against the generation this apply will replace, which no one
    // else changes. An existing directory is locked first, so its store is
    // checked (an untrusted one refused before anything else) only while
    // no other apply can be creating it; a missing one is created only
    // once the inventory is known to be good.
    let early = if dir.exists() {
        let lock = ApplyLock::take(&dir)?;
        staged::existing_store(&dir)?;
        Some(lock)
    } else {
        None
    };
    let inventory = match args.inventory {
        Some(p) => Some(load_inventory(p)?),
        None => None,
    };
    let _lock = match early {
        Some(lock) => lock,
        None => ApplyLock::take(&dir)?,
    };
    let mut store = Store::open(&dir)?;
    let accept = args.waivers.waivers()?;
    let mut s = staged::stage_intent(args.intent, args.rules, Some(&store), &dir, &accept)?;
    staged::check_waivers(&s)?;
    hold_after_plan();
    let paint = Paint::stdout();
    if s.staged.is_some() && !args.force {
        let inventory = match inventory {
            Some(i) => i,
            None => default_inventory(&dir, &s)?,
        };
        let how = StagedRun {
            drain: args.drain,
            verbose: args.verbose,
            json: args.json,
            note: String::new(),
        };
        return apply_staged(&mut store, s, &inventory, &how, &paint);
    }
    let refused = match (&s.report, &s.verify_error) {
        (Some(r), _) if r.violated() => {
            if !args.json {
                print!("{}", r.human());
            }
            Some("the verifier found a violation".to_string())
        }
        (None, Some(e)) => Some(format!("the verifier cannot check these artifacts: {e}")),
        _ => None,
    };
    if let Some(why) = &refused {
        if !args.force {
            let devices = staged::changes_json(&s.changes, args.verbose);
            let report = staged::report_json(&s);
            return Err(print_refused(why, devices, s.verdict(), report, args.json));
        }
        eprintln!("warning: {why}; applying anyway (--force, recorded)");
    }
    let inventory = match inventory {
        Some(i) => i,
        None => default_inventory(&dir, &s)?,
    };
    s.gen.forced = args.force && refused.is_some();
    s.gen.verdict = Some(s.verdict());
    let note = staged::generation_note(&s, "");
    push_and_commit(
        &mut store,
        s,
        &inventory,
        note,
        args.verbose,
        args.json,
        &paint,
    )
}

/// `NETC_APPLY_HOLD_AFTER_PLAN=1` (tests): stop once planned and verified,
/// holding the apply lock, say so on stderr, and go on after a line on stdin.
fn hold_after_plan() {
    if std::env::var_os("NETC_APPLY_HOLD_AFTER_PLAN").is_some() {
        eprintln!("apply: holding after planning (press Enter to go on)");
        let mut line = String::new();
        let _ = std::io::stdin().read_line(&mut line);
    }
}

/// Prints a refusal by the verifier (exit 1; nothing was pushed).
pub fn print_refused(
    why: &str,
    devices: serde_json::Value,
    verdict: Verdict,
    report: serde_json::Value,
    json: bool,
) -> Outcome {
    if json {
        super::output::emit(
            serde_json::to_string_pretty(&serde_json::json!({
                "refused": why,
                "devices": devices,
                "verdict": verdict.as_str(),
                "report": report,
            }))
            .unwrap_or_default(),
        );
    }
    eprintln!("error: refused: {why}; nothing was pushed");
    eprintln!("   = hint: fix the intent (`netc plan -v` shows the change), or pass --force to apply anyway (recorded in the generation)");
    Outcome::ProgramErrors
}

/// Reads `--inventory FILE` (exit 2 at file:line:col on a mistake).
pub fn load_inventory(p: &Path) -> Result<Inventory, Outcome> {
    Inventory::load(p).map_err(|e| Outcome::InputError(e.to_string(), e.hint.clone()))
}

/// The devices when no inventory is given: the local lab (`crate::lab`),
/// one OVS bridge per host of the intent, started (or kept) under the state
/// directory; exit 2 saying exactly what is missing when OVS is not installed.
fn default_inventory(state: &Path, s: &Staged) -> Result<Inventory, Outcome> {
    let Some(ev) = &s.evaluated else {
        return Err(Outcome::InputError(
            "the local lab needs the evaluated intent".into(),
            Some("pass --inventory FILE".into()),
        ));
    };
    let topo = crate::lab::Topology::from_engine(&ev.plan, &ev.engine);
    let bridges = crate::lab::ensure(state, &topo).map_err(|e| {
        Outcome::InputError(
            format!("the local lab (no --inventory given): {e}"),
            Some(
                "or pass --inventory FILE to apply to your own devices (`netc apply --help`)"
                    .into(),
            ),
        )
    })?;
    Ok(Inventory::of_bridges(&bridges))
}

/// How [`apply_staged`] runs: the drain, the output, and a note for the
/// generation of the last stage (`rollback to N`).
pub struct StagedRun {
    pub drain: std::time::Duration,
    pub verbose: bool,
    pub json: bool,
    pub note: String,
}

/// A staged change (`super::stages`): each stage pushed and committed as
/// its own generation, against what the store holds after the stage
/// before; stage 2 is committed only after `--drain`. A stage that fails
/// puts its devices back to the stage before and stops.
pub fn apply_staged(
    store: &mut Store,
    mut s: Staged,
    inventory: &Inventory,
    args: &StagedRun,
    paint: &Paint,
) -> Result<Outcome, Outcome> {
    let Some(change) = s.staged.take() else {
        return Ok(Outcome::Ok);
    };
    if change.verdict() != Verdict::Proven {
        if !args.json {
            super::plan::print_stages(&change.json(args.verbose), args.verbose, paint);
        }
        let why = match change.verdict() {
            Verdict::Violated => "the verifier found a violation in a stage of the staged change",
            _ => "the verifier cannot check a stage of the staged change",
        };
        let devices = staged::changes_json(&s.changes, args.verbose);
        let mut report = staged::report_json(&s);
        report["staged"] = change.json(args.verbose);
        return Err(print_refused(
            why,
            devices,
            change.verdict(),
            report,
            args.json,
        ));
    }
    let n = change.stages.len();
    let mut done = Vec::new();
    for (i, stage) in change.stages.into_iter().enumerate() {
        let mut st = stage.staged;
        // the base is what the store holds now: the stage before, once committed
        st.base = store.last_applied()?;
        st.base_outputs = match &st.base {
            Some(b) => store.device_outputs(b.id)?,
            None => Vec::new(),
        };
        st.changes = crate::rollout::entries::changes(&st.base_outputs, &st.gen.outputs);
        st.gen.verdict = Some(st.verdict());
        if !args.json {
            println!("{} {}/{n}: {}", paint.bold("stage"), i + 1, stage.what);
        }
        // an apply interrupted during the drain left the store at stage 1:
        // the store's generation is that stage, and the next goes on from it
        if st.changes.is_empty() && i + 1 < n {
            if !args.json {
                println!(
                    "  the store holds this stage already (an earlier apply stopped after it)"
                );
            }
            continue;
        }
        let what = format!("stage {}/{n} ({}): {}", i + 1, stage.name, stage.what);
        let note = match (&args.note, i + 1 == n) {
            (extra, true) if !extra.is_empty() => format!("{extra}; {what}"),
            _ => what,
        };
        let note = staged::generation_note(&st, &note);
        let drain = stage.drain_after.then_some(args.drain);
        let r = push_and_commit_with(store, st, inventory, note, drain, args.json, |d| {
            if args.json {
                done.push(done_json(d, args.verbose));
            } else {
                print_done(d, args.verbose, false, paint);
            }
        });
        if let Err(o) = r {
            eprintln!(
                "   = the staged change stopped at stage {}/{n}; the store holds the stage before it: `netc apply` again resumes",
                i + 1
            );
            return Err(o);
        }
    }
    if args.json {
        super::output::emit(
            serde_json::to_string_pretty(&serde_json::json!({ "staged": done }))
                .unwrap_or_default(),
        );
    }
    Ok(Outcome::Ok)
}

/// Journal, push, commit (or put back): steps 2–4 of the module map, shared
/// with `rollback`.
pub fn push_and_commit(
    store: &mut Store,
    s: Staged,
    inv: &Inventory,
    note: String,
    verbose: bool,
    json: bool,
    paint: &Paint,
) -> Result<Outcome, Outcome> {
    push_and_commit_with(store, s, inv, note, None, json, |d| {
        print_done(d, verbose, json, paint)
    })
}

/// [`push_and_commit`], telling `report` what was done; with `drain`, the
/// generation is committed only after waiting that long once every device
/// holds it.
fn push_and_commit_with(
    store: &mut Store,
    mut s: Staged,
    inv: &Inventory,
    note: String,
    drain: Option<std::time::Duration>,
    json: bool,
    report: impl FnOnce(&Done),
) -> Result<Outcome, Outcome> {
    rollout::mark_pushed(&mut s.gen.outputs, inv);
    s.gen.actor = staged::actor();
    s.gen.command = staged::command_line();
    s.gen.note = note;
    s.gen.inventory = inv.to_toml();
    // room for the commit, before any device is touched: a full disk (or a
    // file size limit) refuses here, with nothing pushed
    let reserve = Reserve::take(store.dir(), s.gen.size())?;
    let interrupted = store.begin_apply(&Journal {
        pid: std::process::id(),
        started: now(),
        base: s.base.as_ref().map(|b| b.id),
        command: s.gen.command.clone(),
    })?;
    if let Some(j) = &interrupted {
        eprintln!(
            "note: an earlier apply (pid {}, started {}) was interrupted; devices may hold a mix of generations — pushing every device's full state",
            j.pid,
            crate::store::utc_text(j.started)
        );
    }
    let bar = if json {
        None
    } else {
        super::output::bar(inv.targets.len(), "pushing")
    };
    let phases = s.phases.as_ref();
    let result = rollout::roll_out_phased(inv, &s.gen.outputs, &s.base_outputs, phases, |t, _| {
        if let Some(b) = &bar {
            b.set_message(t.device.clone());
            b.inc(1);
        }
    });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let pushed = match result {
        Ok(p) => p,
        Err(f) => {
            // The journal stays when a device could not be put back: the
            // next apply then knows the devices may hold a mix.
            let cleared = f.not_restored.is_empty() && store.abort_apply().is_ok();
            return Err(print_failure(&FailedAt::of(&f, cleared), json));
        }
    };
    if let Some(d) = drain.filter(|d| !d.is_zero()) {
        eprintln!(
            "waiting {} s (--drain) for the connections the SMuxes pinned before this stage to end; \
             the stage is committed after the wait",
            d.as_secs()
        );
        std::thread::sleep(d);
    }
    let unchanged = s.base.as_ref().is_some_and(|b| {
        s.changes.is_empty()
            && b.inventory == s.gen.inventory
            && s.base_outputs == s.gen.outputs
            && s.gen.note.is_empty()
    });
    reserve.release();
    let id = if unchanged {
        store.abort_apply()?;
        None
    } else {
        match store.commit_generation(&s.gen) {
            Ok(id) => Some(id),
            Err(e) => return Err(commit_failed(store, e, inv, &s, &pushed, json)),
        }
    };
    let done = Done {
        generation: id,
        base: s.base.as_ref().map(|b| b.id),
        changes: &s.changes,
        pushed: pushed.iter().map(|(t, p)| PushedTo::of(t, p)).collect(),
        not_pushed: not_pushed(&s.gen),
        verdict: s.gen.verdict,
        forced: s.gen.forced,
        interrupted: interrupted.as_ref().map(|j| (j.pid, j.started)),
        report: staged::report_json(&s),
    };
    report(&done);
    Ok(Outcome::Ok)
}

/// The commit failed after every device took the new generation (the
/// disk filled up in between, say): the devices are put back to the
/// previous generation, and the error says which could not be (they hold
/// the generation the store does not have) and whether the journal is
/// cleared. Exit 2.
fn commit_failed(
    store: &mut Store,
    e: crate::store::StoreError,
    inv: &Inventory,
    s: &Staged,
    pushed: &[(Target, Pushed)],
    json: bool,
) -> Outcome {
    let mut restored = Vec::new();
    let mut not_restored = Vec::new();
    for (t, _) in pushed.iter().rev() {
        let back = rollout::carried(&s.base_outputs, t);
        match rollout::push::push(t, &back, &inv.defaults) {
            Ok(_) => restored.push(t.device.clone()),
            Err(err) => not_restored.push(err.to_string()),
        }
    }
    restored.reverse();
    let cleared = not_restored.is_empty() && store.abort_apply().is_ok();
    if json {
        super::output::emit(
            serde_json::to_string_pretty(&serde_json::json!({
                "error": {"exit": 2, "message": format!("the store could not commit the new generation: {e}"), "hint": e.hint()},
                "restored": restored,
                "not_restored": not_restored,
                "journal_cleared": cleared,
                "committed": false,
            }))
            .unwrap_or_default(),
        );
    }
    let mut hint = String::new();
    if !restored.is_empty() {
        hint += &format!(
            "put back to the previous generation: {}; ",
            restored.join(", ")
        );
    }
    for n in &not_restored {
        hint += &format!(
            "could NOT be put back (it holds the generation the store does not have): {n}; "
        );
    }
    hint += if cleared {
        "nothing was committed and every device holds the previous generation"
    } else {
        "nothing was committed; the journal is kept (or could not be cleared): the next apply re-pushes every device"
    };
    if let Some(h) = e.hint() {
        hint += &format!("; {h}");
    }
    Outcome::InputError(
        format!("the store could not commit the new generation: {e}"),
        Some(hint),
    )
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// A rollout that stopped at a device, as printed.
pub struct FailedAt {
    pub device: String,
    pub kind: String,
    pub address: String,
    pub reason: String,
    pub restored: Vec<String>,
    pub not_restored: Vec<String>,
    /// Whether the journal was cleared (every changed device was put back).
    pub cleared: bool,
    /// What reading the failed device back showed, when its state was
    /// unknown (a timeout); one line.
    pub read_back: Option<String>,
}

impl FailedAt {
    fn of(f: &Failure, cleared: bool) -> FailedAt {
        FailedAt {
            device: f.error.device.clone(),
            kind: f.error.kind.to_string(),
            address: f.error.address.clone(),
            reason: f.error.reason.clone(),
            restored: f.restored.clone(),
            not_restored: f.not_restored.iter().map(|e| e.to_string()).collect(),
            cleared,
            read_back: f
                .read_back
                .as_ref()
                .map(|r| read_back_text(&f.error.device, r)),
        }
    }
}

/// What reading a device back after a timeout showed, in words.
pub fn read_back_text(device: &str, r: &ReadBack) -> String {
    match r {
        ReadBack::Unchanged => format!(
            "`{device}` was read back after the failure: it holds the previous generation (the transaction did not reach it)"
        ),
        ReadBack::PutBack(n) => format!(
            "`{device}` was read back after the failure: it had committed the new generation's changes anyway ({n} entries), and was put back to the previous generation"
        ),
        ReadBack::Unknown => format!(
            "`{device}` could not be read back after the failure: it may hold the new generation; its state is unknown"
        ),
    }
}

/// Prints a failed rollout (exit 1).
pub fn print_failure(f: &FailedAt, json: bool) -> Outcome {
    if json {
        let v = serde_json::json!({
            "error": {
                "device": f.device,
                "kind": f.kind,
                "address": f.address,
                "reason": f.reason,
            },
            "restored": f.restored,
            "not_restored": f.not_restored,
            "read_back": f.read_back,
            "journal_cleared": f.cleared,
            "committed": false,
        });
        super::output::emit(serde_json::to_string_pretty(&v).unwrap_or_default());
    }
    // As `PushError` displays itself.
    eprintln!(
        "error: device `{}` ({} at {}): {}",
        f.device, f.kind, f.address, f.reason
    );
    if !f.restored.is_empty() {
        eprintln!(
            "   = back at the previous generation: {}",
            f.restored.join(", ")
        );
    }
    if let Some(r) = &f.read_back {
        eprintln!("   = {r}");
    }
    for e in &f.not_restored {
        eprintln!("   = could NOT be put back: {e}");
    }
    if f.cleared {
        // every device it changed is back, the failed one read back if unsure
        eprintln!("   = nothing was committed: no generation was recorded and every device holds the previous one");
    } else {
        eprintln!(
            "   = no generation was recorded, but the devices that could not be put back may hold the new one's entries; the journal is kept: the next apply re-pushes every device"
        );
    }
    Outcome::ProgramErrors
}

/// One device a rollout reached.
pub struct PushedTo {
    pub device: String,
    pub route: String,
    pub address: String,
    pub changes: usize,
}

impl PushedTo {
    fn of(t: &Target, p: &Pushed) -> PushedTo {
        PushedTo {
            device: t.device.clone(),
            route: t.route.kind().to_string(),
            address: t.route.address(),
            changes: p.changes,
        }
    }
}

/// What an apply did, as printed.
pub struct Done<'a> {
    /// The new generation (none: nothing changed).
    pub generation: Option<i64>,
    pub base: Option<i64>,
    pub changes: &'a BTreeMap<String, DeviceChange>,
    pub pushed: Vec<PushedTo>,
    /// `device (kind)` of outputs no route reached.
    pub not_pushed: Vec<String>,
    pub verdict: Option<Verdict>,
    pub forced: bool,
    /// An earlier interrupted apply: (pid, started).
    pub interrupted: Option<(u32, i64)>,
    /// The gate's report (JSON; null when the verifier did not run).
    pub report: serde_json::Value,
}

fn not_pushed(g: &NewGeneration) -> Vec<String> {
    let mut v: Vec<String> = g
        .outputs
        .iter()
        .filter(|o| !o.pushed)
        .map(|o| format!("{} ({})", o.device, o.kind))
        .collect();
    v.dedup();
    v
}

/// A finished apply as JSON.
fn done_json(d: &Done, verbose: bool) -> serde_json::Value {
    serde_json::json!({
            "generation": d.generation,
            "base": d.base,
            "devices": staged::changes_json(d.changes, verbose),
            "pushed": d.pushed.iter().map(|p| serde_json::json!({
                "device": p.device, "route": p.route, "address": p.address, "changes": p.changes,
            })).collect::<Vec<_>>(),
            "not_pushed": d.not_pushed,
            "verdict": d.verdict.map(|v| v.as_str()),
            "forced": d.forced,
            "interrupted": d.interrupted.map(|(pid, started)| serde_json::json!({"pid": pid, "started": started})),
            "report": d.report,
    })
}

/// Prints a finished apply (human or JSON).
pub fn print_done(d: &Done, verbose: bool, json: bool, paint: &Paint) {
    if json {
        let v = done_json(d, verbose);
        super::output::emit(serde_json::to_string_pretty(&v).unwrap_or_default());
        return;
    }
    staged::print_changes(d.changes, verbose, paint);
    let changed: usize = d.pushed.iter().map(|p| p.changes).sum();
    match d.generation {
        Some(id) => println!(
            "{} generation {id}: {} device{} pushed ({changed} entries changed), verify {}{}",
            paint.bold("applied"),
            d.pushed.len(),
            if d.pushed.len() == 1 { "" } else { "s" },
            d.verdict.map_or("not-run", |v| v.as_str()),
            if d.forced { " (forced)" } else { "" }
        ),
        None => println!(
            "{} devices hold generation {} ({changed} drifted entries corrected)",
            paint.bold("no changes:"),
            d.base.unwrap_or(0)
        ),
    }
    if !d.not_pushed.is_empty() {
        println!(
            "  not pushed (no inventory entry reaches them): {}",
            d.not_pushed.join(", ")
        );
    }
}
