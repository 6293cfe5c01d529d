//! Reporting DIP health as facts: a `dip_health` intent file.
//!
//! Guarantees: the file holds one `dip_health(tenant, vm, proto,
//! target_port, "up"|"down").` fact per probed endpoint, sorted, and is
//! replaced atomically (write to a sibling, then rename), so `netc compile`
//! reading it as an intent file never sees a half-written report.

use super::doc::Probe;
use super::probe::Status;
use std::path::Path;

fn quote(s: &str) -> String {
    let mut q = String::with_capacity(s.len() + 2);
    q.push('"');
    for c in s.chars() {
        match c {
            '"' => q.push_str("\\\""),
            '\\' => q.push_str("\\\\"),
            '\n' => q.push_str("\\n"),
            c => q.push(c),
        }
    }
    q.push('"');
    q
}

/// The facts text.
pub fn facts(host: &str, statuses: &[(&Probe, Status)]) -> String {
    let mut s =
        format!("// dip_health reported by the netc agent of host {host} (TCP connect probes).\n");
    for (p, st) in statuses {
        s.push_str(&format!(
            "dip_health({}, {}, {}, {}, \"{}\").\n",
            quote(&p.tenant),
            quote(&p.vm),
            p.proto,
            p.target_port,
            st.as_str()
        ));
    }
    s
}

/// Replaces `path` with `text` atomically.
pub fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}
