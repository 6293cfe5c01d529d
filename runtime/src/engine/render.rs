//! Plan → differential dataflow, on one worker.
//!
//! Expects: a plan accepted by `validate::plan`; every worker calls
//! [`build`] with the same plan, so all build the same dataflow.
//! Guarantees:
//! - One input per relation (base facts, already a set — the driver
//!   dedups), plus a constant one-row "unit" input for `Source::Unit`.
//! - Strata are rendered in order. A non-recursive stratum makes each of its
//!   relations `distinct(base ∪ rule outputs)`. A recursive stratum is one
//!   iterative scope (`u32` rounds) with a `Variable` per relation (mutual
//!   recursion), lower-strata collections/arrangements entered, the same
//!   distinct per round, and the results left back out.
//! - Every relation's final collection is attached to [`Built::probe`]; those
//!   of derived relations (in a stratum) are first inspected into
//!   [`Built::captured`]. Once the probe passes epoch `e + 1` the capture
//!   buffer holds all of epoch `e`'s derived changes on this worker (not
//!   consolidated across workers). Input-only relations are not captured:
//!   their changes are the driver's own base-fact changes.
//! - Arrangements are shared per scope through [`Env`]; the environment is
//!   dropped when building ends, so no trace handle outlives the dataflow's
//!   own operators (compaction is never held back).

use super::arrange::{
    distinct_arranged, join, join_arrs, keys_collection, semijoin, Arr, Coll, Counters, Env, Inner,
    KeyArr, Time,
};
use super::eval::{self, all_slots, ColProg, RowProg};
use super::tuple::{Builder, Tuple};
use differential_dataflow::input::InputSession;
use differential_dataflow::operators::iterate::VecVariable;
use differential_dataflow::trace::implementations::{ValBuilder, ValSpine};
use netc_compiler::ast::AggFunc;
use netc_compiler::plan::{Body, ColPat, Plan, RelId, RulePlan, Scan, Source, Step, Stratum};
use netc_compiler::types::Prim;
use netc_compiler::value::{Value, F64};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use timely::dataflow::{ProbeHandle, Scope};
use timely::order::Product;

/// Captured `(relation, tuple, diff)` updates of the current epoch.
pub type Captured = Rc<RefCell<Vec<(RelId, Tuple, isize)>>>;

/// What a worker keeps after building: its inputs and observation points.
pub struct Built {
    /// One input per relation, indexed by `RelId`.
    pub inputs: Vec<InputSession<u64, Tuple, isize>>,
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

    let mut inputs = Vec::with_capacity(names.len());
    let mut base = Vec::with_capacity(names.len());
    for _ in plan.relations.iter() {
        let mut input = InputSession::new();
        base.push(input.to_collection(scope));
        inputs.push(input);
    }
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
    for (rel, c) in env.rels.iter().enumerate() {
        let c = c
            .clone()
            .ok_or_else(|| format!("relation {} was never rendered", names[rel]))?;
        if !in_stratum[rel] {
            // An input-only relation's changes are known to the driver.
            c.probe_with(&probe);
            continue;
        }
        let buf = captured.clone();
        c.inspect_batch(move |_, data| {
            buf.borrow_mut()
                .extend(data.iter().map(|(t, _, d)| (rel, t.clone(), *d)))
        })
        .probe_with(&probe);
    }
    Ok(Built {
        inputs,
        unit: Some(unit_input),
        probe,
        captured,
        counters,
    })
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

/// A body that starts with a plain scan (all `Bind`, so slot i = column i)
/// followed by a join keyed by slots only: the join runs arrangement ×
/// arrangement, the scanned relation arranged by `left` (shared like any).
struct ScanJoin<'a> {
    left: Vec<usize>,
    rel: RelId,
    right_key: &'a [usize],
    cols: &'a [ColPat],
}

fn scan_join<'a>(scan: &Scan, first: Option<&'a Step>) -> Option<ScanJoin<'a>> {
    if !ColProg::new(&scan.cols).is_identity() {
        return None;
    }
    match first? {
        Step::Join {
            rel,
            left_key,
            right_key,
            cols,
        } => Some(ScanJoin {
            left: all_slots(left_key)?,
            rel: *rel,
            right_key,
            cols,
        }),
        _ => None,
    }
}

fn render_rule<'s, T: Time>(
    env: &mut Env<'s, T>,
    plan: &Plan,
    rule: &RulePlan,
) -> Result<Coll<'s, T>, String> {
    let rows = render_body(env, plan, &rule.body, None)?;
    let head = RowProg::new(&rule.head_exprs);
    let counters = env.counters.clone();
    Ok(rows.flat_map(move |r| {
        counters.tick();
        head.apply(&r)
    }))
}

fn render_body<'s, T: Time>(
    env: &mut Env<'s, T>,
    plan: &Plan,
    body: &Body,
    outer: Option<Coll<'s, T>>,
) -> Result<Coll<'s, T>, String> {
    let mut skip = 0;
    let mut rows = match &body.source {
        Source::Unit => env.unit.clone(),
        Source::Outer => outer.ok_or("Source::Outer outside an aggregate")?,
        Source::Scan(scan) => {
            if let Some(ScanJoin {
                left,
                rel,
                right_key,
                cols,
            }) = scan_join(scan, body.steps.first())
            {
                skip = 1;
                let l = env.arrangement(scan.rel, &left)?;
                let r = env.arrangement(rel, right_key)?;
                let (cp, counters) = (ColProg::new(cols), env.counters.clone());
                join_arrs(&l, &r, move |a, b| {
                    counters.tick();
                    cp.extend(a, b)
                })
            } else {
                let c = env
                    .rels
                    .get(scan.rel)
                    .cloned()
                    .flatten()
                    .ok_or("scan of a relation not yet rendered")?;
                let cp = ColProg::new(&scan.cols);
                if cp.is_identity() {
                    c
                } else {
                    let counters = env.counters.clone();
                    c.flat_map(move |t| {
                        counters.tick();
                        cp.scan(&t)
                    })
                }
            }
        }
    };
    for step in &body.steps[skip..] {
        rows = render_step(env, plan, step, rows)?;
    }
    Ok(rows)
}

fn keyed<'s, T: Time>(
    rows: Coll<'s, T>,
    key: &[netc_compiler::plan::Expr],
) -> super::arrange::Keyed<'s, T> {
    let key = RowProg::new(key);
    rows.flat_map(move |r| key.apply(&r).map(|k| (k, r)))
}

fn render_step<'s, T: Time>(
    env: &mut Env<'s, T>,
    plan: &Plan,
    step: &Step,
    rows: Coll<'s, T>,
) -> Result<Coll<'s, T>, String> {
    let counters = env.counters.clone();
    Ok(match step {
        Step::Join {
            rel,
            left_key,
            right_key,
            cols,
        } => {
            let arr = env.arrangement(*rel, right_key)?;
            let cp = ColProg::new(cols);
            join(keyed(rows, left_key), &arr, move |row, t| {
                counters.tick();
                cp.extend(row, t)
            })
        }
        Step::AntiJoin {
            rel,
            left_key,
            right_cols,
        } => {
            let keys = env.keyset(*rel, right_cols)?;
            let k = keyed(rows, left_key);
            let matched = semijoin(k.clone(), &keys);
            k.map(move |(_, r)| {
                counters.tick();
                r
            })
            .concat(matched.negate())
        }
        Step::Filter(c) => {
            let c = c.clone();
            rows.filter(move |r| {
                counters.tick();
                eval::holds(&c, r)
            })
        }
        Step::Bind(e) => {
            let e = e.clone();
            rows.flat_map(move |r| {
                counters.tick();
                let v = eval::eval(&e, &r)?;
                let mut b = Builder::from(&r);
                b.push(v);
                Some(b.finish())
            })
        }
        Step::Aggregate {
            func,
            group,
            inner,
            value,
            result,
        } => render_aggregate(
            env,
            plan,
            rows,
            *func,
            group,
            inner,
            value.as_ref(),
            *result,
        )?,
    })
}

/// Appends an aggregate to every row (see `Step::Aggregate`). The reduce
/// sees, per group key, one marker (an empty tuple, so groups without inner
/// rows still exist: count/sum give 0 there) and the inner values with
/// their multiplicities (one per combination of inner tuples, as Souffle
/// counts). Its output arrangement is joined straight back to the rows.
#[allow(clippy::too_many_arguments)]
fn render_aggregate<'s, T: Time>(
    env: &mut Env<'s, T>,
    plan: &Plan,
    rows: Coll<'s, T>,
    func: AggFunc,
    group: &[usize],
    inner: &Body,
    value: Option<&netc_compiler::plan::Expr>,
    result: Prim,
) -> Result<Coll<'s, T>, String> {
    let g = group.to_vec();
    let keys = rows.clone().map(move |r| r.project(&g)).distinct();
    let inner_rows = render_body(env, plan, inner, Some(keys.clone()))?;
    let glen = group.len();
    let value = value.cloned();
    let counters = env.counters.clone();
    let values = inner_rows.flat_map(move |r| {
        counters.tick();
        let v = match (&value, func) {
            (_, AggFunc::Count) => Value::Number(1),
            (Some(e), _) => eval::eval(e, &r)?,
            (None, _) => return None,
        };
        Some((r.prefix(glen), Tuple::from_values(&[v])))
    });
    let markers = keys.map(|k| (k, Tuple::empty()));
    let agg = values
        .concat(markers)
        .reduce_abelian::<_, ValBuilder<Tuple, Tuple, T, isize>, ValSpine<Tuple, Tuple, T, isize>>(
            "Aggregate",
            move |_key, input, output| {
                if let Some(v) = aggregate(func, result, input) {
                    output.push((Tuple::from_values(&[v]), 1));
                }
            },
        );
    let counters = env.counters.clone();
    Ok(join(
        keyed_by_slots(rows, group),
        &Arr::Own(agg),
        move |row, res| {
            counters.tick();
            Some(row.concat(res))
        },
    ))
}

fn keyed_by_slots<'s, T: Time>(rows: Coll<'s, T>, slots: &[usize]) -> super::arrange::Keyed<'s, T> {
    let s = slots.to_vec();
    rows.map(move |r| (r.project(&s), r))
}

/// Folds one group's inner values (tuples of one value; the empty marker
/// tuple is skipped). `None`: no result (min/max of nothing, a sum type the
/// values cannot have).
fn aggregate(func: AggFunc, result: Prim, input: &[(&Tuple, isize)]) -> Option<Value> {
    let vals = input.iter().filter_map(|(t, d)| Some((t.get(0)?, *d)));
    match func {
        AggFunc::Count => {
            let n: i64 = vals.map(|(_, d)| d as i64).sum();
            Some(match result {
                Prim::Unsigned => Value::Unsigned(n as u64),
                Prim::Float => Value::Float(F64(n as f64)),
                _ => Value::Number(n),
            })
        }
        AggFunc::Sum => match result {
            Prim::Number => Some(Value::Number(vals.fold(0i64, |s, (v, d)| match v {
                Value::Number(x) => s.wrapping_add(x.wrapping_mul(d as i64)),
                _ => s,
            }))),
            Prim::Unsigned => Some(Value::Unsigned(vals.fold(0u64, |s, (v, d)| match v {
                Value::Unsigned(x) => s.wrapping_add(x.wrapping_mul(d as u64)),
                _ => s,
            }))),
            Prim::Float => Some(Value::Float(F64(vals.fold(0f64, |s, (v, d)| match v {
                Value::Float(F64(x)) => s + x * d as f64,
                _ => s,
            })))),
            _ => None,
        },
        AggFunc::Min => vals.map(|(v, _)| v).min(),
        AggFunc::Max => vals.map(|(v, _)| v).max(),
    }
}
