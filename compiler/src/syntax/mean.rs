//! Souffle's `mean` aggregate, lowered onto `sum` and `count`.
//!
//! The parser reads `mean x : { body }` as a `sum` aggregate wrapped in a
//! call of [`MARKER`]. [`desugar`] rewrites each literal `v = mean x : {B}`
//! (either side) into
//!
//! ```text
//! s = sum to_float(to_string(x)) : {B}, c = count : {B}, c > 0, v = s / to_float(c)
//! ```
//!
//! `sum` and `count` range over the same tuples of `B` (section 5 of
//! specs/language.md), so this is Souffle's mean: a `float`, and no result
//! over an empty body. `to_float(to_string(x))` converts a `number`,
//! `unsigned` or `float` target exactly as Souffle's conversion does (a
//! float's text round-trips). A `mean` anywhere else stays a call of the
//! marker and is refused by the checker, by name.

use crate::ast::{AggFunc, BinOp, CmpOp, Expr, Ident, Item, Lit, Literal, Program};
use crate::source::Span;

/// The name the parser gives a `mean` aggregate until [`desugar`] runs.
pub const MARKER: &str = "mean";

/// Rewrites every `v = mean x : { ... }` literal of the program.
pub fn desugar(program: &mut Program) {
    let mut fresh = 0;
    for item in &mut program.items {
        if let Item::Rule(rule) = item {
            for conj in &mut rule.body {
                rewrite_conj(conj, &mut fresh);
            }
        }
    }
}

fn rewrite_conj(conj: &mut Vec<Literal>, fresh: &mut usize) {
    let mut out = Vec::with_capacity(conj.len());
    for lit in std::mem::take(conj) {
        match lit {
            Literal::Compare(CmpOp::Eq, a, b, span) => match (unwrap_mean(&a), unwrap_mean(&b)) {
                (Some(agg), _) => out.extend(lower(agg, b, span, fresh)),
                (None, Some(agg)) => out.extend(lower(agg, a, span, fresh)),
                (None, None) => out.push(Literal::Compare(CmpOp::Eq, a, b, span)),
            },
            Literal::Group(mut disj, span) => {
                for c in &mut disj {
                    rewrite_conj(c, fresh);
                }
                out.push(Literal::Group(disj, span));
            }
            other => out.push(other),
        }
    }
    *conj = out;
}

/// The `sum` aggregate inside a `mean` marker call.
fn unwrap_mean(e: &Expr) -> Option<Expr> {
    match e {
        Expr::Call(f, args, _) if f.name == MARKER && args.len() == 1 => match &args[0] {
            agg @ Expr::Aggregate {
                func: AggFunc::Sum,
                target: Some(_),
                ..
            } => Some(agg.clone()),
            _ => None,
        },
        _ => None,
    }
}

fn lower(agg: Expr, result: Expr, span: Span, fresh: &mut usize) -> Vec<Literal> {
    let Expr::Aggregate {
        target: Some(target),
        order,
        body,
        span: aspan,
        ..
    } = agg
    else {
        unreachable!("unwrap_mean returns a sum with a target")
    };
    let n = *fresh;
    *fresh += 1;
    let var = |name: String| Expr::Var(Ident { name, span: aspan });
    let call = |f: &str, x: Expr| {
        Expr::Call(
            Ident {
                name: f.to_string(),
                span: aspan,
            },
            vec![x],
            aspan,
        )
    };
    let (s, c) = (format!("mean_sum{n}"), format!("mean_count{n}"));
    let sum = Expr::Aggregate {
        func: AggFunc::Sum,
        target: Some(Box::new(call("to_float", call("to_string", *target)))),
        order: order.clone(),
        body: body.clone(),
        span: aspan,
    };
    let count = Expr::Aggregate {
        func: AggFunc::Count,
        target: None,
        order,
        body,
        span: aspan,
    };
    vec![
        Literal::Compare(CmpOp::Eq, var(s.clone()), sum, span),
        Literal::Compare(CmpOp::Eq, var(c.clone()), count, span),
        Literal::Compare(
            CmpOp::Gt,
            var(c.clone()),
            Expr::Lit(Lit::Int("0".into()), aspan),
            span,
        ),
        Literal::Compare(
            CmpOp::Eq,
            result,
            Expr::Binary(
                BinOp::Div,
                Box::new(var(s)),
                Box::new(call("to_float", var(c))),
                aspan,
            ),
            span,
        ),
    ]
}
