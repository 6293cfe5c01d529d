//! `netc diff GEN GEN`: per-device adds and removes from the first stored
//! generation to the second (the entries with `-v`), as `netc plan` counts
//! them (`rollout::entries`). Exit 0, or 2 for an unknown generation or a
//! state that cannot be read.

use super::staged::{self, Paint};
use super::Outcome;
use crate::rollout::entries;
use crate::store::{Store, StoreError};
use std::path::Path;

pub fn run(from: i64, to: i64, state: Option<&Path>, verbose: bool, json: bool) -> Outcome {
    match run_inner(from, to, state, verbose, json) {
        Ok(()) => Outcome::Ok,
        Err(e) => e.into(),
    }
}

fn run_inner(
    from: i64,
    to: i64,
    state: Option<&Path>,
    verbose: bool,
    json: bool,
) -> Result<(), StoreError> {
    let store = Store::open_existing(&staged::state_dir(state))?;
    let changes = entries::changes(&store.device_outputs(from)?, &store.device_outputs(to)?);
    if json {
        let v = serde_json::json!({
            "from": from,
            "to": to,
            "devices": staged::changes_json(&changes, verbose),
        });
        super::output::emit(serde_json::to_string_pretty(&v).unwrap_or_default());
    } else {
        let paint = Paint::stdout();
        println!(
            "{} generation {from} → {to}: {} device{} differ",
            paint.bold("diff:"),
            changes.len(),
            if changes.len() == 1 { "" } else { "s" }
        );
        staged::print_changes(&changes, verbose, &paint);
    }
    Ok(())
}
