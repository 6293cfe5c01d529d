//! Type inference of expressions (bidirectional), for [`super::typeck`].
//!
//! Expects: a [`Typer`] whose variable types are as known so far. Guarantees:
//! [`Typer::infer`] returns an expression's type given the type the context
//! expects (used to type literals: `5` where an `unsigned` is expected is an
//! unsigned) and, as it goes, fills the IR's literal values, functor
//! overloads and aggregate result types. In quiet mode it reports nothing
//! (used while variable types are still being discovered); otherwise it
//! reports E0104, E0201–E0208 for the expression. An integer literal with no
//! numeric context has type [`Ty::IntLit`]; the consumer settles it
//! ([`Typer::settle`]) to `number`.

use super::ir::{Aggregate, Expr, RelInfo, VarId};
use super::tyenv::{Lookup, TypeEnv, TypeId};
use super::{did_you_mean, Reporter};
use crate::ast::{AggFunc, BinOp, Ident, Lit, UnOp};
use crate::diagnostics::Diagnostic;
use crate::functors::{self, Builtin, Signature};
use crate::source::Span;
use crate::types::Prim;
use crate::value::{parse_int, Value, F64};

/// The type of an expression as far as it is known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    Known(TypeId),
    /// An integer literal (or arithmetic on them) with no numeric context yet.
    IntLit,
    /// The result of a constraint functor.
    Bool,
    /// Undecidable because of an error already reported (or to be reported).
    Unknown,
}

impl Ty {
    pub fn known(self) -> Option<TypeId> {
        match self {
            Ty::Known(t) => Some(t),
            _ => None,
        }
    }
}

/// The per-clause state of type checking.
pub struct Typer<'a, 'r, 'd> {
    pub env: &'a TypeEnv,
    pub rels: &'a [RelInfo],
    /// Each variable's type, once known (`IntLit` until settled).
    pub vars: Vec<Option<Ty>>,
    /// Where each variable's type was decided (for "has type X here" labels).
    pub sites: Vec<Option<Span>>,
    pub names: Vec<String>,
    pub r: &'r mut Reporter<'d>,
    pub quiet: bool,
}

impl Typer<'_, '_, '_> {
    pub fn err(&mut self, d: Diagnostic) {
        if !self.quiet {
            self.r.push(d);
        }
    }

    pub fn var_ty(&self, v: VarId) -> Ty {
        self.vars.get(v).copied().flatten().unwrap_or(Ty::Unknown)
    }

    /// Settles an integer literal with no context to `number` (or the expected numeric type).
    pub fn settle(&mut self, e: &mut Expr, t: Ty) -> Ty {
        if t == Ty::IntLit {
            let n = self.env.prim(Prim::Number);
            self.infer(e, Some(n))
        } else {
            t
        }
    }

    /// The numeric type a literal takes where `want` is expected, if any.
    pub fn numeric_choice(&self, want: TypeId) -> Option<(TypeId, Prim)> {
        match self.env.prims(want) {
            [p] if p.is_numeric() => Some((want, *p)),
            ps => [Prim::Number, Prim::Unsigned, Prim::Float]
                .into_iter()
                .find(|p| ps.contains(p))
                .map(|p| (self.env.prim(p), p)),
        }
    }

    pub fn infer(&mut self, e: &mut Expr, expected: Option<TypeId>) -> Ty {
        match e {
            Expr::Var(v, _) => self.var_ty(*v),
            Expr::Wildcard(_) => Ty::Unknown,
            Expr::Lit { lit, value, span } => self.lit(lit, value, *span, expected),
            Expr::Call {
                name,
                builtin,
                args,
                span,
            } => self.call(name, builtin, args, *span, expected, false),
            Expr::Binary(op, a, b, span) => self.binary(*op, a, b, *span, expected),
            Expr::Unary(op, a, span) => self.unary(*op, a, *span, expected),
            Expr::Agg(a) => self.aggregate(a),
            Expr::As(inner, name, ty, span) => self.convert(inner, name, ty, *span),
        }
    }

    fn lit(
        &mut self,
        lit: &Lit,
        value: &mut Option<Value>,
        span: Span,
        expected: Option<TypeId>,
    ) -> Ty {
        let base = match lit {
            Lit::Int(_) => None,
            Lit::Unsigned(_) => Some(Prim::Unsigned),
            Lit::Float(_) => Some(Prim::Float),
            Lit::Str(_) => Some(Prim::Symbol),
            Lit::Ipv4(_) => Some(Prim::Ipv4),
            Lit::Ipv6(_) => Some(Prim::Ipv6),
            Lit::Prefix4(_) => Some(Prim::Prefix4),
            Lit::Prefix6(_) => Some(Prim::Prefix6),
            Lit::Mac(_) => Some(Prim::Mac),
        };
        let (ty, prim) = match base {
            Some(p) => match expected {
                Some(want) if self.env.prims(want) == [p] => (Ty::Known(want), p),
                _ => (Ty::Known(self.env.prim(p)), p),
            },
            None => match expected.and_then(|w| self.numeric_choice(w)) {
                Some((t, p)) => (Ty::Known(t), p),
                None => {
                    // No numeric context yet: tentatively a number, errors left to the settled use.
                    *value = lit_value(lit, Prim::Number).ok();
                    return Ty::IntLit;
                }
            },
        };
        match lit_value(lit, prim) {
            Ok(v) => *value = Some(v),
            Err(msg) => {
                *value = None;
                self.err(
                    Diagnostic::error("E0207", span, format!("invalid literal: {msg}"))
                        .with_hint(lit_hint(lit, prim)),
                );
            }
        }
        ty
    }

    fn binary(
        &mut self,
        op: BinOp,
        a: &mut Expr,
        b: &mut Expr,
        span: Span,
        expected: Option<TypeId>,
    ) -> Ty {
        let want = expected
            .and_then(|w| self.numeric_choice(w))
            .map(|(_, p)| self.env.prim(p));
        let mut ta = self.infer(a, want);
        let tb = self.infer(b, ta.known().or(want));
        if ta == Ty::IntLit {
            if let Ty::Known(t) = tb {
                ta = self.infer(a, Some(t));
            }
        }
        let allowed = functors::binary_operand_prims(op);
        match (ta, tb) {
            (Ty::Unknown, _) | (_, Ty::Unknown) => Ty::Unknown,
            (Ty::IntLit, Ty::IntLit) => Ty::IntLit,
            _ => {
                // One bad operand is reported, not both (`s + "x"` is one mistake).
                let Some(pa) = self.operand(ta, a.span(), op.symbol(), allowed) else {
                    return Ty::Unknown;
                };
                let pb = self.operand(tb, b.span(), op.symbol(), allowed);
                let pa = Some(pa);
                match (pa, pb) {
                    // Constant arithmetic is typed like a literal: `443 + 1` fits a `Port`.
                    (Some(x), Some(y)) if x == y && is_constant(a) && is_constant(b) => {
                        match expected.and_then(|w| self.numeric_choice(w)) {
                            Some((t, p)) if p == x => Ty::Known(t),
                            _ => Ty::Known(self.env.prim(x)),
                        }
                    }
                    (Some(x), Some(y)) if x == y => Ty::Known(self.env.prim(x)),
                    (Some(x), Some(y)) => {
                        self.err(
                            Diagnostic::error(
                                "E0201",
                                span,
                                format!(
                                    "type mismatch: the operands of `{}` are `{x}` and `{y}`",
                                    op.symbol()
                                ),
                            )
                            .with_label(a.span(), format!("`{x}`"))
                            .with_label(b.span(), format!("`{y}`"))
                            .with_hint(conversion_hint(x, y)),
                        );
                        Ty::Unknown
                    }
                    _ => Ty::Unknown,
                }
            }
        }
    }

    fn unary(&mut self, op: UnOp, a: &mut Expr, _span: Span, expected: Option<TypeId>) -> Ty {
        let want = expected
            .and_then(|w| self.numeric_choice(w))
            .map(|(_, p)| self.env.prim(p));
        let t = self.infer(a, want);
        let sym = match op {
            UnOp::Neg => "-",
            UnOp::BNot => "bnot",
            UnOp::LNot => "lnot",
        };
        match t {
            Ty::IntLit | Ty::Unknown => t,
            _ => match self.operand(t, a.span(), sym, functors::unary_operand_prims(op)) {
                Some(p) => Ty::Known(self.env.prim(p)),
                None => Ty::Unknown,
            },
        }
    }

    /// The primitive of an operator's operand, if the operator is defined on it (else E0204/E0205).
    fn operand(&mut self, t: Ty, span: Span, op: &str, allowed: &[Prim]) -> Option<Prim> {
        match t {
            Ty::IntLit => allowed.first().copied(),
            Ty::Unknown => None,
            Ty::Bool => {
                self.err(bool_as_value(span));
                None
            }
            Ty::Known(id) => match self.env.single_prim(id) {
                Some(p) if allowed.contains(&p) => Some(p),
                _ => {
                    let names: Vec<&str> = allowed.iter().map(|p| p.name()).collect();
                    let mut hint = format!("`{op}` is defined on {}", names.join(", "));
                    if op == "+" && self.env.prims(id) == [Prim::Symbol] {
                        hint += "; join symbols with `cat(a, b)`";
                    }
                    self.err(
                        Diagnostic::error(
                            "E0204",
                            span,
                            format!(
                                "`{op}` cannot be applied to a value of type `{}`",
                                self.env.name(id)
                            ),
                        )
                        .with_hint(hint),
                    );
                    None
                }
            },
        }
    }

    /// A functor call; `as_constraint` when it stands as a body literal.
    pub fn call(
        &mut self,
        name: &Ident,
        builtin: &mut Option<Builtin>,
        args: &mut [Expr],
        span: Span,
        expected: Option<TypeId>,
        as_constraint: bool,
    ) -> Ty {
        let Some(sigs) = functors::overloads(&name.name) else {
            if let Some(what) = souffle_unsupported(&name.name) {
                self.err(
                    Diagnostic::error(
                        "E0202",
                        name.span,
                        format!("Souffle's `{}` ({what}) is not supported by netc", name.name),
                    )
                    .with_hint("specs/language.md section 10 lists what netc does not implement of Souffle"),
                );
                for a in args.iter_mut() {
                    self.infer(a, None);
                }
                return Ty::Unknown;
            }
            let hint =
                did_you_mean(&name.name, functors::names().iter().copied()).unwrap_or_else(|| {
                    "the built-in functors are listed in specs/functors.md".to_string()
                });
            self.err(
                Diagnostic::error(
                    "E0202",
                    name.span,
                    format!("unknown functor `{}`", name.name),
                )
                .with_hint(hint),
            );
            for a in args.iter_mut() {
                self.infer(a, None);
            }
            return Ty::Unknown;
        };
        let tys: Vec<Ty> = args.iter_mut().map(|a| self.infer(a, None)).collect();
        let Some((sig, num)) = sigs.iter().find_map(|s| self.fits(s, &tys).map(|n| (s, n))) else {
            let found: Vec<String> = tys.iter().map(|t| self.ty_name(*t)).collect();
            let message = if sigs.iter().all(|s| s.params.len() != args.len()) {
                let mut arities: Vec<usize> = sigs.iter().map(|s| s.params.len()).collect();
                arities.dedup();
                let takes = match arities.as_slice() {
                    [n] => format!("{n}"),
                    [a, .., b] if b - a + 1 == arities.len() => format!("{a} to {b}"),
                    _ => arities
                        .iter()
                        .map(|n| n.to_string())
                        .collect::<Vec<_>>()
                        .join(" or "),
                };
                format!(
                    "`{}` takes {takes} argument{}, found {}",
                    name.name,
                    if takes == "1" { "" } else { "s" },
                    args.len()
                )
            } else {
                format!(
                    "no overload of `{}` accepts ({})",
                    name.name,
                    found.join(", ")
                )
            };
            self.err(
                Diagnostic::error("E0203", span, message)
                    .with_hint(overloads_hint(&name.name, &sigs)),
            );
            return Ty::Unknown;
        };
        *builtin = Some(sig.builtin);
        let num = num.or_else(|| {
            expected
                .and_then(|w| self.numeric_choice(w))
                .map(|(_, p)| p)
        });
        for ((arg, t), p) in args.iter_mut().zip(&tys).zip(&sig.params) {
            if *t != Ty::IntLit {
                continue;
            }
            let want = match p {
                functors::Ty::P(q) => Some(*q),
                functors::Ty::Num => num,
                functors::Ty::Bool => None,
            };
            if let Some(q) = want {
                let id = self.env.prim(q);
                self.infer(arg, Some(id));
            }
        }
        match (sig.result, as_constraint) {
            (functors::Ty::Bool, true) => Ty::Bool,
            (functors::Ty::Bool, false) => {
                self.err(bool_as_value(span));
                Ty::Unknown
            }
            (res, true) => {
                let shown = match res {
                    functors::Ty::P(p) => p.name().to_string(),
                    _ => "a number".to_string(),
                };
                self.err(
                    Diagnostic::error(
                        "E0205",
                        span,
                        format!("`{}` returns {shown}, not a condition", name.name),
                    )
                    .with_hint(format!(
                        "compare its result, e.g. `{}(...) > 0`, or assign it with `x = {}(...)`",
                        name.name, name.name
                    )),
                );
                Ty::Unknown
            }
            (functors::Ty::P(p), false) => Ty::Known(self.env.prim(p)),
            (functors::Ty::Num, false) => num.map_or(Ty::IntLit, |p| Ty::Known(self.env.prim(p))),
        }
    }

    /// Whether a signature accepts the argument types; `Some(numeric binding)` if so.
    fn fits(&self, sig: &Signature, tys: &[Ty]) -> Option<Option<Prim>> {
        if sig.params.len() != tys.len() {
            return None;
        }
        let mut num: Option<Prim> = None;
        for (t, p) in tys.iter().zip(&sig.params) {
            let ok = match (*t, *p) {
                (Ty::Unknown, _) => true,
                (Ty::Bool, _) | (_, functors::Ty::Bool) => false,
                (Ty::IntLit, functors::Ty::P(q)) => q.is_numeric(),
                (Ty::IntLit, functors::Ty::Num) => true,
                (Ty::Known(id), functors::Ty::P(q)) => self.env.prims(id) == [q],
                (Ty::Known(id), functors::Ty::Num) => match self.env.single_prim(id) {
                    Some(q) if q.is_numeric() && num.is_none_or(|n| n == q) => {
                        num = Some(q);
                        true
                    }
                    _ => false,
                },
            };
            if !ok {
                return None;
            }
        }
        Some(num)
    }

    pub fn ty_name(&self, t: Ty) -> String {
        match t {
            Ty::Known(id) => self.env.name(id).to_string(),
            Ty::IntLit => "number".to_string(),
            Ty::Bool => "condition".to_string(),
            Ty::Unknown => "_".to_string(),
        }
    }

    fn aggregate(&mut self, a: &mut Aggregate) -> Ty {
        if !self.quiet {
            self.check_leaves(&mut a.body);
        }
        let func = a.func;
        let Some(target) = a.target.as_mut() else {
            if func == AggFunc::Count {
                a.result = Some(Prim::Number);
                return Ty::Known(self.env.prim(Prim::Number));
            }
            self.err(
                Diagnostic::error(
                    "E0206",
                    a.span,
                    format!("`{}` needs a target expression", func.name()),
                )
                .with_hint(format!("write `{} y : {{ r(x, y) }}`", func.name())),
            );
            return Ty::Unknown;
        };
        if func == AggFunc::Count {
            self.err(
                Diagnostic::error("E0206", target.span(), "`count` takes no target expression")
                    .with_hint("write `count : { ... }`"),
            );
            return Ty::Unknown;
        }
        for k in a.order.iter_mut() {
            let t = self.infer(k, None);
            if let Ty::Bool = self.settle(k, t) {
                self.err(bool_as_value(k.span()));
            }
        }
        let t = self.infer(target, None);
        let t = self.settle(target, t);
        let id = match t {
            Ty::Known(id) => id,
            Ty::Bool => {
                self.err(bool_as_value(target.span()));
                return Ty::Unknown;
            }
            _ => return Ty::Unknown,
        };
        match (func, self.env.single_prim(id)) {
            (AggFunc::Sum, Some(p)) if p.is_numeric() => {
                a.result = Some(p);
                Ty::Known(self.env.prim(p))
            }
            (AggFunc::Min | AggFunc::Max, Some(p)) => {
                a.result = Some(p);
                Ty::Known(id)
            }
            // The joined text is a plain symbol, whatever subtype the parts had.
            (AggFunc::Concat, Some(Prim::Symbol)) => {
                a.result = Some(Prim::Symbol);
                Ty::Known(self.env.prim(Prim::Symbol))
            }
            _ => {
                let need = match func {
                    AggFunc::Sum => "a numeric target (number, unsigned or float)",
                    AggFunc::Concat => "a symbol target",
                    _ => "a target of one primitive type",
                };
                self.err(
                    Diagnostic::error(
                        "E0206",
                        target.span(),
                        format!(
                            "`{}` needs {need}, found `{}`",
                            func.name(),
                            self.env.name(id)
                        ),
                    )
                    .with_hint(match func {
                        AggFunc::Sum => "count the tuples with `count : { ... }`",
                        AggFunc::Concat => {
                            "convert the parts first, e.g. `concat to_string(x) by x : { ... }`"
                        }
                        _ => "aggregate over a column of one primitive type",
                    }),
                );
                Ty::Unknown
            }
        }
    }

    /// `as(inner, T)`: allowed when every value of the inner type is a value of `T`'s primitives.
    fn convert(
        &mut self,
        inner: &mut Expr,
        name: &Ident,
        ty: &mut Option<TypeId>,
        span: Span,
    ) -> Ty {
        let target = match self.env.lookup(&name.name) {
            Lookup::Found(id) => Some(id),
            Lookup::Broken => None,
            Lookup::Unknown => {
                let hint = did_you_mean(&name.name, self.env.all_names())
                    .unwrap_or_else(|| "declare it with `.type`".to_string());
                self.err(
                    Diagnostic::error("E0104", name.span, format!("unknown type `{}`", name.name))
                        .with_hint(hint),
                );
                None
            }
        };
        *ty = target;
        let t = self.infer(inner, target);
        let t = self.settle(inner, t);
        match (t, target) {
            (Ty::Known(src), Some(dst)) => {
                let (sp, dp) = (self.env.prims(src), self.env.prims(dst));
                if sp.iter().all(|p| dp.contains(p)) {
                    Ty::Known(dst)
                } else {
                    self.err(
                        Diagnostic::error("E0208", span, format!("cannot convert `{}` to `{}`", self.env.name(src), self.env.name(dst)))
                            .with_hint("`as` only changes the declared type of values of the same kind; convert values with a functor such as `to_string` or `itou`"),
                    );
                    Ty::Unknown
                }
            }
            (Ty::Bool, _) => {
                self.err(bool_as_value(inner.span()));
                Ty::Unknown
            }
            _ => Ty::Unknown,
        }
    }
}

/// Whether an expression is made of literals and operators only.
fn is_constant(e: &Expr) -> bool {
    match e {
        Expr::Lit { .. } => true,
        Expr::Binary(_, a, b, _) => is_constant(a) && is_constant(b),
        Expr::Unary(_, a, _) => is_constant(a),
        _ => false,
    }
}

/// The value of a literal at a primitive type.
pub fn lit_value(lit: &Lit, prim: Prim) -> Result<Value, String> {
    let text = match lit {
        Lit::Int(t)
        | Lit::Unsigned(t)
        | Lit::Float(t)
        | Lit::Str(t)
        | Lit::Ipv4(t)
        | Lit::Ipv6(t)
        | Lit::Prefix4(t)
        | Lit::Prefix6(t)
        | Lit::Mac(t) => t,
    };
    if let Lit::Str(s) = lit {
        return Ok(Value::sym(s));
    }
    if prim == Prim::Float {
        if let Some(i) = parse_int(text) {
            return Ok(Value::Float(F64(i as f64)));
        }
    }
    Value::parse(text, prim).map_err(|e| e.to_string())
}

fn lit_hint(lit: &Lit, prim: Prim) -> String {
    match (lit, prim) {
        (Lit::Int(t), Prim::Number) if !t.starts_with('-') => {
            "numbers are signed 64-bit; write a `u` suffix for an unsigned (e.g. `42u`)".to_string()
        }
        (Lit::Int(_) | Lit::Unsigned(_), Prim::Unsigned) => {
            "unsigned values are 0 to 18446744073709551615".to_string()
        }
        (_, p) => format!("write a valid {p} literal"),
    }
}

fn bool_as_value(span: Span) -> Diagnostic {
    Diagnostic::error(
        "E0205",
        span,
        "a constraint functor is a condition, not a value",
    )
    .with_hint("use it on its own as a body literal, e.g. `contains(p, a)`")
}

pub fn conversion_hint(x: Prim, y: Prim) -> String {
    let f = match (x, y) {
        (Prim::Number, Prim::Unsigned) | (Prim::Unsigned, Prim::Number) => "`itou(n)` or `utoi(u)`",
        (Prim::Number, Prim::Float) | (Prim::Float, Prim::Number) => "`itof(n)` or `ftoi(f)`",
        (Prim::Unsigned, Prim::Float) | (Prim::Float, Prim::Unsigned) => "`utof(u)` or `ftou(f)`",
        _ => return "both operands must have the same type".to_string(),
    };
    format!("both operands must have the same type; convert one with {f}")
}

/// Souffle functors netc refuses, with what they are.
fn souffle_unsupported(name: &str) -> Option<&'static str> {
    Some(match name {
        "range" | "urange" | "frange" => "a generator of several values",
        "autoinc" => "a counter that depends on evaluation order",
        "ord" => "the ordinal of a symbol, which depends on interning order",
        crate::syntax::mean::MARKER => {
            "an aggregate netc supports only in the form `v = mean x : { ... }`"
        }
        _ => return None,
    })
}

/// "overloads: f(a, b) -> c; ..." with variadic families summarised.
pub fn overloads_hint(name: &str, sigs: &[Signature]) -> String {
    let show = |t: &functors::Ty| match t {
        functors::Ty::P(p) => p.name().to_string(),
        functors::Ty::Num => "N".to_string(),
        functors::Ty::Bool => "condition".to_string(),
    };
    let mut lines: Vec<String> = Vec::new();
    let mut i = 0;
    while i < sigs.len() {
        let s = &sigs[i];
        // A run of overloads differing only in how many times one parameter type repeats.
        let mut j = i + 1;
        while j < sigs.len()
            && sigs[j].builtin == s.builtin
            && sigs[j].result == s.result
            && sigs[j].params.len() == sigs[j - 1].params.len() + 1
            && sigs[j].params.iter().all(|p| Some(p) == s.params.first())
            && s.params.iter().all(|p| Some(p) == s.params.first())
        {
            j += 1;
        }
        let params: Vec<String> = s.params.iter().map(show).collect();
        if j - i > 2 {
            let p = params.first().cloned().unwrap_or_default();
            lines.push(format!(
                "{name}({p}, {p}, ...) -> {} ({} to {} arguments)",
                show(&s.result),
                s.params.len(),
                sigs[j - 1].params.len()
            ));
        } else {
            for s in &sigs[i..j] {
                lines.push(format!(
                    "{name}({}) -> {}",
                    s.params.iter().map(show).collect::<Vec<_>>().join(", "),
                    show(&s.result)
                ));
            }
        }
        i = j;
    }
    let total = lines.len();
    lines.truncate(8);
    if total > 8 {
        lines.push(format!("... ({} more)", total - 8));
    }
    let mut h = format!("overloads: {}", lines.join("; "));
    if sigs.iter().any(|s| s.params.contains(&functors::Ty::Num)) {
        h += " (N is one numeric type: number, unsigned or float)";
    }
    h
}
