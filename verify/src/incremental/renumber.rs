//! Kept paths' flow and row ids brought up to date after bridges are rebuilt and load-balancer rows move.
//!
//! Expects each update's renumbering (flows of the rebuilt bridges, old
//! position → new; load-balancer row ids: `lb::RowRenumber`). Guarantees: a
//! kept VM's paths, renumbered through the updates it missed, name what a
//! fresh trace would; a path naming a flow or row that is gone says so (the
//! VM is traced again). The log is bounded: when full, every VM is caught
//! up in one pass.

use super::*;

/// New indices for the flows of rebuilt bridges and the load-balancer rows
/// of a reloaded model, so a kept outcome's path names what a fresh trace
/// would (only entries that moved are listed).
#[derive(Default)]
pub(super) struct Renumber {
    /// (bridge index, old flow → new): a few bridges, scanned per hop.
    pub(super) flows: Vec<(u32, Vec<Option<u32>>)>,
    /// The names of the bridges in `flows`.
    pub(super) bridges: BTreeSet<String>,
    pub(super) lb: Option<crate::lb::RowRenumber>,
}

/// Brings a kept result's paths up to date through `log` (the
/// renumberings it missed, oldest first); false if a path names a flow or
/// row that is gone.
pub(super) fn renumber(log: &[Renumber], c: &mut VmChecked) -> bool {
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
    pub(super) fn is_identity(&self) -> bool {
        self.flows.is_empty() && self.lb.is_none()
    }

    /// Whether a kept outcome of a VM with this footprint may name a moved
    /// entry: a path holds a bridge's flows only if the trace ran it, and
    /// load-balancer rows only if it reached an instance (both noted).
    pub(super) fn reaches(&self, fp: &Footprint) -> bool {
        (self.lb.is_some() && !fp.instances.is_empty())
            || self.bridges.iter().any(|b| fp.bridges.contains_key(b))
    }

    pub(super) fn hop(&self, h: Hop) -> Option<Hop> {
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
    pub(super) fn outcomes(&self, mut outs: Vec<Outcome>) -> Option<Vec<Outcome>> {
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
