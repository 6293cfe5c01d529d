//! Arithmetic, bitwise, logical and comparison operators, and the numeric
//! functors (`min`, `max`, `abs`, `itou`, `utoi`, `itof`, `ftoi`, `utof`,
//! `ftou`).
//!
//! Expects both operands of a binary operator to have the same primitive
//! type (the checker guarantees it; [`binary_operand_prims`] says which
//! types an operator accepts). Guarantees: no panics and no platform-defined
//! behaviour. `number` (i64) and `unsigned` (u64) arithmetic wraps modulo
//! 2^64; division or remainder by zero is undefined (`None`) for every
//! type; a shift count ≥ 64 shifts every bit out and a negative count is
//! undefined; bitwise and logical operators are undefined on floats; a
//! mismatch of operand types is undefined.

use super::Builtin;
use crate::plan::{BinOp, CmpOp, UnOp};
use crate::types::Prim;
use crate::value::{Value, F64};
use std::cmp::Ordering;

/// The primitive types a binary operator is defined on (both operands and
/// the result have the same type).
pub fn binary_operand_prims(op: BinOp) -> &'static [Prim] {
    match op {
        BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Pow => {
            &[Prim::Number, Prim::Unsigned, Prim::Float]
        }
        BinOp::Mod
        | BinOp::BAnd
        | BinOp::BOr
        | BinOp::BXor
        | BinOp::Shl
        | BinOp::Shr
        | BinOp::LAnd
        | BinOp::LOr => &[Prim::Number, Prim::Unsigned],
    }
}

/// The primitive types a unary operator is defined on (operand and result
/// have the same type).
pub fn unary_operand_prims(op: UnOp) -> &'static [Prim] {
    match op {
        UnOp::Neg => &[Prim::Number, Prim::Float],
        UnOp::BNot | UnOp::LNot => &[Prim::Number, Prim::Unsigned],
    }
}

/// Evaluates a binary operator on two values of the same primitive; `None`
/// means undefined (the row is dropped).
pub fn eval_binary(op: BinOp, a: &Value, b: &Value) -> Option<Value> {
    match (*a, *b) {
        (Value::Number(x), Value::Number(y)) => signed(op, x, y).map(Value::Number),
        (Value::Unsigned(x), Value::Unsigned(y)) => unsigned(op, x, y).map(Value::Unsigned),
        (Value::Float(x), Value::Float(y)) => float(op, x.0, y.0).map(|f| Value::Float(F64(f))),
        _ => None,
    }
}

fn signed(op: BinOp, x: i64, y: i64) -> Option<i64> {
    Some(match op {
        BinOp::Add => x.wrapping_add(y),
        BinOp::Sub => x.wrapping_sub(y),
        BinOp::Mul => x.wrapping_mul(y),
        // Truncating division and remainder (C++); i64::MIN / -1 wraps.
        BinOp::Div if y == 0 => return None,
        BinOp::Div => x.wrapping_div(y),
        BinOp::Mod if y == 0 => return None,
        BinOp::Mod => x.wrapping_rem(y),
        BinOp::Pow => return signed_pow(x, y),
        BinOp::BAnd => x & y,
        BinOp::BOr => x | y,
        BinOp::BXor => x ^ y,
        BinOp::Shl => {
            let n = shift_count(i128::from(y))?;
            if n >= 64 {
                0
            } else {
                x << n
            }
        }
        // Arithmetic (sign-extending) shift.
        BinOp::Shr => {
            let n = shift_count(i128::from(y))?;
            x >> n.min(63)
        }
        BinOp::LAnd => i64::from(x != 0 && y != 0),
        BinOp::LOr => i64::from(x != 0 || y != 0),
    })
}

fn unsigned(op: BinOp, x: u64, y: u64) -> Option<u64> {
    Some(match op {
        BinOp::Add => x.wrapping_add(y),
        BinOp::Sub => x.wrapping_sub(y),
        BinOp::Mul => x.wrapping_mul(y),
        BinOp::Div => x.checked_div(y)?,
        BinOp::Mod => x.checked_rem(y)?,
        BinOp::Pow => wrapping_pow_u64(x, y),
        BinOp::BAnd => x & y,
        BinOp::BOr => x | y,
        BinOp::BXor => x ^ y,
        BinOp::Shl => {
            let n = shift_count(i128::from(y))?;
            if n >= 64 {
                0
            } else {
                x << n
            }
        }
        BinOp::Shr => {
            let n = shift_count(i128::from(y))?;
            if n >= 64 {
                0
            } else {
                x >> n
            }
        }
        BinOp::LAnd => u64::from(x != 0 && y != 0),
        BinOp::LOr => u64::from(x != 0 || y != 0),
    })
}

fn float(op: BinOp, x: f64, y: f64) -> Option<f64> {
    Some(match op {
        BinOp::Add => x + y,
        BinOp::Sub => x - y,
        BinOp::Mul => x * y,
        BinOp::Div if y == 0.0 => return None,
        BinOp::Div => x / y,
        BinOp::Pow => x.powf(y),
        BinOp::Mod
        | BinOp::BAnd
        | BinOp::BOr
        | BinOp::BXor
        | BinOp::Shl
        | BinOp::Shr
        | BinOp::LAnd
        | BinOp::LOr => return None,
    })
}

/// A shift count: negative is undefined, anything ≥ 64 is capped at 64.
fn shift_count(y: i128) -> Option<u32> {
    if y < 0 {
        None
    } else {
        Some(y.min(64) as u32)
    }
}

/// `x ^ y` modulo 2^64 by square-and-multiply (any exponent).
fn wrapping_pow_u64(mut base: u64, mut exp: u64) -> u64 {
    let mut acc: u64 = 1;
    while exp > 0 {
        if exp & 1 == 1 {
            acc = acc.wrapping_mul(base);
        }
        base = base.wrapping_mul(base);
        exp >>= 1;
    }
    acc
}

/// `x ^ y` on numbers: wraps for y ≥ 0; for y < 0 the exact result 1/x^|y|
/// truncated toward zero (1 for x = 1, ±1 for x = -1, undefined for x = 0,
/// else 0).
fn signed_pow(x: i64, y: i64) -> Option<i64> {
    if y >= 0 {
        // Two's complement multiplication modulo 2^64 is the same for i64
        // and u64, so the unsigned routine computes the wrapped result.
        return Some(wrapping_pow_u64(x as u64, y as u64) as i64);
    }
    match x {
        0 => None,
        1 => Some(1),
        -1 => Some(if y % 2 == 0 { 1 } else { -1 }),
        _ => Some(0),
    }
}

/// Evaluates a unary operator; `None` means undefined.
pub fn eval_unary(op: UnOp, a: &Value) -> Option<Value> {
    match (op, *a) {
        (UnOp::Neg, Value::Number(x)) => Some(Value::Number(x.wrapping_neg())),
        (UnOp::Neg, Value::Float(x)) => Some(Value::Float(F64(-x.0))),
        (UnOp::BNot, Value::Number(x)) => Some(Value::Number(!x)),
        (UnOp::BNot, Value::Unsigned(x)) => Some(Value::Unsigned(!x)),
        (UnOp::LNot, Value::Number(x)) => Some(Value::Number(i64::from(x == 0))),
        (UnOp::LNot, Value::Unsigned(x)) => Some(Value::Unsigned(u64::from(x == 0))),
        _ => None,
    }
}

/// Compares two values as a constraint does: numbers numerically, symbols
/// by text, addresses and prefixes by bits then length, and two floats as
/// IEEE 754 compares them, as Souffle does (`-0.0 = 0.0`; NaN is unequal to
/// everything, itself included, and neither below nor above anything). A
/// relation still tells rows apart by [`Value`]'s total order (`-0.0` and
/// `0.0` are two rows, as in Souffle, which keeps a float's bits).
pub fn compare(op: CmpOp, a: &Value, b: &Value) -> bool {
    if let (Value::Float(x), Value::Float(y)) = (a, b) {
        let (x, y) = (x.0, y.0);
        return match op {
            CmpOp::Eq => x == y,
            CmpOp::Ne => x != y,
            CmpOp::Lt => x < y,
            CmpOp::Le => x <= y,
            CmpOp::Gt => x > y,
            CmpOp::Ge => x >= y,
        };
    }
    let o = a.cmp(b);
    match op {
        CmpOp::Eq => o == Ordering::Equal,
        CmpOp::Ne => o != Ordering::Equal,
        CmpOp::Lt => o == Ordering::Less,
        CmpOp::Le => o != Ordering::Greater,
        CmpOp::Gt => o == Ordering::Greater,
        CmpOp::Ge => o != Ordering::Less,
    }
}

/// `min(...)` (`keep` = Less) or `max(...)` (`keep` = Greater) of numeric
/// values of one type; undefined on mixed types, non-numeric values or no
/// arguments.
pub(super) fn extremum(args: &[Value], keep: Ordering) -> Option<Value> {
    let (first, rest) = args.split_first()?;
    if !first.prim().is_numeric() {
        return None;
    }
    let mut best = *first;
    for v in rest {
        if v.prim() != first.prim() {
            return None;
        }
        if v.cmp(&best) == keep {
            best = *v;
        }
    }
    Some(best)
}

/// `abs(x)`: wraps for `i64::MIN` (stays `i64::MIN`); identity on unsigned.
pub(super) fn abs(v: &Value) -> Option<Value> {
    match *v {
        Value::Number(x) => Some(Value::Number(x.wrapping_abs())),
        Value::Unsigned(x) => Some(Value::Unsigned(x)),
        Value::Float(x) => Some(Value::Float(F64(x.0.abs()))),
        _ => None,
    }
}

/// Souffle's numeric conversions. `itou`/`utoi` reinterpret the 64 bits
/// (two's complement, as C++'s `static_cast`); `itof`/`utof` round to the
/// nearest float; `ftoi`/`ftou` truncate toward zero and are undefined for
/// NaN and for results outside the target range.
pub(super) fn convert(f: Builtin, v: &Value) -> Option<Value> {
    // 2^63 and 2^64, exactly representable as f64.
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    const TWO_64: f64 = 18_446_744_073_709_551_616.0;
    match (f, *v) {
        (Builtin::Itou, Value::Number(x)) => Some(Value::Unsigned(x as u64)),
        (Builtin::Utoi, Value::Unsigned(x)) => Some(Value::Number(x as i64)),
        (Builtin::Itof, Value::Number(x)) => Some(Value::Float(F64(x as f64))),
        (Builtin::Utof, Value::Unsigned(x)) => Some(Value::Float(F64(x as f64))),
        (Builtin::Ftoi, Value::Float(x)) => {
            let t = x.0.trunc();
            // NaN is in no range.
            (-TWO_63..TWO_63)
                .contains(&t)
                .then_some(Value::Number(t as i64))
        }
        (Builtin::Ftou, Value::Float(x)) => {
            let t = x.0.trunc();
            (0.0..TWO_64)
                .contains(&t)
                .then_some(Value::Unsigned(t as u64))
        }
        _ => None,
    }
}
