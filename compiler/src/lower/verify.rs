//! Checks a plan's invariants (PLAN-SLOTS, PLAN-STRATA, PLAN-RECURSIVE).
//!
//! Expects: any [`Plan`]. Guarantees: `Ok(())` iff every slot is read after
//! it is bound (and every column index, key length and arity is consistent),
//! every rule of stratum k reads relations of strata ≤ k only, negated and
//! aggregated ones of strata < k, and each stratum's `recursive` flag is
//! exactly "a rule reads a relation of the same stratum". The lowering runs
//! it on every plan it builds; the engine or tests may run it on any plan.

use super::{rel_name, strata_of, InternalError};
use crate::plan::{Body, ColPat, Cond, Expr, Plan, Read, RelId, Source, Step};

pub fn verify(plan: &Plan) -> Result<(), InternalError> {
    let strata = strata_of(plan);
    for (rel, row) in &plan.facts {
        let arity = plan.relations.get(*rel).map(|r| r.arity());
        if arity != Some(row.len()) {
            return Err(InternalError::new(
                "PLAN-SLOTS",
                format!("a fact of relation #{rel} has {} values", row.len()),
            ));
        }
    }
    for (k, s) in plan.strata.iter().enumerate() {
        for rule in &s.rules {
            let name = rel_name(&plan.relations, rule.head);
            let arity = plan.relations.get(rule.head).map(|r| r.arity());
            if arity != Some(rule.head_exprs.len()) {
                return Err(InternalError::new(
                    "PLAN-SLOTS",
                    format!(
                        "a rule for `{name}` has {} head expressions",
                        rule.head_exprs.len()
                    ),
                ));
            }
            if strata.get(rule.head).copied().flatten() != Some(k) {
                return Err(InternalError::new(
                    "PLAN-STRATA",
                    format!("a rule for `{name}` is in stratum {k}, its relation is not"),
                ));
            }
            let width = body_width(plan, &rule.body, None).map_err(|d| {
                InternalError::new("PLAN-SLOTS", format!("in a rule for `{name}`: {d}"))
            })?;
            for e in &rule.head_exprs {
                expr_ok(e, width).map_err(|d| {
                    InternalError::new(
                        "PLAN-SLOTS",
                        format!("in the head of a rule for `{name}`: {d}"),
                    )
                })?;
            }
            for (rel, how) in rule.body.reads() {
                let ok = match strata.get(rel).copied().flatten() {
                    None => rel < plan.relations.len(),
                    Some(j) => j < k || (j == k && how == Read::Pos),
                };
                if !ok {
                    return Err(InternalError::new(
                        "PLAN-STRATA",
                        format!(
                            "a rule for `{name}` in stratum {k} reads `{}` ({how:?})",
                            rel_name(&plan.relations, rel)
                        ),
                    ));
                }
            }
        }
        let recursive = s.rules.iter().any(|r| {
            r.body
                .reads()
                .iter()
                .any(|(rel, _)| s.relations.contains(rel))
        });
        if recursive != s.recursive {
            return Err(InternalError::new(
                "PLAN-RECURSIVE",
                format!(
                    "stratum {k} is marked recursive={} but its rules say {recursive}",
                    s.recursive
                ),
            ));
        }
    }
    Ok(())
}

/// The width of a body's final row, checking every slot read on the way.
/// `outer`: the group width, for an aggregate's inner body.
fn body_width(plan: &Plan, body: &Body, outer: Option<usize>) -> Result<usize, String> {
    let arity = |rel: RelId| {
        plan.relations
            .get(rel)
            .map(|r| r.arity())
            .ok_or_else(|| format!("relation #{rel} does not exist"))
    };
    let mut w = match (&body.source, outer) {
        (Source::Unit, None) => 0,
        (Source::Scan(s), None) => {
            if s.cols.len() != arity(s.rel)? {
                return Err(format!(
                    "scan of `{}` has {} column patterns",
                    rel_name(&plan.relations, s.rel),
                    s.cols.len()
                ));
            }
            cols_ok(&s.cols)?
        }
        (Source::Outer, Some(g)) => g,
        _ => return Err("`Outer` must start exactly the aggregate bodies".to_string()),
    };
    for step in &body.steps {
        match step {
            Step::Join {
                rel,
                left_key,
                right_key,
                cols,
            } => {
                let n = arity(*rel)?;
                if cols.len() != n
                    || left_key.len() != right_key.len()
                    || right_key.iter().any(|c| *c >= n)
                {
                    return Err(format!(
                        "join with `{}` has inconsistent keys or columns",
                        rel_name(&plan.relations, *rel)
                    ));
                }
                for e in left_key {
                    expr_ok(e, w)?;
                }
                w += cols_ok(cols)?;
            }
            Step::AntiJoin {
                rel,
                left_key,
                right_cols,
            } => {
                let n = arity(*rel)?;
                if left_key.len() != right_cols.len() || right_cols.iter().any(|c| *c >= n) {
                    return Err(format!(
                        "antijoin with `{}` has inconsistent keys",
                        rel_name(&plan.relations, *rel)
                    ));
                }
                for e in left_key {
                    expr_ok(e, w)?;
                }
            }
            Step::Filter(c) => cond_ok(c, w)?,
            Step::Bind(e) => {
                expr_ok(e, w)?;
                w += 1;
            }
            Step::Aggregate {
                group,
                inner,
                value,
                order,
                distinct,
                ..
            } => {
                if let Some(s) = group.iter().find(|s| **s >= w) {
                    return Err(format!("aggregate groups by slot {s}, only {w} are bound"));
                }
                let iw = body_width(plan, inner, Some(group.len()))?;
                if let Some(s) = distinct.iter().find(|s| **s >= iw) {
                    return Err(format!(
                        "aggregate is distinct over slot {s}, only {iw} are bound"
                    ));
                }
                for v in value.iter().chain(order) {
                    expr_ok(v, iw)?;
                }
                w += 1;
            }
        }
    }
    Ok(w)
}

/// Number of `Bind` columns; `SameAs` must point at another column.
fn cols_ok(cols: &[ColPat]) -> Result<usize, String> {
    for (c, p) in cols.iter().enumerate() {
        if let ColPat::SameAs(j) = p {
            if *j >= cols.len() || *j == c {
                return Err(format!("column {c} is `SameAs({j})`"));
            }
        }
    }
    Ok(cols.iter().filter(|p| **p == ColPat::Bind).count())
}

fn cond_ok(c: &Cond, w: usize) -> Result<(), String> {
    match c {
        Cond::Compare(_, a, b) => {
            expr_ok(a, w)?;
            expr_ok(b, w)
        }
        Cond::Call(_, args) => args.iter().try_for_each(|a| expr_ok(a, w)),
        Cond::Not(c) => cond_ok(c, w),
    }
}

fn expr_ok(e: &Expr, w: usize) -> Result<(), String> {
    match e {
        Expr::Slot(i) if *i >= w => Err(format!("slot {i} is read, only {w} are bound")),
        Expr::Slot(_) | Expr::Const(_) => Ok(()),
        Expr::Call(_, args) => args.iter().try_for_each(|a| expr_ok(a, w)),
        Expr::Binary(_, a, b) => {
            expr_ok(a, w)?;
            expr_ok(b, w)
        }
        Expr::Unary(_, a) => expr_ok(a, w),
    }
}
