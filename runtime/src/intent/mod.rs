//! Intent: the standard rules applied to a network's intent files.
//!
//! The path of `netc compile` (and, later, `plan`/`apply`/`verify`):
//! 1. [`load`]: the standard rules ([`rules`], embedded or `--rules DIR`)
//!    and the user's intent files compile as one program; warnings located in
//!    the rules are dropped (a user cannot act on them; an intent need not
//!    use every relation the schema offers);
//! 2. [`evaluate`]: the engine computes every relation;
//! 3. [`findings`]: any `error_*` row is bad intent, reported with the facts
//!    it cites, and nothing is written;
//! 4. [`write_relations`]: every located output relation goes to
//!    `OUT/relations/<relation>.csv` (tab-separated, sorted);
//! 5. [`write_artifacts`]: the device targets (`netc_targets`) render each
//!    device's rows into `OUT/ovs/`, `OUT/p4/`, `OUT/host/`.
//!
//! [`write_outputs`] (`netc compile`) does 4 and 5 at once, the dumps on a
//! second thread.

pub mod findings;
pub mod rules;

use crate::engine::{Engine, EngineError, Transaction};
use crate::io::csv;
use netc_compiler::plan::{Plan, RelId};
use netc_compiler::value::Row;
use netc_compiler::{compile_inputs, Compilation, SourceInput};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Compiles the rules and the intent files as one program.
pub fn load(intent: &[PathBuf], rules_dir: Option<&Path>) -> std::io::Result<Compilation> {
    let mut inputs = rules::rule_inputs(rules_dir)?;
    let rule_files = inputs.len();
    inputs.extend(intent.iter().cloned().map(SourceInput::File));
    let mut c = compile_inputs(&inputs);
    // Files are registered in input order, so the rules are FileIds 0..rule_files
    // (plus anything they include, which is registered right after each).
    let intent_names: Vec<String> = intent.iter().map(|p| p.display().to_string()).collect();
    let sources = &c.sources;
    c.diagnostics.items.retain(|d| {
        d.is_error()
            || d.span
                .is_some_and(|s| intent_names.iter().any(|n| *n == sources.file(s.file).name))
    });
    let _ = rule_files;
    Ok(c)
}

/// Evaluates the plan from scratch, then runs the VIP placement built-in
/// (`crate::placement::place_into`: unless the intent pins `vip_placement`
/// itself, the placement is computed from the `placement_*` relations and
/// committed as `vip_placement` rows);
/// the engine it returns is one-shot (`Engine::new_one_shot`: only
/// `vip_placement` may change, and nothing does after this returns).
///
/// With `NETC_TOP_RELATIONS=N` in the environment it prints, on stderr, the
/// time of each step and the N largest relations by rows (intermediates
/// included): how to find what dominates a large compile.
pub fn evaluate(plan: Arc<Plan>, workers: usize) -> Result<Engine, EngineError> {
    let top: Option<usize> = std::env::var("NETC_TOP_RELATIONS")
        .ok()
        .and_then(|v| v.parse().ok());
    let start = std::time::Instant::now();
    // One evaluation, then at most the placement's commit: every stratum
    // that commit cannot reach is dropped from the dataflow once computed.
    let later: Vec<RelId> = plan.relation_id("vip_placement").into_iter().collect();
    let mut engine = Engine::new_one_shot(plan, workers, &later)?;
    let evaluated = start.elapsed();
    engine.apply(Transaction::new())?;
    crate::placement::place_into(&mut engine)?;
    if let Some(n) = top {
        eprintln!(
            "evaluate: rules {:.2} s, placement {:.2} s",
            evaluated.as_secs_f64(),
            (start.elapsed() - evaluated).as_secs_f64()
        );
        eprint!("{}", top_relations(&engine, n));
    }
    Ok(engine)
}

/// The `n` largest relations of an evaluated program, one per line
/// (`rows name`), and the total over all relations.
pub fn top_relations(engine: &Engine, n: usize) -> String {
    let plan = engine.plan();
    let mut sizes: Vec<(usize, &str)> = (0..plan.relations.len())
        .map(|r| (engine.len(r), plan.relations[r].name.as_str()))
        .collect();
    let total: usize = sizes.iter().map(|s| s.0).sum();
    sizes.sort_unstable_by(|a, b| b.cmp(a));
    let mut out = format!("{total:>12} rows in {} relations\n", sizes.len());
    for (rows, name) in sizes.into_iter().take(n) {
        out.push_str(&format!("{rows:>12} {name}\n"));
    }
    out
}

/// Located relations that are outputs: what targets consume.
pub fn located_outputs(plan: &Plan) -> Vec<RelId> {
    (0..plan.relations.len())
        .filter(|&r| plan.relations[r].location.is_some() && !plan.relations[r].outputs.is_empty())
        .collect()
}

/// Writes the relation dumps ([`write_relations`]) and the device
/// artifacts ([`write_artifacts`]), the dumps on a second thread: `netc
/// compile` calls it after releasing the dataflow, when the workers' cores
/// are idle. Returns (relations, artifacts) written.
pub fn write_outputs(
    plan: &Plan,
    engine: &Engine,
    dir: &Path,
) -> Result<(usize, usize), ArtifactError> {
    let view = engine.view();
    std::thread::scope(|s| {
        let dumps = s.spawn(|| relations_into(plan, |r| view.contents(r), dir));
        let artifacts = artifacts_into(plan, |r| view.contents(r), dir);
        let relations = match dumps.join() {
            Ok(written) => written?,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        Ok((relations, artifacts?))
    })
}

/// Writes `dir/relations/<relation>.csv` for every located output relation.
pub fn write_relations(plan: &Plan, engine: &Engine, dir: &Path) -> std::io::Result<usize> {
    relations_into(plan, |r| engine.contents(r), dir)
}

fn relations_into(
    plan: &Plan,
    contents: impl Fn(RelId) -> Vec<Row>,
    dir: &Path,
) -> std::io::Result<usize> {
    let rel_dir = dir.join("relations");
    std::fs::create_dir_all(&rel_dir)?;
    let mut n = 0;
    for r in located_outputs(plan) {
        let rows = contents(r);
        std::fs::write(
            rel_dir.join(format!("{}.csv", plan.relations[r].name)),
            csv::render(&rows, "\t"),
        )?;
        n += 1;
    }
    Ok(n)
}

/// Renders every device's artifacts with every target and writes them under
/// `dir` (the files `netc_targets::render_all` gives). One target at a time,
/// holding only the rows it consumes, and each device's files written as
/// soon as they are rendered: at 100k VMs the rows and the text are GBs.
pub fn write_artifacts(plan: &Plan, engine: &Engine, dir: &Path) -> Result<usize, ArtifactError> {
    artifacts_into(plan, |r| engine.contents(r), dir)
}

fn artifacts_into(
    plan: &Plan,
    contents: impl Fn(RelId) -> Vec<Row>,
    dir: &Path,
) -> Result<usize, ArtifactError> {
    let located = located_outputs(plan);
    let mut written = 0;
    for target in netc_targets::renderers() {
        let consumed: Vec<RelId> = located
            .iter()
            .copied()
            .filter(|&r| target.consumes(&plan.relations[r].name))
            .collect();
        let devices = netc_targets::group_by_device(plan, &consumed, &contents);
        for (device, rows) in &devices {
            for a in target.render(device, rows)? {
                let path = dir.join(&a.path);
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                std::fs::write(path, &a.contents)?;
                written += 1;
            }
        }
    }
    Ok(written)
}

/// A device's rows could not be rendered, or the files not written.
#[derive(Debug, thiserror::Error)]
pub enum ArtifactError {
    #[error(transparent)]
    Render(#[from] netc_targets::RenderError),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Replaces `out` by the directory `build` fills, so a reader never sees a
/// half-written artifact set: `build` writes into a fresh sibling directory,
/// which is renamed into place only when it succeeded.
pub fn write_atomically(
    out: &Path,
    build: impl FnOnce(&Path) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let parent = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent)?;
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".into());
    let tmp = parent.join(format!(".{name}.tmp-{}", std::process::id()));
    let old = parent.join(format!(".{name}.old-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp)?;
    if let Err(e) = build(&tmp) {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(e);
    }
    if out.exists() {
        std::fs::rename(out, &old)?;
    }
    std::fs::rename(&tmp, out)?;
    let _ = std::fs::remove_dir_all(&old);
    Ok(())
}
