//! Table invariants: AFF-1, AFF-2, AFF-4, CAP-1 (specs/invariants.md); AFF-4
//! lives in `tables/aff4.rs`, re-exported here.
//!
//! Expects the artifact rows of every load-balancer instance (SMux
//! `agent_mux_*`, HMux `p4_vip`/`p4_ecmp_member`/`p4_tunnel`, Rubik
//! `p4_vip_local`/`p4_ecmp_member_local`), SNAT grants (`agent_mux_snat`,
//! `agent_snat_range`, OVS `nat(src=…)` flows) and the policy. Guarantees:
//! checks on the tables themselves (the choice `vector[hash5 % n]` is the
//! same function everywhere, so equal vectors ⇔ equal choices), each
//! failure with a concrete 5-tuple found by evaluating `hash5`
//! (netc_compiler::functors, the one definition).

mod aff4;

pub(crate) use aff4::moved_grants;
pub use aff4::{
    aff4, aff4_vm_reads, aff4_with, flow_grants, flow_grants_in, Grant, AFF4_RELATIONS,
};

use crate::artifacts::{Artifacts, Row};
use crate::ofctl::{self, parse_ip};
use crate::packet::five_tuple;
use crate::policy::Policy;
use crate::report::{Counterexample, Packet};
use netc_compiler::functors::hash5_v4;
use std::collections::{BTreeMap, BTreeSet};

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
mod tests;
