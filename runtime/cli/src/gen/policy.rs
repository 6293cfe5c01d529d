//! Policy and traffic: ACL rules, multicast groups, Anolis NF clusters, and
//! the per-VM-pair usage Hoverboard offload reads.
//!
//! Expects validated [`Params`], the topology and the tenants. Guarantees:
//! - ACLs: rule r of a tenant (`acl<r>`) has priority 100 + 10·r — distinct
//!   within the tenant, so no allow/deny tie; source and destination are the
//!   tenant's vnets or subnets or 0.0.0.0/0; protocol tcp 60%, udp 25%, any
//!   15%; a well-known port (70%) or a port range; allow 70%, deny 30%;
//! - multicast: group g goes to a uniformly random tenant; its address is
//!   239.1.0.0 + (the tenant's group ordinal) + 1, so tenants reuse addresses
//!   (a group is (tenant, address)); members are 2..8 distinct VMs of the
//!   tenant in one pod (the home pod, else the pod of its first VM), so the
//!   group's ToRs share the pod's aggs as a common spine; with 50% a
//!   non-member sender, with 20% a "deny" policy on one member (a rejected
//!   join, not an error);
//! - Anolis: cluster c (`anolis-<c>`) has 4..8 nodes at distinct random ring
//!   positions, chain length 3, service 198.18.c.0/24, gateway `gw-<c mod 2>`;
//!   version 1 (synced) → 2 (current) removes or adds one node — a single
//!   change keeps two members of every length-3 chain, so every key range has
//!   a first common node; 2..4 NFs whose default gateway is a current peer;
//! - flows: flow i belongs to tenant i mod #tenants and is its (i div
//!   #tenants)-th distinct ordered VM pair (rotated by a random offset per
//!   tenant), so the count is exact and pairs never repeat; usage is
//!   Pareto(2 kbps, shape 1) capped at 1 Gbps: about 10% exceed the offload
//!   threshold of 20 kbps.

use super::rng::Rng;
use super::tenants::Tenants;
use super::topology::{ip, Topology};
use super::Params;

/// offload_threshold(kbps) (the Andromeda paper's example value).
pub const OFFLOAD_KBPS: u64 = 20;

#[derive(Debug)]
pub struct Acl {
    pub tenant: u32,
    pub rule: u32,
    pub priority: u32,
    pub src: (u32, u32),
    pub dst: (u32, u32),
    pub proto: u32,
    pub lo: u32,
    pub hi: u32,
    pub allow: bool,
}

#[derive(Debug)]
pub struct Group {
    pub tenant: u32,
    pub addr: u32,
    /// Global VM indices.
    pub members: Vec<u32>,
    pub sender: Option<u32>,
    pub deny: Option<u32>,
}

#[derive(Debug)]
pub struct AnolisNode {
    pub addr: u32,
    pub position: u32,
}

#[derive(Debug)]
pub struct Cluster {
    pub chain_len: u32,
    pub service: u32,
    pub nodes: Vec<AnolisNode>,
    /// Node indices of peer list version 1 (synced) and 2 (current).
    pub synced: Vec<usize>,
    pub current: Vec<usize>,
    /// Switch index of the gateway.
    pub gateway: usize,
    /// (address, default gateway node index).
    pub nfs: Vec<(u32, usize)>,
}

#[derive(Debug)]
pub struct Flow {
    pub tenant: u32,
    pub src: u32,
    pub dst: u32,
    pub kbps: u64,
}

#[derive(Debug)]
pub struct Policy {
    pub acls: Vec<Acl>,
    pub groups: Vec<Group>,
    pub clusters: Vec<Cluster>,
    pub flows: Vec<Flow>,
}

pub fn build(p: &Params, topo: &Topology, ten: &Tenants) -> Policy {
    Policy {
        acls: acls(p, ten),
        groups: groups(p, topo, ten),
        clusters: clusters(p, topo),
        flows: flows(p, ten),
    }
}

const PORTS: [u32; 8] = [22, 53, 80, 443, 3306, 5432, 6379, 8080];
const RANGES: [(u32, u32); 3] = [(1024, 65535), (8000, 8999), (30000, 32767)];

fn acls(p: &Params, ten: &Tenants) -> Vec<Acl> {
    let mut rng = Rng::stream(p.seed, "acls");
    let mut out = Vec::with_capacity((p.tenants * p.acls_per_tenant) as usize);
    for (t, tenant) in ten.tenants.iter().enumerate() {
        let prefix = |rng: &mut Rng| {
            let vnet = &tenant.vnets[rng.index(tenant.vnets.len())];
            match rng.below(5) {
                0 => (0, 0),
                1 | 2 => (vnet.prefix, 16),
                _ => (
                    vnet.prefix + ((rng.below(u64::from(vnet.subnets)) as u32) << 8),
                    24,
                ),
            }
        };
        for r in 0..p.acls_per_tenant {
            let src = prefix(&mut rng);
            let dst = prefix(&mut rng);
            let x = rng.below(100);
            let proto = if x < 60 {
                6
            } else if x < 85 {
                17
            } else {
                0
            };
            let (lo, hi) = if proto == 0 {
                (0, 65535)
            } else if rng.percent(70) {
                let port = PORTS[rng.index(PORTS.len())];
                (port, port)
            } else {
                RANGES[rng.index(RANGES.len())]
            };
            out.push(Acl {
                tenant: t as u32,
                rule: r,
                priority: 100 + 10 * r,
                src,
                dst,
                proto,
                lo,
                hi,
                allow: rng.percent(70),
            });
        }
    }
    out
}

fn groups(p: &Params, topo: &Topology, ten: &Tenants) -> Vec<Group> {
    let mut rng = Rng::stream(p.seed, "mcast");
    let mut ordinal = vec![0u32; ten.tenants.len()];
    let mut out = Vec::with_capacity(p.mcast_groups as usize);
    for _ in 0..p.mcast_groups {
        let t = rng.below(ten.tenants.len() as u64) as u32;
        let vms = ten.vms_of(t);
        let pod_of = |vm: u32| topo.hosts[ten.vms[vm as usize].host as usize].pod;
        let home = ten.tenants[t as usize].home_pod;
        let pod = if vms.clone().any(|v| pod_of(v) == home) {
            home
        } else {
            pod_of(vms.start)
        };
        let pool: Vec<u32> = vms.filter(|&v| pod_of(v) == pod).collect();
        let m = (2 + rng.index(7)).min(pool.len());
        let picked = rng.sample(pool.len(), pool.len().min(m + 1));
        let members: Vec<u32> = picked.iter().take(m).map(|&i| pool[i as usize]).collect();
        let sender = (picked.len() > m && rng.percent(50)).then(|| pool[picked[m] as usize]);
        let deny = (members.len() >= 2 && rng.percent(20)).then(|| members[members.len() - 1]);
        let o = &mut ordinal[t as usize];
        *o += 1;
        out.push(Group {
            tenant: t,
            addr: ip(239, 1, 0, 0) + *o,
            members,
            sender,
            deny,
        });
    }
    out
}

fn clusters(p: &Params, topo: &Topology) -> Vec<Cluster> {
    let mut rng = Rng::stream(p.seed, "anolis");
    (0..p.nf_chains)
        .map(|c| {
            let n = 4 + rng.index(5);
            let mut positions: Vec<u32> = Vec::with_capacity(n);
            while positions.len() < n {
                let x = rng.next_u64() as u32;
                if !positions.contains(&x) {
                    positions.push(x);
                }
            }
            let nodes: Vec<AnolisNode> = positions
                .iter()
                .enumerate()
                .map(|(i, &position)| AnolisNode {
                    addr: ip(192, 168, c, 1 + i as u32),
                    position,
                })
                .collect();
            let changed = rng.index(n);
            let all: Vec<usize> = (0..n).collect();
            let without: Vec<usize> = (0..n).filter(|&i| i != changed).collect();
            let (synced, current) = if rng.percent(50) {
                (all, without)
            } else {
                (without, all)
            };
            let nfs = (0..2 + rng.index(3))
                .map(|i| {
                    let gw = current[rng.index(current.len())];
                    (ip(192, 168, c, 128 + i as u32), gw)
                })
                .collect();
            Cluster {
                chain_len: 3,
                service: ip(198, 18, c, 0),
                nodes,
                synced,
                current,
                gateway: topo.gateways[(c % 2) as usize],
                nfs,
            }
        })
        .collect()
}

fn flows(p: &Params, ten: &Tenants) -> Vec<Flow> {
    let mut rng = Rng::stream(p.seed, "flows");
    let nt = ten.tenants.len() as u32;
    let v = p.vms_per_tenant;
    let offsets: Vec<u32> = (0..nt)
        .map(|_| rng.below(u64::from(v.max(1))) as u32)
        .collect();
    (0..p.flows)
        .map(|i| {
            let t = i % nt;
            let pair = i / nt;
            let s = pair % v;
            let d = s + 1 + pair / v;
            let first = ten.tenants[t as usize].first_vm;
            let r = offsets[t as usize];
            Flow {
                tenant: t,
                src: first + (s + r) % v,
                dst: first + (d + r) % v,
                kbps: rng.pareto(2, 1_000_000),
            }
        })
        .collect()
}
