//! The embedded default: a local Open vSwitch lab, one simulated host per
//! `host` of the intent.
//!
//! `netc apply` without an inventory calls [`ensure`] and pushes each host's
//! flows to the switch argument it returns; `netc trace` reads what
//! [`ensure`] recorded (`<state>/lab/topology.json`) and the live bridges.
//!
//! Expects Open vSwitch on PATH (`ovsdb-server`, `ovs-vswitchd`, `ovs-vsctl`,
//! `ovs-ofctl`, `ovs-appctl`, `ovsdb-tool`); when any is missing,
//! [`LabError::Missing`] names them and the fix. Guarantees:
//! - per host, `<state>/lab/<host>/` holds its own ovsdb-server and
//!   `ovs-vswitchd --enable-dummy` (userspace datapath, no kernel module, no
//!   system OVS touched), started detached with pidfiles: they outlive the
//!   netc process that started them, until [`stop`];
//! - [`ensure`] is idempotent: running daemons (pidfile + live process) are
//!   reused, ports are added/removed to match the topology, hosts no longer in
//!   the topology are stopped by pid and their directory removed;
//! - every subprocess has a deadline; every failure is a typed [`LabError`].

pub mod topology;
pub mod daemons;
pub mod bridges;
pub mod trace;

pub use topology::{LabHost, LabPort, Topology};

use daemons::{Binaries, HostDir};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Why the lab could not be started, read or stopped.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    #[error("Open vSwitch is not installed: missing {} (looked on PATH)\n   = hint: install it with `apt-get install -y openvswitch-switch` (Debian/Ubuntu), then run the command again", missing.join(", "))]
    Missing { missing: Vec<String> },
    #[error("cannot run `{what}`: {source}")]
    Spawn {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("lab host `{host}`: `{what}` did not finish within {secs} s and was stopped")]
    Timeout {
        host: String,
        what: String,
        secs: u64,
    },
    #[error("lab host `{host}`: `{what}` failed: {detail}")]
    Tool {
        host: String,
        what: String,
        detail: String,
    },
    #[error("lab host `{host}`: {daemon} did not start or stop: {detail}")]
    DaemonFailed {
        host: String,
        daemon: String,
        detail: String,
    },
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("no lab is running under {}\n   = hint: `netc apply INTENT...` (without an inventory) starts it", dir.display())]
    NotRunning { dir: PathBuf },
    #[error("{}: not a lab topology: {detail}\n   = hint: `netc lab stop` and apply again", path.display())]
    BadTopology { path: PathBuf, detail: String },
}

/// A host's daemons as `netc lab status` shows them.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct HostStatus {
    pub host: String,
    pub dir: PathBuf,
    pub ovsdb_server: Option<u32>,
    pub ovs_vswitchd: Option<u32>,
    /// `ovs-ofctl`'s switch argument for br-int.
    pub bridge: String,
}

const DAEMONS: [&str; 2] = ["ovs-vswitchd", "ovsdb-server"];

/// `<state>/lab`, absolute (daemons run with `--no-chdir`, sockets need full paths).
pub fn lab_dir(state_dir: &Path) -> Result<PathBuf, LabError> {
    std::path::absolute(state_dir.join("lab")).map_err(|e| LabError::Io {
        path: state_dir.to_path_buf(),
        source: e,
    })
}

fn host_dir(lab: &Path, host: &str) -> HostDir {
    HostDir {
        host: host.into(),
        dir: lab.join(host),
    }
}

/// `ovs-ofctl`'s switch argument for a host's br-int, with an absolute
/// path: ovs-ofctl resolves a relative `unix:` path against its run
/// directory, not the caller's, so `unix:.netc/lab/...` names nothing.
pub fn switch_arg(lab: &Path, host: &str) -> String {
    let mgmt = host_dir(lab, host).mgmt(topology::BRIDGE);
    let mgmt = std::path::absolute(&mgmt).unwrap_or(mgmt);
    format!("unix:{}", mgmt.display())
}

/// Starts (or reuses) the lab for `topo`; returns host → switch argument.
pub fn ensure(state_dir: &Path, topo: &Topology) -> Result<BTreeMap<String, String>, LabError> {
    ensure_reporting(state_dir, topo, |_| {})
}

/// [`ensure`], calling `ready(host)` as each host's daemons and bridges are
/// up (for a progress bar).
pub fn ensure_reporting(
    state_dir: &Path,
    topo: &Topology,
    mut ready: impl FnMut(&str),
) -> Result<BTreeMap<String, String>, LabError> {
    let bins = Binaries::find()?;
    let lab = lab_dir(state_dir)?;
    mkdir(&lab)?;
    for gone in host_dirs(&lab)?
        .into_iter()
        .filter(|h| topo.host(&h.host).is_none())
    {
        stop_host(&gone)?;
        std::fs::remove_dir_all(&gone.dir).map_err(|e| LabError::Io {
            path: gone.dir.clone(),
            source: e,
        })?;
    }
    let macs: Vec<(std::net::Ipv4Addr, String)> = topo
        .hosts
        .iter()
        .enumerate()
        .map(|(i, h)| (h.underlay_ip, bridges::host_mac(i + 1)))
        .collect();
    let ips: Vec<std::net::Ipv4Addr> = macs.iter().map(|(ip, _)| *ip).collect();
    let net = bridges::Underlay::covering(&ips);
    let mut switches = BTreeMap::new();
    for (i, host) in topo.hosts.iter().enumerate() {
        let hd = host_dir(&lab, &host.name);
        mkdir(&hd.dir)?;
        start_host(&bins, &hd)?;
        let peers: Vec<_> = macs
            .iter()
            .filter(|(ip, _)| *ip != host.underlay_ip)
            .cloned()
            .collect();
        bridges::reconcile(&bins, &hd, host, &macs[i].1, &net, &peers)?;
        switches.insert(host.name.clone(), switch_arg(&lab, &host.name));
        ready(&host.name);
    }
    write_topology(&lab, topo)?;
    Ok(switches)
}

fn start_host(bins: &Binaries, hd: &HostDir) -> Result<(), LabError> {
    let conf = hd.dir.join("conf.db");
    if !conf.exists() {
        let (c, s) = (conf.display().to_string(), daemons::SCHEMA.to_string());
        hd.check(bins.get("ovsdb-tool"), &["create", &c, &s])?;
    }
    let fresh_db = hd.live_pid("ovsdb-server").is_none();
    hd.start(
        bins,
        "ovsdb-server",
        &[
            conf.display().to_string(),
            format!("--remote=p{}", hd.db_socket()),
        ],
    )?;
    if fresh_db {
        let db = format!("--db={}", hd.db_socket());
        hd.check(bins.get("ovs-vsctl"), &[&db, "--no-wait", "init"])?;
    }
    hd.start(
        bins,
        "ovs-vswitchd",
        &[
            hd.db_socket(),
            "--enable-dummy".into(),
            "--disable-system".into(),
        ],
    )?;
    Ok(())
}

fn stop_host(hd: &HostDir) -> Result<Vec<u32>, LabError> {
    let mut stopped = Vec::new();
    for d in DAEMONS {
        stopped.extend(hd.stop(d)?);
    }
    Ok(stopped)
}

/// Stops every daemon of the lab by pid and removes `<state>/lab`.
pub fn stop(state_dir: &Path) -> Result<(), LabError> {
    stop_all(state_dir).map(|_| ())
}

/// [`stop`], returning the pids it stopped (for `netc lab stop`).
pub fn stop_all(state_dir: &Path) -> Result<Vec<u32>, LabError> {
    let lab = lab_dir(state_dir)?;
    if !lab.exists() {
        return Ok(Vec::new());
    }
    let mut stopped = Vec::new();
    for hd in host_dirs(&lab)? {
        stopped.extend(stop_host(&hd)?);
    }
    std::fs::remove_dir_all(&lab).map_err(|e| LabError::Io {
        path: lab.clone(),
        source: e,
    })?;
    Ok(stopped)
}

/// Every host directory of the lab with its daemons' pids (None = not running).
pub fn status(state_dir: &Path) -> Result<Vec<HostStatus>, LabError> {
    let lab = lab_dir(state_dir)?;
    Ok(host_dirs(&lab)?
        .into_iter()
        .map(|hd| HostStatus {
            bridge: switch_arg(&lab, &hd.host),
            ovsdb_server: hd.live_pid("ovsdb-server"),
            ovs_vswitchd: hd.live_pid("ovs-vswitchd"),
            host: hd.host,
            dir: hd.dir,
        })
        .collect())
}

/// The topology the last [`ensure`] recorded.
pub fn load_topology(state_dir: &Path) -> Result<Topology, LabError> {
    let lab = lab_dir(state_dir)?;
    let path = lab.join("topology.json");
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(LabError::NotRunning { dir: lab });
        }
        Err(e) => return Err(LabError::Io { path, source: e }),
    };
    serde_json::from_str(&text).map_err(|e| LabError::BadTopology {
        path,
        detail: e.to_string(),
    })
}

/// The host directory (for `ovs-appctl -t` and the pcaps) of a lab host.
pub fn host_handle(state_dir: &Path, host: &str) -> Result<HostDir, LabError> {
    Ok(host_dir(&lab_dir(state_dir)?, host))
}

fn write_topology(lab: &Path, topo: &Topology) -> Result<(), LabError> {
    let path = lab.join("topology.json");
    let tmp = lab.join("topology.json.tmp");
    let text = serde_json::to_string_pretty(topo).map_err(|e| LabError::BadTopology {
        path: path.clone(),
        detail: e.to_string(),
    })?;
    std::fs::write(&tmp, text + "\n")
        .and_then(|_| std::fs::rename(&tmp, &path))
        .map_err(|e| LabError::Io { path, source: e })
}

fn host_dirs(lab: &Path) -> Result<Vec<HostDir>, LabError> {
    let entries = match std::fs::read_dir(lab) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(LabError::Io {
                path: lab.to_path_buf(),
                source: e,
            })
        }
    };
    let mut out: Vec<HostDir> = entries
        .filter_map(Result::ok)
        .filter(|e| e.path().is_dir())
        .map(|e| host_dir(lab, &e.file_name().to_string_lossy()))
        .collect();
    out.sort_by(|a, b| a.host.cmp(&b.host));
    Ok(out)
}

fn mkdir(p: &Path) -> Result<(), LabError> {
    std::fs::create_dir_all(p).map_err(|e| LabError::Io {
        path: p.to_path_buf(),
        source: e,
    })
}
