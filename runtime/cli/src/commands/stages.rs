//! Staged changes: how `plan` and `apply` change the DIPs of a VIP that a
//! switch holds (Duet §2.5, "DIP addition").
//!
//! A switch (an HMux) chooses a DIP by the hash alone: changing the vector
//! of a VIP it holds moves established connections (AFF-2). The SMuxes keep
//! a connection table, so the thesis moves the VIP to them first. When the
//! gate finds AFF-2 violations on switches and nothing else, [`plan`] builds
//! that procedure as three generations, each verified by the same gate
//! against the one before it (AFF-2 and PLAN-1 included):
//! 1. **withdraw**: the base generation's intent with the VIPs (and TIPs)
//!    withdrawn (`vip_withdrawn` facts, rules/schema.ndl): the switches
//!    drop them and the SMuxes, which hold the same vectors (AFF-1), carry
//!    their connections;
//! 2. **change**: the new intent, still withdrawn: the SMuxes change the
//!    vectors and keep each established connection on its DIP;
//! 3. **return**: the new intent as given: the VIPs go back to switches,
//!    which choose exactly as the SMuxes now do for new connections.
//!    Connections the SMuxes pinned before stage 2 must have ended first:
//!    `apply` commits stage 2 only after `--drain` (so an interrupted drain
//!    leaves the store at stage 1, and the next apply stages again).
//!
//! Expects the direct change already staged ([`super::staged::Staged`]) and
//! the store holding its base. Guarantees: a staged plan is offered only
//! when the direct change violates nothing but AFF-2 on switches; each
//! stage's artifacts are what `compile` writes for its intent (the
//! `vip_withdrawn` facts are stored as an intent file of the generation,
//! [`WITHDRAWN_FILE`]); the last stage is exactly the direct candidate.

use super::staged::Staged;
use super::Outcome;
use crate::rollout::entries;
use crate::rollout::provenance::IntentProvenance;
use crate::rollout::{candidate, verdict};
use crate::store::{IntentFile, NewGeneration, Store, Verdict};
use netc_compiler::SourceInput;
use netc_verify::report::{Report, Waiver};
use std::collections::BTreeSet;
use std::net::Ipv4Addr;
use std::path::Path;

/// The name under which a stage's `vip_withdrawn` facts are stored.
pub const WITHDRAWN_FILE: &str = "staged:vip_withdrawn.ndl";

/// One stage of a staged change: a generation ready to push.
pub struct Stage {
    /// `withdraw`, `change` or `return`.
    pub name: &'static str,
    /// What it does, for a reader.
    pub what: String,
    pub staged: Staged,
    /// Connections pinned before this stage must end before the next one
    /// (apply waits `--drain` before committing it).
    pub drain_after: bool,
}

/// A staged change: the VIPs it moves through the SMuxes and its stages.
pub struct StagedChange {
    pub vips: BTreeSet<Ipv4Addr>,
    pub stages: Vec<Stage>,
}

impl StagedChange {
    /// Proven when every stage is; violated when one is; not run when one
    /// could not be verified.
    pub fn verdict(&self) -> Verdict {
        let all: Vec<Verdict> = self.stages.iter().map(|s| s.staged.verdict()).collect();
        if all.contains(&Verdict::Violated) {
            Verdict::Violated
        } else if all.contains(&Verdict::NotRun) {
            Verdict::NotRun
        } else {
            Verdict::Proven
        }
    }

    /// The addresses, for a reader.
    pub fn vip_list(&self) -> String {
        let v: Vec<String> = self.vips.iter().map(Ipv4Addr::to_string).collect();
        v.join(", ")
    }

    /// The stages as JSON (`staged` of a plan or an apply).
    pub fn json(&self, verbose: bool) -> serde_json::Value {
        serde_json::json!({
            "vips": self.vips.iter().map(Ipv4Addr::to_string).collect::<Vec<_>>(),
            "verdict": self.verdict().as_str(),
            "stages": self.stages.iter().enumerate().map(|(i, s)| serde_json::json!({
                "stage": i + 1,
                "name": s.name,
                "what": s.what,
                "devices": super::staged::changes_json(&s.staged.changes, verbose),
                "verdict": s.staged.verdict().as_str(),
                "verify_error": s.staged.verify_error,
                "report": super::staged::report_json(&s.staged),
                "drain_after": s.drain_after,
            })).collect::<Vec<_>>(),
        })
    }
}

/// The staged change for `direct` when it needs one (`None`: the direct
/// change is proven, or violates something staging cannot help).
pub fn plan(
    direct: &Staged,
    rules: Option<&Path>,
    store: Option<&Store>,
    state: &Path,
    accept: &[Waiver],
) -> Result<Option<StagedChange>, Outcome> {
    let (Some(store), Some(base), Some(report)) = (store, &direct.base, &direct.report) else {
        return Ok(None);
    };
    if direct.remapped_on_switches.is_empty() || !only_aff2(report) {
        return Ok(None);
    }
    let vips = direct.remapped_on_switches.clone();
    let keep = verdict::keep_dir(state);

    // 1. the base intent, the VIPs withdrawn
    let files = with_withdrawn(store.intent_files(base.id)?, &vips);
    let (gen1, ev1) = evaluate(files, rules, "withdraw")?;
    let prov1 = provenance(&gen1, &ev1);
    let g1 = verdict::gate(
        &gen1,
        Some(verdict::Against::Stored(store, base.id)),
        Some(&prov1),
        &keep,
        3,
        accept,
    );
    let s1 = stage_of(gen1.clone(), direct.base_outputs.clone(), g1, base);

    // 2. the new intent, still withdrawn
    let files = with_withdrawn(direct.gen.files.clone(), &vips);
    let (gen2, ev2) = evaluate(files, rules, "change")?;
    let prov2 = provenance(&gen2, &ev2);
    let g2 = verdict::gate(
        &gen2,
        Some(verdict::Against::Candidate(&gen1)),
        Some(&prov2),
        &keep,
        3,
        accept,
    );
    let s2 = stage_of(gen2.clone(), gen1.outputs.clone(), g2, base);

    // 3. the new intent as given
    let prov3 = match &direct.evaluated {
        Some(ev) => provenance(&direct.gen, ev),
        None => IntentProvenance::from_facts(&direct.gen.facts),
    };
    let g3 = verdict::gate(
        &direct.gen,
        Some(verdict::Against::Candidate(&gen2)),
        Some(&prov3),
        &keep,
        3,
        accept,
    );
    let s3 = stage_of(direct.gen.clone(), gen2.outputs.clone(), g3, base);

    let list: Vec<String> = vips.iter().map(Ipv4Addr::to_string).collect();
    let list = list.join(", ");
    Ok(Some(StagedChange {
        vips,
        stages: vec![
            Stage {
                name: "withdraw",
                what: format!("withdraw {list} from the switches to the SMuxes"),
                staged: s1,
                drain_after: false,
            },
            Stage {
                name: "change",
                what: format!("change the DIPs of {list} on the SMuxes"),
                staged: s2,
                drain_after: true,
            },
            Stage {
                name: "return",
                what: format!("return {list} to the switches"),
                staged: s3,
                drain_after: false,
            },
        ],
    }))
}

/// Whether every violation of `r` is AFF-2's.
fn only_aff2(r: &Report) -> bool {
    r.verdicts
        .iter()
        .all(|v| v.invariant == "AFF-2" || v.status != netc_verify::report::Status::Violated)
}

/// `files` with `vip_withdrawn` facts for `vips` in [`WITHDRAWN_FILE`]
/// (added to it when a stage of an earlier change left one).
pub fn with_withdrawn(mut files: Vec<IntentFile>, vips: &BTreeSet<Ipv4Addr>) -> Vec<IntentFile> {
    let mut text = match files.iter().position(|f| f.path == WITHDRAWN_FILE) {
        Some(i) => files.remove(i).text,
        None => String::from(
            "// written by `netc plan`: VIPs held by the SMuxes while their DIPs change (Duet §2.5)\n",
        ),
    };
    for v in vips {
        text.push_str(&format!("vip_withdrawn({v}).\n"));
    }
    files.push(IntentFile::new(WITHDRAWN_FILE, text));
    files
}

/// A stage's intent evaluated into a candidate (exit 1 on findings, which
/// name the stage: they are netc's, not the user's).
fn evaluate(
    files: Vec<IntentFile>,
    rules: Option<&Path>,
    stage: &str,
) -> Result<(NewGeneration, super::EvaluatedIntent), Outcome> {
    let inputs = files
        .iter()
        .map(|f| SourceInput::Text {
            name: f.path.clone(),
            text: f.text.clone(),
        })
        .collect();
    let (ev, ()) = super::evaluate_inputs_beside(
        inputs,
        rules,
        1,
        &mut crate::intent::Timings::start(),
        |_| (),
    )?;
    if let Some(f) = ev.findings.first() {
        return Err(Outcome::InputError(
            format!(
                "the `{stage}` stage of the staged change does not compile: {}",
                f.render(&ev.compilation.sources).trim_end()
            ),
            Some("pass --accept AFF-2:KEY --reason TEXT to make the change directly".into()),
        ));
    }
    let gen =
        candidate::build_from(files, &ev).map_err(|e| Outcome::InputError(e.to_string(), None))?;
    Ok((gen, ev))
}

fn provenance(gen: &NewGeneration, ev: &super::EvaluatedIntent) -> IntentProvenance {
    let names: Vec<String> = gen.files.iter().map(|f| f.path.clone()).collect();
    IntentProvenance::new(&ev.compilation.sources, &ev.plan, &names)
}

/// A stage as a [`Staged`] generation, diffed against what the stage
/// before it leaves on the devices.
fn stage_of(
    gen: NewGeneration,
    before: Vec<crate::store::DeviceOutput>,
    gate: Result<verdict::Gate, verdict::GateError>,
    base: &crate::store::Generation,
) -> Staged {
    let changes = entries::changes(&before, &gen.outputs);
    let (report, phases, verify_error) = match gate {
        Ok(g) => (Some(g.report), Some(g.phases), None),
        Err(e) => (None, None, Some(e.to_string())),
    };
    Staged {
        gen,
        base: Some(base.clone()),
        base_outputs: before,
        changes,
        report,
        verify_error,
        evaluated: None,
        phases,
        remapped_on_switches: BTreeSet::new(),
        staged: None,
    }
}

/// `--drain`: seconds (`300`, `300s`), minutes (`5m`) or hours (`1h`).
pub fn parse_drain(text: &str) -> Result<std::time::Duration, String> {
    let t = text.trim();
    let (digits, unit) = t.split_at(t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len()));
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("`{text}` is not a duration (e.g. 300s, 5m, 0)"))?;
    let secs = match unit {
        "" | "s" => Some(n),
        "m" => n.checked_mul(60),
        "h" => n.checked_mul(3600),
        _ => None,
    }
    .ok_or_else(|| format!("`{text}` is not a duration (e.g. 300s, 5m, 0)"))?;
    Ok(std::time::Duration::from_secs(secs))
}
