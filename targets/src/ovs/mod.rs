//! OVS target: `ovs_flow` / `ovs_group` rows of a bridge → OpenFlow.
//!
//! Reading order: [`text`] (rows → flows and groups in `ovs-ofctl` syntax,
//! each flow with an identifying cookie; [`lines`]: the same `.flows` text
//! straight from good rows, what `netc compile` renders) → [`dump`] (what a bridge holds,
//! from `dump-flows` / `dump-groups`) → [`delta`] (intended − observed → one
//! ordered bundle) → [`client`] (runs `ovs-ofctl`: observe, push atomically,
//! reconcile). The pipeline the rows implement is `specs/ovs-pipeline.md`.
//!
//! Expects: a device's rows as `group_by_device` gives them (`ovs_flow`,
//! `ovs_group`, the relations it consumes; `ovs_tunnel_peer` is
//! informational and not consumed). Guarantees:
//! the artifacts `ovs/<host>.flows` (`ovs-ofctl add-flows` syntax) and
//! `ovs/<host>.groups` (`ovs-ofctl add-groups` syntax) hold the bridge's
//! complete state, sorted, byte-for-byte deterministic; a row that cannot be
//! a flow (table outside 0..=252, priority outside 0..=65535, concern
//! outside 1..=253, wrong column types) is a [`RenderError`] naming the host
//! and the row, and nothing is written for the compilation.

pub mod client;
pub mod delta;
pub mod dump;
pub mod lines;
pub mod text;

#[cfg(test)]
mod tests;

use crate::{Artifact, DeviceRows, RenderError, Renderer};
use netc_compiler::value::{Row, Value};
use std::path::PathBuf;
use text::{flow_cookie, BridgeState, Flow, Group};

pub struct OvsRenderer;

impl Renderer for OvsRenderer {
    fn name(&self) -> &'static str {
        "ovs"
    }
    fn consumes(&self, relation: &str) -> bool {
        // `ovs_tunnel_peer` (85k rows at 10k VMs) is informational: not
        // grouped for a renderer that would ignore it.
        matches!(relation, "ovs_flow" | "ovs_group")
    }
    fn render(&self, device: &str, rows: &DeviceRows) -> Result<Vec<Artifact>, RenderError> {
        let flow_rows = rows.get("ovs_flow").map(Vec::as_slice).unwrap_or(&[]);
        let group_rows = rows.get("ovs_group").map(Vec::as_slice).unwrap_or(&[]);
        // The flows straight from the rows when they are all good (the bulk
        // of a compile's text); any bad row or collision takes the
        // `BridgeState` path, which reports it.
        let (flows, groups) = match lines::flows_text(flow_rows) {
            Some(flows) => {
                let mut groups = BridgeState::default();
                add_groups(device, group_rows, &mut groups)?;
                (flows, groups)
            }
            None => {
                let st = bridge_state(device, rows)?;
                (st.flows_text(), st)
            }
        };
        if flows.is_empty() && groups.groups.is_empty() {
            return Ok(Vec::new());
        }
        Ok(vec![
            Artifact {
                path: PathBuf::from("ovs").join(format!("{device}.flows")),
                contents: flows,
            },
            Artifact {
                path: PathBuf::from("ovs").join(format!("{device}.groups")),
                contents: groups.groups_text(),
            },
        ])
    }
}

fn err(device: &str, message: String) -> RenderError {
    RenderError {
        target: "ovs",
        device: device.to_string(),
        message,
    }
}

fn show(row: &Row) -> String {
    let cols: Vec<String> = row.iter().map(|v| v.to_string()).collect();
    format!("({})", cols.join(", "))
}

fn num(device: &str, rel: &str, row: &Row, i: usize, lo: i64, hi: i64) -> Result<i64, RenderError> {
    match row.get(i) {
        Some(Value::Number(n)) if (lo..=hi).contains(n) => Ok(*n),
        Some(Value::Unsigned(n)) if (*n as i128) >= lo as i128 && (*n as i128) <= hi as i128 => {
            Ok(*n as i64)
        }
        other => Err(err(
            device,
            format!(
                "{rel}{}: column {i} is {}, expected a number in {lo}..={hi}",
                show(row),
                other
                    .map(|v| v.to_string())
                    .unwrap_or_else(|| "missing".into())
            ),
        )),
    }
}

fn sym(device: &str, rel: &str, row: &Row, i: usize) -> Result<String, RenderError> {
    match row.get(i) {
        Some(Value::Symbol(s)) => Ok(s.text().to_string()),
        other => Err(err(
            device,
            format!(
                "{rel}{}: column {i} is {}, expected a symbol (ovs-ofctl text)",
                show(row),
                other
                    .map(|v| v.to_string())
                    .unwrap_or_else(|| "missing".into())
            ),
        )),
    }
}

/// The bridge state of one host from its rows.
pub fn bridge_state(device: &str, rows: &DeviceRows) -> Result<BridgeState, RenderError> {
    let mut st = BridgeState::default();
    for row in rows.get("ovs_flow").map(Vec::as_slice).unwrap_or(&[]) {
        let rel = "ovs_flow";
        let table = num(device, rel, row, 1, 0, dump::MARKER_TABLE as i64 - 1)? as u8;
        let priority = num(device, rel, row, 2, 0, 65535)? as u16;
        let matches = sym(device, rel, row, 3)?;
        let actions = sym(device, rel, row, 4)?;
        let concern = num(device, rel, row, 5, 1, 253)? as u8;
        if actions.trim().is_empty() {
            return Err(err(
                device,
                format!("ovs_flow{}: empty actions (write `drop`)", show(row)),
            ));
        }
        let cookie = flow_cookie(concern, table, priority, &matches, &actions);
        st.add_flow(Flow {
            table,
            priority,
            matches,
            actions,
            cookie,
        })
        .map_err(|e| err(device, e.to_string()))?;
    }
    add_groups(
        device,
        rows.get("ovs_group").map(Vec::as_slice).unwrap_or(&[]),
        &mut st,
    )?;
    Ok(st)
}

/// Adds a bridge's `ovs_group` rows to `st`.
fn add_groups(device: &str, rows: &[Row], st: &mut BridgeState) -> Result<(), RenderError> {
    for row in rows {
        let rel = "ovs_group";
        let id = num(device, rel, row, 1, 0, 0xffff_ff00)? as u32;
        let kind = sym(device, rel, row, 2)?;
        let buckets = sym(device, rel, row, 3)?;
        if !matches!(
            kind.as_str(),
            "all" | "select" | "indirect" | "ff" | "fast_failover"
        ) {
            return Err(err(
                device,
                format!(
                    "ovs_group{}: type `{kind}` is not all/select/indirect/ff",
                    show(row)
                ),
            ));
        }
        st.add_group(Group { id, kind, buckets })
            .map_err(|e| err(device, e.to_string()))?;
    }
    Ok(())
}
