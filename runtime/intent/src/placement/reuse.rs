//! Walking one block of the greedy order again after VIP changes,
//! confirming a later decision with one candidate instead of re-deciding it
//! over every switch.
//!
//! Expects: a [`Run`] holding the new run's state before the block, the
//! block's old entries (steps of an earlier run over the same fabric and
//! parameters) and the new items that fall in it, the VIPs whose spec
//! changed (`dirty`: set, added or removed; their TIPs with them), the
//! load the new run has placed before the block minus what the old steps'
//! records were decided against (`drift`), and `previous` = the old run's
//! placement (the sticky rule's `s_c`).
//! Guarantees: [`walk`] decides the block exactly as the run from scratch
//! does — same steps, same outcomes, same loads — so `Placement::update`
//! keeps its definition (the sticky run from scratch, specs/intent.md §5).
//! The `floor`s of confirmed steps may be lower than the run from scratch's
//! (they stay valid lower bounds).
//!
//! Why it holds. At an endpoint e that is not dirty, let D be the load the
//! new run has placed before e minus what the old step's records were
//! decided against (the block's drift, the dirty VIPs' old and new loads,
//! and any endpoint decided differently),
//! and `dec` the largest fall of any resource's utilisation that D makes.
//! The old run placed e on s_c and recorded `floor`, a lower bound of every
//! feasible candidate's MRU then. Every utilisation is now at least the old
//! one − `dec`, so every candidate's MRU is now ≥ `floor − dec`, and ≥ the
//! run's current maximum g. Let `lb` = max(g, floor − dec − [`SLACK`]). If
//! MRU(s_c) now (its tables and the links of its recorded load: one
//! candidate) is ≤ 1 and MRU(s_c) − lb ≤ δ (+EPS), the full decision keeps
//! s_c: the best's MRU is ≥ lb, so the sticky rule keeps s_c if it is not the
//! best itself, and ≤ MRU(s_c) + EPS ≤ 1 + EPS, so the greedy does not stop
//! (`greedy.rs`' scan never lets the best's MRU exceed a candidate's + EPS).
//! Feasibility of a candidate does not depend on the state, and a load at a
//! given switch depends only on the endpoint (and a TIP's VIP's switch), so
//! the recorded load is the one `decide` would compute. When the check
//! fails, the endpoint is decided in full.
//!
//! Why: adding a VIP used to re-decide every endpoint after it over every
//! switch (91% of `Placement::update`, 26% of M's warm-change CPU); most of
//! them keep their switch by the sticky rule, which this proves per
//! endpoint in O(its links). (`blocks.rs` proves it for a whole block at
//! once, so only the blocks the change is in are walked.)

use super::blocks::{Drift, Entry};
use super::greedy::{Ctx, Item, Key, Outcome, Run, EPS};
use super::model::Endpoint;
use netc_compiler::value::Sym;
use std::collections::{BTreeMap, BTreeSet};

/// Room for float rounding in `floor − dec`: a utilisation is a quotient,
/// so `(a + d) / c` and `a / c + d / c` may differ in the last bits (far
/// below this).
pub(super) const SLACK: f64 = 1e-6;

/// How much work an update did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Work {
    /// Endpoints decided over every candidate switch.
    pub evaluated: usize,
    /// Endpoints whose previous switch was confirmed with one candidate.
    pub confirmed: usize,
}

/// Each changed endpoint's switch before and after (`None`: on the SMuxes).
pub(super) type Moves = BTreeMap<Endpoint, (Option<Sym>, Option<Sym>)>;

/// The drift with its largest utilisation fall cached.
struct LoadDiff<'d> {
    drift: &'d mut Drift,
    dec: Option<f64>,
}

impl LoadDiff<'_> {
    fn apply(&mut self, ctx: &Ctx, outcome: &Outcome, sign: i64) {
        if let Outcome::Placed(l) = outcome {
            self.drift.apply(ctx, l, sign);
            self.dec = None;
        }
    }

    fn dec(&mut self, ctx: &Ctx) -> f64 {
        *self.dec.get_or_insert_with(|| self.drift.inc_dec(ctx).1)
    }
}

/// Where a placed outcome is.
fn switch_of(ctx: &Ctx, o: &Outcome) -> Option<Sym> {
    match o {
        Outcome::Placed(l) => Some(ctx.switches[l.switch]),
        _ => None,
    }
}

/// Decides the block again: `old` (sorted by key) merged with `new` (the
/// dirty VIPs' items that fall in it, sorted by key); `drift` is the
/// block's drift on entry and becomes meaningless after (the walked block's
/// records are fresh); `d` (the update's difference) and `moves` gain what
/// changed. Returns the block's new entries.
#[allow(clippy::too_many_arguments)]
pub(super) fn walk(
    ctx: &Ctx,
    run: &mut Run,
    old: Vec<Entry>,
    new: Vec<(Key, Item)>,
    dirty: &BTreeSet<Endpoint>,
    previous: &BTreeMap<Endpoint, Sym>,
    drift: &mut Drift,
    d: &mut Drift,
    moves: &mut Moves,
    work: &mut Work,
) -> Vec<Entry> {
    let mut diff = LoadDiff { drift, dec: None };
    let mut keys = Vec::with_capacity(old.len() + new.len());
    // Non-dirty VIPs decided differently: their TIPs' traffic enters
    // elsewhere, so they are decided in full.
    let mut moved: BTreeSet<Endpoint> = BTreeSet::new();
    let mut old = old.into_iter().peekable();
    let mut new = new.into_iter().peekable();
    loop {
        let take_old = match (old.peek(), new.peek()) {
            (None, None) => break,
            (Some(o), Some((k, _))) => o.key <= *k,
            (Some(_), None) => true,
            (None, Some(_)) => false,
        };
        if !take_old {
            let (k, item) = new.next().expect("peeked");
            let o = &run
                .decide_next(&item, previous, &mut work.evaluated)
                .outcome;
            diff.apply(ctx, o, 1);
            d.apply_outcome(ctx, o, 1);
            moves.entry(item.ep).or_default().1 = switch_of(ctx, o);
            keys.push(k);
            continue;
        }
        let mut e = old.next().expect("peeked");
        let item = e.step.item.clone();
        if dirty.contains(&item.vip) {
            // Its old load leaves; its new items (if any) are decided above.
            diff.apply(ctx, &e.step.outcome, -1);
            d.apply_outcome(ctx, &e.step.outcome, -1);
            moves.entry(item.ep).or_default().0 = switch_of(ctx, &e.step.outcome);
            continue;
        }
        keys.push(e.key);
        let tip_of_moved = item.tip && moved.contains(&item.vip);
        if !(run.stopped || tip_of_moved) {
            if let Some((mru, lru, lb)) = confirm(
                ctx,
                run,
                &item,
                &e.step.outcome,
                e.step.floor,
                previous,
                &mut diff,
            ) {
                let Outcome::Placed(load) =
                    std::mem::replace(&mut e.step.outcome, Outcome::Unplaced)
                else {
                    unreachable!("confirm accepts placed steps only");
                };
                run.place(&item, load, mru, lru, lb);
                work.confirmed += 1;
                continue;
            }
        }
        let new_o = &run
            .decide_next(&item, previous, &mut work.evaluated)
            .outcome;
        if *new_o != e.step.outcome {
            diff.apply(ctx, &e.step.outcome, -1);
            diff.apply(ctx, new_o, 1);
            d.apply_outcome(ctx, &e.step.outcome, -1);
            d.apply_outcome(ctx, new_o, 1);
            let (was, now) = (switch_of(ctx, &e.step.outcome), switch_of(ctx, new_o));
            if was != now {
                *moves.entry(item.ep).or_default() = (was, now);
            }
            if !item.tip {
                moved.insert(item.vip);
            }
        }
    }
    keys.into_iter()
        .zip(std::mem::take(&mut run.steps))
        .map(|(key, step)| Entry { key, step })
        .collect()
}

/// The (MRU, LRU) and the new floor if the full decision provably keeps the
/// endpoint where the old run put it, with the old step's load (module doc).
fn confirm(
    ctx: &Ctx,
    run: &Run,
    item: &Item,
    old: &Outcome,
    floor: f64,
    previous: &BTreeMap<Endpoint, Sym>,
    diff: &mut LoadDiff,
) -> Option<(f64, f64, f64)> {
    let Outcome::Placed(load) = old else {
        return None;
    };
    if ctx.budget.is_some_and(|b| run.state.placed >= b) {
        // the route budget is used up: the full decision stops here
        return None;
    }
    if previous.get(&item.ep) != Some(&ctx.switches[load.switch]) {
        return None;
    }
    let (mru, lru) = run.mru_of(load)?;
    let lb = run.state.max_util.max(floor - diff.dec(ctx) - SLACK);
    (mru <= 1.0 && mru - lb <= ctx.model.params.delta + EPS).then_some((mru, lru, lb))
}
