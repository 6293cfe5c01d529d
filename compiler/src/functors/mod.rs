//! Built-in functors and operators: their names, signatures and meaning.
//!
//! This module is the single source of truth for every built-in of the
//! language. The checker asks [`overloads`] which signatures a call may have
//! and picks the *first* overload whose parameter types fit the arguments;
//! the engine evaluates the chosen [`Builtin`] with [`eval`] (value-producing
//! functors) or [`holds`] (constraint functors, whose result type is
//! [`Ty::Bool`]), and operators with [`eval_binary`], [`eval_unary`] and
//! [`compare`]. The full, normative description (semantics of every functor,
//! undefined cases, the bit layout of `hash5`, test vectors) is
//! `specs/functors.md`.
//!
//! Expectations and guarantees:
//! - Inputs are [`Value`]s of the types the signature promises; the functions
//!   never panic on any input, including ill-typed ones (an argument of the
//!   wrong type, a wrong arity or a malformed prefix value makes the result
//!   undefined, i.e. `None` / `false`).
//! - `None` from [`eval`], [`eval_binary`] or [`eval_unary`] means *undefined*:
//!   the engine drops the row (division by zero, a failed conversion, an
//!   out-of-range index, ...). It is never an internal error.
//! - Every function is deterministic and pure; the same arguments give the
//!   same result on every platform (integer arithmetic wraps, floats are IEEE
//!   binary64, `hash5` is CRC-32/ISO-HDLC over a fixed byte layout).
//! - Variadic functors (`cat`, `min`, `max`) are modelled as one overload per
//!   arity from 2 to [`MAX_VARIADIC`], so a checker that matches arities
//!   exactly needs no special case.
//! - `contains` is overloaded: the string overload is [`Builtin::Contains`]
//!   (`contains(sub, s)`), the network overloads are
//!   [`Builtin::PrefixContains`] (`contains(prefix, addr)` and
//!   `contains(prefix, prefix)`).

mod hash;
mod network;
mod ops;
mod strings;

pub use hash::{
    crc32, hash5_bytes, hash5_bytes_v4, hash5_bytes_v6, hash5_sym_v4, hash5_sym_v6, hash5_v4,
    hash5_v6, hash5_value, symmetric_order, HASH5_V4_LEN, HASH5_V6_LEN,
};
pub use ops::{binary_operand_prims, compare, eval_binary, eval_unary, unary_operand_prims};
pub use strings::regex_error;

use crate::types::Prim;
use crate::value::Value;
use std::sync::OnceLock;

/// The largest arity of the variadic functors `cat`, `min` and `max`.
pub const MAX_VARIADIC: usize = 16;

/// Every built-in functor. The checker resolves a call by name and argument
/// types to one of these; the engine evaluates it with [`eval`] or [`holds`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Builtin {
    // strings
    Cat,
    Strlen,
    Substr,
    /// `replace(s, old, new)`: the first occurrence of `old` in `s` replaced.
    Replace,
    /// `contains(sub, s)` on symbols (constraint).
    Contains,
    /// `match(regex, s)` (constraint).
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
    /// `contains(prefix, addr)` / `contains(prefix, prefix)` (constraint).
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
    Ipv4ToUnsigned,
    UnsignedToIpv4,
    MacToUnsigned,
    UnsignedToMac,
    Hash5,
    Hash5Sym,
}

impl Builtin {
    /// Every built-in, in declaration order.
    pub const ALL: [Builtin; 36] = {
        use Builtin as B;
        [
            B::Cat,
            B::Strlen,
            B::Substr,
            B::Replace,
            B::Contains,
            B::Match,
            B::ToNumber,
            B::ToUnsigned,
            B::ToFloat,
            B::ToString,
            B::Itou,
            B::Utoi,
            B::Itof,
            B::Ftoi,
            B::Utof,
            B::Ftou,
            B::Min,
            B::Max,
            B::Abs,
            B::PrefixContains,
            B::PrefixLen,
            B::PrefixNetwork,
            B::PrefixBroadcast,
            B::NthAddr,
            B::MakePrefix,
            B::ToIpv4,
            B::ToIpv6,
            B::ToPrefix4,
            B::ToPrefix6,
            B::ToMac,
            B::Ipv4ToUnsigned,
            B::UnsignedToIpv4,
            B::MacToUnsigned,
            B::UnsignedToMac,
            B::Hash5,
            B::Hash5Sym,
        ]
    };

    /// The name the functor is called by in programs (`contains` for both
    /// [`Builtin::Contains`] and [`Builtin::PrefixContains`]).
    pub fn name(self) -> &'static str {
        use Builtin as B;
        match self {
            B::Cat => "cat",
            B::Strlen => "strlen",
            B::Substr => "substr",
            B::Replace => "replace",
            B::Contains | B::PrefixContains => "contains",
            B::Match => "match",
            B::ToNumber => "to_number",
            B::ToUnsigned => "to_unsigned",
            B::ToFloat => "to_float",
            B::ToString => "to_string",
            B::Itou => "itou",
            B::Utoi => "utoi",
            B::Itof => "itof",
            B::Ftoi => "ftoi",
            B::Utof => "utof",
            B::Ftou => "ftou",
            B::Min => "min",
            B::Max => "max",
            B::Abs => "abs",
            B::PrefixLen => "prefix_len",
            B::PrefixNetwork => "network",
            B::PrefixBroadcast => "broadcast",
            B::NthAddr => "nth_addr",
            B::MakePrefix => "prefix",
            B::ToIpv4 => "to_ipv4",
            B::ToIpv6 => "to_ipv6",
            B::ToPrefix4 => "to_prefix4",
            B::ToPrefix6 => "to_prefix6",
            B::ToMac => "to_mac",
            B::Ipv4ToUnsigned => "ipv4_to_unsigned",
            B::UnsignedToIpv4 => "unsigned_to_ipv4",
            B::MacToUnsigned => "mac_to_unsigned",
            B::UnsignedToMac => "unsigned_to_mac",
            B::Hash5 => "hash5",
            B::Hash5Sym => "hash5_sym",
        }
    }

    /// Whether this is a constraint functor (evaluated with [`holds`]).
    pub fn is_constraint(self) -> bool {
        matches!(
            self,
            Builtin::Contains | Builtin::Match | Builtin::PrefixContains
        )
    }
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

impl Signature {
    /// Whether a call with this signature is a constraint (result `Bool`).
    pub fn is_constraint(&self) -> bool {
        self.result == Ty::Bool
    }
}

/// All overloads of the functor called `name`, in the order the checker must
/// try them, or `None` if there is no functor of that name.
pub fn overloads(name: &str) -> Option<Vec<Signature>> {
    table()
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, sigs)| sigs.clone())
}

/// Names of all functors (for "did you mean" hints), sorted.
pub fn names() -> &'static [&'static str] {
    &[
        "abs",
        "broadcast",
        "cat",
        "contains",
        "ftoi",
        "ftou",
        "hash5",
        "hash5_sym",
        "ipv4_to_unsigned",
        "itof",
        "itou",
        "mac_to_unsigned",
        "match",
        "max",
        "min",
        "network",
        "nth_addr",
        "prefix",
        "prefix_len",
        "replace",
        "strlen",
        "substr",
        "to_float",
        "to_ipv4",
        "to_ipv6",
        "to_mac",
        "to_number",
        "to_prefix4",
        "to_prefix6",
        "to_string",
        "to_unsigned",
        "unsigned_to_ipv4",
        "unsigned_to_mac",
        "utof",
        "utoi",
    ]
}

fn table() -> &'static [(&'static str, Vec<Signature>)] {
    static T: OnceLock<Vec<(&'static str, Vec<Signature>)>> = OnceLock::new();
    T.get_or_init(build_table)
}

fn build_table() -> Vec<(&'static str, Vec<Signature>)> {
    use Builtin as B;
    use Prim::{Float, Ipv4, Ipv6, Mac, Number, Prefix4, Prefix6, Symbol, Unsigned};
    let p = Ty::P;
    let sig = |builtin: Builtin, params: Vec<Ty>, result: Ty| Signature {
        builtin,
        params,
        result,
    };
    let unary = |b: Builtin, from: Prim, to: Prim| sig(b, vec![p(from)], p(to));
    let variadic = |b: Builtin, ty: Ty| -> Vec<Signature> {
        (2..=MAX_VARIADIC)
            .map(|n| sig(b, vec![ty; n], ty))
            .collect()
    };
    let hash5 = |b: Builtin| -> Vec<Signature> {
        let mut v = Vec::new();
        for addr in [Ipv4, Ipv6] {
            for proto in [Number, Unsigned] {
                for sport in [Number, Unsigned] {
                    for dport in [Number, Unsigned] {
                        v.push(sig(
                            b,
                            vec![p(proto), p(addr), p(addr), p(sport), p(dport)],
                            p(Unsigned),
                        ));
                    }
                }
            }
        }
        v
    };

    let mut t: Vec<(&'static str, Vec<Signature>)> = vec![
        ("cat", variadic(B::Cat, p(Symbol))),
        ("strlen", vec![unary(B::Strlen, Symbol, Number)]),
        (
            "substr",
            vec![sig(
                B::Substr,
                vec![p(Symbol), p(Number), p(Number)],
                p(Symbol),
            )],
        ),
        (
            "replace",
            vec![sig(
                B::Replace,
                vec![p(Symbol), p(Symbol), p(Symbol)],
                p(Symbol),
            )],
        ),
        (
            "contains",
            vec![
                sig(B::Contains, vec![p(Symbol), p(Symbol)], Ty::Bool),
                sig(B::PrefixContains, vec![p(Prefix4), p(Ipv4)], Ty::Bool),
                sig(B::PrefixContains, vec![p(Prefix6), p(Ipv6)], Ty::Bool),
                sig(B::PrefixContains, vec![p(Prefix4), p(Prefix4)], Ty::Bool),
                sig(B::PrefixContains, vec![p(Prefix6), p(Prefix6)], Ty::Bool),
            ],
        ),
        (
            "match",
            vec![sig(B::Match, vec![p(Symbol), p(Symbol)], Ty::Bool)],
        ),
        // Souffle's overloads: from text, and between the numeric types.
        (
            "to_number",
            vec![
                unary(B::ToNumber, Symbol, Number),
                unary(B::Ftoi, Float, Number),
                unary(B::Utoi, Unsigned, Number),
            ],
        ),
        (
            "to_unsigned",
            vec![
                unary(B::ToUnsigned, Symbol, Unsigned),
                unary(B::Itou, Number, Unsigned),
                unary(B::Ftou, Float, Unsigned),
            ],
        ),
        (
            "to_float",
            vec![
                unary(B::ToFloat, Symbol, Float),
                unary(B::Itof, Number, Float),
                unary(B::Utof, Unsigned, Float),
            ],
        ),
        (
            "to_string",
            Prim::ALL
                .iter()
                .map(|&x| unary(B::ToString, x, Symbol))
                .collect(),
        ),
        ("itou", vec![unary(B::Itou, Number, Unsigned)]),
        ("utoi", vec![unary(B::Utoi, Unsigned, Number)]),
        ("itof", vec![unary(B::Itof, Number, Float)]),
        ("ftoi", vec![unary(B::Ftoi, Float, Number)]),
        ("utof", vec![unary(B::Utof, Unsigned, Float)]),
        ("ftou", vec![unary(B::Ftou, Float, Unsigned)]),
        ("min", variadic(B::Min, Ty::Num)),
        ("max", variadic(B::Max, Ty::Num)),
        ("abs", vec![sig(B::Abs, vec![Ty::Num], Ty::Num)]),
        (
            "prefix_len",
            vec![
                unary(B::PrefixLen, Prefix4, Number),
                unary(B::PrefixLen, Prefix6, Number),
            ],
        ),
        (
            "network",
            vec![
                unary(B::PrefixNetwork, Prefix4, Ipv4),
                unary(B::PrefixNetwork, Prefix6, Ipv6),
            ],
        ),
        (
            "broadcast",
            vec![
                unary(B::PrefixBroadcast, Prefix4, Ipv4),
                unary(B::PrefixBroadcast, Prefix6, Ipv6),
            ],
        ),
        (
            "nth_addr",
            vec![
                sig(B::NthAddr, vec![p(Prefix4), p(Number)], p(Ipv4)),
                sig(B::NthAddr, vec![p(Prefix4), p(Unsigned)], p(Ipv4)),
                sig(B::NthAddr, vec![p(Prefix6), p(Number)], p(Ipv6)),
                sig(B::NthAddr, vec![p(Prefix6), p(Unsigned)], p(Ipv6)),
            ],
        ),
        (
            "prefix",
            vec![
                sig(B::MakePrefix, vec![p(Ipv4), p(Number)], p(Prefix4)),
                sig(B::MakePrefix, vec![p(Ipv4), p(Unsigned)], p(Prefix4)),
                sig(B::MakePrefix, vec![p(Ipv6), p(Number)], p(Prefix6)),
                sig(B::MakePrefix, vec![p(Ipv6), p(Unsigned)], p(Prefix6)),
            ],
        ),
        ("to_ipv4", vec![unary(B::ToIpv4, Symbol, Ipv4)]),
        ("to_ipv6", vec![unary(B::ToIpv6, Symbol, Ipv6)]),
        ("to_prefix4", vec![unary(B::ToPrefix4, Symbol, Prefix4)]),
        ("to_prefix6", vec![unary(B::ToPrefix6, Symbol, Prefix6)]),
        ("to_mac", vec![unary(B::ToMac, Symbol, Mac)]),
        (
            "ipv4_to_unsigned",
            vec![unary(B::Ipv4ToUnsigned, Ipv4, Unsigned)],
        ),
        (
            "unsigned_to_ipv4",
            vec![unary(B::UnsignedToIpv4, Unsigned, Ipv4)],
        ),
        (
            "mac_to_unsigned",
            vec![unary(B::MacToUnsigned, Mac, Unsigned)],
        ),
        (
            "unsigned_to_mac",
            vec![unary(B::UnsignedToMac, Unsigned, Mac)],
        ),
        ("hash5", hash5(B::Hash5)),
        ("hash5_sym", hash5(B::Hash5Sym)),
    ];
    t.sort_by_key(|(n, _)| *n);
    t
}

/// Evaluates a value-producing functor; `None` means undefined (the row is
/// dropped). Constraint functors ([`Builtin::is_constraint`]) have no value:
/// `eval` returns `None` for them; use [`holds`].
pub fn eval(f: Builtin, args: &[Value]) -> Option<Value> {
    use Builtin as B;
    match f {
        B::Cat => strings::cat(args),
        B::Strlen => strings::strlen(one(args)?),
        B::Substr => match args {
            [s, start, len] => strings::substr(s, start, len),
            _ => None,
        },
        B::Replace => match args {
            [s, old, new] => strings::replace(s, old, new),
            _ => None,
        },
        B::ToNumber => strings::parse_as(one(args)?, Prim::Number),
        B::ToUnsigned => strings::parse_as(one(args)?, Prim::Unsigned),
        B::ToFloat => strings::parse_as(one(args)?, Prim::Float),
        B::ToIpv4 => strings::parse_as(one(args)?, Prim::Ipv4),
        B::ToIpv6 => strings::parse_as(one(args)?, Prim::Ipv6),
        B::ToPrefix4 => strings::parse_as(one(args)?, Prim::Prefix4),
        B::ToPrefix6 => strings::parse_as(one(args)?, Prim::Prefix6),
        B::ToMac => strings::parse_as(one(args)?, Prim::Mac),
        B::ToString => Some(Value::sym(&one(args)?.to_string())),
        B::Itou | B::Utoi | B::Itof | B::Ftoi | B::Utof | B::Ftou => ops::convert(f, one(args)?),
        B::Min => ops::extremum(args, std::cmp::Ordering::Less),
        B::Max => ops::extremum(args, std::cmp::Ordering::Greater),
        B::Abs => ops::abs(one(args)?),
        B::PrefixLen => network::prefix_len(one(args)?),
        B::PrefixNetwork => network::first(one(args)?),
        B::PrefixBroadcast => network::last(one(args)?),
        B::NthAddr => match args {
            [p, n] => network::nth_addr(p, n),
            _ => None,
        },
        B::MakePrefix => match args {
            [a, len] => network::make_prefix(a, len),
            _ => None,
        },
        B::Ipv4ToUnsigned | B::UnsignedToIpv4 | B::MacToUnsigned | B::UnsignedToMac => {
            network::convert(f, one(args)?)
        }
        B::Hash5 => hash5_value(args, false).map(|h| Value::Unsigned(u64::from(h))),
        B::Hash5Sym => hash5_value(args, true).map(|h| Value::Unsigned(u64::from(h))),
        B::Contains | B::Match | B::PrefixContains => None,
    }
}

/// `cat(...)` with some arguments given as `to_string(v)`: `(true, v)` is
/// the argument `to_string(v)`, `(false, s)` the argument `s`. The same
/// result as [`eval`] of [`Builtin::Cat`] over the converted arguments,
/// without interning each conversion (the engine's path for flow strings).
pub fn cat_converted(parts: &[(bool, Value)]) -> Option<Value> {
    strings::cat_converted(parts)
}

/// [`holds`], or `None` where the constraint has no truth value: `match`
/// with a pattern that is not a regular expression is false both as
/// `match(...)` and as `!match(...)`, as Souffle evaluates it (it warns
/// and fails the constraint either way).
pub fn holds_defined(f: Builtin, args: &[Value]) -> Option<bool> {
    if let (Builtin::Match, [Value::Symbol(re), _]) = (f, args) {
        if !strings::valid_pattern(&re.as_str()) {
            return None;
        }
    }
    Some(holds(f, args))
}

/// Evaluates a constraint functor. Ill-typed arguments, a wrong arity and
/// non-constraint functors give `false`.
pub fn holds(f: Builtin, args: &[Value]) -> bool {
    match (f, args) {
        (Builtin::Contains, [sub, s]) => strings::contains(sub, s),
        (Builtin::Match, [re, s]) => strings::matches(re, s),
        (Builtin::PrefixContains, [p, x]) => network::contains(p, x),
        _ => false,
    }
}

fn one(args: &[Value]) -> Option<&Value> {
    match args {
        [a] => Some(a),
        _ => None,
    }
}

/// An integer argument (number or unsigned) widened to `i128`.
fn int_arg(v: &Value) -> Option<i128> {
    match *v {
        Value::Number(n) => Some(i128::from(n)),
        Value::Unsigned(n) => Some(i128::from(n)),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
