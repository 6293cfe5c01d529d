//! What a bridge holds, read from `ovs-ofctl dump-flows` / `dump-groups`.
//!
//! Expects: the text `ovs-ofctl -O OpenFlow15 --no-stats dump-flows` and
//! `ovs-ofctl -O OpenFlow15 dump-groups` print (OVS 3.x). Guarantees: every
//! flow line yields its cookie, table and priority (a flow without a
//! `cookie=` has cookie 0); every group line its id; the group *markers*
//! (see [`MARKER_TABLE`]) are returned separately, by group id. OVS
//! rewrites flow texts (`mod_dl_dst` → `set_field:…->eth_dst`, decimals →
//! hex, `ip,nw_proto=6` → `tcp`), so a dumped flow is compared with an
//! intended one in OVS's own spelling: [`canonical_seen`] of the dump line
//! against [`canonical_parsed`] of what `ovs-ofctl parse-flows` prints for
//! the intended line (the same printer, after the same OpenFlow 1.5
//! encoding) — equal texts, same match, priority and actions.

use super::text::{flow_cookie, parse_u64, Group};
use std::collections::{BTreeMap, BTreeSet};

/// A table no packet ever reaches (no flow resubmits to it) that holds one
/// marker flow per installed group: `table=253,priority=1,metadata=<id>,
/// actions=drop`, cookie = [`group_marker_cookie`] of the group's text. OVS
/// groups have no cookie; the marker gives them one, installed in the same
/// bundle as the group, so a reconcile knows which version of every group
/// the bridge holds without re-parsing OVS's rewritten bucket text.
pub const MARKER_TABLE: u8 = 253;
/// The concern byte of marker cookies.
pub const MARKER_CONCERN: u8 = 0xfe;

/// Cookie of the marker of a group: the group's line hashed like a flow.
pub fn group_marker_cookie(g: &Group) -> u64 {
    flow_cookie(
        MARKER_CONCERN,
        MARKER_TABLE,
        1,
        &g.id.to_string(),
        &g.line(),
    )
}

/// The marker flow's match for group `id`.
pub fn marker_match(id: u32) -> String {
    format!("metadata={id}")
}

/// One flow as the bridge reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeenFlow {
    pub cookie: u64,
    pub table: u8,
    pub priority: u16,
    /// The line as OVS printed it (for messages).
    pub text: String,
}

/// What one bridge holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Observed {
    /// Non-marker flows, by cookie (several flows may share a foreign cookie).
    pub flows: BTreeMap<u64, Vec<SeenFlow>>,
    /// Group id → cookie of its marker flow.
    pub markers: BTreeMap<u32, u64>,
    /// Installed group ids.
    pub groups: BTreeSet<u32>,
    /// Installed groups' content fingerprints ([`fingerprint`]), by id.
    pub group_prints: BTreeMap<u32, String>,
    /// Installed groups' lines as OVS printed them (for messages), by id.
    pub group_lines: BTreeMap<u32, String>,
}

impl Observed {
    /// Number of non-marker flows.
    pub fn flow_count(&self) -> usize {
        self.flows.values().map(Vec::len).sum()
    }
}

/// Why a dump could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("cannot read `ovs-ofctl {what}` line {line}: `{text}`")]
pub struct DumpError {
    pub what: &'static str,
    pub line: usize,
    pub text: String,
}

/// Parses `dump-flows` output into `obs` (flows and markers).
pub fn parse_flows(text: &str, obs: &mut Observed) -> Result<(), DumpError> {
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with("OFPST_") || line.starts_with("NXST_") {
            continue;
        }
        let err = || DumpError {
            what: "dump-flows",
            line: i + 1,
            text: line.to_string(),
        };
        let head = line.split(" actions=").next().unwrap_or(line);
        let (mut cookie, mut table, mut priority) = (0u64, 0u8, 32768u16);
        let mut metadata = None;
        for tok in head.split([',', ' ']).filter(|t| !t.is_empty()) {
            if let Some(v) = tok.strip_prefix("cookie=") {
                cookie = parse_u64(v).ok_or_else(err)?;
            } else if let Some(v) = tok.strip_prefix("table=") {
                table = v.parse().map_err(|_| err())?;
            } else if let Some(v) = tok.strip_prefix("priority=") {
                priority = v.parse().map_err(|_| err())?;
            } else if let Some(v) = tok.strip_prefix("metadata=") {
                metadata = parse_u64(v);
            }
        }
        if table == MARKER_TABLE && (cookie >> 56) as u8 == MARKER_CONCERN {
            if let Some(id) = metadata.and_then(|m| u32::try_from(m).ok()) {
                obs.markers.insert(id, cookie);
                continue;
            }
        }
        obs.flows.entry(cookie).or_default().push(SeenFlow {
            cookie,
            table,
            priority,
            text: line.to_string(),
        });
    }
    Ok(())
}

/// Parses `dump-groups` output into `obs.groups`.
pub fn parse_groups(text: &str, obs: &mut Observed) -> Result<(), DumpError> {
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with("OFPST_") || line.starts_with("NXST_") {
            continue;
        }
        let id = line
            .strip_prefix("group_id=")
            .and_then(|r| r.split(',').next())
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| DumpError {
                what: "dump-groups",
                line: i + 1,
                text: line.to_string(),
            })?;
        obs.groups.insert(id);
        obs.group_prints.insert(id, fingerprint_line(line));
        obs.group_lines.insert(id, line.to_string());
    }
    Ok(())
}

/// The fingerprint of a group line as OVS prints it (`group_id=..,type=..,...`).
pub fn fingerprint_line(line: &str) -> String {
    let rest = line.split_once(',').map_or("", |x| x.1);
    let rest = rest.strip_prefix("type=").unwrap_or(rest);
    let (kind, buckets) = rest.split_once(',').unwrap_or((rest, ""));
    fingerprint(kind, buckets)
}

/// What a group does, in a form both netc's text and OVS's dump reduce to:
/// the type, then per bucket its weight (if not 1) and actions, with
/// `mod_dl_dst:M` / `set_field:V->F` written as `F=V` (numbers in decimal),
/// `bucket_id` and the selection method dropped. Detects a group edited
/// behind netc's back (a bucket lost, another port, another tunnel end).
pub fn fingerprint(kind: &str, buckets: &str) -> String {
    let mut out = vec![kind.to_string()];
    for b in buckets.split("bucket=").skip(1) {
        let mut toks = Vec::new();
        for a in b.trim_end_matches(',').split(',') {
            let a = a.strip_prefix("actions=").unwrap_or(a);
            if a.is_empty() || a.starts_with("bucket_id:") || a == "weight:1" {
                continue;
            }
            let t = if let Some(m) = a.strip_prefix("mod_dl_dst:") {
                format!("eth_dst={m}")
            } else if let Some(m) = a.strip_prefix("mod_dl_src:") {
                format!("eth_src={m}")
            } else if let Some((v, f)) = a
                .strip_prefix("set_field:")
                .and_then(|x| x.split_once("->"))
            {
                let v = parse_u64(v).map_or(v.to_string(), |n| n.to_string());
                format!("{f}={v}")
            } else {
                a.to_string()
            };
            toks.push(t);
        }
        out.push(toks.join(","));
    }
    out.join("|")
}

/// A dumped flow (`cookie=C, table=T, priority=P,MATCH actions=A`) as
/// `table=T priority=P,MATCH actions=A`: what it does, without its cookie.
pub fn canonical_seen(line: &str) -> String {
    let (head, actions) = line.trim().split_once(" actions=").unwrap_or((line, ""));
    let mut table = "0";
    let mut rest = Vec::new();
    for part in head.split(", ") {
        if part.starts_with("cookie=") {
            continue;
        } else if let Some(t) = part.strip_prefix("table=") {
            table = t;
        } else {
            rest.push(part);
        }
    }
    format!("table={table} {} actions={actions}", rest.join(", "))
}

/// One line `ovs-ofctl parse-flows` prints for a flow (`OFPT_FLOW_MOD
/// (OF1.5) (xid=…): ADD [table:T ]priority=P,MATCH cookie:C actions=A`) as
/// (C, [`canonical_seen`]'s form); `None` for its other lines.
pub fn canonical_parsed(line: &str) -> Option<(u64, String)> {
    let rest = line.split_once("): ADD ")?.1;
    let (table, rest) = match rest.strip_prefix("table:") {
        Some(r) => r.split_once(' ')?,
        None => ("0", rest),
    };
    let (body, after) = rest.split_once(" cookie:")?;
    let (cookie, actions) = after.split_once(" actions=")?;
    let cookie = parse_u64(cookie.trim())?;
    Some((cookie, format!("table={table} {body} actions={actions}")))
}
