//! One measured run: from-scratch evaluation, then single-fact changes.
//!
//! Expects: a program file and a facts directory written by `gen` (its
//! `meta.json` says which workload and seed). Steps:
//!
//! 1. Regenerate the facts from `meta.json` (untimed) only to pick the change
//!    list: `changes / 2` pairs, each restoring the state it started from —
//!    even pairs delete an existing fact then re-insert it, odd pairs insert a
//!    fresh fact then delete it; relations rotate through
//!    `Workload::changed`. Each change is its own commit.
//! 2. **From scratch** (timed, the number compared with clingo): compile the
//!    program, read every `.input` TSV through `netc_intent::io::facts` (as
//!    `netc run` does), start the engine and commit all facts in one
//!    transaction. Clingo's side likewise parses its program and facts text.
//! 3. **Changes** (each `commit` call timed alone).
//! 4. Checks (untimed): the output is non-empty; after every pair the output
//!    size (tracked from the commits' reported changes) is back to the
//!    original; at the end the output's contents equal the from-scratch ones.
//!
//! Guarantees: one JSON object (see `bench/README.md`) or an error message.

use crate::measure;
use crate::workload::{self, Params, Rng};
use netc_compiler::plan::{Plan, RelId};
use netc_compiler::value::{Row, Value};
use netc_engine::{Diff, Engine, Transaction};
use netc_intent::io::facts;
use serde_json::{json, Value as Json};
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

pub struct RunArgs {
    pub program: PathBuf,
    pub facts_dir: PathBuf,
    pub changes: usize,
    pub workers: usize,
    /// Write the from-scratch output, sorted TSV, here (for the clingo check).
    pub dump: Option<PathBuf>,
}

/// One single-fact change, as committed.
struct Change {
    rel: RelId,
    row: Row,
    diff: Diff,
}

fn row_of(nums: &[i64]) -> Row {
    nums.iter().map(|&n| Value::Number(n)).collect()
}

/// Step 1: the change list, from the regenerated facts.
fn plan_changes(p: &Params, plan: &Plan, n: usize) -> Result<Vec<Change>, String> {
    let generated = workload::generate(p);
    let mut rng = Rng::new(p.seed ^ 0xc4a9_6e5d);
    let mut out = Vec::with_capacity(n);
    let changed = p.workload.changed();
    let rows_of = |name: &str| {
        generated
            .rels
            .iter()
            .find(|(r, _)| *r == name)
            .map(|(_, rows)| rows)
    };
    let present: Vec<HashSet<Vec<i64>>> = changed
        .iter()
        .map(|r| rows_of(r).into_iter().flatten().cloned().collect())
        .collect();
    for k in 0..n.div_ceil(2) {
        let i = k % changed.len();
        let rel = plan
            .relation_id(changed[i])
            .ok_or_else(|| format!("the program has no relation `{}`", changed[i]))?;
        let existing = rows_of(changed[i])
            .filter(|r| !r.is_empty())
            .ok_or_else(|| format!("no `{}` facts to change", changed[i]))?;
        let (first, second) = if k % 2 == 0 {
            let row = row_of(&existing[rng.below(existing.len() as u64) as usize]);
            ((row.clone(), Diff::Delete), (row, Diff::Insert))
        } else {
            let row = row_of(&workload::fresh_fact(p, &mut rng, &present[i]));
            ((row.clone(), Diff::Insert), (row, Diff::Delete))
        };
        out.push(Change {
            rel,
            row: first.0,
            diff: first.1,
        });
        out.push(Change {
            rel,
            row: second.0,
            diff: second.1,
        });
    }
    out.truncate(n);
    Ok(out)
}

fn sorted_contents(engine: &Engine, rel: RelId) -> Vec<Row> {
    let mut rows = engine.contents(rel);
    rows.sort();
    rows
}

pub fn run(args: &RunArgs) -> Result<Json, String> {
    let meta_path = args.facts_dir.join("meta.json");
    let meta = std::fs::read_to_string(&meta_path)
        .map_err(|e| format!("cannot read {}: {e}", meta_path.display()))?;
    let p =
        Params::from_json(&serde_json::from_str(&meta).map_err(|e| format!("meta.json: {e}"))?)?;

    // Compiled once untimed to plan the changes; compiled again inside the timed region.
    let plan0 = compile(&args.program)?;
    let changes = plan_changes(&p, &plan0, args.changes)?;
    drop(plan0);
    eprintln!(
        "[{}] {} changes planned; evaluating from scratch",
        p.workload.name(),
        changes.len()
    );

    // Step 2: from scratch.
    let cpu0 = measure::cpu_seconds();
    let t = Instant::now();
    let plan = Arc::new(compile(&args.program)?);
    let compile_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let mut initial = Vec::new();
    for (id, rel) in plan.relations.iter().enumerate() {
        for spec in &rel.inputs {
            let rows = facts::read_input(rel, spec, &args.facts_dir).map_err(|e| format!("{e}"))?;
            initial.extend(rows.into_iter().map(|r| (id, r, Diff::Insert)));
        }
    }
    let n_facts = initial.len();
    let read_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let mut engine = Engine::new(plan.clone(), args.workers).map_err(|e| format!("engine: {e}"))?;
    // `apply` is `commit` without building the (here: every derived row) change list.
    engine
        .apply(Transaction { changes: initial })
        .map_err(|e| format!("engine: {e}"))?;
    let eval_s = t.elapsed().as_secs_f64();
    let from_scratch_s = compile_s + read_s + eval_s;
    let from_scratch_cpu_s = cpu0.zip(measure::cpu_seconds()).map(|(a, b)| b - a);
    let scratch_stats = engine.stats();
    let out_rel = plan
        .relation_id(p.workload.output())
        .ok_or("the program has no output relation")?;
    let peak_after_scratch = measure::peak_rss_mib();
    let rss_after_scratch = measure::rss_mib();

    let original = sorted_contents(&engine, out_rel);
    if original.is_empty() {
        return Err(format!(
            "`{}` is empty after evaluation",
            p.workload.output()
        ));
    }
    if let Some(path) = &args.dump {
        let text: String = original
            .iter()
            .map(|r| netc_compiler::value::row_to_tsv(r) + "\n")
            .collect();
        std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    eprintln!(
        "[{}] from scratch {from_scratch_s:.3}s, {} output rows; applying changes",
        p.workload.name(),
        original.len()
    );

    // Step 3: single-fact changes, one commit each.
    let (cpu1, t_changes) = (measure::cpu_seconds(), Instant::now());
    let (mut all, mut ins, mut del) = (Vec::new(), Vec::new(), Vec::new());
    let (mut out_changed, mut records) = (Vec::new(), Vec::new());
    let mut size = original.len() as isize;
    let mut not_restored = 0usize;
    for (k, c) in changes.into_iter().enumerate() {
        let diff = c.diff;
        let tx = Transaction {
            changes: vec![(c.rel, c.row, c.diff)],
        };
        let t = Instant::now();
        let result = engine.commit(tx).map_err(|e| format!("engine: {e}"))?;
        let dt = t.elapsed().as_secs_f64();
        all.push(dt);
        match diff {
            Diff::Insert => ins.push(dt),
            Diff::Delete => del.push(dt),
        }
        let out = result.get(out_rel);
        size += out.iter().map(|(_, d)| d).sum::<isize>();
        out_changed.push(out.len() as f64);
        records.push(engine.stats().last.records as f64);
        if k % 2 == 1 && (size != original.len() as isize || engine.len(out_rel) != original.len())
        {
            not_restored += 1;
        }
    }

    let changes_wall_s = t_changes.elapsed().as_secs_f64();
    let changes_cpu_s = cpu1.zip(measure::cpu_seconds()).map(|(a, b)| b - a);

    // Step 4: the state after all pairs must be the original one.
    let final_rows = sorted_contents(&engine, out_rel);
    let restored = final_rows == original && not_restored == 0;
    let p50 = measure::percentile(&sorted(&all), 50.0);
    Ok(json!({
        "workload": p.workload.name(),
        "params": p.to_json(),
        "workers": args.workers,
        "facts": n_facts,
        "compile_s": compile_s,
        "read_s": read_s,
        "eval_s": eval_s,
        "from_scratch_s": from_scratch_s,
        "from_scratch_cpu_s": from_scratch_cpu_s,
        "changes_cpu_s": changes_cpu_s,
        "changes_wall_s": changes_wall_s,
        "output_relation": p.workload.output(),
        "output_size": original.len(),
        "changes": all.len(),
        "latency": measure::summary(&all),
        "insert_latency": measure::summary(&ins),
        "delete_latency": measure::summary(&del),
        "output_rows_changed_per_commit": mean_max(&out_changed),
        "records_per_commit": mean_max(&records),
        "from_scratch_records": scratch_stats.last.records,
        "arrangements": scratch_stats.arrangements,
        "speedup_p50": from_scratch_s / p50,
        "pairs_not_restored": not_restored,
        "output_restored": restored,
        "peak_rss_mib_after_scratch": peak_after_scratch,
        "rss_mib_after_scratch": rss_after_scratch,
        "peak_rss_mib": measure::peak_rss_mib(),
    }))
}

/// `{mean, max}` of counts.
fn mean_max(v: &[f64]) -> Json {
    json!({ "mean": v.iter().sum::<f64>() / v.len().max(1) as f64, "max": v.iter().copied().fold(0.0, f64::max) })
}

fn sorted(v: &[f64]) -> Vec<f64> {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s
}

fn compile(path: &std::path::Path) -> Result<Plan, String> {
    let c = netc_compiler::compile_files(&[path.to_path_buf()]);
    match c.plan {
        Some(plan) if !c.diagnostics.has_errors() => Ok(plan),
        _ => Err(format!(
            "{} does not compile:\n{}",
            path.display(),
            c.diagnostics.render_all(&c.sources)
        )),
    }
}
