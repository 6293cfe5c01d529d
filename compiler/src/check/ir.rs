//! The checked program: relations, clauses and strata, ready for lowering.
//!
//! Expects nothing (plain data). The [`resolve`](super::resolve) pass builds
//! it from the AST with names resolved and disjunctions expanded; the
//! [`typeck`](super::typeck) pass fills in what only types decide (literal
//! values, functor overloads, aggregate result types). In a program that
//! [`check`](super::check) accepted, every `Option` below marked "filled by
//! typeck" or "resolved" is `Some` (CHECKED-RESOLVED); lowering reports an
//! internal error naming that invariant otherwise.
//!
//! A [`Clause`] is one head and one conjunction: a rule `a(x), b(x) :- p(x) ;
//! q(x).` becomes four clauses. Variables are numbered per clause
//! ([`VarId`]); a variable that occurs only inside an aggregate is local to
//! that aggregate and gets its own id, distinct from a same-named variable
//! of another aggregate.

use super::tyenv::{TypeEnv, TypeId};
use crate::ast::{AggFunc, BinOp, CmpOp, Ident, Lit, UnOp};
use crate::functors::Builtin;
use crate::plan::IoSpec;
use crate::source::Span;
use crate::types::Prim;
use crate::value::Row;

/// Index of a relation in [`Checked::relations`] (declaration order); the
/// plan uses the same numbering.
pub type RelId = usize;

/// Index of a variable in [`Clause::vars`].
pub type VarId = usize;

/// The result of a successful check.
#[derive(Clone, Debug)]
pub struct Checked {
    pub types: TypeEnv,
    pub relations: Vec<RelInfo>,
    /// Every rule clause (facts excluded).
    pub clauses: Vec<Clause>,
    /// Ground facts written in the program, evaluated.
    pub facts: Vec<Fact>,
    /// Relations with rules, grouped into strata in evaluation order.
    pub strata: Vec<StratumInfo>,
}

#[derive(Clone, Debug)]
pub struct Fact {
    pub rel: RelId,
    pub row: Row,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StratumInfo {
    /// The relations of one strongly connected component of the dependency graph.
    pub relations: Vec<RelId>,
    /// Whether a rule of the stratum reads a relation of the same stratum.
    pub recursive: bool,
}

#[derive(Clone, Debug)]
pub struct RelInfo {
    pub name: String,
    pub attrs: Vec<AttrInfo>,
    /// `Some(0)` if the first attribute carries `@`.
    pub location: Option<usize>,
    pub inputs: Vec<IoSpec>,
    pub outputs: Vec<IoSpec>,
    pub printsize: bool,
    /// The `.decl` item.
    pub span: Span,
    /// The name in the `.decl`.
    pub name_span: Span,
}

impl RelInfo {
    pub fn arity(&self) -> usize {
        self.attrs.len()
    }

    /// `edge(a: number, b: Host)`, for hints.
    pub fn signature(&self) -> String {
        let attrs: Vec<String> = self
            .attrs
            .iter()
            .map(|a| {
                format!(
                    "{}{}: {}",
                    if a.located { "@" } else { "" },
                    a.name,
                    a.type_name
                )
            })
            .collect();
        format!("{}({})", self.name, attrs.join(", "))
    }
}

#[derive(Clone, Debug)]
pub struct AttrInfo {
    pub name: String,
    pub type_name: String,
    /// `None` if the type name is unknown or broken (an error was reported).
    pub ty: Option<TypeId>,
    /// The primitives a value of this column may have (empty if `ty` is `None`).
    pub prims: Vec<Prim>,
    pub located: bool,
    pub span: Span,
}

/// One head, one conjunctive body.
#[derive(Clone, Debug)]
pub struct Clause {
    pub head: Atom,
    pub body: Vec<Leaf>,
    pub vars: Vec<Var>,
    /// The source rule.
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct Var {
    pub name: String,
    /// The first occurrence.
    pub span: Span,
    /// Filled by typeck; `None` if it could not be decided (an error was reported).
    pub ty: Option<TypeId>,
}

#[derive(Clone, Debug)]
pub struct Atom {
    /// Resolved relation; `None` if undeclared or of the wrong arity (an error was reported).
    pub rel: Option<RelId>,
    pub name: Ident,
    pub args: Vec<Expr>,
    pub span: Span,
}

/// A body literal after disjunctions and negations of constraints are expanded.
#[derive(Clone, Debug)]
pub enum Leaf {
    Pos(Atom),
    /// `!atom`; the span covers the `!`.
    Neg(Atom, Span),
    Cmp {
        op: CmpOp,
        lhs: Expr,
        rhs: Expr,
        negated: bool,
        span: Span,
    },
    /// A constraint functor (`contains(p, a)`), possibly negated.
    Call {
        name: Ident,
        builtin: Option<Builtin>,
        args: Vec<Expr>,
        negated: bool,
        span: Span,
    },
    Bool(bool, Span),
}

impl Leaf {
    pub fn span(&self) -> Span {
        match self {
            Leaf::Pos(a) => a.span,
            Leaf::Neg(_, s)
            | Leaf::Cmp { span: s, .. }
            | Leaf::Call { span: s, .. }
            | Leaf::Bool(_, s) => *s,
        }
    }
}

#[derive(Clone, Debug)]
pub enum Expr {
    Var(VarId, Span),
    Wildcard(Span),
    /// `value` is filled by typeck.
    Lit {
        lit: Lit,
        value: Option<crate::value::Value>,
        span: Span,
    },
    /// A value functor; `builtin` is filled by typeck.
    Call {
        name: Ident,
        builtin: Option<Builtin>,
        args: Vec<Expr>,
        span: Span,
    },
    Binary(BinOp, Box<Expr>, Box<Expr>, Span),
    Unary(UnOp, Box<Expr>, Span),
    Agg(Box<Aggregate>),
    /// `as(expr, T)`: the value unchanged, typed `T` (resolved `ty`).
    As(Box<Expr>, Ident, Option<TypeId>, Span),
}

impl Expr {
    pub fn span(&self) -> Span {
        match self {
            Expr::Var(_, s)
            | Expr::Wildcard(s)
            | Expr::Lit { span: s, .. }
            | Expr::Call { span: s, .. } => *s,
            Expr::Binary(_, _, _, s) | Expr::Unary(_, _, s) | Expr::As(_, _, _, s) => *s,
            Expr::Agg(a) => a.span,
        }
    }

    /// Calls `f` on every variable occurrence, outside aggregate bodies; an
    /// aggregate contributes its group variables (with the aggregate's span).
    pub fn free_vars(&self, f: &mut dyn FnMut(VarId, Span)) {
        match self {
            Expr::Var(v, s) => f(*v, *s),
            Expr::Wildcard(_) | Expr::Lit { .. } => {}
            Expr::Call { args, .. } => args.iter().for_each(|a| a.free_vars(f)),
            Expr::Binary(_, a, b, _) => {
                a.free_vars(f);
                b.free_vars(f);
            }
            Expr::Unary(_, a, _) | Expr::As(a, _, _, _) => a.free_vars(f),
            Expr::Agg(a) => a.group.iter().for_each(|v| f(*v, a.span)),
        }
    }

    /// Calls `f` on every aggregate directly in this expression (not nested in another).
    pub fn aggregates<'e>(&'e self, f: &mut dyn FnMut(&'e Aggregate)) {
        match self {
            Expr::Var(..) | Expr::Wildcard(_) | Expr::Lit { .. } => {}
            Expr::Call { args, .. } => args.iter().for_each(|a| a.aggregates(f)),
            Expr::Binary(_, a, b, _) => {
                a.aggregates(f);
                b.aggregates(f);
            }
            Expr::Unary(_, a, _) | Expr::As(a, _, _, _) => a.aggregates(f),
            Expr::Agg(a) => f(a),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Aggregate {
    pub func: AggFunc,
    pub target: Option<Expr>,
    /// `concat`'s ordering keys (empty for the others).
    pub order: Vec<Expr>,
    pub body: Vec<Leaf>,
    /// Variables of the enclosing scope used inside (the group key), in order of first use.
    pub group: Vec<VarId>,
    /// Filled by typeck.
    pub result: Option<Prim>,
    pub span: Span,
}

impl Leaf {
    /// The expressions of the leaf (atom arguments, comparison sides, functor arguments).
    pub fn exprs(&self) -> Vec<&Expr> {
        match self {
            Leaf::Pos(a) | Leaf::Neg(a, _) => a.args.iter().collect(),
            Leaf::Cmp { lhs, rhs, .. } => vec![lhs, rhs],
            Leaf::Call { args, .. } => args.iter().collect(),
            Leaf::Bool(..) => vec![],
        }
    }
}
