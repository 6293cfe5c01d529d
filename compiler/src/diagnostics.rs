//! Diagnostics: what a user's mistake looks like.
//!
//! Every stage reports problems as [`Diagnostic`]s pushed into a
//! [`Diagnostics`] sink, so one pass reports *all* errors it can find. They are
//! rendered once, at the edge (the CLI), as
//!
//! ```text
//! error[E0203]: arity mismatch: `edge` has 2 attributes, found 3
//!   --> prog.dl:4:12
//!    |
//!  4 | path(x, y) :- edge(x, y, z).
//!    |               ^^^^^^^^^^^^^
//!    = hint: `edge` is declared at prog.dl:1:7 as edge(a: number, b: number)
//! ```
//!
//! Codes are stable (tests and docs name them); `specs/language.md` lists them.

use crate::source::{SourceMap, Span};
use std::fmt::Write;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Error,
    Warning,
}

/// A secondary span with its own short message ("declared here").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Label {
    pub span: Span,
    pub message: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub severity: Severity,
    /// Stable code, e.g. `E0101`; see `specs/language.md`.
    pub code: &'static str,
    pub message: String,
    pub span: Option<Span>,
    pub labels: Vec<Label>,
    pub hint: Option<String>,
}

impl Diagnostic {
    pub fn error(code: &'static str, span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            code,
            message: message.into(),
            span: Some(span),
            labels: vec![],
            hint: None,
        }
    }

    pub fn warning(code: &'static str, span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(code, span, message)
        }
    }

    /// An error with no source location (a missing file named on the command line).
    pub fn error_nospan(code: &'static str, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            code,
            message: message.into(),
            span: None,
            labels: vec![],
            hint: None,
        }
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Diagnostic {
        self.hint = Some(hint.into());
        self
    }

    pub fn with_label(mut self, span: Span, message: impl Into<String>) -> Diagnostic {
        self.labels.push(Label {
            span,
            message: message.into(),
        });
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// Renders the diagnostic as plain text (no color), ending in a newline.
    pub fn render(&self, sources: &SourceMap) -> String {
        let mut out = String::new();
        let sev = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        let _ = writeln!(
            out,
            "{sev}[{}]: {}",
            self.code,
            clip(&self.message, MAX_MESSAGE)
        );
        if let Some(span) = self.span {
            render_span(&mut out, sources, span, None);
        }
        for label in &self.labels {
            render_span(&mut out, sources, label.span, Some(&label.message));
        }
        if let Some(hint) = &self.hint {
            let width = self.span.map_or(1, |s| {
                let f = sources.file(s.file);
                f.line_col(s.start as usize).0.to_string().len()
            });
            let hint = clip(hint, MAX_MESSAGE);
            let _ = writeln!(out, "{:width$} = hint: {hint}", "", width = width);
        }
        out
    }
}

/// Characters of a message shown; a longer one (a megabyte identifier
/// echoed) is cut, with its length.
const MAX_MESSAGE: usize = 400;
/// Characters of a source line shown around the span.
const MAX_LINE: usize = 1000;

/// `s` cut to `max` characters, saying how long it was.
pub fn clip(s: &str, max: usize) -> std::borrow::Cow<'_, str> {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}… ({} bytes in all)", &s[..i], s.len()).into(),
        None => s.into(),
    }
}

fn render_span(out: &mut String, sources: &SourceMap, span: Span, note: Option<&str>) {
    let file = sources.file(span.file);
    let (line, col) = file.line_col(span.start as usize);
    let (end_line, end_col) = file.line_col(span.end as usize);
    let full = file.line_text(line);
    // a long line is shown as a window that starts a little before the span
    let chars = full.chars().count();
    let (text, col, end_col) = if chars > MAX_LINE {
        let skip = col.saturating_sub(41);
        let shown: String = full.chars().skip(skip).take(MAX_LINE).collect();
        let lead = if skip > 0 { "…" } else { "" };
        let text = format!("{lead}{shown}… ({chars} characters)");
        let shift = skip.saturating_sub(lead.chars().count());
        let col = col - shift;
        let end_col = (end_col - shift.min(end_col)).min(MAX_LINE + 2).max(col);
        (text, col, end_col)
    } else {
        (full.to_string(), col, end_col)
    };
    let text = text.as_str();
    let width = line.to_string().len();
    let _ = writeln!(
        out,
        "{:width$}--> {}:{}:{}",
        "",
        file.name,
        line,
        col,
        width = width + 1
    );
    let _ = writeln!(out, "{:width$} |", "", width = width);
    let _ = writeln!(out, "{line} | {}", text.replace('\t', " "));
    let carets = if end_line == line {
        end_col.saturating_sub(col).max(1)
    } else {
        text.chars().count().saturating_sub(col - 1).max(1)
    }
    .min(MAX_LINE);
    let _ = write!(
        out,
        "{:width$} | {}{}",
        "",
        " ".repeat(col - 1),
        "^".repeat(carets),
        width = width
    );
    match note {
        Some(n) => {
            let _ = writeln!(out, " {n}");
        }
        None => out.push('\n'),
    }
}

/// A sink that collects diagnostics from every stage.
#[derive(Debug, Default)]
pub struct Diagnostics {
    pub items: Vec<Diagnostic>,
}

impl Diagnostics {
    pub fn new() -> Diagnostics {
        Diagnostics::default()
    }

    pub fn push(&mut self, d: Diagnostic) {
        self.items.push(d);
    }

    pub fn has_errors(&self) -> bool {
        self.items.iter().any(Diagnostic::is_error)
    }

    pub fn error_count(&self) -> usize {
        self.items.iter().filter(|d| d.is_error()).count()
    }

    /// Sorted by file and position, errors and warnings interleaved, deduplicated.
    pub fn sorted(&self) -> Vec<&Diagnostic> {
        let mut v: Vec<&Diagnostic> = self.items.iter().collect();
        v.sort_by_key(|d| (d.span.map(|s| (s.file, s.start)), d.code));
        v.dedup();
        v
    }

    pub fn render_all(&self, sources: &SourceMap) -> String {
        self.render_first(sources, usize::MAX).0
    }

    /// The first `limit` of [`Diagnostics::sorted`], rendered, and how many
    /// were left out: a file of 50,000 facts for undeclared relations must
    /// not bury the summary (and the hint that explains them all) under
    /// 50,000 copies of one error.
    pub fn render_first(&self, sources: &SourceMap, limit: usize) -> (String, usize) {
        let sorted = self.sorted();
        let left_out = sorted.len().saturating_sub(limit);
        let text = sorted
            .iter()
            .take(limit)
            .map(|d| d.render(sources))
            .collect::<Vec<_>>()
            .join("\n");
        (text, left_out)
    }
}
