//! String functors: `cat`, `strlen`, `substr`, `replace`, `contains`, `match` and the
//! conversions from text (`to_number`, `to_ipv4`, ...).
//!
//! Expects arguments of the types in the signatures (`specs/functors.md`);
//! any other argument makes the result undefined (`None`, or `false` for the
//! constraints). Guarantees: no panics; lengths and indices count Unicode
//! scalar values (`char`s), so `substr` never splits a character; `match` is
//! a full match with the `regex` crate's syntax, and an invalid pattern never
//! matches (the checker can report it early with [`regex_error`]).

use crate::types::Prim;
use crate::value::{Sym, Value};
use regex::Regex;
use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt::Write as _;

/// `cat(s1, s2, ...)`: the concatenation of symbols.
pub(super) fn cat(args: &[Value]) -> Option<Value> {
    let mut out = String::new();
    for a in args {
        match a {
            Value::Symbol(s) => out.push_str(&s.as_str()),
            _ => return None,
        }
    }
    Some(Value::sym(&out))
}

/// `replace(s, old, new)`: `s` with its first occurrence of `old` replaced
/// by `new`; `s` itself when `old` does not occur in it or is empty.
pub(super) fn replace(s: &Value, old: &Value, new: &Value) -> Option<Value> {
    match (s, old, new) {
        (Value::Symbol(s), Value::Symbol(old), Value::Symbol(new)) => {
            let (text, old) = (s.as_str(), old.as_str());
            match text.find(&*old) {
                Some(at) if !old.is_empty() => {
                    let new = new.as_str();
                    let mut out = String::with_capacity(text.len() - old.len() + new.len());
                    out.push_str(&text[..at]);
                    out.push_str(&new);
                    out.push_str(&text[at + old.len()..]);
                    Some(Value::sym(&out))
                }
                _ => Some(Value::Symbol(*s)),
            }
        }
        _ => None,
    }
}

/// `cat` whose arguments may be `to_string(v)` calls, evaluated without
/// interning each converted value: `(true, v)` stands for the argument
/// `to_string(v)`, `(false, s)` for `s` itself. Equal to [`cat`] over the
/// arguments so converted (`specs/functors.md`), but one symbol is interned
/// per call instead of one per conversion plus the result, and every
/// symbol's text is read under one interner lock: the engine builds each
/// OVS flow's match and actions this way (millions of rows at preset L).
pub(super) fn cat_converted(parts: &[(bool, Value)]) -> Option<Value> {
    // Reused per thread: the engine calls this once per row.
    thread_local! {
        static BUF: RefCell<(String, Vec<&'static str>)> = const { RefCell::new((String::new(), Vec::new())) };
    }
    if parts
        .iter()
        .any(|(conv, v)| !conv && !matches!(v, Value::Symbol(_)))
    {
        return None;
    }
    BUF.with(|b| {
        let (out, texts) = &mut *b.borrow_mut();
        out.clear();
        texts.clear();
        let syms = parts.iter().filter_map(|(_, v)| match v {
            Value::Symbol(s) => Some(*s),
            _ => None,
        });
        Sym::texts(syms, texts);
        let mut texts = texts.iter();
        for (_, v) in parts {
            match v {
                // `to_string` of a symbol is its text, as without the conversion.
                Value::Symbol(_) => out.push_str(texts.next()?),
                // `to_string`'s text is the value's `Display` form; writing
                // into a `String` cannot fail.
                _ => write!(out, "{v}").ok()?,
            }
        }
        Some(Value::sym(out))
    })
}

/// `strlen(s)`: the number of characters.
pub(super) fn strlen(s: &Value) -> Option<Value> {
    let Value::Symbol(s) = s else { return None };
    i64::try_from(s.as_str().chars().count())
        .ok()
        .map(Value::Number)
}

/// `substr(s, start, len)`: characters `start .. start+len` of `s`, 0-based.
/// Undefined if `start < 0`, `start > strlen(s)` or `len < 0`; a `len`
/// reaching past the end is cut at the end (as `std::string::substr`).
pub(super) fn substr(s: &Value, start: &Value, len: &Value) -> Option<Value> {
    let Value::Symbol(s) = s else { return None };
    let start = usize::try_from(super::int_arg(start)?).ok()?;
    let len = usize::try_from(super::int_arg(len)?).ok()?;
    let text = s.as_str();
    let count = text.chars().count();
    if start > count {
        return None;
    }
    let end = start.saturating_add(len).min(count);
    let byte = |k: usize| text.char_indices().nth(k).map_or(text.len(), |(i, _)| i);
    let (b0, b1) = (byte(start), byte(end));
    text.get(b0..b1).map(Value::sym)
}

/// `contains(sub, s)`: whether `sub` occurs in `s`.
pub(super) fn contains(sub: &Value, s: &Value) -> bool {
    match (sub, s) {
        (Value::Symbol(sub), Value::Symbol(s)) => s.as_str().contains(&*sub.as_str()),
        _ => false,
    }
}

/// `match(re, s)`: whether the whole of `s` matches the regular expression.
pub(super) fn matches(re: &Value, s: &Value) -> bool {
    let (Value::Symbol(re), Value::Symbol(s)) = (re, s) else {
        return false;
    };
    let pattern = re.as_str();
    with_regex(&pattern, |r| r.is_some_and(|r| r.is_match(&s.as_str())))
}

/// Whether `pattern` is a regular expression `match` can use (cached, as
/// `match` caches it).
pub(super) fn valid_pattern(pattern: &str) -> bool {
    with_regex(pattern, |r| r.is_some())
}

/// Why `pattern` is not a valid regular expression for `match`, or `None`
/// if it is. Lets the checker reject a constant pattern at compile time.
pub fn regex_error(pattern: &str) -> Option<String> {
    compile(pattern).err()
}

fn compile(pattern: &str) -> Result<Regex, String> {
    // Anchored at both ends: `match` is a full match, as `std::regex_match`.
    Regex::new(&format!(r"\A(?:{pattern})\z")).map_err(|e| e.to_string())
}

/// Compiled patterns are cached per thread (the engine calls `match` once
/// per row, usually with a handful of distinct constant patterns).
fn with_regex<T>(pattern: &str, f: impl FnOnce(Option<&Regex>) -> T) -> T {
    const CACHE_LIMIT: usize = 256;
    thread_local! {
        static CACHE: RefCell<HashMap<String, Option<Regex>>> = RefCell::new(HashMap::new());
    }
    let compiled = CACHE.with(|c| {
        let mut c = c.borrow_mut();
        if let Some(r) = c.get(pattern) {
            return r.clone();
        }
        if c.len() >= CACHE_LIMIT {
            c.clear();
        }
        let r = compile(pattern).ok();
        c.insert(pattern.to_string(), r.clone());
        r
    });
    f(compiled.as_ref())
}

/// `to_number(s)`, `to_ipv4(s)`, ...: reads a symbol's text as a value of
/// type `ty`, with the text forms of facts files ([`Value::parse`]).
pub(super) fn parse_as(s: &Value, ty: Prim) -> Option<Value> {
    let Value::Symbol(s) = s else { return None };
    Value::parse(&s.as_str(), ty).ok()
}
