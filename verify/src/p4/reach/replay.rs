//! A REACH-2 or REACH-1 violation the walk found, replayed as the
//! counterexample users read: one concrete packet through the concrete
//! interpreter, switch by switch, with each hop's entries.

use super::{Found, Walk};
use crate::p4::ingress::{Fate, PacketIn};
use crate::p4::request::P4Info;
use crate::p4::switch::Switch;
use crate::report::{Counterexample, PathCx};
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
    let mut hops = Vec::new();
    let mut cites = Vec::new();
    let mut at = entry;
    let mut end = String::new();
    for _ in 0..w.limit {
        let sw = sws[at];
        let t = sw.ingress(info, &p);
        hops.push(format!(
            "{} ingress {}",
            sw.name,
            crate::p4::invariants::show(&p)
        ));
        hops.extend(t.cites.iter().map(|c| format!("  entry {c}")));
        cites.extend(t.cites.iter().cloned());
        end = format!("{}: {}", sw.name, crate::p4::invariants::fate_text(&t.fate));
        let Fate::Unicast { port, encap } = t.fate else {
            break;
        };
        if let Some((v, ul, _)) = encap {
            p.vxlan_vni = Some(v);
            p.outer_dst = ul;
        }
        match w.fabric.links.get(&(sw.name.clone(), port)) {
            Some((peer, q, _)) => match w.index.get(peer.as_str()) {
                Some(&n) => {
                    at = n;
                    p.ingress_port = *q;
                }
                None => break,
            },
            None => {
                if let Some(h) = w.attached.get(&(sw.name.clone(), port)) {
                    end.push_str(&format!(" (host {h})"));
                } else {
                    end.push_str(" (no link: out of the fabric)");
                }
                break;
            }
        }
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
        paths: vec![PathCx { hops, end }],
        cites,
        key: None,
    }
}
