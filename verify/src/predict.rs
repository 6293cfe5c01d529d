//! One concrete packet through the model: what the verifier predicts OVS does.
//!
//! Expects a [`Network`] built from an artifact set, the underlay map
//! (underlay address → device, `Policy::underlay`) and a [`Probe`]: the
//! bridge, the OpenFlow port the packet enters by (and its `tun_id` when it
//! enters by the tunnel port 1) and every header value. Guarantees:
//! [`predict`] runs the same [`crate::bridge::Bridge`] model the invariant
//! checks use on the single packet and returns, per bridge the packet
//! reaches (a [`Segment`]), every path: the flows matched in order (table,
//! priority, cookie, `file:line`), the group buckets taken, and the fate —
//! delivered to a port, tunnelled (`tun_id`, `tun_dst`), sent to the uplink,
//! or dropped (and why) — with the headers as rewritten on that path.
//! A tunnelled packet is followed into the bridge that owns `tun_dst` (every
//! other bridge for 224.0.0.0/4), at most [`MAX_SEGMENTS`] bridges deep.
//!
//! `select` groups: the model does not compute OVS's hash, so each bucket of
//! a `select` group is a *possible* path, tagged with the choice
//! ([`PathPrediction::choices`]); OVS takes exactly one of them. `all`
//! groups take every bucket. A value the model cannot know (a conntrack NAT
//! port) is printed `?`.

use crate::bridge::{End, Hop, Outcome, Pkt, Val};
use crate::network::Network;
use crate::ofctl::{parse_value, split_top};
use crate::space::{show, Field, Headers, ETH_ARP, ETH_IP, HEADER_FIELDS};
use serde::Serialize;
use std::collections::BTreeMap;

/// Bridges a prediction follows a packet through, at most (loops end here).
pub const MAX_SEGMENTS: usize = 16;

/// A concrete packet entering one bridge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Probe {
    pub host: String,
    pub in_port: u32,
    /// Only with `in_port` 1 (the VXLAN port): the VNI it arrived with.
    pub tun_id: Option<u128>,
    pub headers: Headers,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProbeError {
    #[error("bad packet `{text}`: {message}")]
    Syntax { text: String, message: String },
    #[error("no bridge `{host}` in the artifacts (bridges: {known})")]
    UnknownHost { host: String, known: String },
}

fn syntax(text: &str, message: impl Into<String>) -> ProbeError {
    ProbeError::Syntax {
        text: text.to_string(),
        message: message.into(),
    }
}

/// The flow keys a probe accepts besides `host`, `in_port` and `tun_id`.
pub const PROBE_KEYS: &str = "eth_src eth_dst eth_type ip_src ip_dst proto tp_src tp_dst \
     arp_op arp_spa arp_tpa arp_sha arp_tha (ovs-fields(7) names such as dl_src, nw_dst, \
     tcp_dst work too) and the shorthands ip, tcp, udp, icmp, arp";

impl Probe {
    /// Parses `host=h1,in_port=10,tcp,eth_src=02:..,ip_src=10.1.1.11,ip_dst=10.1.1.12,tp_dst=80`.
    /// Unset IPv4 TCP/UDP fields default to 0 except `tp_src` (40000); a
    /// packet with IP addresses and no `eth_type` is IPv4.
    pub fn parse(text: &str) -> Result<Probe, ProbeError> {
        let mut host = None;
        let mut in_port = None;
        let mut tun_id = None;
        let mut vals: BTreeMap<Field, u128> = BTreeMap::new();
        for tok in split_top(text) {
            let (k, v) = match tok {
                "ip" => ("eth_type", "0x0800"),
                "arp" => ("eth_type", "0x0806"),
                "tcp" | "udp" | "icmp" => {
                    vals.insert(Field::DlType, ETH_IP);
                    let p = match tok {
                        "tcp" => 6,
                        "udp" => 17,
                        _ => 1,
                    };
                    vals.insert(Field::NwProto, p);
                    continue;
                }
                _ => tok.split_once('=').ok_or_else(|| {
                    syntax(
                        text,
                        format!("`{tok}` is not key=value (keys: {PROBE_KEYS})"),
                    )
                })?,
            };
            let (k, v) = (k.trim(), v.trim());
            match k {
                "host" => host = Some(v.to_string()),
                "in_port" => {
                    in_port = Some(v.parse::<u32>().map_err(|_| {
                        syntax(
                            text,
                            format!("in_port `{v}` is not an OpenFlow port number"),
                        )
                    })?)
                }
                "tun_id" | "tunnel_id" => {
                    tun_id = Some(
                        parse_value(Field::TunId, v)
                            .ok_or_else(|| syntax(text, format!("tun_id `{v}` is not a number")))?,
                    )
                }
                _ => {
                    let f = match k {
                        "proto" => Some(Field::NwProto),
                        _ => Field::parse(k).filter(|f| f.is_header()),
                    }
                    .ok_or_else(|| {
                        syntax(text, format!("unknown key `{k}` (keys: {PROBE_KEYS})"))
                    })?;
                    let x = parse_value(f, v)
                        .ok_or_else(|| syntax(text, format!("bad value `{v}` for `{k}`")))?;
                    vals.insert(f, x);
                }
            }
        }
        let host = host.ok_or_else(|| syntax(text, "missing `host=` (the bridge's device)"))?;
        let in_port = in_port.ok_or_else(|| {
            syntax(
                text,
                "missing `in_port=` (the VM's port, or 1 for the tunnel)",
            )
        })?;
        if tun_id.is_some() != (in_port == 1) {
            return Err(syntax(
                text,
                "`tun_id=` goes with `in_port=1` (the tunnel port) and only there",
            ));
        }
        if !vals.contains_key(&Field::DlType)
            && (vals.contains_key(&Field::NwSrc) || vals.contains_key(&Field::NwDst))
        {
            vals.insert(Field::DlType, ETH_IP);
        }
        if vals.get(&Field::DlType) == Some(&ETH_IP) {
            vals.entry(Field::TpSrc).or_insert(40000);
        }
        let headers = Headers(
            HEADER_FIELDS
                .iter()
                .map(|f| (*f, vals.get(f).copied().unwrap_or(0)))
                .collect(),
        );
        Ok(Probe {
            host,
            in_port,
            tun_id,
            headers,
        })
    }
}

/// One flow on a path, as pushed.
#[derive(Clone, Debug, Serialize)]
pub struct FlowRef {
    pub table: u8,
    pub priority: u16,
    /// `0x…`, as `ovs-ofctl dump-flows` and `ofproto/trace` print it.
    pub cookie: String,
    pub matches: String,
    pub actions: String,
    pub at: String,
}

/// A group bucket a path took.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct BucketRef {
    pub group: u32,
    pub kind: String,
    pub bucket: u32,
    pub at: String,
}

/// Header values after the path's rewrites (`?` = not known to the model).
pub type HeaderValues = BTreeMap<String, String>;

#[derive(Clone, Debug, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Fate {
    Output {
        port: u32,
        headers: HeaderValues,
    },
    Tunnel {
        tun_id: u128,
        tun_dst: String,
        /// The device owning `tun_dst` (followed as a later segment), or
        /// `multicast`, or None (a Mux, an address no bridge owns).
        to: Option<String>,
        headers: HeaderValues,
    },
    Uplink {
        headers: HeaderValues,
    },
    Drop {
        why: String,
    },
}

#[derive(Clone, Debug, Serialize)]
pub struct PathPrediction {
    /// Flows matched, in order.
    pub flows: Vec<FlowRef>,
    /// Every group bucket taken, in order.
    pub buckets: Vec<BucketRef>,
    /// The `select` buckets among them: this path is one possible choice.
    pub choices: Vec<(u32, u32)>,
    pub fate: Fate,
}

#[derive(Clone, Debug, Serialize)]
pub struct Segment {
    pub device: String,
    pub in_port: u32,
    pub tun_id: Option<u128>,
    /// The packet as it enters this bridge.
    pub headers: HeaderValues,
    /// (segment, path) whose tunnel fate brought the packet here.
    pub from: Option<(usize, usize)>,
    pub paths: Vec<PathPrediction>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Prediction {
    pub segments: Vec<Segment>,
    /// True when a segment was not followed (segment bound, unknown values).
    pub truncated: bool,
}

/// The packet's header values by name (only the fields its type carries).
pub fn header_values(h: &Headers) -> HeaderValues {
    let mut out = BTreeMap::new();
    let ty = h.get(Field::DlType);
    for (f, v) in &h.0 {
        if relevant(*f, ty, h.get(Field::NwProto)) {
            out.insert(f.to_string(), show(*f, *v));
        }
    }
    out
}

fn relevant(f: Field, ty: u128, proto: u128) -> bool {
    match f {
        Field::DlType | Field::DlSrc | Field::DlDst => true,
        Field::NwProto | Field::NwSrc | Field::NwDst => ty == ETH_IP,
        Field::TpSrc | Field::TpDst => ty == ETH_IP && (proto == 6 || proto == 17),
        Field::ArpOp | Field::ArpSpa | Field::ArpTpa | Field::ArpSha | Field::ArpTha => {
            ty == ETH_ARP
        }
        _ => false,
    }
}

/// The value of `f` on a path, given the packet that entered the bridge.
fn resolve(pkt: &Pkt, orig: &Headers, f: Field) -> Option<u128> {
    match pkt.read(f) {
        Val::Const(x) => Some(x),
        Val::Alias(g) => Some(orig.get(g)),
        Val::Unknown => None,
    }
}

fn rewritten(pkt: &Pkt, orig: &Headers) -> (HeaderValues, Option<Headers>) {
    let ty = resolve(pkt, orig, Field::DlType).unwrap_or(0);
    let proto = resolve(pkt, orig, Field::NwProto).unwrap_or(0);
    let mut vals = BTreeMap::new();
    let mut concrete = Vec::new();
    let mut known = true;
    for f in HEADER_FIELDS {
        let v = resolve(pkt, orig, f);
        known &= v.is_some();
        concrete.push((f, v.unwrap_or(0)));
        if relevant(f, ty, proto) {
            vals.insert(
                f.to_string(),
                v.map_or_else(|| "?".to_string(), |v| show(f, v)),
            );
        }
    }
    (vals, known.then_some(Headers(concrete)))
}

/// Runs `probe` through the model (`net` as `Network::build` makes it: the
/// flows it cites carry their own `file:line`, which a patched bridge's
/// carried flows do not keep up to date; `Bridge::cite`).
pub fn predict(
    net: &Network,
    underlay: &BTreeMap<u32, String>,
    probe: &Probe,
) -> Result<Prediction, ProbeError> {
    if net.bridge(&probe.host).is_none() {
        return Err(ProbeError::UnknownHost {
            host: probe.host.clone(),
            known: net
                .bridges
                .iter()
                .map(|b| b.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    let mut out = Prediction {
        segments: Vec::new(),
        truncated: false,
    };
    // (device, in_port, tun_id, headers, from)
    type Pending = (String, u32, Option<u128>, Headers, Option<(usize, usize)>);
    let mut queue: std::collections::VecDeque<Pending> = std::collections::VecDeque::new();
    queue.push_back((
        probe.host.clone(),
        probe.in_port,
        probe.tun_id,
        probe.headers.clone(),
        None,
    ));
    while let Some((device, in_port, tun_id, headers, from)) = queue.pop_front() {
        if out.segments.len() >= MAX_SEGMENTS {
            out.truncated = true;
            break;
        }
        let Some(bridge) = net.bridge(&device) else {
            continue;
        };
        let here = out.segments.len();
        let set = headers.0.iter().fold(net.space.all(), |acc, (f, v)| {
            acc.and(&net.space.field_eq(*f, *v, f.mask()))
        });
        let mut over = BTreeMap::new();
        over.insert(Field::InPort, Val::Const(u128::from(in_port)));
        if let Some(id) = tun_id {
            over.insert(Field::TunId, Val::Const(id));
        }
        let mut outcomes: Vec<Outcome> = Vec::new();
        bridge.run(&net.space, &Pkt { set, over }, 0, &[], true, &mut outcomes);
        let mut paths = Vec::new();
        for o in &outcomes {
            let mut flows = Vec::new();
            let mut buckets = Vec::new();
            let mut choices = Vec::new();
            for h in &o.path {
                match *h {
                    Hop::Flow { handle, .. } => {
                        let Some(t) = bridge.flow(handle).map(|f| &f.text) else {
                            continue;
                        };
                        flows.push(FlowRef {
                            table: t.table,
                            priority: t.priority,
                            cookie: format!("{:#x}", t.cookie),
                            matches: t.matches.clone(),
                            actions: t.actions.clone(),
                            at: t.at.clone(),
                        });
                    }
                    Hop::Group { group, bucket, .. } => {
                        let g = bridge.groups.get(&group);
                        let kind = g.map_or_else(String::new, |g| g.text.kind.clone());
                        if kind == "select" {
                            choices.push((group, bucket));
                        }
                        buckets.push(BucketRef {
                            group,
                            kind,
                            bucket,
                            at: g.map_or_else(String::new, |g| g.text.at.clone()),
                        });
                    }
                    Hop::Lb { .. } | Hop::Underlay { .. } => {}
                }
            }
            let (vals, concrete) = rewritten(&o.pkt, &headers);
            let fate = match &o.end {
                End::Deliver { port } => Fate::Output {
                    port: *port,
                    headers: vals,
                },
                End::Uplink => Fate::Uplink { headers: vals },
                End::Drop { why } => Fate::Drop { why: why.clone() },
                End::Tunnel { tun_id, tun_dst } => {
                    let multicast = tun_dst >> 28 == 0xe;
                    let to = if multicast {
                        Some("multicast".to_string())
                    } else {
                        underlay.get(tun_dst).cloned()
                    };
                    let next: Vec<String> = if multicast {
                        net.bridges
                            .iter()
                            .filter(|b| b.name != device)
                            .map(|b| b.name.clone())
                            .collect()
                    } else {
                        to.iter().cloned().collect()
                    };
                    match &concrete {
                        Some(h) => {
                            for d in next {
                                queue.push_back((
                                    d,
                                    1,
                                    Some(*tun_id),
                                    h.clone(),
                                    Some((here, paths.len())),
                                ));
                            }
                        }
                        None if !next.is_empty() => out.truncated = true,
                        None => {}
                    }
                    Fate::Tunnel {
                        tun_id: *tun_id,
                        tun_dst: std::net::Ipv4Addr::from(*tun_dst).to_string(),
                        to,
                        headers: vals,
                    }
                }
            };
            paths.push(PathPrediction {
                flows,
                buckets,
                choices,
                fate,
            });
        }
        if paths.is_empty() {
            // every action list ran into a group without buckets
            paths.push(PathPrediction {
                flows: Vec::new(),
                buckets: Vec::new(),
                choices: Vec::new(),
                fate: Fate::Drop {
                    why: "no path leaves the bridge (a group without buckets)".into(),
                },
            });
        }
        out.segments.push(Segment {
            device,
            in_port,
            tun_id,
            headers: header_values(&headers),
            from,
            paths,
        });
    }
    Ok(out)
}

impl Prediction {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }

    /// The human report: per bridge, each path's flows and its fate.
    pub fn render(&self) -> String {
        let mut s = String::new();
        for (i, seg) in self.segments.iter().enumerate() {
            let via = match (seg.tun_id, seg.from) {
                (Some(id), Some((fs, fp))) => {
                    format!(", tun_id {id}, from segment {} path {}", fs + 1, fp + 1)
                }
                (Some(id), None) => format!(", tun_id {id}"),
                _ => String::new(),
            };
            s += &format!(
                "[{}] {} in_port {}{via}: {}\n",
                i + 1,
                seg.device,
                seg.in_port,
                brief(&seg.headers)
            );
            for (j, p) in seg.paths.iter().enumerate() {
                let alt = if p.choices.is_empty() {
                    String::new()
                } else {
                    let c: Vec<String> = p
                        .choices
                        .iter()
                        .map(|(g, b)| format!("group {g} bucket {b}"))
                        .collect();
                    format!(" (if OVS picks {})", c.join(", "))
                };
                s += &format!("  path {}{alt}:\n", j + 1);
                for f in &p.flows {
                    s += &format!(
                        "    table={} priority={} cookie={} {} actions={}  [{}]\n",
                        f.table,
                        f.priority,
                        f.cookie,
                        if f.matches.is_empty() {
                            "(any)"
                        } else {
                            &f.matches
                        },
                        f.actions,
                        f.at
                    );
                }
                for b in &p.buckets {
                    s += &format!(
                        "    group {} ({}) bucket {}  [{}]\n",
                        b.group, b.kind, b.bucket, b.at
                    );
                }
                s += &format!("    → {}\n", fate_text(&p.fate));
            }
        }
        if self.truncated {
            s += "(not followed further: a value the model cannot know, or more than 16 bridges)\n";
        }
        s
    }
}

fn brief(h: &HeaderValues) -> String {
    let g = |k: &str| h.get(k).map_or("-", |v| v.as_str());
    match g("dl_type") {
        "0x0800" => {
            let mut s = format!(
                "ip proto {} {}:{} → {}:{}",
                g("nw_proto"),
                g("nw_src"),
                g("tp_src"),
                g("nw_dst"),
                g("tp_dst")
            );
            if !h.contains_key("tp_src") {
                s = format!(
                    "ip proto {} {} → {}",
                    g("nw_proto"),
                    g("nw_src"),
                    g("nw_dst")
                );
            }
            format!("{s} ({} → {})", g("dl_src"), g("dl_dst"))
        }
        "0x0806" => format!(
            "arp op {} {} ({}) asks for {} ({} → {})",
            g("arp_op"),
            g("arp_spa"),
            g("arp_sha"),
            g("arp_tpa"),
            g("dl_src"),
            g("dl_dst")
        ),
        t => format!("eth_type {t} ({} → {})", g("dl_src"), g("dl_dst")),
    }
}

fn fate_text(f: &Fate) -> String {
    match f {
        Fate::Output { port, headers } => format!("output to port {port}: {}", brief(headers)),
        Fate::Tunnel {
            tun_id,
            tun_dst,
            to,
            headers,
        } => format!(
            "tunnel tun_id={tun_id} tun_dst={tun_dst} ({}): {}",
            to.as_deref()
                .unwrap_or("no bridge owns it: a Mux or outside"),
            brief(headers)
        ),
        Fate::Uplink { headers } => format!("output to the uplink (port 2): {}", brief(headers)),
        Fate::Drop { why } => format!("dropped: {why}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_probe() {
        let p = Probe::parse(
            "host=h1,in_port=10,tcp,eth_src=02:00:00:00:01:01,ip_src=10.1.1.11,ip_dst=10.1.1.12,tp_dst=80",
        )
        .unwrap();
        assert_eq!((p.host.as_str(), p.in_port, p.tun_id), ("h1", 10, None));
        assert_eq!(p.headers.get(Field::NwDst), 0x0a01010c);
        assert_eq!(p.headers.get(Field::TpSrc), 40000);
        assert_eq!(p.headers.get(Field::NwProto), 6);
        let t = Probe::parse("host=h2,in_port=1,tun_id=5001,ip_dst=10.1.1.11").unwrap();
        assert_eq!(
            (t.tun_id, t.headers.get(Field::DlType)),
            (Some(5001), ETH_IP)
        );
        for bad in [
            "in_port=10",
            "host=h1",
            "host=h1,in_port=10,tun_id=5",
            "host=h1,in_port=x",
            "host=h1,in_port=10,reg6=1",
            "host=h1,in_port=10,ip_dst=10.1.1",
            "host=h1,in_port=10,bogus",
        ] {
            assert!(Probe::parse(bad).is_err(), "{bad}");
        }
    }
}
