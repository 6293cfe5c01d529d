//! Arrangements and the per-scope environment that shares them.
//!
//! Expects: relation collections that are *sets* (every relation collection
//! put in an [`Env`] is a distinct output, a driver-deduplicated input, or
//! one of those entered into a loop).
//! Guarantees:
//! - ARRANGEMENT SHARING: within one scope, every use of relation `r` keyed
//!   by columns `k` gets the same arrangement ([`Env::arrangement`], cache
//!   keyed by `(r, k)`); likewise the distinct key sets used by negation
//!   ([`Env::keyset`]). [`Counters::arrangements`] counts the ones built.
//! - An arrangement built in the outer scope and entered into a loop
//!   ([`Arr::Entered`]) shares the outer trace; joins accept either kind.

use super::tuple::Tuple;
use differential_dataflow::lattice::Lattice;
use differential_dataflow::operators::arrange::{Arranged, TraceAgent};
use differential_dataflow::operators::ThresholdTotal;
use differential_dataflow::trace::implementations::{KeyBuilder, KeySpine, ValSpine};
use differential_dataflow::trace::wrappers::enter::TraceEnter;
use differential_dataflow::VecCollection;
use netc_compiler::plan::RelId;
use std::cell::Cell;
use std::collections::HashMap;
use std::rc::Rc;
use timely::dataflow::Scope;
use timely::order::Product;
use timely::progress::timestamp::Refines;
use timely::progress::Timestamp;

/// A collection of rows with multiplicities.
pub type Coll<'s, T> = VecCollection<'s, T, Tuple, isize>;
/// Rows keyed for a join: `(key, row)`.
pub type Keyed<'s, T> = VecCollection<'s, T, (Tuple, Tuple), isize>;
/// A trace of `(key, tuple)` pairs.
pub type ValTrace<T> = TraceAgent<ValSpine<Tuple, Tuple, T, isize>>;
/// A trace of keys.
pub type KeyTrace<T> = TraceAgent<KeySpine<Tuple, T, isize>>;
/// The timestamp inside a recursive stratum: (epoch, iteration).
pub type Inner = Product<u64, u32>;

/// Timestamps the renderer works with: the epoch (`u64`) and [`Inner`].
pub trait Time: Timestamp + Lattice + Refines<u64> {
    /// `distinct` of a collection nothing joins on as an arrangement (an
    /// aggregate's group keys). Why per time: at the epoch's total order it
    /// is [`distinct_total`] (an arrangement of the input and one operator,
    /// no output trace); in a loop's partial order, `distinct` itself.
    fn distinct_keys<'s>(c: Coll<'s, Self>) -> Coll<'s, Self>;
}

impl Time for u64 {
    fn distinct_keys<'s>(c: Coll<'s, u64>) -> Coll<'s, u64> {
        distinct_total(c, "Aggregate keys")
    }
}

impl Time for Inner {
    fn distinct_keys<'s>(c: Coll<'s, Inner>) -> Coll<'s, Inner> {
        c.distinct()
    }
}

/// Per-worker counters shared by the operators of one dataflow.
#[derive(Default, Debug)]
pub struct Counters {
    /// Arrangements (and key sets) built while rendering.
    pub arrangements: Cell<usize>,
    /// Rows handled by interpreted closures (scans, joins, filters, heads...).
    pub records: Cell<u64>,
}

impl Counters {
    #[inline]
    pub fn tick(&self) {
        self.records.set(self.records.get() + 1);
    }
}

/// A relation arranged by some of its columns: key = those columns, value =
/// the whole tuple.
pub enum Arr<'s, T: Time> {
    Own(Arranged<'s, ValTrace<T>>),
    Entered(Arranged<'s, TraceEnter<ValTrace<u64>, T>>),
}

/// A distinct set of keys (for negation).
pub enum KeyArr<'s, T: Time> {
    Own(Arranged<'s, KeyTrace<T>>),
    Entered(Arranged<'s, TraceEnter<KeyTrace<u64>, T>>),
}

impl<'s, T: Time> Clone for Arr<'s, T> {
    fn clone(&self) -> Self {
        match self {
            Arr::Own(a) => Arr::Own(a.clone()),
            Arr::Entered(a) => Arr::Entered(a.clone()),
        }
    }
}

impl<'s, T: Time> Clone for KeyArr<'s, T> {
    fn clone(&self) -> Self {
        match self {
            KeyArr::Own(a) => KeyArr::Own(a.clone()),
            KeyArr::Entered(a) => KeyArr::Entered(a.clone()),
        }
    }
}

impl<'s> Arr<'s, u64> {
    /// Brings an outer arrangement into a loop, sharing its trace.
    pub fn enter<'i>(&self, inner: Scope<'i, Inner>) -> Option<Arr<'i, Inner>> {
        match self {
            Arr::Own(a) => Some(Arr::Entered(a.clone().enter(inner))),
            Arr::Entered(_) => None,
        }
    }
}

impl<'s> KeyArr<'s, u64> {
    /// Brings an outer key set into a loop, sharing its trace.
    pub fn enter<'i>(&self, inner: Scope<'i, Inner>) -> Option<KeyArr<'i, Inner>> {
        match self {
            KeyArr::Own(a) => Some(KeyArr::Entered(a.clone().enter(inner))),
            KeyArr::Entered(_) => None,
        }
    }
}

/// Joins keyed rows with an arrangement; `logic(row, tuple)` gives a row
/// (or, fused with the next join's key, a keyed row: `D`).
pub fn join<'s, T: Time, L, D>(
    left: Keyed<'s, T>,
    right: &Arr<'s, T>,
    mut logic: L,
) -> VecCollection<'s, T, D, isize>
where
    L: FnMut(&Tuple, &Tuple) -> Option<D> + 'static,
    D: differential_dataflow::Data,
{
    match right {
        Arr::Own(r) => left.join_core(r.clone(), move |_k, l, t| logic(l, t)),
        Arr::Entered(r) => left.join_core(r.clone(), move |_k, l, t| logic(l, t)),
    }
}

/// Joins two arrangements on their keys; `logic(left tuple, right tuple)`.
/// Neither side is re-arranged: this is how a body that starts with a plain
/// scan shares the scanned relation's arrangement. `D` as in [`join`].
pub fn join_arrs<'s, T: Time, L, D>(
    left: &Arr<'s, T>,
    right: &Arr<'s, T>,
    mut logic: L,
) -> VecCollection<'s, T, D, isize>
where
    L: FnMut(&Tuple, &Tuple) -> Option<D> + 'static,
    D: differential_dataflow::Data,
{
    match (left, right) {
        (Arr::Own(l), Arr::Own(r)) => l.clone().join_core(r.clone(), move |_k, a, b| logic(a, b)),
        (Arr::Own(l), Arr::Entered(r)) => {
            l.clone().join_core(r.clone(), move |_k, a, b| logic(a, b))
        }
        (Arr::Entered(l), Arr::Own(r)) => {
            l.clone().join_core(r.clone(), move |_k, a, b| logic(a, b))
        }
        (Arr::Entered(l), Arr::Entered(r)) => {
            l.clone().join_core(r.clone(), move |_k, a, b| logic(a, b))
        }
    }
}

/// The keyed rows whose key is in the key set, as rows (multiplicity kept).
pub fn semijoin<'s, T: Time>(left: Keyed<'s, T>, keys: &KeyArr<'s, T>) -> Coll<'s, T> {
    match keys {
        KeyArr::Own(k) => left.join_core(k.clone(), |_k, row, _| Some(row.clone())),
        KeyArr::Entered(k) => left.join_core(k.clone(), |_k, row, _| Some(row.clone())),
    }
}

/// Distinct over a collection, returning the arrangement of the result
/// (usable directly as a key set).
pub fn distinct_arranged<'s, T: Time>(c: Coll<'s, T>, name: &str) -> Arranged<'s, KeyTrace<T>> {
    c.arrange_by_self_named(&format!("Arrange: {name}"))
        .reduce_abelian::<_, KeyBuilder<Tuple, T, isize>, KeySpine<Tuple, T, isize>, _, _>(
            name,
            |_k, _input, out| out.push(((), 1)),
            |vec, key, upds| {
                vec.clear();
                vec.extend(upds.drain(..).map(|(v, t, r)| ((key.clone(), v), t, r)));
            },
        )
}

/// Distinct over a collection whose time is totally ordered (a flat
/// stratum's runs): the input arranged once, and the changes of the set
/// computed from it batch by batch (`distinct_total`). Unlike
/// [`distinct_arranged`] it keeps no output trace — a second copy of every
/// row that only the capture read (a flat stratum's rules never read its
/// own relations, so nothing there joins on the output).
pub fn distinct_total<'s>(c: Coll<'s, u64>, name: &str) -> Coll<'s, u64> {
    c.arrange_by_self_named(&format!("Arrange: {name}"))
        .distinct_total()
}

/// The rows of a key-set arrangement as a collection.
pub fn keys_collection<'s, T: Time>(a: &Arranged<'s, KeyTrace<T>>) -> Coll<'s, T> {
    a.clone().as_collection(|k, _| k.clone())
}

/// What one scope knows: relation collections and shared arrangements.
pub struct Env<'s, T: Time> {
    pub scope: Scope<'s, T>,
    /// The collection of each relation available in this scope.
    pub rels: Vec<Option<Coll<'s, T>>>,
    pub names: Rc<[String]>,
    pub arities: Rc<[usize]>,
    /// The single empty row (`Source::Unit`).
    pub unit: Coll<'s, T>,
    pub counters: Rc<Counters>,
    arrs: HashMap<(RelId, Vec<usize>), Arr<'s, T>>,
    keysets: HashMap<(RelId, Vec<usize>), KeyArr<'s, T>>,
}

impl<'s, T: Time> Env<'s, T> {
    pub fn new(
        scope: Scope<'s, T>,
        unit: Coll<'s, T>,
        names: Rc<[String]>,
        arities: Rc<[usize]>,
        counters: Rc<Counters>,
    ) -> Self {
        let n = names.len();
        Env {
            scope,
            rels: vec![None; n],
            names,
            arities,
            unit,
            counters,
            arrs: HashMap::new(),
            keysets: HashMap::new(),
        }
    }

    /// The collection of a relation (an internal error if it is missing).
    pub fn coll(&self, rel: RelId) -> Result<Coll<'s, T>, String> {
        self.rels
            .get(rel)
            .and_then(|c| c.clone())
            .ok_or_else(|| format!("relation {rel} is not available in this scope"))
    }

    /// Relation `rel` arranged by columns `key`, built once per scope.
    pub fn arrangement(&mut self, rel: RelId, key: &[usize]) -> Result<Arr<'s, T>, String> {
        if let Some(a) = self.arrs.get(&(rel, key.to_vec())) {
            return Ok(a.clone());
        }
        let k = key.to_vec();
        let name = format!("Arrange {}{:?}", self.names[rel], key);
        let a = Arr::Own(
            self.coll(rel)?
                .map(move |t| (t.project(&k), t))
                .arrange_by_key_named(&name),
        );
        self.counters
            .arrangements
            .set(self.counters.arrangements.get() + 1);
        self.arrs.insert((rel, key.to_vec()), a.clone());
        Ok(a)
    }

    /// The distinct projections of relation `rel` on `cols`, built once per scope.
    pub fn keyset(&mut self, rel: RelId, cols: &[usize]) -> Result<KeyArr<'s, T>, String> {
        if let Some(a) = self.keysets.get(&(rel, cols.to_vec())) {
            return Ok(a.clone());
        }
        let coll = self.coll(rel)?;
        let identity =
            cols.len() == self.arities[rel] && cols.iter().enumerate().all(|(i, &c)| i == c);
        let name = format!("Keys {}{:?}", self.names[rel], cols);
        let a = if identity {
            // The relation is a set already.
            KeyArr::Own(coll.arrange_by_self_named(&name))
        } else {
            let c = cols.to_vec();
            KeyArr::Own(distinct_arranged(coll.map(move |t| t.project(&c)), &name))
        };
        self.counters
            .arrangements
            .set(self.counters.arrangements.get() + 1);
        self.keysets.insert((rel, cols.to_vec()), a.clone());
        Ok(a)
    }

    /// Registers an arrangement made elsewhere (entered, or a by-product).
    pub fn put_arrangement(&mut self, rel: RelId, key: Vec<usize>, a: Arr<'s, T>) {
        self.arrs.insert((rel, key), a);
    }

    /// Registers a key set made elsewhere (entered, or a distinct's output).
    pub fn put_keyset(&mut self, rel: RelId, cols: Vec<usize>, a: KeyArr<'s, T>) {
        self.keysets.insert((rel, cols), a);
    }
}
