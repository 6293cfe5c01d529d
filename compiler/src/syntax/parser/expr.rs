//! The parser's expression half: arithmetic and bitwise expressions by
//! precedence (lowest first), unary operators, primaries (literals,
//! variables, functor calls, records, parenthesised groups) and aggregates.
//!
//! Expects the token helpers and nesting bound of [`Parser`]. Guarantees:
//! binary operators associate to the left by the levels of [`bin_level`],
//! `^` to the right and tighter than all of them; nesting past
//! [`super::MAX_NESTING`] is an error, never a stack overflow; like the
//! rest of the parser it returns `Result` and never touches diagnostics.

use super::{PResult, ParseError, Parser, AGGREGATES};
use crate::ast::{AggFunc, BinOp, Expr, Lit, Literal, UnOp};
use crate::syntax::lexer::Tok;

impl Parser<'_> {
    pub fn expr(&mut self) -> PResult<Expr> {
        self.nested(|p| p.binary(0))
    }

    /// Precedence climbing: parses operators of level ≥ `min_level`
    /// (levels in [`bin_level`], loosest first), left-associative.
    fn binary(&mut self, min_level: usize) -> PResult<Expr> {
        let mut lhs = self.power()?;
        while let Some(op) = self.bin_op() {
            let level = bin_level(op);
            if level < min_level {
                break;
            }
            self.bump();
            let rhs = self.nested(|p| p.binary(level + 1))?;
            let span = lhs.span().to(rhs.span());
            lhs = Expr::Binary(op, Box::new(lhs), Box::new(rhs), span);
        }
        Ok(lhs)
    }

    fn power(&mut self) -> PResult<Expr> {
        let base = self.unary()?;
        if self.eat(&Tok::Caret) {
            let exp = self.nested(Self::power)?;
            let span = base.span().to(exp.span());
            return Ok(Expr::Binary(
                BinOp::Pow,
                Box::new(base),
                Box::new(exp),
                span,
            ));
        }
        Ok(base)
    }

    fn bin_op(&self) -> Option<BinOp> {
        Some(match self.peek() {
            Tok::Plus => BinOp::Add,
            Tok::Minus => BinOp::Sub,
            Tok::Star => BinOp::Mul,
            Tok::Slash => BinOp::Div,
            Tok::Percent => BinOp::Mod,
            Tok::Ident(w) => match w.as_str() {
                "band" => BinOp::BAnd,
                "bor" => BinOp::BOr,
                "bxor" => BinOp::BXor,
                "bshl" => BinOp::Shl,
                "bshr" => BinOp::Shr,
                "land" => BinOp::LAnd,
                "lor" => BinOp::LOr,
                _ => return None,
            },
            _ => return None,
        })
    }

    fn unary(&mut self) -> PResult<Expr> {
        let start = self.span();
        if self.eat(&Tok::Minus) {
            let e = self.nested(Self::unary)?;
            let span = start.to(e.span());
            // Fold `-3` into the literal so `-9223372036854775808` is representable.
            if let Expr::Lit(Lit::Int(t), _) = &e {
                return Ok(Expr::Lit(Lit::Int(format!("-{t}")), span));
            }
            if let Expr::Lit(Lit::Float(t), _) = &e {
                return Ok(Expr::Lit(Lit::Float(format!("-{t}")), span));
            }
            return Ok(Expr::Unary(UnOp::Neg, Box::new(e), span));
        }
        if let Tok::Ident(w) = self.peek() {
            let op = match w.as_str() {
                "bnot" => Some(UnOp::BNot),
                "lnot" => Some(UnOp::LNot),
                _ => None,
            };
            if let Some(op) = op {
                if !matches!(self.peek_at(1), Tok::Comma | Tok::RParen) {
                    self.bump();
                    let e = self.nested(Self::unary)?;
                    let span = start.to(e.span());
                    return Ok(Expr::Unary(op, Box::new(e), span));
                }
            }
        }
        self.primary()
    }

    fn primary(&mut self) -> PResult<Expr> {
        let start = self.span();
        let tok = self.peek().clone();
        let lit = |l: Lit| Ok(Expr::Lit(l, start));
        match tok {
            Tok::Int(t) => {
                self.bump();
                lit(Lit::Int(t))
            }
            Tok::Unsigned(t) => {
                self.bump();
                lit(Lit::Unsigned(t))
            }
            Tok::Float(t) => {
                self.bump();
                lit(Lit::Float(t))
            }
            Tok::Str(t) => {
                self.bump();
                lit(Lit::Str(t))
            }
            Tok::Ipv4(t) => {
                self.bump();
                lit(Lit::Ipv4(t))
            }
            Tok::Ipv6(t) => {
                self.bump();
                lit(Lit::Ipv6(t))
            }
            Tok::Prefix4(t) => {
                self.bump();
                lit(Lit::Prefix4(t))
            }
            Tok::Prefix6(t) => {
                self.bump();
                lit(Lit::Prefix6(t))
            }
            Tok::Mac(t) => {
                self.bump();
                lit(Lit::Mac(t))
            }
            Tok::LParen => {
                self.bump();
                let e = self.expr()?;
                self.expect(Tok::RParen, "`)` to close the parenthesis", None)?;
                Ok(e)
            }
            Tok::Error(c) if c == "$" => Err(super::unsupported(
                self.span(),
                "ADT constructors (`$Branch(...)`)",
            )),
            Tok::Error(c) if c == "[" => {
                Err(super::unsupported(self.span(), "record values (`[a, b]`)"))
            }
            Tok::Ident(name) if name == "nil" => {
                Err(super::unsupported(self.span(), "records (`nil`)"))
            }
            Tok::Ident(name) => {
                // Souffle's `mean x : { body }` (a variable may be named `mean`)
                if name == "mean"
                    && (matches!(self.peek_at(1), Tok::Colon)
                        || matches!(
                            (self.peek_at(1), self.peek_at(2)),
                            (Tok::Ident(_), Tok::Colon)
                        ))
                {
                    // parsed as `sum`, marked; `syntax::mean` rewrites it
                    let at = self.span();
                    if let Some(agg) = self.aggregate(AggFunc::Sum)? {
                        let marker = crate::ast::Ident {
                            name: crate::syntax::mean::MARKER.to_string(),
                            span: at,
                        };
                        let span = agg.span();
                        return Ok(Expr::Call(marker, vec![agg], span));
                    }
                }
                if let Some(func) = aggregate(&name) {
                    if let Some(agg) = self.aggregate(func)? {
                        return Ok(agg);
                    }
                }
                let id = self.ident("an expression")?;
                if id.name == "_" {
                    return Ok(Expr::Wildcard(id.span));
                }
                if self.eat(&Tok::LParen) {
                    if id.name == "as" {
                        let e = self.expr()?;
                        self.expect(Tok::Comma, "`,` and a type name in `as(expr, Type)`", None)?;
                        let ty = self.ident("a type name")?;
                        self.expect(Tok::RParen, "`)`", None)?;
                        return Ok(Expr::As(Box::new(e), ty, start.to(self.prev_span())));
                    }
                    let args = self.args()?;
                    return Ok(Expr::Call(id, args, start.to(self.prev_span())));
                }
                Ok(Expr::Var(id))
            }
            _ => self.error(
                "an expression (a variable, `_`, a literal, a functor call or an aggregate)",
                None,
            ),
        }
    }

    /// `count : { body }`, `sum x : { body }`, `min x : atom`,
    /// `concat x by k1, k2 : { body }`. Returns `None` (consuming nothing)
    /// when the name is used as a plain functor/variable.
    fn aggregate(&mut self, func: AggFunc) -> PResult<Option<Expr>> {
        let save = self.pos;
        let start = self.span();
        self.bump();
        let target = if self.at(&Tok::Colon) {
            None
        } else if matches!(self.peek(), Tok::LParen) {
            // `min(a, b)` is the functor, not the aggregate.
            self.pos = save;
            return Ok(None);
        } else if matches!(
            self.peek(),
            Tok::Comma
                | Tok::RParen
                | Tok::Dot
                | Tok::Eq
                | Tok::Ne
                | Tok::Lt
                | Tok::Le
                | Tok::Gt
                | Tok::Ge
                | Tok::Plus
                | Tok::Minus
                | Tok::Star
                | Tok::Slash
        ) {
            // `count` used as a variable name.
            self.pos = save;
            return Ok(None);
        } else {
            Some(Box::new(self.expr()?))
        };
        let mut order = Vec::new();
        if matches!(self.peek(), Tok::Ident(s) if s == "by") {
            let by = self.span();
            // (`by` right after the name would have been read as the target)
            if func != AggFunc::Concat {
                return Err(ParseError {
                    span: by,
                    message: format!("`{}` takes no `by` keys", func.name()),
                    hint: Some("only `concat x by k1, k2 : { ... }` is ordered by keys".into()),
                });
            }
            self.bump();
            loop {
                order.push(self.expr()?);
                if !self.eat(&Tok::Comma) {
                    break;
                }
            }
        }
        self.expect(
            Tok::Colon,
            "`:` after the aggregate",
            Some("an aggregate is written `count : { r(x) }`, `sum y : { r(x, y) }` or `concat s by k : { r(k, s) }`"),
        )?;
        let body = if self.eat(&Tok::LBrace) {
            let b = self.disjunction()?;
            self.expect(Tok::RBrace, "`}` to close the aggregate body", None)?;
            b
        } else {
            vec![vec![Literal::Atom(self.atom()?)]]
        };
        if func == AggFunc::Count && target.is_some() {
            return Err(ParseError {
                span: start,
                message: "`count` takes no target expression".into(),
                hint: Some("write `count : { ... }`".into()),
            });
        }
        if func != AggFunc::Count && target.is_none() {
            return Err(ParseError {
                span: start,
                message: format!("`{}` needs a target expression", func.name()),
                hint: Some(format!("write `{} y : {{ r(x, y) }}`", func.name())),
            });
        }
        Ok(Some(Expr::Aggregate {
            func,
            target,
            order,
            body,
            span: start.to(self.prev_span()),
        }))
    }
}

/// Binding strength of a binary operator, loosest (0) first; `^` is handled
/// separately (right-associative, tighter than all of these).
fn bin_level(op: BinOp) -> usize {
    match op {
        BinOp::LOr => 0,
        BinOp::LAnd => 1,
        BinOp::BOr => 2,
        BinOp::BXor => 3,
        BinOp::BAnd => 4,
        BinOp::Shl | BinOp::Shr => 5,
        BinOp::Add | BinOp::Sub => 6,
        BinOp::Mul | BinOp::Div | BinOp::Mod | BinOp::Pow => 7,
    }
}

fn aggregate(name: &str) -> Option<AggFunc> {
    AGGREGATES.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
}

pub(super) fn is_arith(t: &Tok) -> bool {
    matches!(
        t,
        Tok::Plus | Tok::Minus | Tok::Star | Tok::Slash | Tok::Percent | Tok::Caret
    )
}
