//! REACH-2: balanced traffic reaches its holder, on the P4 fabric as the
//! `.txtpb` requests program it (specs/invariants.md §5b).
//!
//! Expects: every switch's symbolic ingress ([`Model`]), visited one at a
//! time (each is summarised, [`Summaries::add`], before the next is built),
//! the switches' installed state for replays, and the intent's fabric
//! ([`Fabric`]: `link`, `host`, `vip`, `duet_tip_range` facts).
//! Guarantees:
//! - the addresses followed are every /32 a switch announces
//!   (`p4_announce`, BGP), every address a switch's `vip` table balances
//!   and every TIP a member or tunnel names ([`Targets`]);
//! - for each such address A and each endpoint `(vni, A, proto, port)` a
//!   switch balances, the packets of that endpoint entering *any* switch
//!   from a port that is not a host port are walked switch by switch over
//!   every switch's outcomes (a unicast port followed over its `link` to
//!   the next switch and port): each must reach a switch whose `vip` table
//!   balances A (a holder), unless a switch ACL denies it (policy, ACL-2's
//!   business). A drop, a port with no link, a host port or a loop on the
//!   way is a violation;
//! - a holder's slot whose member is a TIP (`mvni = 0`) sends its packets,
//!   VXLAN VNI 0 to the TIP, on the same walk to a holder of the TIP; a
//!   slot whose tunnel destination the holder cannot route (underlay miss)
//!   is a violation, whatever its member;
//! - REACH-1 on the underlay: every host a switch is attached to is walked
//!   for the same way (VXLAN, any VNI, to its underlay address, entering
//!   any switch from a port that is not a host port): each packet must
//!   leave its ToR by the host's own port. The tunnels of every host and
//!   Mux cross the fabric on these routes, so a route deleted or turned
//!   toward another port black-holes a host's tunnels where the bridges'
//!   model alone would deliver them.
//!
//! The walk is exact per packet class (BDDs; a route or load-balancer slot
//! is a possible choice, as everywhere in the switch model). Each violation
//! is one counterexample per (address, switch, kind): a concrete packet at
//! its entry switch, replayed (`replay.rs`) through the concrete interpreter switch by
//! switch (each hop's entries as `.txtpb` file:line), with the intent facts
//! behind it (the VIP, its TIP range, the links walked, the announcement).
//! Software Muxes are outside the walk: the intent attaches them nowhere in
//! the fabric (specs/targets.md §1.11), so the aggregates they announce
//! have no route to follow.

mod fabric;

pub use fabric::Fabric;

use super::ingress::Fate;
use super::request::P4Info;
use super::switch::Switch;
use super::symbolic::{Key, Model, Slot, Space, SymOutcome};
use crate::artifacts::Artifacts;
use crate::report::Counterexample;
use biodivine_lib_bdd::{Bdd, BddPointer, BddVariable};
use fabric::{ip, prefix};
use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;

/// The addresses REACH-2 follows, read from the artifacts before any
/// switch is built.
#[derive(Default)]
pub struct Targets {
    /// address → the switches announcing it as a /32, each with the
    /// `p4_announce` row's `file:line`.
    pub announced: BTreeMap<u32, Vec<(String, String)>>,
    /// Every address followed (the hosts' too).
    pub addrs: BTreeSet<u32>,
    /// The underlay addresses of the hosts attached to a switch of the
    /// artifacts.
    pub hosts: BTreeSet<u32>,
}

impl Targets {
    pub fn of(a: &Artifacts, fabric: &Fabric) -> Targets {
        let mut t = Targets::default();
        for (addr, (_, tor, _, _)) in &fabric.hosts {
            if a.switches.contains_key(tor) {
                t.hosts.insert(*addr);
            }
        }
        t.addrs.extend(&t.hosts);
        for r in a.rows("p4_announce") {
            if let (Some(sw), Some((net, 32))) =
                (r.vals.first(), r.vals.get(1).and_then(|p| prefix(p)))
            {
                t.announced
                    .entry(net)
                    .or_default()
                    .push((sw.clone(), r.at.clone()));
                t.addrs.insert(net);
            }
        }
        let col = |rel: &str, i: usize| {
            a.rows(rel)
                .iter()
                .filter_map(move |r| r.vals.get(i).and_then(|x| ip(x)))
                .collect::<Vec<_>>()
        };
        t.addrs.extend(col("p4_vip", 2));
        // a member or tunnel with mvni 0 is a TIP
        for (rel, vni, addr) in [("p4_ecmp_member", 5, 6), ("p4_tunnel", 1, 3)] {
            for r in a.rows(rel) {
                if r.vals.get(vni).map(String::as_str) == Some("0") {
                    if let Some(x) = r.vals.get(addr).and_then(|x| ip(x)) {
                        t.addrs.insert(x);
                    }
                }
            }
        }
        t
    }
}

/// Every switch's outcomes on the packets sent to each followed address.
#[derive(Default)]
pub struct Summaries {
    /// Per switch (in the order visited): address → the outcomes, each
    /// restricted to the packets with that outer destination.
    by_switch: Vec<BTreeMap<u32, Vec<SymOutcome>>>,
    /// (switch, vni, address, proto, port) of every endpoint a `vip` table balances.
    endpoints: BTreeSet<(usize, u32, u32, u8, u16)>,
}

impl Summaries {
    /// Summarises switch `i`'s model for the addresses of `t`.
    pub fn add(&mut self, i: usize, model: &Model, t: &Targets) {
        let s = &model.space;
        let outer = OuterDst::of(s);
        let sorted: Vec<u32> = t.addrs.iter().copied().collect();
        let mut by: BTreeMap<u32, Vec<SymOutcome>> = BTreeMap::new();
        for o in &model.outcomes {
            if let Some(lb) = &o.lb {
                // a vip entry's key is exact on the outer destination
                if lb.table == "vip" {
                    let (vni, addr, proto, port) = lb.endpoint;
                    self.endpoints.insert((i, vni, addr, proto, port));
                }
                if t.addrs.contains(&lb.endpoint.1) {
                    by.entry(lb.endpoint.1).or_default().push(o.clone());
                }
                continue;
            }
            // the followed addresses among the outcome's outer destinations
            for a in outer.addresses_in(&o.set, &sorted) {
                let set = o.set.and(&s.eq(Key::OuterDst, u128::from(a)));
                if !set.is_false() {
                    by.entry(a)
                        .or_default()
                        .push(SymOutcome { set, ..o.clone() });
                }
            }
        }
        if self.by_switch.len() <= i {
            self.by_switch.resize_with(i + 1, BTreeMap::new);
        }
        self.by_switch[i] = by;
    }
}

/// A space's outer-destination variables, and every other one.
struct OuterDst {
    outer: Vec<BddVariable>,
    others: Vec<BddVariable>,
}

impl OuterDst {
    fn of(s: &Space) -> OuterDst {
        let outer = s.vars_of(&[Key::OuterDst]);
        let others = s
            .vars
            .variables()
            .into_iter()
            .filter(|v| !outer.contains(v))
            .collect();
        OuterDst { outer, others }
    }

    /// The outer destinations of the packets of `set`.
    fn destinations(&self, set: &Bdd) -> Bdd {
        set.exists(&self.others)
    }

    /// The addresses of `sorted` that are outer destinations of `set`.
    fn addresses_in(&self, set: &Bdd, sorted: &[u32]) -> Vec<u32> {
        let bit_of = |v: BddVariable| {
            self.outer
                .iter()
                .position(|x| *x == v)
                .map_or(32, |b| b as u32)
        };
        let dsts = self.destinations(set);
        let mut hit = Vec::new();
        members(&dsts, dsts.root_pointer(), 0, sorted, &bit_of, &mut hit);
        hit
    }
}

/// The addresses of `range` (sorted, sharing their bits above `bit`) that
/// the outer-destination set `dsts` holds from node `ptr` on: a descent
/// that splits the range on each bit (a binary search, the addresses
/// being sorted), so an outcome costs its nodes times a search, not the
/// number of addresses followed.
fn members(
    dsts: &Bdd,
    ptr: BddPointer,
    bit: u32,
    range: &[u32],
    bit_of: &dyn Fn(BddVariable) -> u32,
    out: &mut Vec<u32>,
) {
    if range.is_empty() || ptr.is_zero() {
        return;
    }
    if ptr.is_one() || bit >= 32 {
        out.extend_from_slice(range);
        return;
    }
    let tested = bit_of(dsts.var_of(ptr));
    let m = 1u32 << (31 - bit);
    let (zero, one) = range.split_at(range.partition_point(|a| a & m == 0));
    if tested > bit {
        // this bit is not tested on the way: both halves go on at the node
        members(dsts, ptr, bit + 1, zero, bit_of, out);
        members(dsts, ptr, bit + 1, one, bit_of, out);
    } else {
        members(dsts, dsts.low_link_of(ptr), bit + 1, zero, bit_of, out);
        members(dsts, dsts.high_link_of(ptr), bit + 1, one, bit_of, out);
    }
}

/// A violation found by the walk, before it is replayed.
struct Found {
    /// REACH-2 (a VIP or TIP), or REACH-1 (a host's underlay address).
    invariant: &'static str,
    summary: String,
    /// The entry: switch, port, the packet's VXLAN VNI there, its address.
    entry: (usize, u32, Option<u32>, u32),
    /// The packets (at the failing switch) and the slots their path took.
    set: Bdd,
    slots: Vec<Slot>,
    facts: Vec<String>,
}

/// One step of a walk: where the packets are and what they took so far.
#[derive(Clone)]
struct Leg {
    at: usize,
    set: Bdd,
    slots: Vec<Slot>,
    /// The `link` facts crossed.
    links: Vec<String>,
    hops: usize,
    /// The address the packets are sent to now (the VIP, then a TIP).
    addr: u32,
    /// Whether a holder has sent them on to a TIP.
    tip: bool,
}

struct Walk<'a> {
    names: Vec<&'a str>,
    index: BTreeMap<&'a str, usize>,
    sums: &'a Summaries,
    fabric: &'a Fabric,
    attached: &'a BTreeMap<(String, u32), String>,
    targets: &'a Targets,
    space: Space,
    /// The entry: (switch, port, VNI, address) of the walk under way.
    entry: (usize, u32, Option<u32>, u32),
    found: Vec<Found>,
    seen: BTreeSet<(u32, usize, &'static str)>,
    /// The hop budget of a walk: more switches than the fabric has is a loop.
    limit: usize,
    /// Switches a walk of the current entry class started from and
    /// finished without a violation: a later walk arriving there from a
    /// link (a subset of those packets) is done.
    ok: BTreeSet<usize>,
    /// address → the switches whose `vip` table balances it.
    holders: BTreeMap<u32, BTreeSet<usize>>,
}

impl Walk<'_> {
    /// Where packets to `addr` must go, for messages.
    fn holders(&self, addr: u32) -> String {
        if let Some((h, tor, p, _)) = self.fabric.hosts.get(&addr) {
            return format!("host {h}'s, behind {tor} port {p}");
        }
        match self.holders.get(&addr) {
            None => "no switch balances it".to_string(),
            Some(hs) => format!(
                "held by {}",
                hs.iter()
                    .map(|i| self.names[*i])
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }

    /// Records a violation of `leg`'s packets `set` (once per address,
    /// switch and kind), citing the facts behind `leg.addr` and `also`.
    fn violation(
        &mut self,
        leg: &Leg,
        set: Bdd,
        kind: &'static str,
        summary: String,
        also: Option<u32>,
    ) -> bool {
        let key = (leg.addr, leg.at, kind);
        if self.seen.insert(key) {
            let mut facts = self.fabric.facts_of(leg.addr);
            for f in also.map(|a| self.fabric.facts_of(a)).unwrap_or_default() {
                if !facts.contains(&f) {
                    facts.push(f);
                }
            }
            for (sw, at) in self.targets.announced.get(&leg.addr).into_iter().flatten() {
                facts.push(format!(
                    "{at}  p4_announce({sw}, {}/32)",
                    Ipv4Addr::from(leg.addr)
                ));
            }
            facts.extend(leg.links.iter().cloned());
            let host = self.fabric.hosts.contains_key(&leg.addr);
            self.found.push(Found {
                invariant: if host { "REACH-1" } else { "REACH-2" },
                summary,
                entry: self.entry,
                set,
                slots: leg.slots.clone(),
                facts,
            });
        }
        false
    }

    /// Walks `leg` through its switch; false when some packet of it fails.
    fn step(&mut self, leg: Leg) -> bool {
        let Some(pieces) = self
            .sums
            .by_switch
            .get(leg.at)
            .and_then(|m| m.get(&leg.addr))
        else {
            // the summaries hold every followed address a switch's outcomes
            // meet, and the outcomes partition every packet
            return true;
        };
        let name = self.names[leg.at];
        let a = Ipv4Addr::from(leg.addr);
        let mut ok = true;
        for o in pieces {
            let set = leg.set.and(&o.set);
            if set.is_false() {
                continue;
            }
            let mut next = leg.clone();
            next.set = set.clone();
            if let Some(s) = o.slot {
                next.slots.push(s);
            }
            match (&o.lb, &o.fate) {
                (Some(lb), fate) => {
                    let member = lb.member;
                    match fate {
                        Fate::Unicast {
                            port,
                            encap: Some((0, ul, _)),
                        } if member.is_some_and(|m| m.0 == 0) => {
                            // a TIP: VXLAN VNI 0 to it, the inner packet kept
                            let s = &self.space;
                            let moved = next
                                .set
                                .exists(&s.vars_of(&[Key::OuterDst, Key::Vxlan, Key::Vni]))
                                .and(&s.eq(Key::OuterDst, u128::from(*ul)))
                                .and(&s.eq(Key::Vxlan, 1))
                                .and(&s.eq(Key::Vni, 0));
                            next.set = moved;
                            next.addr = *ul;
                            next.tip = true;
                            ok &= self.out(next, *port);
                        }
                        Fate::Drop { why } if why.starts_with("underlay") => {
                            let (kind, what, also) = match member {
                                Some((0, m)) => (
                                    "tip-unrouted",
                                    format!("TIP {}", Ipv4Addr::from(m)),
                                    Some(m),
                                ),
                                Some((v, m)) => (
                                    "dip-unrouted",
                                    format!("DIP {} (vni {v})", Ipv4Addr::from(m)),
                                    None,
                                ),
                                None => ("unrouted", "its member".to_string(), None),
                            };
                            let idx = o.slot.map_or(0, |s| s.idx);
                            ok &= self.violation(
                                &next,
                                set,
                                kind,
                                format!(
                                    "switch {name} balances {a}'s slot {idx} to {what}, but its underlay has no route to the tunnel's destination: the packets are dropped"
                                ),
                                also,
                            );
                        }
                        // a DIP's tunnel, or a drop AFF-1 judges (no member, no tunnel)
                        _ => {}
                    }
                }
                (None, Fate::Drop { why }) if why.starts_with("acl") => {}
                (None, Fate::Drop { why }) => {
                    let h = self.holders(leg.addr);
                    ok &= self.violation(
                        &next,
                        set,
                        "dropped",
                        format!("packets to {a} ({h}) are dropped at switch {name} ({why}) before they get there"),
                        None,
                    );
                }
                (None, Fate::Unicast { port, .. }) => ok &= self.out(next, *port),
                (None, Fate::Multicast { .. }) => {}
            }
        }
        ok
    }

    /// The packets of `leg` leave its switch by `port`.
    fn out(&mut self, leg: Leg, port: u32) -> bool {
        let name = self.names[leg.at];
        let a = Ipv4Addr::from(leg.addr);
        let h = self.holders(leg.addr);
        let Some((peer, q, at)) = self.fabric.links.get(&(name.to_string(), port)) else {
            let set = leg.set.clone();
            let to = self.attached.get(&(name.to_string(), port));
            if let (Some(host), Some((goal, ..))) = (to, self.fabric.hosts.get(&leg.addr)) {
                if host == goal {
                    // a host's underlay address, delivered at its own port
                    return true;
                }
            }
            return match to {
                Some(host) => self.violation(
                    &leg,
                    set,
                    "to-host",
                    format!("switch {name} sends packets to {a} ({h}) out of port {port} to host {host} instead"),
                    None,
                ),
                None => self.violation(
                    &leg,
                    set,
                    "no-link",
                    format!("switch {name} sends packets to {a} ({h}) out of port {port}, where the intent has no link: they leave the fabric"),
                    None,
                ),
            };
        };
        if leg.hops >= self.limit {
            let set = leg.set.clone();
            return self.violation(
                &leg,
                set,
                "loop",
                format!("packets to {a} ({h}) are still not at a holder after {} switches: the underlay loops (last at {name})", leg.hops),
                None,
            );
        }
        let Some(&next) = self.index.get(peer.as_str()) else {
            let set = leg.set.clone();
            return self.violation(
                &leg,
                set,
                "no-link",
                format!("switch {name} sends packets to {a} ({h}) out of port {port} to {peer}, which has no request in the artifacts"),
                None,
            );
        };
        if !leg.tip && self.ok.contains(&next) && !self.attached.contains_key(&(peer.clone(), *q)) {
            return true;
        }
        let s = &self.space;
        let set = leg
            .set
            .exists(&s.vars_of(&[Key::Port]))
            .and(&s.eq(Key::Port, u128::from(*q)));
        let mut links = leg.links.clone();
        let l = format!("{at}  link {name}:{port} — {peer}:{q}");
        if !links.contains(&l) {
            links.push(l);
        }
        self.step(Leg {
            at: next,
            set,
            slots: leg.slots,
            links,
            hops: leg.hops + 1,
            addr: leg.addr,
            tip: leg.tip,
        })
    }
}

/// What [`check`] found, and how much it walked.
pub struct Reached {
    /// REACH-2's and REACH-1's (hosts') counterexamples.
    pub counterexamples: Vec<Counterexample>,
    /// VIP and TIP addresses walked for.
    pub followed: usize,
    /// Host underlay addresses walked for.
    pub hosts: usize,
}

/// REACH-2, and REACH-1 on the underlay, on the summarised switches; `sws`
/// are the switches in the order they were summarised. One counterexample
/// per (address, switch, kind).
pub fn check(
    sws: &[&Switch],
    info: &P4Info,
    sums: &Summaries,
    targets: &Targets,
    fabric: &Fabric,
    attached: &BTreeMap<(String, u32), String>,
) -> Reached {
    let names: Vec<&str> = sws.iter().map(|s| s.name.as_str()).collect();
    let index = names.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let mut w = Walk {
        names,
        index,
        sums,
        fabric,
        attached,
        targets,
        space: Space::new(),
        entry: (0, 0, None, 0),
        found: Vec::new(),
        seen: BTreeSet::new(),
        limit: sws.len() * 2 + 2,
        ok: BTreeSet::new(),
        holders: BTreeMap::new(),
    };
    for (i, _, addr, _, _) in &sums.endpoints {
        w.holders.entry(*addr).or_default().insert(*i);
    }
    // the endpoints each address is balanced for: (vni, proto, port)
    let mut classes: BTreeMap<u32, BTreeSet<(u32, u8, u16)>> = BTreeMap::new();
    for (_, vni, addr, proto, port) in &sums.endpoints {
        classes
            .entry(*addr)
            .or_default()
            .insert((*vni, *proto, *port));
    }
    // an announced address nobody balances: every packet to it
    let followed: BTreeSet<u32> = classes
        .keys()
        .chain(targets.announced.keys())
        .copied()
        .collect();
    let n_followed = followed.len();
    let s = Space::new();
    for addr in followed {
        if targets.hosts.contains(&addr) {
            // a host's address that a switch also balances or announces:
            // the intent's error (a VIP equal to a host's address)
            continue;
        }
        let base = s.universe().and(&s.eq(Key::OuterDst, u128::from(addr)));
        // per VNI: the packets of that VNI's endpoints (any, when none)
        let mut by_vni: BTreeMap<u32, Bdd> = BTreeMap::new();
        match classes.get(&addr) {
            Some(cs) => {
                for (vni, proto, port) in cs {
                    let c = s
                        .eq(Key::Proto, u128::from(*proto))
                        .and(&s.eq(Key::Dport, u128::from(*port)));
                    let e = by_vni.entry(*vni).or_insert_with(|| s.none());
                    *e = e.or(&c);
                }
            }
            None => {
                by_vni.insert(0, s.all());
            }
        }
        for (vni, ports) in by_vni {
            let class = if vni == 0 {
                base.and(&s.eq(Key::Vxlan, 0)).and(&ports)
            } else {
                // a VM's packet to the VIP: VXLAN with its tenant's VNI
                base.and(&s.eq(Key::Vxlan, 1))
                    .and(&s.eq(Key::Vni, u128::from(vni)))
                    .and(&s.eq(Key::Dst, u128::from(addr)))
                    .and(&ports)
            };
            w.ok.clear();
            walk_from_everywhere(&mut w, &class, addr, (vni != 0).then_some(vni));
        }
    }
    // every host's tunnels: VXLAN of any VNI to its underlay address
    for addr in &targets.hosts {
        let Some((_, tor, _, _)) = fabric.hosts.get(addr) else {
            continue;
        };
        if let Some(&t) = w.index.get(tor.as_str()) {
            w.holders.entry(*addr).or_default().insert(t);
        }
        let class = s
            .universe()
            .and(&s.eq(Key::OuterDst, u128::from(*addr)))
            .and(&s.eq(Key::Vxlan, 1));
        walk_from_everywhere(&mut w, &class, *addr, None);
    }
    let found = std::mem::take(&mut w.found);
    let counterexamples = found
        .into_iter()
        .map(|f| replay(sws, info, &w, f))
        .collect();
    Reached {
        counterexamples,
        followed: n_followed,
        hosts: targets.hosts.len(),
    }
}

/// Walks the packets of `class` (sent to `addr`) entering every switch
/// from a port that is not a host port, nearest to where they go first.
fn walk_from_everywhere(w: &mut Walk, class: &Bdd, addr: u32, vni: Option<u32>) {
    w.ok.clear();
    for i in nearest_first(w, addr) {
        let name = w.names[i].to_string();
        if w.fabric.down.contains(&name) {
            // a switch that is down forwards nothing: no packet enters it
            continue;
        }
        let mut set = class.clone();
        for ((sw, p), _) in w.attached.range((name.clone(), 0)..) {
            if *sw != name {
                break;
            }
            set = set.and_not(&w.space.eq(Key::Port, u128::from(*p)));
        }
        let port = entry_port(&name, w.fabric, w.attached);
        w.entry = (i, port, vni, addr);
        let fine = w.step(Leg {
            at: i,
            set,
            slots: Vec::new(),
            links: Vec::new(),
            hops: 1,
            addr,
            tip: false,
        });
        if fine {
            w.ok.insert(i);
        }
    }
}

/// The switches by distance from the holders of `addr` over the links
/// (the holders first, then their neighbours, ...; switches the links do
/// not reach last), so most walks end at a switch already walked.
fn nearest_first(w: &Walk, addr: u32) -> Vec<usize> {
    let mut order: Vec<usize> = w
        .holders
        .get(&addr)
        .map(|hs| hs.iter().copied().collect())
        .unwrap_or_default();
    let mut seen: BTreeSet<usize> = order.iter().copied().collect();
    let mut k = 0;
    while k < order.len() {
        let name = w.names[order[k]];
        for ((_, _), (peer, _, _)) in w
            .fabric
            .links
            .range((name.to_string(), 0)..)
            .take_while(|((s, _), _)| s == name)
        {
            if let Some(&j) = w.index.get(peer.as_str()) {
                if seen.insert(j) {
                    order.push(j);
                }
            }
        }
        k += 1;
    }
    order.extend((0..w.names.len()).filter(|i| !seen.contains(i)));
    order
}

/// A port of `sw` packets enter by in a counterexample: its lowest linked
/// port, else the lowest port that is no host's.
fn entry_port(sw: &str, fabric: &Fabric, attached: &BTreeMap<(String, u32), String>) -> u32 {
    fabric
        .links
        .range((sw.to_string(), 0)..)
        .next()
        .filter(|((s, _), _)| s == sw)
        .map(|((_, p), _)| *p)
        .unwrap_or_else(|| {
            (0..)
                .find(|p| !attached.contains_key(&(sw.to_string(), *p)))
                .unwrap_or(0)
        })
}

mod replay;

use replay::replay;

#[cfg(test)]
mod tests;
