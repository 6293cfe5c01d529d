//! Entries: what `plan` and `diff` count, per device, between two generations.
//!
//! An entry is one flow or group line (`ovs/*.flows`, `ovs/*.groups`), one
//! top-level `updates { ... }` block of a P4Runtime request (`p4/*.txtpb`),
//! or one line of a host document (`host/*.json`, pretty-printed one field
//! per line). Expects: artifact text as the renderers write it. Guarantees:
//! adds = entries of the new generation not in the old, removes = the
//! reverse, per device, both sorted; a device absent from one side counts
//! all its entries.

use crate::store::DeviceOutput;
use std::collections::{BTreeMap, BTreeSet};

/// One device's change.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceChange {
    /// Target kinds the device has artifacts of (`host`, `ovs`, `p4`).
    pub kinds: BTreeSet<String>,
    /// `path: entry`, sorted.
    pub added: Vec<String>,
    pub removed: Vec<String>,
}

/// The entries of one artifact file.
pub fn entries(path: &str, text: &str) -> BTreeSet<String> {
    if path.ends_with(".txtpb") {
        return blocks(text);
    }
    text.lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .map(str::to_string)
        .collect()
}

/// Top-level `name { ... }` blocks, whitespace-normalised.
fn blocks(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let (mut depth, mut cur) = (0i32, String::new());
    for line in text.lines() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(t);
        depth += t.matches('{').count() as i32 - t.matches('}').count() as i32;
        if depth <= 0 {
            out.insert(std::mem::take(&mut cur));
            depth = 0;
        }
    }
    if !cur.is_empty() {
        out.insert(cur);
    }
    out
}

fn by_device(outputs: &[DeviceOutput]) -> BTreeMap<&str, Vec<&DeviceOutput>> {
    let mut m: BTreeMap<&str, Vec<&DeviceOutput>> = BTreeMap::new();
    for o in outputs {
        m.entry(o.device.as_str()).or_default().push(o);
    }
    m
}

/// Per device with any change: what `new` adds to and removes from `old`.
pub fn changes(old: &[DeviceOutput], new: &[DeviceOutput]) -> BTreeMap<String, DeviceChange> {
    let (old, new) = (by_device(old), by_device(new));
    let devices: BTreeSet<&str> = old.keys().chain(new.keys()).copied().collect();
    let tagged = |outs: Option<&Vec<&DeviceOutput>>| -> BTreeSet<String> {
        outs.into_iter()
            .flatten()
            .flat_map(|o| {
                entries(&o.path, &o.text)
                    .into_iter()
                    .map(move |e| format!("{}: {e}", o.path))
            })
            .collect()
    };
    let mut out = BTreeMap::new();
    for d in devices {
        let (o, n) = (tagged(old.get(d)), tagged(new.get(d)));
        let change = DeviceChange {
            kinds: old
                .get(d)
                .into_iter()
                .chain(new.get(d))
                .flatten()
                .map(|x| x.kind.clone())
                .collect(),
            added: n.difference(&o).cloned().collect(),
            removed: o.difference(&n).cloned().collect(),
        };
        if !change.added.is_empty() || !change.removed.is_empty() {
            out.insert(d.to_string(), change);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(device: &str, path: &str, text: &str) -> DeviceOutput {
        DeviceOutput {
            device: device.into(),
            kind: path.split('/').next().unwrap().into(),
            path: path.into(),
            text: text.into(),
            pushed: true,
        }
    }

    #[test]
    fn flows_and_p4_blocks_are_counted_per_device() {
        let old = vec![
            out("h1", "ovs/h1.flows", "a\nb\n"),
            out(
                "tor1",
                "p4/tor1.txtpb",
                "updates {\n  type: INSERT\n}\nupdates {\n  x: 1\n}\n",
            ),
        ];
        let new = vec![
            out("h1", "ovs/h1.flows", "b\nc\nd\n"),
            out("tor1", "p4/tor1.txtpb", "updates {\n  type: INSERT\n}\n"),
            out("h9", "host/h9.json", "{\n}\n"),
        ];
        let c = changes(&old, &new);
        assert_eq!(c["h1"].added, ["ovs/h1.flows: c", "ovs/h1.flows: d"]);
        assert_eq!(c["h1"].removed, ["ovs/h1.flows: a"]);
        assert_eq!(c["tor1"].added.len(), 0);
        assert_eq!(c["tor1"].removed, ["p4/tor1.txtpb: updates { x: 1 }"]);
        assert_eq!(c["h9"].added.len(), 2);
        assert!(changes(&new, &new).is_empty());
    }
}
