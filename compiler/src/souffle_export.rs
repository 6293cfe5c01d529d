//! `netc export --souffle`: the plan as a pure-Souffle program.
//!
//! Expects a [`Plan`]; guarantees a Souffle program with the same meaning,
//! or an [`ExportError`] naming the construct that has no Souffle
//! equivalent. Exporting from the plan (not the syntax tree) means every
//! functor is already resolved to its overload and every value typed, so the
//! lowering of network types is mechanical:
//!
//! | netc | Souffle | encoding |
//! |---|---|---|
//! | `ipv4` | `unsigned` | the 32-bit address |
//! | `prefix4` | `unsigned` | `network << 8 \| length` (orders like netc: by network, then length) |
//! | `mac` | `unsigned` | the 48-bit address |
//! | `ipv6`, `prefix6` | `symbol` | the text form (equality only) |
//!
//! Network functors on IPv4 become bit arithmetic (`contains(p, a)` is
//! `(a band mask(len p)) = network p`); where netc's result is *undefined*
//! (an index outside a prefix) the export adds a guard constraint so the rule
//! does not fire, as in netc. `hash5`, `hash5_sym` and text-to-address
//! conversions become user-defined functors `@netc_*`, declared with
//! `.functor` in the output; Souffle must be linked with a library providing
//! them. `@` location specifiers are dropped. The encoding needs Souffle
//! built with 64-bit domains (`SOUFFLE_DOMAIN_64BIT`), as netc's `number` is 64-bit.
//! Variables are named after plan slots (`v0`, `v1`, ...); each rule is
//! preceded by a comment with its source location.

use crate::ast::{AggFunc, CmpOp, UnOp};
use crate::functors::{overloads, Builtin, Ty};
use crate::plan::{Body, ColPat, Cond, Expr, Plan, RulePlan, Source, Step};
use crate::source::SourceMap;
use crate::types::Prim;
use crate::value::Value;
use std::fmt::Write;

/// A construct that cannot be expressed in Souffle.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{location}: cannot export to Souffle: {message}")]
pub struct ExportError {
    pub location: String,
    pub message: String,
}

/// The Souffle type a netc primitive is exported as.
pub fn souffle_type(p: Prim) -> &'static str {
    match p {
        Prim::Number => "number",
        Prim::Unsigned | Prim::Ipv4 | Prim::Prefix4 | Prim::Mac => "unsigned",
        Prim::Float => "float",
        Prim::Symbol | Prim::Ipv6 | Prim::Prefix6 => "symbol",
    }
}

/// A value in the exported encoding, as written in a Souffle facts file.
pub fn encode(v: &Value) -> String {
    match v {
        Value::Ipv4(a) => a.to_string(),
        Value::Prefix4(a, l) => ((u64::from(*a) << 8) | u64::from(*l)).to_string(),
        Value::Mac(m) => m.to_string(),
        other => other.to_string(),
    }
}

fn literal(v: &Value) -> String {
    match v {
        Value::Symbol(_) | Value::Ipv6(_) | Value::Prefix6(..) => {
            let s = v.to_string();
            format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
        }
        Value::Float(f) => {
            let s = format!("{:?}", f.0);
            if s.contains('.') || s.contains('e') || s.contains("inf") || s.contains("NaN") {
                s
            } else {
                format!("{s}.0")
            }
        }
        other => encode(other),
    }
}

/// The user-defined functors the export may call, with their Souffle declarations.
const EXTERNAL: &[(&str, &str)] = &[
    ("netc_hash5", ".functor netc_hash5(proto: number, src: unsigned, dst: unsigned, sport: number, dport: number): unsigned"),
    ("netc_hash5_sym", ".functor netc_hash5_sym(proto: number, src: unsigned, dst: unsigned, sport: number, dport: number): unsigned"),
    ("netc_to_ipv4", ".functor netc_to_ipv4(text: symbol): unsigned"),
    ("netc_to_prefix4", ".functor netc_to_prefix4(text: symbol): unsigned"),
    ("netc_to_mac", ".functor netc_to_mac(text: symbol): unsigned"),
    ("netc_ipv4_text", ".functor netc_ipv4_text(a: unsigned): symbol"),
    ("netc_prefix4_text", ".functor netc_prefix4_text(p: unsigned): symbol"),
    ("netc_mac_text", ".functor netc_mac_text(m: unsigned): symbol"),
    ("netc_replace", ".functor netc_replace(s: symbol, old: symbol, new: symbol): symbol"),
];

/// Renders the whole plan as a Souffle program.
pub fn export(plan: &Plan, sources: &SourceMap) -> Result<String, ExportError> {
    let mut body = String::new();
    for rel in &plan.relations {
        let mut cols = Vec::new();
        for c in &rel.columns {
            let tys: Vec<&str> = c.prims.iter().map(|p| souffle_type(*p)).collect();
            if tys.iter().any(|t| *t != tys[0]) {
                return Err(ExportError {
                    location: sources.location(rel.span),
                    message: format!("attribute `{}` of `{}` is a union of types with different Souffle encodings ({})", c.name, rel.name, c.type_name),
                });
            }
            cols.push(format!("{}: {}", c.name, tys[0]));
        }
        let name = decl_name(&rel.name);
        let _ = writeln!(body, ".decl {name}({})", cols.join(", "));
        for spec in &rel.inputs {
            let params = file_named(&rel.name, &spec.params, "facts");
            let _ = writeln!(body, ".input {name}{}", io_params(&params));
        }
        for spec in &rel.outputs {
            let params = file_named(&rel.name, &spec.params, "csv");
            let _ = writeln!(body, ".output {name}{}", io_params(&params));
        }
        if rel.printsize {
            let _ = writeln!(body, ".printsize {name}");
        }
    }
    body.push('\n');
    for (rel, row) in &plan.facts {
        let args: Vec<String> = row.iter().map(literal).collect();
        let _ = writeln!(
            body,
            "{}({}).",
            decl_name(&plan.relations[*rel].name),
            args.join(", ")
        );
    }
    let mut ex = Exporter {
        plan,
        sources,
        used: Vec::new(),
        fresh: 0,
    };
    for stratum in &plan.strata {
        for rule in &stratum.rules {
            body.push('\n');
            body.push_str(&ex.rule(rule)?);
        }
    }
    let mut out = String::from("// Exported by `netc export --souffle`: network types are encoded as numbers\n// (ipv4, mac: unsigned; prefix4: network << 8 | length; ipv6/prefix6: symbols).\n// Needs Souffle with 64-bit domains (SOUFFLE_DOMAIN_64BIT).\n\n");
    for (name, decl) in EXTERNAL {
        if ex.used.contains(name) {
            let _ = writeln!(out, "{decl}");
        }
    }
    out.push_str(&body);
    Ok(out)
}

/// A component instance's relation `inst.rel` is declared `inst__rel`
/// (Souffle declares only plain identifiers at top level).
fn decl_name(name: &str) -> String {
    name.replace('.', "__")
}

/// The IO parameters of a relation, with the file Souffle would use for
/// `inst.rel` (`inst.rel.csv`) named explicitly when its name was mangled.
fn file_named(
    name: &str,
    params: &std::collections::BTreeMap<String, String>,
    ext: &str,
) -> std::collections::BTreeMap<String, String> {
    let mut p = params.clone();
    let is_file = p.get("IO").is_none_or(|io| io == "file");
    if name.contains('.') && is_file && !p.contains_key("filename") {
        p.insert("filename".into(), format!("{name}.{ext}"));
    }
    p
}

fn io_params(params: &std::collections::BTreeMap<String, String>) -> String {
    if params.is_empty() {
        return String::new();
    }
    let ps: Vec<String> = params
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", v.replace('"', "\\\"")))
        .collect();
    format!("({})", ps.join(", "))
}

struct Exporter<'a> {
    plan: &'a Plan,
    sources: &'a SourceMap,
    used: Vec<&'static str>,
    fresh: usize,
}

/// The variables and types of the slots of one body (or aggregate body).
struct Scope {
    names: Vec<String>,
    prims: Vec<Option<Prim>>,
    /// Literals of the body rendered so far.
    lits: Vec<String>,
}

impl Exporter<'_> {
    fn err<T>(&self, rule: &RulePlan, message: impl Into<String>) -> Result<T, ExportError> {
        Err(ExportError {
            location: self.sources.location(rule.span),
            message: message.into(),
        })
    }

    fn rule(&mut self, rule: &RulePlan) -> Result<String, ExportError> {
        let mut scope = Scope {
            names: vec![],
            prims: vec![],
            lits: vec![],
        };
        self.body(rule, &rule.body, &mut scope, "v")?;
        let mut head = Vec::new();
        for e in &rule.head_exprs {
            head.push(self.expr(rule, e, &mut scope)?);
        }
        let rel = &self.plan.relations[rule.head];
        let mut out = format!(
            "// {}\n{}({})",
            self.sources.location(rule.span),
            decl_name(&rel.name),
            head.join(", ")
        );
        if !scope.lits.is_empty() {
            let _ = write!(out, " :-\n    {}", scope.lits.join(",\n    "));
        }
        out.push_str(".\n");
        Ok(out)
    }

    fn new_var(&mut self, scope: &mut Scope, prefix: &str, prim: Option<Prim>) -> String {
        let name = format!("{prefix}{}", scope.names.len());
        scope.names.push(name.clone());
        scope.prims.push(prim);
        name
    }

    fn fresh(&mut self) -> String {
        self.fresh += 1;
        format!("t{}", self.fresh)
    }

    /// Renders an atom's arguments from column patterns; `keys` gives terms for key columns.
    fn atom(
        &mut self,
        rel: usize,
        cols: &[ColPat],
        keys: &[(usize, String)],
        scope: &mut Scope,
        prefix: &str,
    ) -> String {
        let relation = &self.plan.relations[rel];
        let mut terms: Vec<String> = vec!["_".to_string(); cols.len()];
        for (i, pat) in cols.iter().enumerate() {
            terms[i] = match pat {
                ColPat::Bind => {
                    let p = relation.columns[i].prims.first().copied();
                    self.new_var(scope, prefix, p)
                }
                ColPat::SameAs(j) => terms.get(*j).cloned().unwrap_or_else(|| "_".into()),
                ColPat::Const(v) => literal(v),
                ColPat::Ignore => "_".to_string(),
            };
        }
        for (col, term) in keys {
            if let Some(t) = terms.get_mut(*col) {
                *t = term.clone();
            }
        }
        format!("{}({})", decl_name(&relation.name), terms.join(", "))
    }

    fn body(
        &mut self,
        rule: &RulePlan,
        body: &Body,
        scope: &mut Scope,
        prefix: &str,
    ) -> Result<(), ExportError> {
        match &body.source {
            Source::Unit | Source::Outer => {}
            Source::Scan(scan) => {
                let a = self.atom(scan.rel, &scan.cols, &[], scope, prefix);
                scope.lits.push(a);
            }
        }
        for step in &body.steps {
            match step {
                Step::Join {
                    rel,
                    left_key,
                    right_key,
                    cols,
                } => {
                    let mut keys = Vec::new();
                    for (e, c) in left_key.iter().zip(right_key) {
                        let t = self.term(rule, e, scope)?;
                        keys.push((*c, t));
                    }
                    let a = self.atom(*rel, cols, &keys, scope, prefix);
                    scope.lits.push(a);
                }
                Step::AntiJoin {
                    rel,
                    left_key,
                    right_cols,
                } => {
                    let arity = self.plan.relations[*rel].arity();
                    let cols = vec![ColPat::Ignore; arity];
                    let mut keys = Vec::new();
                    for (e, c) in left_key.iter().zip(right_cols) {
                        let t = self.term(rule, e, scope)?;
                        keys.push((*c, t));
                    }
                    let a = self.atom(*rel, &cols, &keys, scope, prefix);
                    scope.lits.push(format!("!{a}"));
                }
                Step::Filter(cond) => {
                    let c = self.cond(rule, cond, scope, false)?;
                    scope.lits.push(c);
                }
                Step::Bind(e) => {
                    let prim = self.prim_of(e, scope);
                    let rendered = self.expr(rule, e, scope)?;
                    let v = self.new_var(scope, prefix, prim);
                    scope.lits.push(format!("{v} = {rendered}"));
                }
                Step::Aggregate {
                    func,
                    group,
                    inner,
                    value,
                    result,
                    ..
                } => {
                    // The inner body sees the group slots under the outer names.
                    let inner_prefix = format!("a{}_", self.fresh);
                    self.fresh += 1;
                    let mut sub = Scope {
                        names: vec![],
                        prims: vec![],
                        lits: vec![],
                    };
                    for g in group {
                        sub.names.push(scope.names[*g].clone());
                        sub.prims.push(scope.prims[*g]);
                    }
                    self.body(rule, inner, &mut sub, &inner_prefix)?;
                    let target = match value {
                        Some(e) => format!(" {}", self.expr(rule, e, &mut sub)?),
                        None => String::new(),
                    };
                    let v = self.new_var(scope, prefix, Some(*result));
                    let name = match func {
                        AggFunc::Count => "count",
                        AggFunc::Sum => "sum",
                        AggFunc::Min => "min",
                        AggFunc::Max => "max",
                        AggFunc::Concat => {
                            return self.err(
                                rule,
                                "`concat` (an ordered string join) has no Souffle aggregate",
                            )
                        }
                    };
                    scope.lits.push(format!(
                        "{v} = {name}{target} : {{ {} }}",
                        sub.lits.join(", ")
                    ));
                }
            }
        }
        Ok(())
    }

    /// A term usable as an atom argument: a variable or literal, or a fresh
    /// variable bound to a complex expression.
    fn term(
        &mut self,
        rule: &RulePlan,
        e: &Expr,
        scope: &mut Scope,
    ) -> Result<String, ExportError> {
        match e {
            Expr::Slot(_) | Expr::Const(_) => self.expr(rule, e, scope),
            _ => {
                let r = self.expr(rule, e, scope)?;
                let t = self.fresh();
                scope.lits.push(format!("{t} = {r}"));
                Ok(t)
            }
        }
    }

    fn prim_of(&self, e: &Expr, scope: &Scope) -> Option<Prim> {
        match e {
            Expr::Slot(i) => scope.prims.get(*i).copied().flatten(),
            Expr::Const(v) => Some(v.prim()),
            Expr::Binary(_, a, _) | Expr::Unary(_, a) => self.prim_of(a, scope),
            Expr::Call(b, args) => {
                let arg_prims: Vec<Option<Prim>> =
                    args.iter().map(|a| self.prim_of(a, scope)).collect();
                let sigs = overloads(b.name())?;
                let sig = sigs
                    .iter()
                    .filter(|s| s.builtin == *b && s.params.len() == args.len())
                    .find(|s| {
                        s.params.iter().zip(&arg_prims).all(|(t, p)| match (t, p) {
                            (Ty::P(want), Some(got)) => want == got,
                            _ => true,
                        })
                    })?;
                match sig.result {
                    Ty::P(p) => Some(p),
                    Ty::Num => arg_prims.iter().flatten().next().copied(),
                    Ty::Bool => None,
                }
            }
        }
    }

    fn expr(
        &mut self,
        rule: &RulePlan,
        e: &Expr,
        scope: &mut Scope,
    ) -> Result<String, ExportError> {
        Ok(match e {
            Expr::Slot(i) => match scope.names.get(*i) {
                Some(n) => n.clone(),
                None => {
                    return self.err(
                        rule,
                        format!("internal error (PLAN-SLOTS): slot {i} is not bound"),
                    )
                }
            },
            Expr::Const(v) => literal(v),
            Expr::Binary(op, a, b) => {
                let ops = op.symbol();
                format!(
                    "({} {ops} {})",
                    self.expr(rule, a, scope)?,
                    self.expr(rule, b, scope)?
                )
            }
            Expr::Unary(op, a) => {
                let x = self.expr(rule, a, scope)?;
                match op {
                    UnOp::Neg => format!("(-{x})"),
                    UnOp::BNot => format!("(bnot {x})"),
                    UnOp::LNot => format!("(lnot {x})"),
                }
            }
            Expr::Call(b, args) => self.call(rule, *b, args, scope)?,
        })
    }

    fn call(
        &mut self,
        rule: &RulePlan,
        b: Builtin,
        args: &[Expr],
        scope: &mut Scope,
    ) -> Result<String, ExportError> {
        let prims: Vec<Option<Prim>> = args.iter().map(|a| self.prim_of(a, scope)).collect();
        let mut a = Vec::new();
        for e in args {
            a.push(self.expr(rule, e, scope)?);
        }
        let v6 = prims
            .iter()
            .any(|p| matches!(p, Some(Prim::Ipv6) | Some(Prim::Prefix6)));
        if v6 && !matches!(b, Builtin::ToString) {
            return self.err(
                rule,
                format!(
                    "`{}` on IPv6 values has no Souffle encoding (IPv6 is exported as text)",
                    b.name()
                ),
            );
        }
        Ok(match b {
            Builtin::Cat => format!("cat({})", a.join(", ")),
            // Souffle has no string replacement.
            Builtin::Replace => self.external("netc_replace", &a),
            Builtin::Abs if prims[0] == Some(Prim::Unsigned) => a[0].clone(),
            Builtin::Abs => format!("max({0}, -({0}))", a[0]),
            Builtin::ToString => match prims[0] {
                Some(Prim::Ipv4) => self.external("netc_ipv4_text", &a),
                Some(Prim::Prefix4) => self.external("netc_prefix4_text", &a),
                Some(Prim::Mac) => self.external("netc_mac_text", &a),
                _ => format!("to_string({})", a[0]),
            },
            Builtin::Strlen
            | Builtin::Substr
            | Builtin::Match
            | Builtin::Contains
            | Builtin::ToNumber
            | Builtin::ToUnsigned
            | Builtin::ToFloat
            | Builtin::Itou
            | Builtin::Utoi
            | Builtin::Itof
            | Builtin::Ftoi
            | Builtin::Utof
            | Builtin::Ftou
            | Builtin::Min
            | Builtin::Max => {
                format!("{}({})", b.name(), a.join(", "))
            }
            Builtin::PrefixContains => {
                let (lhs, rhs) = prefix_contains(&a[0], &a[1], prims[1] == Some(Prim::Prefix4));
                format!("{lhs} = {rhs}")
            }
            Builtin::PrefixLen => format!("utoi(({}) band 255)", a[0]),
            Builtin::PrefixNetwork => format!("(({}) bshr 8)", a[0]),
            Builtin::PrefixBroadcast => format!(
                "((({0}) bshr 8) bor ((1 bshl (32 - (({0}) band 255))) - 1))",
                a[0]
            ),
            Builtin::NthAddr => {
                let n = if prims[1] == Some(Prim::Number) {
                    format!("itou({})", a[1])
                } else {
                    a[1].clone()
                };
                if prims[1] == Some(Prim::Number) {
                    scope.lits.push(format!("{} >= 0", a[1]));
                }
                scope
                    .lits
                    .push(format!("{n} < (1 bshl (32 - (({}) band 255)))", a[0]));
                format!("((({}) bshr 8) + {n})", a[0])
            }
            Builtin::MakePrefix => {
                let len = if prims[1] == Some(Prim::Number) {
                    format!("itou({})", a[1])
                } else {
                    a[1].clone()
                };
                if prims[1] == Some(Prim::Number) {
                    scope.lits.push(format!("{} >= 0", a[1]));
                }
                scope.lits.push(format!("{len} <= 32"));
                format!(
                    "(((({}) band {}) bshl 8) bor {len})",
                    a[0],
                    mask4_expr(&len)
                )
            }
            Builtin::Ipv4ToUnsigned | Builtin::MacToUnsigned => a[0].clone(),
            Builtin::UnsignedToIpv4 => {
                scope.lits.push(format!("{} <= 4294967295", a[0]));
                a[0].clone()
            }
            Builtin::UnsignedToMac => {
                scope.lits.push(format!("{} <= 281474976710655", a[0]));
                a[0].clone()
            }
            Builtin::ToIpv4 => self.external("netc_to_ipv4", &a),
            Builtin::ToPrefix4 => self.external("netc_to_prefix4", &a),
            Builtin::ToMac => self.external("netc_to_mac", &a),
            Builtin::ToIpv6 | Builtin::ToPrefix6 => {
                return self.err(rule, format!("`{}` has no Souffle encoding", b.name()))
            }
            Builtin::Hash5 | Builtin::Hash5Sym => {
                let name = if b == Builtin::Hash5 {
                    "netc_hash5"
                } else {
                    "netc_hash5_sym"
                };
                let conv: Vec<String> = a
                    .iter()
                    .zip(&prims)
                    .enumerate()
                    .map(|(i, (x, p))| {
                        if (i == 0 || i >= 3) && *p == Some(Prim::Unsigned) {
                            format!("utoi({x})")
                        } else {
                            x.clone()
                        }
                    })
                    .collect();
                self.external(name, &conv)
            }
        })
    }

    fn external(&mut self, name: &'static str, args: &[String]) -> String {
        if !self.used.contains(&name) {
            self.used.push(name);
        }
        format!("@{name}({})", args.join(", "))
    }

    fn cond(
        &mut self,
        rule: &RulePlan,
        c: &Cond,
        scope: &mut Scope,
        negated: bool,
    ) -> Result<String, ExportError> {
        match c {
            Cond::Compare(op, a, b) => {
                let pa = self.prim_of(a, scope);
                let op = if negated { negate(*op) } else { *op };
                if matches!(pa, Some(Prim::Ipv6) | Some(Prim::Prefix6))
                    && !matches!(op, CmpOp::Eq | CmpOp::Ne)
                {
                    return self.err(rule, "ordered comparison of IPv6 values has no Souffle encoding (IPv6 is exported as text)");
                }
                Ok(format!(
                    "{} {} {}",
                    self.expr(rule, a, scope)?,
                    op.symbol(),
                    self.expr(rule, b, scope)?
                ))
            }
            Cond::Call(Builtin::PrefixContains, args) => {
                let prims: Vec<Option<Prim>> =
                    args.iter().map(|a| self.prim_of(a, scope)).collect();
                if prims
                    .iter()
                    .any(|p| matches!(p, Some(Prim::Ipv6) | Some(Prim::Prefix6)))
                {
                    return self.err(rule, "`contains` on IPv6 prefixes has no Souffle encoding (IPv6 is exported as text)");
                }
                let p = self.expr(rule, &args[0], scope)?;
                let x = self.expr(rule, &args[1], scope)?;
                let (lhs, rhs) = prefix_contains(&p, &x, prims[1] == Some(Prim::Prefix4));
                Ok(format!("{lhs} {} {rhs}", if negated { "!=" } else { "=" }))
            }
            Cond::Call(b, args) => {
                let s = self.call(rule, *b, args, scope)?;
                Ok(if negated { format!("!{s}") } else { s })
            }
            Cond::Not(inner) => self.cond(rule, inner, scope, !negated),
        }
    }
}

fn negate(op: CmpOp) -> CmpOp {
    match op {
        CmpOp::Eq => CmpOp::Ne,
        CmpOp::Ne => CmpOp::Eq,
        CmpOp::Lt => CmpOp::Ge,
        CmpOp::Le => CmpOp::Gt,
        CmpOp::Gt => CmpOp::Le,
        CmpOp::Ge => CmpOp::Lt,
    }
}

/// The IPv4 netmask of a length expression, as Souffle arithmetic (0 for /0).
fn mask4_expr(len: &str) -> String {
    format!("((bnot ((1 bshl (32 - {len})) - 1)) band 4294967295)")
}

/// `contains(p, x)` for an IPv4 prefix `p` and an address or prefix `x`, as
/// `lhs = rhs`. For a prefix, "x's length ≥ p's and x's network under p's
/// mask is p's network" is folded into one non-negative quantity that is 0
/// exactly when both hold, so the negation is a single `!=`.
fn prefix_contains(p: &str, x: &str, x_is_prefix: bool) -> (String, String) {
    let mask = mask4_expr(&format!("(({p}) band 255)"));
    if x_is_prefix {
        (format!("max((((({x}) bshr 8) band {mask}) bxor (({p}) bshr 8)), ((({p}) band 255) - min(({p}) band 255, ({x}) band 255)))"), "0".into())
    } else {
        (format!("(({x}) band {mask})"), format!("(({p}) bshr 8)"))
    }
}
