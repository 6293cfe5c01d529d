//! The warm session and the store: a generation out of it, and back into it.
//!
//! Expects: a [`Warm`] without findings (for [`generation`]); a store made by
//! `netc apply` or by the daemon (for [`recover`]). Guarantees:
//! - [`generation`] holds the same files, facts, relation texts and artifact
//!   bytes that `netc apply` records for the same intent (the same
//!   renderers, in the same layout as `netc apply`'s candidate), so `netc plan`,
//!   `netc status` and `netc history` read a daemon's generations like any
//!   other;
//! - [`recover`] rebuilds the session from the last committed generation's
//!   intent texts, so a daemon killed at any point comes back with the state
//!   the store says was applied (a generation is committed in one SQLite
//!   transaction: wholly there or wholly absent);
//! - [`verify`] puts the session's current state (asserted facts included)
//!   through the gate `netc verify INTENT` runs (`rollout::verdict::gate`):
//!   the daemon's `/v1/verify` and the REPL's `:whatif` report the same.

use super::warm::{Includes, IntentText, Warm, WarmError};
use crate::intent;
use crate::io::csv;
use crate::store::{DeviceOutput, IntentFact, IntentFile, NewGeneration, Store, StoreError};
use std::collections::BTreeSet;
use std::path::Path;

/// A stored intent file as the warm session reads it (its path is its name).
impl From<IntentFile> for IntentText {
    fn from(f: IntentFile) -> IntentText {
        IntentText {
            name: f.path,
            text: f.text,
        }
    }
}

/// Why the daemon could not read or write its state.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the stored generation {generation} does not compile any more: {source}")]
    Stored { generation: i64, source: WarmError },
    #[error(transparent)]
    Warm(#[from] WarmError),
    #[error("cannot render the artifacts: {0}")]
    Render(#[from] netc_targets::RenderError),
}

/// The state to start from: the last generation's intent, or `initial`
/// (the command line's files) when the store has none. Returns the session
/// and the generation it holds (0: none); `includes` confines the texts'
/// `.include`s for the session's life.
pub fn recover(
    store: &Store,
    initial: Vec<IntentText>,
    rules: Option<&Path>,
    includes: Includes,
) -> Result<(Warm, i64), RecordError> {
    match store.last_applied()? {
        Some(g) => {
            let files = store
                .intent_files(g.id)?
                .into_iter()
                .map(IntentText::from)
                .collect();
            let warm =
                Warm::start_in(files, rules, includes).map_err(|source| RecordError::Stored {
                    generation: g.id,
                    source,
                })?;
            Ok((warm, g.id))
        }
        None => Ok((Warm::start_in(initial, rules, includes)?, 0)),
    }
}

/// The session's current state as a generation's contents (verdict, actor
/// and command are left for the caller). With `previous` (the outputs of
/// the state before a change, and the devices the change touched), only the
/// touched devices are rendered again; the others keep their bytes, which
/// is exact because a device's artifacts are rendered from its own rows
/// only (`netc_targets::group_by_device`).
pub fn generation(
    w: &Warm,
    previous: Option<(&[DeviceOutput], &BTreeSet<String>)>,
) -> Result<NewGeneration, RecordError> {
    let plan = w.plan();
    let engine = w.engine();
    let names: Vec<&str> = w.files().iter().map(|f| f.name.as_str()).collect();
    let files = w
        .files()
        .iter()
        .map(|f| IntentFile::new(&f.name, f.text.clone()))
        .collect();
    let facts = plan
        .facts
        .iter()
        .zip(&plan.fact_spans)
        .filter(|(_, s)| names.contains(&w.sources().file(s.file).name.as_str()))
        .map(|((rel, row), span)| IntentFact {
            relation: plan.relations[*rel].name.clone(),
            row: row
                .iter()
                .map(super::warm::text)
                .collect::<Vec<_>>()
                .join("\t"),
            at: w.sources().location(*span),
        })
        .collect();
    let located = intent::located_outputs(plan);
    let relations = located
        .iter()
        .map(|&r| {
            (
                plan.relations[r].name.clone(),
                csv::render(&engine.contents(r), "\t"),
            )
        })
        .collect();
    let mut devices = netc_targets::group_by_device(plan, &located, |r| engine.contents(r));
    let mut outputs: Vec<DeviceOutput> = Vec::new();
    if let Some((old, touched)) = previous {
        devices.retain(|d, _| touched.contains(d));
        outputs.extend(old.iter().filter(|o| !touched.contains(&o.device)).cloned());
    }
    outputs.extend(
        netc_targets::render_all(&devices)?
            .into_iter()
            .map(crate::rollout::candidate::device_output),
    );
    outputs.sort_by(|a, b| (&a.device, &a.path).cmp(&(&b.device, &b.path)));
    Ok(NewGeneration {
        files,
        facts,
        outputs,
        relations,
        ..NewGeneration::default()
    })
}

/// Verifies the session's current artifacts through the gate
/// (`rollout::verdict::gate`, as `netc verify INTENT` does) against the
/// intent's policy, asserted facts included. `Err` is a message: the
/// artifacts could not be rendered, written or modelled.
pub fn verify(w: &Warm, limit: usize) -> Result<netc_verify::report::Report, String> {
    let mut gen = generation(w, None).map_err(|e| e.to_string())?;
    // the files' facts in their order, less those retracted at the
    // prompt, then those asserted there
    let mut now: Vec<crate::store::IntentFact> = w
        .fact_texts()
        .into_iter()
        .flat_map(|(relation, rows)| {
            rows.into_iter().map(move |r| crate::store::IntentFact {
                relation: relation.clone(),
                row: r.vals.join("\t"),
                at: r.at,
            })
        })
        .collect();
    let key = |f: &crate::store::IntentFact| (f.relation.clone(), f.row.clone());
    let held: BTreeSet<(String, String)> = now.iter().map(key).collect();
    gen.facts.retain(|f| held.contains(&key(f)));
    let from_files: BTreeSet<(String, String)> = gen.facts.iter().map(key).collect();
    now.retain(|f| !from_files.contains(&key(f)));
    gen.facts.extend(now);
    let names: Vec<String> = w.files().iter().map(|f| f.name.clone()).collect();
    let provenance =
        crate::rollout::provenance::IntentProvenance::new(w.sources(), w.plan(), &names);
    crate::rollout::verdict::gate(&gen, None, Some(&provenance), w.verified_dir(), limit, &[])
        .map(|g| g.report)
        .map_err(|e| e.to_string())
}
