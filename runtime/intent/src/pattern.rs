//! Patterns over one relation: `vip_dip(V, D)`, `vm("acme", _, _, 10.1.1.11, H)`.
//!
//! What `netc repl` (`?- ...`, `:assert`, `:retract`, `:explain`) and
//! `POST /v1/query` read. Expects the text of one atom, optionally wrapped
//! as `?- atom.`; each argument is a variable (starts with an upper-case
//! letter or `_x`), `_` (anything), or a constant written as in intent files
//! (`"text"`, `42`, `10.0.0.1`, `10.0.0.0/8`, `02:00:00:00:00:01`), read with
//! the column's declared type. Guarantees: a mistake is a [`PatternError`]
//! at a byte offset of the text (for a caret), with a hint; nothing panics.
//! A variable used twice means both columns are equal.

use netc_compiler::plan::{Plan, RelId};
use netc_compiler::value::{Row, Value};

/// One argument of a pattern.
#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    Var(String),
    Any,
    Const(Value),
}

/// A relation and one [`Arg`] per column.
#[derive(Clone, Debug, PartialEq)]
pub struct Pattern {
    pub rel: RelId,
    pub args: Vec<Arg>,
}

/// A pattern that could not be read, at byte `offset` of the text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct PatternError {
    pub offset: usize,
    pub message: String,
    pub hint: Option<String>,
}

impl PatternError {
    fn at(offset: usize, message: impl Into<String>, hint: Option<String>) -> PatternError {
        PatternError {
            offset,
            message: message.into(),
            hint,
        }
    }

    /// The error under the text it is about, with a caret at the column.
    pub fn render(&self, text: &str) -> String {
        let col = text[..self.offset.min(text.len())].chars().count();
        let mut out = format!(
            "error: {}\n  | {}\n  | {}^\n",
            self.message,
            text,
            " ".repeat(col)
        );
        if let Some(h) = &self.hint {
            out.push_str(&format!("  = hint: {h}\n"));
        }
        out
    }
}

impl Pattern {
    /// Whether a row of the relation matches (constants equal, repeated
    /// variables equal).
    pub fn matches(&self, row: &[Value]) -> bool {
        if row.len() != self.args.len() {
            return false;
        }
        let mut seen: Vec<(&str, Value)> = Vec::new();
        for (a, v) in self.args.iter().zip(row) {
            match a {
                Arg::Any => {}
                Arg::Const(c) => {
                    if c != v {
                        return false;
                    }
                }
                Arg::Var(name) => match seen.iter().find(|(n, _)| n == name) {
                    Some((_, prev)) if prev != v => return false,
                    Some(_) => {}
                    None => seen.push((name, *v)),
                },
            }
        }
        true
    }

    /// The distinct variables, in order of first appearance, with the column
    /// each is first bound at.
    pub fn variables(&self) -> Vec<(String, usize)> {
        let mut out: Vec<(String, usize)> = Vec::new();
        for (i, a) in self.args.iter().enumerate() {
            if let Arg::Var(n) = a {
                if !out.iter().any(|(m, _)| m == n) {
                    out.push((n.clone(), i));
                }
            }
        }
        out
    }

    /// The row, if every argument is a constant (a fact).
    pub fn ground(&self) -> Option<Row> {
        self.args
            .iter()
            .map(|a| match a {
                Arg::Const(v) => Some(*v),
                _ => None,
            })
            .collect()
    }
}

/// Reads `[?-] name(arg, ...)[.]` against the plan's relations.
pub fn parse(text: &str, plan: &Plan) -> Result<Pattern, PatternError> {
    let mut pos = skip_ws(text, 0);
    if text[pos..].starts_with("?-") {
        pos = skip_ws(text, pos + 2);
    }
    let name_start = pos;
    let name_end = text[pos..]
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .map_or(text.len(), |i| pos + i);
    let name = &text[name_start..name_end];
    if name.is_empty() {
        return Err(PatternError::at(
            name_start,
            "expected a relation name",
            Some("write an atom such as `vip_dip(V, D).`".into()),
        ));
    }
    let Some(rel) = plan.relation_id(name) else {
        let hint =
            netc_compiler::names::closest(name, plan.relations.iter().map(|r| r.name.as_str()))
                .map(|c| format!("did you mean `{c}`?"))
                .or_else(|| {
                    Some("`:help` lists how to see the relations (tab completes them)".into())
                });
        return Err(PatternError::at(
            name_start,
            format!("unknown relation `{name}`"),
            hint,
        ));
    };
    let relation = &plan.relations[rel];
    let mut pos = skip_ws(text, name_end);
    let mut raw: Vec<(usize, &str)> = Vec::new();
    if text[pos..].starts_with('(') {
        pos += 1;
        loop {
            pos = skip_ws(text, pos);
            let start = pos;
            let bytes = text.as_bytes();
            let mut in_string = false;
            while pos < text.len() {
                let b = bytes[pos];
                if in_string {
                    if b == b'\\' {
                        pos += 1;
                    } else if b == b'"' {
                        in_string = false;
                    }
                } else if b == b'"' {
                    in_string = true;
                } else if b == b',' || b == b')' {
                    break;
                }
                pos += 1;
            }
            if in_string || pos >= text.len() {
                return Err(PatternError::at(
                    pos.min(text.len()),
                    if in_string {
                        "unterminated string"
                    } else {
                        "expected `)` to close the arguments"
                    },
                    None,
                ));
            }
            let arg = text[start..pos].trim_end();
            if !(arg.is_empty() && raw.is_empty() && bytes[pos] == b')') {
                raw.push((start, arg));
            }
            let close = bytes[pos] == b')';
            pos += 1;
            if close {
                break;
            }
        }
    }
    let rest = text[pos..].trim();
    if !(rest.is_empty() || rest == ".") {
        return Err(PatternError::at(
            pos + (text[pos..].len() - text[pos..].trim_start().len()),
            format!("unexpected `{rest}` after the atom"),
            Some("one atom per line, optionally ending with `.`".into()),
        ));
    }
    if raw.len() != relation.arity() {
        let cols: Vec<String> = relation
            .columns
            .iter()
            .map(|c| format!("{}: {}", c.name, c.type_name))
            .collect();
        return Err(PatternError::at(
            name_start,
            format!(
                "`{name}` has {} column(s), but the pattern has {}",
                relation.arity(),
                raw.len()
            ),
            Some(format!("{name}({})", cols.join(", "))),
        ));
    }
    let mut args = Vec::with_capacity(raw.len());
    for ((offset, arg), column) in raw.into_iter().zip(&relation.columns) {
        args.push(read_arg(offset, arg, column)?);
    }
    Ok(Pattern { rel, args })
}

fn read_arg(
    offset: usize,
    arg: &str,
    column: &netc_compiler::plan::Column,
) -> Result<Arg, PatternError> {
    if arg.is_empty() {
        return Err(PatternError::at(offset, "empty argument", None));
    }
    if arg == "_" {
        return Ok(Arg::Any);
    }
    let first = arg.chars().next().unwrap_or(' ');
    if (first.is_uppercase() || first == '_')
        && arg.chars().all(|c| c.is_alphanumeric() || c == '_')
    {
        return Ok(Arg::Var(arg.to_string()));
    }
    let expected = format!("column `{}` ({})", column.name, column.type_name);
    if let Some(inner) = arg.strip_prefix('"').and_then(|a| a.strip_suffix('"')) {
        if column.prims.contains(&netc_compiler::types::Prim::Symbol) {
            return Ok(Arg::Const(Value::sym(&inner.replace("\\\"", "\""))));
        }
        return Err(PatternError::at(
            offset,
            format!("a string cannot be a value of {expected}"),
            Some("write the value without quotes".into()),
        ));
    }
    let mut last = None;
    for p in &column.prims {
        if *p == netc_compiler::types::Prim::Symbol {
            continue;
        }
        match Value::parse(arg, *p) {
            Ok(v) => return Ok(Arg::Const(v)),
            Err(e) => last = Some(e.reason),
        }
    }
    Err(PatternError::at(
        offset,
        format!("`{arg}` is not a value of {expected}"),
        Some(match last {
            Some(r) => format!("{r}; variables start with an upper-case letter"),
            None => "quote text: \"like this\"; variables start with an upper-case letter".into(),
        }),
    ))
}

fn skip_ws(text: &str, pos: usize) -> usize {
    pos + (text[pos..].len() - text[pos..].trim_start().len())
}

/// A value as it is written in intent files (symbols quoted).
pub fn show(v: &Value) -> String {
    crate::io::updates::format_value(v)
}

/// `rel(v1, v2, ...)` as written in intent files.
pub fn show_atom(name: &str, row: &[Value]) -> String {
    let vals: Vec<String> = row.iter().map(show).collect();
    format!("{name}({})", vals.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> Plan {
        let c = netc_compiler::compile_text(
            "t.dl",
            ".decl vip_dip(vip: ipv4, dip: ipv4)\n.decl vm(t: symbol, n: symbol, port: number)\n.decl p(x: prefix4)\n",
        );
        c.plan.expect("test program compiles")
    }

    #[test]
    fn variables_constants_and_wildcards() {
        let p = plan();
        let pat = parse("?- vm(\"acme\", N, _).", &p).unwrap();
        assert_eq!(pat.rel, p.relation_id("vm").unwrap());
        assert_eq!(
            pat.args,
            vec![
                Arg::Const(Value::sym("acme")),
                Arg::Var("N".into()),
                Arg::Any
            ]
        );
        assert!(pat.matches(&[Value::sym("acme"), Value::sym("web"), Value::Number(3)]));
        assert!(!pat.matches(&[Value::sym("globex"), Value::sym("web"), Value::Number(3)]));
        assert_eq!(pat.variables(), vec![("N".to_string(), 1)]);
        assert_eq!(pat.ground(), None);
    }

    #[test]
    fn typed_constants_and_repeated_variables() {
        let p = plan();
        let pat = parse("vip_dip(10.0.0.1, D)", &p).unwrap();
        assert_eq!(pat.args[0], Arg::Const(Value::Ipv4(0x0a00_0001)));
        let same = parse("vip_dip(X, X).", &p).unwrap();
        assert!(same.matches(&[Value::Ipv4(1), Value::Ipv4(1)]));
        assert!(!same.matches(&[Value::Ipv4(1), Value::Ipv4(2)]));
        let fact = parse("p(10.0.0.0/8).", &p).unwrap();
        assert_eq!(fact.ground(), Some(vec![Value::Prefix4(0x0a00_0000, 8)]));
    }

    #[test]
    fn errors_point_at_the_column() {
        let p = plan();
        let e = parse("?- vip_dip(10.0.0.1, 300.1.1.1).", &p).unwrap_err();
        assert_eq!(e.offset, "?- vip_dip(10.0.0.1, ".len());
        assert!(e.message.contains("column `dip`"), "{}", e.message);
        let e = parse("vip_dp(V, D)", &p).unwrap_err();
        assert_eq!(e.offset, 0);
        assert_eq!(e.hint.as_deref(), Some("did you mean `vip_dip`?"));
        let e = parse("vm(\"a\", N)", &p).unwrap_err();
        assert!(e.message.contains("3 column(s)"), "{}", e.message);
        let e = parse("vm(\"a, N, _)", &p).unwrap_err();
        assert!(e.message.contains("unterminated"), "{}", e.message);
        let e = parse("vm(\"a\", N, _) extra", &p).unwrap_err();
        assert_eq!(e.offset, "vm(\"a\", N, _) ".len());
        let caret = e.render("vm(\"a\", N, _) extra");
        assert!(
            caret.contains(&format!("  | {}^", " ".repeat(14))),
            "{caret}"
        );
    }

    #[test]
    fn never_panics_on_odd_text() {
        let p = plan();
        for t in [
            "",
            "?-",
            "(",
            "vm(",
            "vm(,",
            "vm)",
            "vm(\"\\",
            "é(",
            "vm(\"x\",,)",
            "?- .",
            "vm(\"é\", É, _)",
        ] {
            let _ = parse(t, &p);
        }
    }
}
