//! Source files and spans.
//!
//! Every piece of text netc reads (a program, an included file, a facts file,
//! an updates script) is registered in a [`SourceMap`] and addressed by a
//! [`FileId`]. A [`Span`] is a byte range in one file; diagnostics turn it into
//! `file:line:col` only when they are rendered, so spans stay cheap to copy.

use std::path::{Path, PathBuf};

/// Index of a file in a [`SourceMap`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileId(pub u32);

/// A byte range `[start, end)` in one file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Span {
    pub file: FileId,
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub fn new(file: FileId, start: usize, end: usize) -> Span {
        Span {
            file,
            start: start as u32,
            end: end as u32,
        }
    }

    /// The smallest span covering both `self` and `other` (same file assumed).
    pub fn to(self, other: Span) -> Span {
        Span {
            file: self.file,
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }
}

/// One registered file: its display name, path (if it came from disk) and text.
#[derive(Debug)]
pub struct SourceFile {
    pub name: String,
    pub path: Option<PathBuf>,
    pub text: String,
    line_starts: Vec<usize>,
}

impl SourceFile {
    /// 1-based line and column (in characters) of a byte offset.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let line = match self.line_starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i - 1,
        };
        let start = self.line_starts[line];
        let col = self.text[start..offset].chars().count();
        (line + 1, col + 1)
    }

    /// The text of a 1-based line, without its newline.
    pub fn line_text(&self, line: usize) -> &str {
        let start = self.line_starts[line - 1];
        let end = self
            .line_starts
            .get(line)
            .copied()
            .unwrap_or(self.text.len());
        self.text[start..end].trim_end_matches(['\n', '\r'])
    }
}

/// All files of one compilation.
#[derive(Debug, Default)]
pub struct SourceMap {
    files: Vec<SourceFile>,
}

impl SourceMap {
    pub fn new() -> SourceMap {
        SourceMap::default()
    }

    /// Registers text under a display name.
    pub fn add(&mut self, name: impl Into<String>, path: Option<PathBuf>, text: String) -> FileId {
        let mut line_starts = vec![0];
        line_starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        self.files.push(SourceFile {
            name: name.into(),
            path,
            text,
            line_starts,
        });
        FileId(self.files.len() as u32 - 1)
    }

    /// Reads a file from disk and registers it under its path as given.
    pub fn load(&mut self, path: &Path) -> std::io::Result<FileId> {
        let text = std::fs::read_to_string(path)?;
        Ok(self.add(path.display().to_string(), Some(path.to_path_buf()), text))
    }

    /// How many files are registered (their ids are `0..len`).
    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    pub fn file(&self, id: FileId) -> &SourceFile {
        &self.files[id.0 as usize]
    }

    /// Finds an already registered file by its canonical path.
    pub fn find_path(&self, path: &Path) -> Option<FileId> {
        let canon = path.canonicalize().ok()?;
        self.files
            .iter()
            .position(|f| {
                f.path
                    .as_ref()
                    .and_then(|p| p.canonicalize().ok())
                    .as_deref()
                    == Some(canon.as_path())
            })
            .map(|i| FileId(i as u32))
    }

    /// `file:line:col` of the start of a span.
    pub fn location(&self, span: Span) -> String {
        let f = self.file(span.file);
        let (l, c) = f.line_col(span.start as usize);
        format!("{}:{}:{}", f.name, l, c)
    }

    /// The source text a span covers.
    pub fn snippet(&self, span: Span) -> &str {
        let f = self.file(span.file);
        &f.text[span.start as usize..(span.end as usize).min(f.text.len())]
    }
}
