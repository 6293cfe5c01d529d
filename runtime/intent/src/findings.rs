//! Bad intent: turning `error_*` rows into located findings.
//!
//! Convention (specs/intent.md §1.3): every relation named `error_<what>` is
//! a finding; each of its rows is one problem, its columns name the
//! offending facts by their keys. A finding cites the intent facts behind
//! it: facts of the base relations the error relation depends on (through
//! any rules) that share at least two of the row's values (one, for a row of
//! a single value) — e.g. `error_vm_unknown_host("t1", "web9", "h99")` cites
//! `vm("t1", "web9", …, "h99").` with its `file:line`. Citations are
//! evidence for a human; they are not a proof of derivation (`netc repl`'s
//! `:explain` gives that).

// a value (an identifier of a megabyte, say) is shown cut, with its length
use netc_compiler::diagnostics::clip;
use netc_compiler::plan::{Plan, RelId};
use netc_compiler::source::{SourceMap, Span};
use netc_compiler::value::{Row, Value};
use std::collections::BTreeSet;

/// How many facts a finding cites at most.
const MAX_CITED: usize = 4;

/// One problem in the intent.
#[derive(Debug, Clone)]
pub struct Finding {
    /// The relation without its `error_` prefix, e.g. `vm_unknown_host`.
    pub kind: String,
    /// `(column name, value)` of the row.
    pub fields: Vec<(String, Value)>,
    /// Spans of the cited intent facts.
    pub cited: Vec<Span>,
}

impl Finding {
    pub fn render(&self, sources: &SourceMap) -> String {
        let fields: Vec<String> = self
            .fields
            .iter()
            .map(|(n, v)| format!("{n}={}", clip(&crate::io::updates::format_value(v), 80)))
            .collect();
        let mut out = format!(
            "error[intent]: {}: {}\n",
            self.kind.replace('_', " "),
            fields.join(" ")
        );
        for span in &self.cited {
            let line = sources.snippet(*span).lines().next().unwrap_or("").trim();
            out.push_str(&format!(
                "  --> {}  {}\n",
                sources.location(*span),
                clip(line, 160)
            ));
        }
        if self.cited.is_empty() {
            out.push_str("  (no single fact to cite: the problem is something missing)\n");
        }
        out.push_str(&format!(
            "   = hint: `error_{}` is explained in specs/intent.md, section 1.3\n",
            self.kind
        ));
        out
    }
}

/// Relations read by the rules that derive `rel`, transitively, that have
/// base facts (the ones a user writes).
fn base_dependencies(plan: &Plan, rel: RelId) -> BTreeSet<RelId> {
    let mut seen = BTreeSet::from([rel]);
    let mut stack = vec![rel];
    while let Some(r) = stack.pop() {
        for rule in plan
            .strata
            .iter()
            .flat_map(|s| &s.rules)
            .filter(|rule| rule.head == r)
        {
            for (d, _) in rule.body.reads() {
                if seen.insert(d) {
                    stack.push(d);
                }
            }
        }
    }
    seen
}

/// Every `error_*` row, with citations. `contents` gives a relation's current rows.
pub fn collect(plan: &Plan, contents: impl Fn(RelId) -> Vec<Row>) -> Vec<Finding> {
    let mut findings = Vec::new();
    for (id, rel) in plan.relations.iter().enumerate() {
        let Some(kind) = rel.name.strip_prefix("error_") else {
            continue;
        };
        let rows = contents(id);
        if rows.is_empty() {
            continue;
        }
        let deps = base_dependencies(plan, id);
        for row in rows {
            let need = if row.len() == 1 { 1 } else { 2 };
            // the facts that share the most of the row's values first
            // (the offending fact itself before its neighbours), each
            // group in file order
            let mut found: Vec<(usize, Span)> = Vec::new();
            for (i, (frel, frow)) in plan.facts.iter().enumerate() {
                if !deps.contains(frel) || *frel == id {
                    continue;
                }
                let shared = row.iter().filter(|v| frow.contains(v)).count();
                if shared >= need {
                    if let Some(span) = plan.fact_spans.get(i) {
                        found.push((shared, *span));
                    }
                }
            }
            found.sort_by_key(|(shared, _)| std::cmp::Reverse(*shared));
            let cited: Vec<Span> = found.into_iter().take(MAX_CITED).map(|(_, s)| s).collect();
            let fields = rel
                .columns
                .iter()
                .map(|c| c.name.clone())
                .zip(row)
                .collect();
            findings.push(Finding {
                kind: kind.to_string(),
                fields,
                cited,
            });
        }
    }
    findings
}
