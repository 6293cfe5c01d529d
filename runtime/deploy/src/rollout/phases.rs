//! The rollout order PLAN-1 verified, as pushes: which target gets what, when.
//!
//! Expects the verifier's plan ([`Phases`]: steps of (phase, device,
//! new artifacts or new artifacts plus the hairpin)) and the inventory.
//! Guarantees: [`schedule`] lists every target of the inventory at least
//! once, in the plan's step order (a target whose device the plan does not
//! name comes last, with its new artifacts); [`with_hairpin`] is a device's
//! new outputs with the hairpin flows appended to its `ovs/<device>.flows`,
//! each with its own cookie (concern [`HAIRPIN_CONCERN`]), so the last
//! step's reconcile-by-cookie removes exactly them.

use super::inventory::{Inventory, Target};
use crate::store::DeviceOutput;
use netc_targets::ovs::text::{flow_cookie, Flow};
use netc_verify::plan::migration::{Content, Phases};

/// The top byte of a hairpin flow's cookie (after the rules' concerns 1–8).
pub const HAIRPIN_CONCERN: u8 = 9;

/// One push of the rollout: a target, what it gets, its phase.
pub struct Push<'a> {
    pub target: &'a Target,
    pub content: Content,
    pub phase: u8,
}

/// The pushes of a rollout in order (see the module map).
pub fn schedule<'a>(inv: &'a Inventory, phases: Option<&Phases>) -> Vec<Push<'a>> {
    let mut out = Vec::new();
    let mut named = std::collections::BTreeSet::new();
    for s in phases.map(|p| p.steps.as_slice()).unwrap_or(&[]) {
        named.insert(s.device.as_str());
        for t in inv.targets.iter().filter(|t| t.device == s.device) {
            out.push(Push {
                target: t,
                content: s.content,
                phase: s.phase,
            });
        }
    }
    for t in inv
        .targets
        .iter()
        .filter(|t| !named.contains(t.device.as_str()))
    {
        out.push(Push {
            target: t,
            content: Content::New,
            phase: 0,
        });
    }
    out
}

/// `outputs` (of one device) with the device's hairpin flows of `phases`
/// added to its flows file.
pub fn with_hairpin(outputs: &[&DeviceOutput], device: &str, phases: &Phases) -> Vec<DeviceOutput> {
    let path = format!("ovs/{device}.flows");
    let mut out: Vec<DeviceOutput> = outputs.iter().map(|o| (*o).clone()).collect();
    if !out.iter().any(|o| o.path == path) {
        out.push(DeviceOutput {
            device: device.to_string(),
            kind: "ovs".into(),
            path: path.clone(),
            text: String::new(),
            pushed: true,
        });
    }
    let lines: String = phases
        .hairpin
        .get(device)
        .into_iter()
        .flatten()
        .map(|f| {
            let flow = Flow {
                table: f.table,
                priority: f.priority,
                matches: f.matches.clone(),
                actions: f.actions.clone(),
                cookie: flow_cookie(HAIRPIN_CONCERN, f.table, f.priority, &f.matches, &f.actions),
            };
            format!("{}\n", flow.line())
        })
        .collect();
    if let Some(o) = out.iter_mut().find(|o| o.path == path) {
        if !o.text.is_empty() && !o.text.ends_with('\n') {
            o.text.push('\n');
        }
        o.text.push_str(&lines);
    }
    out
}
