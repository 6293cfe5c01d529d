//! `netc history`: every generation, oldest first (id, when, who, verdict,
//! forced, files or note). Exit 0, or 2 when the state cannot be read.

use super::staged;
use super::Outcome;
use crate::store::{utc_text, Store};
use std::path::Path;

pub fn run(state: Option<&Path>, json: bool) -> Outcome {
    let dir = staged::state_dir(state);
    let store = match Store::open_existing(&dir) {
        Ok(s) => s,
        Err(e) => return e.into(),
    };
    let history = match store.history() {
        Ok(h) => h,
        Err(e) => return e.into(),
    };
    if json {
        let v: Vec<_> = history
            .iter()
            .map(|g| {
                serde_json::json!({
                    "generation": g.id,
                    "created": utc_text(g.created),
                    "actor": g.actor,
                    "command": g.command,
                    "note": g.note,
                    "files": g.files,
                    "devices": g.devices,
                    "verdict": g.verdict.as_str(),
                    "forced": g.forced,
                })
            })
            .collect();
        super::output::emit(serde_json::to_string_pretty(&v).unwrap_or_default());
        return Outcome::Ok;
    }
    if history.is_empty() {
        println!("nothing applied yet");
    }
    for g in &history {
        println!(
            "{:>4}  {}  {:<10} {:<8}{} {:>3} devices  {}",
            g.id,
            utc_text(g.created),
            g.actor,
            g.verdict.as_str(),
            if g.forced { " forced" } else { "       " },
            g.devices,
            if g.note.is_empty() {
                g.files.join(" ")
            } else {
                g.note.clone()
            }
        );
    }
    Outcome::Ok
}
