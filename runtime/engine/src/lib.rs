//! The engine: a [`Plan`] interpreted incrementally on differential dataflow.
//!
//! Map of this crate (netc-engine):
//! - `lib.rs` (here): the public API — [`Engine`], [`Transaction`],
//!   [`Changes`], [`EngineStats`], [`EngineError`] — and the driver-side
//!   state: base facts per relation (set semantics at the input) and a
//!   mirror of every relation's contents (for [`Engine::contents`]), applied
//!   part by part as the workers capture changes; for a *counted* relation
//!   (no other stratum reads it: the dataflow hands on its derivations, not
//!   a set) the mirror also keeps the rows derived more than once.
//! - `mirror.rs`: how the driver stores those rows ([`mirror::RowSet`]:
//!   packed words in a sorted vector, 8 bytes per value).
//! - `api.rs`: the public value types (what a commit takes and returns,
//!   the counters, the errors), re-exported by `lib.rs`.
//! - `validate.rs`: checks the plan's invariants (PLAN-SLOTS, PLAN-STRATA,
//!   PLAN-RECURSIVE) and user rows before anything runs.
//! - `driver.rs`: the timely worker threads, epochs, capture and shutdown.
//! - `fdcheck.rs`: rules of the shape `e(k) :- r(k, a1), r(k, a2), a1 < a2`
//!   (a functional-dependency check), taken out of the dataflow and
//!   evaluated by the driver from `r`'s changes, one hash update per row.
//! - `lanes.rs`: which pieces each lane (a thread of its own timely
//!   instance) runs, so independent pieces run side by side.
//! - `pieces.rs`: which dataflows (pieces) a plan becomes — one per
//!   stratum, or, for a stratum whose rules read ≥ 4 different sets of relations, one
//!   per set of relations read plus a union piece — and where their changes go.
//! - `render.rs`: plan → dataflows on one worker, one per piece (its
//!   input, loops, capture), each run only when something it reads changed.
//! - `skip.rs`: which changes a warm piece may be left unfed (deferred)
//!   because no rule of it can join them yet.
//! - `trace.rs`: `NETC_ENGINE_TRACE`, per-piece counts and times of each epoch.
//! - `body.rs`: rule bodies (joins, negation, filters, binds, aggregates),
//!   carrying only live slots and fusing each join with what follows it.
//! - `arrange.rs`: arrangement types and the per-scope sharing cache.
//! - `eval.rs`: expressions, conditions and column patterns over rows.
//! - `tuple.rs`: the row type inside the dataflow (fast order, serde).
//! - `cpu.rs`: CPU time of the process and of a thread (the build time
//!   [`EngineStats`] reports; `netc compile --timings`).
//!
//! Semantics (what callers may rely on): every relation's contents are the
//! distinct union of its base facts (program facts + committed inserts −
//! committed deletes) and what its rules derive. [`Engine::new`] loads
//! `plan.facts` as commit 0. Each [`Engine::commit`] applies a transaction
//! atomically and returns exactly `contents after − contents before` for
//! every relation that changed. Results do not depend on the worker or lane
//! count.
//! A one-shot engine ([`Engine::new_one_shot`]) computes the same, but
//! after commit 0 it can change only the relations it was started with.
//!
//! Architecture invariant: the engine names no relation and never imports
//! the syntax tree; it reads the plan IR, values, types and functors only
//! (`tests/test_tidy.py` checks both).

mod api;
pub mod cpu;
mod arrange;
mod body;
mod driver;
mod eval;
mod fdcheck;
mod lanes;
mod mirror;
mod pieces;
mod render;
mod skip;
mod trace;
mod tuple;
mod validate;

pub use api::{Changes, CommitStats, Diff, EngineError, EngineStats, Transaction};
pub use tuple::{sort_by_row, sort_rows};

use driver::Workers;
use mirror::RowSet;
use netc_compiler::plan::{Plan, RelId};
use netc_compiler::value::{Row, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;
use tuple::{FxHashMap, Tuple};

/// A running program. Dropping it stops and joins its worker threads.
pub struct Engine {
    plan: Arc<Plan>,
    workers: Workers,
    /// Base facts per relation.
    base: Vec<RowSet>,
    /// Whether a relation has rules (belongs to a stratum).
    derived: Vec<bool>,
    /// Current contents of each derived relation (an input-only relation's
    /// contents are its base facts).
    contents: Vec<RowSet>,
    /// For each *counted* relation (`render::counted_relations`: the
    /// dataflow hands its derivations on as a multiset), the rows derived
    /// more than once, with their count minus one; a row of `contents`
    /// that is absent here has one derivation. `None`: a set relation.
    extra_derivations: Vec<Option<FxHashMap<Tuple, u32>>>,
    next_epoch: u64,
    stats: EngineStats,
    poisoned: Option<String>,
    /// Of a one-shot engine, per relation: whether a commit after commit 0
    /// may change its base facts. `None`: every relation may change.
    changeable: Option<Vec<bool>>,
    /// The functional-dependency checks the driver evaluates (`fdcheck.rs`).
    checks: Checks,
}

/// The driver's side of `fdcheck.rs`.
struct Checks {
    indexes: Vec<fdcheck::Index>,
    /// Per relation: whether a check reads it.
    source: Vec<bool>,
    /// Per relation: whether a check derives it (its changes from the
    /// dataflow wait for the checks' own at the end of the epoch, so the
    /// relation's changes are netted once).
    head: Vec<bool>,
    /// Per check: whether a one-shot engine frees its index after commit 0
    /// (its relation cannot change any more).
    free_after_first: Vec<bool>,
}

/// Lanes for an engine of `workers` threads: one for several workers
/// (lanes have one worker each); else `NETC_ENGINE_LANES` if set (a
/// positive number), else two when the machine has a second core for it.
/// Why two: a warm change's cost is per piece, not per row, and
/// data-parallel workers each pay it for every piece; lanes split the
/// pieces instead.
fn default_lanes(workers: usize) -> usize {
    if workers > 1 {
        return 1;
    }
    if let Some(n) = std::env::var("NETC_ENGINE_LANES")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n >= 1)
    {
        return n;
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cores >= 2 {
        2
    } else {
        1
    }
}

impl Engine {
    /// Checks the plan, starts `workers` worker threads, builds the dataflow
    /// on each, and commits `plan.facts` as commit 0.
    pub fn new(plan: Arc<Plan>, workers: usize) -> Result<Engine, EngineError> {
        Engine::start(plan, workers, default_lanes(workers), None, Vec::new())
    }

    /// Like [`Engine::new`], with `inputs` (rows read from `.input` files)
    /// committed in commit 0 together with the program's facts: the first
    /// fixpoint is computed with every input present, as Souffle computes
    /// it, never with an input empty and its rows retracted later (which
    /// can derive what the program never would, and need not terminate:
    /// `fact(i+1) :- fact(i), !lim(i).`).
    pub fn with_inputs(
        plan: Arc<Plan>,
        workers: usize,
        inputs: Vec<(RelId, Row)>,
    ) -> Result<Engine, EngineError> {
        Engine::start(plan, workers, default_lanes(workers), None, inputs)
    }

    /// Like [`Engine::new`], with the pieces split over `lanes` lanes
    /// (`lanes.rs`) of `workers` threads each; several lanes need one worker
    /// each ([`EngineError::LanesOfWorkers`]). Results never depend on it.
    pub fn with_lanes(
        plan: Arc<Plan>,
        workers: usize,
        lanes: usize,
    ) -> Result<Engine, EngineError> {
        Engine::start(plan, workers, lanes, None, Vec::new())
    }

    /// Like [`Engine::new`], for a caller that evaluates once and then
    /// changes at most the base facts of the relations `later` (`netc
    /// compile`: the placement built-in's `vip_placement`). Every stratum
    /// that no change of `later` can reach is dropped from the dataflow as
    /// soon as commit 0 has computed it (its contents stay readable), so
    /// the dataflow never holds every stratum's arrangements at once. A
    /// later commit that changes any other relation fails with
    /// [`EngineError::Released`] and changes nothing.
    pub fn new_one_shot(
        plan: Arc<Plan>,
        workers: usize,
        later: &[RelId],
    ) -> Result<Engine, EngineError> {
        let mut changeable = vec![false; plan.relations.len()];
        for &r in later {
            *changeable
                .get_mut(r)
                .ok_or(EngineError::UnknownRelation(r))? = true;
        }
        Engine::start(
            plan,
            workers,
            default_lanes(workers),
            Some(changeable),
            Vec::new(),
        )
    }

    fn start(
        plan: Arc<Plan>,
        workers: usize,
        lanes: usize,
        changeable: Option<Vec<bool>>,
        inputs: Vec<(RelId, Row)>,
    ) -> Result<Engine, EngineError> {
        validate::plan(&plan)?;
        // The dataflow runs the plan without the checks the driver evaluates.
        let (flow_plan, fd) = fdcheck::split(&plan);
        let flow_plan = Arc::new(flow_plan);
        let release = match &changeable {
            Some(c) => released_strata(&flow_plan, c),
            None => vec![false; plan.strata.len()],
        };
        let (build_start, build_cpu) = (Instant::now(), crate::cpu::process());
        // A one-shot engine's later commits reach few pieces: no deferring.
        let defer = changeable.is_none();
        let owner = render::Routes::new(&flow_plan);
        let free_after_first = fd
            .iter()
            .map(|c| match (&changeable, owner.owner(c.rel)) {
                (None, _) => false,
                (Some(_), Some(s)) => release[s],
                (Some(ch), None) => !ch[c.rel],
            })
            .collect();
        let mut checks = Checks {
            indexes: Vec::new(),
            source: vec![false; plan.relations.len()],
            head: vec![false; plan.relations.len()],
            free_after_first,
        };
        for c in fd {
            checks.source[c.rel] = true;
            checks.head[c.head] = true;
            checks.indexes.push(fdcheck::Index::new(c));
        }
        let w = Workers::start(flow_plan.clone(), workers, lanes, Arc::new(release), defer)?;
        let (build_wall, build_cpu) = (
            build_start.elapsed(),
            crate::cpu::process().saturating_sub(build_cpu),
        );
        let n = plan.relations.len();
        let mut derived = vec![false; n];
        for s in &plan.strata {
            for &r in &s.relations {
                derived[r] = true;
            }
        }
        let mut engine = Engine {
            stats: EngineStats {
                workers,
                lanes,
                arrangements: w.arrangements,
                build_wall,
                build_cpu,
                ..Default::default()
            },
            workers: w,
            base: plan.relations.iter().map(RowSet::for_relation).collect(),
            derived,
            contents: plan.relations.iter().map(RowSet::for_relation).collect(),
            extra_derivations: render::counted_relations(&flow_plan)
                .into_iter()
                .map(|c| c.then(FxHashMap::default))
                .collect(),
            next_epoch: 0,
            poisoned: None,
            plan: plan.clone(),
            changeable,
            checks,
        };
        let tx = Transaction {
            changes: plan
                .facts
                .iter()
                .map(|(r, row)| (*r, row.clone(), Diff::Insert))
                .chain(inputs.into_iter().map(|(r, row)| (r, row, Diff::Insert)))
                .collect(),
        };
        engine.run(tx, false)?;
        Ok(engine)
    }

    /// Applies a transaction and returns its net changes (see [`Changes`]).
    /// Blocks until the dataflow has caught up. A transaction with an
    /// invalid row (unknown relation, wrong arity or type) is rejected as a
    /// whole and changes nothing.
    pub fn commit(&mut self, tx: Transaction) -> Result<Changes, EngineError> {
        Ok(self.run(tx, true)?.unwrap_or_default())
    }

    /// Like [`Engine::commit`] without building the [`Changes`] (cheaper for
    /// bulk loads); see [`Engine::stats`] for what happened.
    pub fn apply(&mut self, tx: Transaction) -> Result<CommitStats, EngineError> {
        self.run(tx, false)?;
        Ok(self.stats.last.clone())
    }

    fn run(&mut self, tx: Transaction, want_changes: bool) -> Result<Option<Changes>, EngineError> {
        if let Some(p) = &self.poisoned {
            return Err(EngineError::Poisoned(p.clone()));
        }
        let start = Instant::now();
        for (rel, row, _) in &tx.changes {
            validate::row(&self.plan, *rel, row)?;
            if let Some(c) = self.changeable.as_ref().filter(|_| self.next_epoch > 0) {
                if !c[*rel] {
                    let name = self.plan.relations[*rel].name.clone();
                    return Err(EngineError::Released(name));
                }
            }
        }
        let mut data = Vec::with_capacity(tx.changes.len());
        for (rel, row, diff) in tx.changes {
            let t = Tuple::from_row(row);
            let effective = match diff {
                Diff::Insert => self.base[rel].insert(&t),
                Diff::Delete => self.base[rel].remove(&t),
            };
            if effective {
                data.push((rel, t, diff.sign()));
            }
        }
        // Opposite changes of one fact in one transaction cancel here, so
        // the input-only relations' changes below are net.
        consolidate(&mut data);
        if data.is_empty() && self.next_epoch > 0 {
            self.stats.last = CommitStats {
                elapsed: start.elapsed(),
                ..Default::default()
            };
            return Ok(want_changes.then(Changes::default));
        }
        let epoch = self.next_epoch;
        let data = Arc::new(data);
        let flow_start = Instant::now();
        // Derived relations: each part the dataflow captured is applied to
        // the mirror as it arrives (see `driver`: a part holds a row at most
        // once, and no other part of the epoch holds it).
        let mut by_rel: BTreeMap<RelId, Vec<(Row, isize)>> = BTreeMap::new();
        let mut net_changes = 0;
        let mut mirror = Mirror {
            contents: &mut self.contents,
            extra: &mut self.extra_derivations,
            plan: &self.plan,
            checks: &mut self.checks,
            epoch,
            by_rel: want_changes.then_some(&mut by_rel),
        };
        // A checked relation's changes from the dataflow wait for the
        // checks' (see `Checks::head`).
        let mut held = Vec::new();
        let applied = self.workers.run(epoch, data.clone(), |mut part| {
            consolidate(&mut part);
            for group in part.chunk_by(|a, b| a.0 == b.0) {
                if mirror.checks.head[group[0].0] {
                    held.extend_from_slice(group);
                } else {
                    net_changes += mirror.apply(group)?;
                }
            }
            Ok(())
        });
        let out = match applied.and_then(|out| {
            // Input-only relations a check reads: their effective base changes.
            for (rel, t, d) in data.iter().filter(|(rel, ..)| !self.derived[*rel]) {
                if mirror.checks.source[*rel] {
                    mirror.feed_checks(*rel, &[(t, *d)])?;
                }
            }
            for index in &mut mirror.checks.indexes {
                index.drain(&mut held);
            }
            consolidate(&mut held);
            for group in held.chunk_by(|a, b| a.0 == b.0) {
                net_changes += mirror.apply(group)?;
            }
            Ok(out)
        }) {
            Ok(o) => o,
            Err(e) => {
                self.poisoned = Some(e.to_string());
                return Err(e);
            }
        };
        if epoch == 0 && self.changeable.is_some() {
            let checks = &mut self.checks;
            for (index, free) in checks.indexes.iter_mut().zip(&checks.free_after_first) {
                if *free {
                    index.free();
                }
            }
        }
        let dataflow = flow_start.elapsed();
        self.next_epoch += 1;
        // Input-only relations: their effective base changes.
        let inputs = data.iter().filter(|(rel, ..)| !self.derived[*rel]);
        let changes = want_changes.then(|| {
            for (rel, t, d) in inputs.clone() {
                by_rel.entry(*rel).or_default().push((t.to_row(), *d));
            }
            for v in by_rel.values_mut() {
                sort_by_row(v, |(r, _)| r.as_slice());
            }
            Changes { by_rel }
        });
        self.stats.epochs += 1;
        self.stats.total_records += out.records;
        self.stats.last = CommitStats {
            epoch: Some(epoch),
            input_changes: data.len(),
            records: out.records,
            updates: out.updates,
            changes: net_changes + inputs.count(),
            pieces_run: out.pieces,
            dataflow,
            elapsed: start.elapsed(),
        };
        Ok(changes)
    }

    /// The set holding a relation's current contents.
    fn set(&self, rel: RelId) -> Option<&RowSet> {
        self.view().set(rel)
    }

    /// Current contents of a relation, sorted in `Value`'s order (empty for
    /// an unknown id).
    pub fn contents(&self, rel: RelId) -> Vec<Row> {
        self.view().contents(rel)
    }

    /// A read-only view of every relation's current contents that several
    /// threads may read at once (the engine itself is not `Sync`).
    pub fn view(&self) -> View<'_> {
        View {
            derived: &self.derived,
            base: &self.base,
            contents: &self.contents,
        }
    }

    /// Number of rows of a relation (0 for an unknown id).
    pub fn len(&self, rel: RelId) -> usize {
        self.set(rel).map_or(0, |s| s.len())
    }

    /// Whether a relation currently holds a row.
    pub fn contains(&self, rel: RelId, row: &[Value]) -> bool {
        self.set(rel)
            .is_some_and(|s| s.contains(&Tuple::from_values(row)))
    }

    /// Whether a row is a base fact of a relation (as opposed to only derived).
    pub fn is_base_fact(&self, rel: RelId, row: &[Value]) -> bool {
        self.base
            .get(rel)
            .is_some_and(|s| s.contains(&Tuple::from_values(row)))
    }

    /// Base facts of a relation, sorted.
    pub fn base_facts(&self, rel: RelId) -> Vec<Row> {
        let mut rows: Vec<Row> = self.base.get(rel).map(RowSet::rows).unwrap_or_default();
        sort_rows(&mut rows);
        rows
    }

    /// Stops the dataflow and frees its state, keeping every relation's
    /// contents for [`Engine::contents`], `len` and `contains`: for a caller
    /// that only reads from now on (`netc compile` before it renders, so its
    /// peak memory is the larger of evaluating and rendering, not their
    /// sum). Later commits fail with [`EngineError::Poisoned`].
    pub fn release_dataflow(&mut self) {
        self.workers.shutdown();
        self.poisoned
            .get_or_insert_with(|| "the dataflow was released; the engine is read-only".into());
        // Under glibc's malloc (this library's tests, or a caller without
        // another allocator) the workers' small allocations were freed into
        // their threads' arenas, which glibc does not give back by itself;
        // without this the memory stays resident while the caller allocates
        // anew. The `netc` binary allocates with mimalloc (main.rs), which
        // returns freed pages itself: there this trims only what C
        // libraries (SQLite) took from glibc.
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        {
            extern "C" {
                fn malloc_trim(pad: usize) -> std::os::raw::c_int;
            }
            // SAFETY: glibc's malloc_trim only returns free memory to the OS.
            unsafe {
                malloc_trim(0);
            }
        }
    }

    /// Makes worker `worker` panic, to exercise failure handling: the next
    /// commit reports [`EngineError::WorkerDied`], later ones
    /// [`EngineError::Poisoned`]. For tests only.
    #[doc(hidden)]
    pub fn inject_worker_panic(&mut self, worker: usize) {
        self.workers.inject_panic(worker);
    }

    pub fn stats(&self) -> EngineStats {
        self.stats.clone()
    }

    pub fn plan(&self) -> &Arc<Plan> {
        &self.plan
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.workers.shutdown();
    }
}

/// What applying an epoch's captured changes to the mirror touches.
struct Mirror<'a> {
    contents: &'a mut [RowSet],
    extra: &'a mut [Option<FxHashMap<Tuple, u32>>],
    plan: &'a Plan,
    checks: &'a mut Checks,
    epoch: u64,
    /// The commit's [`Changes`], if the caller wants them.
    by_rel: Option<&'a mut BTreeMap<RelId, Vec<(Row, isize)>>>,
}

impl Mirror<'_> {
    /// Applies one relation's consolidated changes (a part holds a row at
    /// most once, and no other part of the epoch holds it): to its set, or
    /// through the count of derivations of a counted relation; feeds the
    /// set changes to the checks reading it. Returns how many rows of the
    /// set changed.
    fn apply(&mut self, group: &[(RelId, Tuple, isize)]) -> Result<usize, EngineError> {
        let rel = group[0].0;
        let (plan, epoch) = (self.plan, self.epoch);
        let misfit = |t: &Tuple, d: isize| {
            let name = &plan.relations[rel].name;
            EngineError::Internal(format!(
                "epoch {epoch}: change {d:+} of {t:?} in {name} does not fit a set"
            ))
        };
        let changes: Vec<(&Tuple, isize)> = match &mut self.extra[rel] {
            Some(counts) => {
                let set = &self.contents[rel];
                let mut sets = Vec::new();
                for (_, t, d) in group {
                    let set_change =
                        count_derivations(set, counts, t, *d).ok_or_else(|| misfit(t, *d))?;
                    if let Some(s) = set_change {
                        sets.push((t, s));
                    }
                }
                sets
            }
            None => group.iter().map(|(_, t, d)| (t, *d)).collect(),
        };
        if let Err(i) = self.contents[rel].apply(&changes) {
            let (t, d) = changes[i];
            return Err(misfit(t, d));
        }
        if self.checks.source[rel] {
            self.feed_checks(rel, &changes)?;
        }
        if let Some(by_rel) = self.by_rel.as_deref_mut().filter(|_| !changes.is_empty()) {
            let v = by_rel.entry(rel).or_default();
            v.extend(changes.iter().map(|(t, d)| (t.to_row(), *d)));
        }
        Ok(changes.len())
    }

    /// Hands set changes of `rel` to the checks reading it.
    fn feed_checks(&mut self, rel: RelId, changes: &[(&Tuple, isize)]) -> Result<(), EngineError> {
        for index in self
            .checks
            .indexes
            .iter_mut()
            .filter(|i| i.check.rel == rel)
        {
            if self.epoch == 0 {
                index.reserve(changes.len());
            }
            for (t, d) in changes {
                index.apply(t, *d).ok_or_else(|| {
                    EngineError::Internal(format!(
                        "epoch {}: change {d:+} of {t:?} in {} does not fit the conflict check of {}",
                        self.epoch,
                        self.plan.relations[rel].name,
                        self.plan.relations[index.check.head].name
                    ))
                })?;
            }
        }
        Ok(())
    }
}

/// See [`Engine::view`].
#[derive(Clone, Copy)]
pub struct View<'a> {
    derived: &'a [bool],
    base: &'a [RowSet],
    contents: &'a [RowSet],
}

impl<'a> View<'a> {
    /// The rows of a relation: its derived contents, or its base facts if
    /// no rule derives it (`None` for an unknown id).
    fn set(&self, rel: RelId) -> Option<&'a RowSet> {
        if *self.derived.get(rel)? {
            self.contents.get(rel)
        } else {
            self.base.get(rel)
        }
    }

    /// As [`Engine::len`].
    pub fn len(&self, rel: RelId) -> usize {
        self.set(rel).map_or(0, |s| s.len())
    }

    /// As [`Engine::contents`].
    pub fn contents(&self, rel: RelId) -> Vec<Row> {
        let mut rows: Vec<Row> = self.set(rel).map(RowSet::rows).unwrap_or_default();
        sort_rows(&mut rows);
        rows
    }
}

/// A plain row of slot values, as expressions read it.
struct PlainRow<'a>(&'a [Value]);

impl eval::Slots for PlainRow<'_> {
    fn slot(&self, i: usize) -> Option<Value> {
        self.0.get(i).copied()
    }
}

/// The worker count of a one-shot evaluation (`netc compile`, `netc
/// capacity`) when none is given: the cores available, at most 4. Why: at
/// L the timely worker is the longest thread (77.7 s CPU of 163.5 s with
/// one worker; 48.5 + 44.9 s with two, +9% CPU in all, peak 5.0 -> 5.2 GB),
/// and results never depend on the count.
pub fn default_workers() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(4))
}

/// Evaluates a plan expression over a row of slot values, exactly as the
/// dataflow does (`None`: undefined, the row would be dropped). For callers
/// that re-derive a tuple top-down (`netc repl`'s `:explain`).
pub fn eval_expr(e: &netc_compiler::plan::Expr, slots: &[Value]) -> Option<Value> {
    eval::eval(e, &PlainRow(slots))
}

/// Whether a plan condition holds over a row of slot values (as [`eval_expr`]).
pub fn eval_cond(c: &netc_compiler::plan::Cond, slots: &[Value]) -> bool {
    eval::holds(c, &PlainRow(slots))
}

/// Folds an aggregate's values (one per combination of inner rows: the
/// value, or for `concat` its ordering keys then the value) exactly as the
/// dataflow does (`None`: no result, e.g. min/max of nothing).
pub fn fold_aggregate(
    func: netc_compiler::plan::AggFunc,
    result: netc_compiler::types::Prim,
    values: &[Vec<Value>],
) -> Option<Value> {
    let tuples: Vec<Tuple> = values.iter().map(|v| Tuple::from_values(v)).collect();
    let input: Vec<(&Tuple, isize)> = tuples.iter().map(|t| (t, 1)).collect();
    body::aggregate(func, result, &input)
}

/// Applies `d` derivations of row `t` of a counted relation whose rows are
/// `set` (one derivation each) plus `counts` (the extra ones), updating
/// `counts`; returns the change of the set (`+1`: the row appears, `-1`: it
/// goes, `None`: neither). `None`: more derivations removed than there were.
fn count_derivations(
    set: &RowSet,
    counts: &mut FxHashMap<Tuple, u32>,
    t: &Tuple,
    d: isize,
) -> Option<Option<isize>> {
    let before = if set.contains(t) {
        1 + counts.get(t).copied().unwrap_or(0) as i64
    } else {
        0
    };
    let after = before + d as i64;
    if after < 0 {
        return None;
    }
    if after >= 2 {
        counts.insert(t.clone(), u32::try_from(after - 1).ok()?);
    } else if before >= 2 {
        counts.remove(t);
    }
    Some(match (before > 0, after > 0) {
        (false, true) => Some(1),
        (true, false) => Some(-1),
        _ => None,
    })
}

/// Per stratum, whether a one-shot engine drops its dataflow after commit 0:
/// no change of a `changeable` relation's base facts reaches it, through
/// the strata that read it and theirs.
fn released_strata(plan: &Plan, changeable: &[bool]) -> Vec<bool> {
    let routes = render::Routes::new(plan);
    let mut reached = vec![false; plan.strata.len()];
    let mut todo: Vec<usize> = (0..plan.relations.len())
        .filter(|&r| changeable[r])
        .flat_map(|r| routes.base[r].iter().copied())
        .collect();
    while let Some(p) = todo.pop() {
        if std::mem::replace(&mut reached[p], true) {
            continue;
        }
        for &r in &plan.strata[p].relations {
            todo.extend(routes.derived[r].iter().copied());
        }
    }
    reached.into_iter().map(|r| !r).collect()
}

/// Sorts by (relation, tuple) and sums the diffs of equal entries, dropping zeros.
fn consolidate(v: &mut Vec<(RelId, Tuple, isize)>) {
    v.sort_unstable_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    let mut w = 0;
    for r in 0..v.len() {
        if w > 0 && v[w - 1].0 == v[r].0 && v[w - 1].1 == v[r].1 {
            v[w - 1].2 += v[r].2;
        } else {
            v.swap(w, r);
            w += 1;
        }
    }
    v.truncate(w);
    v.retain(|x| x.2 != 0);
}
