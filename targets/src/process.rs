//! Running a device tool (`ovs-ofctl`, `ovs-vsctl`, the P4Runtime client)
//! with a deadline.
//!
//! Guarantees: both output pipes are drained on threads, so a tool that
//! prints a lot never blocks; a tool still running at the deadline is killed
//! and reaped. Callers turn [`RunError`] into their own typed errors, naming
//! the device.

use std::io::Read;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// A tool that ran to completion.
pub struct Finished {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

/// Why a tool did not run to completion.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("cannot start: {0}")]
    Spawn(std::io::Error),
    #[error("cannot wait for it: {0}")]
    Wait(std::io::Error),
    #[error("did not finish within {} s and was stopped", .0.as_secs())]
    Timeout(Duration),
}

/// Runs `cmd` (stdin closed, stdout and stderr captured) for at most `deadline`.
pub fn run_within(cmd: &mut Command, deadline: Duration) -> Result<Finished, RunError> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(RunError::Spawn)?;
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_string(&mut s);
            }
            s
        })
    };
    let t_out = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let t_err = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break st,
            Ok(None) if start.elapsed() > deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(RunError::Timeout(deadline));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(2)),
            Err(e) => return Err(RunError::Wait(e)),
        }
    };
    Ok(Finished {
        status,
        stdout: t_out.join().unwrap_or_default(),
        stderr: t_err.join().unwrap_or_default(),
    })
}
