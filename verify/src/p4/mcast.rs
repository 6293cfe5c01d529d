//! REACH-1 for multicast across the P4 fabric: a group's VXLAN copy from
//! every sending host reaches the host of every member
//! (specs/invariants.md §5b, *REACH-1 for multicast groups*).
//!
//! Expects the switches as their requests install them, the P4Info, and a
//! policy from the intent (members, declared senders, VMs, the `host` and
//! `link` facts). Guarantees: for every group (tenant t, address g) and
//! every host h with a VM that sends to it (an accepted member or a
//! declared sender) attached to a switch of the artifacts, the packet a
//! host bridge puts on the wire for the group — VXLAN with t's VNI to outer
//! destination g, inner destination g — is walked from h's ToR port copy
//! by copy (each switch's replicas, each over its `link`; a switch is
//! entered at most once per port) by the concrete interpreter; every other
//! host with an accepted member of (t, g) that is attached to a switch of
//! the artifacts must receive a copy. A replica removed, a multicast entry
//! deleted, a tree port turned elsewhere is a member that misses its copy:
//! one counterexample per (group, sending host, missed host), with every
//! hop walked (`file.txtpb:line`) and the intent facts behind it (the
//! member VM, both hosts' `host` facts).
//!
//! The bridges' side (a host's group bucket, a receiving host's table 40
//! flow) is checked on the VM traces (`checks.rs`), which take the fabric
//! as delivering a group's copy to every other bridge: the two together
//! cover the path from sender to member.

use super::hop::{path, Exit, Hop, Wiring};
use super::ingress::PacketIn;
use super::request::P4Info;
use super::switch::Switch;
use crate::policy::Policy;
use crate::report::Counterexample;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::net::Ipv4Addr;

/// Switch hops walked per (group, sending host) at most: a tree reaches
/// each switch port once, so this bounds a walk whatever the entries say.
const MAX_HOPS: usize = 4096;

/// Every member host a group's copies miss, over every group and sender.
pub fn members_reached(sws: &[&Switch], info: &P4Info, policy: &Policy) -> Vec<Counterexample> {
    let si = &policy.switches;
    let index: BTreeMap<&str, usize> = sws
        .iter()
        .enumerate()
        .map(|(i, s)| (s.name.as_str(), i))
        .collect();
    let port_of: BTreeMap<&str, (&str, u32)> = si
        .attached
        .iter()
        .filter(|((tor, _), _)| index.contains_key(tor.as_str()))
        .map(|((tor, port), h)| (h.as_str(), (tor.as_str(), *port)))
        .collect();
    let vni_of: BTreeMap<&str, u64> = si.tenant_of.iter().map(|(v, t)| (t.as_str(), *v)).collect();
    let wiring = Wiring {
        links: &si.fabric.links,
        attached: &si.attached,
    };
    let mut out = Vec::new();
    for ((tenant, g), members) in policy.mcast.iter() {
        let Some(&vni) = vni_of.get(tenant.as_str()) else {
            continue;
        };
        let senders = policy.mcast_senders.get(&(tenant.clone(), *g));
        let vm = |name: &str| {
            policy
                .vms
                .iter()
                .find(|v| &v.tenant == tenant && v.name == name)
        };
        // receiving hosts → one member there (cited)
        let mut rx: BTreeMap<&str, &crate::policy::Vm> = BTreeMap::new();
        for m in members {
            if let Some(v) = vm(m) {
                rx.entry(v.host.as_str()).or_insert(v);
            }
        }
        // sending hosts → one sender there (its address is the packet's source)
        let mut tx: BTreeMap<&str, &crate::policy::Vm> = BTreeMap::new();
        for s in members.iter().chain(senders.into_iter().flatten()) {
            if let Some(v) = vm(s) {
                tx.entry(v.host.as_str()).or_insert(v);
            }
        }
        for (host, sender) in tx {
            let Some(&(tor, port)) = port_of.get(host) else {
                continue;
            };
            let want: BTreeSet<&str> = rx
                .keys()
                .copied()
                .filter(|h| *h != host && port_of.contains_key(h))
                .collect();
            if want.is_empty() {
                continue;
            }
            let p = PacketIn {
                ingress_port: port,
                vxlan_vni: Some(vni as u32),
                outer_dst: *g,
                proto: 17,
                src: sender.ip,
                dst: *g,
                sport: 40000,
                dport: 5000,
            };
            let (hops, reached) = walk(sws, info, &index, wiring, index[tor], p.clone());
            for missed in want.iter().filter(|h| !reached.contains(**h)) {
                let member = rx[missed];
                let mut cites: Vec<String> =
                    hops.iter().flat_map(|h| h.trace.cites.clone()).collect();
                cites.push(format!(
                    "{}  vm {}/{} (member of {})",
                    member.at,
                    tenant,
                    member.name,
                    Ipv4Addr::from(*g)
                ));
                cites.push(format!(
                    "{}  vm {}/{} (sender)",
                    sender.at, tenant, sender.name
                ));
                for h in [host, *missed] {
                    if let Some(at) = si.host_at.get(h) {
                        cites.push(format!("{at}  host {h}"));
                    }
                }
                out.push(Counterexample {
                    invariant: "REACH-1".into(),
                    key: None,
                    summary: format!(
                        "group {} of tenant {tenant} (VNI {vni}) sent from host {host} never reaches host {missed}, where {}/{} is a member: the switches' replicas miss it (e.g. {})",
                        Ipv4Addr::from(*g),
                        tenant,
                        member.name,
                        super::invariants::show(&p)
                    ),
                    packet: Some(super::frame::packet(tor, &p)),
                    paths: vec![path(&hops)],
                    cites,
                });
            }
        }
    }
    out
}

/// The copies of `p` entering switch `at`, followed over every link: the
/// hops walked (breadth first) and the hosts reached.
fn walk<'a>(
    sws: &[&Switch],
    info: &P4Info,
    index: &BTreeMap<&str, usize>,
    wiring: Wiring<'a>,
    at: usize,
    p: PacketIn,
) -> (Vec<Hop>, BTreeSet<String>) {
    let mut hops = Vec::new();
    let mut reached = BTreeSet::new();
    let mut seen = BTreeSet::new();
    let mut queue = VecDeque::from([(at, p)]);
    while let Some((i, p)) = queue.pop_front() {
        if hops.len() >= MAX_HOPS || !seen.insert((i, p.ingress_port)) {
            continue;
        }
        let hop = Hop::through(sws[i], info, &p, Some(wiring));
        for c in &hop.copies {
            match &c.exit {
                Exit::Link { peer, port } => {
                    if let Some(&n) = index.get(peer.as_str()) {
                        let mut q = c.packet.clone();
                        q.ingress_port = *port;
                        queue.push_back((n, q));
                    }
                }
                Exit::Host { host } => {
                    reached.insert(host.clone());
                }
                Exit::Outside | Exit::Unknown => {}
            }
        }
        hops.push(hop);
    }
    (hops, reached)
}
