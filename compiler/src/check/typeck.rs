//! Type checking of clauses, and evaluation of facts.
//!
//! Expects: resolved clauses ([`super::resolve`]), the relations and the
//! type environment. Guarantees: every variable gets a type (recorded in
//! [`Var::ty`]) or an error is reported; every mismatch is reported once
//! (E0201 with both spans: the use and where the type came from). The
//! phases of [`check_clause`]:
//! 1. positive atoms give their variables the attribute's type; a variable
//!    in several positive atoms gets the more specific type (a join of a
//!    `symbol` and a `Host` column is a `Host`), incompatible ones are E0201;
//! 2. equalities `x = e` give `x` the type of `e`, to a fixpoint; a variable
//!    equal to an integer literal (possibly through other such variables)
//!    takes the numeric type of a column it flows into, default `number`;
//! 3. every literal and head argument is checked, with diagnostics: a head
//!    argument must be a subtype of its attribute's type; body atom
//!    arguments, negated atoms and comparison operands must be comparable.

use super::infer::{Ty, Typer};
use super::ir::{Atom, AttrInfo, Clause, Expr, Fact, Leaf, RelInfo, VarId};
use super::tyenv::{TypeEnv, TypeId};
use super::Reporter;
use crate::ast::CmpOp;
use crate::diagnostics::Diagnostic;
use crate::functors;
use crate::source::Span;
use crate::types::Prim;
use crate::value::Value;

pub fn check_clause(c: &mut Clause, rels: &[RelInfo], env: &TypeEnv, r: &mut Reporter) {
    let n = c.vars.len();
    let mut t = Typer {
        env,
        rels,
        vars: vec![None; n],
        sites: vec![None; n],
        names: c.vars.iter().map(|v| v.name.clone()).collect(),
        r,
        quiet: false,
    };
    let mut links = UnionFind::new(n);
    // Phase 1: positive atoms, in every scope.
    scopes(&mut c.body, &mut c.head.args, &mut |leaves| {
        t.bind_atoms(leaves)
    });
    // Phase 2: equalities, quietly; settle integer-literal variables; again.
    t.quiet = true;
    t.equalities(&mut c.body, &mut c.head.args, &mut links);
    t.settle_vars(&mut c.body, &mut c.head, &mut links);
    t.equalities(&mut c.body, &mut c.head.args, &mut links);
    t.quiet = false;
    // Phase 3: check everything, with diagnostics.
    t.check_leaves(&mut c.body);
    let rel = c.head.rel.and_then(|id| rels.get(id));
    for (i, arg) in c.head.args.iter_mut().enumerate() {
        match rel.and_then(|rel| rel.attrs.get(i)) {
            Some(attr) => t.expect(arg, attr, true),
            None => {
                let ty = t.infer(arg, None);
                t.settle(arg, ty);
            }
        }
    }
    for (v, var) in c.vars.iter_mut().enumerate() {
        var.ty = t.var_ty(v).known();
    }
}

/// Calls `f` on the leaves of the clause body and of every aggregate body (in head or body).
fn scopes(body: &mut [Leaf], head: &mut [Expr], f: &mut dyn FnMut(&mut [Leaf])) {
    scope_rec(body, f, 0);
    for e in head {
        expr_scopes(e, f, 0);
    }
}

fn scope_rec(leaves: &mut [Leaf], f: &mut dyn FnMut(&mut [Leaf]), depth: usize) {
    f(leaves);
    for leaf in leaves.iter_mut() {
        for e in leaf_exprs_mut(leaf) {
            expr_scopes(e, f, depth);
        }
    }
}

fn expr_scopes(e: &mut Expr, f: &mut dyn FnMut(&mut [Leaf]), depth: usize) {
    if depth > super::resolve::MAX_NESTING {
        return;
    }
    match e {
        Expr::Var(..) | Expr::Wildcard(_) | Expr::Lit { .. } => {}
        Expr::Call { args, .. } => args.iter_mut().for_each(|a| expr_scopes(a, f, depth + 1)),
        Expr::Binary(_, a, b, _) => {
            expr_scopes(a, f, depth + 1);
            expr_scopes(b, f, depth + 1);
        }
        Expr::Unary(_, a, _) | Expr::As(a, _, _, _) => expr_scopes(a, f, depth + 1),
        Expr::Agg(a) => {
            for t in a.target.iter_mut().chain(a.order.iter_mut()) {
                expr_scopes(t, f, depth + 1);
            }
            scope_rec(&mut a.body, f, depth + 1);
        }
    }
}

fn leaf_exprs_mut(leaf: &mut Leaf) -> Vec<&mut Expr> {
    match leaf {
        Leaf::Pos(a) | Leaf::Neg(a, _) => a.args.iter_mut().collect(),
        Leaf::Cmp { lhs, rhs, .. } => vec![lhs, rhs],
        Leaf::Call { args, .. } => args.iter_mut().collect(),
        Leaf::Bool(..) => vec![],
    }
}

impl Typer<'_, '_, '_> {
    /// Phase 1 for one scope.
    fn bind_atoms(&mut self, leaves: &mut [Leaf]) {
        for leaf in leaves.iter() {
            let Leaf::Pos(a) = leaf else { continue };
            let Some(rel) = a.rel.and_then(|id| self.rels.get(id)) else {
                continue;
            };
            for (arg, attr) in a.args.iter().zip(&rel.attrs) {
                let (Expr::Var(v, span), Some(col)) = (arg, attr.ty) else {
                    continue;
                };
                let (v, span) = (*v, *span);
                let new = match self.var_ty(v) {
                    Ty::Known(old) => match self.env.meet(old, col) {
                        Some(m) => m,
                        None => {
                            let mut d = Diagnostic::error(
                                "E0201",
                                span,
                                format!(
                                    "type mismatch: variable `{}` is used as `{}` and as `{}`",
                                    self.names[v],
                                    self.env.name(old),
                                    self.env.name(col)
                                ),
                            )
                            .with_label(
                                attr.span,
                                format!(
                                    "attribute `{}` is declared `{}` here",
                                    attr.name, attr.type_name
                                ),
                            );
                            if let Some(site) = self.sites[v] {
                                d = d.with_label(
                                    site,
                                    format!(
                                        "`{}` has type `{}` here",
                                        self.names[v],
                                        self.env.name(old)
                                    ),
                                );
                            }
                            self.r.push(d.with_hint(sibling_hint(self.env, old, col)));
                            continue;
                        }
                    },
                    _ => col,
                };
                if self.vars[v] != Some(Ty::Known(new)) {
                    self.vars[v] = Some(Ty::Known(new));
                    self.sites[v] = Some(span);
                }
            }
        }
    }

    /// Phase 2: types from equalities, in every scope, to a fixpoint.
    fn equalities(&mut self, body: &mut [Leaf], head: &mut [Expr], links: &mut UnionFind) {
        loop {
            let mut changed = false;
            scopes(body, head, &mut |leaves| {
                for leaf in leaves.iter_mut() {
                    let Leaf::Cmp {
                        op: CmpOp::Eq,
                        lhs,
                        rhs,
                        negated: false,
                        ..
                    } = leaf
                    else {
                        continue;
                    };
                    for flip in [false, true] {
                        let (x, e) = if flip {
                            (&*rhs, &mut *lhs)
                        } else {
                            (&*lhs, &mut *rhs)
                        };
                        let Expr::Var(v, span) = *x else { continue };
                        if self.vars.get(v).is_none_or(|t| t.is_some()) {
                            continue;
                        }
                        let t = self.infer(e, None);
                        if t == Ty::IntLit {
                            e.free_vars(&mut |w, _| links.union(v, w));
                        }
                        if matches!(t, Ty::Known(_) | Ty::IntLit) {
                            self.vars[v] = Some(t);
                            self.sites[v] = Some(span);
                            changed = true;
                        }
                    }
                }
            });
            if !changed {
                break;
            }
        }
    }

    /// Gives integer-literal variables the numeric type of a column they flow into (default `number`).
    fn settle_vars(&mut self, body: &mut [Leaf], head: &mut Atom, links: &mut UnionFind) {
        if !self.vars.contains(&Some(Ty::IntLit)) {
            return;
        }
        // Direct uses of variables where a type is expected.
        let mut uses: Vec<(VarId, Option<TypeId>)> = Vec::new();
        let rels = self.rels;
        let atom_uses = |a: &Atom, uses: &mut Vec<(VarId, Option<TypeId>)>| {
            let Some(rel) = a.rel.and_then(|id| rels.get(id)) else {
                return;
            };
            for (arg, attr) in a.args.iter().zip(&rel.attrs) {
                if let Expr::Var(v, _) = arg {
                    uses.push((*v, attr.ty));
                }
            }
        };
        atom_uses(head, &mut uses);
        let vars = self.vars.clone();
        let known = |w: VarId| vars.get(w).copied().flatten().and_then(Ty::known);
        scopes(body, &mut [], &mut |leaves| {
            for leaf in leaves.iter() {
                match leaf {
                    Leaf::Pos(a) | Leaf::Neg(a, _) => atom_uses(a, &mut uses),
                    Leaf::Cmp {
                        lhs: Expr::Var(v, _),
                        rhs: Expr::Var(w, _),
                        ..
                    } => {
                        uses.push((*v, known(*w)));
                        uses.push((*w, known(*v)));
                    }
                    _ => {}
                }
            }
        });
        let mut hints: Vec<Option<TypeId>> = vec![None; self.vars.len()];
        for (v, want) in uses {
            if self.vars.get(v) != Some(&Some(Ty::IntLit)) {
                continue;
            }
            if let Some((t, _)) = want.and_then(|w| self.numeric_choice(w)) {
                let root = links.find(v);
                if let Some(h) = hints.get_mut(root) {
                    h.get_or_insert(t);
                }
            }
        }
        let number = self.env.prim(Prim::Number);
        for v in 0..self.vars.len() {
            if self.vars[v] == Some(Ty::IntLit) {
                let root = links.find(v);
                self.vars[v] = Some(Ty::Known(
                    hints.get(root).copied().flatten().unwrap_or(number),
                ));
            }
        }
    }

    /// Phase 3 for one scope (aggregate bodies are checked when their aggregate is inferred).
    pub fn check_leaves(&mut self, leaves: &mut [Leaf]) {
        for leaf in leaves.iter_mut() {
            let (a, negated) = match leaf {
                Leaf::Pos(a) => (a, false),
                Leaf::Neg(a, _) => (a, true),
                Leaf::Cmp { lhs, rhs, span, .. } => {
                    self.compare(lhs, rhs, *span);
                    continue;
                }
                Leaf::Call {
                    name,
                    builtin,
                    args,
                    span,
                    ..
                } => {
                    self.call(name, builtin, args, *span, None, true);
                    // Souffle warns and fails `match` (and `!match`) on a
                    // pattern that is no regular expression
                    if let (
                        Some(crate::functors::Builtin::Match),
                        Some(Expr::Lit {
                            value: Some(crate::value::Value::Symbol(p)),
                            span: at,
                            ..
                        }),
                    ) = (builtin.as_ref(), args.first())
                    {
                        if let Some(why) = crate::functors::regex_error(&p.as_str()) {
                            let why = why.lines().last().unwrap_or_default().trim().to_string();
                            self.r.push(
                                Diagnostic::warning("W0005", *at, format!("`{}` is not a regular expression: {why}", p.as_str()))
                                    .with_hint("`match` and `!match` are both false with this pattern, as in Souffle"),
                            );
                        }
                    }
                    continue;
                }
                Leaf::Bool(..) => continue,
            };
            let rel = a.rel.and_then(|id| self.rels.get(id));
            for (i, arg) in a.args.iter_mut().enumerate() {
                match (rel.and_then(|rel| rel.attrs.get(i)), arg) {
                    (_, Expr::Wildcard(_)) => {}
                    // Phase 1 typed (and checked) the variables of positive atoms.
                    (Some(_), Expr::Var(..)) if !negated => {}
                    (Some(attr), arg) => self.expect(arg, attr, false),
                    (None, arg) => {
                        let t = self.infer(arg, None);
                        self.settle(arg, t);
                    }
                }
            }
        }
    }

    fn compare(&mut self, lhs: &mut Expr, rhs: &mut Expr, span: Span) {
        let mut ta = self.infer(lhs, None);
        let mut tb = self.infer(rhs, ta.known());
        if ta == Ty::IntLit {
            if let Ty::Known(t) = tb {
                ta = self.infer(lhs, Some(t));
            }
        }
        ta = self.settle(lhs, ta);
        tb = self.settle(rhs, tb);
        match (ta, tb) {
            (Ty::Known(x), Ty::Known(y)) if !self.env.compatible(x, y) => {
                let (nx, ny) = (self.env.name(x).to_string(), self.env.name(y).to_string());
                let mut d = Diagnostic::error(
                    "E0201",
                    span,
                    format!("type mismatch: cannot compare `{nx}` with `{ny}`"),
                );
                for (e, n) in [(&*lhs, &nx), (&*rhs, &ny)] {
                    // A variable's label says where its type comes from; other operands show their type.
                    d = match self.var_site(e) {
                        Some((site, text)) => d.with_label(site, text),
                        None => d.with_label(e.span(), format!("`{n}`")),
                    };
                }
                self.err(d.with_hint(sibling_hint(self.env, x, y)));
            }
            (Ty::Bool, _) | (_, Ty::Bool) => {
                let s = if ta == Ty::Bool {
                    lhs.span()
                } else {
                    rhs.span()
                };
                self.err(
                    Diagnostic::error(
                        "E0205",
                        s,
                        "a constraint functor is a condition, not a value",
                    )
                    .with_hint("use it on its own as a body literal"),
                );
            }
            _ => {}
        }
    }

    /// Checks an argument against an attribute: a subtype (`sub`, heads) or a comparable type.
    pub fn expect(&mut self, e: &mut Expr, attr: &AttrInfo, sub: bool) {
        let Some(want) = attr.ty else {
            let t = self.infer(e, None);
            self.settle(e, t);
            return;
        };
        let t = self.infer(e, Some(want));
        let found = match t {
            Ty::Known(f) => f,
            Ty::IntLit => self.env.prim(Prim::Number),
            Ty::Bool => {
                self.err(
                    Diagnostic::error(
                        "E0205",
                        e.span(),
                        "a constraint functor is a condition, not a value",
                    )
                    .with_hint("use it on its own as a body literal"),
                );
                return;
            }
            Ty::Unknown => return,
        };
        let ok = if sub {
            self.env.is_sub(found, want)
        } else {
            self.env.compatible(found, want)
        };
        if ok {
            return;
        }
        let (nw, nf) = (
            self.env.name(want).to_string(),
            self.env.name(found).to_string(),
        );
        let mut d = Diagnostic::error(
            "E0201",
            e.span(),
            format!("type mismatch: expected `{nw}`, found `{nf}`"),
        )
        .with_label(
            attr.span,
            format!(
                "attribute `{}` is declared `{}` here",
                attr.name, attr.type_name
            ),
        );
        if let Some(l) = self.var_site(e) {
            d = d.with_label(l.0, l.1);
        }
        let hint = if self.env.is_sub(want, found) {
            format!(
                "a `{nf}` is not necessarily a `{nw}`; convert it explicitly with `as(..., {nw})`"
            )
        } else {
            sibling_hint(self.env, want, found)
        };
        self.err(d.with_hint(hint));
    }

    /// "`x` has type `T` here" for a variable whose type was decided elsewhere.
    fn var_site(&self, e: &Expr) -> Option<(Span, String)> {
        let Expr::Var(v, span) = e else { return None };
        let site = self.sites.get(*v).copied().flatten()?;
        if site == *span {
            return None;
        }
        let t = self.var_ty(*v);
        Some((
            site,
            format!("`{}` has type `{}` here", self.names[*v], self.ty_name(t)),
        ))
    }
}

fn sibling_hint(env: &TypeEnv, a: TypeId, b: TypeId) -> String {
    let (pa, pb) = (env.prims(a), env.prims(b));
    if let ([x], [y]) = (pa, pb) {
        if x != y && x.is_numeric() && y.is_numeric() {
            return super::infer::conversion_hint(*x, *y).replace(
                "both operands must have the same type; convert one",
                "convert",
            );
        }
    }
    if pa == pb && pa.len() == 1 {
        format!("`{}` and `{}` are distinct types over `{}`; convert explicitly with `as(x, {})` if that is intended", env.name(a), env.name(b), pa[0], env.name(a))
    } else {
        format!(
            "values of `{}` and `{}` are of different kinds",
            env.name(a),
            env.name(b)
        )
    }
}

/// Small union-find over variables (for integer-literal chains).
struct UnionFind {
    parent: Vec<usize>,
}

impl UnionFind {
    fn new(n: usize) -> UnionFind {
        UnionFind {
            parent: (0..n).collect(),
        }
    }

    fn find(&mut self, mut x: usize) -> usize {
        while let Some(&p) = self.parent.get(x) {
            if p == x {
                break;
            }
            let gp = self.parent.get(p).copied().unwrap_or(p);
            self.parent[x] = gp;
            x = p;
        }
        x
    }

    fn union(&mut self, a: usize, b: usize) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb && rb < self.parent.len() {
            self.parent[rb] = ra;
        }
    }
}

/// Splits ground facts from rules: a clause with no body whose head arguments
/// are constant expressions becomes a [`Fact`] (E0209 if a value cannot be
/// computed); everything else stays a clause.
pub fn extract_facts(clauses: Vec<Clause>, r: &mut Reporter) -> (Vec<Clause>, Vec<Fact>) {
    let mut rules = Vec::new();
    let mut facts = Vec::new();
    for c in clauses {
        let constant = c.body.is_empty() && c.head.args.iter().all(is_constant);
        let Some(rel) = c.head.rel.filter(|_| constant) else {
            rules.push(c);
            continue;
        };
        let mut row = Vec::with_capacity(c.head.args.len());
        for arg in &c.head.args {
            match eval_const(arg) {
                Ok(v) => row.push(v),
                Err(None) => break,
                Err(Some(span)) => {
                    r.push(
                        Diagnostic::error("E0209", span, "this value of the fact cannot be computed")
                            .with_hint("the operation is undefined for these operands (e.g. division by zero or a failed conversion)"),
                    );
                    break;
                }
            }
        }
        if row.len() == c.head.args.len() {
            facts.push(Fact {
                rel,
                row,
                span: c.span,
            });
        }
    }
    (rules, facts)
}

fn is_constant(e: &Expr) -> bool {
    match e {
        Expr::Lit { .. } => true,
        Expr::Var(..) | Expr::Wildcard(_) | Expr::Agg(_) => false,
        Expr::Call { args, .. } => args.iter().all(is_constant),
        Expr::Binary(_, a, b, _) => is_constant(a) && is_constant(b),
        Expr::Unary(_, a, _) | Expr::As(a, _, _, _) => is_constant(a),
    }
}

/// Evaluates a constant expression. `Err(None)`: not typed (an error was
/// reported); `Err(Some(span))`: undefined at that subexpression.
pub fn eval_const(e: &Expr) -> Result<Value, Option<Span>> {
    match e {
        Expr::Lit { value, .. } => value.ok_or(None),
        Expr::Call {
            builtin,
            args,
            span,
            ..
        } => {
            let b = builtin.ok_or(None)?;
            let vals = args.iter().map(eval_const).collect::<Result<Vec<_>, _>>()?;
            functors::eval(b, &vals).ok_or(Some(*span))
        }
        Expr::Binary(op, a, b, span) => {
            functors::eval_binary(*op, &eval_const(a)?, &eval_const(b)?).ok_or(Some(*span))
        }
        Expr::Unary(op, a, span) => functors::eval_unary(*op, &eval_const(a)?).ok_or(Some(*span)),
        Expr::As(a, ..) => eval_const(a),
        Expr::Var(..) | Expr::Wildcard(_) | Expr::Agg(_) => Err(None),
    }
}
