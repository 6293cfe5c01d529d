//! `netc run`: Souffle-compatible batch evaluation, then optional updates.
//!
//! 1. compile the program (errors → exit 1);
//! 2. read every `.input` relation from the facts directory (`-F`, default `.`);
//! 3. read the whole `--updates` script *before* evaluating, so a malformed
//!    script changes nothing;
//! 4. evaluate, then apply each transaction and print its output changes
//!    (sorted, `+R(..)`/`-R(..)`) followed by `commit N`;
//! 5. write every `.output` relation to the output directory (`-D`, default
//!    `.`; `-` prints to stdout) and print `.printsize` counts.

use super::{report, Outcome};
use crate::engine::{Diff, Engine, Transaction};
use crate::io::{csv, facts, updates};
use netc_compiler::compile_files;
use netc_compiler::plan::Plan;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub struct RunArgs<'a> {
    pub files: &'a [PathBuf],
    pub facts_dir: &'a Path,
    pub output_dir: &'a str,
    pub workers: usize,
    pub updates: Option<&'a Path>,
}

pub fn run(args: RunArgs) -> Outcome {
    let c = compile_files(args.files);
    if report(&c) {
        return Outcome::ProgramErrors;
    }
    let Some(plan) = c.plan else {
        return Outcome::ProgramErrors;
    };
    let plan = Arc::new(plan);

    let mut initial = Vec::new();
    for (id, rel) in plan.relations.iter().enumerate() {
        for spec in &rel.inputs {
            match facts::read_input(rel, spec, args.facts_dir) {
                Ok(rows) => initial.extend(rows.into_iter().map(|r| (id, r))),
                Err(e) => return e.into(),
            }
        }
    }
    let script = match args.updates {
        None => Vec::new(),
        Some(path) => {
            let text =
                match std::fs::read_to_string(path) {
                    Ok(t) => t,
                    Err(e) => return Outcome::InputError(
                        format!("cannot read `{}`: {e}", path.display()),
                        Some(
                            "--updates takes a script of `+R(..).`, `-R(..).` and `commit.` lines"
                                .into(),
                        ),
                    ),
                };
            match updates::parse_script(&plan, &path.display().to_string(), &text) {
                Ok(s) => s,
                Err(e) => return e.into(),
            }
        }
    };
    if args.output_dir != "-" {
        if let Err(e) = std::fs::create_dir_all(args.output_dir) {
            return Outcome::InputError(
                format!("cannot create output directory `{}`: {e}", args.output_dir),
                None,
            );
        }
    }

    // The inputs are part of the first fixpoint (`Engine::with_inputs`).
    let mut engine = match Engine::with_inputs(plan.clone(), args.workers, initial) {
        Ok(e) => e,
        Err(e) => return Outcome::InputError(format!("engine: {e}"), None),
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for (n, tx) in script.into_iter().enumerate() {
        let tx = tx
            .into_iter()
            .map(|(rel, row, d)| (rel, row, if d > 0 { Diff::Insert } else { Diff::Delete }))
            .collect();
        let changes = match engine.commit(Transaction { changes: tx }) {
            Ok(c) => c,
            Err(e) => return Outcome::InputError(format!("engine: {e}"), None),
        };
        let mut lines = Vec::new();
        for (rel, rows) in changes.iter() {
            if plan.relations[rel].outputs.is_empty() {
                continue;
            }
            for (row, diff) in rows {
                lines.push(updates::format_change(
                    &plan.relations[rel].name,
                    row,
                    *diff,
                ));
            }
        }
        lines.sort();
        if super::output::json() {
            let doc = serde_json::json!({"commit": n + 1, "changes": lines});
            let _ = writeln!(out, "{doc}");
            continue;
        }
        for l in lines {
            let _ = writeln!(out, "{l}");
        }
        let _ = writeln!(out, "commit {}", n + 1);
    }
    write_outputs(&plan, &engine, args.output_dir, &mut out)
}

/// Writes the outputs to DIR (or stdout for `-`); with `--json`, stdout gets
/// one line `{"outputs": {rel: {"rows": n[, "tuples": [[cell, ...]]]}}}`
/// (the tuples when DIR is `-`, cells as the CSV writes them).
fn write_outputs(plan: &Plan, engine: &Engine, dir: &str, out: &mut impl Write) -> Outcome {
    let json = super::output::json();
    let mut summary = serde_json::Map::new();
    for (id, rel) in plan.relations.iter().enumerate() {
        if rel.outputs.is_empty() && !rel.printsize {
            continue;
        }
        let rows = engine.contents(id);
        if json {
            let mut entry = serde_json::json!({"rows": rows.len()});
            if dir == "-" {
                let text = csv::render(&rows, "\t");
                let tuples: Vec<Vec<&str>> =
                    text.lines().map(|l| l.split('\t').collect()).collect();
                entry["tuples"] = serde_json::json!(tuples);
            }
            summary.insert(rel.name.clone(), entry);
        }
        for spec in &rel.outputs {
            let stdout = dir == "-" || spec.params.get("IO").is_some_and(|io| io == "stdout");
            if json && stdout {
                continue;
            }
            if stdout {
                // as Souffle's stdout writer: the attribute names under the
                // relation's name (`-D -` sets headers=true; IO=stdout as given)
                let delim = crate::io::facts::delimiter(spec);
                let headers = dir == "-" || spec.params.get("headers").is_some_and(|h| h == "true");
                let _ = write!(out, "---------------\n{}\n", rel.name);
                if headers {
                    let _ = writeln!(out, "{}", csv::header(rel, &delim));
                }
                let _ = writeln!(out, "===============");
                let _ = write!(out, "{}", csv::render(&rows, &delim));
                let _ = writeln!(out, "===============");
            } else if let Err(e) = csv::write_output(rel, spec, &rows, Path::new(dir)) {
                return e.into();
            }
        }
        if rel.printsize && !json {
            let _ = writeln!(out, "{}\t{}", rel.name, rows.len());
        }
    }
    if json {
        let doc = serde_json::json!({ "outputs": summary });
        let _ = writeln!(out, "{doc}");
    }
    Outcome::Ok
}
