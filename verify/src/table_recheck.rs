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
//!   endpoint: re-run for the endpoints whose rows the dirty devices hold
//!   in either generation (findings kept per endpoint);
//! - AFF-1's member tunnels: [`tables::AFF1_TUNNEL_RELATIONS`], the VMs and
//!   the underlay;
//! - AFF-4: [`tables::AFF4_RELATIONS`], the SNAT grants of each bridge's
//!   flows (kept per device, re-read for the dirty devices), the VMs and
//!   the underlay;
//! - CAP-1: [`tables::CAP1_RELATIONS`] and the capacities;
//! - AFF-3: the whole network (it traces NF taps); re-run whenever either
//!   generation has taps, else vacuous (which bridges have taps is kept,
//!   re-read for the dirty devices: a scan of every flow was most of an
//!   update that changed no artifact).

use crate::artifacts::Artifacts;
use crate::dirty::Dirty;
use crate::network::Network;
use crate::policy::Policy;
use crate::report::Counterexample;
use crate::tables::{self, Endpoint, Grant};
use crate::{nf, TableFindings};
use std::collections::{BTreeMap, BTreeSet};

/// What of a generation an update may have changed, for the table checks.
pub struct Touched<'a> {
    pub dirty: &'a Dirty,
    /// The generation before the update (what the dirty devices held).
    pub old: &'a Artifacts,
    /// Some VM's record (tenant, name, VNI, MAC, address, host, port) or
    /// the VMs' order differ.
    pub vms: bool,
    pub underlay: bool,
    pub capacity: bool,
}

impl Touched<'_> {
    fn any(&self, rels: &[&str]) -> bool {
        rels.iter().any(|r| self.dirty.relation(r))
    }
}

/// Each table check's findings on the current generation.
pub struct TableChecks {
    aff1_vectors: BTreeMap<Endpoint, Vec<Counterexample>>,
    aff1_tunnels: Vec<Counterexample>,
    aff3: Vec<Counterexample>,
    aff4: Vec<Counterexample>,
    cap1: Vec<Counterexample>,
    /// The SNAT grants of each bridge's flows, by device (in device order).
    snat: BTreeMap<String, Vec<Grant>>,
    /// The bridges with an NF tap ([`nf::bridge_has_taps`]).
    tapped: BTreeSet<String>,
    /// Which checks the last update ran again.
    pub rerun: Vec<&'static str>,
}

impl TableChecks {
    /// Every table check, on one generation.
    pub fn new(net: &Network, a: &Artifacts, p: &Policy, limit: usize) -> TableChecks {
        let snat = grants_by_device(a);
        TableChecks {
            aff1_vectors: tables::aff1_vectors_by_endpoint(a, None),
            aff1_tunnels: tables::aff1_tunnels(a, p),
            aff3: nf::aff3(net, p, limit),
            aff4: tables::aff4_with(a, p, snat.values().flatten()),
            cap1: tables::cap1(a, p),
            snat,
            tapped: net
                .bridges
                .iter()
                .filter(|b| nf::bridge_has_taps(b))
                .map(|b| b.name.clone())
                .collect(),
            rerun: Vec::new(),
        }
    }

    /// Moves to the next generation: re-runs the checks whose inputs `t`
    /// says may have changed.
    pub fn update(&mut self, net: &Network, a: &Artifacts, p: &Policy, limit: usize, t: &Touched) {
        self.rerun.clear();
        if t.any(&tables::AFF1_VECTOR_RELATIONS) {
            // a device Dirty does not name holds the same rows in the same
            // order: only endpoints the dirty devices' rows name can differ
            let mut eps = tables::vector_endpoints(t.old, &t.dirty.devices);
            eps.extend(tables::vector_endpoints(a, &t.dirty.devices));
            // a finding cites its rows' `file:line`, which rows removed or
            // added before them move: every endpoint with a finding too
            eps.extend(self.aff1_vectors.keys().copied());
            for ep in &eps {
                self.aff1_vectors.remove(ep);
            }
            self.aff1_vectors
                .extend(tables::aff1_vectors_by_endpoint(a, Some(&eps)));
            self.rerun.push("AFF-1 vectors");
        }
        if t.vms || t.underlay || t.any(&tables::AFF1_TUNNEL_RELATIONS) {
            self.aff1_tunnels = tables::aff1_tunnels(a, p);
            self.rerun.push("AFF-1 tunnels");
        }
        let mut grants_changed = false;
        for dev in &t.dirty.devices {
            let now = a.flows.get(dev).map(|f| tables::flow_grants(f));
            let before = match &now {
                Some(g) => self.snat.insert(dev.clone(), g.clone()),
                None => self.snat.remove(dev),
            };
            grants_changed |= before.unwrap_or_default() != now.unwrap_or_default();
        }
        if grants_changed || t.vms || t.underlay || t.any(&tables::AFF4_RELATIONS) {
            self.aff4 = tables::aff4_with(a, p, self.snat.values().flatten());
            self.rerun.push("AFF-4");
        }
        if t.capacity || t.any(&tables::CAP1_RELATIONS) {
            self.cap1 = tables::cap1(a, p);
            self.rerun.push("CAP-1");
        }
        for dev in &t.dirty.devices {
            match net.bridge(dev).filter(|b| nf::bridge_has_taps(b)) {
                Some(_) => self.tapped.insert(dev.clone()),
                None => self.tapped.remove(dev),
            };
        }
        // AFF-3 reads paths through the whole network: vacuous without taps
        if !self.tapped.is_empty() || !self.aff3.is_empty() {
            self.aff3 = nf::aff3(net, p, limit);
            self.rerun.push("AFF-3");
        }
    }

    /// The findings, as [`TableFindings::check`] gives them (no AFF-2/PLAN-1).
    pub fn findings(&self) -> TableFindings {
        let mut aff1: Vec<Counterexample> = self.aff1_vectors.values().flatten().cloned().collect();
        aff1.extend(self.aff1_tunnels.iter().cloned());
        TableFindings {
            aff1,
            aff3: self.aff3.clone(),
            aff4: self.aff4.clone(),
            cap1: self.cap1.clone(),
            aff2: None,
            plan1: None,
        }
    }
}

fn grants_by_device(a: &Artifacts) -> BTreeMap<String, Vec<Grant>> {
    a.flows
        .iter()
        .map(|(d, f)| (d.clone(), tables::flow_grants(f)))
        .filter(|(_, g)| !g.is_empty())
        .collect()
}
