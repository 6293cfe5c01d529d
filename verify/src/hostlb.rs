//! AFF-1 for the hosts' own load balancers: every host that balances one
//! VIP endpoint chooses the same DIP for a 5-tuple (specs/invariants.md §4,
//! *host load balancers*).
//!
//! Expects a [`Network`] built from the artifacts and the [`Policy`] (VMs).
//! A host load-balancer instance is a flow whose actions run a `select`
//! group hashing named fields (`selection_method=hash,fields(…)`, what
//! `rules/lb_ananta.ndl` renders for a VIP balanced on the hosts); its
//! endpoint is the flow's `(reg6 = VNI, nw_dst, nw_proto, tp_dst)`.
//! Guarantees: per instance, a VM of that VNI on the host sends the
//! endpoint's packets through the model; each bucket's copy is followed
//! (through tunnels) to its *fate* — the VM whose port it is delivered to,
//! or a drop, a tunnel no bridge takes, the uplink. OVS maps a hash value
//! to a bucket by a function of the hash, the bucket ids and the weights
//! only, so two instances with the same selection method and fields and
//! the same `(bucket id, weight, fate)` list choose alike for every
//! 5-tuple; any difference (a bucket removed, a bucket leading elsewhere
//! or dropped, another weight or hash) is a violation: the endpoint's
//! 5-tuples that one instance sends to a DIP the other does not. The
//! counterexample is a packet of the differing instance's VM, the paths of
//! the differing bucket on both hosts, and the group and flow lines.

use crate::artifacts::Artifacts;
use crate::bridge::{End, Hop, Outcome};
use crate::checks::legit;
use crate::network::Network;
use crate::ofctl::Action;
use crate::policy::{Policy, Vm};
use crate::report::{Counterexample, Packet, PathCx};
use crate::space::{Field, ETH_IP};
use std::collections::BTreeMap;
use std::net::Ipv4Addr;

/// One host's instance of an endpoint: how its group chooses, and where
/// each bucket leads.
struct Instance<'a> {
    host: String,
    /// The group's text before its buckets (type, selection method, fields).
    method: String,
    /// Per bucket: (bucket id, weight, fate).
    buckets: Vec<(u64, u64, String)>,
    /// Per bucket: one path of its copy and the packets taking it.
    paths: Vec<Option<Outcome>>,
    vm: &'a Vm,
    group_at: String,
    flow_at: String,
}

/// Whether a bridge has a host load-balancer group (a `select` group
/// hashing named fields): `table_recheck.rs` keeps the set per bridge.
pub fn bridge_has_hashed(b: &crate::bridge::Bridge) -> bool {
    b.groups
        .values()
        .any(|g| g.text.kind == "select" && g.text.buckets.contains("selection_method=hash"))
}

/// `(bucket id, weight)` of each bucket of a group's text: an id given
/// with `bucket_id:` or, as OVS numbers them, its position.
fn ids_weights(text: &str) -> Vec<(u64, u64)> {
    text.split("bucket=")
        .skip(1)
        .enumerate()
        .map(|(i, b)| {
            let get = |k: &str| {
                b.split(',')
                    .find_map(|p| p.trim().strip_prefix(k))
                    .and_then(|w| w.parse().ok())
            };
            (
                get("bucket_id:").unwrap_or(i as u64),
                get("weight:").unwrap_or(1),
            )
        })
        .collect()
}

fn fate(net: &Network, policy: &Policy, sender: &Vm, o: &Outcome) -> String {
    let dev = net
        .bridges
        .get(o.device as usize)
        .map_or("?", |b| b.name.as_str());
    match &o.end {
        End::Deliver { port } => match policy.vm_at(dev, *port) {
            Some(vm) => format!("{}/{}", vm.tenant, vm.name),
            None => format!("{dev} port {port} (no VM)"),
        },
        // a bucket back to the sender's own port: OpenFlow skips it, yet
        // it names the sender as the DIP (another client would reach it)
        End::Drop { why } if why.contains("in_port") && dev == sender.host => {
            format!("{}/{}", sender.tenant, sender.name)
        }
        End::Drop { why } => format!("dropped ({why})"),
        End::Tunnel { tun_dst, .. } => {
            format!("tunnel to {} (no bridge)", Ipv4Addr::from(*tun_dst))
        }
        End::Uplink => "the uplink".into(),
    }
}

/// The endpoint `(vni, vip, proto, port)` a flow balances, from its match.
fn endpoint(f: &crate::bridge::Flow) -> Option<(u128, u32, u8, u16)> {
    let get = |fld: Field| {
        f.matches
            .iter()
            .find(|c| c.field == fld && c.mask == fld.mask())
            .map(|c| c.value)
    };
    Some((
        get(Field::Reg(6)).unwrap_or(0),
        get(Field::NwDst)? as u32,
        get(Field::NwProto).unwrap_or(0) as u8,
        get(Field::TpDst).unwrap_or(0) as u16,
    ))
}

/// Checks AFF-1 on the hosts' load balancers.
pub fn aff1(net: &Network, art: &Artifacts, policy: &Policy) -> Vec<Counterexample> {
    let space = &net.space;
    let mut by_endpoint: BTreeMap<(u128, u32, u8, u16), Vec<Instance>> = BTreeMap::new();
    for b in net.bridges.iter().filter(|b| bridge_has_hashed(b)) {
        for f in &b.flows {
            for gid in f.actions.iter().filter_map(|a| match a {
                Action::Group(g) => Some(*g),
                _ => None,
            }) {
                let Some(g) = b.groups.get(&gid) else {
                    continue;
                };
                if g.text.kind != "select" || !g.text.buckets.contains("selection_method=hash") {
                    continue;
                }
                let Some(ep @ (vni, vip, proto, port)) = endpoint(f) else {
                    continue;
                };
                let mut set = space
                    .field_eq(Field::DlType, ETH_IP, 0xffff)
                    .and(&space.field_eq(Field::NwDst, u128::from(vip), 0xffff_ffff));
                if proto != 0 {
                    set = set.and(&space.field_eq(Field::NwProto, u128::from(proto), 0xff));
                }
                if port != 0 {
                    set = set.and(&space.field_eq(Field::TpDst, u128::from(port), 0xffff));
                }
                let senders = policy
                    .vms
                    .iter()
                    .filter(|v| v.host == b.name && (vni == 0 || u128::from(v.vni) == vni));
                for a in senders {
                    let outs = net.trace(a, legit(space, a).and(&set), true);
                    let n = g.buckets.len();
                    let mut fates: Vec<Vec<String>> = vec![Vec::new(); n];
                    let mut paths: Vec<Option<Outcome>> = vec![None; n];
                    for o in &outs {
                        let hit = o.path.iter().find_map(|h| match *h {
                            Hop::Group {
                                bridge,
                                group,
                                bucket,
                            } if bridge == b.index && group == gid => Some(bucket as usize),
                            _ => None,
                        });
                        if let Some(k) = hit.filter(|k| *k < n) {
                            fates[k].push(fate(net, policy, a, o));
                            paths[k].get_or_insert_with(|| o.clone());
                        }
                    }
                    if paths.iter().all(Option::is_none) {
                        continue; // its ACLs keep this VM from the group: try another
                    }
                    let buckets = ids_weights(&g.text.buckets)
                        .into_iter()
                        .zip(fates)
                        .map(|((id, w), mut fs)| {
                            fs.sort();
                            fs.dedup();
                            let fs = if fs.is_empty() {
                                "(no copy)".to_string()
                            } else {
                                fs.join(" + ")
                            };
                            (id, w, fs)
                        })
                        .collect();
                    let method = g
                        .text
                        .buckets
                        .split("bucket=")
                        .next()
                        .unwrap_or("")
                        .trim_end_matches(',')
                        .to_string();
                    let flow_at = format!("{}  {}", f.text.at, f.text.actions);
                    by_endpoint.entry(ep).or_default().push(Instance {
                        host: b.name.clone(),
                        method,
                        buckets,
                        paths,
                        vm: a,
                        group_at: g.text.at.clone(),
                        flow_at,
                    });
                    break;
                }
            }
        }
    }
    let mut out = Vec::new();
    for ((vni, vip, proto, port), insts) in by_endpoint {
        let Some(first) = insts.first() else { continue };
        for other in &insts[1..] {
            if other.method == first.method && other.buckets == first.buckets {
                continue;
            }
            let vip_at = policy.switches.fabric.vips.get(&vip);
            out.push(counterexample(
                net,
                art,
                (vni, vip, proto, port),
                first,
                other,
                vip_at,
            ));
        }
    }
    out
}

fn describe(i: &Instance) -> String {
    let b: Vec<String> = i
        .buckets
        .iter()
        .map(|(id, w, f)| format!("{id}:{f}(w{w})"))
        .collect();
    format!("{} group [{}] by {}", i.host, b.join(", "), i.method)
}

fn counterexample(
    net: &Network,
    art: &Artifacts,
    (vni, vip, proto, port): (u128, u32, u8, u16),
    first: &Instance,
    other: &Instance,
    vip_at: Option<&String>,
) -> Counterexample {
    // the first bucket where they differ: its paths on both hosts
    let k = (0..first.buckets.len().max(other.buckets.len()))
        .find(|k| first.buckets.get(*k) != other.buckets.get(*k))
        .unwrap_or(0);
    let mut paths = Vec::new();
    let mut packet = None;
    let mut sender = other.vm;
    for (inst, label) in [(other, "differing instance"), (first, "first instance")] {
        if let Some(Some(o)) = inst.paths.get(k) {
            paths.push(path(
                net,
                art,
                &o.path,
                format!("{label} {} bucket {k}: {}", inst.host, inst.buckets[k].2),
            ));
            if packet.is_none() {
                sender = inst.vm;
                packet = net.space.witness(&o.pkt.set).map(|h| {
                    Packet::from_headers(
                        format!(
                            "{} port {} ({}/{})",
                            inst.vm.host, inst.vm.port, inst.vm.tenant, inst.vm.name
                        ),
                        &h,
                    )
                });
            }
        }
    }
    let mut cites = vec![
        format!(
            "{}  {} group (the differing instance)",
            other.group_at, other.host
        ),
        other.flow_at.clone(),
        format!("{}  {} group", first.group_at, first.host),
        first.flow_at.clone(),
        format!(
            "{}  the sending VM {}/{}",
            sender.at, sender.tenant, sender.name
        ),
    ];
    if let Some(at) = vip_at {
        cites.push(format!("{at}  vip {}", Ipv4Addr::from(vip)));
    }
    Counterexample {
        invariant: "AFF-1".into(),
        key: None,
        summary: format!(
            "VIP {}:{port}/{proto} (VNI {vni}) balanced on the hosts: {} where {} — the two choose different DIPs for some 5-tuples (bucket {k})",
            Ipv4Addr::from(vip),
            describe(other),
            describe(first),
        ),
        packet,
        paths,
        cites,
    }
}

fn path(net: &Network, art: &Artifacts, hops: &[Hop], end: String) -> PathCx {
    crate::nf::path_text(net, art, hops, end)
}
