//! Why the store could not be opened, read or written, and what to do.
//!
//! Expects: the errors of [`super::Store`] and [`super::ApplyLock`].
//! Guarantees: a store that cannot be trusted (garbage, damaged, foreign,
//! incomplete) is told apart from one that cannot be written (read-only,
//! no permission) or has no room (disk full, file size limit), and from an
//! empty file: only the first kind is advised to be moved away, and none
//! is ever advised in a way that throws away history that is still there.

use super::{APPLICATION_ID, SCHEMA_VERSION};
use std::path::{Path, PathBuf};

/// Why the store could not be opened, read or written.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("state directory `{dir}`: {source}")]
    Io {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("`{path}` is not a netc state database ({detail}): it is corrupted or belongs to something else")]
    NotADatabase { path: PathBuf, detail: String },
    #[error("`{path}` is a SQLite database of another program (application_id {found:#x}, netc's is {APPLICATION_ID:#x})")]
    Foreign { path: PathBuf, found: i32 },
    #[error("`{path}` has schema version {found}; this netc reads version {SCHEMA_VERSION}")]
    NewerSchema { path: PathBuf, found: i32 },
    #[error("no netc state in `{dir}`")]
    NoState { dir: PathBuf },
    #[error("generation {id} is not in the store")]
    NoGeneration { id: i64 },
    #[error("another apply is running on `{dir}` (pid {pid} since {started})")]
    Busy {
        dir: PathBuf,
        pid: u32,
        started: String,
    },
    #[error("generation {generation}: the stored {what} `{file}` does not match the SHA-256 recorded when it was committed (edited in the database?)")]
    Tampered {
        generation: i64,
        what: &'static str,
        file: String,
    },
    #[error("`{path}` cannot be written ({detail})")]
    ReadOnly { path: PathBuf, detail: String },
    #[error("`{path}`: no room to write, or the system refused the write ({detail})")]
    Full { path: PathBuf, detail: String },
    #[error("`{path}` is empty (0 bytes): whatever history it held is gone")]
    Empty { path: PathBuf },
    #[error("`{path}` is a netc state database, but its table(s) {missing} are missing")]
    Incomplete { path: PathBuf, missing: String },
    #[error("the state directory `{dir}` cannot hold the new generation (about {needed} bytes with room to spare): {source}")]
    NoRoom {
        dir: PathBuf,
        needed: u64,
        source: std::io::Error,
    },
    #[error("state database `{path}`: {source}")]
    Sqlite {
        path: PathBuf,
        source: rusqlite::Error,
    },
}

impl StoreError {
    pub fn hint(&self) -> Option<String> {
        match self {
            StoreError::NotADatabase { path, .. }
            | StoreError::Foreign { path, .. } => Some(format!(
                "netc never reuses a state file it cannot trust; move `{}` away (or pass another --state DIR) and apply again: the next apply re-pushes every device",
                path.display()
            )),
            StoreError::NewerSchema { .. } => {
                Some("this state was written by a newer netc; use that version (or another --state DIR)".into())
            }
            StoreError::NoState { .. } => Some(
                "run `netc apply INTENT...` first, or pass the --state DIR that apply used".into(),
            ),
            StoreError::NoGeneration { .. } => Some("`netc history` lists the generations".into()),
            StoreError::Busy { .. } => Some(
                "nothing was planned or pushed by this run (exit 2); wait for that apply to finish, then run again".into(),
            ),
            StoreError::Tampered { generation, .. } => Some(format!(
                "netc does not serve, verify or push content it cannot vouch for: apply the intent again (a new generation) or use another generation than {generation} (`netc history` lists them)"
            )),
            StoreError::ReadOnly { .. } => Some(
                "the store is intact; netc writes it to apply, roll back or serve: make it writable (or pass another --state DIR); status, history and diff still read it".into(),
            ),
            StoreError::Full { .. } => Some(
                "this is not damage in the store: do not move it away; free space on that file system (or raise the file size limit, `ulimit -f`), check the device, and run again".into(),
            ),
            StoreError::NoRoom { .. } => Some(
                "nothing was pushed: free space on that file system (or raise the file size limit) and apply again".into(),
            ),
            StoreError::Empty { path } => Some(format!(
                "netc does not start a new history over a store that lost its own: restore `{}` from a backup; to start a new history on purpose, remove it (the next apply re-pushes every device)",
                path.display()
            )),
            StoreError::Incomplete { path, .. } => Some(format!(
                "the file was left as it is: restore `{}` from a backup (or pass another --state DIR)",
                path.display()
            )),
            StoreError::Io { .. } | StoreError::Sqlite { .. } => None,
        }
    }
}

/// `e` (from SQLite, on `path`) as the store error it is: a file that cannot
/// be written or a full disk is said so; anything else is `other(e)`.
pub(super) fn classify(
    path: &Path,
    e: rusqlite::Error,
    other: impl FnOnce(rusqlite::Error) -> StoreError,
) -> StoreError {
    use rusqlite::ErrorCode as C;
    match e.sqlite_error_code() {
        Some(C::ReadOnly | C::CannotOpen | C::PermissionDenied) => StoreError::ReadOnly {
            path: path.to_path_buf(),
            detail: e.to_string(),
        },
        // SQLITE_IOERR: a write or a read the system refused (a file size
        // limit on the shared-memory file, a failing device) — not damage
        // in the file, which SQLite reports as SQLITE_CORRUPT / NOTADB
        Some(C::DiskFull | C::SystemIoFailure) => StoreError::Full {
            path: path.to_path_buf(),
            detail: e.to_string(),
        },
        _ => other(e),
    }
}

/// An I/O error on `path` (in the state directory) as the store error it is.
pub(super) fn classify_io(dir: &Path, path: &Path, e: std::io::Error) -> StoreError {
    use std::io::ErrorKind as K;
    match e.kind() {
        K::ReadOnlyFilesystem | K::PermissionDenied => StoreError::ReadOnly {
            path: path.to_path_buf(),
            detail: e.to_string(),
        },
        K::StorageFull | K::FileTooLarge | K::QuotaExceeded => StoreError::Full {
            path: path.to_path_buf(),
            detail: e.to_string(),
        },
        _ => StoreError::Io {
            dir: dir.to_path_buf(),
            source: e,
        },
    }
}
