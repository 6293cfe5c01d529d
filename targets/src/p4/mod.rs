//! P4 target: `p4_*` rows of a switch → P4Runtime updates for `p4/netc.p4`.
//!
//! Reading order: [`schema`] (the P4Info as constants) → [`entries`] (rows →
//! table entries, action-profile members, multicast groups, each checked
//! against its field widths) → [`members`] (stable member ids) → [`delta`]
//! (entities → ordered INSERT/MODIFY/DELETE updates) → [`text`] (a
//! `WriteRequest` in protobuf text format) → [`tna`] (Tofino only: the
//! entries that compute `hash5 % n` without `%` on `p4/netc_tna.p4`) →
//! [`resources`] (table use against a Duet or Tofino capacity model).
//!
//! Expects: a device's rows as `group_by_device` gives them. Guarantees: the
//! artifact `p4/<switch>.txtpb` is one `WriteRequest` that installs the
//! switch's complete state on an empty switch (updates in dependency order;
//! the client sends each phase as its own batch); any row that does not fit
//! the program, and any table over its P4Info size, is a [`P4Error`] naming
//! the switch, the table and the row, and nothing is rendered for the set.
//! The device client (`targets/p4client/`, Python, official `p4runtime`
//! classes over gRPC) sends these files.

pub mod delta;
pub mod entries;
pub mod members;
pub mod schema;
pub mod text;
pub mod tna;
pub mod resources;

use crate::{Artifact, DeviceRows, RenderError, Renderer};
use entries::Entity;
use members::MemberIds;
use std::path::PathBuf;

/// Why a switch's rows cannot become P4Runtime messages.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum P4Error {
    #[error("switch `{device}`, table `{table}`, entry {entry}: {field} = {value} does not fit in {bits} bits\n   = hint: the field is bit<{bits}> in p4/netc.p4; fix the intent value or widen the field (and the P4Info)")]
    Width {
        device: String,
        table: &'static str,
        entry: String,
        field: String,
        value: String,
        bits: u32,
    },
    #[error("switch `{device}`, table `{table}`, entry {entry}: {field}: expected {expected}")]
    Value {
        device: String,
        table: &'static str,
        entry: String,
        field: String,
        expected: String,
    },
    #[error("switch `{device}`, table `{table}`: entry {entry} and entry {other} have the same key but different actions")]
    Conflict {
        device: String,
        table: &'static str,
        entry: String,
        other: String,
    },
    #[error("switch `{device}`: over capacity: `{limit}` ({tables}) needs {used} {unit}, the switch has {capacity}\n   = hint: move VIPs to other switches or to the SMuxes, or use a larger profile")]
    Capacity {
        device: String,
        limit: String,
        tables: String,
        used: u64,
        capacity: u64,
        unit: &'static str,
    },
    #[error("switch `{device}`: relation `{relation}` has no table in p4/netc.p4\n   = hint: the rules and the P4 target disagree; see specs/targets.md §1")]
    UnknownRelation { device: String, relation: String },
    #[error("internal error: broken invariant: {0}")]
    Internal(&'static str),
}

impl P4Error {
    pub fn device(&self) -> &str {
        match self {
            P4Error::Width { device, .. }
            | P4Error::Value { device, .. }
            | P4Error::Conflict { device, .. }
            | P4Error::Capacity { device, .. }
            | P4Error::UnknownRelation { device, .. } => device,
            P4Error::Internal(_) => "",
        }
    }
}

/// The entities of a switch, numbering members afresh.
pub fn entities(device: &str, rows: &DeviceRows) -> Result<Vec<Entity>, P4Error> {
    entries::build(device, rows, &mut MemberIds::default())
}

/// Checks every table against its P4Info size and the Duet limits
/// (the defaults for a switch of this program).
pub fn check_fits(device: &str, entities: &[Entity]) -> Result<(), P4Error> {
    resources::check(&resources::usage(
        device,
        entities,
        resources::Profile::Duet,
    ))
}

fn header(device: &str, rows: &DeviceRows, updates: &[delta::Update], what: &str) -> Vec<String> {
    let mut c = vec![
        format!("P4Runtime WriteRequest for switch `{device}` ({what}), program p4/netc.p4"),
        format!("{} updates; the client sends each phase (members/groups, entries, removals) as its own batch", updates.len()),
        "and sets device_id and election_id.".to_string(),
    ];
    for p in entries::announcements(rows) {
        c.push(format!("announce (BGP, not a table): {p}"));
    }
    c
}

/// The full-install WriteRequest of a switch.
pub fn render_full(device: &str, rows: &DeviceRows) -> Result<String, P4Error> {
    let ents = entities(device, rows)?;
    check_fits(device, &ents)?;
    let updates = delta::full(&ents);
    Ok(text::write_request(
        &header(device, rows, &updates, "full install"),
        &updates,
    ))
}

/// The WriteRequest that moves a switch from `old` rows to `new` rows.
/// `ids` must be the member ids of `old` (as left by the render of `old`);
/// on return it holds those of `new`. On error `ids` is unchanged.
pub fn render_delta(
    device: &str,
    old: &DeviceRows,
    new: &DeviceRows,
    ids: &mut MemberIds,
) -> Result<String, P4Error> {
    let mut old_ids = ids.clone();
    let before = entries::build(device, old, &mut old_ids)?;
    let mut new_ids = ids.clone();
    let after = entries::build(device, new, &mut new_ids)?;
    check_fits(device, &after)?;
    let updates = delta::diff(&before, &after);
    *ids = new_ids;
    Ok(text::write_request(
        &header(device, new, &updates, "delta"),
        &updates,
    ))
}

#[derive(Default)]
pub struct P4Renderer;

impl Renderer for P4Renderer {
    fn name(&self) -> &'static str {
        "p4"
    }
    fn consumes(&self, relation: &str) -> bool {
        relation.starts_with("p4_")
    }
    fn render(&self, device: &str, rows: &DeviceRows) -> Result<Vec<Artifact>, RenderError> {
        let contents = render_full(device, rows).map_err(|e| RenderError {
            target: "p4",
            device: device.to_string(),
            message: e.to_string(),
        })?;
        Ok(vec![Artifact {
            path: PathBuf::from(format!("p4/{device}.txtpb")),
            contents,
        }])
    }
}

#[cfg(test)]
mod tests;
