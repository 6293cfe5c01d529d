//! The physical network: a k-ary fat tree, hosts under its ToRs, the border
//! gateways, SMuxes and Hoverboard gateways.
//!
//! Expects validated [`Params`] (k even, 2..=64; ≤ 250 hosts per ToR).
//! Guarantees (no randomness here — the topology is a function of k and the
//! host count):
//! - switches: per pod p, ToRs `tor-p-i` and aggs `agg-p-j` (i, j < k/2);
//!   cores `core-n` (n < (k/2)²); two `gateway` switches `gw-0`, `gw-1`;
//! - links: every ToR of a pod to every agg of that pod; agg j of every pod
//!   to cores j·k/2 .. (j+1)·k/2 − 1; each gateway to every core; all at
//!   [`LINK_MBPS`]. Ports: a ToR's hosts on 1..=H (H = the most hosts any
//!   ToR has), its uplink to agg j on H+1+j; an agg's ToR i on 1+i, core
//!   n on k/2+1+(n mod k/2); a core's pod p on 1+p, gateway g on k+1+g; a
//!   gateway's core n on 1+n;
//! - host h (`h<h>`) under ToR h mod #ToRs, port 1 + h / #ToRs (round-robin,
//!   so ToRs differ by at most one host); underlay 172.16.0.0/12:
//!   172.16.0.0 + 256·tor + port, so each ToR's hosts fill its rack /24
//!   (`tor_prefix`, [`rack_prefix`]); switch loopbacks 172.31.0.0 + index + 1;
//!   SMuxes 172.31.254.x, Hoverboards 172.31.253.x.

use super::Params;

/// Capacity of every switch-to-switch link.
pub const LINK_MBPS: u64 = 40_000;
/// Duet's table sizes: host (VIP) table, ECMP table, tunnel table.
pub const TABLES: (u32, u32, u32) = (16_384, 4_096, 512);

#[derive(Debug)]
pub struct Switch {
    pub name: String,
    pub role: &'static str,
    pub loopback: u32,
}

#[derive(Debug)]
pub struct Link {
    pub a: usize,
    pub a_port: u32,
    pub b: usize,
    pub b_port: u32,
    pub mbps: u64,
}

#[derive(Debug)]
pub struct Host {
    pub name: String,
    pub ip: u32,
    /// Index into `switches`.
    pub tor: usize,
    pub port: u32,
    pub pod: u32,
}

/// A software device (SMux, Hoverboard): a name and an underlay address.
#[derive(Debug)]
pub struct Node {
    pub name: String,
    pub ip: u32,
}

#[derive(Debug)]
pub struct Topology {
    pub switches: Vec<Switch>,
    pub links: Vec<Link>,
    pub hosts: Vec<Host>,
    /// Switch indices of the ToRs, the cores, the gateways.
    pub tors: Vec<usize>,
    pub cores: Vec<usize>,
    pub gateways: Vec<usize>,
    /// Host indices per pod.
    pub pod_hosts: Vec<Vec<u32>>,
    pub smuxes: Vec<Node>,
    pub hoverboards: Vec<Node>,
}

pub const fn ip(a: u32, b: u32, c: u32, d: u32) -> u32 {
    (a << 24) | (b << 16) | (c << 8) | d
}

/// The network address of ToR number `tor_no`'s /24: its hosts are this + port.
pub const fn rack_prefix(tor_no: usize) -> u32 {
    ip(172, 16, 0, 0) + 256 * tor_no as u32
}

pub fn build(p: &Params) -> Topology {
    let k = p.k as usize;
    let half = k / 2;
    let mut t = Topology {
        switches: Vec::new(),
        links: Vec::new(),
        hosts: Vec::new(),
        tors: Vec::new(),
        cores: Vec::new(),
        gateways: Vec::new(),
        pod_hosts: vec![Vec::new(); k],
        smuxes: Vec::new(),
        hoverboards: Vec::new(),
    };
    let add = |t: &mut Topology, name: String, role: &'static str| {
        let i = t.switches.len();
        t.switches.push(Switch {
            name,
            role,
            loopback: ip(172, 31, 0, 0) + i as u32 + 1,
        });
        i
    };
    let mut aggs = vec![vec![0usize; half]; k];
    for (pod, pod_aggs) in aggs.iter_mut().enumerate() {
        for i in 0..half {
            let s = add(&mut t, format!("tor-{pod}-{i}"), "tor");
            t.tors.push(s);
        }
        for (j, a) in pod_aggs.iter_mut().enumerate() {
            *a = add(&mut t, format!("agg-{pod}-{j}"), "agg");
        }
    }
    for n in 0..half * half {
        let s = add(&mut t, format!("core-{n}"), "core");
        t.cores.push(s);
    }
    for g in 0..2 {
        let s = add(&mut t, format!("gw-{g}"), "gateway");
        t.gateways.push(s);
    }

    let ntors = t.tors.len();
    let per_tor = (p.hosts as usize).div_ceil(ntors) as u32;
    for (pod, pod_aggs) in aggs.iter().enumerate() {
        for i in 0..half {
            let tor = t.tors[pod * half + i];
            for (j, &agg) in pod_aggs.iter().enumerate() {
                t.links.push(Link {
                    a: tor,
                    a_port: per_tor + 1 + j as u32,
                    b: agg,
                    b_port: 1 + i as u32,
                    mbps: LINK_MBPS,
                });
            }
        }
        for (j, &agg) in pod_aggs.iter().enumerate() {
            for m in 0..half {
                let n = j * half + m;
                t.links.push(Link {
                    a: agg,
                    a_port: (half + 1 + m) as u32,
                    b: t.cores[n],
                    b_port: 1 + pod as u32,
                    mbps: LINK_MBPS,
                });
            }
        }
    }
    for (g, &gw) in t.gateways.iter().enumerate() {
        for (n, &core) in t.cores.iter().enumerate() {
            t.links.push(Link {
                a: gw,
                a_port: 1 + n as u32,
                b: core,
                b_port: (k + 1 + g) as u32,
                mbps: LINK_MBPS,
            });
        }
    }

    for h in 0..p.hosts as usize {
        let tor_no = h % ntors;
        let port = 1 + (h / ntors) as u32;
        let pod = (tor_no / half) as u32;
        t.pod_hosts[pod as usize].push(h as u32);
        t.hosts.push(Host {
            name: format!("h{h}"),
            ip: rack_prefix(tor_no) + port,
            tor: t.tors[tor_no],
            port,
            pod,
        });
    }
    for m in 0..p.smuxes {
        t.smuxes.push(Node {
            name: format!("smux-{m}"),
            ip: ip(172, 31, 254, 1 + m),
        });
    }
    for m in 0..p.hoverboards {
        t.hoverboards.push(Node {
            name: format!("hb-{m}"),
            ip: ip(172, 31, 253, 1 + m),
        });
    }
    t
}
