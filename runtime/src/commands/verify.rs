//! `netc verify`: prove the invariants on the artifacts that will be pushed.
//!
//! Two inputs: `netc verify INTENT...` compiles the intent (as `netc
//! compile` does, into a temporary directory) and verifies the result;
//! `netc verify --artifacts DIR [INTENT...]` verifies an artifact directory
//! (as `netc compile` wrote it, possibly edited by hand) — against the
//! intent's facts when intent files are given, else against the rows the
//! host agents receive. `--against OLD` also checks AFF-2 and PLAN-1 for
//! the change from OLD: an artifact directory, or a generation number of
//! the store (`--state DIR`, default `.netc`), rebuilt exactly as `netc
//! compile` wrote it. `--since OLD` verifies OLD first and then re-checks
//! only what the change to the verified directory can affect
//! (`netc_verify::incremental`); the report is the same as a full one.
//!
//! Output: a human report on stdout (or `--json`), `--junit FILE` for CI,
//! `--pcap FILE` the counterexample packets. Exit 0 proven, 1 violated,
//! 2 input errors (unreadable or malformed artifacts, bad intent).

use super::{evaluate_intent, EvaluatedIntent, Outcome};
use crate::intent;
use netc_compiler::plan::{Expr, Plan};
use netc_compiler::value::Value;
use netc_compiler::Compilation;
use netc_verify::artifacts::{Artifacts, FlowText, Row};
use netc_verify::incremental::Verifier;
use netc_verify::policy::{Facts, Policy};
use netc_verify::{Input, Provenance};
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub struct VerifyArgs<'a> {
    pub intent: &'a [PathBuf],
    pub artifacts: Option<&'a Path>,
    pub against: Option<&'a Path>,
    /// A previous generation: verify it, then re-verify incrementally.
    pub since: Option<&'a Path>,
    pub since_intent: &'a [PathBuf],
    /// The store of `--against GEN`.
    pub state: Option<&'a Path>,
    pub json: bool,
    pub junit: Option<&'a Path>,
    pub pcap: Option<&'a Path>,
    pub rules: Option<&'a Path>,
    pub limit: usize,
}

/// A rule deriving a located relation: (head relation, table constant,
/// priority constant, string literals of its match column, citation).
type RuleCite = (String, Option<i64>, Option<i64>, Vec<String>, String);

/// Rules and intent facts behind artifact rows.
struct IntentProvenance {
    rules: Vec<RuleCite>,
    /// (values as text, citation) of the intent's own facts.
    facts: Vec<(Vec<String>, String)>,
}

fn text(v: &Value) -> String {
    match v {
        Value::Symbol(s) => s.as_str().to_string(),
        other => other.to_string(),
    }
}

/// The string literals of an expression (the fixed parts of a `cat(...)`).
fn literals(e: Option<&Expr>, out: &mut Vec<String>) {
    match e {
        Some(Expr::Const(Value::Symbol(s))) => {
            let t = s.as_str().trim_matches(',').to_string();
            if !t.is_empty() {
                out.push(t);
            }
        }
        Some(Expr::Call(_, args)) => args.iter().for_each(|a| literals(Some(a), out)),
        _ => {}
    }
}

fn constant(e: Option<&Expr>) -> Option<i64> {
    match e {
        Some(Expr::Const(Value::Number(n))) => Some(*n),
        _ => None,
    }
}

impl IntentProvenance {
    fn new(c: &Compilation, plan: &Plan, intent: &[PathBuf]) -> IntentProvenance {
        let names: Vec<String> = intent.iter().map(|p| p.display().to_string()).collect();
        let line = |span| {
            let first = c
                .sources
                .snippet(span)
                .lines()
                .next()
                .unwrap_or("")
                .trim()
                .to_string();
            format!("{}  {first}", c.sources.location(span))
        };
        let rules = plan
            .strata
            .iter()
            .flat_map(|s| &s.rules)
            .map(|r| {
                let mut lits = Vec::new();
                literals(r.head_exprs.get(3), &mut lits);
                (
                    plan.relations[r.head].name.clone(),
                    constant(r.head_exprs.get(1)),
                    constant(r.head_exprs.get(2)),
                    lits,
                    line(r.span),
                )
            })
            .collect();
        let facts = plan
            .facts
            .iter()
            .zip(&plan.fact_spans)
            .filter(|(_, s)| names.contains(&c.sources.file(s.file).name))
            .map(|((_, row), s)| (row.iter().map(text).collect(), line(*s)))
            .collect();
        IntentProvenance { rules, facts }
    }

    fn cite(
        &self,
        rel: &str,
        table: Option<i64>,
        prio: Option<i64>,
        matches: Option<&str>,
        device: &str,
        body: &str,
    ) -> Vec<String> {
        let mut out: Vec<String> = self
            .rules
            .iter()
            .filter(|(r, t, p, lits, _)| {
                r == rel
                    && (table.is_none() || t.is_none() || *t == table)
                    && (prio.is_none() || p.is_none() || *p == prio)
                    && matches.is_none_or(|m| lits.iter().all(|l| m.contains(l.as_str())))
            })
            .map(|(_, _, _, _, at)| format!("{at}  (rule)"))
            .take(3)
            .collect();
        let contains = |v: &String| {
            v.len() >= 4
                && body
                    .split(|c: char| ",=>()[]/ ".contains(c) || c == '\t')
                    .any(|tok| {
                        tok == v
                            || tok
                                .trim_start_matches("set_field:")
                                .trim_start_matches("mod_nw_dst:")
                                == v
                    })
        };
        for (vals, at) in &self.facts {
            let hits = vals.iter().filter(|v| contains(v)).count()
                + usize::from(vals.iter().any(|v| v == device));
            if hits >= 2 {
                out.push(format!("{at}  (intent)"));
                if out.len() >= 7 {
                    break;
                }
            }
        }
        out
    }
}

impl Provenance for IntentProvenance {
    fn flow(&self, device: &str, f: &FlowText) -> Vec<String> {
        let body = format!("{},{}", f.matches, f.actions).replace(':', ",");
        let mut body2 = body.clone();
        // MACs and dotted addresses survive the split only whole: add the raw text too.
        body2.push(',');
        body2.push_str(&format!("{},{}", f.matches, f.actions));
        self.cite(
            "ovs_flow",
            Some(i64::from(f.table)),
            Some(i64::from(f.priority)),
            Some(&f.matches),
            device,
            &body2,
        )
    }
    fn row(&self, relation: &str, row: &Row) -> Vec<String> {
        let body = row.vals.join("\t");
        self.cite(
            relation,
            None,
            None,
            None,
            row.vals.first().map_or("", |s| s.as_str()),
            &body,
        )
    }
}

/// The intent compiled and evaluated: its facts and provenance.
struct Compiled {
    facts: Facts,
    provenance: IntentProvenance,
    plan: Arc<Plan>,
    engine: crate::engine::Engine,
}

fn compile(intent: &[PathBuf], rules: Option<&Path>) -> Result<Compiled, Outcome> {
    // Verification needs a compiled intent; program errors are input errors here (exit 2).
    let EvaluatedIntent {
        compilation: c,
        plan,
        engine,
        findings,
    } = evaluate_intent(intent, rules, 1).map_err(|o| match o {
        Outcome::ProgramErrors => {
            Outcome::InputError("the intent has errors (see above)".into(), None)
        }
        other => other,
    })?;
    if !findings.is_empty() {
        super::output::hold_findings(&findings, &c.sources);
        for f in &findings {
            eprint!("{}", f.render(&c.sources));
        }
        return Err(Outcome::InputError(
            format!(
                "{} problem(s) in the intent; nothing to verify",
                findings.len()
            ),
            Some("fix the intent first: `netc check --intent` shows the same problems".into()),
        ));
    }
    let provenance = IntentProvenance::new(&c, &plan, intent);
    let mut facts = Facts::new();
    for ((rel, row), span) in plan.facts.iter().zip(&plan.fact_spans) {
        facts
            .entry(plan.relations[*rel].name.clone())
            .or_default()
            .push(Row {
                vals: row.iter().map(text).collect(),
                at: c.sources.location(*span),
            });
    }
    Ok(Compiled {
        facts,
        provenance,
        plan,
        engine,
    })
}

fn load(dir: &Path) -> Result<Artifacts, Outcome> {
    Artifacts::load(dir).map_err(|e| Outcome::InputError(e.to_string(), e.hint.clone()))
}

/// `--against`: an artifact directory, or a generation number of the store
/// (rebuilt byte for byte into a temporary directory, read, removed).
fn load_against(arg: &Path, state: Option<&Path>) -> Result<Artifacts, Outcome> {
    let gen = arg.to_str().and_then(|t| t.parse::<i64>().ok());
    let Some(id) = gen.filter(|_| !arg.exists()) else {
        return load(arg);
    };
    let dir = state
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from(crate::store::DEFAULT_DIR));
    let store_err = |e: crate::store::StoreError| {
        let hint = e.hint().or_else(|| {
            Some(format!(
                "`--against {id}` reads generation {id} of the store in `{}`; `netc history` lists them (or pass an artifact directory)",
                dir.display()
            ))
        });
        Outcome::InputError(e.to_string(), hint)
    };
    let store = crate::store::Store::open_existing(&dir).map_err(store_err)?;
    let tmp = std::env::temp_dir().join(format!("netc-against-{}-{id}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let written = store.write_artifact_dir(id, &tmp).map_err(store_err);
    let loaded = written.and_then(|_| load(&tmp));
    let _ = std::fs::remove_dir_all(&tmp);
    loaded
}

pub fn run(args: VerifyArgs) -> Outcome {
    match run_inner(&args) {
        Ok(o) | Err(o) => o,
    }
}

fn run_inner(args: &VerifyArgs) -> Result<Outcome, Outcome> {
    if args.artifacts.is_none() && args.intent.is_empty() {
        return Err(Outcome::InputError(
            "nothing to verify".into(),
            Some("give intent files (`netc verify INTENT...`) or `--artifacts DIR`".into()),
        ));
    }
    let stages = super::output::Stages::start("verify", "compiling the intent");
    let compiled = if args.intent.is_empty() {
        None
    } else {
        Some(compile(args.intent, args.rules)?)
    };
    stages.set("modelling the artifacts and proving the invariants");
    let tmp;
    let dir = match (args.artifacts, &compiled) {
        (Some(d), _) => d.to_path_buf(),
        (None, Some(c)) => {
            tmp = std::env::temp_dir().join(format!("netc-verify-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&tmp);
            let written = intent::write_outputs(&c.plan, &c.engine, &tmp, intent::Early::none())
                .map_err(|e| e.to_string());
            if let Err(e) = written {
                let _ = std::fs::remove_dir_all(&tmp);
                return Err(Outcome::InputError(
                    format!("cannot render the artifacts: {e}"),
                    None,
                ));
            }
            tmp.clone()
        }
        (None, None) => unreachable!("checked above"),
    };
    let artifacts = load(&dir);
    if args.artifacts.is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    let artifacts = artifacts?;
    let against = args
        .against
        .map(|a| load_against(a, args.state))
        .transpose()?;
    let policy = match &compiled {
        Some(c) => Policy::from_facts(&c.facts),
        None => Policy::from_artifacts(&artifacts),
    };
    let none = netc_verify::NoProvenance;
    let provenance: &dyn Provenance = match &compiled {
        Some(c) => &c.provenance,
        None => &none,
    };
    let model_err = |e: netc_verify::VerifyError| {
        Outcome::InputError(
            format!("cannot model the artifacts: {e}"),
            Some("the verifier models the OVS/P4/Mux subset of specs/targets.md; see specs/invariants.md §5".into()),
        )
    };
    let report = match args.since {
        None => netc_verify::verify(&Input {
            artifacts: &artifacts,
            policy: &policy,
            against: against.as_ref(),
            provenance,
            limit: args.limit,
        })
        .map_err(model_err)?,
        Some(old_dir) => {
            // cited from the new directory, so only what differs is re-checked
            let mut old = load(old_dir)?;
            old.rebase(&artifacts.dir);
            let old_policy = if !args.since_intent.is_empty() {
                Policy::from_facts(&compile(args.since_intent, args.rules)?.facts)
            } else if compiled.is_some() {
                policy.clone()
            } else {
                Policy::from_artifacts(&old)
            };
            let mut v = Verifier::new(old, old_policy, args.limit).map_err(model_err)?;
            let up = v.update(artifacts, policy).map_err(model_err)?;
            let mut r = v.report(provenance, against.as_ref());
            r.stats.incremental = Some(up);
            r
        }
    };
    drop(stages);
    if args.json {
        super::output::emit(report.json());
    } else {
        print!("{}", report.human());
    }
    let write = |p: &Path, bytes: &[u8]| {
        std::fs::write(p, bytes)
            .map_err(|e| Outcome::InputError(format!("cannot write `{}`: {e}", p.display()), None))
    };
    if let Some(p) = args.junit {
        write(p, report.junit().as_bytes())?;
    }
    if let Some(p) = args.pcap {
        write(p, &netc_verify::packet::pcap(&report.frames()))?;
    }
    Ok(if report.violated() {
        Outcome::ProgramErrors
    } else {
        Outcome::Ok
    })
}
