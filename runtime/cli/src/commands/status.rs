//! `netc status`: the last generation, and whether the devices still hold it.
//!
//! Prints the last generation (when, who, files, verdict, forced), an
//! interrupted apply if its journal is there, and per device whether it
//! drifted: a reconcile dry run (OVS: dump and diff by cookie and by what
//! each flow does — match, priority, actions — and groups by buckets, so a
//! flow edited in place is drift; agent: compare the files; P4: `p4client
//! diff` — Read and compare, a missing pipeline counts, a switch running
//! another program is `foreign-program`); `-v` lists each drifted entry
//! (device, table, match, expected, found); `--json` gives each device's
//! `state`, `drift` count (0 in sync, null when unknown) and `entries`. Devices: `--inventory FILE`, else the routes the
//! generation recorded. Exit 0 every device in sync, 1 drift, an
//! unreachable device, a foreign program or an interrupted apply, 2
//! usage/input/state errors.

use super::apply;
use super::staged::{self, Paint};
use super::Outcome;
use crate::rollout::inventory::Inventory;
use crate::rollout::{carried, push};
use crate::store::{utc_text, Store};
use netc_targets::ovs::delta::DriftEntry;
use std::path::Path;

pub fn run(state: Option<&Path>, inventory: Option<&Path>, verbose: bool, json: bool) -> Outcome {
    match run_inner(state, inventory, verbose, json) {
        Ok(o) | Err(o) => o,
    }
}

fn run_inner(
    state: Option<&Path>,
    inv: Option<&Path>,
    verbose: bool,
    json: bool,
) -> Result<Outcome, Outcome> {
    let dir = staged::state_dir(state);
    let store = Store::open_existing(&dir)?;
    let interrupted = store.interrupted()?;
    let Some(last) = store.last_applied()? else {
        if json {
            println!(
                "{}",
                serde_json::json!({"generation": null, "interrupted": interrupted.is_some()})
            );
        } else {
            println!("nothing applied yet");
        }
        return Ok(if interrupted.is_some() {
            Outcome::ProgramErrors
        } else {
            Outcome::Ok
        });
    };
    let inventory = match inv {
        Some(p) => apply::load_inventory(p)?,
        None => Inventory::parse(&last.inventory, "recorded inventory", Path::new("/")).map_err(
            |e| Outcome::InputError(e.to_string(), Some("pass --inventory FILE".into())),
        )?,
    };
    let outputs = store.device_outputs(last.id)?;
    let mut devices = Vec::new();
    let mut trouble = interrupted.is_some();
    for t in &inventory.targets {
        let drift = push::drift(t, &carried(&outputs, t), &inventory.defaults);
        let (state, detail) = match &drift {
            Ok(Some(d)) if d.count == 0 => ("in-sync", String::new()),
            Ok(Some(d)) => ("drifted", format!("{} entries differ", d.count)),
            Ok(None) => ("unchecked", "no dry run for this target".to_string()),
            Err(e) if e.foreign_program => ("foreign-program", e.reason.clone()),
            Err(e) => ("unreachable", e.reason.clone()),
        };
        trouble |= state != "in-sync" && state != "unchecked";
        // the count itself, for --json readers: 0 in sync, null when not known
        let found = drift.ok().flatten();
        devices.push((t, state, detail, found));
    }
    if json {
        let v = serde_json::json!({
            "generation": last.id,
            "created": utc_text(last.created),
            "actor": last.actor,
            "command": last.command,
            "note": last.note,
            "files": last.files,
            "verdict": last.verdict.as_str(),
            "forced": last.forced,
            "interrupted": interrupted.as_ref().map(|j| serde_json::json!({"pid": j.pid, "started": utc_text(j.started)})),
            "devices": devices.iter().map(|(t, st, d, n)| serde_json::json!({
                "device": t.device, "route": t.route.kind(), "address": t.route.address(), "state": st, "detail": d,
                "drift": n.as_ref().map(|d| d.count),
                "entries": n.as_ref().map_or_else(Vec::new, |d| d.entries.iter().map(entry_json).collect()),
            })).collect::<Vec<_>>(),
        });
        super::output::emit(serde_json::to_string_pretty(&v).unwrap_or_default());
    } else {
        let paint = Paint::stdout();
        println!(
            "{} {} applied {} by {} ({}), verify {}{}",
            paint.bold("generation"),
            last.id,
            utc_text(last.created),
            last.actor,
            if last.note.is_empty() {
                last.files.join(" ")
            } else {
                last.note.clone()
            },
            last.verdict.as_str(),
            if last.forced { " (forced)" } else { "" }
        );
        if let Some(j) = &interrupted {
            println!(
                "  {} an apply (pid {}, started {}) was interrupted; run `netc apply` again to converge",
                paint.red("interrupted:"),
                j.pid,
                utc_text(j.started)
            );
        }
        let width = devices
            .iter()
            .map(|(t, ..)| t.device.len())
            .max()
            .unwrap_or(0);
        for (t, st, d, found) in &devices {
            let shown = match *st {
                "in-sync" => paint.green(st),
                "unchecked" => st.to_string(),
                _ => paint.red(st),
            };
            println!("  {:<width$}  {:<6} {shown} {d}", t.device, t.route.kind());
            if verbose {
                for e in found.iter().flat_map(|f| &f.entries) {
                    print_entry(&t.device, e);
                }
            }
        }
    }
    Ok(if trouble {
        Outcome::ProgramErrors
    } else {
        Outcome::Ok
    })
}

fn entry_json(e: &DriftEntry) -> serde_json::Value {
    serde_json::json!({
        "what": e.what, "table": e.table, "match": e.matches,
        "expected": e.expected, "found": e.found,
    })
}

/// One drifted entry: where, then what it should be and what it is.
fn print_entry(device: &str, e: &DriftEntry) {
    let table = e.table.map_or(String::new(), |t| format!(" table {t}"));
    println!("    {device}{table} {} {}", e.what, e.matches);
    println!(
        "      expected: {}",
        e.expected
            .as_deref()
            .unwrap_or("(nothing: netc did not put it there)")
    );
    println!(
        "      found:    {}",
        e.found.as_deref().unwrap_or("(missing)")
    );
}
