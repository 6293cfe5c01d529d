//! AFF-3: both directions of a tapped connection reach the same NF instance.
//!
//! Expects a [`Network`] built from the artifacts and the [`Policy`] (VMs).
//! An NF tap is what `rules/nf.ndl` renders (specs/ovs-pipeline.md §7): a
//! flow in table 45 whose `group:` actions are the hops of a chain, in hop
//! order; each group picks the hop's instance. Nothing else is assumed of
//! the rules: taps are found on the traced paths.
//!
//! Guarantees: for every VM `a` and every other VM `b` of its tenant, every
//! TCP/UDP packet `p` that `a` can send to `b` and that some hop `h` taps,
//! the reply `p'` (addresses and ports swapped) that `b` sends is tapped at
//! hop `h` by a group whose choice *agrees* — else a violation with the
//! concrete 5-tuple. Two choices agree when
//! - every bucket of both groups reaches the same instance (any hash), or
//! - both groups are `selection_method=dp_hash` with hash algorithm 1
//!   (`selection_method_param` bits 32..63 = 1: OVS's `sym_l4`, symmetric
//!   in source/destination address and port), the same basis (bits 0..31)
//!   and the same bucket list: the same (weight, instance) in the same
//!   order. The symmetric hash gives `p` and `p'` one value; OVS maps a
//!   value to a bucket by a function of the bucket list only; so `p` and
//!   `p'` reach the same instance although they are tapped on different
//!   hosts. Any other group (e.g. `selection_method=hash,fields(…)`, which
//!   hashes the fields in order) agrees with nothing, not even itself.
//!
//! The instance a bucket reaches is where its copy is delivered (the path
//! is followed through tunnels): the VM owning that port. Sets of packets
//! are swapped exactly, clause by clause of their BDD (MACs and ARP fields
//! dropped: the reply carries `b`'s own MAC).

use crate::artifacts::Artifacts;
use crate::bridge::{End, Hop, Outcome};
use crate::checks::legit;
use crate::network::Network;
use crate::ofctl::Action;
use crate::policy::Policy;
use crate::report::{Counterexample, Packet, PathCx};
use crate::space::{show, Field, Headers, Space, ETH_IP, HEADER_FIELDS};
use biodivine_lib_bdd::{Bdd, BddPartialValuation, BddVariable};
use std::collections::BTreeMap;

/// How a tap group picks the instance of its hop.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Choice {
    /// Every bucket reaches this instance.
    One(String),
    /// Symmetric datapath hash (`dp_hash`, algorithm 1) with this basis
    /// over these (weight, instance) buckets, in order.
    Symmetric {
        basis: u32,
        buckets: Vec<(u64, String)>,
    },
    /// Not symmetric: agrees with nothing.
    Asymmetric { group: String, why: String },
}

impl Choice {
    pub fn agrees(&self, other: &Choice) -> bool {
        !matches!(self, Choice::Asymmetric { .. }) && self == other
    }

    fn describe(&self) -> String {
        match self {
            Choice::One(i) => format!("always instance {i}"),
            Choice::Symmetric { basis, buckets } => {
                let b: Vec<String> = buckets.iter().map(|(w, i)| format!("{i}(w{w})")).collect();
                format!("symmetric dp_hash basis {basis} over [{}]", b.join(", "))
            }
            Choice::Asymmetric { group, why } => format!("{group}: {why}"),
        }
    }
}

/// One tapped class of a trace: the hop, the group's choice, the packets.
struct Tap {
    hop: usize,
    choice: Choice,
    set: Bdd,
    /// `bridge group G` for messages, and the group line's `file:line`.
    group: String,
    at: String,
    path: Vec<Hop>,
}

/// The hash algorithm and basis of a group's text, if it is a dp_hash group.
fn dp_hash_param(text: &str) -> Option<u64> {
    if !text.contains("selection_method=dp_hash") {
        return None;
    }
    let v = text
        .split(',')
        .find_map(|p| p.trim().strip_prefix("selection_method_param="))
        .unwrap_or("0");
    match v.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => v.parse().ok(),
    }
}

/// Bucket weights in order (OVS's default weight is 1).
fn weights(text: &str) -> Vec<u64> {
    text.split("bucket=")
        .skip(1)
        .map(|b| {
            b.split(',')
                .find_map(|p| p.trim().strip_prefix("weight:"))
                .and_then(|w| w.parse().ok())
                .unwrap_or(1)
        })
        .collect()
}

fn instance_of(net: &Network, policy: &Policy, o: &Outcome) -> String {
    let dev = net
        .bridges
        .get(o.device as usize)
        .map_or("?", |b| b.name.as_str());
    match o.end {
        End::Deliver { port } => match policy.vm_at(dev, port) {
            Some(vm) => format!("{}/{}", vm.tenant, vm.name),
            None => format!("{dev} port {port} (no VM)"),
        },
        _ => "(not delivered)".into(),
    }
}

/// The taps on `outs`, one per (hop, bridge, group), with the group's choice.
fn taps(net: &Network, policy: &Policy, outs: &[Outcome]) -> Vec<Tap> {
    // (hop, bridge, group) → (set, bucket → instance, a path)
    type Seen = (Bdd, BTreeMap<u32, String>, Vec<Hop>);
    let mut seen: BTreeMap<(usize, u32, u32), Seen> = BTreeMap::new();
    for o in outs {
        let mut hop_groups: Option<(u32, Vec<u32>)> = None;
        for h in &o.path {
            match *h {
                Hop::Flow { bridge, handle } => {
                    let Some(f) = net.bridges[bridge as usize].flow(handle) else {
                        continue;
                    };
                    if f.text.table == 45 {
                        let gs = f
                            .actions
                            .iter()
                            .filter_map(|a| match a {
                                Action::Group(g) => Some(*g),
                                _ => None,
                            })
                            .collect();
                        hop_groups = Some((bridge, gs));
                    }
                }
                Hop::Group {
                    bridge,
                    group,
                    bucket,
                } => {
                    let Some((b45, gs)) = &hop_groups else {
                        continue;
                    };
                    if *b45 != bridge {
                        continue;
                    }
                    let Some(hop) = gs.iter().position(|g| *g == group) else {
                        continue;
                    };
                    let e = seen
                        .entry((hop, bridge, group))
                        .or_insert_with(|| (net.space.none(), BTreeMap::new(), o.path.clone()));
                    e.0 = e.0.or(&o.pkt.set);
                    e.1.insert(bucket, instance_of(net, policy, o));
                    break;
                }
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    for ((hop, bridge, gid), (set, by_bucket, path)) in seen {
        let b = &net.bridges[bridge as usize];
        let Some(g) = b.groups.get(&gid) else {
            continue;
        };
        let name = format!("{} group {gid}", b.name);
        let n = g.buckets.len();
        let inst: Vec<String> = (0..n as u32)
            .map(|i| {
                by_bucket
                    .get(&i)
                    .cloned()
                    .unwrap_or_else(|| "(not delivered)".into())
            })
            .collect();
        let choice = if n > 0 && inst.iter().all(|i| i == &inst[0]) {
            Choice::One(inst[0].clone())
        } else if g.text.kind != "select" {
            Choice::Asymmetric {
                group: name.clone(),
                why: format!("type {} copies to every bucket", g.text.kind),
            }
        } else {
            match dp_hash_param(&g.text.buckets) {
                Some(p) if p >> 32 == 1 => Choice::Symmetric {
                    basis: p as u32,
                    buckets: weights(&g.text.buckets).into_iter().zip(inst).collect(),
                },
                Some(p) => Choice::Asymmetric {
                    group: name.clone(),
                    why: format!("dp_hash algorithm {} is not the symmetric one (1)", p >> 32),
                },
                None => Choice::Asymmetric {
                    group: name.clone(),
                    why: "its selection method does not hash symmetrically (only dp_hash with algorithm 1 does)".into(),
                },
            }
        };
        out.push(Tap {
            hop,
            choice,
            set,
            group: name,
            at: g.text.at.clone(),
            path,
        });
    }
    out
}

/// First BDD variable of each header field (the layout of [`Space`]).
fn offsets() -> BTreeMap<Field, usize> {
    let mut at = 0usize;
    let mut m = BTreeMap::new();
    for f in HEADER_FIELDS {
        m.insert(f, at);
        at += f.width() as usize;
    }
    m
}

/// The replies of `set`: source and destination address and port swapped;
/// Ethernet type and IP protocol kept; MACs and ARP fields free.
pub fn swap_directions(space: &Space, set: &Bdd) -> Bdd {
    let off = offsets();
    let pairs = [
        (Field::NwSrc, Field::NwDst),
        (Field::NwDst, Field::NwSrc),
        (Field::TpSrc, Field::TpDst),
        (Field::TpDst, Field::TpSrc),
        (Field::DlType, Field::DlType),
        (Field::NwProto, Field::NwProto),
    ];
    // variable index → index in the reply
    let mut map: BTreeMap<usize, usize> = BTreeMap::new();
    for (from, to) in pairs {
        for b in 0..from.width() as usize {
            map.insert(off[&from] + b, off[&to] + b);
        }
    }
    let drop: Vec<BddVariable> = (0..space.vars.num_vars() as usize)
        .filter(|i| !map.contains_key(i))
        .map(BddVariable::from_index)
        .collect();
    let projected = set.exists(&drop);
    let mut out = space.none();
    for clause in projected.sat_clauses() {
        let mut c = BddPartialValuation::empty();
        for (v, val) in clause.to_values() {
            if let Some(&to) = map.get(&v.to_index()) {
                c.set_value(BddVariable::from_index(to), val);
            }
        }
        out = out.or(&space.vars.mk_conjunctive_clause(&c));
    }
    out
}

fn five_tuple(h: &Headers) -> String {
    let proto = match h.get(Field::NwProto) {
        6 => "tcp".to_string(),
        17 => "udp".to_string(),
        p => format!("proto {p}"),
    };
    format!(
        "{proto} {}:{} → {}:{}",
        show(Field::NwSrc, h.get(Field::NwSrc)),
        h.get(Field::TpSrc),
        show(Field::NwDst, h.get(Field::NwDst)),
        h.get(Field::TpDst)
    )
}

pub(crate) fn path_text(net: &Network, a: &Artifacts, path: &[Hop], end: String) -> PathCx {
    let mut hops = Vec::new();
    for h in path {
        match *h {
            Hop::Flow { bridge, handle } => {
                let b = &net.bridges[bridge as usize];
                let Some(f) = b.cite(a, handle) else {
                    continue;
                };
                hops.push(format!(
                    "{} table={} priority={} {} actions={}  [{}]",
                    b.name, f.table, f.priority, f.matches, f.actions, f.at
                ));
            }
            Hop::Group {
                bridge,
                group,
                bucket,
            } => {
                let b = &net.bridges[bridge as usize];
                let at = b.groups.get(&group).map_or("", |g| g.text.at.as_str());
                hops.push(format!("{} group {group} bucket {bucket}  [{at}]", b.name));
            }
            Hop::Underlay { to } => {
                hops.push(format!("underlay → {}", std::net::Ipv4Addr::from(to)))
            }
            Hop::Lb { .. } => hops.push("load balancer".into()),
        }
    }
    PathCx { hops, end }
}

/// True if some flow of table 45 fans out to groups (an NF tap exists).
pub fn has_taps(net: &Network) -> bool {
    net.bridges.iter().any(bridge_has_taps)
}

/// [`has_taps`] of one bridge (`table_recheck.rs` keeps it per bridge).
pub fn bridge_has_taps(b: &crate::bridge::Bridge) -> bool {
    b.flows
        .iter()
        .any(|f| f.text.table == 45 && f.actions.iter().any(|a| matches!(a, Action::Group(_))))
}

/// Checks AFF-3; one counterexample per (sender, receiver, hop, choice)
/// that breaks it, at most `limit` per sender pair.
pub fn aff3(net: &Network, art: &Artifacts, policy: &Policy, limit: usize) -> Vec<Counterexample> {
    let mut out = Vec::new();
    if !has_taps(net) {
        return out;
    }
    let space = &net.space;
    let l4 = space.field_eq(Field::DlType, ETH_IP, 0xffff).and(
        &space
            .field_eq(Field::NwProto, 6, 0xff)
            .or(&space.field_eq(Field::NwProto, 17, 0xff)),
    );
    for a in &policy.vms {
        let outs = net.trace(a, legit(space, a).and(&l4), false);
        let fwd = taps(net, policy, &outs);
        if fwd.is_empty() {
            continue;
        }
        for b in &policy.vms {
            if b.tenant != a.tenant || (b.host == a.host && b.port == a.port) {
                continue;
            }
            let to_b = space.field_eq(Field::NwDst, u128::from(b.ip), 0xffff_ffff);
            let fwd_b: Vec<(&Tap, Bdd)> = fwd
                .iter()
                .map(|t| (t, t.set.and(&to_b)))
                .filter(|(_, s)| !s.is_false())
                .collect();
            if fwd_b.is_empty() {
                continue;
            }
            let all = fwd_b.iter().fold(space.none(), |acc, (_, s)| acc.or(s));
            let replies = swap_directions(space, &all).and(&legit(space, b));
            let rev = taps(net, policy, &net.trace(b, replies, false));
            let mut found = 0;
            for (t, s) in &fwd_b {
                let want = swap_directions(space, s).and(&legit(space, b));
                let ok = rev
                    .iter()
                    .filter(|r| r.hop == t.hop && t.choice.agrees(&r.choice))
                    .fold(space.none(), |acc, r| acc.or(&r.set));
                let bad = want.and_not(&ok);
                // prefer an ordinary client port for the reply's destination
                let client = bad.and(&space.field_eq(Field::TpDst, 40000, 0xffff));
                let pick = if client.is_false() { &bad } else { &client };
                let Some(reply) = space.witness(pick) else {
                    continue;
                };
                found += 1;
                if found > limit {
                    break;
                }
                out.push(counterexample(net, art, a, b, t, &rev, &reply));
            }
        }
    }
    out
}

fn counterexample(
    net: &Network,
    art: &Artifacts,
    a: &crate::policy::Vm,
    b: &crate::policy::Vm,
    t: &Tap,
    rev: &[Tap],
    reply: &Headers,
) -> Counterexample {
    let space = &net.space;
    let mut fwd: Vec<(Field, u128)> = reply.0.clone();
    for (f, v) in fwd.iter_mut() {
        *v = match f {
            Field::NwSrc => reply.get(Field::NwDst),
            Field::NwDst => reply.get(Field::NwSrc),
            Field::TpSrc => reply.get(Field::TpDst),
            Field::TpDst => reply.get(Field::TpSrc),
            Field::DlSrc => u128::from(a.mac),
            _ => *v,
        };
    }
    let fwd = Headers(fwd);
    let single = reply.0.iter().fold(space.all(), |acc, (f, x)| {
        acc.and(&space.field_eq(*f, *x, f.mask()))
    });
    let other = rev
        .iter()
        .find(|r| r.hop == t.hop && !r.set.and(&single).is_false());
    let reply_says = match other {
        Some(r) => format!("is tapped by {} ({})", r.group, r.choice.describe()),
        None => format!("is not tapped at hop {}", t.hop),
    };
    let mut paths = vec![path_text(
        net,
        art,
        &t.path,
        format!("forward copy: {}", t.choice.describe()),
    )];
    let mut cites = vec![
        format!("{}  the sending VM {}/{}", a.at, a.tenant, a.name),
        format!("{}  the replying VM {}/{}", b.at, b.tenant, b.name),
        format!("{}  {}", t.at, t.group),
    ];
    if let Some(r) = other {
        paths.push(path_text(
            net,
            art,
            &r.path,
            format!("reply copy: {}", r.choice.describe()),
        ));
        cites.push(format!("{}  {}", r.at, r.group));
    }
    Counterexample {
        invariant: "AFF-3".into(),
        key: None,
        summary: format!(
            "{}/{} → {}/{}: {} is tapped at hop {} by {} ({}); its reply {} {}",
            a.tenant,
            a.name,
            b.tenant,
            b.name,
            five_tuple(&fwd),
            t.hop,
            t.group,
            t.choice.describe(),
            five_tuple(reply),
            reply_says
        ),
        packet: Some(Packet::from_headers(
            format!("{} port {} ({}/{})", a.host, a.port, a.tenant, a.name),
            &fwd,
        )),
        paths,
        cites,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swapping_twice_is_the_identity_on_l3_l4() {
        let s = Space::new();
        let set = s
            .field_eq(Field::DlType, ETH_IP, 0xffff)
            .and(&s.field_eq(Field::NwProto, 6, 0xff))
            .and(&s.field_eq(Field::NwSrc, 0x0a02_0100, 0xffff_ff00))
            .and(&s.field_eq(Field::NwDst, 0x0a02_0215, 0xffff_ffff))
            .and(&s.field_range(Field::TpDst, 5000, 5432));
        let r = swap_directions(&s, &set);
        let w = s.witness(&r).unwrap();
        assert_eq!(w.get(Field::NwSrc), 0x0a02_0215);
        assert_eq!(w.get(Field::NwDst) & 0xffff_ff00, 0x0a02_0100);
        assert!((5000..=5432).contains(&w.get(Field::TpSrc)));
        assert_eq!(swap_directions(&s, &r), set);
    }

    #[test]
    fn only_symmetric_dp_hash_agrees() {
        let sym = Choice::Symmetric {
            basis: 0,
            buckets: vec![(1, "t/a".into()), (1, "t/b".into())],
        };
        let other_order = Choice::Symmetric {
            basis: 0,
            buckets: vec![(1, "t/b".into()), (1, "t/a".into())],
        };
        let asym = Choice::Asymmetric {
            group: "h1 group 7".into(),
            why: "hash fields".into(),
        };
        assert!(sym.agrees(&sym.clone()));
        assert!(!sym.agrees(&other_order));
        assert!(!asym.agrees(&asym.clone()));
        assert_eq!(
            dp_hash_param(
                "selection_method=dp_hash,selection_method_param=4294967297,bucket=output:1"
            ),
            Some((1 << 32) | 1)
        );
        assert_eq!(
            dp_hash_param("selection_method=hash,fields(ip_src),bucket=output:1"),
            None
        );
        assert_eq!(
            weights(
                "selection_method=dp_hash,bucket=weight:3,actions=output:1,bucket=actions=output:2"
            ),
            vec![3, 1]
        );
    }
}
