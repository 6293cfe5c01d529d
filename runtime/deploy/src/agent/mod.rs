//! The host agent (`netc agent`): one per host; keeps the host's bridge equal
//! to its compiled flows and reports the health of its local DIPs.
//!
//! Expects: an artifact directory written by `netc compile` (`ovs/<host>.flows`,
//! `ovs/<host>.groups`, `host/<host>.json`, any of them possibly absent),
//! read again whenever a file changes, so a recompile into the same
//! directory reaches the agent. Every tick (the probe interval) it:
//! 1. reconciles the bridge when the artifacts changed, when the last push
//!    failed, or every `resync` period (a restarted ovs-vswitchd is
//!    repaired then) — [`netc_targets::ovs::client`]: dump, diff by cookie,
//!    one atomic bundle;
//! 2. probes every `probes` endpoint of the document ([`probe`]) and, when a
//!    status flips, rewrites the health file ([`health`]): `dip_health`
//!    facts that the next `netc compile` takes as an intent file, so a
//!    failed DIP leaves every pool and comes back when healthy.
//!
//! Guarantees: a failed push or an unreadable document is reported on
//! stderr (host, bridge, flow) and retried next tick; the daemon never
//! exits on a device error. With `once`, it does one reconcile and one
//! probe round and returns the first error instead.
//! Detection time of a dead DIP ≤ (`fall` + 1) × interval + timeout (the
//! first failed probe comes up to one interval after the death).

pub mod doc;
pub mod health;
pub mod probe;

use netc_targets::ovs::client::{OvsClient, OvsError, PushReport};
use netc_targets::ovs::text::{BridgeState, TextError};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

/// The config document's schema tag (same as the host target's).
pub const SCHEMA: &str = netc_targets::host::SCHEMA;

/// How the agent runs.
#[derive(Clone, Debug)]
pub struct AgentOptions {
    pub host: String,
    pub artifacts: PathBuf,
    /// `ovs-ofctl` switch argument; none = do not manage a bridge.
    pub bridge: Option<String>,
    pub ofctl: PathBuf,
    /// Where to write `dip_health` facts; none = do not probe.
    pub health_out: Option<PathBuf>,
    pub interval: Duration,
    pub settings: probe::ProbeSettings,
    pub resync: Duration,
    pub once: bool,
    /// Stop after this long (tests); none = run until killed.
    pub duration: Option<Duration>,
}

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error(transparent)]
    Ovs(#[from] OvsError),
    #[error("host `{host}`: the compiled flows are not readable: {source}")]
    Flows { host: String, source: TextError },
    #[error(transparent)]
    Doc(#[from] doc::DocError),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

fn mtime(p: &Path) -> Option<SystemTime> {
    std::fs::metadata(p).and_then(|m| m.modified()).ok()
}

fn read_or_empty(p: &Path) -> Result<String, AgentError> {
    match std::fs::read_to_string(p) {
        Ok(t) => Ok(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(source) => Err(AgentError::Io {
            path: p.into(),
            source,
        }),
    }
}

impl AgentOptions {
    fn flows_path(&self) -> PathBuf {
        self.artifacts
            .join("ovs")
            .join(format!("{}.flows", self.host))
    }
    fn groups_path(&self) -> PathBuf {
        self.artifacts
            .join("ovs")
            .join(format!("{}.groups", self.host))
    }
    fn doc_path(&self) -> PathBuf {
        self.artifacts
            .join("host")
            .join(format!("{}.json", self.host))
    }
    /// The modification times of everything the agent reads.
    fn stamp(&self) -> Vec<Option<SystemTime>> {
        vec![
            mtime(&self.flows_path()),
            mtime(&self.groups_path()),
            mtime(&self.doc_path()),
            mtime(&self.artifacts),
        ]
    }

    /// The intended bridge state from the artifact files.
    pub fn intended(&self) -> Result<BridgeState, AgentError> {
        let flows = read_or_empty(&self.flows_path())?;
        let groups = read_or_empty(&self.groups_path())?;
        let name = self.artifacts.join("ovs").join(&self.host);
        BridgeState::parse(&flows, &groups, &name.display().to_string()).map_err(|source| {
            AgentError::Flows {
                host: self.host.clone(),
                source,
            }
        })
    }

    fn client(&self, bridge: &str) -> OvsClient {
        let mut c = OvsClient::new(&self.host, bridge);
        c.ofctl = self.ofctl.clone();
        c.timeout = Duration::from_secs(600);
        c
    }
}

/// Reconciles the bridge once.
pub fn reconcile(opts: &AgentOptions, bridge: &str) -> Result<PushReport, AgentError> {
    let st = opts.intended()?;
    Ok(opts.client(bridge).reconcile(&st)?)
}

fn log(opts: &AgentOptions, msg: &str) {
    eprintln!("netc agent [{}]: {msg}", opts.host);
}

fn describe(r: &PushReport) -> String {
    format!(
        "bridge reconciled: +{} -{} flows, +{} ~{} -{} groups",
        r.flows_added, r.flows_deleted, r.groups_added, r.groups_modified, r.groups_deleted
    )
}

/// Runs the agent: one pass with `once`, otherwise until `duration` ends or
/// the process is stopped.
pub fn run(opts: &AgentOptions) -> Result<(), AgentError> {
    let start = Instant::now();
    let mut health = probe::Health::default();
    let mut seen_stamp = None;
    let mut last_sync: Option<Instant> = None;
    let mut push_ok = false;
    let mut first_report = true;
    loop {
        let tick = Instant::now();
        // 1. the bridge
        if let Some(bridge) = &opts.bridge {
            let stamp = opts.stamp();
            let due = seen_stamp.as_ref() != Some(&stamp)
                || !push_ok
                || last_sync.is_none_or(|t: Instant| t.elapsed() >= opts.resync);
            if due {
                match reconcile(opts, bridge) {
                    Ok(r) => {
                        if r.changed() || opts.once {
                            log(opts, &describe(&r));
                        }
                        push_ok = true;
                    }
                    Err(e) if opts.once => return Err(e),
                    Err(e) => {
                        log(opts, &format!("error: {e}"));
                        push_ok = false;
                    }
                }
                seen_stamp = Some(stamp);
                last_sync = Some(Instant::now());
            }
        }
        // 2. the probes
        if let Some(out) = &opts.health_out {
            let probes = match doc::load(&opts.doc_path()) {
                Ok(d) => d.probes,
                Err(e) if opts.once => return Err(e.into()),
                Err(e) => {
                    log(opts, &format!("error: {e}"));
                    Vec::new()
                }
            };
            let mut settings = opts.settings;
            if opts.once {
                settings.fall = 1;
            }
            let changed = health.round(&probes, settings);
            if changed || first_report {
                let text = health::facts(&opts.host, &health.statuses());
                if let Err(source) = health::write_atomically(out, &text) {
                    let e = AgentError::Io {
                        path: out.clone(),
                        source,
                    };
                    if opts.once {
                        return Err(e);
                    }
                    log(opts, &format!("error: {e}"));
                } else {
                    first_report = false;
                    let down: Vec<String> = health
                        .statuses()
                        .iter()
                        .filter(|(_, s)| *s == probe::Status::Down)
                        .map(|(p, _)| format!("{}/{}:{}", p.tenant, p.vm, p.target_port))
                        .collect();
                    log(
                        opts,
                        &format!("health written to {} (down: {down:?})", out.display()),
                    );
                }
            }
        }
        if opts.once || opts.duration.is_some_and(|d| start.elapsed() >= d) {
            return Ok(());
        }
        let spent = tick.elapsed();
        if spent < opts.interval {
            std::thread::sleep(opts.interval - spent);
        }
    }
}
