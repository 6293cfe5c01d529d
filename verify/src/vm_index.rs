//! The VMs by port and by tenant, named by slot, kept across updates.
//!
//! The path checks ask two questions of the VM list: which VM owns a
//! delivery port (the first VM there in the policy's order, as
//! `Policy::vm_at` says) and which VMs a tenant has (in the policy's
//! order). A full verification asks them of one policy; an incremental
//! one asks them after every update, and building the two hash maps over
//! every VM each time cost 2–30 ms at 10k VMs (allocation and first-touch
//! page faults, which varied run to run). So the maps hold *slots*, which a
//! VM keeps while it exists (`incremental.rs`), and an update moves only
//! the VMs it added, removed or changed ([`VmIndex::add`],
//! [`VmIndex::remove`]); the answers turn slots into the new policy's
//! indices through the slot → index map the verifier keeps anyway
//! ([`Slots`]). Guarantees: after any sequence of adds and removes, the
//! answers equal those of an index built from scratch on the current
//! policy (a property test below checks it).

use crate::policy::Vm;
use std::collections::HashMap;

/// VMs by (host, port) and by tenant, as slots.
#[derive(Default, Clone, Debug)]
pub struct VmIndex {
    /// host → port → the slots of the VMs there (one, unless the intent
    /// puts two VMs at a port, which validation refuses; kept anyway so
    /// the first one in policy order can be found).
    by_port: HashMap<String, HashMap<u32, Vec<usize>>>,
    /// tenant → its VMs' slots, in no particular order.
    by_tenant: HashMap<String, Vec<usize>>,
}

/// How slots turn into policy indices.
#[derive(Clone, Copy)]
pub enum Slots<'a> {
    /// Slot i is VM i (a full verification).
    Identity,
    /// Slot → index of the VM there (`None`: a free slot).
    Map(&'a [Option<usize>]),
}

impl Slots<'_> {
    fn index(self, slot: usize) -> Option<usize> {
        match self {
            Slots::Identity => Some(slot),
            Slots::Map(m) => m.get(slot).copied().flatten(),
        }
    }
}

impl VmIndex {
    /// Every VM of `vms`, VM i at slot i.
    pub fn of<V: std::borrow::Borrow<Vm>>(vms: &[V]) -> VmIndex {
        let mut ix = VmIndex::default();
        for (i, v) in vms.iter().enumerate() {
            ix.add(i, v.borrow());
        }
        ix
    }

    /// Notes that `vm` sits in `slot`.
    pub fn add(&mut self, slot: usize, vm: &Vm) {
        self.by_port
            .entry(vm.host.clone())
            .or_default()
            .entry(vm.port)
            .or_default()
            .push(slot);
        self.by_tenant
            .entry(vm.tenant.clone())
            .or_default()
            .push(slot);
    }

    /// Forgets that `vm` sat in `slot` (`vm` as it was when added).
    pub fn remove(&mut self, slot: usize, vm: &Vm) {
        if let Some(ports) = self.by_port.get_mut(vm.host.as_str()) {
            if let Some(at) = ports.get_mut(&vm.port) {
                at.retain(|&s| s != slot);
                if at.is_empty() {
                    ports.remove(&vm.port);
                }
            }
            if ports.is_empty() {
                self.by_port.remove(vm.host.as_str());
            }
        }
        if let Some(of) = self.by_tenant.get_mut(vm.tenant.as_str()) {
            of.retain(|&s| s != slot);
            if of.is_empty() {
                self.by_tenant.remove(vm.tenant.as_str());
            }
        }
    }

    /// The index of the VM that owns port `port` of `host`: the first one
    /// there in policy order.
    pub fn owner(&self, host: &str, port: u32, slots: Slots<'_>) -> Option<usize> {
        let at = self.by_port.get(host)?.get(&port)?;
        at.iter().filter_map(|&s| slots.index(s)).min()
    }

    /// The indices of a tenant's VMs, ascending.
    pub fn tenant(&self, tenant: &str, slots: Slots<'_>) -> Vec<usize> {
        let Some(of) = self.by_tenant.get(tenant) else {
            return Vec::new();
        };
        let mut out: Vec<usize> = of.iter().filter_map(|&s| slots.index(s)).collect();
        // slots are added in policy order in a full verification, so this
        // is usually sorted already
        if !out.is_sorted() {
            out.sort_unstable();
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn vm(tenant: u8, name: u8, host: u8, port: u32) -> Vm {
        Vm {
            tenant: format!("t{tenant}"),
            name: format!("v{name}"),
            vni: u64::from(tenant),
            mac: 0,
            ip: 0,
            host: format!("h{host}"),
            port,
            at: String::new(),
        }
    }

    /// Each (host, port)'s owner and each tenant's VMs, as indices.
    type Answers = (Vec<(String, u32, Option<usize>)>, Vec<(String, Vec<usize>)>);

    /// What the index must answer, from the VM list itself.
    fn expected(vms: &[Vm]) -> Answers {
        let mut ports = Vec::new();
        let mut tenants = Vec::new();
        for h in 0..4u8 {
            for p in 0..4u32 {
                let host = format!("h{h}");
                let first = vms.iter().position(|v| v.host == host && v.port == p);
                ports.push((host, p, first));
            }
        }
        for t in 0..4u8 {
            let t = format!("t{t}");
            let of = (0..vms.len()).filter(|&i| vms[i].tenant == t).collect();
            tenants.push((t, of));
        }
        (ports, tenants)
    }

    fn answers(ix: &VmIndex, slots: Slots<'_>) -> Answers {
        let mut ports = Vec::new();
        let mut tenants = Vec::new();
        for h in 0..4u8 {
            for p in 0..4u32 {
                let host = format!("h{h}");
                let o = ix.owner(&host, p, slots);
                ports.push((host, p, o));
            }
        }
        for t in 0..4u8 {
            let t = format!("t{t}");
            let of = ix.tenant(&t, slots);
            tenants.push((t, of));
        }
        (ports, tenants)
    }

    /// One step of an update sequence: insert a VM at a position, or
    /// remove the VM at a position (taken modulo the list's length).
    #[derive(Clone, Debug)]
    enum Step {
        Insert(usize, (u8, u8, u8, u32)),
        Remove(usize),
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            (any::<usize>(), (0..4u8, 0..8u8, 0..4u8, 0..4u32))
                .prop_map(|(at, v)| Step::Insert(at, v)),
            any::<usize>().prop_map(Step::Remove),
        ]
    }

    proptest! {
        /// An index moved by random inserts and removes, with slots kept
        /// and reused as the verifier does, answers what one built from
        /// scratch on the resulting list answers (duplicate ports included).
        #[test]
        fn kept_index_equals_rebuilt(
            start in prop::collection::vec((0..4u8, 0..8u8, 0..4u8, 0..4u32), 0..12),
            steps in prop::collection::vec(step(), 0..40),
        ) {
            let mut vms: Vec<Vm> = start.iter().map(|&(t, n, h, p)| vm(t, n, h, p)).collect();
            let mut ix = VmIndex::of(&vms);
            let mut slot_of: Vec<usize> = (0..vms.len()).collect();
            let mut vm_of: Vec<Option<usize>> = (0..vms.len()).map(Some).collect();
            let mut free: Vec<usize> = Vec::new();
            prop_assert_eq!(answers(&ix, Slots::Identity), expected(&vms));
            for s in steps {
                match s {
                    Step::Insert(at, (t, n, h, p)) => {
                        let at = at % (vms.len() + 1);
                        let v = vm(t, n, h, p);
                        let slot = free.pop().unwrap_or_else(|| {
                            vm_of.push(None);
                            vm_of.len() - 1
                        });
                        ix.add(slot, &v);
                        vms.insert(at, v);
                        slot_of.insert(at, slot);
                    }
                    Step::Remove(at) => {
                        if vms.is_empty() {
                            continue;
                        }
                        let at = at % vms.len();
                        let v = vms.remove(at);
                        let slot = slot_of.remove(at);
                        ix.remove(slot, &v);
                        vm_of[slot] = None;
                        free.push(slot);
                    }
                }
                for (i, &s) in slot_of.iter().enumerate() {
                    vm_of[s] = Some(i);
                }
                prop_assert_eq!(answers(&ix, Slots::Map(&vm_of)), expected(&vms));
                prop_assert_eq!(
                    answers(&VmIndex::of(&vms), Slots::Identity),
                    expected(&vms)
                );
            }
        }
    }
}
