//! Tenants, their virtual networks and subnets, and their VMs placed on hosts.
//!
//! Expects validated [`Params`] and the [`Topology`]. Guarantees:
//! - tenant i is `t<i>` with VNI 10000 + i (unique, within 1..2^24−1);
//! - a tenant's vnets are distinct /16s 10.a.0.0/16 … 10.(a+n−1).0.0/16 with
//!   `a` random, so vnets of different tenants overlap freely (the overlay
//!   separates them by VNI) and vnets of one tenant never do;
//! - VM j of a tenant (`vm<j>`) is in vnet j mod n; its m-th VM (m = j / n)
//!   is in subnet `s<m / 240>` = 10.x.(m / 240).0/24 (gateway .1) at host
//!   part 10 + m mod 240: addresses and subnets are unique per tenant;
//! - MACs are 02:00 + the global VM index + 1: unique everywhere;
//! - placement: each tenant has a random home pod; a VM lands on a random
//!   host of the home pod with probability `locality_pct`, else on a random
//!   host anywhere (also when the home pod has no hosts); its `vm_port`
//!   ofport is the host's next free port from 10;
//! - models: with probability `hoverboard_pct` vnet_model "hoverboard";
//!   acl_default "deny" for 20% of tenants, an explicit "allow" for 10%.

use super::rng::Rng;
use super::topology::{ip, Topology};
use super::Params;

/// VMs per /24 subnet (host parts .10 … .249).
pub const VMS_PER_SUBNET: u32 = 240;

#[derive(Debug)]
pub struct Vnet {
    pub prefix: u32,
    /// Number of /24 subnets (s0 … s<n−1>).
    pub subnets: u32,
}

#[derive(Debug)]
pub struct Tenant {
    pub name: String,
    pub vni: u32,
    pub vnets: Vec<Vnet>,
    /// Global index of the tenant's first VM; its VMs are consecutive.
    pub first_vm: u32,
    pub n_vms: u32,
    pub home_pod: u32,
    pub hoverboard: bool,
    pub acl_default: Option<&'static str>,
}

#[derive(Debug)]
pub struct Vm {
    pub tenant: u32,
    /// Index within the tenant (the name is `vm<local>`).
    pub local: u32,
    pub mac: u64,
    pub ip: u32,
    pub host: u32,
    pub ofport: u32,
}

#[derive(Debug)]
pub struct Tenants {
    pub tenants: Vec<Tenant>,
    pub vms: Vec<Vm>,
}

impl Tenants {
    /// The VMs of tenant `t`, as global indices.
    pub fn vms_of(&self, t: u32) -> std::ops::Range<u32> {
        let t = &self.tenants[t as usize];
        t.first_vm..t.first_vm + t.n_vms
    }
}

pub fn build(p: &Params, topo: &Topology) -> Tenants {
    let mut rng = Rng::stream(p.seed, "tenants");
    let mut place = Rng::stream(p.seed, "placement");
    let nv = p.vnets_per_tenant;
    let mut next_port = vec![10u32; topo.hosts.len()];
    let mut out = Tenants {
        tenants: Vec::with_capacity(p.tenants as usize),
        vms: Vec::with_capacity((p.tenants * p.vms_per_tenant) as usize),
    };
    for i in 0..p.tenants {
        let a = rng.below(u64::from(256 - nv) + 1) as u32;
        let vnets = (0..nv)
            .map(|v| {
                let in_vnet = p.vms_per_tenant / nv + u32::from(v < p.vms_per_tenant % nv);
                Vnet {
                    prefix: ip(10, a + v, 0, 0),
                    subnets: in_vnet.div_ceil(VMS_PER_SUBNET).max(1),
                }
            })
            .collect::<Vec<_>>();
        let home_pod = rng.below(u64::from(p.k)) as u32;
        let hoverboard = rng.percent(p.hoverboard_pct);
        let acl_default = match rng.below(10) {
            0 | 1 => Some("deny"),
            2 => Some("allow"),
            _ => None,
        };
        let first_vm = out.vms.len() as u32;
        for j in 0..p.vms_per_tenant {
            let vnet = j % nv;
            let m = j / nv;
            let g = out.vms.len() as u64;
            let home = &topo.pod_hosts[home_pod as usize];
            let host = if !home.is_empty() && place.percent(p.locality_pct) {
                home[place.index(home.len())]
            } else {
                place.index(topo.hosts.len()) as u32
            };
            let ofport = next_port[host as usize];
            next_port[host as usize] += 1;
            out.vms.push(Vm {
                tenant: i,
                local: j,
                mac: 0x0200_0000_0000 + g + 1,
                ip: vnets[vnet as usize].prefix
                    + ((m / VMS_PER_SUBNET) << 8)
                    + 10
                    + m % VMS_PER_SUBNET,
                host,
                ofport,
            });
        }
        out.tenants.push(Tenant {
            name: format!("t{i}"),
            vni: 10_000 + i,
            vnets,
            first_vm,
            n_vms: p.vms_per_tenant,
            home_pod,
            hoverboard,
            acl_default,
        });
    }
    out
}
