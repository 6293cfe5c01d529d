//! The greedy's steps kept in blocks of consecutive keys, so that a VIP
//! change visits only the blocks it can change.
//!
//! Expects: a [`Ctx`] (fabric, routes, parameters) that stays the same
//! between [`Blocks::build`] and every [`Blocks::update`] (a new fabric or
//! new parameters are a new build), and `previous` = the current placement
//! in every update (Duet's sticky re-assignment; `incremental.rs`).
//! Guarantees: after `build` or `update` the blocks hold, in greedy order
//! ([`Key`]), exactly the steps of the greedy run from scratch on the
//! current model with that `previous` (specs/intent.md §5); `update`
//! returns each endpoint whose switch changed (its `vip_placement` delta).
//!
//! Layout. A block is up to ~2×`target` steps in key order (a block starts
//! at a VIP, so a VIP and its TIPs are never apart; `target` ≈ √n, ≥ 64),
//! with: the state before its first step (every earlier placed load — a
//! checkpoint, so a change inside it starts there instead of summing the
//! loads before it); its `drift` (the load placed before it now minus the
//! load placed before it when its steps' `floor`/`lru` were recorded); the
//! largest `lru` and `lru − floor` of its steps; whether all its steps are
//! placed, or none. Loads are exact sums (`greedy::quantise`), so a
//! checkpoint plus a difference is bit for bit the run's own state.
//!
//! An update walks (`reuse.rs`) the blocks holding a changed VIP's old or
//! new steps, and the rest from the first of them on as follows, with d the
//! load the new run has placed before the block minus the old run's:
//! - nothing changed before it (d = 0, the greedy stopped or not as
//!   before) and no change comes after it: it and every later block are
//!   kept as they are (the run from scratch is a fixed point there: same
//!   state, and the sticky rule keeps each switch — the old run's own
//!   decision, with `previous` = it);
//! - the new run has stopped before it and none of its steps is placed (or
//!   stopped): it stays as it is;
//! - all its steps are placed, the run has not stopped, the route budget
//!   still holds all of them (the endpoints placed before it plus its own
//!   do not exceed it), and the bound below holds: it is kept without visiting a step (its drift gains d);
//! - otherwise it is walked.
//!
//! The bound (why a kept block's steps are the run from scratch's). Let Δ
//! be the block's drift after adding d, `inc`/`dec` its largest rise/fall
//! of a resource's utilisation, and G an upper bound of the run's maximum
//! utilisation before the block (exact after a walked block; after a kept
//! one, max(G, its max lru + inc + SLACK)). For a step e on s_c (= its
//! `previous`, the old run's switch), every resource's utilisation before e
//! is its recorded one + at most `inc` and − at most `dec` (Δ is all that
//! changed before e: the steps before e in the block are kept with the same
//! loads), so LRU(s_c) now ≤ lru_e + inc (+ rounding, SLACK) and every
//! candidate's MRU is ≥ floor_e − dec (`reuse.rs`' argument, with D = Δ).
//! If G ≤ 1, max lru + inc + SLACK ≤ 1 and max(lru − floor) + inc + dec +
//! 2·SLACK ≤ δ + EPS, then for every e: MRU(s_c) = max(g, LRU(s_c)) ≤ 1
//! (g ≤ G or the MRU of a kept step before it) and MRU(s_c) − max(g, floor_e
//! − dec − SLACK) ≤ δ + EPS, which is exactly `reuse.rs`' confirmation: the
//! full decision keeps s_c, with the same load. Their records stay valid
//! relative to the drift, which is what the bound reads next time.
//!
//! Why: `Placement::update` used to visit every endpoint after the change
//! (sort the order, re-add the prefix's loads, confirm the rest one by one,
//! rebuild the assignment and diff it): 41 ms p50 at L (30,000 VIPs) for one
//! added VIP. Now it costs one or two blocks walked (O(√n) steps) plus
//! O(n/√n × the change's resources) for the later blocks' checkpoints and
//! bounds.

use super::greedy::{self, Ctx, Item, Key, Load, Outcome, Run, State, Step, EPS};
use super::model::{Endpoint, Tables};
use super::reuse::{self, Moves, Work, SLACK};
use netc_compiler::value::Sym;
use std::collections::{BTreeMap, BTreeSet};

/// A step with its place in greedy order.
#[derive(Clone, Debug)]
pub(super) struct Entry {
    pub(super) key: Key,
    pub(super) step: Step,
}

/// A difference of placed load: entries per switch, Mbps per link and the
/// number of endpoints placed, held
/// densely (a VIP's load at L spans ~1,000 links: adding it to every later
/// block's drift must be array writes, not map inserts) with the list of
/// resources it touched (each once: `listed`). Exact (`greedy::quantise`):
/// `nonzero` counts the resources whose difference is not zero. The arrays
/// are allocated on first use.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct Drift {
    used: Vec<Tables>,
    link: Vec<f64>,
    /// Endpoints placed (the route budget's count).
    placed: i64,
    switches: Vec<usize>,
    links: Vec<usize>,
    listed_switch: Vec<bool>,
    listed_link: Vec<bool>,
    nonzero: usize,
}

/// Zero entries a drift's lists may hold beyond twice its nonzero ones
/// ([`Drift::compact`]). None in tests, so that every proptest of updates
/// runs the compaction at almost every step.
#[cfg(not(test))]
const COMPACT_SLACK: usize = 16;
#[cfg(test)]
const COMPACT_SLACK: usize = 0;

impl Drift {
    pub(super) fn is_empty(&self) -> bool {
        self.nonzero == 0
    }

    fn ensure(&mut self, ctx: &Ctx) {
        if self.link.len() != ctx.cap.len() || self.used.len() != ctx.free.len() {
            self.used = vec![[0; 3]; ctx.free.len()];
            self.link = vec![0.0; ctx.cap.len()];
            self.listed_switch = vec![false; ctx.free.len()];
            self.listed_link = vec![false; ctx.cap.len()];
        }
    }

    /// Adds `load` (`sign` 1) or takes it away (−1).
    pub(super) fn apply(&mut self, ctx: &Ctx, load: &Load, sign: i64) {
        self.ensure(ctx);
        if load.need != [0; 3] {
            self.add_used(load.switch, load.need.map(|n| sign * n));
        }
        for &(l, x) in &load.links {
            self.add_link(l, sign as f64 * x);
        }
        self.add_placed(sign);
        self.compact();
    }

    fn add_placed(&mut self, n: i64) {
        let was = self.placed == 0;
        self.placed += n;
        let is = self.placed == 0;
        self.count(was, is);
    }

    /// Drops the listed resources whose difference is back to zero, once
    /// they outnumber the others: an undo (or a VIP removed and added back)
    /// returns a difference to exactly zero (loads are exact sums), and
    /// without this the lists, which every bound reads, grew with every
    /// resource any change had ever touched (at L, hundreds per block after
    /// a few hundred changes). Zero entries add nothing anywhere, so
    /// dropping them changes no result.
    fn compact(&mut self) {
        if self.switches.len() + self.links.len() <= 2 * self.nonzero + COMPACT_SLACK {
            return;
        }
        let (used, link) = (&self.used, &self.link);
        let (ls, ll) = (&mut self.listed_switch, &mut self.listed_link);
        self.switches.retain(|&s| {
            let keep = used[s] != [0; 3];
            ls[s] = keep;
            keep
        });
        self.links.retain(|&l| {
            let keep = link[l] != 0.0;
            ll[l] = keep;
            keep
        });
    }

    /// [`Drift::apply`] of a placed outcome; nothing otherwise.
    pub(super) fn apply_outcome(&mut self, ctx: &Ctx, o: &Outcome, sign: i64) {
        if let Outcome::Placed(l) = o {
            self.apply(ctx, l, sign);
        }
    }

    fn add_used(&mut self, s: usize, t: Tables) {
        if !self.listed_switch[s] {
            self.listed_switch[s] = true;
            self.switches.push(s);
        }
        let e = &mut self.used[s];
        let was = *e == [0; 3];
        for i in 0..3 {
            e[i] += t[i];
        }
        let is = *e == [0; 3];
        self.count(was, is);
    }

    fn add_link(&mut self, l: usize, x: f64) {
        if !self.listed_link[l] {
            self.listed_link[l] = true;
            self.links.push(l);
        }
        let e = &mut self.link[l];
        let was = *e == 0.0;
        *e += x;
        let is = *e == 0.0;
        self.count(was, is);
    }

    fn count(&mut self, was_zero: bool, is_zero: bool) {
        match (was_zero, is_zero) {
            (true, false) => self.nonzero += 1,
            (false, true) => self.nonzero -= 1,
            _ => {}
        }
    }

    /// Adds another difference.
    pub(super) fn add(&mut self, ctx: &Ctx, other: &Drift) {
        if other.is_empty() {
            return;
        }
        self.ensure(ctx);
        for &s in &other.switches {
            self.add_used(s, other.used[s]);
        }
        for &l in &other.links {
            self.add_link(l, other.link[l]);
        }
        self.add_placed(other.placed);
        self.compact();
    }

    /// Adds the difference to a state's totals (not its `max_util`).
    fn apply_to(&self, state: &mut State) {
        if self.is_empty() {
            return;
        }
        for &s in &self.switches {
            for i in 0..3 {
                state.used[s][i] += self.used[s][i];
            }
        }
        for &l in &self.links {
            state.link[l] += self.link[l];
        }
        state.placed += self.placed;
    }

    /// The largest rise and the largest fall of a resource's utilisation
    /// (∞ when a resource of no capacity gains or loses load).
    pub(super) fn inc_dec(&self, ctx: &Ctx) -> (f64, f64) {
        let (mut inc, mut dec): (f64, f64) = (0.0, 0.0);
        if self.is_empty() {
            return (inc, dec);
        }
        let mut see = |d: f64, cap: f64| {
            let u = if cap > 0.0 {
                d.abs() / cap
            } else {
                f64::INFINITY
            };
            if d > 0.0 {
                inc = inc.max(u);
            } else if d < 0.0 {
                dec = dec.max(u);
            }
        };
        for &s in &self.switches {
            for i in 0..3 {
                see(self.used[s][i] as f64, ctx.free[s][i] as f64);
            }
        }
        for &l in &self.links {
            see(self.link[l], ctx.cap[l]);
        }
        (inc, dec)
    }
}

/// Consecutive steps in greedy order and what a change needs to know of
/// them without visiting them (module doc).
#[derive(Clone, Debug)]
struct Block {
    entries: Vec<Entry>,
    /// The run's state before the first entry (`max_util` unused).
    start: State,
    drift: Drift,
    max_lru: f64,
    max_gap: f64,
    placed: usize,
    stopped: bool,
}

impl Block {
    fn new(entries: Vec<Entry>, start: State) -> Block {
        let mut b = Block {
            entries,
            start,
            drift: Drift::default(),
            max_lru: f64::NEG_INFINITY,
            max_gap: f64::NEG_INFINITY,
            placed: 0,
            stopped: false,
        };
        for e in &b.entries {
            match &e.step.outcome {
                Outcome::Placed(_) => {
                    b.placed += 1;
                    b.max_lru = b.max_lru.max(e.step.lru);
                    b.max_gap = b.max_gap.max(e.step.lru - e.step.floor);
                }
                Outcome::Stopped => b.stopped = true,
                Outcome::Unplaced => {}
            }
        }
        b
    }

    fn first_key(&self) -> Option<Key> {
        self.entries.first().map(|e| e.key)
    }
}

/// The greedy's steps in blocks (module doc).
#[derive(Clone, Debug)]
pub(super) struct Blocks {
    list: Vec<Block>,
    /// Steps per block a build aims at; a walked block longer than twice
    /// this is split.
    target: usize,
}

/// What an update visited.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Visit {
    /// Position in greedy order of the first walked block's first step.
    pub(super) from: usize,
    /// Steps in blocks kept by the bound without a visit.
    pub(super) kept: usize,
    pub(super) walked_blocks: usize,
}

impl Blocks {
    /// Steps per block for `n` steps: ≈ √n, at least 64.
    pub(super) fn target_for(n: usize) -> usize {
        n.isqrt().max(64)
    }

    /// The greedy from scratch over `items` (sorted by key), in blocks of
    /// about `target` steps.
    pub(super) fn build(
        ctx: &Ctx,
        items: Vec<(Key, Item)>,
        previous: &BTreeMap<Endpoint, Sym>,
        target: usize,
        work: &mut Work,
    ) -> Blocks {
        let mut run = Run::from_state(ctx, State::empty(ctx), false, items.len());
        for (_, item) in &items {
            run.decide_next(item, previous, &mut work.evaluated);
        }
        let target = target.max(1);
        let entries: Vec<Entry> = items
            .into_iter()
            .zip(std::mem::take(&mut run.steps))
            .map(|((key, _), step)| Entry { key, step })
            .collect();
        Blocks {
            list: split(State::empty(ctx), entries, target),
            target,
        }
    }

    /// Every step in greedy order.
    pub(super) fn steps(&self) -> impl Iterator<Item = &Step> {
        self.list
            .iter()
            .flat_map(|b| b.entries.iter().map(|e| &e.step))
    }

    pub(super) fn target(&self) -> usize {
        self.target
    }

    pub(super) fn len(&self) -> usize {
        self.list.iter().map(|b| b.entries.len()).sum()
    }

    /// The block a key falls in: the last whose first key is ≤ it (the
    /// first block for a key before every block).
    fn block_of(&self, k: &Key) -> usize {
        self.list
            .partition_point(|b| b.first_key().is_some_and(|f| f <= *k))
            .saturating_sub(1)
    }

    /// Re-places after the VIPs in `dirty` changed: `old_keys` are their
    /// steps' keys before (sorted), `new_items` their items now (sorted by
    /// key); `previous` is the current placement. Returns each endpoint
    /// whose switch may have changed (before, after).
    pub(super) fn update(
        &mut self,
        ctx: &Ctx,
        dirty: &BTreeSet<Endpoint>,
        old_keys: &[Key],
        new_items: Vec<(Key, Item)>,
        previous: &BTreeMap<Endpoint, Sym>,
        work: &mut Work,
    ) -> (Moves, Visit) {
        let mut moves = Moves::new();
        let mut visit = Visit::default();
        if self.list.is_empty() {
            self.list.push(Block::new(Vec::new(), State::empty(ctx)));
        }
        let mut news: BTreeMap<usize, Vec<(Key, Item)>> = BTreeMap::new();
        for (k, item) in new_items {
            news.entry(self.block_of(&k)).or_default().push((k, item));
        }
        let mut must: BTreeSet<usize> = news.keys().copied().collect();
        must.extend(old_keys.iter().map(|k| self.block_of(k)));
        let (Some(&first), Some(&last)) = (must.first(), must.last()) else {
            return (moves, visit);
        };
        visit.from = self.list[..first].iter().map(|b| b.entries.len()).sum();
        let mut old_stopped = self.list[..first].iter().any(|b| b.stopped);
        let mut new_stopped = old_stopped;
        let mut d = Drift::default();
        let mut g_bound = f64::INFINITY;
        let rest = self.list.split_off(first);
        let mut rest = rest.into_iter();
        for (b, mut block) in (first..).zip(rest.by_ref()) {
            let must_walk = must.contains(&b);
            if !must_walk && b > last && d.is_empty() && new_stopped == old_stopped {
                // The run from scratch is a fixed point from here on.
                self.list.push(block);
                break;
            }
            d.apply_to(&mut block.start);
            block.drift.add(ctx, &d);
            let block_stopped = block.stopped;
            let keep = !must_walk
                && if new_stopped {
                    block.placed == 0 && !block.stopped
                } else if d.is_empty() && !old_stopped {
                    // Same state, same steps: only the bound on g moves.
                    if block.placed > 0 {
                        let (inc, _) = block.drift.inc_dec(ctx);
                        g_bound = g_bound.max(block.max_lru + inc + SLACK);
                    }
                    true
                } else {
                    !old_stopped
                        && block.placed == block.entries.len()
                        && within_budget(ctx, &block)
                        && self.bound_holds(ctx, &block, &mut g_bound)
                };
            if keep {
                visit.kept += block.entries.len();
                self.list.push(block);
            } else {
                visit.walked_blocks += 1;
                let cap = block.entries.len() + 1;
                let mut run = Run::from_state(ctx, block.start.clone(), new_stopped, cap);
                let entries = reuse::walk(
                    ctx,
                    &mut run,
                    block.entries,
                    news.remove(&b).unwrap_or_default(),
                    dirty,
                    previous,
                    &mut block.drift,
                    &mut d,
                    &mut moves,
                    work,
                );
                new_stopped = run.stopped;
                g_bound = run.state.max_util;
                if entries.len() > 2 * self.target {
                    self.list.extend(split(block.start, entries, self.target));
                } else if !entries.is_empty() {
                    self.list.push(Block::new(entries, block.start));
                }
            }
            old_stopped |= block_stopped;
        }
        self.list.extend(rest);
        (moves, visit)
    }

    /// The module doc's bound for keeping `block` unvisited (its drift
    /// already holds d); on success raises `g_bound` past the block.
    fn bound_holds(&self, ctx: &Ctx, block: &Block, g_bound: &mut f64) -> bool {
        if block.placed == 0 {
            return true;
        }
        let (inc, dec) = block.drift.inc_dec(ctx);
        let top = block.max_lru + inc + SLACK;
        let ok = *g_bound <= 1.0
            && top <= 1.0
            && block.max_gap + inc + dec + 2.0 * SLACK <= ctx.model.params.delta + EPS;
        if ok {
            *g_bound = g_bound.max(top);
        }
        ok
    }
}

/// Whether every step of `block` (all placed; its start already holds d)
/// stays within the route budget in the new run: then the budget decides
/// none of them, as in the old run.
fn within_budget(ctx: &Ctx, block: &Block) -> bool {
    ctx.budget
        .is_none_or(|b| block.start.placed + block.entries.len() as i64 <= b)
}

/// Cuts `entries` (the steps after `start`) into blocks of about `target`
/// steps, each starting at a VIP, with their checkpoints.
fn split(mut start: State, entries: Vec<Entry>, target: usize) -> Vec<Block> {
    let mut out = Vec::new();
    let mut chunk: Vec<Entry> = Vec::with_capacity(target + 1);
    for e in entries {
        if chunk.len() >= target && e.key.is_vip() {
            let next = checkpoint_after(&start, &chunk);
            out.push(Block::new(std::mem::take(&mut chunk), start));
            start = next;
        }
        chunk.push(e);
    }
    if !chunk.is_empty() {
        out.push(Block::new(chunk, start));
    }
    out
}

/// `start` plus the placed loads of `entries`.
fn checkpoint_after(start: &State, entries: &[Entry]) -> State {
    let mut s = start.clone();
    for e in entries {
        if let Outcome::Placed(l) = &e.step.outcome {
            greedy::add_signed(&mut s, l, 1);
        }
    }
    s
}
