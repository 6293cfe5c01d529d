//! A bridge's intended state as text: flows and groups in `ovs-ofctl` syntax.
//!
//! Expects: `ovs_flow(@host, table, priority, match, actions, concern)` and
//! `ovs_group(@host, group_id, type, buckets)` rows (specs/targets.md §3,
//! specs/ovs-pipeline.md), or the `.flows` / `.groups` files this module
//! wrote. Guarantees:
//! - every flow carries a 64-bit OpenFlow cookie that identifies it: the
//!   concern (the rules file that made it, 1..=255) in the top byte, and a
//!   56-bit FNV-1a hash of `(table, priority, match, actions)` below
//!   ([`flow_cookie`]). Equal cookies ⇔ equal flows (a collision inside one
//!   bridge is reported, never silently merged), so a reconcile diffs a
//!   bridge by cookie alone, and a flow whose actions changed is a new
//!   cookie;
//! - [`BridgeState::flows_text`] / [`BridgeState::groups_text`] are sorted by
//!   (table, priority descending, match) and by group id: same rows, same
//!   bytes;
//! - [`BridgeState::parse`] reads those files back exactly.

use std::collections::BTreeMap;
use std::fmt;

/// One OpenFlow flow of a bridge.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Flow {
    pub table: u8,
    pub priority: u16,
    /// The `match` column (ofctl syntax, no leading comma; empty = all).
    pub matches: String,
    pub actions: String,
    /// The full OpenFlow cookie ([`flow_cookie`]).
    pub cookie: u64,
}

/// One OpenFlow group of a bridge.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Group {
    pub id: u32,
    /// `all`, `select`, `indirect`, `ff`.
    pub kind: String,
    /// Everything after `type=...,` (selection method, fields, buckets).
    pub buckets: String,
}

/// Why rows or a file do not form a bridge state.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TextError {
    #[error("{at}: {message}")]
    Bad { at: String, message: String },
    #[error("two flows share cookie {cookie:#018x} (table {table}, priority {priority}: `{a}` and `{b}`); this is a hash collision — change one flow's text")]
    CookieCollision {
        cookie: u64,
        table: u8,
        priority: u16,
        a: String,
        b: String,
    },
    #[error("group {id} is given twice with different buckets")]
    GroupTwice { id: u32 },
}

impl Flow {
    /// `table=T,priority=P,cookie=0x…[,match],actions=A` — the line of a
    /// `.flows` file and of `ovs-ofctl add-flows`.
    pub fn line(&self) -> String {
        let sep = if self.matches.is_empty() { "" } else { "," };
        format!(
            "table={},priority={},cookie={:#018x}{sep}{},actions={}",
            self.table, self.priority, self.cookie, self.matches, self.actions
        )
    }

    /// The concern (top byte of the cookie): 1 base, 2 overlay, 3 ACL, …
    pub fn concern(&self) -> u8 {
        (self.cookie >> 56) as u8
    }
}

impl fmt::Display for Flow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.line())
    }
}

impl Group {
    /// `group_id=G,type=T[,buckets]` — the line of a `.groups` file.
    pub fn line(&self) -> String {
        let sep = if self.buckets.is_empty() { "" } else { "," };
        format!(
            "group_id={},type={}{sep}{}",
            self.id, self.kind, self.buckets
        )
    }

    /// True if the group needs OpenFlow 1.5 (`selection_method`, `fields`).
    pub fn needs_of15(&self) -> bool {
        self.buckets.contains("selection_method") || self.buckets.contains("fields(")
    }
}

impl fmt::Display for Group {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.line())
    }
}

/// The OpenFlow cookie of a flow: `concern << 56 | fnv1a56(table, priority,
/// match, actions)`. FNV-1a (64-bit, offset 0xcbf29ce484222325, prime
/// 0x100000001b3) over the decimal table, `\0`, decimal priority, `\0`, the
/// match, `\0`, the actions; the top byte is folded in by xor and replaced.
pub fn flow_cookie(concern: u8, table: u8, priority: u16, matches: &str, actions: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    // The decimal digits, written on the stack (this runs once per flow).
    let mut digits = [0u8; 5];
    eat(decimal(u16::from(table), &mut digits));
    eat(&[0]);
    eat(decimal(priority, &mut digits));
    eat(&[0]);
    eat(matches.as_bytes());
    eat(&[0]);
    eat(actions.as_bytes());
    let low = (h ^ (h >> 56)) & 0x00ff_ffff_ffff_ffff;
    (u64::from(concern) << 56) | low
}

/// `n` in decimal, in the end of `buf`.
pub(super) fn decimal(mut n: u16, buf: &mut [u8; 5]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buf[i..];
        }
    }
}

/// The complete intended (or observed) state of one bridge.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BridgeState {
    /// By cookie.
    pub flows: BTreeMap<u64, Flow>,
    /// By group id.
    pub groups: BTreeMap<u32, Group>,
}

impl BridgeState {
    /// Adds a flow; the same flow twice is one flow.
    pub fn add_flow(&mut self, f: Flow) -> Result<(), TextError> {
        if let Some(old) = self.flows.get(&f.cookie) {
            if old != &f {
                return Err(TextError::CookieCollision {
                    cookie: f.cookie,
                    table: f.table,
                    priority: f.priority,
                    a: old.line(),
                    b: f.line(),
                });
            }
        }
        self.flows.insert(f.cookie, f);
        Ok(())
    }

    /// Adds a group; the same group twice is one group.
    pub fn add_group(&mut self, g: Group) -> Result<(), TextError> {
        if let Some(old) = self.groups.get(&g.id) {
            if old != &g {
                return Err(TextError::GroupTwice { id: g.id });
            }
        }
        self.groups.insert(g.id, g);
        Ok(())
    }

    /// Flows in file order: table, priority descending, match, actions.
    pub fn sorted_flows(&self) -> Vec<&Flow> {
        let mut v: Vec<&Flow> = self.flows.values().collect();
        v.sort_by(|a, b| {
            (
                a.table,
                std::cmp::Reverse(a.priority),
                &a.matches,
                &a.actions,
            )
                .cmp(&(
                    b.table,
                    std::cmp::Reverse(b.priority),
                    &b.matches,
                    &b.actions,
                ))
        });
        v
    }

    /// The `.flows` file: one line per flow, sorted, newline-terminated.
    pub fn flows_text(&self) -> String {
        let mut s = String::new();
        for f in self.sorted_flows() {
            s.push_str(&f.line());
            s.push('\n');
        }
        s
    }

    /// The `.groups` file: one line per group, by id.
    pub fn groups_text(&self) -> String {
        let mut s = String::new();
        for g in self.groups.values() {
            s.push_str(&g.line());
            s.push('\n');
        }
        s
    }

    /// True if some group needs OpenFlow 1.5.
    pub fn needs_of15(&self) -> bool {
        self.groups.values().any(Group::needs_of15)
    }

    /// Reads a `.flows` and a `.groups` file back (`name` labels errors,
    /// e.g. the file paths). Blank lines and `#` comments are skipped.
    pub fn parse(flows: &str, groups: &str, name: &str) -> Result<BridgeState, TextError> {
        let mut st = BridgeState::default();
        for (i, line) in flows.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let at = format!("{name}.flows:{}", i + 1);
            st.add_flow(parse_flow_line(line, &at)?)?;
        }
        for (i, line) in groups.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let at = format!("{name}.groups:{}", i + 1);
            st.add_group(parse_group_line(line, &at)?)?;
        }
        Ok(st)
    }
}

fn bad(at: &str, message: impl Into<String>) -> TextError {
    TextError::Bad {
        at: at.to_string(),
        message: message.into(),
    }
}

/// Reads `table=T,priority=P,cookie=C[,match],actions=A` (as written by
/// [`Flow::line`]). The cookie is kept as written.
pub fn parse_flow_line(line: &str, at: &str) -> Result<Flow, TextError> {
    let expected = "expected `table=T,priority=P,cookie=C[,match],actions=A`";
    let (head, actions) = line
        .split_once("actions=")
        .ok_or_else(|| bad(at, format!("no `actions=`; {expected}")))?;
    let mut parts = head.splitn(4, ',');
    let mut field = |key: &str| -> Result<String, TextError> {
        let p = parts.next().unwrap_or("");
        p.strip_prefix(key)
            .map(str::to_string)
            .ok_or_else(|| bad(at, format!("`{key}` missing; {expected}")))
    };
    let table = field("table=")?;
    let priority = field("priority=")?;
    let cookie = field("cookie=")?;
    let rest = parts.next().unwrap_or("").trim_end_matches(',').to_string();
    let table: u8 = table
        .parse()
        .map_err(|_| bad(at, format!("table `{table}` is not 0..=254")))?;
    let priority: u16 = priority
        .parse()
        .map_err(|_| bad(at, format!("priority `{priority}` is not 0..=65535")))?;
    let cookie = parse_u64(&cookie).ok_or_else(|| bad(at, format!("bad cookie `{cookie}`")))?;
    Ok(Flow {
        table,
        priority,
        matches: rest,
        actions: actions.to_string(),
        cookie,
    })
}

/// Reads `group_id=G,type=T[,rest]`.
pub fn parse_group_line(line: &str, at: &str) -> Result<Group, TextError> {
    let rest = line
        .strip_prefix("group_id=")
        .ok_or_else(|| bad(at, "a group line starts with `group_id=`"))?;
    let (id, rest) = rest.split_once(',').unwrap_or((rest, ""));
    let id: u32 = id
        .parse()
        .map_err(|_| bad(at, format!("group_id `{id}` is not a number")))?;
    let rest = rest
        .strip_prefix("type=")
        .ok_or_else(|| bad(at, "expected `type=` after the group id"))?;
    let (kind, buckets) = rest.split_once(',').unwrap_or((rest, ""));
    Ok(Group {
        id,
        kind: kind.to_string(),
        buckets: buckets.to_string(),
    })
}

/// Decimal or `0x` hex.
pub fn parse_u64(s: &str) -> Option<u64> {
    match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}
