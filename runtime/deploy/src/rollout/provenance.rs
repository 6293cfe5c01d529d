//! What produced an artifact line: the rules and intent facts behind it.
//!
//! Expects: the compiled rules and the intent files' facts (or a stored
//! generation's facts, which carry their `file:line` but no rules).
//! Guarantees: [`IntentProvenance`] answers the verifier's [`Provenance`]
//! questions — for an OVS flow or a located row, the rules whose head
//! could derive it (table, priority and the fixed text of its match agree)
//! and the intent facts whose values appear in it — so every counterexample
//! names the intent `file:line` behind it, on every path that verifies.

use crate::store::IntentFact;
use netc_compiler::plan::{Expr, Plan};
use netc_compiler::source::SourceMap;
use netc_compiler::value::Value;
use netc_verify::artifacts::{FlowText, Row};
use netc_verify::Provenance;

/// A rule deriving a located relation: (head relation, table constant,
/// priority constant, string literals of its match column, citation).
type RuleCite = (String, Option<i64>, Option<i64>, Vec<String>, String);

/// Rules and intent facts behind artifact rows.
pub struct IntentProvenance {
    rules: Vec<RuleCite>,
    /// (values as text, citation) of the intent's own facts.
    facts: Vec<(Vec<String>, String)>,
}

fn text(v: &Value) -> String {
    match v {
        Value::Symbol(s) => s.as_str().to_string(),
        other => other.to_string(),
    }
}

/// The string literals of an expression (the fixed parts of a `cat(...)`).
fn literals(e: Option<&Expr>, out: &mut Vec<String>) {
    match e {
        Some(Expr::Const(Value::Symbol(s))) => {
            let t = s.as_str().trim_matches(',').to_string();
            if !t.is_empty() {
                out.push(t);
            }
        }
        Some(Expr::Call(_, args)) => args.iter().for_each(|a| literals(Some(a), out)),
        _ => {}
    }
}

fn constant(e: Option<&Expr>) -> Option<i64> {
    match e {
        Some(Expr::Const(Value::Number(n))) => Some(*n),
        _ => None,
    }
}

impl IntentProvenance {
    /// From the compiled rules and the facts of the intent files `names`.
    pub fn new(sources: &SourceMap, plan: &Plan, names: &[String]) -> IntentProvenance {
        let line = |span| {
            let first = sources
                .snippet(span)
                .lines()
                .next()
                .unwrap_or("")
                .trim()
                .to_string();
            format!("{}  {first}", sources.location(span))
        };
        let rules = plan
            .strata
            .iter()
            .flat_map(|s| &s.rules)
            .map(|r| {
                let mut lits = Vec::new();
                literals(r.head_exprs.get(3), &mut lits);
                (
                    plan.relations[r.head].name.clone(),
                    constant(r.head_exprs.get(1)),
                    constant(r.head_exprs.get(2)),
                    lits,
                    line(r.span),
                )
            })
            .collect();
        let facts = plan
            .facts
            .iter()
            .zip(&plan.fact_spans)
            .filter(|(_, s)| names.contains(&sources.file(s.file).name))
            .map(|((_, row), s)| (row.iter().map(text).collect(), line(*s)))
            .collect();
        IntentProvenance { rules, facts }
    }

    /// From a stored generation's intent facts alone (no rule citations).
    pub fn from_facts(facts: &[IntentFact]) -> IntentProvenance {
        IntentProvenance {
            rules: Vec::new(),
            facts: facts
                .iter()
                .map(|f| {
                    let vals = f.row.split('\t').map(str::to_string).collect();
                    (
                        vals,
                        format!("{}  {}({})", f.at, f.relation, f.row.replace('\t', ", ")),
                    )
                })
                .collect(),
        }
    }

    fn cite(
        &self,
        rel: &str,
        table: Option<i64>,
        prio: Option<i64>,
        matches: Option<&str>,
        device: &str,
        body: &str,
    ) -> Vec<String> {
        let mut out: Vec<String> = self
            .rules
            .iter()
            .filter(|(r, t, p, lits, _)| {
                r == rel
                    && (table.is_none() || t.is_none() || *t == table)
                    && (prio.is_none() || p.is_none() || *p == prio)
                    && matches.is_none_or(|m| lits.iter().all(|l| m.contains(l.as_str())))
            })
            .map(|(_, _, _, _, at)| format!("{at}  (rule)"))
            .take(3)
            .collect();
        let contains = |v: &String| {
            v.len() >= 4
                && body
                    .split(|c: char| ",=>()[]/ ".contains(c) || c == '\t')
                    .any(|tok| {
                        tok == v
                            || tok
                                .trim_start_matches("set_field:")
                                .trim_start_matches("mod_nw_dst:")
                                == v
                    })
        };
        for (vals, at) in &self.facts {
            let hits = vals.iter().filter(|v| contains(v)).count()
                + usize::from(vals.iter().any(|v| v == device));
            if hits >= 2 {
                out.push(format!("{at}  (intent)"));
                if out.len() >= 7 {
                    break;
                }
            }
        }
        out
    }
}

impl Provenance for IntentProvenance {
    fn flow(&self, device: &str, f: &FlowText) -> Vec<String> {
        let body = format!("{},{}", f.matches, f.actions).replace(':', ",");
        let mut body2 = body.clone();
        // MACs and dotted addresses survive the split only whole: add the raw text too.
        body2.push(',');
        body2.push_str(&format!("{},{}", f.matches, f.actions));
        self.cite(
            "ovs_flow",
            Some(i64::from(f.table)),
            Some(i64::from(f.priority)),
            Some(&f.matches),
            device,
            &body2,
        )
    }
    fn row(&self, relation: &str, row: &Row) -> Vec<String> {
        let body = row.vals.join("\t");
        self.cite(
            relation,
            None,
            None,
            None,
            row.vals.first().map_or("", |s| s.as_str()),
            &body,
        )
    }
}
