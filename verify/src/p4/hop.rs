//! One concrete packet through one switch, and where each copy goes next:
//! the hop both a switch counterexample's path and `netc predict` print.
//!
//! Expects a [`Switch`], the P4Info, a [`PacketIn`] and, when the intent is
//! known, its [`Wiring`] (`link` facts, hosts' ToR ports). Guarantees:
//! [`Hop::through`] runs the concrete ingress ([`super::ingress`]) and
//! lists every copy leaving the switch — the packet as it leaves (a tunnel
//! the switch encapsulates sets its VNI and outer destination) and where
//! the port leads ([`Exit`]). [`Hop::lines`] and [`Hop::fate_line`] are the
//! one text form of a switch hop: REACH-2/REACH-1 replays, the per-switch
//! counterexamples, AFF-1's and `netc predict` all print through them, so
//! a counterexample's path is what `netc predict` prints for its packet.

use super::ingress::{Fate, PacketIn, Trace};
use super::invariants::{fate_text, show};
use super::request::P4Info;
use super::switch::Switch;
use std::collections::BTreeMap;

/// How the switches are wired, from the intent.
#[derive(Clone, Copy)]
pub struct Wiring<'a> {
    /// (switch, port) → (the switch at the other end, its port, the `link`
    /// fact's `file:line`), both directions.
    pub links: &'a BTreeMap<(String, u32), (String, u32, String)>,
    /// (ToR, port) → the host attached there.
    pub attached: &'a BTreeMap<(String, u32), String>,
}

/// Where a switch port leads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Exit {
    /// Over a `link` to another switch's port.
    Link { peer: String, port: u32 },
    /// The host attached to the port.
    Host { host: String },
    /// Neither: the packet leaves the fabric.
    Outside,
    /// No intent was given: the links are not known.
    Unknown,
}

impl Exit {
    fn of(wiring: Option<Wiring>, sw: &str, port: u32) -> Exit {
        let Some(w) = wiring else {
            return Exit::Unknown;
        };
        let key = (sw.to_string(), port);
        if let Some((peer, q, _)) = w.links.get(&key) {
            return Exit::Link {
                peer: peer.clone(),
                port: *q,
            };
        }
        match w.attached.get(&key) {
            Some(h) => Exit::Host { host: h.clone() },
            None => Exit::Outside,
        }
    }

    /// The exit as a suffix of the fate (empty when the links are unknown).
    pub fn suffix(&self) -> String {
        match self {
            Exit::Link { peer, port } => format!(" (link to {peer} port {port})"),
            Exit::Host { host } => format!(" (host {host})"),
            Exit::Outside => " (no link: out of the fabric)".into(),
            Exit::Unknown => String::new(),
        }
    }
}

/// A copy of the packet leaving a switch.
#[derive(Clone, Debug)]
pub struct Out {
    pub port: u32,
    /// The packet as it leaves (ingress_port is the output port).
    pub packet: PacketIn,
    /// The inner destination MAC the switch wrote, when it encapsulated.
    pub inner_dmac: Option<u64>,
    pub exit: Exit,
}

/// One switch's handling of one packet.
#[derive(Clone, Debug)]
pub struct Hop {
    pub switch: String,
    /// The packet as it enters.
    pub packet: PacketIn,
    pub trace: Trace,
    /// Every copy that leaves (none when dropped).
    pub copies: Vec<Out>,
}

impl Hop {
    /// `p` through `sw`.
    pub fn through(sw: &Switch, info: &P4Info, p: &PacketIn, wiring: Option<Wiring>) -> Hop {
        let trace = sw.ingress(info, p);
        let copies = match &trace.fate {
            Fate::Drop { .. } => Vec::new(),
            Fate::Multicast { ports, .. } => ports
                .iter()
                .map(|port| Out {
                    port: *port,
                    packet: p.clone(),
                    inner_dmac: None,
                    exit: Exit::of(wiring, &sw.name, *port),
                })
                .collect(),
            Fate::Unicast { port, encap } => {
                let mut out = p.clone();
                let mut dmac = None;
                if let Some((vni, ul, mac)) = encap {
                    out.vxlan_vni = Some(*vni);
                    out.outer_dst = *ul;
                    dmac = Some(*mac);
                }
                vec![Out {
                    port: *port,
                    packet: out,
                    inner_dmac: dmac,
                    exit: Exit::of(wiring, &sw.name, *port),
                }]
            }
        };
        Hop {
            switch: sw.name.clone(),
            packet: p.clone(),
            trace,
            copies,
        }
    }

    /// The packet entering, then every entry it matched (`file:line`).
    pub fn lines(&self) -> Vec<String> {
        let mut out = vec![format!("{} ingress {}", self.switch, show(&self.packet))];
        out.extend(self.trace.cites.iter().map(|c| format!("  entry {c}")));
        out
    }

    /// The fate, with where each port leads.
    pub fn fate_line(&self) -> String {
        let mut s = fate_text(&self.trace.fate);
        match self.copies.as_slice() {
            [one] => s.push_str(&one.exit.suffix()),
            many => {
                let exits: Vec<String> = many
                    .iter()
                    .filter(|c| c.exit != Exit::Unknown)
                    .map(|c| format!("port {}{}", c.port, c.exit.suffix()))
                    .collect();
                if !exits.is_empty() {
                    s.push_str(&format!(": {}", exits.join(", ")));
                }
            }
        }
        s
    }

    /// The line a path ends with at this hop.
    pub fn end(&self) -> String {
        format!("{}: {}", self.switch, self.fate_line())
    }
}

/// A path's hops as a counterexample prints them: each hop's lines, the
/// hops before the last with their fate (`→ …`), the last's fate as the end.
pub fn path(hops: &[Hop]) -> crate::report::PathCx {
    let mut lines = Vec::new();
    for (i, h) in hops.iter().enumerate() {
        lines.extend(h.lines());
        if i + 1 < hops.len() {
            lines.push(format!("  → {}", h.fate_line()));
        }
    }
    crate::report::PathCx {
        hops: lines,
        end: hops.last().map_or_else(String::new, Hop::end),
    }
}
