//! Pushing one device: make it hold exactly a given set of artifacts.
//!
//! Expects: the device's artifacts of one generation (possibly none: the
//! device is then emptied of netc's state). Guarantees, per route:
//! - OVS: [`OvsClient::reconcile`] — dump, diff by cookie and by what each
//!   flow does (match, priority, actions; groups by buckets), ONE atomic
//!   bundle; [`drift`] lists each entry that differs;
//! - P4: `python3 -m p4client apply --ensure-pipeline` (`targets/p4client`):
//!   sets netc.p4's forwarding pipeline (P4Info + the inventory's
//!   `device_config`) when the switch has none, refuses one running another
//!   P4Info (nothing written), then reconciles the switch by Read and writes
//!   all or nothing; [`drift`] runs the client's `diff --check-pipeline`
//!   (Read, no Write; a missing pipeline is one more difference);
//! - agent: each of the host's files (`ovs/<host>.flows`, `ovs/<host>.groups`,
//!   `host/<host>.json`) is written to a temporary name and renamed into the
//!   agent's directory (a reader never sees half a file); a file the
//!   generation lacks is removed;
//!
//! and every push is idempotent, so re-pushing a generation converges from
//! any mix. Failures are [`PushError`]s naming the device and the reason.

use super::inventory::{Defaults, Route, Target};
use crate::store::DeviceOutput;
use netc_targets::ovs::client::{OvsClient, OvsError};
use netc_targets::ovs::delta::DriftEntry;
use netc_targets::ovs::text::BridgeState;
use netc_targets::process::{run_within, Finished, RunError};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// Why a device could not be brought to its intended state.
#[derive(Debug, thiserror::Error)]
#[error("device `{device}` ({kind} at {address}): {reason}")]
pub struct PushError {
    pub device: String,
    pub kind: &'static str,
    pub address: String,
    pub reason: String,
    /// The device answered, but runs a program other than netc's (a P4
    /// switch with another P4Info); netc refuses to touch it.
    pub foreign_program: bool,
    /// What the device holds is not known: the client timed out or died
    /// after it may have sent the whole transaction (a device can commit a
    /// bundle whose client it no longer hears). Read it back before saying
    /// anything about it.
    pub state_unknown: bool,
}

/// What a push changed (a count of entries; 0: already in sync).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pushed {
    pub changes: usize,
}

fn text_of<'a>(outputs: &'a [&DeviceOutput], path: &str) -> Option<&'a str> {
    outputs
        .iter()
        .find(|o| o.path == path)
        .map(|o| o.text.as_str())
}

fn error(t: &Target, reason: impl Into<String>) -> PushError {
    PushError {
        device: t.device.clone(),
        kind: t.route.kind(),
        address: t.route.address(),
        reason: reason.into(),
        foreign_program: false,
        state_unknown: false,
    }
}

/// [`error`] for an OVS failure; a timeout or a failed bundle run leaves
/// the bridge's state unknown (a rejected mod or an unreachable bridge
/// does not: the bundle was refused whole, or never sent).
fn ovs_error(t: &Target, e: &OvsError) -> PushError {
    PushError {
        state_unknown: matches!(e, OvsError::Timeout { .. } | OvsError::PushFailed { .. }),
        ..error(t, ovs_reason(e))
    }
}

fn bridge_state(t: &Target, outputs: &[&DeviceOutput]) -> Result<BridgeState, PushError> {
    let flows = text_of(outputs, &format!("ovs/{}.flows", t.device)).unwrap_or("");
    let groups = text_of(outputs, &format!("ovs/{}.groups", t.device)).unwrap_or("");
    BridgeState::parse(flows, groups, &format!("ovs/{}", t.device))
        .map_err(|e| error(t, format!("stored flows are unreadable: {e}")))
}

fn ovs_client(t: &Target, bridge: &str, d: &Defaults) -> OvsClient {
    let mut c = OvsClient::new(&t.device, bridge);
    c.ofctl = d.ofctl.clone();
    c.timeout = Duration::from_secs(d.timeout_secs);
    c
}

/// Makes `t` hold exactly `outputs` (the artifacts of `t.device`).
pub fn push(t: &Target, outputs: &[&DeviceOutput], d: &Defaults) -> Result<Pushed, PushError> {
    match &t.route {
        Route::Ovs { bridge } => {
            let state = bridge_state(t, outputs)?;
            let r = ovs_client(t, bridge, d)
                .reconcile(&state)
                .map_err(|e| ovs_error(t, &e))?;
            Ok(Pushed {
                changes: r.flows_added
                    + r.flows_deleted
                    + r.groups_added
                    + r.groups_modified
                    + r.groups_deleted,
            })
        }
        Route::P4 { .. } => push_p4(t, outputs, d),
        Route::Agent { dir } => push_agent(t, outputs, dir),
    }
}

/// How a device differs from what it should hold.
#[derive(Clone, Debug, Default)]
pub struct Drift {
    /// Entries to change (0: in sync).
    pub count: usize,
    /// Each differing entry, where the route can name them (OVS: flows and
    /// groups by what they do; agent: files); empty for P4.
    pub entries: Vec<DriftEntry>,
}

/// How `t` differs from `outputs`, without changing it; `None` where the
/// route has no dry run.
pub fn drift(
    t: &Target,
    outputs: &[&DeviceOutput],
    d: &Defaults,
) -> Result<Option<Drift>, PushError> {
    match &t.route {
        Route::Ovs { bridge } => {
            let state = bridge_state(t, outputs)?;
            let (delta, seen) = ovs_client(t, bridge, d)
                .delta(&state)
                .map_err(|e| error(t, ovs_reason(&e)))?;
            Ok(Some(Drift {
                count: delta.len(),
                entries: delta.entries(&seen),
            }))
        }
        Route::P4 { .. } => {
            let stderr = run_p4client(t, outputs, d, "diff")?;
            Ok(Some(Drift {
                count: count_before(&stderr, "updates differ"),
                entries: Vec::new(),
            }))
        }
        Route::Agent { dir } => {
            let mut entries = Vec::new();
            for path in agent_paths(&t.device) {
                let want = text_of(outputs, &path);
                let have = std::fs::read_to_string(dir.join(&path)).ok();
                if want != have.as_deref() {
                    entries.push(DriftEntry {
                        what: "file",
                        table: None,
                        matches: path,
                        expected: want.map(|_| "the generation's file".into()),
                        found: have.map(|_| "another text".into()),
                    });
                }
            }
            Ok(Some(Drift {
                count: entries.len(),
                entries,
            }))
        }
    }
}

/// An OVS error in one line, keeping what OVS said: a rejected mod is
/// named with OVS's reason (a full table says so) and the line, clipped.
fn ovs_reason(e: &OvsError) -> String {
    match e {
        OvsError::Rejected {
            bridge,
            what,
            line,
            reason,
            ..
        } => format!(
            "bridge `{bridge}` rejected {what}: {reason} (`{}`); the bundle was atomic: the bridge is unchanged",
            clip(line, 160)
        ),
        other => other.to_string().lines().next().unwrap_or("").to_string(),
    }
}

/// At most `max` characters of `s`, with the length when cut.
fn clip(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}… ({} bytes)", &s[..i], s.len()),
        None => s.to_string(),
    }
}

fn agent_paths(device: &str) -> [String; 3] {
    [
        format!("ovs/{device}.flows"),
        format!("ovs/{device}.groups"),
        format!("host/{device}.json"),
    ]
}

fn push_agent(t: &Target, outputs: &[&DeviceOutput], dir: &Path) -> Result<Pushed, PushError> {
    let mut changes = 0;
    for path in agent_paths(&t.device) {
        let file = dir.join(&path);
        let want = text_of(outputs, &path);
        let have = std::fs::read_to_string(&file).ok();
        if want == have.as_deref() {
            continue;
        }
        changes += 1;
        let io = |e: std::io::Error| error(t, format!("{}: {e}", file.display()));
        match want {
            Some(text) => {
                let parent = file.parent().unwrap_or(dir);
                std::fs::create_dir_all(parent).map_err(io)?;
                let tmp = parent.join(format!(
                    ".{}.netc-{}",
                    file.file_name().unwrap_or_default().to_string_lossy(),
                    std::process::id()
                ));
                std::fs::write(&tmp, text).map_err(io)?;
                std::fs::rename(&tmp, &file).map_err(io)?;
            }
            None => std::fs::remove_file(&file).map_err(io)?,
        }
    }
    Ok(Pushed { changes })
}

fn push_p4(t: &Target, outputs: &[&DeviceOutput], d: &Defaults) -> Result<Pushed, PushError> {
    let stderr = run_p4client(t, outputs, d, "apply")?;
    Ok(Pushed {
        changes: count_before(&stderr, "updates applied"),
    })
}

/// The number the client printed before `what` (`N updates applied`).
fn count_before(stderr: &str, what: &str) -> usize {
    stderr
        .split(what)
        .next()
        .and_then(|s| s.split_whitespace().last())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Runs `python3 -m p4client <cmd>` (`apply` or `diff`) for `t` on its
/// stored `.txtpb`; Ok(stderr) on exit 0.
fn run_p4client(
    t: &Target,
    outputs: &[&DeviceOutput],
    d: &Defaults,
    cmd_name: &str,
) -> Result<String, PushError> {
    let Route::P4 {
        address,
        device_id,
        election_id,
        device_config,
    } = &t.route
    else {
        return Err(error(t, "internal: not a P4Runtime route"));
    };
    let path = format!("p4/{}.txtpb", t.device);
    let text = text_of(outputs, &path).unwrap_or("");
    let file = std::env::temp_dir().join(format!(
        "netc-p4-{}-{}-{cmd_name}.txtpb",
        sanitize(&t.device),
        std::process::id()
    ));
    std::fs::write(&file, text).map_err(|e| error(t, format!("{}: {e}", file.display())))?;
    let mut cmd = Command::new(&d.python);
    cmd.args(["-m", "p4client", cmd_name, "--address", address])
        .args(["--device-id", &device_id.to_string()])
        .args(["--election-id", &election_id.to_string()])
        .args(["--switch", &t.device, "--file"])
        .arg(&file)
        .env("PYTHONPATH", &d.p4client);
    if cmd_name == "apply" {
        // the pipeline first: entries written to a switch without netc.p4 mean nothing
        cmd.arg("--ensure-pipeline");
        if let Some(c) = device_config {
            cmd.arg("--device-config").arg(c);
        }
    } else {
        // drift as apply would find it: a missing pipeline counts, another
        // program's entries are not compared (an error naming it)
        cmd.arg("--check-pipeline");
    }
    let run = run_within(&mut cmd, Duration::from_secs(d.timeout_secs));
    let foreign_program =
        matches!(&run, Ok(f) if f.status.code() == Some(P4CLIENT_FOREIGN_PROGRAM));
    let state_unknown = matches!(&run, Err(RunError::Timeout(_) | RunError::Wait(_)));
    let result = match run {
        Ok(f) => client_outcome(f),
        Err(RunError::Spawn(e)) => Err(format!(
            "cannot run `{} -m p4client`: {e} (install Python 3 and targets/p4client's requirements)",
            d.python.display()
        )),
        Err(RunError::Wait(e)) => Err(e.to_string()),
        Err(RunError::Timeout(t)) => Err(format!(
            "the P4Runtime client did not finish within {} s and was stopped",
            t.as_secs()
        )),
    };
    let _ = std::fs::remove_file(&file);
    result.map_err(|e| PushError {
        foreign_program,
        state_unknown,
        ..error(t, e)
    })
}

/// `p4client`'s exit code for a switch running another program
/// (`EXIT_FOREIGN_PROGRAM` in targets/p4client/__main__.py).
const P4CLIENT_FOREIGN_PROGRAM: i32 = 3;

/// The p4 client's outcome: Ok(stderr) on exit 0, else its error lines.
fn client_outcome(f: Finished) -> Result<String, String> {
    let (status, stderr) = (f.status, f.stderr);
    if status.success() {
        Ok(stderr)
    } else {
        // the client's message can span lines (the refused update, then the undo)
        let message: Vec<&str> = stderr
            .lines()
            .map(|l| l.trim().trim_start_matches("error: "))
            .filter(|l| !l.is_empty())
            .collect();
        Err(format!(
            "the P4Runtime client failed (exit {}): {}",
            status.code().unwrap_or(-1),
            if message.is_empty() {
                "no message".to_string()
            } else {
                message.join(" / ")
            }
        ))
    }
}

fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}
