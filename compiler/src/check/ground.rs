//! Groundedness (E0109) and singleton variables (W0001).
//!
//! Expects: clauses from [`super::resolve`]. Guarantees: every variable
//! occurrence that is not bound is reported once per clause, at its first
//! occurrence. A variable is bound (Souffle's rules) if it is a direct
//! argument of a positive atom of its scope, or if an equality `x = e` (or
//! `e = x`) of its scope has all variables of `e` bound (iterated to a
//! fixpoint, so chains of assignments in any order work). An aggregate's
//! value is bound once its group key is; inside the aggregate the group key
//! counts as bound, and its own variables must be bound inside. Atoms whose
//! relation did not resolve bind all their variables, so one mistake does
//! not cascade into unbound-variable errors.

use super::ir::{Aggregate, Clause, Expr, Leaf, VarId};
use super::resolve::{expr_names, lit_names};
use super::Reporter;
use crate::ast::{CmpOp, Item, Program};
use crate::diagnostics::Diagnostic;
use crate::source::Span;
use std::collections::HashMap;

/// Warns about named variables that occur only once in a rule (W0001).
pub fn singletons(program: &Program, r: &mut Reporter) {
    for item in &program.items {
        let Item::Rule(rule) = item else { continue };
        let mut names: Vec<(&str, Span)> = Vec::new();
        for h in &rule.heads {
            for e in &h.args {
                expr_names(e, &mut names, true, 0);
            }
        }
        for lit in rule.body.iter().flatten() {
            lit_names(lit, &mut names, true, 0);
        }
        let mut count: HashMap<&str, (usize, Span)> = HashMap::new();
        for (n, s) in &names {
            count.entry(n).or_insert((0, *s)).0 += 1;
        }
        let mut once: Vec<(&str, Span)> = count
            .into_iter()
            .filter(|(n, (c, _))| *c == 1 && !n.starts_with('_'))
            .map(|(n, (_, s))| (n, s))
            .collect();
        once.sort_by_key(|(_, s)| *s);
        for (n, s) in once {
            r.push(
                Diagnostic::warning("W0001", s, format!("variable `{n}` appears only once"))
                    .with_hint(format!(
                        "if the value does not matter, write `_` (or `_{n}`)"
                    )),
            );
        }
    }
}

/// Reports every unbound variable of a clause (E0109).
pub fn check_clause(c: &Clause, r: &mut Reporter) {
    // Bindings are decided strictly (an aggregate needs its group key first).
    // To avoid cascades, the report comes from a lenient pass in which an
    // aggregate's result is available even if its key is not (the key is
    // reported); if that pass finds nothing, the strict one is reported.
    let run = |lenient: bool| {
        let n = c.vars.len();
        let mut g = Ground {
            bound: vec![false; n],
            unbound: vec![None; n],
            in_agg: vec![false; n],
            lenient,
        };
        g.scope(&c.body, 0);
        for e in &c.head.args {
            g.uses(e, 0);
        }
        g
    };
    let strict = run(false);
    let lenient = run(true);
    let g = if lenient.unbound.iter().any(Option::is_some) {
        lenient
    } else {
        strict
    };
    let is_fact = c.body.is_empty();
    for (v, span) in g.unbound.iter().enumerate() {
        let Some(span) = *span else { continue };
        let name = &c.vars[v].name;
        let hint = if is_fact {
            format!("a fact must be ground: replace `{name}` by a constant, or add a body that binds it")
        } else if g.in_agg[v] {
            format!("`{name}` is used inside an aggregate, which does not bind it outside: bind it with a positive atom of the rule body as well")
        } else {
            format!("`{name}` must appear in a positive atom of the body, or be assigned with `{name} = ...` whose other side is bound")
        };
        r.push(
            Diagnostic::error("E0109", span, format!("variable `{name}` is not bound"))
                .with_hint(hint),
        );
    }
}

struct Ground {
    bound: Vec<bool>,
    /// The first unbound occurrence of each variable.
    unbound: Vec<Option<Span>>,
    /// Whether the variable is the group key of an aggregate.
    in_agg: Vec<bool>,
    /// See [`check_clause`].
    lenient: bool,
}

impl Ground {
    fn bind(&mut self, v: VarId) -> bool {
        match self.bound.get_mut(v) {
            Some(b) if !*b => {
                *b = true;
                true
            }
            _ => false,
        }
    }

    fn is_bound(&self, v: VarId) -> bool {
        self.bound.get(v).copied().unwrap_or(true)
    }

    /// Whether `e` can be computed to bind `target`: its variables are
    /// bound, and so are the group keys of its aggregates (lenient: the
    /// keys do not matter, unless `target` is one of them).
    fn computable(&self, e: &Expr, target: VarId) -> bool {
        match e {
            Expr::Var(v, _) => self.is_bound(*v),
            Expr::Wildcard(_) | Expr::Lit { .. } => true,
            Expr::Agg(a) if self.lenient => !a.group.contains(&target),
            Expr::Agg(a) => a.group.iter().all(|v| self.is_bound(*v)),
            Expr::Call { args, .. } => args.iter().all(|a| self.computable(a, target)),
            Expr::Binary(_, a, b, _) => self.computable(a, target) && self.computable(b, target),
            Expr::Unary(_, a, _) | Expr::As(a, _, _, _) => self.computable(a, target),
        }
    }

    /// Binds what the leaves of one scope bind, then checks every use.
    fn scope(&mut self, leaves: &[Leaf], depth: usize) {
        for leaf in leaves {
            if let Leaf::Pos(a) = leaf {
                for e in &a.args {
                    match e {
                        Expr::Var(v, _) => {
                            self.bind(*v);
                        }
                        _ if a.rel.is_none() => e.free_vars(&mut |v, _| {
                            if let Some(b) = self.bound.get_mut(v) {
                                *b = true;
                            }
                        }),
                        _ => {}
                    }
                }
            }
        }
        loop {
            let mut changed = false;
            for leaf in leaves {
                if let Leaf::Cmp {
                    op: CmpOp::Eq,
                    lhs,
                    rhs,
                    negated: false,
                    ..
                } = leaf
                {
                    for (x, e) in [(lhs, rhs), (rhs, lhs)] {
                        if let Expr::Var(v, _) = x {
                            if !self.is_bound(*v) && self.computable(e, *v) {
                                changed |= self.bind(*v);
                            }
                        }
                    }
                }
            }
            if !changed {
                break;
            }
        }
        for leaf in leaves {
            match leaf {
                Leaf::Pos(a) => {
                    for e in &a.args {
                        if !matches!(e, Expr::Var(..)) && a.rel.is_some() {
                            self.uses(e, depth);
                        } else {
                            self.aggs(e, depth);
                        }
                    }
                }
                _ => leaf.exprs().into_iter().for_each(|e| self.uses(e, depth)),
            }
        }
    }

    /// Checks that every free variable of `e` is bound, and recurses into its aggregates.
    fn uses(&mut self, e: &Expr, depth: usize) {
        let mut missing: Vec<(VarId, Span)> = Vec::new();
        e.free_vars(&mut |v, s| {
            if !self.is_bound(v) {
                missing.push((v, s));
            }
        });
        for (v, s) in missing {
            if let Some(slot) = self.unbound.get_mut(v) {
                if slot.is_none_or(|old| s < old) {
                    *slot = Some(s);
                }
            }
        }
        self.aggs(e, depth);
    }

    fn aggs(&mut self, e: &Expr, depth: usize) {
        if depth > super::resolve::MAX_NESTING {
            return;
        }
        let mut found: Vec<&Aggregate> = Vec::new();
        e.aggregates(&mut |a| found.push(a));
        for a in found {
            // Inside, the group key counts as bound; the outer binding is checked by `uses`.
            let saved = self.bound.clone();
            for v in &a.group {
                if let (Some(b), Some(i)) = (self.bound.get_mut(*v), self.in_agg.get_mut(*v)) {
                    (*b, *i) = (true, true);
                }
            }
            self.scope(&a.body, depth + 1);
            for t in a.target.iter().chain(&a.order) {
                self.uses(t, depth + 1);
            }
            self.bound = saved;
        }
    }
}
