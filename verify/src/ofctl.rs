//! ovs-ofctl text → structured matches and actions.
//!
//! Expects the text forms of specs/targets.md §3 (`ovs-fields(7)`,
//! `ovs-actions(7)`): the exact strings `netc compile` writes and the OVS
//! target pushes. Guarantees: every field and action the verifier models is
//! parsed exactly; anything else is an [`OfctlError`] naming the token (the
//! verifier refuses what it cannot model rather than guess).

use crate::space::{Field, ETH_ARP, ETH_IP};

/// One `field=value/mask` constraint of a match.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Constraint {
    pub field: Field,
    pub value: u128,
    pub mask: u128,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Nat {
    /// `nat(src=A:lo-hi)`: source NAT to address A, ports lo..=hi.
    Src { addr: u32, lo: u16, hi: u16 },
    /// `nat` without arguments: reverse the connection's NAT.
    Reverse,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    Drop,
    Resubmit(u8),
    Set(Field, u128),
    Move { src: Field, dst: Field },
    Output(u32),
    InPort,
    Group(u32),
    Ct { table: Option<u8>, nat: Option<Nat> },
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} in `{text}`")]
pub struct OfctlError {
    pub text: String,
    pub message: String,
}

fn err(text: &str, message: impl Into<String>) -> OfctlError {
    OfctlError {
        text: text.to_string(),
        message: message.into(),
    }
}

/// Splits on commas outside parentheses.
pub fn split_top(s: &str) -> Vec<&str> {
    let (mut out, mut depth, mut start) = (Vec::new(), 0i32, 0);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(s[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(s[start..].trim());
    out.retain(|t| !t.is_empty());
    out
}

fn parse_num(t: &str) -> Option<u128> {
    if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u128::from_str_radix(h, 16).ok()
    } else {
        t.parse().ok()
    }
}

pub fn parse_ip(t: &str) -> Option<u32> {
    t.parse::<std::net::Ipv4Addr>().ok().map(u32::from)
}

pub fn parse_mac(t: &str) -> Option<u64> {
    let parts: Vec<&str> = t.split(':').collect();
    if parts.len() != 6 {
        return None;
    }
    let mut m = 0u64;
    for p in parts {
        m = (m << 8) | u64::from_str_radix(p, 16).ok()?;
    }
    Some(m)
}

/// Parses one value (no mask) of `field`.
pub fn parse_value(field: Field, t: &str) -> Option<u128> {
    match field.width() {
        32 if t.contains('.') => parse_ip(t).map(u128::from),
        48 => parse_mac(t).map(u128::from).or_else(|| parse_num(t)),
        _ => parse_num(t),
    }
    .filter(|v| *v <= field.mask())
}

fn parse_masked(field: Field, t: &str) -> Option<(u128, u128)> {
    let full = field.mask();
    match t.split_once('/') {
        None => Some((parse_value(field, t)?, full)),
        Some((v, m)) => {
            let v = parse_value(field, v)?;
            let m = if field.width() == 32 && !m.contains('.') && !m.starts_with("0x") {
                let len: u32 = m.parse().ok().filter(|l| *l <= 32)?;
                if len == 0 {
                    0
                } else {
                    (full << (32 - len)) & full
                }
            } else {
                parse_value(field, m)?
            };
            Some((v & m, m))
        }
    }
}

fn ct_flags(t: &str) -> Option<(u128, u128)> {
    let (mut v, mut m) = (0u128, 0u128);
    let mut rest = t;
    while !rest.is_empty() {
        let on = match rest.as_bytes()[0] {
            b'+' => true,
            b'-' => false,
            _ => return None,
        };
        rest = &rest[1..];
        let end = rest.find(['+', '-']).unwrap_or(rest.len());
        let bit = match &rest[..end] {
            "new" => 0x01,
            "est" => 0x02,
            "rel" => 0x04,
            "rpl" => 0x08,
            "inv" => 0x10,
            "trk" => 0x20,
            "snat" => 0x40,
            "dnat" => 0x80,
            _ => return None,
        };
        m |= bit;
        if on {
            v |= bit;
        }
        rest = &rest[end..];
    }
    Some((v, m))
}

/// Parses a match (`ip,reg6=5001,nw_dst=10.1.1.11`); empty = match all.
pub fn parse_match(text: &str) -> Result<Vec<Constraint>, OfctlError> {
    let mut out = Vec::new();
    let mut push = |field, value, mask| {
        out.push(Constraint { field, value, mask });
    };
    for tok in split_top(text) {
        match tok {
            "ip" => push(Field::DlType, ETH_IP, 0xffff),
            "arp" => push(Field::DlType, ETH_ARP, 0xffff),
            "tcp" | "udp" | "icmp" => {
                push(Field::DlType, ETH_IP, 0xffff);
                let p = match tok {
                    "tcp" => 6,
                    "udp" => 17,
                    _ => 1,
                };
                push(Field::NwProto, p, 0xff);
            }
            _ => {
                let (name, val) = tok
                    .split_once('=')
                    .ok_or_else(|| err(text, format!("unknown match keyword `{tok}`")))?;
                let field = Field::parse(name)
                    .ok_or_else(|| err(text, format!("unmodelled match field `{name}`")))?;
                let (v, m) = if field == Field::CtState {
                    ct_flags(val)
                } else {
                    parse_masked(field, val)
                }
                .ok_or_else(|| err(text, format!("bad value `{val}` for `{name}`")))?;
                push(field, v, m);
            }
        }
    }
    Ok(out)
}

fn full_field(t: &str) -> Option<Field> {
    Field::parse(t.strip_suffix("[]")?)
}

/// Parses an action list.
pub fn parse_actions(text: &str) -> Result<Vec<Action>, OfctlError> {
    let mut out = Vec::new();
    for tok in split_top(text) {
        let a = parse_action(tok).ok_or_else(|| err(text, format!("unmodelled action `{tok}`")))?;
        out.push(a);
    }
    Ok(out)
}

fn parse_action(tok: &str) -> Option<Action> {
    if tok == "drop" {
        return Some(Action::Drop);
    }
    if tok == "IN_PORT" || tok == "in_port" || tok == "output:IN_PORT" {
        return Some(Action::InPort);
    }
    if let Some(r) = tok
        .strip_prefix("resubmit(")
        .and_then(|r| r.strip_suffix(')'))
    {
        let (_, t) = r.split_once(',')?;
        return Some(Action::Resubmit(t.trim().parse().ok()?));
    }
    if let Some(p) = tok.strip_prefix("output:") {
        return Some(Action::Output(p.parse().ok()?));
    }
    if let Some(g) = tok.strip_prefix("group:") {
        return Some(Action::Group(g.parse().ok()?));
    }
    if let Some(r) = tok.strip_prefix("load:") {
        let (v, dst) = r.split_once("->")?;
        let f = full_field(dst)?;
        return Some(Action::Set(f, parse_value(f, v)?));
    }
    if let Some(r) = tok.strip_prefix("set_field:") {
        let (v, dst) = r.split_once("->")?;
        let f = Field::parse(dst)?;
        return Some(Action::Set(f, parse_value(f, v)?));
    }
    if let Some(r) = tok.strip_prefix("move:") {
        let (src, dst) = r.split_once("->")?;
        return Some(Action::Move {
            src: full_field(src)?,
            dst: full_field(dst)?,
        });
    }
    for (p, f) in [
        ("mod_dl_src:", Field::DlSrc),
        ("mod_dl_dst:", Field::DlDst),
        ("mod_nw_src:", Field::NwSrc),
        ("mod_nw_dst:", Field::NwDst),
        ("mod_tp_src:", Field::TpSrc),
        ("mod_tp_dst:", Field::TpDst),
    ] {
        if let Some(v) = tok.strip_prefix(p) {
            return Some(Action::Set(f, parse_value(f, v)?));
        }
    }
    if let Some(r) = tok.strip_prefix("ct(").and_then(|r| r.strip_suffix(')')) {
        let (mut table, mut nat) = (None, None);
        for a in split_top(r) {
            if a == "commit" || a.starts_with("zone=") {
                continue;
            } else if let Some(t) = a.strip_prefix("table=") {
                table = Some(t.parse().ok()?);
            } else if a == "nat" {
                nat = Some(Nat::Reverse);
            } else if let Some(n) = a.strip_prefix("nat(src=").and_then(|n| n.strip_suffix(')')) {
                let (addr, ports) = n.split_once(':')?;
                let (lo, hi) = ports.split_once('-')?;
                nat = Some(Nat::Src {
                    addr: parse_ip(addr)?,
                    lo: lo.parse().ok()?,
                    hi: hi.parse().ok()?,
                });
            } else {
                return None;
            }
        }
        return Some(Action::Ct { table, nat });
    }
    None
}

/// Parses a group's bucket list (`bucket=…,bucket=…`; empty = no buckets).
/// Group properties before the first bucket (`selection_method=hash`,
/// `fields(...)`) and bucket properties (`weight:N`, `bucket_id:N`,
/// `actions=`) do not change which buckets exist: they are skipped (a
/// `select` group is modelled as "any bucket").
pub fn parse_buckets(text: &str) -> Result<Vec<Vec<Action>>, OfctlError> {
    let mut out = Vec::new();
    for (i, part) in text.split("bucket=").map(str::trim).enumerate() {
        let part = part.trim_end_matches(',').trim();
        if i == 0 {
            for p in split_top(part) {
                if !(p.starts_with("selection_method=")
                    || p.starts_with("fields(")
                    || p.starts_with("selection_method_param="))
                {
                    return Err(err(text, format!("unmodelled group property `{p}`")));
                }
            }
            continue;
        }
        let acts = match part.split_once("actions=") {
            Some((props, acts)) => {
                for p in split_top(props) {
                    if !(p.starts_with("weight:")
                        || p.starts_with("bucket_id:")
                        || p.starts_with("watch_port:"))
                    {
                        return Err(err(text, format!("unmodelled bucket property `{p}`")));
                    }
                }
                acts
            }
            None => part,
        };
        out.push(parse_actions(acts)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches() {
        let m = parse_match("ip,reg6=5001,nw_src=10.1.0.0/16,tp_dst=1024/0xfff8").unwrap();
        assert_eq!(m.len(), 4);
        assert_eq!(m[2].mask, 0xffff_0000);
        assert_eq!(m[3].value, 1024);
        assert_eq!(m[3].mask, 0xfff8);
        assert!(parse_match("vlan_tci=1").is_err());
        let c = parse_match("ct_state=+trk+est").unwrap();
        assert_eq!((c[0].value, c[0].mask), (0x22, 0x22));
    }

    #[test]
    fn actions() {
        let a = parse_actions(
            "ct(commit,table=31,zone=6001,nat(src=131.107.0.99:1024-1031)),group:1000,set_field:5001->tun_id,load:10->NXM_NX_REG7[],move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[],IN_PORT,resubmit(,40)",
        )
        .unwrap();
        assert_eq!(a.len(), 7);
        assert!(matches!(
            a[0],
            Action::Ct {
                table: Some(31),
                nat: Some(Nat::Src {
                    lo: 1024,
                    hi: 1031,
                    ..
                })
            }
        ));
        assert_eq!(a[2], Action::Set(Field::TunId, 5001));
        assert_eq!(a[6], Action::Resubmit(40));
        assert!(parse_actions("learn(table=1)").is_err());
        let b = parse_buckets("bucket=output:10,bucket=output:11").unwrap();
        assert_eq!(b, vec![vec![Action::Output(10)], vec![Action::Output(11)]]);
        let s = parse_buckets("selection_method=hash,fields(ip_src,ip_dst,nw_proto,tcp_src,tcp_dst),bucket=weight:1,actions=mod_dl_dst:02:00:00:00:01:01,resubmit(,40),bucket=weight:2,actions=output:1").unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0][1], Action::Resubmit(40));
        assert!(parse_buckets("bucket=output:1").unwrap().len() == 1);
        assert!(parse_buckets("foo=1,bucket=output:1").is_err());
    }
}
