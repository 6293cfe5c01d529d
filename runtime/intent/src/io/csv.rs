//! `.output` relations as sorted, delimiter-separated files.
//!
//! Expects a relation's current rows; guarantees `DIR/<relation>.csv` (or the
//! directive's `filename=`) holding every row once, sorted by value order
//! (numbers numerically, symbols by text), fields joined by the directive's
//! delimiter (tab by default), so two runs on the same facts write the same
//! bytes.

use super::facts::delimiter;
use super::IoError;
use netc_compiler::plan::{IoSpec, Relation};
use netc_compiler::value::{Row, Sym, Value};
use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;

/// Renders rows (sorted here) as file text.
pub fn render(rows: &[Row], delim: &str) -> String {
    let mut sorted: Vec<&Row> = rows.iter().collect();
    sorted.sort();
    render_in_order(sorted, delim)
}

/// [`render`] of rows already sorted (as `Engine::contents` gives them):
/// `netc compile` does not sort its ~5M dumped rows twice.
pub fn render_sorted(rows: &[Row], delim: &str) -> String {
    render_in_order(rows.iter(), delim)
}

fn render_in_order<'r>(rows: impl IntoIterator<Item = &'r Row>, delim: &str) -> String {
    // Each value formatted straight into the text: no string per value and
    // per line (at 100k VMs, `netc compile` writes ~5M rows this way). The
    // symbols' texts are read a block of rows at a time, under one lock.
    let mut out = String::new();
    let mut rows = rows.into_iter().peekable();
    let (mut block, mut texts): (Vec<&Row>, Vec<&'static str>) = (Vec::new(), Vec::new());
    while rows.peek().is_some() {
        block.clear();
        block.extend(rows.by_ref().take(1024));
        texts.clear();
        let syms = block.iter().flat_map(|r| r.iter()).filter_map(|v| match v {
            Value::Symbol(s) => Some(*s),
            _ => None,
        });
        Sym::texts(syms, &mut texts);
        let mut text = texts.iter();
        for r in &block {
            // a nullary relation's one tuple, as Souffle writes it
            if r.is_empty() {
                out.push_str("()");
            }
            for (i, v) in r.iter().enumerate() {
                if i > 0 {
                    out.push_str(delim);
                }
                match v {
                    Value::Symbol(_) => out.push_str(text.next().copied().unwrap_or_default()),
                    _ => {
                        let _ = write!(out, "{v}");
                    }
                }
            }
            out.push('\n');
        }
    }
    out
}

/// The attribute names joined by the delimiter: the header line of
/// `headers=true` and of `-D -` (Souffle's `attributeNames`).
pub fn header(rel: &Relation, delim: &str) -> String {
    rel.columns
        .iter()
        .map(|c| c.name.as_str())
        .collect::<Vec<_>>()
        .join(delim)
}

/// Writes one `.output` relation into `dir`.
pub fn write_output(
    rel: &Relation,
    spec: &IoSpec,
    rows: &[Row],
    dir: &Path,
) -> Result<(), IoError> {
    let path = dir.join(
        spec.params
            .get("filename")
            .cloned()
            .unwrap_or_else(|| format!("{}.csv", rel.name)),
    );
    let delim = delimiter(spec);
    let mut text = render(rows, &delim);
    if spec.params.get("headers").is_some_and(|h| h == "true") {
        text.insert_str(0, &format!("{}\n", header(rel, &delim)));
    }
    let mut f = std::fs::File::create(&path).map_err(|source| IoError::Write {
        path: path.display().to_string(),
        source,
    })?;
    f.write_all(text.as_bytes())
        .map_err(|source| IoError::Write {
            path: path.display().to_string(),
            source,
        })
}
