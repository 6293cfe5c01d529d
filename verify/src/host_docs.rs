//! The host-agent documents as they are pushed (`host/<device>.json`): the
//! rows the verifier reads for every `agent_*` relation.
//!
//! Expects the documents of specs/host-agent.md (`netc_targets::host`
//! renders them): `{"schema": "netc-host-agent/1", "host": DEVICE,
//! "<section>": [objects]}`, one section per `agent_*` relation.
//! Guarantees: when DIR has a `host/` directory, [`read_host_docs`]
//! replaces every `agent_*` relation read from `relations/` by the rows of
//! the documents — what `netc apply` pushes to the agents, not a copy beside
//! it — each row citing `host/<device>.json:LINE` (the line of its object).
//! A device the relations give agent rows but that has no document is an
//! incomplete set, and a document that is not such a document (another
//! schema, another host, an unknown section, a missing column, a value that
//! is neither a string nor a number) is an [`ArtifactError`] at its file
//! and line. Without `host/` (a set rendered before the target existed) the
//! relations' rows stay.

use crate::artifacts::{bad, read, read_dir, ArtifactError, Row};
use netc_targets::host::{SCHEMA, SECTIONS};
use serde_json::Value as Json;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

/// A section's relation and columns (after the location column): a named
/// section of specs/host-agent.md, or an `agent_*` relation rendered under
/// its own name with columns `c1`, `c2`, ….
fn relation_of(section: &str, first: Option<&Json>) -> Option<(String, Vec<String>)> {
    if let Some((rel, _, cols)) = SECTIONS.iter().find(|(_, s, _)| *s == section) {
        return Some((
            rel.to_string(),
            cols.iter().map(|c| c.to_string()).collect(),
        ));
    }
    if !section.starts_with("agent_") {
        return None;
    }
    let width = first.and_then(Json::as_object).map_or(0, |o| o.len());
    Some((
        section.to_string(),
        (1..=width).map(|i| format!("c{i}")).collect(),
    ))
}

/// The 1-based line of the `k`-th object of `section` in a pretty-printed
/// document (the line where its `{` stands), else the section's line, else 1.
fn object_lines(lines: &[&str], section: &str, n: usize) -> Vec<usize> {
    let key = format!("\"{}\": [", section);
    let Some(start) = lines.iter().position(|l| l.trim_start().starts_with(&key)) else {
        return vec![1; n];
    };
    let mut out: Vec<usize> = lines[start + 1..]
        .iter()
        .enumerate()
        .take_while(|(_, l)| !l.trim_start().starts_with(']'))
        .filter(|(_, l)| l.trim() == "{")
        .map(|(i, _)| start + 2 + i)
        .take(n)
        .collect();
    out.resize(n, start + 1);
    out
}

/// One document's rows, by relation.
fn rows_of(
    path: &Path,
    device: &str,
    text: &str,
) -> Result<BTreeMap<String, Vec<Arc<Row>>>, ArtifactError> {
    let file = path.display().to_string();
    let doc: Json = serde_json::from_str(text).map_err(|e| {
        bad(
            format!("{file}:{}:{}", e.line(), e.column()),
            format!("not a host-agent document: {e}"),
        )
    })?;
    let Some(obj) = doc.as_object() else {
        return Err(bad(
            format!("{file}:1"),
            "a host-agent document is a JSON object",
        ));
    };
    if obj.get("schema").and_then(Json::as_str) != Some(SCHEMA) {
        return Err(bad(
            format!("{file}:1"),
            format!("expected \"schema\": \"{SCHEMA}\""),
        ));
    }
    if obj.get("host").and_then(Json::as_str) != Some(device) {
        return Err(bad(
            format!("{file}:1"),
            format!("expected \"host\": \"{device}\" (the document's file name)"),
        ));
    }
    let text_lines: Vec<&str> = text.lines().collect();
    let mut out: BTreeMap<String, Vec<Arc<Row>>> = BTreeMap::new();
    for (section, value) in obj {
        if section == "schema" || section == "host" {
            continue;
        }
        let Some(items) = value.as_array() else {
            return Err(bad(&file, format!("section `{section}` is not an array")));
        };
        let Some((rel, cols)) = relation_of(section, items.first()) else {
            return Err(bad(
                &file,
                format!("unknown section `{section}` (specs/host-agent.md names the sections an agent reads)"),
            ));
        };
        let lines = object_lines(&text_lines, section, items.len());
        let rows = out.entry(rel).or_default();
        for (item, line) in items.iter().zip(lines) {
            let at = format!("{file}:{line}");
            let Some(o) = item.as_object() else {
                return Err(bad(at, format!("an item of `{section}` is not an object")));
            };
            let mut vals = vec![device.to_string()];
            for c in &cols {
                let v = match o.get(c) {
                    Some(Json::String(s)) => s.clone(),
                    Some(Json::Number(n)) => n.to_string(),
                    Some(_) => {
                        return Err(bad(
                            at,
                            format!("`{c}` of `{section}` is neither a string nor a number"),
                        ))
                    }
                    None => return Err(bad(at, format!("an item of `{section}` has no `{c}`"))),
                };
                vals.push(v);
            }
            if o.len() != cols.len() {
                return Err(bad(
                    at,
                    format!(
                        "an item of `{section}` has other keys than {}",
                        cols.join(", ")
                    ),
                ));
            }
            rows.push(Arc::new(Row { vals, at }));
        }
    }
    Ok(out)
}

/// Replaces the `agent_*` relations of `relations` by the rows of the
/// documents in `dir/host/` (see the module docs).
pub fn read_host_docs(
    dir: &Path,
    relations: &mut BTreeMap<String, Vec<Arc<Row>>>,
) -> Result<(), ArtifactError> {
    let host_dir = dir.join("host");
    if !host_dir.is_dir() {
        return Ok(());
    }
    let mut docs: BTreeMap<String, Vec<Arc<Row>>> = BTreeMap::new();
    let mut devices = BTreeSet::new();
    let mut paths: Vec<_> = read_dir(&host_dir)?
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    for p in paths {
        let device = p
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let text = read(&p)?;
        for (rel, rows) in rows_of(&p, &device, &text)? {
            docs.entry(rel).or_default().extend(rows);
        }
        devices.insert(device);
    }
    let agent: Vec<String> = relations
        .keys()
        .filter(|r| r.starts_with("agent_"))
        .cloned()
        .collect();
    for rel in agent {
        let rows = relations.remove(&rel).unwrap_or_default();
        if let Some(r) = rows
            .iter()
            .find(|r| r.vals.first().is_some_and(|d| !devices.contains(d)))
        {
            return Err(ArtifactError {
                at: r.at.clone(),
                message: format!(
                    "`{rel}` names device `{}`, which has no host/{}.json: an incomplete artifact set",
                    r.vals[0], r.vals[0]
                ),
                hint: Some("verify a whole directory written by `netc compile --out DIR`".into()),
            });
        }
    }
    relations.extend(docs);
    Ok(())
}
