//! How every command talks to the person or program that ran it: `--json`
//! mode, errors as JSON, progress bars, and the `--help` epilogue.
//!
//! The rule (also in every command's `--help`, via [`after_help!`]): with
//! `--json`, stdout carries only JSON — one document, or JSON lines for the
//! commands that stream (`run --updates`, `repl`, `serve`) — and a failure
//! is a JSON document `{"error": {"exit": N, "message": ..., ...}}` on stdout
//! too, printed once at the edge (`Outcome::exit`) with the real exit code:
//! a command only *holds* what its failure found (diagnostics, findings),
//! and nothing is added after a command printed its own JSON answer
//! ([`emit`]). Human-readable messages still go to stderr. Without `--json`, results go to
//! stdout as text and errors to stderr. Progress bars are drawn on stderr
//! only when stderr is a terminal and `--json` is off; colour only when the
//! stream is a terminal and `NO_COLOR` is unset.

use netc_compiler::source::SourceMap;
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

static JSON: AtomicBool = AtomicBool::new(false);
/// Whether a JSON document was printed: a failure after one adds none.
static EMITTED: AtomicBool = AtomicBool::new(false);
/// What a failure found (diagnostics, findings), held until the edge knows
/// the exit code and prints the one failure document ([`failure`]).
static HELD: Mutex<Option<Held>> = Mutex::new(None);
/// The spinner being drawn, so text for people can clear it first
/// ([`clear_progress`]) instead of being drawn over.
static SPINNER: Mutex<Option<indicatif::ProgressBar>> = Mutex::new(None);

struct Held {
    message: String,
    /// Where the items go (`diagnostics`, `findings`); none for a message alone.
    items: Option<(&'static str, Vec<serde_json::Value>)>,
    /// What to do about it, when the failure says (the edge's own hint wins).
    hint: Option<String>,
}

/// Switches the whole process to `--json` output (set once, by `main`).
pub fn set_json(on: bool) {
    JSON.store(on, Ordering::Relaxed);
}

/// Whether `--json` was given.
pub fn json() -> bool {
    JSON.load(Ordering::Relaxed)
}

/// Prints one JSON document on stdout (a `Value` prints as one line; a
/// command may pass its own rendering, e.g. pretty-printed).
pub fn emit(doc: impl std::fmt::Display) {
    EMITTED.store(true, Ordering::Relaxed);
    // a closed pipe (`| head`) is not worth a panic
    let _ = writeln!(std::io::stdout().lock(), "{doc}");
}

/// Whether [`emit`] printed anything yet.
pub fn emitted() -> bool {
    EMITTED.load(Ordering::Relaxed)
}

/// Keeps what a failure found for the failure document, in `--json` mode:
/// `key` (`diagnostics`, `findings`) is a list of items.
fn hold(message: String, items: Option<(&'static str, Vec<serde_json::Value>)>) {
    if json() {
        if let Ok(mut h) = HELD.lock() {
            *h = Some(Held {
                message,
                items,
                hint: None,
            });
        }
    }
}

/// The one failure document of the `--json` rule, made at the edge once the
/// exit code is known: `{"error": {"exit", "message", "hint"[, diagnostics |
/// findings]}}`. `message` is the edge's own (an input error's); without
/// one, what was held; with neither there is nothing to say (`None`: the
/// command printed its own JSON answer, e.g. a verification report).
pub fn failure(exit: u8, message: Option<&str>, hint: Option<&str>) -> Option<serde_json::Value> {
    let held = HELD.lock().ok().and_then(|mut h| h.take());
    let message = match (message, &held) {
        (Some(m), _) => m.to_string(),
        (None, Some(h)) => h.message.clone(),
        (None, None) => return None,
    };
    let hint = hint
        .map(str::to_string)
        .or_else(|| held.as_ref().and_then(|h| h.hint.clone()));
    let mut error = serde_json::json!({"exit": exit, "message": message, "hint": hint});
    if let Some((key, items)) = held.and_then(|h| h.items) {
        error[key] = serde_json::Value::Array(items);
    }
    Some(serde_json::json!({ "error": error }))
}

/// Holds a compilation's errors for the failure document.
pub fn hold_diagnostics(c: &netc_compiler::Compilation) {
    if !json() {
        return;
    }
    let items = c
        .diagnostics
        .sorted()
        .into_iter()
        .map(|d| {
            serde_json::json!({
                "severity": if d.is_error() { "error" } else { "warning" },
                "code": d.code,
                "message": d.message,
                "at": d.span.map(|s| c.sources.location(s)),
                "hint": d.hint,
            })
        })
        .collect();
    let n = c.diagnostics.error_count();
    hold(
        format!("{n} error(s) in the program"),
        Some(("diagnostics", items)),
    );
}

/// Holds bad intent (`error_*` rows) for the failure document: each finding
/// with its fields and the `file:line:col` of the facts it cites.
pub fn hold_findings(findings: &[crate::intent::findings::Finding], sources: &SourceMap) {
    if !json() {
        return;
    }
    let items = findings
        .iter()
        .map(|f| {
            let fields: serde_json::Map<String, serde_json::Value> = f
                .fields
                .iter()
                .map(|(n, v)| (n.clone(), crate::io::updates::format_value(v).into()))
                .collect();
            serde_json::json!({
                "kind": f.kind,
                "fields": fields,
                "cited": f.cited.iter().map(|s| sources.location(*s)).collect::<Vec<_>>(),
            })
        })
        .collect();
    let n = findings.len();
    hold(
        format!("{n} problem(s) in the intent"),
        Some(("findings", items)),
    );
}

/// Adds a hint to what is held (`netc check` of intent without `--intent`).
pub fn hold_hint(hint: &str) {
    if !json() {
        return;
    }
    if let Ok(mut h) = HELD.lock() {
        if let Some(h) = h.as_mut() {
            h.hint = Some(hint.to_string());
        }
    }
}

/// Holds a failure that has only a message (a render error, a device).
pub fn hold_message(message: &str) {
    hold(message.to_string(), None);
}

/// Colours for a terminal: none when the stream is not one or `NO_COLOR`
/// is set (https://no-color.org).
pub struct Paint {
    on: bool,
}

impl Paint {
    pub fn stdout() -> Paint {
        Paint::when(std::io::stdout().is_terminal())
    }
    pub fn stderr() -> Paint {
        Paint::when(std::io::stderr().is_terminal())
    }
    fn when(terminal: bool) -> Paint {
        Paint {
            on: terminal && std::env::var_os("NO_COLOR").is_none(),
        }
    }
    fn wrap(&self, code: &str, s: &str) -> String {
        if self.on {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
    pub fn green(&self, s: &str) -> String {
        self.wrap("32", s)
    }
    pub fn red(&self, s: &str) -> String {
        self.wrap("31", s)
    }
    pub fn bold(&self, s: &str) -> String {
        self.wrap("1", s)
    }
}

/// Whether progress may be drawn: stderr is a terminal and `--json` is off.
fn animate() -> bool {
    !json() && std::io::stderr().is_terminal()
}

/// A bar on stderr over `len` steps (`{label} [bar] pos/len msg`), or
/// `None` when progress must not be drawn.
pub fn bar(len: usize, label: &str) -> Option<indicatif::ProgressBar> {
    if !animate() || len < 2 {
        return None;
    }
    let b = indicatif::ProgressBar::new(len as u64);
    let template = format!("{label} {{bar:30}} {{pos}}/{{len}} {{msg}}");
    if let Ok(style) = indicatif::ProgressStyle::with_template(&template) {
        b.set_style(style);
    }
    Some(b)
}

/// A spinner on stderr naming the current stage of a long step (`set` it
/// as stages change), or nothing when progress must not be drawn. It is
/// cleared when dropped.
pub struct Stages(Option<indicatif::ProgressBar>);

impl Stages {
    pub fn start(label: &str, first: &str) -> Stages {
        if !animate() {
            return Stages(None);
        }
        let s = indicatif::ProgressBar::new_spinner();
        if let Ok(style) = indicatif::ProgressStyle::with_template(&format!(
            "{{spinner}} {label}: {{msg}} ({{elapsed}})"
        )) {
            s.set_style(style);
        }
        s.set_message(first.to_string());
        s.enable_steady_tick(Duration::from_millis(120));
        if let Ok(mut current) = SPINNER.lock() {
            *current = Some(s.clone());
        }
        Stages(Some(s))
    }

    pub fn set(&self, stage: &str) {
        if let Some(s) = &self.0 {
            s.set_message(stage.to_string());
        }
    }
}

impl Drop for Stages {
    fn drop(&mut self) {
        if self.0.is_some() {
            clear_progress();
        }
    }
}

/// Clears the spinner (if one is drawn) before text for people goes to
/// stderr: diagnostics, findings, an error.
pub fn clear_progress() {
    if let Some(s) = SPINNER.lock().ok().and_then(|mut c| c.take()) {
        s.finish_and_clear();
    }
}

/// The epilogue of a subcommand's `--help`: its own text, an example, the
/// exit codes (0, 1, 2 mean the same kind of thing for every command:
/// success · the input was understood and the answer is "no" or has errors ·
/// usage, input, state or I/O error), and the `--json` rule.
#[macro_export]
macro_rules! after_help {
    ($text:expr, example: $example:expr, exit0: $ok:expr, exit1: $no:expr, exit2: $bad:expr $(,)?) => {
        concat!(
            $text,
            "\n\nExample:\n",
            $example,
            "\n\nExit codes:\n  0  ",
            $ok,
            "\n  1  ",
            $no,
            "\n  2  ",
            $bad,
            "\n  101  internal error (a bug in netc; please report it)\n\n",
            "--json: stdout carries only JSON (one document; JSON lines for streams); a failure is\n",
            "{\"error\": {\"exit\": N, \"message\": ...}} on stdout; messages for people stay on stderr.\n",
            "Colour only on a terminal with NO_COLOR unset; progress bars on stderr only on a terminal."
        )
    };
}
