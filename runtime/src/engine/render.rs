//! Plan → differential dataflow, on one worker.
//!
//! Expects: a plan accepted by `validate::plan`; every worker calls
//! [`build`] with the same plan, so all build the same dataflow.
//! Guarantees:
//! - One input for the base facts of every relation, as `(relation,
//!   tuple)` pairs (already a set — the driver dedups), split into one
//!   collection per relation by a single `Partition` operator; plus a
//!   constant one-row "unit" input for `Source::Unit`. One input means one
//!   frontier to advance per epoch: timely's progress tracking then moves a
//!   single capability instead of one per relation (which made every commit
//!   cost time proportional to the number of relations).
//! - Strata are rendered in order. A non-recursive stratum makes each of its
//!   relations `distinct(base ∪ rule outputs)`. A recursive stratum is one
//!   iterative scope (`u32` rounds) with a `Variable` per relation (mutual
//!   recursion), lower-strata collections/arrangements entered, the same
//!   distinct per round, and the results left back out.
//! - The final collections of all derived relations (in a stratum) feed ONE
//!   capture operator (one input per relation, never scheduled for frontier
//!   changes alone) that appends their updates to [`Built::captured`]; its
//!   empty output is attached to [`Built::probe`]. Once the probe passes
//!   epoch `e + 1` the capture buffer holds all of epoch `e`'s derived
//!   changes on this worker (not consolidated across workers). Input-only
//!   relations are not captured: their changes are the driver's own
//!   base-fact changes. One operator instead of an inspect and a probe per
//!   relation: probes are scheduled on every frontier change, so N of them
//!   were N operator runs per commit.
//! - Arrangements are shared per scope through [`Env`]; the environment is
//!   dropped when building ends, so no trace handle outlives the dataflow's
//!   own operators (compaction is never held back).

use super::arrange::{
    distinct_arranged, keys_collection, Coll, Counters, Env, Inner, KeyArr, Time,
};
use super::body::{render_rule, scan_join};
use super::tuple::Tuple;
use differential_dataflow::input::InputSession;
use differential_dataflow::operators::iterate::VecVariable;
use differential_dataflow::AsCollection;
use netc_compiler::plan::{Body, Plan, RelId, Source, Step, Stratum};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::core::{Partition, Probe};
use timely::dataflow::operators::generic::builder_rc::OperatorBuilder;
use timely::dataflow::{ProbeHandle, Scope};
use timely::order::Product;
use timely::progress::operate::FrontierInterest;

/// Captured `(relation, tuple, diff)` updates of the current epoch.
pub type Captured = Rc<RefCell<Vec<(RelId, Tuple, isize)>>>;

/// What a worker keeps after building: its inputs and observation points.
pub struct Built {
    /// The base facts of every relation, tagged with its id.
    pub input: InputSession<u64, (RelId, Tuple), isize>,
    /// The one-row input behind `Source::Unit`, until [`Built::start`].
    unit: Option<InputSession<u64, Tuple, isize>>,
    pub probe: ProbeHandle<u64>,
    pub captured: Captured,
    pub counters: Rc<Counters>,
}

impl Built {
    /// Puts the single empty row in the unit input (on worker 0 only) and
    /// closes it, so it stays forever. Call once, after the dataflow is built.
    pub fn start(&mut self, worker_index: usize) {
        if let Some(mut u) = self.unit.take() {
            if worker_index == 0 {
                u.insert(Tuple::empty());
            }
            u.close();
        }
    }
}

/// Builds the whole plan in `scope` (see module docs).
pub fn build(scope: Scope<'_, u64>, plan: &Plan) -> Result<Built, String> {
    let names: Rc<[String]> = plan.relations.iter().map(|r| r.name.clone()).collect();
    let arities: Rc<[usize]> = plan.relations.iter().map(|r| r.arity()).collect();
    let counters = Rc::new(Counters::default());

    let mut input = InputSession::new();
    let base: Vec<Coll<'_, u64>> = input
        .to_collection(scope)
        .inner
        .partition::<CapacityContainerBuilder<Vec<(Tuple, u64, isize)>>, _, _>(
            names.len() as u64,
            |((rel, t), time, diff)| (rel as u64, (t, time, diff)),
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

    let mut env = Env::new(scope, unit, names.clone(), arities, counters.clone());
    let mut in_stratum = vec![false; names.len()];
    for s in &plan.strata {
        for &r in &s.relations {
            in_stratum[r] = true;
        }
    }
    for (rel, c) in base.iter().enumerate() {
        if !in_stratum[rel] {
            env.rels[rel] = Some(c.clone());
        }
    }
    for stratum in &plan.strata {
        if stratum.recursive {
            render_recursive(&mut env, plan, stratum, &base)?;
        } else {
            render_flat(&mut env, plan, stratum, &base)?;
        }
    }

    let probe = ProbeHandle::new();
    let captured: Captured = Rc::new(RefCell::new(Vec::new()));
    let mut derived = Vec::new();
    for (rel, c) in env.rels.iter().enumerate() {
        let c = c
            .clone()
            .ok_or_else(|| format!("relation {} was never rendered", names[rel]))?;
        // An input-only relation's changes are known to the driver.
        if in_stratum[rel] {
            derived.push((rel, c));
        }
    }
    capture(scope, derived, captured.clone(), &probe);
    Ok(Built {
        input,
        unit: Some(unit_input),
        probe,
        captured,
        counters,
    })
}

/// One operator appending every given relation's updates to `buf` (see
/// module docs); `probe` observes its output, whose frontier is the least of
/// its inputs' (it holds no capability).
fn capture<'s>(
    scope: Scope<'s, u64>,
    colls: Vec<(RelId, Coll<'s, u64>)>,
    buf: Captured,
    probe: &ProbeHandle<u64>,
) {
    let mut builder = OperatorBuilder::new("Capture".to_owned(), scope);
    let mut inputs = Vec::with_capacity(colls.len());
    for (i, (rel, c)) in colls.into_iter().enumerate() {
        inputs.push((rel, builder.new_input(c.inner, Pipeline)));
        // Only data needs handling; frontiers reach the probe regardless.
        builder.set_notify_for(i, FrontierInterest::Never);
    }
    let (_output, stream) = builder.new_output::<Vec<()>>();
    builder.build(move |capabilities| {
        drop(capabilities);
        move |_frontiers| {
            let mut out = buf.borrow_mut();
            for (rel, input) in inputs.iter_mut() {
                input.for_each(|_, data| out.extend(data.drain(..).map(|(t, _, d)| (*rel, t, d))));
            }
        }
    });
    stream.probe_with(probe);
}

/// `distinct(concat(parts))`, registered as the relation's collection and
/// as its full-width key set (negation of the whole tuple reuses it).
fn finish<'s, T: Time>(env: &mut Env<'s, T>, rel: RelId, parts: Vec<Coll<'s, T>>) -> Coll<'s, T> {
    let mut parts = parts.into_iter();
    let first = parts.next().expect("every relation has a base input");
    let all = first.concatenate(parts);
    let arr = distinct_arranged(all, &format!("Distinct {}", env.names[rel]));
    env.put_keyset(
        rel,
        (0..env.arities[rel]).collect(),
        KeyArr::Own(arr.clone()),
    );
    keys_collection(&arr)
}

fn render_flat<'s>(
    env: &mut Env<'s, u64>,
    plan: &Plan,
    stratum: &Stratum,
    base: &[Coll<'s, u64>],
) -> Result<(), String> {
    let mut parts: BTreeMap<RelId, Vec<Coll<'s, u64>>> = stratum
        .relations
        .iter()
        .map(|&r| (r, vec![base[r].clone()]))
        .collect();
    for rule in &stratum.rules {
        let out = render_rule(env, plan, rule)?;
        parts.entry(rule.head).or_default().push(out);
    }
    for (rel, p) in parts {
        let c = finish(env, rel, p);
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
    base: &[Coll<'s, u64>],
) -> Result<(), String> {
    let outer = env.scope;
    let own = &stratum.relations;
    let mut needs = Needs::default();
    for rule in &stratum.rules {
        needs.body(&rule.body, own);
    }
    // Build (or reuse) what the loop needs in the outer scope, so later
    // strata and other loops share the same traces.
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
                parts.insert(rel, vec![base[rel].clone().enter(inner)]);
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
