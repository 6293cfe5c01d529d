//! The P4 switches as they will be programmed: `DIR/p4/<switch>.txtpb`.
//!
//! Reading order: [`textpb`] (a strict protobuf text-format reader,
//! `file:line:col` errors) → [`request`] (the tree → a typed P4Runtime
//! `WriteRequest`, checked against `p4/netc.p4info.txtpb`) → [`switch`] (the
//! updates applied to an empty switch; its tables read back as `p4_*` rows
//! citing the `.txtpb` line that installed each) → [`ingress`] (netc.p4's
//! ingress control flow run on one concrete packet over those entries) →
//! [`symbolic`] (the same control flow on every packet at once, BDDs) →
//! [`invariants`] (the switch checks of specs/invariants.md §5b on it,
//! AFF-1's in [`affinity`]; [`reach`] walks the fabric switch to switch for
//! REACH-2 and REACH-1 on the underlay; [`frame`] writes their
//! counterexample packets; [`hop`] prints one packet through one switch,
//! for counterexamples and `netc predict` alike).
//!
//! Expects: an artifact directory. Guarantees: when `DIR/p4/` exists, the
//! P4 table relations the network model and the table checks read
//! (`p4_vip`, `p4_ecmp_member`, `p4_tunnel`, …; not `p4_announce`, which is
//! BGP, not a table) are replaced by what the `.txtpb` files install — so a
//! renderer bug in the text (a wrong VNI, a reordered member vector, a lost
//! ACL entry, a wrong tunnel destination) is what the checks see, and the
//! counterexample cites the `.txtpb` line. Without `DIR/p4/` the rows stay;
//! rows that name a switch with no request are refused (an incomplete set).

pub mod textpb;
pub mod request;
pub mod switch;
pub mod ingress;
pub mod symbolic;
pub mod invariants;
pub mod affinity;
pub mod reach;
pub mod frame;
pub mod hop;
pub mod mcast;

use crate::artifacts::{ArtifactError, Row, SwitchText};
use request::{Entity, EntryAction, FieldMatch, P4Info, Update, UpdateType};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::Path;

/// The relations a switch's tables and multicast groups define.
pub const TABLE_RELATIONS: [&str; 14] = [
    "p4_switch_config",
    "p4_host_port",
    "p4_port_vni",
    "p4_acl",
    "p4_mcast",
    "p4_mcast_replica",
    "p4_vip_local",
    "p4_vip",
    "p4_ecmp_member_local",
    "p4_ecmp_member",
    "p4_tunnel",
    "p4_route",
    "p4_route_member",
    "p4_underlay",
];

/// The P4Info netc's switches are programmed against (`p4/netc.p4info.txtpb`).
pub fn p4info() -> Result<P4Info, ArtifactError> {
    request::read_p4info("p4/netc.p4info.txtpb", request::NETC_P4INFO).map_err(|e| ArtifactError {
        at: e.file.clone(),
        message: format!("internal error: the embedded P4Info does not read: {e}"),
        hint: None,
    })
}

fn artifact_error(at: String, message: String) -> ArtifactError {
    ArtifactError {
        at,
        message,
        hint: Some("the file is not a WriteRequest as `netc compile` writes it; compile again, or fix the line".into()),
    }
}

/// Decodes one `.txtpb` file.
pub fn decode_file(path: &Path) -> Result<Vec<Update>, ArtifactError> {
    let text = std::fs::read_to_string(path).map_err(|e| ArtifactError {
        at: path.display().to_string(),
        message: format!("cannot read: {e}"),
        hint: None,
    })?;
    decode_text(path, &text)
}

/// Decodes one request's text, cited as read from `path`.
pub fn decode_text(path: &Path, text: &str) -> Result<Vec<Update>, ArtifactError> {
    let file = path.display().to_string();
    let split = |e: textpb::TextError| {
        artifact_error(format!("{}:{}:{}", e.file, e.line, e.col), e.message)
    };
    let tree = textpb::parse(&file, text).map_err(split)?;
    request::decode(&file, &tree, &p4info()?).map_err(split)
}

/// Decodes and applies one switch's request to an empty switch.
pub fn build_switch(name: &str, sw: &SwitchText) -> Result<switch::Switch, ArtifactError> {
    let updates = decode_text(&sw.path, &sw.text)?;
    let file = sw.path.display().to_string();
    switch::Switch::apply(name, &file, &updates, &p4info()?)
        .map_err(|e| artifact_error(format!("{}:{}", e.file, e.line), e.message))
}

/// Reads `dir/p4/*.txtpb` (the requests, by switch name) and replaces the
/// P4 table relations of `relations` by what they install.
///
/// Fails closed: a switch that `relations/p4_*.csv` gives entries to but
/// that has no request is an error (the set is incomplete: what would be
/// pushed to it is unknown), never a switch with nothing to check.
pub fn read_switches(
    dir: &Path,
    relations: &mut BTreeMap<String, Vec<std::sync::Arc<Row>>>,
) -> Result<BTreeMap<String, SwitchText>, ArtifactError> {
    let p4_dir = dir.join("p4");
    let mut texts = BTreeMap::new();
    if p4_dir.is_dir() {
        let mut files: Vec<_> = std::fs::read_dir(&p4_dir)
            .map_err(|e| ArtifactError {
                at: p4_dir.display().to_string(),
                message: format!("cannot read: {e}"),
                hint: None,
            })?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "txtpb"))
            .collect();
        files.sort();
        for path in files {
            let name = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let text = std::fs::read_to_string(&path).map_err(|e| ArtifactError {
                at: path.display().to_string(),
                message: format!("cannot read: {e}"),
                hint: None,
            })?;
            texts.insert(
                name,
                SwitchText {
                    path,
                    text: text.into(),
                },
            );
        }
    }
    // every switch the relations give entries must have its request
    for rel in TABLE_RELATIONS {
        for r in relations.get(rel).into_iter().flatten() {
            let Some(sw) = r.vals.first() else { continue };
            if !texts.contains_key(sw.as_str()) {
                return Err(ArtifactError {
                    at: r.at.clone(),
                    message: format!(
                        "switch `{sw}` has {rel} entries but no request `p4/{sw}.txtpb`: the artifact set is incomplete"
                    ),
                    hint: Some("verify the directory `netc compile` wrote, with every file it wrote".into()),
                });
            }
        }
    }
    if texts.is_empty() {
        return Ok(texts);
    }
    let info = p4info()?;
    let mut rows: BTreeMap<&'static str, Vec<Row>> = BTreeMap::new();
    for (name, text) in &texts {
        let sw = build_switch(name, text)?;
        let state =
            |e: switch::StateError| artifact_error(format!("{}:{}", e.file, e.line), e.message);
        for (rel, mut rs) in sw.rows(&info).map_err(state)? {
            rows.entry(rel).or_default().append(&mut rs);
        }
    }
    for rel in TABLE_RELATIONS {
        let rs = rows.remove(rel).unwrap_or_default();
        relations.insert(
            rel.to_string(),
            rs.into_iter().map(std::sync::Arc::new).collect(),
        );
    }
    Ok(texts)
}

fn hex(v: u128) -> String {
    // the canonical bytestring's bytes, as hex
    let b = v.to_be_bytes();
    let first = b.iter().position(|x| *x != 0).unwrap_or(15);
    b[first..].iter().map(|x| format!("{x:02x}")).collect()
}

fn action_json(a: &request::Action) -> Value {
    let params: Vec<Value> = a
        .params
        .iter()
        .map(|(id, v)| json!({"param_id": id, "value": hex(*v)}))
        .collect();
    let mut o = json!({"action_id": a.id});
    if !params.is_empty() {
        o["params"] = Value::Array(params);
    }
    o
}

/// The decoded request as JSON, by P4Runtime field names, only fields that
/// are set (proto3), bytes as hex: what `tests/test_p4_decode.py` compares
/// with the official Python decode.
pub fn to_json(updates: &[Update]) -> Value {
    let ups: Vec<Value> = updates
        .iter()
        .map(|u| {
            let kind = match u.kind {
                UpdateType::Insert => "INSERT",
                UpdateType::Modify => "MODIFY",
                UpdateType::Delete => "DELETE",
            };
            let entity = match &u.entity {
                Entity::Table(e) => {
                    let mut o = json!({"table_id": e.table_id});
                    let ms: Vec<Value> = e
                        .matches
                        .iter()
                        .map(|(f, m)| {
                            let v = match m {
                                FieldMatch::Exact(v) => json!({"exact": {"value": hex(*v)}}),
                                FieldMatch::Lpm(v, l) => {
                                    json!({"lpm": {"value": hex(*v), "prefix_len": l}})
                                }
                                FieldMatch::Ternary(v, k) => {
                                    json!({"ternary": {"value": hex(*v), "mask": hex(*k)}})
                                }
                                FieldMatch::Range(a, b) => {
                                    json!({"range": {"low": hex(*a), "high": hex(*b)}})
                                }
                            };
                            let mut v = v;
                            v["field_id"] = json!(f);
                            v
                        })
                        .collect();
                    if !ms.is_empty() {
                        o["match"] = Value::Array(ms);
                    }
                    match &e.action {
                        Some(EntryAction::Action(a)) => {
                            o["action"] = json!({"action": action_json(a)})
                        }
                        Some(EntryAction::Member(m)) => {
                            o["action"] = json!({"action_profile_member_id": m})
                        }
                        None => {}
                    }
                    if e.priority != 0 {
                        o["priority"] = json!(e.priority);
                    }
                    if e.is_default {
                        o["is_default_action"] = json!(true);
                    }
                    json!({"table_entry": o})
                }
                Entity::Member {
                    profile_id,
                    member_id,
                    action,
                } => {
                    let mut o =
                        json!({"action_profile_id": profile_id, "action": action_json(action)});
                    if *member_id != 0 {
                        o["member_id"] = json!(member_id);
                    }
                    json!({"action_profile_member": o})
                }
                Entity::McastGroup { id, replicas } => {
                    let rs: Vec<Value> = replicas
                        .iter()
                        .map(|(p, i)| {
                            let mut r = json!({"port": hex(u128::from(*p))});
                            if *i != 0 {
                                r["instance"] = json!(i);
                            }
                            r
                        })
                        .collect();
                    let mut g = json!({"multicast_group_id": id});
                    if !rs.is_empty() {
                        g["replicas"] = Value::Array(rs);
                    }
                    json!({"packet_replication_engine_entry": {"multicast_group_entry": g}})
                }
            };
            json!({"type": kind, "entity": entity})
        })
        .collect();
    if ups.is_empty() {
        json!({})
    } else {
        json!({ "updates": ups })
    }
}
