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
use netc_compiler::plan::{Plan, RelId};
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

/// Checks the whole plan (see module docs): the invariants are the
/// compiler's own (`netc_compiler::lower::verify`, which the lowering runs on
/// every plan it builds), re-checked here because a plan may be built by
/// hand; facts are checked like transaction rows.
pub fn plan(plan: &Plan) -> Result<(), EngineError> {
    for (rel, r) in &plan.facts {
        row(plan, *rel, r)?;
    }
    netc_compiler::lower::verify::verify(plan).map_err(|e| bad(e.invariant, e.detail))
}
