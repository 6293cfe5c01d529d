//! A readable text form of a checked program, for `netc check --dump-after=check`.
//!
//! Expects: any [`Checked`] (missing pieces print as `?`). Guarantees: a
//! deterministic rendering: declared types, relations, facts, strata, and
//! every clause in Datalog syntax after expansion (one head, one
//! conjunction) followed by the inferred type of each variable:
//!
//! ```text
//! type Host <: symbol
//! relation link(@src: Host, dst: Host)
//! fact link("a", "b")
//! stratum 0 [reach] recursive
//! reach(x, z) :- reach(x, y), link(y, z).  -- x: Host, y: Host, z: Host
//! ```

use super::ir::{Atom, Checked, Clause, Expr, Leaf, RelId, Var};
use super::tyenv::TypeKind;
use crate::value::Value;
use std::fmt::Write;

pub fn dump(c: &Checked) -> String {
    let mut out = String::new();
    for id in 0.. {
        let Some(info) = c.types.info(id) else { break };
        let def = match &info.kind {
            TypeKind::Prim(_) => continue,
            TypeKind::Sub(b) => format!("<: {}", c.types.name(*b)),
            TypeKind::Union(ms) => format!(
                "= {}",
                ms.iter()
                    .map(|m| c.types.name(*m))
                    .collect::<Vec<_>>()
                    .join(" | ")
            ),
        };
        let _ = writeln!(out, "type {} {def}", info.name);
    }
    for r in &c.relations {
        let _ = writeln!(out, "relation {}", r.signature());
    }
    for f in &c.facts {
        let vals: Vec<String> = f.row.iter().map(value).collect();
        let _ = writeln!(out, "fact {}({})", rel(c, f.rel), vals.join(", "));
    }
    let mut printed = vec![false; c.clauses.len()];
    for (k, s) in c.strata.iter().enumerate() {
        let names: Vec<&str> = s.relations.iter().map(|r| rel(c, *r)).collect();
        let _ = writeln!(
            out,
            "stratum {k} [{}]{}",
            names.join(", "),
            if s.recursive { " recursive" } else { "" }
        );
        for (i, cl) in c.clauses.iter().enumerate() {
            if cl.head.rel.is_some_and(|h| s.relations.contains(&h)) {
                printed[i] = true;
                clause(&mut out, c, cl);
            }
        }
    }
    for (i, cl) in c.clauses.iter().enumerate() {
        if !printed[i] {
            clause(&mut out, c, cl);
        }
    }
    out
}

fn rel(c: &Checked, id: RelId) -> &str {
    c.relations.get(id).map_or("?", |r| r.name.as_str())
}

fn clause(out: &mut String, c: &Checked, cl: &Clause) {
    let p = Printer { vars: &cl.vars };
    let _ = write!(out, "{}", p.atom(&cl.head));
    if !cl.body.is_empty() {
        let body: Vec<String> = cl.body.iter().map(|l| p.leaf(l)).collect();
        let _ = write!(out, " :- {}", body.join(", "));
    }
    let types: Vec<String> = cl
        .vars
        .iter()
        .map(|v| format!("{}: {}", v.name, v.ty.map_or("?", |t| c.types.name(t))))
        .collect();
    if types.is_empty() {
        out.push_str(".\n");
    } else {
        let _ = writeln!(out, ".  -- {}", types.join(", "));
    }
}

struct Printer<'a> {
    vars: &'a [Var],
}

impl Printer<'_> {
    fn atom(&self, a: &Atom) -> String {
        let args: Vec<String> = a.args.iter().map(|e| self.expr(e)).collect();
        format!("{}({})", a.name.name, args.join(", "))
    }

    fn leaf(&self, l: &Leaf) -> String {
        match l {
            Leaf::Pos(a) => self.atom(a),
            Leaf::Neg(a, _) => format!("!{}", self.atom(a)),
            Leaf::Cmp {
                op,
                lhs,
                rhs,
                negated,
                ..
            } => {
                let s = format!("{} {} {}", self.expr(lhs), op.symbol(), self.expr(rhs));
                if *negated {
                    format!("!({s})")
                } else {
                    s
                }
            }
            Leaf::Call {
                name,
                args,
                negated,
                ..
            } => {
                let args: Vec<String> = args.iter().map(|e| self.expr(e)).collect();
                format!(
                    "{}{}({})",
                    if *negated { "!" } else { "" },
                    name.name,
                    args.join(", ")
                )
            }
            Leaf::Bool(b, _) => b.to_string(),
        }
    }

    fn expr(&self, e: &Expr) -> String {
        match e {
            Expr::Var(v, _) => self
                .vars
                .get(*v)
                .map_or_else(|| format!("?{v}"), |v| v.name.clone()),
            Expr::Wildcard(_) => "_".to_string(),
            Expr::Lit { value: Some(v), .. } => value(v),
            Expr::Lit { lit, .. } => format!("{lit:?}"),
            Expr::Call { name, args, .. } => format!(
                "{}({})",
                name.name,
                args.iter()
                    .map(|a| self.expr(a))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Expr::Binary(op, a, b, _) => {
                format!("({} {} {})", self.expr(a), op.symbol(), self.expr(b))
            }
            Expr::Unary(op, a, _) => {
                let sym = match op {
                    crate::ast::UnOp::Neg => "-",
                    crate::ast::UnOp::BNot => "bnot ",
                    crate::ast::UnOp::LNot => "lnot ",
                };
                format!("{sym}{}", self.expr(a))
            }
            Expr::Agg(a) => {
                let target = a
                    .target
                    .as_ref()
                    .map(|t| format!(" {}", self.expr(t)))
                    .unwrap_or_default();
                let keys: Vec<String> = a.order.iter().map(|k| self.expr(k)).collect();
                let target = if keys.is_empty() {
                    target
                } else {
                    format!("{target} by {}", keys.join(", "))
                };
                let body: Vec<String> = a.body.iter().map(|l| self.leaf(l)).collect();
                format!("{}{target} : {{ {} }}", a.func.name(), body.join(", "))
            }
            Expr::As(a, ty, _, _) => format!("as({}, {})", self.expr(a), ty.name),
        }
    }
}

fn value(v: &Value) -> String {
    match v {
        Value::Symbol(_) => format!("{:?}", v.to_string()),
        Value::Unsigned(n) => format!("{n}u"),
        _ => v.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use crate::{check, diagnostics::Diagnostics, source::SourceMap, syntax};

    #[test]
    fn dump_shows_types_strata_and_variable_types() {
        let mut sources = SourceMap::new();
        let mut diags = Diagnostics::new();
        let text = ".type Host <: symbol\n.decl link(@s: Host, d: Host)\n.input link\n.decl reach(s: Host, d: Host)\n.output reach\nlink(\"a\", \"b\").\nreach(x, y) :- link(x, y).\nreach(x, z) :- reach(x, y), link(y, z).\n";
        let p = syntax::parse_text(&mut sources, "t.dl", text, &mut diags);
        let c = check::check(&p, &mut diags).expect("checks");
        let expected = "\
type Host <: symbol
relation link(@s: Host, d: Host)
relation reach(s: Host, d: Host)
fact link(\"a\", \"b\")
stratum 0 [reach] recursive
reach(x, y) :- link(x, y).  -- x: Host, y: Host
reach(x, z) :- reach(x, y), link(y, z).  -- x: Host, z: Host, y: Host
";
        assert_eq!(super::dump(&c), expected);
    }
}
