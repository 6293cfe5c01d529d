//! A prediction's switch segment: the packet through one P4 switch
//! ([`crate::p4::hop::Hop`], the concrete ingress counterexamples replay),
//! and each copy that leaves queued for the device its port leads to.
//!
//! Expects an arrival whose device is a switch of the [`Model`]. Guarantees:
//! the packet the switch reads is the arrival's (VXLAN: its VNI and outer
//! destination, the innermost 5-tuple of the inner frame; a VXLAN packet
//! whose inner frame is not IPv4 hashes on its outer UDP header, as netc.p4
//! does — its outer source and UDP source port are not modelled, 0); a frame that is
//! neither IPv4 nor VXLAN is dropped (netc.p4 drops every non-IPv4 frame).
//! Each copy becomes one path: its port, the packet as it leaves, where the
//! port leads; a copy to a linked switch or to a host with a bridge in the
//! artifacts is queued (a host's bridge takes VXLAN at its tunnel port 1,
//! plain IP at its uplink port 2). Without the intent's wiring a port
//! leads nowhere known, and a VXLAN copy goes to the bridge owning its
//! outer destination (the underlay map), as a bridge's tunnel does.

use super::{header_values, Arrival, Fate, Model, PathPrediction, Segment};
use crate::p4::hop::{Exit, Hop};
use crate::p4::ingress::PacketIn;
use crate::space::{Field, Headers, ETH_IP};
use std::collections::VecDeque;
use std::net::Ipv4Addr;

/// The VXLAN UDP port: a VXLAN packet's outer destination port.
const VXLAN_PORT: u16 = 4789;

/// The packet as the switch's ingress reads it, or why netc.p4 drops it.
fn packet_in(a: &Arrival) -> Result<PacketIn, String> {
    let h = &a.headers;
    let ip = h.get(Field::DlType) == ETH_IP;
    let l4 = |f: Field| {
        let proto = h.get(Field::NwProto);
        if proto == 6 || proto == 17 {
            h.get(f) as u16
        } else {
            0
        }
    };
    match (a.tun, ip) {
        (Some((vni, outer)), true) => Ok(PacketIn {
            ingress_port: a.in_port,
            vxlan_vni: Some(vni as u32),
            outer_dst: outer,
            proto: h.get(Field::NwProto) as u8,
            src: h.get(Field::NwSrc) as u32,
            dst: h.get(Field::NwDst) as u32,
            sport: l4(Field::TpSrc),
            dport: l4(Field::TpDst),
        }),
        // the inner frame is not IPv4: netc.p4 hashes the outer UDP header
        (Some((vni, outer)), false) => Ok(PacketIn {
            ingress_port: a.in_port,
            vxlan_vni: Some(vni as u32),
            outer_dst: outer,
            proto: 17,
            src: 0,
            dst: outer,
            sport: 0,
            dport: VXLAN_PORT,
        }),
        (None, true) => Ok(PacketIn {
            ingress_port: a.in_port,
            vxlan_vni: None,
            outer_dst: h.get(Field::NwDst) as u32,
            proto: h.get(Field::NwProto) as u8,
            src: h.get(Field::NwSrc) as u32,
            dst: h.get(Field::NwDst) as u32,
            sport: l4(Field::TpSrc),
            dport: l4(Field::TpDst),
        }),
        (None, false) => Err("not IPv4: netc.p4 drops every frame that is not IPv4".into()),
    }
}

/// Where a copy's exit leads, in words.
fn exit_text(e: &Exit) -> String {
    match e {
        Exit::Link { peer, port } => format!("{peer} port {port}"),
        Exit::Host { host } => format!("host {host}"),
        Exit::Outside => "no link: out of the fabric".into(),
        Exit::Unknown => "links unknown (no intent given)".into(),
    }
}

/// `a` through its switch; the copies that reach another device are queued.
pub(super) fn segment(
    m: &Model,
    a: &Arrival,
    here: usize,
    queue: &mut VecDeque<Arrival>,
) -> Segment {
    let sw = &m.switches[&a.device];
    let mut seg = Segment {
        device: a.device.clone(),
        kind: "switch",
        in_port: a.in_port,
        tun_id: a.tun.map(|t| t.0),
        tun_dst: a.tun.map(|t| Ipv4Addr::from(t.1).to_string()),
        headers: header_values(&a.headers),
        from: a.from,
        paths: Vec::new(),
        lines: Vec::new(),
    };
    let p = match packet_in(a) {
        Ok(p) => p,
        Err(why) => {
            seg.lines = vec![
                format!("{} ingress port {}: {why}", sw.name, a.in_port),
                format!("  → dropped ({why})"),
            ];
            seg.paths.push(PathPrediction {
                flows: Vec::new(),
                buckets: Vec::new(),
                choices: Vec::new(),
                entries: Vec::new(),
                fate: Fate::Drop { why },
            });
            return seg;
        }
    };
    let hop = Hop::through(sw, m.info, &p, m.wiring());
    seg.lines = hop.lines();
    seg.lines.push(format!("  → {}", hop.fate_line()));
    if hop.copies.is_empty() {
        let why = match &hop.trace.fate {
            crate::p4::ingress::Fate::Drop { why } => why.clone(),
            _ => "no copy leaves the switch (an empty multicast group)".into(),
        };
        seg.paths.push(PathPrediction {
            flows: Vec::new(),
            buckets: Vec::new(),
            choices: Vec::new(),
            entries: hop.trace.cites.clone(),
            fate: Fate::Drop { why },
        });
        return seg;
    }
    for c in &hop.copies {
        let mut headers: Headers = a.headers.clone();
        if let Some(mac) = c.inner_dmac {
            for (f, v) in headers.0.iter_mut() {
                if *f == Field::DlDst {
                    *v = u128::from(mac);
                }
            }
        }
        let tun = c
            .packet
            .vxlan_vni
            .map(|v| (u128::from(v), c.packet.outer_dst));
        let from = Some((here, seg.paths.len()));
        match &c.exit {
            Exit::Link { peer, port } if m.switches.contains_key(peer) => {
                queue.push_back(Arrival {
                    device: peer.clone(),
                    in_port: *port,
                    tun,
                    headers: headers.clone(),
                    from,
                })
            }
            Exit::Host { host } if m.net.bridge(host).is_some() => queue.push_back(Arrival {
                device: host.clone(),
                in_port: if tun.is_some() { 1 } else { 2 },
                tun,
                headers: headers.clone(),
                from,
            }),
            // without the wiring, VXLAN goes to the bridge owning its
            // outer destination, as a bridge's tunnel does
            Exit::Unknown => {
                if let Some(owner) = tun
                    .and_then(|(_, dst)| m.policy.underlay.get(&dst))
                    .filter(|d| m.net.bridge(d).is_some())
                {
                    queue.push_back(Arrival {
                        device: owner.clone(),
                        in_port: 1,
                        tun,
                        headers: headers.clone(),
                        from,
                    })
                }
            }
            _ => {}
        }
        let mut to = exit_text(&c.exit);
        if let (Exit::Unknown, Some((_, dst))) = (&c.exit, tun) {
            if let Some(owner) = m.policy.underlay.get(&dst) {
                to.push_str(&format!("; {} is {owner}'s", Ipv4Addr::from(dst)));
            }
        }
        if let Exit::Link { peer, .. } | Exit::Host { host: peer } = &c.exit {
            if !m.switches.contains_key(peer) && m.net.bridge(peer).is_none() {
                to.push_str(" (not modelled: no request or flows for it in the artifacts)");
            }
        }
        seg.paths.push(PathPrediction {
            flows: Vec::new(),
            buckets: Vec::new(),
            choices: Vec::new(),
            entries: hop.trace.cites.clone(),
            fate: Fate::Forward {
                port: c.port,
                tun_id: c.packet.vxlan_vni,
                tun_dst: c
                    .packet
                    .vxlan_vni
                    .map(|_| Ipv4Addr::from(c.packet.outer_dst).to_string()),
                to,
                headers: header_values(&headers),
            },
        });
    }
    seg
}
