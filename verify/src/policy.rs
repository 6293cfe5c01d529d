//! The policy the artifacts are checked against: who is whose, what is allowed.
//!
//! Expects either the intent's base facts (`netc verify INTENT...` or
//! `--artifacts DIR INTENT...`: independent of the rules and renderers, the
//! strong form of translation validation) or, without intent, the
//! declarations the host agents receive (`agent_vm`, `agent_mcast_member`,
//! `ovs_tunnel_peer`: weaker — a rule bug that also corrupts those rows goes
//! unseen, and REACH-1/ACL-1/CAP-1 need the intent). Guarantees: every VM
//! with a port, its tenant, VNI, MAC, IP, host and port; vnets; ACLs;
//! multicast membership (the intent's `mcast_policy` applied); the underlay
//! address of every device; switch capacities.
//!
//! The VM records and the maps an update compares (vnets, ACLs, defaults,
//! multicast, underlay, VIPs, backends, DSR replies) are each behind an
//! [`Arc`], and every tenant's ACLs too: a next generation cloned from this one shares what it
//! did not edit, so [`shared_eq`] tells an unchanged map by its pointer instead
//! of reading it (at 100k VMs comparing them in full was ~18 ms of every
//! incremental update). Two policies built apart share nothing and are
//! compared value by value: a shared pointer is only ever a shortcut to
//! "equal".

use crate::artifacts::{Artifacts, Row};
use crate::ofctl::{parse_ip, parse_mac};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

#[derive(Clone, Debug)]
pub struct Vm {
    pub tenant: String,
    pub name: String,
    pub vni: u64,
    pub mac: u64,
    pub ip: u32,
    pub host: String,
    pub port: u32,
    pub at: String,
}

#[derive(Clone, Debug)]
pub struct Acl {
    pub priority: i64,
    pub src: (u32, u8),
    pub dst: (u32, u8),
    pub proto: u8,
    pub lo: u16,
    pub hi: u16,
    pub allow: bool,
    pub at: String,
}

#[derive(Clone, Debug, Default)]
pub struct Policy {
    /// Whether this came from the intent (else: from the agents' rows).
    pub from_intent: bool,
    /// Each VM's record shared (as the maps below are): a next generation
    /// cloned from this one compares its unchanged VMs by pointer.
    pub vms: Vec<Arc<Vm>>,
    /// tenant → vnet prefixes.
    pub vnets: Arc<BTreeMap<String, Vec<(u32, u8)>>>,
    /// tenant → its ACL rules (each tenant's shared on its own: an edit of
    /// one tenant's rules leaves the others' pointers equal).
    pub acls: Arc<BTreeMap<String, Arc<Vec<Acl>>>>,
    /// tenant → default allow.
    pub acl_default: Arc<BTreeMap<String, bool>>,
    /// (tenant, group) → member VM names.
    pub mcast: Arc<BTreeMap<(String, u32), BTreeSet<String>>>,
    /// (tenant, group) → VMs declared senders (`mcast_sender`, not denied):
    /// with the members, the VMs whose packets to the group every member
    /// must receive (REACH-1, multicast).
    pub mcast_senders: Arc<BTreeMap<(String, u32), BTreeSet<String>>>,
    /// underlay address → device.
    pub underlay: Arc<BTreeMap<u32, String>>,
    /// switch → (host, ecmp, tunnel) capacity.
    pub capacity: BTreeMap<String, (u64, u64, u64)>,
    /// VIP address → (tenant, public).
    pub vips: Arc<BTreeMap<u32, (String, bool)>>,
    /// Declared backends: (VIP address, tenant, VM) — DIPs and Yoda instances.
    pub backends: Arc<BTreeSet<(u32, String, String)>>,
    /// DIP replies: (tenant, VM, proto, target port) — DSR traffic, not pair traffic.
    pub dsr: Arc<BTreeSet<(String, String, u8, u16)>>,
    /// What the switches' own tables must do (hosts' ToR ports, DoS black holes, Anolis routes).
    pub switches: crate::p4::invariants::SwitchIntent,
}

/// Intent base facts by relation: values as text (symbols unquoted), `at` = file:line.
pub type Facts = BTreeMap<String, Vec<Row>>;

/// Whether two shared values are equal: the same allocation is, without
/// reading it; otherwise they are compared.
pub fn shared_eq<T: PartialEq + ?Sized>(a: &Arc<T>, b: &Arc<T>) -> bool {
    Arc::ptr_eq(a, b) || **a == **b
}

fn prefix(t: &str) -> Option<(u32, u8)> {
    let (a, l) = t.split_once('/')?;
    Some((parse_ip(a)?, l.parse().ok().filter(|l| *l <= 32)?))
}

impl Policy {
    pub fn vm_at(&self, host: &str, port: u32) -> Option<&Vm> {
        self.vms
            .iter()
            .find(|v| v.host == host && v.port == port)
            .map(|v| &**v)
    }

    /// From the intent's facts.
    pub fn from_facts(f: &Facts) -> Policy {
        // Facts are a set, as the engine reads them: one written twice (in
        // two files, say) is one VM, one member, one rule — never two.
        let f: &Facts = &f
            .iter()
            .map(|(rel, rows)| {
                let mut seen = std::collections::HashSet::new();
                let rows = rows
                    .iter()
                    .filter(|r| seen.insert(&r.vals))
                    .cloned()
                    .collect();
                (rel.clone(), rows)
            })
            .collect();
        let rows = |r: &str| f.get(r).map(Vec::as_slice).unwrap_or(&[]);
        let mut p = Policy {
            from_intent: true,
            ..Default::default()
        };
        let vni: BTreeMap<&str, u64> = rows("tenant")
            .iter()
            .filter_map(|r| Some((r.vals.first()?.as_str(), r.vals.get(1)?.parse().ok()?)))
            .collect();
        let ports: BTreeMap<(&str, &str, &str), u32> = rows("vm_port")
            .iter()
            .filter_map(|r| {
                Some((
                    (r.vals[0].as_str(), r.vals[1].as_str(), r.vals[2].as_str()),
                    r.vals.get(3)?.parse().ok()?,
                ))
            })
            .collect();
        for r in rows("vm") {
            let v = &r.vals;
            if v.len() < 5 {
                continue;
            }
            let (Some(&vn), Some(&port), Some(mac), Some(ip)) = (
                vni.get(v[0].as_str()),
                ports.get(&(v[4].as_str(), v[0].as_str(), v[1].as_str())),
                parse_mac(&v[2]),
                parse_ip(&v[3]),
            ) else {
                continue;
            };
            p.vms.push(Arc::new(Vm {
                tenant: v[0].clone(),
                name: v[1].clone(),
                vni: vn,
                mac,
                ip,
                host: v[4].clone(),
                port,
                at: r.at.clone(),
            }));
        }
        for r in rows("vnet") {
            if let Some(px) = r.vals.get(2).and_then(|t| prefix(t)) {
                Arc::make_mut(&mut p.vnets)
                    .entry(r.vals[0].clone())
                    .or_default()
                    .push(px);
            }
        }
        for r in rows("acl") {
            let v = &r.vals;
            if v.len() < 9 {
                continue;
            }
            let (Some(src), Some(dst)) = (prefix(&v[3]), prefix(&v[4])) else {
                continue;
            };
            Arc::make_mut(Arc::make_mut(&mut p.acls).entry(v[0].clone()).or_default()).push(Acl {
                priority: v[2].parse().unwrap_or(0),
                src,
                dst,
                proto: v[5].parse().unwrap_or(0),
                lo: v[6].parse().unwrap_or(0),
                hi: v[7].parse().unwrap_or(65535),
                allow: v[8] == "allow",
                at: r.at.clone(),
            });
        }
        for r in rows("acl_default") {
            Arc::make_mut(&mut p.acl_default).insert(
                r.vals[0].clone(),
                r.vals.get(1).is_some_and(|a| a == "allow"),
            );
        }
        // multicast: declared/reported joins, filtered by the group's policy
        let mut allow: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
        let mut deny: BTreeSet<(String, String, String)> = BTreeSet::new();
        for r in rows("mcast_policy") {
            let v = &r.vals;
            if v.len() < 4 {
                continue;
            }
            if v[3] == "allow" {
                allow
                    .entry((v[0].clone(), v[1].clone()))
                    .or_default()
                    .insert(v[2].clone());
            } else {
                deny.insert((v[0].clone(), v[1].clone(), v[2].clone()));
            }
        }
        for r in rows("mcast_member") {
            let v = &r.vals;
            if v.len() < 3 {
                continue;
            }
            let key = (v[0].clone(), v[1].clone());
            let ok = !deny.contains(&(v[0].clone(), v[1].clone(), v[2].clone()))
                && allow.get(&key).is_none_or(|a| a.contains(&v[2]));
            if let (true, Some(g)) = (ok, parse_ip(&v[1])) {
                Arc::make_mut(&mut p.mcast)
                    .entry((v[0].clone(), g))
                    .or_default()
                    .insert(v[2].clone());
            }
        }
        for r in rows("mcast_sender") {
            let v = &r.vals;
            if v.len() < 3 || deny.contains(&(v[0].clone(), v[1].clone(), v[2].clone())) {
                continue;
            }
            if let Some(g) = parse_ip(&v[1]) {
                Arc::make_mut(&mut p.mcast_senders)
                    .entry((v[0].clone(), g))
                    .or_default()
                    .insert(v[2].clone());
            }
        }
        for (rel, col) in [("host", 1), ("hoverboard", 1), ("smux", 1)] {
            for r in rows(rel) {
                if let Some(ip) = r.vals.get(col).and_then(|t| parse_ip(t)) {
                    Arc::make_mut(&mut p.underlay).insert(ip, r.vals[0].clone());
                }
            }
        }
        for r in rows("vip") {
            let v = &r.vals;
            if let Some(ip) = v.get(1).and_then(|t| parse_ip(t)) {
                Arc::make_mut(&mut p.vips)
                    .insert(ip, (v[0].clone(), v.get(4).is_some_and(|e| e == "public")));
            }
        }
        for r in rows("dip_pool") {
            let v = &r.vals;
            if v.len() < 6 {
                continue;
            }
            if let Some(ip) = parse_ip(&v[0]) {
                Arc::make_mut(&mut p.backends).insert((ip, v[3].clone(), v[4].clone()));
            }
            if let (Ok(proto), Ok(tport)) = (v[1].parse(), v[5].parse()) {
                Arc::make_mut(&mut p.dsr).insert((v[3].clone(), v[4].clone(), proto, tport));
            }
        }
        let instances: BTreeMap<&str, (&str, &str)> = rows("yoda_instance")
            .iter()
            .filter(|r| r.vals.len() >= 3)
            .map(|r| (r.vals[0].as_str(), (r.vals[1].as_str(), r.vals[2].as_str())))
            .collect();
        let vip_ports: Vec<(u32, u8, u16)> = rows("vip")
            .iter()
            .filter_map(|r| {
                Some((
                    parse_ip(r.vals.get(1)?)?,
                    r.vals.get(2)?.parse().ok()?,
                    r.vals.get(3)?.parse().ok()?,
                ))
            })
            .collect();
        for r in rows("yoda_assign") {
            let (Some(ip), Some((t, vm))) = (
                r.vals.first().and_then(|t| parse_ip(t)),
                r.vals.get(1).and_then(|i| instances.get(i.as_str())),
            ) else {
                continue;
            };
            Arc::make_mut(&mut p.backends).insert((ip, t.to_string(), vm.to_string()));
            for (_, proto, port) in vip_ports.iter().filter(|x| x.0 == ip) {
                Arc::make_mut(&mut p.dsr).insert((t.to_string(), vm.to_string(), *proto, *port));
            }
        }
        for r in rows("switch") {
            let n = |i: usize| r.vals.get(i).and_then(|t| t.parse().ok()).unwrap_or(0);
            p.capacity.insert(r.vals[0].clone(), (n(3), n(4), n(5)));
        }
        p.switches = crate::p4::invariants::SwitchIntent::from_facts(f);
        p
    }

    /// From the rows the host agents receive (no intent available).
    pub fn from_artifacts(a: &Artifacts) -> Policy {
        let mut p = Policy::default();
        for r in a.rows("agent_vm") {
            let v = &r.vals;
            if v.len() < 7 {
                continue;
            }
            let (Ok(vni), Some(mac), Some(ip), Ok(port)) = (
                v[2].parse(),
                parse_mac(&v[4]),
                parse_ip(&v[5]),
                v[6].parse(),
            ) else {
                continue;
            };
            p.vms.push(Arc::new(Vm {
                tenant: v[1].clone(),
                name: v[3].clone(),
                vni,
                mac,
                ip,
                host: v[0].clone(),
                port,
                at: r.at.clone(),
            }));
        }
        for r in a.rows("agent_dip") {
            let v = &r.vals;
            if let (Some(vip), true) = (v.get(4).and_then(|t| parse_ip(t)), v.len() >= 8) {
                Arc::make_mut(&mut p.backends).insert((vip, v[1].clone(), v[2].clone()));
            }
        }
        for r in a.rows("agent_mcast_member") {
            let v = &r.vals;
            if let (5, Some(g)) = (v.len(), parse_ip(v.get(3).map_or("", |s| s.as_str()))) {
                Arc::make_mut(&mut p.mcast)
                    .entry((v[1].clone(), g))
                    .or_default()
                    .insert(v[4].clone());
            }
        }
        for r in a.rows("ovs_tunnel_peer") {
            if let Some(ip) = r.vals.get(3).and_then(|t| parse_ip(t)) {
                Arc::make_mut(&mut p.underlay).insert(ip, r.vals[2].clone());
            }
        }
        p
    }

    /// Whether the intent's ACLs allow `a → b` for (proto, dport); None =
    /// no ACL data (artifact mode).
    pub fn vnet_of(&self, tenant: &str, ip: u32) -> Option<(u32, u8)> {
        self.vnets
            .get(tenant)?
            .iter()
            .copied()
            .find(|(net, len)| contains(*net, *len, ip))
    }
}

pub fn contains(net: u32, len: u8, ip: u32) -> bool {
    let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
    (ip & mask) == (net & mask)
}
