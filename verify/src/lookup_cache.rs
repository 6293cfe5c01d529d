//! A bridge's cached table lookups, carried across rebuilds lazily.
//!
//! Expects the lookups a bridge computed (`Bridge::applicable`: per table
//! and the values of the fields its flows match, the flows that may match
//! with their BDDs) and, per rebuild of the bridge, what the rebuild changed
//! ([`CacheEdit`]: tables whose matched fields changed, which lookups the
//! flows added or removed can reach, old flow position → new).
//! Guarantees: [`LookupCache::get`] returns exactly what thinning every
//! cached lookup at every rebuild would have kept (dropped if its table's
//! fields changed or a changed flow can match it, its flow positions
//! renumbered, dropped if one of its flows is gone), but a rebuild costs
//! O(1): each edit is logged and a lookup is brought through the edits it
//! missed when it is next read. A rebuilt Hoverboard's cache is one lookup
//! per destination it routed (tens of thousands at L), and one pass over
//! it per VM change was most of the update's `bridges` step. The log is
//! bounded ([`EDITS`]): when full, every lookup is brought up to date in
//! one pass and the log emptied (memory: each edit holds a flow map).

use crate::bridge::Val;
use crate::incremental::Moves;
use crate::space::Field;
use std::collections::HashMap;
use std::rc::Rc;

/// A table and the values of the fields its flows match.
pub(crate) type TableKey = (u8, Vec<Val>);

/// Edits logged before every lookup is brought up to date in one pass.
const EDITS: usize = 32;

/// One cached lookup: the flows that may match and the edits it follows.
struct Cached<A> {
    /// How many of the log's edits this lookup already follows.
    epoch: u32,
    app: Rc<Vec<A>>,
}

/// Whether a lookup of a table with these field values computes alike
/// after a rebuild.
pub(crate) type Keep = Box<dyn Fn(u8, &[(Field, Val)]) -> bool>;

/// What one rebuild of the bridge changed, as its cached lookups see it.
pub(crate) struct CacheEdit {
    /// Tables whose matched fields differ (their lookups' keys mean
    /// something else now: dropped).
    pub refields: Vec<u8>,
    /// Whether a lookup of this table with these field values computes
    /// alike after the rebuild (no flow added or removed can match it).
    pub keep: Keep,
    /// Old flow position → new (a flow it maps to `None` is gone);
    /// `None`: the positions did not move.
    pub flows: Option<Moves>,
}

/// A flow entry of a cached lookup whose position an edit can move.
pub(crate) trait FlowAt: Clone {
    fn flow_mut(&mut self) -> &mut u32;
}

/// The cached lookups of one bridge and the edits not yet applied to all.
pub(crate) struct LookupCache<A> {
    map: HashMap<TableKey, Cached<A>>,
    edits: Vec<CacheEdit>,
}

impl<A> Default for LookupCache<A> {
    fn default() -> Self {
        LookupCache {
            map: HashMap::new(),
            edits: Vec::new(),
        }
    }
}

impl<A: FlowAt> LookupCache<A> {
    /// The lookup of `key`, brought through the edits it missed
    /// (`fields`: what the key's table matches now); `None` if not cached
    /// or an edit dropped it.
    pub fn get(&mut self, key: &TableKey, fields: &[Field]) -> Option<Rc<Vec<A>>> {
        let now = self.edits.len() as u32;
        let c = self.map.get_mut(key)?;
        if c.epoch < now {
            let mut buf = Vec::new();
            let edits = &self.edits[c.epoch as usize..];
            if !replay(edits, fields, key, &mut c.app, &mut buf) {
                self.map.remove(key);
                return None;
            }
            c.epoch = now;
        }
        Some(c.app.clone())
    }

    /// Caches a lookup computed on the bridge as it is now.
    pub fn insert(&mut self, key: TableKey, app: Rc<Vec<A>>) {
        let epoch = self.edits.len() as u32;
        self.map.insert(key, Cached { epoch, app });
    }

    /// This cache after one more rebuild (`fields`: each table's matched
    /// fields after it): the edit logged, or, when the log is full, every
    /// lookup brought up to date.
    pub fn carried<'f>(
        mut self,
        edit: CacheEdit,
        fields: impl Fn(u8) -> Option<&'f Vec<Field>>,
    ) -> LookupCache<A> {
        self.edits.push(edit);
        if self.edits.len() >= EDITS {
            self.catch_up(fields);
        }
        self
    }

    /// Every lookup brought through the edits it missed; the log emptied.
    fn catch_up<'f>(&mut self, fields: impl Fn(u8) -> Option<&'f Vec<Field>>) {
        let mut buf = Vec::new();
        let edits = &self.edits;
        self.map.retain(|key, c| {
            let f = fields(key.0).map_or(&[][..], Vec::as_slice);
            let ok = replay(&edits[c.epoch as usize..], f, key, &mut c.app, &mut buf);
            c.epoch = 0;
            ok
        });
        self.edits.clear();
    }

    /// Every cached lookup (those an edit will drop included).
    pub fn values(&self) -> impl Iterator<Item = &Rc<Vec<A>>> {
        self.map.values().map(|c| &c.app)
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }
}

/// One lookup through `edits`, oldest first, as the eager thinning would
/// have taken it at each rebuild; false if one of them drops it. The key's
/// fields are the same across the edits it survives (a change of them
/// drops it), so `fields` (today's) name its values at each edit.
fn replay<A: FlowAt>(
    edits: &[CacheEdit],
    fields: &[Field],
    (table, vals): &TableKey,
    app: &mut Rc<Vec<A>>,
    buf: &mut Vec<(Field, Val)>,
) -> bool {
    for e in edits {
        if e.refields.contains(table) {
            return false;
        }
        buf.clear();
        buf.extend(fields.iter().copied().zip(vals.iter().copied()));
        if !(e.keep)(*table, buf) {
            return false;
        }
        let Some(m) = &e.flows else { continue };
        // renumbered in place when the cache holds the only reference (a
        // lookup's BDDs are not copied)
        let out = Rc::make_mut(app);
        for a in out.iter_mut() {
            let at = a.flow_mut();
            let Some(to) = m.get(*at as usize) else {
                return false;
            };
            *at = to;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    /// A lookup entry: a flow position and a tag that must ride along.
    #[derive(Clone, Debug, PartialEq)]
    struct Entry(u32, u8);

    impl FlowAt for Entry {
        fn flow_mut(&mut self) -> &mut u32 {
            &mut self.0
        }
    }

    const FIELDS: [Field; 2] = [Field::NwDst, Field::TpDst];

    /// An edit from small numbers: tables whose fields change, the
    /// (table, value of the first field) pairs a changed flow reaches, and
    /// a flow map (old → new, `None` gone) over `flows` positions.
    #[derive(Clone, Debug)]
    struct Spec {
        refields: Vec<u8>,
        touched: BTreeSet<(u8, u128)>,
        flows: Option<Vec<Option<u32>>>,
    }

    fn edit(s: &Spec) -> CacheEdit {
        let touched = s.touched.clone();
        CacheEdit {
            refields: s.refields.clone(),
            keep: Box::new(move |t, key: &[(Field, Val)]| {
                let v = match key.first() {
                    Some((_, Val::Const(x))) => *x,
                    _ => u128::MAX,
                };
                !touched.contains(&(t, v))
            }),
            flows: s.flows.clone().map(|m| Moves::listed(m, 8)),
        }
    }

    fn spec(flows: usize) -> impl Strategy<Value = Spec> {
        (
            proptest::collection::vec(0u8..3, 0..2),
            proptest::collection::btree_set((0u8..3, 0u128..4), 0..3),
            proptest::option::of(proptest::collection::vec(
                proptest::option::weighted(0.9, 0u32..flows as u32),
                flows,
            )),
        )
            .prop_map(|(refields, touched, flows)| Spec {
                refields,
                touched,
                flows,
            })
    }

    type Lookups = Vec<(TableKey, Vec<Entry>)>;

    /// What the eager thinning kept: every lookup through each edit as it
    /// happened.
    fn eager(
        start: &[(TableKey, Vec<Entry>)],
        specs: &[(Spec, Lookups)],
    ) -> HashMap<TableKey, Vec<Entry>> {
        let mut m: HashMap<TableKey, Vec<Entry>> = start.iter().cloned().collect();
        for (s, added) in specs {
            let e = edit(s);
            m.retain(|key, app| {
                let mut rc = Rc::new(app.clone());
                let ok = replay(
                    std::slice::from_ref(&e),
                    &FIELDS,
                    key,
                    &mut rc,
                    &mut Vec::new(),
                );
                *app = (*rc).clone();
                ok
            });
            m.extend(added.iter().cloned());
        }
        m
    }

    fn lookups(n: usize) -> impl Strategy<Value = Lookups> {
        proptest::collection::vec(
            (
                (0u8..3, 0u128..4, 0u128..2),
                proptest::collection::vec((0u32..8, any::<u8>()), 0..4),
            )
                .prop_map(|((t, a, b), es)| {
                    let key = (t, vec![Val::Const(a), Val::Const(b)]);
                    (key, es.into_iter().map(|(f, g)| Entry(f, g)).collect())
                }),
            0..n,
        )
    }

    proptest! {
        /// After any sequence of rebuilds (lookups added between them, the
        /// log compacted when it fills), every lookup the lazy cache gives
        /// equals what the eager thinning kept, and it gives none other.
        #[test]
        fn lazy_carry_equals_eager_thinning(
            start in lookups(12),
            specs in proptest::collection::vec((spec(8), lookups(3)), 0..(EDITS + 8)),
        ) {
            let mut lazy: LookupCache<Entry> = LookupCache::default();
            for (k, v) in &start {
                lazy.insert(k.clone(), Rc::new(v.clone()));
            }
            for (s, added) in &specs {
                lazy = lazy.carried(edit(s), |_| Some(&FIELDS_VEC));
                for (k, v) in added {
                    lazy.insert(k.clone(), Rc::new(v.clone()));
                }
            }
            let want = eager(&start, &specs);
            let mut keys: BTreeSet<(u8, Vec<u128>)> = BTreeSet::new();
            for (k, _) in start.iter().chain(specs.iter().flat_map(|(_, a)| a)) {
                let vals = k.1.iter().map(|v| match v { Val::Const(x) => *x, _ => 0 }).collect();
                keys.insert((k.0, vals));
            }
            for (t, vals) in keys {
                let key = (t, vals.into_iter().map(Val::Const).collect());
                let got = lazy.get(&key, &FIELDS).map(|r| (*r).clone());
                prop_assert_eq!(got, want.get(&key).cloned());
            }
        }
    }

    static FIELDS_VEC: std::sync::LazyLock<Vec<Field>> =
        std::sync::LazyLock::new(|| FIELDS.to_vec());
}
