//! One concrete packet through the model: what the verifier predicts the
//! devices do — OVS bridges and P4 switches alike.
//!
//! Expects a [`Model`]: the [`Network`] built from an artifact set, the
//! [`Policy`] (its underlay map: underlay address → device; and, when built
//! from the intent, how the switches are wired: `link` and `host` facts),
//! the switches as their `.txtpb` requests program them, and a [`Probe`]
//! (`probe.rs`): the device, the port the packet enters by, its VXLAN VNI
//! and outer destination when it arrives encapsulated, and every header
//! value. Guarantees: [`predict`] returns one [`Segment`] per device the
//! packet reaches:
//! - a bridge runs the same [`crate::bridge::Bridge`] model the invariant
//!   checks use, on the single packet: every path's flows in order (table,
//!   priority, cookie, `file:line`), the group buckets taken, and the fate —
//!   delivered to a port, tunnelled (`tun_id`, `tun_dst`), sent to the
//!   uplink, or dropped (and why) — with the headers as rewritten;
//! - a switch runs netc.p4's ingress on the packet
//!   ([`crate::p4::hop::Hop`], the concrete interpreter REACH-2's
//!   counterexamples replay): the entries matched (`.txtpb` `file:line`)
//!   and every copy that leaves, printed exactly as a switch
//!   counterexample's path prints it.
//!
//! Where a packet goes next: with the intent's wiring, a bridge's tunnel
//! and uplink packets enter its host's ToR port; a switch port leads over
//! its `link` to the next switch, or to the attached host's bridge (VXLAN at
//! the tunnel port 1 with its VNI, plain IP at the uplink port 2). Without
//! it (or for a host no switch of the artifacts is attached to) a tunnel
//! goes straight to the bridge owning `tun_dst` (hosts and Hoverboards;
//! every other bridge for 224.0.0.0/4) and a switch's ports lead nowhere
//! known. At most [`MAX_SEGMENTS`] segments (loops end there).
//!
//! `select` groups: the model does not compute OVS's hash, so each bucket of
//! a `select` group is a *possible* path, tagged with the choice
//! ([`PathPrediction::choices`]); OVS takes exactly one of them. `all`
//! groups take every bucket. A switch's hash is computed (hash5): its slot
//! is the one the hardware takes. A value the model cannot know (a
//! conntrack NAT port) is printed `?`, and is not followed further.

mod probe;
mod render;
mod switch;

pub use probe::{Probe, ProbeError, PROBE_KEYS};

use crate::bridge::{End, Hop, Outcome, Pkt, Val};
use crate::network::Network;
use crate::p4::request::P4Info;
use crate::p4::switch::Switch;
use crate::policy::Policy;
use crate::space::{show, Field, Headers, ETH_ARP, ETH_IP, HEADER_FIELDS};
use serde::Serialize;
use std::collections::{BTreeMap, VecDeque};

/// Devices a prediction follows a packet through, at most (loops end here).
pub const MAX_SEGMENTS: usize = 64;

/// What a prediction runs on.
pub struct Model<'a> {
    pub net: &'a Network,
    pub policy: &'a Policy,
    /// The P4 switches by name, as their requests program them.
    pub switches: &'a BTreeMap<String, Switch>,
    pub info: &'a P4Info,
}

impl Model<'_> {
    /// The intent's wiring, when the policy comes from the intent.
    fn wiring(&self) -> Option<crate::p4::hop::Wiring<'_>> {
        self.policy.from_intent.then_some(crate::p4::hop::Wiring {
            links: &self.policy.switches.fabric.links,
            attached: &self.policy.switches.attached,
        })
    }

    /// The switch port a host's bridge is attached to (intent `host`
    /// facts), when that switch is one of the artifacts'.
    fn tor_of(&self, host: &str) -> Option<(String, u32)> {
        if !self.policy.from_intent {
            return None;
        }
        self.policy
            .switches
            .attached
            .iter()
            .find(|((tor, _), h)| *h == host && self.switches.contains_key(tor))
            .map(|(k, _)| k.clone())
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
    /// A switch sends a copy out of `port` (VXLAN `tun_id`/`tun_dst` when
    /// it leaves encapsulated), to `to` (where the port leads).
    Forward {
        port: u32,
        #[serde(skip_serializing_if = "Option::is_none")]
        tun_id: Option<u32>,
        #[serde(skip_serializing_if = "Option::is_none")]
        tun_dst: Option<String>,
        to: String,
        headers: HeaderValues,
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
    /// A switch's table entries matched (`file:line  switch.table`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub entries: Vec<String>,
    pub fate: Fate,
}

#[derive(Clone, Debug, Serialize)]
pub struct Segment {
    pub device: String,
    /// `bridge` or `switch`.
    pub kind: &'static str,
    pub in_port: u32,
    pub tun_id: Option<u128>,
    /// The outer destination of a VXLAN packet entering a switch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tun_dst: Option<String>,
    /// The packet as it enters this device (the inner frame of VXLAN).
    pub headers: HeaderValues,
    /// (segment, path) whose fate brought the packet here.
    pub from: Option<(usize, usize)>,
    pub paths: Vec<PathPrediction>,
    /// A switch's hop as a counterexample prints it ([`crate::p4::hop`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lines: Vec<String>,
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

/// A packet arriving at a device, to be run there.
#[derive(Clone)]
struct Arrival {
    device: String,
    in_port: u32,
    /// (VNI, outer destination) of a VXLAN packet.
    tun: Option<(u128, u32)>,
    headers: Headers,
    from: Option<(usize, usize)>,
}

/// Runs `probe` through the model (`net` as `Network::build` makes it: the
/// flows it cites carry their own `file:line`, which a patched bridge's
/// carried flows do not keep up to date; `Bridge::cite`).
pub fn predict(m: &Model, probe: &Probe) -> Result<Prediction, ProbeError> {
    let bad = |message: &str| ProbeError::Device {
        device: probe.host.clone(),
        message: message.to_string(),
    };
    if m.net.bridge(&probe.host).is_some() {
        if probe.tun_id.is_some() != (probe.in_port == 1) {
            return Err(bad(
                "on a bridge `tun_id=` goes with `in_port=1` (the tunnel port) and only there",
            ));
        }
    } else if m.switches.contains_key(&probe.host) {
        if probe.tun_id.is_some() && probe.tun_dst.is_none() {
            return Err(bad(
                "a VXLAN packet entering a switch needs `tun_dst=` (its outer destination)",
            ));
        }
    } else {
        let known: Vec<&str> = m
            .net
            .bridges
            .iter()
            .map(|b| b.name.as_str())
            .chain(m.switches.keys().map(String::as_str))
            .collect();
        return Err(ProbeError::UnknownHost {
            host: probe.host.clone(),
            known: known.join(", "),
        });
    }
    let mut out = Prediction {
        segments: Vec::new(),
        truncated: false,
    };
    let mut queue: VecDeque<Arrival> = VecDeque::new();
    queue.push_back(Arrival {
        device: probe.host.clone(),
        in_port: probe.in_port,
        tun: probe.tun_id.map(|v| (v, probe.tun_dst.unwrap_or(0))),
        headers: probe.headers.clone(),
        from: None,
    });
    while let Some(a) = queue.pop_front() {
        if out.segments.len() >= MAX_SEGMENTS {
            out.truncated = true;
            break;
        }
        let here = out.segments.len();
        let seg = if m.switches.contains_key(&a.device) {
            switch::segment(m, &a, here, &mut queue)
        } else if m.net.bridge(&a.device).is_some() {
            bridge_segment(m, &a, here, &mut queue, &mut out.truncated)
        } else {
            continue;
        };
        out.segments.push(seg);
    }
    Ok(out)
}

/// `a` through its bridge; the packets that leave it for another device
/// are queued.
fn bridge_segment(
    m: &Model,
    a: &Arrival,
    here: usize,
    queue: &mut VecDeque<Arrival>,
    truncated: &mut bool,
) -> Segment {
    let net = m.net;
    let bridge = net.bridge(&a.device).expect("checked by the caller");
    let headers = &a.headers;
    let tun_id = a.tun.map(|t| t.0);
    let set = headers.0.iter().fold(net.space.all(), |acc, (f, v)| {
        acc.and(&net.space.field_eq(*f, *v, f.mask()))
    });
    let mut over = BTreeMap::new();
    over.insert(Field::InPort, Val::Const(u128::from(a.in_port)));
    if let Some(id) = tun_id {
        over.insert(Field::TunId, Val::Const(id));
    }
    let mut outcomes: Vec<Outcome> = Vec::new();
    bridge.run(&net.space, &Pkt { set, over }, 0, &[], true, &mut outcomes);
    let tor = m.tor_of(&a.device);
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
        let (vals, concrete) = rewritten(&o.pkt, headers);
        let from = Some((here, paths.len()));
        let mut send = |device: String, in_port: u32, tun: Option<(u128, u32)>| match &concrete {
            Some(h) => queue.push_back(Arrival {
                device,
                in_port,
                tun,
                headers: h.clone(),
                from,
            }),
            None => *truncated = true,
        };
        let fate = match &o.end {
            End::Deliver { port } => Fate::Output {
                port: *port,
                headers: vals,
            },
            End::Uplink => {
                // plain IP out of the host's NIC: into its ToR
                if let Some((t, p)) = &tor {
                    send(t.clone(), *p, None);
                }
                Fate::Uplink { headers: vals }
            }
            End::Drop { why } => Fate::Drop { why: why.clone() },
            End::Tunnel { tun_id, tun_dst } => {
                let multicast = tun_dst >> 28 == 0xe;
                let to = if multicast {
                    Some("multicast".to_string())
                } else {
                    m.policy.underlay.get(tun_dst).cloned()
                };
                if let Some((t, p)) = &tor {
                    // the fabric carries it: the switches decide
                    send(t.clone(), *p, Some((*tun_id, *tun_dst)));
                } else if multicast {
                    for b in net.bridges.iter().filter(|b| b.name != a.device) {
                        send(b.name.clone(), 1, Some((*tun_id, *tun_dst)));
                    }
                } else if let Some(d) = &to {
                    send(d.clone(), 1, Some((*tun_id, *tun_dst)));
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
            entries: Vec::new(),
            fate,
        });
    }
    if paths.is_empty() {
        // every action list ran into a group without buckets
        paths.push(PathPrediction {
            flows: Vec::new(),
            buckets: Vec::new(),
            choices: Vec::new(),
            entries: Vec::new(),
            fate: Fate::Drop {
                why: "no path leaves the bridge (a group without buckets)".into(),
            },
        });
    }
    Segment {
        device: a.device.clone(),
        kind: "bridge",
        in_port: a.in_port,
        tun_id,
        tun_dst: None,
        headers: header_values(headers),
        from: a.from,
        paths,
        lines: Vec::new(),
    }
}
