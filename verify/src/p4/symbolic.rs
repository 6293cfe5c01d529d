//! netc.p4's ingress on *sets* of packets: every table of the program, as
//! BDDs over the fields the tables read.
//!
//! Expects: a [`Switch`] (the state its WriteRequest installs) and the
//! P4Info. Guarantees: [`Model::build`] partitions every packet a switch
//! port can receive (ingress port, VXLAN or not and its VNI, outer IPv4
//! destination, the innermost protocol, source, destination and
//! destination port) into [`SymOutcome`]s, following `p4/netc.p4`'s `apply`
//! block in the order [`super::ingress`] does for one packet: port_role →
//! port_tenant (host port, VNI ≠ 0; miss → drop) → acl (priority order,
//! default nop) → mcast (VXLAN to 224.0.0.0/4: the group's replicas) →
//! vip_local (host ports) / vip → one outcome per slot `idx < n` of the
//! vector → ecmp member → tunnel → underlay, else route → one outcome per
//! slot → route_member → underlay, else underlay on the outer destination.
//! The hash is not a BDD: a load-balanced or routed outcome carries its
//! [`Slot`], the condition `hash5 % n == idx` a concrete packet must meet
//! to take it (so every slot is a possible choice, as in `network.rs`).
//! `tests` checks the partition against the concrete interpreter on random
//! switches and packets (the property: same fate, same slot).

use super::ingress::{field_matches, Fate, PacketIn};
use super::request::{Action, EntryAction, P4Info, TableEntry};
use super::switch::Switch;
use biodivine_lib_bdd::{Bdd, BddPartialValuation, BddValuation, BddVariable, BddVariableSet};
use netc_compiler::functors::hash5_v4;

/// The packet fields the ingress tables read (bits, most significant first).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Key {
    Port,
    /// 1 when the packet arrives VXLAN-encapsulated.
    Vxlan,
    /// The VXLAN VNI (0 for plain IP).
    Vni,
    OuterDst,
    Proto,
    Src,
    Dst,
    Dport,
}

/// Field widths in variable order. OuterDst and Dst share one block, bit
/// by bit interleaved, so that `outer_dst == dst` (a plain IP packet has one
/// destination) is a small BDD.
const KEYS: [(Key, u32); 8] = [
    (Key::Port, 32),
    (Key::Vxlan, 1),
    (Key::Vni, 24),
    (Key::OuterDst, 32),
    (Key::Dst, 32),
    (Key::Proto, 8),
    (Key::Src, 32),
    (Key::Dport, 16),
];

/// The BDD variables of the packet fields.
pub struct Space {
    pub vars: BddVariableSet,
}

impl Key {
    fn offset_width(self) -> (u16, u32) {
        let mut off = 0u16;
        for (k, w) in KEYS {
            if k == self {
                return (off, w);
            }
            off += w as u16;
        }
        (off, 0)
    }
}

impl Default for Space {
    fn default() -> Self {
        Self::new()
    }
}

impl Space {
    pub fn new() -> Space {
        let n: u32 = KEYS.iter().map(|(_, w)| w).sum();
        Space {
            vars: BddVariableSet::new_anonymous(n as u16),
        }
    }
    fn var(&self, k: Key, bit_from_msb: u32) -> BddVariable {
        let i = match k {
            Key::OuterDst => Key::OuterDst.offset_width().0 as usize + 2 * bit_from_msb as usize,
            Key::Dst => Key::OuterDst.offset_width().0 as usize + 2 * bit_from_msb as usize + 1,
            _ => k.offset_width().0 as usize + bit_from_msb as usize,
        };
        BddVariable::from_index(i)
    }
    /// The BDD variables of the fields `keys` (to quantify them away).
    pub fn vars_of(&self, keys: &[Key]) -> Vec<BddVariable> {
        keys.iter()
            .flat_map(|k| (0..k.offset_width().1).map(move |b| self.var(*k, b)))
            .collect()
    }
    pub fn all(&self) -> Bdd {
        self.vars.mk_true()
    }
    pub fn none(&self) -> Bdd {
        self.vars.mk_false()
    }
    /// Packets whose `k` equals `value` on the bits of `mask`.
    pub fn masked(&self, k: Key, value: u128, mask: u128) -> Bdd {
        let w = k.offset_width().1;
        let mut clause = BddPartialValuation::empty();
        for b in 0..w {
            let bit = w - 1 - b;
            if (mask >> bit) & 1 == 1 {
                clause.set_value(self.var(k, b), (value >> bit) & 1 == 1);
            }
        }
        self.vars.mk_conjunctive_clause(&clause)
    }
    pub fn eq(&self, k: Key, value: u128) -> Bdd {
        self.masked(k, value, u128::MAX)
    }
    /// Packets whose `k` lies in `lo..=hi`: `k ≥ lo ∧ k ≤ hi`, built bit by
    /// bit from the least significant one.
    pub fn range(&self, k: Key, lo: u128, hi: u128) -> Bdd {
        let w = k.offset_width().1;
        let (mut ge, mut le) = (self.all(), self.all());
        for bit in 0..w {
            let x = self.vars.mk_var(self.var(k, w - 1 - bit));
            ge = if (lo >> bit) & 1 == 1 {
                x.and(&ge)
            } else {
                x.or(&ge)
            };
            le = if (hi >> bit) & 1 == 1 {
                x.not().or(&le)
            } else {
                x.not().and(&le)
            };
        }
        ge.and(&le)
    }
    /// The packets a switch port can receive: a plain IP packet has VNI 0
    /// and its one destination is both the outer and the innermost.
    pub fn universe(&self) -> Bdd {
        let vxlan = self.eq(Key::Vxlan, 1);
        let mut same = self.all();
        for b in 0..32 {
            let (o, d) = (
                self.vars.mk_var(self.var(Key::OuterDst, b)),
                self.vars.mk_var(self.var(Key::Dst, b)),
            );
            same = same.and(&o.iff(&d));
        }
        vxlan.or(&self.eq(Key::Vni, 0).and(&same))
    }
    /// A packet's bits.
    pub fn valuation(&self, p: &PacketIn) -> BddValuation {
        let mut v = BddValuation::all_false(self.vars.num_vars());
        let vals = [
            (Key::Port, u128::from(p.ingress_port)),
            (Key::Vxlan, u128::from(p.vxlan_vni.is_some())),
            (Key::Vni, u128::from(p.vxlan_vni.unwrap_or(0))),
            (Key::OuterDst, u128::from(p.outer_dst)),
            (Key::Proto, u128::from(p.proto)),
            (Key::Src, u128::from(p.src)),
            (Key::Dst, u128::from(p.dst)),
            (Key::Dport, u128::from(p.dport)),
        ];
        for (k, x) in vals {
            let w = k.offset_width().1;
            for b in 0..w {
                if (x >> (w - 1 - b)) & 1 == 1 {
                    v.set(self.var(k, b));
                }
            }
        }
        v
    }
    /// One packet of `set` (source port 0; see [`Model::witness`] for a
    /// slot), or None when `set` is empty. A counterexample is read by
    /// people, so the packet is plain IP, from the documentation client
    /// 198.51.100.7, TCP, when `set` has such packets (each preference is
    /// kept only when the set still has a packet with it).
    pub fn witness(&self, set: &Bdd) -> Option<PacketIn> {
        let mut set = set.clone();
        for pref in [
            self.eq(Key::Vxlan, 0),
            self.eq(Key::Src, 0xc633_6407),
            self.eq(Key::Proto, 6),
        ] {
            let narrowed = set.and(&pref);
            if !narrowed.is_false() {
                set = narrowed;
            }
        }
        let v = set.sat_witness()?;
        let get = |k: Key| {
            let w = k.offset_width().1;
            (0..w).fold(0u128, |acc, b| {
                (acc << 1) | u128::from(v.value(self.var(k, b)))
            })
        };
        Some(PacketIn {
            ingress_port: get(Key::Port) as u32,
            vxlan_vni: (get(Key::Vxlan) == 1).then(|| get(Key::Vni) as u32),
            outer_dst: get(Key::OuterDst) as u32,
            proto: get(Key::Proto) as u8,
            src: get(Key::Src) as u32,
            dst: get(Key::Dst) as u32,
            sport: 0,
            dport: get(Key::Dport) as u16,
        })
    }
}

/// A table key field: a packet field (symbolic) or a metadata value this
/// branch has fixed (concrete).
#[derive(Clone, Copy)]
enum KeyVal {
    Var(Key),
    Const(u128),
}

/// The choice a load-balanced or routed outcome needs: `hash5 % n == idx`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    pub n: u128,
    pub idx: u128,
}

/// A route slot's decision (p4_route → p4_route_member), kept even when the
/// underlay then drops, because the next hop is what ROUTE-1 checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RouteSlot {
    pub net: u32,
    pub len: u32,
    pub nexthop: u32,
}

/// One class of packets and its fate.
#[derive(Clone)]
pub struct SymOutcome {
    pub set: Bdd,
    /// For a multicast fate, the replicas *before* the egress prune (a
    /// packet is never sent back out of its ingress port).
    pub fate: Fate,
    pub slot: Option<Slot>,
    pub route: Option<RouteSlot>,
    /// Whether a vip / vip_local entry balanced it.
    pub balanced: bool,
    /// For a balanced outcome: which endpoint and which member its slot chose.
    pub lb: Option<LbChoice>,
}

/// What a vip / vip_local entry and its ecmp slot decided (AFF-1 compares it
/// across instances).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LbChoice {
    /// `vip` or `vip_local`.
    pub table: &'static str,
    /// The entry's exact key: (vni, vip, proto, port).
    pub endpoint: (u32, u32, u8, u16),
    /// The slot's `to_member` (mvni, member); None when the slot is empty.
    pub member: Option<(u32, u32)>,
}

/// A table lookup's result on part of a set.
struct Looked {
    action: Option<Action>,
    hit: bool,
    /// The hit entry's exact key values by field id (empty on a miss).
    exact: Vec<(u32, u128)>,
}

/// A switch's ingress as a partition of its packets.
pub struct Model {
    pub space: Space,
    pub outcomes: Vec<SymOutcome>,
    /// The packets port_tenant drops (host port, VNI not listed).
    pub edge_drop: Bdd,
}

struct Build<'a> {
    sw: &'a Switch,
    info: &'a P4Info,
    s: &'a Space,
}

fn arg(a: &Action, id: u32) -> u128 {
    a.params
        .iter()
        .find(|(p, _)| *p == id)
        .map_or(0, |(_, v)| *v)
}

impl Build<'_> {
    fn action_name(&self, a: &Option<Action>) -> &str {
        a.as_ref()
            .and_then(|a| self.info.actions.get(&a.id))
            .map_or("", |x| x.name.as_str())
    }

    fn entry_set(&self, e: &TableEntry, key: &[(u32, KeyVal)]) -> Bdd {
        let mut set = self.s.all();
        for (f, m) in &e.matches {
            let Some((_, kv)) = key.iter().find(|(k, _)| k == f) else {
                return self.s.none();
            };
            let part = match *kv {
                KeyVal::Const(c) => {
                    if field_matches(m, c) {
                        continue;
                    }
                    self.s.none()
                }
                KeyVal::Var(k) => {
                    use super::request::FieldMatch as M;
                    match m {
                        M::Exact(x) => self.s.eq(k, *x),
                        M::Lpm(x, len) => {
                            let mask = if *len == 0 {
                                0
                            } else {
                                (u128::from(u32::MAX) << (32 - len)) & u128::from(u32::MAX)
                            };
                            self.s.masked(k, *x, mask)
                        }
                        M::Ternary(x, k2) => self.s.masked(k, *x, *k2),
                        M::Range(a, b) => self.s.range(k, *a, *b),
                    }
                }
            };
            set = set.and(&part);
            if set.is_false() {
                break;
            }
        }
        set
    }

    /// Table `name` on the packets `within`: the hit sets in the order the
    /// concrete lookup prefers entries (highest priority, then longest
    /// prefix, then the first installed), then the miss set with the
    /// default entry's action (or none). Empty parts are left out.
    fn apply(&self, name: &str, key: &[(u32, KeyVal)], within: &Bdd) -> Vec<(Bdd, Looked)> {
        let Some((&tid, _)) = self.info.tables.iter().find(|(_, t)| t.name == name) else {
            return vec![(
                within.clone(),
                Looked {
                    action: None,
                    hit: false,
                    exact: Vec::new(),
                },
            )];
        };
        let mut ranked: Vec<(&TableEntry, (i32, u32))> = Vec::new();
        let mut default = None;
        for (e, _) in self.sw.entries.values().filter(|(e, _)| e.table_id == tid) {
            if e.is_default {
                default = Some(e);
                continue;
            }
            let lpm = e
                .matches
                .iter()
                .map(|(_, m)| {
                    if let super::request::FieldMatch::Lpm(_, l) = m {
                        *l
                    } else {
                        0
                    }
                })
                .sum();
            ranked.push((e, (e.priority, lpm)));
        }
        // stable: equal ranks keep installation-key order, as the concrete lookup
        ranked.sort_by_key(|r| std::cmp::Reverse(r.1));
        let mut rest = within.clone();
        let mut out = Vec::new();
        for (e, _) in ranked {
            if rest.is_false() {
                break;
            }
            let hit = self.entry_set(e, key).and(&rest);
            if hit.is_false() {
                continue;
            }
            rest = rest.and_not(&hit);
            out.push((
                hit,
                Looked {
                    action: self.resolve(e),
                    hit: true,
                    exact: e
                        .matches
                        .iter()
                        .filter_map(|(f, m)| match m {
                            super::request::FieldMatch::Exact(v) => Some((*f, *v)),
                            _ => None,
                        })
                        .collect(),
                },
            ));
        }
        if !rest.is_false() {
            let action = default.and_then(|e| self.resolve(e));
            out.push((
                rest,
                Looked {
                    action,
                    hit: false,
                    exact: Vec::new(),
                },
            ));
        }
        out
    }

    fn resolve(&self, e: &TableEntry) -> Option<Action> {
        match &e.action {
            Some(EntryAction::Action(a)) => Some(a.clone()),
            Some(EntryAction::Member(m)) => self.sw.member(e.table_id, *m).map(|(a, _)| a.clone()),
            None => None,
        }
    }
}

fn dropped(why: &str) -> Fate {
    Fate::Drop {
        why: why.to_string(),
    }
}

impl Model {
    /// The partition of every packet the switch can receive.
    pub fn build(sw: &Switch, info: &P4Info) -> Model {
        let s = Space::new();
        let b = Build { sw, info, s: &s };
        let mut out: Vec<SymOutcome> = Vec::new();
        let mut push = |set: Bdd, fate: Fate, slot, route, lb: Option<LbChoice>| {
            if !set.is_false() {
                out.push(SymOutcome {
                    set,
                    fate,
                    slot,
                    route,
                    balanced: lb.is_some(),
                    lb,
                });
            }
        };
        let all = s.universe();
        use KeyVal::{Const, Var};

        let mut host = s.none();
        for (set, l) in b.apply("port_role", &[(1, Var(Key::Port))], &all) {
            if l.hit && l.action.is_some() && b.action_name(&l.action) == "set_host_port" {
                host = host.or(&set);
            }
        }
        let checked = host.and(&s.eq(Key::Vxlan, 1)).and_not(&s.eq(Key::Vni, 0));
        let mut edge_drop = s.none();
        for (set, l) in b.apply(
            "port_tenant",
            &[(1, Var(Key::Port)), (2, Var(Key::Vni))],
            &checked,
        ) {
            if !(l.hit && l.action.is_some() && b.action_name(&l.action) == "nop") {
                edge_drop = edge_drop.or(&set);
            }
        }
        push(
            edge_drop.clone(),
            dropped("port_tenant: the host port may not send this VNI"),
            None,
            None,
            None,
        );
        let mut rest = all.and_not(&edge_drop);

        let l4 = [
            (1, Var(Key::Src)),
            (2, Var(Key::Dst)),
            (3, Var(Key::Proto)),
            (4, Var(Key::Dport)),
        ];
        let mut denied = s.none();
        for (set, l) in b.apply("acl", &l4, &rest) {
            if l.action.is_some() && b.action_name(&l.action) == "drop" {
                denied = denied.or(&set);
            }
        }
        push(denied.clone(), dropped("acl: denied"), None, None, None);
        rest = rest.and_not(&denied);

        let mc =
            rest.and(&s.eq(Key::Vxlan, 1))
                .and(&s.masked(Key::OuterDst, 0xe000_0000, 0xf000_0000));
        for (set, l) in b.apply("mcast", &[(1, Var(Key::Vni)), (2, Var(Key::Dst))], &mc) {
            if !(l.hit && l.action.is_some()) {
                continue;
            }
            rest = rest.and_not(&set);
            let group = l.action.as_ref().map_or(0, |a| arg(a, 1)) as u32;
            let fate = match sw.groups.get(&group) {
                None => dropped("mcast: the multicast group is not installed"),
                Some((replicas, _)) => Fate::Multicast {
                    group,
                    ports: replicas.iter().map(|(p, _)| *p).collect(),
                },
            };
            push(set, fate, None, None, None);
        }

        let lb_key = [
            (1, Var(Key::Vni)),
            (2, Var(Key::OuterDst)),
            (3, Var(Key::Proto)),
            (4, Var(Key::Dport)),
        ];
        let mut balanced: Vec<(Bdd, &str, Option<Action>, LbChoice)> = Vec::new();
        let choice = |table: &'static str, l: &Looked| {
            let k = |f: u32| l.exact.iter().find(|(x, _)| *x == f).map_or(0, |(_, v)| *v);
            LbChoice {
                table,
                endpoint: (k(1) as u32, k(2) as u32, k(3) as u8, k(4) as u16),
                member: None,
            }
        };
        for (set, l) in b.apply("vip_local", &lb_key, &rest.and(&host)) {
            if l.hit && l.action.is_some() {
                rest = rest.and_not(&set);
                let c = choice("vip_local", &l);
                balanced.push((set, "ecmp_local", l.action, c));
            }
        }
        for (set, l) in b.apply("vip", &lb_key, &rest) {
            if l.hit && l.action.is_some() {
                rest = rest.and_not(&set);
                let c = choice("vip", &l);
                balanced.push((set, "ecmp", l.action, c));
            }
        }
        // underlay on a next hop this branch has fixed
        let underlay_const = |nexthop: u128| -> Fate {
            let looked = b.apply("underlay", &[(1, Const(nexthop))], &s.all());
            match looked.first() {
                Some((_, l)) if b.action_name(&l.action) == "forward" => Fate::Unicast {
                    port: l.action.as_ref().map_or(0, |a| arg(a, 1)) as u32,
                    encap: None,
                },
                _ => dropped("underlay: no route to the next hop"),
            }
        };
        for (set, ecmp, lb, choice) in balanced {
            let n = lb.as_ref().map_or(0, |a| arg(a, 1));
            if n == 0 {
                push(set, dropped("lb: n = 0"), None, None, Some(choice));
                continue;
            }
            for idx in 0..n {
                let slot = Some(Slot { n, idx });
                let key = [
                    (1, Var(Key::OuterDst)),
                    (2, Var(Key::Proto)),
                    (3, Var(Key::Dport)),
                    (4, Const(idx)),
                ];
                for (part, m) in b.apply(ecmp, &key, &set) {
                    let (mvni, member) = match (&m.action, m.hit) {
                        (Some(a), true) => (arg(a, 1), arg(a, 2)),
                        _ => (0, 0),
                    };
                    let chosen = LbChoice {
                        member: (m.hit && m.action.is_some())
                            .then_some((mvni as u32, member as u32)),
                        ..choice.clone()
                    };
                    let t = b.apply("tunnel", &[(1, Const(mvni)), (2, Const(member))], &s.all());
                    let fate = match t.first() {
                        Some((_, l)) if l.hit && b.action_name(&l.action) == "encap" => {
                            let a = l.action.as_ref().expect("named, so present");
                            let underlay = arg(a, 1);
                            match underlay_const(underlay) {
                                Fate::Unicast { port, .. } => Fate::Unicast {
                                    port,
                                    encap: Some((mvni as u32, underlay as u32, arg(a, 2) as u64)),
                                },
                                other => other,
                            }
                        }
                        _ => dropped("tunnel: no tunnel entry for the chosen member"),
                    };
                    push(part, fate, slot, None, Some(chosen));
                }
            }
        }

        let mut routed = s.none();
        for (set, l) in b.apply("route", &[(1, Var(Key::OuterDst))], &rest) {
            if !(l.hit && l.action.is_some()) {
                continue;
            }
            routed = routed.or(&set);
            let a = l.action.clone().unwrap_or(Action {
                id: 0,
                params: Vec::new(),
            });
            let n = arg(&a, 3);
            if n == 0 {
                push(set, dropped("route: n = 0"), None, None, None);
                continue;
            }
            let (net, len) = (arg(&a, 1), arg(&a, 2));
            for idx in 0..n {
                let key = [(1, Const(net)), (2, Const(len)), (3, Const(idx))];
                let m = b.apply("route_member", &key, &s.all());
                let (fate, route) = match m.first() {
                    Some((_, l)) if l.hit && b.action_name(&l.action) == "set_nexthop" => {
                        let nh = l.action.as_ref().map_or(0, |a| arg(a, 1));
                        (
                            underlay_const(nh),
                            Some(RouteSlot {
                                net: net as u32,
                                len: len as u32,
                                nexthop: nh as u32,
                            }),
                        )
                    }
                    _ => (dropped("route_member: no next hop for this slot"), None),
                };
                push(set.clone(), fate, Some(Slot { n, idx }), route, None);
            }
        }
        rest = rest.and_not(&routed);

        for (set, l) in b.apply("underlay", &[(1, Var(Key::OuterDst))], &rest) {
            let fate = if b.action_name(&l.action) == "forward" {
                Fate::Unicast {
                    port: l.action.as_ref().map_or(0, |a| arg(a, 1)) as u32,
                    encap: None,
                }
            } else {
                dropped("underlay: no route to the next hop")
            };
            push(set, fate, None, None, None);
        }
        Model {
            space: s,
            outcomes: out,
            edge_drop,
        }
    }

    /// The outcome a concrete packet takes: the one whose set holds it and
    /// whose slot (if any) its hash picks.
    pub fn outcome_of(&self, p: &PacketIn) -> Option<&SymOutcome> {
        let v = self.space.valuation(p);
        let h5 = u128::from(hash5_v4(p.proto, p.src, p.dst, p.sport, p.dport));
        self.outcomes
            .iter()
            .filter(|o| o.set.eval_in(&v))
            .find(|o| o.slot.is_none_or(|s| h5 % s.n == s.idx))
    }

    /// A concrete packet of `o`: a witness of its set, with a source port
    /// whose hash picks its slot (searched over every port; the first port
    /// is kept when none does).
    pub fn witness(&self, o: &SymOutcome) -> Option<PacketIn> {
        let mut p = self.space.witness(&o.set)?;
        if let Some(slot) = o.slot {
            if let Some(sport) = (0..=u16::MAX).find(|sp| {
                u128::from(hash5_v4(p.proto, p.src, p.dst, *sp, p.dport)) % slot.n == slot.idx
            }) {
                p.sport = sport;
            }
        }
        Some(p)
    }
}

#[cfg(test)]
mod tests;
