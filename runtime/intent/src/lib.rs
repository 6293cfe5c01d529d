//! netc-intent: the standard rules applied to a network's intent files,
//! from scratch (`netc compile`) or kept warm (`netc serve`, `netc repl`).
//!
//! Map of this crate:
//! - `lib.rs` (here): load, evaluate and write, in the order below;
//! - [`rules`]: the standard rules (embedded, or `--rules DIR`);
//! - [`findings`]: bad intent (`error_*` rows) with the facts it cites;
//! - `output.rs`: relations and device artifacts written to `OUT/`;
//! - [`placement`]: the VIP-placement built-in (Duet's greedy, sticky);
//! - [`io`]: facts and update scripts read, outputs written (Souffle's
//!   formats);
//! - [`warm`]: the warm session the daemon and the REPL share — intent
//!   compiled once, each change committed as a difference of facts
//!   ([`texts`]: its intent texts; [`pattern`]: `rel(X, "c", _)` patterns);
//! - [`oom`]: out of memory reported as an exit 2, staged output removed;
//! - [`timings`] (`--timings`), [`settled`] (what a second thread may write
//!   while the placement runs).
//!
//! Architecture invariant: nothing here names the store, a rollout or the
//! command line. The engine (netc-engine) is imported as `engine` below.
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
//! [`write_early`] and [`write_outputs`] (`netc compile`; `write_outputs`
//! alone: `netc verify INTENT`, `netc serve`) do 4 and 5 at once, on both
//! cores, reading each relation once (`output.rs`);
//! [`write_atomically`] replaces the output directory as a whole.
//! `timings.rs` is `netc compile --timings`: each step's wall and CPU time.
//! `settled.rs`: the relations the placement's commit cannot change, which
//! [`evaluate_beside`] lets a second thread dump, and their targets render,
//! meanwhile.

pub mod findings;
pub mod io;
pub mod oom;
pub mod output;
pub mod pattern;
pub mod placement;
pub mod rules;
pub mod settled;
pub mod texts;
pub mod timings;
pub mod warm;

use netc_engine as engine;
use netc_engine::cpu;

use crate::engine::{Engine, EngineError};
use findings::Finding;
use netc_compiler::plan::{Plan, RelId};
use netc_compiler::{compile_inputs, Compilation, SourceInput};
pub use output::{
    write_artifacts, write_atomically, write_early, write_outputs, write_relations, ArtifactError,
    Early, Staging, Written,
};
use std::path::{Path, PathBuf};
use std::sync::Arc;
pub use timings::Timings;

/// Intent compiled with the standard rules and evaluated: what `compile`,
/// `check --intent`, `capacity`, `verify` and a candidate generation
/// (`rollout::candidate`) start from.
pub struct EvaluatedIntent {
    pub compilation: Compilation,
    pub plan: Arc<Plan>,
    pub engine: Engine,
    /// Bad intent (`error_*` rows); each command decides what it means.
    pub findings: Vec<Finding>,
}

/// Compiles the rules and the intent files as one program.
pub fn load(intent: &[PathBuf], rules_dir: Option<&Path>) -> std::io::Result<Compilation> {
    load_inputs(
        intent.iter().cloned().map(SourceInput::File).collect(),
        rules_dir,
    )
}

/// [`load`], with intent given as files or texts (a stored generation's
/// intent, or facts `netc plan` adds for a stage).
pub fn load_inputs(
    intent: Vec<SourceInput>,
    rules_dir: Option<&Path>,
) -> std::io::Result<Compilation> {
    let mut inputs = rules::rule_inputs(rules_dir)?;
    let intent_names: Vec<String> = intent
        .iter()
        .map(|i| match i {
            SourceInput::File(p) => p.display().to_string(),
            SourceInput::Text { name, .. } => name.clone(),
        })
        .collect();
    inputs.extend(intent);
    let mut c = compile_inputs(&inputs);
    // Files are registered in input order, so the rules come first (plus
    // anything they include, which is registered right after each).
    let sources = &c.sources;
    c.diagnostics.items.retain(|d| {
        d.is_error()
            || d.span
                .is_some_and(|s| intent_names.iter().any(|n| *n == sources.file(s.file).name))
    });
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
/// N largest relations by rows (intermediates included): how to find what
/// dominates a large compile (`netc compile --timings` says which phase).
pub fn evaluate(plan: Arc<Plan>, workers: usize) -> Result<Engine, EngineError> {
    evaluate_timed(plan, workers, &mut Timings::start())
}

/// [`evaluate`], closing a phase of `timings` after each step: building
/// the dataflow, evaluating the rules, the placement, its commit.
pub fn evaluate_timed(
    plan: Arc<Plan>,
    workers: usize,
    timings: &mut Timings,
) -> Result<Engine, EngineError> {
    evaluate_beside(plan, workers, timings, |_| ()).map(|(engine, ())| engine)
}

/// What [`evaluate_beside`]'s second thread may read while the placement is
/// computed: the relations, and which of them are settled (no later commit
/// changes them, [`settled`]).
pub struct Beside<'e> {
    pub plan: &'e Plan,
    pub view: crate::engine::View<'e>,
    pub settled: &'e [bool],
    /// Set when the placement is computed: the placement's commit waits for
    /// the second thread, which should end soon after.
    pub stop: &'e std::sync::atomic::AtomicBool,
}

/// [`evaluate_timed`], running `beside` on a second thread while the
/// placement is computed (the timely workers are idle then, and the
/// placement runs on one core): `netc compile` dumps the settled relations
/// there. Returns what `beside` returned.
pub fn evaluate_beside<T: Send>(
    plan: Arc<Plan>,
    workers: usize,
    timings: &mut Timings,
    beside: impl for<'e> FnOnce(Beside<'e>) -> T + Send,
) -> Result<(Engine, T), EngineError> {
    let top: Option<usize> = std::env::var("NETC_TOP_RELATIONS")
        .ok()
        .and_then(|v| v.parse().ok());
    // One evaluation, then at most the placement's commit: every stratum
    // that commit cannot reach is dropped from the dataflow once computed.
    let later: Vec<RelId> = plan.relation_id("vip_placement").into_iter().collect();
    let settled = settled::settled(&plan, &later);
    let mut engine = Engine::new_one_shot(plan, workers, &later)?;
    let stats = engine.stats();
    let built = timings::Span {
        wall: stats.build_wall,
        cpu: stats.build_cpu,
    };
    timings.lap_split(
        ("build_dataflow", "build the dataflow", built),
        ("evaluate_rules", "evaluate the rules"),
    );
    let stop = std::sync::atomic::AtomicBool::new(false);
    let (placement, beside_out) = std::thread::scope(|s| {
        let (plan, view) = (&**engine.plan(), engine.view());
        let (settled, stop) = (&settled, &stop);
        let second = s.spawn(move || {
            beside(Beside {
                plan,
                view,
                settled,
                stop,
            })
        });
        let placement = crate::placement::compute(&engine);
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        match second.join() {
            Ok(out) => (placement, out),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    });
    let placement = placement?;
    timings.lap("placement", "placement (greedy)");
    if let Some(p) = &placement {
        crate::placement::commit(&mut engine, p)?;
    }
    timings.lap("placement_commit", "placement's commit");
    if let Some(n) = top {
        eprint!("{}", top_relations(&engine, n));
    }
    Ok((engine, beside_out))
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
