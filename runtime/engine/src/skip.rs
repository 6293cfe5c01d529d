//! Deferring input a piece cannot use yet: which pieces a warm commit may
//! leave unrun although a relation they read changed.
//!
//! Expects: a validated plan and its [`PieceMap`]; every change of a
//! relation any gate reads passes through [`SkipState::update`] before the
//! checks that may read it (input-only relations: the driver, before it
//! sends the epoch; set outputs: the capture operator of the piece making
//! the set), and every row a gated piece is fed passes through
//! [`SkipState::route`]; all of it under one lock ([`Skip::state`]).
//! Guarantees:
//! - DEFER: a row `y` of relation `Y` bound for piece `p` is *deferred* — it
//!   stays in the worker's pending buffer for `p`, and `p` is not run for
//!   it — only if, for every positive occurrence of `Y` in `p`'s rules,
//!   either `y` fails the occurrence's constant/equal-column patterns, or
//!   some *neighbour* atom of the occurrence (a positive atom of the same
//!   body joined with it on bound slots, of a relation other than `Y`) has
//!   no row with `y`'s key in the index `U` ([`SkipState::update`]). That
//!   neighbour is the row's *witness*, and `(neighbour index, key)` is
//!   recorded as a *watch* of `p`. A negated occurrence (`!Y(..)`) counts
//!   the same way, its neighbours being the positive atoms that bind its
//!   key: with none of them matching, no binding meets the row. A relation
//!   `p` reads in an aggregate's inner body, a recursive stratum, a union
//!   piece, or an occurrence without neighbours is never deferred (it has
//!   no gate).
//! - `U` counts, per indexed `(relation, columns)`, the keys of the
//!   relation's current rows, plus one per deferred *deletion* not yet fed
//!   to its piece (so `U` ⊇ every piece's view: the truth minus the
//!   insertions it has not been fed plus the deletions it has not been
//!   fed). Keys are 64-bit hashes; a collision only makes a piece run.
//! - RUN: `p` runs in the epoch as soon as one row bound for it cannot be
//!   deferred, or an inserted row matches one of `p`'s watches (a witness
//!   gained a partner), or `p` holds [`MAX_DEFERRED`] deferred rows; then
//!   its watches and deletion counts are dropped and, when the worker comes
//!   to `p`, every pending row is fed (the old with the new).
//! - Why this is exact: while `p` holds deferred rows, every one of them has
//!   a witness with no key in `U` ⊇ the truth ∪ `p`'s view, so no
//!   derivation of `p`'s rules, in the true contents or in what `p` was fed,
//!   uses a deferred row, and no binding meets a deferred negated row's
//!   key: `p`'s outputs are the same either way. `U` gains a
//!   key only by an insertion into the witness relation, which `p` reads, so
//!   that insertion is routed to `p` and meets the watch. Checks and updates
//!   happen under one lock, so of two rows changed in one epoch the later
//!   one sees the earlier.
//! - One-shot engines and `NETC_ENGINE_DEFER=0` build no [`Skip`]: every
//!   row bound for a piece runs it, as before (the switch is for measuring
//!   the difference). `NETC_ENGINE_DEFER_TRACE` prints, for every row that
//!   makes a piece run after the first epoch, which neighbours had its key.

use super::eval::ColProg;
use super::pieces::{Kind, Out, PieceMap};
use super::tuple::{FxHashMap, FxHashSet, FxHasher, Tuple};
use netc_compiler::plan::{Body, Expr, Plan, RelId, Source, Step};
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Deferred rows a piece may hold before it is run anyway (bounds the
/// pending buffers and watches of a piece no change ever makes run).
pub const MAX_DEFERRED: usize = 4096;

/// What gates the pieces (immutable) and the shared state of the checks.
pub struct Skip {
    pub gates: Gates,
    pub state: Mutex<SkipState>,
}

impl Skip {
    /// `None` when deferring is off (`NETC_ENGINE_DEFER=0`) or no piece has
    /// a gate.
    pub fn new(plan: &Plan, map: &PieceMap) -> Option<Skip> {
        if std::env::var("NETC_ENGINE_DEFER").is_ok_and(|v| v == "0") {
            return None;
        }
        let gates = Gates::new(plan, map);
        if gates.pieces.iter().all(|g| g.is_empty()) {
            return None;
        }
        let state = SkipState::new(&gates, map.len());
        Some(Skip {
            gates,
            state: Mutex::new(state),
        })
    }
}

/// One positive occurrence of a relation in a piece's rule body.
#[derive(Debug)]
struct Occurrence {
    /// Constant and equal-column checks of the atom.
    pattern: ColProg,
    /// Neighbours: a row dead at this occurrence if one has no partner.
    edges: Vec<Edge>,
}

/// A neighbour of an occurrence: the row's `cols` must match a key of
/// `index` (the neighbour relation's join columns, in the same order).
#[derive(Debug)]
struct Edge {
    cols: Vec<usize>,
    index: usize,
}

/// Per piece, per relation it reads: its occurrences in the piece's rules,
/// a row of it deferred only if dead at all of them (absent: every row runs
/// the piece).
pub struct Gates {
    pieces: Vec<FxHashMap<RelId, Vec<Occurrence>>>,
    /// Indexed `(relation, columns)`.
    indexes: Vec<(RelId, Vec<usize>)>,
    /// Per relation, the indexes over it.
    by_rel: Vec<Vec<usize>>,
    /// Per relation, whether its changes are counted into `U` where
    /// [`Gates::counts_at`] says.
    indexed: Vec<bool>,
    /// `NETC_ENGINE_DEFER_TRACE`: piece and relation names, to print why a
    /// row runs a piece.
    names: Option<(Vec<String>, Vec<String>)>,
}

/// A positive atom of a body: its relation, pattern and the slots it binds.
struct Atom {
    rel: RelId,
    pattern: ColProg,
}

impl Gates {
    fn new(plan: &Plan, map: &PieceMap) -> Gates {
        let n = plan.relations.len();
        let mut g = Gates {
            pieces: Vec::with_capacity(map.len()),
            indexes: Vec::new(),
            by_rel: vec![Vec::new(); n],
            indexed: vec![false; n],
            names: std::env::var_os("NETC_ENGINE_DEFER_TRACE").map(|_| {
                let pieces = (0..map.len()).map(|p| map.label(plan, p)).collect();
                let rels = plan.relations.iter().map(|r| r.name.clone()).collect();
                (pieces, rels)
            }),
        };
        let mut index_ids: FxHashMap<(RelId, Vec<usize>), usize> = FxHashMap::default();
        for spec in &map.pieces {
            let stratum = &plan.strata[spec.stratum];
            let rules: Vec<usize> = match &spec.kind {
                _ if stratum.recursive => Vec::new(),
                Kind::Whole => (0..stratum.rules.len()).collect(),
                Kind::Rules(rs) => rs.clone(),
                Kind::Union => Vec::new(),
            };
            let mut gates: FxHashMap<RelId, Vec<Occurrence>> = FxHashMap::default();
            if !rules.is_empty() {
                let mut always: FxHashSet<RelId> = FxHashSet::default();
                let mut occs: Occs = FxHashMap::default();
                for &i in &rules {
                    body_occurrences(&stratum.rules[i].body, &mut occs, &mut always);
                }
                for &rel in &spec.reads {
                    match occs.remove(&rel) {
                        Some(list) if !always.contains(&rel) => {
                            let mut out = Vec::new();
                            for (pattern, edges) in list {
                                let edges = edges
                                    .into_iter()
                                    .map(|(cols, nrel, ncols)| {
                                        let next = index_ids.len();
                                        let index =
                                            *index_ids.entry((nrel, ncols.clone())).or_insert(next);
                                        if index == next {
                                            g.indexes.push((nrel, ncols));
                                            g.by_rel[nrel].push(index);
                                            g.indexed[nrel] = true;
                                        }
                                        Edge { cols, index }
                                    })
                                    .collect();
                                out.push(Occurrence { pattern, edges });
                            }
                            gates.insert(rel, out);
                        }
                        _ => {}
                    }
                }
            }
            g.pieces.push(gates);
        }
        g
    }

    /// Whether piece `p`'s captured changes of `rel` (made as `out`) are
    /// counted into `U`: the set a relation's readers see.
    pub fn counts_at(&self, rel: RelId, out: Out) -> bool {
        self.indexed[rel] && out == Out::Set
    }

    /// Whether base-fact changes of `rel` are counted into `U` by the
    /// driver (an input-only relation: no piece captures it).
    pub fn counts_base(&self, rel: RelId, derived: bool) -> bool {
        self.indexed[rel] && !derived
    }
}

/// A neighbour edge while gates are built: (own columns, neighbour
/// relation, neighbour columns).
type EdgeSpec = (Vec<usize>, RelId, Vec<usize>);
/// Two atoms' join columns, in key order.
type KeyPair = (Vec<usize>, Vec<usize>);
/// Per relation, its occurrences: pattern and neighbour edges.
type Occs = FxHashMap<RelId, Vec<(ColProg, Vec<EdgeSpec>)>>;

/// A join or anti-join key split by the atom that bound each slot:
/// `(atom, that atom's columns, the joined relation's columns)`, in key
/// order; key parts that are computed (not a slot an atom bound) are left
/// out.
fn key_by_atom(
    left_key: &[Expr],
    right_cols: &[usize],
    origin: &[Option<(usize, usize)>],
) -> Vec<(usize, Vec<usize>, Vec<usize>)> {
    let mut by_atom: Vec<(usize, Vec<usize>, Vec<usize>)> = Vec::new();
    for (e, &rc) in left_key.iter().zip(right_cols) {
        let Expr::Slot(s) = e else { continue };
        let Some(Some((a, ac))) = origin.get(*s).copied() else {
            continue;
        };
        match by_atom.iter_mut().find(|(x, ..)| *x == a) {
            Some((_, acs, rcs)) => {
                acs.push(ac);
                rcs.push(rc);
            }
            None => by_atom.push((a, vec![ac], vec![rc])),
        }
    }
    by_atom
}

/// Collects, per relation, its occurrences in `body` (outer level: the
/// source scan, the joins and the negations) with their neighbour edges
/// `(own columns, neighbour relation, neighbour columns)`: for a positive
/// atom, the positive atoms it is joined with; for a negated one, the
/// positive atoms binding its key. Relations read in an aggregate's inner
/// body go to `always`.
fn body_occurrences(body: &Body, occs: &mut Occs, always: &mut FxHashSet<RelId>) {
    let mut atoms: Vec<Atom> = Vec::new();
    // Negated relations and their neighbour edges.
    let mut negated: Vec<(RelId, Vec<EdgeSpec>)> = Vec::new();
    // Per slot, the atom and column it was bound from (None: computed).
    let mut origin: Vec<Option<(usize, usize)>> = Vec::new();
    // (atom a, atom j) → (a's columns, j's columns), in key order.
    let mut pairs: Vec<((usize, usize), KeyPair)> = Vec::new();
    match &body.source {
        Source::Scan(scan) => {
            let pattern = ColProg::new(&scan.cols);
            origin.extend(pattern.binds().iter().map(|&c| Some((0, c))));
            atoms.push(Atom {
                rel: scan.rel,
                pattern,
            });
        }
        Source::Unit | Source::Outer => {}
    }
    for step in &body.steps {
        match step {
            Step::Join {
                rel,
                left_key,
                right_key,
                cols,
            } => {
                let j = atoms.len();
                for (a, acs, jcs) in key_by_atom(left_key, right_key, &origin) {
                    pairs.push(((a, j), (acs, jcs)));
                }
                let pattern = ColProg::new(cols);
                origin.extend(pattern.binds().iter().map(|&c| Some((j, c))));
                atoms.push(Atom { rel: *rel, pattern });
            }
            Step::AntiJoin {
                rel,
                left_key,
                right_cols,
            } => {
                // A negated row matters only to the bindings its key meets:
                // the atoms binding the key are its neighbours.
                let edges = key_by_atom(left_key, right_cols, &origin)
                    .into_iter()
                    .filter(|(a, ..)| atoms[*a].rel != *rel)
                    .map(|(a, acs, rcs)| (rcs, atoms[a].rel, acs))
                    .collect();
                negated.push((*rel, edges));
            }
            Step::Bind(_) => origin.push(None),
            Step::Aggregate { inner, .. } => {
                always.extend(inner.reads().into_iter().map(|(r, _)| r));
                origin.push(None);
            }
            Step::Filter(_) => {}
        }
    }
    let mut edges: Vec<Vec<EdgeSpec>> = vec![Vec::new(); atoms.len()];
    for ((a, j), (acs, jcs)) in pairs {
        let (ra, rj) = (atoms[a].rel, atoms[j].rel);
        // A neighbour of the same relation is no witness: the row itself
        // (or its deleted self) could be the partner.
        if ra == rj {
            continue;
        }
        edges[a].push((acs.clone(), rj, jcs.clone()));
        edges[j].push((jcs, ra, acs));
    }
    for (atom, e) in atoms.into_iter().zip(edges) {
        occs.entry(atom.rel).or_default().push((atom.pattern, e));
    }
    for (rel, e) in negated {
        occs.entry(rel).or_default().push((ColProg::new(&[]), e));
    }
}

/// The hash of `t`'s values at `cols` (equal keys hash alike whichever
/// relation they come from).
#[inline]
fn key_hash(t: &Tuple, cols: &[usize]) -> u64 {
    let mut h = FxHasher::default();
    for &c in cols {
        t.get(c).hash(&mut h);
    }
    h.finish()
}

/// What one piece holds deferred (see module docs).
#[derive(Default)]
struct Deferred {
    /// `(index, key)`: an insertion of that key runs the piece.
    watches: FxHashSet<(usize, u64)>,
    /// `(index, key)` counted into `U` for a deferred deletion.
    kept: Vec<(usize, u64)>,
    rows: usize,
}

/// `U` and every piece's deferred state (see module docs).
pub struct SkipState {
    counts: Vec<FxHashMap<u64, i64>>,
    deferred: Vec<Deferred>,
}

impl SkipState {
    fn new(gates: &Gates, pieces: usize) -> SkipState {
        SkipState {
            counts: vec![FxHashMap::default(); gates.indexes.len()],
            deferred: (0..pieces).map(|_| Deferred::default()).collect(),
        }
    }

    /// Counts a change of a row of `rel` into `U`.
    pub fn update(&mut self, gates: &Gates, rel: RelId, t: &Tuple, d: isize) {
        for &i in &gates.by_rel[rel] {
            let k = key_hash(t, &gates.indexes[i].1);
            add(&mut self.counts[i], k, d as i64);
        }
    }

    /// Decides for a row of `rel` bound for piece `p` (see module docs):
    /// marks `p` to run in the epoch stamped `stamp` (in `dirty`) unless it
    /// already is or the row can be deferred.
    pub fn route(
        &mut self,
        gates: &Gates,
        dirty: &[AtomicU64],
        stamp: u64,
        p: usize,
        (rel, t, d): (RelId, &Tuple, isize),
    ) {
        if dirty[p].load(Ordering::Acquire) == stamp {
            return;
        }
        if !self.defer(gates, p, rel, t, d) {
            if let Some((pieces, rels)) = &gates.names {
                let why = self.why(gates, p, rel, t, d);
                eprintln!(
                    "netc-defer run {} by {} {t:?} {d:+}: {why}",
                    pieces[p], rels[rel]
                );
            }
            dirty[p].store(stamp, Ordering::Release);
            self.run(p);
        }
    }

    /// Whether the row can be deferred; if so, records it.
    fn defer(&mut self, gates: &Gates, p: usize, rel: RelId, t: &Tuple, d: isize) -> bool {
        let Some(occs) = gates.pieces[p].get(&rel) else {
            return false;
        };
        let deferred = &self.deferred[p];
        if deferred.rows >= MAX_DEFERRED {
            return false;
        }
        if d > 0 {
            for &i in &gates.by_rel[rel] {
                let k = key_hash(t, &gates.indexes[i].1);
                if deferred.watches.contains(&(i, k)) {
                    return false;
                }
            }
        }
        let mut witnesses = Vec::with_capacity(occs.len());
        for occ in occs {
            if !occ.pattern.matches(t) {
                continue;
            }
            let witness = occ.edges.iter().find_map(|e| {
                let k = key_hash(t, &e.cols);
                let present = self.counts[e.index].get(&k).is_some_and(|&c| c > 0);
                (!present).then_some((e.index, k))
            });
            match witness {
                Some(w) => witnesses.push(w),
                None => return false,
            }
        }
        let deferred = &mut self.deferred[p];
        deferred.watches.extend(witnesses);
        deferred.rows += 1;
        if d < 0 {
            for &i in &gates.by_rel[rel] {
                let k = key_hash(t, &gates.indexes[i].1);
                add(&mut self.counts[i], k, 1);
                self.deferred[p].kept.push((i, k));
            }
        }
        true
    }

    /// Why a row cannot be deferred (for `NETC_ENGINE_DEFER_TRACE`).
    fn why(&self, gates: &Gates, p: usize, rel: RelId, t: &Tuple, d: isize) -> String {
        let Some(occs) = gates.pieces[p].get(&rel) else {
            return "no gate".into();
        };
        if self.deferred[p].rows >= MAX_DEFERRED {
            return "too many deferred".into();
        }
        let mut out = String::new();
        for (i, occ) in occs.iter().enumerate() {
            if !occ.pattern.matches(t) {
                continue;
            }
            let present: Vec<String> = occ
                .edges
                .iter()
                .map(|e| {
                    let (r, cols) = &gates.indexes[e.index];
                    let rels = gates.names.as_ref().map(|n| n.1[*r].as_str());
                    format!("{}{cols:?}", rels.unwrap_or("?"))
                })
                .collect();
            out += &format!("occurrence {i} neighbours all present {present:?}; ");
        }
        if out.is_empty() || d > 0 {
            out += "(or a watch)";
        }
        out
    }

    /// `p` runs: its pending rows will all be fed, so nothing of it is
    /// deferred any more.
    fn run(&mut self, p: usize) {
        let deferred = std::mem::take(&mut self.deferred[p]);
        for (i, k) in deferred.kept {
            add(&mut self.counts[i], k, -1);
        }
    }
}

fn add(counts: &mut FxHashMap<u64, i64>, k: u64, d: i64) {
    let c = counts.entry(k).or_insert(0);
    *c += d;
    if *c == 0 {
        counts.remove(&k);
    }
}
