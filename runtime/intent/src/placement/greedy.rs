//! Duet's greedy VIP assignment with the sticky rule (thesis §2.3.1–2.3.2).
//!
//! Expects a [`Model`], its [`Routes`], an [`order`] of endpoints and a
//! prefix of already-decided [`Step`]s. Guarantees (specs/intent.md §5):
//! - endpoints are taken in [`order`]: VIPs by decreasing total traffic
//!   (ties: lower address), each followed by its TIPs (ascending);
//! - for every candidate switch `s` (all of `placement_switch`, by name) the
//!   endpoint's [`Load`] at `s` is its table entries on `s` and its traffic
//!   on the links: source -> s, then s -> the ToRs of its members in
//!   proportion to their slots ([`Routes::leg`]); a TIP's traffic is its
//!   VIP's total / k, entering at the VIP's switch;
//! - MRU(s) = max utilisation over EVERY resource (all tables of all
//!   switches, all links at `capacity × headroom`) after adding the load;
//!   LRU(s) = the max over the resources the load touches. The best switch
//!   has the lowest (MRU, LRU), ties by name; "lower" means lower by more
//!   than [`EPS`]. Since MRU = max(global max, LRU), this orders candidates
//!   by LRU; MRU decides the stop and the sticky rule. A candidate whose
//!   tables alone already lose to the best is not evaluated, and one whose
//!   links lose while its legs are being added is dropped there (exact
//!   pruning: a link's load only grows as legs are added);
//! - the lowest MRU above 1 (+[`EPS`]) ends the greedy: this endpoint is
//!   [`Outcome::Stopped`] and every later one is [`Outcome::Unplaced`]
//!   (thesis: "the algorithm terminates"); so does an endpoint that would
//!   be placed when the route budget ([`Fabric::routes_free`]: every
//!   placed endpoint's /32 takes an underlay entry on every switch) is
//!   already used up;
//! - sticky: a previous switch that is feasible (MRU ≤ 1) is kept unless
//!   MRU(prev) − MRU(best) > delta (+[`EPS`]);
//! - a link's load is counted in multiples of 1/1024 Mbps ([`quantise`]):
//!   every sum of loads is then exact (below 2^43 Mbps per link), so a
//!   state summed in any order — a checkpoint plus a difference
//!   (`blocks.rs`) — is bit for bit the state the run from scratch reaches.

#[cfg(doc)]
use super::model::Fabric;
use super::model::{Endpoint, EndpointSpec, Model, Tables};
use super::routes::Routes;
use netc_compiler::value::Sym;
use std::cmp::Reverse;
use std::collections::BTreeMap;

/// Tolerance of every comparison between utilisations, so that float
/// rounding never decides a placement.
pub const EPS: f64 = 1e-9;

/// An endpoint's place in greedy order: its VIP's total traffic
/// (decreasing), the VIP's address, then the VIP before its TIPs
/// (ascending). Sorting by it is [`order`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Key {
    traffic: Reverse<i64>,
    vip: Endpoint,
    tip: Option<Endpoint>,
}

impl Key {
    /// The key of `item`, whose VIP has `traffic` in total.
    pub fn of(item: &Item, traffic: i64) -> Key {
        Key {
            traffic: Reverse(traffic),
            vip: item.vip,
            tip: item.tip.then_some(item.ep),
        }
    }

    /// True for a VIP's key (blocks start only at VIPs, so that a VIP and
    /// its TIPs are never apart).
    pub fn is_vip(&self) -> bool {
        self.tip.is_none()
    }
}

/// One endpoint in greedy order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Item {
    pub ep: Endpoint,
    /// The VIP it belongs to (itself for a VIP).
    pub vip: Endpoint,
    pub tip: bool,
}

/// What an endpoint adds on the switch it is placed on.
#[derive(Clone, Debug, PartialEq)]
pub struct Load {
    /// Index into [`Ctx::switches`].
    pub switch: usize,
    pub need: Tables,
    /// (link index, Mbps), by link index.
    pub links: Vec<(usize, f64)>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    Placed(Load),
    /// On the SMuxes: after the greedy stopped, or a TIP of an unplaced VIP.
    Unplaced,
    /// Fit nowhere: the greedy ended here; on the SMuxes.
    Stopped,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    pub item: Item,
    pub outcome: Outcome,
    /// For a placed endpoint: a lower bound of every feasible candidate's
    /// MRU when it was decided (the best's MRU − [`EPS`]); what
    /// `reuse.rs` needs to confirm the decision later without re-deciding.
    /// −∞ otherwise.
    pub floor: f64,
    /// For a placed endpoint: its LRU on its switch when decided (the
    /// highest utilisation among the resources its load touches); −∞
    /// otherwise. `blocks.rs` bounds how far a later change can move it.
    pub lru: f64,
}

/// The fabric's resources as the greedy indexes them: candidate switches
/// in name order, their table capacities, each link's capacity × headroom.
/// Built once per fabric and parameters (a lookup per link by switch
/// names is most of an update's cost at L otherwise: 8,000 links).
#[derive(Clone, Debug, Default)]
pub struct Resources {
    switches: Vec<Sym>,
    index: BTreeMap<Sym, usize>,
    /// Per switch: its node in [`Routes`].
    node: Vec<Option<usize>>,
    free: Vec<Tables>,
    cap: Vec<f64>,
}

impl Resources {
    pub fn new(model: &Model, routes: &Routes) -> Resources {
        let switches: Vec<Sym> = model.fabric.switches.keys().copied().collect();
        let index = switches.iter().copied().zip(0..).collect();
        let node = switches.iter().map(|s| routes.node_of(*s)).collect();
        let free = model.fabric.switches.values().copied().collect();
        let h = model.params.link_headroom;
        let cap = routes
            .links
            .iter()
            .map(|l| model.fabric.links.get(l).copied().unwrap_or(0) as f64 * h)
            .collect();
        Resources {
            switches,
            index,
            node,
            free,
            cap,
        }
    }
}

/// Resources of one run: switch tables and link capacities.
pub struct Ctx<'a> {
    pub model: &'a Model,
    pub routes: &'a Routes,
    /// Candidate switches in name order.
    pub switches: &'a [Sym],
    index: &'a BTreeMap<Sym, usize>,
    node: &'a [Option<usize>],
    pub(super) free: &'a [Tables],
    /// Per link (Routes index): capacity_mbps × headroom.
    pub(super) cap: &'a [f64],
    /// How many endpoints may be placed in all (`None`: no bound).
    pub(super) budget: Option<i64>,
}

impl<'a> Ctx<'a> {
    /// `res` must be [`Resources::new`] of this model's fabric and
    /// parameters.
    pub fn new(model: &'a Model, routes: &'a Routes, res: &'a Resources) -> Ctx<'a> {
        Ctx {
            model,
            routes,
            switches: &res.switches,
            index: &res.index,
            node: &res.node,
            free: &res.free,
            cap: &res.cap,
            budget: model.fabric.routes_free,
        }
    }
}

/// Running totals: entries used per switch, Mbps per link, endpoints
/// placed, and the highest utilisation of any resource.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct State {
    pub(super) used: Vec<Tables>,
    pub(super) link: Vec<f64>,
    pub(super) placed: i64,
    pub(super) max_util: f64,
}

impl State {
    /// Nothing placed yet.
    pub(super) fn empty(ctx: &Ctx) -> State {
        State {
            used: vec![[0; 3]; ctx.switches.len()],
            link: vec![0.0; ctx.cap.len()],
            placed: 0,
            max_util: 0.0,
        }
    }
}

/// A link load rounded to a multiple of 1/1024 Mbps, so that sums of loads
/// are exact (see the module doc).
pub(super) fn quantise(mbps: f64) -> f64 {
    (mbps * 1024.0).round() / 1024.0
}

pub(super) fn util(used: f64, cap: f64) -> f64 {
    if cap > 0.0 {
        used / cap
    } else if used == 0.0 {
        0.0
    } else {
        f64::INFINITY
    }
}

/// `a` is lower than `b` by more than [`EPS`].
fn lower(a: f64, b: f64) -> bool {
    a < b - EPS
}

/// Endpoints in greedy order.
pub fn order(model: &Model) -> Vec<Item> {
    let mut vips: Vec<(&Endpoint, i64)> = model
        .vips
        .iter()
        .map(|(v, s)| (v, s.total_traffic()))
        .collect();
    vips.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let mut out = Vec::new();
    for (v, _) in vips {
        out.push(Item {
            ep: *v,
            vip: *v,
            tip: false,
        });
        for t in model.vips[v].tips.keys() {
            out.push(Item {
                ep: *t,
                vip: *v,
                tip: true,
            });
        }
    }
    out
}

/// One greedy run in progress: the steps so far and the resources they use.
pub(super) struct Run<'c, 'a> {
    ctx: &'c Ctx<'a>,
    pub(super) state: State,
    /// Endpoint -> switch index of the placed ones.
    at: BTreeMap<Endpoint, usize>,
    pub(super) stopped: bool,
    pub(super) steps: Vec<Step>,
    scratch: Scratch,
}

impl<'c, 'a> Run<'c, 'a> {
    /// A run that continues from `state` (the loads of every step before
    /// the first it will decide; `max_util` is recomputed from them:
    /// utilisations only grow, so the running maximum is the maximum of the
    /// current ones, bit for bit). `stopped`: whether the greedy already
    /// stopped before.
    pub(super) fn from_state(
        ctx: &'c Ctx<'a>,
        mut state: State,
        stopped: bool,
        capacity: usize,
    ) -> Run<'c, 'a> {
        state.max_util = scan_max(ctx, &state);
        Run {
            ctx,
            state,
            at: BTreeMap::new(),
            stopped,
            steps: Vec::with_capacity(capacity),
            scratch: Scratch::new(ctx.cap.len()),
        }
    }

    /// Decides `item` by the greedy's rules and appends its step.
    pub(super) fn decide_next(
        &mut self,
        item: &Item,
        previous: &BTreeMap<Endpoint, Sym>,
        evaluated: &mut usize,
    ) -> &Step {
        let decided = if self.stopped {
            None
        } else {
            decide(
                self.ctx,
                &self.state,
                &mut self.scratch,
                item,
                &self.at,
                previous,
                evaluated,
            )
        };
        // the route budget used up: the endpoint fits nowhere
        let full = self.ctx.budget.is_some_and(|b| self.state.placed >= b);
        match decided {
            Some(Some(d)) if !full => self.place(item, d.load, d.mru, d.lru, d.floor),
            Some(_) => {
                self.stopped = true;
                self.push(item, Outcome::Stopped, f64::NEG_INFINITY, f64::NEG_INFINITY);
            }
            None => self.push(
                item,
                Outcome::Unplaced,
                f64::NEG_INFINITY,
                f64::NEG_INFINITY,
            ),
        }
        self.steps.last().expect("a step was just pushed")
    }

    /// Appends `item` placed with `load`, the run's maximum utilisation
    /// becoming `mru` (what [`decide`] returned, or a decision proven equal)
    /// and its LRU being `lru`.
    pub(super) fn place(&mut self, item: &Item, load: Load, mru: f64, lru: f64, floor: f64) {
        add(&mut self.state, &load);
        self.state.max_util = mru;
        self.at.insert(item.ep, load.switch);
        self.push(item, Outcome::Placed(load), floor, lru);
    }

    fn push(&mut self, item: &Item, outcome: Outcome, floor: f64, lru: f64) {
        self.steps.push(Step {
            item: item.clone(),
            outcome,
            floor,
            lru,
        });
    }

    /// The (MRU, LRU) of placing again exactly `load` (an endpoint's load
    /// at its previous switch), bit for bit what [`decide`] computes for
    /// that switch: its tables, then the links of the load. `None` if
    /// infeasible.
    pub(super) fn mru_of(&self, load: &Load) -> Option<(f64, f64)> {
        let (ctx, state) = (self.ctx, &self.state);
        let mut lru = need_util(ctx, state, &load.need, load.switch)?;
        for &(l, x) in &load.links {
            lru = lru.max(util(state.link[l] + x, ctx.cap[l]));
        }
        lru.is_finite().then_some((state.max_util.max(lru), lru))
    }
}

/// What [`decide`] chose: the load, the run's MRU after it, its LRU, and
/// the floor (see [`Step::floor`]).
struct Decision {
    load: Load,
    mru: f64,
    lru: f64,
    floor: f64,
}

/// Adds `load` to `state` (`sign` 1) or takes it away (−1); exact (see
/// [`quantise`]).
pub(super) fn add_signed(state: &mut State, load: &Load, sign: i64) {
    for i in 0..3 {
        state.used[load.switch][i] += sign * load.need[i];
    }
    for &(l, x) in &load.links {
        state.link[l] += sign as f64 * x;
    }
    state.placed += sign;
}

fn add(state: &mut State, load: &Load) {
    add_signed(state, load, 1);
}

fn scan_max(ctx: &Ctx, state: &State) -> f64 {
    let mut m: f64 = 0.0;
    for (used, free) in state.used.iter().zip(ctx.free) {
        for (u, f) in used.iter().zip(free) {
            m = m.max(util(*u as f64, *f as f64));
        }
    }
    for (x, cap) in state.link.iter().zip(ctx.cap) {
        m = m.max(util(*x, *cap));
    }
    m
}

/// `None`: not evaluated (a TIP of an unplaced VIP); `Some(None)`: fits
/// nowhere (the greedy stops); `Some(Some(load))`: the chosen switch's load.
fn decide(
    ctx: &Ctx,
    state: &State,
    scratch: &mut Scratch,
    item: &Item,
    at: &BTreeMap<Endpoint, usize>,
    previous: &BTreeMap<Endpoint, Sym>,
    evaluated: &mut usize,
) -> Option<Option<Decision>> {
    let vip = ctx.model.vips.get(&item.vip)?;
    let (spec, sources): (&EndpointSpec, Vec<(Sym, f64)>) = if item.tip {
        let vs = *at.get(&item.vip)?;
        let k = vip.tips.len() as f64;
        (
            vip.tips.get(&item.ep)?,
            vec![(ctx.switches[vs], vip.total_traffic() as f64 / k)],
        )
    } else {
        let src = vip.traffic.iter().map(|(s, m)| (*s, *m as f64)).collect();
        (&vip.endpoint, src)
    };
    let ends = Ends::new(ctx, spec, &sources);
    *evaluated += 1;
    let mut best: Option<(usize, Score)> = None;
    for s in 0..ctx.switches.len() {
        let Some(tab) = table_util(ctx, state, spec, s) else {
            continue;
        };
        // Exact pruning: the tables alone bound (MRU, LRU) from below; a
        // candidate that cannot beat the best even so is not evaluated.
        if let Some((_, b)) = &best {
            if !lower(state.max_util.max(tab), b.mru) && !lower(tab, b.lru) {
                continue;
            }
        }
        // A candidate whose LRU reaches the best's − EPS is not better
        // (neither its LRU nor its MRU = max(g, LRU) is lower), and a
        // partial sum of its legs bounds its LRU from below.
        let beaten_at = best
            .as_ref()
            .map(|(_, b)| b.lru - EPS)
            .filter(|_| !exhaustive());
        let Some(sc) = score(ctx, state, scratch, &ends, s, tab, beaten_at) else {
            continue;
        };
        let better = match &best {
            None => true,
            Some((_, b)) => lower(sc.mru, b.mru) || (!lower(b.mru, sc.mru) && lower(sc.lru, b.lru)),
        };
        if better {
            best = Some((s, sc));
        }
    }
    let (mut chosen, best) = match best {
        Some((s, b)) if b.mru <= 1.0 + EPS => (s, b),
        _ => return Some(None),
    };
    let (mut mru, mut lru) = (best.mru, best.lru);
    // Every candidate not chosen has MRU >= the best's at its turn − EPS, and
    // the best's MRU only falls as the scan goes (see reuse.rs).
    let floor = best.mru - EPS;
    if let Some(&p) = previous.get(&item.ep).and_then(|p| ctx.index.get(p)) {
        let prev = table_util(ctx, state, spec, p)
            .and_then(|tab| score(ctx, state, scratch, &ends, p, tab, None));
        if let Some(pe) = prev {
            if p != chosen
                && pe.mru <= 1.0 + EPS
                && pe.mru - best.mru <= ctx.model.params.delta + EPS
            {
                chosen = p;
                mru = pe.mru;
                lru = pe.lru;
            }
        }
    }
    let load = load_at(ctx, scratch, &ends, chosen)?;
    Some(Some(Decision {
        load,
        mru,
        lru,
        floor,
    }))
}

#[cfg(test)]
thread_local! {
    /// Tests: evaluate every candidate's legs in full, to show that
    /// dropping a beaten candidate early never changes a decision.
    pub(super) static EXHAUSTIVE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

#[cfg(test)]
fn exhaustive() -> bool {
    EXHAUSTIVE.with(|e| e.get())
}

#[cfg(not(test))]
fn exhaustive() -> bool {
    false
}

/// A candidate's (MRU, LRU).
struct Score {
    mru: f64,
    lru: f64,
}

/// Per-link Mbps of the candidate being evaluated (zero outside `touched`).
pub(super) struct Scratch {
    load: Vec<f64>,
    touched: Vec<usize>,
}

impl Scratch {
    fn new(links: usize) -> Scratch {
        Scratch {
            load: vec![0.0; links],
            touched: Vec::new(),
        }
    }

    fn clear(&mut self) {
        for &l in &self.touched {
            self.load[l] = 0.0;
        }
        self.touched.clear();
    }

    /// Adds the legs of `ends` at switch `s` (source -> s, s -> member
    /// ToRs). With `beaten` = (state, u): stops at the first link whose
    /// utilisation with the load so far is ≥ u.
    fn add_legs(
        &mut self,
        ctx: &Ctx,
        ends: &Ends,
        s: usize,
        beaten: Option<(&State, f64)>,
    ) -> Legs {
        let sw = (ctx.switches[s], ctx.node[s]);
        for &(src, src_node, mbps) in &ends.sources {
            let r = self.leg(ctx, (src, src_node), sw, mbps, beaten);
            if r != Legs::Added {
                return r;
            }
            for &(tor, tor_node, n) in &ends.members {
                let amount = mbps * n as f64 / ends.slots as f64;
                let r = self.leg(ctx, sw, (tor, tor_node), amount, beaten);
                if r != Legs::Added {
                    return r;
                }
            }
        }
        Legs::Added
    }

    fn leg(
        &mut self,
        ctx: &Ctx,
        from: (Sym, Option<usize>),
        to: (Sym, Option<usize>),
        amount: f64,
        beaten: Option<(&State, f64)>,
    ) -> Legs {
        if from.0 == to.0 || amount == 0.0 {
            return Legs::Added;
        }
        let (Some(a), Some(b)) = (from.1, to.1) else {
            return Legs::Unreachable;
        };
        let Some(leg) = ctx.routes.leg_between(a, b) else {
            return Legs::Unreachable;
        };
        for &(l, f) in leg.iter() {
            if self.load[l] == 0.0 {
                self.touched.push(l);
            }
            self.load[l] += amount * f;
            if let Some((state, u)) = beaten {
                // The link's final load is at least this sum (every amount
                // is ≥ 0), and `quantise` and `util` are monotone. The
                // first test is a cheap filter (a skipped test only costs
                // time); the second decides.
                let (now, cap) = (state.link[l] + self.load[l], ctx.cap[l]);
                if now + 1.0 >= u * cap {
                    let x = quantise(self.load[l]);
                    if x > 0.0 && util(state.link[l] + x, cap) >= u {
                        return Legs::Beaten;
                    }
                }
            }
        }
        Legs::Added
    }
}

/// How adding an endpoint's legs at a candidate ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Legs {
    Added,
    /// A leg with traffic cannot reach its end.
    Unreachable,
    /// A link reached the utilisation asked for (the rest not added).
    Beaten,
}

/// The ends of an endpoint's legs with their route nodes, looked up once
/// per decision rather than once per candidate switch.
struct Ends {
    /// (source switch, its node, Mbps).
    sources: Vec<(Sym, Option<usize>, f64)>,
    /// (member ToR, its node, slots).
    members: Vec<(Sym, Option<usize>, i64)>,
    /// Σ slots.
    slots: i64,
    need: Tables,
}

impl Ends {
    fn new(ctx: &Ctx, spec: &EndpointSpec, sources: &[(Sym, f64)]) -> Ends {
        let node = |s: Sym| ctx.routes.node_of(s);
        Ends {
            sources: sources.iter().map(|&(s, m)| (s, node(s), m)).collect(),
            members: spec
                .members
                .iter()
                .map(|(t, n)| (*t, node(*t), *n))
                .collect(),
            slots: spec.members.values().sum(),
            need: spec.need,
        }
    }
}

/// The highest utilisation of `s`'s tables after adding `spec` (over the
/// tables it uses); `None` if one of them has no capacity.
fn table_util(ctx: &Ctx, state: &State, spec: &EndpointSpec, s: usize) -> Option<f64> {
    need_util(ctx, state, &spec.need, s)
}

/// [`table_util`] of a table need.
fn need_util(ctx: &Ctx, state: &State, need: &Tables, s: usize) -> Option<f64> {
    let mut t: f64 = 0.0;
    for (i, &n) in need.iter().enumerate() {
        if n > 0 {
            t = t.max(util((state.used[s][i] + n) as f64, ctx.free[s][i] as f64));
        }
    }
    t.is_finite().then_some(t)
}

/// MRU and LRU of placing the endpoint with legs `ends` on switch `s`
/// (`tab` = [`table_util`]); `None` if a leg cannot reach its end, a link
/// has no capacity, or (with `beaten_at`) its LRU is ≥ `beaten_at`.
fn score(
    ctx: &Ctx,
    state: &State,
    scratch: &mut Scratch,
    ends: &Ends,
    s: usize,
    tab: f64,
    beaten_at: Option<f64>,
) -> Option<Score> {
    let ok = scratch.add_legs(ctx, ends, s, beaten_at.map(|u| (state, u))) == Legs::Added;
    let mut lru = tab;
    for &l in &scratch.touched {
        let x = quantise(scratch.load[l]);
        if x > 0.0 {
            lru = lru.max(util(state.link[l] + x, ctx.cap[l]));
        }
    }
    scratch.clear();
    (ok && lru.is_finite()).then_some(Score {
        mru: state.max_util.max(lru),
        lru,
    })
}

/// The load of the endpoint with legs `ends` on switch `s` (its links
/// sorted by index).
fn load_at(ctx: &Ctx, scratch: &mut Scratch, ends: &Ends, s: usize) -> Option<Load> {
    let ok = scratch.add_legs(ctx, ends, s, None) == Legs::Added;
    let mut links: Vec<(usize, f64)> = scratch
        .touched
        .iter()
        .map(|&l| (l, quantise(scratch.load[l])))
        .filter(|(_, x)| *x > 0.0)
        .collect();
    links.sort_unstable_by_key(|(l, _)| *l);
    scratch.clear();
    ok.then_some(Load {
        switch: s,
        need: ends.need,
        links,
    })
}
