//! Kept paths' load-balancer handles brought up to date after that model is built again.
//!
//! Expects each update's renumbering: load-balancer handles, only when that
//! model was built again (`lb::HandleMap`). An update that patches a bridge
//! or moves load-balancer rows renumbers nothing: a flow or row keeps its
//! handle while it exists and no handle is given twice (`bridge.rs`,
//! `lb.rs`). Guarantees: a kept VM's paths, renumbered through the updates
//! it missed, name what a fresh trace would; a path naming a flow or row
//! that is gone says so (the VM is traced again). The log is bounded: when
//! full, every VM it reaches is caught up in one pass.

use super::Verifier;
use crate::bridge::{Hop, Outcome};
use crate::checks::VmChecked;
use crate::kept::Kept;
use crate::network::{Footprint, Network};
use std::collections::HashSet;

/// New handles for the load-balancer rows of a model built again, so a
/// kept outcome's path names what a fresh trace would.
pub(super) struct Renumber {
    pub(super) lb: crate::lb::HandleMap,
}

/// Brings a kept result's paths up to date through `log` (the
/// renumberings it missed, oldest first); false if a path names a flow or
/// row that is gone. (An update that removes a flow or a load-balancer row
/// names where a trace read it, so a path naming it is traced again before
/// it is kept: `changes.rs`. `net` catches one that was not.)
pub(super) fn renumber(log: &[Renumber], c: &mut VmChecked, net: &Network) -> bool {
    for r in log {
        if r.reaches(&c.footprint) {
            match r.outcomes(std::mem::take(&mut c.traced)) {
                Some(outs) => c.traced = outs,
                None => return false,
            }
        }
    }
    c.traced.iter().all(|o| {
        o.path.iter().all(|h| match *h {
            Hop::Lb { handle } => net.lb.holds(handle),
            Hop::Flow { bridge, handle } => net
                .bridges
                .get(bridge as usize)
                .is_some_and(|b| b.flow(handle).is_some()),
            _ => true,
        })
    })
}

/// Updates whose renumberings are kept before every VM is brought up to
/// date (bounds the log's memory; the catch-up is one pass over the VMs).
pub(super) const RENUMBER_LOG: usize = 64;

impl Verifier {
    /// When the log is full: every kept path renumbered and the log
    /// emptied; the slots whose paths name something gone (to trace again).
    pub(super) fn catch_up_if_long(&mut self) -> Result<HashSet<usize>, crate::kept::Corrupt> {
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
            if !renumber(log, &mut c, &self.net) {
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
    /// Whether a kept outcome of a VM with this footprint may name a moved
    /// handle: a path holds load-balancer handles only if the trace
    /// reached an instance (noted).
    pub(super) fn reaches(&self, fp: &Footprint) -> bool {
        !fp.instances.is_empty()
    }

    /// The outcomes with their paths renumbered; `None` if a path holds a
    /// row the new generation lacks.
    pub(super) fn outcomes(&self, mut outs: Vec<Outcome>) -> Option<Vec<Outcome>> {
        for o in &mut outs {
            for h in &mut o.path {
                if let Hop::Lb { handle } = h {
                    *handle = self.lb.get(*handle)?;
                }
            }
        }
        Some(outs)
    }
}
