//! PLAN-1 (Andromeda part): a VM that moves between hosts is reachable in
//! every state the rollout passes through — its hairpin comes first.
//!
//! A *move* is a VM (tenant, name) whose `agent_vm` row is on host A in the
//! old generation and on host B in the new one. [`Phases::plan`] is the
//! rollout order for a change, shared by the verifier and `netc apply`
//! (`runtime/deploy/src/rollout`), so what is proven is what is pushed:
//! 1. *arrive*: every B is pushed its new artifacts (the VM is delivered at
//!    B; senders still tunnel to A);
//! 2. *hairpin*: every A is pushed its new artifacts plus [`hairpin`] flows
//!    (packets for the VM arriving from the tunnel are sent on to B);
//! 3. *senders*: every other device is pushed its new artifacts;
//! 4. *unhairpin*: every A is pushed its new artifacts (hairpin removed).
//!
//! A device that both gains and loses a VM is pushed in phase 1 with its
//! hairpin. Within a phase devices go in name order. Without moves the plan
//! is every device in name order, new artifacts (no states are checked).
//!
//! [`check`] builds every intermediate state (after each step: a mix of the
//! devices' old, new and new-plus-hairpin artifacts) and traces, from every
//! VM that does not move, the packets to each moving VM's address:
//! - REACH: the packets the new intent's ACLs allow from a VM of the same
//!   tenant and vnet, and that both the old and the new generation deliver,
//!   are delivered to the moving VM, at its old port on A or its new port
//!   on B; a lost packet is a violation (black-holed). A packet one end
//!   drops (an ACL changed along with the move) is the ACL's to drop while
//!   the device that holds it is not yet, or already, updated;
//! - ISO: no packet of another tenant is delivered there unless through a
//!   declared exposure.
//!
//! Guarantees: each violation is a counterexample with a concrete packet,
//! its path in that state, and the step (device and content) it follows.
//! `NETC_ROLLOUT=flat` (for demonstrations and tests) plans the old order
//! instead — every device once, new artifacts, name order, no hairpin —
//! and `NETC_ROLLOUT=unpin-early` removes the hairpin before the senders
//! move (phases 1, 2, 4, 3), so their unsafe states are reported. A step
//! that pushes a device the same artifacts it had leaves the state as it
//! was and is not checked again.

use super::duet::cx;
use crate::artifacts::{Artifacts, FlowText};
use crate::bridge::End;
use crate::checks::{acl_allowed, legit};
use crate::network::Network;
use crate::ofctl::parse_ip;
use crate::policy::{Policy, Vm};
use crate::report::{Counterexample, Packet};
use crate::space::Field;
use crate::NoProvenance;
use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;

const ETH_IP: u128 = 0x0800;

/// A VM on host `from` in the old generation, on `to` in the new one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Move {
    pub tenant: String,
    pub vm: String,
    pub vni: u64,
    pub ip: u32,
    pub from: String,
    pub from_port: u32,
    pub to: String,
    pub to_port: u32,
    /// B's underlay address (where the hairpin tunnels to).
    pub to_addr: Option<u32>,
    /// The `agent_vm` rows (old, new).
    pub at: (String, String),
}

/// What a step pushes to its device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Content {
    /// The device's new artifacts.
    New,
    /// Its new artifacts plus its hairpin flows.
    NewWithHairpin,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// 1 arrive, 2 hairpin, 3 senders, 4 unhairpin (0: no moves, one phase).
    pub phase: u8,
    pub device: String,
    pub content: Content,
}

/// The rollout order of a change.
#[derive(Clone, Debug, Default)]
pub struct Phases {
    pub moves: Vec<Move>,
    /// Device → the flows added to its new artifacts while it hairpins.
    pub hairpin: BTreeMap<String, Vec<FlowText>>,
    pub steps: Vec<Step>,
}

/// Where a VM is in one generation: (host, VNI, address, port, its row).
type Placed = (String, u64, u32, u32, String);

/// (tenant, VM) → where the agents place it.
fn vms(a: &Artifacts) -> BTreeMap<(String, String), Placed> {
    let mut out = BTreeMap::new();
    for r in a.rows("agent_vm") {
        let v = &r.vals;
        if v.len() < 7 {
            continue;
        }
        let (Ok(vni), Some(ip), Ok(port)) = (v[2].parse(), parse_ip(&v[5]), v[6].parse()) else {
            continue;
        };
        out.insert(
            (v[1].clone(), v[3].clone()),
            (v[0].clone(), vni, ip, port, r.at.clone()),
        );
    }
    out
}

/// Every VM whose host differs between `old` and `new`.
pub fn moves(old: &Artifacts, new: &Artifacts) -> Vec<Move> {
    let (o, n) = (vms(old), vms(new));
    let addr = |dev: &str| {
        new.rows("ovs_tunnel_peer")
            .iter()
            .chain(old.rows("ovs_tunnel_peer"))
            .find(|r| r.vals.get(2).map(String::as_str) == Some(dev))
            .and_then(|r| parse_ip(r.vals.get(3)?))
    };
    n.iter()
        .filter_map(|(k, (to, vni, ip, to_port, at_new))| {
            let (from, _, _, from_port, at_old) = o.get(k)?;
            (from != to).then(|| Move {
                tenant: k.0.clone(),
                vm: k.1.clone(),
                vni: *vni,
                ip: *ip,
                from: from.clone(),
                from_port: *from_port,
                to: to.clone(),
                to_port: *to_port,
                to_addr: addr(to),
                at: (at_old.clone(), at_new.clone()),
            })
        })
        .collect()
}

/// The tunnel port of a host bridge: the `in_port` of its tunnel
/// classification flows (table 0, `in_port=P,tun_id=…`).
fn tunnel_port(flows: &[FlowText]) -> Option<String> {
    flows.iter().find_map(|f| {
        let m = f.matches.strip_prefix("in_port=")?;
        let (p, rest) = m.split_once(',')?;
        (f.table == 0 && rest.starts_with("tun_id=")).then(|| p.to_string())
    })
}

/// The flows host `m.from` adds while it hairpins `m`: packets for the VM
/// that arrive from the tunnel (table 40) go back out of the tunnel to B,
/// and the VM's VNI is still accepted from the tunnel (table 0) when the
/// host's new artifacts no longer do. `old_flows`/`new_flows` are the host's.
pub fn hairpin(m: &Move, old_flows: &[FlowText], new_flows: &[FlowText]) -> Vec<FlowText> {
    let (Some(to), Some(tp)) = (m.to_addr, tunnel_port(old_flows)) else {
        return Vec::new();
    };
    let at = format!("(hairpin of {}/{} on {})", m.tenant, m.vm, m.from);
    let flow = |table, matches: String, actions: String| FlowText {
        table,
        priority: 100,
        cookie: 0,
        matches,
        actions,
        at: at.clone(),
    };
    let accept = format!("in_port={tp},tun_id={}", m.vni);
    let mut out = Vec::new();
    if !new_flows
        .iter()
        .any(|f| f.table == 0 && f.matches == accept)
    {
        out.push(flow(
            0,
            accept,
            format!("load:{}->NXM_NX_REG6[],resubmit(,40)", m.vni),
        ));
    }
    out.push(flow(
        40,
        format!("ip,reg6={},nw_dst={}", m.vni, Ipv4Addr::from(m.ip)),
        format!(
            "set_field:{}->tun_id,set_field:{}->tun_dst,IN_PORT",
            m.vni,
            Ipv4Addr::from(to)
        ),
    ));
    out
}

/// Every device either generation places something on.
pub fn devices(old: &Artifacts, new: &Artifacts) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for a in [old, new] {
        out.extend(a.flows.keys().cloned());
        out.extend(a.groups.keys().cloned());
        out.extend(a.switches.keys().cloned());
        for (rel, rows) in &a.relations {
            if located(rel) {
                out.extend(rows.iter().filter_map(|r| r.vals.first().cloned()));
            }
        }
    }
    out
}

/// Relations whose first column is the device that receives the row.
fn located(rel: &str) -> bool {
    ["ovs_", "p4_", "agent_"].iter().any(|p| rel.starts_with(p))
}

fn device_of(r: &crate::artifacts::Row) -> &str {
    r.vals.first().map_or("", String::as_str)
}

/// Whether the plan is the flat order (`NETC_ROLLOUT=flat`).
pub fn flat() -> bool {
    std::env::var("NETC_ROLLOUT").is_ok_and(|v| v == "flat")
}

/// Whether the hairpin is removed before the senders move
/// (`NETC_ROLLOUT=unpin-early`: phases 1, 2, 4, 3 — an unsafe order, for
/// demonstrations and tests).
fn unpin_early() -> bool {
    std::env::var("NETC_ROLLOUT").is_ok_and(|v| v == "unpin-early")
}

/// Whether `device` holds the same artifacts in both generations (a step
/// that pushes it its new artifacts leaves the state as it was).
fn unchanged(old: &Artifacts, new: &Artifacts, device: &str) -> bool {
    let flows = |a: &Artifacts| -> Vec<(u8, u16, String, String)> {
        let mut v: Vec<_> = a
            .flows
            .get(device)
            .into_iter()
            .flatten()
            .map(|f| (f.table, f.priority, f.matches.clone(), f.actions.clone()))
            .collect();
        v.sort();
        v
    };
    let groups = |a: &Artifacts| -> Vec<(u32, String, String)> {
        let mut v: Vec<_> = a
            .groups
            .get(device)
            .into_iter()
            .flatten()
            .map(|g| (g.id, g.kind.clone(), g.buckets.clone()))
            .collect();
        v.sort();
        v
    };
    let rows = |a: &Artifacts| -> Vec<(String, Vec<String>)> {
        let mut v: Vec<_> = a
            .relations
            .iter()
            .filter(|(rel, _)| located(rel))
            .flat_map(|(rel, rows)| {
                rows.iter()
                    .filter(|r| device_of(r) == device)
                    .map(move |r| (rel.clone(), r.vals.clone()))
            })
            .collect();
        v.sort();
        v
    };
    flows(old) == flows(new) && groups(old) == groups(new) && rows(old) == rows(new)
}

impl Phases {
    /// The rollout order for `old` → `new` (see the module map).
    pub fn plan(old: &Artifacts, new: &Artifacts) -> Phases {
        let all = devices(old, new);
        let moves = if flat() { Vec::new() } else { moves(old, new) };
        if moves.is_empty() {
            return Phases {
                moves,
                hairpin: BTreeMap::new(),
                steps: all
                    .into_iter()
                    .map(|device| Step {
                        phase: 0,
                        device,
                        content: Content::New,
                    })
                    .collect(),
            };
        }
        let mut pins: BTreeMap<String, Vec<FlowText>> = BTreeMap::new();
        let none = Vec::new();
        for m in &moves {
            let of = |a: &'_ Artifacts| a.flows.get(&m.from).unwrap_or(&none).clone();
            let flows = hairpin(m, &of(old), &of(new));
            pins.entry(m.from.clone()).or_default().extend(flows);
        }
        let gain: BTreeSet<&String> = moves.iter().map(|m| &m.to).collect();
        let lose: BTreeSet<&String> = moves.iter().map(|m| &m.from).collect();
        let content = |d: &String| {
            if lose.contains(d) {
                Content::NewWithHairpin
            } else {
                Content::New
            }
        };
        let mut steps = Vec::new();
        for d in &all {
            if gain.contains(d) {
                steps.push(Step {
                    phase: 1,
                    device: d.clone(),
                    content: content(d),
                });
            }
        }
        for d in &all {
            if lose.contains(d) && !gain.contains(d) {
                steps.push(Step {
                    phase: 2,
                    device: d.clone(),
                    content: Content::NewWithHairpin,
                });
            }
        }
        for d in &all {
            if !lose.contains(d) && !gain.contains(d) {
                steps.push(Step {
                    phase: 3,
                    device: d.clone(),
                    content: Content::New,
                });
            }
        }
        for d in &all {
            if lose.contains(d) {
                steps.push(Step {
                    phase: 4,
                    device: d.clone(),
                    content: Content::New,
                });
            }
        }
        if unpin_early() {
            steps.sort_by_key(|s| match s.phase {
                4 => 3,
                3 => 4,
                p => p,
            });
        }
        Phases {
            moves,
            hairpin: pins,
            steps,
        }
    }

    /// The phase of `device` (its first step), 0 when it has none.
    pub fn phase_of(&self, device: &str) -> u8 {
        self.steps
            .iter()
            .find(|s| s.device == device)
            .map_or(0, |s| s.phase)
    }

    /// The state after the first `k` steps: each device's artifacts as its
    /// last step so far left them (old when it has had none).
    pub fn state(&self, old: &Artifacts, new: &Artifacts, k: usize) -> Artifacts {
        let mut now: BTreeMap<&str, Content> = BTreeMap::new();
        for s in &self.steps[..k] {
            now.insert(&s.device, s.content);
        }
        let pick = |d: &str| -> &Artifacts {
            if now.contains_key(d) {
                new
            } else {
                old
            }
        };
        let mut out = Artifacts {
            dir: new.dir.clone(),
            ..Default::default()
        };
        let rels: BTreeSet<&String> = old.relations.keys().chain(new.relations.keys()).collect();
        for rel in rels {
            let rows = if located(rel) {
                old.rows(rel)
                    .iter()
                    .filter(|r| std::ptr::eq(pick(device_of(r)), old))
                    .chain(
                        new.rows(rel)
                            .iter()
                            .filter(|r| std::ptr::eq(pick(device_of(r)), new)),
                    )
                    .cloned()
                    .collect()
            } else {
                new.rows(rel).to_vec()
            };
            out.relations.insert(rel.clone(), rows);
        }
        for d in devices(old, new) {
            let a = pick(&d);
            let mut flows = a.flows.get(&d).cloned().unwrap_or_default();
            if now.get(d.as_str()) == Some(&Content::NewWithHairpin) {
                flows.extend(self.hairpin.get(&d).into_iter().flatten().cloned());
            }
            if !flows.is_empty() {
                out.flows.insert(d.clone(), flows);
            }
            if let Some(g) = a.groups.get(&d) {
                out.groups.insert(d.clone(), g.clone());
            }
            if let Some(sw) = a.switches.get(&d) {
                out.switches.insert(d.clone(), sw.clone());
            }
        }
        out
    }

    fn describe(&self, k: usize) -> String {
        let s = &self.steps[k - 1];
        let what = match s.content {
            Content::New => "its new artifacts",
            Content::NewWithHairpin => "its new artifacts and the hairpin",
        };
        let phase = match s.phase {
            0 => "flat order".to_string(),
            p => format!("phase {p}"),
        };
        format!(
            "rollout step {k} of {} ({phase}: {} gets {what})",
            self.steps.len(),
            s.device
        )
    }
}

/// The VM of the policy that `m` is (its new place), as a trace target.
fn moving<'p>(policy: &'p Policy, m: &Move) -> Option<&'p Vm> {
    policy
        .vms
        .iter()
        .find(|v| v.tenant == m.tenant && v.name == m.vm)
        .map(|v| &**v)
}

/// Checks every intermediate state of `phases` (see the module map); also
/// a one-line account of what was checked.
pub fn check(
    old: &Artifacts,
    new: &Artifacts,
    policy: &Policy,
    phases: &Phases,
    limit: usize,
) -> (Vec<Counterexample>, String) {
    let all_moves = moves(old, new);
    if all_moves.is_empty() {
        return (Vec::new(), "no VM moves between hosts".into());
    }
    let mut out = Vec::new();
    let moving_names: BTreeSet<(&str, &str)> = all_moves
        .iter()
        .map(|m| (m.tenant.as_str(), m.vm.as_str()))
        .collect();
    let senders: Vec<&Vm> = policy
        .vms
        .iter()
        .filter(|v| !moving_names.contains(&(v.tenant.as_str(), v.name.as_str())))
        .map(|v| &**v)
        .collect();
    // A transition is to blame only for what both ends deliver: a packet one
    // generation's ACLs drop (an ACL changed along with the move) may be
    // dropped while that ACL is still, or already, in place.
    let ends = (Network::build(old, policy), Network::build(new, policy));
    let delivered_by = |net: &Network, a: &Vm, m: &Move| {
        let space = &net.space;
        let set = legit(space, a)
            .and(&space.field_eq(Field::DlType, ETH_IP, 0xffff))
            .and(&space.field_eq(Field::NwDst, u128::from(m.ip), 0xffff_ffff));
        let mut delivered = space.none();
        for o in net.trace(a, set, false) {
            let End::Deliver { port } = o.end else {
                continue;
            };
            let dev = net.bridges[o.device as usize].name.as_str();
            if (dev == m.to && port == m.to_port) || (dev == m.from && port == m.from_port) {
                delivered = delivered.or(&o.pkt.set);
            }
        }
        delivered
    };
    // what both ends deliver, by (move, sender): the same in every state,
    // so traced once
    let mut both_deliver: BTreeMap<(usize, usize), biodivine_lib_bdd::Bdd> = BTreeMap::new();
    // the states strictly between the old and the new generation
    let last = phases.steps.len();
    let mut checked = 0;
    for k in 1..last {
        let s = &phases.steps[k - 1];
        let first_push = !phases.steps[..k - 1].iter().any(|p| p.device == s.device);
        if s.content == Content::New && first_push && unchanged(old, new, &s.device) {
            continue; // the same state as after step k - 1
        }
        checked += 1;
        let state = phases.state(old, new, k);
        let net = match Network::build(&state, policy) {
            Ok(n) => n,
            Err(e) => {
                out.push(cx(
                    format!("{}: the state cannot be modelled: {e}", phases.describe(k)),
                    Vec::new(),
                ));
                continue;
            }
        };
        let space = &net.space;
        let ip = space.field_eq(Field::DlType, ETH_IP, 0xffff);
        for (mi, m) in all_moves.iter().enumerate() {
            let Some(target) = moving(policy, m) else {
                continue;
            };
            let at_vm = |dev: &str, port: u32| {
                (dev == m.to && port == m.to_port) || (dev == m.from && port == m.from_port)
            };
            let to_m = space.field_eq(Field::NwDst, u128::from(m.ip), 0xffff_ffff);
            for (ai, a) in senders.iter().enumerate() {
                let set = legit(space, a).and(&ip).and(&to_m);
                let outs = net.trace(a, set.clone(), false);
                let mut delivered = space.none();
                for o in &outs {
                    let End::Deliver { port } = o.end else {
                        continue;
                    };
                    if !at_vm(&net.bridges[o.device as usize].name, port) {
                        continue;
                    }
                    if a.tenant != m.tenant
                        && !net.exposed(&o.path, policy, &a.tenant, &m.tenant, &m.vm)
                    {
                        out.push(violation(
                            &net,
                            policy,
                            a,
                            &o.pkt.set,
                            format!(
                                "{}: {}/{} (tenant {}) reaches the moving VM {}/{}",
                                phases.describe(k),
                                a.tenant,
                                a.name,
                                a.tenant,
                                m.tenant,
                                m.vm
                            ),
                            m,
                        ));
                    }
                    delivered = delivered.or(&o.pkt.set);
                }
                let same_vnet = a.tenant == target.tenant
                    && policy.vnet_of(&a.tenant, a.ip).is_some()
                    && policy.vnet_of(&a.tenant, a.ip) == policy.vnet_of(&m.tenant, m.ip);
                if !same_vnet {
                    continue;
                }
                let allowed = set.and(&acl_allowed(
                    space,
                    policy
                        .acls
                        .get(&a.tenant)
                        .map(|r| r.as_slice())
                        .unwrap_or(&[]),
                    *policy.acl_default.get(&a.tenant).unwrap_or(&true),
                ));
                let allowed = match &ends {
                    (Ok(o), Ok(n)) => allowed.and(
                        both_deliver
                            .entry((mi, ai))
                            .or_insert_with(|| delivered_by(o, a, m).and(&delivered_by(n, a, m))),
                    ),
                    _ => allowed,
                };
                let lost = allowed.and_not(&delivered);
                if !lost.is_false() {
                    out.push(violation(
                        &net,
                        policy,
                        a,
                        &lost,
                        format!(
                            "{}: {}/{} → {}/{} (moving {} → {}): packets the ACLs allow are black-holed",
                            phases.describe(k),
                            a.tenant,
                            a.name,
                            m.tenant,
                            m.vm,
                            m.from,
                            m.to
                        ),
                        m,
                    ));
                }
                if out.len() >= limit.max(1) * 4 {
                    break;
                }
            }
        }
    }
    let detail = format!(
        "{} VM move(s) ({}), {} rollout steps: REACH and isolation of each moving VM hold in all {} intermediate states ({} distinct, checked){}",
        all_moves.len(),
        all_moves
            .iter()
            .map(|m| format!("{}/{} {} → {}", m.tenant, m.vm, m.from, m.to))
            .collect::<Vec<_>>()
            .join(", "),
        phases.steps.len(),
        last.saturating_sub(1),
        checked,
        if phases.moves.is_empty() {
            " — flat order, no hairpin (NETC_ROLLOUT=flat)"
        } else {
            " — hairpin first"
        }
    );
    (out, detail)
}

fn violation(
    net: &Network,
    policy: &Policy,
    from: &Vm,
    set: &biodivine_lib_bdd::Bdd,
    summary: String,
    m: &Move,
) -> Counterexample {
    let mut c = cx(
        summary,
        vec![m.at.0.clone(), m.at.1.clone(), from.at.clone()],
    );
    let Some(h) = net.space.witness(set) else {
        return c;
    };
    let single = h.0.iter().fold(net.space.all(), |acc, (f, x)| {
        acc.and(&net.space.field_eq(*f, *x, f.mask()))
    });
    let input = crate::Input {
        artifacts: &Artifacts::default(),
        policy,
        against: None,
        provenance: &NoProvenance,
        limit: 1,
        accept: &[],
    };
    let mut cites = Vec::new();
    for o in net.trace(from, single, true) {
        c.paths
            .push(crate::render_path(net, &input, &o, &mut cites));
    }
    c.packet = Some(Packet::from_headers(
        format!(
            "{} port {} ({}/{})",
            from.host, from.port, from.tenant, from.name
        ),
        &h,
    ));
    c
}
