//! Name resolution: declarations, directives, and rules → IR clauses.
//!
//! Expects: the program and its [`TypeEnv`]. Guarantees:
//! - [`relations`]: one [`RelInfo`] per distinct declared name, in
//!   declaration order (E0103 for a second `.decl`; E0104, E0107, E0110,
//!   E0112, W0004 for its attributes and qualifiers);
//! - [`directives`] (`directives.rs`, re-exported here):
//!   `.input`/`.output`/`.printsize` attached (E0108), their IO parameters
//!   checked (E0116);
//! - [`rules`]: every rule as [`Clause`]s, one per head and per disjunct of
//!   its body in disjunctive normal form (negation pushed onto atoms and
//!   constraints); every atom resolved or reported (E0101, E0102);
//!   variables numbered with aggregate scoping (see [`super::ir`]); `_`
//!   outside an atom argument reported (E0111). Facts are clauses with an
//!   empty body.

pub use super::directives::directives;

use super::ir::{Aggregate, Atom, AttrInfo, Clause, Expr, Leaf, RelInfo, Var, VarId};
use super::tyenv::{Lookup, TypeEnv};
use super::{did_you_mean, Reporter};
use crate::ast::{self, Item, Literal, Program};
use crate::diagnostics::Diagnostic;
use crate::plan::IoSpec;
use std::collections::HashMap;

/// How many clauses one rule may expand to.
pub const MAX_DISJUNCTS: usize = 4096;
/// How deeply expressions and groups may nest.
pub const MAX_NESTING: usize = 200;

/// Performance qualifiers that do not change a relation's meaning.
const IGNORED_QUALIFIERS: &[&str] = &[
    "overridable",
    "inline",
    "no_inline",
    "magic",
    "no_magic",
    "brie",
    "btree",
    "btree_delete",
];

/// Collects the declared relations.
pub fn relations(program: &Program, types: &TypeEnv, r: &mut Reporter) -> Vec<RelInfo> {
    let mut rels: Vec<RelInfo> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    for item in &program.items {
        let Item::Decl(d) = item else { continue };
        if let Some(&first) = index.get(d.name.name.as_str()) {
            r.push(
                Diagnostic::error(
                    "E0103",
                    d.name.span,
                    format!("relation `{}` is declared twice", d.name.name),
                )
                .with_label(rels[first].name_span, "first declared here")
                .with_hint("remove one declaration, or rename one of the relations"),
            );
            continue;
        }
        index.insert(&d.name.name, rels.len());
        let mut attrs: Vec<AttrInfo> = Vec::new();
        for (i, a) in d.attrs.iter().enumerate() {
            if a.located && i > 0 {
                r.push(
                    Diagnostic::error("E0107", a.span, format!("`@` marks the location attribute and is only allowed on the first attribute; `{}` is attribute {}", a.name.name, i + 1))
                        .with_hint("move the located attribute first: the location of a tuple is its first column"),
                );
            }
            if let Some(prev) = attrs.iter().find(|p| p.name == a.name.name) {
                r.push(
                    Diagnostic::error(
                        "E0110",
                        a.name.span,
                        format!(
                            "relation `{}` has two attributes named `{}`",
                            d.name.name, a.name.name
                        ),
                    )
                    .with_label(prev.span, "first attribute of that name")
                    .with_hint("attribute names must be distinct"),
                );
            }
            let ty = match types.lookup(&a.ty.name) {
                Lookup::Found(id) => Some(id),
                Lookup::Broken => None,
                Lookup::Unknown => {
                    let mut diag = Diagnostic::error(
                        "E0104",
                        a.ty.span,
                        format!("unknown type `{}`", a.ty.name),
                    );
                    diag = match did_you_mean(&a.ty.name, types.all_names()) {
                        Some(h) => diag.with_hint(h),
                        None => diag.with_hint("declare it with `.type`, or use a primitive: number, unsigned, float, symbol, ipv4, ipv6, prefix4, prefix6, mac"),
                    };
                    r.push(diag);
                    None
                }
            };
            let prims = ty.map(|t| types.prims(t).to_vec()).unwrap_or_default();
            attrs.push(AttrInfo {
                name: a.name.name.clone(),
                type_name: a.ty.name.clone(),
                ty,
                prims,
                located: a.located,
                span: a.span,
            });
        }
        let mut rel = RelInfo {
            name: d.name.name.clone(),
            location: d.attrs.first().filter(|a| a.located).map(|_| 0),
            attrs,
            inputs: vec![],
            outputs: vec![],
            printsize: false,
            span: d.span,
            name_span: d.name.span,
        };
        for q in &d.qualifiers {
            match q.name.as_str() {
                "input" => rel.inputs.push(IoSpec::default()),
                "output" => rel.outputs.push(IoSpec::default()),
                "printsize" => rel.printsize = true,
                "eqrel" => r.push(
                    Diagnostic::error("E0112", q.span, "`eqrel` relations are not supported")
                        .with_hint("declare a plain relation and write the reflexive, symmetric and transitive rules"),
                ),
                other if IGNORED_QUALIFIERS.contains(&other) => r.push(
                    Diagnostic::warning("W0004", q.span, format!("qualifier `{other}` is ignored"))
                        .with_hint("netc chooses its own data structures; remove the qualifier"),
                ),
                other => r.push(
                    Diagnostic::warning("W0004", q.span, format!("unknown qualifier `{other}` is ignored"))
                        .with_hint("the qualifiers netc understands are input, output and printsize"),
                ),
            }
        }
        rels.push(rel);
    }
    rels
}

/// Converts every rule and fact into clauses.
pub fn rules(program: &Program, rels: &[RelInfo], r: &mut Reporter) -> Vec<Clause> {
    let index: HashMap<&str, usize> = rels
        .iter()
        .enumerate()
        .map(|(i, rel)| (rel.name.as_str(), i))
        .collect();
    let mut cx = Cx { rels, index, r };
    let mut clauses = Vec::new();
    for item in &program.items {
        let Item::Rule(rule) = item else { continue };
        let disjuncts = match dnf_disj(&rule.body, false, 0, &mut cx) {
            Some(d) => d,
            None => continue,
        };
        // A fact has one (empty) disjunct.
        let disjuncts = if rule.is_fact() {
            vec![vec![]]
        } else {
            disjuncts
        };
        for head in &rule.heads {
            for conj in &disjuncts {
                clauses.push(cx.clause(head, conj, rule.span));
            }
        }
    }
    clauses
}

/// A body literal after DNF, still in AST form.
#[derive(Clone, Copy)]
enum Flat<'a> {
    Pos(&'a ast::Atom),
    Neg(&'a ast::Atom, crate::source::Span),
    Cmp(&'a Literal, bool),
    Call(&'a Literal, bool),
    Bool(bool, crate::source::Span),
}

struct Cx<'a, 'r, 'd> {
    rels: &'a [RelInfo],
    index: HashMap<&'a str, usize>,
    r: &'r mut Reporter<'d>,
}

/// DNF of a disjunction (negated: of its negation). `None` if it exploded (reported).
fn dnf_disj<'a>(
    disj: &'a [Vec<Literal>],
    negated: bool,
    depth: usize,
    cx: &mut Cx,
) -> Option<Vec<Vec<Flat<'a>>>> {
    if negated {
        // !(c1 ; c2) = !c1 , !c2
        let mut acc = vec![vec![]];
        for conj in disj {
            acc = product(
                acc,
                dnf_conj(conj, true, depth, cx)?,
                conj.first().map(Literal::span),
                cx,
            )?;
        }
        Some(acc)
    } else {
        let mut acc = Vec::new();
        for conj in disj {
            acc.extend(dnf_conj(conj, false, depth, cx)?);
            if acc.len() > MAX_DISJUNCTS {
                return explode(conj.first().map(Literal::span), cx);
            }
        }
        Some(acc)
    }
}

fn dnf_conj<'a>(
    conj: &'a [Literal],
    negated: bool,
    depth: usize,
    cx: &mut Cx,
) -> Option<Vec<Vec<Flat<'a>>>> {
    if negated {
        // !(l1 , l2) = !l1 ; !l2
        let mut acc = Vec::new();
        for lit in conj {
            acc.extend(dnf_lit(lit, true, depth, cx)?);
            if acc.len() > MAX_DISJUNCTS {
                return explode(Some(lit.span()), cx);
            }
        }
        Some(acc)
    } else {
        let mut acc = vec![vec![]];
        for lit in conj {
            acc = product(acc, dnf_lit(lit, false, depth, cx)?, Some(lit.span()), cx)?;
        }
        Some(acc)
    }
}

fn dnf_lit<'a>(
    lit: &'a Literal,
    negated: bool,
    depth: usize,
    cx: &mut Cx,
) -> Option<Vec<Vec<Flat<'a>>>> {
    if depth > MAX_NESTING {
        cx.r.push(too_deep(lit.span()));
        return None;
    }
    Some(match lit {
        Literal::Atom(a) if negated => vec![vec![Flat::Neg(a, a.span)]],
        Literal::Atom(a) => vec![vec![Flat::Pos(a)]],
        Literal::Negated(a, _) if negated => vec![vec![Flat::Pos(a)]],
        Literal::Negated(a, s) => vec![vec![Flat::Neg(a, *s)]],
        Literal::Compare(..) => vec![vec![Flat::Cmp(lit, negated)]],
        Literal::Constraint(..) => vec![vec![Flat::Call(lit, negated)]],
        Literal::NegatedConstraint(inner, _) => dnf_lit(inner, !negated, depth + 1, cx)?,
        Literal::Group(disj, _) => dnf_disj(disj, negated, depth + 1, cx)?,
        Literal::Bool(b, s) => vec![vec![Flat::Bool(*b != negated, *s)]],
    })
}

fn product<'a>(
    acc: Vec<Vec<Flat<'a>>>,
    next: Vec<Vec<Flat<'a>>>,
    at: Option<crate::source::Span>,
    cx: &mut Cx,
) -> Option<Vec<Vec<Flat<'a>>>> {
    if acc.len().saturating_mul(next.len()) > MAX_DISJUNCTS {
        return explode(at, cx);
    }
    let mut out = Vec::with_capacity(acc.len() * next.len());
    for a in &acc {
        for n in &next {
            let mut c = a.clone();
            c.extend(n.iter().copied());
            out.push(c);
        }
    }
    Some(out)
}

fn explode<T>(at: Option<crate::source::Span>, cx: &mut Cx) -> Option<T> {
    if let Some(span) = at {
        cx.r.push(
            Diagnostic::error("E0114", span, format!("this rule expands to more than {MAX_DISJUNCTS} alternatives"))
                .with_hint("`;` inside `( ... )` multiplies the alternatives; split the rule or introduce auxiliary relations"),
        );
    }
    None
}

fn too_deep(span: crate::source::Span) -> Diagnostic {
    Diagnostic::error(
        "E0115",
        span,
        format!("nested more than {MAX_NESTING} levels deep"),
    )
    .with_hint("split the expression using intermediate variables or relations")
}

/// The variable scope of a clause or an aggregate body.
struct Scope {
    map: HashMap<String, VarId>,
}

impl Cx<'_, '_, '_> {
    fn clause(&mut self, head: &ast::Atom, conj: &[Flat], span: crate::source::Span) -> Clause {
        // Names used outside aggregates are the clause's own variables.
        let mut names: Vec<(&str, crate::source::Span)> = Vec::new();
        for e in &head.args {
            names_outside_aggs(e, &mut names, 0);
        }
        for f in conj {
            for e in flat_exprs(f) {
                names_outside_aggs(e, &mut names, 0);
            }
        }
        let mut vars: Vec<Var> = Vec::new();
        let mut scope = Scope {
            map: HashMap::new(),
        };
        for (n, s) in names {
            if !scope.map.contains_key(n) {
                scope.map.insert(n.to_string(), vars.len());
                vars.push(Var {
                    name: n.to_string(),
                    span: s,
                    ty: None,
                });
            }
        }
        let head = self.atom(head, &scope, &mut vars, true);
        let body = conj
            .iter()
            .map(|f| self.leaf(*f, &scope, &mut vars))
            .collect();
        Clause {
            head,
            body,
            vars,
            span,
        }
    }

    fn atom(&mut self, a: &ast::Atom, scope: &Scope, vars: &mut Vec<Var>, is_head: bool) -> Atom {
        let rel = match self.index.get(a.relation.name.as_str()) {
            None => {
                let mut d = Diagnostic::error(
                    "E0101",
                    a.relation.span,
                    format!("undeclared relation `{}`", a.relation.name),
                );
                d = match did_you_mean(&a.relation.name, self.rels.iter().map(|r| r.name.as_str()))
                {
                    Some(h) => d.with_hint(h),
                    None => d.with_hint(format!(
                        "declare it, e.g. `.decl {}({})`",
                        a.relation.name,
                        (0..a.args.len())
                            .map(|i| format!("x{i}: symbol"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )),
                };
                self.r.push(d);
                None
            }
            Some(&id) if self.rels[id].arity() != a.args.len() => {
                let rel = &self.rels[id];
                self.r.push(
                    Diagnostic::error(
                        "E0102",
                        a.span,
                        format!(
                            "arity mismatch: `{}` has {} attribute{}, found {}",
                            rel.name,
                            rel.arity(),
                            if rel.arity() == 1 { "" } else { "s" },
                            a.args.len()
                        ),
                    )
                    .with_label(rel.name_span, "declared here")
                    .with_hint(format!(
                        "`{}` is declared as {}",
                        rel.name,
                        rel.signature()
                    )),
                );
                None
            }
            Some(&id) => Some(id),
        };
        let args = a
            .args
            .iter()
            .map(|e| {
                self.expr(
                    e,
                    scope,
                    vars,
                    if is_head { Ctx::Value } else { Ctx::AtomArg },
                    0,
                )
            })
            .collect();
        Atom {
            rel,
            name: a.relation.clone(),
            args,
            span: a.span,
        }
    }

    fn leaf(&mut self, f: Flat, scope: &Scope, vars: &mut Vec<Var>) -> Leaf {
        match f {
            Flat::Pos(a) => self.atom_or_constraint(a, false, a.span, scope, vars),
            Flat::Neg(a, s) => self.atom_or_constraint(a, true, s, scope, vars),
            Flat::Cmp(Literal::Compare(op, l, rr, span), negated) => {
                let lhs = self.expr(l, scope, vars, Ctx::Value, 0);
                let rhs = self.expr(rr, scope, vars, Ctx::Value, 0);
                Leaf::Cmp {
                    op: *op,
                    lhs,
                    rhs,
                    negated,
                    span: *span,
                }
            }
            Flat::Call(Literal::Constraint(name, args, span), negated) => {
                if self.index.contains_key(name.name.as_str()) {
                    // A relation that happens to share a constraint functor's name.
                    let a = ast::Atom {
                        relation: name.clone(),
                        args: args.clone(),
                        span: *span,
                    };
                    return self.atom_or_constraint(&a, negated, *span, scope, vars);
                }
                let args = args
                    .iter()
                    .map(|e| self.expr(e, scope, vars, Ctx::Value, 0))
                    .collect();
                Leaf::Call {
                    name: name.clone(),
                    builtin: None,
                    args,
                    negated,
                    span: *span,
                }
            }
            Flat::Bool(b, s) => Leaf::Bool(b, s),
            // Flat::Cmp/Call are only built from the matching literal kinds.
            Flat::Cmp(l, _) | Flat::Call(l, _) => Leaf::Bool(true, l.span()),
        }
    }

    /// An atom literal; a name that is no relation but a functor is a
    /// constraint (typeck reports a value functor used as one, E0205).
    fn atom_or_constraint(
        &mut self,
        a: &ast::Atom,
        negated: bool,
        span: crate::source::Span,
        scope: &Scope,
        vars: &mut Vec<Var>,
    ) -> Leaf {
        let declared = self.index.contains_key(a.relation.name.as_str());
        if !declared && crate::functors::overloads(&a.relation.name).is_some() {
            let args = a
                .args
                .iter()
                .map(|e| self.expr(e, scope, vars, Ctx::Value, 0))
                .collect();
            return Leaf::Call {
                name: a.relation.clone(),
                builtin: None,
                args,
                negated,
                span,
            };
        }
        let atom = self.atom(a, scope, vars, false);
        if negated {
            Leaf::Neg(atom, span)
        } else {
            Leaf::Pos(atom)
        }
    }

    fn expr(
        &mut self,
        e: &ast::Expr,
        scope: &Scope,
        vars: &mut Vec<Var>,
        ctx: Ctx,
        depth: usize,
    ) -> Expr {
        if depth > MAX_NESTING {
            self.r.push(too_deep(e.span()));
            return Expr::Wildcard(e.span());
        }
        let d = depth + 1;
        match e {
            ast::Expr::Var(id) => match scope.map.get(&id.name) {
                Some(&v) => Expr::Var(v, id.span),
                // Unreachable: every name was collected into the scope.
                None => Expr::Wildcard(id.span),
            },
            ast::Expr::Wildcard(s) => {
                if ctx == Ctx::Value {
                    self.r.push(
                        Diagnostic::error("E0111", *s, "`_` cannot be used here: a value is needed")
                            .with_hint("`_` only stands for an ignored argument of a body atom; name the value with a variable"),
                    );
                }
                Expr::Wildcard(*s)
            }
            ast::Expr::Lit(lit, s) => Expr::Lit {
                lit: lit.clone(),
                value: None,
                span: *s,
            },
            ast::Expr::Call(name, args, s) => {
                let args = args
                    .iter()
                    .map(|a| self.expr(a, scope, vars, Ctx::Value, d))
                    .collect();
                Expr::Call {
                    name: name.clone(),
                    builtin: None,
                    args,
                    span: *s,
                }
            }
            ast::Expr::Binary(op, a, b, s) => Expr::Binary(
                *op,
                Box::new(self.expr(a, scope, vars, Ctx::Value, d)),
                Box::new(self.expr(b, scope, vars, Ctx::Value, d)),
                *s,
            ),
            ast::Expr::Unary(op, a, s) => {
                Expr::Unary(*op, Box::new(self.expr(a, scope, vars, Ctx::Value, d)), *s)
            }
            ast::Expr::As(a, ty, s) => Expr::As(
                Box::new(self.expr(a, scope, vars, Ctx::Value, d)),
                ty.clone(),
                None,
                *s,
            ),
            ast::Expr::Aggregate {
                func,
                target,
                order,
                body,
                span,
            } => self.aggregate(*func, target.as_deref(), order, body, *span, scope, vars, d),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn aggregate(
        &mut self,
        func: ast::AggFunc,
        target: Option<&ast::Expr>,
        order: &[ast::Expr],
        body: &[Vec<Literal>],
        span: crate::source::Span,
        outer: &Scope,
        vars: &mut Vec<Var>,
        depth: usize,
    ) -> Expr {
        // The aggregate's own names: outer ones are its group key, others are local.
        let mut own: Vec<(&str, crate::source::Span)> = Vec::new();
        for t in target.into_iter().chain(order) {
            names_outside_aggs(t, &mut own, 0);
        }
        let mut all: Vec<(&str, crate::source::Span)> = Vec::new();
        for conj in body {
            for lit in conj {
                lit_names(lit, &mut own, false, 0);
                lit_names(lit, &mut all, true, 0);
            }
        }
        for t in target.into_iter().chain(order) {
            expr_names(t, &mut all, true, 0);
        }
        let mut scope = Scope {
            map: outer.map.clone(),
        };
        for (n, s) in &own {
            if !scope.map.contains_key(*n) {
                scope.map.insert(n.to_string(), vars.len());
                vars.push(Var {
                    name: n.to_string(),
                    span: *s,
                    ty: None,
                });
            }
        }
        let mut group: Vec<VarId> = Vec::new();
        for (n, _) in &all {
            if let Some(&v) = outer.map.get(*n) {
                if !group.contains(&v) {
                    group.push(v);
                }
            }
        }
        let disjuncts = dnf_disj(body, false, depth, self).unwrap_or_default();
        if disjuncts.len() > 1 {
            self.r.push(
                Diagnostic::error(
                    "E0113",
                    span,
                    format!("`;` inside the body of `{}` is not supported", func.name()),
                )
                .with_hint(
                    "define an auxiliary relation for the alternatives and aggregate over it",
                ),
            );
        }
        let conj = disjuncts.into_iter().next().unwrap_or_default();
        let body = conj.iter().map(|f| self.leaf(*f, &scope, vars)).collect();
        let target = target.map(|t| self.expr(t, &scope, vars, Ctx::Value, depth));
        let order = order
            .iter()
            .map(|k| self.expr(k, &scope, vars, Ctx::Value, depth))
            .collect();
        Expr::Agg(Box::new(Aggregate {
            func,
            target,
            order,
            body,
            group,
            result: None,
            span,
        }))
    }
}

/// Where an expression stands: as a direct atom argument (`_` allowed) or as a value.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ctx {
    AtomArg,
    Value,
}

fn flat_exprs<'a>(f: &Flat<'a>) -> Vec<&'a ast::Expr> {
    match *f {
        Flat::Pos(a) | Flat::Neg(a, _) => a.args.iter().collect(),
        Flat::Cmp(Literal::Compare(_, l, r, _), _) => vec![l, r],
        Flat::Call(Literal::Constraint(_, args, _), _) => args.iter().collect(),
        _ => vec![],
    }
}

fn names_outside_aggs<'a>(
    e: &'a ast::Expr,
    out: &mut Vec<(&'a str, crate::source::Span)>,
    depth: usize,
) {
    expr_names(e, out, false, depth)
}

/// Variable names of an expression (with `into_aggs`: also inside aggregates).
pub(crate) fn expr_names<'a>(
    e: &'a ast::Expr,
    out: &mut Vec<(&'a str, crate::source::Span)>,
    into_aggs: bool,
    depth: usize,
) {
    if depth > MAX_NESTING {
        return;
    }
    let d = depth + 1;
    match e {
        ast::Expr::Var(id) => out.push((&id.name, id.span)),
        ast::Expr::Wildcard(_) | ast::Expr::Lit(..) => {}
        ast::Expr::Call(_, args, _) => args.iter().for_each(|a| expr_names(a, out, into_aggs, d)),
        ast::Expr::Binary(_, a, b, _) => {
            expr_names(a, out, into_aggs, d);
            expr_names(b, out, into_aggs, d);
        }
        ast::Expr::Unary(_, a, _) | ast::Expr::As(a, _, _) => expr_names(a, out, into_aggs, d),
        ast::Expr::Aggregate {
            target,
            order,
            body,
            ..
        } => {
            if into_aggs {
                for t in target.as_deref().into_iter().chain(order) {
                    expr_names(t, out, true, d);
                }
                for conj in body {
                    for lit in conj {
                        lit_names(lit, out, true, d);
                    }
                }
            }
        }
    }
}

/// Variable names of a literal (with `into_aggs`: also inside aggregates).
pub(crate) fn lit_names<'a>(
    lit: &'a Literal,
    out: &mut Vec<(&'a str, crate::source::Span)>,
    into_aggs: bool,
    depth: usize,
) {
    if depth > MAX_NESTING {
        return;
    }
    let d = depth + 1;
    match lit {
        Literal::Atom(a) | Literal::Negated(a, _) => {
            a.args.iter().for_each(|e| expr_names(e, out, into_aggs, d))
        }
        Literal::Compare(_, l, r, _) => {
            expr_names(l, out, into_aggs, d);
            expr_names(r, out, into_aggs, d);
        }
        Literal::Constraint(_, args, _) => {
            args.iter().for_each(|e| expr_names(e, out, into_aggs, d))
        }
        Literal::NegatedConstraint(inner, _) => lit_names(inner, out, into_aggs, d),
        Literal::Group(disj, _) => disj
            .iter()
            .flatten()
            .for_each(|l| lit_names(l, out, into_aggs, d)),
        Literal::Bool(..) => {}
    }
}
