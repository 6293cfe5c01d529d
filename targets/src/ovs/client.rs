//! The OVS device client: read a bridge, push one atomic bundle, reconcile.
//!
//! Expects: `ovs-ofctl` (OVS ≥ 2.8; tested with 3.1) on PATH or given, and a
//! bridge that speaks OpenFlow 1.5 (`protocols` includes `OpenFlow15`),
//! named by anything `ovs-ofctl` accepts: a bridge name (system OVS) or
//! `unix:<rundir>/<bridge>.mgmt`. Guarantees:
//! - [`OvsClient::reconcile`] dumps the bridge, diffs it by cookie and by
//!   what each flow does (a flow edited in place keeps its cookie) against
//!   the intended state ([`super::delta`]) and sends only the difference as
//!   ONE `ovs-ofctl bundle` transaction (OpenFlow 1.4+ atomic, ordered
//!   bundle): either every mod applies or none does, so a failed push leaves
//!   the bridge as it was and the next reconcile starts from there;
//! - every failure is an [`OvsError`] naming the host and the bridge, and
//!   for a rejected mod the exact flow or group line; every subprocess has
//!   a deadline and is killed when it passes it.

use super::delta::{BundleLine, Delta};
use super::dump::{canonical_parsed, parse_flows, parse_groups, DumpError, Observed};
use super::text::BridgeState;
use crate::process::{run_within, RunError};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

/// Why a bridge could not be read or changed.
#[derive(Debug, thiserror::Error)]
pub enum OvsError {
    #[error("host `{host}`: cannot reach bridge `{bridge}`: {detail}\n   = hint: is ovs-vswitchd running, and is the bridge (or its .mgmt socket) right? Nothing was changed.")]
    Unreachable {
        host: String,
        bridge: String,
        detail: String,
    },
    #[error("host `{host}`: bridge `{bridge}` rejected {what}\n   {line}\n   reason: {reason}\n   = the bundle was atomic: the bridge is unchanged; a later run reconciles")]
    Rejected {
        host: String,
        bridge: String,
        what: String,
        line: String,
        reason: String,
    },
    #[error("host `{host}`: push to bridge `{bridge}` failed: {detail}\n   = the bundle was atomic: the bridge holds its previous state (or, if ovs-vswitchd restarted, what it kept); a later run reconciles")]
    PushFailed {
        host: String,
        bridge: String,
        detail: String,
    },
    #[error("host `{host}`: `ovs-ofctl` could not be run: {0}\n   = hint: install Open vSwitch (Debian: openvswitch-switch) or pass the ovs-ofctl path", host = .1)]
    Spawn(std::io::Error, String),
    #[error("host `{host}`: bridge `{bridge}`: {source}")]
    Dump {
        host: String,
        bridge: String,
        source: DumpError,
    },
    #[error("host `{host}`: `ovs-ofctl {what}` on bridge `{bridge}` did not finish within {secs} s and was stopped")]
    Timeout {
        host: String,
        bridge: String,
        what: String,
        secs: u64,
    },
}

/// What one reconcile did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PushReport {
    pub flows_added: usize,
    pub flows_deleted: usize,
    pub groups_added: usize,
    pub groups_modified: usize,
    pub groups_deleted: usize,
    /// Flows (without markers) on the bridge before the push.
    pub flows_before: usize,
}

impl PushReport {
    pub fn changed(&self) -> bool {
        self.flows_added
            + self.flows_deleted
            + self.groups_added
            + self.groups_modified
            + self.groups_deleted
            > 0
    }
}

/// A connection recipe for one host's bridge.
#[derive(Clone, Debug)]
pub struct OvsClient {
    /// The host (for messages).
    pub host: String,
    /// `ovs-ofctl`'s switch argument.
    pub bridge: String,
    pub ofctl: PathBuf,
    /// Deadline for each `ovs-ofctl` run.
    pub timeout: Duration,
    /// Where bundle files are written (a temp dir by default).
    pub scratch: PathBuf,
}

/// `unix:PATH` with PATH made absolute against the caller's directory:
/// ovs-ofctl resolves a relative one against its own run directory, so
/// `unix:.netc/lab/h1/br-int.mgmt` would name nothing. Other forms (a
/// bridge name, `tcp:`, an absolute path) are kept as given.
fn absolute_unix(bridge: &str) -> String {
    match bridge.strip_prefix("unix:") {
        Some(path) if !path.starts_with('/') && !path.is_empty() => std::path::absolute(path)
            .map(|p| format!("unix:{}", p.display()))
            .unwrap_or_else(|_| bridge.to_string()),
        _ => bridge.to_string(),
    }
}

struct Ran {
    ok: bool,
    stdout: String,
    stderr: String,
}

impl OvsClient {
    pub fn new(host: &str, bridge: &str) -> OvsClient {
        OvsClient {
            host: host.into(),
            bridge: absolute_unix(bridge),
            ofctl: PathBuf::from("ovs-ofctl"),
            timeout: Duration::from_secs(300),
            scratch: std::env::temp_dir(),
        }
    }

    fn run(&self, what: &str, args: &[&str]) -> Result<Ran, OvsError> {
        let mut cmd = Command::new(&self.ofctl);
        cmd.args(["-O", "OpenFlow15"]).args(args);
        match run_within(&mut cmd, self.timeout) {
            Ok(f) => Ok(Ran {
                ok: f.status.success(),
                stdout: f.stdout,
                stderr: f.stderr,
            }),
            Err(RunError::Spawn(e) | RunError::Wait(e)) => {
                Err(OvsError::Spawn(e, self.host.clone()))
            }
            Err(RunError::Timeout(_)) => Err(OvsError::Timeout {
                host: self.host.clone(),
                bridge: self.bridge.clone(),
                what: what.into(),
                secs: self.timeout.as_secs(),
            }),
        }
    }

    fn unreachable(&self, stderr: &str) -> OvsError {
        OvsError::Unreachable {
            host: self.host.clone(),
            bridge: self.bridge.clone(),
            detail: stderr.trim().to_string(),
        }
    }

    /// Reads what the bridge holds.
    pub fn observe(&self) -> Result<Observed, OvsError> {
        let mut obs = Observed::default();
        let f = self.run("dump-flows", &["--no-stats", "dump-flows", &self.bridge])?;
        if !f.ok {
            return Err(self.unreachable(&f.stderr));
        }
        let dump_err = |source| OvsError::Dump {
            host: self.host.clone(),
            bridge: self.bridge.clone(),
            source,
        };
        parse_flows(&f.stdout, &mut obs).map_err(dump_err)?;
        let g = self.run("dump-groups", &["dump-groups", &self.bridge])?;
        if !g.ok {
            return Err(self.unreachable(&g.stderr));
        }
        parse_groups(&g.stdout, &mut obs).map_err(dump_err)?;
        Ok(obs)
    }

    /// The intended flows as OVS spells them, by cookie: `ovs-ofctl
    /// parse-flows` encodes each line as OpenFlow 1.5 and prints it back
    /// with the printer `dump-flows` uses ([`super::dump::canonical_parsed`]);
    /// empty when OVS cannot read one of them (the push then names it).
    pub fn canonical(&self, intended: &BridgeState) -> Result<BTreeMap<u64, String>, OvsError> {
        let flows = intended.sorted_flows();
        if flows.is_empty() {
            return Ok(BTreeMap::new());
        }
        let mut text = String::with_capacity(flows.len() * 160);
        for f in flows {
            text.push_str(&f.line());
            text.push('\n');
        }
        let file = self.scratch_file("flows");
        std::fs::write(&file, text).map_err(|e| OvsError::PushFailed {
            host: self.host.clone(),
            bridge: self.bridge.clone(),
            detail: format!("cannot write {}: {e}", file.display()),
        })?;
        let path = file.to_string_lossy().into_owned();
        let ran = self.run("parse-flows", &["parse-flows", &path]);
        let _ = std::fs::remove_file(&file);
        let ran = ran?;
        if !ran.ok {
            // a line OVS cannot read: the bundle will be refused naming that
            // line (`explain`), which says more than parse-flows would; until
            // then the flows are compared by cookie alone
            return Ok(BTreeMap::new());
        }
        Ok(ran.stdout.lines().filter_map(canonical_parsed).collect())
    }

    /// What the bridge holds, and the delta to `intended` (by cookie and by
    /// what each flow does: [`OvsClient::canonical`]).
    pub fn delta(&self, intended: &BridgeState) -> Result<(Delta, Observed), OvsError> {
        let seen = self.observe()?;
        let canonical = self.canonical(intended)?;
        let delta = Delta::between_canonical(intended, &seen, &canonical);
        Ok((delta, seen))
    }

    /// Makes the bridge hold exactly `intended`, in one atomic bundle.
    pub fn reconcile(&self, intended: &BridgeState) -> Result<PushReport, OvsError> {
        let (delta, seen) = self.delta(intended)?;
        let report = PushReport {
            flows_added: delta.add_flows.len(),
            flows_deleted: delta.del_flows.len(),
            groups_added: delta.add_groups.len(),
            groups_modified: delta.mod_groups.len(),
            groups_deleted: delta.del_groups.len(),
            flows_before: seen.flow_count(),
        };
        if delta.is_empty() {
            return Ok(report);
        }
        self.push(&delta.bundle_lines())?;
        Ok(report)
    }

    /// Sends `lines` as one atomic bundle.
    pub fn push(&self, lines: &[BundleLine]) -> Result<(), OvsError> {
        let file = self.scratch_file("bundle");
        let mut text = String::with_capacity(lines.len() * 160);
        for l in lines {
            text.push_str(&l.text);
            text.push('\n');
        }
        std::fs::write(&file, text).map_err(|e| OvsError::PushFailed {
            host: self.host.clone(),
            bridge: self.bridge.clone(),
            detail: format!("cannot write the bundle file {}: {e}", file.display()),
        })?;
        let path = file.to_string_lossy().into_owned();
        let ran = self.run("bundle", &["bundle", &self.bridge, &path]);
        let _ = std::fs::remove_file(&file);
        let ran = ran?;
        if ran.ok {
            return Ok(());
        }
        Err(self.explain(&ran.stderr, lines, &path))
    }

    fn scratch_file(&self, ext: &str) -> PathBuf {
        self.scratch.join(format!(
            "netc-{}-{}-{}.{ext}",
            sanitize(&self.host),
            std::process::id(),
            unique()
        ))
    }

    /// Turns `ovs-ofctl bundle`'s stderr into an error naming the line.
    fn explain(&self, stderr: &str, lines: &[BundleLine], path: &str) -> OvsError {
        let err = stderr.trim();
        // a line ovs-ofctl could not parse: "ovs-ofctl: FILE:N: reason"
        if let Some(rest) = err
            .find(&format!("{path}:"))
            .map(|i| &err[i + path.len() + 1..])
        {
            let (n, reason) = rest.split_once(':').unwrap_or((rest, ""));
            if let Some(l) = n
                .trim()
                .parse::<usize>()
                .ok()
                .and_then(|n| lines.get(n - 1))
            {
                return self.rejected(l, reason.trim());
            }
        }
        // a mod the switch refused: "Error OFPBAC_… for: OFPT_FLOW_MOD … cookie:0x…"
        if let Some(first) = err.lines().find(|l| l.starts_with("Error ")) {
            let reason = first
                .split(" for:")
                .next()
                .unwrap_or(first)
                .trim_start_matches("Error ");
            let cookie = first
                .split("cookie:")
                .nth(1)
                .and_then(|c| c.split_whitespace().next())
                .and_then(super::text::parse_u64);
            let group = first
                .split("group_id=")
                .nth(1)
                .and_then(|g| g.split([',', ' ']).next())
                .and_then(|g| g.parse::<u32>().ok());
            let hit = lines.iter().find(|l| {
                (cookie.is_some() && l.cookie == cookie) || (group.is_some() && l.group == group)
            });
            if let Some(l) = hit {
                return self.rejected(l, reason);
            }
            if !first.contains("OFPT_BUNDLE") {
                return OvsError::Rejected {
                    host: self.host.clone(),
                    bridge: self.bridge.clone(),
                    what: "a mod of the bundle".into(),
                    line: first.to_string(),
                    reason: reason.into(),
                };
            }
        }
        if err.contains("connecting to") || err.contains("version negotiation") {
            return self.unreachable(err);
        }
        OvsError::PushFailed {
            host: self.host.clone(),
            bridge: self.bridge.clone(),
            detail: err.to_string(),
        }
    }

    fn rejected(&self, l: &BundleLine, reason: &str) -> OvsError {
        let what = match (l.cookie, l.group) {
            (Some(c), _) => format!("flow (cookie {c:#x})"),
            (_, Some(g)) => format!("group {g}"),
            _ => "a line".into(),
        };
        OvsError::Rejected {
            host: self.host.clone(),
            bridge: self.bridge.clone(),
            what,
            line: l.text.clone(),
            reason: reason.to_string(),
        }
    }
}

fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}
