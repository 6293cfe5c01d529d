//! `.input` relations: delimiter-separated and JSON-lines files.
//!
//! Expects a relation with its directive parameters; guarantees either every
//! row of the file, typed by the relation's columns, or one located error.
//! Parameters: `filename` (default `<relation>.facts`, relative to the facts
//! directory), `delimiter` (default tab), `IO` (`file`, the default, or
//! `jsonl`: one JSON array or object per line, objects keyed by attribute
//! name), `headers` (`true`: the first line is skipped). Empty lines are
//! skipped, except in a nullary relation's file, where a line (empty or
//! `()`) is its one tuple.

use super::{parse_column, IoError};
use netc_compiler::plan::{IoSpec, Relation};
use netc_compiler::value::Row;
use std::path::{Path, PathBuf};

/// Where a relation's input comes from.
pub fn input_path(rel: &Relation, spec: &IoSpec, dir: &Path) -> PathBuf {
    let default = if io_kind(spec) == "jsonl" {
        format!("{}.jsonl", rel.name)
    } else {
        format!("{}.facts", rel.name)
    };
    dir.join(spec.params.get("filename").cloned().unwrap_or(default))
}

fn io_kind(spec: &IoSpec) -> &str {
    spec.params.get("IO").map(String::as_str).unwrap_or("file")
}

/// Reads the input of one `.input` directive.
pub fn read_input(rel: &Relation, spec: &IoSpec, dir: &Path) -> Result<Vec<Row>, IoError> {
    let path = input_path(rel, spec, dir);
    let text = std::fs::read_to_string(&path).map_err(|source| IoError::Read {
        path: path.display().to_string(),
        source,
    })?;
    let name = path.display().to_string();
    match io_kind(spec) {
        "file" => read_delimited(
            rel,
            &name,
            &text,
            delimiter(spec),
            spec.params.get("headers").is_some_and(|h| h == "true"),
        ),
        "jsonl" => read_jsonl(rel, &name, &text),
        other => Err(IoError::Syntax {
            location: name,
            message: format!("unknown IO kind `{other}` for `.input {}`", rel.name),
            hint: Some("use IO=file (delimiter-separated) or IO=jsonl".into()),
        }),
    }
}

/// The directive's delimiter (`\t` by default; `\\t` written literally also means tab).
pub fn delimiter(spec: &IoSpec) -> String {
    match spec.params.get("delimiter").map(String::as_str) {
        None | Some("\\t") => "\t".to_string(),
        Some(d) => d.to_string(),
    }
}

/// `headers=true`: the first line names the attributes and is skipped.
pub fn read_delimited(
    rel: &Relation,
    name: &str,
    text: &str,
    delim: String,
    headers: bool,
) -> Result<Vec<Row>, IoError> {
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate().skip(usize::from(headers)) {
        // a nullary relation: an empty line (or `()`, as Souffle writes
        // it) is its one tuple
        if rel.arity() == 0 && matches!(line.trim(), "" | "()") {
            rows.push(Vec::new());
            continue;
        }
        if line.trim().is_empty() {
            continue;
        }
        let fields: Vec<&str> = if rel.arity() == 1 {
            vec![line]
        } else {
            line.split(delim.as_str()).collect()
        };
        if fields.len() != rel.arity() {
            return Err(IoError::Syntax {
                location: format!("{name}:{}:1", i + 1),
                message: format!("`{}` has {} attributes, this line has {} fields", rel.name, rel.arity(), fields.len()),
                hint: Some(format!("fields are separated by {:?}; set `delimiter=` in the `.input` directive if the file uses another", delim)),
            });
        }
        let mut row = Vec::with_capacity(fields.len());
        let mut col = 1;
        for (field, column) in fields.iter().zip(&rel.columns) {
            let v = parse_column(field, column).map_err(|e| IoError::Syntax {
                location: format!("{name}:{}:{col}", i + 1),
                message: format!("attribute `{}` of `{}`: {e}", column.name, rel.name),
                hint: Some(format!(
                    "`{}` is declared as `{}`",
                    column.name, column.type_name
                )),
            })?;
            row.push(v);
            col += field.chars().count() + delim.chars().count();
        }
        rows.push(row);
    }
    Ok(rows)
}

pub fn read_jsonl(rel: &Relation, name: &str, text: &str) -> Result<Vec<Row>, IoError> {
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let loc = || format!("{name}:{}:1", i + 1);
        let json: serde_json::Value = serde_json::from_str(line).map_err(|e| IoError::Syntax {
            location: format!("{name}:{}:{}", i + 1, e.column()),
            message: format!("invalid JSON: {e}"),
            hint: Some("each line is one JSON array `[1, \"a\"]` or object `{\"x\": 1}`".into()),
        })?;
        let fields: Vec<serde_json::Value> = match json {
            serde_json::Value::Array(a) => a,
            serde_json::Value::Object(mut o) => {
                let mut v = Vec::new();
                for c in &rel.columns {
                    v.push(o.remove(&c.name).ok_or_else(|| IoError::Syntax {
                        location: loc(),
                        message: format!("missing attribute `{}` of `{}`", c.name, rel.name),
                        hint: Some(format!(
                                "objects need the keys {}",
                                rel.columns
                                    .iter()
                                    .map(|c| c.name.as_str())
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            )),
                    })?);
                }
                v
            }
            _ => {
                return Err(IoError::Syntax {
                    location: loc(),
                    message: "expected a JSON array or object".into(),
                    hint: None,
                });
            }
        };
        if fields.len() != rel.arity() {
            return Err(IoError::Syntax {
                location: loc(),
                message: format!(
                    "`{}` has {} attributes, this line has {}",
                    rel.name,
                    rel.arity(),
                    fields.len()
                ),
                hint: None,
            });
        }
        let row: Result<Row, IoError> = fields
            .iter()
            .zip(&rel.columns)
            .map(|(f, c)| {
                let text = match f {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                parse_column(&text, c).map_err(|e| IoError::Syntax {
                    location: loc(),
                    message: format!("attribute `{}` of `{}`: {e}", c.name, rel.name),
                    hint: Some(format!("`{}` is declared as `{}`", c.name, c.type_name)),
                })
            })
            .collect();
        rows.push(row?);
    }
    Ok(rows)
}
