//! The syntax tree of a netc program, as written.
//!
//! The parser produces one [`Program`] for all files of a compilation
//! (`.include`s are spliced in place, each item keeping the span of the file
//! it came from). Nothing here is resolved or typed: names are strings with
//! spans, literals keep their text. The checker (`check/`) reads this tree and
//! the lowering (`lower.rs`) turns it into the plan IR.
//!
//! Grammar (Souffle's, plus network literals and `@` location specifiers):
//!
//! ```text
//! program   := item*
//! item      := decl | type | directive | rule | comp | init | pragma
//! decl      := ".decl" NAME ("," NAME)* "(" [attr ("," attr)*] ")" qualifier*
//! comp      := ".comp" NAME ["<" NAME,* ">"] [":" NAME ["<" NAME,* ">"] ("," ...)*] "{" (item | ".override" NAME)* "}"
//! init      := ".init" NAME "=" NAME ["<" NAME,* ">"]
//! pragma    := ".pragma" STRING [STRING]
//! attr      := ["@"] NAME ":" TYPE
//! type      := ".type" NAME ("<:" TYPE | "=" TYPE ("|" TYPE)*)
//! directive := (".input" | ".output" | ".printsize") NAME ("," NAME)* ["(" key "=" value, ... ")"]
//! include   := ".include" STRING
//! rule      := atom ("," atom)* [":-" disj] "."
//! disj      := conj (";" conj)*
//! conj      := lit ("," lit)*
//! lit       := "!" atom | atom | expr CMP expr | NAME "(" args ")" | "(" disj ")" | "true" | "false"
//! expr      := VAR | "_" | literal | NAME "(" args ")" | expr BINOP expr | "-" expr
//!            | ("count" | "sum" | "min" | "max" | "mean") [expr] ":" ( atom | "{" disj "}" )
//! ```

pub use crate::plan::ops::{AggFunc, BinOp, CmpOp, UnOp};
use crate::source::Span;

/// A name with the span where it was written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Program {
    pub items: Vec<Item>,
    /// `.pragma` keys already warned about (each unknown key warns once).
    pub pragmas_seen: std::collections::HashSet<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    Decl(Decl),
    Type(TypeDecl),
    Directive(Directive),
    Rule(Rule),
    /// `.comp Name<T..> : Base<..> { items }` (expanded away by `syntax::components`).
    Comp(Comp),
    /// `.init inst = Name<args>` (expanded away by `syntax::components`).
    Init(Init),
    /// `.override rel` inside a component body.
    Override(Ident),
}

/// A component declaration: a template of items, instantiated by `.init`.
#[derive(Clone, Debug, PartialEq)]
pub struct Comp {
    pub name: Ident,
    pub params: Vec<Ident>,
    /// Components it inherits from, each with its type arguments.
    pub bases: Vec<(Ident, Vec<Ident>)>,
    pub items: Vec<Item>,
    pub span: Span,
}

/// `.init inst = Comp<args>`
#[derive(Clone, Debug, PartialEq)]
pub struct Init {
    pub instance: Ident,
    pub comp: Ident,
    pub args: Vec<Ident>,
    pub span: Span,
}

/// `.decl name(attr: type, ...)`
#[derive(Clone, Debug, PartialEq)]
pub struct Decl {
    pub name: Ident,
    pub attrs: Vec<Attr>,
    /// Qualifiers after the attribute list (`output`, `input`, `btree`, ...).
    pub qualifiers: Vec<Ident>,
    pub span: Span,
}

/// One attribute; `located` is true for NDlog's `@` (first attribute only).
#[derive(Clone, Debug, PartialEq)]
pub struct Attr {
    pub name: Ident,
    pub ty: Ident,
    pub located: bool,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct TypeDecl {
    pub name: Ident,
    pub def: TypeDef,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum TypeDef {
    /// `.type T <: base`
    Subtype(Ident),
    /// `.type T = base` (an alias, same type)
    Alias(Ident),
    /// `.type T = a | b | ...` (two or more members)
    Union(Vec<Ident>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DirectiveKind {
    Input,
    Output,
    PrintSize,
}

/// `.input r(IO=file, filename="r.tsv", delimiter=",")`
#[derive(Clone, Debug, PartialEq)]
pub struct Directive {
    pub kind: DirectiveKind,
    pub relations: Vec<Ident>,
    pub params: Vec<(Ident, String)>,
    pub span: Span,
}

/// `h1(..), h2(..) :- body.` — a fact has no body.
#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    pub heads: Vec<Atom>,
    /// Disjunction of conjunctions, as written (may nest through `Literal::Group`).
    pub body: Vec<Vec<Literal>>,
    pub span: Span,
}

impl Rule {
    pub fn is_fact(&self) -> bool {
        self.body.is_empty()
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Atom {
    pub relation: Ident,
    pub args: Vec<Expr>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Literal {
    Atom(Atom),
    /// `!atom`
    Negated(Atom, Span),
    /// `a < b`, `a = b`, ...
    Compare(CmpOp, Expr, Expr, Span),
    /// A functor used as a constraint: `contains(10.0.0.0/8, ip)`, `match("a.*", s)`.
    Constraint(Ident, Vec<Expr>, Span),
    /// `!` applied to a comparison or constraint: `!(a < b)`, `!contains(p, a)`.
    NegatedConstraint(Box<Literal>, Span),
    /// `( disj )`
    Group(Vec<Vec<Literal>>, Span),
    /// `true` / `false`
    Bool(bool, Span),
}

/// A literal as written; its type is decided by the checker from context
/// (an integer literal may be a `number`, an `unsigned` or a `float`).
#[derive(Clone, Debug, PartialEq)]
pub enum Lit {
    /// Integer text, e.g. `42`, `0x2a`, `-3` is `Unary(Neg, 3)`.
    Int(String),
    /// Integer with Souffle's `u` suffix, e.g. `42u`: always `unsigned`.
    Unsigned(String),
    /// Float text, e.g. `1.5`.
    Float(String),
    /// String literal, unescaped.
    Str(String),
    /// `10.0.0.1`
    Ipv4(String),
    /// `2001:db8::1` (written bare)
    Ipv6(String),
    /// `10.0.0.0/8`
    Prefix4(String),
    /// `2001:db8::/32`
    Prefix6(String),
    /// `de:ad:be:ef:00:01`
    Mac(String),
}

#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    Var(Ident),
    /// `_`
    Wildcard(Span),
    Lit(Lit, Span),
    /// `f(args)`: a built-in functor.
    Call(Ident, Vec<Expr>, Span),
    Binary(BinOp, Box<Expr>, Box<Expr>, Span),
    Unary(UnOp, Box<Expr>, Span),
    /// `count : { body }`, `sum x : { body }`, `min x : atom`, ...
    Aggregate {
        func: AggFunc,
        target: Option<Box<Expr>>,
        /// `concat x by k1, .., kn`: the keys that order the joined values.
        order: Vec<Expr>,
        body: Vec<Vec<Literal>>,
        span: Span,
    },
    /// `as(expr, Type)`: a checked conversion between a subtype and its base.
    As(Box<Expr>, Ident, Span),
}

impl Expr {
    pub fn span(&self) -> Span {
        match self {
            Expr::Var(i) => i.span,
            Expr::Wildcard(s)
            | Expr::Lit(_, s)
            | Expr::Call(_, _, s)
            | Expr::Binary(_, _, _, s)
            | Expr::Unary(_, _, s)
            | Expr::As(_, _, s) => *s,
            Expr::Aggregate { span, .. } => *span,
        }
    }
}

impl Literal {
    pub fn span(&self) -> Span {
        match self {
            Literal::Atom(a) => a.span,
            Literal::Negated(_, s)
            | Literal::Compare(_, _, _, s)
            | Literal::Constraint(_, _, s)
            | Literal::NegatedConstraint(_, s)
            | Literal::Group(_, s)
            | Literal::Bool(_, s) => *s,
        }
    }
}
