//! Plan → differential dataflow, on one worker: one dataflow per piece (a
//! stratum, or part of one: `pieces.rs`).
//!
//! Expects: a plan accepted by `validate::plan`; every worker calls
//! [`build`] with the same plan, so all build the same dataflows.
//! Guarantees:
//! - PIECES: each piece is its own timely dataflow (a [`Piece`]) with its
//!   own input and its own time (the number of times it has run). A piece
//!   runs in an epoch only if something it reads changed (see
//!   [`Routes`]) and, in a warm engine, only if one of those changes can
//!   reach its output (`skip.rs`; the rest wait in [`Built::pending`]); the
//!   others are not scheduled at all and cost nothing.
//!   Why: every operator of a dataflow is visited by progress tracking each
//!   time its frontier moves, so one dataflow for the whole program made a
//!   one-row change cost time proportional to the program (issue 8). Pieces
//!   do not share traces: a piece gets what lower strata derived as data
//!   through its input, so a piece not run holds no other piece back (what
//!   it was not fed waits in its pending rows until it runs). The price: a relation read by several strata
//!   is arranged once per piece that joins on it (sharing is per piece).
//! - A piece's input carries `(relation, tuple)` pairs — the base facts of
//!   its own relations (already a set: the driver dedups), the base facts
//!   of the input-only relations it reads and the captured changes of the
//!   lower strata's relations it reads (sets: distinct outputs) — split
//!   into one collection per relation by a single `Partition` operator;
//!   plus a constant one-row "unit" input for `Source::Unit`.
//! - A non-recursive stratum makes each of its relations `distinct(base ∪
//!   rule outputs)` with no output arrangement (`distinct_total`: its time
//!   is totally ordered, and no rule of the stratum reads its relations) —
//!   except a *counted* relation ([`counted_relations`]: no other stratum
//!   reads it, e.g. every output), whose `base ∪ rule outputs` is captured
//!   as a multiset, each row on one worker (exchanged by its hash), and
//!   made a set by the driver's count of derivations: no arrangement at
//!   all for the rows nothing in the dataflow reads. A split stratum's
//!   rule pieces hand their derivations on as multisets (to the driver,
//!   counted, or to the union piece, which makes the set: `pieces.rs`).
//!   A recursive stratum is one iterative scope (`u32`
//!   rounds) with a `Variable` per relation (mutual recursion), the piece's
//!   collections/arrangements entered, the same distinct per round, and the
//!   results left back out.
//! - The final collections of a piece's relations feed ONE capture
//!   operator that appends their updates to [`Piece::captured`], marks
//!   every piece they go to (`PieceMap::targets`) in the shared `dirty`
//!   stamps (any worker may see the change; all must run the reader), and
//!   publishes the least time its inputs can still bring
//!   ([`Piece::frontier`]). Once that passes the piece's time `k + 1` the
//!   buffer holds all of run `k`'s changes on this worker (not consolidated
//!   across workers): an input's frontier passes a time only after every
//!   message at that time was consumed. Why not a probe after it: a probe
//!   is one more operator and channel in every piece, moved by progress
//!   tracking at each run.
//! - Arrangements are shared per scope through [`Env`]; the environment is
//!   dropped when building ends, so no trace handle outlives the dataflow's
//!   own operators (compaction is never held back).

use super::arrange::{
    distinct_arranged, distinct_total, keys_collection, Coll, Counters, Env, Inner, KeyArr, Time,
};
use super::body::{render_rule, scan_join};
use super::pieces::{Kind, Out, PieceMap};
use super::skip::Skip;
use super::trace::Trace;
use super::tuple::Tuple;
use differential_dataflow::input::InputSession;
use differential_dataflow::operators::iterate::VecVariable;
use differential_dataflow::AsCollection;
use netc_compiler::plan::{Body, Plan, RelId, RulePlan, Source, Step, Stratum};
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::core::{Exchange, Partition};
use timely::dataflow::operators::generic::builder_rc::OperatorBuilder;
use timely::dataflow::Scope;
use timely::order::Product;
use timely::worker::Worker;

/// Captured `(relation, tuple, diff)` updates of a piece's latest run.
pub type Captured = Rc<RefCell<Vec<(RelId, Tuple, isize)>>>;

/// Per piece, the epoch stamp (`epoch + 1`) of the last epoch in which it
/// must run: marked by the driver for base facts and by a lower piece's
/// capture, on any worker, for a change of a relation it reads (unless
/// `skip.rs` defers every such row). Shared by all workers of an engine.
pub type Dirty = Arc<Vec<AtomicU64>>;

/// Where changes go, by relation: which pieces read them.
pub struct Routes {
    /// Pieces fed a base fact of the relation: its own stratum's piece if
    /// it is derived, else every piece that reads it.
    pub base: Vec<Vec<usize>>,
    /// Pieces fed the captured changes of a derived relation (its readers).
    pub derived: Vec<Vec<usize>>,
    /// Per stratum, the relations its rules read that it does not define.
    reads: Vec<BTreeSet<RelId>>,
    /// Per relation, the stratum defining it (`None`: input-only).
    owner: Vec<Option<usize>>,
}

impl Routes {
    pub fn new(plan: &Plan) -> Routes {
        let n = plan.relations.len();
        let mut owner = vec![None; n];
        for (p, s) in plan.strata.iter().enumerate() {
            for &r in &s.relations {
                owner[r] = Some(p);
            }
        }
        let mut base = vec![Vec::new(); n];
        let mut derived = vec![Vec::new(); n];
        let mut reads = Vec::with_capacity(plan.strata.len());
        for (p, s) in plan.strata.iter().enumerate() {
            let mut rs = BTreeSet::new();
            for rule in &s.rules {
                rs.extend(rule.body.reads().into_iter().map(|(r, _)| r));
            }
            rs.retain(|r| owner[*r] != Some(p));
            for &r in &s.relations {
                base[r].push(p);
            }
            for &r in &rs {
                match owner[r] {
                    Some(_) => derived[r].push(p),
                    None => base[r].push(p),
                }
            }
            reads.push(rs);
        }
        Routes {
            base,
            derived,
            reads,
            owner,
        }
    }

    /// The relations stratum `s`'s rules read that it does not define.
    pub fn reads(&self, s: usize) -> &BTreeSet<RelId> {
        &self.reads[s]
    }

    /// The stratum defining `rel` (`None`: an input-only relation).
    pub fn owner(&self, rel: RelId) -> Option<usize> {
        self.owner[rel]
    }

    /// Whether no other stratum reads `rel`: its stratum, if flat, hands
    /// it on counted (see module docs).
    pub fn unread(&self, rel: RelId) -> bool {
        self.derived[rel].is_empty()
    }
}

/// Per relation, whether its stratum hands it on *counted* (see module
/// docs): it belongs to a non-recursive stratum and no other stratum reads
/// it. The driver and every worker compute the same answer from the plan.
pub fn counted_relations(plan: &Plan) -> Vec<bool> {
    let routes = Routes::new(plan);
    let mut counted = vec![false; plan.relations.len()];
    for s in plan.strata.iter().filter(|s| !s.recursive) {
        for &r in &s.relations {
            counted[r] = routes.unread(r);
        }
    }
    counted
}

/// One stratum's dataflow on this worker (see module docs).
pub struct Piece {
    /// Base facts and lower strata's changes, tagged with the relation.
    pub input: InputSession<u64, (RelId, Tuple), isize>,
    /// The one-row input behind `Source::Unit`, until [`Built::start`].
    unit: Option<InputSession<u64, Tuple, isize>>,
    /// The least time the capture operator's inputs can still bring
    /// (`u64::MAX` once they are closed): the piece's run `k` is done when
    /// it is past `k + 1`.
    pub frontier: Rc<Cell<u64>>,
    pub captured: Captured,
    /// How many times the piece has run (its input's time).
    pub time: u64,
    /// Timely identifiers its dataflow took — operators and channels — a
    /// measure of its size (for `NETC_ENGINE_TRACE`).
    pub operators: usize,
}

/// What a worker keeps after building: its pieces and how they connect.
pub struct Built {
    /// In stratum order (every piece reads only lower ones); `None`: a
    /// piece another lane builds and runs (`lanes.rs`).
    pub pieces: Vec<Option<Piece>>,
    /// Per piece, the rows bound for its input that it has not been fed:
    /// this epoch's, or deferred ones (`skip.rs`), fed when it next runs.
    pub pending: Vec<Vec<(RelId, Tuple, isize)>>,
    /// Per piece, how many pending rows it held after they were last
    /// consolidated (they are again once they double).
    pub pending_floor: Vec<usize>,
    pub map: Arc<PieceMap>,
    pub dirty: Dirty,
    /// The current epoch's stamp (`epoch + 1`), read by capture operators.
    pub stamp: Rc<Cell<u64>>,
    pub counters: Rc<Counters>,
    /// `NETC_ENGINE_TRACE`'s per-piece lines, when it is set.
    pub trace: Option<Trace>,
}

impl Built {
    /// Puts the single empty row in every unit input (on worker 0 only) and
    /// closes them, so it stays forever. Call once, after building.
    pub fn start(&mut self, worker_index: usize) {
        for piece in self.pieces.iter_mut().flatten() {
            if let Some(mut u) = piece.unit.take() {
                if worker_index == 0 {
                    u.insert(Tuple::empty());
                }
                u.close();
            }
        }
    }
}

/// Builds every piece of `map` (see `pieces.rs`) for which `mine` holds as
/// its own dataflow on `worker` (see module docs). `dirty` has one stamp
/// per piece, shared by all workers of every lane; so is `skip` (deferring,
/// `skip.rs`), if on. `id` names the worker in `NETC_ENGINE_TRACE`.
pub fn build(
    worker: &mut Worker,
    plan: &Plan,
    map: Arc<PieceMap>,
    dirty: Dirty,
    skip: Option<Arc<Skip>>,
    mine: impl Fn(usize) -> bool,
    id: usize,
) -> Result<Built, String> {
    let names: Rc<[String]> = plan.relations.iter().map(|r| r.name.clone()).collect();
    let arities: Rc<[usize]> = plan.relations.iter().map(|r| r.arity()).collect();
    let counters = Rc::new(Counters::default());
    if dirty.len() != map.len() {
        return Err(format!(
            "{} dirty stamps for {} pieces",
            dirty.len(),
            map.len()
        ));
    }
    let stamp = Rc::new(Cell::new(0));
    let mut pieces = Vec::with_capacity(map.len());
    for p in 0..map.len() {
        if !mine(p) {
            pieces.push(None);
            continue;
        }
        let ctx = PieceCtx {
            plan,
            piece: p,
            map: map.clone(),
            dirty: dirty.clone(),
            stamp: stamp.clone(),
            names: names.clone(),
            arities: arities.clone(),
            counters: counters.clone(),
            skip: skip.clone(),
        };
        let first = worker.peek_identifier();
        let mut piece = worker.dataflow::<u64, _, _>(|scope| build_piece(scope, ctx))?;
        piece.operators = worker.peek_identifier() - first;
        pieces.push(Some(piece));
    }
    Ok(Built {
        pending: vec![Vec::new(); pieces.len()],
        pending_floor: vec![512; pieces.len()],
        pieces,
        trace: Trace::from_env(plan, &map, id),
        map,
        dirty,
        stamp,
        counters,
    })
}

/// What building one piece needs.
struct PieceCtx<'a> {
    plan: &'a Plan,
    /// Its index in `map`.
    piece: usize,
    map: Arc<PieceMap>,
    dirty: Dirty,
    stamp: Rc<Cell<u64>>,
    names: Rc<[String]>,
    arities: Rc<[usize]>,
    counters: Rc<Counters>,
    skip: Option<Arc<Skip>>,
}

fn build_piece(scope: Scope<'_, u64>, ctx: PieceCtx<'_>) -> Result<Piece, String> {
    let n = ctx.names.len();
    let spec = &ctx.map.pieces[ctx.piece];
    let stratum = &ctx.plan.strata[spec.stratum];
    // Local streams: the relations read, then the stratum's own base facts.
    let locals: Vec<RelId> = spec
        .reads
        .iter()
        .copied()
        .chain(spec.own.iter().copied())
        .collect();
    let mut local_of = vec![u64::MAX; n];
    for (i, &r) in locals.iter().enumerate() {
        local_of[r] = i as u64;
    }
    let mut input = InputSession::new();
    let streams: Vec<Coll<'_, u64>> = input
        .to_collection(scope)
        .inner
        .partition::<CapacityContainerBuilder<Vec<(Tuple, u64, isize)>>, _, _>(
            locals.len() as u64,
            move |((rel, t), time, diff)| (local_of[rel], (t, time, diff)),
        )
        .into_iter()
        .map(|s| s.as_collection())
        .collect();
    // Filled (worker 0) and closed by `Built::start`, after construction:
    // data sent into an input while the dataflow is still being built never
    // reaches a loop it is entered into (timely 0.32), and the loop never
    // completes.
    let mut unit_input = InputSession::new();
    let unit = unit_input.to_collection(scope);

    let mut env = Env::new(
        scope,
        unit,
        ctx.names.clone(),
        ctx.arities.clone(),
        ctx.counters.clone(),
    );
    let mut base: Vec<Option<Coll<'_, u64>>> = vec![None; n];
    for (&rel, c) in locals.iter().zip(streams) {
        if spec.reads.contains(&rel) {
            env.rels[rel] = Some(c);
        } else {
            base[rel] = Some(c);
        }
    }
    if stratum.recursive {
        render_recursive(&mut env, ctx.plan, stratum, &base)?;
    } else {
        let rules: Vec<&RulePlan> = match &spec.kind {
            Kind::Whole => stratum.rules.iter().collect(),
            Kind::Rules(rs) => rs.iter().map(|&i| &stratum.rules[i]).collect(),
            Kind::Union => Vec::new(),
        };
        render_flat(&mut env, ctx.plan, &rules, &spec.outputs, &mut base)?;
    }

    let frontier = Rc::new(Cell::new(0));
    let captured: Captured = Rc::new(RefCell::new(Vec::new()));
    let mut own = Vec::new();
    for &(rel, _) in &spec.outputs {
        let c = env.rels[rel]
            .clone()
            .ok_or_else(|| format!("relation {} was never rendered", ctx.names[rel]))?;
        own.push((rel, c));
    }
    let marks = Marks {
        piece: ctx.piece,
        map: ctx.map.clone(),
        dirty: ctx.dirty,
        stamp: ctx.stamp,
        skip: ctx.skip,
    };
    capture(scope, own, captured.clone(), marks, frontier.clone());
    Ok(Piece {
        input,
        unit: Some(unit_input),
        frontier,
        captured,
        time: 0,
        operators: 0,
    })
}

/// How a capture operator tells the readers of a changed relation.
struct Marks {
    piece: usize,
    map: Arc<PieceMap>,
    dirty: Dirty,
    stamp: Rc<Cell<u64>>,
    /// Deferring (`skip.rs`): counts the piece's set outputs into `U` and
    /// decides, row by row, whether a reader must run.
    skip: Option<Arc<Skip>>,
}

impl Marks {
    /// `rows` of `rel` were captured. Marks are published before this
    /// worker reports the data consumed, so a worker whose capture frontier
    /// has passed sees them (progress messages synchronise the threads).
    fn changed(&self, rel: RelId, rows: &[(RelId, Tuple, isize)]) {
        let stamp = self.stamp.get();
        let targets = self.map.targets(self.piece, rel);
        let Some(skip) = &self.skip else {
            for &p in targets {
                self.dirty[p].fetch_max(stamp, Ordering::AcqRel);
            }
            return;
        };
        let counted = self
            .map
            .out(self.piece, rel)
            .is_some_and(|o| skip.gates.counts_at(rel, o));
        // The first epoch runs every piece: only `U` needs the rows.
        let first = stamp == 1;
        if first {
            for &p in targets {
                self.dirty[p].fetch_max(stamp, Ordering::AcqRel);
            }
        }
        let undecided = !first
            && targets
                .iter()
                .any(|&p| self.dirty[p].load(Ordering::Acquire) != stamp);
        if !counted && !undecided {
            return;
        }
        let mut state = skip.state.lock().unwrap_or_else(PoisonError::into_inner);
        for (_, t, d) in rows {
            if counted {
                state.update(&skip.gates, rel, t, *d);
            }
            if undecided {
                for &p in targets {
                    state.route(&skip.gates, &self.dirty, stamp, p, (rel, t, *d));
                }
            }
        }
    }
}

/// One operator appending every given relation's updates to `buf` (see
/// module docs); `frontier` gets the least of its inputs' frontiers each time
/// they move (it holds no capability and has no output).
fn capture<'s>(
    scope: Scope<'s, u64>,
    colls: Vec<(RelId, Coll<'s, u64>)>,
    buf: Captured,
    marks: Marks,
    frontier: Rc<Cell<u64>>,
) {
    let mut builder = OperatorBuilder::new("Capture".to_owned(), scope);
    let mut inputs = Vec::with_capacity(colls.len());
    for (rel, c) in colls {
        // Scheduled for data and for frontier moves (the default interest):
        // the frontier is what the driver waits on.
        inputs.push((rel, builder.new_input(c.inner, Pipeline)));
    }
    builder.build(move |capabilities| {
        drop(capabilities);
        move |frontiers| {
            let mut out = buf.borrow_mut();
            for (rel, input) in inputs.iter_mut() {
                let before = out.len();
                input.for_each(|_, data| out.extend(data.drain(..).map(|(t, _, d)| (*rel, t, d))));
                if out.len() > before {
                    marks.changed(*rel, &out[before..]);
                }
            }
            // A totally ordered time: each frontier is one time or none.
            let least = frontiers
                .iter()
                .filter_map(|f| f.frontier().first().copied())
                .min()
                .unwrap_or(u64::MAX);
            frontier.set(least);
        }
    });
}

/// A relation's base input and rule outputs as one collection.
fn concat<'s, T: Time>(parts: Vec<Coll<'s, T>>) -> Coll<'s, T> {
    let mut parts = parts.into_iter();
    let first = parts.next().expect("every relation has a base input");
    if parts.len() == 0 {
        // No operator for a single part (a rule piece's only rule).
        return first;
    }
    first.concatenate(parts)
}

/// `distinct(concat(parts))`, registered as the relation's collection and
/// as its full-width key set (negation of the whole tuple reuses it).
fn finish<'s, T: Time>(env: &mut Env<'s, T>, rel: RelId, parts: Vec<Coll<'s, T>>) -> Coll<'s, T> {
    let arr = distinct_arranged(concat(parts), &format!("Distinct {}", env.names[rel]));
    env.put_keyset(
        rel,
        (0..env.arities[rel]).collect(),
        KeyArr::Own(arr.clone()),
    );
    keys_collection(&arr)
}

/// A flat stratum's `distinct(concat(parts))`: no output arrangement (see
/// [`distinct_total`]; nothing in the piece negates its own relation).
fn finish_flat<'s>(env: &Env<'s, u64>, rel: RelId, parts: Vec<Coll<'s, u64>>) -> Coll<'s, u64> {
    distinct_total(concat(parts), &format!("Distinct {}", env.names[rel]))
}

/// A counted relation's `base ∪ rule outputs` as a multiset, each row on
/// the worker its hash names (so one worker's captured part holds all of a
/// row's changes and the driver's counts never go below zero mid-epoch).
/// With one worker every row is on it already: no exchange operator (one
/// operator and channel fewer in every piece with a counted output, which
/// a warm change pays for in each such piece it reaches).
fn finish_counted<'s>(parts: Vec<Coll<'s, u64>>) -> Coll<'s, u64> {
    let all = concat(parts);
    if all.inner.scope().peers() == 1 {
        return all;
    }
    all.inner
        .exchange(|(t, _, _): &(Tuple, u64, isize)| t.route())
        .as_collection()
}

/// A non-recursive stratum's piece: `rules` (all of the stratum's, some,
/// or none for a union piece) and each output made as its [`Out`] says,
/// from the rules' outputs and the relation's input stream if the piece
/// takes it (`base`).
fn render_flat<'s>(
    env: &mut Env<'s, u64>,
    plan: &Plan,
    rules: &[&RulePlan],
    outputs: &[(RelId, Out)],
    base: &mut [Option<Coll<'s, u64>>],
) -> Result<(), String> {
    let mut parts: BTreeMap<RelId, Vec<Coll<'s, u64>>> = BTreeMap::new();
    for &(r, _) in outputs {
        parts.insert(r, base[r].take().into_iter().collect());
    }
    for rule in rules {
        let out = render_rule(env, plan, rule)?;
        parts.entry(rule.head).or_default().push(out);
    }
    for &(rel, out) in outputs {
        let p = parts.remove(&rel).unwrap_or_default();
        if p.is_empty() {
            return Err(format!(
                "relation {} has no input in its piece",
                env.names[rel]
            ));
        }
        let c = match out {
            Out::Counted => finish_counted(p),
            Out::Set => finish_flat(env, rel, p),
            Out::ToUnion(_) => concat(p),
        };
        env.rels[rel] = Some(c);
    }
    Ok(())
}

/// What a recursive stratum needs from lower strata.
#[derive(Default)]
struct Needs {
    colls: BTreeSet<RelId>,
    arrs: BTreeSet<(RelId, Vec<usize>)>,
    keysets: BTreeSet<(RelId, Vec<usize>)>,
}

impl Needs {
    fn body(&mut self, body: &Body, own: &[RelId]) {
        let lower = |r: &RelId| !own.contains(r);
        if let Source::Scan(scan) = &body.source {
            if lower(&scan.rel) {
                // A leading plain scan + join uses the scanned relation's
                // arrangement (the join's side is recorded below); any
                // other scan reads its collection.
                match scan_join(scan, body.steps.first()) {
                    Some(sj) => self.arrs.insert((scan.rel, sj.left)),
                    None => self.colls.insert(scan.rel),
                };
            }
        }
        for step in &body.steps {
            match step {
                Step::Join { rel, right_key, .. } if lower(rel) => {
                    self.arrs.insert((*rel, right_key.clone()));
                }
                Step::AntiJoin {
                    rel, right_cols, ..
                } if lower(rel) => {
                    self.keysets.insert((*rel, right_cols.clone()));
                }
                Step::Aggregate { inner, .. } => self.body(inner, own),
                _ => {}
            }
        }
    }
}

fn render_recursive<'s>(
    env: &mut Env<'s, u64>,
    plan: &Plan,
    stratum: &Stratum,
    base: &[Option<Coll<'s, u64>>],
) -> Result<(), String> {
    let outer = env.scope;
    let own = &stratum.relations;
    let mut needs = Needs::default();
    for rule in &stratum.rules {
        needs.body(&rule.body, own);
    }
    // Build what the loop needs in the piece's outer scope (entered, the
    // loop shares those traces).
    let mut arrs = Vec::new();
    for (rel, key) in &needs.arrs {
        arrs.push((*rel, key.clone(), env.arrangement(*rel, key)?));
    }
    let mut keysets = Vec::new();
    for (rel, cols) in &needs.keysets {
        keysets.push((*rel, cols.clone(), env.keyset(*rel, cols)?));
    }
    let mut colls = Vec::new();
    for &rel in &needs.colls {
        colls.push((
            rel,
            env.rels[rel]
                .clone()
                .ok_or_else(|| format!("relation {} used before it is rendered", env.names[rel]))?,
        ));
    }
    let mut own_base = BTreeMap::new();
    for &rel in own {
        own_base.insert(rel, base_of(base, rel)?);
    }
    let unit = env.unit.clone();
    let (names, arities, counters) = (env.names.clone(), env.arities.clone(), env.counters.clone());

    let results =
        outer.iterative::<u32, _, _>(|inner| -> Result<Vec<(RelId, Coll<'s, u64>)>, String> {
            let mut ienv: Env<'_, Inner> =
                Env::new(inner, unit.enter(inner), names, arities, counters);
            for (rel, c) in colls {
                ienv.rels[rel] = Some(c.enter(inner));
            }
            for (rel, key, a) in arrs {
                ienv.put_arrangement(
                    rel,
                    key,
                    a.enter(inner)
                        .ok_or("an entered arrangement cannot be entered again")?,
                );
            }
            for (rel, cols, a) in keysets {
                ienv.put_keyset(
                    rel,
                    cols,
                    a.enter(inner)
                        .ok_or("an entered key set cannot be entered again")?,
                );
            }
            let mut vars = Vec::new();
            let mut parts: BTreeMap<RelId, Vec<Coll<'_, Inner>>> = BTreeMap::new();
            for &rel in own {
                let (var, coll) = VecVariable::new(inner, Product::new(0, 1));
                ienv.rels[rel] = Some(coll);
                vars.push((rel, var));
                if let Some(b) = own_base.remove(&rel) {
                    parts.insert(rel, vec![b.enter(inner)]);
                }
            }
            let mut failed = None;
            for rule in &stratum.rules {
                match render_rule(&mut ienv, plan, rule) {
                    Ok(out) => parts.entry(rule.head).or_default().push(out),
                    Err(e) => {
                        failed = Some(e);
                        break;
                    }
                }
            }
            let mut out = Vec::new();
            for (rel, var) in vars {
                let result = finish(&mut ienv, rel, parts.remove(&rel).unwrap_or_default());
                // Every variable must be set, even on failure (timely panics on
                // an unconnected feedback).
                var.set(result.clone());
                out.push((rel, result.leave(outer)));
            }
            match failed {
                Some(e) => Err(e),
                None => Ok(out),
            }
        })?;
    for (rel, c) in results {
        env.rels[rel] = Some(c);
    }
    Ok(())
}

/// The base-fact collection of one of the stratum's own relations.
fn base_of<'s>(base: &[Option<Coll<'s, u64>>], rel: RelId) -> Result<Coll<'s, u64>, String> {
    base.get(rel)
        .and_then(|c| c.clone())
        .ok_or_else(|| format!("relation {rel} has no base input in its stratum"))
}
