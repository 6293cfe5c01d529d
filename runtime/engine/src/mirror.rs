//! [`RowSet`]: one relation's rows as the driver keeps them, so that
//! [`super::Engine::contents`], `len` and `contains` never ask the dataflow.
//!
//! Expects: the relation's column types from the plan; rows of those types
//! (the engine checks user rows before they reach here).
//! Guarantees:
//! - set semantics: [`RowSet::insert`] / [`RowSet::remove`] say whether the
//!   set changed; [`RowSet::apply`] applies a batch of `±1` changes and names
//!   the first one that does not fit a set (an insert of a present row, a
//!   removal of an absent one), leaving the set unspecified after it (the
//!   engine is poisoned then anyway);
//! - a relation whose every column has exactly one *narrow* primitive type
//!   (not IPv6, not a union) is *packed*: each row is `arity` `u64` words
//!   (the value's bits; the column type says how to read them back) in one
//!   sorted vector, plus two hash sets of the rows inserted and removed
//!   since the vector was last rebuilt. That is 8 bytes per value and
//!   nothing per row, against ~3× that for a hash set of tuples — the
//!   mirror holds every row of every relation, tens of millions at 100k
//!   VMs. Any other relation is a hash set of tuples;
//! - cost: a batch larger than an eighth of the set rebuilds the vector by
//!   one sort and merge; a smaller one (a warm commit) costs a binary search
//!   and a hash-set update per row; the sets are folded into the vector when
//!   they outgrow a quarter of it.

use super::tuple::{FxHashSet, Tuple};
use netc_compiler::plan::Relation;
use netc_compiler::types::Prim;
use netc_compiler::value::{Row, Sym, Value, F64};
use std::cmp::Ordering;

/// The rows of one relation. See the module docs.
#[derive(Clone, Debug)]
pub(super) enum RowSet {
    Packed(Packed),
    Tuples(FxHashSet<Tuple>),
}

impl RowSet {
    /// The representation the relation's column types allow.
    pub fn for_relation(rel: &Relation) -> RowSet {
        let prims: Option<Vec<Prim>> = rel
            .columns
            .iter()
            .map(|c| match c.prims.as_slice() {
                [p] if !matches!(p, Prim::Ipv6 | Prim::Prefix6) => Some(*p),
                _ => None,
            })
            .collect();
        match prims {
            Some(prims) if !prims.is_empty() => RowSet::Packed(Packed::new(prims)),
            _ => RowSet::Tuples(FxHashSet::default()),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            RowSet::Packed(p) => p.len(),
            RowSet::Tuples(s) => s.len(),
        }
    }

    pub fn contains(&self, t: &Tuple) -> bool {
        match self {
            RowSet::Packed(p) => p.encode(t).is_some_and(|w| p.contains(&w)),
            RowSet::Tuples(s) => s.contains(t),
        }
    }

    /// Adds a row; `false` if it was present.
    pub fn insert(&mut self, t: &Tuple) -> bool {
        match self {
            RowSet::Packed(p) => match p.encode(t) {
                Some(w) => p.insert(w),
                None => false,
            },
            RowSet::Tuples(s) => s.insert(t.clone()),
        }
    }

    /// Removes a row; `false` if it was absent.
    pub fn remove(&mut self, t: &Tuple) -> bool {
        match self {
            RowSet::Packed(p) => p.encode(t).is_some_and(|w| p.remove(&w)),
            RowSet::Tuples(s) => s.remove(t),
        }
    }

    /// Applies `changes` (`+1` adds an absent row, `-1` removes a present
    /// one). `Err(i)`: change `i` does not fit a set.
    pub fn apply(&mut self, changes: &[(&Tuple, isize)]) -> Result<(), usize> {
        match self {
            RowSet::Packed(p) if changes.len() * 8 > p.len() => p.merge(changes),
            _ => {
                for (i, (t, d)) in changes.iter().enumerate() {
                    let ok = match d {
                        1 => self.insert(t),
                        -1 => self.remove(t),
                        _ => false,
                    };
                    if !ok {
                        return Err(i);
                    }
                }
                Ok(())
            }
        }
    }

    /// Every row, in no particular order.
    pub fn rows(&self) -> Vec<Row> {
        match self {
            RowSet::Packed(p) => p.rows(),
            RowSet::Tuples(s) => s.iter().map(Tuple::to_row).collect(),
        }
    }
}

/// Rows as words: `main` (sorted, `arity` words per row) minus `removed`
/// plus `added` (disjoint from `main`).
#[derive(Clone, Debug)]
pub(super) struct Packed {
    prims: Vec<Prim>,
    main: Vec<u64>,
    added: FxHashSet<Box<[u64]>>,
    /// Rows of `main` no longer in the set.
    removed: FxHashSet<Box<[u64]>>,
}

impl Packed {
    fn new(prims: Vec<Prim>) -> Packed {
        Packed {
            prims,
            main: Vec::new(),
            added: FxHashSet::default(),
            removed: FxHashSet::default(),
        }
    }

    fn arity(&self) -> usize {
        self.prims.len()
    }

    fn main_rows(&self) -> usize {
        self.main.len() / self.arity()
    }

    fn len(&self) -> usize {
        self.main_rows() - self.removed.len() + self.added.len()
    }

    fn row(&self, i: usize) -> &[u64] {
        let a = self.arity();
        &self.main[i * a..(i + 1) * a]
    }

    fn in_main(&self, w: &[u64]) -> bool {
        let (mut lo, mut hi) = (0, self.main_rows());
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.row(mid).cmp(w) {
                Ordering::Less => lo = mid + 1,
                Ordering::Greater => hi = mid,
                Ordering::Equal => return true,
            }
        }
        false
    }

    fn contains(&self, w: &[u64]) -> bool {
        self.added.contains(w) || (self.in_main(w) && !self.removed.contains(w))
    }

    fn insert(&mut self, w: Box<[u64]>) -> bool {
        if self.added.contains(&w) {
            return false;
        }
        if self.in_main(&w) {
            // present unless removed since the rebuild: then it comes back
            return self.removed.remove(&w);
        }
        self.added.insert(w);
        self.fold_if_large();
        true
    }

    fn remove(&mut self, w: &[u64]) -> bool {
        if self.added.remove(w) {
            return true;
        }
        if !self.in_main(w) || self.removed.contains(w) {
            return false;
        }
        self.removed.insert(w.into());
        self.fold_if_large();
        true
    }

    /// Folds the sets into `main` once they outgrow a quarter of it, so
    /// lookups stay one binary search and the sets stay small.
    fn fold_if_large(&mut self) {
        if (self.added.len() + self.removed.len()) * 4 > self.main_rows().max(4096) {
            self.main = self.current();
        }
    }

    /// Rebuilds `main` as the current rows with `changes` applied in order.
    fn merge(&mut self, changes: &[(&Tuple, isize)]) -> Result<(), usize> {
        let a = self.arity();
        // Every change's words in one flat vector (no allocation per row:
        // a first commit merges millions), and the changes' indices sorted
        // by row, then by order.
        let mut words: Vec<u64> = Vec::with_capacity(changes.len() * a);
        for (i, (t, d)) in changes.iter().enumerate() {
            if t.len() != a || d.abs() != 1 {
                return Err(i);
            }
            for (k, p) in self.prims.iter().enumerate() {
                match t.get(k).and_then(|v| encode(*p, v)) {
                    Some(w) => words.push(w),
                    None => return Err(i),
                }
            }
        }
        let row = |i: usize| &words[i * a..(i + 1) * a];
        let mut batch: Vec<usize> = (0..changes.len()).collect();
        batch.sort_unstable_by(|&x, &y| row(x).cmp(row(y)).then(x.cmp(&y)));
        let current = self.current();
        let mut main = Vec::with_capacity(current.len() + batch.len() * a);
        let mut at = 0; // next row of `current`
        let mut g = 0; // first change of the next row of the batch
        while g < batch.len() {
            let w = row(batch[g]);
            while at < current.len() && &current[at..at + a] < w {
                main.extend_from_slice(&current[at..at + a]);
                at += a;
            }
            let mut present = at < current.len() && &current[at..at + a] == w;
            if present {
                at += a;
            }
            while g < batch.len() && row(batch[g]) == w {
                let idx = batch[g];
                present = match changes[idx].1 {
                    1 if !present => true,
                    -1 if present => false,
                    _ => return Err(idx),
                };
                g += 1;
            }
            if present {
                main.extend_from_slice(w);
            }
        }
        main.extend_from_slice(&current[at..]);
        self.main = main;
        Ok(())
    }

    /// The rows of the set as one sorted vector (`main` without the removed
    /// rows, merged with the added ones); empties the two sets.
    fn current(&mut self) -> Vec<u64> {
        let a = self.arity();
        let removed = std::mem::take(&mut self.removed);
        let mut added: Vec<Box<[u64]>> = std::mem::take(&mut self.added).into_iter().collect();
        let old = std::mem::take(&mut self.main);
        if added.is_empty() && removed.is_empty() {
            return old;
        }
        added.sort_unstable();
        let mut out = Vec::with_capacity(old.len() + added.len() * a);
        let mut next_added = added.iter().peekable();
        for row in old.chunks_exact(a) {
            while let Some(n) = next_added.next_if(|n| &n[..] < row) {
                out.extend_from_slice(n);
            }
            if !removed.contains(row) {
                out.extend_from_slice(row);
            }
        }
        for n in next_added {
            out.extend_from_slice(n);
        }
        out
    }

    /// The words of a tuple of this relation's types (`None`: a value of
    /// another type, which a checked row never has).
    fn encode(&self, t: &Tuple) -> Option<Box<[u64]>> {
        if t.len() != self.arity() {
            return None;
        }
        self.prims
            .iter()
            .enumerate()
            .map(|(i, p)| encode(*p, t.get(i)?))
            .collect()
    }

    fn decode(&self, w: &[u64]) -> Row {
        self.prims
            .iter()
            .zip(w)
            .map(|(p, w)| decode(*p, *w))
            .collect()
    }

    fn rows(&self) -> Vec<Row> {
        let mut out = Vec::with_capacity(self.len());
        for i in 0..self.main_rows() {
            let w = self.row(i);
            if !self.removed.contains(w) {
                out.push(self.decode(w));
            }
        }
        out.extend(self.added.iter().map(|w| self.decode(w)));
        out
    }
}

/// A value's bits, if it has the column's type.
fn encode(p: Prim, v: Value) -> Option<u64> {
    Some(match (p, v) {
        (Prim::Number, Value::Number(n)) => n as u64,
        (Prim::Unsigned, Value::Unsigned(n)) => n,
        (Prim::Float, Value::Float(F64(f))) => f.to_bits(),
        (Prim::Symbol, Value::Symbol(Sym(id))) => u64::from(id),
        (Prim::Ipv4, Value::Ipv4(a)) => u64::from(a),
        (Prim::Prefix4, Value::Prefix4(a, l)) => (u64::from(a) << 8) | u64::from(l),
        (Prim::Mac, Value::Mac(m)) => m,
        _ => return None,
    })
}

/// The value of a column of type `p` with bits `w` (the inverse of [`encode`]).
fn decode(p: Prim, w: u64) -> Value {
    match p {
        Prim::Number => Value::Number(w as i64),
        Prim::Unsigned => Value::Unsigned(w),
        Prim::Float => Value::Float(F64(f64::from_bits(w))),
        Prim::Symbol => Value::Symbol(Sym(w as u32)),
        Prim::Ipv4 => Value::Ipv4(w as u32),
        Prim::Prefix4 => Value::Prefix4((w >> 8) as u32, w as u8),
        Prim::Mac => Value::Mac(w),
        Prim::Ipv6 | Prim::Prefix6 => unreachable!("wide columns are never packed"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use netc_compiler::plan::Column;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    fn relation(prims: &[Prim]) -> Relation {
        Relation {
            name: "r".into(),
            columns: prims
                .iter()
                .enumerate()
                .map(|(i, p)| Column {
                    name: format!("c{i}"),
                    type_name: format!("{p:?}"),
                    prims: vec![*p],
                })
                .collect(),
            location: None,
            inputs: vec![],
            outputs: vec![],
            printsize: false,
            span: netc_compiler::source::Span::new(netc_compiler::source::FileId(0), 0, 0),
        }
    }

    fn tuple(a: u8, b: u8) -> Tuple {
        Tuple::from_values(&[
            Value::Number(i64::from(a) - 100),
            Value::Symbol(Sym::new(&format!("s{b}"))),
            Value::Prefix4(u32::from(a) << 24, b % 33),
            Value::Mac(u64::from(b)),
            Value::Float(F64(f64::from(a) / 3.0)),
        ])
    }

    #[test]
    fn narrow_columns_are_packed_and_wide_or_union_ones_are_not() {
        assert!(matches!(
            RowSet::for_relation(&relation(&[Prim::Symbol, Prim::Ipv4])),
            RowSet::Packed(_)
        ));
        assert!(matches!(
            RowSet::for_relation(&relation(&[Prim::Symbol, Prim::Ipv6])),
            RowSet::Tuples(_)
        ));
        let mut union = relation(&[Prim::Number]);
        union.columns[0].prims.push(Prim::Symbol);
        assert!(matches!(RowSet::for_relation(&union), RowSet::Tuples(_)));
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]
        /// Any sequence of batches (small ones take the hash-set path, large
        /// ones the merge) gives the same set and the same verdicts as a
        /// plain set of tuples.
        #[test]
        fn packed_rows_behave_as_a_set_of_tuples(
            batches in prop::collection::vec(
                prop::collection::vec((0u8..40, 0u8..6, any::<bool>()), 0..120),
                1..12,
            ),
            single in any::<bool>(),
        ) {
            let prims = [Prim::Number, Prim::Symbol, Prim::Prefix4, Prim::Mac, Prim::Float];
            let mut set = RowSet::for_relation(&relation(&prims));
            prop_assert!(matches!(set, RowSet::Packed(_)));
            let mut model: BTreeSet<Tuple> = BTreeSet::new();
            for batch in batches {
                let tuples: Vec<(Tuple, isize)> = batch
                    .iter()
                    .map(|&(a, b, ins)| (tuple(a, b), if ins { 1 } else { -1 }))
                    .collect();
                if single {
                    for (t, d) in &tuples {
                        let (got, want) = if *d > 0 {
                            (set.insert(t), model.insert(t.clone()))
                        } else {
                            (set.remove(t), model.remove(t))
                        };
                        prop_assert_eq!(got, want);
                    }
                } else {
                    // a batch that fits a set in order: drop changes that
                    // would not (the engine never sends them)
                    let mut fit = Vec::new();
                    for (t, d) in &tuples {
                        let ok = if *d > 0 { model.insert(t.clone()) } else { model.remove(t) };
                        if ok {
                            fit.push((t, *d));
                        }
                    }
                    prop_assert_eq!(set.apply(&fit), Ok(()));
                }
                prop_assert_eq!(set.len(), model.len());
                let mut rows = set.rows();
                rows.sort();
                let mut want: Vec<Row> = model.iter().map(Tuple::to_row).collect();
                want.sort();
                prop_assert_eq!(rows, want);
                for a in 0..40 {
                    let t = tuple(a, a % 6);
                    prop_assert_eq!(set.contains(&t), model.contains(&t));
                }
            }
        }
    }

    #[test]
    fn a_change_that_does_not_fit_a_set_is_named() {
        let rel = relation(&[
            Prim::Number,
            Prim::Symbol,
            Prim::Prefix4,
            Prim::Mac,
            Prim::Float,
        ]);
        let mut set = RowSet::for_relation(&rel);
        let (x, y) = (tuple(1, 1), tuple(2, 2));
        assert_eq!(set.apply(&[(&x, 1), (&y, 1)]), Ok(()));
        // merge path (batch > an eighth of the set): inserting a present row
        assert_eq!(set.apply(&[(&y, -1), (&x, 1)]), Err(1));
        let mut set = RowSet::for_relation(&rel);
        assert_eq!(set.apply(&[(&x, -1)]), Err(0));
        assert_eq!(set.apply(&[(&x, 1), (&x, -1), (&x, -1)]), Err(2));
    }
}
