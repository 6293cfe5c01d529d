//! Incremental re-verification: after a change, re-check only what it can affect.
//!
//! Expects a first artifact set and policy ([`Verifier::new`] verifies them
//! in full) and then, one at a time, the next generation's complete
//! artifacts and policy ([`Verifier::update`]). Guarantees: the report after
//! an update equals, verdict for verdict and violation for violation, what
//! [`crate::verify`] reports on the new artifacts (a property test checks
//! it on random changes, violating ones included). How:
//!
//! - The path invariants are checked per sending VM (`checks::check_vm`),
//!   and each VM's trace records its [`Footprint`]: the bridges it ran, the
//!   underlay addresses and load-balancer instances it reached, the
//!   multicast `tun_id`s it fanned out, the ports it was delivered to.
//! - What may differ is named first ([`Dirty`]: devices and relations),
//!   by comparing the two generations ([`Verifier::update`]) or by a caller
//!   that knows what it changed ([`Verifier::update_dirty`]); only those
//!   devices' flows and groups and those relations' rows are read again.
//! - An update diffs what is named: bridges whose flows or groups differ
//!   (compared in order, by the text that is pushed), load-balancer
//!   entries whose rows differ and addresses whose holders differ (the
//!   model moves row by row: `lb.rs`), the underlay map, and the policy per
//!   VM and per tenant (a VM record, map or tenant's rules the two
//!   generations share is equal without being read: `policy.rs`).
//! - Only those bridges are rebuilt (a new or removed device rebuilds the
//!   whole model), and only the VMs whose footprint meets a change (on the
//!   packets that met it), whose own record changed (in full), or that are
//!   new, are traced again; every other VM's result is kept. A VM traced
//!   on part of its packets checks only the new outcomes and combines
//!   them with its kept delivered and spoofed sets
//!   ([`checks::OutcomeChecks`]); a VM whose tenant's ACLs, vnets, DSR
//!   replies or VM set changed re-runs only the pair checks on its kept
//!   sets. Paths name flows and load-balancer rows by handles an update
//!   keeps (`bridge.rs`, `lb.rs`), so a kept VM's paths are renumbered
//!   only after the load-balancer model is built again, and then only
//!   when the VM is checked again, through a bounded log.
//! - Each check on tables (AFF-1's vectors and tunnels, AFF-4, CAP-1) is
//!   re-run only when what it reads changed (`table_recheck.rs`; AFF-1's
//!   vectors per endpoint, its tunnels per row); AFF-3 whenever either
//!   generation has NF taps (otherwise it is vacuous).
//!
//! Every input change is either handled by the rules above or forces a
//! full re-verification (the `full` flag of [`Update`]): a change of the
//! device set or of where the policy came from (intent or agents' rows).
//!
//! The steps, a module each: `changes.rs` (what changed, as footprints name
//! it, and the policy diff), `bridge_change.rs` (a rebuilt bridge's flows
//! added and removed), `pairing.rs` (old position → new of equal items),
//! `renumber.rs` (kept paths' handles brought up to date after the
//! load-balancer model is built again, through a bounded log),
//! `recheck.rs` (a visited VM traced again on the packets a change met,
//! or its pair checks re-run; the VMs a change can affect).

mod bridge_change;
mod changes;
mod pairing;
mod recheck;
mod renumber;

use bridge_change::{bridge_change, flow_key, BridgeChange};
pub(crate) use bridge_change::{same_flow_text, same_group_text};
use changes::{may_match, name_of, policy_changes, same_vm, Changes};
use pairing::{common_ends, Quick};
pub(crate) use pairing::{moves_by, paired, positions, Moves};
use recheck::by_slot;
use renumber::{renumber, Renumber};

use crate::artifacts::Artifacts;
use crate::bridge::disjoint_sets;
use crate::checks::{self, PathResults, Shared, VmChecked};
use crate::dirty::{same, Dirty};
use crate::kept::Kept;
use crate::network::{Footprint, Network};
use crate::policy::{shared_eq, Policy};
use crate::readers::Readers;
use crate::report::Report;
use crate::row_moves::RowMoves;
use crate::table_recheck::{TableChecks, Touched};
use crate::vm_index::VmIndex;
use crate::{assemble, Input, Provenance, VerifyError};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::time::{Duration, Instant};

/// A verified generation, ready for the next one.
pub struct Verifier {
    artifacts: Artifacts,
    policy: Policy,
    net: Network,
    /// The VMs' results by slot. A VM keeps its slot while it exists, so
    /// an update that adds or removes a VM moves no other result; the
    /// VMs a result names (`delivered`'s peers, a violation's `from` and
    /// `to`) are slots too, turned into policy indices by the report.
    /// Packed (`kept.rs`): an update unpacks only the VMs it visits.
    slots: Vec<Option<Kept>>,
    /// Per VM of `policy.vms`, in order: its slot.
    slot_of: Vec<usize>,
    /// Per slot: its VM's index in `policy.vms` (`None`: a free slot).
    vm_of: Vec<Option<usize>>,
    free: Vec<usize>,
    /// The VMs by port and by tenant, by slot: moved by the VMs an update
    /// adds, removes or changes (building it per update walked every VM).
    vms: VmIndex,
    /// Which slots' footprints read each part of the network: an update
    /// visits the VMs a change can affect, not every VM.
    readers: Readers,
    /// The renumberings since the last catch-up (an update that built the
    /// load-balancer model again), oldest first, and per slot how many of
    /// them its kept paths already follow. A path is renumbered only when
    /// the VM is checked again (nothing else reads its handles).
    renumbers: Vec<Renumber>,
    epochs: Vec<usize>,
    tables: TableChecks,
    limit: usize,
    last: Duration,
}

/// What an update did.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Update {
    /// The whole model was rebuilt and every VM re-checked.
    pub full: bool,
    /// VMs whose results were computed again (on part of their packets or
    /// all), of `vms`; the rest were kept as they were.
    pub rechecked: usize,
    /// Of those, VMs traced again: in full (new, or their own record
    /// changed) or on the packets a change touched.
    pub retraced: usize,
    pub vms: usize,
    /// VMs whose result the update looked at (the readers of a changed
    /// part, the changed tenants' VMs, changed and new VMs); every other
    /// VM's result was not visited.
    pub visited: usize,
    /// Bridges rebuilt from their new flows/groups.
    pub bridges_rebuilt: usize,
    /// Whether the load-balancer rows were re-read.
    pub lb_reloaded: bool,
    pub millis: f64,
    /// Of `millis`: diffing the generations and rebuilding what changed,
    /// the path checks, and the table checks (AFF-1/3/4, CAP-1).
    pub diff_millis: f64,
    pub paths_millis: f64,
    pub tables_millis: f64,
    /// The table checks run again (the others' inputs did not change).
    pub tables_rerun: Vec<&'static str>,
    /// The phases above split finer (ms): what a bench reports so the part
    /// that grows with the network is named, not guessed.
    pub steps: BTreeMap<&'static str, f64>,
    /// Of the VMs re-traced on part of their packets, how many met each
    /// kind of change (`flow`: an added or removed flow could match what a
    /// table was reached with; `table`, `group`, `address`, `lb`, `fanout`).
    pub met: BTreeMap<&'static str, usize>,
}

/// The clock of an update's steps ([`Update::steps`]).
struct Laps(Instant);

impl Laps {
    /// Adds the time since the last lap to step `name`.
    fn lap(&mut self, up: &mut Update, name: &'static str) {
        let now = Instant::now();
        *up.steps.entry(name).or_default() += (now - self.0).as_secs_f64() * 1e3;
        self.0 = now;
    }
}

impl Verifier {
    /// Verifies `artifacts` in full against `policy`.
    pub fn new(
        artifacts: Artifacts,
        policy: Policy,
        limit: usize,
    ) -> Result<Verifier, VerifyError> {
        let t0 = Instant::now();
        let net = Network::build(&artifacts, &policy)?;
        // slot i holds VM i: the results' VM indices are their slots
        let n = policy.vms.len();
        let vms = VmIndex::of(&policy.vms);
        let vm_of: Vec<Option<usize>> = (0..n).map(Some).collect();
        let shared = Shared::kept(&net.space, &vms, &vm_of);
        let mut readers = Readers::default();
        let slots = (0..policy.vms.len())
            .map(|i| {
                let c = checks::check_vm(&net, &policy, &shared, i);
                readers.add(i, &c.footprint);
                Some(Kept::pack(c))
            })
            .collect();
        drop(shared);
        let tables = TableChecks::new(&net, &artifacts, &policy, limit);
        Ok(Verifier {
            artifacts,
            epochs: vec![0; n],
            policy,
            net,
            slots,
            slot_of: (0..n).collect(),
            vm_of,
            free: Vec::new(),
            vms,
            readers,
            renumbers: Vec::new(),
            tables,
            limit,
            last: t0.elapsed(),
        })
    }

    /// Bytes the kept VM results hold packed ([`Kept::bytes`]): what an
    /// incremental verifier keeps beyond a full verification's model.
    pub fn kept_bytes(&self) -> usize {
        self.slots.iter().flatten().map(Kept::bytes).sum()
    }

    pub fn artifacts(&self) -> &Artifacts {
        &self.artifacts
    }

    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The report of the current generation (`against`: also AFF-2).
    pub fn report(
        &self,
        provenance: &dyn Provenance,
        against: Option<&Artifacts>,
    ) -> Result<Report, VerifyError> {
        let mut res = PathResults::default();
        for (ni, &s) in self.slot_of.iter().enumerate() {
            let Some(c) = &self.slots[s] else { continue };
            // what `merge` reads, the VMs named by policy index
            let violations = c
                .violations
                .iter()
                .map(|v| checks::Violation {
                    from: ni,
                    to: v.to.and_then(|t| self.vm_of.get(t).copied().flatten()),
                    ..v.clone()
                })
                .collect();
            let named = VmChecked {
                violations,
                outcomes: c.outcomes,
                pairs: c.pairs,
                footprint: Footprint::default(),
                traced: Vec::new(),
                outcome_violations: c.outcome_violations,
                spoof: self.net.space.none(),
                delivered: BTreeMap::new(),
            };
            res.merge(named, self.limit);
        }
        let input = Input {
            artifacts: &self.artifacts,
            policy: &self.policy,
            against,
            provenance,
            limit: self.limit,
            accept: &[],
        };
        let mut tables = self.tables.findings();
        tables.aff2 = against.map(|old| crate::tables::aff2(old, &self.artifacts));
        tables.plan1 =
            against.map(|old| crate::plan::check(old, &self.artifacts, &self.policy, self.limit));
        let mut r = assemble(&self.net, &input, &res, tables, Instant::now())?;
        r.stats.millis = self.last.as_millis();
        Ok(r)
    }

    /// Moves to the next generation, re-checking only what changed (found
    /// by comparing the two generations: [`Dirty::between`]).
    pub fn update(&mut self, artifacts: Artifacts, policy: Policy) -> Result<Update, VerifyError> {
        let t0 = Instant::now();
        let dirty = Dirty::between(&self.artifacts, &artifacts);
        self.update_from(t0, artifacts, policy, &dirty)
    }

    /// Moves to the next generation, which differs from the current one at
    /// most in what `dirty` names (the caller knows what it changed: the
    /// engine's per-device deltas, a bench's edit). The policy is compared
    /// in full. A `dirty` that leaves out a change makes the report wrong.
    pub fn update_dirty(
        &mut self,
        artifacts: Artifacts,
        policy: Policy,
        dirty: &Dirty,
    ) -> Result<Update, VerifyError> {
        self.update_from(Instant::now(), artifacts, policy, dirty)
    }

    fn update_from(
        &mut self,
        t0: Instant,
        artifacts: Artifacts,
        policy: Policy,
        dirty: &Dirty,
    ) -> Result<Update, VerifyError> {
        let is_device =
            |a: &Artifacts, d: &String| a.flows.contains_key(d) || a.groups.contains_key(d);
        // a device added or removed has changed flows or groups, so is dirty
        let devices_moved = dirty
            .devices
            .iter()
            .any(|d| is_device(&self.artifacts, d) != is_device(&artifacts, d));
        if policy.from_intent != self.policy.from_intent || devices_moved {
            *self = Verifier::new(artifacts, policy, self.limit)?;
            return Ok(Update {
                full: true,
                rechecked: self.slot_of.len(),
                vms: self.slot_of.len(),
                millis: t0.elapsed().as_secs_f64() * 1e3,
                ..Default::default()
            });
        }
        let mut up = Update::default();
        let mut laps = Laps(t0);
        // a VM whose paths the bounded log cannot renumber is traced again
        let stale = self.catch_up_if_long()?;
        laps.lap(&mut up, "catch-up");
        let mut ch = Changes::default();
        let mut renum = None;
        let mut flow_moves: BTreeMap<String, Option<Moves>> = BTreeMap::new();
        // bridges
        for name in dirty.devices.iter().filter(|d| is_device(&artifacts, d)) {
            let (of, nf_) = (self.artifacts.flows.get(name), artifacts.flows.get(name));
            let (og, ng) = (self.artifacts.groups.get(name), artifacts.groups.get(name));
            // one pass over the flows' text: the keys are what
            // `same_flow_text` compares, so no move is the same text
            let moved = moves_by(
                of.map_or(&[][..], Vec::as_slice),
                nf_.map_or(&[][..], Vec::as_slice),
                |f| flow_key(&f),
            );
            // kept for the SNAT grants' re-read (`table_recheck.rs`)
            let moved = &*flow_moves.entry(name.clone()).or_insert(moved);
            let same_text = moved.is_none() && same(og, ng, same_group_text);
            let same_at = same_text
                && same(of, nf_, |a, b| a.at == b.at)
                && same(og, ng, |a, b| a.at == b.at);
            if same_at {
                continue;
            }
            let old_accept = self.net.accepts(name).cloned();
            let bc = if same_text {
                BridgeChange::default()
            } else {
                bridge_change(of, nf_, og, ng, moved.as_ref())
            };
            self.net.replace_bridge(
                name,
                nf_.map(Vec::as_slice).unwrap_or(&[]),
                ng.map(Vec::as_slice).unwrap_or(&[]),
                moved.as_ref(),
                {
                    // the cache keeps it until its lookups are next read
                    let bc = bc.clone();
                    move |t, key| bc.untouched(t, key)
                },
            )?;
            up.bridges_rebuilt += 1;
            if same_text {
                continue; // only `file:line`s moved: nothing to re-check
            }
            // a fan-out of tun_id t reaches this bridge in both generations
            // or in neither unless t entered or left its accepted set (what
            // the bridge then does is in the footprint's bridge reads)
            let new_accept = self.net.accepts(name).cloned();
            match (old_accept, new_accept) {
                (Some(Some(a)), Some(Some(b))) => {
                    ch.fanout
                        .extend(a.symmetric_difference(&b).map(|t| Some(*t)));
                }
                (a, b) if a == b => {}
                _ => {
                    ch.fanout.insert(None);
                }
            }
            ch.bridges.insert(name.clone(), bc);
        }
        laps.lap(&mut up, "bridges");
        // each dirty relation's rows paired once, for the model and the table checks
        // (the generation before is taken out while they borrow it, and
        // put back if the model refuses the new rows)
        let before = std::mem::take(&mut self.artifacts);
        let moves = RowMoves::new(&before, &artifacts, dirty);
        // load balancers
        // (not compared again: a dirty relation whose rows are the same
        // reloads to the same model, and the positions to the identity)
        // the model reads the rows a path can name and the announcements
        let lb_changed = crate::lb::ROW_RELATIONS
            .iter()
            .chain(&["p4_announce"])
            .any(|r| dirty.relation(r));
        if lb_changed {
            // only the rows that differ are read (`lb.rs`)
            let lc = match self.net.lb.update(&moves) {
                Ok(lc) => lc,
                Err(e) => {
                    drop(moves);
                    self.artifacts = before;
                    return Err(e.into());
                }
            };
            for (i, a) in lc.instances {
                ch.instances.entry(i).or_default().insert(a);
            }
            ch.addresses.extend(lc.addresses);
            renum = lc.handles.map(|lb| Renumber { lb });
            up.lb_reloaded = true;
        }
        laps.lap(&mut up, "lb");
        // underlay
        let underlay = !shared_eq(&policy.underlay, &self.policy.underlay);
        if underlay {
            for a in policy.underlay.keys().chain(self.policy.underlay.keys()) {
                if policy.underlay.get(a) != self.policy.underlay.get(a) {
                    ch.addresses.insert(*a);
                }
            }
            self.net.set_underlay(&policy);
        }
        // the VM lists' common prefix and suffix of equal records: only the
        // middles differ
        let (pre, suf) = common_ends(&self.policy.vms, &policy.vms, same_vm);
        let same_vms = pre == self.policy.vms.len() && pre == policy.vms.len();
        let middles = (
            pre..self.policy.vms.len() - suf,
            pre..policy.vms.len() - suf,
        );
        let vm_middles = (!same_vms).then_some(&middles);
        policy_changes(&self.policy, &policy, vm_middles, &mut ch);
        ch.key_instances();
        laps.lap(&mut up, "policy");
        ch.port_ids = ch
            .ports
            .iter()
            .filter_map(|(d, p)| Some((self.net.index_of(d)?, *p)))
            .collect();
        // the VM list: a VM keeps its slot, a new one takes a free slot, a
        // removed one frees its own (after this update's are taken: a
        // result naming it is re-checked by this update, as it reads the
        // VM's port or tenant). Only the middles are paired, by name: a
        // prefix VM keeps its index, a suffix VM shifts by the lengths'
        // difference. (A name twice in the lists can pair otherwise than
        // over the whole lists would; every VM of a middle name is traced
        // again in full, `ch.vms`, so which slot it takes changes nothing.)
        let mut fresh: Vec<usize> = Vec::new();
        if !same_vms {
            let (om, nm) = middles.clone();
            let old_names: Vec<_> = self.policy.vms[om.clone()]
                .iter()
                .map(|v| name_of(v))
                .collect();
            let new_names: Vec<_> = policy.vms[nm.clone()].iter().map(|v| name_of(v)).collect();
            let mut mid = vec![usize::MAX; nm.len()];
            let mut freed = Vec::new();
            for (k, to) in paired(&old_names, &new_names).into_iter().enumerate() {
                let slot = self.slot_of[om.start + k];
                // out with its old record; a paired VM is back with its new
                self.vms.remove(slot, &self.policy.vms[om.start + k]);
                match to {
                    Some(j) => mid[j as usize] = slot,
                    None => freed.push(slot),
                }
            }
            for (j, slot) in mid.iter_mut().enumerate() {
                if *slot == usize::MAX {
                    *slot = match self.free.pop() {
                        Some(s) => s,
                        None => {
                            self.slots.push(None);
                            self.vm_of.push(None);
                            self.epochs.push(0);
                            self.slots.len() - 1
                        }
                    };
                    fresh.push(nm.start + j);
                }
                self.vms.add(*slot, &policy.vms[nm.start + j]);
            }
            for s in freed {
                if let Some(k) = self.slots[s].take() {
                    self.readers.remove(s, &k.footprint()?);
                }
                self.vm_of[s] = None;
                self.free.push(s);
            }
            self.slot_of.splice(om, mid);
            // indices moved only from the middle on
            for (ni, &s) in self.slot_of.iter().enumerate().skip(nm.start) {
                self.vm_of[s] = Some(ni);
            }
        }
        laps.lap(&mut up, "vm index");
        let t1 = Instant::now();
        up.diff_millis = (t1 - t0).as_secs_f64() * 1e3;
        // taken out while `shared` borrows them (the loop stores results)
        let (vms, vm_of) = (
            std::mem::take(&mut self.vms),
            std::mem::take(&mut self.vm_of),
        );
        let shared = Shared::kept(&self.net.space, &vms, &vm_of);
        laps.lap(&mut up, "shared");
        if let Some(r) = renum {
            self.renumbers.push(r);
        }
        let now = self.renumbers.len();
        // looked up by borrowed names (a key per VM cloned both names)
        let changed_vms: HashSet<(&str, &str)> = ch
            .vms
            .iter()
            .map(|(t, n)| (t.as_str(), n.as_str()))
            .collect();
        // the VMs a change can affect: readers of a changed part, the
        // changed tenants' VMs, changed and new VMs, stale paths; every
        // other VM's result stays in its slot untouched
        let cands = self.candidates(&ch, &shared, &policy, &fresh, &stale, &vm_of);
        up.visited = cands.len();
        laps.lap(&mut up, "VMs kept: readers");
        for ni in cands {
            let v = &policy.vms[ni];
            let s = self.slot_of[ni];
            let changed = !changed_vms.is_empty()
                && changed_vms.contains(&(v.tenant.as_str(), v.name.as_str()));
            let packed = self.slots[s].take();
            let renew = changed || stale.contains(&s);
            if let (true, Some(p)) = (renew, &packed) {
                self.readers.remove(s, &p.footprint()?);
            }
            let kept = match renew {
                true => None,
                false => packed,
            };
            let Some(packed) = kept else {
                self.retrace_in_full(&policy, &shared, ni, s, now, &mut up);
                laps.lap(&mut up, "VMs traced in full");
                continue;
            };
            // the footprint says whether the change met the VM's packets;
            // the rest is decoded only if it did or the checks may read
            // its outcomes again
            let fp = match ch.touches_network() {
                true => Some(packed.footprint()?),
                false => None,
            };
            let mut why = BTreeSet::new();
            let h = match &fp {
                Some(fp) => ch.affected(&self.net.space, fp, &mut why),
                None => self.net.space.none(),
            };
            for w in why {
                *up.met.entry(w).or_default() += 1;
            }
            laps.lap(&mut up, "VMs kept: affected");
            if h.is_false() && !ch.may_reread(v) {
                if !ch.tenants.contains(&v.tenant) {
                    self.slots[s] = Some(packed);
                    laps.lap(&mut up, "VMs kept");
                    continue;
                }
                // its tenant's policy changed, nothing of its paths: the
                // pair checks on its kept sets, its paths left packed (and
                // not renumbered: its epoch stays)
                if let Some(c) = self.pairs_rechecked(&policy, &shared, ni, &packed, &vm_of)? {
                    up.rechecked += 1;
                    let c = by_slot(c, s, &self.slot_of);
                    self.slots[s] = Some(Kept::repack(c, packed));
                    laps.lap(&mut up, "VMs pair-checked");
                    continue;
                }
            }
            let fp = match fp {
                Some(fp) => fp,
                None => packed.footprint()?,
            };
            let mut c = packed.unpack_with(fp)?;
            laps.lap(&mut up, "VMs kept: unpacked");
            if !h.is_false() {
                // most outcomes miss `h` (it is the packets that met the
                // change): checked without building a copy of each set
                c.traced.retain_mut(|o| {
                    if disjoint_sets(&o.pkt.set, &h) {
                        return true;
                    }
                    o.pkt.set = o.pkt.set.and_not(&h);
                    !o.pkt.set.is_false()
                });
            }
            let reread = ch.rereads(v, &c.traced);
            laps.lap(&mut up, "VMs kept: rereads");
            if h.is_false() && !reread && !ch.tenants.contains(&v.tenant) {
                // nothing its checks read changed: kept as it was packed,
                // paths not renumbered
                self.slots[s] = Some(packed);
                laps.lap(&mut up, "VMs kept");
                continue;
            }
            self.readers.remove(s, &c.footprint);
            let epoch = self.epochs[s];
            let log = &self.renumbers[epoch..];
            // its footprint and outcomes stay as packed when no packet is
            // traced again and no path renumbered (a pair re-check)
            let same = h.is_false() && !log.iter().any(|r| r.reaches(&c.footprint));
            // a kept path that names a flow the new generation lacks would
            // mean the change reached it: trace such a VM again in full
            let renumbered = renumber(log, &mut c, &self.net);
            laps.lap(&mut up, "VMs renumbered");
            if !renumbered {
                self.retrace_in_full(&policy, &shared, ni, s, now, &mut up);
                laps.lap(&mut up, "VMs traced in full");
                continue;
            }
            up.rechecked += 1;
            up.retraced += usize::from(!h.is_false());
            let (c, grew) = self.recheck(&policy, &shared, ni, c, &h, reread, &vm_of);
            match (same, grew) {
                (true, _) => self.store_reusing(s, c, now, packed, Kept::repack),
                (false, false) => self.store_reusing(s, c, now, packed, Kept::pack_on),
                (false, true) => self.store(s, c, now),
            }
            laps.lap(
                &mut up,
                match h.is_false() {
                    true => "VMs pair-checked",
                    false => "VMs re-traced in part",
                },
            );
        }
        drop(shared);
        (self.vms, self.vm_of) = (vms, vm_of);
        laps.lap(&mut up, "VMs kept");
        let t2 = Instant::now();
        up.paths_millis = (t2 - t1).as_secs_f64() * 1e3;
        let emptied = self.policy.vms.is_empty() != policy.vms.is_empty();
        let touched = Touched {
            dirty,
            moves: &moves,
            vms: !same_vms,
            vm_addrs: (!emptied).then_some(&ch.vm_addrs),
            vm_tenants: (!emptied).then_some(&ch.tenants),
            underlay,
            capacity: policy.capacity != self.policy.capacity,
            flow_moves: &flow_moves,
        };
        self.tables
            .update(&self.net, &artifacts, &policy, self.limit, &touched);
        up.tables_rerun = self.tables.rerun.clone();
        for (check, ms) in &self.tables.rerun_millis {
            up.steps.insert(check, *ms);
        }
        up.tables_millis = t2.elapsed().as_secs_f64() * 1e3;
        drop(moves);
        self.artifacts = artifacts;
        let old = (before, std::mem::replace(&mut self.policy, policy));
        // freeing the last generation (every flow's text: a quarter of an
        // update at 1k VMs) is not part of verifying this one
        std::thread::spawn(move || drop(old));
        up.vms = self.slot_of.len();
        self.last = t0.elapsed();
        up.millis = self.last.as_secs_f64() * 1e3;
        Ok(up)
    }
}
