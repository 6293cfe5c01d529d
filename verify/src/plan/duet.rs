//! PLAN-1 (Duet part): a VIP moves between HMux switches through the SMuxes.
//!
//! Expects two generations' artifacts (old: `--against`, new: the one
//! verified). A VIP's *HMux holders* in a generation are the switches that
//! both hold its entries (`p4_vip`) and announce its /32 (`p4_announce`);
//! the SMuxes hold a VIP when some `agent_mux_vip` row has it. Duet §3.3
//! moves a VIP from switch A to switch B by withdrawing it from A (its
//! traffic falls back to the SMuxes, which announce the aggregate), then
//! installing it on B; so two switches never announce it at once with
//! possibly different tables, and the SMuxes carry it in between.
//!
//! Guarantees: for every VIP whose HMux holders differ between the two
//! generations, a violation when
//! - the new generation has it on an old holder *and* on a new one (both
//!   switches hold it: ECMP splits its flows between two HMuxes), or
//! - no SMux holds it in the new generation, or — when it existed — in the
//!   old one (nothing carries it while it moves).
//!
//! Each violation is a counterexample citing the rows (`file:line`).

use crate::artifacts::Artifacts;
use crate::ofctl::parse_ip;
use crate::report::Counterexample;
use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;

/// VIP → (switch → a row that places it there).
fn hmux_holders(a: &Artifacts) -> BTreeMap<u32, BTreeMap<String, String>> {
    let announced: BTreeSet<(String, u32)> = a
        .rows("p4_announce")
        .iter()
        .filter_map(|r| {
            let (ip, len) = r.vals.get(1)?.split_once('/')?;
            (len == "32").then_some((r.vals[0].clone(), parse_ip(ip)?))
        })
        .collect();
    let mut out: BTreeMap<u32, BTreeMap<String, String>> = BTreeMap::new();
    for r in a.rows("p4_vip") {
        let Some(vip) = r.vals.get(2).and_then(|t| parse_ip(t)) else {
            continue;
        };
        if announced.contains(&(r.vals[0].clone(), vip)) {
            out.entry(vip)
                .or_default()
                .entry(r.vals[0].clone())
                .or_insert_with(|| r.at.clone());
        }
    }
    out
}

/// VIP → a row of an SMux that holds it.
fn smux_holds(a: &Artifacts) -> BTreeMap<u32, String> {
    let mut out = BTreeMap::new();
    for r in a.rows("agent_mux_vip") {
        if let Some(vip) = r.vals.get(2).and_then(|t| parse_ip(t)) {
            out.entry(vip).or_insert_with(|| r.at.clone());
        }
    }
    out
}

pub(super) fn cx(summary: String, cites: Vec<String>) -> Counterexample {
    Counterexample {
        invariant: "PLAN-1".into(),
        key: None,
        summary,
        packet: None,
        paths: Vec::new(),
        cites,
    }
}

fn names(m: Option<&BTreeMap<String, String>>) -> String {
    let v: Vec<&str> = m
        .into_iter()
        .flat_map(|m| m.keys())
        .map(String::as_str)
        .collect();
    if v.is_empty() {
        "no switch (SMuxes only)".into()
    } else {
        v.join(", ")
    }
}

/// The Duet part of PLAN-1 for the change `old` → `new`; also the number of
/// VIPs that move.
pub fn duet_moves(old: &Artifacts, new: &Artifacts) -> (Vec<Counterexample>, usize) {
    let (oh, nh) = (hmux_holders(old), hmux_holders(new));
    let (os, ns) = (smux_holds(old), smux_holds(new));
    let vips: BTreeSet<u32> = oh.keys().chain(nh.keys()).copied().collect();
    let (mut out, mut moves) = (Vec::new(), 0);
    let empty = BTreeMap::new();
    for vip in vips {
        let (o, n) = (
            oh.get(&vip).unwrap_or(&empty),
            nh.get(&vip).unwrap_or(&empty),
        );
        if o.keys().eq(n.keys()) {
            continue;
        }
        moves += 1;
        let ip = Ipv4Addr::from(vip);
        let stays: Vec<&String> = n.keys().filter(|s| o.contains_key(*s)).collect();
        let comes: Vec<&String> = n.keys().filter(|s| !o.contains_key(*s)).collect();
        if !stays.is_empty() && !comes.is_empty() {
            out.push(cx(
                format!(
                    "VIP {ip} moves from {} to {}, but the new generation has it on both {} and {}: \
                     two switches announce it at once (Duet moves it old switch → SMuxes → new switch)",
                    names(Some(o)),
                    names(Some(n)),
                    stays[0],
                    comes[0]
                ),
                vec![n[stays[0]].clone(), n[comes[0]].clone()],
            ));
        }
        let existed = !o.is_empty() || os.contains_key(&vip);
        for (gen, holds, rows) in [("new", &ns, n), ("old", &os, o)] {
            if gen == "old" && !existed {
                continue;
            }
            if !holds.contains_key(&vip) {
                out.push(cx(
                    format!(
                        "VIP {ip} moves from {} to {}, but no SMux holds it in the {gen} generation: \
                         nothing carries its traffic while it moves",
                        names(Some(o)),
                        names(Some(n))
                    ),
                    rows.values().cloned().collect::<Vec<_>>(),
                ));
            }
        }
    }
    (out, moves)
}
