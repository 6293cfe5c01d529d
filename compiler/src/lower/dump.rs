//! A readable text form of a plan, for `netc check --dump-after=plan` and tests.
//!
//! Expects: any [`Plan`] (out-of-range ids print as `#n`). Guarantees: a
//! deterministic rendering, one line per relation, fact, source and step:
//!
//! ```text
//! relation edge(a: number, b: number) input(IO=file)
//! relation path(a: number, b: number) output()
//! fact edge(1, 2)
//! stratum 0 [path] recursive
//!   rule path(s0, s2)
//!     scan edge(→s0, →s1)
//!     join path(=s1, →s2)
//!     antijoin blocked(=s0)
//!     filter s0 != s2
//!     bind s3 := (s0 + 1)
//!     aggregate s4 := count by (s0) as number {
//!       outer(t0)
//!       join edge(=t0, →t1)
//!     }
//! ```
//!
//! In column lists `→sN` binds slot N, `=e` requires the column to equal `e`
//! (a join key, a constant, or `=#j` another column), `_` ignores it. An
//! aggregate body has its own slots, named with the next letter (`t0` is its
//! first group-key slot); its `by (...)` lists the enclosing body's slots.

use crate::plan::{Body, ColPat, Cond, Expr, Plan, RelId, Relation, Source, Step};
use crate::source::SourceMap;
use crate::value::Value;
use std::fmt::Write;

/// Renders the plan.
pub fn dump(plan: &Plan) -> String {
    render(plan, None)
}

/// Renders the plan with each rule's source location.
pub fn dump_with_sources(plan: &Plan, sources: &SourceMap) -> String {
    render(plan, Some(sources))
}

fn render(plan: &Plan, sources: Option<&SourceMap>) -> String {
    let mut out = String::new();
    for r in &plan.relations {
        let cols: Vec<String> = r
            .columns
            .iter()
            .enumerate()
            .map(|(i, c)| {
                format!(
                    "{}{}: {}",
                    if r.location == Some(i) { "@" } else { "" },
                    c.name,
                    c.type_name
                )
            })
            .collect();
        let _ = write!(out, "relation {}({})", r.name, cols.join(", "));
        for (kind, specs) in [("input", &r.inputs), ("output", &r.outputs)] {
            for s in specs {
                let params: Vec<String> =
                    s.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
                let _ = write!(out, " {kind}({})", params.join(", "));
            }
        }
        if r.printsize {
            out.push_str(" printsize");
        }
        out.push('\n');
    }
    for (rel, row) in &plan.facts {
        let vals: Vec<String> = row.iter().map(value).collect();
        let _ = writeln!(
            out,
            "fact {}({})",
            name(&plan.relations, *rel),
            vals.join(", ")
        );
    }
    for (k, s) in plan.strata.iter().enumerate() {
        let rels: Vec<&str> = s
            .relations
            .iter()
            .map(|r| name(&plan.relations, *r))
            .collect();
        let _ = writeln!(
            out,
            "stratum {k} [{}]{}",
            rels.join(", "),
            if s.recursive { " recursive" } else { "" }
        );
        for rule in &s.rules {
            let head: Vec<String> = rule.head_exprs.iter().map(|e| expr(e, 's')).collect();
            let _ = write!(
                out,
                "  rule {}({})",
                name(&plan.relations, rule.head),
                head.join(", ")
            );
            if let Some(src) = sources {
                let _ = write!(out, "  -- {}", src.location(rule.span));
            }
            out.push('\n');
            body(&mut out, &plan.relations, &rule.body, 4, 0, 0);
        }
    }
    out
}

/// Writes a body at an indentation. Slots are named `s0, s1, ...` in a rule
/// body, `t0, ...` in an aggregate body, `u0, ...` one level deeper, etc.
fn body(out: &mut String, rels: &[Relation], b: &Body, indent: usize, outer: usize, depth: usize) {
    let pad = " ".repeat(indent);
    let p = slot_prefix(depth);
    let q = slot_prefix(depth + 1);
    let expr = |e: &Expr| expr(e, p);
    let mut w = 0;
    match &b.source {
        Source::Unit => {
            let _ = writeln!(out, "{pad}unit");
        }
        Source::Outer => {
            let slots: Vec<String> = (0..outer).map(|i| format!("{p}{i}")).collect();
            let _ = writeln!(out, "{pad}outer({})", slots.join(", "));
            w = outer;
        }
        Source::Scan(s) => {
            let cols = columns(&s.cols, &mut w, &[], &[], p);
            let _ = writeln!(out, "{pad}scan {}({cols})", name(rels, s.rel));
        }
    }
    for step in &b.steps {
        match step {
            Step::Join {
                rel,
                left_key,
                right_key,
                cols,
            } => {
                let cols = columns(cols, &mut w, left_key, right_key, p);
                let _ = writeln!(out, "{pad}join {}({cols})", name(rels, *rel));
            }
            Step::AntiJoin {
                rel,
                left_key,
                right_cols,
            } => {
                let arity = rels
                    .get(*rel)
                    .map_or(0, |r| r.arity())
                    .max(right_cols.iter().map(|c| c + 1).max().unwrap_or(0));
                let cols: Vec<String> = (0..arity)
                    .map(|c| match right_cols.iter().position(|rc| *rc == c) {
                        Some(i) => format!("={}", left_key.get(i).map_or("?".to_string(), expr)),
                        None => "_".to_string(),
                    })
                    .collect();
                let _ = writeln!(
                    out,
                    "{pad}antijoin {}({})",
                    name(rels, *rel),
                    cols.join(", ")
                );
            }
            Step::Filter(c) => {
                let _ = writeln!(out, "{pad}filter {}", cond(c, p));
            }
            Step::Bind(e) => {
                let _ = writeln!(out, "{pad}bind {p}{w} := {}", expr(e));
                w += 1;
            }
            Step::Aggregate {
                func,
                group,
                inner,
                value,
                order,
                result,
                ..
            } => {
                let by: Vec<String> = group.iter().map(|s| format!("{p}{s}")).collect();
                let mut of = value
                    .as_ref()
                    .map(|v| format!(" {}", self::expr(v, q)))
                    .unwrap_or_default();
                if !order.is_empty() {
                    let keys: Vec<String> = order.iter().map(|k| self::expr(k, q)).collect();
                    of = format!("{of} ordered ({})", keys.join(", "));
                }
                let _ = writeln!(
                    out,
                    "{pad}aggregate {p}{w} := {}{of} by ({}) as {result} {{",
                    func.name(),
                    by.join(", ")
                );
                body(out, rels, inner, indent + 2, group.len(), depth + 1);
                let _ = writeln!(out, "{pad}}}");
                w += 1;
            }
        }
    }
}

fn slot_prefix(depth: usize) -> char {
    ['s', 't', 'u', 'v', 'w', 'x', 'y', 'z']
        .get(depth)
        .copied()
        .unwrap_or('z')
}

fn columns(
    cols: &[ColPat],
    w: &mut usize,
    left_key: &[Expr],
    right_key: &[usize],
    p: char,
) -> String {
    let mut parts = Vec::with_capacity(cols.len());
    for (c, pat) in cols.iter().enumerate() {
        let key = right_key
            .iter()
            .position(|k| *k == c)
            .and_then(|i| left_key.get(i));
        parts.push(match (pat, key) {
            (_, Some(e)) => format!("={}", expr(e, p)),
            (ColPat::Bind, None) => {
                *w += 1;
                format!("→{p}{}", *w - 1)
            }
            (ColPat::SameAs(j), None) => format!("=#{j}"),
            (ColPat::Const(v), None) => format!("={}", value(v)),
            (ColPat::Ignore, None) => "_".to_string(),
        });
    }
    parts.join(", ")
}

fn name(rels: &[Relation], id: RelId) -> &str {
    super::rel_name(rels, id)
}

fn value(v: &Value) -> String {
    match v {
        Value::Symbol(_) => format!("{:?}", v.to_string()),
        Value::Unsigned(n) => format!("{n}u"),
        _ => v.to_string(),
    }
}

fn cond(c: &Cond, p: char) -> String {
    match c {
        Cond::Compare(op, a, b) => format!("{} {} {}", expr(a, p), op.symbol(), expr(b, p)),
        Cond::Call(f, args) => format!(
            "{}({})",
            f.name(),
            args.iter()
                .map(|a| expr(a, p))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Cond::Not(c) => format!("!({})", cond(c, p)),
    }
}

fn expr(e: &Expr, p: char) -> String {
    match e {
        Expr::Slot(i) => format!("{p}{i}"),
        Expr::Const(v) => value(v),
        Expr::Call(f, args) => format!(
            "{}({})",
            f.name(),
            args.iter()
                .map(|a| expr(a, p))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Expr::Binary(op, a, b) => format!("({} {} {})", expr(a, p), op.symbol(), expr(b, p)),
        Expr::Unary(op, a) => {
            let sym = match op {
                crate::ast::UnOp::Neg => "-",
                crate::ast::UnOp::BNot => "bnot ",
                crate::ast::UnOp::LNot => "lnot ",
            };
            format!("{sym}{}", expr(a, p))
        }
    }
}
