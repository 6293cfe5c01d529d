//! Parser: tokens → [`ast::Program`](crate::ast::Program).
//!
//! Recursive descent over the token list from the lexer. Each item is parsed
//! on its own: a syntax error becomes one diagnostic ("expected X, found Y"
//! with a hint) and the parser skips to the end of that item (the next `.`
//! at nesting depth 0, or the next directive), so one run reports every
//! broken item. Parse functions return `Result` and never touch the
//! diagnostics sink, so a construct can be tried and abandoned (a `(` may open
//! a disjunction or an arithmetic expression).
//!
//! Items, rules and literals are parsed here; expressions and aggregates
//! in `parser/expr.rs`.
//!
//! `.include` is not handled here: the item is returned to `syntax::mod`,
//! which resolves and splices the file.

mod expr;

use expr::is_arith;

use super::lexer::{Tok, Token, DIRECTIVES};
use crate::ast::{
    AggFunc, Atom, Attr, CmpOp, Comp, Decl, Directive, DirectiveKind, Expr, Ident, Init, Item,
    Literal, Rule, TypeDecl, TypeDef,
};
use crate::diagnostics::Diagnostic;
use crate::source::Span;

/// What the parser hands back per item.
pub enum Parsed {
    Item(Item),
    /// `.decl A, B(...)`: one declaration per name.
    Items(Vec<Item>),
    Include(String, Span),
    /// `.pragma "key" "value"`: the key, the value (if given), the span.
    Pragma(String, Option<String>, Span),
}

#[derive(Debug)]
pub struct ParseError {
    pub span: Span,
    pub message: String,
    pub hint: Option<String>,
}

type PResult<T> = Result<T, ParseError>;

pub struct Parser<'t> {
    toks: &'t [Token],
    pos: usize,
    /// Current nesting of expressions, groups and negations (bounded, so a
    /// pathological input is an error instead of a stack overflow).
    depth: usize,
}

/// How deep expressions, parenthesised groups and negations may nest.
pub const MAX_NESTING: usize = 64;

const AGGREGATES: &[(&str, AggFunc)] = &[
    ("count", AggFunc::Count),
    ("sum", AggFunc::Sum),
    ("min", AggFunc::Min),
    ("max", AggFunc::Max),
    ("concat", AggFunc::Concat),
];

/// A Souffle construct netc does not implement: named, with where the
/// differences are listed.
fn unsupported(span: Span, what: &str) -> ParseError {
    ParseError {
        span,
        message: format!("not supported by netc: {what}"),
        hint: Some(
            "specs/language.md section 10 lists what netc does not implement of Souffle".into(),
        ),
    }
}

/// Functor names that are constraints when they stand alone as a literal.
const CONSTRAINT_FUNCTORS: &[&str] = &["contains", "match"];

impl<'t> Parser<'t> {
    pub fn new(toks: &'t [Token]) -> Parser<'t> {
        Parser {
            toks,
            pos: 0,
            depth: 0,
        }
    }

    /// Parses every item, reporting errors and recovering.
    pub fn items(&mut self, diags: &mut Vec<Diagnostic>) -> Vec<Parsed> {
        let mut out = Vec::new();
        while !self.at(&Tok::Eof) {
            let start = self.pos;
            self.depth = 0;
            let is_directive = matches!(self.peek(), Tok::Directive(_));
            match self.item() {
                Ok(p) => out.push(p),
                Err(e) => {
                    let mut d = Diagnostic::error("E0001", e.span, e.message);
                    if let Some(h) = e.hint {
                        d = d.with_hint(h);
                    }
                    diags.push(d);
                    self.recover(start, is_directive);
                }
            }
        }
        out
    }

    // ----- nesting -----

    /// Runs `f` one nesting level deeper, failing past [`MAX_NESTING`].
    fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> PResult<T>) -> PResult<T> {
        if self.depth >= MAX_NESTING {
            return Err(ParseError {
                span: self.span(),
                message: format!("expressions nested more than {MAX_NESTING} levels deep"),
                hint: Some("split the expression using intermediate variables (`t = ...`)".into()),
            });
        }
        self.depth += 1;
        let r = f(self);
        self.depth -= 1;
        r
    }

    // ----- token helpers -----

    fn peek(&self) -> &Tok {
        &self.toks[self.pos.min(self.toks.len() - 1)].tok
    }

    fn peek_at(&self, k: usize) -> &Tok {
        &self.toks[(self.pos + k).min(self.toks.len() - 1)].tok
    }

    fn span(&self) -> Span {
        self.toks[self.pos.min(self.toks.len() - 1)].span
    }

    fn prev_span(&self) -> Span {
        self.toks[self.pos.saturating_sub(1)].span
    }

    fn at(&self, t: &Tok) -> bool {
        self.peek() == t
    }

    fn bump(&mut self) -> Token {
        let t = self.toks[self.pos.min(self.toks.len() - 1)].clone();
        if self.pos < self.toks.len() - 1 {
            self.pos += 1;
        }
        t
    }

    fn eat(&mut self, t: &Tok) -> bool {
        if self.at(t) {
            self.bump();
            true
        } else {
            false
        }
    }

    fn error<T>(&self, expected: &str, hint: Option<&str>) -> PResult<T> {
        let found = self.peek();
        let message = match found {
            // a message, not a character (`unterminated ...`, a preprocessor line)
            Tok::Error(e) if e.chars().count() > 1 => e.clone(),
            Tok::Error(c) => format!("unexpected character `{c}`; expected {expected}"),
            _ => format!("expected {expected}, found {}", found.describe()),
        };
        Err(ParseError {
            span: self.span(),
            message,
            hint: hint.map(str::to_string),
        })
    }

    fn expect(&mut self, t: Tok, expected: &str, hint: Option<&str>) -> PResult<Span> {
        if self.at(&t) {
            Ok(self.bump().span)
        } else {
            self.error(expected, hint)
        }
    }

    fn ident(&mut self, what: &str) -> PResult<Ident> {
        match self.peek().clone() {
            Tok::Ident(name) => {
                let span = self.bump().span;
                Ok(Ident { name, span })
            }
            _ => self.error(what, None),
        }
    }

    /// Skips past the broken item, always making progress: a rule ends after
    /// the next `.` at depth 0; a directive (which has no `.`) ends at the
    /// next line; both end before the next directive.
    fn recover(&mut self, start: usize, is_directive: bool) {
        if self.pos == start {
            self.bump();
        }
        let mut depth = 0i32;
        loop {
            if is_directive && self.toks[self.pos.min(self.toks.len() - 1)].line_start {
                return;
            }
            match self.peek() {
                Tok::Eof => return,
                Tok::Directive(_) if depth <= 0 => return,
                Tok::LParen | Tok::LBrace => depth += 1,
                Tok::RParen | Tok::RBrace => depth -= 1,
                Tok::Dot if depth <= 0 => {
                    self.bump();
                    return;
                }
                _ => {}
            }
            self.bump();
        }
    }

    // ----- items -----

    fn item(&mut self) -> PResult<Parsed> {
        match self.peek().clone() {
            Tok::Directive(d) => self.directive(&d),
            Tok::Ident(_) => Ok(Parsed::Item(Item::Rule(self.rule()?))),
            _ => self.error(
                "a declaration (`.decl`), a directive, a fact or a rule",
                None,
            ),
        }
    }

    fn directive(&mut self, name: &str) -> PResult<Parsed> {
        let start = self.span();
        match name {
            "decl" => {
                self.bump();
                let decls = self.decl(start)?;
                Ok(Parsed::Items(decls.into_iter().map(Item::Decl).collect()))
            }
            "comp" => {
                self.bump();
                Ok(Parsed::Item(Item::Comp(self.comp(start)?)))
            }
            "init" => {
                self.bump();
                let instance = self.ident("an instance name after `.init`")?;
                self.expect(
                    Tok::Eq,
                    "`=` after the instance name",
                    Some("write `.init inst = Component<type, ...>`"),
                )?;
                let comp = self.ident("a component name after `=`")?;
                let args = self.type_args()?;
                Ok(Parsed::Item(Item::Init(Init {
                    instance,
                    comp,
                    args,
                    span: start.to(self.prev_span()),
                })))
            }
            "override" => {
                self.bump();
                Ok(Parsed::Item(Item::Override(
                    self.ident("a relation name after `.override`")?,
                )))
            }
            "pragma" => {
                self.bump();
                let key = match self.peek().clone() {
                    Tok::Str(k) => {
                        self.bump();
                        k
                    }
                    _ => {
                        return self.error(
                            "a key in quotes after `.pragma`",
                            Some("write `.pragma \"magic-transform\" \"*\"`"),
                        )
                    }
                };
                let value = match self.peek().clone() {
                    Tok::Str(v) => {
                        self.bump();
                        Some(v)
                    }
                    _ => None,
                };
                Ok(Parsed::Pragma(key, value, start.to(self.prev_span())))
            }
            "type" => {
                self.bump();
                Ok(Parsed::Item(Item::Type(self.type_decl(start)?)))
            }
            "input" | "output" | "printsize" => {
                self.bump();
                let kind = match name {
                    "input" => DirectiveKind::Input,
                    "output" => DirectiveKind::Output,
                    _ => DirectiveKind::PrintSize,
                };
                Ok(Parsed::Item(Item::Directive(
                    self.io_directive(kind, start)?,
                )))
            }
            "include" => {
                self.bump();
                match self.peek().clone() {
                    Tok::Str(path) => {
                        let s = self.bump().span;
                        Ok(Parsed::Include(path, start.to(s)))
                    }
                    _ => self.error(
                        "a file name in quotes after `.include`",
                        Some("write `.include \"common.ndl\"`"),
                    ),
                }
            }
            "limitsize" | "functor" | "lattice" | "plan" | "once" => Err(unsupported(
                start,
                &format!("Souffle's `.{name}` directive"),
            )),
            other => {
                let close = crate::names::closest(other, DIRECTIVES.iter().copied());
                let hint = match close {
                    Some(c) => format!("did you mean `.{c}`? directives are .decl, .type, .input, .output, .printsize and .include"),
                    None => "directives are .decl, .type, .input, .output, .printsize and .include".to_string(),
                };
                Err(ParseError {
                    span: start,
                    message: format!("unknown directive `.{other}`"),
                    hint: Some(hint),
                })
            }
        }
    }

    /// `.comp Name<T, ..> : Base<..>, .. { items }`
    fn comp(&mut self, start: Span) -> PResult<Comp> {
        let name = self.ident("a component name after `.comp`")?;
        let params = self.type_args()?;
        let mut bases = Vec::new();
        if self.eat(&Tok::Colon) {
            loop {
                let base = self.ident("a base component name after `:`")?;
                bases.push((base, self.type_args()?));
                if !self.eat(&Tok::Comma) {
                    break;
                }
            }
        }
        self.expect(
            Tok::LBrace,
            "`{` to open the component body",
            Some("a component looks like `.comp Graph<T> { .decl edge(a: T, b: T) }`"),
        )?;
        let mut items = Vec::new();
        while !self.at(&Tok::RBrace) {
            if self.at(&Tok::Eof) {
                return self.error("`}` to close the component body", None);
            }
            match self.item()? {
                Parsed::Item(i) => items.push(i),
                Parsed::Items(is) => items.extend(is),
                Parsed::Include(_, span) | Parsed::Pragma(_, _, span) => {
                    return Err(ParseError {
                        span,
                        message: "`.include` and `.pragma` are not allowed inside a component"
                            .into(),
                        hint: Some("move the directive outside the `.comp` body".into()),
                    })
                }
            }
        }
        self.bump();
        Ok(Comp {
            name,
            params,
            bases,
            items,
            span: start.to(self.prev_span()),
        })
    }

    /// `<T1, T2>` after a component name (empty when there is no `<`).
    fn type_args(&mut self) -> PResult<Vec<Ident>> {
        let mut out = Vec::new();
        if self.eat(&Tok::Lt) {
            loop {
                out.push(self.ident("a type name in `<...>`")?);
                if !self.eat(&Tok::Comma) {
                    break;
                }
            }
            self.expect(Tok::Gt, "`,` or `>` after a type argument", None)?;
        }
        Ok(out)
    }

    fn decl(&mut self, start: Span) -> PResult<Vec<Decl>> {
        let mut names = vec![self.ident("a relation name after `.decl`")?];
        while self.eat(&Tok::Comma) {
            names.push(self.ident("a relation name after `,`")?);
        }
        self.expect(
            Tok::LParen,
            "`(` to open the attribute list",
            Some("a declaration looks like `.decl edge(src: number, dst: number)`"),
        )?;
        let mut attrs = Vec::new();
        if !self.at(&Tok::RParen) {
            loop {
                let astart = self.span();
                let located = self.eat(&Tok::At);
                let aname = self.ident("an attribute name")?;
                self.expect(
                    Tok::Colon,
                    "`:` and a type after the attribute name",
                    Some("attributes are written `name: type`, e.g. `src: number`"),
                )?;
                let ty = self.ident("a type name (number, unsigned, float, symbol, ipv4, ipv6, prefix4, prefix6, mac, or a declared .type)")?;
                attrs.push(Attr {
                    name: aname,
                    ty,
                    located,
                    span: astart.to(self.prev_span()),
                });
                if !self.eat(&Tok::Comma) {
                    break;
                }
            }
        }
        self.expect(Tok::RParen, "`,` or `)` in the attribute list", None)?;
        let mut qualifiers = Vec::new();
        while self.at_qualifier() {
            qualifiers.push(self.ident("a qualifier")?);
        }
        if matches!(self.peek(), Tok::Ident(q) if q == "choice")
            && matches!(self.peek_at(1), Tok::Minus)
        {
            return Err(unsupported(self.span(), "`choice-domain`"));
        }
        let span = start.to(self.prev_span());
        Ok(names
            .into_iter()
            .map(|name| Decl {
                name,
                attrs: attrs.clone(),
                qualifiers: qualifiers.clone(),
                span,
            })
            .collect())
    }

    /// Souffle's relation qualifiers; an identifier that is not one starts the next item.
    fn at_qualifier(&self) -> bool {
        const QUALIFIERS: &[&str] = &[
            "input",
            "output",
            "printsize",
            "overridable",
            "inline",
            "no_inline",
            "magic",
            "no_magic",
            "brie",
            "btree",
            "btree_delete",
            "eqrel",
        ];
        matches!(self.peek(), Tok::Ident(q) if QUALIFIERS.contains(&q.as_str()))
            && !matches!(self.peek_at(1), Tok::LParen)
    }

    fn type_decl(&mut self, start: Span) -> PResult<TypeDecl> {
        let name = self.ident("a type name after `.type`")?;
        let def = if self.eat(&Tok::Subtype) {
            TypeDef::Subtype(self.ident("a base type after `<:`")?)
        } else if self.eat(&Tok::Eq) {
            let first =
                match self.peek() {
                    Tok::Ident(_) if matches!(self.peek_at(1), Tok::LBrace) => {
                        return Err(unsupported(
                            self.span(),
                            "algebraic data types (ADT: `.type T = Branch { ... } | ...`)",
                        ));
                    }
                    Tok::Ident(_) => self.ident("a type")?,
                    Tok::Error(c) if c == "[" => {
                        return Err(unsupported(
                            self.span(),
                            "record types (`.type T = [a: number, ...]`)",
                        ));
                    }
                    _ => return self.error(
                        "a type name after `=`",
                        Some("a type is `.type T <: base`, `.type T = base` or `.type T = a | b`"),
                    ),
                };
            let mut members = vec![first];
            while self.eat(&Tok::Pipe) {
                members.push(self.ident("a type name after `|`")?);
            }
            if members.len() == 1 {
                TypeDef::Alias(members.pop().expect("one member"))
            } else {
                TypeDef::Union(members)
            }
        } else {
            return self.error("`<:` or `=` after the type name", Some("write `.type Host <: symbol` for a subtype or `.type Ip = ipv4 | ipv6` for a union"));
        };
        Ok(TypeDecl {
            name,
            def,
            span: start.to(self.prev_span()),
        })
    }

    fn io_directive(&mut self, kind: DirectiveKind, start: Span) -> PResult<Directive> {
        let mut relations = vec![self.ident("a relation name")?];
        while self.eat(&Tok::Comma) {
            relations.push(self.ident("a relation name after `,`")?);
        }
        let mut params = Vec::new();
        if self.eat(&Tok::LParen) {
            if !self.at(&Tok::RParen) {
                loop {
                    let key = self.ident("a parameter name such as IO, filename or delimiter")?;
                    self.expect(
                        Tok::Eq,
                        "`=` after the parameter name",
                        Some("write e.g. `filename=\"edges.tsv\"`"),
                    )?;
                    let value = match self.peek().clone() {
                        Tok::Str(s) | Tok::Ident(s) | Tok::Int(s) => {
                            self.bump();
                            s
                        }
                        _ => return self.error("a parameter value (a string in quotes)", None),
                    };
                    params.push((key, value));
                    if !self.eat(&Tok::Comma) {
                        break;
                    }
                }
            }
            self.expect(Tok::RParen, "`,` or `)` in the parameter list", None)?;
        }
        Ok(Directive {
            kind,
            relations,
            params,
            span: start.to(self.prev_span()),
        })
    }

    fn rule(&mut self) -> PResult<Rule> {
        let start = self.span();
        let mut heads = vec![self.atom()?];
        while self.eat(&Tok::Comma) {
            heads.push(self.atom()?);
        }
        if self.at(&Tok::Le) {
            return Err(unsupported(
                self.span(),
                "subsumption (`head <= head :- body`)",
            ));
        }
        let body = if self.eat(&Tok::If) {
            self.disjunction()?
        } else {
            Vec::new()
        };
        if !self.at(&Tok::Dot) {
            let hint = if body.is_empty() {
                "a fact ends with `.`; a rule has `:-` and a body"
            } else {
                "a rule ends with `.`; literals are separated by `,` (and) or `;` (or)"
            };
            let mut e = self
                .error::<()>("`.` at the end of the rule", Some(hint))
                .unwrap_err();
            if self.toks[self.pos.min(self.toks.len() - 1)].line_start {
                // The period is missing at the end of the previous line: point there.
                let end = self.prev_span().end as usize;
                e.span = Span::new(e.span.file, end, end + 1);
            }
            return Err(e);
        }
        self.bump();
        Ok(Rule {
            heads,
            body,
            span: start.to(self.prev_span()),
        })
    }

    fn atom(&mut self) -> PResult<Atom> {
        let relation = self.ident("a relation name")?;
        self.expect(Tok::LParen, "`(` after the relation name", None)?;
        let args = self.args()?;
        let span = relation.span.to(self.prev_span());
        Ok(Atom {
            relation,
            args,
            span,
        })
    }

    /// Arguments up to and including the closing `)`.
    fn args(&mut self) -> PResult<Vec<Expr>> {
        let mut args = Vec::new();
        if self.eat(&Tok::RParen) {
            return Ok(args);
        }
        loop {
            args.push(self.expr()?);
            if self.eat(&Tok::Comma) {
                continue;
            }
            self.expect(Tok::RParen, "`,` or `)` after an argument", None)?;
            return Ok(args);
        }
    }

    fn disjunction(&mut self) -> PResult<Vec<Vec<Literal>>> {
        self.nested(Self::disjunction_inner)
    }

    fn disjunction_inner(&mut self) -> PResult<Vec<Vec<Literal>>> {
        let mut disj = vec![self.conjunction()?];
        while self.eat(&Tok::Semi) {
            disj.push(self.conjunction()?);
        }
        Ok(disj)
    }

    fn conjunction(&mut self) -> PResult<Vec<Literal>> {
        let mut conj = vec![self.literal()?];
        while self.eat(&Tok::Comma) {
            conj.push(self.literal()?);
        }
        Ok(conj)
    }

    fn literal(&mut self) -> PResult<Literal> {
        let start = self.span();
        match self.peek().clone() {
            Tok::Bang => {
                self.bump();
                let inner = self.nested(Self::literal)?;
                let span = start.to(self.prev_span());
                match inner {
                    Literal::Atom(a) => Ok(Literal::Negated(a, span)),
                    Literal::Negated(..) => Err(ParseError {
                        span,
                        message: "`!` applies to one atom or constraint".into(),
                        hint: Some("negate each atom separately, e.g. `!a(x), !b(x)`".into()),
                    }),
                    other => Ok(Literal::NegatedConstraint(Box::new(other), span)),
                }
            }
            Tok::Ident(ref w)
                if (w == "true" || w == "false") && !matches!(self.peek_at(1), Tok::LParen) =>
            {
                self.bump();
                Ok(Literal::Bool(w == "true", start))
            }
            Tok::Ident(_) if matches!(self.peek_at(1), Tok::LParen) => {
                // An atom, a constraint functor, or a functor call that starts a comparison.
                let save = self.pos;
                let atom = self.atom()?;
                if self.cmp_op().is_some() || is_arith(self.peek()) {
                    self.pos = save;
                    return self.comparison();
                }
                if CONSTRAINT_FUNCTORS.contains(&atom.relation.name.as_str()) {
                    let span = atom.span;
                    return Ok(Literal::Constraint(atom.relation, atom.args, span));
                }
                Ok(Literal::Atom(atom))
            }
            Tok::LParen => {
                // Either `( disjunction )` or a parenthesised expression in a comparison.
                let save = self.pos;
                self.bump();
                if let Ok(disj) = self.disjunction() {
                    if self.eat(&Tok::RParen) && self.cmp_op().is_none() && !is_arith(self.peek()) {
                        return Ok(Literal::Group(disj, start.to(self.prev_span())));
                    }
                }
                self.pos = save;
                self.comparison()
            }
            _ => self.comparison(),
        }
    }

    fn cmp_op(&self) -> Option<CmpOp> {
        Some(match self.peek() {
            Tok::Eq => CmpOp::Eq,
            Tok::Ne => CmpOp::Ne,
            Tok::Lt => CmpOp::Lt,
            Tok::Le => CmpOp::Le,
            Tok::Gt => CmpOp::Gt,
            Tok::Ge => CmpOp::Ge,
            _ => return None,
        })
    }

    fn comparison(&mut self) -> PResult<Literal> {
        let lhs = self.expr()?;
        let Some(op) = self.cmp_op() else {
            return self.error(
                "a comparison operator (=, !=, <, <=, >, >=) or `,` `;` `.`",
                Some("a body literal is an atom `r(x)`, a negation `!r(x)`, or a comparison such as `x < y`"),
            );
        };
        self.bump();
        let rhs = self.expr()?;
        let span = lhs.span().to(rhs.span());
        Ok(Literal::Compare(op, lhs, rhs, span))
    }
}
