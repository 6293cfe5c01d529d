//! Path invariants: ISO-1, ISO-2, ISO-3, REACH-1, ACL-1 (specs/invariants.md).
//!
//! Expects a [`Network`] and a [`Policy`]. Guarantees: for every VM with a
//! port, the set of all packets it can send is traced symbolically (one
//! trace per VM; nothing is sampled), and every outcome is checked:
//! - ISO-1: a delivery to a VM of another tenant, or to a port no VM owns,
//!   or of a packet whose source the path rewrote (a DSR reply) to a VM
//!   whose address it is not destined to;
//! - ISO-2: a delivery of a multicast packet (dst in 224.0.0.0/4) to a VM
//!   that is not an accepted member of the sender's (tenant, group);
//! - ISO-3: any packet leaving the sender's table 0 alive whose source MAC
//!   or IP (ARP: sha/spa) is not the VM's own;
//! - REACH-1 / ACL-1 (need the intent): for VMs a ≠ b of one tenant and one
//!   vnet, the IPv4 packets a sends with its own addresses to b's address
//!   that arrive at b's port with source and destination unrewritten equal
//!   exactly those the tenant's ACLs allow. REACH-1 = allowed but not
//!   delivered; ACL-1 = delivered but denied;
//! - REACH-1 for multicast (needs the intent): every accepted member of a
//!   group receives, at its port, every packet a member or declared sender
//!   of the group sends to it that the tenant's ACLs allow.
//!
//! Each violation carries the set of offending packets; `report.rs` turns
//! it into a concrete counterexample.
//!
//! The unit of work is one sending VM ([`check_vm`]): its results depend
//! only on the parts of the network its traces read (its [`Footprint`]) and
//! on its tenant's policy, which is what lets `incremental.rs` re-check
//! only the VMs a change can affect.

use crate::bridge::{End, Hop, Outcome, Val};
use crate::network::{Footprint, Network};
use crate::policy::{Acl, Policy, Vm};
use crate::space::{Field, Space, ETH_ARP, ETH_IP};
use crate::vm_index::{Slots, VmIndex};
use biodivine_lib_bdd::Bdd;
use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};

/// One violation, before it becomes a counterexample.
#[derive(Clone)]
pub struct Violation {
    pub invariant: &'static str,
    pub summary: String,
    /// The sending VM (index into policy.vms).
    pub from: usize,
    /// The offending packets (original headers).
    pub set: Bdd,
    /// The VM the packets reach or should reach, if any.
    pub to: Option<usize>,
}

/// Violations found per invariant, capped at `limit` each (counts are exact).
#[derive(Default)]
pub struct PathResults {
    pub violations: Vec<Violation>,
    pub counts: BTreeMap<&'static str, usize>,
    pub pairs_checked: usize,
    pub outcomes: usize,
}

impl PathResults {
    fn add(&mut self, limit: usize, v: Violation) {
        let c = self.counts.entry(v.invariant).or_default();
        *c += 1;
        if *c <= limit {
            self.violations.push(v);
        }
    }
}

pub fn legit(space: &Space, vm: &Vm) -> Bdd {
    let mac = space.field_eq(Field::DlSrc, u128::from(vm.mac), Field::DlSrc.mask());
    let ip = space
        .field_eq(Field::DlType, ETH_IP, 0xffff)
        .and(&space.field_eq(Field::NwSrc, u128::from(vm.ip), 0xffff_ffff));
    let arp = space
        .field_eq(Field::DlType, ETH_ARP, 0xffff)
        .and(&space.field_eq(Field::ArpSpa, u128::from(vm.ip), 0xffff_ffff))
        .and(&space.field_eq(Field::ArpSha, u128::from(vm.mac), Field::ArpSha.mask()));
    mac.and(&ip.or(&arp))
}

fn prefix(space: &Space, f: Field, (net, len): (u32, u8)) -> Bdd {
    let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
    space.field_eq(f, u128::from(net), u128::from(mask))
}

/// The packets (over nw_src, nw_dst, nw_proto, tp_dst) a tenant's ACLs allow.
pub fn acl_allowed(space: &Space, acls: &[Acl], default_allow: bool) -> Bdd {
    let mut rules: Vec<&Acl> = acls.iter().collect();
    rules.sort_by_key(|a| std::cmp::Reverse(a.priority));
    let (mut allowed, mut covered) = (space.none(), space.none());
    for r in rules {
        let mut m = prefix(space, Field::NwSrc, r.src).and(&prefix(space, Field::NwDst, r.dst));
        if r.proto != 0 {
            m = m.and(&space.field_eq(Field::NwProto, u128::from(r.proto), 0xff));
            if (r.proto == 6 || r.proto == 17) && !(r.lo == 0 && r.hi == 65535) {
                m = if r.lo > r.hi {
                    space.none()
                } else {
                    m.and(&space.field_range(Field::TpDst, u128::from(r.lo), u128::from(r.hi)))
                };
            }
        }
        if r.allow {
            allowed = allowed.or(&m.and_not(&covered));
        }
        covered = covered.or(&m);
    }
    if default_allow {
        allowed = allowed.or(&covered.not());
    }
    allowed
}

/// What the per-VM checks share: lookups by port and tenant, the multicast
/// and IPv4 sets, each tenant's ACL set (built once, on first use).
pub struct Shared<'p> {
    /// The VMs by port and tenant: built here for one policy, or the
    /// incremental verifier's, kept across updates and named by slot.
    vms: Cow<'p, VmIndex>,
    slots: Slots<'p>,
    multicast: Bdd,
    ip: Bdd,
    acl: RefCell<HashMap<&'p str, Bdd>>,
}

impl<'p> Shared<'p> {
    pub fn new(space: &Space, policy: &'p Policy) -> Shared<'p> {
        Shared::with(space, Cow::Owned(VmIndex::of(&policy.vms)), Slots::Identity)
    }

    /// With an index kept across updates (`vms`, by slot) and the map
    /// from its slots to the current policy's indices.
    pub fn kept(space: &Space, vms: &'p VmIndex, vm_of: &'p [Option<usize>]) -> Shared<'p> {
        Shared::with(space, Cow::Borrowed(vms), Slots::Map(vm_of))
    }

    fn with(space: &Space, vms: Cow<'p, VmIndex>, slots: Slots<'p>) -> Shared<'p> {
        Shared {
            vms,
            slots,
            multicast: space
                .field_eq(Field::DlType, ETH_IP, 0xffff)
                .and(&space.field_eq(Field::NwDst, 0xe000_0000, 0xf000_0000)),
            ip: space.field_eq(Field::DlType, ETH_IP, 0xffff),
            acl: RefCell::new(HashMap::new()),
        }
    }

    /// The indices of a tenant's VMs, in order.
    pub fn tenant_vms(&self, tenant: &str) -> Vec<usize> {
        self.vms.tenant(tenant, self.slots)
    }

    /// The index of the VM that owns a port (the first one there, as
    /// `Policy::vm_at` says).
    fn owner(&self, host: &str, port: u32) -> Option<usize> {
        self.vms.owner(host, port, self.slots)
    }

    fn acl(&self, space: &Space, policy: &'p Policy, tenant: &'p str) -> Bdd {
        self.acl
            .borrow_mut()
            .entry(tenant)
            .or_insert_with(|| {
                acl_allowed(
                    space,
                    policy.acls.get(tenant).map(|r| r.as_slice()).unwrap_or(&[]),
                    *policy.acl_default.get(tenant).unwrap_or(&true),
                )
            })
            .clone()
    }
}

/// Everything the path invariants found for one sending VM, and what of
/// the network its traces read.
#[derive(Clone)]
pub struct VmChecked {
    /// Every violation (uncapped), in the order they were found.
    pub violations: Vec<Violation>,
    pub outcomes: usize,
    pub pairs: usize,
    pub footprint: Footprint,
    /// The trace's outcomes ([`normalize`]d), which the checks read: kept so
    /// an update can replace only the part of the packets a change touched.
    pub traced: Vec<Outcome>,
    /// How many of `violations` (the first ones) the outcome checks found;
    /// ISO-3 and the pair checks follow them.
    pub outcome_violations: usize,
    /// What the outcome checks found that ISO-3 and the pair checks read
    /// ([`OutcomeChecks`]): kept so a change of the tenant's ACLs re-runs
    /// only the pairs, and a partial re-trace combines only its own packets.
    pub spoof: Bdd,
    pub delivered: BTreeMap<usize, Bdd>,
}

/// What the checks of each outcome (ISO-1, ISO-2, the forged packets of
/// ISO-3) found for one sending VM, and the packets it delivered to each
/// peer, which REACH-1/ACL-1 compare with the ACLs. Every set here is a
/// union over outcomes of the outcome's packets intersected with a set
/// fixed by the policy, so for disjoint parts of a VM's packets it is the
/// union of the parts' (what `incremental.rs` relies on).
pub struct OutcomeChecks {
    /// ISO-1/ISO-2 violations, in outcome order.
    pub violations: Vec<Violation>,
    /// Packets leaving alive with a source address that is not the VM's own.
    pub spoof: Bdd,
    /// Per peer VM (index into `policy.vms`): the IPv4 packets delivered to
    /// its port and address with source and destination unrewritten.
    pub delivered: BTreeMap<usize, Bdd>,
    /// The VM's own source addresses ([`legit`]), which the pair checks
    /// read too: built once per check.
    pub ok_src: Bdd,
}

/// Runs every path invariant.
pub fn run(net: &Network, policy: &Policy, limit: usize) -> PathResults {
    run_first(net, policy, limit, policy.vms.len())
}

/// The path invariants for the first `n` sending VMs only (every VM is
/// still a possible receiver): a prefix to measure or profile a scenario
/// too large to wait for in full (`examples/full_verify.rs --vms N`).
pub fn run_first(net: &Network, policy: &Policy, limit: usize, n: usize) -> PathResults {
    let shared = Shared::new(&net.space, policy);
    let mut res = PathResults::default();
    // a diagnostic for runs too long to wait for: VMs done so far, on stderr
    let progress = std::env::var_os("NETC_VERIFY_CACHE_SIZES").is_some();
    let t0 = std::time::Instant::now();
    for ai in 0..n.min(policy.vms.len()) {
        if progress && ai % 2000 == 0 {
            eprintln!(
                "paths: {ai} of {} VMs after {} ms",
                policy.vms.len(),
                t0.elapsed().as_millis()
            );
        }
        // nothing keeps a footprint here: the trace notes none
        let vm = &policy.vms[ai];
        let mut none = Footprint::unrecorded();
        let outs = normalize(net.trace_reading(vm, net.space.all(), false, &mut none));
        let mut c = evaluate(net, policy, &shared, ai, outs, Footprint::default());
        c.traced = Vec::new(); // not needed once merged: free it early
        res.merge(c, limit);
    }
    res
}

impl PathResults {
    /// Adds one VM's results (the order of VMs decides which violations are kept).
    pub fn merge(&mut self, mut c: VmChecked, limit: usize) {
        self.outcomes += c.outcomes;
        self.pairs_checked += c.pairs;
        // one VM's violations in an order its paths do not decide: paths
        // are sorted by handle, and a kept path and a fresh trace can name
        // one flow by different handles, so the outcome order would pick
        // which violations `limit` keeps
        if c.violations.len() > 1 {
            c.violations.sort_by_cached_key(|v| {
                (v.invariant, v.to, v.summary.clone(), v.set.sat_witness())
            });
        }
        for v in c.violations {
            self.add(limit, v);
        }
    }
}

/// One canonical list of outcomes, whatever order the trace found them in
/// and however its packets were split: one outcome per (path, end, device),
/// its set the union, sorted by that key. A trace of all packets and the
/// splice of traces of disjoint parts of them normalize to the same list.
pub fn normalize(outs: Vec<Outcome>) -> Vec<Outcome> {
    let mut by_key: BTreeMap<(Vec<Hop>, End, u32), Outcome> = BTreeMap::new();
    for o in outs {
        match by_key.entry((o.path.clone(), o.end.clone(), o.device)) {
            std::collections::btree_map::Entry::Occupied(mut e) => {
                let u = e.get().pkt.set.or(&o.pkt.set);
                e.get_mut().pkt.set = u;
            }
            std::collections::btree_map::Entry::Vacant(e) => {
                e.insert(o);
            }
        }
    }
    by_key.into_values().collect()
}

/// The outcomes ([`normalize`]d) of the packets `set` VM `ai` sends, and
/// what of the network they read.
pub fn trace_vm(net: &Network, vm: &Vm, set: Bdd) -> (Vec<Outcome>, Footprint) {
    let mut fp = Footprint::default();
    let outs = normalize(net.trace_reading(vm, set, false, &mut fp));
    (outs, fp)
}

/// The path invariants for the packets VM `ai` sends.
pub fn check_vm<'p>(
    net: &Network,
    policy: &'p Policy,
    shared: &Shared<'p>,
    ai: usize,
) -> VmChecked {
    let (outs, fp) = trace_vm(net, &policy.vms[ai], net.space.all());
    evaluate(net, policy, shared, ai, outs, fp)
}

/// The path invariants for VM `ai`, given its trace's outcomes.
pub fn evaluate<'p>(
    net: &Network,
    policy: &'p Policy,
    shared: &Shared<'p>,
    ai: usize,
    outs: Vec<Outcome>,
    fp: Footprint,
) -> VmChecked {
    let found = check_outcomes(net, policy, shared, ai, &outs);
    conclude(&net.space, policy, shared, ai, found, outs, fp)
}

/// ISO-3 and the pair checks (REACH-1, ACL-1) of VM `ai`, given what the
/// checks of its outcomes `outs` found.
pub fn conclude<'p>(
    space: &Space,
    policy: &'p Policy,
    shared: &Shared<'p>,
    ai: usize,
    found: OutcomeChecks,
    outs: Vec<Outcome>,
    fp: Footprint,
) -> VmChecked {
    let a = &policy.vms[ai];
    let OutcomeChecks {
        violations,
        spoof,
        delivered,
        ok_src,
    } = found;
    let mut res = VmChecked {
        outcome_violations: violations.len(),
        violations,
        outcomes: outs.len(),
        pairs: 0,
        footprint: fp,
        traced: Vec::new(),
        spoof: space.none(),
        delivered: BTreeMap::new(),
    };
    if !spoof.is_false() {
        res.violations.push(Violation {
            invariant: "ISO-3",
            summary: format!(
                "{}/{} can send packets with a source address that is not its own",
                a.tenant, a.name
            ),
            from: ai,
            set: spoof.clone(),
            to: None,
        });
    }
    let res = pairs(space, policy, shared, ai, &delivered, &ok_src, res);
    VmChecked {
        traced: outs,
        spoof,
        delivered,
        ..res
    }
}

/// The checks of each outcome of VM `ai` ([`OutcomeChecks`]).
pub fn check_outcomes<'p>(
    net: &Network,
    policy: &'p Policy,
    shared: &Shared<'p>,
    ai: usize,
    outs: &[Outcome],
) -> OutcomeChecks {
    let space = &net.space;
    let a = &policy.vms[ai];
    let mut violations = Vec::new();
    let (multicast, ip) = (&shared.multicast, &shared.ip);
    let ok_src = legit(space, a);
    let mut spoof = space.none();
    let mut delivered: BTreeMap<usize, Bdd> = BTreeMap::new();
    for o in outs {
        if matches!(o.end, End::Drop { .. }) {
            continue;
        }
        let forged = o.pkt.set.and_not(&ok_src);
        if !forged.is_false() {
            spoof = spoof.or(&forged);
        }
        let End::Deliver { port } = o.end else {
            continue;
        };
        let dev = &net.bridges[o.device as usize].name;
        let target = shared.owner(dev, port);
        let Some(bi) = target else {
            if !(dev == &a.host && port == a.port) {
                violations.push(Violation {
                    invariant: "ISO-1",
                    summary: format!(
                        "{}/{} reaches port {port} of {dev}, which no VM of the intent owns",
                        a.tenant, a.name
                    ),
                    from: ai,
                    set: o.pkt.set.clone(),
                    to: None,
                });
            }
            continue;
        };
        let b = &policy.vms[bi];
        let mc = o.pkt.set.and(multicast);
        if b.tenant != a.tenant && !net.exposed(&o.path, policy, &a.tenant, &b.tenant, &b.name) {
            let (inv, set) = if mc.is_false() {
                ("ISO-1", o.pkt.set.clone())
            } else {
                ("ISO-2", mc)
            };
            violations.push(Violation {
                invariant: inv,
                summary: format!(
                    "{}/{} (tenant {}) reaches {}/{} (tenant {})",
                    a.tenant, a.name, a.tenant, b.tenant, b.name, b.tenant
                ),
                from: ai,
                set,
                to: Some(bi),
            });
            continue;
        }
        if b.tenant != a.tenant {
            continue;
        }
        if let Some(v) = misdirected(space, &o.pkt, b, ip).filter(|_| bi != ai) {
            violations.push(Violation {
                invariant: "ISO-1",
                summary: format!(
                    "{}/{}'s packets with their source rewritten to {} reach {}/{}, although they are not destined to its address {}",
                    a.tenant,
                    a.name,
                    match o.pkt.read(Field::NwSrc) {
                        Val::Const(x) => std::net::Ipv4Addr::from(x as u32).to_string(),
                        _ => "?".into(),
                    },
                    b.tenant,
                    b.name,
                    std::net::Ipv4Addr::from(b.ip)
                ),
                from: ai,
                set: v,
                to: Some(bi),
            });
        }
        if !mc.is_false() {
            let mut member_of = space.none();
            // only the sender's tenant's groups (the map is ordered by
            // tenant): scanning every group per delivery was a sixth of a
            // full verification at 100k VMs (1,000 groups)
            let own = (a.tenant.clone(), 0)..=(a.tenant.clone(), u32::MAX);
            for ((_, g), members) in policy.mcast.range(own) {
                if members.contains(&b.name) {
                    member_of =
                        member_of.or(&space.field_eq(Field::NwDst, u128::from(*g), 0xffff_ffff));
                }
            }
            let bad = mc.and_not(&member_of);
            if !bad.is_false() && bi != ai {
                violations.push(Violation {
                    invariant: "ISO-2",
                    summary: format!(
                        "a multicast packet of {}/{} reaches {}/{}, not an accepted member of that group",
                        a.tenant, a.name, b.tenant, b.name
                    ),
                    from: ai,
                    set: bad,
                    to: Some(bi),
                });
            }
        }
        let rewritten = |f| {
            matches!(o.pkt.read(f), Val::Const(_) | Val::Unknown) && o.pkt.over.contains_key(&f)
        };
        if !rewritten(Field::NwSrc) && !rewritten(Field::NwDst) {
            // to b's address (the pairs) or to a group (the members' copies)
            let to_b = space
                .field_eq(Field::NwDst, u128::from(b.ip), 0xffff_ffff)
                .and(ip)
                .or(multicast);
            let d = o.pkt.set.and(&to_b);
            let e = delivered.entry(bi).or_insert_with(|| space.none());
            *e = e.or(&d);
        }
    }
    OutcomeChecks {
        violations,
        spoof,
        delivered,
        ok_src,
    }
}

/// The packets of `pkt` delivered to VM `b` that break ISO-1's clause on
/// rewritten sources: a packet whose source address the path rewrote to a
/// constant (a DSR reply's VIP:port, a source NAT) is delivered only to the
/// VM its destination address names. `None` when every one is (or the
/// destination is unknown: a NAT'd destination cannot be judged here).
fn misdirected(space: &Space, pkt: &crate::bridge::Pkt, b: &Vm, ip: &Bdd) -> Option<Bdd> {
    if !matches!(pkt.over.get(&Field::NwSrc), Some(Val::Const(_))) {
        return None;
    }
    let bad = match pkt.read(Field::NwDst) {
        Val::Const(d) if d == u128::from(b.ip) => return None,
        Val::Const(_) => pkt.set.and(ip),
        Val::Alias(f) => pkt
            .set
            .and(ip)
            .and_not(&space.field_eq(f, u128::from(b.ip), 0xffff_ffff)),
        Val::Unknown => return None,
    };
    (!bad.is_false()).then_some(bad)
}

/// VM `vm` of `tenant`'s DSR replies (proto, target port), in set order:
/// its own range of the sorted set. (A scan of every VM's replies per
/// checked VM grew with the network: ~90k entries at 100k VMs, read for
/// each of the ~10 VMs an ACL change re-checks and for every VM in full.)
fn dsr_replies<'p>(
    policy: &'p Policy,
    tenant: &str,
    vm: &str,
) -> impl Iterator<Item = (u8, u16)> + 'p {
    let key = |proto, port| (tenant.to_string(), vm.to_string(), proto, port);
    policy
        .dsr
        .range(key(0, 0)..=key(u8::MAX, u16::MAX))
        .map(|(_, _, proto, port)| (*proto, *port))
}

/// REACH-1 and ACL-1 for VM `ai` and each peer, given what it delivered.
fn pairs<'p>(
    space: &Space,
    policy: &'p Policy,
    shared: &Shared<'p>,
    ai: usize,
    delivered: &BTreeMap<usize, Bdd>,
    ok_src: &Bdd,
    mut res: VmChecked,
) -> VmChecked {
    let a = &policy.vms[ai];
    let ip = &shared.ip;
    if !policy.from_intent {
        return res;
    }
    let acl = shared.acl(space, policy, a.tenant.as_str());
    let mut from_a = ok_src.and(ip);
    for (proto, port) in dsr_replies(policy, &a.tenant, &a.name) {
        let reply = space
            .field_eq(Field::NwProto, u128::from(proto), 0xff)
            .and(&space.field_eq(Field::TpSrc, u128::from(port), 0xffff));
        from_a = from_a.and_not(&reply);
    }
    res = members_reached(space, policy, shared, ai, delivered, &from_a, &acl, res);
    let Some(vnet) = policy.vnet_of(&a.tenant, a.ip) else {
        return res;
    };
    for bi in shared.tenant_vms(&a.tenant) {
        let b = &policy.vms[bi];
        if bi == ai || policy.vnet_of(&b.tenant, b.ip) != Some(vnet) {
            continue;
        }
        res.pairs += 1;
        let to_b = from_a.and(&space.field_eq(Field::NwDst, u128::from(b.ip), 0xffff_ffff));
        let allowed = to_b.and(&acl);
        let none = space.none();
        let d = delivered.get(&bi).unwrap_or(&none).and(&to_b);
        let lost = allowed.and_not(&d);
        if !lost.is_false() {
            res.violations.push(Violation {
                invariant: "REACH-1",
                summary: format!(
                    "{}/{} → {}/{}: packets the ACLs allow are not delivered",
                    a.tenant, a.name, b.tenant, b.name
                ),
                from: ai,
                set: lost,
                to: Some(bi),
            });
        }
        let extra = d.and_not(&allowed);
        if !extra.is_false() {
            res.violations.push(Violation {
                invariant: "ACL-1",
                summary: format!(
                    "{}/{} → {}/{}: packets the ACLs deny are delivered",
                    a.tenant, a.name, b.tenant, b.name
                ),
                from: ai,
                set: extra,
                to: Some(bi),
            });
        }
    }
    res
}

/// REACH-1 for multicast: for every group of `a`'s tenant that `a` is a
/// member or a declared sender of, every other accepted member receives
/// every packet `a` sends to the group with its own addresses that the
/// tenant's ACLs allow (`from_a`: DSR replies excepted, as for the pairs).
/// A group bucket, a switch replica or a member's host flow lost is a
/// member that misses its copy.
#[allow(clippy::too_many_arguments)]
fn members_reached<'p>(
    space: &Space,
    policy: &'p Policy,
    shared: &Shared<'p>,
    ai: usize,
    delivered: &BTreeMap<usize, Bdd>,
    from_a: &Bdd,
    acl: &Bdd,
    mut res: VmChecked,
) -> VmChecked {
    let a = &policy.vms[ai];
    let own = (a.tenant.clone(), 0)..=(a.tenant.clone(), u32::MAX);
    let mut peers: Option<Vec<usize>> = None;
    for ((_, g), members) in policy.mcast.range(own) {
        let sends = members.contains(&a.name)
            || policy
                .mcast_senders
                .get(&(a.tenant.clone(), *g))
                .is_some_and(|s| s.contains(&a.name));
        if !sends {
            continue;
        }
        let want = from_a
            .and(&space.field_eq(Field::NwDst, u128::from(*g), 0xffff_ffff))
            .and(acl);
        if want.is_false() {
            continue;
        }
        let peers = peers.get_or_insert_with(|| shared.tenant_vms(&a.tenant));
        for &bi in peers.iter() {
            let b = &policy.vms[bi];
            if bi == ai || !members.contains(&b.name) {
                continue;
            }
            let none = space.none();
            let lost = want.and_not(delivered.get(&bi).unwrap_or(&none));
            if !lost.is_false() {
                res.violations.push(Violation {
                    invariant: "REACH-1",
                    summary: format!(
                        "{}/{} → group {} of tenant {}: member {}/{} does not receive packets the ACLs allow",
                        a.tenant,
                        a.name,
                        std::net::Ipv4Addr::from(*g),
                        a.tenant,
                        b.tenant,
                        b.name
                    ),
                    from: ai,
                    set: lost,
                    to: Some(bi),
                });
            }
        }
    }
    res
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::sync::Arc;

    proptest! {
        /// A VM's DSR replies read from its range of the set are exactly
        /// the entries a scan of every VM's keeps, in the same order (names
        /// that are prefixes of others drawn, at the range's edges).
        #[test]
        fn dsr_range_is_the_scan(
            rows in proptest::collection::vec((0usize..4, 0usize..4, any::<u8>(), any::<u16>()), 0..30),
            t in 0usize..4,
            v in 0usize..4,
        ) {
            let names = ["a", "a2", "ab", ""];
            let mut p = Policy::default();
            let dsr = Arc::make_mut(&mut p.dsr);
            for &(ti, vi, proto, port) in &rows {
                dsr.insert((names[ti].to_string(), names[vi].to_string(), proto, port));
            }
            let scan: Vec<(u8, u16)> = p
                .dsr
                .iter()
                .filter(|(x, y, _, _)| x == names[t] && y == names[v])
                .map(|(_, _, proto, port)| (*proto, *port))
                .collect();
            let range: Vec<(u8, u16)> = dsr_replies(&p, names[t], names[v]).collect();
            prop_assert_eq!(range, scan);
        }
    }

    proptest! {
        /// The violations kept under the limit do not depend on the order
        /// a VM's outcomes gave them in (a kept result and a fresh trace
        /// sort their outcomes by handles, which can differ).
        #[test]
        fn kept_violations_do_not_follow_outcome_order(
            found in proptest::collection::vec((0usize..2, proptest::option::of(0usize..3), 0u16..4), 1..6),
            limit in 1usize..4,
            rotate in 0usize..6,
        ) {
            let space = Space::new();
            let violations: Vec<Violation> = found
                .iter()
                .map(|&(inv, to, port)| Violation {
                    invariant: ["ISO-1", "ISO-2"][inv],
                    summary: format!("reaches {to:?}"),
                    from: 0,
                    set: space.field_eq(Field::TpDst, u128::from(port), 0xffff),
                    to,
                })
                .collect();
            let kept = |vs: Vec<Violation>| {
                let mut r = PathResults::default();
                r.merge(
                    VmChecked {
                        violations: vs,
                        outcomes: 0,
                        pairs: 0,
                        footprint: Footprint::default(),
                        traced: Vec::new(),
                        outcome_violations: 0,
                        spoof: space.none(),
                        delivered: BTreeMap::new(),
                    },
                    limit,
                );
                r.violations
                    .iter()
                    .map(|v| (v.invariant, v.to, v.summary.clone(), v.set.sat_witness()))
                    .collect::<Vec<_>>()
            };
            let mut other = violations.clone();
            other.rotate_left(rotate % violations.len());
            other.reverse();
            prop_assert_eq!(kept(violations), kept(other));
        }
    }
}
