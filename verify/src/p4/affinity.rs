//! AFF-1 on the switches: every instance of a load-balanced endpoint gives
//! each 5-tuple one fate (specs/invariants.md §5b).
//!
//! Expects the software Muxes' rows (`agent_mux_vip`, `agent_mux_member`,
//! `agent_mux_tunnel`) and each switch's symbolic ingress
//! ([`super::symbolic::Model`]). An instance's *vector* is, per slot, what
//! it does with the connections hashing there: nothing (an empty slot),
//! deliver to a member (mvni, DIP), or drop although the slot names a
//! member (a switch whose `tunnel` entry for it is gone; a Mux without its
//! `agent_mux_tunnel` row). Guarantees: a counterexample for every switch
//! whose vector differs from its endpoint's first instance (a software Mux
//! when one serves it, else the first switch by name) — another member,
//! or one delivering where the other drops — and for every switch that
//! drops a slot naming a member, each with a client packet whose `hash5`
//! takes that slot, the entries the switch matched for it (`file:line`)
//! and the other instance's path or row.

use super::ingress::{Fate, PacketIn};
use super::invariants::{counterexample, ip};
use super::request::P4Info;
use super::switch::Switch;
use super::symbolic::Model;
use crate::artifacts::Artifacts;
use crate::report::Counterexample;
use netc_compiler::functors::hash5_v4;
use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;

/// A load-balanced endpoint: (vni, vip, proto, port).
type Endpoint = (u32, u32, u8, u16);
/// A vector slot's member: (mvni, member).
type Member = (u32, u32);
/// A Mux's slots: index → (member, its `agent_mux_member` row's `file:line`).
type Slots<'a> = BTreeMap<u128, (Member, &'a str)>;

/// What an instance does with the connections that hash to one slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SlotFate {
    Empty,
    Deliver(Member),
    /// The slot names a member, and the instance drops (no tunnel for it).
    Drop(Member),
}

impl SlotFate {
    /// What the instance does, as a verb phrase.
    fn text(self) -> String {
        let m = |(v, a): Member| format!("{} (vni {v})", Ipv4Addr::from(a));
        match self {
            SlotFate::Empty => "finds no member".into(),
            SlotFate::Deliver(x) => format!("delivers it to {}", m(x)),
            SlotFate::Drop(x) => format!("drops it (its member {} has no tunnel)", m(x)),
        }
    }
}

/// One instance of a load-balanced endpoint: its `n` and each slot's fate.
pub(super) struct Instance {
    /// The switch's index in the switch list, or None for a software Mux.
    switch: Option<usize>,
    name: String,
    endpoint: Endpoint,
    n: u128,
    slots: BTreeMap<u128, SlotFate>,
    /// For a software Mux, its `agent_mux_vip` row's `file:line`.
    at: String,
    /// For a software Mux, each slot's `agent_mux_member` row's `file:line`.
    slot_at: BTreeMap<u128, String>,
    /// For a switch, a packet its entry balances (any slot).
    sample: Option<PacketIn>,
}

/// The software Muxes' vectors (`agent_mux_vip` + `agent_mux_member` rows;
/// a member with a VNI delivers only through its `agent_mux_tunnel` row,
/// as the Mux does: `network.rs`).
pub(super) fn smux_instances(a: &Artifacts) -> Vec<Instance> {
    let rows = |r: &str| a.relations.get(r).map(Vec::as_slice).unwrap_or(&[]);
    let num = |t: &str| t.parse::<u128>().ok();
    // (mux, vip, proto, port) → slot → member
    let mut members: BTreeMap<(&str, u32, u8, u16), Slots> = BTreeMap::new();
    for r in rows("agent_mux_member") {
        let v = &r.vals;
        let (Some(vip), Some(proto), Some(port), Some(idx), Some(mvni), Some(m)) = (
            v.get(1).and_then(|t| ip(t)),
            v.get(2).and_then(|t| num(t)),
            v.get(3).and_then(|t| num(t)),
            v.get(4).and_then(|t| num(t)),
            v.get(5).and_then(|t| num(t)),
            v.get(6).and_then(|t| ip(t)),
        ) else {
            continue;
        };
        members
            .entry((v[0].as_str(), vip, proto as u8, port as u16))
            .or_default()
            .insert(idx, ((mvni as u32, m), r.at.as_str()));
    }
    // (mux, mvni, member) with a tunnel
    let mut tunnels: BTreeSet<(&str, u32, u32)> = BTreeSet::new();
    for r in rows("agent_mux_tunnel") {
        let v = &r.vals;
        if let (Some(mvni), Some(m)) = (v.get(1).and_then(|t| num(t)), v.get(2).and_then(|t| ip(t)))
        {
            tunnels.insert((v[0].as_str(), mvni as u32, m));
        }
    }
    let mut out = Vec::new();
    for r in rows("agent_mux_vip") {
        let v = &r.vals;
        let (Some(vni), Some(vip), Some(proto), Some(port), Some(n)) = (
            v.get(1).and_then(|t| num(t)),
            v.get(2).and_then(|t| ip(t)),
            v.get(3).and_then(|t| num(t)),
            v.get(4).and_then(|t| num(t)),
            v.get(5).and_then(|t| num(t)),
        ) else {
            continue;
        };
        let mux = v[0].as_str();
        let m = members.get(&(mux, vip, proto as u8, port as u16));
        let fate = |i: u128| match m.and_then(|m| m.get(&i)).map(|(x, _)| *x) {
            None => SlotFate::Empty,
            // a TIP (second level): sent on as it is
            Some(x @ (0, _)) => SlotFate::Deliver(x),
            Some(x @ (mvni, member)) => match tunnels.contains(&(mux, mvni, member)) {
                true => SlotFate::Deliver(x),
                false => SlotFate::Drop(x),
            },
        };
        out.push(Instance {
            switch: None,
            name: v[0].clone(),
            endpoint: (vni as u32, vip, proto as u8, port as u16),
            n,
            slots: (0..n).map(|i| (i, fate(i))).collect(),
            at: r.at.clone(),
            slot_at: m
                .map(|m| m.iter().map(|(i, (_, at))| (*i, at.to_string())).collect())
                .unwrap_or_default(),
            sample: None,
        });
    }
    out
}

/// A switch's vectors, read from its symbolic ingress: per (table,
/// endpoint), what each slot's outcome does — its member, and whether the
/// packet leaves the switch or is dropped.
pub(super) fn switch_instances(i: usize, model: &Model) -> Vec<Instance> {
    let mut by: BTreeMap<(&str, Endpoint), Instance> = BTreeMap::new();
    for o in &model.outcomes {
        let (Some(lb), Some(slot)) = (&o.lb, o.slot) else {
            continue;
        };
        // Rubik's local mappings serve only their ToR's own sources with
        // local DIPs: another vector by design, not compared (as §4's rows)
        if lb.table == "vip_local" {
            continue;
        }
        let inst = by
            .entry((lb.table, lb.endpoint))
            .or_insert_with(|| Instance {
                switch: Some(i),
                name: String::new(),
                endpoint: lb.endpoint,
                n: slot.n,
                slots: BTreeMap::new(),
                at: String::new(),
                slot_at: BTreeMap::new(),
                sample: model.space.witness(&o.set),
            });
        let fate = match (lb.member, &o.fate) {
            (None, _) => SlotFate::Empty,
            (Some(m), Fate::Drop { .. }) => SlotFate::Drop(m),
            (Some(m), _) => SlotFate::Deliver(m),
        };
        inst.slots.entry(slot.idx).or_insert(fate);
    }
    by.into_values().collect()
}

/// What an instance does with hash value `h5`.
fn choice(i: &Instance, h5: u32) -> SlotFate {
    i.slots
        .get(&(u128::from(h5) % i.n))
        .copied()
        .unwrap_or(SlotFate::Empty)
}

/// AFF-1 on the switches: each switch instance against the first instance
/// of its endpoint; a counterexample is a client packet the two treat
/// differently (another member, or one drops). Then each switch that drops
/// a slot naming a member and was not found so.
pub(super) fn affinity(
    sws: &[&Switch],
    info: &P4Info,
    instances: &[Instance],
    out: &mut Vec<Counterexample>,
) {
    let mut by: BTreeMap<Endpoint, Vec<&Instance>> = BTreeMap::new();
    for i in instances {
        by.entry(i.endpoint).or_default().push(i);
    }
    for ((_, vip, proto, port), is) in by {
        let Some(reference) = is.first() else {
            continue;
        };
        let mut found: BTreeSet<usize> = BTreeSet::new();
        for (k, other) in is.iter().enumerate().skip(1) {
            if other.switch.is_none() || (other.n == reference.n && other.slots == reference.slots)
            {
                continue;
            }
            let Some(sw) = other.switch.and_then(|k| sws.get(k)) else {
                continue;
            };
            // a packet the switch balances, with a source port whose hash
            // the two instances treat differently
            let Some(p) = packet(other, |h| choice(reference, h) != choice(other, h)) else {
                continue;
            };
            found.insert(k);
            let h = hash(&p);
            let ref_name = match reference.switch.and_then(|k| sws.get(k)) {
                Some(s) => format!("switch {}", s.name),
                None => format!("software Mux {}", reference.name),
            };
            let summary = format!(
                "switch {} (n = {}) and {ref_name} (n = {}) treat {}:{port}/{proto} differently: hash5 = {h}, {} {} but {ref_name} {}",
                sw.name,
                other.n,
                reference.n,
                Ipv4Addr::from(vip),
                sw.name,
                choice(other, h).text(),
                choice(reference, h).text(),
            );
            let mut cx = counterexample(sw, info, "AFF-1", summary, &p, &[]);
            match reference.switch.and_then(|k| sws.get(k)) {
                Some(rs) => {
                    let hop = super::hop::Hop::through(rs, info, &p, None);
                    cx.paths.push(super::hop::path(std::slice::from_ref(&hop)));
                    cx.cites.extend(hop.trace.cites);
                }
                None => {
                    cx.cites.push(format!(
                        "{}  agent_mux_vip of {}",
                        reference.at, reference.name
                    ));
                    let slot = u128::from(h) % reference.n.max(1);
                    if let Some(at) = reference.slot_at.get(&slot) {
                        cx.cites.push(format!(
                            "{at}  agent_mux_member of {} (slot {slot})",
                            reference.name
                        ));
                    }
                }
            }
            out.push(cx);
        }
        // a switch that drops where it names a member, with nothing that
        // delivers there to compare it with (it is the only instance, or
        // the first)
        for (k, inst) in is.iter().enumerate() {
            let Some(sw) = inst.switch.and_then(|s| sws.get(s)) else {
                continue;
            };
            if found.contains(&k) {
                continue;
            }
            let Some(p) = packet(inst, |h| matches!(choice(inst, h), SlotFate::Drop(_))) else {
                continue;
            };
            let h = hash(&p);
            let summary = format!(
                "switch {} (n = {}) loses {}:{port}/{proto} in slot {}: hash5 = {h}, it {}: connections hashing there are lost",
                sw.name,
                inst.n,
                Ipv4Addr::from(vip),
                u128::from(h) % inst.n,
                choice(inst, h).text(),
            );
            out.push(counterexample(sw, info, "AFF-1", summary, &p, &[]));
        }
    }
}

fn hash(p: &PacketIn) -> u32 {
    hash5_v4(p.proto, p.src, p.dst, p.sport, p.dport)
}

/// The instance's sample packet with the first source port whose hash
/// `differs` holds for.
fn packet(i: &Instance, differs: impl Fn(u32) -> bool) -> Option<PacketIn> {
    let mut p = i.sample.clone()?;
    let sport = (0..=u16::MAX).find(|sp| {
        p.sport = *sp;
        differs(hash(&p))
    })?;
    p.sport = sport;
    Some(p)
}
