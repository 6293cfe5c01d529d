//! `netc repl`: a prompt over a warm session.
//!
//! Map: `mod.rs` (here) reads lines — with rustyline (line editing, history
//! in `STATE/repl_history`, completion of commands and relation names) on a
//! terminal, plain lines otherwise (scripts, tests) — and runs each
//! [`Command`]; `explain.rs` builds derivation trees.
//!
//! Expects: intent files, or a state directory whose last generation it
//! loads, or nothing (the standard rules alone). Guarantees: a mistake in a
//! line (an unknown relation, a value of the wrong type, a bad file) prints
//! an error with a caret at its column and the session goes on unchanged;
//! `:whatif` leaves the session exactly as it was; the exit code is 0 after
//! `:quit` or end of input, 1 when input ended and some line failed (so a
//! script notices), 2 when the session could not start.

pub mod explain;

use std::cell::RefCell;

thread_local! {
    /// With `--json`, the current line's answer is collected here instead of
    /// printed, then printed as one JSON line ([`answer_json`]).
    static CAPTURE: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Prints an answer's text, or collects it in `--json` mode.
fn say_text(text: &str) {
    let printed = CAPTURE.with(|c| match c.borrow_mut().as_mut() {
        Some(buf) => {
            buf.push_str(text);
            true
        }
        None => false,
    });
    if !printed {
        print!("{text}");
    }
}

macro_rules! say {
    ($($arg:tt)*) => { say_text(&format!($($arg)*)) };
}
macro_rules! sayln {
    ($($arg:tt)*) => { say_text(&format!("{}\n", format!($($arg)*))) };
}

use crate::commands::Outcome;
use crate::intent::pattern::{self, show, show_atom};
use crate::intent::warm::{Change, IntentText, Warm};
use std::borrow::Cow;
use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};

/// How deep `:explain` goes.
pub const EXPLAIN_DEPTH: usize = 12;

const COMMANDS: &[&str] = &[
    "?- ",
    ":assert ",
    ":retract ",
    ":whatif ",
    ":explain ",
    ":plan",
    ":relations",
    ":help",
    ":quit",
];

const HELP: &str = "\
?- rel(X, \"const\", _).   rows of rel matching the pattern (variables: upper-case; `_`: anything)
:assert rel(1, \"a\").      insert an intent fact (incremental commit); prints each device's delta
:retract rel(1, \"a\").     delete an intent fact; prints each device's delta
:whatif FILE              the delta and the verifier's verdict if FILE replaced the intent file of
                          the same name (or were added), without applying it
:explain rel(1, \"a\").     the derivation tree down to the intent facts (file:line)
:plan                     re-read the intent files from disk: what would change (nothing applied)
:relations                the relations, with their columns
:help  :quit              this text; leave (Ctrl-D too)
";

pub struct ReplArgs<'a> {
    pub intent: &'a [PathBuf],
    pub state: Option<&'a Path>,
    pub rules: Option<&'a Path>,
    /// Each line's answer as one JSON line on stdout.
    pub json: bool,
}

pub fn run(args: ReplArgs) -> Outcome {
    let dir = args.state.map_or_else(
        || PathBuf::from(crate::store::DEFAULT_DIR),
        Path::to_path_buf,
    );
    let mut w = match start(&args, &dir) {
        Ok(w) => w,
        Err(o) => return o,
    };
    w.keep_verified_in(&crate::rollout::verdict::keep_dir(&dir));
    // --json is for programs: plain lines in, JSON lines out, even on a terminal
    let tty = !args.json && std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    let failed = if tty {
        interactive(&mut w, &dir)
    } else {
        let mut failed = false;
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            let done = if args.json {
                answer_json(&mut w, &line)
            } else {
                step(&mut w, &line)
            };
            match done {
                Step::Quit => break,
                Step::Failed => failed = true,
                Step::Ok => {}
            }
            let _ = std::io::stdout().flush();
        }
        failed
    };
    if failed && !tty {
        Outcome::ProgramErrors
    } else {
        Outcome::Ok
    }
}

fn start(args: &ReplArgs, dir: &Path) -> Result<Warm, Outcome> {
    let bad = |e: crate::intent::warm::WarmError| Outcome::InputError(e.to_string(), None);
    if !args.intent.is_empty() {
        let files = args
            .intent
            .iter()
            .map(|p| IntentText::read(p))
            .collect::<Result<Vec<_>, _>>()
            .map_err(bad)?;
        return Warm::start(files, args.rules).map_err(bad);
    }
    match crate::store::Store::open_existing(dir) {
        Ok(store) => crate::record::recover(
            &store,
            Vec::new(),
            args.rules,
            crate::intent::warm::Includes::Disk,
        )
        .map(|(w, g)| {
            eprintln!("loaded generation {g} from {}", dir.display());
            w
        })
        .map_err(|e| Outcome::InputError(e.to_string(), None)),
        Err(crate::store::StoreError::NoState { .. }) => {
            Warm::start(Vec::new(), args.rules).map_err(bad)
        }
        Err(e) => {
            let hint = e.hint();
            Err(Outcome::InputError(e.to_string(), hint))
        }
    }
}

enum Step {
    Ok,
    Failed,
    Quit,
}

/// Runs one line and prints its answer as one JSON line:
/// `{"line", "ok": true, "output"}` or `{"line", "ok": false, "error"}`
/// (blank and comment lines print nothing).
fn answer_json(w: &mut Warm, line: &str) -> Step {
    let t = line.trim();
    if t.is_empty() || t.starts_with("//") || t.starts_with('%') {
        return Step::Ok;
    }
    CAPTURE.with(|c| *c.borrow_mut() = Some(String::new()));
    let (done, error) = match run_line(w, line) {
        Ok(s) => (s, None),
        Err(e) => (Step::Failed, Some(e)),
    };
    let output = CAPTURE.with(|c| c.borrow_mut().take()).unwrap_or_default();
    if matches!(done, Step::Quit) {
        return done;
    }
    let doc = match error {
        None => serde_json::json!({"line": line, "ok": true, "output": output}),
        Some(e) => serde_json::json!({"line": line, "ok": false, "error": e}),
    };
    println!("{doc}");
    done
}

/// Runs one line, printing its answer (stdout) or its error (stderr).
fn step(w: &mut Warm, line: &str) -> Step {
    match run_line(w, line) {
        Ok(s) => s,
        Err(e) => {
            eprint!("{e}");
            Step::Failed
        }
    }
}

/// Runs one line, printing its answer; a failure is returned as the text to
/// show (a caret under the column for pattern errors).
fn run_line(w: &mut Warm, line: &str) -> Result<Step, String> {
    let t = line.trim();
    if t.is_empty() || t.starts_with("//") || t.starts_with('%') {
        return Ok(Step::Ok);
    }
    let (cmd, rest) = t
        .split_once(char::is_whitespace)
        .map_or((t, ""), |(c, r)| (c, r.trim()));
    // `rest` is a slice of `line`: where it starts, for carets.
    let rest_at = rest.as_ptr() as usize - line.as_ptr() as usize;
    let result = match cmd {
        ":quit" | ":q" | ":exit" => return Ok(Step::Quit),
        ":help" | ":h" => {
            say!("{HELP}");
            Ok(())
        }
        ":relations" => {
            relations(w);
            Ok(())
        }
        ":assert" | ":retract" => {
            edit(w, rest, cmd == ":assert").map_err(|e| offset(e, line, rest_at))
        }
        ":explain" => explain_cmd(w, rest).map_err(|e| offset(e, line, rest_at)),
        ":whatif" => whatif(w, rest),
        ":plan" => plan(w),
        _ if t.starts_with("?-") => {
            query(w, t).map_err(|e| offset(e, line, line.len() - line.trim_start().len()))
        }
        _ => Err(Error::Plain(format!(
            "unknown command `{cmd}`; queries start with `?-`, commands with `:` (`:help`)"
        ))),
    };
    match result {
        Ok(()) => Ok(Step::Ok),
        Err(Error::Pattern(e, text)) => Err(e.render(&text)),
        Err(Error::Plain(m)) => Err(format!("error: {m}\n")),
    }
}

enum Error {
    /// A pattern error, with the whole line its offset is into.
    Pattern(pattern::PatternError, String),
    Plain(String),
}

/// Moves a pattern error's offset from `rest` to the whole line.
fn offset(e: Error, line: &str, at: usize) -> Error {
    match e {
        Error::Pattern(mut p, _) => {
            p.offset += at;
            Error::Pattern(p, line.to_string())
        }
        other => other,
    }
}

fn parse(w: &Warm, text: &str) -> Result<pattern::Pattern, Error> {
    pattern::parse(text, w.plan()).map_err(|e| Error::Pattern(e, text.to_string()))
}

fn query(w: &Warm, text: &str) -> Result<(), Error> {
    let pat = parse(w, text)?;
    let rows = w.query(&pat);
    let vars = pat.variables();
    if vars.is_empty() {
        sayln!("{}", if rows.is_empty() { "false." } else { "true." });
        return Ok(());
    }
    let mut table: Vec<Vec<String>> = rows
        .iter()
        .map(|r| vars.iter().map(|(_, c)| show(&r[*c])).collect())
        .collect();
    table.dedup();
    let header: Vec<String> = vars.iter().map(|(n, _)| n.clone()).collect();
    let widths: Vec<usize> = (0..header.len())
        .map(|i| {
            table
                .iter()
                .map(|r| r[i].chars().count())
                .chain([header[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: &[String]| {
        cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect::<Vec<_>>()
            .join(" | ")
            .trim_end()
            .to_string()
    };
    sayln!("{}", line(&header));
    sayln!(
        "{}",
        widths
            .iter()
            .map(|w| "-".repeat(*w))
            .collect::<Vec<_>>()
            .join("-+-")
    );
    for r in &table {
        sayln!("{}", line(r));
    }
    sayln!(
        "({} row{})",
        table.len(),
        if table.len() == 1 { "" } else { "s" }
    );
    Ok(())
}

fn ground(
    w: &Warm,
    text: &str,
) -> Result<(netc_compiler::plan::RelId, Vec<netc_compiler::value::Value>), Error> {
    let pat = parse(w, text)?;
    match pat.ground() {
        Some(row) => Ok((pat.rel, row)),
        None => Err(Error::Pattern(
            pattern::PatternError {
                offset: 0,
                message: "a fact has no variables or `_`".into(),
                hint: Some("write every value, e.g. vm(\"acme\", \"web3\", 02:00:00:00:01:09, 10.1.1.13, \"h2\").".into()),
            },
            text.to_string(),
        )),
    }
}

fn edit(w: &mut Warm, text: &str, insert: bool) -> Result<(), Error> {
    let (rel, row) = ground(w, text)?;
    let change = w
        .edit(rel, row, insert)
        .map_err(|e| Error::Plain(e.to_string()))?;
    print_change(&change);
    Ok(())
}

fn explain_cmd(w: &Warm, text: &str) -> Result<(), Error> {
    let (rel, row) = ground(w, text)?;
    let n = explain::explain(w, rel, &row, EXPLAIN_DEPTH);
    say!("{}", explain::render(&n));
    if n.leaf == Some(explain::Leaf::NotDerivable) {
        sayln!(
            "{} is not derivable",
            show_atom(&w.plan().relations[rel].name, &row)
        );
    }
    Ok(())
}

fn whatif(w: &mut Warm, file: &str) -> Result<(), Error> {
    if file.is_empty() {
        return Err(Error::Plain(":whatif needs a FILE (an intent file)".into()));
    }
    let new = IntentText::read(Path::new(file)).map_err(|e| Error::Plain(e.to_string()))?;
    let mut files = w.files().to_vec();
    match files.iter_mut().find(|f| same_file(&f.name, &new.name)) {
        Some(f) => f.text = new.text,
        None => files.push(new),
    }
    let (change, verdict) = w
        .change(files, |w, ch| {
            let v = if ch.findings.is_empty() {
                // the gate's whole report, as `netc verify INTENT` prints it
                match crate::record::verify(w, 3) {
                    Ok(r) if r.violated() => format!("violated\n{}", r.human()),
                    Ok(r) => format!("proven\n{}", r.human()),
                    Err(e) => format!("not run ({e})"),
                }
            } else {
                "not run (the intent has problems)".to_string()
            };
            (false, v)
        })
        .map_err(|e| Error::Plain(e.to_string()))?;
    print_change(&change);
    sayln!("verdict: {verdict}");
    sayln!("(nothing applied: the session is unchanged)");
    Ok(())
}

fn same_file(a: &str, b: &str) -> bool {
    a == b
        || match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
            (Ok(x), Ok(y)) => x == y,
            _ => false,
        }
}

fn plan(w: &mut Warm) -> Result<(), Error> {
    let files = w
        .files()
        .iter()
        .map(|f| IntentText::read(Path::new(&f.name)))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Error::Plain(e.to_string()))?;
    let (change, ()) = w
        .change(files, |_, _| (false, ()))
        .map_err(|e| Error::Plain(e.to_string()))?;
    print_change(&change);
    sayln!("(a plan: nothing applied)");
    Ok(())
}

fn relations(w: &Warm) {
    for r in &w.plan().relations {
        let cols: Vec<String> = r
            .columns
            .iter()
            .map(|c| format!("{}: {}", c.name, c.type_name))
            .collect();
        let n = w.engine().len(w.plan().relation_id(&r.name).unwrap_or(0));
        let rows = if n == 1 { "row" } else { "rows" };
        sayln!("{}({})  {n} {rows}", r.name, cols.join(", "));
    }
}

fn print_change(c: &Change) {
    if c.devices.is_empty() {
        sayln!("no device changes");
    }
    for d in &c.devices {
        sayln!("{}: +{} -{}", d.device, d.added.len(), d.removed.len());
        for (r, row) in &d.removed {
            sayln!("  - {}", show_atom(r, row));
        }
        for (r, row) in &d.added {
            sayln!("  + {}", show_atom(r, row));
        }
    }
    for f in &c.findings {
        say!("{f}");
    }
    if !c.findings.is_empty() {
        sayln!("{} problem(s) in the intent now", c.findings.len());
    }
}

/// Completion of commands and relation names for rustyline.
struct Helper {
    relations: Vec<String>,
}

impl rustyline::completion::Completer for Helper {
    type Candidate = String;
    fn complete(
        &self,
        line: &str,
        pos: usize,
        _: &rustyline::Context<'_>,
    ) -> rustyline::Result<(usize, Vec<String>)> {
        let before = &line[..pos];
        let start = before
            .rfind(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':' || c == '?' || c == '-'))
            .map_or(0, |i| i + 1);
        let word = &before[start..];
        if start == 0 && (word.starts_with(':') || word.starts_with('?')) {
            let c = COMMANDS
                .iter()
                .filter(|c| c.starts_with(word))
                .map(|c| c.to_string())
                .collect();
            return Ok((0, c));
        }
        let word_start = before
            .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
            .map_or(0, |i| i + 1);
        let word = &before[word_start..];
        let c = self
            .relations
            .iter()
            .filter(|r| r.starts_with(word))
            .map(|r| format!("{r}("))
            .collect();
        Ok((word_start, c))
    }
}

impl rustyline::hint::Hinter for Helper {
    type Hint = String;
}
impl rustyline::highlight::Highlighter for Helper {
    fn highlight_prompt<'b, 's: 'b, 'p: 'b>(
        &'s self,
        prompt: &'p str,
        _default: bool,
    ) -> Cow<'b, str> {
        Cow::Borrowed(prompt)
    }
}
impl rustyline::validate::Validator for Helper {}
impl rustyline::Helper for Helper {}

fn interactive(w: &mut Warm, dir: &Path) -> bool {
    let config = rustyline::Config::builder()
        .completion_type(rustyline::CompletionType::List)
        .auto_add_history(true)
        .build();
    let mut rl = match rustyline::Editor::<Helper, rustyline::history::DefaultHistory>::with_config(
        config,
    ) {
        Ok(rl) => rl,
        Err(e) => {
            eprintln!("error: cannot start line editing: {e}");
            return true;
        }
    };
    rl.set_helper(Some(Helper {
        relations: w.plan().relations.iter().map(|r| r.name.clone()).collect(),
    }));
    let history = dir.join("repl_history");
    let _ = std::fs::create_dir_all(dir);
    let _ = rl.load_history(&history);
    println!(
        "netc repl — {} intent file(s); `:help` for commands",
        w.files().len()
    );
    let mut failed = false;
    loop {
        match rl.readline("netc> ") {
            Ok(line) => match step(w, &line) {
                Step::Quit => break,
                Step::Failed => failed = true,
                Step::Ok => {}
            },
            Err(rustyline::error::ReadlineError::Interrupted) => continue,
            Err(_) => break,
        }
        let _ = rl.save_history(&history);
    }
    let _ = rl.save_history(&history);
    failed
}
