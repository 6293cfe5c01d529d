//! The apply lock: one `apply` (or `rollback`, or a daemon's apply) per
//! state directory, from before it plans until after it commits.
//!
//! Expects: a state directory (created here, 0700, when missing). Guarantees:
//! [`ApplyLock::take`] holds an exclusive `flock(2)` on `DIR/apply.lock` for
//! as long as the returned value lives, and writes the holder's pid and start
//! time into the file; a second taker gets [`StoreError::Busy`] naming them at
//! once (it never waits, never opens the database, never touches a device).
//! The kernel drops the lock when its process ends, however it ends, so a
//! `kill -9` leaves no stale lock (the journal row is what tells a later apply
//! that devices may hold a mix).
//!
//! Why a file lock and not only the journal row: the journal is written after
//! planning, so two applies could both plan and verify against the same base
//! and the later one push a plan made against a superseded generation; and on
//! an empty directory two applies would race to create the database.

use super::{restrict, time, utc_text, StoreError};
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

/// The lock file inside the state directory.
pub const LOCK_FILE: &str = "apply.lock";

/// A held apply lock (released when dropped).
#[derive(Debug)]
pub struct ApplyLock {
    _file: File,
}

impl ApplyLock {
    /// Takes the lock of `dir`, or says who holds it.
    pub fn take(dir: &Path) -> Result<ApplyLock, StoreError> {
        let path = dir.join(LOCK_FILE);
        // a read-only or full file system is said so (not "corrupted")
        let io = |e| super::error::classify_io(dir, &path, e);
        let made = !dir.exists();
        std::fs::create_dir_all(dir).map_err(io)?;
        if made {
            restrict(dir, 0o700);
        }
        let mut opts = OpenOptions::new();
        opts.read(true).write(true).create(true).truncate(false);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
        let mut file = opts.open(&path).map_err(io)?;
        // a holder whose process is gone is a child it spawned that has
        // not yet closed the inherited descriptor (between its fork and its
        // exec): the lock is free a moment later, so wait that moment
        let mut tries = 0;
        loop {
            match file.try_lock() {
                Ok(()) => break,
                Err(TryLockError::WouldBlock) => {
                    let e = busy(dir, &mut file);
                    let gone = matches!(&e, StoreError::Busy { pid, .. } if *pid != 0 && !super::process_alive(*pid));
                    tries += 1;
                    if !gone || tries > 40 {
                        return Err(e);
                    }
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
                Err(TryLockError::Error(e)) => return Err(io(e)),
            }
        }
        let holder = format!("{} {}\n", std::process::id(), time::now());
        file.set_len(0).map_err(io)?;
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        file.write_all(holder.as_bytes()).map_err(io)?;
        Ok(ApplyLock { _file: file })
    }
}

/// [`StoreError::Busy`] from the holder's line (`PID UNIX-SECONDS`). The
/// holder writes it right after locking: a taker that comes in between
/// reads again for a moment rather than name no one.
fn busy(dir: &Path, file: &mut File) -> StoreError {
    for _ in 0..50 {
        let mut text = String::new();
        let read = file
            .seek(SeekFrom::Start(0))
            .and_then(|_| file.read_to_string(&mut text));
        let mut words = text.split_whitespace();
        let pid = words.next().and_then(|w| w.parse::<u32>().ok());
        let started = words.next().and_then(|w| w.parse::<i64>().ok());
        if let (Ok(_), Some(pid), Some(started)) = (read, pid, started) {
            return StoreError::Busy {
                dir: dir.to_path_buf(),
                pid,
                started: utc_text(started),
            };
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    StoreError::Busy {
        dir: dir.to_path_buf(),
        pid: 0,
        started: "an unknown time".into(),
    }
}
