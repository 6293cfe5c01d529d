//! L4 services: VIPs with heavy-tailed DIP pools, DIP health, SNAT grants,
//! and the traffic the Duet placement reads.
//!
//! Expects validated [`Params`], the topology and the tenants. Guarantees:
//! - VIP i (one endpoint: address, protocol, port) is 100.64.0.0 + i + 1, of
//!   a uniformly random tenant; SNAT VIPs are 100.96.0.0 + n + 1, TIP ranges
//!   /24s from 100.112.0.0; all inside the one aggregate 100.64.0.0/10 the
//!   SMuxes announce, and never a VM address (VMs are in 10/8);
//! - service mix: tcp 80 (35%), tcp 443 (35%), tcp 8080 (10%), tcp 1433
//!   (10%), udp 53 (10%); exposure "public" 70%, "tenant" 30%;
//! - DIP count: Zipf's law (Pareto shape 1, P(d ≥ x) = 1/x), truncated to
//!   min(--max-dips, the tenant's VMs); the DIPs are distinct VMs of the
//!   VIP's tenant; weight 1 (85%), 2 (10%), 4 (5%); more than 512 DIPs get a
//!   `duet_tip_range` (two-level fan-out);
//! - target port: the VIP port if the tenant has no other VIP on that
//!   (protocol, port), else 10000 + the VIP's ordinal in its tenant — so a
//!   (VM, protocol, target port) serves one VIP endpoint only, and the DSR
//!   reply rewrite (OVS table 15) is unambiguous;
//! - health: a VIP with two or more DIPs has one DIP reported "down" with
//!   probability 2%;
//! - traffic: each VIP's load is Pareto(10 Mbps, shape 1) capped at
//!   10 Gbps, entering at a random core (public) or at the ToR of one of the
//!   tenant's VMs (tenant); a public VIP also gets, with 25%, intra-DC
//!   traffic from a random ToR; placement_params(0.8, 0.05);
//! - SNAT: with probability `snat_pct` a tenant has a SNAT VIP; every VM gets
//!   one 8-port range (a second one with 10%), ranges consecutive from 1024,
//!   never overlapping, never past 65528.

use super::rng::Rng;
use super::tenants::Tenants;
use super::topology::{ip, Topology};
use super::Params;

/// A VIP with more DIPs than this (a switch tunnel table) needs TIPs.
pub const TUNNEL_TABLE: usize = 512;

#[derive(Debug)]
pub struct Dip {
    /// Global VM index.
    pub vm: u32,
    pub target_port: u32,
    pub weight: u32,
}

#[derive(Debug)]
pub struct Vip {
    pub tenant: u32,
    pub addr: u32,
    pub proto: u32,
    pub port: u32,
    pub public: bool,
    pub dips: Vec<Dip>,
    /// Index into `dips` of the DIP reported down.
    pub down: Option<usize>,
    /// (network, length) of the TIP range of a two-level VIP.
    pub tip_range: Option<(u32, u32)>,
    /// (switch index, Mbps).
    pub traffic: Vec<(usize, u64)>,
}

#[derive(Debug)]
pub struct Snat {
    pub tenant: u32,
    pub addr: u32,
    /// (global VM index, port_lo).
    pub ranges: Vec<(u32, u32)>,
}

#[derive(Debug)]
pub struct Services {
    pub vips: Vec<Vip>,
    pub snat: Vec<Snat>,
}

const MIX: [(u32, u32, u32); 5] = [
    (35, 6, 80),
    (35, 6, 443),
    (10, 6, 8080),
    (10, 6, 1433),
    (10, 17, 53),
];

fn service(rng: &mut Rng) -> (u32, u32) {
    let mut x = rng.below(100) as u32;
    for (pct, proto, port) in MIX {
        if x < pct {
            return (proto, port);
        }
        x -= pct;
    }
    (MIX[4].1, MIX[4].2) // not reached: MIX sums to 100
}

pub fn build(p: &Params, topo: &Topology, ten: &Tenants) -> Services {
    let mut rng = Rng::stream(p.seed, "vips");
    let mut traffic = Rng::stream(p.seed, "vip-traffic");
    let mut used: Vec<Vec<(u32, u32)>> = vec![Vec::new(); ten.tenants.len()];
    let mut vips = Vec::with_capacity(p.vips as usize);
    let mut tip_ranges = 0u32;
    for i in 0..p.vips {
        let t = rng.below(ten.tenants.len() as u64) as u32;
        let (proto, port) = service(&mut rng);
        let public = rng.percent(70);
        let vms = ten.vms_of(t);
        let n = vms.len();
        let d = rng.pareto(1, (p.max_dips as u64).min(n as u64)) as usize;
        let ordinal = used[t as usize].len() as u32;
        let target_port = if used[t as usize].contains(&(proto, port)) {
            10_000 + ordinal
        } else {
            port
        };
        used[t as usize].push((proto, target_port));
        let dips = rng
            .sample(n, d)
            .into_iter()
            .map(|k| Dip {
                vm: vms.start + k,
                target_port,
                weight: match rng.below(20) {
                    0..=16 => 1,
                    17 | 18 => 2,
                    _ => 4,
                },
            })
            .collect::<Vec<_>>();
        let down = (dips.len() >= 2 && rng.percent(2)).then(|| rng.index(dips.len()));
        let tip_range = (dips.len() > TUNNEL_TABLE).then(|| {
            tip_ranges += 1;
            (ip(100, 112, 0, 0) + 256 * (tip_ranges - 1), 24)
        });
        let mbps = traffic.pareto(10, 10_000);
        let mut flows = Vec::new();
        if public {
            flows.push((topo.cores[traffic.index(topo.cores.len())], mbps));
            if traffic.percent(25) {
                let tor = topo.tors[traffic.index(topo.tors.len())];
                flows.push((tor, traffic.pareto(1, 1_000)));
            }
        } else {
            let vm = &ten.vms[(vms.start + traffic.below(n as u64) as u32) as usize];
            flows.push((topo.hosts[vm.host as usize].tor, mbps));
        }
        vips.push(Vip {
            tenant: t,
            addr: ip(100, 64, 0, 0) + i + 1,
            proto,
            port,
            public,
            dips,
            down,
            tip_range,
            traffic: flows,
        });
    }

    let mut srng = Rng::stream(p.seed, "snat");
    let mut snat = Vec::new();
    for (t, tenant) in ten.tenants.iter().enumerate() {
        if !srng.percent(p.snat_pct) || tenant.n_vms == 0 {
            continue;
        }
        let mut lo = 1024;
        let mut ranges = Vec::new();
        for vm in ten.vms_of(t as u32) {
            let grants = if srng.percent(10) { 2 } else { 1 };
            for _ in 0..grants {
                if lo <= 65_528 {
                    ranges.push((vm, lo));
                    lo += 8;
                }
            }
        }
        snat.push(Snat {
            tenant: t as u32,
            addr: ip(100, 96, 0, 0) + snat.len() as u32 + 1,
            ranges,
        });
    }
    Services { vips, snat }
}
