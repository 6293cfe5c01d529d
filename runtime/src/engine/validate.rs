//! Checks a [`Plan`] against the invariants the renderer relies on, before
//! any worker thread starts.
//!
//! Expects: any `Plan` (it may come from a buggy lowering).
//! Guarantees: when [`plan`] returns `Ok`, rendering cannot index out of
//! bounds: every relation id, column index, `SameAs` target and slot is in
//! range (PLAN-SLOTS); every read is of an earlier stratum or, in a recursive
//! stratum, a positive read of the same stratum (PLAN-STRATA); a
//! non-recursive stratum reads none of its own relations (PLAN-RECURSIVE);
//! `Source::Outer` appears only as an aggregate's inner source. Facts are
//! checked like transaction rows ([`row`]).

use super::EngineError;
use netc_compiler::plan::{Body, ColPat, Cond, Expr, Plan, RelId, Source, Step};
use netc_compiler::value::Value;

fn bad(invariant: &'static str, detail: String) -> EngineError {
    EngineError::InvalidPlan { invariant, detail }
}

/// Checks a user-supplied row for relation `rel`: id, arity and column types.
pub fn row(plan: &Plan, rel: RelId, row: &[Value]) -> Result<(), EngineError> {
    let r = plan
        .relations
        .get(rel)
        .ok_or(EngineError::UnknownRelation(rel))?;
    if row.len() != r.arity() {
        return Err(EngineError::Arity {
            relation: r.name.clone(),
            expected: r.arity(),
            found: row.len(),
        });
    }
    for (v, c) in row.iter().zip(&r.columns) {
        if !c.prims.is_empty() && !c.prims.contains(&v.prim()) {
            return Err(EngineError::Type {
                relation: r.name.clone(),
                column: c.name.clone(),
                expected: c.type_name.clone(),
                value: v.to_string(),
            });
        }
    }
    Ok(())
}

/// Checks the whole plan (see module docs).
pub fn plan(plan: &Plan) -> Result<(), EngineError> {
    let n = plan.relations.len();
    for (rel, r) in &plan.facts {
        row(plan, *rel, r)?;
    }
    let mut stratum_of = vec![None; n];
    for (k, s) in plan.strata.iter().enumerate() {
        for &rel in &s.relations {
            let slot = stratum_of.get_mut(rel).ok_or_else(|| {
                bad(
                    "PLAN-STRATA",
                    format!("stratum {k} lists unknown relation {rel}"),
                )
            })?;
            if slot.is_some() {
                return Err(bad(
                    "PLAN-STRATA",
                    format!("relation {} is in two strata", plan.relations[rel].name),
                ));
            }
            *slot = Some(k);
        }
    }
    for (k, s) in plan.strata.iter().enumerate() {
        for rule in &s.rules {
            if !s.relations.contains(&rule.head) {
                return Err(bad(
                    "PLAN-STRATA",
                    format!(
                        "a rule of stratum {k} derives relation {} outside it",
                        rule.head
                    ),
                ));
            }
            let cx = Cx {
                plan,
                stratum_of: &stratum_of,
                k,
                recursive: s.recursive,
            };
            let width = cx.body(&rule.body, None, false)?;
            if rule.head_exprs.len() != plan.relations[rule.head].arity() {
                return Err(bad(
                    "PLAN-SLOTS",
                    format!(
                        "rule for {} has {} head expressions",
                        plan.relations[rule.head].name,
                        rule.head_exprs.len()
                    ),
                ));
            }
            for e in &rule.head_exprs {
                expr(e, width)?;
            }
        }
    }
    Ok(())
}

struct Cx<'a> {
    plan: &'a Plan,
    stratum_of: &'a [Option<usize>],
    k: usize,
    recursive: bool,
}

impl Cx<'_> {
    /// Checks a read of `rel`; returns its arity.
    fn read(&self, rel: RelId, negated_or_aggregated: bool) -> Result<usize, EngineError> {
        let r = self
            .plan
            .relations
            .get(rel)
            .ok_or_else(|| bad("PLAN-STRATA", format!("read of unknown relation {rel}")))?;
        match self.stratum_of[rel] {
            Some(j) if j > self.k => Err(bad(
                "PLAN-STRATA",
                format!("stratum {} reads {} of later stratum {j}", self.k, r.name),
            )),
            Some(j) if j == self.k && negated_or_aggregated => Err(bad(
                "PLAN-STRATA",
                format!("{} is negated or aggregated in its own stratum", r.name),
            )),
            Some(j) if j == self.k && !self.recursive => Err(bad(
                "PLAN-RECURSIVE",
                format!(
                    "non-recursive stratum {j} reads its own relation {}",
                    r.name
                ),
            )),
            _ => Ok(r.arity()),
        }
    }

    fn cols(&self, cols: &[ColPat], arity: usize, rel: RelId) -> Result<usize, EngineError> {
        if cols.len() != arity {
            return Err(bad(
                "PLAN-SLOTS",
                format!(
                    "{} column patterns for {} of arity {arity}",
                    cols.len(),
                    self.plan.relations[rel].name
                ),
            ));
        }
        for c in cols {
            if let ColPat::SameAs(j) = c {
                if *j >= arity {
                    return Err(bad(
                        "PLAN-SLOTS",
                        format!("SameAs({j}) on a relation of arity {arity}"),
                    ));
                }
            }
        }
        Ok(cols.iter().filter(|c| **c == ColPat::Bind).count())
    }

    /// Checks a body; returns the width of its final rows.
    fn body(
        &self,
        body: &Body,
        outer: Option<usize>,
        aggregated: bool,
    ) -> Result<usize, EngineError> {
        let mut width = match &body.source {
            Source::Unit => 0,
            Source::Outer => outer
                .ok_or_else(|| bad("PLAN-SLOTS", "Source::Outer outside an aggregate".into()))?,
            Source::Scan(s) => {
                let arity = self.read(s.rel, aggregated)?;
                self.cols(&s.cols, arity, s.rel)?
            }
        };
        for step in &body.steps {
            match step {
                Step::Join {
                    rel,
                    left_key,
                    right_key,
                    cols,
                } => {
                    let arity = self.read(*rel, aggregated)?;
                    if left_key.len() != right_key.len() || right_key.iter().any(|&c| c >= arity) {
                        return Err(bad(
                            "PLAN-SLOTS",
                            format!("bad join key on {}", self.plan.relations[*rel].name),
                        ));
                    }
                    for e in left_key {
                        expr(e, width)?;
                    }
                    width += self.cols(cols, arity, *rel)?;
                }
                Step::AntiJoin {
                    rel,
                    left_key,
                    right_cols,
                } => {
                    let arity = self.read(*rel, true)?;
                    if left_key.len() != right_cols.len() || right_cols.iter().any(|&c| c >= arity)
                    {
                        return Err(bad(
                            "PLAN-SLOTS",
                            format!("bad negation key on {}", self.plan.relations[*rel].name),
                        ));
                    }
                    for e in left_key {
                        expr(e, width)?;
                    }
                }
                Step::Filter(c) => cond(c, width)?,
                Step::Bind(e) => {
                    expr(e, width)?;
                    width += 1;
                }
                Step::Aggregate {
                    group,
                    inner,
                    value,
                    ..
                } => {
                    if let Some(&g) = group.iter().find(|&&g| g >= width) {
                        return Err(bad(
                            "PLAN-SLOTS",
                            format!("aggregate groups by slot {g} of a row of width {width}"),
                        ));
                    }
                    let inner_width = self.body(inner, Some(group.len()), true)?;
                    if let Some(v) = value {
                        expr(v, inner_width)?;
                    }
                    width += 1;
                }
            }
        }
        Ok(width)
    }
}

fn expr(e: &Expr, width: usize) -> Result<(), EngineError> {
    match e {
        Expr::Slot(i) if *i >= width => Err(bad(
            "PLAN-SLOTS",
            format!("slot {i} read from a row of width {width}"),
        )),
        Expr::Slot(_) | Expr::Const(_) => Ok(()),
        Expr::Call(_, args) => args.iter().try_for_each(|a| expr(a, width)),
        Expr::Binary(_, a, b) => {
            expr(a, width)?;
            expr(b, width)
        }
        Expr::Unary(_, a) => expr(a, width),
    }
}

fn cond(c: &Cond, width: usize) -> Result<(), EngineError> {
    match c {
        Cond::Compare(_, a, b) => {
            expr(a, width)?;
            expr(b, width)
        }
        Cond::Call(_, args) => args.iter().try_for_each(|a| expr(a, width)),
        Cond::Not(c) => cond(c, width),
    }
}
