//! The intent texts a warm session holds, and where their `.include`s may
//! read from (`warm.rs` compiles them; `netc_compiler::syntax::confine`
//! resolves a confined include); its facts as text ([`FactText`]).

use super::warm::WarmError;
use std::path::{Path, PathBuf};

/// One intent file: the name it is cited by and its text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IntentText {
    pub name: String,
    pub text: String,
}

impl IntentText {
    /// Reads a file from disk (named by its path as given).
    pub fn read(path: &Path) -> Result<IntentText, WarmError> {
        let text = std::fs::read_to_string(path).map_err(|e| WarmError::Read {
            path: path.to_path_buf(),
            source: e,
        })?;
        Ok(IntentText {
            name: path.display().to_string(),
            text,
        })
    }
}

/// Where the `.include`s of the session's texts may read
/// (`netc_compiler::syntax::confine`).
#[derive(Clone, Debug, Default)]
pub enum Includes {
    /// From disk, relative to the current directory: `netc repl`, whose
    /// texts are its user's own files.
    #[default]
    Disk,
    /// Only the session's own texts and files under `dir`: `netc serve`,
    /// whose texts come from callers who must not make it read other files.
    Confined { dir: Option<PathBuf> },
}

/// An intent fact as text (`Warm::fact_texts`): what the verifier and a
/// stored generation read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FactText {
    /// Its values as artifact text (symbols without quotes).
    pub vals: Vec<String>,
    /// Where it was written (`file:line:col`), or `prompt`.
    pub at: String,
}
