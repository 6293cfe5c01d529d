//! Table invariants: AFF-1, AFF-2, AFF-4, CAP-1 (specs/invariants.md).
//!
//! Expects the artifact rows of every load-balancer instance (SMux
//! `agent_mux_*`, HMux `p4_vip`/`p4_ecmp_member`/`p4_tunnel`, Rubik
//! `p4_vip_local`/`p4_ecmp_member_local`), SNAT grants (`agent_mux_snat`,
//! `agent_snat_range`, OVS `nat(src=…)` flows) and the policy. Guarantees:
//! checks on the tables themselves (the choice `vector[hash5 % n]` is the
//! same function everywhere, so equal vectors ⇔ equal choices), each
//! failure with a concrete 5-tuple found by evaluating `hash5`
//! (netc_compiler::functors, the one definition).

use crate::artifacts::{Artifacts, FlowText, Row};
use crate::ofctl::{self, parse_ip, Action, Nat};
use crate::packet::five_tuple;
use crate::policy::Policy;
use crate::report::{Counterexample, Packet};
use netc_compiler::functors::hash5_v4;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// A client address for table counterexamples (TEST-NET-2).
const CLIENT: u32 = 0xc633_6407; // 198.51.100.7

/// (VIP, protocol, port).
pub type Endpoint = (u32, u8, u16);
type Member = (u64, u32);

/// One instance's vector for one endpoint.
#[derive(Clone, Debug, PartialEq)]
pub struct Vector {
    pub instance: String,
    pub table: &'static str,
    pub n: u64,
    pub slots: Vec<Option<Member>>,
    pub at: String,
}

fn num(v: &[String], i: usize) -> Option<u64> {
    v.get(i)?.parse().ok()
}

/// Every instance's vector, per endpoint.
pub fn vectors(a: &Artifacts) -> BTreeMap<Endpoint, Vec<Vector>> {
    vectors_of(a, None, None)
}

/// The endpoint of a vector relation's row (`vip` row: device, vni, vip,
/// proto, port, n; member row: device, vip, proto, port, idx, …).
fn endpoint_at(v: &[String], vip_col: usize) -> Option<Endpoint> {
    Some((
        v.get(vip_col).and_then(|t| parse_ip(t))?,
        num(v, vip_col + 1)? as u8,
        num(v, vip_col + 2)? as u16,
    ))
}

/// The endpoint a row of a relation of [`AFF1_VECTOR_RELATIONS`] belongs to.
pub fn row_endpoint(rel: &str, r: &Row) -> Option<Endpoint> {
    endpoint_at(&r.vals, if rel.contains("member") { 1 } else { 2 })
}

/// Per relation of [`AFF1_VECTOR_RELATIONS`], each row's endpoint
/// ([`row_endpoint`]), as a caller that keeps them across updates holds
/// them: an update that wants a few endpoints then parses no other row.
pub type RowEndpoints = [Vec<Option<Endpoint>>; 6];

/// [`RowEndpoints`] of a generation.
pub fn row_endpoints(a: &Artifacts) -> RowEndpoints {
    AFF1_VECTOR_RELATIONS.map(|rel| a.rows(rel).iter().map(|r| row_endpoint(rel, r)).collect())
}

/// [`vectors`] of the endpoints in `only` (all when `None`); `known`: each
/// row's endpoint, read instead of parsing the row.
fn vectors_of(
    a: &Artifacts,
    only: Option<&BTreeSet<Endpoint>>,
    known: Option<&RowEndpoints>,
) -> BTreeMap<Endpoint, Vec<Vector>> {
    let wanted = |ep: &Endpoint| only.is_none_or(|o| o.contains(ep));
    let ep_of = |k: usize, j: usize, v: &[String], col: usize| match known {
        Some(e) => e[k].get(j).copied().flatten(),
        None => endpoint_at(v, col),
    };
    let mut out: BTreeMap<Endpoint, Vec<Vector>> = BTreeMap::new();
    for (k, (vrel, mrel)) in [
        ("agent_mux_vip", "agent_mux_member"),
        ("p4_vip", "p4_ecmp_member"),
        ("p4_vip_local", "p4_ecmp_member_local"),
    ]
    .into_iter()
    .enumerate()
    {
        let mut members: BTreeMap<(String, Endpoint, u64), Member> = BTreeMap::new();
        for (j, r) in a.rows(mrel).iter().enumerate() {
            let v = &r.vals;
            // the endpoint first: an update wants a few of them
            let Some(ep) = ep_of(2 * k + 1, j, v, 1).filter(&wanted) else {
                continue;
            };
            if let (Some(idx), Some(mvni), Some(m)) =
                (num(v, 4), num(v, 5), v.get(6).and_then(|t| parse_ip(t)))
            {
                members.insert((v[0].clone(), ep, idx), (mvni, m));
            }
        }
        for (j, r) in a.rows(vrel).iter().enumerate() {
            let v = &r.vals;
            let Some(ep) = ep_of(2 * k, j, v, 2).filter(&wanted) else {
                continue;
            };
            let Some(n) = num(v, 5) else {
                continue;
            };
            let list = out.entry(ep).or_default();
            if list.iter().any(|x| x.instance == v[0] && x.table == vrel) {
                continue;
            }
            let slots = (0..n.min(1 << 20))
                .map(|i| members.get(&(v[0].clone(), ep, i)).copied())
                .collect();
            list.push(Vector {
                instance: v[0].clone(),
                table: vrel,
                n,
                slots,
                at: r.at.clone(),
            });
        }
    }
    out
}

fn choose(v: &Vector, h: u32) -> Option<Member> {
    if v.n == 0 {
        return None;
    }
    v.slots
        .get((u64::from(h) % v.n) as usize)
        .copied()
        .flatten()
}

/// A client source port whose hash satisfies `pred`.
fn find_port(ep: Endpoint, pred: impl Fn(u32) -> bool) -> Option<u16> {
    (1024..=65535u16).find(|&s| pred(hash5_v4(ep.1, CLIENT, ep.0, s, ep.2)))
}

fn cx(
    inv: &str,
    summary: String,
    ep: Endpoint,
    sport: Option<u16>,
    ingress: &str,
    cites: Vec<String>,
) -> Counterexample {
    Counterexample {
        invariant: inv.into(),
        key: None,
        summary,
        packet: sport.map(|s| {
            Packet::from_headers(ingress.into(), &five_tuple(ep.1, CLIENT, ep.0, s, ep.2))
        }),
        paths: Vec::new(),
        cites,
    }
}

fn show_member(m: Option<Member>) -> String {
    match m {
        Some((vni, ip)) => format!("{} (vni {vni})", std::net::Ipv4Addr::from(ip)),
        None => "nothing (empty slot)".into(),
    }
}

/// VMs by (VNI, address); the first one wins, as a scan in order would.
fn vms_by_addr(policy: &Policy) -> std::collections::HashMap<(u64, u32), &crate::policy::Vm> {
    let mut m = std::collections::HashMap::new();
    for v in &policy.vms {
        m.entry((v.vni, v.ip)).or_insert(&**v);
    }
    m
}

/// AFF-1: every instance holds the same complete vector, and each member's
/// tunnel leads to the host that runs that DIP.
pub fn aff1(a: &Artifacts, policy: &Policy) -> Vec<Counterexample> {
    let mut out = aff1_vectors(a);
    out.extend(aff1_tunnels(a, policy));
    out
}

/// The load-balancer relations [`aff1_vectors`] reads (nothing else).
pub const AFF1_VECTOR_RELATIONS: [&str; 6] = [
    "agent_mux_vip",
    "agent_mux_member",
    "p4_vip",
    "p4_ecmp_member",
    "p4_vip_local",
    "p4_ecmp_member_local",
];

/// The relations [`aff1_tunnels`] reads (with the policy's VMs and underlay).
pub const AFF1_TUNNEL_RELATIONS: [&str; 2] = ["agent_mux_tunnel", "p4_tunnel"];

/// AFF-1 on the vectors alone: each complete, and alike on every instance.
/// Reads only [`AFF1_VECTOR_RELATIONS`].
pub fn aff1_vectors(a: &Artifacts) -> Vec<Counterexample> {
    aff1_vectors_by_endpoint(a, None, None)
        .into_values()
        .flatten()
        .collect()
}

/// [`aff1_vectors`] per endpoint (in endpoint order, as it lists them), of
/// the endpoints in `only` (all when `None`); an endpoint with no finding
/// has no entry.
pub fn aff1_vectors_by_endpoint(
    a: &Artifacts,
    only: Option<&BTreeSet<Endpoint>>,
    known: Option<&RowEndpoints>,
) -> BTreeMap<Endpoint, Vec<Counterexample>> {
    let mut found = BTreeMap::new();
    for (ep, vs) in vectors_of(a, only, known) {
        let mut out = Vec::new();
        let vip = std::net::Ipv4Addr::from(ep.0);
        for v in &vs {
            if let Some(i) = v.slots.iter().position(Option::is_none) {
                let sport = find_port(ep, |h| u64::from(h) % v.n == i as u64);
                out.push(cx("AFF-1", format!(
                    "{} `{}` has no member in slot {i} of {vip}:{}/{} (n = {}): connections hashing there are lost",
                    v.table, v.instance, ep.2, ep.1, v.n), ep, sport, &format!("the Internet → {vip}"), vec![v.at.clone()]));
            }
        }
        // Rubik local mappings serve only their ToR's own sources with local
        // DIPs: they are checked for completeness, not compared.
        let shared: Vec<&Vector> = vs.iter().filter(|v| v.table != "p4_vip_local").collect();
        let Some(first) = shared.first() else {
            continue;
        };
        for v in &shared[1..] {
            if v.n == first.n && v.slots == first.slots {
                continue;
            }
            let sport = find_port(ep, |h| choose(first, h) != choose(v, h));
            let detail = sport
                .map(|s| {
                    let h = hash5_v4(ep.1, CLIENT, ep.0, s, ep.2);
                    format!(
                        ": hash5 = {h}, `{}` picks {} but `{}` picks {}",
                        first.instance,
                        show_member(choose(first, h)),
                        v.instance,
                        show_member(choose(v, h))
                    )
                })
                .unwrap_or_default();
            out.push(cx(
                "AFF-1",
                format!(
                    "`{}` ({}, n = {}) and `{}` ({}, n = {}) map {vip}:{}/{} differently{detail}",
                    first.instance, first.table, first.n, v.instance, v.table, v.n, ep.2, ep.1
                ),
                ep,
                sport,
                &format!("the Internet → {vip}"),
                vec![first.at.clone(), v.at.clone()],
            ));
        }
        if !out.is_empty() {
            found.insert(ep, out);
        }
    }
    found
}

/// AFF-1 on the members' tunnels: each leads to the host that runs the DIP,
/// with its MAC. Reads only [`AFF1_TUNNEL_RELATIONS`], the policy's VMs and
/// underlay.
pub fn aff1_tunnels(a: &Artifacts, policy: &Policy) -> Vec<Counterexample> {
    let cx = TunnelCheck::new(policy);
    let mut out = Vec::new();
    for rel in AFF1_TUNNEL_RELATIONS {
        for r in a.rows(rel) {
            out.extend(cx.row(rel, r));
        }
    }
    out
}

/// The tunnel row's (mvni, member): what of the policy its check reads
/// (the VM of that VNI and address, and that VM's host's underlay address).
pub fn tunnel_member(r: &Row) -> Option<(u64, u32)> {
    Some((num(&r.vals, 1)?, r.vals.get(2).and_then(|t| parse_ip(t))?))
}

/// [`aff1_tunnels`] one row at a time: the policy's lookups, built once.
pub struct TunnelCheck<'p> {
    host_ip: BTreeMap<&'p str, u32>,
    by_addr: std::collections::HashMap<(u64, u32), &'p crate::policy::Vm>,
    any_vm: bool,
}

impl<'p> TunnelCheck<'p> {
    pub fn new(policy: &'p Policy) -> TunnelCheck<'p> {
        TunnelCheck {
            by_addr: vms_by_addr(policy),
            ..TunnelCheck::new_without_vms(policy)
        }
    }

    /// A check of only the rows whose member is in `members` (what
    /// [`tunnel_member`] reads): the VMs looked up are those, found by one
    /// scan of numbers instead of hashing every VM (an update re-checks
    /// the few rows of a changed VM).
    pub fn for_members(policy: &'p Policy, members: &BTreeSet<(u64, u32)>) -> TunnelCheck<'p> {
        let mut by_addr = std::collections::HashMap::new();
        for v in &policy.vms {
            if members.contains(&(v.vni, v.ip)) {
                // the first one wins, as in `vms_by_addr`
                by_addr.entry((v.vni, v.ip)).or_insert(&**v);
            }
        }
        TunnelCheck {
            by_addr,
            ..TunnelCheck::new_without_vms(policy)
        }
    }

    fn new_without_vms(policy: &'p Policy) -> TunnelCheck<'p> {
        TunnelCheck {
            host_ip: policy
                .underlay
                .iter()
                .map(|(ip, d)| (d.as_str(), *ip))
                .collect(),
            by_addr: std::collections::HashMap::new(),
            any_vm: !policy.vms.is_empty(),
        }
    }

    /// The findings of row `r` of relation `rel`, in the order the check lists them.
    pub fn row(&self, rel: &str, r: &Row) -> Vec<Counterexample> {
        let mut out = Vec::new();
        let v = &r.vals;
        let (Some(mvni), Some(m), Some(u)) = (
            num(v, 1),
            v.get(2).and_then(|t| parse_ip(t)),
            v.get(3).and_then(|t| parse_ip(t)),
        ) else {
            return out;
        };
        if mvni == 0 {
            return out;
        }
        let Some(vm) = self.by_addr.get(&(mvni, m)).copied() else {
            if self.any_vm {
                out.push(tunnel_cx(r, format!("{rel} `{}` sends members {} (vni {mvni}) somewhere, but no VM of that VNI has that address", v[0], std::net::Ipv4Addr::from(m))));
            }
            return out;
        };
        if let Some(&want) = self.host_ip.get(vm.host.as_str()) {
            if want != u {
                out.push(tunnel_cx(
                    r,
                    format!(
                        "{rel} `{}` tunnels DIP {} ({}/{}) to {}, but that VM runs on {} ({})",
                        v[0],
                        std::net::Ipv4Addr::from(m),
                        vm.tenant,
                        vm.name,
                        std::net::Ipv4Addr::from(u),
                        vm.host,
                        std::net::Ipv4Addr::from(want)
                    ),
                ));
            }
        }
        if v.get(4).and_then(|t| ofctl::parse_mac(t)) != Some(vm.mac) {
            out.push(tunnel_cx(
                r,
                format!(
                    "{rel} `{}` writes MAC {} for DIP {} ({}/{}), whose MAC is {}",
                    v[0],
                    v.get(4).map_or("", |s| s.as_str()),
                    std::net::Ipv4Addr::from(m),
                    vm.tenant,
                    vm.name,
                    crate::space::mac(vm.mac)
                ),
            ));
        }
        out
    }
}

fn tunnel_cx(r: &Row, summary: String) -> Counterexample {
    Counterexample {
        invariant: "AFF-1".into(),
        key: None,
        summary,
        packet: None,
        paths: Vec::new(),
        cites: vec![r.at.clone()],
    }
}

/// A SNAT port range of a VIP granted to one DIP (`owner`: VNI, address).
#[derive(Clone, Debug, PartialEq)]
pub struct Grant {
    vip: u32,
    lo: u16,
    hi: u16,
    owner: (u64, u32),
    at: String,
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
fn aff4_vm_lookups<'a>(
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

/// The relations [`cap1`] reads (with the policy's capacities).
pub const CAP1_RELATIONS: [&str; 5] = [
    "p4_vip",
    "p4_vip_local",
    "p4_ecmp_member",
    "p4_ecmp_member_local",
    "p4_tunnel",
];

/// Which CAP-1 table (0 host, 1 ECMP, 2 tunnel) a row of a relation of
/// [`CAP1_RELATIONS`] takes an entry of.
pub fn cap1_table(rel: &str) -> Option<usize> {
    match rel {
        "p4_vip" | "p4_vip_local" => Some(0),
        "p4_ecmp_member" | "p4_ecmp_member_local" => Some(1),
        "p4_tunnel" => Some(2),
        _ => None,
    }
}

/// Per switch, the entries its rows take of each CAP-1 table: what
/// [`cap1`] compares with the capacities (kept across updates by
/// `table_recheck.rs`, moved by the rows added and removed).
pub type CapUse = BTreeMap<String, [u64; 3]>;

/// The switch a CAP-1 row is of.
pub fn cap1_switch(r: &Row) -> &str {
    r.vals.first().map_or("", String::as_str)
}

/// [`CapUse`] of a generation.
pub fn cap1_use(a: &Artifacts) -> CapUse {
    let mut use_ = CapUse::new();
    for rel in CAP1_RELATIONS {
        let Some(t) = cap1_table(rel) else { continue };
        for r in a.rows(rel) {
            match use_.get_mut(cap1_switch(r)) {
                Some(u) => u[t] += 1,
                None => {
                    let mut u = [0; 3];
                    u[t] = 1;
                    use_.insert(cap1_switch(r).to_string(), u);
                }
            }
        }
    }
    use_
}

/// `use_` (of `moves.old`) moved to `moves.new`: the rows of the dirty
/// CAP-1 relations removed no longer count, the rows added do (a row
/// paired with one of the new generation has its values, so its switch
/// and table); a switch left with no entries is dropped, as
/// [`cap1_use`] of the new generation would not list it.
pub fn move_cap_use(use_: &mut CapUse, moves: &crate::row_moves::RowMoves) {
    let mut count = |r: &Row, k: usize, add: bool| {
        let sw = cap1_switch(r);
        if !use_.contains_key(sw) {
            use_.insert(sw.to_string(), [0; 3]);
        }
        if let Some(u) = use_.get_mut(sw) {
            u[k] = if add {
                u[k] + 1
            } else {
                u[k].saturating_sub(1)
            };
            if *u == [0; 3] {
                use_.remove(sw);
            }
        }
    };
    for rel in CAP1_RELATIONS {
        let (Some(pos), Some(k)) = (moves.of(rel), cap1_table(rel)) else {
            continue;
        };
        let (old, new) = (moves.old.rows(rel), moves.new.rows(rel));
        let mut hit = vec![false; new.len()];
        for (i, j) in pos.iter().enumerate() {
            match j {
                Some(j) => hit[*j as usize] = true,
                None => count(&old[i], k, false),
            }
        }
        for (j, r) in new.iter().enumerate() {
            if !hit[j] {
                count(r, k, true);
            }
        }
    }
}

/// CAP-1: P4 table use per switch within the declared capacity.
pub fn cap1(a: &Artifacts, policy: &Policy) -> Vec<Counterexample> {
    cap1_of(&cap1_use(a), policy)
}

/// [`cap1`] given the table use (a switch of no entries finds nothing).
pub fn cap1_of(use_: &CapUse, policy: &Policy) -> Vec<Counterexample> {
    let mut out = Vec::new();
    for (sw, u) in use_ {
        let Some(&(h, e, t)) = policy.capacity.get(sw) else {
            continue;
        };
        for (name, used, cap) in [("host", u[0], h), ("ECMP", u[1], e), ("tunnel", u[2], t)] {
            if used > cap {
                out.push(Counterexample {
                    invariant: "CAP-1".into(),
                    key: None,
                    summary: format!(
                        "switch `{sw}` needs {used} {name} table entries; it has {cap}"
                    ),
                    packet: None,
                    paths: Vec::new(),
                    cites: Vec::new(),
                });
            }
        }
    }
    out
}

/// AFF-2 for one instance's endpoint: the exact number of hash values (out
/// of 2^32) whose member changes, and how many of those belonged to a DIP
/// that is still in the new vector.
pub fn remapped(old: &Vector, new: &Vector) -> Option<(u64, u64, Option<u32>)> {
    let (n1, n2) = (old.n, new.n);
    if n1 == 0 || n2 == 0 {
        return None;
    }
    let g = gcd(n1, n2);
    let l = n1 / g * n2;
    if l > 50_000_000 {
        return None;
    }
    let space: u64 = 1 << 32;
    let still: std::collections::BTreeSet<Member> = new.slots.iter().flatten().copied().collect();
    let (mut moved, mut broken, mut witness) = (0u64, 0u64, None);
    for r in 0..l {
        let count = if r >= space {
            0
        } else {
            (space - 1 - r) / l + 1
        };
        let (a, b) = (old.slots[(r % n1) as usize], new.slots[(r % n2) as usize]);
        if a != b {
            moved += count;
            if a.is_some_and(|m| still.contains(&m)) {
                broken += count;
                if witness.is_none() && count > 0 {
                    witness = Some(r as u32);
                }
            }
        }
    }
    Some((moved, broken, witness))
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// The vector an instance of `olds` chose by for an endpoint that `n`
/// serves now: the same instance's (same table), else — the endpoint moved
/// onto the HMux `n` — what served it before: another HMux's vector before
/// a Mux's (AFF-1 makes them equal; an HMux is preferred because it had no
/// connection table to hand over). Rubik's local mappings are compared
/// only with themselves: they serve another set of clients.
fn before<'a>(olds: &'a [Vector], n: &Vector) -> Option<&'a Vector> {
    let same = olds
        .iter()
        .find(|o| o.instance == n.instance && o.table == n.table);
    if same.is_some() || n.table != "p4_vip" {
        return same;
    }
    olds.iter()
        .find(|o| o.table == "p4_vip")
        .or_else(|| olds.iter().find(|o| o.table == "agent_mux_vip"))
}

/// AFF-2 between two artifact sets: (counterexamples, per-endpoint report lines).
///
/// A switch (HMux) that newly holds an endpoint is compared with what
/// served it before (a Mux, or another switch): it has no connection state,
/// so every established connection is chosen afresh by its vector.
pub fn aff2(old: &Artifacts, new: &Artifacts) -> (Vec<Counterexample>, Vec<String>) {
    let (ov, nv) = (vectors(old), vectors(new));
    let (mut out, mut lines) = (Vec::new(), Vec::new());
    for (ep, news) in &nv {
        let Some(olds) = ov.get(ep) else { continue };
        for n in news {
            let Some(o) = before(olds, n) else {
                continue;
            };
            let vip = std::net::Ipv4Addr::from(ep.0);
            let on = if o.instance == n.instance {
                format!("`{}`", n.instance)
            } else {
                format!("`{}` (before: `{}`)", n.instance, o.instance)
            };
            let Some((moved, broken, witness)) = remapped(o, n) else {
                lines.push(format!(
                    "{vip}:{}/{} on {on}: vectors too large to compare exactly",
                    ep.2, ep.1
                ));
                continue;
            };
            lines.push(format!(
                "{vip}:{}/{} on {on}: {moved}/4294967296 of the flow space remapped ({:.6}%), {broken} of it from DIPs present before and after",
                ep.2, ep.1, moved as f64 / 4294967296.0 * 100.0));
            // A software Mux keeps each established connection's DIP in its
            // connection table (Ananta's flow state; specs/targets.md §2.1):
            // only new connections follow the new vector. A stateless HMux
            // has nothing but the hash, so what moves is broken.
            if broken > 0 && n.table == "agent_mux_vip" {
                lines.push(format!(
                    "{vip}:{}/{} on {on}: a software Mux, whose connection table keeps established connections on their DIP; the remapped space applies to new connections only",
                    ep.2, ep.1
                ));
                continue;
            }
            if broken > 0 {
                let sport = witness.and_then(|r| {
                    let l = o.n / gcd(o.n, n.n) * n.n;
                    find_port(*ep, |h| u64::from(h) % l == u64::from(r))
                });
                let mut c = cx("AFF-2", format!(
                    "on {on}, {broken} of 2^32 hash values of {vip}:{}/{} ({:.4}%) move away from a DIP that is in both generations (n {} → {})",
                    ep.2, ep.1, broken as f64 / 4294967296.0 * 100.0, o.n, n.n),
                    *ep, sport, &format!("the Internet → {vip}"), vec![o.at.clone(), n.at.clone()]);
                c.key = Some(format!("{vip}:{}/{}", ep.2, ep.1));
                out.push(c);
            }
        }
    }
    (out, lines)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A generation whose CAP-1 relations hold these rows (relation,
    /// switch and value): few switches and values, so rows repeat and
    /// counts move up and down on each.
    fn p4_rows(rows: &[(usize, u8)]) -> Artifacts {
        let mut a = Artifacts::default();
        for (j, (k, sw)) in rows.iter().enumerate() {
            let rel = CAP1_RELATIONS[k % CAP1_RELATIONS.len()];
            a.relations
                .entry(rel.to_string())
                .or_default()
                .push(std::sync::Arc::new(Row {
                    vals: vec![format!("tor-{}", sw % 3), (sw / 3).to_string()],
                    at: format!("f:{j}"),
                }));
        }
        a
    }

    /// A host flow from small numbers: a SNAT grant of a few (VNI, DIP,
    /// ports) or another flow; texts repeat.
    fn snat_flow(x: (u8, u8)) -> FlowText {
        let (vni, dip) = (10 + x.0 % 3, x.1 % 4);
        let actions = match x.0 / 3 % 3 {
            0 => "output:1".to_string(),
            _ => format!(
                "ct(commit,table=31,zone={vni},nat(src=100.96.0.1:{}-{}))",
                1000 + u16::from(dip) * 8,
                1007 + u16::from(dip) * 8
            ),
        };
        FlowText {
            table: 30,
            priority: 5,
            matches: format!("ip,reg6={vni},nw_src=10.0.0.{dip}"),
            actions,
            ..FlowText::default()
        }
    }

    /// Each flow cited at its line, as a file of these flows would be.
    fn lines(mut fs: Vec<FlowText>) -> Vec<FlowText> {
        for (i, f) in fs.iter_mut().enumerate() {
            f.at = format!("h.flows:{}", i + 1);
        }
        fs
    }

    proptest! {
        /// The grants moved by an edit's flow moves (the middle read
        /// again) equal every flow's grants read afresh, cites included.
        #[test]
        fn moved_grants_equal_grants_read_afresh(
            flows in proptest::collection::vec((any::<u8>(), any::<u8>()), 0..12),
            edits in proptest::collection::vec((0usize..14, proptest::option::of((any::<u8>(), any::<u8>()))), 0..4),
        ) {
            let old = lines(flows.into_iter().map(snat_flow).collect());
            let new = lines(crate::edited(&old, edits.into_iter().map(|(at, f)| (at, f.map(snat_flow))).collect()));
            let key = |f: &FlowText| (f.matches.clone(), f.actions.clone());
            let m = crate::incremental::moves_by(&old, &new, key);
            let was = flow_grants_in(&old, 0..old.len());
            prop_assert_eq!(moved_grants(&new, &was, m.as_ref()), flow_grants_in(&new, 0..new.len()));
        }
    }

    proptest! {
        /// AFF-4's lookups built for the rows' keys only answer every key
        /// the rows name as maps of every VM do (a tenant's last VM's VNI,
        /// the first VM of a (VNI, address)); VMs repeat tenants and keys.
        #[test]
        fn aff4_lookups_answer_as_maps_of_every_vm(
            vms in proptest::collection::vec((0u8..4, 0u8..3, 0u8..4), 0..20),
            ranges in proptest::collection::vec(0u8..5, 0..6),
            snats in proptest::collection::vec((0u8..4, 0u8..5), 0..6),
        ) {
            let mut p = Policy::default();
            for (i, &(t, vni, ip)) in vms.iter().enumerate() {
                p.vms.push(std::sync::Arc::new(crate::policy::Vm {
                    tenant: format!("t{t}"),
                    name: format!("v{i}"),
                    vni: u64::from(vni),
                    mac: 0,
                    ip: u32::from(ip),
                    host: format!("h{i}"),
                    port: 1,
                    at: String::new(),
                }));
            }
            let mut a = Artifacts::default();
            let row = |vals: Vec<String>| std::sync::Arc::new(Row { vals, at: String::new() });
            for t in &ranges {
                a.relations.entry("agent_snat_range".into()).or_default().push(row(vec![
                    "h".into(), format!("t{t}"), "x".into(), "0.0.0.1".into(), "0.0.0.2".into(),
                    "1".into(), "2".into(),
                ]));
            }
            for (vni, ip) in &snats {
                a.relations.entry("agent_mux_snat".into()).or_default().push(row(vec![
                    "m".into(), "0.0.0.9".into(), "1".into(), "2".into(), vni.to_string(),
                    std::net::Ipv4Addr::from(u32::from(*ip)).to_string(), "0.0.0.3".into(),
                ]));
            }
            let every_tenant: BTreeMap<&str, u64> =
                p.vms.iter().map(|v| (v.tenant.as_str(), v.vni)).collect();
            let every_owner = vms_by_addr(&p);
            let (tenants, owners) = aff4_vm_lookups(&a, &p);
            for t in &ranges {
                let t = format!("t{t}");
                prop_assert_eq!(tenants.get(t.as_str()), every_tenant.get(t.as_str()));
            }
            for (vni, ip) in &snats {
                let k = (u64::from(*vni), u32::from(*ip));
                prop_assert_eq!(
                    owners.get(&k).map(|v| v.name.as_str()),
                    every_owner.get(&k).map(|v| v.name.as_str())
                );
            }
        }
    }

    proptest! {
        /// The kept table use, moved by an update's rows added and
        /// removed, equals a fresh count of the new generation.
        #[test]
        fn moved_cap_use_equals_a_fresh_count(
            rows in proptest::collection::vec((0usize..5, 0u8..9), 0..30),
            edits in proptest::collection::vec(
                (0usize..40, proptest::option::of((0usize..5, 0u8..9))), 1..6),
        ) {
            let (old, new) = (p4_rows(&rows), p4_rows(&crate::edited(&rows, edits)));
            let mut use_ = cap1_use(&old);
            move_cap_use(&mut use_, &crate::row_moves::RowMoves::every(&old, &new));
            prop_assert_eq!(use_, cap1_use(&new));
        }
    }

    /// A generation holding one endpoint (100.64.0.2:80/6) on each
    /// `(instance, vip relation, member relation)`, with these members.
    fn held(on: &[(&str, &str, &str)], members: &[u8]) -> Artifacts {
        let mut a = Artifacts::default();
        let mut push = |rel: &str, vals: Vec<String>| {
            let rows = a.relations.entry(rel.to_string()).or_default();
            let at = format!("{rel}.csv:{}", rows.len() + 1);
            rows.push(std::sync::Arc::new(Row { vals, at }));
        };
        for (inst, vrel, mrel) in on {
            let n = members.len().to_string();
            let row = [inst, "0", "100.64.0.2", "6", "80", n.as_str()];
            push(vrel, row.iter().map(|t| t.to_string()).collect());
            for (i, m) in members.iter().enumerate() {
                let row = [
                    inst.to_string(),
                    "100.64.0.2".into(),
                    "6".into(),
                    "80".into(),
                    i.to_string(),
                    "10".into(),
                    format!("10.0.0.{m}"),
                ];
                push(mrel, row.to_vec());
            }
        }
        a
    }

    #[test]
    fn a_switch_newly_holding_a_vip_is_compared_with_what_served_it() {
        let smux = ("smux1", "agent_mux_vip", "agent_mux_member");
        let core = ("core1", "p4_vip", "p4_ecmp_member");
        let agg = ("agg1", "p4_vip", "p4_ecmp_member");
        // on the SMuxes with the DIPs already changed, then back on a
        // switch: the switch chooses as the SMux did — nothing moves
        let (cxs, _) = aff2(&held(&[smux], &[1, 2, 3]), &held(&[smux, core], &[1, 2, 3]));
        assert!(cxs.is_empty(), "{cxs:?}");
        // a switch moving the VIP to another switch with the same vector
        let (cxs, _) = aff2(&held(&[smux, agg], &[1, 2]), &held(&[smux, core], &[1, 2]));
        assert!(cxs.is_empty(), "{cxs:?}");
        // the DIP added while the VIP comes onto the switch: the switch has
        // no connection table, so the SMux's established connections break
        let (cxs, lines) = aff2(&held(&[smux], &[1, 2]), &held(&[smux, core], &[1, 2, 3]));
        assert_eq!(cxs.len(), 1, "{lines:?}");
        assert!(
            cxs[0].summary.contains("`core1` (before: `smux1`)"),
            "{}",
            cxs[0].summary
        );
        assert_eq!(cxs[0].key.as_deref(), Some("100.64.0.2:80/6"));
        // ... and from another switch, the switch is what served it
        let (cxs, _) = aff2(
            &held(&[smux, agg], &[1, 2]),
            &held(&[smux, core], &[1, 2, 3]),
        );
        assert!(
            cxs[0].summary.contains("(before: `agg1`)"),
            "{}",
            cxs[0].summary
        );
        // the SMux alone keeps its connections: a note, no violation
        let (cxs, lines) = aff2(&held(&[smux], &[1, 2]), &held(&[smux], &[1, 2, 3]));
        assert!(
            cxs.is_empty() && lines.iter().any(|l| l.contains("connection table")),
            "{lines:?}"
        );
    }
}
