//! A bridge's `.flows` file straight from its `ovs_flow` rows, without
//! building a [`BridgeState`](super::text::BridgeState): what `netc compile`
//! renders for every host (3.3M flows at 100k VMs).
//!
//! Expects: a device's `ovs_flow` rows. Guarantees: when every row is a
//! valid flow and no two different flows share a cookie, the same bytes as
//! `bridge_state(..)?.flows_text()` (a proptest in `ovs/tests.rs` holds it
//! to that); otherwise `None`, and the caller takes the `BridgeState` path,
//! which names the bad row or the collision exactly as before. Why faster:
//! the match and action texts are borrowed from the symbols (all of a
//! bridge's read under one lock), not copied into two `String`s per flow; the cookie is hashed over digits written on
//! the stack; each line is written into the file's text directly; and the
//! sort compares (table, priority) first, strings only within a block.

use super::dump::MARKER_TABLE;
use super::text::{decimal, flow_cookie};
use netc_compiler::value::{Row, Sym, Value};
use std::cmp::Reverse;

/// One flow, its texts borrowed from the interned symbols.
struct Line {
    table: u8,
    priority: u16,
    matches: &'static str,
    actions: &'static str,
    cookie: u64,
}

/// The `.flows` text of `rows`, or `None` if a row is not a valid flow or
/// two different flows share a cookie (see the module map).
pub fn flows_text(rows: &[Row]) -> Option<String> {
    // First the columns that are not text, and the symbols; then every
    // symbol's text under one read of the interner.
    let mut heads = Vec::with_capacity(rows.len());
    let mut syms = Vec::with_capacity(2 * rows.len());
    for row in rows {
        let table = number(row.get(1)?, 0, i64::from(MARKER_TABLE) - 1)? as u8;
        let priority = number(row.get(2)?, 0, 65535)? as u16;
        syms.push(symbol(row.get(3)?)?);
        syms.push(symbol(row.get(4)?)?);
        let concern = number(row.get(5)?, 1, 253)? as u8;
        heads.push((table, priority, concern));
    }
    let mut texts = Vec::with_capacity(syms.len());
    Sym::texts(syms, &mut texts);
    let mut lines = Vec::with_capacity(rows.len());
    for ((table, priority, concern), text) in heads.into_iter().zip(texts.chunks_exact(2)) {
        let (matches, actions) = (text[0], text[1]);
        if actions.trim().is_empty() {
            return None;
        }
        let cookie = flow_cookie(concern, table, priority, matches, actions);
        lines.push(Line {
            table,
            priority,
            matches,
            actions,
            cookie,
        });
    }
    // File order (`BridgeState::sorted_flows`): table, priority descending,
    // match, actions; equal flows of different concerns by cookie, the
    // order the `BridgeState`'s map by cookie gives its stable sort.
    lines.sort_by(|a, b| {
        (a.table, Reverse(a.priority))
            .cmp(&(b.table, Reverse(b.priority)))
            .then_with(|| a.matches.cmp(b.matches))
            .then_with(|| a.actions.cmp(b.actions))
            .then_with(|| a.cookie.cmp(&b.cookie))
    });
    // The same flow twice is one flow.
    lines.dedup_by(|b, a| {
        a.cookie == b.cookie
            && a.table == b.table
            && a.priority == b.priority
            && a.matches == b.matches
            && a.actions == b.actions
    });
    let mut cookies: Vec<u64> = lines.iter().map(|l| l.cookie).collect();
    cookies.sort_unstable();
    if cookies.windows(2).any(|w| w[0] == w[1]) {
        return None;
    }
    let bytes: usize = lines
        .iter()
        .map(|l| 60 + l.matches.len() + l.actions.len())
        .sum();
    let mut out = String::with_capacity(bytes);
    for l in &lines {
        out.push_str("table=");
        push_decimal(&mut out, u16::from(l.table));
        out.push_str(",priority=");
        push_decimal(&mut out, l.priority);
        out.push_str(",cookie=0x");
        push_hex16(&mut out, l.cookie);
        if !l.matches.is_empty() {
            out.push(',');
            out.push_str(l.matches);
        }
        out.push_str(",actions=");
        out.push_str(l.actions);
        out.push('\n');
    }
    Some(out)
}

/// A number column in `lo..=hi` (as `ovs::num` reads it).
fn number(v: &Value, lo: i64, hi: i64) -> Option<i64> {
    match *v {
        Value::Number(n) if (lo..=hi).contains(&n) => Some(n),
        Value::Unsigned(n) if (n as i128) >= lo as i128 && (n as i128) <= hi as i128 => {
            Some(n as i64)
        }
        _ => None,
    }
}

fn symbol(v: &Value) -> Option<Sym> {
    match v {
        Value::Symbol(s) => Some(*s),
        _ => None,
    }
}

/// Appends `n` in decimal (as `{}` formats it).
fn push_decimal(out: &mut String, n: u16) {
    let mut digits = [0u8; 5];
    // Only ASCII digits were written.
    out.push_str(std::str::from_utf8(decimal(n, &mut digits)).unwrap_or_default());
}

/// Appends the 16 lowercase hex digits of `n` (as `{:016x}` formats it).
fn push_hex16(out: &mut String, n: u64) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut digits = [0u8; 16];
    for (i, d) in digits.iter_mut().enumerate() {
        *d = HEX[((n >> (60 - 4 * i)) & 0xf) as usize];
    }
    out.push_str(std::str::from_utf8(&digits).unwrap_or_default());
}
