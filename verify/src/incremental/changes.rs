//! What changed between two generations, as the footprints name it, and the policy diff.
//!
//! Expects the diff of an update (bridges rebuilt, load-balancer entries,
//! addresses, the policy's parts). Guarantees: [`Changes::affected`] is a
//! superset of the packets of a VM (by its footprint) whose outcome the
//! change can alter; `policy_changes` names every VM, tenant, VIP and
//! backend whose policy differs, reading only what the two generations do
//! not share (a shared record or map is equal without being read).

use super::BridgeChange;
use crate::bridge::{End, Hop, Outcome, Val};
use crate::network::Footprint;
use crate::ofctl::Constraint;
use crate::policy::{shared_eq, Acl, Policy, Vm};
use crate::space::{Field, Space};
use biodivine_lib_bdd::Bdd;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::ops::Bound::{Excluded, Included, Unbounded};
use std::sync::Arc;

/// What changed between two generations, as the footprints name it.
#[derive(Default)]
pub(super) struct Changes {
    pub(super) bridges: BTreeMap<String, BridgeChange>,
    pub(super) addresses: BTreeSet<u32>,
    /// (instance, address) whose entries changed; address `None` = any
    /// (a row of the instance that does not parse).
    pub(super) instances: BTreeMap<String, BTreeSet<Option<u32>>>,
    /// Fan-out tun_ids whose set of accepting bridges may have changed
    /// (`None` inside = any tun_id).
    pub(super) fanout: BTreeSet<Option<u128>>,
    /// Ports whose owner (the first VM there) may have changed.
    pub(super) ports: BTreeSet<(String, u32)>,
    /// `ports` as (bridge index, port), for the per-VM scan.
    pub(super) port_ids: HashSet<(u32, u32)>,
    /// VMs (tenant, name) whose own record changed: traced again in full.
    pub(super) vms: BTreeSet<(String, String)>,
    /// Their (VNI, address), old and new: what a tunnel row names.
    pub(super) vm_addrs: BTreeSet<(u64, u32)>,
    /// Tenants whose policy (VMs, vnets, ACLs, multicast, DSR) changed:
    /// their VMs' pair checks (REACH-1/ACL-1) run again.
    pub(super) tenants: BTreeSet<String>,
    /// Of those, tenants whose multicast groups changed, which the checks
    /// of each outcome read (ISO-2): their VMs' outcomes are checked again.
    pub(super) mcast_tenants: BTreeSet<String>,
    /// VIPs or their backends changed: what a load-balancer hop exposes.
    pub(super) exposures: bool,
    /// `instances` as footprint keys, built once per update
    /// ([`Changes::key_instances`]): the (instance, address) entries, and
    /// the first and last key of each instance changed as a whole.
    pub(super) lb_keys: Vec<(String, u32)>,
    pub(super) lb_ranges: Vec<((String, u32), (String, u32))>,
}

impl Changes {
    pub(super) fn key_instances(&mut self) {
        for (i, at) in &self.instances {
            if at.contains(&None) {
                self.lb_ranges.push(((i.clone(), 0), (i.clone(), u32::MAX)));
            } else {
                self.lb_keys
                    .extend(at.iter().flatten().map(|a| (i.clone(), *a)));
            }
        }
    }

    /// The packets (original headers) of a VM whose outcomes the change
    /// can alter, of those its footprint says read a changed part: at a
    /// changed bridge, those that reached a table with values an added or
    /// removed flow can match (intersected with that flow's match, seen
    /// through what the path wrote), a table that changed as a whole, or a
    /// changed group; those sent to a changed address, instance or fan-out.
    /// Every other packet takes the same path in both generations.
    pub(super) fn affected(
        &self,
        space: &Space,
        fp: &Footprint,
        why: &mut BTreeSet<&'static str>,
    ) -> Bdd {
        let mut h = space.none();
        let mut met = |h: &mut Bdd, b: &Bdd, kind: &'static str| {
            if !b.is_false() {
                why.insert(kind);
                *h = h.or(b);
            }
        };
        for (name, bc) in &self.bridges {
            let Some(r) = fp.bridges.get(name) else {
                continue;
            };
            // only the changed tables' reads (keys sort by table first)
            let changed: BTreeSet<u8> = bc.tables.iter().chain(bc.flows.keys()).copied().collect();
            for t in changed {
                let from = (t, Vec::new());
                let to = match t.checked_add(1) {
                    Some(n) => Excluded((n, Vec::new())),
                    None => Unbounded,
                };
                for ((_, key), reached) in r.tables.range((Included(from), to)) {
                    if bc.tables.contains(&t) {
                        met(&mut h, reached, "table");
                        continue;
                    }
                    for m in bc.flows.get(&t).into_iter().flatten() {
                        if let Some(b) = seen_through(space, key, m) {
                            met(&mut h, &reached.and(&b), "flow");
                        }
                    }
                }
            }
            for g in &bc.groups {
                if let Some(reached) = r.groups.get(g) {
                    met(&mut h, reached, "group");
                }
            }
        }
        // each loop runs over the (few) changes, looking the footprint up:
        // a footprint names hundreds of addresses and Mux entries, and every
        // VM's is read on every update
        for a in &self.addresses {
            if let Some(reached) = fp.addresses.get(a) {
                met(&mut h, reached, "address");
            }
        }
        for k in &self.lb_keys {
            if let Some(reached) = fp.instances.get(k) {
                met(&mut h, reached, "lb");
            }
        }
        for (lo, hi) in &self.lb_ranges {
            for (_, reached) in fp.instances.range((Included(lo), Included(hi))) {
                met(&mut h, reached, "lb");
            }
        }
        if self.fanout.contains(&None) {
            for reached in fp.fanout.values() {
                met(&mut h, reached, "fanout");
            }
        } else {
            for t in self.fanout.iter().flatten() {
                if let Some(reached) = fp.fanout.get(t) {
                    met(&mut h, reached, "fanout");
                }
            }
        }
        h
    }

    /// Whether some part of the network a footprint can read changed (else
    /// every VM's [`Changes::affected`] set is empty, its footprint unread).
    pub(super) fn touches_network(&self) -> bool {
        !self.bridges.is_empty()
            || !self.addresses.is_empty()
            || !self.lb_keys.is_empty()
            || !self.lb_ranges.is_empty()
            || !self.fanout.is_empty()
    }

    /// Whether the checks of each outcome must read a VM's (unchanged)
    /// outcomes again: what they read besides the outcomes changed (the
    /// owner of a port delivered to, the tenant's multicast groups, the
    /// exposures a load-balancer hop may stand for).
    pub(super) fn rereads(&self, vm: &Vm, outs: &[Outcome]) -> bool {
        self.may_reread(vm) && self.rereads_outcomes(vm, outs)
    }

    /// Whether [`Changes::rereads`] can be true for some outcomes of `vm`
    /// (decided without them: a kept VM's outcomes stay packed otherwise).
    pub(super) fn may_reread(&self, vm: &Vm) -> bool {
        self.mcast_tenants.contains(&vm.tenant) || !self.port_ids.is_empty() || self.exposures
    }

    pub(super) fn rereads_outcomes(&self, vm: &Vm, outs: &[Outcome]) -> bool {
        self.mcast_tenants.contains(&vm.tenant)
            || (!self.port_ids.is_empty()
                && outs.iter().any(|o| match o.end {
                    End::Deliver { port } => self.port_ids.contains(&(o.device, port)),
                    _ => false,
                }))
            || (self.exposures
                && outs
                    .iter()
                    .any(|o| o.path.iter().any(|h| matches!(h, Hop::Lb { .. }))))
    }
}

/// A flow's match as a set of original packets, at a table reached with
/// these field values (`None`: it cannot match them). A field the values
/// do not name (the table had no flow matching it) may hold anything.
pub(super) fn seen_through(space: &Space, key: &[(Field, Val)], m: &[Constraint]) -> Option<Bdd> {
    let at = |c: &Constraint| key.iter().find(|(f, _)| *f == c.field).map(|(_, v)| *v);
    // a fixed value the flow cannot match rules it out before any BDD is
    // built (most changed flows, for most VMs' reads)
    if !may_match(key, m) {
        return None;
    }
    let mut b = space.all();
    for c in m {
        if let Some(Val::Alias(g)) = at(c) {
            b = b.and(&space.field_eq(g, c.value, c.mask));
        }
    }
    Some(b)
}

/// Whether a flow's match can match a table reached with these field
/// values: no value the path fixed differs from what the flow matches.
pub(super) fn may_match(key: &[(Field, Val)], m: &[Constraint]) -> bool {
    m.iter().all(|c| {
        let at = key.iter().find(|(f, _)| *f == c.field).map(|(_, v)| *v);
        !matches!(at, Some(Val::Const(x)) if (x & c.mask) != (c.value & c.mask))
    })
}

/// Policy changes: VMs (their own record, the ports they held), tenants
/// (vnets, ACLs, multicast, DSR replies), VIPs and backends (by address).
pub(super) fn policy_changes(
    old: &Policy,
    new: &Policy,
    middles: Option<&VmMiddles>,
    ch: &mut Changes,
) {
    if let Some(m) = middles {
        vm_changes(old, new, m, ch);
    }
    // tenants whose vnets, ACLs (`at` only cites: a rule moved to another
    // line is the same rule), default, multicast groups or DSR replies
    // differ; a map (or a tenant's rules) the two generations share is
    // equal without being read
    let same_rules = |a: &Arc<Vec<Acl>>, b: &Arc<Vec<Acl>>| {
        Arc::ptr_eq(a, b)
            || (a.len() == b.len()
                && a.iter().zip(b.iter()).all(|(x, y)| {
                    (x.priority, x.src, x.dst, x.proto, x.lo, x.hi, x.allow)
                        == (y.priority, y.src, y.dst, y.proto, y.lo, y.hi, y.allow)
                }))
    };
    let tenants = &mut ch.tenants;
    differing(&old.vnets, &new.vnets, PartialEq::eq, |t| {
        tenants.insert(t.clone())
    });
    differing(&old.acl_default, &new.acl_default, PartialEq::eq, |t| {
        tenants.insert(t.clone())
    });
    // a tenant without rules has none in either form (no entry, no rule)
    let rules = |p: &Policy, t: &String| p.acls.get(t).map_or(0, |r| r.len());
    differing(&old.acls, &new.acls, same_rules, |t| {
        if rules(old, t) + rules(new, t) > 0 {
            tenants.insert(t.clone());
        }
    });
    let mcast_tenants = &mut ch.mcast_tenants;
    differing(&old.mcast, &new.mcast, PartialEq::eq, |(t, _)| {
        tenants.insert(t.clone());
        mcast_tenants.insert(t.clone())
    });
    // a sender's packets must reach the members: its tenant is re-checked
    differing(
        &old.mcast_senders,
        &new.mcast_senders,
        PartialEq::eq,
        |(t, _)| {
            tenants.insert(t.clone());
        },
    );
    if !Arc::ptr_eq(&old.dsr, &new.dsr) {
        for (t, ..) in old.dsr.symmetric_difference(&new.dsr) {
            tenants.insert(t.clone());
        }
    }
    // the trace does not read them, only the check of an exposure does
    ch.exposures = !shared_eq(&old.vips, &new.vips) || !shared_eq(&old.backends, &new.backends);
}

/// The VMs whose own record may have changed (and their tenants, ports
/// and addresses), by a merge of the two VM lists: past their common
/// prefix and suffix of equal records (an update adds, removes or changes
/// a few of tens of thousands of VMs) only the middles differ, so every
/// VM there is taken as changed. A superset of what differs, never less:
/// a VM outside the middles has the same record in both lists, and a
/// port's owner (the first VM there) or the VM a (VNI, address) names
/// can change only if a middle VM is there, as every other VM at it
/// stands in the same order in both.
pub(super) fn vm_changes(old: &Policy, new: &Policy, (om, nm): &VmMiddles, ch: &mut Changes) {
    for v in old.vms[om.clone()].iter().chain(&new.vms[nm.clone()]) {
        ch.vms.insert((v.tenant.clone(), v.name.clone()));
        ch.tenants.insert(v.tenant.clone());
        ch.ports.insert((v.host.clone(), v.port));
        ch.vm_addrs.insert((v.vni, v.ip));
    }
}

/// A VM's (tenant, name): what pairs the VMs of two generations.
pub(super) fn name_of(v: &Vm) -> (&str, &str) {
    (v.tenant.as_str(), v.name.as_str())
}

/// The old and new VM lists' middles: past their common prefix and suffix
/// of equal records ([`common_ends`] under [`same_vm`]).
pub(super) type VmMiddles = (std::ops::Range<usize>, std::ops::Range<usize>);

/// The same VM record (what the checks read of it): one shared record is,
/// without reading it (an edit leaves every VM it did not touch shared).
pub(super) fn same_vm(x: &Arc<Vm>, y: &Arc<Vm>) -> bool {
    Arc::ptr_eq(x, y) || same_vm_record(x, y)
}

/// [`same_vm`] by the records' values.
pub(super) fn same_vm_record(x: &Vm, y: &Vm) -> bool {
    x.tenant == y.tenant
        && x.name == y.name
        && x.vni == y.vni
        && x.mac == y.mac
        && x.ip == y.ip
        && x.host == y.host
        && x.port == y.port
}

/// Calls `f` on each key whose value differs between `a` and `b` (under
/// `eq`; a key in one map only differs): nothing when the two share one
/// map, else one merge of the two key orders.
pub(super) fn differing<K: Ord, V, R>(
    a: &Arc<BTreeMap<K, V>>,
    b: &Arc<BTreeMap<K, V>>,
    eq: impl Fn(&V, &V) -> bool,
    mut f: impl FnMut(&K) -> R,
) {
    if Arc::ptr_eq(a, b) {
        return;
    }
    let (mut x, mut y) = (a.iter().peekable(), b.iter().peekable());
    loop {
        match (x.peek(), y.peek()) {
            (None, None) => return,
            (Some((k, _)), None) => {
                f(k);
                x.next();
            }
            (None, Some((k, _))) => {
                f(k);
                y.next();
            }
            (Some((ka, va)), Some((kb, vb))) => match ka.cmp(kb) {
                std::cmp::Ordering::Less => {
                    f(ka);
                    x.next();
                }
                std::cmp::Ordering::Greater => {
                    f(kb);
                    y.next();
                }
                std::cmp::Ordering::Equal => {
                    if !eq(va, vb) {
                        f(ka);
                    }
                    x.next();
                    y.next();
                }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::incremental::pairing::common_ends;
    use proptest::prelude::*;

    proptest! {
        /// The policy diff with the maps the two generations share (what
        /// an edit of one into the next leaves) names exactly the tenants,
        /// multicast tenants and exposures that comparing every value
        /// names: on the same policies with nothing shared, and on a
        /// reference that looks every key up in both (an edit may leave a
        /// map or a tenant's rules equal but unshared, or change only a
        /// rule's citation).
        #[test]
        fn shared_policy_diff_equals_the_full_comparison(
            seed in proptest::collection::vec((0u8..4, 0u8..3, 0u8..2), 0..10),
            edits in proptest::collection::vec((0u8..12, 0u8..4, 0u8..3), 0..4),
        ) {
            let old = small_policy(&seed);
            let new = edited_policy(&old, &edits);
            let diff = |a: &Policy, b: &Policy| {
                let mut ch = Changes::default();
                policy_changes(a, b, None, &mut ch);
                (ch.tenants, ch.mcast_tenants, ch.exposures)
            };
            let full = diff(&unshared(&old), &unshared(&new));
            prop_assert_eq!(&diff(&old, &new), &full);
            prop_assert_eq!(&reference_diff(&old, &new), &full);
        }
        /// The VM lists' common ends found with shared records (an edit
        /// leaves the VMs it did not touch shared) are those found by
        /// comparing every record's values: after inserts, removals, a
        /// record changed in place, and one replaced by an equal unshared
        /// copy.
        #[test]
        fn shared_vm_ends_equal_the_full_comparison(
            old in proptest::collection::vec((0u8..3, 0u8..3, 0u32..3), 0..12),
            edits in proptest::collection::vec((0usize..14, 0u8..4, 0u32..3), 0..4),
        ) {
            let vm = |(t, n, port): (u8, u8, u32)| {
                Arc::new(Vm {
                    tenant: tenant(t),
                    name: format!("vm{n}"),
                    vni: u64::from(t),
                    mac: u64::from(n),
                    ip: u32::from(n),
                    host: "h".into(),
                    port,
                    at: "a".into(),
                })
            };
            let old: Vec<Arc<Vm>> = old.into_iter().map(vm).collect();
            let mut new = old.clone();
            for (at, kind, x) in edits {
                let at = at.min(new.len());
                match kind {
                    0 => new.insert(at, vm((0, 9, x))),
                    1 if at < new.len() => {
                        new.remove(at);
                    }
                    2 if at < new.len() => Arc::make_mut(&mut new[at]).port += 1 + x,
                    _ if at < new.len() => new[at] = Arc::new((*new[at]).clone()),
                    _ => {}
                }
            }
            // the reference reads every record, shared or not
            prop_assert_eq!(
                common_ends(&old, &new, same_vm),
                common_ends(&old, &new, |a, b| same_vm_record(a, b))
            );
        }
    }

    fn tenant(t: u8) -> String {
        format!("t{t}")
    }

    fn rule(priority: i64, dst: u32, at: &str) -> Acl {
        Acl {
            priority,
            src: (0, 0),
            dst: (dst, 32),
            proto: 6,
            lo: 22,
            hi: 22,
            allow: false,
            at: at.into(),
        }
    }

    /// A policy of a few tenants: per (tenant, x, y) a rule, a vnet, a
    /// default, a multicast member, a DSR reply, a VIP and a backend.
    fn small_policy(seed: &[(u8, u8, u8)]) -> Policy {
        let mut p = Policy::default();
        for &(t, x, y) in seed {
            let (t, x32) = (tenant(t), u32::from(x));
            Arc::make_mut(Arc::make_mut(&mut p.acls).entry(t.clone()).or_default()).push(rule(
                i64::from(x),
                x32,
                "a",
            ));
            Arc::make_mut(&mut p.vnets)
                .entry(t.clone())
                .or_default()
                .push((x32 << 8, 24));
            Arc::make_mut(&mut p.acl_default).insert(t.clone(), y == 0);
            Arc::make_mut(&mut p.mcast)
                .entry((t.clone(), x32))
                .or_default()
                .insert(format!("vm{y}"));
            Arc::make_mut(&mut p.dsr).insert((t.clone(), format!("vm{x}"), 6, 80));
            Arc::make_mut(&mut p.vips).insert(x32, (t.clone(), y == 0));
            Arc::make_mut(&mut p.backends).insert((x32, t.clone(), format!("vm{y}")));
            Arc::make_mut(&mut p.underlay).insert(x32, format!("h{y}"));
        }
        p
    }

    /// `p` cloned (every map shared) and edited in place, as a next
    /// generation is made from the last.
    fn edited_policy(p: &Policy, edits: &[(u8, u8, u8)]) -> Policy {
        let mut q = p.clone();
        for &(kind, t, x) in edits {
            let (t, x32) = (tenant(t), u32::from(x));
            match kind {
                0 => Arc::make_mut(Arc::make_mut(&mut q.acls).entry(t).or_default())
                    .push(rule(9, x32, "b")),
                1 => {
                    let d = Arc::make_mut(&mut q.acl_default);
                    let v = !d.get(&t).copied().unwrap_or(true);
                    d.insert(t, v);
                }
                2 => Arc::make_mut(&mut q.vnets)
                    .entry(t)
                    .or_default()
                    .push((7, 32)),
                3 => {
                    Arc::make_mut(&mut q.mcast)
                        .entry((t, x32))
                        .or_default()
                        .insert("new".into());
                }
                4 => {
                    Arc::make_mut(&mut q.dsr).insert((t, "new".into(), 17, 53));
                }
                5 => {
                    Arc::make_mut(&mut q.vips).insert(100 + x32, (t, true));
                }
                6 => {
                    Arc::make_mut(&mut q.backends).insert((x32, t, "new".into()));
                }
                7 => {
                    Arc::make_mut(&mut q.underlay).insert(x32, "moved".into());
                }
                // only the citations of a tenant's rules move
                8 => {
                    if let Some(r) = Arc::make_mut(&mut q.acls).get_mut(&t) {
                        Arc::make_mut(r)
                            .iter_mut()
                            .for_each(|a| a.at = "moved".into());
                    }
                }
                // a tenant's rules emptied, its entry kept
                10 if x == 0 => {
                    if let Some(r) = Arc::make_mut(&mut q.acls).get_mut(&t) {
                        Arc::make_mut(r).clear();
                    }
                }
                // a tenant's rules equal but no longer shared
                9 => {
                    if let Some(r) = Arc::make_mut(&mut q.acls).get_mut(&t) {
                        *r = Arc::new((**r).clone());
                    }
                }
                // every map equal but no longer shared
                _ => q = unshared(&q),
            }
        }
        q
    }

    /// `p` with every map (and every tenant's rules) in its own allocation.
    fn unshared(p: &Policy) -> Policy {
        let mut q = p.clone();
        q.vms = p.vms.iter().map(|v| Arc::new((**v).clone())).collect();
        q.vnets = Arc::new((*p.vnets).clone());
        q.acls = Arc::new(
            p.acls
                .iter()
                .map(|(t, r)| (t.clone(), Arc::new((**r).clone())))
                .collect(),
        );
        q.acl_default = Arc::new((*p.acl_default).clone());
        q.mcast = Arc::new((*p.mcast).clone());
        q.mcast_senders = Arc::new((*p.mcast_senders).clone());
        q.underlay = Arc::new((*p.underlay).clone());
        q.vips = Arc::new((*p.vips).clone());
        q.backends = Arc::new((*p.backends).clone());
        q.dsr = Arc::new((*p.dsr).clone());
        q
    }

    /// The diff spelled out: every key of either map looked up in both.
    fn reference_diff(a: &Policy, b: &Policy) -> (BTreeSet<String>, BTreeSet<String>, bool) {
        let mut tenants = BTreeSet::new();
        let mut mcast = BTreeSet::new();
        for t in a.vnets.keys().chain(b.vnets.keys()) {
            if a.vnets.get(t) != b.vnets.get(t) {
                tenants.insert(t.clone());
            }
        }
        for t in a.acl_default.keys().chain(b.acl_default.keys()) {
            if a.acl_default.get(t) != b.acl_default.get(t) {
                tenants.insert(t.clone());
            }
        }
        let keys = |r: Option<&Arc<Vec<Acl>>>| -> Vec<_> {
            r.map(|r| {
                r.iter()
                    .map(|x| (x.priority, x.src, x.dst, x.proto, x.lo, x.hi, x.allow))
                    .collect()
            })
            .unwrap_or_default()
        };
        for t in a.acls.keys().chain(b.acls.keys()) {
            if keys(a.acls.get(t)) != keys(b.acls.get(t)) {
                tenants.insert(t.clone());
            }
        }
        for k in a.mcast.keys().chain(b.mcast.keys()) {
            if a.mcast.get(k) != b.mcast.get(k) {
                tenants.insert(k.0.clone());
                mcast.insert(k.0.clone());
            }
        }
        for k in a.mcast_senders.keys().chain(b.mcast_senders.keys()) {
            if a.mcast_senders.get(k) != b.mcast_senders.get(k) {
                tenants.insert(k.0.clone());
            }
        }
        for (t, ..) in a.dsr.symmetric_difference(&b.dsr) {
            tenants.insert(t.clone());
        }
        let exposures = *a.vips != *b.vips || *a.backends != *b.backends;
        (tenants, mcast, exposures)
    }
}
