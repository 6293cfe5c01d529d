//! The OVS model: one bridge's flow tables and groups, run on a set of packets.
//!
//! Expects flows/groups as text (`artifacts.rs`), parsed by `ofctl.rs`.
//! Guarantees: [`Bridge::run`] follows OpenFlow semantics for the modelled
//! subset — in a table the highest-priority matching flow wins (a flow's hit
//! set is the packets it matches minus every earlier flow's, by priority
//! then file order; where flows of one priority with different actions
//! overlap, each of them may win: OpenFlow leaves it undefined, of two
//! with one match OVS keeps the one added last, and a push that reconciles
//! by cookie adds the missing one again, so either can be what the bridge
//! holds — both are paths here, and PUSH-1's finding, `push.rs`),
//! `resubmit` runs another table, `group` runs every
//! bucket (`all`: each copy; `select`: each possible choice), a table miss
//! drops — and returns one [`Outcome`] per (path, end) with the exact set of
//! *original* packets that take it. Writes are tracked per path as
//! [`Val`]s: a constant, an alias of an original header field (ARP
//! responder swaps), or unknown (conntrack NAT ports/state), which is
//! over-approximated: an unknown field may match any flow and masks none.

use crate::artifacts::{FlowText, GroupText};
use crate::incremental::Moves;
use crate::lookup_cache::{CacheEdit, FlowAt, LookupCache};
use crate::ofctl::{self, Action, Constraint, Nat, OfctlError};
use crate::space::{Field, Space};
use biodivine_lib_bdd::Bdd;
use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::rc::Rc;

/// The value of a field on a path, relative to the packet as sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Val {
    Const(u128),
    /// Equal to this original header field.
    Alias(Field),
    Unknown,
}

/// A set of packets on one path: the original headers that take it, and
/// what the path wrote so far.
#[derive(Clone, Debug)]
pub struct Pkt {
    pub set: Bdd,
    pub over: BTreeMap<Field, Val>,
}

impl Pkt {
    pub fn read(&self, f: Field) -> Val {
        match self.over.get(&f) {
            Some(v) => *v,
            None if f.is_header() => Val::Alias(f),
            None => Val::Const(0),
        }
    }
    /// The constraint as a set of original packets; `None` = cannot match;
    /// the flag is false when an unknown field made the answer approximate.
    pub fn constrain(&self, space: &Space, c: &Constraint) -> Option<(Bdd, bool)> {
        match self.read(c.field) {
            Val::Const(x) => ((x & c.mask) == (c.value & c.mask)).then(|| (space.all(), true)),
            Val::Alias(g) => Some((space.field_eq(g, c.value, c.mask), true)),
            Val::Unknown => Some((space.all(), false)),
        }
    }
}

/// One step of a path (ordered so a VM's outcomes have one order in a
/// model; a fresh build and an updated one can give a flow or row
/// different handles, so nothing a report shows follows this order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Hop {
    /// A flow of a bridge, by its handle ([`Bridge::flow`]: it names the
    /// flow while the flow exists, and no other flow ever).
    Flow { bridge: u32, handle: u32 },
    Group {
        bridge: u32,
        group: u32,
        bucket: u32,
    },
    /// A load-balancer instance's entry (its row's handle, `lb.rs`: it
    /// names the row while the row exists, and no other row ever).
    Lb { handle: u32 },
    /// The underlay carried a tunnel packet to this address.
    Underlay { to: u32 },
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum End {
    Deliver { port: u32 },
    Tunnel { tun_id: u128, tun_dst: u32 },
    Uplink,
    Drop { why: String },
}

#[derive(Clone, Debug)]
pub struct Outcome {
    pub device: u32,
    pub pkt: Pkt,
    pub path: Vec<Hop>,
    pub end: End,
}

#[derive(Default)]
pub struct Flow {
    pub text: FlowText,
    pub matches: Vec<Constraint>,
    pub actions: Vec<Action>,
}

pub struct Group {
    pub text: GroupText,
    pub buckets: Vec<Vec<Action>>,
}

/// A flow that may match, with the part of the packet space it wins.
#[derive(Clone)]
pub(crate) struct Applicable {
    flow: u32,
    m: Bdd,
    shadow: Bdd,
}

impl FlowAt for Applicable {
    fn flow_mut(&mut self) -> &mut u32 {
        &mut self.flow
    }
}

pub struct Bridge {
    pub name: String,
    pub index: u32,
    /// In file order; a path names a flow by its handle, not its position.
    /// A patched bridge's carried flows keep the `file:line` they were
    /// parsed with: cite a flow with [`Bridge::cite`].
    pub flows: Vec<Flow>,
    /// Per flow, by position: its handle. A flow keeps its handle while it
    /// exists, and a handle is never given to another flow, so an update
    /// that adds or removes flows moves no kept path (renumbering the
    /// paths of every VM that crossed a Hoverboard, whose flows every VM
    /// change moves, was a 6-second stall every 64 updates at 10k VMs).
    handles: Vec<u32>,
    /// Per handle number: its flow's position ([`GONE`]: the flow is gone).
    at: Vec<u32>,
    /// Whether carried flows kept a `file:line` that may have moved (the
    /// bridge was patched): then only the artifacts cite them.
    patched: bool,
    pub groups: BTreeMap<u32, Group>,
    /// Per table, its flows' positions by priority, then file order.
    tables: BTreeMap<u8, Vec<u32>>,
    /// Per table, the fields its flows match (sorted).
    keys: BTreeMap<u8, Vec<Field>>,
    /// Per table, its flows and each field's matches among them: what
    /// `keys` follows when a patch adds or removes a few flows.
    counts: BTreeMap<u8, TableCounts>,
    /// Table lookups by the values read, carried across rebuilds
    /// (`lookup_cache.rs`).
    cache: RefCell<LookupCache<Applicable>>,
    /// When set, what runs read is noted here ([`Bridge::record`]).
    reads: RefCell<Option<Reads>>,
}

/// What runs of a bridge read: each table with the values of the fields
/// its flows match, and each group executed, each with the set of original
/// packets that got there (a flow that cannot match those values, or those
/// packets, never mattered). `incremental.rs` intersects changed flows with
/// it to find the packets whose outcomes a change can alter.
#[derive(Clone, Debug, Default)]
pub struct Reads {
    pub tables: BTreeMap<(u8, Vec<(Field, Val)>), Bdd>,
    pub groups: BTreeMap<u32, Bdd>,
}

impl Reads {
    pub fn merge(&mut self, other: Reads) {
        for (k, b) in other.tables {
            union_moved_into(&mut self.tables, k, b);
        }
        for (g, b) in other.groups {
            union_moved_into(&mut self.groups, g, b);
        }
    }

    /// [`Reads::merge`] for reads mostly within these ones (a splice's:
    /// [`union_absorbed_into`]); whether these grew.
    pub fn absorb(&mut self, other: Reads) -> bool {
        let mut grew = false;
        for (k, b) in other.tables {
            grew |= union_absorbed_into(&mut self.tables, k, b);
        }
        for (g, b) in other.groups {
            grew |= union_absorbed_into(&mut self.groups, g, b);
        }
        grew
    }
}

/// `m[k] ∪= b`, `b` moved in when `m` has no `k` (a merged footprint's
/// new reads: no copy of the set).
pub fn union_moved_into<K: Ord>(m: &mut BTreeMap<K, Bdd>, k: K, b: Bdd) {
    match m.entry(k) {
        std::collections::btree_map::Entry::Occupied(mut e) => {
            let u = e.get().or(&b);
            e.insert(u);
        }
        std::collections::btree_map::Entry::Vacant(e) => {
            e.insert(b);
        }
    }
}

/// `m[k] ∪= b`, `b` moved in when `m` has no `k`, and nothing built when
/// `b` is already within `m[k]`: a re-traced VM's new reads (those of the
/// packets a change met) are mostly within its kept reads, which still
/// hold those packets, and an `or` builds a whole new BDD even then.
/// Whether `m` changed.
pub fn union_absorbed_into<K: Ord>(m: &mut BTreeMap<K, Bdd>, k: K, b: Bdd) -> bool {
    match m.entry(k) {
        std::collections::btree_map::Entry::Occupied(mut e) => {
            if within(&b, e.get()) {
                return false;
            }
            let u = e.get().or(&b);
            e.insert(u);
            true
        }
        std::collections::btree_map::Entry::Vacant(e) => {
            e.insert(b);
            true
        }
    }
}

/// Whether `a ⊆ b`, found by walking `a ∧ ¬b` without building it.
pub fn within(a: &Bdd, b: &Bdd) -> bool {
    Bdd::check_binary_op(usize::MAX, a, b, biodivine_lib_bdd::op_function::and_not)
        .is_some_and(|(not_empty, _)| !not_empty)
}

/// Whether `a ∩ b = ∅`, found by walking `a ∧ b` without building it.
pub fn disjoint_sets(a: &Bdd, b: &Bdd) -> bool {
    Bdd::check_binary_op(usize::MAX, a, b, biodivine_lib_bdd::op_function::and)
        .is_some_and(|(not_empty, _)| !not_empty)
}

/// `m[k] ∪= b`.
pub fn union_into<K: Ord>(m: &mut BTreeMap<K, Bdd>, k: K, b: &Bdd) {
    match m.entry(k) {
        std::collections::btree_map::Entry::Occupied(mut e) => {
            let u = e.get().or(b);
            e.insert(u);
        }
        std::collections::btree_map::Entry::Vacant(e) => {
            e.insert(b.clone());
        }
    }
}

#[derive(Debug, Clone, thiserror::Error)]
#[error("{at}: {source}")]
pub struct FlowError {
    pub at: String,
    pub source: OfctlError,
}

const MAX_RESUBMIT: usize = 64;

/// The position of a handle whose flow is gone.
const GONE: u32 = u32::MAX;

/// Parsed flows by their (match, actions) text, for [`Bridge::rebuilt`].
type Parsed<'a> = HashMap<(&'a str, &'a str), Vec<&'a Flow>>;

impl Bridge {
    pub fn new(
        name: &str,
        index: u32,
        flows: &[FlowText],
        groups: &[GroupText],
    ) -> Result<Bridge, FlowError> {
        Bridge::build(name, index, flows, groups, HashMap::new())
    }

    /// The bridge `old` becomes with these flows and groups: a flow whose
    /// match and actions text `old` already parsed takes a copy of the
    /// parsed form (an update of a bridge of thousands of flows parses only
    /// the few it added). `old` is left as it was. Every flow takes a new
    /// handle (no path through `old` names one of them).
    pub fn rebuilt(
        old: &Bridge,
        flows: &[FlowText],
        groups: &[GroupText],
    ) -> Result<Bridge, FlowError> {
        let mut parsed: Parsed = HashMap::new();
        for f in old.flows.iter().rev() {
            parsed
                .entry((f.text.matches.as_str(), f.text.actions.as_str()))
                .or_default()
                .push(f);
        }
        let mut b = Bridge::build(&old.name, old.index, flows, groups, parsed)?;
        // every flow takes a number `old` never gave: no path kept from
        // `old` names a flow of this bridge (each is traced again)
        let first = old.at.len() as u32;
        b.handles.iter_mut().for_each(|h| *h += first);
        let mut at = vec![GONE; old.at.len()];
        at.append(&mut b.at);
        b.at = at;
        Ok(b)
    }

    /// `old` with its flows moved to their new positions (`moved`: old
    /// position → new, flows paired by their text, `file:line` aside;
    /// `None`: the same flows), patched where `moved` says the flows
    /// changed: only the middle's new flows are parsed, the flows after it
    /// shift in one move, and the tables and their fields follow the flows
    /// added and removed. A change of a few flows of tens of thousands (a
    /// Hoverboard) neither hashes, clones nor re-sorts the rest. A carried
    /// flow keeps its handle; a new one takes a number never given before.
    /// `old` is left without flows (its cache and keys stay, for
    /// [`Bridge::carry_cache`]); on an error it is left as it was.
    pub(crate) fn patched(
        old: &mut Bridge,
        flows: &[FlowText],
        groups: &[GroupText],
        moved: Option<&Moves>,
    ) -> Result<Bridge, FlowError> {
        let n_old = old.flows.len();
        // the old middle, the new one, and per new middle position the old
        // flow carried there (each old flow carried at most once)
        let (om, nm, carried) = match moved {
            None if n_old == flows.len() => (0..0, 0..0, Vec::new()),
            None => return Bridge::rebuilt(old, flows, groups),
            Some(m) => {
                let (om, nm) = (m.old_middle(), m.new_middle());
                if m.old_len != n_old || m.new_len != flows.len() || m.middle.len() != om.len() {
                    return Bridge::rebuilt(old, flows, groups);
                }
                let mut carried: Vec<Option<usize>> = vec![None; nm.len()];
                for (i, j) in m.middle.iter().enumerate() {
                    let Some(j) = j else { continue };
                    let c = (*j as usize)
                        .checked_sub(nm.start)
                        .and_then(|k| carried.get_mut(k));
                    match c {
                        Some(c @ None) => *c = Some(i),
                        _ => return Bridge::rebuilt(old, flows, groups),
                    }
                }
                (om, nm, carried)
            }
        };
        // parse what is new before anything of `old` moves
        let mut fresh: Vec<Option<Flow>> = Vec::with_capacity(nm.len());
        for (f, c) in flows[nm.clone()].iter().zip(&carried) {
            fresh.push(match c {
                Some(_) => None,
                None => {
                    let e = |source| FlowError {
                        at: f.at.clone(),
                        source,
                    };
                    Some(Flow {
                        text: f.clone(),
                        matches: ofctl::parse_match(&f.matches).map_err(e)?,
                        actions: ofctl::parse_actions(&f.actions).map_err(e)?,
                    })
                }
            });
        }
        let gs = Bridge::patched_groups(old, groups)?;
        // the flows: the old middle out, the new one in (its carried flows
        // moved, not cloned; their `file:line` is left as parsed: comparing
        // and copying every carried flow's was 41% of an update that edits
        // two Hoverboards at 100k VMs; citations read the artifacts, see
        // [`Bridge::cite`])
        let mut fl = std::mem::take(&mut old.flows);
        let mut out: Vec<Flow> = fl[om.clone()].iter_mut().map(std::mem::take).collect();
        let mut counts = std::mem::take(&mut old.counts);
        let mut refields = BTreeSet::new();
        // the old middle's flows, each with its new position (`None`: gone)
        let old_middle = moved.map_or(&[][..], |m| m.middle.as_slice());
        for (f, to) in out.iter().zip(old_middle) {
            if to.is_none() {
                refields.extend(count(&mut counts, f, false));
            }
        }
        let middle: Vec<Flow> = carried
            .iter()
            .zip(fresh)
            .map(|(c, f)| match (c, f) {
                (Some(i), _) => std::mem::take(&mut out[*i]),
                (None, f) => f.unwrap_or_default(),
            })
            .collect();
        for (f, c) in middle.iter().zip(&carried) {
            if c.is_none() {
                refields.extend(count(&mut counts, f, true));
            }
        }
        fl.splice(om.clone(), middle);
        // handles: the flows not carried lose theirs, new flows take new
        // ones, and every flow that moved is found where it is now
        let mut handles = std::mem::take(&mut old.handles);
        let mut at = std::mem::take(&mut old.at);
        for (&h, to) in handles[om.clone()].iter().zip(old_middle) {
            if to.is_none() {
                at[h as usize] = GONE;
            }
        }
        let mid_handles: Vec<u32> = carried
            .iter()
            .map(|c| match c {
                Some(i) => handles[om.start + i],
                None => {
                    at.push(GONE);
                    (at.len() - 1) as u32
                }
            })
            .collect();
        handles.splice(om.clone(), mid_handles);
        let shifted = match n_old == fl.len() {
            true => nm.clone(),
            false => nm.start..fl.len(),
        };
        for j in shifted {
            at[handles[j] as usize] = j as u32;
        }
        // tables: positions renumbered, the flows gone dropped, the new
        // ones put in their place by priority
        let mut tables = std::mem::take(&mut old.tables);
        if let Some(m) = moved {
            let in_order = m.in_order();
            let mut added: BTreeMap<u8, Vec<u32>> = BTreeMap::new();
            for (k, c) in carried.iter().enumerate() {
                if c.is_none() {
                    let j = nm.start + k;
                    added.entry(fl[j].text.table).or_default().push(j as u32);
                }
            }
            for (t, v) in tables.iter_mut() {
                v.retain_mut(|p| match m.get(*p as usize) {
                    Some(j) => {
                        *p = j;
                        true
                    }
                    None => false,
                });
                let new = added.remove(t).unwrap_or_default();
                place(&fl, v, new, in_order);
            }
            for (t, new) in added {
                let v = tables.entry(t).or_default();
                place(&fl, v, new, true);
            }
            tables.retain(|_, v| !v.is_empty());
        }
        // fields: only tables whose matched fields changed are read again
        let mut keys = old.keys.clone();
        for t in refields {
            match counts.get(&t) {
                Some(c) if c.flows > 0 => {
                    keys.insert(t, c.keys());
                }
                _ => {
                    keys.remove(&t);
                    counts.remove(&t);
                }
            }
        }
        Ok(Bridge {
            name: old.name.clone(),
            index: old.index,
            flows: fl,
            groups: gs,
            tables,
            keys,
            counts,
            handles,
            at,
            patched: true,
            cache: RefCell::new(LookupCache::default()),
            reads: RefCell::new(None),
        })
    }

    /// `groups` parsed, a group whose text is the same taking `old`'s
    /// parsed buckets (`old` is left without groups). Of two lines with one
    /// id the last is the group, as in [`Bridge::new`] (OVS refuses such a
    /// bundle: PUSH-1's finding).
    fn patched_groups(
        old: &mut Bridge,
        groups: &[GroupText],
    ) -> Result<BTreeMap<u32, Group>, FlowError> {
        let last: BTreeMap<u32, &GroupText> = groups.iter().map(|g| (g.id, g)).collect();
        // parsed before anything of `old` moves (an error leaves it as it was)
        let mut parsed: BTreeMap<u32, Vec<Vec<Action>>> = BTreeMap::new();
        for (id, g) in &last {
            let same = old
                .groups
                .get(id)
                .is_some_and(|k| k.text.kind == g.kind && k.text.buckets == g.buckets);
            if !same {
                let b = ofctl::parse_buckets(&g.buckets).map_err(|source| FlowError {
                    at: g.at.clone(),
                    source,
                })?;
                parsed.insert(*id, b);
            }
        }
        let mut old_groups = std::mem::take(&mut old.groups);
        let mut gs = BTreeMap::new();
        for (id, g) in last {
            let buckets = match parsed.remove(&id) {
                Some(b) => b,
                None => old_groups
                    .remove(&id)
                    .map(|k| k.buckets)
                    .unwrap_or_default(),
            };
            gs.insert(
                id,
                Group {
                    text: g.clone(),
                    buckets,
                },
            );
        }
        Ok(gs)
    }

    fn build<'a>(
        name: &str,
        index: u32,
        flows: &'a [FlowText],
        groups: &[GroupText],
        mut parsed: Parsed<'a>,
    ) -> Result<Bridge, FlowError> {
        let mut fl = Vec::new();
        for f in flows {
            let e = |source| FlowError {
                at: f.at.clone(),
                source,
            };
            let known = parsed
                .get_mut(&(f.matches.as_str(), f.actions.as_str()))
                .and_then(Vec::pop);
            let (matches, actions) = match known {
                Some(p) => (p.matches.clone(), p.actions.clone()),
                None => (
                    ofctl::parse_match(&f.matches).map_err(e)?,
                    ofctl::parse_actions(&f.actions).map_err(e)?,
                ),
            };
            fl.push(Flow {
                text: f.clone(),
                matches,
                actions,
            });
        }
        let mut gs = BTreeMap::new();
        for g in groups {
            let buckets = ofctl::parse_buckets(&g.buckets).map_err(|source| FlowError {
                at: g.at.clone(),
                source,
            })?;
            gs.insert(
                g.id,
                Group {
                    text: g.clone(),
                    buckets,
                },
            );
        }
        Ok(Bridge::assemble(name, index, fl, gs))
    }

    /// A bridge of these parsed flows and groups: its tables (flows by
    /// priority) and the fields each table matches.
    fn assemble(name: &str, index: u32, fl: Vec<Flow>, gs: BTreeMap<u32, Group>) -> Bridge {
        let mut tables: BTreeMap<u8, Vec<u32>> = BTreeMap::new();
        let mut counts: BTreeMap<u8, TableCounts> = BTreeMap::new();
        for (i, f) in fl.iter().enumerate() {
            tables.entry(f.text.table).or_default().push(i as u32);
            count(&mut counts, f, true);
        }
        let keys = counts.iter().map(|(t, c)| (*t, c.keys())).collect();
        for v in tables.values_mut() {
            sort_by_priority(&fl, v);
        }
        let n = fl.len() as u32;
        Bridge {
            name: name.to_string(),
            index,
            flows: fl,
            groups: gs,
            tables,
            keys,
            counts,
            handles: (0..n).collect(),
            at: (0..n).collect(),
            patched: false,
            cache: RefCell::new(LookupCache::default()),
            reads: RefCell::new(None),
        }
    }

    /// Takes over `old`'s cached table lookups that this bridge would
    /// compute alike: same table, same fields matched, and `keep` says no
    /// flow added or removed there can match the values (`flows` maps
    /// `old`'s flow indices to this bridge's; a flow it lacks drops the
    /// entry). Saves an update re-tracing through a rebuilt bridge from
    /// recomputing every lookup. The lookups are not visited here: the
    /// change is logged and each lookup thinned when next read
    /// (`lookup_cache.rs`; a pass over a Hoverboard's whole cache per
    /// rebuild was half of rebuilding it).
    pub(crate) fn carry_cache(
        &self,
        old: Bridge,
        flows: Option<&Moves>,
        keep: impl Fn(u8, &[(Field, Val)]) -> bool + 'static,
    ) {
        let mut refields: Vec<u8> = old
            .keys
            .keys()
            .chain(self.keys.keys())
            .filter(|t| old.keys.get(t) != self.keys.get(t))
            .copied()
            .collect();
        refields.sort_unstable();
        refields.dedup();
        let edit = CacheEdit {
            refields,
            keep: Box::new(keep),
            flows: flows.cloned(),
        };
        let cache = old.cache.into_inner().carried(edit, |t| self.keys.get(&t));
        let mut mine = self.cache.borrow_mut();
        // a bridge looked up before taking the cache over keeps its own
        // (dropping lookups is always sound; never the case in an update)
        if mine.len() == 0 {
            *mine = cache;
        }
    }

    /// The size of the lookup cache: (table lookups cached, flows listed
    /// in them, BDD nodes they hold) — what a full verification's memory
    /// beyond the flows is.
    pub fn cache_size(&self) -> (usize, usize, usize) {
        let cache = self.cache.borrow();
        let listed = cache.values().map(|a| a.len()).sum();
        let nodes = cache
            .values()
            .flat_map(|a| a.iter())
            .map(|a| a.m.size() + a.shadow.size())
            .sum();
        (cache.len(), listed, nodes)
    }

    /// The flow of handle `h` (`None`: it is gone). Its `text.at` is
    /// where it was when first parsed; [`Bridge::cite`] says where it is.
    pub fn flow(&self, h: u32) -> Option<&Flow> {
        self.flows.get(*self.at.get(h as usize)? as usize)
    }

    /// The text of the flow of handle `h`, `file:line` included, as `a`
    /// (the artifacts this bridge was built or patched from) has it; a
    /// bridge never patched also answers from its own flows (a network
    /// built for a plan's intermediate state, cited without artifacts).
    pub fn cite<'a>(&'a self, a: &'a crate::artifacts::Artifacts, h: u32) -> Option<&'a FlowText> {
        let at = *self.at.get(h as usize)? as usize;
        match a.flows.get(&self.name).and_then(|fs| fs.get(at)) {
            Some(f) => Some(f),
            None if !self.patched => self.flows.get(at).map(|f| &f.text),
            None => None,
        }
    }

    /// The flows of `table`, by priority (then file order).
    pub fn table_flows(&self, table: u8) -> impl Iterator<Item = &Flow> {
        let ids = self.tables.get(&table).map_or(&[][..], Vec::as_slice);
        ids.iter().map(|&i| &self.flows[i as usize])
    }

    /// Starts noting what runs read (until [`Bridge::recorded`]).
    pub fn record(&self) {
        *self.reads.borrow_mut() = Some(Reads::default());
    }

    /// What runs read since [`Bridge::record`]; stops noting.
    pub fn recorded(&self) -> Reads {
        self.reads.borrow_mut().take().unwrap_or_default()
    }

    /// The flows of `table` that may match `pkt`, each with the union of
    /// the earlier flows that overlap it (its shadow; a flow of its own
    /// priority with other actions shadows nothing of it: either may win,
    /// see the module's note). Overlap is decided
    /// first on the constraints (two exact values of one field never
    /// overlap; flows are indexed by their exact `nw_dst`), so a table of k
    /// host routes costs O(k), not O(k²) BDD operations.
    fn applicable(&self, space: &Space, pkt: &Pkt, table: u8) -> Rc<Vec<Applicable>> {
        let key: Vec<Val> = self
            .keys
            .get(&table)
            .into_iter()
            .flatten()
            .map(|f| pkt.read(*f))
            .collect();
        if let Some(r) = self.reads.borrow_mut().as_mut() {
            let fields = self.keys.get(&table).into_iter().flatten().copied();
            let k = (table, fields.zip(key.iter().copied()).collect());
            union_into(&mut r.tables, k, &pkt.set);
        }
        let key = (table, key);
        let fields = self.keys.get(&table).map_or(&[][..], Vec::as_slice);
        if let Some(hit) = self.cache.borrow_mut().get(&key, fields) {
            return hit;
        }
        let mut out = Vec::new();
        // earlier exact flows: their effective constraints and match, and
        // which flow each is
        let mut earlier: Vec<(Vec<Constraint>, Bdd, u32)> = Vec::new();
        let mut by_dst: HashMap<u128, Vec<usize>> = HashMap::new();
        let mut any_dst: Vec<usize> = Vec::new();
        let full = Field::NwDst.mask();
        for &i in self.tables.get(&table).into_iter().flatten() {
            let f = &self.flows[i as usize];
            // A field the path already fixed rules most flows out (a
            // Hoverboard's 50k routes are one tenant's per `reg6`): decide
            // that before building any BDD, which was most of a lookup.
            let fixed_mismatch = f.matches.iter().any(|c| match pkt.read(c.field) {
                Val::Const(x) => (x & c.mask) != (c.value & c.mask),
                _ => false,
            });
            if fixed_mismatch {
                continue;
            }
            let mut m = space.all();
            let mut exact = true;
            let mut possible = true;
            let mut eff = Vec::new();
            for c in &f.matches {
                if let Val::Alias(g) = pkt.read(c.field) {
                    eff.push(Constraint {
                        field: g,
                        ..c.clone()
                    });
                }
                match pkt.constrain(space, c) {
                    None => {
                        possible = false;
                        break;
                    }
                    Some((b, e)) => {
                        m = m.and(&b);
                        exact &= e;
                    }
                }
            }
            if !possible || m.is_false() {
                continue;
            }
            let dst = eff
                .iter()
                .find(|c| c.field == Field::NwDst && c.mask == full)
                .map(|c| c.value);
            let candidates: Vec<usize> = match dst {
                Some(d) => {
                    let mut v: Vec<usize> = by_dst.get(&d).cloned().unwrap_or_default();
                    v.extend(&any_dst);
                    v
                }
                None => (0..earlier.len()).collect(),
            };
            let mut shadow = space.none();
            for j in candidates {
                let (ec, em, e) = &earlier[j];
                let g = &self.flows[*e as usize];
                if g.text.priority == f.text.priority && g.actions != f.actions {
                    continue;
                }
                if !disjoint(&eff, ec) {
                    shadow = shadow.or(em);
                }
            }
            out.push(Applicable {
                flow: i,
                m: m.clone(),
                shadow,
            });
            if exact {
                match dst {
                    Some(d) => by_dst.entry(d).or_default().push(earlier.len()),
                    None => any_dst.push(earlier.len()),
                }
                earlier.push((eff, m, i));
            }
        }
        let rc = Rc::new(out);
        self.cache.borrow_mut().insert(key, rc.clone());
        rc
    }

    /// Runs `table` on `pkt`; appends every outcome to `out`.
    pub fn run(
        &self,
        space: &Space,
        pkt: &Pkt,
        table: u8,
        path: &[Hop],
        keep_drops: bool,
        out: &mut Vec<Outcome>,
    ) {
        self.run_depth(space, pkt, table, path, keep_drops, out, 0)
    }

    #[allow(clippy::too_many_arguments)]
    fn run_depth(
        &self,
        space: &Space,
        pkt: &Pkt,
        table: u8,
        path: &[Hop],
        keep_drops: bool,
        out: &mut Vec<Outcome>,
        depth: usize,
    ) {
        if depth > MAX_RESUBMIT {
            out.push(self.end(
                pkt.clone(),
                path,
                End::Drop {
                    why: "resubmit depth exceeded (a loop?)".into(),
                },
            ));
            return;
        }
        let app = self.applicable(space, pkt, table);
        let mut covered = space.none();
        for a in app.iter() {
            let hit = pkt.set.and(&a.m);
            if hit.is_false() {
                continue;
            }
            if keep_drops {
                covered = covered.or(&hit);
            }
            let hit = if a.shadow.is_false() {
                hit
            } else {
                hit.and_not(&a.shadow)
            };
            if hit.is_false() {
                continue;
            }
            let mut p = path.to_vec();
            p.push(Hop::Flow {
                bridge: self.index,
                handle: self.handles[a.flow as usize],
            });
            let next = Pkt {
                set: hit,
                over: pkt.over.clone(),
            };
            let acts = &self.flows[a.flow as usize].actions;
            self.exec(space, next, acts, &p, keep_drops, out, depth);
        }
        if keep_drops {
            let m = pkt.set.and_not(&covered);
            if !m.is_false() {
                let p = Pkt {
                    set: m,
                    over: pkt.over.clone(),
                };
                out.push(self.end(
                    p,
                    path,
                    End::Drop {
                        why: format!("table {table} miss"),
                    },
                ));
            }
        }
    }

    fn end(&self, pkt: Pkt, path: &[Hop], end: End) -> Outcome {
        Outcome {
            device: self.index,
            pkt,
            path: path.to_vec(),
            end,
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn exec(
        &self,
        space: &Space,
        mut pkt: Pkt,
        actions: &[Action],
        path: &[Hop],
        keep_drops: bool,
        out: &mut Vec<Outcome>,
        depth: usize,
    ) {
        let mut emitted = false;
        for a in actions {
            match a {
                Action::Drop => {}
                Action::Set(f, v) => {
                    pkt.over.insert(*f, Val::Const(*v));
                }
                Action::Move { src, dst } => {
                    let v = pkt.read(*src);
                    pkt.over.insert(*dst, v);
                }
                Action::Resubmit(t) => {
                    emitted = true;
                    self.run_depth(space, &pkt, *t, path, keep_drops, out, depth + 1);
                }
                Action::Output(port) => {
                    emitted = true;
                    let end = match port {
                        1 => match (pkt.read(Field::TunId), pkt.read(Field::TunDst)) {
                            (Val::Const(id), Val::Const(dst)) => End::Tunnel {
                                tun_id: id,
                                tun_dst: dst as u32,
                            },
                            _ => End::Drop {
                                why: "output to the tunnel port without a constant tun_id/tun_dst"
                                    .into(),
                            },
                        },
                        2 => End::Uplink,
                        // OpenFlow never sends a packet back out of its
                        // in_port with output:P (only with IN_PORT).
                        p if pkt.read(Field::InPort) == Val::Const(u128::from(*p)) => {
                            // kept (as a drop) so a path shows the flows it matched
                            if keep_drops {
                                let why = "output to its own in_port: OpenFlow skips it".into();
                                out.push(self.end(pkt.clone(), path, End::Drop { why }));
                            }
                            continue;
                        }
                        p => End::Deliver { port: *p },
                    };
                    out.push(self.end(pkt.clone(), path, end));
                }
                Action::InPort => {
                    emitted = true;
                    let end = match pkt.read(Field::InPort) {
                        Val::Const(1) => match (pkt.read(Field::TunId), pkt.read(Field::TunDst)) {
                            (Val::Const(id), Val::Const(dst)) => End::Tunnel {
                                tun_id: id,
                                tun_dst: dst as u32,
                            },
                            _ => End::Drop {
                                why: "IN_PORT on the tunnel port without a constant tun_id/tun_dst"
                                    .into(),
                            },
                        },
                        Val::Const(2) => End::Uplink,
                        Val::Const(p) => End::Deliver { port: p as u32 },
                        _ => End::Drop {
                            why: "IN_PORT unknown".into(),
                        },
                    };
                    out.push(self.end(pkt.clone(), path, end));
                }
                Action::Group(g) => {
                    emitted = true;
                    if let Some(r) = self.reads.borrow_mut().as_mut() {
                        union_into(&mut r.groups, *g, &pkt.set);
                    }
                    match self.groups.get(g) {
                        None => out.push(self.end(
                            pkt.clone(),
                            path,
                            End::Drop {
                                why: format!("group {g} does not exist"),
                            },
                        )),
                        Some(group) => {
                            for (b, bucket) in group.buckets.iter().enumerate() {
                                let mut p = path.to_vec();
                                p.push(Hop::Group {
                                    bridge: self.index,
                                    group: *g,
                                    bucket: b as u32,
                                });
                                self.exec(
                                    space,
                                    pkt.clone(),
                                    bucket,
                                    &p,
                                    keep_drops,
                                    out,
                                    depth + 1,
                                );
                            }
                        }
                    }
                }
                Action::Ct { table, nat } => {
                    match nat {
                        Some(Nat::Src { addr, lo, hi }) => {
                            pkt.over.insert(Field::NwSrc, Val::Const(u128::from(*addr)));
                            let port = if lo == hi {
                                Val::Const(u128::from(*lo))
                            } else {
                                Val::Unknown
                            };
                            pkt.over.insert(Field::TpSrc, port);
                        }
                        Some(Nat::Reverse) => {
                            pkt.over.insert(Field::NwDst, Val::Unknown);
                            pkt.over.insert(Field::TpDst, Val::Unknown);
                        }
                        None => {}
                    }
                    pkt.over.insert(Field::CtState, Val::Unknown);
                    if let Some(t) = table {
                        emitted = true;
                        self.run_depth(space, &pkt, *t, path, keep_drops, out, depth + 1);
                    }
                }
            }
        }
        if !emitted && keep_drops {
            out.push(self.end(
                pkt,
                path,
                End::Drop {
                    why: "dropped by the flow's actions".into(),
                },
            ));
        }
    }
}

/// Whether two constraint lists (on original header fields) can never hold
/// together: some field is fixed to different values on common mask bits.
/// A table's flows, and per field its flows match, how many matches.
#[derive(Default)]
struct TableCounts {
    flows: u32,
    fields: Vec<(Field, u32)>,
}

impl TableCounts {
    /// The fields matched, sorted.
    fn keys(&self) -> Vec<Field> {
        let mut k: Vec<Field> = self
            .fields
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(f, _)| *f)
            .collect();
        k.sort_unstable();
        k
    }
}

/// Counts flow `f` into its table (`add`) or out of it; returns the table
/// if the fields it matches (or whether it has flows) changed. A table
/// matches a few fields, so a linear search beats a map.
fn count(counts: &mut BTreeMap<u8, TableCounts>, f: &Flow, add: bool) -> Option<u8> {
    let c = counts.entry(f.text.table).or_default();
    let step = |n: &mut u32| {
        let was = *n;
        *n = if add { was + 1 } else { was.saturating_sub(1) };
        (was == 0) != (*n == 0)
    };
    let mut changed = step(&mut c.flows);
    for m in &f.matches {
        let at = match c.fields.iter().position(|(x, _)| *x == m.field) {
            Some(at) => at,
            None => {
                c.fields.push((m.field, 0));
                c.fields.len() - 1
            }
        };
        changed |= step(&mut c.fields[at].1);
    }
    changed.then_some(f.text.table)
}

/// Sorts a table's flow positions by priority, then file order: on the
/// pairs, without reading a flow per comparison.
fn sort_by_priority(fl: &[Flow], v: &mut Vec<u32>) {
    let mut by: Vec<(Reverse<u16>, u32)> = v
        .iter()
        .map(|&i| (Reverse(fl[i as usize].text.priority), i))
        .collect();
    by.sort_unstable();
    v.clear();
    v.extend(by.into_iter().map(|(_, i)| i));
}

/// Puts the flows at positions `new` (of `fl`) into table `v` (positions
/// by priority, then file order, if `sorted`): a few are inserted where
/// they belong, more are sorted in with the rest.
fn place(fl: &[Flow], v: &mut Vec<u32>, new: Vec<u32>, sorted: bool) {
    let key = |i: u32| (Reverse(fl[i as usize].text.priority), i);
    if sorted && new.len() <= 32 {
        for j in new {
            let at = v.partition_point(|&q| key(q) < key(j));
            v.insert(at, j);
        }
        return;
    }
    v.extend(new);
    sort_by_priority(fl, v);
}

fn disjoint(a: &[Constraint], b: &[Constraint]) -> bool {
    a.iter().any(|x| {
        b.iter().any(|y| {
            x.field == y.field && {
                let m = x.mask & y.mask;
                (x.value & m) != (y.value & m)
            }
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::space::{Field, Space};
    use proptest::prelude::*;

    /// A set of packets: a union of (TCP destination port, source port)
    /// prefixes, so sets overlap, nest and miss each other.
    fn set(space: &Space, cubes: &[(u16, u8, u16, u8)]) -> Bdd {
        let mut s = space.none();
        for &(d, dl, p, pl) in cubes {
            let mask = |len: u8| (0xffffu128 << (16 - u32::from(len % 17))) & 0xffff;
            let c = space
                .field_eq(Field::TpDst, u128::from(d), mask(dl))
                .and(&space.field_eq(Field::TpSrc, u128::from(p), mask(pl)));
            s = s.or(&c);
        }
        s
    }

    proptest! {
        /// The walks without building agree with building the set and
        /// asking whether it is empty (the library's check reports
        /// non-emptiness).
        #[test]
        fn within_and_disjoint_agree_with_built_sets(
            a in prop::collection::vec((any::<u16>(), 0..17u8, any::<u16>(), 0..17u8), 0..4),
            b in prop::collection::vec((any::<u16>(), 0..17u8, any::<u16>(), 0..17u8), 0..4),
        ) {
            let space = Space::new();
            let (a, b) = (set(&space, &a), set(&space, &b));
            prop_assert_eq!(within(&a, &b), a.and_not(&b).is_false());
            prop_assert_eq!(within(&a, &a.or(&b)), true);
            prop_assert_eq!(disjoint_sets(&a, &b), a.and(&b).is_false());
            let mut m = BTreeMap::from([(0u8, b.clone())]);
            union_absorbed_into(&mut m, 0, a.clone());
            prop_assert!(m[&0].iff(&a.or(&b)).is_true());
        }
    }

    /// A flow from small numbers: few distinct flows, so texts repeat and
    /// a TCP port decides which wins; mostly of table 0, some of table 1,
    /// some matching an address instead (tables whose fields differ).
    fn flow(x: (u8, u8, u8)) -> FlowText {
        let (prio, port, out) = (x.0 % 3, x.1 % 4, x.2 % 3);
        let matches = match x.1 / 4 % 4 {
            3 => format!("ip,nw_dst=10.0.0.{port}"),
            _ => format!("tcp,tp_dst={}", 80 + u16::from(port)),
        };
        FlowText {
            table: u8::from(x.0 / 3 % 4 == 3),
            priority: 100 + u16::from(prio),
            cookie: 0,
            matches,
            actions: format!("output:{}", out + 1),
            at: String::new(),
        }
    }

    /// Each outcome as the flows' text its path ran and its end: what a
    /// path says, whatever handles name the flows.
    type Text = (u16, String, String);

    fn texts(b: &Bridge, outs: &[Outcome]) -> Vec<(Vec<Text>, End)> {
        let mut v: Vec<_> = outs
            .iter()
            .map(|o| {
                let path = o
                    .path
                    .iter()
                    .map(|h| match *h {
                        Hop::Flow { handle, .. } => {
                            let f = &b.flow(handle).expect("a fresh path's flow").text;
                            (f.priority, f.matches.clone(), f.actions.clone())
                        }
                        _ => (0, String::new(), String::new()),
                    })
                    .collect();
                (path, o.end.clone())
            })
            .collect();
        v.sort();
        v
    }

    proptest! {
        /// A chain of patches: a flow carried keeps its handle (naming an
        /// equal flow), a flow removed loses it for good, a flow added
        /// takes a number never given before, and every run reads as a
        /// bridge built from the same flows reads.
        #[test]
        fn patched_flows_keep_their_handles_and_run_as_built(
            flows in prop::collection::vec((any::<u8>(), any::<u8>(), any::<u8>()), 0..12),
            steps in prop::collection::vec(
                prop::collection::vec((0usize..14, proptest::option::of((any::<u8>(), any::<u8>(), any::<u8>()))), 1..4),
                1..5),
        ) {
            let space = Space::new();
            let mut cur: Vec<FlowText> = flows.into_iter().map(flow).collect();
            let mut b = Bridge::new("br", 0, &cur, &[]).unwrap();
            let mut given: std::collections::BTreeSet<u32> = b.handles.iter().copied().collect();
            let key = |f: &FlowText| (f.table, f.priority, f.matches.clone(), f.actions.clone());
            for edits in steps {
                let next: Vec<FlowText> = crate::edited(&cur, edits.into_iter().map(|(at, f)| (at, f.map(flow))).collect());
                let moved = crate::incremental::moves_by(&cur, &next, key);
                let before: Vec<(u32, (u8, u16, String, String))> = b
                    .handles
                    .iter()
                    .map(|&h| (h, key(&b.flow(h).unwrap().text)))
                    .collect();
                let old_len = b.at.len() as u32;
                let p = Bridge::patched(&mut b, &next, &[], moved.as_ref()).unwrap();
                let pairs = moved.as_ref().map_or_else(|| (0..cur.len() as u32).map(Some).collect(), Moves::to_vec);
                for (i, j) in pairs.into_iter().enumerate() {
                    if let Some(j) = j {
                        prop_assert_eq!(p.handles[j as usize], before[i].0, "a carried flow's handle");
                    }
                }
                for (h, k) in before {
                    if let Some(f) = p.flow(h) {
                        prop_assert_eq!(key(&f.text), k);
                    }
                }
                for (j, &h) in p.handles.iter().enumerate() {
                    prop_assert_eq!(p.at[h as usize], j as u32);
                    if h >= old_len {
                        prop_assert!(given.insert(h), "handle {} given twice", h);
                    }
                }
                let fresh = Bridge::new("br", 0, &next, &[]).unwrap();
                // the tables and their fields as a build reads them
                prop_assert_eq!(&p.tables, &fresh.tables);
                prop_assert_eq!(&p.keys, &fresh.keys);
                let all = Pkt { set: space.all(), over: BTreeMap::new() };
                let (mut a, mut f) = (Vec::new(), Vec::new());
                p.run(&space, &all, 0, &[], true, &mut a);
                fresh.run(&space, &all, 0, &[], true, &mut f);
                prop_assert_eq!(texts(&p, &a), texts(&fresh, &f));
                (b, cur) = (p, next);
            }
        }
    }

    /// A bridge built again (a pairing it cannot follow) gives no flow a
    /// handle the old bridge gave: every path kept from it names a gone flow.
    #[test]
    fn a_bridge_built_again_keeps_no_handle() {
        let cur: Vec<FlowText> = (0..3).map(|i| flow((i, i, i))).collect();
        let next: Vec<FlowText> = (0..2).map(|i| flow((i, i, i))).collect();
        let mut b = Bridge::new("br", 0, &cur, &[]).unwrap();
        let p = Bridge::patched(&mut b, &next, &[], None).unwrap();
        assert!((0..3).all(|h| p.flow(h).is_none()));
        assert_eq!(p.handles, [3, 4]);
        assert_eq!(p.flow(4).unwrap().text.matches, "tcp,tp_dst=81");
    }

    /// A carried flow is cited where the new artifacts have it: a line
    /// removed above it moves its `file:line`.
    #[test]
    fn a_patched_bridge_cites_its_flows_where_they_are_now() {
        let at = |fs: &mut Vec<FlowText>| {
            for (i, f) in fs.iter_mut().enumerate() {
                f.at = format!("br.flows:{}", i + 1);
            }
        };
        let mut cur: Vec<FlowText> = (0..3).map(|i| flow((i, i, i))).collect();
        at(&mut cur);
        let mut next = cur[1..].to_vec();
        at(&mut next);
        let mut b = Bridge::new("br", 0, &cur, &[]).unwrap();
        let moved = Moves::listed(vec![None, Some(0), Some(1)], 2);
        let p = Bridge::patched(&mut b, &next, &[], Some(&moved)).unwrap();
        let mut a = crate::artifacts::Artifacts::default();
        a.flows.insert("br".into(), next);
        assert!(p.cite(&a, 0).is_none());
        let f = p.cite(&a, 2).unwrap();
        assert_eq!(
            (f.matches.as_str(), f.at.as_str()),
            ("tcp,tp_dst=82", "br.flows:2")
        );
    }
}
