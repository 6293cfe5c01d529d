//! Lowering: a [`Checked`] program → the [`Plan`] the engine runs.
//!
//! Expects: a program [`crate::check::check`] accepted (CHECKED-RESOLVED,
//! CHECKED-GROUNDED, CHECKED-STRATIFIED; see `check/mod.rs`). Guarantees: the
//! plan satisfies PLAN-SLOTS, PLAN-STRATA and PLAN-RECURSIVE (see `plan.rs`);
//! [`try_lower`] verifies them ([`verify`]) before returning, and a violation
//! (of those or of the checker's guarantees) is an [`InternalError`] naming
//! the invariant, never a panic.
//!
//! - Relations keep the checker's numbering (declaration order); columns
//!   carry their declared type name and primitives; `.decl` qualifiers
//!   `input`/`output` count as parameterless directives.
//! - Facts are the checker's evaluated facts.
//! - One stratum per strongly connected component with rules, in the
//!   checker's order; each clause becomes one [`RulePlan`] ([`body`]
//!   explains how a body is ordered and how slots are assigned). A clause
//!   with a `false` literal is dropped. `recursive` is recomputed from the
//!   rule plans.
//! - [`dump`] renders a plan as text for `netc check --dump-after=plan`.

pub mod body;
pub mod dump;
pub mod verify;

pub use dump::dump;

use crate::check::ir::{Checked, RelInfo};
use crate::diagnostics::Diagnostic;
use crate::plan::{Column, Plan, RelId, Relation, Stratum};
use std::fmt;

/// A broken internal invariant: a bug in netc, not in the user's program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InternalError {
    /// The invariant's name, e.g. `PLAN-SLOTS` or `CHECKED-GROUNDED`.
    pub invariant: &'static str,
    pub detail: String,
}

impl InternalError {
    pub fn new(invariant: &'static str, detail: impl Into<String>) -> InternalError {
        InternalError {
            invariant,
            detail: detail.into(),
        }
    }

    /// As a diagnostic (code E0901) for the CLI.
    pub fn to_diagnostic(&self) -> Diagnostic {
        Diagnostic::error_nospan(
            "E0901",
            format!(
                "internal error: invariant {} violated: {}",
                self.invariant, self.detail
            ),
        )
        .with_hint("this is a bug in netc; please report it with the program that triggers it")
    }
}

impl fmt::Display for InternalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "internal error: invariant {} violated: {}",
            self.invariant, self.detail
        )
    }
}

impl std::error::Error for InternalError {}

/// Lowers a checked program. An internal error (a bug in netc) panics with
/// the invariant's name; use [`try_lower`] to handle it as an error instead.
pub fn lower(checked: &Checked) -> Plan {
    match try_lower(checked) {
        Ok(plan) => plan,
        Err(e) => panic!("{e}"),
    }
}

/// Lowers a checked program and verifies the plan's invariants.
pub fn try_lower(checked: &Checked) -> Result<Plan, InternalError> {
    let relations: Vec<Relation> = checked.relations.iter().map(relation).collect();
    let mut strata = Vec::new();
    let mut stratum_of: Vec<Option<usize>> = vec![None; relations.len()];
    for (k, s) in checked.strata.iter().enumerate() {
        for &r in &s.relations {
            match stratum_of.get_mut(r) {
                Some(slot) => *slot = Some(k),
                None => {
                    return Err(InternalError::new(
                        "CHECKED-STRATIFIED",
                        format!("stratum {k} names relation #{r}, which does not exist"),
                    ))
                }
            }
        }
    }
    for (k, s) in checked.strata.iter().enumerate() {
        let mut rules = Vec::new();
        for c in &checked.clauses {
            let Some(head) = c.head.rel else {
                return Err(InternalError::new(
                    "CHECKED-RESOLVED",
                    format!("a rule for `{}` has an unresolved head", c.head.name.name),
                ));
            };
            if stratum_of.get(head).copied().flatten() != Some(k) {
                continue;
            }
            if let Some(rule) = body::lower_clause(c, &checked.relations)? {
                rules.push(rule);
            }
        }
        let recursive = rules.iter().any(|r| {
            r.body
                .reads()
                .iter()
                .any(|(rel, _)| s.relations.contains(rel))
        });
        strata.push(Stratum {
            relations: s.relations.clone(),
            recursive,
            rules,
        });
    }
    for c in &checked.clauses {
        if c.head
            .rel
            .and_then(|h| stratum_of.get(h).copied().flatten())
            .is_none()
        {
            return Err(InternalError::new(
                "CHECKED-STRATIFIED",
                format!("the rule for `{}` belongs to no stratum", c.head.name.name),
            ));
        }
    }
    let facts = checked
        .facts
        .iter()
        .map(|f| (f.rel, f.row.clone()))
        .collect();
    let fact_spans = checked.facts.iter().map(|f| f.span).collect();
    let plan = Plan {
        relations,
        strata,
        facts,
        fact_spans,
    };
    verify::verify(&plan)?;
    Ok(plan)
}

fn relation(r: &RelInfo) -> Relation {
    Relation {
        name: r.name.clone(),
        columns: r
            .attrs
            .iter()
            .map(|a| Column {
                name: a.name.clone(),
                type_name: a.type_name.clone(),
                prims: a.prims.clone(),
            })
            .collect(),
        location: r.location,
        inputs: r.inputs.clone(),
        outputs: r.outputs.clone(),
        printsize: r.printsize,
        span: r.span,
    }
}

/// The stratum index of every relation (`None` for relations without rules).
pub fn strata_of(plan: &Plan) -> Vec<Option<usize>> {
    let mut of: Vec<Option<usize>> = vec![None; plan.relations.len()];
    for (k, s) in plan.strata.iter().enumerate() {
        for &r in &s.relations {
            if let Some(slot) = of.get_mut(r) {
                *slot = Some(k);
            }
        }
    }
    of
}

/// Relation name for messages.
pub(crate) fn rel_name(plan_rels: &[Relation], id: RelId) -> &str {
    plan_rels.get(id).map_or("?", |r| r.name.as_str())
}
