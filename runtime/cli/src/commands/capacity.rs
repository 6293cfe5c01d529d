//! `netc capacity INTENT... [--profile duet|tofino] [--json]`: each switch's
//! table use against a capacity model (CAP-1).
//!
//! Compiles the intent with the standard rules, builds every switch's
//! P4Runtime entities exactly as `netc compile` renders them, and prints
//! `netc_targets::p4::resources::usage` per switch. Intent findings
//! (`error_*`) are listed as notes, not fatal: capacity is worth seeing for
//! an intent that is over it. Exit 0 if every switch fits, 1 if one does not
//! (or a row does not fit the program), 2 on usage or input errors.

use super::{evaluate_intent, EvaluatedIntent, Outcome};
use crate::intent;
use netc_targets::p4::resources::{self, Profile, SwitchUse};
use netc_targets::p4::{self, entries};
use std::io::Write;
use std::path::{Path, PathBuf};

pub struct CapacityArgs<'a> {
    pub intent: &'a [PathBuf],
    pub rules: Option<&'a Path>,
    pub profile: &'a str,
    pub json: bool,
    pub workers: usize,
}

pub fn run(args: CapacityArgs) -> Outcome {
    let profile: Profile = match args.profile.parse() {
        Ok(p) => p,
        Err(e) => return Outcome::InputError(e, Some("--profile duet|tofino".into())),
    };
    let EvaluatedIntent {
        compilation: c,
        plan,
        engine,
        findings,
    } = match evaluate_intent(args.intent, args.rules, args.workers) {
        Ok(e) => e,
        Err(outcome) => return outcome,
    };
    for f in &findings {
        eprint!("note: {}", f.render(&c.sources));
    }
    let devices = netc_targets::group_by_device(&plan, &intent::located_outputs(&plan), |r| {
        engine.contents(r)
    });
    let mut uses: Vec<SwitchUse> = Vec::new();
    for (device, rows) in &devices {
        let mine: netc_targets::DeviceRows = rows
            .iter()
            .filter(|(name, _)| entries::RELATIONS.iter().any(|(r, _)| r == name))
            .map(|(n, v)| (n.clone(), v.clone()))
            .collect();
        if mine.is_empty() {
            continue;
        }
        match p4::entities(device, &mine) {
            Ok(ents) => uses.push(resources::usage(device, &ents, profile)),
            Err(e) => {
                super::output::hold_message(&e.to_string());
                eprintln!("error: {e}");
                return Outcome::ProgramErrors;
            }
        }
    }
    if args.json {
        match serde_json::to_string_pretty(&uses) {
            Ok(s) => super::output::emit(s),
            Err(e) => return Outcome::InputError(format!("internal error: json: {e}"), None),
        }
    } else {
        let text: String = uses.iter().map(render).collect();
        // a closed pipe (`| head`) is not an error worth a panic
        let _ = std::io::stdout().lock().write_all(text.as_bytes());
    }
    let over: Vec<&SwitchUse> = uses.iter().filter(|u| !u.ok()).collect();
    if over.is_empty() {
        eprintln!(
            "{} switch{} fit{}",
            uses.len(),
            if uses.len() == 1 { "" } else { "es" },
            if uses.len() == 1 { "s" } else { "" }
        );
        Outcome::Ok
    } else {
        for u in over {
            if let Err(e) = resources::check(u) {
                eprintln!("error: {e}");
            }
        }
        Outcome::ProgramErrors
    }
}

fn render(u: &SwitchUse) -> String {
    let mut s = format!(
        "switch {} (profile {}): {}\n",
        u.device,
        match u.profile {
            Profile::Duet => "duet",
            Profile::Tofino => "tofino",
        },
        if u.ok() { "fits" } else { "OVER CAPACITY" }
    );
    for l in &u.limits {
        if l.used == 0
            && u.profile == Profile::Duet
            && !["host", "ecmp", "tunnel"].contains(&l.name.as_str())
        {
            continue;
        }
        s.push_str(&format!(
            "  {:<20} {:>7} / {:<7} {:<8}{}\n",
            l.name,
            l.used,
            l.capacity,
            l.unit,
            if l.over() { "  OVER" } else { "" }
        ));
    }
    if u.profile == Profile::Tofino {
        s.push_str("  table                entries  hw-entries  sram-blocks  tcam-blocks\n");
        for t in u.tables.iter().filter(|t| t.entries > 0) {
            s.push_str(&format!(
                "  {:<20} {:>7}  {:>10}  {:>11}  {:>11}\n",
                t.table, t.entries, t.hw_entries, t.sram_blocks, t.tcam_blocks
            ));
        }
    }
    s
}
