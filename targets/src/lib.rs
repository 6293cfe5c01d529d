//! netc's device targets: located output relations → per-device artifacts.
//!
//! The rules produce *located* relations, `rel(@device, ...)` (see
//! `specs/targets.md`). Each target is a sibling module behind one trait,
//! [`Renderer`], with the same file layout:
//!
//! - [`ovs`]: OpenFlow flows and groups per host bridge (`ovs/<host>.flows`,
//!   `ovs/<host>.groups`), pushed as one atomic bundle per bridge;
//! - [`p4`]: P4Runtime updates per switch (`p4/<switch>.txtpb`);
//! - [`host`]: host-agent configuration documents (`host/<host>.json`).
//!
//! A renderer sees only rows, grouped per device by [`group_by_device`]; it
//! never sees the engine. Rendering is deterministic: the same rows give the
//! same bytes.
//!
//! Architecture invariant: `targets/` reads artifacts' source rows and the
//! plan's relation schema, never the engine's internals.

pub mod host;
pub mod ovs;
pub mod p4;
pub mod process;

use netc_compiler::plan::{Plan, RelId};
use netc_compiler::value::{Row, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Rows of the located relations of one device, by relation name, each row
/// *including* its location column (column 0), sorted.
pub type DeviceRows = BTreeMap<String, Vec<Row>>;

/// One file of a device's artifact set, relative to the output directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Artifact {
    pub path: PathBuf,
    pub contents: String,
}

/// Whether `name` can name a device's artifact files: letters, digits, `.`,
/// `_`, `-`, starting with a letter or digit, at most 64 characters — what
/// rules/validate.ndl's `error_bad_name` admits, so no name is a path.
pub fn safe_name(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= 64
        && b[0].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || b"._-".contains(c))
}

/// Why a device's rows could not be rendered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{target} target, device `{device}`: {message}")]
pub struct RenderError {
    pub target: &'static str,
    pub device: String,
    pub message: String,
}

/// A device target: turns one device's rows into its artifacts. Shared by
/// the threads that render devices side by side (`netc compile`).
pub trait Renderer: Send + Sync {
    /// Short name, also the artifact sub-directory (`ovs`, `p4`, `host`).
    fn name(&self) -> &'static str;
    /// Whether this target consumes a located relation.
    fn consumes(&self, relation: &str) -> bool;
    /// Renders the complete artifact set of one device.
    fn render(&self, device: &str, rows: &DeviceRows) -> Result<Vec<Artifact>, RenderError>;
}

/// Every target, in a fixed order.
pub fn renderers() -> Vec<Box<dyn Renderer>> {
    vec![
        Box::new(ovs::OvsRenderer),
        Box::new(p4::P4Renderer),
        Box::new(host::HostRenderer),
    ]
}

/// Groups the rows of located relations by device (the value of the
/// location column, as text). `contents` gives a relation's current rows;
/// it is called once per relation and its rows are moved, not copied.
pub fn group_by_device(
    plan: &Plan,
    relations: &[RelId],
    mut contents: impl FnMut(RelId) -> Vec<Row>,
) -> BTreeMap<String, DeviceRows> {
    let mut out: BTreeMap<String, DeviceRows> = BTreeMap::new();
    for &r in relations {
        group_into(&mut out, plan, r, contents(r));
    }
    sort_groups(&mut out);
    out
}

/// [`group_by_device`] one relation at a time: adds relation `r`'s `rows`
/// to `out` (moved, not copied); [`sort_groups`] once all are in.
pub fn group_into(out: &mut BTreeMap<String, DeviceRows>, plan: &Plan, r: RelId, rows: Vec<Row>) {
    let rel = &plan.relations[r];
    let Some(loc) = rel.location else { return };
    // A relation's rows come in runs of one device (its rows are sorted,
    // and the location is most often column 0): look the device up once
    // per run, not once per row, and allocate its name once per device.
    let mut run: Option<(Value, &mut Vec<Row>)> = None;
    for row in rows {
        let key = row[loc];
        match &mut run {
            Some((device, rows)) if *device == key => rows.push(row),
            _ => {
                let name = match &key {
                    Value::Symbol(s) => s.text().to_string(),
                    other => other.to_string(),
                };
                let rows = out
                    .entry(name)
                    .or_default()
                    .entry(rel.name.clone())
                    .or_default();
                rows.push(row);
                run = Some((key, rows));
            }
        }
    }
}

/// Sorts each device's rows of each relation (a no-op pass when they came
/// sorted, as `Engine::contents` gives them).
pub fn sort_groups(out: &mut BTreeMap<String, DeviceRows>) {
    for rows in out.values_mut().flat_map(|d| d.values_mut()) {
        rows.sort();
    }
}

/// Renders every device with every target that consumes some of its rows.
pub fn render_all(devices: &BTreeMap<String, DeviceRows>) -> Result<Vec<Artifact>, RenderError> {
    // a device's name is its artifacts' file name: never a path
    if let Some(bad) = devices.keys().find(|d| !safe_name(d)) {
        return Err(RenderError {
            target: "every",
            device: bad.chars().take(80).collect(),
            message: "a device name must be letters, digits, '.', '_' or '-', start with a letter or digit, and be at most 64 characters (it names the device's artifact files)".into(),
        });
    }
    let mut artifacts = Vec::new();
    for r in renderers() {
        for (device, rows) in devices {
            let mine: DeviceRows = rows
                .iter()
                .filter(|(name, _)| r.consumes(name))
                .map(|(n, v)| (n.clone(), v.clone()))
                .collect();
            if !mine.is_empty() {
                artifacts.extend(r.render(device, &mine)?);
            }
        }
    }
    Ok(artifacts)
}
