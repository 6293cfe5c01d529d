//! Lowering of one clause: literal order, slots, joins and aggregates.
//!
//! Expects: a clause of a checked program (grounded, typed, resolved).
//! Guarantees: a [`RulePlan`] whose body binds every slot before it is read
//! (PLAN-SLOTS), or an [`InternalError`] if the clause breaks a checker
//! guarantee. The order:
//! - the first positive atom in written order is the [`Source::Scan`]
//!   (variables → `Bind` in column order, repeated variables → `SameAs`,
//!   literals → `Const`, `_` → `Ignore`); a body without positive atoms
//!   starts from [`Source::Unit`], an aggregate body from [`Source::Outer`];
//! - after the source and after every join, every other literal whose
//!   variables are bound is placed, in written order, until none is left:
//!   negated atoms → `AntiJoin`, `x = e` with `x` unbound → `Bind`, other
//!   comparisons and constraint functors → `Filter`, aggregates (once their
//!   group key is bound) → `Aggregate`;
//! - then the next positive atom is the one with the most bound arguments
//!   (ties: written order) → `Join` keyed on its bound variables, literals
//!   and bound expressions;
//! - an atom argument that is an expression over unbound variables is bound
//!   to a fresh slot and compared (`Filter`) once its variables are bound.
//!
//! Aggregates inside expressions (`x < count : {...}`, a head argument)
//! are computed first into a fresh slot; `x = count : {...}` with `x`
//! unbound binds `x` directly.

use super::InternalError;
use crate::ast::CmpOp;
use crate::check::ir::{self, Aggregate, Atom, Clause, Leaf, RelInfo, VarId};
use crate::functors::Builtin;
use crate::plan::{Body, ColPat, Cond, Expr, RulePlan, Scan, Source, Step};
use crate::value::Value;
use std::collections::HashMap;

/// Lowers a clause; `None` if its body contains `false` (it derives nothing).
pub fn lower_clause(c: &Clause, rels: &[RelInfo]) -> Result<Option<RulePlan>, InternalError> {
    if c.body.iter().any(|l| matches!(l, Leaf::Bool(false, _))) {
        return Ok(None);
    }
    let head = c.head.rel.ok_or_else(|| {
        InternalError::new(
            "CHECKED-RESOLVED",
            format!("unresolved head `{}`", c.head.name.name),
        )
    })?;
    if rels.get(head).map(RelInfo::arity) != Some(c.head.args.len()) {
        return Err(InternalError::new(
            "CHECKED-RESOLVED",
            format!("head `{}` does not match its declaration", c.head.name.name),
        ));
    }
    let mut b = Builder::new(c.vars.len());
    let source = b.scope(&c.body, &c.head.args, false)?;
    let head_exprs = c
        .head
        .args
        .iter()
        .map(|e| b.expr(e))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Some(RulePlan {
        head,
        head_exprs,
        body: Body {
            source,
            steps: b.steps,
        },
        span: c.span,
    }))
}

/// A literal waiting to be placed.
enum Item<'c> {
    Atom(&'c Atom),
    Neg(&'c Atom),
    Cmp {
        op: CmpOp,
        lhs: &'c ir::Expr,
        rhs: &'c ir::Expr,
        negated: bool,
    },
    Call {
        builtin: Builtin,
        args: &'c [ir::Expr],
        negated: bool,
    },
    /// Computes an aggregate into `var`.
    Agg {
        var: VarId,
        agg: &'c Aggregate,
    },
    /// `var` (bound from an atom column) must equal `expr`.
    EqTemp {
        var: VarId,
        expr: &'c ir::Expr,
    },
    /// A `false` inside an aggregate body.
    False,
}

struct Builder<'c> {
    slots: HashMap<VarId, usize>,
    width: usize,
    steps: Vec<Step>,
    /// Hoisted aggregates (by address) → the variable holding their value.
    aggs: HashMap<*const Aggregate, VarId>,
    next_temp: VarId,
    _c: std::marker::PhantomData<&'c ()>,
}

impl<'c> Builder<'c> {
    fn new(nvars: usize) -> Builder<'c> {
        Builder {
            slots: HashMap::new(),
            width: 0,
            steps: Vec::new(),
            aggs: HashMap::new(),
            next_temp: nvars,
            _c: std::marker::PhantomData,
        }
    }

    fn temp(&mut self) -> VarId {
        self.next_temp += 1;
        self.next_temp - 1
    }

    fn bind_slot(&mut self, v: VarId) {
        self.slots.insert(v, self.width);
        self.width += 1;
    }

    fn bound(&self, v: VarId) -> bool {
        self.slots.contains_key(&v)
    }

    /// Lowers the leaves of one scope (plus aggregates in `extra`, e.g. the
    /// head); returns the source. `outer`: an aggregate body whose group key
    /// is already bound to the first slots.
    fn scope(
        &mut self,
        leaves: &'c [Leaf],
        extra: &'c [ir::Expr],
        outer: bool,
    ) -> Result<Source, InternalError> {
        let mut items: Vec<Item<'c>> = Vec::new();
        for leaf in leaves {
            match leaf {
                Leaf::Pos(a) => items.push(Item::Atom(a)),
                Leaf::Neg(a, _) => items.push(Item::Neg(a)),
                Leaf::Cmp {
                    op: CmpOp::Eq,
                    lhs: ir::Expr::Var(v, _),
                    rhs: ir::Expr::Agg(agg),
                    negated: false,
                    ..
                }
                | Leaf::Cmp {
                    op: CmpOp::Eq,
                    lhs: ir::Expr::Agg(agg),
                    rhs: ir::Expr::Var(v, _),
                    negated: false,
                    ..
                } => {
                    items.push(Item::Agg { var: *v, agg });
                    continue;
                }
                Leaf::Cmp {
                    op,
                    lhs,
                    rhs,
                    negated,
                    ..
                } => items.push(Item::Cmp {
                    op: *op,
                    lhs,
                    rhs,
                    negated: *negated,
                }),
                Leaf::Call {
                    builtin,
                    args,
                    negated,
                    name,
                    ..
                } => {
                    let builtin = builtin.ok_or_else(|| {
                        InternalError::new(
                            "CHECKED-RESOLVED",
                            format!("constraint `{}` has no overload", name.name),
                        )
                    })?;
                    items.push(Item::Call {
                        builtin,
                        args,
                        negated: *negated,
                    });
                }
                Leaf::Bool(true, _) => {}
                Leaf::Bool(false, _) => items.push(Item::False),
            }
            for e in leaf.exprs() {
                self.hoist(e, &mut items);
            }
        }
        for e in extra {
            self.hoist(e, &mut items);
        }

        let mut done = vec![false; items.len()];
        let source = if outer {
            Source::Outer
        } else if let Some(first) = items.iter().position(|it| matches!(it, Item::Atom(_))) {
            done[first] = true;
            let Item::Atom(a) = items[first] else {
                unreachable_atom()?
            };
            Source::Scan(self.scan(a, &mut items, &mut done)?)
        } else {
            Source::Unit
        };
        loop {
            self.place_ready(&mut items, &mut done)?;
            let best = items
                .iter()
                .enumerate()
                .filter(|(i, it)| !done[*i] && matches!(it, Item::Atom(_)))
                .map(|(i, it)| {
                    (
                        i,
                        if let Item::Atom(a) = it {
                            self.score(a)
                        } else {
                            0
                        },
                    )
                })
                .fold(None, |best: Option<(usize, usize)>, (i, s)| match best {
                    Some((_, bs)) if bs >= s => best,
                    _ => Some((i, s)),
                });
            let Some((i, _)) = best else { break };
            done[i] = true;
            let Item::Atom(a) = items[i] else {
                unreachable_atom()?
            };
            self.join(a, &mut items, &mut done)?;
        }
        if let Some(i) = done.iter().position(|d| !d) {
            let what = match &items[i] {
                Item::Atom(a) | Item::Neg(a) => format!("atom `{}`", a.name.name),
                Item::Cmp { op, .. } => format!("comparison `{}`", op.symbol()),
                Item::Call { builtin, .. } => format!("constraint `{}`", builtin.name()),
                Item::Agg { agg, .. } => format!("aggregate `{}`", agg.func.name()),
                Item::EqTemp { .. } => "an atom argument".to_string(),
                Item::False => "`false`".to_string(),
            };
            return Err(InternalError::new(
                "CHECKED-GROUNDED",
                format!("{what} still has unbound variables after every atom was joined"),
            ));
        }
        Ok(source)
    }

    /// Registers the aggregates directly inside `e` as items computing fresh variables.
    fn hoist(&mut self, e: &'c ir::Expr, items: &mut Vec<Item<'c>>) {
        let mut found: Vec<&'c Aggregate> = Vec::new();
        e.aggregates(&mut |a| found.push(a));
        for agg in found {
            let var = self.temp();
            self.aggs.insert(agg as *const Aggregate, var);
            items.push(Item::Agg { var, agg });
        }
    }

    /// How many arguments of an atom are already known (bound variables and literals).
    fn score(&self, a: &Atom) -> usize {
        a.args
            .iter()
            .filter(|e| {
                matches!(e, ir::Expr::Lit { .. })
                    || matches!(e, ir::Expr::Var(v, _) if self.bound(*v))
            })
            .count()
    }

    fn scan(
        &mut self,
        a: &'c Atom,
        items: &mut Vec<Item<'c>>,
        done: &mut Vec<bool>,
    ) -> Result<Scan, InternalError> {
        let rel = atom_rel(a)?;
        let (cols, _, _) = self.columns(a, items, done, false)?;
        Ok(Scan { rel, cols })
    }

    fn join(
        &mut self,
        a: &'c Atom,
        items: &mut Vec<Item<'c>>,
        done: &mut Vec<bool>,
    ) -> Result<(), InternalError> {
        let rel = atom_rel(a)?;
        let (cols, left_key, right_key) = self.columns(a, items, done, true)?;
        self.steps.push(Step::Join {
            rel,
            left_key,
            right_key,
            cols,
        });
        Ok(())
    }

    /// Column patterns of a scanned/joined atom (with `keyed`, bound values
    /// go into the join key); binds the new variables' slots in column order.
    #[allow(clippy::type_complexity)]
    fn columns(
        &mut self,
        a: &'c Atom,
        items: &mut Vec<Item<'c>>,
        done: &mut Vec<bool>,
        keyed: bool,
    ) -> Result<(Vec<ColPat>, Vec<Expr>, Vec<usize>), InternalError> {
        let mut cols = Vec::with_capacity(a.args.len());
        let (mut left_key, mut right_key) = (Vec::new(), Vec::new());
        let mut first_col: HashMap<VarId, usize> = HashMap::new();
        let mut binds: Vec<VarId> = Vec::new();
        for (c, arg) in a.args.iter().enumerate() {
            let pat = match arg {
                ir::Expr::Wildcard(_) => ColPat::Ignore,
                ir::Expr::Var(v, _) if !self.bound(*v) => match first_col.get(v) {
                    Some(&j) => ColPat::SameAs(j),
                    None => {
                        first_col.insert(*v, c);
                        binds.push(*v);
                        ColPat::Bind
                    }
                },
                ir::Expr::Lit { value: Some(v), .. } if !keyed => ColPat::Const(*v),
                e if keyed && self.ready(e) => {
                    left_key.push(self.expr(e)?);
                    right_key.push(c);
                    ColPat::Ignore
                }
                e => {
                    // Bind the column, compare once the expression's variables are bound.
                    let t = self.temp();
                    binds.push(t);
                    items.push(Item::EqTemp { var: t, expr: e });
                    done.push(false);
                    ColPat::Bind
                }
            };
            cols.push(pat);
        }
        for v in binds {
            self.bind_slot(v);
        }
        Ok((cols, left_key, right_key))
    }

    /// Places every non-atom item whose variables are bound, until none is.
    fn place_ready(
        &mut self,
        items: &mut [Item<'c>],
        done: &mut [bool],
    ) -> Result<(), InternalError> {
        loop {
            let mut progress = false;
            for i in 0..items.len() {
                if done[i] || matches!(items[i], Item::Atom(_)) {
                    continue;
                }
                if self.try_place(&items[i])? {
                    done[i] = true;
                    progress = true;
                }
            }
            if !progress {
                return Ok(());
            }
        }
    }

    fn try_place(&mut self, item: &Item<'c>) -> Result<bool, InternalError> {
        match *item {
            Item::Atom(_) => Ok(false),
            Item::Neg(a) => {
                if !a
                    .args
                    .iter()
                    .all(|e| matches!(e, ir::Expr::Wildcard(_)) || self.ready(e))
                {
                    return Ok(false);
                }
                let rel = atom_rel(a)?;
                let (mut left_key, mut right_cols) = (Vec::new(), Vec::new());
                for (c, e) in a.args.iter().enumerate() {
                    if !matches!(e, ir::Expr::Wildcard(_)) {
                        left_key.push(self.expr(e)?);
                        right_cols.push(c);
                    }
                }
                self.steps.push(Step::AntiJoin {
                    rel,
                    left_key,
                    right_cols,
                });
                Ok(true)
            }
            Item::Cmp {
                op,
                lhs,
                rhs,
                negated,
            } => {
                if op == CmpOp::Eq && !negated {
                    for (x, e) in [(lhs, rhs), (rhs, lhs)] {
                        if let ir::Expr::Var(v, _) = x {
                            if !self.bound(*v) && self.ready(e) {
                                let value = self.expr(e)?;
                                self.steps.push(Step::Bind(value));
                                self.bind_slot(*v);
                                return Ok(true);
                            }
                        }
                    }
                }
                if !(self.ready(lhs) && self.ready(rhs)) {
                    return Ok(false);
                }
                let cond = Cond::Compare(op, self.expr(lhs)?, self.expr(rhs)?);
                self.steps.push(Step::Filter(if negated {
                    Cond::Not(Box::new(cond))
                } else {
                    cond
                }));
                Ok(true)
            }
            Item::Call {
                builtin,
                args,
                negated,
            } => {
                if !args.iter().all(|e| self.ready(e)) {
                    return Ok(false);
                }
                let args = args
                    .iter()
                    .map(|e| self.expr(e))
                    .collect::<Result<Vec<_>, _>>()?;
                let cond = Cond::Call(builtin, args);
                self.steps.push(Step::Filter(if negated {
                    Cond::Not(Box::new(cond))
                } else {
                    cond
                }));
                Ok(true)
            }
            Item::Agg { var, agg } => {
                if !agg.group.iter().all(|v| self.bound(*v)) {
                    return Ok(false);
                }
                let step = self.aggregate(agg)?;
                self.steps.push(step);
                if self.bound(var) {
                    // `x = agg` with `x` bound meanwhile: compare instead.
                    let t = self.temp();
                    self.bind_slot(t);
                    let (x, y) = (self.slot(var)?, self.slot(t)?);
                    self.steps.push(Step::Filter(Cond::Compare(
                        CmpOp::Eq,
                        Expr::Slot(x),
                        Expr::Slot(y),
                    )));
                } else {
                    self.bind_slot(var);
                }
                Ok(true)
            }
            Item::EqTemp { var, expr } => {
                if !(self.bound(var) && self.ready(expr)) {
                    return Ok(false);
                }
                let cond = Cond::Compare(CmpOp::Eq, Expr::Slot(self.slot(var)?), self.expr(expr)?);
                self.steps.push(Step::Filter(cond));
                Ok(true)
            }
            Item::False => {
                let zero = Expr::Const(Value::Number(0));
                self.steps
                    .push(Step::Filter(Cond::Compare(CmpOp::Ne, zero.clone(), zero)));
                Ok(true)
            }
        }
    }

    fn aggregate(&mut self, agg: &'c Aggregate) -> Result<Step, InternalError> {
        let group = agg
            .group
            .iter()
            .map(|v| self.slot(*v))
            .collect::<Result<Vec<_>, _>>()?;
        let mut inner = Builder::new(self.next_temp);
        for v in &agg.group {
            inner.bind_slot(*v);
        }
        let extra: Vec<ir::Expr> = agg.target.iter().chain(&agg.order).cloned().collect();
        inner.scope(&agg.body, &extra, true)?;
        let value = agg.target.as_ref().map(|t| inner.expr(t)).transpose()?;
        let order = agg
            .order
            .iter()
            .map(|k| inner.expr(k))
            .collect::<Result<Vec<_>, _>>()?;
        let result = agg.result.ok_or_else(|| {
            InternalError::new(
                "CHECKED-RESOLVED",
                format!("`{}` aggregate has no result type", agg.func.name()),
            )
        })?;
        self.next_temp = self.next_temp.max(inner.next_temp);
        let mut distinct: Vec<usize> = if materialized_with_wildcards(agg) {
            inner.slots.values().copied().collect()
        } else {
            Vec::new()
        };
        distinct.sort_unstable();
        Ok(Step::Aggregate {
            func: agg.func,
            group,
            inner: Box::new(Body {
                source: Source::Outer,
                steps: inner.steps,
            }),
            value,
            order,
            result,
            distinct,
        })
    }

    fn slot(&self, v: VarId) -> Result<usize, InternalError> {
        self.slots.get(&v).copied().ok_or_else(|| {
            InternalError::new(
                "PLAN-SLOTS",
                format!("variable #{v} is read before it is bound"),
            )
        })
    }

    /// Whether every variable (and hoisted aggregate) of `e` is bound.
    fn ready(&self, e: &ir::Expr) -> bool {
        match e {
            ir::Expr::Var(v, _) => self.bound(*v),
            ir::Expr::Wildcard(_) => false,
            ir::Expr::Lit { .. } => true,
            ir::Expr::Call { args, .. } => args.iter().all(|a| self.ready(a)),
            ir::Expr::Binary(_, a, b, _) => self.ready(a) && self.ready(b),
            ir::Expr::Unary(_, a, _) | ir::Expr::As(a, _, _, _) => self.ready(a),
            ir::Expr::Agg(a) => self
                .aggs
                .get(&(&**a as *const Aggregate))
                .is_some_and(|v| self.bound(*v)),
        }
    }

    fn expr(&self, e: &ir::Expr) -> Result<Expr, InternalError> {
        Ok(match e {
            ir::Expr::Var(v, _) => Expr::Slot(self.slot(*v)?),
            ir::Expr::Wildcard(_) => {
                return Err(InternalError::new(
                    "CHECKED-RESOLVED",
                    "`_` used as a value",
                ))
            }
            ir::Expr::Lit { value, lit, .. } => Expr::Const(value.ok_or_else(|| {
                InternalError::new("CHECKED-RESOLVED", format!("literal {lit:?} has no value"))
            })?),
            ir::Expr::Call {
                builtin,
                args,
                name,
                ..
            } => {
                let b = builtin.ok_or_else(|| {
                    InternalError::new(
                        "CHECKED-RESOLVED",
                        format!("functor `{}` has no overload", name.name),
                    )
                })?;
                Expr::Call(
                    b,
                    args.iter()
                        .map(|a| self.expr(a))
                        .collect::<Result<Vec<_>, _>>()?,
                )
            }
            ir::Expr::Binary(op, a, b, _) => {
                Expr::Binary(*op, Box::new(self.expr(a)?), Box::new(self.expr(b)?))
            }
            ir::Expr::Unary(op, a, _) => Expr::Unary(*op, Box::new(self.expr(a)?)),
            ir::Expr::As(a, ..) => self.expr(a)?,
            ir::Expr::Agg(a) => {
                let v = self.aggs.get(&(&**a as *const Aggregate)).copied();
                let v = v.ok_or_else(|| {
                    InternalError::new("PLAN-SLOTS", "an aggregate is read before it is computed")
                })?;
                Expr::Slot(self.slot(v)?)
            }
        })
    }
}

/// Whether Souffle aggregates `agg` over the distinct bindings of its
/// body's named variables rather than over each combination of matching
/// tuples, and the two can differ. Souffle (its `MaterializeAggregationQueries`
/// pass) evaluates a body of more than one positive atom, or one with an
/// inner aggregate, or a single atom that repeats a variable, as a new
/// relation whose columns are the body's named variables — a set, so the
/// positions a `_` leaves open collapse — and any other body tuple by tuple.
/// The two differ only when some positive atom has a `_`.
fn materialized_with_wildcards(agg: &Aggregate) -> bool {
    let atoms: Vec<&Atom> = agg
        .body
        .iter()
        .filter_map(|l| match l {
            Leaf::Pos(a) => Some(a),
            _ => None,
        })
        .collect();
    let wild = atoms
        .iter()
        .any(|a| a.args.iter().any(|e| matches!(e, ir::Expr::Wildcard(_))));
    if !wild {
        return false;
    }
    let inner_agg = agg
        .body
        .iter()
        .flat_map(|l| l.exprs())
        .any(|e| mentions(e, &mut |x| matches!(x, ir::Expr::Agg(_))));
    let repeats = atoms.first().is_some_and(|a| {
        let mut seen = std::collections::HashSet::new();
        let mut again = false;
        for e in &a.args {
            mentions(e, &mut |x| {
                if let ir::Expr::Var(v, _) = x {
                    again |= !seen.insert(*v);
                }
                false
            });
        }
        again
    });
    atoms.len() > 1 || inner_agg || repeats
}

/// Whether `e` or an expression inside it satisfies `f` (aggregates are
/// not entered: their bodies are scopes of their own).
fn mentions(e: &ir::Expr, f: &mut dyn FnMut(&ir::Expr) -> bool) -> bool {
    if f(e) {
        return true;
    }
    match e {
        ir::Expr::Call { args, .. } => args.iter().any(|a| mentions(a, f)),
        ir::Expr::Binary(_, a, b, _) => mentions(a, f) || mentions(b, f),
        ir::Expr::Unary(_, a, _) | ir::Expr::As(a, ..) => mentions(a, f),
        ir::Expr::Var(..) | ir::Expr::Wildcard(_) | ir::Expr::Lit { .. } | ir::Expr::Agg(_) => {
            false
        }
    }
}

fn atom_rel(a: &Atom) -> Result<usize, InternalError> {
    a.rel.ok_or_else(|| {
        InternalError::new(
            "CHECKED-RESOLVED",
            format!("unresolved atom `{}`", a.name.name),
        )
    })
}

fn unreachable_atom<T>() -> Result<T, InternalError> {
    Err(InternalError::new(
        "LOWER-ITEMS",
        "an item selected as an atom is not an atom",
    ))
}
