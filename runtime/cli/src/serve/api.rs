//! The endpoints of `netc serve` (specs/serve.md), over the shared daemon state.
//!
//! Expects: an authenticated request whose body is at most the size limit
//! (checked in `http.rs`). Guarantees: every answer is JSON; every failure
//! is an [`ApiError`] with an HTTP status, a stable `code`, a message and a
//! hint; a refused `apply` (bad intent, a violation without `force`, a
//! device that failed — the others put back —, a store that cannot be
//! written) leaves the session, the store and the delta stream exactly as
//! they were. `plan` and `apply` answer with the same per-device entry
//! counts and verdict as `netc plan`/`netc apply` (`rollout::entries`,
//! `rollout::verdict` against the last generation), so `--server` prints
//! what the local commands print.

use super::candidate::{candidate_from, verdict_of, waivers_of};
use super::deltas::{DeltaLog, Entry, Since};
use super::devices::{self, Devices};
use super::log::Log;
use super::pattern::{self, Pattern};
use super::warm::{text as value_text, Change, DeviceDelta, IntentText, Warm};
use crate::commands::staged::changes_json;
use crate::rollout::entries;
use crate::store::{DeviceOutput, Store};
use serde_json::{json, Value as Json};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::time::Duration;

/// What the daemon holds, behind one lock (changes are serialised).
pub struct Daemon {
    pub warm: Warm,
    pub store: Store,
    /// The generation the session holds (0: none applied yet).
    pub generation: i64,
    /// The outputs of `generation` (or of the starting intent), per device.
    pub outputs: Vec<DeviceOutput>,
}

/// Everything the request threads share.
pub struct Shared {
    pub daemon: Mutex<Daemon>,
    pub deltas: DeltaLog,
    pub token: String,
    /// `--intent-dir` (canonical): the only directory `paths` and
    /// `.include` may read from.
    pub intent_dir: Option<std::path::PathBuf>,
    /// When this daemon started (Unix seconds): the delta numbering's epoch.
    pub epoch: u64,
    /// Where applies are pushed.
    pub devices: Devices,
    pub log: Log,
}

/// A refused request.
#[derive(Debug)]
pub struct ApiError {
    pub status: u16,
    pub code: &'static str,
    pub message: String,
    pub hint: Option<String>,
    /// Extra fields (findings, the verifier's report).
    pub detail: Option<Json>,
}

impl ApiError {
    pub fn new(status: u16, code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code,
            message: message.into(),
            hint: None,
            detail: None,
        }
    }
    pub fn hint(mut self, h: impl Into<String>) -> ApiError {
        self.hint = Some(h.into());
        self
    }
    pub fn detail(mut self, d: Json) -> ApiError {
        self.detail = Some(d);
        self
    }
    pub fn json(&self) -> Json {
        let mut e = json!({"code": self.code, "message": self.message});
        if let Some(h) = &self.hint {
            e["hint"] = json!(h);
        }
        if let Some(d) = &self.detail {
            e["detail"] = d.clone();
        }
        json!({ "error": e })
    }
}

pub(super) fn internal(e: impl std::fmt::Display) -> ApiError {
    ApiError::new(500, "internal", e.to_string())
}

pub type Reply = Result<Json, ApiError>;

/// Routes one request (method, path without query, query string, body).
pub fn route(shared: &Shared, method: &str, path: &str, query: &str, body: &[u8]) -> Reply {
    match (method, path) {
        ("GET", "/v1/status") => status(shared),
        ("GET", "/v1/deltas") => deltas(shared, query),
        ("POST", "/v1/plan") => plan(shared, &parse_body(body)?),
        ("POST", "/v1/apply") => super::apply::apply(shared, &parse_body(body)?),
        ("POST", "/v1/verify") => verify(shared),
        ("POST", "/v1/query") => query_rows(shared, &parse_body(body)?),
        (_, "/v1/status" | "/v1/deltas" | "/v1/plan" | "/v1/apply" | "/v1/verify" | "/v1/query") => {
            Err(ApiError::new(405, "method_not_allowed", format!("{method} is not allowed on {path}"))
                .hint("GET /v1/status, GET /v1/deltas; POST /v1/plan, /v1/apply, /v1/verify, /v1/query"))
        }
        _ => Err(ApiError::new(404, "not_found", format!("no endpoint {path}"))
            .hint("GET /v1/status, GET /v1/deltas; POST /v1/plan, /v1/apply, /v1/verify, /v1/query (specs/serve.md)")),
    }
}

fn parse_body(body: &[u8]) -> Result<Json, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(json!({}));
    }
    serde_json::from_slice(body).map_err(|e| {
        ApiError::new(400, "bad_json", format!("the body is not JSON: {e}")).hint(
            "send a JSON object, e.g. {\"files\": [{\"name\": \"intent.ndl\", \"text\": \"...\"}]}",
        )
    })
}

fn lock(shared: &Shared) -> std::sync::MutexGuard<'_, Daemon> {
    // A panic while holding the lock is caught at the request edge; the
    // session stays usable (each change undoes itself on failure).
    shared.daemon.lock().unwrap_or_else(|p| p.into_inner())
}

/// The session, locked and at the store's latest generation: a generation
/// another process committed since (a CLI `netc apply` or `rollback`) is
/// taken in first, as a warm change whose deltas go to the stream, so a
/// plan or an apply is never made against a superseded base.
pub(super) fn current(shared: &Shared) -> Result<std::sync::MutexGuard<'_, Daemon>, ApiError> {
    let mut guard = lock(shared);
    let d = &mut *guard;
    let latest = d.store.last_applied().map_err(devices::store_error)?;
    let Some(g) = latest.filter(|g| g.id != d.generation) else {
        return Ok(guard);
    };
    let files = d
        .store
        .intent_files(g.id)
        .map_err(devices::store_error)?
        .into_iter()
        .map(IntentText::from)
        .collect();
    let outputs = d.store.device_outputs(g.id).map_err(devices::store_error)?;
    let changed = entries::changes(&stream_outputs(&d.outputs), &stream_outputs(&outputs));
    let (change, ()) = d
        .warm
        .change(files, |_, _| (true, ()))
        .map_err(warm_error)?;
    let from = d.generation;
    d.generation = g.id;
    d.outputs = outputs;
    shared.deltas.append(
        change
            .devices
            .iter()
            .map(|x| delta_json(x, g.id, &changed))
            .collect(),
    );
    shared.log.event(
        "caught_up",
        json!({"from": from, "generation": g.id, "devices_changed": change.devices.len()}),
    );
    Ok(guard)
}

/// The intent of a request: `files` (texts) or `paths` (read by the daemon,
/// only under its intent directory: `paths.rs`).
pub(super) fn intent_of(
    body: &Json,
    intent_dir: Option<&std::path::Path>,
) -> Result<Option<Vec<IntentText>>, ApiError> {
    let bad = |m: &str| {
        ApiError::new(400, "bad_request", m.to_string())
            .hint("{\"files\": [{\"name\": \"intent.ndl\", \"text\": \"...\"}]} or {\"paths\": [\"intent.ndl\"]} (under the daemon's --intent-dir)")
    };
    if let Some(files) = body.get("files") {
        let arr = files
            .as_array()
            .ok_or_else(|| bad("`files` must be a list"))?;
        let mut out = Vec::new();
        for f in arr {
            let name = f.get("name").and_then(Json::as_str);
            let text = f.get("text").and_then(Json::as_str);
            match (name, text) {
                (Some(n), Some(t)) => out.push(IntentText {
                    name: n.to_string(),
                    text: t.to_string(),
                }),
                _ => return Err(bad("each of `files` needs a `name` and a `text` (strings)")),
            }
        }
        super::budget::check(&out)?;
        return Ok(Some(out));
    }
    if let Some(paths) = body.get("paths") {
        let arr = paths
            .as_array()
            .ok_or_else(|| bad("`paths` must be a list"))?;
        let mut out = Vec::new();
        for p in arr {
            let p = p.as_str().ok_or_else(|| bad("`paths` must be strings"))?;
            out.push(super::paths::read(intent_dir, p)?);
        }
        super::budget::check(&out)?;
        return Ok(Some(out));
    }
    Ok(None)
}

pub(super) fn warm_error(e: super::warm::WarmError) -> ApiError {
    use super::warm::WarmError as W;
    match e {
        W::Diagnostics(d) => ApiError::new(422, "program_errors", "the intent has errors")
            .detail(json!({ "diagnostics": d }))
            .hint("`netc check --intent FILE` shows the same diagnostics"),
        W::Read { .. } => ApiError::new(400, "unreadable", e.to_string()),
        other => ApiError::new(422, "engine", other.to_string()),
    }
}

fn row_json(row: &[netc_compiler::value::Value]) -> Json {
    Json::Array(row.iter().map(|v| json!(value_text(v))).collect())
}

/// The artifacts whose entries ride on the delta stream: P4 switches' only.
/// The stream keeps its last 100,000 entries in memory, and a host's OVS
/// flows run to millions of lines at scale, while its consumers (the host
/// agent) read whole documents; a switch's consumer (the ONOS app) needs
/// the entries themselves.
const STREAM_ENTRIES: &str = "p4/";

/// `outputs` restricted to the artifacts whose entries the stream carries.
fn stream_outputs(outputs: &[DeviceOutput]) -> Vec<DeviceOutput> {
    outputs
        .iter()
        .filter(|o| o.path.starts_with(STREAM_ENTRIES))
        .cloned()
        .collect()
}

/// A device's delta as the stream and the replies carry it: the located
/// rows that changed and, from `changed` (`rollout::entries` between the
/// previous and the new generation's artifacts), the P4 entries added and
/// removed — each `path: entry`, as `netc plan -v` lists them — so a
/// consumer that programs the switch itself (the ONOS app) applies netc's
/// own rendering instead of re-rendering rows.
pub fn delta_json(
    d: &DeviceDelta,
    generation: i64,
    changed: &BTreeMap<String, entries::DeviceChange>,
) -> Json {
    let rows = |v: &[(String, netc_compiler::value::Row)]| -> Json {
        Json::Array(
            v.iter()
                .map(|(r, row)| json!({"relation": r, "row": row_json(row)}))
                .collect(),
        )
    };
    json!({
        "generation": generation,
        "device": d.device,
        "added": rows(&d.added),
        "removed": rows(&d.removed),
        "entries": changed.get(&d.device).map_or_else(
            || json!({"added": [], "removed": []}),
            |c| {
                let p4 = |v: &[String]| -> Vec<String> {
                    v.iter()
                        .filter(|e| e.starts_with(STREAM_ENTRIES))
                        .cloned()
                        .collect()
                };
                json!({"added": p4(&c.added), "removed": p4(&c.removed)})
            },
        ),
    })
}

pub(super) fn change_json(c: &Change) -> Json {
    json!({
        "devices": c.devices.iter().map(|d| json!({
            "device": d.device, "added": d.added.len(), "removed": d.removed.len()
        })).collect::<Vec<_>>(),
        "full_evaluation": c.full,
        "input_changes": c.input_changes,
    })
}

fn status(shared: &Shared) -> Reply {
    let d = current(shared)?;
    let c = d.warm.counters();
    let stats = d.warm.engine().stats();
    Ok(json!({
        "generation": d.generation,
        "files": d.warm.files().iter().map(|f| f.name.clone()).collect::<Vec<_>>(),
        "devices": d.outputs.iter().map(|o| o.device.as_str()).collect::<BTreeSet<_>>(),
        "findings": d.warm.findings().len(),
        "counters": {
            "full_evaluations": c.full_evaluations,
            "warm_changes": c.warm_changes,
            "last_input_changes": c.last_input_changes,
            "last_change_micros": c.last_change_micros,
            "placements": c.placements,
        },
        "engine": {"epochs": stats.epochs, "total_records": stats.total_records, "last_records": stats.last.records},
        "deltas": {"epoch": shared.epoch, "last": shared.deltas.last()},
        "state": d.store.dir().display().to_string(),
        "push": shared.devices.describe(),
        "version": super::client::VERSION,
        "api": super::client::API_VERSION,
        "pid": std::process::id(),
    }))
}

/// `GET /v1/deltas` without waiting (`server.rs` parks a poll that waits).
fn deltas(shared: &Shared, query: &str) -> Reply {
    let (since, _) = deltas_query(query)?;
    Ok(deltas_after(shared, since)?.unwrap_or_else(|| deltas_json(shared, Vec::new(), since)))
}

/// `since` and `wait` (seconds, at most 60) of a delta poll.
pub fn deltas_query(query: &str) -> Result<(u64, u64), ApiError> {
    let mut since = 0u64;
    let mut wait = 25u64;
    for kv in query.split('&').filter(|s| !s.is_empty()) {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        let n: u64 = v.parse().map_err(|_| {
            ApiError::new(
                400,
                "bad_request",
                format!("`{k}` must be a non-negative integer, not `{v}`"),
            )
            .hint("GET /v1/deltas?since=N&wait=SECONDS")
        })?;
        match k {
            "since" => since = n,
            "wait" => wait = n.min(60),
            _ => {
                return Err(
                    ApiError::new(400, "bad_request", format!("unknown parameter `{k}`"))
                        .hint("GET /v1/deltas?since=N&wait=SECONDS"),
                )
            }
        }
    }
    Ok((since, wait))
}

/// The answer to `since` now: `None` while no entry after it exists.
pub fn deltas_after(shared: &Shared, since: u64) -> Result<Option<Json>, ApiError> {
    match shared.deltas.since(since, Duration::ZERO) {
        Since::Entries(es) if es.is_empty() => Ok(None),
        Since::Entries(es) => Ok(Some(deltas_json(shared, es, since))),
        Since::TooOld { oldest } => Err(ApiError::new(
            410,
            "too_old",
            format!("deltas before {oldest} are no longer kept"),
        )
        .hint("resync: read the full state (netc status / the store), then poll since=the current `deltas.last` of /v1/status")),
        Since::Ahead { last } => Err(ApiError::new(
            409,
            "unknown_seq",
            format!("no delta {since} yet: the last is {last} (the daemon restarted?)"),
        )
        .hint("resync, then poll since=the current `deltas.last` of /v1/status")),
    }
}

/// A delta poll's answer.
pub fn deltas_json(shared: &Shared, es: Vec<Entry>, since: u64) -> Json {
    let next = es.last().map_or(since, |e| e.seq);
    json!({
        "epoch": shared.epoch,
        "deltas": es.into_iter().map(|e| e.json).collect::<Vec<_>>(),
        "next": next,
    })
}

pub(super) fn flag(body: &Json, key: &str, default: bool) -> Result<bool, ApiError> {
    match body.get(key) {
        None => Ok(default),
        Some(v) => v.as_bool().ok_or_else(|| {
            ApiError::new(400, "bad_request", format!("`{key}` must be true or false"))
        }),
    }
}

fn plan(shared: &Shared, body: &Json) -> Reply {
    let run_verifier = flag(body, "verify", true)?;
    let waivers = waivers_of(body)?;
    let mut guard = current(shared)?;
    let d = &mut *guard;
    let files =
        intent_of(body, shared.intent_dir.as_deref())?.unwrap_or_else(|| d.warm.files().to_vec());
    let (outputs, store, base) = (&d.outputs, &d.store, d.generation);
    let (change, cand) = d
        .warm
        .change(files, |w, ch| {
            if !ch.findings.is_empty() {
                return (false, Err(bad_intent(ch)));
            }
            let cand = candidate_from(w, ch, outputs, store, base, run_verifier, &waivers)
                .and_then(|c| {
                    let staged = c.staged_change(w, store, outputs, base, &waivers)?;
                    Ok((c, staged))
                });
            (false, cand)
        })
        .map_err(warm_error)?;
    let (mut cand, staged) = cand?;
    // devices that lost their state (a switch that was down, wiped by its
    // controller): their entries are listed against nothing, so a consumer
    // that programs them writes their whole state
    for (dev, ch) in entries::changes(&[], &wiped_outputs(body, &cand.gen.outputs)?) {
        cand.devices.insert(dev, ch);
    }
    // a change made in stages (`apply` stages it as `netc apply` does) has
    // the stages' verdict, as `netc plan` gives it
    let verdict = staged
        .as_ref()
        .map_or_else(|| verdict_of(&cand, run_verifier), |s| s.verdict());
    let changes = file_changes(&d.outputs, &cand.gen.outputs);
    Ok(json!({
        "base": d.generation,
        "change": change_json(&change),
        "changes": changes,
        "devices": changes_json(&cand.devices, true),
        "verdict": verdict.as_str(),
        "staged": staged.map(|s| s.json(true)),
        "report": cand.report,
        "report_text": cand.report_text,
        "verify_error": cand.verify_error,
    }))
}

/// `"wiped": ["agg1", ...]`: the candidate's outputs of those devices.
fn wiped_outputs(body: &Json, outputs: &[DeviceOutput]) -> Result<Vec<DeviceOutput>, ApiError> {
    let Some(list) = body.get("wiped") else {
        return Ok(Vec::new());
    };
    let bad = || {
        ApiError::new(400, "bad_request", "`wiped` must be a list of device names")
            .hint("e.g. {\"wiped\": [\"agg1\"]}: devices whose whole state the plan lists")
    };
    let names: BTreeSet<&str> = list
        .as_array()
        .ok_or_else(bad)?
        .iter()
        .map(|v| v.as_str().ok_or_else(bad))
        .collect::<Result<_, _>>()?;
    Ok(outputs
        .iter()
        .filter(|o| names.contains(o.device.as_str()))
        .cloned()
        .collect())
}

/// Per device, the artifact files a change rewrites (`changed`), adds or
/// deletes: what a consumer re-pushes.
pub(super) fn file_changes(old: &[DeviceOutput], new: &[DeviceOutput]) -> Json {
    let index = |v: &[DeviceOutput]| -> BTreeMap<(String, String), String> {
        v.iter()
            .map(|o| {
                (
                    (o.device.clone(), o.path.clone()),
                    crate::store::sha256_hex(o.text.as_bytes()),
                )
            })
            .collect()
    };
    let (a, b) = (index(old), index(new));
    let mut out: BTreeMap<String, Json> = BTreeMap::new();
    let mut put = |dev: &str, what: &str, path: &str| {
        let e = out
            .entry(dev.to_string())
            .or_insert_with(|| json!({"changed": [], "added": [], "removed": []}));
        if let Some(list) = e[what].as_array_mut() {
            list.push(json!(path));
        }
    };
    for ((dev, path), h) in &b {
        match a.get(&(dev.clone(), path.clone())) {
            Some(old) if old == h => {}
            Some(_) => put(dev, "changed", path),
            None => put(dev, "added", path),
        }
    }
    for (dev, path) in a.keys() {
        if !b.contains_key(&(dev.clone(), path.clone())) {
            put(dev, "removed", path);
        }
    }
    json!(out)
}

pub(super) fn bad_intent(change: &Change) -> ApiError {
    ApiError::new(
        422,
        "bad_intent",
        format!(
            "{} problem(s) in the intent; nothing was changed",
            change.findings.len()
        ),
    )
    .detail(json!({ "findings": change.findings }))
    .hint("`netc check --intent FILE` shows the same problems")
}

fn verify(shared: &Shared) -> Reply {
    let d = current(shared)?;
    let findings = d.warm.findings();
    if !findings.is_empty() {
        return Err(ApiError::new(
            422,
            "bad_intent",
            "the current intent has problems; nothing to verify",
        )
        .detail(json!({ "findings": findings })));
    }
    match super::record::verify(&d.warm, 3) {
        Ok(r) => Ok(json!({
            "generation": d.generation,
            "verdict": if r.violated() { "violated" } else { "proven" },
            "report": serde_json::from_str::<Json>(&r.json()).unwrap_or(Json::Null),
        })),
        Err(e) => Err(ApiError::new(422, "not_modelled", e)
            .hint("the verifier models the OVS/P4/Mux subset of specs/targets.md; see specs/invariants.md §5")),
    }
}

fn query_rows(shared: &Shared, body: &Json) -> Reply {
    let text = body.get("query").and_then(Json::as_str).ok_or_else(|| {
        ApiError::new(400, "bad_request", "`query` (a string) is required")
            .hint("{\"query\": \"vip_dip(V, D)\"}")
    })?;
    let limit = body.get("limit").and_then(Json::as_u64).unwrap_or(10_000) as usize;
    let d = lock(shared);
    let plan = d.warm.plan().clone();
    let pat: Pattern = pattern::parse(text, &plan).map_err(|e| {
        let mut err = ApiError::new(400, "bad_query", e.message.clone())
            .detail(json!({"offset": e.offset, "caret": e.render(text)}));
        err.hint = e.hint.clone();
        err
    })?;
    let rows = d.warm.query(&pat);
    let rel = &plan.relations[pat.rel];
    Ok(json!({
        "relation": rel.name,
        "columns": rel.columns.iter().map(|c| c.name.clone()).collect::<Vec<_>>(),
        "variables": pat.variables().into_iter().map(|(n, _)| n).collect::<Vec<_>>(),
        "count": rows.len(),
        "truncated": rows.len() > limit,
        "rows": rows.iter().take(limit).map(|r| row_json(r)).collect::<Vec<_>>(),
    }))
}
