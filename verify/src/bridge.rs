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

mod build;

use build::TableCounts;

use crate::artifacts::{FlowText, GroupText};
use crate::lookup_cache::{FlowAt, LookupCache};
use crate::ofctl::{Action, Constraint, Nat, OfctlError};
use crate::space::{Field, Space};
use biodivine_lib_bdd::Bdd;
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
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

impl Bridge {
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
                        // no bucket, no copy: shown where drops are kept, so
                        // a counterexample names the group that lost them
                        Some(group) if group.buckets.is_empty() && keep_drops => {
                            out.push(self.end(
                                pkt.clone(),
                                path,
                                End::Drop {
                                    why: format!("group {g} has no buckets"),
                                },
                            ))
                        }
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
mod tests;
