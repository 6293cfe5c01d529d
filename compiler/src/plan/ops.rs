//! The operators the plan IR names: comparisons, arithmetic, aggregates.
//!
//! They belong to the plan, not to the syntax tree: the engine interprets
//! them and must not import the tree (`crate::ast` re-exports them for the
//! parser, which writes them as it reads the program).

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl CmpOp {
    pub fn symbol(self) -> &'static str {
        match self {
            CmpOp::Eq => "=",
            CmpOp::Ne => "!=",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Pow,
    /// Souffle's `band`, `bor`, `bxor`, `bshl`, `bshr`, `land`, `lor`.
    BAnd,
    BOr,
    BXor,
    Shl,
    Shr,
    LAnd,
    LOr,
}

impl BinOp {
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Mod => "%",
            BinOp::Pow => "^",
            BinOp::BAnd => "band",
            BinOp::BOr => "bor",
            BinOp::BXor => "bxor",
            BinOp::Shl => "bshl",
            BinOp::Shr => "bshr",
            BinOp::LAnd => "land",
            BinOp::LOr => "lor",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnOp {
    Neg,
    BNot,
    LNot,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AggFunc {
    Count,
    Sum,
    Min,
    Max,
    /// `concat x by k1, .., kn : { body }`: the distinct `(k1, .., kn, x)`
    /// of the body, in ascending order, their `x` joined with `,`.
    Concat,
}

impl AggFunc {
    pub fn name(self) -> &'static str {
        match self {
            AggFunc::Count => "count",
            AggFunc::Sum => "sum",
            AggFunc::Min => "min",
            AggFunc::Max => "max",
            AggFunc::Concat => "concat",
        }
    }
}
