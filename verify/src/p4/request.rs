//! The text-format tree of a `p4/<switch>.txtpb` → a typed P4Runtime
//! `WriteRequest` (the subset netc emits), checked against the P4Info of
//! `p4/netc.p4`.
//!
//! Expects: a [`textpb::Message`]; the P4Info text (embedded from
//! `p4/netc.p4info.txtpb` at build time, so the verifier reads the same
//! contract as the program and never the renderer's constants). Guarantees:
//! every field of every message is one P4Runtime defines for that message
//! (anything else is an error at its `file:line:col`, naming the message
//! and the fields it may have); table, field, action, parameter and profile
//! ids exist in the P4Info; match kinds are the field's; values fit their
//! bit widths; an action's scope in its table is kept (a `DEFAULT_ONLY`
//! action, e.g. the `NoAction` p4c gives the action-profile tables, never in
//! an entry or a member; a `TABLE_ONLY` one never as the default). The P4Info
//! reader (`request/p4info.rs`, re-exported here) takes p4c's output as
//! is: each table's `initial_default_action` is read (and checked against
//! the table's actions), the rest it does not use (annotations,
//! `type_info`, `pkg_info`) is skipped. Each update keeps the line it
//! starts on, for counterexamples.

mod p4info;

pub use p4info::read_p4info;

use super::textpb::{self, Field, Message, Pos, Value};
use std::collections::BTreeMap;

/// `p4/netc.p4info.txtpb`, the contract of `p4/netc.p4`.
pub const NETC_P4INFO: &str = include_str!("../../../p4/netc.p4info.txtpb");

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Exact,
    Lpm,
    Ternary,
    Range,
}

#[derive(Clone, Debug)]
pub struct FieldInfo {
    pub name: String,
    pub bits: u32,
    pub kind: Kind,
}

/// Where a table may use an action (P4Info `ActionRef.Scope`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    TableAndDefault,
    TableOnly,
    DefaultOnly,
}

#[derive(Clone, Debug)]
pub struct TableInfo {
    /// The alias (`vip`), as specs/targets.md names tables.
    pub name: String,
    pub fields: BTreeMap<u32, FieldInfo>,
    /// (action id, scope), in P4Info order.
    pub actions: Vec<(u32, Scope)>,
    /// The program's default action (P4Info `initial_default_action`).
    pub initial_default: Option<Action>,
}

impl TableInfo {
    /// The scope of action `id` in this table, if the table has it.
    pub fn scope(&self, id: u32) -> Option<Scope> {
        self.actions.iter().find(|(a, _)| *a == id).map(|(_, s)| *s)
    }
}

#[derive(Clone, Debug)]
pub struct ActionInfo {
    pub name: String,
    /// param id → (name, bits)
    pub params: BTreeMap<u32, (String, u32)>,
}

/// The P4Info, indexed by id.
#[derive(Clone, Debug, Default)]
pub struct P4Info {
    pub tables: BTreeMap<u32, TableInfo>,
    pub actions: BTreeMap<u32, ActionInfo>,
    pub profiles: BTreeMap<u32, String>,
    /// profile id → the tables it implements (`table_ids`).
    pub profile_tables: BTreeMap<u32, Vec<u32>>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FieldMatch {
    Exact(u128),
    Lpm(u128, u32),
    Ternary(u128, u128),
    Range(u128, u128),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Action {
    pub id: u32,
    /// (param id, value), in file order
    pub params: Vec<(u32, u128)>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EntryAction {
    Action(Action),
    Member(u32),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableEntry {
    pub table_id: u32,
    pub matches: Vec<(u32, FieldMatch)>,
    pub action: Option<EntryAction>,
    pub priority: i32,
    pub is_default: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Entity {
    Table(TableEntry),
    Member {
        profile_id: u32,
        member_id: u32,
        action: Action,
    },
    McastGroup {
        id: u32,
        /// (port, instance)
        replicas: Vec<(u32, u32)>,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpdateType {
    Insert,
    Modify,
    Delete,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Update {
    pub kind: UpdateType,
    pub entity: Entity,
    /// Line of the `updates {` in the file.
    pub line: u32,
}

pub type DecodeError = textpb::TextError;

struct Ctx<'a> {
    file: &'a str,
}

impl Ctx<'_> {
    fn err(&self, at: Pos, message: impl Into<String>) -> DecodeError {
        DecodeError {
            file: self.file.to_string(),
            line: at.line,
            col: at.col,
            message: message.into(),
        }
    }
    fn unknown(&self, f: &Field, msg: &str, allowed: &[&str]) -> DecodeError {
        self.err(
            f.at,
            format!(
                "unknown field `{}` in {msg} (expected one of: {})",
                f.name,
                allowed.join(", ")
            ),
        )
    }
    fn msg<'m>(&self, f: &'m Field) -> Result<&'m Message, DecodeError> {
        match &f.value {
            Value::Msg(m) => Ok(m),
            _ => Err(self.err(f.at, format!("expected `{} {{ ... }}` (a message)", f.name))),
        }
    }
    fn uint(&self, f: &Field, bits: u32) -> Result<u128, DecodeError> {
        match &f.value {
            Value::Int(v) if *v >= 0 && (bits >= 127 || *v < (1i128 << bits)) => Ok(*v as u128),
            _ => Err(self.err(
                f.at,
                format!("expected `{}: <unsigned {bits}-bit integer>`", f.name),
            )),
        }
    }
    fn int32(&self, f: &Field) -> Result<i32, DecodeError> {
        match &f.value {
            Value::Int(v) => i32::try_from(*v)
                .map_err(|_| self.err(f.at, format!("`{}` does not fit in int32", f.name))),
            _ => Err(self.err(f.at, format!("expected `{}: <integer>`", f.name))),
        }
    }
    fn boolean(&self, f: &Field) -> Result<bool, DecodeError> {
        match &f.value {
            Value::Ident(s) if s == "true" || s == "True" || s == "t" => Ok(true),
            Value::Ident(s) if s == "false" || s == "False" || s == "f" => Ok(false),
            Value::Int(1) => Ok(true),
            Value::Int(0) => Ok(false),
            _ => Err(self.err(f.at, format!("expected `{}: true|false`", f.name))),
        }
    }
    /// A P4Runtime bytestring that fits `bits` (P4Runtime §8.3).
    fn bytes(&self, f: &Field, bits: u32, what: &str) -> Result<u128, DecodeError> {
        let Value::Str(b) = &f.value else {
            return Err(self.err(f.at, format!("expected `{}: \"<bytes>\"` ({what})", f.name)));
        };
        if b.is_empty() || b.len() > 16 {
            return Err(self.err(
                f.at,
                format!("{what}: expected 1..=16 bytes, found {}", b.len()),
            ));
        }
        let v = b.iter().fold(0u128, |acc, x| (acc << 8) | u128::from(*x));
        if bits < 128 && v >> bits != 0 {
            return Err(self.err(
                f.at,
                format!("{what}: value {v} does not fit in {bits} bits"),
            ));
        }
        Ok(v)
    }
}

/// Decodes a WriteRequest and checks it against `info`.
pub fn decode(file: &str, tree: &Message, info: &P4Info) -> Result<Vec<Update>, DecodeError> {
    let c = Ctx { file };
    let mut out = Vec::new();
    for f in &tree.fields {
        match f.name.as_str() {
            "device_id" | "role_id" | "role" => {}
            "election_id" => {
                for g in &c.msg(f)?.fields {
                    if g.name != "high" && g.name != "low" {
                        return Err(c.unknown(g, "Uint128", &["high", "low"]));
                    }
                    c.uint(g, 64)?;
                }
            }
            "atomicity" => {}
            "updates" => out.push(update(&c, f, info)?),
            _ => {
                return Err(c.unknown(
                    f,
                    "WriteRequest",
                    &[
                        "device_id",
                        "role_id",
                        "election_id",
                        "updates",
                        "atomicity",
                    ],
                ))
            }
        }
    }
    Ok(out)
}

fn update(c: &Ctx, f: &Field, info: &P4Info) -> Result<Update, DecodeError> {
    let m = c.msg(f)?;
    let mut kind = None;
    let mut entity = None;
    for g in &m.fields {
        match (g.name.as_str(), &g.value) {
            ("type", Value::Ident(t)) => {
                kind = Some(match t.as_str() {
                    "INSERT" => UpdateType::Insert,
                    "MODIFY" => UpdateType::Modify,
                    "DELETE" => UpdateType::Delete,
                    _ => {
                        return Err(c.err(
                            g.at,
                            format!("expected INSERT, MODIFY or DELETE, found `{t}`"),
                        ))
                    }
                })
            }
            ("type", _) => return Err(c.err(g.at, "expected `type: INSERT|MODIFY|DELETE`")),
            ("entity", _) => entity = Some(entity_of(c, g, info)?),
            _ => return Err(c.unknown(g, "Update", &["type", "entity"])),
        }
    }
    let kind = kind.ok_or_else(|| {
        c.err(
            f.at,
            "this update has no `type` (expected INSERT, MODIFY or DELETE)",
        )
    })?;
    let entity = entity.ok_or_else(|| c.err(f.at, "this update has no `entity`"))?;
    Ok(Update {
        kind,
        entity,
        line: f.at.line,
    })
}

fn entity_of(c: &Ctx, f: &Field, info: &P4Info) -> Result<Entity, DecodeError> {
    let m = c.msg(f)?;
    let [g] = m.fields.as_slice() else {
        return Err(c.err(f.at, "expected exactly one of table_entry, action_profile_member, packet_replication_engine_entry in `entity`"));
    };
    match g.name.as_str() {
        "table_entry" => table_entry(c, g, info).map(Entity::Table),
        "action_profile_member" => {
            let (mut profile_id, mut member_id, mut action) = (None, 0, None);
            for h in &c.msg(g)?.fields {
                match h.name.as_str() {
                    "action_profile_id" => {
                        let id = c.uint(h, 32)? as u32;
                        if !info.profiles.contains_key(&id) {
                            return Err(c.err(
                                h.at,
                                format!("no action profile with id {id} in p4/netc.p4info.txtpb"),
                            ));
                        }
                        profile_id = Some(id);
                    }
                    "member_id" => member_id = c.uint(h, 32)? as u32,
                    "action" => action = Some(action_of(c, h, info)?),
                    _ => {
                        return Err(c.unknown(
                            h,
                            "ActionProfileMember",
                            &["action_profile_id", "member_id", "action"],
                        ))
                    }
                }
            }
            let profile_id =
                profile_id.ok_or_else(|| c.err(g.at, "member without action_profile_id"))?;
            let action = action.ok_or_else(|| c.err(g.at, "member without action"))?;
            // a member's action is one its tables may hit with (not DEFAULT_ONLY)
            for tid in info.profile_tables.get(&profile_id).into_iter().flatten() {
                let Some(t) = info.tables.get(tid) else {
                    continue;
                };
                if !matches!(
                    t.scope(action.id),
                    Some(Scope::TableAndDefault | Scope::TableOnly)
                ) {
                    return Err(c.err(
                        g.at,
                        format!(
                            "action {} is not an entry action of table `{}` (profile {})",
                            action.id, t.name, info.profiles[&profile_id]
                        ),
                    ));
                }
            }
            Ok(Entity::Member {
                profile_id,
                member_id,
                action,
            })
        }
        "packet_replication_engine_entry" => {
            let pre = c.msg(g)?;
            let [h] = pre.fields.as_slice() else {
                return Err(c.err(g.at, "expected one `multicast_group_entry`"));
            };
            if h.name != "multicast_group_entry" {
                return Err(c.unknown(
                    h,
                    "PacketReplicationEngineEntry",
                    &["multicast_group_entry"],
                ));
            }
            let (mut id, mut replicas) = (0, Vec::new());
            for k in &c.msg(h)?.fields {
                match k.name.as_str() {
                    "multicast_group_id" => id = c.uint(k, 32)? as u32,
                    "replicas" => {
                        let (mut port, mut instance) = (0, 0);
                        for r in &c.msg(k)?.fields {
                            match r.name.as_str() {
                                "egress_port" => port = c.uint(r, 32)? as u32,
                                "port" => port = c.bytes(r, 32, "replica port")? as u32,
                                "instance" => instance = c.uint(r, 32)? as u32,
                                _ => {
                                    return Err(c.unknown(
                                        r,
                                        "Replica",
                                        &["egress_port", "port", "instance"],
                                    ))
                                }
                            }
                        }
                        replicas.push((port, instance));
                    }
                    _ => {
                        return Err(c.unknown(
                            k,
                            "MulticastGroupEntry",
                            &["multicast_group_id", "replicas"],
                        ))
                    }
                }
            }
            Ok(Entity::McastGroup { id, replicas })
        }
        _ => Err(c.unknown(
            g,
            "Entity",
            &[
                "table_entry",
                "action_profile_member",
                "packet_replication_engine_entry",
            ],
        )),
    }
}

fn action_of(c: &Ctx, f: &Field, info: &P4Info) -> Result<Action, DecodeError> {
    let mut id = None;
    let mut pending = Vec::new();
    for g in &c.msg(f)?.fields {
        match g.name.as_str() {
            "action_id" => id = Some((c.uint(g, 32)? as u32, g.at)),
            "params" => pending.push(g),
            _ => return Err(c.unknown(g, "Action", &["action_id", "params"])),
        }
    }
    let (id, at) = id.ok_or_else(|| c.err(f.at, "action without action_id"))?;
    let a = info.actions.get(&id).ok_or_else(|| {
        c.err(
            at,
            format!("no action with id {id} in p4/netc.p4info.txtpb"),
        )
    })?;
    let params = params_of(c, &pending, a, f.at, Params::ActionParams)?;
    Ok(Action { id, params })
}

/// Which message's parameters [`params_of`] reads: a WriteRequest's
/// `Action.params` (strict: an unknown field is an error) or a P4Info
/// `initial_default_action`'s `arguments` (other fields are p4c's).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Params {
    ActionParams,
    DefaultArguments,
}

/// The `(param_id, value)` of each parameter message in `pending`, every
/// one of action `a`'s parameters exactly once by count, each value at its
/// parameter's width; errors cite `at` (the action) or the field.
fn params_of(
    c: &Ctx,
    pending: &[&Field],
    a: &ActionInfo,
    at: Pos,
    kind: Params,
) -> Result<Vec<(u32, u128)>, DecodeError> {
    let (one, many, prefix) = match kind {
        Params::ActionParams => ("param", "parameters", ""),
        Params::DefaultArguments => ("argument", "arguments", "default "),
    };
    let mut params = Vec::new();
    for g in pending {
        let (mut pid, mut value) = (None, None);
        for h in &c.msg(g)?.fields {
            match h.name.as_str() {
                "param_id" => pid = Some((c.uint(h, 32)? as u32, h.at)),
                "value" => value = Some(h),
                _ if kind == Params::ActionParams => {
                    return Err(c.unknown(h, "Action.Param", &["param_id", "value"]))
                }
                _ => {}
            }
        }
        let (pid, pat) = pid.ok_or_else(|| c.err(g.at, format!("{one} without param_id")))?;
        let (pname, bits) = a
            .params
            .get(&pid)
            .ok_or_else(|| c.err(pat, format!("action `{}` has no parameter {pid}", a.name)))?;
        let v = value.ok_or_else(|| c.err(g.at, format!("{one} without value")))?;
        params.push((pid, c.bytes(v, *bits, &format!("{}({pname})", a.name))?));
    }
    if params.len() != a.params.len() {
        return Err(c.err(
            at,
            format!(
                "{prefix}action `{}` needs {} {many}, found {}",
                a.name,
                a.params.len(),
                params.len()
            ),
        ));
    }
    Ok(params)
}

fn table_entry(c: &Ctx, f: &Field, info: &P4Info) -> Result<TableEntry, DecodeError> {
    let m = c.msg(f)?;
    let mut e = TableEntry {
        table_id: 0,
        matches: Vec::new(),
        action: None,
        priority: 0,
        is_default: false,
    };
    let mut table = None;
    let mut pending = Vec::new();
    for g in &m.fields {
        match g.name.as_str() {
            "table_id" => {
                let id = c.uint(g, 32)? as u32;
                table = Some(info.tables.get(&id).ok_or_else(|| {
                    c.err(
                        g.at,
                        format!("no table with id {id} in p4/netc.p4info.txtpb"),
                    )
                })?);
                e.table_id = id;
            }
            "match" => pending.push(g),
            "action" => {
                let [h] = c.msg(g)?.fields.as_slice() else {
                    return Err(c.err(
                        g.at,
                        "expected one of `action` or `action_profile_member_id` in TableAction",
                    ));
                };
                e.action = Some(match h.name.as_str() {
                    "action" => EntryAction::Action(action_of(c, h, info)?),
                    "action_profile_member_id" => EntryAction::Member(c.uint(h, 32)? as u32),
                    _ => {
                        return Err(c.unknown(
                            h,
                            "TableAction",
                            &["action", "action_profile_member_id"],
                        ))
                    }
                });
            }
            "priority" => e.priority = c.int32(g)?,
            "is_default_action" => e.is_default = c.boolean(g)?,
            _ => {
                return Err(c.unknown(
                    g,
                    "TableEntry",
                    &[
                        "table_id",
                        "match",
                        "action",
                        "priority",
                        "is_default_action",
                    ],
                ))
            }
        }
    }
    let table =
        table.ok_or_else(|| c.err(f.at, "table entry without table_id (it must come first)"))?;
    for g in pending {
        let mm = c.msg(g)?;
        let mut fid = None;
        let mut value = None;
        for h in &mm.fields {
            match h.name.as_str() {
                "field_id" => fid = Some((c.uint(h, 32)? as u32, h.at)),
                "exact" | "lpm" | "ternary" | "range" => value = Some(h),
                _ => {
                    return Err(c.unknown(
                        h,
                        "FieldMatch",
                        &["field_id", "exact", "lpm", "ternary", "range"],
                    ))
                }
            }
        }
        let (fid, fat) = fid.ok_or_else(|| c.err(g.at, "match without field_id"))?;
        let fi = table.fields.get(&fid).ok_or_else(|| {
            c.err(
                fat,
                format!("table `{}` has no match field {fid}", table.name),
            )
        })?;
        let v = value
            .ok_or_else(|| c.err(g.at, "match without a value (exact, lpm, ternary or range)"))?;
        let want = match fi.kind {
            Kind::Exact => "exact",
            Kind::Lpm => "lpm",
            Kind::Ternary => "ternary",
            Kind::Range => "range",
        };
        if v.name != want {
            return Err(c.err(
                v.at,
                format!(
                    "field `{}` of table `{}` is {want}, found `{}`",
                    fi.name, table.name, v.name
                ),
            ));
        }
        let what = format!("{}.{}", table.name, fi.name);
        let get = |names: &[&str]| -> Result<Vec<Option<&Field>>, DecodeError> {
            let sub = c.msg(v)?;
            let mut out = vec![None; names.len()];
            for h in &sub.fields {
                match names.iter().position(|n| *n == h.name) {
                    Some(i) => out[i] = Some(h),
                    None => return Err(c.unknown(h, &format!("FieldMatch.{want}"), names)),
                }
            }
            Ok(out)
        };
        fn need<'f>(
            c: &Ctx,
            v: &Field,
            want: &str,
            x: Option<&'f Field>,
            n: &str,
        ) -> Result<&'f Field, DecodeError> {
            x.ok_or_else(|| c.err(v.at, format!("`{want}` without `{n}`")))
        }
        let fm = match fi.kind {
            Kind::Exact => {
                let xs = get(&["value"])?;
                FieldMatch::Exact(c.bytes(need(c, v, want, xs[0], "value")?, fi.bits, &what)?)
            }
            Kind::Lpm => {
                let xs = get(&["value", "prefix_len"])?;
                let len = c.uint(need(c, v, want, xs[1], "prefix_len")?, 32)? as u32;
                if len > fi.bits {
                    return Err(c.err(
                        v.at,
                        format!("{what}: prefix_len {len} is longer than {} bits", fi.bits),
                    ));
                }
                FieldMatch::Lpm(
                    c.bytes(need(c, v, want, xs[0], "value")?, fi.bits, &what)?,
                    len,
                )
            }
            Kind::Ternary => {
                let xs = get(&["value", "mask"])?;
                FieldMatch::Ternary(
                    c.bytes(need(c, v, want, xs[0], "value")?, fi.bits, &what)?,
                    c.bytes(need(c, v, want, xs[1], "mask")?, fi.bits, &what)?,
                )
            }
            Kind::Range => {
                let xs = get(&["low", "high"])?;
                FieldMatch::Range(
                    c.bytes(need(c, v, want, xs[0], "low")?, fi.bits, &what)?,
                    c.bytes(need(c, v, want, xs[1], "high")?, fi.bits, &what)?,
                )
            }
        };
        e.matches.push((fid, fm));
    }
    if let Some(EntryAction::Action(a)) = &e.action {
        match (table.scope(a.id), e.is_default) {
            (None, _) => {
                return Err(c.err(
                    f.at,
                    format!("action {} is not an action of table `{}`", a.id, table.name),
                ))
            }
            (Some(Scope::DefaultOnly), false) => {
                return Err(c.err(
                    f.at,
                    format!(
                        "action {} is DEFAULT_ONLY in table `{}`: not for an entry",
                        a.id, table.name
                    ),
                ))
            }
            (Some(Scope::TableOnly), true) => {
                return Err(c.err(
                    f.at,
                    format!(
                        "action {} is TABLE_ONLY in table `{}`: not the default",
                        a.id, table.name
                    ),
                ))
            }
            _ => {}
        }
    }
    Ok(e)
}

#[cfg(test)]
mod tests;
