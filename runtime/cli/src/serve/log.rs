//! What the daemon tells its operator: one line per event.
//!
//! With `--json` every event is one JSON object on stdout
//! (`{"event": "...", "time": UNIX_SECONDS, ...fields}`), so a supervisor or
//! a test reads the URL and pid of the startup line and each request's
//! status without parsing prose; otherwise a short human line on stderr.
//! Events: `listening` (url, pid, token_file, state, generation, push,
//! version), `request` (method, path, status, code, millis) and `applied`
//! (generation, committed, devices_changed, pushed, forced).

use serde_json::{json, Value as Json};
use std::io::Write;

/// Where events go.
#[derive(Clone, Copy, Debug)]
pub struct Log {
    pub json: bool,
}

impl Log {
    /// Writes one event; `fields` is a JSON object.
    pub fn event(&self, event: &str, fields: Json) {
        if self.json {
            let mut line = json!({"event": event, "time": now()});
            if let (Some(l), Some(f)) = (line.as_object_mut(), fields.as_object()) {
                l.extend(f.clone());
            }
            // One locked write per line: lines of request threads never interleave.
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{line}");
            let _ = out.flush();
        } else {
            let text = human(event, &fields);
            let mut err = std::io::stderr().lock();
            let _ = writeln!(err, "netc serve: {text}");
            let _ = err.flush();
        }
    }
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn human(event: &str, f: &Json) -> String {
    let s = |k: &str| match &f[k] {
        Json::String(s) => s.clone(),
        Json::Null => "-".into(),
        other => other.to_string(),
    };
    match event {
        "listening" => format!(
            "listening on {} (generation {}, state {}, push {}, pid {})",
            s("url"),
            s("generation"),
            s("state"),
            s("push"),
            s("pid")
        ),
        "request" => format!(
            "{} {} -> {}{} ({} ms)",
            s("method"),
            s("path"),
            s("status"),
            f["code"]
                .as_str()
                .map_or(String::new(), |c| format!(" {c}")),
            s("millis")
        ),
        "applied" => format!(
            "generation {} ({}), {} device(s) changed, {} pushed{}",
            s("generation"),
            if f["committed"] == json!(true) {
                "committed"
            } else {
                "unchanged"
            },
            s("devices_changed"),
            s("pushed"),
            if f["forced"] == json!(true) {
                ", forced"
            } else {
                ""
            }
        ),
        other => format!("{other} {f}"),
    }
}
