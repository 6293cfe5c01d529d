//! Room for the commit, taken before any device is touched.
//!
//! Expects: the state directory and the size of the generation to commit.
//! Guarantees: [`Reserve::take`] allocates a file of that size, twice over
//! plus a margin (SQLite writes a transaction to the WAL, then copies it into
//! the database at a checkpoint), in the state directory's file system, or
//! fails with [`StoreError::NoRoom`] — a full disk or a file size limit
//! (`ulimit -f`) is found before the push, not at the commit after it.
//! [`Reserve::release`] (or dropping it) frees the space just before the
//! commit uses it. It narrows the window, it does not close it: another
//! process can fill the disk in between, and the commit then puts the
//! devices back (`commands::apply`).

use super::StoreError;
use std::fs::File;
use std::path::{Path, PathBuf};

/// The reservation file inside the state directory.
pub const RESERVE_FILE: &str = "commit.reserve";
/// Room beyond twice the generation: pages, indexes, the journal row.
const MARGIN: u64 = 256 * 1024;

/// Space held for a commit (freed when released or dropped).
#[derive(Debug)]
pub struct Reserve {
    path: PathBuf,
}

impl Reserve {
    /// Holds room for a generation of `size` bytes in `dir`.
    pub fn take(dir: &Path, size: u64) -> Result<Reserve, StoreError> {
        let needed = size.saturating_mul(2).saturating_add(MARGIN);
        let path = dir.join(RESERVE_FILE);
        let no_room = |source| StoreError::NoRoom {
            dir: dir.to_path_buf(),
            needed,
            source,
        };
        let file = File::create(&path).map_err(|e| super::error::classify_io(dir, &path, e))?;
        let reserve = Reserve { path };
        allocate(&file, needed).map_err(no_room)?;
        Ok(reserve)
    }

    /// Frees the space (the commit comes next).
    pub fn release(self) {}
}

impl Drop for Reserve {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Allocates `len` bytes of real blocks (not a sparse file, which would
/// prove nothing): `posix_fallocate`, which glibc emulates by writing where
/// the file system has no fallocate.
fn allocate(file: &File, len: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::io::AsRawFd;
        let len = libc::off_t::try_from(len)
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::FileTooLarge))?;
        // SAFETY: a valid open file descriptor and a non-negative length.
        let rc = unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, len) };
        if rc != 0 {
            return Err(std::io::Error::from_raw_os_error(rc));
        }
        Ok(())
    }
    #[cfg(not(unix))]
    {
        file.set_len(len)
    }
}
