//! The table checks across generations: each re-run only when what it reads changed.
//!
//! Expects the current generation's network, artifacts and policy, and for
//! an update what may have changed ([`Touched`]: the [`Dirty`] devices and
//! relations, whether the VMs, the underlay or the capacities differ).
//! Guarantees: [`TableChecks::findings`] equals what
//! [`crate::TableFindings::check`] finds on the current generation (AFF-2
//! and PLAN-1 aside, which compare two generations and are left to the
//! report). Each check declares what it reads (`tables.rs`):
//!
//! - AFF-1's vectors: [`tables::AFF1_VECTOR_RELATIONS`] only, and per
//!   endpoint: re-run for the endpoints of the rows added or removed
//!   (`Touched::moves`; findings kept per endpoint, each row's endpoint
//!   parsed once and moved with the rows);
//! - AFF-1's member tunnels: [`tables::AFF1_TUNNEL_RELATIONS`], the VMs and
//!   the underlay, per row: re-run for rows added and rows naming a changed
//!   VM's (VNI, address) (findings kept per row, each row's member parsed
//!   once and moved with the rows; all when the underlay changed);
//! - AFF-1's health probes: [`crate::probes::RELATIONS`], the VMs and the
//!   policy's DIP endpoints: re-run in full when any of them changed;
//! - AFF-4: [`tables::AFF4_RELATIONS`], the SNAT grants of each bridge's
//!   flows (kept per device with their flows' positions; for a dirty
//!   device moved by its flows' moves and only the edited middle read), the
//!   underlay,
//!   and of the VMs only those with a SNAT owner's (VNI, address) or a
//!   SNAT range's tenant ([`tables::aff4_vm_reads`]);
//! - CAP-1: [`tables::CAP1_RELATIONS`] and the capacities (each
//!   switch's table use kept, moved by the rows added and removed);
//! - PUSH-1 on the bridges: each bridge's flows and groups only; kept per
//!   bridge, re-run for the dirty devices;
//! - AFF-3: the whole network (it traces NF taps); re-run whenever either
//!   generation has taps, else vacuous (which bridges have taps is kept,
//!   re-read for the dirty devices: a scan of every flow was most of an
//!   update that changed no artifact).

use crate::artifacts::Artifacts;
use crate::dirty::Dirty;
use crate::incremental::Moves;
use crate::network::Network;
use crate::policy::Policy;
use crate::report::Counterexample;
use crate::row_moves::RowMoves;
use crate::tables::{self, Endpoint, Grant};
use crate::{nf, push, TableFindings};
use std::collections::{BTreeMap, BTreeSet};

/// What of a generation an update may have changed, for the table checks.
pub struct Touched<'a> {
    pub dirty: &'a Dirty,
    /// The dirty relations' rows paired, old → new (shared with the
    /// load-balancer model; `moves.old` is the generation before).
    pub moves: &'a RowMoves<'a>,
    /// Some VM's record (tenant, name, VNI, MAC, address, host, port) or
    /// the VMs' order differ.
    pub vms: bool,
    /// The (VNI, address) of every VM whose record differs, in either
    /// generation (`None`: not known, or the VMs appeared or all went).
    pub vm_addrs: Option<&'a BTreeSet<(u64, u32)>>,
    /// The tenants of those VMs (a superset will do; `None`: not known).
    pub vm_tenants: Option<&'a BTreeSet<String>>,
    pub underlay: bool,
    pub capacity: bool,
    /// Per dirty bridge the update paired, its flows' moves (`None`: the
    /// same flows); a dirty device not here is read in full.
    pub(crate) flow_moves: &'a BTreeMap<String, Option<Moves>>,
}

impl Touched<'_> {
    fn any(&self, rels: &[&str]) -> bool {
        rels.iter().any(|r| self.dirty.relation(r))
    }
}

/// Each table check's findings on the current generation.
pub struct TableChecks {
    /// PUSH-1's findings per bridge ([`push::push1`]).
    push1: BTreeMap<String, Vec<Counterexample>>,
    aff1_vectors: BTreeMap<Endpoint, Vec<Counterexample>>,
    /// Each AFF-1 vector row's endpoint, moved with the rows: an update
    /// parses only the rows added.
    endpoints: tables::RowEndpoints,
    /// AFF-1's tunnel findings by (relation of [`tables::AFF1_TUNNEL_RELATIONS`], row).
    aff1_tunnels: Vec<(usize, u32, Counterexample)>,
    /// AFF-1's probe findings, and the DIP endpoints they were checked against.
    aff1_probes: Vec<Counterexample>,
    probes_dsr: std::sync::Arc<BTreeSet<(String, String, u8, u16)>>,
    /// Per relation of [`tables::AFF1_TUNNEL_RELATIONS`], each row's member
    /// (VNI, address) ([`tables::tunnel_member`]): parsed once and moved
    /// with the rows, so finding the rows that name a changed VM is a scan
    /// of numbers, not a parse of every row.
    members: [Vec<Option<(u64, u32)>>; 2],
    aff3: Vec<Counterexample>,
    /// AFF-1 on the hosts' load-balancer groups ([`crate::hostlb`]).
    aff1_hostlb: Vec<Counterexample>,
    /// The bridges with a host load-balancer group.
    hashed: BTreeSet<String>,
    aff4: Vec<Counterexample>,
    cap1: Vec<Counterexample>,
    /// Each switch's CAP-1 table use, moved by the rows added and removed
    /// (a fresh count reads every P4 row: tens of thousands at 10k VMs).
    cap_use: tables::CapUse,
    /// The SNAT grants of each bridge's flows, by device (in device
    /// order), each with its flow's position.
    snat: BTreeMap<String, Vec<(u32, Grant)>>,
    /// What AFF-4 reads of the VMs ([`tables::aff4_vm_reads`]): a VM
    /// change that meets neither leaves it as it was.
    aff4_owners: BTreeSet<(u64, u32)>,
    aff4_tenants: BTreeSet<String>,
    /// The bridges with an NF tap ([`nf::bridge_has_taps`]).
    tapped: BTreeSet<String>,
    /// Which checks the last update ran again.
    pub rerun: Vec<&'static str>,
    /// What each of them took (ms), and the steps outside them.
    pub rerun_millis: Vec<(&'static str, f64)>,
}

impl TableChecks {
    /// Every table check, on one generation.
    pub fn new(net: &Network, a: &Artifacts, p: &Policy, limit: usize) -> TableChecks {
        let snat = grants_by_device(a);
        let (aff4_owners, aff4_tenants) = tables::aff4_vm_reads(a);
        let cap_use = tables::cap1_use(a);
        TableChecks {
            push1: push::push1(net, a),
            aff1_vectors: tables::aff1_vectors_by_endpoint(a, None, None),
            endpoints: tables::row_endpoints(a),
            aff1_tunnels: tunnel_findings(a, p),
            aff1_probes: crate::probes::check(a, p),
            probes_dsr: p.dsr.clone(),
            members: tunnel_members(a),
            aff3: nf::aff3(net, a, p, limit),
            aff1_hostlb: crate::hostlb::aff1(net, a, p),
            hashed: net
                .bridges
                .iter()
                .filter(|b| crate::hostlb::bridge_has_hashed(b))
                .map(|b| b.name.clone())
                .collect(),
            aff4: tables::aff4_with(a, p, snat.values().flatten().map(|(_, g)| g)),
            cap1: tables::cap1_of(&cap_use, p),
            cap_use,
            snat,
            aff4_owners,
            aff4_tenants,
            tapped: net
                .bridges
                .iter()
                .filter(|b| nf::bridge_has_taps(b))
                .map(|b| b.name.clone())
                .collect(),
            rerun: Vec::new(),
            rerun_millis: Vec::new(),
        }
    }

    /// Moves to the next generation: re-runs the checks whose inputs `t`
    /// says may have changed.
    pub fn update(&mut self, net: &Network, a: &Artifacts, p: &Policy, limit: usize, t: &Touched) {
        self.rerun.clear();
        self.rerun_millis.clear();
        let mut t0 = std::time::Instant::now();
        let mut bridges_dirty = false;
        for dev in &t.dirty.devices {
            let found = net.bridge(dev).map(|b| push::bridge(b, a));
            bridges_dirty |= found.is_some() || self.push1.contains_key(dev);
            match found {
                Some(cxs) if !cxs.is_empty() => self.push1.insert(dev.clone(), cxs),
                _ => self.push1.remove(dev),
            };
        }
        if bridges_dirty {
            self.ran("PUSH-1 of dirty bridges", &mut t0);
        }
        if t.any(&tables::AFF1_VECTOR_RELATIONS) {
            // only the endpoints of rows added or removed can differ (a
            // dirty software Mux holds every VIP: its rows are diffed, not
            // all read again)
            let mut eps = BTreeSet::new();
            for (k, rel) in tables::AFF1_VECTOR_RELATIONS.iter().enumerate() {
                let Some(pos) = t.moves.of(rel) else {
                    continue;
                };
                let rows = a.rows(rel);
                let (was, mut now) = (&self.endpoints[k], vec![None; rows.len()]);
                let mut hit = vec![false; rows.len()];
                let (mut last, mut in_order) = (None, true);
                for (i, j) in pos.iter().enumerate() {
                    match j {
                        Some(j) => {
                            hit[*j as usize] = true;
                            now[*j as usize] = was.get(i).copied().flatten();
                            in_order &= last.is_none_or(|l| l < *j);
                            last = Some(*j);
                        }
                        // a row removed
                        None => eps.extend(was.get(i).copied().flatten()),
                    }
                }
                for j in (0..rows.len()).filter(|j| !hit[*j]) {
                    now[j] = tables::row_endpoint(rel, &rows[j]);
                    eps.extend(now[j]);
                }
                if !in_order {
                    // rows moved out of order: every row counts as changed
                    // (as `lb::changed_rows` takes them)
                    eps.extend(was.iter().chain(&now).flatten());
                }
                self.endpoints[k] = now;
            }
            // a finding cites its rows' `file:line`, which rows removed or
            // added before them move: every endpoint with a finding too
            eps.extend(self.aff1_vectors.keys().copied());
            for ep in &eps {
                self.aff1_vectors.remove(ep);
            }
            self.aff1_vectors.extend(tables::aff1_vectors_by_endpoint(
                a,
                Some(&eps),
                Some(&self.endpoints),
            ));
            self.ran("AFF-1 vectors", &mut t0);
        }
        if t.vms || t.underlay || t.any(&tables::AFF1_TUNNEL_RELATIONS) {
            if !self.recheck_tunnels(a, p, t) {
                self.aff1_tunnels = tunnel_findings(a, p);
                self.members = tunnel_members(a);
            }
            self.ran("AFF-1 tunnels", &mut t0);
        }
        let dsr = !crate::policy::shared_eq(&self.probes_dsr, &p.dsr);
        if t.vms || dsr || t.any(&crate::probes::RELATIONS) {
            self.aff1_probes = crate::probes::check(a, p);
            self.probes_dsr = p.dsr.clone();
            self.ran("AFF-1 probes", &mut t0);
        }
        // a grant's flow that only moved changes no finding but the cites
        // of an overlap (a line added above a host's SNAT flows moved them)
        let (mut grants_changed, mut cites_moved) = (false, false);
        for dev in &t.dirty.devices {
            let now = a.flows.get(dev).map(|f| match t.flow_moves.get(dev) {
                Some(m) => {
                    let was = self.snat.get(dev).map_or(&[][..], Vec::as_slice);
                    tables::moved_grants(f, was, m.as_ref())
                }
                None => tables::flow_grants_in(f, 0..f.len()),
            });
            let before = match &now {
                Some(g) => self.snat.insert(dev.clone(), g.clone()),
                None => self.snat.remove(dev),
            };
            let (b, n) = (before.unwrap_or_default(), now.unwrap_or_default());
            let pairs = || b.iter().zip(&n).map(|((_, x), (_, y))| (x, y));
            if b.len() != n.len() || pairs().any(|(x, y)| !x.same_but_cite(y)) {
                grants_changed = true;
            } else if pairs().any(|(x, y)| x != y) {
                cites_moved = true;
            }
        }
        grants_changed |= cites_moved && !self.aff4.is_empty();
        self.lap("SNAT grants of dirty bridges", &mut t0);
        let aff4_rows = t.any(&tables::AFF4_RELATIONS);
        // AFF-4 reads a VM by its (VNI, address) or its tenant
        let aff4_vms = t.vms
            && match (t.vm_addrs, t.vm_tenants) {
                (Some(addrs), Some(tenants)) => {
                    addrs.iter().any(|x| self.aff4_owners.contains(x))
                        || tenants.iter().any(|x| self.aff4_tenants.contains(x))
                }
                _ => true,
            };
        if aff4_rows {
            (self.aff4_owners, self.aff4_tenants) = tables::aff4_vm_reads(a);
        }
        if grants_changed || aff4_vms || t.underlay || aff4_rows {
            let grants = self.snat.values().flatten().map(|(_, g)| g);
            self.aff4 = tables::aff4_with(a, p, grants);
            self.ran("AFF-4", &mut t0);
        }
        let cap_rows = t.any(&tables::CAP1_RELATIONS);
        if cap_rows {
            tables::move_cap_use(&mut self.cap_use, t.moves);
        }
        if t.capacity || cap_rows {
            self.cap1 = tables::cap1_of(&self.cap_use, p);
            self.ran("CAP-1", &mut t0);
        }
        for dev in &t.dirty.devices {
            match net.bridge(dev).filter(|b| nf::bridge_has_taps(b)) {
                Some(_) => self.tapped.insert(dev.clone()),
                None => self.tapped.remove(dev),
            };
        }
        self.lap("NF taps of dirty bridges", &mut t0);
        for dev in &t.dirty.devices {
            match net
                .bridge(dev)
                .filter(|b| crate::hostlb::bridge_has_hashed(b))
            {
                Some(_) => self.hashed.insert(dev.clone()),
                None => self.hashed.remove(dev),
            };
        }
        // the host load balancers' buckets are followed through the network
        let reads = !t.dirty.devices.is_empty() || t.vms || t.underlay;
        if reads && (!self.hashed.is_empty() || !self.aff1_hostlb.is_empty()) {
            self.aff1_hostlb = crate::hostlb::aff1(net, a, p);
            self.ran("AFF-1 host load balancers", &mut t0);
        }
        // AFF-3 reads paths through the whole network: vacuous without taps
        if !self.tapped.is_empty() || !self.aff3.is_empty() {
            self.aff3 = nf::aff3(net, a, p, limit);
            self.ran("AFF-3", &mut t0);
        }
    }

    /// Notes that `check` ran again, and its time since `t0` (then now).
    fn ran(&mut self, check: &'static str, t0: &mut std::time::Instant) {
        self.rerun.push(check);
        self.lap(check, t0);
    }

    /// Notes the time of `step` since `t0` (then now).
    fn lap(&mut self, step: &'static str, t0: &mut std::time::Instant) {
        let now = std::time::Instant::now();
        self.rerun_millis
            .push((step, (now - *t0).as_secs_f64() * 1e3));
        *t0 = now;
    }

    /// The findings, as [`TableFindings::check`] gives them (no AFF-2/PLAN-1).
    pub fn findings(&self) -> TableFindings {
        let mut aff1: Vec<Counterexample> = self.aff1_vectors.values().flatten().cloned().collect();
        aff1.extend(self.aff1_tunnels.iter().map(|(_, _, c)| c.clone()));
        aff1.extend(self.aff1_probes.iter().cloned());
        aff1.extend(self.aff1_hostlb.iter().cloned());
        TableFindings {
            push1: self.push1.values().flatten().cloned().collect(),
            aff1,
            aff3: self.aff3.clone(),
            aff4: self.aff4.clone(),
            cap1: self.cap1.clone(),
            aff2: None,
            plan1: None,
        }
    }
}

/// Each AFF-1 tunnel row's member, per relation.
fn tunnel_members(a: &Artifacts) -> [Vec<Option<(u64, u32)>>; 2] {
    tables::AFF1_TUNNEL_RELATIONS.map(|rel| {
        a.rows(rel)
            .iter()
            .map(|r| tables::tunnel_member(r))
            .collect()
    })
}

/// AFF-1's tunnel findings with the row each is of.
fn tunnel_findings(a: &Artifacts, p: &Policy) -> Vec<(usize, u32, Counterexample)> {
    let check = tables::TunnelCheck::new(p);
    let mut out = Vec::new();
    for (k, rel) in tables::AFF1_TUNNEL_RELATIONS.iter().enumerate() {
        for (j, r) in a.rows(rel).iter().enumerate() {
            out.extend(check.row(rel, r).into_iter().map(|c| (k, j as u32, c)));
        }
    }
    out
}

impl TableChecks {
    /// AFF-1's tunnels re-checked on the rows that may find otherwise: rows
    /// added, and rows naming a VM (VNI, address) whose record changed; the
    /// other findings kept (their row renumbered, their citation re-read).
    /// False when every row must be read again (the underlay changed, the
    /// changed VMs are not known, or rows moved out of order).
    fn recheck_tunnels(&mut self, a: &Artifacts, p: &Policy, t: &Touched) -> bool {
        let Some(addrs) = t.vm_addrs.filter(|_| !t.underlay) else {
            return false;
        };
        let mut moved: [Option<crate::row_moves::Moves>; 2] = [None, None];
        let mut redo: BTreeSet<(usize, u32)> = BTreeSet::new();
        for (k, rel) in tables::AFF1_TUNNEL_RELATIONS.iter().enumerate() {
            let rows = a.rows(rel);
            if let Some(pos) = t.moves.of(rel) {
                let mut hit = vec![false; rows.len()];
                let mut members = vec![None; rows.len()];
                let mut last = None;
                for (i, j) in pos.iter().enumerate() {
                    let Some(j) = *j else { continue };
                    if last.is_some_and(|l| l >= j) {
                        return false;
                    }
                    last = Some(j);
                    hit[j as usize] = true;
                    members[j as usize] = self.members[k].get(i).copied().flatten();
                }
                for j in (0..rows.len()).filter(|j| !hit[*j]) {
                    redo.insert((k, j as u32));
                    members[j] = tables::tunnel_member(&rows[j]);
                }
                self.members[k] = members;
                moved[k] = Some(pos);
            }
            if !addrs.is_empty() {
                for (j, m) in self.members[k].iter().enumerate() {
                    if m.is_some_and(|m| addrs.contains(&m)) {
                        redo.insert((k, j as u32));
                    }
                }
            }
        }
        let mut kept: Vec<(usize, u32, Counterexample)> = std::mem::take(&mut self.aff1_tunnels)
            .into_iter()
            .filter_map(|(k, i, c)| {
                let j = match &moved[k] {
                    None => i,
                    Some(pos) => (*pos.get(i as usize)?)?,
                };
                (!redo.contains(&(k, j))).then_some((k, j, c))
            })
            .collect();
        // the policy's lookups only for rows to check, and only of their members
        if !redo.is_empty() {
            let rows = |k: usize| a.rows(tables::AFF1_TUNNEL_RELATIONS[k]);
            let members: BTreeSet<(u64, u32)> = redo
                .iter()
                .filter_map(|&(k, j)| tables::tunnel_member(&rows(k)[j as usize]))
                .collect();
            let check = tables::TunnelCheck::for_members(p, &members);
            for &(k, j) in &redo {
                let rel = tables::AFF1_TUNNEL_RELATIONS[k];
                let found = check.row(rel, &a.rows(rel)[j as usize]);
                kept.extend(found.into_iter().map(|c| (k, j, c)));
            }
        }
        // row order, and a row's findings in the order it found them
        kept.sort_by_key(|(k, j, _)| (*k, *j));
        for (k, j, c) in &mut kept {
            // rows added or removed above move a kept row's line
            let r = &a.rows(tables::AFF1_TUNNEL_RELATIONS[*k])[*j as usize];
            c.cites = vec![r.at.clone()];
        }
        self.aff1_tunnels = kept;
        true
    }
}

fn grants_by_device(a: &Artifacts) -> BTreeMap<String, Vec<(u32, Grant)>> {
    a.flows
        .iter()
        .map(|(d, f)| (d.clone(), tables::flow_grants_in(f, 0..f.len())))
        .filter(|(_, g)| !g.is_empty())
        .collect()
}
