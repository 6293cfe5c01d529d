//! Updates → a P4Runtime `WriteRequest` in protobuf text format.
//!
//! Expects: updates in the order they must be applied (see `delta`).
//! Guarantees: the text is exactly what `google.protobuf.text_format.
//! MessageToString` prints for the same message (fields in field-number
//! order, two-space indent, bytes C-escaped with octal), after the leading
//! `#` comment lines; values are P4Runtime canonical bytestrings (the
//! shortest big-endian form, zero as one byte). `device_id` and
//! `election_id` are left out: the client fills them when it sends.

use super::delta::{Update, UpdateKind};
use super::entries::{ActionCall, Entity, Match, Target};
use std::fmt::Write;

/// The canonical P4Runtime bytestring of an unsigned value.
pub fn canonical_bytes(v: u128) -> Vec<u8> {
    let bytes = v.to_be_bytes();
    let first = bytes.iter().position(|b| *b != 0).unwrap_or(15);
    bytes[first..].to_vec()
}

/// C-escapes bytes as protobuf's text format does.
fn escape(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 4 + 2);
    s.push('"');
    for &b in bytes {
        match b {
            b'\n' => s.push_str("\\n"),
            b'\r' => s.push_str("\\r"),
            b'\t' => s.push_str("\\t"),
            b'"' => s.push_str("\\\""),
            b'\'' => s.push_str("\\'"),
            b'\\' => s.push_str("\\\\"),
            0x20..=0x7e => s.push(b as char),
            _ => {
                let _ = write!(s, "\\{b:03o}");
            }
        }
    }
    s.push('"');
    s
}

struct Out {
    s: String,
    depth: usize,
}

impl Out {
    fn line(&mut self, text: &str) {
        for _ in 0..self.depth {
            self.s.push_str("  ");
        }
        self.s.push_str(text);
        self.s.push('\n');
    }
    fn open(&mut self, name: &str) {
        self.line(&format!("{name} {{"));
        self.depth += 1;
    }
    fn close(&mut self) {
        self.depth -= 1;
        self.line("}");
    }
    fn bytes(&mut self, name: &str, v: u128) {
        self.line(&format!("{name}: {}", escape(&canonical_bytes(v))));
    }
    fn uint(&mut self, name: &str, v: u64) {
        if v != 0 {
            self.line(&format!("{name}: {v}"));
        }
    }
}

fn action(o: &mut Out, a: &ActionCall) {
    o.open("action");
    o.uint("action_id", a.spec.id as u64);
    for (p, v) in a.spec.params.iter().zip(&a.args) {
        o.open("params");
        o.uint("param_id", p.id as u64);
        o.bytes("value", *v);
        o.close();
    }
    o.close();
}

fn entity(o: &mut Out, e: &Entity, key_only: bool) {
    o.open("entity");
    match e {
        Entity::Table(t) => {
            o.open("table_entry");
            o.uint("table_id", t.table.id as u64);
            for (fid, m) in &t.matches {
                o.open("match");
                o.uint("field_id", *fid as u64);
                match m {
                    Match::Exact(v) => {
                        o.open("exact");
                        o.bytes("value", *v);
                    }
                    Match::Lpm(v, len) => {
                        o.open("lpm");
                        o.bytes("value", *v);
                        o.uint("prefix_len", *len as u64);
                    }
                    Match::Ternary(v, mask) => {
                        o.open("ternary");
                        o.bytes("value", *v);
                        o.bytes("mask", *mask);
                    }
                    Match::Range(lo, hi) => {
                        o.open("range");
                        o.bytes("low", *lo);
                        o.bytes("high", *hi);
                    }
                }
                o.close();
                o.close();
            }
            if !key_only {
                match &t.target {
                    Target::Action(a) => {
                        o.open("action");
                        action(o, a);
                        o.close();
                    }
                    Target::Member(id) => {
                        o.open("action");
                        o.uint("action_profile_member_id", *id as u64);
                        o.close();
                    }
                    Target::ResetDefault => {}
                }
            }
            if t.priority != 0 {
                o.line(&format!("priority: {}", t.priority));
            }
            if t.is_default {
                o.line("is_default_action: true");
            }
            o.close();
        }
        Entity::Member(m) => {
            o.open("action_profile_member");
            o.uint("action_profile_id", m.profile.id as u64);
            o.uint("member_id", m.id as u64);
            if !key_only {
                action(o, &m.action);
            }
            o.close();
        }
        Entity::Mcast(g) => {
            o.open("packet_replication_engine_entry");
            o.open("multicast_group_entry");
            o.uint("multicast_group_id", g.id as u64);
            if !key_only {
                for (instance, port) in &g.replicas {
                    o.open("replicas");
                    o.uint("instance", *instance as u64);
                    o.bytes("port", *port as u128);
                    o.close();
                }
            }
            o.close();
            o.close();
        }
    }
    o.close();
}

/// Renders a WriteRequest; `comments` become leading `# ` lines.
pub fn write_request(comments: &[String], updates: &[Update]) -> String {
    let mut o = Out {
        s: String::new(),
        depth: 0,
    };
    for c in comments {
        o.line(&format!("# {c}"));
    }
    for u in updates {
        o.open("updates");
        let kind = match u.kind {
            UpdateKind::Insert => "INSERT",
            UpdateKind::Modify => "MODIFY",
            UpdateKind::Delete => "DELETE",
        };
        o.line(&format!("type: {kind}"));
        entity(&mut o, &u.entity, u.kind == UpdateKind::Delete);
        o.close();
    }
    o.s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_bytes_are_shortest_big_endian() {
        assert_eq!(canonical_bytes(0), vec![0]);
        assert_eq!(canonical_bytes(1), vec![1]);
        assert_eq!(canonical_bytes(0x1389), vec![0x13, 0x89]);
        assert_eq!(canonical_bytes(0x0a00_0001), vec![10, 0, 0, 1]);
    }

    #[test]
    fn escapes_like_protobuf_text_format() {
        assert_eq!(
            escape(&[0, b'\n', b'A', b'"', 0xff]),
            "\"\\000\\nA\\\"\\377\""
        );
    }
}
