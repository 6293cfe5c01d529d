//! OVS's programs as the lab runs them: found on PATH, run with a deadline,
//! daemons started detached with pidfiles, checked for liveness, stopped by pid.
//!
//! Expects Debian's `openvswitch-switch` (or any OVS ≥ 2.17 on PATH) and a
//! host directory per simulated host. Guarantees: every subprocess is bounded
//! by a deadline and killed past it; a daemon is "running" only if its
//! pidfile names a live process whose command line mentions the host's own
//! directory (a recycled pid is never mistaken for ours); nothing outside the
//! host directory is touched (OVS_RUNDIR/DBDIR/LOGDIR/SYSCONFDIR point there).

use super::LabError;
use netc_targets::process::{run_within, RunError};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The programs the lab runs.
pub const BINARIES: [&str; 6] = [
    "ovsdb-tool",
    "ovsdb-server",
    "ovs-vswitchd",
    "ovs-vsctl",
    "ovs-ofctl",
    "ovs-appctl",
];
/// The OVSDB schema Debian installs with openvswitch-common.
pub const SCHEMA: &str = "/usr/share/openvswitch/vswitch.ovsschema";
/// Deadline for one OVS tool run (vsctl waits for vswitchd; trace is quick).
pub const TOOL_DEADLINE: Duration = Duration::from_secs(30);

/// Where each program is; `Missing` names every one that is not on PATH.
#[derive(Clone, Debug)]
pub struct Binaries {
    paths: Vec<(String, PathBuf)>,
}

impl Binaries {
    pub fn find() -> Result<Binaries, LabError> {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let dirs: Vec<PathBuf> = std::env::split_paths(&path).collect();
        let mut paths = Vec::new();
        let mut missing = Vec::new();
        for b in BINARIES {
            match dirs.iter().map(|d| d.join(b)).find(|p| p.is_file()) {
                Some(p) => paths.push((b.to_string(), p)),
                None => missing.push(b.to_string()),
            }
        }
        if !Path::new(SCHEMA).is_file() {
            missing.push(SCHEMA.to_string());
        }
        if missing.is_empty() {
            Ok(Binaries { paths })
        } else {
            Err(LabError::Missing { missing })
        }
    }

    pub fn get<'a>(&'a self, name: &'a str) -> &'a Path {
        self.paths
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, p)| p.as_path())
            .unwrap_or(Path::new(name))
    }
}

/// What a finished tool run printed.
pub struct Ran {
    pub ok: bool,
    pub stdout: String,
    pub stderr: String,
}

/// One simulated host's directory and the environment that keeps OVS in it.
#[derive(Clone, Debug)]
pub struct HostDir {
    pub host: String,
    pub dir: PathBuf,
}

impl HostDir {
    pub fn db_socket(&self) -> String {
        format!("unix:{}/db.sock", self.dir.display())
    }

    pub fn vswitchd_ctl(&self) -> PathBuf {
        self.dir.join("vswitchd.ctl")
    }

    pub fn mgmt(&self, bridge: &str) -> PathBuf {
        self.dir.join(format!("{bridge}.mgmt"))
    }

    fn pidfile(&self, daemon: &str) -> PathBuf {
        self.dir.join(format!("{daemon}.pid"))
    }

    fn command(&self, program: &Path) -> Command {
        let mut c = Command::new(program);
        for var in ["OVS_RUNDIR", "OVS_DBDIR", "OVS_LOGDIR", "OVS_SYSCONFDIR"] {
            c.env(var, &self.dir);
        }
        c.stdin(Stdio::null());
        c
    }

    /// Runs a tool to completion within `deadline`, capturing its output.
    pub fn run(&self, program: &Path, args: &[&str], deadline: Duration) -> Result<Ran, LabError> {
        let what = describe(program, args);
        match run_within(self.command(program).args(args), deadline) {
            Ok(f) => Ok(Ran {
                ok: f.status.success(),
                stdout: f.stdout,
                stderr: f.stderr,
            }),
            Err(RunError::Spawn(source) | RunError::Wait(source)) => {
                Err(LabError::Spawn { what, source })
            }
            Err(RunError::Timeout(_)) => Err(LabError::Timeout {
                host: self.host.clone(),
                what,
                secs: deadline.as_secs(),
            }),
        }
    }

    /// Runs a tool and fails with its stderr when it fails.
    pub fn check(&self, program: &Path, args: &[&str]) -> Result<String, LabError> {
        let r = self.run(program, args, TOOL_DEADLINE)?;
        if r.ok {
            Ok(r.stdout)
        } else {
            Err(LabError::Tool {
                host: self.host.clone(),
                what: describe(program, args),
                detail: r.stderr.trim().to_string(),
            })
        }
    }

    /// The pid of `daemon` if it is running as this host's daemon.
    pub fn live_pid(&self, daemon: &str) -> Option<u32> {
        let pid: u32 = std::fs::read_to_string(self.pidfile(daemon))
            .ok()?
            .trim()
            .parse()
            .ok()?;
        is_ours(pid, &self.dir).then_some(pid)
    }

    /// Starts `daemon` detached (it outlives netc) unless it already runs;
    /// returns its pid and whether it was started now.
    pub fn start(
        &self,
        bins: &Binaries,
        daemon: &str,
        args: &[String],
    ) -> Result<(u32, bool), LabError> {
        if let Some(pid) = self.live_pid(daemon) {
            return Ok((pid, false));
        }
        let log = self.dir.join(format!("{daemon}.log"));
        let mut full: Vec<String> = args.to_vec();
        full.extend([
            "--detach".into(),
            "--no-chdir".into(),
            format!("--pidfile={}", self.pidfile(daemon).display()),
            format!("--log-file={}", log.display()),
            format!("--unixctl={}/{}.ctl", self.dir.display(), ctl_name(daemon)),
        ]);
        let argv: Vec<&str> = full.iter().map(String::as_str).collect();
        // --detach returns once the daemon is ready (sockets open)
        let r = self.run(bins.get(daemon), &argv, TOOL_DEADLINE)?;
        match self.live_pid(daemon) {
            Some(pid) if r.ok => Ok((pid, true)),
            _ => Err(LabError::DaemonFailed {
                host: self.host.clone(),
                daemon: daemon.into(),
                detail: format!("{}{}", r.stderr.trim(), log_tail(&log)),
            }),
        }
    }

    /// Stops `daemon` by pid: SIGTERM, then SIGKILL past a deadline. Returns
    /// the pid it stopped, if any was running.
    pub fn stop(&self, daemon: &str) -> Result<Option<u32>, LabError> {
        let Some(pid) = self.live_pid(daemon) else {
            let _ = std::fs::remove_file(self.pidfile(daemon));
            return Ok(None);
        };
        for (signal, wait) in [("-TERM", 10), ("-KILL", 5)] {
            let _ = self.run(
                Path::new("kill"),
                &[signal, &pid.to_string()],
                TOOL_DEADLINE,
            );
            let until = Instant::now() + Duration::from_secs(wait);
            while Instant::now() < until {
                // not the cmdline test: an exiting process loses its cmdline
                // before it is gone
                if has_exited(pid) {
                    let _ = std::fs::remove_file(self.pidfile(daemon));
                    return Ok(Some(pid));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        Err(LabError::DaemonFailed {
            host: self.host.clone(),
            daemon: daemon.into(),
            detail: format!("pid {pid} survived SIGTERM and SIGKILL"),
        })
    }

    /// Waits until `path` exists (a socket a daemon creates), within `deadline`.
    pub fn wait_for(&self, path: &Path, deadline: Duration) -> Result<(), LabError> {
        let until = Instant::now() + deadline;
        while !path.exists() {
            if Instant::now() > until {
                return Err(LabError::Timeout {
                    host: self.host.clone(),
                    what: format!("waiting for {}", path.display()),
                    secs: deadline.as_secs(),
                });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }
}

fn ctl_name(daemon: &str) -> &str {
    if daemon == "ovs-vswitchd" {
        "vswitchd"
    } else {
        "ovsdb"
    }
}

/// A process is ours if it is alive (not a zombie) and its command line
/// names our directory.
fn is_ours(pid: u32, dir: &Path) -> bool {
    let proc = PathBuf::from(format!("/proc/{pid}"));
    let Ok(cmdline) = std::fs::read(proc.join("cmdline")) else {
        return false;
    };
    let zombie = std::fs::read_to_string(proc.join("stat"))
        .ok()
        .and_then(|s| {
            s.rsplit(')')
                .next()
                .map(|r| r.trim_start().starts_with('Z'))
        })
        .unwrap_or(false);
    let needle = dir.to_string_lossy();
    !zombie && String::from_utf8_lossy(&cmdline).contains(needle.as_ref())
}

/// True when the process no longer runs: no /proc entry, or a zombie
/// (detached daemons are reaped by init, maybe later).
fn has_exited(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .and_then(|r| r.split_whitespace().next())
            .is_some_and(|state| state == "Z" || state == "X"),
        Err(_) => true,
    }
}

/// Waits for a child; `Err(None)` when the deadline passed (it was killed).
fn describe(program: &Path, args: &[&str]) -> String {
    let name = program
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let shown: Vec<&str> = args.iter().take(4).copied().collect();
    format!("{name} {}", shown.join(" "))
}

fn log_tail(log: &Path) -> String {
    match std::fs::read_to_string(log) {
        Ok(s) if !s.is_empty() => {
            let start = s.len().saturating_sub(1500);
            let start = (start..s.len())
                .find(|&i| s.is_char_boundary(i))
                .unwrap_or(0);
            format!("\n   log ({}):\n{}", log.display(), &s[start..])
        }
        _ => String::new(),
    }
}
