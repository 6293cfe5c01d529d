//! `netc trace SRC DST [PROTO/PORT]`: one packet's path and fate through the
//! lab's real bridges (runtime/deploy/src/lab/trace.rs does the following).
//!
//! Reads only `<state>/lab/topology.json` (written by the last apply / `lab
//! up`) and the live bridges — no store, no intent. SRC must be a VM (its
//! host and port are where the packet enters); DST is a VM or any IPv4
//! address (a VIP, an outside address). Exit: 0 the packet reached DST, 1 it
//! did not (dropped, or delivered elsewhere), 2 bad arguments / no lab.

use super::lab::lab_error;
use super::Outcome;
use crate::lab::trace::{self as follow, Fate, Packet, Trace, ROUTER_MAC};
use crate::lab::{self, LabHost, LabPort, Topology};
use serde::Serialize;
use std::net::Ipv4Addr;
use std::path::PathBuf;

/// `netc trace` options.
#[derive(clap::Args, Debug)]
#[command(after_help = crate::after_help!(
    concat!(
    "SRC and DST: `tenant/vm`, a VM name unique across tenants, or an IPv4 address (for SRC, the address of exactly one VM).\n",
    "PROTO/PORT: tcp/80 (default), udp/53, tcp (port 80), icmp. The source port is --sport.\n",
    "Each bridge is asked with `ovs-appctl ofproto/trace` (OVS's own classifier); a packet leaving the VXLAN port is\n",
    "followed to the host owning the outer destination, a packet to a software Mux's VIP the way the Mux forwards it\n",
    "(members[hash5 % n]), a multicast copy to every other host."
    ),
    example: concat!(
        "  (after `netc apply examples/quickstart/intent.ndl`)\n",
        "  netc trace acme/web1 acme/web2 tcp/80        # delivered, VXLAN VNI 5001 from h1 to h3\n",
        "  netc trace web1 db1 tcp/22                   # dropped at table 20 (ACL no-ssh-to-db)\n",
        "  netc trace globex/app1 acme/web2             # never delivered: tenants are apart\n",
        "  netc trace db1 203.0.113.10 tcp/80 --json    # the VIP: Mux -> a DIP (web1 or web2)"
    ),
    exit0: "the packet reached DST",
    exit1: "it did not (dropped or delivered elsewhere)",
    exit2: "usage, no lab, or OVS missing",
))]
pub struct TraceArgs {
    /// The sending VM: tenant/vm, vm, or its IP.
    pub src: String,
    /// The destination: tenant/vm, vm, or an IPv4 address.
    pub dst: String,
    /// tcp/PORT, udp/PORT, tcp, udp or icmp.
    #[arg(default_value = "tcp/80")]
    pub proto: String,
    /// Source transport port.
    #[arg(long, default_value_t = 40000)]
    pub sport: u16,
    /// State directory (the lab lives in DIR/lab).
    #[arg(long, value_name = "DIR", default_value = ".netc")]
    pub state: PathBuf,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct Endpoint {
    host: Option<String>,
    tenant: Option<String>,
    vm: Option<String>,
    ip: Ipv4Addr,
    ofport: Option<u16>,
}

#[derive(Serialize)]
struct Report<'a> {
    src: Endpoint,
    dst: Endpoint,
    proto: u8,
    sport: u16,
    dport: u16,
    reached: bool,
    #[serde(flatten)]
    trace: &'a Trace,
}

pub fn run(a: TraceArgs) -> Outcome {
    let topo = match lab::load_topology(&a.state) {
        Ok(t) => t,
        Err(e) => return lab_error(e),
    };
    let (proto, dport) = match parse_proto(&a.proto) {
        Ok(p) => p,
        Err(o) => return o,
    };
    let (src_host, src) = match resolve_vm(&topo, &a.src, "SRC") {
        Ok(Some(v)) => v,
        Ok(None) => {
            return Outcome::InputError(
                format!("SRC `{}` is no VM of the lab", a.src),
                Some(format!(
                    "the packet enters at a VM's port; VMs: {}",
                    vm_list(&topo)
                )),
            )
        }
        Err(o) => return o,
    };
    let dst = match resolve_vm(&topo, &a.dst, "DST") {
        Ok(Some((h, p))) => Endpoint {
            host: Some(h.name.clone()),
            tenant: Some(p.tenant.clone()),
            vm: Some(p.vm.clone()),
            ip: p.ip,
            ofport: Some(p.ofport),
        },
        Ok(None) => match a.dst.parse::<Ipv4Addr>() {
            Ok(ip) => Endpoint {
                host: None,
                tenant: None,
                vm: None,
                ip,
                ofport: None,
            },
            Err(_) => {
                return Outcome::InputError(
                    format!(
                        "DST `{}` is neither a VM of the lab nor an IPv4 address",
                        a.dst
                    ),
                    Some(format!("VMs: {}", vm_list(&topo))),
                )
            }
        },
        Err(o) => return o,
    };
    let packet = Packet {
        dl_src: src.mac.clone(),
        dl_dst: ROUTER_MAC.into(),
        nw_src: src.ip,
        nw_dst: dst.ip,
        proto,
        tp_src: a.sport,
        tp_dst: dport,
    };
    let trace = match follow::trace(&a.state, &topo, src_host, src.ofport, packet) {
        Ok(t) => t,
        Err(e) => return lab_error(e),
    };
    let reached = trace.fates.iter().any(|f| match (f, &dst.vm) {
        (Fate::Delivered { tenant, vm, .. }, Some(want)) => {
            vm == want && Some(tenant) == dst.tenant.as_ref()
        }
        (Fate::Delivered { .. } | Fate::Uplink { .. } | Fate::LeftLab { .. }, None) => true,
        _ => false,
    });
    let report = Report {
        src: Endpoint {
            host: Some(src_host.name.clone()),
            tenant: Some(src.tenant.clone()),
            vm: Some(src.vm.clone()),
            ip: src.ip,
            ofport: Some(src.ofport),
        },
        dst,
        proto,
        sport: a.sport,
        dport,
        reached,
        trace: &trace,
    };
    if a.json {
        match serde_json::to_string_pretty(&report) {
            Ok(s) => super::output::emit(s),
            Err(e) => return Outcome::InputError(format!("cannot print JSON: {e}"), None),
        }
    } else {
        print!("{}", render(&report));
    }
    if reached {
        Outcome::Ok
    } else {
        Outcome::ProgramErrors
    }
}

fn parse_proto(s: &str) -> Result<(u8, u16), Outcome> {
    let bad = || {
        Outcome::InputError(
            format!("`{s}` is not a protocol and port"),
            Some("write tcp/80, udp/53, tcp, udp or icmp".into()),
        )
    };
    let (name, port) = match s.split_once('/') {
        Some((n, p)) => (n, Some(p.parse::<u16>().map_err(|_| bad())?)),
        None => (s, None),
    };
    match name.to_ascii_lowercase().as_str() {
        "tcp" => Ok((6, port.unwrap_or(80))),
        "udp" => Ok((17, port.unwrap_or(53))),
        "icmp" if port.is_none() => Ok((1, 0)),
        _ => Err(bad()),
    }
}

/// A VM by `tenant/vm`, unique `vm`, or unique IP; Ok(None) = not a VM.
fn resolve_vm<'t>(
    topo: &'t Topology,
    text: &str,
    what: &str,
) -> Result<Option<(&'t LabHost, &'t LabPort)>, Outcome> {
    let all = topo
        .hosts
        .iter()
        .flat_map(|h| h.ports.iter().map(move |p| (h, p)));
    let found: Vec<(&LabHost, &LabPort)> = if let Some((tenant, vm)) = text.split_once('/') {
        all.filter(|(_, p)| p.tenant == tenant && p.vm == vm)
            .collect()
    } else if let Ok(ip) = text.parse::<Ipv4Addr>() {
        let hits: Vec<_> = all.filter(|(_, p)| p.ip == ip).collect();
        if what == "DST" && hits.len() != 1 {
            // an address of several tenants' VMs (or none) stays an address
            return Ok(None);
        }
        hits
    } else {
        all.filter(|(_, p)| p.vm == text).collect()
    };
    match found.len() {
        0 if text.contains('/') => Err(Outcome::InputError(
            format!("{what} `{text}`: no such VM in the lab"),
            Some(format!("VMs: {}", vm_list(topo))),
        )),
        0 => Ok(None),
        1 => Ok(Some(found[0])),
        _ => {
            let names: Vec<String> = found
                .iter()
                .map(|(_, p)| format!("{}/{}", p.tenant, p.vm))
                .collect();
            Err(Outcome::InputError(
                format!("{what} `{text}` is ambiguous: {}", names.join(", ")),
                Some("write tenant/vm".into()),
            ))
        }
    }
}

fn vm_list(topo: &Topology) -> String {
    let names: Vec<String> = topo
        .hosts
        .iter()
        .flat_map(|h| h.ports.iter().map(|p| format!("{}/{}", p.tenant, p.vm)))
        .collect();
    if names.is_empty() {
        "(none)".into()
    } else {
        names.join(", ")
    }
}

fn proto_name(p: u8) -> String {
    match p {
        6 => "tcp".into(),
        17 => "udp".into(),
        1 => "icmp".into(),
        n => format!("proto {n}"),
    }
}

fn render(r: &Report) -> String {
    let name = |e: &Endpoint| match (&e.tenant, &e.vm) {
        (Some(t), Some(v)) => format!("{t}/{v} ({})", e.ip),
        _ => e.ip.to_string(),
    };
    let mut s = format!(
        "trace {} -> {} {}/{} (sport {})\n",
        name(&r.src),
        name(&r.dst),
        proto_name(r.proto),
        r.dport,
        r.sport
    );
    for hop in &r.trace.hops {
        if let Some(m) = &hop.ingress.mux {
            s += &format!(
                "mux {}: VIP {} -> slot {} (hash5 {:#010x}) = DIP {}, tunnelled to {}\n",
                m.mux, m.vip, m.index, m.hash, m.dip, m.underlay
            );
        }
        let from = match hop.ingress.tunnel {
            Some((vni, src, dst)) => format!("from VXLAN vni {vni} {src} -> {dst}"),
            None => format!("in_port {}", hop.ingress.in_port),
        };
        s += &format!(
            "{} {} {from}  {}\n",
            hop.host,
            hop.bridge,
            hop_packet(&hop.packet)
        );
        for t in &hop.tables {
            let cookie = t.cookie.as_deref().unwrap_or("-");
            let prio = t
                .priority
                .map(|p| p.to_string())
                .unwrap_or_else(|| "-".into());
            let m = if t.matched.is_empty() {
                "*"
            } else {
                &t.matched
            };
            s += &format!(
                "  table {:>3}  priority {:>5}  cookie {cookie}  {m}\n",
                t.table, prio
            );
            let acts: Vec<&str> = t
                .actions
                .iter()
                .map(String::as_str)
                .filter(|a| !a.starts_with("->"))
                .collect();
            if !acts.is_empty() {
                s += &format!("             actions: {}\n", acts.join(", "));
            }
        }
    }
    for f in &r.trace.fates {
        s += &format!("fate: {}\n", fate_text(f));
    }
    s += if r.reached {
        "result: reached the destination\n"
    } else {
        "result: did NOT reach the destination\n"
    };
    s
}

fn hop_packet(p: &Packet) -> String {
    format!(
        "{} {}:{} -> {}:{} dl {} -> {}",
        proto_name(p.proto),
        p.nw_src,
        p.tp_src,
        p.nw_dst,
        p.tp_dst,
        p.dl_src,
        p.dl_dst
    )
}

fn fate_text(f: &Fate) -> String {
    match f {
        Fate::Delivered {
            host,
            ofport,
            tenant,
            vm,
        } => format!("delivered to {tenant}/{vm} on {host} (port {ofport})"),
        Fate::Dropped {
            host,
            table,
            cookie: Some(c),
            matched,
        } => format!("dropped on {host} at table {table} by flow cookie {c} ({matched})"),
        Fate::Dropped {
            host,
            table,
            cookie: None,
            matched,
        } if matched == "No match" || matched.is_empty() => {
            format!("dropped on {host} at table {table}: no flow matched (table miss)")
        }
        // ofproto/trace prints no cookie for cookie 0: a flow netc never
        // writes (each of netc's has its rule's cookie), added by hand
        Fate::Dropped {
            host,
            table,
            cookie: None,
            matched,
        } => format!(
            "dropped on {host} at table {table} by a flow netc did not write (cookie 0: {matched}); `netc status -v` lists it as drift"
        ),
        Fate::Uplink { host, nw_dst } => {
            format!("left {host} through the uplink towards {nw_dst} (not tunnelled)")
        }
        Fate::LeftLab { host, vni, tun_dst } => {
            format!("tunnelled from {host} (vni {vni}) to {tun_dst}, which no lab host or Mux owns")
        }
        Fate::MuxNoMember { mux, vip } => {
            format!("sent to Mux {mux}, which has no live DIP for {vip}")
        }
        Fate::UnknownPort { host, ofport } => {
            format!("output on {host} to port {ofport}, which no VM of the topology owns")
        }
        Fate::TooLong { bridges } => format!("stopped after {bridges} bridges (a loop?)"),
    }
}
