//! [`Tuple`]: the compact row type that flows through the dataflow.
//!
//! Expects: nothing beyond `netc_compiler::value`.
//! Guarantees:
//! - A tuple holds the same values as a [`Row`] ([`Tuple::from_values`] /
//!   [`Tuple::to_row`] round-trip exactly).
//! - Rows of up to [`INLINE`] values that are all *narrow* (everything but
//!   IPv6 addresses and prefixes) are stored inline as one tag byte and one
//!   `u64` per value: no heap allocation, cheap copies, compares and hashes.
//!   Longer rows of narrow values are *packed*: one shared heap allocation
//!   of `9 × len` bytes (the tags, then the values' little-endian words) —
//!   a third of a boxed `[Value]` (32 bytes per value). It is an `Arc`, so a
//!   clone is a reference count, not a copy: a row travels from its
//!   stratum's distinct into the capture, into the arrangements of every
//!   stratum that reads it and through every batch merge, and all of them
//!   hold the one allocation (the bytes never change after packing).
//!   Only rows with a wide value are a boxed `[Value]`. The choice is
//!   canonical (inline iff it can be, else packed iff it can be), so the
//!   derived-style `Eq`/`Hash` are exact.
//! - `Ord` is a *fast internal* total order consistent with `Eq` (raw tags
//!   and bits; symbols by interner id). Arrangements sort by it millions of
//!   times, so it never takes the interner lock. It is NOT the user-visible
//!   order: anything shown to users is sorted with [`sort_rows`] /
//!   [`sort_by_row`], which follow `Value`'s semantic order.
//! - It implements serde `Serialize`/`Deserialize` because timely's
//!   `ExchangeData` requires them. The encoding stores symbol *ids*, so it is
//!   only meaningful inside one process (which is how the engine runs:
//!   `Config::process`, whose channels move typed data, never bytes).

use netc_compiler::value::{Row, Sym, Value, F64};
use serde::de::{Error as _, SeqAccess, Visitor};
use serde::ser::SerializeSeq;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// Most values an inline tuple holds.
pub const INLINE: usize = 4;

/// A row inside the dataflow. See the module docs.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Tuple(Repr);

#[derive(Clone, PartialEq, Eq, Hash)]
enum Repr {
    /// Unused tags and words are zero.
    Inline {
        len: u8,
        tags: [u8; INLINE],
        words: [u64; INLINE],
    },
    /// More than [`INLINE`] narrow values: `len` tag bytes, then `len`
    /// little-endian `u64` words.
    Packed(Arc<[u8]>),
    /// Rows holding a wide value (IPv6 address or prefix).
    Heap(Box<[Value]>),
}

/// The packed bytes of narrow values given as tags and words.
fn pack(tags: &[u8], words: &[u64]) -> Arc<[u8]> {
    let mut b = Vec::with_capacity(tags.len() * 9);
    b.extend_from_slice(tags);
    for w in words {
        b.extend_from_slice(&w.to_le_bytes());
    }
    Arc::from(b)
}

/// Value `i` of packed bytes, if in range.
#[inline]
fn packed_get(b: &[u8], i: usize) -> Option<Value> {
    let n = b.len() / 9;
    if i >= n {
        return None;
    }
    let at = n + 8 * i;
    let w = u64::from_le_bytes(b[at..at + 8].try_into().ok()?);
    Some(decode(b[i], w))
}

/// The inline encoding of a narrow value, or `None` for a wide one.
#[inline]
fn encode(v: &Value) -> Option<(u8, u64)> {
    Some(match *v {
        Value::Number(n) => (1, n as u64),
        Value::Unsigned(n) => (2, n),
        Value::Float(F64(f)) => (3, f.to_bits()),
        Value::Symbol(Sym(id)) => (4, id as u64),
        Value::Ipv4(a) => (5, a as u64),
        Value::Prefix4(a, l) => (6, ((a as u64) << 8) | l as u64),
        Value::Mac(m) => (7, m),
        Value::Ipv6(_) | Value::Prefix6(..) => return None,
    })
}

#[inline]
fn decode(tag: u8, w: u64) -> Value {
    match tag {
        1 => Value::Number(w as i64),
        2 => Value::Unsigned(w),
        3 => Value::Float(F64(f64::from_bits(w))),
        4 => Value::Symbol(Sym(w as u32)),
        5 => Value::Ipv4(w as u32),
        6 => Value::Prefix4((w >> 8) as u32, w as u8),
        _ => Value::Mac(w),
    }
}

/// Builds a tuple value by value, staying inline while it can, then
/// packed while every value is narrow.
pub struct Builder {
    len: u8,
    tags: [u8; INLINE],
    words: [u64; INLINE],
    /// Narrow values past the first [`INLINE`] (all of them once spilled).
    spill: Option<(Vec<u8>, Vec<u64>)>,
    heap: Option<Vec<Value>>,
}

impl Builder {
    #[inline]
    pub fn new() -> Builder {
        Builder {
            len: 0,
            tags: [0; INLINE],
            words: [0; INLINE],
            spill: None,
            heap: None,
        }
    }

    #[inline]
    pub fn push(&mut self, v: Value) {
        if let Some(h) = &mut self.heap {
            h.push(v);
            return;
        }
        match (encode(&v), &mut self.spill) {
            (Some((tag, w)), Some((tags, words))) => {
                tags.push(tag);
                words.push(w);
            }
            (Some((tag, w)), None) if (self.len as usize) < INLINE => {
                self.tags[self.len as usize] = tag;
                self.words[self.len as usize] = w;
                self.len += 1;
            }
            (Some((tag, w)), None) => {
                let mut tags = self.tags.to_vec();
                let mut words = self.words.to_vec();
                tags.push(tag);
                words.push(w);
                self.spill = Some((tags, words));
            }
            (None, spill) => {
                let mut h: Vec<Value> = match spill.take() {
                    Some((tags, words)) => tags
                        .iter()
                        .zip(&words)
                        .map(|(&t, &w)| decode(t, w))
                        .collect(),
                    None => (0..self.len as usize)
                        .map(|i| decode(self.tags[i], self.words[i]))
                        .collect(),
                };
                h.push(v);
                self.heap = Some(h);
            }
        }
    }

    #[inline]
    pub fn finish(self) -> Tuple {
        match (self.heap, self.spill) {
            (Some(h), _) => Tuple(Repr::Heap(h.into_boxed_slice())),
            (None, Some((tags, words))) => Tuple(Repr::Packed(pack(&tags, &words))),
            (None, None) => Tuple(Repr::Inline {
                len: self.len,
                tags: self.tags,
                words: self.words,
            }),
        }
    }
}

impl Default for Builder {
    fn default() -> Self {
        Builder::new()
    }
}

impl Tuple {
    pub fn empty() -> Tuple {
        Builder::new().finish()
    }

    pub fn from_values(vs: &[Value]) -> Tuple {
        let mut b = Builder::new();
        for v in vs {
            b.push(*v);
        }
        b.finish()
    }

    /// The tuple of a row, reusing its allocation when it stays a boxed
    /// `[Value]` (the row holds a wide value).
    pub fn from_row(row: Row) -> Tuple {
        if row.iter().any(|v| encode(v).is_none()) {
            Tuple(Repr::Heap(row.into_boxed_slice()))
        } else {
            Tuple::from_values(&row)
        }
    }

    pub fn to_row(&self) -> Row {
        self.iter().collect()
    }

    #[inline]
    pub fn len(&self) -> usize {
        match &self.0 {
            Repr::Inline { len, .. } => *len as usize,
            Repr::Packed(b) => b.len() / 9,
            Repr::Heap(vs) => vs.len(),
        }
    }

    /// The value at `i`, if in range.
    #[inline]
    pub fn get(&self, i: usize) -> Option<Value> {
        match &self.0 {
            Repr::Inline { len, tags, words } => {
                (i < *len as usize).then(|| decode(tags[i], words[i]))
            }
            Repr::Packed(b) => packed_get(b, i),
            Repr::Heap(vs) => vs.get(i).copied(),
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = Value> + '_ {
        (0..self.len()).filter_map(move |i| self.get(i))
    }

    /// A hash of the row (FxHash of its representation), to route it to a
    /// worker: equal rows route alike.
    #[inline]
    pub fn route(&self) -> u64 {
        let mut h = FxHasher::default();
        self.hash(&mut h);
        h.finish()
    }

    /// The values at `cols`, in that order (out-of-range columns skipped).
    #[inline]
    pub fn project(&self, cols: &[usize]) -> Tuple {
        let mut b = Builder::new();
        for &c in cols {
            if let Some(v) = self.get(c) {
                b.push(v);
            }
        }
        b.finish()
    }
}

/// The internal order of two values: variant rank, then raw bits.
#[inline]
fn fast_cmp(a: &Value, b: &Value) -> Ordering {
    wire(a).cmp(&wire(b))
}

impl Ord for Tuple {
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        match (&self.0, &other.0) {
            (
                Repr::Inline {
                    len: l1,
                    tags: t1,
                    words: w1,
                },
                Repr::Inline {
                    len: l2,
                    tags: t2,
                    words: w2,
                },
            ) => {
                // Any total order will do; this one compares whole arrays.
                w1.cmp(w2).then_with(|| t1.cmp(t2)).then_with(|| l1.cmp(l2))
            }
            // Equal bytes iff equal values (the encoding is canonical).
            (Repr::Packed(a), Repr::Packed(b)) => a.cmp(b),
            (Repr::Heap(a), Repr::Heap(b)) => {
                for (x, y) in a.iter().zip(b.iter()) {
                    match fast_cmp(x, y) {
                        Ordering::Equal => {}
                        o => return o,
                    }
                }
                a.len().cmp(&b.len())
            }
            // Across representations: inline < packed < heap.
            (Repr::Inline { .. }, _) => Ordering::Less,
            (_, Repr::Inline { .. }) => Ordering::Greater,
            (Repr::Packed(_), Repr::Heap(_)) => Ordering::Less,
            (Repr::Heap(_), Repr::Packed(_)) => Ordering::Greater,
        }
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
        for (i, v) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{v}")?;
        }
        f.write_str(")")
    }
}

/// The serialized form of one value: tag, payload bits, prefix length.
fn wire(v: &Value) -> (u8, u128, u8) {
    match *v {
        Value::Ipv6(a) => (8, a, 0),
        Value::Prefix6(a, l) => (9, a, l),
        _ => encode(v).map_or((0, 0, 0), |(t, w)| (t, w as u128, 0)),
    }
}

fn unwire(tag: u8, payload: u128, len: u8) -> Option<Value> {
    match tag {
        1..=7 => Some(decode(tag, u64::try_from(payload).ok()?)),
        8 => Some(Value::Ipv6(payload)),
        9 => Some(Value::Prefix6(payload, len)),
        _ => None,
    }
}

impl Serialize for Tuple {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.len()))?;
        for v in self.iter() {
            seq.serialize_element(&wire(&v))?;
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
                let mut b = Builder::new();
                while let Some((tag, payload, len)) = seq.next_element::<(u8, u128, u8)>()? {
                    b.push(
                        unwire(tag, payload, len)
                            .ok_or_else(|| A::Error::custom("invalid value encoding"))?,
                    );
                }
                Ok(b.finish())
            }
        }
        d.deserialize_seq(V)
    }
}

pub use netc_compiler::fxhash::{FxHashMap, FxHashSet, FxHasher};

/// Sorts items by a row in `Value`'s semantic order (symbols by text).
/// Each distinct symbol's text is read once and ranked; rows then compare
/// symbols by rank (an integer), so a sort neither locks the interner nor
/// compares text per comparison. Stable, like `sort_by`.
pub fn sort_by_row<X>(items: &mut [X], row: impl Fn(&X) -> &[Value]) {
    let mut syms: Vec<u32> = items
        .iter()
        .flat_map(|x| row(x).iter())
        .filter_map(|v| match v {
            Value::Symbol(s) => Some(s.0),
            _ => None,
        })
        .collect();
    if syms.is_empty() {
        items.sort_by(|a, b| row(a).cmp(row(b)));
        return;
    }
    syms.sort_unstable();
    syms.dedup();
    let rank = Ranks::new(syms);
    items.sort_by(|a, b| cmp_ranked(row(a), row(b), &rank));
}

/// Each symbol's rank among a sort's distinct symbols, in text order.
enum Ranks {
    /// Indexed by symbol id (ids are dense: the interner numbers them
    /// from 0), when the sort's symbols are a good part of every id below
    /// the highest.
    Dense(Vec<u32>),
    /// The sort's symbol ids, ascending, and their ranks. Why: a warm
    /// commit's few changed rows may name a symbol interned late, and a
    /// dense table would then be as long as the interner (millions of ids
    /// at L: megabytes zeroed per sort).
    Sparse { ids: Vec<u32>, ranks: Vec<u32> },
}

impl Ranks {
    /// `ids`: ascending, distinct.
    fn new(ids: Vec<u32>) -> Ranks {
        let ranks = Ranks::by_text(&ids);
        let top = ids.last().map_or(0, |&m| m as usize + 1);
        if top > 8 * ids.len() + 1024 {
            Ranks::Sparse { ids, ranks }
        } else {
            Ranks::dense(&ids, &ranks)
        }
    }

    /// Each of `ids`' rank in the order of their text.
    fn by_text(ids: &[u32]) -> Vec<u32> {
        let mut by_text: Vec<(Arc<str>, usize)> = ids
            .iter()
            .enumerate()
            .map(|(i, &id)| (Sym(id).as_str(), i))
            .collect();
        by_text.sort_unstable();
        let mut ranks = vec![0u32; ids.len()];
        for (r, (_, i)) in by_text.iter().enumerate() {
            ranks[*i] = r as u32;
        }
        ranks
    }

    fn dense(ids: &[u32], ranks: &[u32]) -> Ranks {
        let mut dense = vec![0u32; ids.last().map_or(0, |&m| m as usize + 1)];
        for (&id, &r) in ids.iter().zip(ranks) {
            dense[id as usize] = r;
        }
        Ranks::Dense(dense)
    }

    fn of(&self, id: u32) -> u32 {
        match self {
            Ranks::Dense(rank) => rank[id as usize],
            Ranks::Sparse { ids, ranks } => ids.binary_search(&id).map_or(0, |i| ranks[i]),
        }
    }
}

/// `Value`'s order on rows, symbols compared by their `rank` (which orders
/// them as their text does).
fn cmp_ranked(a: &[Value], b: &[Value], rank: &Ranks) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        let o = match (x, y) {
            (Value::Symbol(s), Value::Symbol(t)) => rank.of(s.0).cmp(&rank.of(t.0)),
            _ => x.cmp(y),
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    a.len().cmp(&b.len())
}

/// Sorts rows in `Value`'s semantic order.
pub fn sort_rows(rows: &mut [Row]) {
    sort_by_row(rows, |r| r.as_slice());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn narrow() -> Vec<Value> {
        vec![
            Value::Number(-5),
            Value::Unsigned(u64::MAX),
            Value::Float(F64(-0.5)),
            Value::sym("tuple-test"),
        ]
    }

    fn all_kinds() -> Vec<Value> {
        let mut v = narrow();
        v.extend([
            Value::Ipv4(0x0a000001),
            Value::Ipv6(u128::MAX - 3),
            Value::Prefix4(0x0a000000, 8),
            Value::Prefix6(1 << 100, 28),
            Value::Mac(0xdeadbeef0001),
        ]);
        v
    }

    #[test]
    fn round_trips_inline_and_heap() {
        for vs in [
            narrow(),
            all_kinds(),
            vec![],
            vec![Value::Ipv6(7)],
            vec![Value::Prefix4(0xc0a80000, 16)],
        ] {
            let t = Tuple::from_values(&vs);
            assert_eq!(t.to_row(), vs);
            assert_eq!(Tuple::from_row(vs.clone()), t, "canonical representation");
            assert_eq!(t.len(), vs.len());
        }
    }

    #[test]
    fn long_narrow_rows_are_packed_canonically() {
        let vs: Vec<Value> = (0..9)
            .map(|i| match i % 3 {
                0 => Value::Number(-i),
                1 => Value::sym("packed-test"),
                _ => Value::Mac(0xfeed_0000 + i as u64),
            })
            .collect();
        let t = Tuple::from_values(&vs);
        assert!(matches!(t.0, Repr::Packed(_)));
        assert_eq!(t.to_row(), vs);
        assert_eq!(Tuple::from_row(vs.clone()), t);
        assert_eq!(t.get(9), None);
        // A wide value after the spill moves the whole row to the heap.
        let mut wide = vs.clone();
        wide.push(Value::Ipv6(9));
        let w = Tuple::from_values(&wide);
        assert!(matches!(w.0, Repr::Heap(_)));
        assert_eq!(w.to_row(), wide);
        assert_eq!(Tuple::from_row(wide), w);
        // Orders: a total order consistent with equality across the kinds.
        let short = Tuple::from_values(&vs[..2]);
        assert_eq!(short.cmp(&t), Ordering::Less);
        assert_eq!(t.cmp(&w), Ordering::Less);
        let mut other = vs.clone();
        other[8] = Value::Mac(1);
        assert_ne!(t.cmp(&Tuple::from_values(&other)), Ordering::Equal);
        assert_eq!(t.cmp(&Tuple::from_values(&vs)), Ordering::Equal);
    }

    #[test]
    fn projection_spills_canonically() {
        let vs: Vec<Value> = (0..7).map(Value::Number).collect();
        let t = Tuple::from_values(&vs);
        assert_eq!(t.project(&[0, 1, 2]), Tuple::from_values(&vs[..3]));
        assert_eq!(
            t.project(&[6, 0]),
            Tuple::from_values(&[Value::Number(6), Value::Number(0)])
        );
        assert_eq!(t.project(&[0, 1, 2, 3, 4, 5, 6]), t);
    }

    #[test]
    fn serde_round_trip() {
        for vs in [narrow(), all_kinds()] {
            let t = Tuple::from_values(&vs);
            let text = serde_json::to_string(&t).unwrap();
            let back: Tuple = serde_json::from_str(&text).unwrap();
            assert_eq!(back, t);
        }
    }

    #[test]
    fn fast_order_is_consistent_with_eq() {
        let t = Tuple::from_values(&narrow());
        assert_eq!(t.cmp(&t.clone()), Ordering::Equal);
        let mut vs = narrow();
        vs[2] = Value::Float(F64(0.5));
        assert_ne!(t.cmp(&Tuple::from_values(&vs)), Ordering::Equal);
        let h = Tuple::from_values(&all_kinds());
        assert_eq!(h.cmp(&h.clone()), Ordering::Equal);
        assert_ne!(h.cmp(&t), Ordering::Equal);
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

    fn value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        prop_oneof![
            (-3i64..3).prop_map(Value::Number),
            (0u32..4).prop_map(Value::Ipv4),
            // Interned in an order unrelated to their text.
            "[a-c]{0,3}".prop_map(|t| Value::sym(&format!("{}-sortprop", t))),
            "[a-c]{0,2}".prop_map(|t| Value::sym(&t)),
        ]
    }

    proptest::proptest! {
        /// Ranking symbols once sorts exactly as `Value`'s own order does
        /// (which compares symbol text on every comparison).
        #[test]
        fn ranked_sort_is_value_order(
            mut rows in proptest::collection::vec(proptest::collection::vec(value(), 0..4), 0..40)
        ) {
            let mut want = rows.clone();
            want.sort();
            sort_rows(&mut rows);
            proptest::prop_assert_eq!(rows, want);
        }

        /// Both forms of the ranks (dense by id, sparse by search) sort as
        /// `Value`'s own order, whichever `sort_rows` would pick.
        #[test]
        fn dense_and_sparse_ranks_sort_alike(
            rows in proptest::collection::vec(proptest::collection::vec(value(), 0..4), 0..40)
        ) {
            let mut want = rows.clone();
            want.sort();
            let mut ids: Vec<u32> = rows
                .iter()
                .flatten()
                .filter_map(|v| match v {
                    Value::Symbol(s) => Some(s.0),
                    _ => None,
                })
                .collect();
            ids.sort_unstable();
            ids.dedup();
            let ranks = Ranks::by_text(&ids);
            for form in [Ranks::dense(&ids, &ranks), Ranks::Sparse { ids: ids.clone(), ranks: ranks.clone() }] {
                let mut got = rows.clone();
                got.sort_by(|a, b| cmp_ranked(a, b, &form));
                proptest::prop_assert_eq!(&got, &want);
            }
        }
    }
}
