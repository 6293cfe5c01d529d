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
//!   sets. A kept VM's paths are renumbered (flows of a rebuilt bridge,
//!   load-balancer rows moved) only when it is checked again, through
//!   a bounded log of the updates' renumberings.
//! - Each check on tables (AFF-1's vectors and tunnels, AFF-4, CAP-1) is
//!   re-run only when what it reads changed (`table_recheck.rs`; AFF-1's
//!   vectors per endpoint, its tunnels per row); AFF-3 whenever either
//!   generation has NF taps (otherwise it is vacuous).
//!
//! Every input change is either handled by the rules above or forces a
//! full re-verification (the `full` flag of [`Update`]): a change of the
//! device set or of where the policy came from (intent or agents' rows).

use crate::artifacts::{Artifacts, FlowText, GroupText};
use crate::bridge::{disjoint_sets, End, Hop, Outcome, Val};
use crate::checks::{self, PathResults, Shared, VmChecked};
use crate::dirty::{same, Dirty};
use crate::kept::Kept;
use crate::network::{Footprint, Network};
use crate::ofctl::Constraint;
use crate::policy::{shared_eq, Acl, Policy, Vm};
use crate::readers::Readers;
use crate::report::Report;
use crate::row_moves::RowMoves;
use crate::space::{Field, Space};
use crate::table_recheck::{TableChecks, Touched};
use crate::vm_index::VmIndex;
use crate::{assemble, Input, Provenance, VerifyError};
use biodivine_lib_bdd::Bdd;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::ops::Bound::{Excluded, Included, Unbounded};
use std::sync::Arc;
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
    /// The renumberings of the updates since the last catch-up, oldest
    /// first, and per slot how many of them its kept paths already
    /// follow. A path is renumbered only when the VM is checked again
    /// (nothing else reads its flow and row indices), so an update that
    /// moves flows or rows renumbers a few VMs, not every VM that ran the
    /// bridge or reached a Mux.
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

/// What changed between two generations, as the footprints name it.
#[derive(Default)]
struct Changes {
    bridges: BTreeMap<String, BridgeChange>,
    addresses: BTreeSet<u32>,
    /// (instance, address) whose entries changed; address `None` = any
    /// (a row of the instance that does not parse).
    instances: BTreeMap<String, BTreeSet<Option<u32>>>,
    /// Fan-out tun_ids whose set of accepting bridges may have changed
    /// (`None` inside = any tun_id).
    fanout: BTreeSet<Option<u128>>,
    /// Ports whose owner (the first VM there) may have changed.
    ports: BTreeSet<(String, u32)>,
    /// `ports` as (bridge index, port), for the per-VM scan.
    port_ids: HashSet<(u32, u32)>,
    /// VMs (tenant, name) whose own record changed: traced again in full.
    vms: BTreeSet<(String, String)>,
    /// Their (VNI, address), old and new: what a tunnel row names.
    vm_addrs: BTreeSet<(u64, u32)>,
    /// Tenants whose policy (VMs, vnets, ACLs, multicast, DSR) changed:
    /// their VMs' pair checks (REACH-1/ACL-1) run again.
    tenants: BTreeSet<String>,
    /// Of those, tenants whose multicast groups changed, which the checks
    /// of each outcome read (ISO-2): their VMs' outcomes are checked again.
    mcast_tenants: BTreeSet<String>,
    /// VIPs or their backends changed: what a load-balancer hop exposes.
    exposures: bool,
    /// `instances` as footprint keys, built once per update
    /// ([`Changes::key_instances`]): the (instance, address) entries, and
    /// the first and last key of each instance changed as a whole.
    lb_keys: Vec<(String, u32)>,
    lb_ranges: Vec<((String, u32), (String, u32))>,
}

impl Changes {
    fn key_instances(&mut self) {
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
    fn affected(&self, space: &Space, fp: &Footprint, why: &mut BTreeSet<&'static str>) -> Bdd {
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
    fn touches_network(&self) -> bool {
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
    fn rereads(&self, vm: &Vm, outs: &[Outcome]) -> bool {
        self.may_reread(vm) && self.rereads_outcomes(vm, outs)
    }

    /// Whether [`Changes::rereads`] can be true for some outcomes of `vm`
    /// (decided without them: a kept VM's outcomes stay packed otherwise).
    fn may_reread(&self, vm: &Vm) -> bool {
        self.mcast_tenants.contains(&vm.tenant) || !self.port_ids.is_empty() || self.exposures
    }

    fn rereads_outcomes(&self, vm: &Vm, outs: &[Outcome]) -> bool {
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
fn seen_through(space: &Space, key: &[(Field, Val)], m: &[Constraint]) -> Option<Bdd> {
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
fn may_match(key: &[(Field, Val)], m: &[Constraint]) -> bool {
    m.iter().all(|c| {
        let at = key.iter().find(|(f, _)| *f == c.field).map(|(_, v)| *v);
        !matches!(at, Some(Val::Const(x)) if (x & c.mask) != (c.value & c.mask))
    })
}

/// New indices for the flows of rebuilt bridges and the load-balancer rows
/// of a reloaded model, so a kept outcome's path names what a fresh trace
/// would (only entries that moved are listed).
#[derive(Default)]
struct Renumber {
    /// (bridge index, old flow → new): a few bridges, scanned per hop.
    flows: Vec<(u32, Vec<Option<u32>>)>,
    /// The names of the bridges in `flows`.
    bridges: BTreeSet<String>,
    lb: Option<crate::lb::RowRenumber>,
}

/// Brings a kept result's paths up to date through `log` (the
/// renumberings it missed, oldest first); false if a path names a flow or
/// row that is gone.
fn renumber(log: &[Renumber], c: &mut VmChecked) -> bool {
    for r in log {
        if r.reaches(&c.footprint) {
            match r.outcomes(std::mem::take(&mut c.traced)) {
                Some(outs) => c.traced = outs,
                None => return false,
            }
        }
    }
    true
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

/// Updates whose renumberings are kept before every VM is brought up to
/// date (bounds the log's memory; the catch-up is one pass over the VMs).
const RENUMBER_LOG: usize = 64;

impl Verifier {
    /// When the log is full: every kept path renumbered and the log
    /// emptied; the slots whose paths name something gone (to trace again).
    fn catch_up_if_long(&mut self) -> Result<HashSet<usize>, crate::kept::Corrupt> {
        let mut stale = HashSet::new();
        if self.renumbers.len() < RENUMBER_LOG {
            return Ok(stale);
        }
        for (s, k) in self.slots.iter_mut().enumerate() {
            let Some(kept) = k else { continue };
            let log = &self.renumbers[self.epochs[s]..];
            let fp = kept.footprint()?;
            if !log.iter().any(|r| r.reaches(&fp)) {
                continue;
            }
            let mut c = kept.unpack_with(fp)?;
            if !renumber(log, &mut c) {
                stale.insert(s);
            }
            *kept = Kept::pack(c);
        }
        self.renumbers.clear();
        self.epochs.iter_mut().for_each(|e| *e = 0);
        Ok(stale)
    }
}

impl Renumber {
    fn is_identity(&self) -> bool {
        self.flows.is_empty() && self.lb.is_none()
    }

    /// Whether a kept outcome of a VM with this footprint may name a moved
    /// entry: a path holds a bridge's flows only if the trace ran it, and
    /// load-balancer rows only if it reached an instance (both noted).
    fn reaches(&self, fp: &Footprint) -> bool {
        (self.lb.is_some() && !fp.instances.is_empty())
            || self.bridges.iter().any(|b| fp.bridges.contains_key(b))
    }

    fn hop(&self, h: Hop) -> Option<Hop> {
        Some(match h {
            Hop::Flow { bridge, flow } => match self.flows.iter().find(|(b, _)| *b == bridge) {
                Some((_, m)) => Hop::Flow {
                    bridge,
                    flow: (*m.get(flow as usize)?)?,
                },
                _ => h,
            },
            Hop::Lb { row } => match &self.lb {
                Some(m) => Hop::Lb { row: m.get(row)? },
                None => h,
            },
            other => other,
        })
    }

    /// The outcomes with their paths renumbered; `None` if a path holds a
    /// flow or row the new generation lacks.
    fn outcomes(&self, mut outs: Vec<Outcome>) -> Option<Vec<Outcome>> {
        if self.flows.is_empty() && self.lb.is_none() {
            return Some(outs);
        }
        for o in &mut outs {
            for h in &mut o.path {
                *h = self.hop(*h)?;
            }
        }
        Some(outs)
    }
}

/// The lengths of the longest common prefix of `old` and `new` under
/// `same`, and of the longest common suffix of what is left after it (the
/// two never overlap).
fn common_ends<T>(old: &[T], new: &[T], same: impl Fn(&T, &T) -> bool) -> (usize, usize) {
    let p = old.iter().zip(new).take_while(|(a, b)| same(a, b)).count();
    let longest = old.len().min(new.len()) - p;
    let s = old
        .iter()
        .rev()
        .zip(new.iter().rev())
        .take(longest)
        .take_while(|(a, b)| same(a, b))
        .count();
    (p, s)
}

/// Old position → new position of equal items (the k-th of equal items
/// in `old` is the k-th in `new`); `None` when it is the identity.
/// Only the part between the common prefix and suffix is hashed (an
/// update adds or removes a few of tens of thousands of rows): a prefix
/// item stays, a suffix item shifts by the length difference, unless the
/// two middles hold an item of the suffix a different number of times.
pub(crate) fn positions<K: Eq + std::hash::Hash>(old: &[K], new: &[K]) -> Option<Vec<Option<u32>>> {
    let (p, s) = common_ends(old, new, |a, b| a == b);
    if p == old.len() && p == new.len() {
        return None;
    }
    let (om, nm) = (&old[p..old.len() - s], &new[p..new.len() - s]);
    let mut count: HashMap<&K, i64, Quick> = HashMap::default();
    for k in om {
        *count.entry(k).or_default() += 1;
    }
    for k in nm {
        *count.entry(k).or_default() -= 1;
    }
    let uneven: Vec<&K> = count
        .into_iter()
        .filter(|(_, c)| *c != 0)
        .map(|(k, _)| k)
        .collect();
    if old[old.len() - s..].iter().any(|k| uneven.contains(&k)) {
        return Some(paired(old, new));
    }
    let middle = paired(om, nm);
    let shifted = |i: usize| (i + new.len() - old.len()) as u32;
    Some(
        (0..old.len())
            .map(|i| match i {
                i if i < p => Some(i as u32),
                i if i >= old.len() - s => Some(shifted(i)),
                i => middle[i - p].map(|j| j + p as u32),
            })
            .collect(),
    )
}

/// [`positions`] by pairing every item (no prefix or suffix assumed).
/// Each key's occurrences in `new` are a chain (`next`, from the first);
/// the k-th old occurrence takes the chain's head and advances it (no
/// allocation per key: tens of thousands of rows are mostly distinct).
pub(crate) fn paired<K: Eq + std::hash::Hash>(old: &[K], new: &[K]) -> Vec<Option<u32>> {
    const END: u32 = u32::MAX;
    let mut head: HashMap<&K, u32, Quick> = HashMap::default();
    head.reserve(new.len());
    let mut next = vec![END; new.len()];
    for (i, k) in new.iter().enumerate().rev() {
        if let Some(h) = head.insert(k, i as u32) {
            next[i] = h;
        }
    }
    old.iter()
        .map(|k| {
            let h = head.get_mut(k)?;
            let at = *h;
            if at == END {
                return None;
            }
            *h = next[at as usize];
            Some(at)
        })
        .collect()
}

/// The hasher of [`positions`]' keys (row and flow texts, hashed by the
/// tens of thousands per update; no adversary chooses them).
type Quick = std::hash::BuildHasherDefault<netc_compiler::fxhash::FxHasher>;

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
    pub fn report(&self, provenance: &dyn Provenance, against: Option<&Artifacts>) -> Report {
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
        };
        let mut tables = self.tables.findings();
        tables.aff2 = against.map(|old| crate::tables::aff2(old, &self.artifacts));
        tables.plan1 =
            against.map(|old| crate::plan::check(old, &self.artifacts, &self.policy, self.limit));
        let mut r = assemble(&self.net, &input, &res, tables, Instant::now());
        r.stats.millis = self.last.as_millis();
        r
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
        let mut renum = Renumber::default();
        // bridges
        for name in dirty.devices.iter().filter(|d| is_device(&artifacts, d)) {
            let (of, nf_) = (self.artifacts.flows.get(name), artifacts.flows.get(name));
            let (og, ng) = (self.artifacts.groups.get(name), artifacts.groups.get(name));
            // one pass over the flows' text: the keys are what
            // `same_flow_text` compares, so no move is the same text
            let moved = positions(&flow_keys(of), &flow_keys(nf_));
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
                bridge_change(of, nf_, og, ng, moved.as_deref())
            };
            self.net.replace_bridge(
                name,
                nf_.map(Vec::as_slice).unwrap_or(&[]),
                ng.map(Vec::as_slice).unwrap_or(&[]),
                moved.as_deref(),
                {
                    // the cache keeps it until its lookups are next read
                    let bc = bc.clone();
                    move |t, key| bc.untouched(t, key)
                },
            )?;
            up.bridges_rebuilt += 1;
            if let (Some(m), Some(i)) = (moved, self.net.index_of(name)) {
                renum.flows.push((i, m));
                renum.bridges.insert(name.clone());
            }
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
            renum.lb = lc.renumber;
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
        if !renum.is_identity() {
            self.renumbers.push(renum);
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
            if let Some(p) = &packed {
                if changed || stale.contains(&s) {
                    self.readers.remove(s, &p.footprint()?);
                }
            }
            let kept = match changed || stale.contains(&s) {
                true => None,
                false => packed,
            };
            let Some(packed) = kept else {
                up.rechecked += 1;
                up.retraced += 1;
                let c = checks::check_vm(&self.net, &policy, &shared, ni);
                self.store(s, c, now);
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
            let renumbered = renumber(log, &mut c);
            laps.lap(&mut up, "VMs renumbered");
            if !renumbered {
                up.rechecked += 1;
                up.retraced += 1;
                let c = checks::check_vm(&self.net, &policy, &shared, ni);
                self.store(s, c, now);
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
    fn recheck<'p>(
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
    fn pairs_rechecked<'p>(
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
    fn spliced(
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
fn kept_checks(
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
fn moved_vm(i: usize, new_index: &[Option<usize>]) -> Option<usize> {
    new_index.get(i).copied().flatten()
}

/// A result whose VMs are named by policy index, named by slot
/// (`slot_of`: index → slot), as the verifier keeps it.
fn by_slot(mut c: VmChecked, slot: usize, slot_of: &[usize]) -> VmChecked {
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
    fn store(&mut self, slot: usize, c: VmChecked, epoch: usize) {
        let c = by_slot(c, slot, &self.slot_of);
        self.readers.add(slot, &c.footprint);
        self.slots[slot] = Some(Kept::pack(c));
        self.epochs[slot] = epoch;
    }

    /// [`Verifier::store`] of a result that has parts of `old` (packed by
    /// `pack`, which takes those parts' bytes from `old`).
    fn store_reusing(
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
    fn candidates(
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

impl BridgeChange {
    /// Whether table `t`, reached with these field values, behaves as
    /// before: not changed as a whole, and no added or removed flow can
    /// match the values.
    fn untouched(&self, t: u8, key: &[(Field, Val)]) -> bool {
        !self.tables.contains(&t)
            && self.flows.get(&t).into_iter().flatten().all(|m| {
                m.iter().any(|c| {
                    key.iter().any(|(f, v)| {
                        *f == c.field
                            && matches!(v, Val::Const(x) if (x & c.mask) != (c.value & c.mask))
                    })
                })
            })
    }
}

/// How one bridge changed: flows added or removed (with their matches),
/// tables whose flows changed order (wholly changed), groups changed.
#[derive(Clone, Default)]
struct BridgeChange {
    /// Per table, the matches of the flows added or removed.
    flows: BTreeMap<u8, Vec<Vec<Constraint>>>,
    tables: BTreeSet<u8>,
    groups: BTreeSet<u32>,
}

type FlowKey<'a> = (u8, u16, u64, &'a str, &'a str);

fn flows_by_table(fs: Option<&Vec<FlowText>>) -> BTreeMap<u8, Vec<&FlowText>> {
    let mut m: BTreeMap<u8, Vec<&FlowText>> = BTreeMap::new();
    for f in fs.into_iter().flatten() {
        m.entry(f.table).or_default().push(f);
    }
    m
}

fn flow_keys(fs: Option<&Vec<FlowText>>) -> Vec<FlowKey<'_>> {
    fs.into_iter().flatten().map(|f| flow_key(&f)).collect()
}

fn flow_key<'a>(f: &&'a FlowText) -> FlowKey<'a> {
    (
        f.table,
        f.priority,
        f.cookie,
        f.matches.as_str(),
        f.actions.as_str(),
    )
}

/// How a bridge changed. `moved` pairs its flows (old position → new, by
/// [`positions`]; `None`: the same flows): when the kept flows keep their
/// order, the flows added and removed are read off it (a few flows of
/// tens of thousands at a Hoverboard, without sorting every flow);
/// otherwise each table is compared as a set ([`bridge_change_by_sets`]).
fn bridge_change(
    of: Option<&Vec<FlowText>>,
    nf: Option<&Vec<FlowText>>,
    og: Option<&Vec<GroupText>>,
    ng: Option<&Vec<GroupText>>,
    moved: Option<&[Option<u32>]>,
) -> BridgeChange {
    let (ofs, nfs) = (
        of.map(Vec::as_slice).unwrap_or(&[]),
        nf.map(Vec::as_slice).unwrap_or(&[]),
    );
    let in_order = moved.is_none_or(|m| {
        m.iter()
            .flatten()
            .zip(m.iter().flatten().skip(1))
            .all(|(a, b)| a < b)
    });
    let mut bc = match in_order {
        false => bridge_change_by_sets(of, nf),
        true => {
            let mut bc = BridgeChange::default();
            if let Some(m) = moved {
                let mut hit = vec![false; nfs.len()];
                for j in m.iter().flatten() {
                    hit[*j as usize] = true;
                }
                let removed = ofs.iter().zip(m).filter(|(_, j)| j.is_none());
                let added = nfs.iter().zip(&hit).filter(|(_, h)| !**h);
                for (f, _) in removed.chain(added.map(|(f, _)| (f, &None))) {
                    match crate::ofctl::parse_match(&f.matches) {
                        Ok(m) => bc.flows.entry(f.table).or_default().push(m),
                        Err(_) => {
                            bc.tables.insert(f.table);
                        }
                    }
                }
            }
            bc
        }
    };
    bc.groups = changed_groups(og, ng);
    bc
}

/// [`bridge_change`]'s flows by comparing each table's flows as sets: a
/// table whose kept flows changed order, or with duplicates, changed as a
/// whole.
fn bridge_change_by_sets(of: Option<&Vec<FlowText>>, nf: Option<&Vec<FlowText>>) -> BridgeChange {
    let mut bc = BridgeChange::default();
    let (o, n) = (flows_by_table(of), flows_by_table(nf));
    let k = flow_key;
    let tables: BTreeSet<u8> = o.keys().chain(n.keys()).copied().collect();
    for t in tables {
        let (ot, nt) = (
            o.get(&t).map(Vec::as_slice).unwrap_or(&[]),
            n.get(&t).map(Vec::as_slice).unwrap_or(&[]),
        );
        let os: BTreeSet<FlowKey> = ot.iter().map(k).collect();
        let ns: BTreeSet<FlowKey> = nt.iter().map(k).collect();
        let common_o: Vec<FlowKey> = ot.iter().map(k).filter(|x| ns.contains(x)).collect();
        let common_n: Vec<FlowKey> = nt.iter().map(k).filter(|x| os.contains(x)).collect();
        // duplicates or a new order of the kept flows: the table changed as a whole
        if os.len() != ot.len() || ns.len() != nt.len() || common_o != common_n {
            bc.tables.insert(t);
            continue;
        }
        for f in ot.iter().chain(nt) {
            let x = k(f);
            if os.contains(&x) != ns.contains(&x) {
                match crate::ofctl::parse_match(&f.matches) {
                    Ok(m) => bc.flows.entry(t).or_default().push(m),
                    Err(_) => {
                        bc.tables.insert(t);
                    }
                }
            }
        }
    }
    bc
}

/// The ids of the groups that differ between two generations of a bridge.
fn changed_groups(og: Option<&Vec<GroupText>>, ng: Option<&Vec<GroupText>>) -> BTreeSet<u32> {
    fn groups(gs: Option<&Vec<GroupText>>) -> BTreeMap<u32, (&str, &str)> {
        gs.into_iter()
            .flatten()
            .map(|g| (g.id, (g.kind.as_str(), g.buckets.as_str())))
            .collect()
    }
    let (og, ng) = (groups(og), groups(ng));
    og.keys()
        .chain(ng.keys())
        .filter(|id| og.get(id) != ng.get(id))
        .copied()
        .collect()
}

/// Equal text (`file:line` aside).
pub(crate) fn same_flow_text(a: &FlowText, b: &FlowText) -> bool {
    a.table == b.table
        && a.priority == b.priority
        && a.cookie == b.cookie
        && a.matches == b.matches
        && a.actions == b.actions
}

pub(crate) fn same_group_text(a: &GroupText, b: &GroupText) -> bool {
    a.id == b.id && a.kind == b.kind && a.buckets == b.buckets
}

/// Policy changes: VMs (their own record, the ports they held), tenants
/// (vnets, ACLs, multicast, DSR replies), VIPs and backends (by address).
fn policy_changes(old: &Policy, new: &Policy, middles: Option<&VmMiddles>, ch: &mut Changes) {
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
fn vm_changes(old: &Policy, new: &Policy, (om, nm): &VmMiddles, ch: &mut Changes) {
    for v in old.vms[om.clone()].iter().chain(&new.vms[nm.clone()]) {
        ch.vms.insert((v.tenant.clone(), v.name.clone()));
        ch.tenants.insert(v.tenant.clone());
        ch.ports.insert((v.host.clone(), v.port));
        ch.vm_addrs.insert((v.vni, v.ip));
    }
}

/// A VM's (tenant, name): what pairs the VMs of two generations.
fn name_of(v: &Vm) -> (&str, &str) {
    (v.tenant.as_str(), v.name.as_str())
}

/// The old and new VM lists' middles: past their common prefix and suffix
/// of equal records ([`common_ends`] under [`same_vm`]).
type VmMiddles = (std::ops::Range<usize>, std::ops::Range<usize>);

/// The same VM record (what the checks read of it): one shared record is,
/// without reading it (an edit leaves every VM it did not touch shared).
fn same_vm(x: &Arc<Vm>, y: &Arc<Vm>) -> bool {
    Arc::ptr_eq(x, y) || same_vm_record(x, y)
}

/// [`same_vm`] by the records' values.
fn same_vm_record(x: &Vm, y: &Vm) -> bool {
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
fn differing<K: Ord, V, R>(
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
    use proptest::prelude::*;

    /// The k-th of equal items in `old` is the k-th in `new`, spelled out.
    fn reference_pairing(old: &[u8], new: &[u8]) -> Vec<Option<u32>> {
        use std::collections::VecDeque;
        let mut at: HashMap<u8, VecDeque<u32>> = HashMap::new();
        for (i, k) in new.iter().enumerate() {
            at.entry(*k).or_default().push_back(i as u32);
        }
        old.iter()
            .map(|k| at.get_mut(k).and_then(VecDeque::pop_front))
            .collect()
    }

    proptest! {
        /// The prefix/suffix shortcut pairs items exactly as pairing every
        /// item does (few symbols: many duplicates, in the middles and out).
        #[test]
        fn positions_pair_as_every_item_paired(
            old in proptest::collection::vec(0u8..4, 0..12),
            edits in proptest::collection::vec((0usize..14, proptest::option::of(0u8..4)), 0..4),
        ) {
            let new = crate::edited(&old, edits);
            let expect = (old != new).then(|| reference_pairing(&old, &new));
            prop_assert_eq!(paired(&old, &new), reference_pairing(&old, &new));
            prop_assert_eq!(positions(&old, &new), expect);
        }

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
        for (t, ..) in a.dsr.symmetric_difference(&b.dsr) {
            tenants.insert(t.clone());
        }
        let exposures = *a.vips != *b.vips || *a.backends != *b.backends;
        (tenants, mcast, exposures)
    }
}
