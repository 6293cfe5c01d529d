//! `.include` for text a daemon received from a caller ([`Scope`]).
//!
//! On the command line `.include "f"` reads `f` from disk, relative to the
//! including file. A daemon compiling a caller's texts must not: the caller
//! could name any file the daemon may read and get its first line back in a
//! diagnostic. Inside a [`Scope`] an include names either another text of
//! the same compilation (by its name, relative to the including text's
//! name) or a file under the scope's directory (after canonicalisation, so
//! a symlink out of it is refused). Absolute paths and `..` that climbs out
//! of the names are refused without touching the disk, so a refusal never
//! carries anything of the file it named.

use crate::diagnostics::Diagnostic;
use crate::source::{FileId, SourceMap, Span};
use std::path::{Path, PathBuf};

/// The texts an include may name, and the one directory it may read from.
#[derive(Clone, Debug, Default)]
pub struct Scope {
    /// (normalised name, name as given, text) of every text of the compilation.
    texts: Vec<(String, String, String)>,
    /// Canonical directory includes may also read from; `None`: none.
    dir: Option<PathBuf>,
}

/// What an include resolved to.
pub(super) enum Target {
    /// Newly registered: parse it here.
    New(FileId),
    /// Registered before (by the caller or an earlier include).
    Again(FileId),
}

const HINT: &str = "an included file must be one of the request's `files` (named relative to the including file, e.g. `.include \"common.ndl\"`) or lie under the daemon's --intent-dir";

impl Scope {
    /// `texts`: (name, text) of every text compiled together; `dir`: the
    /// directory includes may read from (canonicalised here; one that does
    /// not exist permits nothing).
    pub fn new(texts: &[(String, String)], dir: Option<&Path>) -> Scope {
        Scope {
            texts: texts
                .iter()
                .filter_map(|(n, t)| normalise(n).map(|k| (k, n.clone(), t.clone())))
                .collect(),
            dir: dir.and_then(|d| d.canonicalize().ok()),
        }
    }

    /// Whether a text of this name was already registered (spliced in by an
    /// include): it is then not parsed a second time as a file of its own.
    pub(super) fn registered(&self, sources: &SourceMap, name: &str) -> bool {
        normalise(name).is_some_and(|k| find_name(sources, &k).is_some())
    }

    pub(super) fn resolve(
        &self,
        sources: &mut SourceMap,
        from: FileId,
        name: &str,
        span: Span,
    ) -> Result<Target, Diagnostic> {
        let refused = |why: String| {
            Diagnostic::error("E0005", span, format!("cannot include `{name}`: {why}"))
                .with_hint(HINT)
        };
        if Path::new(name).is_absolute() {
            return Err(refused(
                "an absolute path; this daemon does not read files named by its callers".into(),
            ));
        }
        let base = Path::new(&sources.file(from).name)
            .parent()
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        let joined = if base.is_empty() {
            name.to_string()
        } else {
            format!("{base}/{name}")
        };
        let Some(key) = normalise(&joined) else {
            return Err(refused(
                "`..` leads out of the request's files; this daemon does not read files named by its callers".into(),
            ));
        };
        if let Some(id) = find_name(sources, &key) {
            return Ok(Target::Again(id));
        }
        if let Some((_, given, text)) = self.texts.iter().find(|(k, _, _)| *k == key) {
            return Ok(Target::New(sources.add(given.clone(), None, text.clone())));
        }
        let missing = || {
            Diagnostic::error(
                "E0003",
                span,
                format!("cannot include `{name}`: no file of this request is named `{key}`"),
            )
            .with_hint(HINT)
        };
        let Some(dir) = &self.dir else {
            return Err(missing());
        };
        let wanted = if Path::new(&key).is_absolute() {
            PathBuf::from(&key)
        } else {
            dir.join(&key)
        };
        // lexically outside: refused before the disk is asked anything
        if !wanted.starts_with(dir) {
            return Err(refused("the path lies outside the intent directory".into()));
        }
        let Ok(canon) = wanted.canonicalize() else {
            return Err(missing());
        };
        if !canon.starts_with(dir) {
            return Err(refused(
                "the path resolves (through a symlink) outside the intent directory".into(),
            ));
        }
        if let Some(id) = sources.find_path(&canon) {
            return Ok(Target::Again(id));
        }
        match std::fs::read_to_string(&canon) {
            Ok(text) => Ok(Target::New(sources.add(key, Some(canon), text))),
            Err(e) => {
                Err(
                    Diagnostic::error("E0003", span, format!("cannot include `{name}`: {e}"))
                        .with_hint(HINT),
                )
            }
        }
    }
}

fn find_name(sources: &SourceMap, key: &str) -> Option<FileId> {
    (0..sources.len())
        .map(|i| FileId(i as u32))
        .find(|&id| normalise(&sources.file(id).name).as_deref() == Some(key))
}

/// `a/./b/../c` → `a/c`; `None` when `..` climbs above the first component
/// (or above `/`).
pub fn normalise(name: &str) -> Option<String> {
    let absolute = name.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for c in name.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            c => parts.push(c),
        }
    }
    let joined = parts.join("/");
    Some(if absolute {
        format!("/{joined}")
    } else {
        joined
    })
}

#[cfg(test)]
mod tests {
    use super::normalise;

    #[test]
    fn normalise_keeps_names_inside_and_refuses_escapes() {
        assert_eq!(normalise("a/./b/../c.ndl").as_deref(), Some("a/c.ndl"));
        assert_eq!(normalise("/x/y.ndl").as_deref(), Some("/x/y.ndl"));
        assert_eq!(normalise("../etc/passwd"), None);
        assert_eq!(normalise("a/../../b"), None);
        assert_eq!(normalise("/../etc"), None);
    }
}
