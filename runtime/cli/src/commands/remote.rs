//! `netc plan --server URL` and `netc apply --server URL`: the same
//! commands, answered by a running `netc serve` (specs/serve.md §1a).
//!
//! The intent files are read here and sent as texts (named as given on the
//! command line, so the daemon's diagnostics cite `file:line:col` exactly
//! as the local command would); the daemon commits only the difference of
//! facts into its warm dataflow, verifies, pushes to its devices and
//! records the generation. Its answer is printed by the local commands' own
//! printers (`plan::print_plan`, `apply::{print_done, print_refused,
//! print_failure}`), so the output (human or `--json`) and the exit codes
//! are the same as without `--server`.
//!
//! Before sending, `GET /v1/status` checks the daemon is reachable, takes
//! the token, and is this netc (`version`, `api`); every request also
//! carries `Netc-Version`/`Netc-Api`, which the daemon checks. Errors of
//! the conversation itself (refused connection, 401, another version, an
//! answer that is not netc's) are exit 2 with a hint.

use super::apply::{self, Done, FailedAt, PushedTo};
use super::plan::{self, PlanView};
use super::staged::{self, Paint};
use super::Outcome;
use crate::rollout::entries::DeviceChange;
use crate::serve::client::{self, Answer, ClientError, Server};
use crate::store::Verdict;
use serde_json::{json, Value as Json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// `--accept`/`--reason` as the daemon takes them (checked here first).
fn with_waivers(body: &mut Json, w: &staged::WaiverArgs) -> Result<(), Outcome> {
    if w.waivers()?.is_empty() {
        return Ok(());
    }
    body["accept"] = json!(w.accept);
    body["reason"] = json!(w.reason);
    Ok(())
}

/// Where the daemon is and how to find its token.
pub struct Remote<'a> {
    pub url: &'a str,
    pub token_file: Option<&'a Path>,
    /// `--state DIR`: where the daemon's `serve.token` is (default `.netc`).
    pub state: Option<&'a Path>,
}

fn client_error(e: ClientError) -> Outcome {
    let hint = e.hint();
    Outcome::InputError(e.to_string(), hint)
}

/// Token, URL, and a `/v1/status` that says the daemon is this netc.
fn connect(r: &Remote) -> Result<Server, Outcome> {
    let state = staged::state_dir(r.state);
    let token = client::token(r.token_file, &state).map_err(client_error)?;
    let server = Server::parse(r.url, token).map_err(client_error)?;
    let answer = server
        .call("GET", "/v1/status", None)
        .map_err(client_error)?;
    if answer.status != 200 {
        return Err(refusal(&server, &answer));
    }
    let version = answer.body.get("version").and_then(Json::as_str);
    let api = answer.body.get("api").and_then(Json::as_u64);
    if version != Some(client::VERSION) || api != Some(u64::from(client::API_VERSION)) {
        return Err(Outcome::InputError(
            format!(
                "version mismatch: this is netc {} (API {}), the daemon at {} is {}",
                client::VERSION,
                client::API_VERSION,
                server.url,
                match (version, api) {
                    (Some(v), Some(a)) => format!("netc {v} (API {a})"),
                    _ => "a netc without --server support (no `version` in /v1/status)".into(),
                }
            ),
            Some("use the same netc binary for `netc serve` and `--server`, or restart the daemon with this one".into()),
        ));
    }
    Ok(server)
}

/// The intent files as the request carries them.
fn files(intent: &[PathBuf]) -> Result<Json, Outcome> {
    let mut out = Vec::new();
    for p in intent {
        let text = std::fs::read_to_string(p).map_err(|e| {
            Outcome::InputError(
                format!("cannot read `{}`: {e}", p.display()),
                Some("INTENT... are intent files (.ndl)".into()),
            )
        })?;
        out.push(json!({"name": p.display().to_string(), "text": text}));
    }
    Ok(Json::Array(out))
}

/// A daemon's refusal that means the same for plan and apply: bad intent
/// and program errors (printed as the local command prints them, exit 1),
/// the token, the version, anything else (exit 2).
fn refusal(server: &Server, a: &Answer) -> Outcome {
    let message = a
        .error_field("message")
        .and_then(Json::as_str)
        .unwrap_or("(no message)")
        .to_string();
    let hint = a
        .error_field("hint")
        .and_then(Json::as_str)
        .map(str::to_string);
    let detail = a.error_field("detail");
    match a.code() {
        Some("program_errors") => {
            let text = detail
                .and_then(|d| d.get("diagnostics"))
                .and_then(Json::as_str)
                .unwrap_or("");
            if !text.is_empty() {
                eprintln!("{}", text.trim_end());
            }
            let count = |sev: &str| text.lines().filter(|l| l.starts_with(sev)).count();
            let (errors, warnings) = (count("error["), count("warning["));
            eprintln!(
                "\n{} error{}{} found",
                errors,
                if errors == 1 { "" } else { "s" },
                if warnings > 0 {
                    format!(", {warnings} warning{}", if warnings == 1 { "" } else { "s" })
                } else {
                    String::new()
                }
            );
            super::output::hold_message(&message);
            Outcome::ProgramErrors
        }
        Some("bad_intent") => {
            let findings: Vec<&str> = detail
                .and_then(|d| d.get("findings"))
                .and_then(Json::as_array)
                .map(|v| v.iter().filter_map(Json::as_str).collect())
                .unwrap_or_default();
            for f in &findings {
                eprint!("{f}");
            }
            eprintln!(
                "\n{} problem(s) in the intent; nothing was planned or pushed",
                findings.len()
            );
            super::output::hold_message(&message);
            Outcome::ProgramErrors
        }
        Some("unauthorized") => Outcome::InputError(
            format!("the daemon at {} refused the token: {message}", server.url),
            Some("the token is the daemon's STATE/serve.token (or its --token-file): pass --token-file FILE, set $NETC_TOKEN, or --state DIR".into()),
        ),
        Some("version_mismatch") => {
            Outcome::InputError(format!("version mismatch: {message}"), hint)
        }
        _ => Outcome::InputError(
            format!(
                "the daemon at {} answered {}: {message}",
                server.url, a.status
            ),
            hint,
        ),
    }
}

/// The strings of a JSON array (none when it is not one).
fn strings(x: Option<&Json>) -> Vec<String> {
    x.and_then(Json::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Json::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// The per-device changes of an answer (`devices`, entries included).
fn changes_of(v: Option<&Json>) -> BTreeMap<String, DeviceChange> {
    let mut out = BTreeMap::new();
    if let Some(m) = v.and_then(Json::as_object) {
        for (device, c) in m {
            let entries = c.get("entries");
            out.insert(
                device.clone(),
                DeviceChange {
                    kinds: strings(c.get("kinds")).into_iter().collect(),
                    added: strings(entries.and_then(|e| e.get("added"))),
                    removed: strings(entries.and_then(|e| e.get("removed"))),
                },
            );
        }
    }
    out
}

fn verdict_of(v: Option<&Json>) -> Verdict {
    match v.and_then(Json::as_str) {
        Some("proven") => Verdict::Proven,
        Some("violated") => Verdict::Violated,
        _ => Verdict::NotRun,
    }
}

fn text(v: Option<&Json>) -> Option<String> {
    v.and_then(Json::as_str).map(str::to_string)
}

/// The generation an answer's `base` names (0: none yet).
fn base_of(v: Option<&Json>) -> Option<i64> {
    v.and_then(Json::as_i64).filter(|b| *b > 0)
}

/// The stages a staged apply made, one line each (as `netc apply` prints them).
fn print_stages_done(staged: Option<&Json>) {
    let Some(stages) = staged
        .and_then(|s| s.get("stages"))
        .and_then(Json::as_array)
    else {
        return;
    };
    let n = stages.len();
    for st in stages {
        let k = st.get("stage").and_then(Json::as_u64).unwrap_or(0);
        let what = text(st.get("what")).unwrap_or_default();
        let gen = st["applied"].get("generation").and_then(Json::as_i64);
        match gen {
            Some(g) => println!("stage {k}/{n}: {what} (generation {g})"),
            None => println!("stage {k}/{n}: {what} (the store holds it already)"),
        }
    }
}

/// `netc plan --server URL INTENT...`.
pub fn plan(
    r: &Remote,
    intent: &[PathBuf],
    waivers: &staged::WaiverArgs,
    verbose: bool,
    json: bool,
) -> Outcome {
    let run = || -> Result<Outcome, Outcome> {
        let mut body = json!({"files": files(intent)?, "verify": true});
        with_waivers(&mut body, waivers)?;
        let server = connect(r)?;
        let a = server
            .call("POST", "/v1/plan", Some(&body))
            .map_err(client_error)?;
        if a.status != 200 {
            return Err(refusal(&server, &a));
        }
        let b = &a.body;
        let changes = changes_of(b.get("devices"));
        let view = PlanView {
            base: base_of(b.get("base")),
            changes: &changes,
            verdict: verdict_of(b.get("verdict")),
            verify_error: text(b.get("verify_error")),
            report: b.get("report").cloned().unwrap_or(Json::Null),
            report_text: text(b.get("report_text")),
            staged: b.get("staged").cloned().unwrap_or(Json::Null),
        };
        Ok(plan::print_plan(&view, verbose, json))
    };
    match run() {
        Ok(o) | Err(o) => o,
    }
}

/// `netc apply --server URL INTENT...`.
pub fn apply(
    r: &Remote,
    intent: &[PathBuf],
    waivers: &staged::WaiverArgs,
    force: bool,
    verbose: bool,
    json: bool,
) -> Outcome {
    let run = || -> Result<Outcome, Outcome> {
        let mut body = json!({
            "files": files(intent)?,
            "verify": true,
            "force": force,
            "actor": staged::actor(),
        });
        with_waivers(&mut body, waivers)?;
        let server = connect(r)?;
        let a = server
            .call("POST", "/v1/apply", Some(&body))
            .map_err(client_error)?;
        let detail = a.error_field("detail");
        match (a.status, a.code()) {
            (200, _) => {}
            (_, Some("violation")) => {
                let d = detail.cloned().unwrap_or(Json::Null);
                let verdict = verdict_of(d.get("verdict"));
                if !json && verdict == Verdict::Violated {
                    if let Some(t) = d.get("report_text").and_then(Json::as_str) {
                        print!("{t}");
                    }
                }
                let why = d
                    .get("refused")
                    .and_then(Json::as_str)
                    .unwrap_or("the verifier refused the change");
                let devices = staged::changes_json(&changes_of(d.get("devices")), verbose);
                let report = d.get("report").cloned().unwrap_or(Json::Null);
                return Err(apply::print_refused(why, devices, verdict, report, json));
            }
            (_, Some("device_failed")) => {
                let d = detail.cloned().unwrap_or(Json::Null);
                let s = |k: &str| text(d.get(k)).unwrap_or_default();
                let list = |k: &str| strings(d.get(k));
                let f = FailedAt {
                    device: s("device"),
                    kind: s("kind"),
                    address: s("address"),
                    reason: s("reason"),
                    restored: list("restored"),
                    not_restored: list("not_restored"),
                    cleared: d
                        .get("journal_cleared")
                        .and_then(Json::as_bool)
                        .unwrap_or(false),
                    read_back: text(d.get("read_back")),
                };
                return Err(apply::print_failure(&f, json));
            }
            _ => return Err(refusal(&server, &a)),
        }
        let b = &a.body;
        if !json {
            print_stages_done(b.get("staged"));
        }
        let verdict = verdict_of(b.get("verdict"));
        let forced = b.get("forced").and_then(Json::as_bool).unwrap_or(false);
        if forced {
            if !json && verdict == Verdict::Violated {
                if let Some(t) = b.get("report_text").and_then(Json::as_str) {
                    print!("{t}");
                }
            }
            let why = match text(b.get("verify_error")) {
                Some(e) => format!("the verifier cannot check these artifacts: {e}"),
                None => "the verifier found a violation".into(),
            };
            eprintln!("warning: {why}; applying anyway (--force, recorded)");
        }
        let interrupted = b.get("interrupted").and_then(|j| {
            Some((
                u32::try_from(j.get("pid")?.as_u64()?).ok()?,
                j.get("started")?.as_i64()?,
            ))
        });
        if let Some((pid, started)) = interrupted {
            eprintln!(
                "note: an earlier apply (pid {pid}, started {}) was interrupted; devices may hold a mix of generations — pushing every device's full state",
                crate::store::utc_text(started)
            );
        }
        let changes = changes_of(b.get("devices"));
        let committed = b.get("committed").and_then(Json::as_bool).unwrap_or(false);
        let done = Done {
            generation: b
                .get("generation")
                .and_then(Json::as_i64)
                .filter(|_| committed),
            base: base_of(b.get("base")),
            changes: &changes,
            pushed: b
                .get("pushed")
                .and_then(Json::as_array)
                .map(|a| {
                    a.iter()
                        .map(|p| PushedTo {
                            device: text(p.get("device")).unwrap_or_default(),
                            route: text(p.get("route")).unwrap_or_default(),
                            address: text(p.get("address")).unwrap_or_default(),
                            changes: p.get("changes").and_then(Json::as_u64).unwrap_or(0) as usize,
                        })
                        .collect()
                })
                .unwrap_or_default(),
            not_pushed: b
                .get("not_pushed")
                .and_then(Json::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Json::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default(),
            verdict: Some(verdict),
            forced,
            interrupted,
            report: b.get("report").cloned().unwrap_or(Json::Null),
        };
        apply::print_done(&done, verbose, json, &Paint::stdout());
        Ok(Outcome::Ok)
    };
    match run() {
        Ok(o) | Err(o) => o,
    }
}
