//! Following one packet through the lab's real bridges, host to host.
//!
//! Expects a running lab (`super::ensure`) whose bridges hold flows. Asks
//! each bridge with `ovs-appctl ofproto/trace` (OVS's own classifier, not a
//! model of it) and reads the answer: the flows matched per table with their
//! cookies, the actions, and every `output`. A packet leaving the VXLAN port
//! is followed to the lab host that owns `tun_dst` (with tun_id/tun_src/
//! tun_dst/in_port=1 set as the receiving host would see them); a packet
//! tunnelled to a software Mux's VIP is forwarded the way the Mux does it
//! (`members[hash5 % n]`, the same `hash5` as the rules); multicast is
//! followed to every other host. Guarantees: at most [`MAX_BRIDGES`] bridges
//! are traced (a forwarding loop ends as a fate, not a hang), and every fate
//! names the host and, for drops, the table and the flow's cookie.

use super::daemons::{Binaries, TOOL_DEADLINE};
use super::topology::{LabHost, Topology, BRIDGE, TUNNEL_OFPORT, UPLINK_OFPORT};
use super::LabError;
use netc_compiler::functors::hash5_v4;
use serde::Serialize;
use std::net::Ipv4Addr;
use std::path::Path;

/// Bound on bridges visited by one trace.
pub const MAX_BRIDGES: usize = 16;
/// The virtual router MAC every VM's gateway resolves to (ovs-pipeline §2).
pub const ROUTER_MAC: &str = "fe:ff:ff:ff:ff:ff";

/// The packet at some point of its path: the fields the pipeline reads or rewrites.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Packet {
    pub dl_src: String,
    pub dl_dst: String,
    pub nw_src: Ipv4Addr,
    pub nw_dst: Ipv4Addr,
    /// 6 tcp, 17 udp, 1 icmp.
    pub proto: u8,
    pub tp_src: u16,
    pub tp_dst: u16,
}

impl Packet {
    fn flow(&self) -> String {
        let base = format!(
            "dl_src={},dl_dst={},nw_src={},nw_dst={}",
            self.dl_src, self.dl_dst, self.nw_src, self.nw_dst
        );
        match self.proto {
            6 => format!("tcp,{base},tcp_src={},tcp_dst={}", self.tp_src, self.tp_dst),
            17 => format!("udp,{base},udp_src={},udp_dst={}", self.tp_src, self.tp_dst),
            1 => format!("icmp,{base},icmp_type=8,icmp_code=0"),
            p => format!("ip,{base},nw_proto={p}"),
        }
    }
}

/// Where the packet enters a bridge.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Ingress {
    pub in_port: u16,
    /// Set when it arrives from the tunnel: (vni, outer source, outer destination).
    pub tunnel: Option<(u32, Ipv4Addr, Ipv4Addr)>,
    /// Set when a software Mux forwarded it here.
    pub mux: Option<MuxStep>,
}

/// One flow matched in one table (or a table miss: `cookie` None, `matched` "No match").
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TableHit {
    pub table: u8,
    pub priority: Option<u16>,
    pub cookie: Option<String>,
    pub matched: String,
    pub actions: Vec<String>,
}

/// One bridge the packet went through.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Hop {
    pub host: String,
    pub bridge: String,
    pub ingress: Ingress,
    pub packet: Packet,
    pub tables: Vec<TableHit>,
    /// What OVS's datapath would do (`Datapath actions:`).
    pub datapath: String,
}

/// How (one copy of) the packet ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "fate", rename_all = "snake_case")]
pub enum Fate {
    Delivered {
        host: String,
        ofport: u16,
        tenant: String,
        vm: String,
    },
    Dropped {
        host: String,
        table: u8,
        /// The flow that dropped it; None = no flow matched (table miss).
        cookie: Option<String>,
        matched: String,
    },
    /// Left through the uplink (not tunnelled): DSR replies, SNAT, the Internet.
    Uplink { host: String, nw_dst: Ipv4Addr },
    /// Tunnelled to an underlay address no lab host or Mux owns.
    LeftLab {
        host: String,
        vni: u32,
        tun_dst: Ipv4Addr,
    },
    /// Sent to a Mux that has no member for this VIP.
    MuxNoMember { mux: String, vip: Ipv4Addr },
    /// Output to a port the topology does not know.
    UnknownPort { host: String, ofport: u16 },
    /// The trace stopped at the bridge bound (a loop?).
    TooLong { bridges: usize },
}

/// A Mux decision between two bridges.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MuxStep {
    pub mux: String,
    pub vip: Ipv4Addr,
    pub hash: u32,
    pub index: u32,
    pub dip: Ipv4Addr,
    pub underlay: Ipv4Addr,
}

/// The whole path: hops in order (depth first) and the fates of its copies.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Trace {
    pub hops: Vec<Hop>,
    pub fates: Vec<Fate>,
}

/// Traces `packet` entering `host` at VM port `in_port`.
pub fn trace(
    state_dir: &Path,
    topo: &Topology,
    host: &LabHost,
    in_port: u16,
    packet: Packet,
) -> Result<Trace, LabError> {
    let bins = Binaries::find()?;
    let mut t = Trace::default();
    let mut queue = vec![(
        host.clone(),
        Ingress {
            in_port,
            tunnel: None,
            mux: None,
        },
        packet,
    )];
    while let Some((h, ingress, pkt)) = queue.pop() {
        if t.hops.len() >= MAX_BRIDGES {
            t.fates.push(Fate::TooLong {
                bridges: t.hops.len(),
            });
            break;
        }
        let raw = ofproto_trace(&bins, state_dir, &h.name, &ingress, &pkt)?;
        let parsed = parse(&raw);
        let mut next = Vec::new();
        let outputs = outputs(&parsed.tables, &pkt, &ingress);
        if outputs.is_empty() {
            let last = parsed.tables.last();
            t.fates.push(Fate::Dropped {
                host: h.name.clone(),
                table: last.map(|l| l.table).unwrap_or(0),
                cookie: last.and_then(|l| l.cookie.clone()),
                matched: last.map(|l| l.matched.clone()).unwrap_or_default(),
            });
        }
        for out in outputs {
            follow(topo, &h, &ingress, out, &mut t, &mut next);
        }
        t.hops.push(Hop {
            host: h.name.clone(),
            bridge: BRIDGE.into(),
            ingress,
            packet: pkt,
            tables: parsed.tables,
            datapath: parsed.datapath,
        });
        // depth first, in output order
        next.reverse();
        queue.extend(next);
    }
    Ok(t)
}

type Next = (LabHost, Ingress, Packet);

/// Decides where one output copy goes.
fn follow(
    topo: &Topology,
    h: &LabHost,
    ingress: &Ingress,
    out: Output,
    t: &mut Trace,
    next: &mut Vec<Next>,
) {
    let port = if out.port == 0 {
        ingress.in_port
    } else {
        out.port
    };
    if port == UPLINK_OFPORT {
        t.fates.push(Fate::Uplink {
            host: h.name.clone(),
            nw_dst: out.packet.nw_dst,
        });
        return;
    }
    if port != TUNNEL_OFPORT {
        match h.ports.iter().find(|p| p.ofport == port) {
            Some(p) => t.fates.push(Fate::Delivered {
                host: h.name.clone(),
                ofport: port,
                tenant: p.tenant.clone(),
                vm: p.vm.clone(),
            }),
            None => t.fates.push(Fate::UnknownPort {
                host: h.name.clone(),
                ofport: port,
            }),
        }
        return;
    }
    let (vni, dst) = (out.tun_id, out.tun_dst);
    if let Some(peer) = topo.host_by_ip(dst) {
        next.push((
            peer.clone(),
            Ingress {
                in_port: TUNNEL_OFPORT,
                tunnel: Some((vni, h.underlay_ip, dst)),
                mux: None,
            },
            out.packet,
        ));
        return;
    }
    if let Some(mv) = topo
        .mux_vips
        .iter()
        .find(|m| m.vip == dst && m.vni == vni && m.proto == out.packet.proto)
        .or_else(|| topo.mux_vips.iter().find(|m| m.vip == dst && m.vni == vni))
    {
        let p = &out.packet;
        let hash = hash5_v4(
            p.proto,
            p.nw_src.into(),
            p.nw_dst.into(),
            p.tp_src,
            p.tp_dst,
        );
        let n = mv.members.len() as u32;
        if n == 0 {
            t.fates.push(Fate::MuxNoMember {
                mux: mv.mux.clone(),
                vip: mv.vip,
            });
            return;
        }
        let m = &mv.members[(hash % n) as usize];
        let step = MuxStep {
            mux: mv.mux.clone(),
            vip: mv.vip,
            hash,
            index: hash % n,
            dip: m.dip,
            underlay: m.underlay,
        };
        match topo.host_by_ip(m.underlay) {
            Some(dip_host) => {
                let mut pkt = out.packet.clone();
                pkt.dl_dst = m.dmac.clone();
                next.push((
                    dip_host.clone(),
                    Ingress {
                        in_port: TUNNEL_OFPORT,
                        tunnel: Some((m.vni, mv.mux_ip, m.underlay)),
                        mux: Some(step),
                    },
                    pkt,
                ));
            }
            None => t.fates.push(Fate::LeftLab {
                host: mv.mux.clone(),
                vni: m.vni,
                tun_dst: m.underlay,
            }),
        }
        return;
    }
    if dst.is_multicast() {
        // the fabric replicates the group's copy to every host; each host's
        // pipeline decides whether a member of (VNI, group) is there
        for peer in topo.hosts.iter().filter(|p| p.name != h.name) {
            next.push((
                peer.clone(),
                Ingress {
                    in_port: TUNNEL_OFPORT,
                    tunnel: Some((vni, h.underlay_ip, peer.underlay_ip)),
                    mux: None,
                },
                out.packet.clone(),
            ));
        }
        return;
    }
    t.fates.push(Fate::LeftLab {
        host: h.name.clone(),
        vni,
        tun_dst: dst,
    });
}

fn ofproto_trace(
    bins: &Binaries,
    state_dir: &Path,
    host: &str,
    ingress: &Ingress,
    pkt: &Packet,
) -> Result<String, LabError> {
    let hd = super::host_handle(state_dir, host)?;
    if hd.live_pid("ovs-vswitchd").is_none() {
        return Err(LabError::NotRunning {
            dir: hd.dir.clone(),
        });
    }
    let mut flow = format!("in_port={}", ingress.in_port);
    if let Some((vni, src, dst)) = ingress.tunnel {
        flow += &format!(",tun_id={vni},tun_src={src},tun_dst={dst}");
    }
    flow += ",";
    flow += &pkt.flow();
    let ctl = hd.vswitchd_ctl().display().to_string();
    let r = hd.run(
        bins.get("ovs-appctl"),
        &["-t", &ctl, "--timeout=20", "ofproto/trace", BRIDGE, &flow],
        TOOL_DEADLINE,
    )?;
    if !r.ok {
        return Err(LabError::Tool {
            host: host.into(),
            what: format!("ovs-appctl ofproto/trace {BRIDGE} {flow}"),
            detail: r.stderr.trim().to_string(),
        });
    }
    Ok(r.stdout)
}

/// What `ofproto/trace` said about br-int.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Parsed {
    pub tables: Vec<TableHit>,
    pub datapath: String,
}

/// Reads the `bridge("br-int")` section of an `ofproto/trace` answer.
pub fn parse(text: &str) -> Parsed {
    let mut p = Parsed::default();
    let mut in_int = false;
    let header = format!("bridge(\"{BRIDGE}\")");
    for line in text.lines() {
        if line.starts_with("bridge(") {
            in_int = line.trim() == header;
            continue;
        }
        if let Some(d) = line.strip_prefix("Datapath actions: ") {
            p.datapath = d.trim().to_string();
            continue;
        }
        if line.starts_with("Final flow:") || line.starts_with("Megaflow:") {
            in_int = false;
            continue;
        }
        if !in_int || line.trim().is_empty() || line.starts_with("---") {
            continue;
        }
        if let Some(hit) = table_line(line) {
            p.tables.push(hit);
        } else if let Some(last) = p.tables.last_mut() {
            let a = line.trim();
            if a == "No match." {
                last.matched = "No match".into();
                last.priority = None;
                last.cookie = None;
            } else {
                last.actions.push(a.to_string());
            }
        }
    }
    p
}

/// ` 0. ip,in_port=10,..., priority 100, cookie 0x2eed...` (the match may be
/// empty: `15. priority 0, cookie 0x...`); indented deeper inside resubmits.
fn table_line(line: &str) -> Option<TableHit> {
    let t = line.trim_start();
    let (num, rest) = t.split_once(". ")?;
    let table: u8 = num.parse().ok()?;
    let (matched, tail) = match rest.rfind("priority ") {
        Some(i) => (rest[..i].trim_end().trim_end_matches(','), &rest[i..]),
        None => (rest, ""),
    };
    let mut priority = None;
    let mut cookie = None;
    for part in tail.split(", ") {
        if let Some(v) = part.strip_prefix("priority ") {
            priority = v.trim().parse().ok();
        } else if let Some(v) = part.strip_prefix("cookie ") {
            cookie = Some(normalize_cookie(v.trim()));
        }
    }
    if priority.is_none() && !rest.starts_with("No match") && !tail.is_empty() {
        return None;
    }
    Some(TableHit {
        table,
        priority,
        cookie,
        matched: matched.to_string(),
        actions: Vec::new(),
    })
}

/// `0x2eed97b7654964a` → `0x02eed97b7654964a` (cookies as `ovs-ofctl` files write them).
fn normalize_cookie(c: &str) -> String {
    match u64::from_str_radix(c.trim_start_matches("0x"), 16) {
        Ok(v) => format!("{v:#018x}"),
        Err(_) => c.to_string(),
    }
}

/// One `output` action with the packet as it was when it left.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Output {
    /// 0 = IN_PORT.
    pub port: u16,
    pub tun_id: u32,
    pub tun_dst: Ipv4Addr,
    pub packet: Packet,
}

/// Replays the actions in order (set_field / mod_* rewrite, output emits).
pub fn outputs(tables: &[TableHit], start: &Packet, ingress: &Ingress) -> Vec<Output> {
    let mut pkt = start.clone();
    let (mut tun_id, mut tun_dst) = ingress
        .tunnel
        .map(|(v, _, d)| (v, d))
        .unwrap_or((0, Ipv4Addr::UNSPECIFIED));
    let mut out = Vec::new();
    for a in tables.iter().flat_map(|t| t.actions.iter()) {
        if let Some(rest) = a.strip_prefix("set_field:") {
            let Some((value, field)) = rest.rsplit_once("->") else {
                continue;
            };
            let value = value.split('/').next().unwrap_or(value);
            match field {
                "tun_id" => tun_id = parse_num(value).unwrap_or(tun_id as u64) as u32,
                "tun_dst" => tun_dst = value.parse().unwrap_or(tun_dst),
                "eth_src" => pkt.dl_src = value.into(),
                "eth_dst" => pkt.dl_dst = value.into(),
                "ip_src" | "nw_src" => pkt.nw_src = value.parse().unwrap_or(pkt.nw_src),
                "ip_dst" | "nw_dst" => pkt.nw_dst = value.parse().unwrap_or(pkt.nw_dst),
                "tcp_src" | "udp_src" | "tp_src" => {
                    pkt.tp_src = parse_num(value).unwrap_or(pkt.tp_src as u64) as u16
                }
                "tcp_dst" | "udp_dst" | "tp_dst" => {
                    pkt.tp_dst = parse_num(value).unwrap_or(pkt.tp_dst as u64) as u16
                }
                _ => {}
            }
        } else if let Some(v) = a.strip_prefix("mod_dl_src:") {
            pkt.dl_src = v.into();
        } else if let Some(v) = a.strip_prefix("mod_dl_dst:") {
            pkt.dl_dst = v.into();
        } else if let Some(v) = a.strip_prefix("mod_nw_src:") {
            pkt.nw_src = v.parse().unwrap_or(pkt.nw_src);
        } else if let Some(v) = a.strip_prefix("mod_nw_dst:") {
            pkt.nw_dst = v.parse().unwrap_or(pkt.nw_dst);
        } else if let Some(v) = a.strip_prefix("mod_tp_src:") {
            pkt.tp_src = v.parse().unwrap_or(pkt.tp_src);
        } else if let Some(v) = a.strip_prefix("mod_tp_dst:") {
            pkt.tp_dst = v.parse().unwrap_or(pkt.tp_dst);
        } else if let Some(v) = a.strip_prefix("output:") {
            let port = match v.trim() {
                "IN_PORT" | "in_port" => Some(0),
                p => p.parse().ok(),
            };
            if let Some(port) = port {
                out.push(Output {
                    port,
                    tun_id,
                    tun_dst,
                    packet: pkt.clone(),
                });
            }
        } else if a == "IN_PORT" || a == "in_port" {
            out.push(Output {
                port: 0,
                tun_id,
                tun_dst,
                packet: pkt.clone(),
            });
        }
    }
    out
}

fn parse_num(s: &str) -> Option<u64> {
    match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "Flow: tcp,in_port=10\n\nbridge(\"br-int\")\n----------------\n 0. ip,in_port=10,dl_src=02:00:00:00:01:01,nw_src=10.1.1.11, priority 100, cookie 0x2eed97b7654964a\n    set_field:0x1389->reg6\n    resubmit(,10)\n15. priority 0, cookie 0x199fec863f097a8\n    resubmit(,20)\n30. ip,reg6=0x1389,nw_dst=10.1.1.12, priority 100, cookie 0x27e28202726a681\n    set_field:0x1389->tun_id\n    set_field:192.168.0.13->tun_dst\n    output:1\n     -> output to native tunnel\n\nbridge(\"br-phy\")\n----------------\n 0. priority 0\n    NORMAL\n\nFinal flow: tcp\nMegaflow: x\nDatapath actions: tnl_push(...),3\n";

    fn pkt() -> Packet {
        Packet {
            dl_src: "02:00:00:00:01:01".into(),
            dl_dst: ROUTER_MAC.into(),
            nw_src: "10.1.1.11".parse().unwrap(),
            nw_dst: "10.1.1.12".parse().unwrap(),
            proto: 6,
            tp_src: 40000,
            tp_dst: 80,
        }
    }

    #[test]
    fn parses_tables_cookies_and_only_br_int() {
        let p = parse(SAMPLE);
        let tables: Vec<u8> = p.tables.iter().map(|t| t.table).collect();
        assert_eq!(tables, vec![0, 15, 30]);
        assert_eq!(p.tables[0].cookie.as_deref(), Some("0x02eed97b7654964a"));
        assert_eq!(p.tables[1].matched, "");
        assert_eq!(p.tables[1].priority, Some(0));
        assert_eq!(p.datapath, "tnl_push(...),3");
    }

    #[test]
    fn an_output_to_the_tunnel_carries_the_vni_and_destination() {
        let p = parse(SAMPLE);
        let ingress = Ingress {
            in_port: 10,
            tunnel: None,
            mux: None,
        };
        let outs = outputs(&p.tables, &pkt(), &ingress);
        assert_eq!(outs.len(), 1);
        assert_eq!(
            (outs[0].port, outs[0].tun_id, outs[0].tun_dst),
            (1, 5001, "192.168.0.13".parse().unwrap())
        );
    }

    #[test]
    fn a_table_miss_has_no_cookie_and_no_output() {
        let text = "bridge(\"br-int\")\n----------------\n 0. No match.\n    drop\n\nFinal flow: x\nDatapath actions: drop\n";
        let p = parse(text);
        assert_eq!(p.tables.len(), 1);
        assert_eq!(p.tables[0].cookie, None);
        let ingress = Ingress {
            in_port: 10,
            tunnel: None,
            mux: None,
        };
        assert!(outputs(&p.tables, &pkt(), &ingress).is_empty());
    }
}
