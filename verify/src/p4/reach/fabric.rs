//! The fabric REACH-2 walks, as the intent states it: `link`, `host`,
//! `vip` and `duet_tip_range` facts read into [`Fabric`], and the facts a
//! counterexample cites for an address.
//!
//! Expects the intent's facts. Guarantees: every link is held in both
//! directions; a fact whose values do not parse (address, prefix, port) is
//! skipped, never half-read; the first `vip` / `host` fact of an address
//! is the one cited.

use crate::policy::Facts;
use std::collections::BTreeMap;
use std::net::Ipv4Addr;

/// What the intent says about the fabric REACH-2 walks.
#[derive(Clone, Debug, Default)]
pub struct Fabric {
    /// (switch, port) → (the switch at the other end, its port, the `link`
    /// fact's `file:line`), both directions of every link.
    pub links: BTreeMap<(String, u32), (String, u32, String)>,
    /// VIP address → its `vip` fact's `file:line`.
    pub vips: BTreeMap<u32, String>,
    /// TIP ranges: (VIP, network, length, the `duet_tip_range` fact's `file:line`).
    pub tip_ranges: Vec<(u32, u32, u32, String)>,
    /// Host underlay address → (host, its ToR, the ToR's port, the `host`
    /// fact's `file:line`).
    pub hosts: BTreeMap<u32, (String, String, u32, String)>,
    /// Switches the intent reports down (`switch_down`): nothing enters them.
    pub down: std::collections::BTreeSet<String>,
}

pub(super) fn ip(t: &str) -> Option<u32> {
    t.parse::<Ipv4Addr>().ok().map(u32::from)
}

pub(super) fn prefix(t: &str) -> Option<(u32, u32)> {
    let (a, l) = t.split_once('/')?;
    Some((ip(a)?, l.parse().ok().filter(|l| *l <= 32)?))
}

impl Fabric {
    pub fn from_facts(f: &Facts) -> Fabric {
        let rows = |r: &str| f.get(r).map(Vec::as_slice).unwrap_or(&[]);
        let mut fab = Fabric::default();
        // a link at a port or switch reported down carries nothing
        // (schema.ndl link_down, switch_down): the fabric has no wire there
        let down_ports: std::collections::BTreeSet<(&str, i64)> = rows("link_down")
            .iter()
            .filter_map(|r| Some((r.vals.first()?.as_str(), r.vals.get(1)?.parse().ok()?)))
            .collect();
        let down_switches: std::collections::BTreeSet<&str> = rows("switch_down")
            .iter()
            .filter_map(|r| r.vals.first().map(String::as_str))
            .collect();
        fab.down = down_switches.iter().map(|s| s.to_string()).collect();
        let down = |s: &str, p: i64| down_switches.contains(s) || down_ports.contains(&(s, p));
        for r in rows("link") {
            let v = &r.vals;
            let (Some(a), Some(ap), Some(b), Some(bp)) = (
                v.first(),
                v.get(1).and_then(|p| p.parse().ok()),
                v.get(2),
                v.get(3).and_then(|p| p.parse().ok()),
            ) else {
                continue;
            };
            if down(a, i64::from(ap)) || down(b, i64::from(bp)) {
                continue;
            }
            fab.links
                .insert((a.clone(), ap), (b.clone(), bp, r.at.clone()));
            fab.links
                .insert((b.clone(), bp), (a.clone(), ap, r.at.clone()));
        }
        for r in rows("vip") {
            if let Some(a) = r.vals.get(1).and_then(|t| ip(t)) {
                fab.vips.entry(a).or_insert_with(|| r.at.clone());
            }
        }
        for r in rows("host") {
            let v = &r.vals;
            if let (Some(h), Some(a), Some(tor), Some(p)) = (
                v.first(),
                v.get(1).and_then(|t| ip(t)),
                v.get(2),
                v.get(3).and_then(|p| p.parse().ok()),
            ) {
                fab.hosts
                    .entry(a)
                    .or_insert_with(|| (h.clone(), tor.clone(), p, r.at.clone()));
            }
        }
        for r in rows("duet_tip_range") {
            if let (Some(vip), Some((net, len))) = (
                r.vals.first().and_then(|t| ip(t)),
                r.vals.get(1).and_then(|t| prefix(t)),
            ) {
                fab.tip_ranges.push((vip, net, len, r.at.clone()));
            }
        }
        fab
    }

    /// The intent facts that make `addr` a VIP, a TIP or a host's.
    pub(super) fn facts_of(&self, addr: u32) -> Vec<String> {
        let a = Ipv4Addr::from(addr);
        if let Some((h, tor, p, at)) = self.hosts.get(&addr) {
            return vec![format!("{at}  host({h}, {a}, {tor}, {p})")];
        }
        let mut out: Vec<String> = self
            .vips
            .get(&addr)
            .map(|at| format!("{at}  vip {a}"))
            .into_iter()
            .collect();
        for (vip, net, len, at) in &self.tip_ranges {
            let mask = if *len == 0 { 0 } else { u32::MAX << (32 - len) };
            if addr & mask == net & mask {
                out.push(format!(
                    "{at}  duet_tip_range({}, {}/{len}): {a} is a TIP",
                    Ipv4Addr::from(*vip),
                    Ipv4Addr::from(*net)
                ));
                if let Some(v) = self.vips.get(vip) {
                    out.push(format!("{v}  vip {}", Ipv4Addr::from(*vip)));
                }
            }
        }
        out
    }
}
