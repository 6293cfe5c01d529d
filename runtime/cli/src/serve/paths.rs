//! `{"paths": [...]}` of a request: files the daemon reads for its caller.
//!
//! Expects: the intent directory `netc serve --intent-dir DIR` was started
//! with (canonical), or none. Guarantees: a path is read only when it lies
//! under that directory after canonicalisation (symlinks resolved), so a
//! token holder cannot make the daemon read any other file; without the
//! directory every `paths` request is refused. A refusal names the rule and
//! never anything read from the file: the file is not opened.

use super::api::ApiError;
use super::warm::IntentText;
use std::path::{Path, PathBuf};

/// Why a requested path was not read.
#[derive(Debug, thiserror::Error)]
pub enum PathError {
    #[error("`paths` is refused: this daemon reads files only under its intent directory, and it was started without one")]
    NoDir,
    #[error("`{0}` is outside the intent directory `{1}`: this daemon reads files only under it")]
    Outside(String, PathBuf),
    #[error("cannot read `{path}` under the intent directory: {source}")]
    Unreadable {
        path: String,
        source: std::io::Error,
    },
}

impl From<PathError> for ApiError {
    fn from(e: PathError) -> ApiError {
        let hint = match &e {
            PathError::NoDir => "send the texts as {\"files\": [{\"name\", \"text\"}]}, or start the daemon with --intent-dir DIR and name files under DIR",
            PathError::Outside(..) => "name a file under the intent directory (relative to it, or by a path inside it), or send the text in `files`",
            PathError::Unreadable { .. } => "check the name: paths are relative to the daemon's --intent-dir",
        };
        let (status, code) = match e {
            PathError::Unreadable { .. } => (400, "unreadable"),
            _ => (403, "path_refused"),
        };
        ApiError::new(status, code, e.to_string()).hint(hint)
    }
}

/// Reads `given` (relative to `dir`, or absolute) if it lies under `dir`.
/// The file keeps the name the caller gave, which diagnostics cite.
pub fn read(dir: Option<&Path>, given: &str) -> Result<IntentText, PathError> {
    let dir = dir.ok_or(PathError::NoDir)?;
    let outside = || PathError::Outside(given.to_string(), dir.to_path_buf());
    let wanted = dir.join(given);
    // `..` is judged on the text before the disk is asked anything
    let lexical =
        netc_compiler::syntax::confine::normalise(&wanted.to_string_lossy()).ok_or_else(outside)?;
    if !Path::new(&lexical).starts_with(dir) {
        return Err(outside());
    }
    let canon = wanted
        .canonicalize()
        .map_err(|source| PathError::Unreadable {
            path: given.to_string(),
            source,
        })?;
    if !canon.starts_with(dir) {
        return Err(outside());
    }
    let text = std::fs::read_to_string(&canon).map_err(|source| PathError::Unreadable {
        path: given.to_string(),
        source,
    })?;
    Ok(IntentText {
        name: given.to_string(),
        text,
    })
}
