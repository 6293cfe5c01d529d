//! Rule bodies → dataflow: sources, joins, negation, filters, binds and
//! aggregates, in one scope.
//!
//! Expects: a validated plan; an [`Env`] holding the collections of every
//! relation the body reads (and, inside a loop, the entered arrangements
//! `render::Needs` asked for).
//! Guarantees:
//! - The output is the multiset the plan's left-deep pipeline defines:
//!   multiplicities are kept (one per combination of tuples), so
//!   `count`/`sum` see every combination, as in Souffle.
//! - Rows carry only *live* values: after each materializing step (scan,
//!   join, bind, aggregate) a row keeps just the slots later steps or the
//!   tail read, in a [`Layout`] that maps plan slots to positions. Rows stay
//!   narrow (usually inline tuples) and arrangements small.
//! - Fusion: a join or bind computes its output — the next rows, or the
//!   rule's head when it is the last step — straight from the virtual row
//!   "left ++ bound columns", with no intermediate row or extra operator;
//!   the filters right after a scan, join, bind or aggregate are checked on
//!   that virtual row in the same closure (no `filter` operator, and a body
//!   ending in filters emits its head there too). A
//!   body starting with a plain scan and a join by slots joins two shared
//!   arrangements (see [`scan_join`]). A scan, join or bind followed by a
//!   join emits its rows already keyed by that join's key (no `keyed` map
//!   between them: `next_join_key`).

use super::arrange::{join, join_arrs, semijoin, Arr, Coll, Env, Keyed, Time, ValTrace};
use super::eval::{
    self, all_slots, cond_slots, expr_slots, Appended, ColProg, Joined, Layout, RowProg,
};
use super::tuple::{sort_rows, Builder, Tuple};
use differential_dataflow::operators::arrange::Arranged;
use differential_dataflow::trace::implementations::{ValBuilder, ValSpine};
use netc_compiler::plan::AggFunc;
use netc_compiler::plan::{Body, ColPat, Cond, Expr, Plan, RelId, RulePlan, Scan, Source, Step};
use netc_compiler::types::Prim;
use netc_compiler::value::{Row, Value, F64};
use std::collections::BTreeSet;

/// A body that starts with a plain scan (all `Bind`, so slot i = column i)
/// followed by a join keyed by slots only: the join runs arrangement ×
/// arrangement, the scanned relation arranged by `left` (shared like any).
pub struct ScanJoin<'a> {
    pub left: Vec<usize>,
    pub rel: RelId,
    pub right_key: &'a [usize],
    pub cols: &'a [ColPat],
}

pub fn scan_join<'a>(scan: &Scan, first: Option<&'a Step>) -> Option<ScanJoin<'a>> {
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

/// What a body must produce.
enum Tail<'a> {
    /// The rule's head tuples.
    Head(&'a [Expr]),
    /// Rows holding (at least) these slots; the returned layout says where.
    Keep(BTreeSet<usize>),
}

impl Tail<'_> {
    fn needs(&self) -> BTreeSet<usize> {
        match self {
            Tail::Head(es) => {
                let mut s = BTreeSet::new();
                es.iter().for_each(|e| expr_slots(e, &mut s));
                s
            }
            Tail::Keep(s) => s.clone(),
        }
    }

    fn head(&self) -> Option<&[Expr]> {
        match self {
            Tail::Head(es) => Some(es),
            Tail::Keep(_) => None,
        }
    }
}

/// The slots a step reads from its input rows.
fn reads(step: &Step) -> BTreeSet<usize> {
    let mut s = BTreeSet::new();
    match step {
        Step::Join { left_key, .. } | Step::AntiJoin { left_key, .. } => {
            left_key.iter().for_each(|e| expr_slots(e, &mut s))
        }
        Step::Filter(c) => cond_slots(c, &mut s),
        Step::Bind(e) => expr_slots(e, &mut s),
        Step::Aggregate { group, .. } => s.extend(group.iter().copied()),
    }
    s
}

/// `live[i]`: the slots still needed once step `i` is done; `live[n]` is
/// what the tail needs, and `live_before(0)` what the source must provide.
fn liveness(steps: &[Step], tail: BTreeSet<usize>) -> Vec<BTreeSet<usize>> {
    let mut live = vec![BTreeSet::new(); steps.len() + 1];
    live[steps.len()] = tail;
    for i in (0..steps.len()).rev() {
        let mut s = live[i + 1].clone();
        s.extend(reads(&steps[i]));
        live[i] = s;
    }
    // Shift: live[i] = needed after step i = needed before step i + 1.
    live.remove(0);
    live
}

/// How a materializing step turns its virtual row into output.
struct Emit {
    prog: RowProg,
    /// The output rows' layout (unused for a head).
    layout: Layout,
    head: bool,
    /// The conditions of the `Filter` steps right after the step, fused
    /// into it (over the virtual row): a row failing one is not emitted.
    conds: Vec<Cond>,
}

/// How many `Filter` steps follow step `i` directly: a materializing step
/// checks them itself (see [`Emit::conds`]) instead of one operator each.
fn filters_after(steps: &[Step], i: usize) -> usize {
    steps[i + 1..]
        .iter()
        .take_while(|s| matches!(s, Step::Filter(_)))
        .count()
}

/// The conditions of `steps[from..to]` (all filters), over layout `virt`.
fn fused_conds(steps: &[Step], from: usize, to: usize, virt: &Layout) -> Vec<Cond> {
    steps[from..to]
        .iter()
        .filter_map(|s| match s {
            Step::Filter(c) => Some(virt.cond(c)),
            _ => None,
        })
        .collect()
}

impl Emit {
    /// Over a virtual row laid out as `virt`: the head if `head` is given,
    /// else the slots of `keep` (in `virt`'s order); no fused conditions.
    fn new(virt: &Layout, keep: &BTreeSet<usize>, head: Option<&[Expr]>) -> Emit {
        match head {
            Some(es) => Emit {
                prog: RowProg::new(&virt.exprs(es)),
                layout: Layout(vec![]),
                head: true,
                conds: Vec::new(),
            },
            None => {
                let kept: Vec<usize> = virt
                    .0
                    .iter()
                    .copied()
                    .filter(|s| keep.contains(s))
                    .collect();
                Emit {
                    prog: virt.keep(&kept),
                    layout: Layout(kept),
                    head: false,
                    conds: Vec::new(),
                }
            }
        }
    }

    /// The row to emit from a virtual row, if it passes the fused conditions.
    #[inline]
    fn apply<R: eval::Slots>(&self, row: &R) -> Option<Tuple> {
        if self.conds.iter().all(|c| eval::holds(c, row)) {
            self.prog.apply(row)
        } else {
            None
        }
    }
}

/// Renders a rule: its head tuples (with multiplicities).
pub fn render_rule<'s, T: Time>(
    env: &mut Env<'s, T>,
    plan: &Plan,
    rule: &RulePlan,
) -> Result<Coll<'s, T>, String> {
    Ok(render_body(env, plan, &rule.body, None, Tail::Head(&rule.head_exprs))?.0)
}

/// Keys rows by expressions (over the rows' layout); rows whose key is
/// undefined are dropped.
fn keyed<'s, T: Time>(rows: Coll<'s, T>, key: Vec<Expr>) -> Keyed<'s, T> {
    let key = RowProg::new(&key);
    rows.flat_map(move |r| key.apply(&r).map(|k| (k, r)))
}

/// The key of the join at `steps[next]` over rows laid out as `out`, if that
/// step is a join: the step before it then emits its rows keyed (the key
/// computed in its own closure) instead of a `keyed` map after it — one
/// operator and channel fewer per join that follows another step.
fn next_join_key(steps: &[Step], next: usize, out: &Layout) -> Option<RowProg> {
    match steps.get(next)? {
        Step::Join { left_key, .. } => Some(RowProg::new(&out.exprs(left_key))),
        _ => None,
    }
}

/// A materialized step's output: rows, or rows keyed for the next join.
enum Made<'s, T: Time> {
    Rows(Coll<'s, T>),
    Keyed(Keyed<'s, T>),
}

/// Renders a body (see module docs). `outer`: for an aggregate's inner body,
/// the group keys and their width.
fn render_body<'s, T: Time>(
    env: &mut Env<'s, T>,
    plan: &Plan,
    body: &Body,
    outer: Option<(Coll<'s, T>, usize)>,
    tail: Tail,
) -> Result<(Coll<'s, T>, Layout), String> {
    let steps = &body.steps;
    let live = liveness(steps, tail.needs());
    let needed_first = |live: &Vec<BTreeSet<usize>>| {
        let mut s = steps.first().map(reads).unwrap_or_default();
        s.extend(live.first().cloned().unwrap_or_else(|| tail.needs()));
        s
    };
    let head_at = |i: usize| {
        if i + 1 == steps.len() {
            tail.head()
        } else {
            None
        }
    };
    // A materializing step at `i` over virtual layout `virt`, with the
    // filters right after it fused in; also the index of the next step.
    let emit_at = |i: usize, virt: &Layout| {
        let last = i + filters_after(steps, i);
        let mut emit = Emit::new(virt, &live[last], head_at(last));
        emit.conds = fused_conds(steps, i + 1, last + 1, virt);
        (emit, last + 1)
    };
    let counters = env.counters.clone();
    let mut skip = 0;
    let mut done = false;
    let (made, mut layout, mut lw) = match &body.source {
        Source::Unit => (Made::Rows(env.unit.clone()), Layout(vec![]), 0),
        Source::Outer => {
            let (keys, glen) = outer.ok_or("Source::Outer outside an aggregate")?;
            (Made::Rows(keys), Layout::identity(glen), glen)
        }
        Source::Scan(scan) => {
            let cp = ColProg::new(&scan.cols);
            let nb = cp.binds().len();
            if let Some(sj) = scan_join(scan, steps.first()) {
                let l = env.arrangement(scan.rel, &sj.left)?;
                let r = env.arrangement(sj.rel, sj.right_key)?;
                let rcp = ColProg::new(sj.cols);
                let k = rcp.binds().len();
                let (mut emit, next) = emit_at(0, &Layout::identity(nb).extended(nb, k));
                skip = next;
                done = emit.head;
                let out = Layout(std::mem::take(&mut emit.layout.0));
                let made = match next_join_key(steps, next, &out) {
                    None => Made::Rows(join_arrs(&l, &r, move |a, b| {
                        counters.tick();
                        if !rcp.matches(b) {
                            return None;
                        }
                        emit.apply(&Joined {
                            left: a,
                            right: b,
                            binds: rcp.binds(),
                        })
                    })),
                    Some(key) => Made::Keyed(join_arrs(&l, &r, move |a, b| {
                        counters.tick();
                        if !rcp.matches(b) {
                            return None;
                        }
                        let row = emit.apply(&Joined {
                            left: a,
                            right: b,
                            binds: rcp.binds(),
                        })?;
                        Some((key.apply(&row)?, row))
                    })),
                };
                (made, out, nb + k)
            } else {
                let c = env.coll(scan.rel)?;
                // Filters at the start are fused into the scan.
                let f = steps
                    .iter()
                    .take_while(|s| matches!(s, Step::Filter(_)))
                    .count();
                let virt = Layout::identity(nb);
                let mut emit = if f == 0 {
                    Emit::new(
                        &virt,
                        &needed_first(&live),
                        if steps.is_empty() { tail.head() } else { None },
                    )
                } else {
                    let mut e = Emit::new(&virt, &live[f - 1], head_at(f - 1));
                    e.conds = fused_conds(steps, 0, f, &virt);
                    e
                };
                skip = f;
                done = emit.head;
                let out = Layout(std::mem::take(&mut emit.layout.0));
                let made = if cp.is_identity() && emit.conds.is_empty() && emit.prog.is_identity(nb)
                {
                    Made::Rows(c)
                } else {
                    let empty = Tuple::empty();
                    match next_join_key(steps, f, &out) {
                        None => Made::Rows(c.flat_map(move |t| {
                            counters.tick();
                            if !cp.matches(&t) {
                                return None;
                            }
                            emit.apply(&Joined {
                                left: &empty,
                                right: &t,
                                binds: cp.binds(),
                            })
                        })),
                        Some(key) => Made::Keyed(c.flat_map(move |t| {
                            counters.tick();
                            if !cp.matches(&t) {
                                return None;
                            }
                            let row = emit.apply(&Joined {
                                left: &empty,
                                right: &t,
                                binds: cp.binds(),
                            })?;
                            Some((key.apply(&row)?, row))
                        })),
                    }
                };
                (made, out, nb)
            }
        }
    };
    // Rows keyed for the join at the next step, made by the step before it
    // (`next_join_key`); that join takes them, so `rows` is not read
    // meanwhile (it holds the unit collection as a placeholder).
    let mut pre: Option<Keyed<'s, T>> = None;
    let mut rows = match made {
        Made::Rows(r) => r,
        Made::Keyed(k) => {
            pre = Some(k);
            env.unit.clone()
        }
    };
    let mut i = skip;
    while i < steps.len() {
        let step = &steps[i];
        let counters = env.counters.clone();
        // The next step to render (past the filters a step fused).
        let mut next = i + 1;
        match step {
            Step::Join {
                rel,
                left_key,
                right_key,
                cols,
            } => {
                let arr = env.arrangement(*rel, right_key)?;
                let rcp = ColProg::new(cols);
                let k = rcp.binds().len();
                let (mut emit, after) = emit_at(i, &layout.extended(lw, k));
                next = after;
                lw += k;
                done = emit.head;
                let out = Layout(std::mem::take(&mut emit.layout.0));
                let left = match pre.take() {
                    Some(k) => k,
                    None => keyed(rows, layout.exprs(left_key)),
                };
                match next_join_key(steps, next, &out) {
                    None => {
                        rows = join(left, &arr, move |row, t| {
                            counters.tick();
                            if !rcp.matches(t) {
                                return None;
                            }
                            emit.apply(&Joined {
                                left: row,
                                right: t,
                                binds: rcp.binds(),
                            })
                        })
                    }
                    Some(key) => {
                        pre = Some(join(left, &arr, move |row, t| {
                            counters.tick();
                            if !rcp.matches(t) {
                                return None;
                            }
                            let r = emit.apply(&Joined {
                                left: row,
                                right: t,
                                binds: rcp.binds(),
                            })?;
                            Some((key.apply(&r)?, r))
                        }));
                        rows = env.unit.clone();
                    }
                }
                layout = out;
            }
            Step::AntiJoin {
                rel,
                left_key,
                right_cols,
            } => {
                // `rows − (rows whose key is in the key set)`: the rows
                // themselves, not the keyed ones with the key dropped again
                // (one operator fewer per negation).
                let keys = env.keyset(*rel, right_cols)?;
                let matched = semijoin(keyed(rows.clone(), layout.exprs(left_key)), &keys);
                rows = rows.concat(matched.negate());
            }
            Step::Filter(c) => {
                let c = layout.cond(c);
                rows = rows.filter(move |r| {
                    counters.tick();
                    eval::holds(&c, r)
                });
            }
            Step::Bind(e) => {
                let e = layout.expr(e);
                let (mut emit, after) = emit_at(i, &layout.extended(lw, 1));
                next = after;
                lw += 1;
                done = emit.head;
                let out = Layout(std::mem::take(&mut emit.layout.0));
                match next_join_key(steps, next, &out) {
                    None => {
                        rows = rows.flat_map(move |r| {
                            counters.tick();
                            let extra = eval::eval(&e, &r)?;
                            emit.apply(&Appended { row: &r, extra })
                        })
                    }
                    Some(key) => {
                        pre = Some(rows.flat_map(move |r| {
                            counters.tick();
                            let extra = eval::eval(&e, &r)?;
                            let row = emit.apply(&Appended { row: &r, extra })?;
                            Some((key.apply(&row)?, row))
                        }));
                        rows = env.unit.clone();
                    }
                }
                layout = out;
            }
            Step::Aggregate {
                func,
                group,
                inner,
                value,
                order,
                result,
                distinct,
            } => {
                let gkey = layout.exprs(&group.iter().map(|&g| Expr::Slot(g)).collect::<Vec<_>>());
                // The head and the filters after the aggregate read only the
                // group key and the result: emit straight from the reduce's
                // output, one row per group (see [`reads_only_group`]).
                if reads_only_group(steps, i, head_at(i + filters_after(steps, i)), group, lw) {
                    let virt = Layout(group.clone()).extended(lw, 1);
                    let (emit, after) = emit_at(i, &virt);
                    let agg = render_aggregate(
                        env,
                        plan,
                        rows,
                        layout.0.len(),
                        gkey,
                        *func,
                        inner,
                        value.as_ref(),
                        order,
                        *result,
                        distinct,
                    )?;
                    rows = agg.flat_map_ref(move |key, res| {
                        counters.tick();
                        emit.apply(&Appended {
                            row: key,
                            extra: res.get(0)?,
                        })
                    });
                    done = true;
                    i = after;
                    continue;
                }
                let (mut emit, after) = emit_at(i, &layout.extended(lw, 1));
                next = after;
                lw += 1;
                done = emit.head;
                let out = Layout(std::mem::take(&mut emit.layout.0));
                let agg = render_aggregate(
                    env,
                    plan,
                    rows.clone(),
                    layout.0.len(),
                    gkey.clone(),
                    *func,
                    inner,
                    value.as_ref(),
                    order,
                    *result,
                    distinct,
                )?;
                rows = join(keyed(rows, gkey), &Arr::Own(agg), move |row, res| {
                    counters.tick();
                    emit.apply(&Appended {
                        row,
                        extra: res.get(0)?,
                    })
                });
                layout = out;
            }
        }
        i = next;
    }
    if pre.is_some() {
        return Err("internal error: rows keyed for a join that never came".into());
    }
    if done {
        return Ok((rows, Layout(vec![])));
    }
    match tail {
        Tail::Head(es) => {
            let head = RowProg::new(&layout.exprs(es));
            let counters = env.counters.clone();
            Ok((
                rows.flat_map(move |r| {
                    counters.tick();
                    head.apply(&r)
                }),
                Layout(vec![]),
            ))
        }
        Tail::Keep(_) => Ok((rows, layout)),
    }
}

/// Whether the aggregate at `steps[i]` is the body's last materializing
/// step (`head`: the rule's head, after the filters that follow it) and the
/// head and those filters read only its group slots and its result (slot
/// `result`). Then each group's one result row gives the head directly: the
/// outer rows need not be joined back (a rule like `n(g, c) :- r(g, _), c =
/// count : {...}` derives each head once per group instead of once per outer
/// row; the relation is the same set).
fn reads_only_group(
    steps: &[Step],
    i: usize,
    head: Option<&[Expr]>,
    group: &[usize],
    result: usize,
) -> bool {
    let Some(head) = head else {
        return false;
    };
    let mut read = BTreeSet::new();
    head.iter().for_each(|e| expr_slots(e, &mut read));
    for s in &steps[i + 1..] {
        if let Step::Filter(c) = s {
            cond_slots(c, &mut read);
        }
    }
    read.iter().all(|s| *s == result || group.contains(s))
}

/// The aggregate of each group, arranged by group key (see `Step::Aggregate`).
/// The reduce sees, per group key, one marker (an empty tuple, so groups
/// without inner rows still exist: count/sum give 0 there) and the inner
/// values with their multiplicities (one per combination of inner tuples,
/// as Souffle counts a body it does not materialise, or one per distinct
/// binding of the `distinct` slots when it does: `Step::Aggregate`); for
/// `concat`, each value is the tuple of its ordering keys and the value.
/// `width`: how many values each of `rows` holds.
#[allow(clippy::too_many_arguments)]
fn render_aggregate<'s, T: Time>(
    env: &mut Env<'s, T>,
    plan: &Plan,
    rows: Coll<'s, T>,
    width: usize,
    gkey: Vec<Expr>,
    func: AggFunc,
    inner: &Body,
    value: Option<&Expr>,
    order: &[Expr],
    result: Prim,
    distinct: &[usize],
) -> Result<Arranged<'s, ValTrace<T>>, String> {
    let glen = gkey.len();
    let gkey = RowProg::new(&gkey);
    // Rows of `width` values that are their group key already (the scan
    // before kept just the group's slots, in order): no projection operator.
    let projected = if gkey.is_identity(glen) && width == glen {
        rows
    } else {
        rows.flat_map(move |r| gkey.apply(&r))
    };
    let keys = T::distinct_keys(projected);
    let mut need: BTreeSet<usize> = (0..glen).collect();
    for v in value.into_iter().chain(order) {
        expr_slots(v, &mut need);
    }
    need.extend(distinct);
    let (inner_rows, ilayout) = render_body(
        env,
        plan,
        inner,
        Some((keys.clone(), glen)),
        Tail::Keep(need.clone()),
    )?;
    // one row per binding of the `distinct` slots (each row holds them,
    // and only slots bound with them: the rows are those bindings)
    let inner_rows = if distinct.is_empty() {
        inner_rows
    } else {
        let only =
            RowProg::new(&ilayout.exprs(&need.iter().map(|&s| Expr::Slot(s)).collect::<Vec<_>>()));
        T::distinct_keys(inner_rows.flat_map(move |r| only.apply(&r)))
    };
    let ilayout = if distinct.is_empty() {
        ilayout
    } else {
        Layout(need.iter().copied().collect())
    };
    let ikey = ilayout.keep(&(0..glen).collect::<Vec<_>>());
    // `concat`'s tuple: the ordering keys, then the value.
    let parts: Vec<Expr> = order.iter().chain(value).map(|e| ilayout.expr(e)).collect();
    let counters = env.counters.clone();
    let values = inner_rows.flat_map(move |r| {
        counters.tick();
        if func == AggFunc::Count {
            return Some((ikey.apply(&r)?, Tuple::from_values(&[Value::Number(1)])));
        }
        if parts.is_empty() {
            return None;
        }
        let mut t = Builder::new();
        for e in &parts {
            t.push(eval::eval(e, &r)?);
        }
        Some((ikey.apply(&r)?, t.finish()))
    });
    let markers = keys.map(|k| (k, Tuple::empty()));
    Ok(values
        .concat(markers)
        .reduce_abelian::<_, ValBuilder<Tuple, Tuple, T, isize>, ValSpine<Tuple, Tuple, T, isize>>(
            "Aggregate",
            move |_key, input, output| {
                if let Some(v) = aggregate(func, result, input) {
                    output.push((Tuple::from_values(&[v]), 1));
                }
            },
        ))
}

/// Folds one group's inner values (tuples of one value, or for `concat` of
/// its ordering keys and the value; the empty marker tuple is skipped).
/// `None`: no result (min/max/concat of nothing, a sum type the values
/// cannot have, a concat value that is not a symbol).
pub(super) fn aggregate(func: AggFunc, result: Prim, input: &[(&Tuple, isize)]) -> Option<Value> {
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
        AggFunc::Concat => concat(input),
    }
}

/// `concat`: the distinct (keys.., text) tuples in `Value`'s order (the
/// reduce's input is in the tuples' fast internal order, which is not it),
/// their texts joined with `,`.
fn concat(input: &[(&Tuple, isize)]) -> Option<Value> {
    let mut parts: Vec<Row> = input
        .iter()
        .filter(|(t, d)| *d > 0 && t.len() > 0)
        .map(|(t, _)| t.to_row())
        .collect();
    if parts.is_empty() {
        return None;
    }
    sort_rows(&mut parts);
    parts.dedup();
    let mut out = String::new();
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        match p.last() {
            Some(Value::Symbol(s)) => out.push_str(&s.as_str()),
            _ => return None,
        }
    }
    Some(Value::sym(&out))
}
