//! Which kept VM results read each part of the network: the index an
//! incremental update looks a change up in, so it visits the VMs a change
//! can affect instead of every VM.
//!
//! Expects each result's [`Footprint`] under a stable slot (`incremental.rs`
//! keeps results in slots that do not move as VMs come and go).
//! Guarantees: after [`Readers::add`] of a slot's footprint and until its
//! [`Readers::remove`], every lookup of a part the footprint names returns
//! that slot — a superset is fine (the update then runs its exact test,
//! `Changes::affected`, on it), a missed slot never happens.

use crate::bridge::Val;
use crate::network::Footprint;
use crate::space::Field;
use std::collections::{BTreeMap, HashMap, HashSet};

type Quick = std::hash::BuildHasherDefault<netc_compiler::fxhash::FxHasher>;
type Slots = HashSet<usize, Quick>;

/// A table's reads: the field values it was reached with → the slots.
pub type TableReads = HashMap<Vec<(Field, Val)>, Slots, Quick>;

/// Part of the network → the slots whose footprint reads it.
#[derive(Default)]
pub struct Readers {
    /// (bridge, table) → the field values each slot reached it with: a
    /// changed flow meets only the values it can match (a Hoverboard read
    /// by most VMs keys its routes on the tenant).
    tables: HashMap<(String, u8), TableReads, Quick>,
    groups: HashMap<(String, u32), Slots, Quick>,
    addresses: HashMap<u32, Slots, Quick>,
    /// Ordered: a change of a whole instance is a range of its keys.
    instances: BTreeMap<(String, u32), Slots>,
    fanout: HashMap<u128, Slots, Quick>,
    /// Slots that fanned out any `tun_id`.
    any_fanout: Slots,
    ports: HashMap<(String, u32), Slots, Quick>,
    /// Slots that reached any load-balancer instance (whose paths may hold
    /// a load-balancer hop: what an exposure check reads).
    lb: Slots,
}

impl Readers {
    pub fn add(&mut self, slot: usize, fp: &Footprint) {
        for (b, r) in &fp.bridges {
            for (t, key) in r.tables.keys() {
                let reads = self.tables.entry((b.clone(), *t)).or_default();
                match reads.get_mut(key) {
                    Some(s) => {
                        s.insert(slot);
                    }
                    None => {
                        reads.insert(key.clone(), Slots::from_iter([slot]));
                    }
                }
            }
            for g in r.groups.keys() {
                self.groups.entry((b.clone(), *g)).or_default().insert(slot);
            }
        }
        for a in fp.addresses.keys() {
            self.addresses.entry(*a).or_default().insert(slot);
        }
        for k in fp.instances.keys() {
            self.instances.entry(k.clone()).or_default().insert(slot);
        }
        for t in fp.fanout.keys() {
            self.fanout.entry(*t).or_default().insert(slot);
        }
        if !fp.fanout.is_empty() {
            self.any_fanout.insert(slot);
        }
        for p in &fp.ports {
            self.ports.entry(p.clone()).or_default().insert(slot);
        }
        if !fp.instances.is_empty() {
            self.lb.insert(slot);
        }
    }

    pub fn remove(&mut self, slot: usize, fp: &Footprint) {
        fn out<K: std::hash::Hash + Eq>(m: &mut HashMap<K, Slots, Quick>, k: &K, slot: usize) {
            if let Some(s) = m.get_mut(k) {
                s.remove(&slot);
                if s.is_empty() {
                    m.remove(k);
                }
            }
        }
        for (b, r) in &fp.bridges {
            for (t, key) in r.tables.keys() {
                let at = (b.clone(), *t);
                if let Some(reads) = self.tables.get_mut(&at) {
                    out(reads, key, slot);
                    if reads.is_empty() {
                        self.tables.remove(&at);
                    }
                }
            }
            for g in r.groups.keys() {
                out(&mut self.groups, &(b.clone(), *g), slot);
            }
        }
        for a in fp.addresses.keys() {
            out(&mut self.addresses, a, slot);
        }
        for k in fp.instances.keys() {
            if let Some(s) = self.instances.get_mut(k) {
                s.remove(&slot);
                if s.is_empty() {
                    self.instances.remove(k);
                }
            }
        }
        for t in fp.fanout.keys() {
            out(&mut self.fanout, t, slot);
        }
        self.any_fanout.remove(&slot);
        for p in &fp.ports {
            out(&mut self.ports, p, slot);
        }
        self.lb.remove(&slot);
    }

    /// Each distinct set of field values table `t` of bridge `b` was
    /// reached with, and its readers.
    pub fn table(&self, b: &str, t: u8) -> Option<&TableReads> {
        self.tables.get(&(b.to_string(), t))
    }

    pub fn group(&self, b: &str, g: u32) -> impl Iterator<Item = usize> + '_ {
        self.groups
            .get(&(b.to_string(), g))
            .into_iter()
            .flatten()
            .copied()
    }

    pub fn address(&self, a: u32) -> impl Iterator<Item = usize> + '_ {
        self.addresses.get(&a).into_iter().flatten().copied()
    }

    pub fn instance(&self, k: &(String, u32)) -> impl Iterator<Item = usize> + '_ {
        self.instances.get(k).into_iter().flatten().copied()
    }

    /// The readers of every key from `lo` to `hi` (both included).
    pub fn instances_between<'a>(
        &'a self,
        lo: &(String, u32),
        hi: &(String, u32),
    ) -> impl Iterator<Item = usize> + 'a {
        self.instances
            .range(lo.clone()..=hi.clone())
            .flat_map(|(_, s)| s.iter().copied())
    }

    /// Readers of fan-out `tun_id` `t`; `None`: of any.
    pub fn fanout(&self, t: Option<u128>) -> Box<dyn Iterator<Item = usize> + '_> {
        match t {
            None => Box::new(self.any_fanout.iter().copied()),
            Some(t) => Box::new(self.fanout.get(&t).into_iter().flatten().copied()),
        }
    }

    pub fn port(&self, p: &(String, u32)) -> impl Iterator<Item = usize> + '_ {
        self.ports.get(p).into_iter().flatten().copied()
    }

    pub fn lb_readers(&self) -> impl Iterator<Item = usize> + '_ {
        self.lb.iter().copied()
    }
}
