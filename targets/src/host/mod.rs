//! Host-agent target: `agent_*` rows of a machine → one JSON config document.
//!
//! Expects: a device's `agent_*` rows (specs/targets.md §2). Guarantees: the
//! artifact `host/<device>.json` is the document of `specs/host-agent.md`:
//! `{"schema": "netc-host-agent/1", "host": …, "<section>": [objects]}`,
//! one section per relation (host relations: `vms`, `dips`, `probes`,
//! `snat_ranges`, `mcast_members`; Mux, Anolis and Yoda relations under
//! their own names), objects with the column names of the spec, rows in
//! sorted order, keys in a fixed order — same rows, same bytes. Numbers are
//! JSON numbers; addresses, prefixes, MACs and symbols are strings. A
//! relation this module does not know is still rendered (section = the
//! relation name, columns `c1`, `c2`, …) so a new rule never breaks compile.

use crate::{Artifact, DeviceRows, RenderError, Renderer};
use netc_compiler::value::Value;
use serde_json::{Map, Value as Json};
use std::path::PathBuf;

pub struct HostRenderer;

/// The document's schema tag.
pub const SCHEMA: &str = "netc-host-agent/1";

/// (relation, section, column names after the location column).
pub const SECTIONS: &[(&str, &str, &[&str])] = &[
    (
        "agent_vm",
        "vms",
        &["tenant", "vni", "vm", "mac", "ip", "ofport"],
    ),
    (
        "agent_dip",
        "dips",
        &["tenant", "vm", "dip", "vip", "proto", "port", "target_port"],
    ),
    (
        "agent_probe",
        "probes",
        &["tenant", "vm", "dip", "proto", "target_port"],
    ),
    (
        "agent_snat_range",
        "snat_ranges",
        &["tenant", "vm", "dip", "vip", "port_lo", "port_hi"],
    ),
    (
        "agent_mcast_member",
        "mcast_members",
        &["tenant", "vni", "group", "vm"],
    ),
    (
        "agent_mux_vip",
        "mux_vips",
        &["vni", "vip", "proto", "port", "n"],
    ),
    (
        "agent_mux_member",
        "mux_members",
        &["vip", "proto", "port", "idx", "mvni", "member"],
    ),
    (
        "agent_mux_tunnel",
        "mux_tunnels",
        &["mvni", "member", "underlay", "dmac"],
    ),
    ("agent_mux_announce", "mux_announce", &["prefix"]),
    ("agent_mux_blackhole", "mux_blackholes", &["vip"]),
    (
        "agent_mux_snat",
        "mux_snat",
        &["vip", "port_lo", "port_hi", "vni", "dip", "underlay"],
    ),
    (
        "agent_anolis_peer",
        "anolis_peers",
        &["cluster", "version", "peer", "position", "address"],
    ),
    (
        "agent_anolis_chain",
        "anolis_chains",
        &["cluster", "version", "lo", "hi", "idx", "member"],
    ),
    (
        "agent_anolis_sync",
        "anolis_sync",
        &["cluster", "version", "lo", "hi"],
    ),
    (
        "agent_nf_gateway",
        "nf_gateways",
        &["cluster", "version", "peer", "address", "is_default"],
    ),
    (
        "agent_nf_instance",
        "nf_instances",
        &["tenant", "chain", "hop", "vm", "ofport"],
    ),
    (
        "agent_l7_rule",
        "l7_rules",
        &["vip", "rule", "priority", "match", "action"],
    ),
    (
        "agent_l7_split",
        "l7_splits",
        &["vip", "rule", "priority", "server", "server_port", "weight"],
    ),
];

impl Renderer for HostRenderer {
    fn name(&self) -> &'static str {
        "host"
    }
    fn consumes(&self, relation: &str) -> bool {
        relation.starts_with("agent_")
    }
    fn render(&self, device: &str, rows: &DeviceRows) -> Result<Vec<Artifact>, RenderError> {
        let doc = document(device, rows)?;
        let mut contents = serde_json::to_string_pretty(&doc).map_err(|e| RenderError {
            target: "host",
            device: device.into(),
            message: format!("cannot serialise the document: {e}"),
        })?;
        contents.push('\n');
        Ok(vec![Artifact {
            path: PathBuf::from("host").join(format!("{device}.json")),
            contents,
        }])
    }
}

fn json_of(v: &Value) -> Json {
    match v {
        Value::Number(n) => Json::from(*n),
        Value::Unsigned(n) => Json::from(*n),
        Value::Symbol(s) => Json::from(s.as_str().to_string()),
        other => Json::from(other.to_string()),
    }
}

/// The config document of one device (serde_json keeps key order).
pub fn document(device: &str, rows: &DeviceRows) -> Result<Json, RenderError> {
    let mut doc = Map::new();
    doc.insert("schema".into(), Json::from(SCHEMA));
    doc.insert("host".into(), Json::from(device));
    let mut sections: Vec<(String, Vec<Json>)> = Vec::new();
    for (rel, list) in rows {
        let (section, cols): (String, Vec<String>) =
            match SECTIONS.iter().find(|(r, _, _)| r == rel) {
                Some((_, s, c)) => (s.to_string(), c.iter().map(|c| c.to_string()).collect()),
                None => {
                    let width = list.first().map_or(1, Vec::len);
                    (rel.clone(), (1..width).map(|i| format!("c{i}")).collect())
                }
            };
        let mut objs = Vec::with_capacity(list.len());
        for row in list {
            if row.len() != cols.len() + 1 {
                return Err(RenderError {
                    target: "host",
                    device: device.into(),
                    message: format!(
                        "{rel} row has {} columns, expected {} (@device, {})",
                        row.len(),
                        cols.len() + 1,
                        cols.join(", ")
                    ),
                });
            }
            let mut o = Map::new();
            for (c, v) in cols.iter().zip(&row[1..]) {
                o.insert(c.clone(), json_of(v));
            }
            objs.push(Json::Object(o));
        }
        sections.push((section, objs));
    }
    sections.sort_by(|a, b| a.0.cmp(&b.0));
    for (s, objs) in sections {
        doc.insert(s, Json::Array(objs));
    }
    Ok(Json::Object(doc))
}

#[cfg(test)]
mod tests {
    use super::*;
    use netc_compiler::value::Sym;

    #[test]
    fn renders_named_sections_in_a_fixed_order() {
        let mut rows = DeviceRows::new();
        rows.insert(
            "agent_probe".into(),
            vec![vec![
                Value::Symbol(Sym::new("h1")),
                Value::Symbol(Sym::new("acme")),
                Value::Symbol(Sym::new("web1")),
                Value::Ipv4(0x0a01010b),
                Value::Number(6),
                Value::Number(8080),
            ]],
        );
        let a = HostRenderer.render("h1", &rows).unwrap();
        assert_eq!(a[0].path, PathBuf::from("host/h1.json"));
        let v: Json = serde_json::from_str(&a[0].contents).unwrap();
        assert_eq!(v["schema"], SCHEMA);
        assert_eq!(v["probes"][0]["dip"], "10.1.1.11");
        assert_eq!(v["probes"][0]["target_port"], 8080);
        assert_eq!(a, HostRenderer.render("h1", &rows).unwrap());
    }

    #[test]
    fn nf_instances_have_a_named_section() {
        let mut rows = DeviceRows::new();
        let sym = |s: &str| Value::Symbol(Sym::new(s));
        rows.insert(
            "agent_nf_instance".into(),
            vec![vec![
                sym("h2"),
                sym("shop"),
                sym("ids"),
                Value::Number(1),
                sym("ids1"),
                Value::Number(11),
            ]],
        );
        let a = HostRenderer.render("h2", &rows).unwrap();
        let v: Json = serde_json::from_str(&a[0].contents).unwrap();
        assert!(v.get("agent_nf_instance").is_none());
        let inst = &v["nf_instances"][0];
        assert_eq!(
            (&inst["chain"], &inst["hop"], &inst["vm"]),
            (&Json::from("ids"), &Json::from(1), &Json::from("ids1"))
        );
        assert_eq!(inst["ofport"], 11);
    }

    #[test]
    fn a_row_of_the_wrong_width_is_an_error_naming_the_device() {
        let mut rows = DeviceRows::new();
        rows.insert("agent_vm".into(), vec![vec![Value::Symbol(Sym::new("h9"))]]);
        let e = HostRenderer.render("h9", &rows).unwrap_err();
        assert_eq!(e.device, "h9");
        assert!(e.message.contains("agent_vm"));
    }
}
