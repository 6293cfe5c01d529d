//! AFF-4 (specs/invariants.md): SNAT port ranges of one VIP never overlap
//! between two DIPs, and every Mux sends return traffic to the host that
//! runs the DIP.
//!
//! Expects the SNAT grants of `agent_mux_snat` / `agent_snat_range` rows
//! and of OVS `nat(src=…)` flows ([`flow_grants`]), and the policy's VMs
//! and underlay. Guarantees: [`aff4_with`] reports every overlap and every
//! misdirected return path once, each with a concrete 5-tuple and the
//! rows or flows that grant it; [`moved_grants`] keeps a bridge's grants
//! in step with its flows across an update.

use super::{num, CLIENT};
use crate::artifacts::{Artifacts, FlowText};
use crate::ofctl::{self, parse_ip, Action, Nat};
use crate::packet::five_tuple;
use crate::policy::Policy;
use crate::report::{Counterexample, Packet};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// A SNAT port range of a VIP granted to one DIP (`owner`: VNI, address).
#[derive(Clone, Debug, PartialEq)]
pub struct Grant {
    pub(super) vip: u32,
    pub(super) lo: u16,
    pub(super) hi: u16,
    pub(super) owner: (u64, u32),
    pub(super) at: String,
}

/// The relations [`aff4_with`] reads (with the flows' grants, the policy's
/// VMs and underlay).
pub const AFF4_RELATIONS: [&str; 2] = ["agent_mux_snat", "agent_snat_range"];

/// AFF-4: SNAT port ranges of one VIP never overlap between two DIPs, and
/// every Mux sends return traffic to the host that runs the DIP.
pub fn aff4(a: &Artifacts, policy: &Policy) -> Vec<Counterexample> {
    let flows: Vec<Grant> = a.flows.values().flat_map(|f| flow_grants(f)).collect();
    aff4_with(a, policy, flows.iter())
}

/// The SNAT grants of one bridge's flows (`ct(…,nat(src=A:lo-hi))` with the
/// VNI in `reg6` and the DIP in `nw_src`), in flow order.
pub fn flow_grants(flows: &[FlowText]) -> Vec<Grant> {
    flow_grants_in(flows, 0..flows.len())
        .into_iter()
        .map(|(_, g)| g)
        .collect()
}

/// [`flow_grants`] of the flows at positions `range`, each with its flow's
/// position.
pub fn flow_grants_in(flows: &[FlowText], range: std::ops::Range<usize>) -> Vec<(u32, Grant)> {
    let mut out = Vec::new();
    // only `nat(src=…)` parses to a source NAT: skip the rest unparsed
    let at = range.start;
    for (k, fl) in flows[range]
        .iter()
        .enumerate()
        .filter(|(_, f)| f.actions.contains("nat(src="))
    {
        let Ok(acts) = ofctl::parse_actions(&fl.actions) else {
            continue;
        };
        for act in acts {
            if let Action::Ct {
                nat: Some(Nat::Src { addr, lo, hi }),
                ..
            } = act
            {
                let m = ofctl::parse_match(&fl.matches).unwrap_or_default();
                let get = |f| m.iter().find(|c| c.field == f).map(|c| c.value);
                if let (Some(vni), Some(dip)) = (
                    get(crate::space::Field::Reg(6)),
                    get(crate::space::Field::NwSrc),
                ) {
                    out.push((
                        (at + k) as u32,
                        Grant {
                            vip: addr,
                            lo,
                            hi,
                            owner: (vni as u64, dip as u32),
                            at: fl.at.clone(),
                        },
                    ));
                }
            }
        }
    }
    out
}

/// The grants of a bridge's `flows` after an edit whose flow moves are
/// `m` (old position → new; `None`: the same flows), from `was` (the
/// grants before, with their flows' positions): the grants of flows
/// outside the edited middle moved and cited where their flow is now, the
/// middle read again. Equals [`flow_grants_in`] over every flow; an update
/// that edits a Hoverboard reads its few changed flows, not every flow's
/// actions.
pub(crate) fn moved_grants(
    flows: &[FlowText],
    was: &[(u32, Grant)],
    m: Option<&crate::incremental::Moves>,
) -> Vec<(u32, Grant)> {
    let (om, nm) = m.map_or((0..0, 0..0), |m| (m.old_middle(), m.new_middle()));
    let moved = |(at, g): &(u32, Grant)| {
        let to = m.map_or(Some(*at), |m| m.get(*at as usize))?;
        let cite = flows.get(to as usize)?.at.clone();
        let (vip, lo, hi, owner) = (g.vip, g.lo, g.hi, g.owner);
        Some((
            to,
            Grant {
                vip,
                lo,
                hi,
                owner,
                at: cite,
            },
        ))
    };
    let before = was.iter().filter(|(at, _)| (*at as usize) < om.start);
    let after = was.iter().filter(|(at, _)| (*at as usize) >= om.end);
    let mut out: Vec<(u32, Grant)> = before.filter_map(moved).collect();
    out.extend(flow_grants_in(flows, nm));
    out.extend(after.filter_map(moved));
    out
}

impl Grant {
    /// Equal but for the `file:line` cited.
    pub fn same_but_cite(&self, o: &Grant) -> bool {
        (self.vip, self.lo, self.hi, self.owner) == (o.vip, o.lo, o.hi, o.owner)
    }
}

/// AFF-4 given the grants of every bridge's flows (in device order, as
/// [`flow_grants`] gives them): what [`aff4`] finds.
/// What [`aff4_with`] reads of the VMs, by the rows that read it: the
/// (VNI, DIP) owners of `agent_mux_snat` rows (looked up by address) and
/// the tenants of `agent_snat_range` rows (looked up for their VNI). A
/// change of VMs none of which has such an address or tenant leaves AFF-4
/// as it was.
pub fn aff4_vm_reads(a: &Artifacts) -> (BTreeSet<(u64, u32)>, BTreeSet<String>) {
    let owners = a
        .rows("agent_mux_snat")
        .iter()
        .filter_map(|r| Some((num(&r.vals, 4)?, parse_ip(r.vals.get(5)?)?)))
        .collect();
    let tenants = a
        .rows("agent_snat_range")
        .iter()
        .filter_map(|r| r.vals.get(1).cloned())
        .collect();
    (owners, tenants)
}

type Quick = std::hash::BuildHasherDefault<netc_compiler::fxhash::FxHasher>;

/// What AFF-4 looks VMs up by, for the keys its rows name only: the
/// `agent_snat_range` tenants' VNI (the last VM of the tenant's, as a map
/// of every VM collected would hold) and the `agent_mux_snat` owners' VM
/// (the first with that (VNI, address), as [`vms_by_addr`]). One pass
/// over the VMs probing two small maps: a map of every VM (100k at L,
/// keyed by tenant name, sorted) was most of an AFF-4 re-run.
#[allow(clippy::type_complexity)]
pub(super) fn aff4_vm_lookups<'a>(
    a: &Artifacts,
    policy: &'a Policy,
) -> (
    HashMap<String, u64, Quick>,
    HashMap<(u64, u32), &'a crate::policy::Vm, Quick>,
) {
    let mut tenants: HashMap<String, Option<u64>, Quick> = HashMap::default();
    for r in a.rows("agent_snat_range") {
        tenants.insert(r.vals.get(1).cloned().unwrap_or_default(), None);
    }
    let mut owners: HashMap<(u64, u32), Option<&crate::policy::Vm>, Quick> = HashMap::default();
    for r in a.rows("agent_mux_snat") {
        if let (Some(vni), Some(dip)) = (num(&r.vals, 4), r.vals.get(5).and_then(|t| parse_ip(t))) {
            owners.insert((vni, dip), None);
        }
    }
    for v in &policy.vms {
        if let Some(t) = tenants.get_mut(v.tenant.as_str()) {
            *t = Some(v.vni);
        }
        if let Some(o @ None) = owners.get_mut(&(v.vni, v.ip)) {
            *o = Some(&**v);
        }
    }
    let tenants = tenants
        .into_iter()
        .filter_map(|(t, v)| Some((t, v?)))
        .collect();
    let owners = owners
        .into_iter()
        .filter_map(|(k, v)| Some((k, v?)))
        .collect();
    (tenants, owners)
}

pub fn aff4_with<'g>(
    a: &Artifacts,
    policy: &Policy,
    flow_grants: impl Iterator<Item = &'g Grant>,
) -> Vec<Counterexample> {
    let mut grants = Vec::new();
    let host_ip: BTreeMap<&str, u32> = policy
        .underlay
        .iter()
        .map(|(ip, d)| (d.as_str(), *ip))
        .collect();
    let mut out = Vec::new();
    let (tenant_vni, by_addr) = aff4_vm_lookups(a, policy);
    for r in a.rows("agent_mux_snat") {
        let v = &r.vals;
        if let (Some(vip), Some(lo), Some(hi), Some(vni), Some(dip), Some(u)) = (
            v.get(1).and_then(|t| parse_ip(t)),
            num(v, 2),
            num(v, 3),
            num(v, 4),
            v.get(5).and_then(|t| parse_ip(t)),
            v.get(6).and_then(|t| parse_ip(t)),
        ) {
            grants.push(Grant {
                vip,
                lo: lo as u16,
                hi: hi as u16,
                owner: (vni, dip),
                at: r.at.clone(),
            });
            if let Some(vm) = by_addr.get(&(vni, dip)).copied() {
                if let Some(&want) = host_ip.get(vm.host.as_str()) {
                    if want != u {
                        out.push(Counterexample {
                            invariant: "AFF-4".into(),
                            key: None,
                            summary: format!("`{}` returns SNAT traffic of {}:{lo}-{hi} to {}, but DIP {}/{} runs on {} ({})",
                                v[0], std::net::Ipv4Addr::from(vip), std::net::Ipv4Addr::from(u), vm.tenant, vm.name, vm.host, std::net::Ipv4Addr::from(want)),
                            packet: Some(Packet::from_headers(format!("the Internet → {}", std::net::Ipv4Addr::from(vip)), &five_tuple(6, CLIENT, vip, 443, lo as u16))),
                            paths: Vec::new(),
                            cites: vec![r.at.clone()],
                        });
                    }
                }
            }
        }
    }
    for r in a.rows("agent_snat_range") {
        let v = &r.vals;
        if let (Some(&vni), Some(dip), Some(vip), Some(lo), Some(hi)) = (
            tenant_vni.get(v.get(1).map_or("", |s| s.as_str())),
            v.get(3).and_then(|t| parse_ip(t)),
            v.get(4).and_then(|t| parse_ip(t)),
            num(v, 5),
            num(v, 6),
        ) {
            grants.push(Grant {
                vip,
                lo: lo as u16,
                hi: hi as u16,
                owner: (vni, dip),
                at: r.at.clone(),
            });
        }
    }
    let mut all: Vec<&Grant> = grants.iter().collect();
    for g in flow_grants {
        all.push(g);
    }
    let grants = all;
    // pairs (i, j), i < j, in order, as a scan of every pair would meet
    // them; only grants of one VIP can overlap
    let mut by_vip: std::collections::HashMap<u32, Vec<usize>> = std::collections::HashMap::new();
    for (i, g) in grants.iter().enumerate() {
        by_vip.entry(g.vip).or_default().push(i);
    }
    let mut seen = std::collections::BTreeSet::new();
    for (i, g) in grants.iter().enumerate() {
        let same_vip = &by_vip[&g.vip];
        let after = same_vip.partition_point(|&j| j <= i);
        for &j in &same_vip[after..] {
            let h = grants[j];
            if g.owner == h.owner || g.hi < h.lo || h.hi < g.lo {
                continue;
            }
            let port = g.lo.max(h.lo);
            let key = (g.vip, port, g.owner.min(h.owner), g.owner.max(h.owner));
            if !seen.insert(key) {
                continue;
            }
            let vip = std::net::Ipv4Addr::from(g.vip);
            out.push(Counterexample {
                invariant: "AFF-4".into(),
                key: None,
                summary: format!(
                    "SNAT ports {}-{} and {}-{} of {vip} overlap, granted to DIP {} (vni {}) and DIP {} (vni {}): return traffic to port {port} has two owners",
                    g.lo, g.hi, h.lo, h.hi, std::net::Ipv4Addr::from(g.owner.1), g.owner.0, std::net::Ipv4Addr::from(h.owner.1), h.owner.0),
                packet: Some(Packet::from_headers(format!("the Internet → {vip}"), &five_tuple(6, CLIENT, g.vip, 443, port))),
                paths: Vec::new(),
                cites: vec![g.at.clone(), h.at.clone()],
            });
        }
    }
    out
}
