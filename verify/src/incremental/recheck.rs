//! A visited VM checked again: traced on the packets a change met, or its pair checks re-run.
//!
//! Expects a VM's kept result (packed) and the change. Guarantees: the
//! result equals a fresh `checks::check_vm` on the new generation — the
//! outcomes the change could not alter kept, the others traced again, the
//! checks combined with the kept ones' — and only the VMs whose footprint
//! meets a change, whose record or tenant changed, or that are new are
//! visited (`candidates`, by the readers index).

use super::{may_match, Changes, Quick, Update, Verifier};
use crate::bridge::{disjoint_sets, End, Outcome};
use crate::checks::{self, Shared, VmChecked};
use crate::kept::Kept;
use crate::network::Footprint;
use crate::policy::Policy;
use biodivine_lib_bdd::Bdd;
use std::collections::{BTreeSet, HashSet};

impl Verifier {
    /// VM `ni`'s result with the packets of `h` traced again on the new
    /// network and every other packet's outcome kept (`c.traced`, already
    /// without `h`: it took a path the change did not touch), then checked
    /// again. The checks of each outcome run only on the new outcomes and
    /// are combined with the kept ones' (their sets are unions over
    /// outcomes: [`checks::OutcomeChecks`]) unless `reread` (what they read
    /// besides the outcomes changed) or some outcome violates an invariant
    /// (a violation is per outcome: re-found on the merged outcomes); the
    /// pair checks run again. Also whether its footprint changed.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn recheck<'p>(
        &self,
        policy: &'p Policy,
        shared: &Shared<'p>,
        ni: usize,
        c: VmChecked,
        h: &Bdd,
        reread: bool,
        new_index: &[Option<usize>],
    ) -> (VmChecked, bool) {
        let (new_outs, new_fp) = match h.is_false() {
            true => (Vec::new(), Footprint::default()),
            false => checks::trace_vm(&self.net, &policy.vms[ni], h.clone()),
        };
        let fresh = checks::check_outcomes(&self.net, policy, shared, ni, &new_outs);
        let combine =
            !reread && fresh.violations.is_empty() && (h.is_false() || c.outcome_violations == 0);
        let mut found = None;
        if combine {
            found = kept_checks(&c, ni, h, fresh, new_index);
        }
        let (outs, fp, grew) = if h.is_false() {
            (c.traced, c.footprint, false)
        } else {
            self.spliced(c.traced, c.footprint, new_outs, new_fp)
        };
        let r = match found {
            Some(found) => checks::conclude(&self.net.space, policy, shared, ni, found, outs, fp),
            None => checks::evaluate(&self.net, policy, shared, ni, outs, fp),
        };
        (r, grew)
    }

    /// VM `ni`'s pair checks (REACH-1/ACL-1) and ISO-3 again on its kept
    /// delivered and spoofed sets, its footprint and outcomes not unpacked
    /// (the result's are empty: [`Kept::repack`] keeps the packed ones);
    /// `None` if a peer it delivered to is gone (then its outcomes are read).
    pub(super) fn pairs_rechecked<'p>(
        &self,
        policy: &'p Policy,
        shared: &Shared<'p>,
        ni: usize,
        packed: &Kept,
        new_index: &[Option<usize>],
    ) -> Result<Option<VmChecked>, crate::kept::Corrupt> {
        let (spoof, delivered) = packed.sets()?;
        let c = VmChecked {
            violations: packed.violations.clone(),
            outcomes: packed.outcomes,
            pairs: packed.pairs,
            footprint: Footprint::default(),
            traced: Vec::new(),
            outcome_violations: packed.outcome_violations,
            spoof,
            delivered,
        };
        let fresh = checks::check_outcomes(&self.net, policy, shared, ni, &[]);
        let none = self.net.space.none();
        let Some(found) = kept_checks(&c, ni, &none, fresh, new_index) else {
            return Ok(None);
        };
        let space = &self.net.space;
        let mut r = checks::conclude(space, policy, shared, ni, found, Vec::new(), c.footprint);
        r.outcomes = c.outcomes;
        Ok(Some(r))
    }

    /// The kept outcomes (without `h`) and the new ones (of `h`) as one
    /// normalized list, and the footprint of both: the new reads added to
    /// the kept ones, whose `h` part is not cut away (what `h`'s packets
    /// read before stays noted: a superset re-traces a packet a change might
    /// not have met, never misses one; cutting it cost a BDD operation per
    /// read, most of a partial re-trace).
    /// Also whether the footprint differs from the kept one (mostly not:
    /// the new reads are within the kept ones, and the kept result's packed
    /// footprint is then kept as it is).
    pub(super) fn spliced(
        &self,
        kept: Vec<Outcome>,
        mut fp: Footprint,
        new_outs: Vec<Outcome>,
        mut new_fp: Footprint,
    ) -> (Vec<Outcome>, Footprint, bool) {
        let mut outs = kept;
        outs.extend(new_outs);
        let outs = checks::normalize(outs);
        // the ports are the outcomes' (below), not the union of the reads'
        new_fp.ports.clear();
        let grew = fp.merge(new_fp);
        let kept_ports = std::mem::take(&mut fp.ports);
        fp.ports = outs
            .iter()
            .filter_map(|o| match o.end {
                End::Deliver { port } => {
                    Some((self.net.bridges[o.device as usize].name.clone(), port))
                }
                _ => None,
            })
            .collect();
        let grew = grew || fp.ports != kept_ports;
        (outs, fp, grew)
    }
}

/// The outcome checks of VM `ni` on its kept outcomes (`c`'s, without the
/// packets of `h`, its VMs named by slot) combined with `fresh` (those of
/// `h`'s new outcomes), at the new policy's VM indices (`new_index`: slot
/// → index); `None` if a peer it names is gone.
pub(super) fn kept_checks(
    c: &VmChecked,
    ni: usize,
    h: &Bdd,
    fresh: checks::OutcomeChecks,
    new_index: &[Option<usize>],
) -> Option<checks::OutcomeChecks> {
    let moved = |i: usize| moved_vm(i, new_index);
    let cut = |b: &Bdd| {
        if h.is_false() || disjoint_sets(b, h) {
            b.clone()
        } else {
            b.and_not(h)
        }
    };
    let mut violations = Vec::with_capacity(c.outcome_violations);
    for v in &c.violations[..c.outcome_violations] {
        let to = match v.to {
            Some(t) => Some(moved(t)?),
            None => None,
        };
        violations.push(checks::Violation {
            from: ni,
            to,
            ..v.clone()
        });
    }
    let mut delivered = fresh.delivered;
    for (&i, b) in &c.delivered {
        let b = cut(b);
        if b.is_false() {
            continue;
        }
        crate::bridge::union_moved_into(&mut delivered, moved(i)?, b);
    }
    Some(checks::OutcomeChecks {
        violations,
        spoof: cut(&c.spoof).or(&fresh.spoof),
        delivered,
        ok_src: fresh.ok_src,
    })
}

/// The VM in slot `i` at its index in the new policy (`new_index`: slot →
/// index; `None`: the slot's VM is gone).
pub(super) fn moved_vm(i: usize, new_index: &[Option<usize>]) -> Option<usize> {
    new_index.get(i).copied().flatten()
}

/// A result whose VMs are named by policy index, named by slot
/// (`slot_of`: index → slot), as the verifier keeps it.
pub(super) fn by_slot(mut c: VmChecked, slot: usize, slot_of: &[usize]) -> VmChecked {
    for v in &mut c.violations {
        v.from = slot;
        v.to = v.to.map(|t| slot_of[t]);
    }
    c.delivered = std::mem::take(&mut c.delivered)
        .into_iter()
        .map(|(i, b)| (slot_of[i], b))
        .collect();
    c
}

impl Verifier {
    /// Stores VM `slot`'s new result (its VMs named by policy index) and
    /// notes what its footprint reads.
    pub(super) fn store(&mut self, slot: usize, c: VmChecked, epoch: usize) {
        let c = by_slot(c, slot, &self.slot_of);
        self.readers.add(slot, &c.footprint);
        self.slots[slot] = Some(Kept::pack(c));
        self.epochs[slot] = epoch;
    }

    /// Traces VM `ni` (in `slot`) again in full and stores the result: a VM
    /// whose kept result cannot be reused.
    pub(super) fn retrace_in_full<'p>(
        &mut self,
        policy: &'p Policy,
        shared: &Shared<'p>,
        ni: usize,
        slot: usize,
        epoch: usize,
        up: &mut Update,
    ) {
        up.rechecked += 1;
        up.retraced += 1;
        let c = checks::check_vm(&self.net, policy, shared, ni);
        self.store(slot, c, epoch);
    }

    /// [`Verifier::store`] of a result that has parts of `old` (packed by
    /// `pack`, which takes those parts' bytes from `old`).
    pub(super) fn store_reusing(
        &mut self,
        slot: usize,
        c: VmChecked,
        epoch: usize,
        old: Kept,
        pack: fn(VmChecked, Kept) -> Kept,
    ) {
        let c = by_slot(c, slot, &self.slot_of);
        self.readers.add(slot, &c.footprint);
        self.slots[slot] = Some(pack(c, old));
        self.epochs[slot] = epoch;
    }

    /// The new policy's indices, ascending, of the VMs an update must look
    /// at: the readers of each changed part (bridges, addresses,
    /// load-balancer entries, fan-outs, ports whose owner changed, any
    /// load-balancer hop when exposures changed), every VM of a changed
    /// tenant, changed and `fresh` VMs, and `stale` slots. Any other VM's
    /// `affected` set is empty, it rereads nothing and its tenant's pair
    /// checks read nothing changed (what the update's loop would find).
    pub(super) fn candidates(
        &self,
        ch: &Changes,
        shared: &Shared<'_>,
        policy: &Policy,
        fresh: &[usize],
        stale: &HashSet<usize>,
        vm_of: &[Option<usize>],
    ) -> Vec<usize> {
        let r = &self.readers;
        let mut slots: HashSet<usize, Quick> = HashSet::default();
        for (name, bc) in &ch.bridges {
            for t in &bc.tables {
                for readers in r.table(name, *t).into_iter().flat_map(|k| k.values()) {
                    slots.extend(readers);
                }
            }
            for (t, ms) in &bc.flows {
                // the values a changed flow can match (`seen_through`)
                for (key, readers) in r.table(name, *t).into_iter().flatten() {
                    if ms.iter().any(|m| may_match(key, m)) {
                        slots.extend(readers);
                    }
                }
            }
            for g in &bc.groups {
                slots.extend(r.group(name, *g));
            }
        }
        for a in &ch.addresses {
            slots.extend(r.address(*a));
        }
        for k in &ch.lb_keys {
            slots.extend(r.instance(k));
        }
        for (lo, hi) in &ch.lb_ranges {
            slots.extend(r.instances_between(lo, hi));
        }
        for t in &ch.fanout {
            slots.extend(r.fanout(*t));
        }
        for p in &ch.ports {
            slots.extend(r.port(p));
        }
        if ch.exposures {
            slots.extend(r.lb_readers());
        }
        slots.extend(stale.iter().copied());
        let mut out: BTreeSet<usize> = slots
            .into_iter()
            .filter_map(|s| vm_of.get(s).copied().flatten())
            .collect();
        for t in ch.tenants.iter().chain(&ch.mcast_tenants) {
            out.extend(shared.tenant_vms(t));
        }
        for (t, n) in &ch.vms {
            out.extend(
                shared
                    .tenant_vms(t)
                    .iter()
                    .filter(|&&i| policy.vms[i].name == *n),
            );
        }
        out.extend(fresh);
        out.into_iter().collect()
    }
}
