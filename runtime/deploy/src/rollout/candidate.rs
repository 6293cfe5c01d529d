//! A candidate generation: evaluated intent turned into what the store keeps.
//!
//! Expects: intent that evaluated without `error_*` findings. Guarantees: the
//! outputs are exactly the files `netc compile` writes for the same intent
//! (same renderers, same bytes), each tagged with its device and target
//! kind; relations are `relations/<name>.csv` texts; facts are the intent
//! files' own facts with `file:line`.

use crate::intent;
use crate::intent::EvaluatedIntent;
use crate::io::csv;
use crate::store::{DeviceOutput, IntentFact, IntentFile, NewGeneration};
use netc_compiler::value::Value;
use std::path::{Path, PathBuf};

/// A value as artifact text (symbols without quotes).
pub fn value_text(v: &Value) -> String {
    match v {
        Value::Symbol(s) => s.as_str().to_string(),
        other => other.to_string(),
    }
}

/// Renders the evaluated intent into a generation's contents (verdict,
/// actor and command are left for the caller).
pub fn build(
    intent_files: &[PathBuf],
    ev: &EvaluatedIntent,
) -> Result<NewGeneration, CandidateError> {
    let mut files = Vec::new();
    for p in intent_files {
        let text = std::fs::read_to_string(p).map_err(|e| CandidateError::Read {
            path: p.clone(),
            source: e,
        })?;
        files.push(IntentFile::new(&p.display().to_string(), text));
    }
    build_from(files, ev)
}

/// [`build`] of intent whose texts are at hand (`files`, named as the
/// evaluation named them).
pub fn build_from(
    files: Vec<IntentFile>,
    ev: &EvaluatedIntent,
) -> Result<NewGeneration, CandidateError> {
    let names: Vec<String> = files.iter().map(|f| f.path.clone()).collect();
    let facts = facts_of(&names, ev);
    let plan = &ev.plan;
    let located = intent::located_outputs(plan);
    let relations = located
        .iter()
        .map(|&r| {
            (
                plan.relations[r].name.clone(),
                csv::render(&ev.engine.contents(r), "\t"),
            )
        })
        .collect();
    let devices = netc_targets::group_by_device(plan, &located, |r| ev.engine.contents(r));
    let artifacts = netc_targets::render_all(&devices)?;
    let mut outputs: Vec<DeviceOutput> = artifacts.into_iter().map(device_output).collect();
    outputs.sort_by(|a, b| (&a.device, &a.path).cmp(&(&b.device, &b.path)));
    Ok(NewGeneration {
        files,
        facts,
        outputs,
        relations,
        ..NewGeneration::default()
    })
}

/// The intent files' own facts (not the rules'), with `file:line`: what
/// the verifier's policy and the store read.
pub fn intent_facts(intent_files: &[PathBuf], ev: &EvaluatedIntent) -> Vec<IntentFact> {
    let names: Vec<String> = intent_files
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    facts_of(&names, ev)
}

/// The facts of the intent files named `names`, with `file:line`.
fn facts_of(names: &[String], ev: &EvaluatedIntent) -> Vec<IntentFact> {
    let c = &ev.compilation;
    let plan = &ev.plan;
    plan.facts
        .iter()
        .zip(&plan.fact_spans)
        .filter(|(_, s)| names.contains(&c.sources.file(s.file).name))
        .map(|((rel, row), span)| IntentFact {
            relation: plan.relations[*rel].name.clone(),
            row: row.iter().map(value_text).collect::<Vec<_>>().join("\t"),
            at: c.sources.location(*span).to_string(),
        })
        .collect()
}

/// One rendered artifact as the store keeps it: the device is the file's
/// stem, the kind its top directory (`ovs`, `p4`, `host`); not yet pushed.
pub fn device_output(a: netc_targets::Artifact) -> DeviceOutput {
    DeviceOutput {
        device: a
            .path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default(),
        kind: a
            .path
            .components()
            .next()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .unwrap_or_default(),
        path: a.path.to_string_lossy().replace('\\', "/"),
        text: a.contents,
        pushed: false,
    }
}

/// Writes a candidate as an artifact directory (what `netc compile` writes).
pub fn write_dir(g: &NewGeneration, dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir.join("relations"))?;
    for (name, text) in &g.relations {
        std::fs::write(
            crate::io::contained::join(dir, &format!("relations/{name}.csv"))?,
            text,
        )?;
    }
    for o in &g.outputs {
        let p = crate::io::contained::join(dir, &o.path)?;
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(p, &o.text)?;
    }
    Ok(())
}

#[derive(Debug, thiserror::Error)]
pub enum CandidateError {
    #[error("cannot read `{path}`: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Render(#[from] netc_targets::RenderError),
}
