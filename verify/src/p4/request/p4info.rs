//! The P4Info reader: p4c's `netc.p4info.txtpb` → a [`P4Info`] (tables
//! with their match fields, actions and scopes, action parameters,
//! profiles), the contract [`super::decode`] checks a WriteRequest against.
//!
//! Expects p4c's output as is. Guarantees: each table's
//! `initial_default_action` is read and checked (an action of the table,
//! not `TABLE_ONLY`, arguments that fit their parameters), errors carry
//! their `file:line:col`; what the verifier does not use (annotations,
//! `type_info`, `pkg_info`) is skipped.

use super::{
    params_of, Action, ActionInfo, Ctx, DecodeError, FieldInfo, Kind, P4Info, Params, Scope,
    TableInfo,
};
use crate::p4::textpb::{self, Field, Message, Value};
use std::collections::BTreeMap;

/// Reads the P4Info text (lenient about fields the verifier does not use).
pub fn read_p4info(file: &str, text: &str) -> Result<P4Info, DecodeError> {
    let tree = textpb::parse(file, text)?;
    let c = Ctx { file };
    let mut info = P4Info::default();
    let mut tables = Vec::new();
    let preamble = |m: &Message| -> Result<(u32, String), DecodeError> {
        let mut id = 0;
        let mut name = String::new();
        for f in &m.fields {
            if f.name == "preamble" {
                for p in &c.msg(f)?.fields {
                    match (p.name.as_str(), &p.value) {
                        ("id", _) => id = c.uint(p, 32)? as u32,
                        ("alias", Value::Str(s)) => name = String::from_utf8_lossy(s).into_owned(),
                        _ => {}
                    }
                }
            }
        }
        Ok((id, name))
    };
    for f in &tree.fields {
        let m = c.msg(f).ok();
        match (f.name.as_str(), m) {
            ("tables", Some(m)) => {
                let (id, name) = preamble(m)?;
                let mut t = TableInfo {
                    name,
                    fields: BTreeMap::new(),
                    actions: Vec::new(),
                    initial_default: None,
                };
                let mut initial = None;
                for g in &m.fields {
                    match g.name.as_str() {
                        "match_fields" => {
                            let (mut fid, mut fname, mut bits, mut kind) =
                                (0, String::new(), 0, Kind::Exact);
                            for h in &c.msg(g)?.fields {
                                match (h.name.as_str(), &h.value) {
                                    ("id", _) => fid = c.uint(h, 32)? as u32,
                                    ("name", Value::Str(s)) => {
                                        fname = String::from_utf8_lossy(s).into_owned()
                                    }
                                    ("bitwidth", _) => bits = c.uint(h, 32)? as u32,
                                    ("match_type", Value::Ident(k)) => {
                                        kind = match k.as_str() {
                                            "EXACT" => Kind::Exact,
                                            "LPM" => Kind::Lpm,
                                            "TERNARY" => Kind::Ternary,
                                            "RANGE" => Kind::Range,
                                            _ => {
                                                return Err(c.err(
                                                    h.at,
                                                    format!(
                                                        "match type {k} is not one netc.p4 uses"
                                                    ),
                                                ))
                                            }
                                        }
                                    }
                                    _ => {}
                                }
                            }
                            t.fields.insert(
                                fid,
                                FieldInfo {
                                    name: fname,
                                    bits,
                                    kind,
                                },
                            );
                        }
                        "action_refs" => {
                            let (mut aid, mut scope) = (0, Scope::TableAndDefault);
                            for h in &c.msg(g)?.fields {
                                match (h.name.as_str(), &h.value) {
                                    ("id", _) => aid = c.uint(h, 32)? as u32,
                                    ("scope", Value::Ident(k)) => {
                                        scope = match k.as_str() {
                                            "TABLE_AND_DEFAULT" => Scope::TableAndDefault,
                                            "TABLE_ONLY" => Scope::TableOnly,
                                            "DEFAULT_ONLY" => Scope::DefaultOnly,
                                            _ => {
                                                return Err(c.err(
                                                    h.at,
                                                    format!("unknown action scope {k}"),
                                                ))
                                            }
                                        }
                                    }
                                    _ => {}
                                }
                            }
                            t.actions.push((aid, scope));
                        }
                        "initial_default_action" => initial = Some(g),
                        _ => {}
                    }
                }
                tables.push((id, t, initial));
            }
            ("actions", Some(m)) => {
                let (id, name) = preamble(m)?;
                let mut params = BTreeMap::new();
                for g in m.fields.iter().filter(|g| g.name == "params") {
                    let (mut pid, mut pname, mut bits) = (0, String::new(), 0);
                    for h in &c.msg(g)?.fields {
                        match (h.name.as_str(), &h.value) {
                            ("id", _) => pid = c.uint(h, 32)? as u32,
                            ("name", Value::Str(s)) => {
                                pname = String::from_utf8_lossy(s).into_owned()
                            }
                            ("bitwidth", _) => bits = c.uint(h, 32)? as u32,
                            _ => {}
                        }
                    }
                    params.insert(pid, (pname, bits));
                }
                info.actions.insert(id, ActionInfo { name, params });
            }
            ("action_profiles", Some(m)) => {
                let (id, name) = preamble(m)?;
                let mut users = Vec::new();
                for g in m.fields.iter().filter(|g| g.name == "table_ids") {
                    users.push(c.uint(g, 32)? as u32);
                }
                info.profiles.insert(id, name);
                info.profile_tables.insert(id, users);
            }
            _ => {}
        }
    }
    // initial default actions, once every action is known
    for (id, mut t, initial) in tables {
        if let Some(g) = initial {
            t.initial_default = Some(initial_default(&c, g, &t, &info)?);
        }
        info.tables.insert(id, t);
    }
    Ok(info)
}

/// A table's `initial_default_action { action_id arguments { param_id value } }`
/// (p4c writes each argument at its parameter's full byte width).
fn initial_default(
    c: &Ctx,
    g: &Field,
    t: &TableInfo,
    info: &P4Info,
) -> Result<Action, DecodeError> {
    let (mut id, mut pending) = (None, Vec::new());
    for h in &c.msg(g)?.fields {
        match h.name.as_str() {
            "action_id" => id = Some((c.uint(h, 32)? as u32, h.at)),
            "arguments" => pending.push(h),
            _ => {}
        }
    }
    let (id, at) = id.ok_or_else(|| c.err(g.at, "initial_default_action without action_id"))?;
    let a = info
        .actions
        .get(&id)
        .ok_or_else(|| c.err(at, format!("no action with id {id}")))?;
    match t.scope(id) {
        None => {
            return Err(c.err(
                at,
                format!(
                    "default action `{}` is not an action of table `{}`",
                    a.name, t.name
                ),
            ))
        }
        Some(Scope::TableOnly) => {
            return Err(c.err(
                at,
                format!(
                    "default action `{}` is TABLE_ONLY in table `{}`",
                    a.name, t.name
                ),
            ))
        }
        Some(_) => {}
    }
    let params = params_of(c, &pending, a, g.at, Params::DefaultArguments)?;
    Ok(Action { id, params })
}
