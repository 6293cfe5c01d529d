//! What `plan`, `apply` and `rollback` share: the state directory, a staged
//! generation (compiled, diffed against the last applied one, verified),
//! and how changes are printed.
//!
//! Expects: intent files, or a stored generation. Guarantees: nothing here
//! touches a device; a store that cannot be trusted is an exit-2 outcome
//! naming the file; bad intent is exit 1 with the findings printed.

use super::{evaluate_intent, EvaluatedIntent, Outcome};
use crate::rollout::entries::{self, DeviceChange};
use crate::rollout::provenance::IntentProvenance;
use crate::rollout::{candidate, verdict};
use crate::store::{DeviceOutput, Generation, NewGeneration, Store, StoreError, Verdict};
use netc_verify::report::{Report, Waiver};
use netc_verify::Provenance;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

impl From<StoreError> for Outcome {
    fn from(e: StoreError) -> Outcome {
        let hint = e.hint();
        Outcome::InputError(e.to_string(), hint)
    }
}

/// Says (on stderr) when a stored generation's artifacts carry no hashes
/// to check them by: a store an older netc wrote, read unchecked.
pub fn note_unhashed(store: &Store, id: i64) -> Result<(), Outcome> {
    let n = store.unhashed(id)?;
    if n > 0 {
        eprintln!(
            "note: generation {id} was committed by a netc that recorded no artifact hashes; its {n} artifact file(s) are read unchecked"
        );
    }
    Ok(())
}

/// The state directory: `--state DIR` or `.netc`.
pub fn state_dir(arg: Option<&Path>) -> PathBuf {
    arg.map_or_else(
        || PathBuf::from(crate::store::DEFAULT_DIR),
        Path::to_path_buf,
    )
}

/// The store when one exists (`None`: nothing applied yet), without creating it.
pub fn existing_store(dir: &Path) -> Result<Option<Store>, Outcome> {
    match Store::open_existing(dir) {
        Ok(s) => Ok(Some(s)),
        Err(StoreError::NoState { .. }) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// A generation ready to push.
pub struct Staged {
    pub gen: NewGeneration,
    /// The generation the devices hold now, with its artifacts.
    pub base: Option<Generation>,
    pub base_outputs: Vec<DeviceOutput>,
    pub changes: BTreeMap<String, DeviceChange>,
    pub report: Option<Report>,
    /// Why the verifier could not run (artifacts outside its model).
    pub verify_error: Option<String>,
    /// The evaluated intent (none when staged from the store).
    pub evaluated: Option<EvaluatedIntent>,
    /// The rollout order PLAN-1 checked (none when the verifier could not run).
    pub phases: Option<netc_verify::plan::migration::Phases>,
    /// VIPs/TIPs whose connections the change remaps on a switch (AFF-2,
    /// not accepted): what a staged change moves through the SMuxes.
    pub remapped_on_switches: std::collections::BTreeSet<std::net::Ipv4Addr>,
    /// The staged change `plan` and `apply` use instead (`super::stages`).
    pub staged: Option<super::stages::StagedChange>,
}

impl Staged {
    /// The verdict of what would be applied: the staged change's when
    /// there is one, else the direct change's.
    pub fn verdict(&self) -> Verdict {
        if let Some(st) = &self.staged {
            return st.verdict();
        }
        self.direct_verdict()
    }

    /// The verdict of the change made at once.
    pub fn direct_verdict(&self) -> Verdict {
        match &self.report {
            Some(r) if r.violated() => Verdict::Violated,
            Some(_) => Verdict::Proven,
            None => Verdict::NotRun,
        }
    }
}

/// `--accept INVARIANT:KEY --reason TEXT`: violations of a change's
/// invariants accepted for this change only, recorded with who and why.
#[derive(clap::Args, Debug, Default, Clone)]
pub struct WaiverArgs {
    /// Accept the violations of INVARIANT whose key is KEY for this change only, e.g.
    /// `AFF-2:203.0.113.10:80/6` (the key a counterexample prints); recorded with who and --reason.
    /// Only a change's invariants (AFF-2) can be accepted; a waiver that accepts nothing is an error.
    #[arg(long = "accept", value_name = "INVARIANT:KEY")]
    pub accept: Vec<String>,
    /// Why the accepted violations are acceptable (required with --accept; recorded).
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,
}

impl WaiverArgs {
    /// The waivers, by the user running this (exit 2 on a malformed one).
    pub fn waivers(&self) -> Result<Vec<Waiver>, Outcome> {
        if self.accept.is_empty() {
            return Ok(Vec::new());
        }
        let reason = self
            .reason
            .as_deref()
            .filter(|r| !r.trim().is_empty())
            .ok_or_else(|| {
                Outcome::InputError(
                    "--accept needs --reason TEXT: why the violation is acceptable (recorded)"
                        .into(),
                    Some(
                        "e.g. --accept AFF-2:203.0.113.10:80/6 --reason \"new DIP; VIP drained\""
                            .into(),
                    ),
                )
            })?;
        self.accept
            .iter()
            .map(|a| {
                Waiver::parse(a, reason, &actor()).map_err(|e| {
                    Outcome::InputError(
                        format!("--accept {e}"),
                        Some(
                            "the key is the one a counterexample prints (`netc plan` shows it)"
                                .into(),
                        ),
                    )
                })
            })
            .collect()
    }
}

/// A waiver that accepted nothing is refused: waivers name what they
/// accept, they do not silence an invariant.
pub fn check_waivers(s: &Staged) -> Result<(), Outcome> {
    match s.report.as_ref().and_then(Report::unused_waiver) {
        Some(w) => Err(Outcome::InputError(
            format!("--accept {} accepts no violation of this change", w.name()),
            Some("drop it; `netc plan` prints each violation's key".into()),
        )),
        None => Ok(()),
    }
}

/// `note` with the waivers the generation's report accepted (who, why).
pub fn generation_note(s: &Staged, note: &str) -> String {
    let accepted = s.report.as_ref().map_or(&[][..], |r| &r.accepted[..]);
    netc_verify::report::note_with_waivers(note, accepted)
}

/// Compiles intent into a staged generation (exit 1 on bad intent); cited
/// artifact sets are kept under the state directory `state`.
pub fn stage_intent(
    files: &[PathBuf],
    rules: Option<&Path>,
    store: Option<&Store>,
    state: &Path,
    accept: &[Waiver],
) -> Result<Staged, Outcome> {
    let stages =
        super::output::Stages::start("plan", "compiling the rules and evaluating the intent");
    let ev = evaluate_intent(files, rules, 1)?;
    if !ev.findings.is_empty() {
        drop(stages);
        super::output::hold_findings(&ev.findings, &ev.compilation.sources);
        for f in &ev.findings {
            eprint!("{}", f.render(&ev.compilation.sources));
        }
        eprintln!(
            "\n{} problem(s) in the intent; nothing was planned or pushed",
            ev.findings.len()
        );
        return Err(Outcome::ProgramErrors);
    }
    let gen = candidate::build(files, &ev).map_err(|e| Outcome::InputError(e.to_string(), None))?;
    stages.set("diffing against the last generation and verifying");
    let names: Vec<String> = files.iter().map(|p| p.display().to_string()).collect();
    let provenance = IntentProvenance::new(&ev.compilation.sources, &ev.plan, &names);
    let mut staged = stage(gen, store, state, Some(&provenance), accept)?;
    staged.evaluated = Some(ev);
    if !staged.remapped_on_switches.is_empty() {
        stages.set("staging the change through the SMuxes and verifying each stage");
        staged.staged = super::stages::plan(&staged, rules, store, state, accept)?;
    }
    Ok(staged)
}

/// Diffs and verifies a generation's contents against the last applied one
/// (the gate, `rollout::verdict::gate`).
pub fn stage(
    gen: NewGeneration,
    store: Option<&Store>,
    state: &Path,
    provenance: Option<&dyn Provenance>,
    accept: &[Waiver],
) -> Result<Staged, Outcome> {
    let base = match store {
        Some(s) => s.last_applied()?,
        None => None,
    };
    let base_outputs = match (store, &base) {
        (Some(s), Some(b)) => {
            note_unhashed(s, b.id)?;
            s.device_outputs(b.id)?
        }
        _ => Vec::new(),
    };
    let changes = entries::changes(&base_outputs, &gen.outputs);
    let against = match (store, &base) {
        (Some(s), Some(b)) => Some(verdict::Against::Stored(s, b.id)),
        _ => None,
    };
    let result = verdict::gate(
        &gen,
        against,
        provenance,
        &verdict::keep_dir(state),
        3,
        accept,
    );
    let (report, phases, remapped_on_switches, verify_error) = match result {
        Ok(g) => (Some(g.report), Some(g.phases), g.remapped_on_switches, None),
        Err(e) => (None, None, Default::default(), Some(e.to_string())),
    };
    Ok(Staged {
        gen,
        base,
        base_outputs,
        changes,
        report,
        verify_error,
        evaluated: None,
        phases,
        remapped_on_switches,
        staged: None,
    })
}

/// The colours of plan/apply/diff output (shared by every command).
pub use super::output::Paint;

/// Per-device `+adds -removes` lines (and the entries with `verbose`).
pub fn print_changes(changes: &BTreeMap<String, DeviceChange>, verbose: bool, paint: &Paint) {
    if changes.is_empty() {
        println!("  no device changes");
        return;
    }
    let width = changes.keys().map(String::len).max().unwrap_or(0);
    for (device, c) in changes {
        let kinds: Vec<&str> = c.kinds.iter().map(String::as_str).collect();
        println!(
            "  {device:<width$}  {:<12} {} {}",
            kinds.join(","),
            paint.green(&format!("+{}", c.added.len())),
            paint.red(&format!("-{}", c.removed.len()))
        );
        if verbose {
            for e in &c.removed {
                println!("      {}", paint.red(&format!("- {e}")));
            }
            for e in &c.added {
                println!("      {}", paint.green(&format!("+ {e}")));
            }
        }
    }
}

/// The changes as JSON: `{device: {kinds, added, removed[, entries]}}`.
pub fn changes_json(changes: &BTreeMap<String, DeviceChange>, verbose: bool) -> serde_json::Value {
    let mut m = serde_json::Map::new();
    for (device, c) in changes {
        let mut v = serde_json::json!({
            "kinds": c.kinds,
            "added": c.added.len(),
            "removed": c.removed.len(),
        });
        if verbose {
            v["entries"] = serde_json::json!({"added": c.added, "removed": c.removed});
        }
        m.insert(device.clone(), v);
    }
    serde_json::Value::Object(m)
}

/// The verifier's report as JSON (null when it did not run).
pub fn report_json(s: &Staged) -> serde_json::Value {
    s.report
        .as_ref()
        .and_then(|r| serde_json::from_str(&r.json()).ok())
        .unwrap_or(serde_json::Value::Null)
}

/// Who runs this: `$USER`, `$LOGNAME`, else the login name of the user
/// the process runs as (`unknown` only when there is none).
pub fn actor() -> String {
    std::env::var("USER")
        .or_else(|_| std::env::var("LOGNAME"))
        .ok()
        .filter(|u| !u.is_empty())
        .or_else(login_name)
        .unwrap_or_else(|| "unknown".into())
}

/// The name of the user this process runs as, from the password database
/// (a service or a container often has no `USER`).
fn login_name() -> Option<String> {
    // SAFETY: getpwuid returns null or a pointer to a static record whose
    // pw_name is a NUL-terminated string; it is copied out at once, and
    // nothing else in netc reads the password database (no other call can
    // overwrite the record meanwhile).
    unsafe {
        let pw = libc::getpwuid(libc::geteuid());
        if pw.is_null() || (*pw).pw_name.is_null() {
            return None;
        }
        std::ffi::CStr::from_ptr((*pw).pw_name)
            .to_str()
            .ok()
            .map(str::to_string)
    }
}

/// The command line, for the record.
pub fn command_line() -> String {
    let args: Vec<String> = std::env::args().collect();
    let mut s = args.join(" ");
    if let Some(rest) = args.first().and_then(|a| s.strip_prefix(a.as_str())) {
        s = format!("netc{rest}");
    }
    s
}
