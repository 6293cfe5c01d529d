//! Re-running the greedy after VIP changes, confirming later decisions with
//! one candidate instead of re-deciding them over every switch.
//!
//! Expects: the steps of an earlier run over the same fabric and parameters
//! (`old`), the new order, the VIPs whose spec changed (`dirty`: set, added
//! or removed; their TIPs with them), and `previous` = that run's placement
//! (the sticky rule's `s_c`).
//! Guarantees: [`rerun`] returns exactly what `greedy::run(ctx, order,
//! &old[..from], previous)` returns — same steps, same outcomes, same loads
//! — so `Placement::update` keeps its definition (the sticky run from
//! scratch, specs/intent.md §5). Only the `floor`s of confirmed steps may be
//! lower (they stay valid lower bounds).
//!
//! Why it holds. At an endpoint e that is not dirty, let D be the load the
//! new run has placed before e minus what the old run had placed before it
//! (the dirty VIPs' old and new loads, and any endpoint decided differently),
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
//! fails, or D is unknown, the endpoint is decided in full.
//!
//! Why: adding a VIP used to re-decide every endpoint after it over every
//! switch (91% of `Placement::update`, 26% of M's warm-change CPU); most of
//! them keep their switch by the sticky rule, which this proves per
//! endpoint in O(its links).

use super::greedy::{Ctx, Item, Load, Outcome, Run, Step, EPS};
use super::model::Endpoint;
use netc_compiler::value::Sym;
use std::collections::{BTreeMap, BTreeSet};

/// Room for float rounding in `floor − dec`: the two runs sum the same
/// loads in different orders, so their utilisations may differ in the last
/// bits (far below this).
const SLACK: f64 = 1e-6;

/// How much work a re-run did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Work {
    /// Endpoints decided over every candidate switch.
    pub evaluated: usize,
    /// Endpoints whose previous switch was confirmed with one candidate.
    pub confirmed: usize,
}

/// The new run's placed load minus the old run's, over the endpoints passed.
struct LoadDiff {
    used: Vec<[i64; 3]>,
    link: Vec<f64>,
    switches: Vec<usize>,
    links: Vec<usize>,
    seen_switch: Vec<bool>,
    seen_link: Vec<bool>,
    /// The largest utilisation fall, when not `stale`.
    dec: f64,
    stale: bool,
}

impl LoadDiff {
    fn new(switches: usize, links: usize) -> LoadDiff {
        LoadDiff {
            used: vec![[0; 3]; switches],
            link: vec![0.0; links],
            switches: Vec::new(),
            links: Vec::new(),
            seen_switch: vec![false; switches],
            seen_link: vec![false; links],
            dec: 0.0,
            stale: false,
        }
    }

    /// Adds `load` (`sign` 1) or takes it away (−1).
    fn apply(&mut self, load: &Load, sign: i64) {
        let s = load.switch;
        if !self.seen_switch[s] {
            self.seen_switch[s] = true;
            self.switches.push(s);
        }
        for i in 0..3 {
            self.used[s][i] += sign * load.need[i];
        }
        for &(l, x) in &load.links {
            if !self.seen_link[l] {
                self.seen_link[l] = true;
                self.links.push(l);
            }
            self.link[l] += sign as f64 * x;
        }
        self.stale = true;
    }

    /// The largest fall of a resource's utilisation (∞ if a resource of
    /// no capacity lost load).
    fn dec(&mut self, ctx: &Ctx) -> f64 {
        if self.stale {
            let fall = |d: f64, cap: f64| {
                if d >= 0.0 {
                    0.0
                } else if cap > 0.0 {
                    -d / cap
                } else {
                    f64::INFINITY
                }
            };
            let mut m: f64 = 0.0;
            for &s in &self.switches {
                for i in 0..3 {
                    m = m.max(fall(self.used[s][i] as f64, ctx.free[s][i] as f64));
                }
            }
            for &l in &self.links {
                m = m.max(fall(self.link[l], ctx.cap[l]));
            }
            self.dec = m;
            self.stale = false;
        }
        self.dec
    }
}

/// The greedy over `order` from scratch with `previous`, keeping `old`'s
/// first `from` steps (identical in both runs) — see the module doc.
pub fn rerun(
    ctx: &Ctx,
    order: &[Item],
    mut old: Vec<Step>,
    from: usize,
    dirty: &BTreeSet<Endpoint>,
    previous: &BTreeMap<Endpoint, Sym>,
    work: &mut Work,
) -> Vec<Step> {
    let from = from.min(old.len()).min(order.len());
    let mut old_rest = old.split_off(from);
    let mut run = Run::new(ctx, old, order.len());
    let mut diff = LoadDiff::new(ctx.switches.len(), ctx.cap.len());
    // Non-dirty VIPs decided differently from the old run: their TIPs'
    // traffic enters elsewhere, so they are decided in full.
    let mut moved: BTreeSet<Endpoint> = BTreeSet::new();
    // False once the walk through `old` lost track of D.
    let mut tracking = true;
    let mut j = 0;
    for item in &order[from..] {
        if dirty.contains(&item.vip) {
            if let Outcome::Placed(l) =
                &run.decide_next(item, previous, &mut work.evaluated).outcome
            {
                diff.apply(l, 1);
            }
            continue;
        }
        // Non-dirty endpoints keep their relative order; the old steps
        // passed on the way are dirty ones, whose old load D loses.
        let mut same = None;
        while tracking && j < old_rest.len() {
            let o = &old_rest[j];
            j += 1;
            if o.item == *item {
                same = Some(j - 1);
                break;
            }
            if !dirty.contains(&o.item.vip) {
                tracking = false;
            } else if let Outcome::Placed(l) = &o.outcome {
                diff.apply(l, -1);
            }
        }
        let Some(at) = same else {
            tracking = false;
            run.decide_next(item, previous, &mut work.evaluated);
            continue;
        };
        let o = &mut old_rest[at];
        let tip_of_moved = item.tip && moved.contains(&item.vip);
        if !(run.stopped || tip_of_moved) {
            if let Some((mru, lb)) = confirm(ctx, &run, item, o, previous, &mut diff) {
                // The old step is passed for good: its load moves over.
                let Outcome::Placed(load) = std::mem::replace(&mut o.outcome, Outcome::Unplaced)
                else {
                    unreachable!("confirm accepts placed steps only");
                };
                run.place(item, load, mru, lb);
                work.confirmed += 1;
                continue;
            }
        }
        let new = &run.decide_next(item, previous, &mut work.evaluated).outcome;
        if *new != o.outcome {
            if let Outcome::Placed(l) = &o.outcome {
                diff.apply(l, -1);
            }
            if let Outcome::Placed(l) = new {
                diff.apply(l, 1);
            }
            if !item.tip {
                moved.insert(item.vip);
            }
        }
    }
    run.steps
}

/// The MRU and the new floor if the full decision provably keeps the
/// endpoint where the old run put it, with the old step's load (module doc).
fn confirm(
    ctx: &Ctx,
    run: &Run,
    item: &Item,
    old: &Step,
    previous: &BTreeMap<Endpoint, Sym>,
    diff: &mut LoadDiff,
) -> Option<(f64, f64)> {
    let Outcome::Placed(load) = &old.outcome else {
        return None;
    };
    if previous.get(&item.ep) != Some(&ctx.switches[load.switch]) {
        return None;
    }
    let mru = run.mru_of(load)?;
    let lb = run.state.max_util.max(old.floor - diff.dec(ctx) - SLACK);
    (mru <= 1.0 && mru - lb <= ctx.model.params.delta + EPS).then_some((mru, lb))
}
