//! Update scripts: transactions of fact inserts and deletes.
//!
//! ```text
//! +edge(1, 2).
//! -edge(2, 3).
//! commit.
//! ```
//!
//! Each `+R(args).` / `-R(args).` adds or removes one fact of relation `R`;
//! `commit.` closes a transaction. Symbols are written in quotes ("h1"),
//! numbers and network values bare. Comments are as in programs. Reading
//! reuses the program lexer, so errors carry `file:line:col`. Changes are
//! printed in the same notation ([`format_change`]).

use super::{parse_column, IoError};
use netc_compiler::plan::{Plan, RelId};
use netc_compiler::source::SourceMap;
use netc_compiler::syntax::lexer::{lex, Tok, Token};
use netc_compiler::value::{Row, Value};

/// One fact change: relation, row, +1 insert / -1 delete.
pub type Change = (RelId, Row, isize);

/// Parses a whole script into transactions, in order.
pub fn parse_script(plan: &Plan, name: &str, text: &str) -> Result<Vec<Vec<Change>>, IoError> {
    let mut sources = SourceMap::new();
    let file = sources.add(name, None, text.to_string());
    let toks = lex(file, text);
    let mut p = ScriptParser {
        plan,
        toks: &toks,
        pos: 0,
        sources: &sources,
    };
    p.script()
}

struct ScriptParser<'a> {
    plan: &'a Plan,
    toks: &'a [Token],
    pos: usize,
    sources: &'a SourceMap,
}

impl ScriptParser<'_> {
    fn peek(&self) -> &Tok {
        &self.toks[self.pos].tok
    }

    fn bump(&mut self) -> &Token {
        let t = &self.toks[self.pos];
        if self.pos + 1 < self.toks.len() {
            self.pos += 1;
        }
        t
    }

    fn err<T>(&self, message: impl Into<String>, hint: &str) -> Result<T, IoError> {
        Err(IoError::Syntax {
            location: self.sources.location(self.toks[self.pos].span),
            message: message.into(),
            hint: Some(hint.to_string()),
        })
    }

    fn expect(&mut self, t: Tok, what: &str) -> Result<(), IoError> {
        if *self.peek() == t {
            self.bump();
            Ok(())
        } else {
            self.err(
                format!("expected {what}, found {}", self.peek().describe()),
                "a script line is `+rel(args).`, `-rel(args).` or `commit.`",
            )
        }
    }

    fn script(&mut self) -> Result<Vec<Vec<Change>>, IoError> {
        let mut txs = Vec::new();
        let mut current = Vec::new();
        loop {
            match self.peek().clone() {
                Tok::Eof => break,
                Tok::Ident(w) if w == "commit" => {
                    self.bump();
                    self.expect(Tok::Dot, "`.` after `commit`")?;
                    txs.push(std::mem::take(&mut current));
                }
                Tok::Plus | Tok::Minus => {
                    let diff = if *self.peek() == Tok::Plus { 1 } else { -1 };
                    self.bump();
                    current.push(self.fact(diff)?);
                }
                other => {
                    return self.err(
                        format!("expected `+`, `-` or `commit`, found {}", other.describe()),
                        "a script line is `+rel(args).`, `-rel(args).` or `commit.`",
                    )
                }
            }
        }
        if !current.is_empty() {
            return self.err(
                format!("{} change(s) after the last `commit.`", current.len()),
                "end each transaction with a line `commit.`",
            );
        }
        Ok(txs)
    }

    fn fact(&mut self, diff: isize) -> Result<Change, IoError> {
        let name = match self.peek().clone() {
            Tok::Ident(n) => n,
            other => {
                return self.err(
                    format!("expected a relation name, found {}", other.describe()),
                    "write e.g. `+edge(1, 2).`",
                )
            }
        };
        let Some(rel) = self.plan.relation_id(&name) else {
            return self.err(
                format!("unknown relation `{name}`"),
                "the relation must be declared in the program",
            );
        };
        self.bump();
        self.expect(Tok::LParen, "`(`")?;
        let relation = &self.plan.relations[rel];
        let mut row = Vec::with_capacity(relation.arity());
        loop {
            if *self.peek() == Tok::RParen && row.is_empty() {
                break;
            }
            let col = row.len();
            let Some(column) = relation.columns.get(col) else {
                return self.err(
                    format!("`{name}` has {} attributes, found more", relation.arity()),
                    "remove the extra arguments",
                );
            };
            let neg = if *self.peek() == Tok::Minus {
                self.bump();
                "-"
            } else {
                ""
            };
            let text = match self.peek().clone() {
                Tok::Str(s) | Tok::Ident(s) => s,
                Tok::Int(s) | Tok::Unsigned(s) | Tok::Float(s) => format!("{neg}{s}"),
                Tok::Ipv4(s) | Tok::Ipv6(s) | Tok::Prefix4(s) | Tok::Prefix6(s) | Tok::Mac(s) => s,
                other => {
                    return self.err(
                        format!("expected a value, found {}", other.describe()),
                        "symbols are quoted (\"h1\"); numbers and addresses are bare",
                    )
                }
            };
            let value = match parse_column(&text, column) {
                Ok(v) => v,
                Err(e) => {
                    return self.err(
                        format!("attribute `{}` of `{name}`: {e}", column.name),
                        &format!("`{}` is declared as `{}`", column.name, column.type_name),
                    )
                }
            };
            self.bump();
            row.push(value);
            if *self.peek() == Tok::Comma {
                self.bump();
                continue;
            }
            break;
        }
        if row.len() != relation.arity() {
            return self.err(
                format!(
                    "`{name}` has {} attributes, found {}",
                    relation.arity(),
                    row.len()
                ),
                "give one value per attribute",
            );
        }
        self.expect(Tok::RParen, "`,` or `)`")?;
        self.expect(Tok::Dot, "`.` at the end of the change")?;
        Ok((rel, row, diff))
    }
}

/// A value as written in scripts and change listings: symbols quoted.
pub fn format_value(v: &Value) -> String {
    match v {
        Value::Symbol(s) => {
            let s = s.as_str();
            let mut out = String::with_capacity(s.len() + 2);
            out.push('"');
            for c in s.chars() {
                match c {
                    '"' => out.push_str("\\\""),
                    '\\' => out.push_str("\\\\"),
                    '\n' => out.push_str("\\n"),
                    '\t' => out.push_str("\\t"),
                    c => out.push(c),
                }
            }
            out.push('"');
            out
        }
        other => other.to_string(),
    }
}

/// `+R(1, "a")` / `-R(1, "a")`.
pub fn format_change(name: &str, row: &[Value], diff: isize) -> String {
    let args: Vec<String> = row.iter().map(format_value).collect();
    format!(
        "{}{}({})",
        if diff > 0 { '+' } else { '-' },
        name,
        args.join(", ")
    )
}
