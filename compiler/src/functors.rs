//! Built-in functors and operators: their names, signatures and meaning.
//!
//! SKELETON — being filled in (signatures, evaluation, hash5).

use crate::ast::{BinOp, CmpOp, UnOp};
use crate::types::Prim;
use crate::value::Value;

/// Every built-in functor. The checker resolves a call by name and argument
/// types to one of these; the engine evaluates it with [`eval`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Builtin {
    // strings
    Cat,
    Strlen,
    Substr,
    Contains,
    Match,
    ToNumber,
    ToUnsigned,
    ToFloat,
    ToString,
    // numeric conversions (Souffle's itou, utoi, itof, ftoi, utof, ftou)
    Itou,
    Utoi,
    Itof,
    Ftoi,
    Utof,
    Ftou,
    Min,
    Max,
    Abs,
    // network
    PrefixContains,
    PrefixLen,
    PrefixNetwork,
    PrefixBroadcast,
    NthAddr,
    MakePrefix,
    ToIpv4,
    ToIpv6,
    ToPrefix4,
    ToPrefix6,
    ToMac,
    Hash5,
    Hash5Sym,
}

/// A parameter or result type in a signature.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    P(Prim),
    /// Any numeric primitive; every `Num` in one signature is the same type.
    Num,
    /// Boolean (the result of a constraint functor).
    Bool,
}

/// One overload of a functor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signature {
    pub builtin: Builtin,
    pub params: Vec<Ty>,
    pub result: Ty,
}

/// All overloads of the functor called `name`, or `None` if there is none.
pub fn overloads(_name: &str) -> Option<Vec<Signature>> {
    todo!("functors helper")
}

/// Names of all functors (for "did you mean" hints).
pub fn names() -> &'static [&'static str] {
    &[]
}

/// Evaluates a functor; `None` means undefined (the row is dropped).
pub fn eval(_f: Builtin, _args: &[Value]) -> Option<Value> {
    todo!("functors helper")
}

/// Evaluates a constraint functor.
pub fn holds(_f: Builtin, _args: &[Value]) -> bool {
    todo!("functors helper")
}

/// Evaluates a binary operator on two values of the same primitive.
pub fn eval_binary(_op: BinOp, _a: &Value, _b: &Value) -> Option<Value> {
    todo!("functors helper")
}

pub fn eval_unary(_op: UnOp, _a: &Value) -> Option<Value> {
    todo!("functors helper")
}

pub fn compare(_op: CmpOp, _a: &Value, _b: &Value) -> bool {
    todo!("functors helper")
}
