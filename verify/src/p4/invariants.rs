//! The invariants a P4 switch's own tables carry, checked on the symbolic
//! ingress ([`super::symbolic::Model`]) of every `DIR/p4/<switch>.txtpb`
//! against the intent (specs/invariants.md §5b).
//!
//! Expects: the artifacts' switch requests as loaded and the policy (its [`SwitchIntent`] is
//! read from the intent facts: hosts' ToR ports, tenants, DoS black holes,
//! Anolis clusters). Guarantees, per switch, over *every* packet a port
//! can receive:
//! - ISO-1 (fabric edge): a VXLAN packet with VNI ≠ 0 from a host's ToR port
//!   passes port_tenant only when the host has a VM of that VNI's tenant;
//! - REACH-1 (fabric edge): every VNI of a tenant with a VM on the host
//!   passes;
//! - ISO-2 (multicast): a (VNI, group) replicated to a host's port only
//!   when that host has an accepted member of the tenant's group;
//! - ACL-2 (switch ACL): no packet to a VIP the intent black-holes
//!   (`dos_blackhole`) is load-balanced by the switch;
//! - ROUTE-1 (gateway routes): an Anolis cluster's gateway route has one
//!   slot per current peer, slot `i` the `i`-th by ring position;
//! - AFF-1 (switch side, `affinity.rs`): every switch balancing an
//!   endpoint does, slot by slot, what every other instance of it (each
//!   other switch, each software Mux's `agent_mux_*` rows) does: the same
//!   member, delivered (a drop where another delivers is a violation);
//! - PUSH-1 (switch side, `push.rs`): every multicast group an entry names
//!   is installed.
//! - REACH-2 and REACH-1 on the underlay: each switch is summarised for
//!   the VIPs, TIPs and hosts followed, and [`super::reach`] walks them
//!   across the fabric once every switch is summarised;
//! - REACH-1 on the multicast tree (`mcast.rs`): a group's copy from every
//!   sending host reaches every member's host over the replicas and links.
//!
//! Each violation gives a concrete packet of the offending class (a
//! witness whose hash takes the slot; its frame, VXLAN-encapsulated when it
//! arrives so, goes into the pcap), the `.txtpb` entries the concrete
//! interpreter matched for it hop by hop (`file:line`), and the intent
//! facts behind the expectation (`file:line`).

use super::affinity::{affinity, smux_instances, switch_instances};
use super::ingress::{Fate, PacketIn};
use super::switch::Switch;
use super::symbolic::{Key, Model};
use crate::artifacts::{ArtifactError, Artifacts, Row};
use crate::policy::{Facts, Policy};
use crate::report::Counterexample;
use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex};

/// What the intent says about the switches' own tables.
#[derive(Clone, Debug, Default)]
pub struct SwitchIntent {
    /// (ToR, port) → host attached there (`host` facts).
    pub attached: BTreeMap<(String, u32), String>,
    /// host → its `host` fact's `file:line`.
    pub host_at: BTreeMap<String, String>,
    /// VNI → tenant.
    pub tenant_of: BTreeMap<u64, String>,
    /// VNI → its `tenant` fact's `file:line`.
    pub tenant_at: BTreeMap<u64, String>,
    /// DoS black-holed VIPs, with the fact's `file:line`.
    pub blackholes: Vec<(u32, String)>,
    /// (gateway, prefix, length) → next hops by ring position, with the
    /// cluster's `anolis_current` fact.
    pub routes: BTreeMap<(String, u32, u32), (Vec<u32>, String)>,
    /// The fabric REACH-2 walks: links, VIPs, TIP ranges.
    pub fabric: super::reach::Fabric,
}

pub(super) fn ip(t: &str) -> Option<u32> {
    t.parse::<Ipv4Addr>().ok().map(u32::from)
}

impl SwitchIntent {
    pub fn from_facts(f: &Facts) -> SwitchIntent {
        let rows = |r: &str| f.get(r).map(Vec::as_slice).unwrap_or(&[]);
        let mut s = SwitchIntent {
            fabric: super::reach::Fabric::from_facts(f),
            ..SwitchIntent::default()
        };
        for r in rows("host") {
            if let (Some(tor), Some(port)) =
                (r.vals.get(2), r.vals.get(3).and_then(|p| p.parse().ok()))
            {
                s.attached.insert((tor.clone(), port), r.vals[0].clone());
                s.host_at.insert(r.vals[0].clone(), r.at.clone());
            }
        }
        for r in rows("tenant") {
            if let Some(v) = r.vals.get(1).and_then(|v| v.parse().ok()) {
                s.tenant_of.insert(v, r.vals[0].clone());
                s.tenant_at.insert(v, r.at.clone());
            }
        }
        for r in rows("dos_blackhole") {
            if let Some(v) = r.vals.first().and_then(|t| ip(t)) {
                s.blackholes.push((v, r.at.clone()));
            }
        }
        // Anolis: the gateway's ECMP vector is the current peers by ring position
        let current: BTreeMap<&str, (&str, &Row)> = rows("anolis_current")
            .iter()
            .filter_map(|r| Some((r.vals.first()?.as_str(), (r.vals.get(1)?.as_str(), r))))
            .collect();
        let node: BTreeMap<(&str, &str), u32> = rows("anolis_node")
            .iter()
            .filter_map(|r| {
                Some((
                    (r.vals[0].as_str(), r.vals.get(1)?.as_str()),
                    ip(r.vals.get(2)?)?,
                ))
            })
            .collect();
        for g in rows("anolis_gateway") {
            let (Some(c), Some(gw)) = (g.vals.first(), g.vals.get(1)) else {
                continue;
            };
            let Some(&(cur, cur_row)) = current.get(c.as_str()) else {
                continue;
            };
            let mut peers: Vec<(u64, u32)> = rows("anolis_peer")
                .iter()
                .filter(|r| r.vals.len() >= 4 && &r.vals[0] == c && r.vals[1] == cur)
                .filter_map(|r| {
                    Some((
                        r.vals[3].parse().ok()?,
                        *node.get(&(c.as_str(), r.vals[2].as_str()))?,
                    ))
                })
                .collect();
            peers.sort();
            for cl in rows("anolis_cluster")
                .iter()
                .filter(|r| r.vals.first() == Some(c))
            {
                let Some((net, len)) = cl.vals.get(2).and_then(|p| p.split_once('/')) else {
                    continue;
                };
                let (Some(net), Ok(len)) = (ip(net), len.parse()) else {
                    continue;
                };
                s.routes.insert(
                    (gw.clone(), net, len),
                    (peers.iter().map(|p| p.1).collect(), cur_row.at.clone()),
                );
            }
        }
        s
    }
}

/// A switch as its request installs it, and its symbolic ingress.
struct Built {
    sw: Arc<Switch>,
    model: Model,
}

/// The switches of the last check by `.txtpb` path, with the bytes they
/// were built from. An incremental re-verification checks the switches
/// again on every update although their requests rarely change; building a
/// model is most of a check's cost, so a file whose bytes are unchanged
/// (compared in full, not by a hash) reuses its model. Only the last
/// check's switches are kept, and only up to [`MEMO_BUDGET`].
type Memo = BTreeMap<std::path::PathBuf, (Arc<str>, Arc<Built>)>;
static BUILT: Mutex<Memo> = Mutex::new(BTreeMap::new());

/// Bytes of `.txtpb` whose models the memo keeps: a model is several times
/// its request's size, and holding all of them at once is what a full
/// verification could not afford at 100k VMs (502 switches, 331 MB of
/// requests); past the budget a model is built, checked and dropped.
const MEMO_BUDGET: usize = 64 << 20;

/// The switches of the artifacts (their requests as loaded), decoded and
/// applied, in name order; `visit` sees each with its model (index,
/// switch, model) before the next is built, so only the memo's models live
/// at once.
fn switches(
    a: &Artifacts,
    info: &super::request::P4Info,
    mut visit: impl FnMut(usize, &Switch, &Model),
) -> Result<Vec<Arc<Switch>>, ArtifactError> {
    let mut memo = BUILT
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let mut kept = Memo::new();
    let mut budget = MEMO_BUDGET;
    let mut out = Vec::new();
    for (i, (name, text)) in a.switches.iter().enumerate() {
        let built = match memo.remove(&text.path) {
            Some((old, built)) if *old == *text.text => built,
            _ => {
                let sw = super::build_switch(name, text)?;
                let model = Model::build(&sw, info);
                Arc::new(Built {
                    sw: Arc::new(sw),
                    model,
                })
            }
        };
        visit(i, &built.sw, &built.model);
        out.push(built.sw.clone());
        if text.text.len() <= budget {
            budget -= text.text.len();
            kept.insert(text.path.clone(), (text.text.clone(), built));
        }
    }
    *memo = kept;
    Ok(out)
}

pub(super) fn show(p: &PacketIn) -> String {
    let v = match p.vxlan_vni {
        Some(v) => format!("VXLAN vni {v} to {}, inner ", Ipv4Addr::from(p.outer_dst)),
        None => String::new(),
    };
    format!(
        "port {}: {v}{} {}:{} → {}:{}",
        p.ingress_port,
        match p.proto {
            6 => "tcp".to_string(),
            17 => "udp".to_string(),
            x => format!("proto {x}"),
        },
        Ipv4Addr::from(p.src),
        p.sport,
        Ipv4Addr::from(p.dst),
        p.dport
    )
}

/// How a fate reads in a report.
pub(super) fn fate_text(f: &Fate) -> String {
    match f {
        Fate::Drop { why } => format!("dropped ({why})"),
        Fate::Multicast { group, ports } => format!(
            "replicated by multicast group {group} to ports {}",
            ports
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(",")
        ),
        Fate::Unicast { port, encap: None } => format!("forwarded to port {port}"),
        Fate::Unicast {
            port,
            encap: Some((vni, underlay, dmac)),
        } => format!(
            "encapsulated (VXLAN vni {vni} to {}, inner dl_dst {}) and forwarded to port {port}",
            Ipv4Addr::from(*underlay),
            crate::space::mac(*dmac)
        ),
    }
}

struct Ctx<'a> {
    sw: &'a Switch,
    model: &'a Model,
    info: &'a super::request::P4Info,
    out: &'a mut Vec<Counterexample>,
}

impl Ctx<'_> {
    /// A counterexample from a concrete packet: the entries the interpreter
    /// matched (the path, `file:line`), then the intent facts in `facts`.
    fn report(&mut self, inv: &str, summary: String, p: &PacketIn, facts: &[String]) {
        self.out
            .push(counterexample(self.sw, self.info, inv, summary, p, facts));
    }
}

pub(super) fn counterexample(
    sw: &Switch,
    info: &super::request::P4Info,
    inv: &str,
    summary: String,
    p: &PacketIn,
    facts: &[String],
) -> Counterexample {
    let hop = super::hop::Hop::through(sw, info, p, None);
    let mut cites = hop.trace.cites.clone();
    cites.extend(facts.iter().cloned());
    Counterexample {
        invariant: inv.into(),
        key: None,
        summary: format!("{summary} (e.g. {})", show(p)),
        packet: Some(super::frame::packet(&sw.name, p)),
        paths: vec![super::hop::path(std::slice::from_ref(&hop))],
        cites,
    }
}

/// What the switch checks found, and how much they covered.
#[derive(Default)]
pub struct Checked {
    pub counterexamples: Vec<Counterexample>,
    /// Switches checked (every switch of the artifacts).
    pub switches: usize,
    /// The VIPs and TIPs REACH-2 walked the fabric for.
    pub followed: usize,
    /// The host underlay addresses REACH-1 walked the fabric for.
    pub hosts: usize,
    /// Packet classes (outcomes of the symbolic ingress) over every switch.
    pub outcomes: usize,
}

/// Every switch invariant on every switch of `a`; the counterexamples in
/// switch order. The checks against the intent run when the policy comes
/// from it (`policy.from_intent`). A switch that does not build is an
/// error, never a switch with nothing found.
pub fn check(a: &Artifacts, policy: &Policy) -> Result<Checked, ArtifactError> {
    let mut out = Vec::new();
    let mut done = Checked::default();
    if a.switches.is_empty() {
        return Ok(done);
    }
    let info = super::p4info()?;
    let si = &policy.switches;
    let mut instances = smux_instances(a);
    let mut outcomes = 0;
    let targets = super::reach::Targets::of(a, &si.fabric);
    let mut sums = super::reach::Summaries::default();
    // one switch at a time: its model is checked, then (past the memo) dropped
    let built = switches(a, &info, |i, sw, model| {
        outcomes += model.outcomes.len();
        instances.extend(switch_instances(i, model));
        out.extend(crate::push::switch(sw, &info));
        if !policy.from_intent {
            return;
        }
        sums.add(i, model, &targets);
        let mut c = Ctx {
            sw,
            model,
            info: &info,
            out: &mut out,
        };
        edge(&mut c, policy);
        multicast(&mut c, policy);
        blackholes(&mut c, si);
        routes(&mut c, si);
    })?;
    done.outcomes = outcomes;
    let sws: Vec<&Switch> = built.iter().map(|b| b.as_ref()).collect();
    affinity(&sws, &info, &instances, &mut out);
    if policy.from_intent {
        let r = super::reach::check(&sws, &info, &sums, &targets, &si.fabric, &si.attached);
        out.extend(r.counterexamples);
        out.extend(super::mcast::members_reached(&sws, &info, policy));
        done.followed = r.followed;
        done.hosts = r.hosts;
    }
    done.switches = sws.len();
    done.counterexamples = out;
    Ok(done)
}

/// The intent facts behind an edge or multicast expectation: the host's
/// `host` fact and the VNI's `tenant` fact.
fn facts(si: &SwitchIntent, host: &str, vni: Option<u64>) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(at) = si.host_at.get(host) {
        out.push(format!("{at}  host {host}"));
    }
    if let Some(at) = vni.and_then(|v| si.tenant_at.get(&v)) {
        out.push(format!("{at}  tenant of VNI {}", vni.unwrap_or(0)));
    }
    out
}

/// VNIs of the tenants with a VM on `host`.
fn host_vnis(policy: &Policy, host: &str) -> BTreeSet<u64> {
    policy
        .vms
        .iter()
        .filter(|v| v.host == host)
        .map(|v| v.vni)
        .collect()
}

fn edge(c: &mut Ctx, policy: &Policy) {
    let si = &policy.switches;
    let mut found = Vec::new();
    let s = &c.model.space;
    for ((tor, port), host) in si.attached.range((c.sw.name.clone(), 0)..) {
        if *tor != c.sw.name {
            break;
        }
        let vnis = host_vnis(policy, host);
        let from_port = s.eq(Key::Port, u128::from(*port)).and(&s.eq(Key::Vxlan, 1));
        let own = vnis.iter().fold(s.eq(Key::Vni, 0), |acc, v| {
            acc.or(&s.eq(Key::Vni, u128::from(*v)))
        });
        let leak = from_port.and_not(&own).and_not(&c.model.edge_drop);
        if let Some(p) = s.witness(&leak) {
            let v = u64::from(p.vxlan_vni.unwrap_or(0));
            let whose = si
                .tenant_of
                .get(&v)
                .map_or("no tenant".to_string(), |t| format!("tenant {t}"));
            found.push((
                "ISO-1",
                format!(
                    "switch {} lets host {host} (port {port}) send VNI {v} ({whose}), but {host} has no VM of it",
                    c.sw.name
                ),
                p,
                facts(si, host, Some(v)),
            ));
        }
        for v in vnis {
            let cut = from_port
                .and(&s.eq(Key::Vni, u128::from(v)))
                .and(&c.model.edge_drop);
            if let Some(p) = s.witness(&cut) {
                found.push((
                    "REACH-1",
                    format!(
                        "switch {} drops VNI {v} from host {host} (port {port}), where tenant {} has VMs",
                        c.sw.name,
                        si.tenant_of.get(&v).map_or("?", String::as_str)
                    ),
                    p,
                    facts(si, host, Some(v))
                        .into_iter()
                        .chain(
                            policy
                                .vms
                                .iter()
                                .filter(|m| &m.host == host && m.vni == v)
                                .take(1)
                                .map(|m| format!("{}  vm {}/{}", m.at, m.tenant, m.name)),
                        )
                        .collect(),
                ));
            }
        }
    }
    for (inv, summary, p, why) in found {
        c.report(inv, summary, &p, &why);
    }
}

fn multicast(c: &mut Ctx, policy: &Policy) {
    let si = &policy.switches;
    let mut found = Vec::new();
    for o in &c.model.outcomes {
        let Fate::Multicast { group, ports } = &o.fate else {
            continue;
        };
        // one mcast entry per outcome: its (VNI, group) is any witness's
        let Some(w) = c.model.space.witness(&o.set) else {
            continue;
        };
        let vni = u64::from(w.vxlan_vni.unwrap_or(0));
        let tenant = si.tenant_of.get(&vni).cloned().unwrap_or_default();
        let members = policy.mcast.get(&(tenant.clone(), w.dst));
        for port in ports {
            let Some(host) = si.attached.get(&(c.sw.name.clone(), *port)) else {
                continue; // a fabric port: the tree goes on
            };
            let member_here = policy.vms.iter().any(|v| {
                &v.host == host
                    && v.tenant == tenant
                    && members.is_some_and(|m| m.contains(&v.name))
            });
            if !member_here {
                // a packet from another port, so the egress prune keeps the copy
                let other = o
                    .set
                    .and_not(&c.model.space.eq(Key::Port, u128::from(*port)));
                let p = c.model.space.witness(&other).unwrap_or(w.clone());
                found.push((
                    format!(
                        "switch {} replicates group {} of {} (VNI {vni}, multicast group {group}) to port {port}, host {host}, where it has no accepted member",
                        c.sw.name,
                        Ipv4Addr::from(w.dst),
                        if tenant.is_empty() { "no tenant".to_string() } else { format!("tenant {tenant}") },
                    ),
                    p,
                    facts(si, host, Some(vni)),
                ));
            }
        }
    }
    for (summary, p, why) in found {
        c.report("ISO-2", summary, &p, &why);
    }
}

fn blackholes(c: &mut Ctx, si: &SwitchIntent) {
    let mut found = Vec::new();
    for (vip, at) in &si.blackholes {
        let s = &c.model.space;
        let to_vip = s
            .eq(Key::OuterDst, u128::from(*vip))
            .and(&s.eq(Key::Dst, u128::from(*vip)));
        for o in c.model.outcomes.iter().filter(|o| o.balanced) {
            let bad = o.set.and(&to_vip);
            if bad.is_false() {
                continue;
            }
            let probe = super::symbolic::SymOutcome {
                set: bad,
                ..o.clone()
            };
            if let Some(p) = c.model.witness(&probe) {
                found.push((*vip, at.clone(), p));
                break;
            }
        }
    }
    for (vip, at, p) in found {
        c.report(
            "ACL-2",
            format!(
                "switch {} load-balances packets to {}, a VIP the intent black-holes: its ACL does not drop them",
                c.sw.name,
                Ipv4Addr::from(vip)
            ),
            &p,
            &[format!("{at}  dos_blackhole({})", Ipv4Addr::from(vip))],
        );
    }
}

fn routes(c: &mut Ctx, si: &SwitchIntent) {
    let mut found = Vec::new();
    for ((gw, net, len), (want, at)) in &si.routes {
        if *gw != c.sw.name {
            continue;
        }
        let prefix = format!("{}/{len}", Ipv4Addr::from(*net));
        let mut got: BTreeMap<u128, (u32, &super::symbolic::SymOutcome)> = BTreeMap::new();
        let mut n_got = None;
        for o in &c.model.outcomes {
            let (Some(slot), Some(r)) = (o.slot, o.route) else {
                continue;
            };
            if (r.net, r.len) != (*net, *len) {
                continue;
            }
            n_got = Some(slot.n);
            got.entry(slot.idx).or_insert((r.nexthop, o));
        }
        let Some(n) = n_got else {
            let probe = c.model.space.eq(Key::OuterDst, u128::from(*net));
            let p = c.model.space.witness(&probe);
            if let Some(p) = p {
                found.push(("ROUTE-1", format!("gateway {gw} has no ECMP route for Anolis prefix {prefix} ({} current peers)", want.len()), p, at.clone()));
            }
            continue;
        };
        if n != want.len() as u128 {
            let o = got.values().next().map(|x| x.1);
            if let Some(p) = o.and_then(|o| c.model.witness(o)) {
                found.push(("ROUTE-1", format!("gateway {gw}'s route {prefix} spreads over {n} slots; the cluster has {} current peers", want.len()), p, at.clone()));
            }
        }
        for (i, w) in want.iter().enumerate() {
            match got.get(&(i as u128)) {
                Some((nh, _)) if nh == w => {}
                Some((nh, o)) => {
                    if let Some(p) = c.model.witness(o) {
                        found.push(("ROUTE-1", format!("gateway {gw}'s route {prefix} slot {i} goes to {}; by ring position it is peer {}", Ipv4Addr::from(*nh), Ipv4Addr::from(*w)), p, at.clone()));
                    }
                }
                None => {
                    let o = c.model.outcomes.iter().find(|o| {
                        o.slot.is_some_and(|s| s.idx == i as u128)
                            && o.route.is_none()
                            && matches!(&o.fate, Fate::Drop { why } if why.starts_with("route_member"))
                    });
                    if let Some(p) = o.and_then(|o| c.model.witness(o)) {
                        found.push(("ROUTE-1", format!("gateway {gw}'s route {prefix} slot {i} has no next hop; by ring position it is peer {}", Ipv4Addr::from(*w)), p, at.clone()));
                    }
                }
            }
        }
    }
    for (inv, summary, p, at) in found {
        c.report(inv, summary, &p, &[format!("{at}  anolis_current")]);
    }
}
