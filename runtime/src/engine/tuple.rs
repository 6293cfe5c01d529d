//! [`Tuple`]: the row type that flows through the dataflow.
//!
//! Expects: nothing beyond `netc_compiler::value`.
//! Guarantees:
//! - `Tuple` wraps a [`Row`] unchanged (conversion both ways is free).
//! - Its `Ord` is a *fast internal* total order (variant, then raw bits;
//!   symbols by interner id), consistent with `Eq`/`Hash`. Arrangements sort
//!   by it millions of times, so it must never take the interner lock. It is
//!   NOT the user-visible order: anything shown to users is sorted with
//!   [`sort_rows`], which follows `Value`'s semantic order.
//! - It implements serde `Serialize`/`Deserialize` because timely's
//!   `ExchangeData` requires them. The encoding stores symbol *ids*, so it is
//!   only meaningful inside one process (which is how the engine runs:
//!   `Config::process`, whose channels move typed data and never serialize).

use netc_compiler::value::{Row, Sym, Value, F64};
use serde::de::{Error as _, SeqAccess, Visitor};
use serde::ser::SerializeSeq;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

/// A row inside the dataflow. See the module docs for its order.
#[derive(Clone, PartialEq, Eq, Hash, Default)]
pub struct Tuple(pub Row);

impl Tuple {
    pub fn empty() -> Tuple {
        Tuple(Vec::new())
    }

    /// The values at `cols`, in that order.
    #[inline]
    pub fn project(&self, cols: &[usize]) -> Tuple {
        Tuple(
            cols.iter()
                .filter_map(|&c| self.0.get(c).copied())
                .collect(),
        )
    }

    /// The first `n` values.
    #[inline]
    pub fn prefix(&self, n: usize) -> Tuple {
        Tuple(self.0[..n.min(self.0.len())].to_vec())
    }
}

/// The parts of a value that decide the internal order: variant rank, the
/// payload bits, and the prefix length (0 when there is none).
#[inline]
fn bits(v: &Value) -> (u8, u128, u8) {
    match *v {
        Value::Number(n) => (0, n as u64 as u128, 0),
        Value::Unsigned(n) => (1, n as u128, 0),
        Value::Float(F64(f)) => (2, f.to_bits() as u128, 0),
        Value::Symbol(Sym(id)) => (3, id as u128, 0),
        Value::Ipv4(a) => (4, a as u128, 0),
        Value::Ipv6(a) => (5, a, 0),
        Value::Prefix4(a, l) => (6, a as u128, l),
        Value::Prefix6(a, l) => (7, a, l),
        Value::Mac(m) => (8, m as u128, 0),
    }
}

fn from_bits(tag: u8, payload: u128, len: u8) -> Option<Value> {
    Some(match tag {
        0 => Value::Number(payload as u64 as i64),
        1 => Value::Unsigned(u64::try_from(payload).ok()?),
        2 => Value::Float(F64(f64::from_bits(u64::try_from(payload).ok()?))),
        3 => Value::Symbol(Sym(u32::try_from(payload).ok()?)),
        4 => Value::Ipv4(u32::try_from(payload).ok()?),
        5 => Value::Ipv6(payload),
        6 => Value::Prefix4(u32::try_from(payload).ok()?, len),
        7 => Value::Prefix6(payload, len),
        8 => Value::Mac(u64::try_from(payload).ok()?),
        _ => return None,
    })
}

/// The fast internal order of two values (see module docs).
#[inline]
pub fn fast_cmp(a: &Value, b: &Value) -> Ordering {
    bits(a).cmp(&bits(b))
}

impl Ord for Tuple {
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        for (a, b) in self.0.iter().zip(other.0.iter()) {
            match fast_cmp(a, b) {
                Ordering::Equal => {}
                o => return o,
            }
        }
        self.0.len().cmp(&other.0.len())
    }
}

impl PartialOrd for Tuple {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Debug for Tuple {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("(")?;
        for (i, v) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{v}")?;
        }
        f.write_str(")")
    }
}

impl Serialize for Tuple {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for v in &self.0 {
            seq.serialize_element(&bits(v))?;
        }
        seq.end()
    }
}

impl<'de> Deserialize<'de> for Tuple {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Tuple, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Tuple;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a sequence of (tag, payload, length) triples")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Tuple, A::Error> {
                let mut row = Vec::with_capacity(seq.size_hint().unwrap_or(0));
                while let Some((tag, payload, len)) = seq.next_element::<(u8, u128, u8)>()? {
                    row.push(
                        from_bits(tag, payload, len)
                            .ok_or_else(|| A::Error::custom("invalid value encoding"))?,
                    );
                }
                Ok(Tuple(row))
            }
        }
        d.deserialize_seq(V)
    }
}

/// A value with symbols resolved to their text, ordered exactly like
/// [`Value`]'s semantic `Ord` (variant order, then meaning).
#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum SortKey {
    Number(i64),
    Unsigned(u64),
    Float(F64),
    Symbol(Arc<str>),
    Ipv4(u32),
    Ipv6(u128),
    Prefix4(u32, u8),
    Prefix6(u128, u8),
    Mac(u64),
}

impl SortKey {
    fn of(v: &Value) -> SortKey {
        match *v {
            Value::Number(n) => SortKey::Number(n),
            Value::Unsigned(n) => SortKey::Unsigned(n),
            Value::Float(f) => SortKey::Float(f),
            Value::Symbol(s) => SortKey::Symbol(s.as_str()),
            Value::Ipv4(a) => SortKey::Ipv4(a),
            Value::Ipv6(a) => SortKey::Ipv6(a),
            Value::Prefix4(a, l) => SortKey::Prefix4(a, l),
            Value::Prefix6(a, l) => SortKey::Prefix6(a, l),
            Value::Mac(m) => SortKey::Mac(m),
        }
    }
}

/// Sorts items by a row in `Value`'s semantic order (symbols by text),
/// resolving each symbol once rather than once per comparison.
pub fn sort_by_row<X>(items: &mut [X], row: impl Fn(&X) -> &[Value]) {
    let has_symbols = items
        .iter()
        .any(|x| row(x).iter().any(|v| matches!(v, Value::Symbol(_))));
    if has_symbols {
        items.sort_by_cached_key(|x| row(x).iter().map(SortKey::of).collect::<Vec<_>>());
    } else {
        items.sort_by(|a, b| row(a).cmp(row(b)));
    }
}

/// Sorts rows in `Value`'s semantic order.
pub fn sort_rows(rows: &mut [Row]) {
    sort_by_row(rows, |r| r.as_slice());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_kinds() -> Tuple {
        Tuple(vec![
            Value::Number(-5),
            Value::Unsigned(u64::MAX),
            Value::Float(F64(-0.5)),
            Value::sym("tuple-test"),
            Value::Ipv4(0x0a000001),
            Value::Ipv6(u128::MAX - 3),
            Value::Prefix4(0x0a000000, 8),
            Value::Prefix6(1 << 100, 28),
            Value::Mac(0xdeadbeef0001),
        ])
    }

    #[test]
    fn serde_round_trip() {
        let t = all_kinds();
        let text = serde_json::to_string(&t).unwrap();
        let back: Tuple = serde_json::from_str(&text).unwrap();
        assert_eq!(back, t);
    }

    #[test]
    fn fast_order_is_consistent_with_eq() {
        let t = all_kinds();
        assert_eq!(t.cmp(&t.clone()), Ordering::Equal);
        let mut u = t.clone();
        u.0[2] = Value::Float(F64(0.5));
        assert_ne!(t.cmp(&u), Ordering::Equal);
        assert!(Tuple(vec![]) < Tuple(vec![Value::Number(0)]));
    }

    #[test]
    fn semantic_sort_orders_symbols_by_text() {
        let mut rows = vec![
            vec![Value::sym("zz-sort")],
            vec![Value::sym("aa-sort")],
            vec![Value::Number(3)],
        ];
        sort_rows(&mut rows);
        assert_eq!(
            rows,
            vec![
                vec![Value::Number(3)],
                vec![Value::sym("aa-sort")],
                vec![Value::sym("zz-sort")]
            ]
        );
    }
}
