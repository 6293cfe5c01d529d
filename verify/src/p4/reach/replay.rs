//! A REACH-2 or REACH-1 violation the walk found, replayed as the
//! counterexample users read: one concrete packet through the concrete
//! interpreter, switch by switch, with each hop's entries, printed by
//! [`crate::p4::hop`] as `netc predict` prints the same packet.

use super::{Found, Walk};
use crate::p4::hop::{path, Exit, Hop, Out, Wiring};
use crate::p4::ingress::PacketIn;
use crate::p4::request::P4Info;
use crate::p4::switch::Switch;
use crate::report::Counterexample;
use netc_compiler::functors::hash5_v4;

/// A found violation as a counterexample: a concrete packet of its set, at
/// the entry switch, with a source port whose hash takes every slot on its
/// path, followed switch by switch by the concrete interpreter.
pub(super) fn replay(sws: &[&Switch], info: &P4Info, w: &Walk, f: Found) -> Counterexample {
    let (entry, port, vni, addr) = f.entry;
    let inner = w.space.witness(&f.set);
    let mut p = PacketIn {
        ingress_port: port,
        // a host's tunnels: the VNI of a packet of the set
        vxlan_vni: vni.or_else(|| inner.as_ref().and_then(|x| x.vxlan_vni)),
        outer_dst: addr,
        proto: inner.as_ref().map_or(6, |x| x.proto),
        src: inner.as_ref().map_or(0xc633_6407, |x| x.src),
        dst: inner.as_ref().map_or(addr, |x| x.dst),
        sport: 0,
        dport: inner.as_ref().map_or(0, |x| x.dport),
    };
    if let Some(sp) = (0..=u16::MAX).find(|sp| {
        let h = u128::from(hash5_v4(p.proto, p.src, p.dst, *sp, p.dport));
        f.slots.iter().all(|s| h % s.n == s.idx)
    }) {
        p.sport = sp;
    }
    let first = p.clone();
    let wiring = Wiring {
        links: &w.fabric.links,
        attached: w.attached,
    };
    let mut hops: Vec<Hop> = Vec::new();
    let mut cites = Vec::new();
    let mut at = entry;
    for _ in 0..w.limit {
        let hop = Hop::through(sws[at], info, &p, Some(wiring));
        cites.extend(hop.trace.cites.iter().cloned());
        let next = match hop.copies.as_slice() {
            [Out {
                packet,
                exit: Exit::Link { peer, port },
                ..
            }] => w.index.get(peer.as_str()).map(|&n| {
                let mut q = packet.clone();
                q.ingress_port = *port;
                (n, q)
            }),
            _ => None,
        };
        hops.push(hop);
        let Some((n, q)) = next else { break };
        at = n;
        p = q;
    }
    cites.extend(f.facts);
    Counterexample {
        invariant: f.invariant.into(),
        summary: format!(
            "{} (e.g. {})",
            f.summary,
            crate::p4::invariants::show(&first)
        ),
        packet: Some(crate::p4::frame::packet(w.names[entry], &first)),
        paths: vec![path(&hops)],
        cites,
        key: None,
    }
}
