//! `netc rollback [GEN]`: re-push a stored generation, recorded as a new one.
//!
//! GEN defaults to the generation before the last. Its stored artifacts are
//! exactly what was pushed then; they are verified again (AFF-2 against the
//! last generation), then pushed and committed as `netc apply` does
//! ([`super::apply::push_and_commit`]), with the note `rollback to GEN`; a
//! change back that moves connections on a switch is staged through the
//! SMuxes exactly as `apply` stages it (`super::stages`).
//! Devices: `--inventory FILE`, else the routes the last generation recorded.
//! Exit 0 done, 1 refused or a device failed (devices put back), 2
//! usage/input/state errors (no such generation, untrusted store).

use super::apply;
use super::staged::{self, Paint};
use super::Outcome;
use crate::rollout::inventory::Inventory;
use crate::store::{ApplyLock, NewGeneration, Store};
use std::path::Path;

pub struct RollbackArgs<'a> {
    pub generation: Option<i64>,
    pub state: Option<&'a Path>,
    pub inventory: Option<&'a Path>,
    pub force: bool,
    /// A staged rollback's wait before its VIPs return to the switches.
    pub drain: std::time::Duration,
    pub verbose: bool,
    pub json: bool,
    pub waivers: &'a staged::WaiverArgs,
}

pub fn run(args: RollbackArgs) -> Outcome {
    match run_inner(&args) {
        Ok(o) | Err(o) => o,
    }
}

fn run_inner(args: &RollbackArgs) -> Result<Outcome, Outcome> {
    let dir = staged::state_dir(args.state);
    // as `netc apply`: held from before staging until the commit
    if !dir.join(crate::store::DB_FILE).exists() {
        return Err(crate::store::StoreError::NoState { dir }.into());
    }
    let _lock = ApplyLock::take(&dir)?;
    let mut store = Store::open_existing(&dir)?;
    let history = store.history()?;
    let Some(last) = history.last() else {
        return Err(Outcome::InputError(
            format!("nothing was applied with state `{}`", dir.display()),
            Some("run `netc apply INTENT...` first".into()),
        ));
    };
    let target = match args.generation {
        Some(g) => store.generation(g)?.id,
        None => match history.len() {
            n if n >= 2 => history[n - 2].id,
            _ => {
                return Err(Outcome::InputError(
                    format!(
                        "only generation {} exists: nothing to roll back to",
                        last.id
                    ),
                    Some(
                        "give a generation: `netc rollback GEN` (`netc history` lists them)".into(),
                    ),
                ))
            }
        },
    };
    let inventory = match args.inventory {
        Some(p) => apply::load_inventory(p)?,
        None => Inventory::parse(
            &last.inventory,
            &format!("the inventory recorded with generation {}", last.id),
            Path::new("/"),
        )
        .map_err(|e| Outcome::InputError(e.to_string(), Some("pass --inventory FILE".into())))?,
    };
    staged::note_unhashed(&store, target)?;
    let gen = NewGeneration {
        files: store.intent_files(target)?,
        facts: store.intent_facts(target)?,
        outputs: store.device_outputs(target)?,
        relations: store.relation_files(target)?,
        ..NewGeneration::default()
    };
    let accept = args.waivers.waivers()?;
    let mut s = staged::stage(gen, Some(&store), &dir, None, &accept)?;
    staged::check_waivers(&s)?;
    if !s.remapped_on_switches.is_empty() {
        // the same rules as `apply`: a remap on a switch goes through the SMuxes
        s.staged = super::stages::plan(&s, None, Some(&store), &dir, &accept)?;
    }
    if s.staged.is_some() && !args.force {
        let inventory = lab_inventory(&dir, inventory, args, &s)?;
        let how = apply::StagedRun {
            drain: args.drain,
            verbose: args.verbose,
            json: args.json,
            note: format!("rollback to {target}"),
        };
        return apply::apply_staged(&mut store, s, &inventory, &how, &Paint::stdout());
    }
    let violated = s.report.as_ref().is_none_or(|r| r.violated());
    if violated && !args.force {
        if let Some(r) = &s.report {
            if args.json {
                let report = staged::report_json(&s);
                let devices = staged::changes_json(&s.changes, args.verbose);
                super::output::emit(
                    serde_json::to_string_pretty(&serde_json::json!({
                        "refused": refusal(target, last.id, &s),
                        "devices": devices,
                        "verdict": s.verdict().as_str(),
                        "report": report,
                    }))
                    .unwrap_or_default(),
                );
            } else {
                print!("{}", r.human());
            }
        }
        eprintln!(
            "error: refused: {}; nothing was pushed",
            refusal(target, last.id, &s)
        );
        eprintln!("   = hint: pass --force to roll back anyway (recorded)");
        return Err(Outcome::ProgramErrors);
    }
    let inventory = lab_inventory(&dir, inventory, args, &s)?;
    s.gen.verdict = Some(s.verdict());
    s.gen.forced = args.force && violated;
    let note = staged::generation_note(&s, &format!("rollback to {target}"));
    apply::push_and_commit(
        &mut store,
        s,
        &inventory,
        note,
        args.verbose,
        args.json,
        &Paint::stdout(),
    )
}

/// The devices to roll back: the lab follows the generation it holds (its
/// hosts and VM ports too) when the last generation went to the lab.
fn lab_inventory(
    dir: &Path,
    inventory: Inventory,
    args: &RollbackArgs,
    s: &staged::Staged,
) -> Result<Inventory, Outcome> {
    if args.inventory.is_some() || !pushed_to_lab(dir, &inventory) {
        return Ok(inventory);
    }
    let topo = crate::lab::Topology::from_generation(&s.gen.facts, &s.gen.relations);
    let bridges = crate::lab::ensure(dir, &topo).map_err(|e| {
        Outcome::InputError(
            format!("the local lab: {e}"),
            Some("`netc lab status` shows it; or pass --inventory FILE".into()),
        )
    })?;
    Ok(Inventory::of_bridges(&bridges))
}

/// Why a rollback is refused: the generation itself, or only the change
/// back to it (AFF-2/PLAN-1 judge the transition, not the generation).
fn refusal(target: i64, last: i64, s: &staged::Staged) -> String {
    let Some(r) = &s.report else {
        return format!(
            "generation {target} could not be verified ({})",
            s.verify_error
                .as_deref()
                .unwrap_or("the verifier did not run")
        );
    };
    let violated: Vec<&str> = r
        .verdicts
        .iter()
        .filter(|v| v.status == netc_verify::report::Status::Violated)
        .map(|v| v.invariant.as_str())
        .collect();
    let transition = violated.iter().all(|i| matches!(*i, "AFF-2" | "PLAN-1"));
    if transition {
        format!(
            "generation {target} verifies, but the change from generation {last} back to it violates {}",
            violated.join(", ")
        )
    } else {
        format!("generation {target} violates {}", violated.join(", "))
    }
}

/// Whether the last generation was pushed to the local lab (every route an
/// OVS bridge of `DIR/lab/`): then rolling back restores the lab's hosts.
fn pushed_to_lab(dir: &Path, inv: &Inventory) -> bool {
    let Ok(lab) = crate::lab::lab_dir(dir) else {
        return false;
    };
    let prefix = format!("unix:{}/", lab.display());
    !inv.targets.is_empty()
        && inv.targets.iter().all(|t| match &t.route {
            crate::rollout::inventory::Route::Ovs { bridge } => bridge.starts_with(&prefix),
            _ => false,
        })
}
