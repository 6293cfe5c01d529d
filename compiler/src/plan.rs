//! The plan IR: what the engine runs.
//!
//! A checked program is lowered (`lower.rs`) into a [`Plan`]: every relation
//! with its typed columns, and the rules grouped into [`Stratum`]s in
//! evaluation order. A rule body is a left-deep pipeline over *binding rows*:
//! a [`Source`] makes the first rows, and each [`Step`] joins, filters, binds
//! or aggregates, appending the values it binds at the end of the row. Every
//! position is resolved here, so the engine is a dumb interpreter: it never
//! sees variable names or types, only slots, columns and values.
//!
//! Guarantees the engine may rely on (the lowering checks them; a violation
//! is an internal error naming the invariant):
//! - PLAN-SLOTS: every `Expr::Slot(i)` refers to a slot bound by an earlier
//!   source/step of the same body (or, inside an aggregate body, by `Outer`).
//! - PLAN-STRATA: a rule in stratum k reads relations of strata ≤ k only;
//!   negated and aggregated relations belong to strata < k.
//! - PLAN-RECURSIVE: `recursive` is true iff a rule of the stratum reads a
//!   relation of the same stratum.
//!
//! Semantics are sets: every relation is the distinct union of its base
//! facts and what its rules derive.

pub mod ops;

use crate::functors::Builtin;
use crate::source::Span;
use crate::types::Prim;
use crate::value::{Row, Value};
pub use ops::{AggFunc, BinOp, CmpOp, UnOp};
use std::collections::BTreeMap;

/// Index into [`Plan::relations`].
pub type RelId = usize;

#[derive(Clone, Debug)]
pub struct Plan {
    pub relations: Vec<Relation>,
    /// In evaluation order. Relations without rules belong to no stratum.
    pub strata: Vec<Stratum>,
    /// Ground facts written in the program text.
    pub facts: Vec<(RelId, Row)>,
    /// Where each of `facts` was written (same order); empty for plans built
    /// by hand. Used to cite intent facts in findings (`file:line`).
    pub fact_spans: Vec<Span>,
}

impl Plan {
    pub fn relation_id(&self, name: &str) -> Option<RelId> {
        self.relations.iter().position(|r| r.name == name)
    }
}

#[derive(Clone, Debug)]
pub struct Relation {
    pub name: String,
    pub columns: Vec<Column>,
    /// Index of the `@` attribute (NDlog location), if any. Always 0 when set.
    pub location: Option<usize>,
    /// One entry per `.input` directive naming this relation.
    pub inputs: Vec<IoSpec>,
    /// One entry per `.output` directive naming this relation.
    pub outputs: Vec<IoSpec>,
    pub printsize: bool,
    /// The `.decl` that declared it.
    pub span: Span,
}

impl Relation {
    pub fn arity(&self) -> usize {
        self.columns.len()
    }
}

#[derive(Clone, Debug)]
pub struct Column {
    pub name: String,
    /// The declared type name (`Host`, `number`, `Ip`).
    pub type_name: String,
    /// The primitives its values may have: one, or several for a union.
    pub prims: Vec<Prim>,
}

/// Parameters of one `.input`/`.output` directive (`IO`, `filename`, `delimiter`, ...).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IoSpec {
    pub params: BTreeMap<String, String>,
}

#[derive(Clone, Debug)]
pub struct Stratum {
    pub relations: Vec<RelId>,
    pub recursive: bool,
    pub rules: Vec<RulePlan>,
}

#[derive(Clone, Debug)]
pub struct RulePlan {
    pub head: RelId,
    /// One expression per head column, over the body's final row.
    pub head_exprs: Vec<Expr>,
    pub body: Body,
    /// The source rule (a rule with `;` or several heads yields several plans).
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct Body {
    pub source: Source,
    pub steps: Vec<Step>,
}

/// How a body reads a relation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Read {
    /// In a positive atom (a scan or a join) of the body itself.
    Pos,
    /// In a negated atom.
    Neg,
    /// Anywhere in an aggregate's inner body.
    Agg,
}

impl Body {
    /// Every relation the body reads, and how, in body order (aggregate
    /// bodies included; a relation read twice appears twice). The one walk
    /// of a body's reads: stratification checks, the engine's pieces and
    /// routes, and what a change can reach all ask it.
    pub fn reads(&self) -> Vec<(RelId, Read)> {
        let mut out = Vec::new();
        self.reads_into(false, &mut out);
        out
    }

    fn reads_into(&self, in_agg: bool, out: &mut Vec<(RelId, Read)>) {
        let pos = if in_agg { Read::Agg } else { Read::Pos };
        if let Source::Scan(s) = &self.source {
            out.push((s.rel, pos));
        }
        for step in &self.steps {
            match step {
                Step::Join { rel, .. } => out.push((*rel, pos)),
                Step::AntiJoin { rel, .. } => out.push((*rel, Read::Neg)),
                Step::Aggregate { inner, .. } => inner.reads_into(true, out),
                Step::Filter(_) | Step::Bind(_) => {}
            }
        }
    }
}

#[derive(Clone, Debug)]
pub enum Source {
    /// One empty row: a body with no positive atom.
    Unit,
    /// The rows of a relation, filtered and projected by the scan's patterns.
    Scan(Scan),
    /// Only in an aggregate's inner body: the distinct group keys of the
    /// outer rows, as a row of `group.len()` slots.
    Outer,
}

/// Reads a relation. The produced row holds, in column order, the value of
/// every column whose pattern is [`ColPat::Bind`].
#[derive(Clone, Debug)]
pub struct Scan {
    pub rel: RelId,
    /// One pattern per column of `rel`.
    pub cols: Vec<ColPat>,
}

/// What a column of a scanned or joined tuple must satisfy.
#[derive(Clone, Debug, PartialEq)]
pub enum ColPat {
    /// Append this column's value to the row.
    Bind,
    /// Must equal another column (by index) of the same tuple.
    SameAs(usize),
    /// Must equal this value.
    Const(Value),
    /// Anything (`_`, or a join key column already compared).
    Ignore,
}

#[derive(Clone, Debug)]
pub enum Step {
    /// Joins each row with the tuples of `rel` whose `right_key` columns equal
    /// `left_key` evaluated on the row; then applies `cols` (key columns are
    /// `Ignore`) and appends the bound columns.
    Join {
        rel: RelId,
        left_key: Vec<Expr>,
        right_key: Vec<usize>,
        cols: Vec<ColPat>,
    },
    /// Keeps rows for which no tuple of `rel` has `right_cols` equal to `left_key`.
    AntiJoin {
        rel: RelId,
        left_key: Vec<Expr>,
        right_cols: Vec<usize>,
    },
    /// Keeps rows where the condition holds.
    Filter(Cond),
    /// Appends the value of an expression; drops rows where it is undefined
    /// (division by zero, a conversion that fails, ...).
    Bind(Expr),
    /// Appends the aggregate of `value` (or the count) over the rows of
    /// `inner`, grouped by the values in `group` slots of this row. The inner
    /// body starts from `Source::Outer` (the group key as slots 0..group.len()).
    /// `count`/`sum` over no rows give 0; `min`/`max`/`concat` over no rows
    /// drop the row. `concat` joins the distinct `(order.., value)` of the
    /// inner rows, sorted (`Value`'s order), by their `value` texts and `,`.
    Aggregate {
        func: AggFunc,
        group: Vec<usize>,
        inner: Box<Body>,
        value: Option<Expr>,
        /// `concat`'s ordering keys, over the inner body's slots.
        order: Vec<Expr>,
        result: Prim,
        /// Souffle aggregates over the distinct bindings of the body's
        /// named variables: when a positive atom of the body has a `_`,
        /// several inner rows can share one binding, and these are the
        /// inner slots whose distinct values are aggregated (empty: every
        /// inner row is a binding of its own).
        distinct: Vec<usize>,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub enum Cond {
    Compare(CmpOp, Expr, Expr),
    /// A constraint functor such as `contains`; holds when it evaluates to true.
    Call(Builtin, Vec<Expr>),
    Not(Box<Cond>),
}

#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    Slot(usize),
    Const(Value),
    Call(Builtin, Vec<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    Unary(UnOp, Box<Expr>),
}
