//! `netc-bench`: the benchmark driver behind `bench/run.py`.
//!
//! ```text
//! netc-bench gen reach --nodes N --edges M --sources S [--seed X] --out DIR
//! netc-bench gen join5 --facts F [--seed X] --out DIR
//! netc-bench run --program P.dl --facts DIR [--changes N] [--workers W] [--dump FILE]
//! netc-bench intent --intent FILE [--changes N] [--scratch-samples K] [--workers W]
//! ```
//!
//! - [`workload`] generates the facts of the two workloads from a seed and
//!   writes them as TSV (for netc), ASP (for clingo) and `meta.json`.
//! - [`drive`] runs one workload through the engine: from scratch, then
//!   single-fact changes, one per commit, with sanity checks.
//! - [`intent`] runs network intent (the standard rules) warm: from scratch,
//!   then six kinds of single intent change, each to rendered device deltas.
//! - [`measure`] turns latencies into percentiles and reads peak RSS.
//!
//! `run` prints one JSON object on stdout (progress goes to stderr) and exits
//! 1 on any error or failed check. It is a script's building block, not a
//! timed test: `bench/run.py` runs one workload per process so each peak RSS
//! is the workload's own.

mod drive;
mod intent;
mod measure;
mod workload;

use std::path::PathBuf;
use std::process::ExitCode;
use workload::{Params, Workload};

const USAGE: &str = "usage:
  netc-bench gen reach --nodes N --edges M --sources S [--seed X] --out DIR
  netc-bench gen join5 --facts F [--seed X] --out DIR
  netc-bench run --program P.dl --facts DIR [--changes N] [--workers W] [--dump FILE]
  netc-bench intent --intent FILE [--changes N] [--scratch-samples K] [--workers W] [--kinds add_vip,...]";

/// `--key value` pairs after the positional arguments.
struct Flags(Vec<(String, String)>);

impl Flags {
    fn parse(args: &[String]) -> Result<Flags, String> {
        let mut out = Vec::new();
        let mut it = args.iter();
        while let Some(k) = it.next() {
            let key = k
                .strip_prefix("--")
                .ok_or_else(|| format!("unexpected argument `{k}`"))?;
            let v = it.next().ok_or_else(|| format!("`{k}` needs a value"))?;
            out.push((key.to_string(), v.clone()));
        }
        Ok(Flags(out))
    }
    fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
    fn req(&self, key: &str) -> Result<&str, String> {
        self.get(key).ok_or_else(|| format!("missing --{key}"))
    }
    fn num(&self, key: &str, default: Option<u64>) -> Result<u64, String> {
        match self.get(key) {
            Some(v) => v
                .replace('_', "")
                .parse()
                .map_err(|_| format!("--{key}: `{v}` is not a number")),
            None => default.ok_or_else(|| format!("missing --{key}")),
        }
    }
}

fn gen(args: &[String]) -> Result<(), String> {
    let (w, rest) = args
        .split_first()
        .ok_or("gen: which workload? (reach | join5)")?;
    let workload =
        Workload::parse(w).ok_or_else(|| format!("unknown workload `{w}` (reach | join5)"))?;
    let f = Flags::parse(rest)?;
    let seed = f.num("seed", Some(1))?;
    let p = match workload {
        Workload::Reach => Params {
            workload,
            seed,
            domain: f.num("nodes", None)?,
            facts: f.num("edges", None)?,
            sources: f.num("sources", Some(10))?,
        },
        Workload::Join5 => {
            let facts = f.num("facts", None)?;
            Params {
                workload,
                seed,
                domain: facts / 5,
                facts,
                sources: 0,
            }
        }
    };
    let out = PathBuf::from(f.req("out")?);
    let facts = workload::generate(&p);
    workload::write(&p, &facts, &out)
        .map_err(|e| format!("cannot write {}: {e}", out.display()))?;
    eprintln!(
        "[{}] wrote {} facts to {}",
        workload.name(),
        facts.total(),
        out.display()
    );
    Ok(())
}

fn run(args: &[String]) -> Result<(), String> {
    let f = Flags::parse(args)?;
    let a = drive::RunArgs {
        program: PathBuf::from(f.req("program")?),
        facts_dir: PathBuf::from(f.req("facts")?),
        changes: f.num("changes", Some(1000))? as usize,
        workers: f.num("workers", Some(1))? as usize,
        dump: f.get("dump").map(PathBuf::from),
    };
    let result = drive::run(&a)?;
    println!("{result}");
    if result["output_restored"] != serde_json::Value::Bool(true) {
        return Err(
            "the output after delete/re-insert pairs differs from the from-scratch output".into(),
        );
    }
    Ok(())
}

fn intent_run(args: &[String]) -> Result<(), String> {
    let f = Flags::parse(args)?;
    let a = intent::IntentArgs {
        intent: PathBuf::from(f.req("intent")?),
        changes: f.num("changes", Some(500))? as usize,
        scratch_samples: f.num("scratch-samples", Some(2))? as usize,
        workers: f.num("workers", Some(1))? as usize,
        kinds: match f.get("kinds") {
            Some(k) => intent::parse_kinds(k)?,
            None => intent::KINDS.to_vec(),
        },
    };
    let result = intent::run(&a)?;
    println!("{result}");
    if result["outputs_restored"] != serde_json::Value::Bool(true) {
        // Reported in the JSON (`outputs_differing`), not fatal: e.g. the
        // sticky placement may re-place a removed and re-added VIP elsewhere.
        eprintln!("netc-bench: some output sizes differ after undoing every change");
    }
    Ok(())
}

/// The same allocator as `netc`'s (see runtime/cli/src/main.rs), so the
/// bench measures what `netc serve` runs.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("gen") => gen(&args[1..]),
        Some("run") => run(&args[1..]),
        Some("intent") => intent_run(&args[1..]),
        _ => Err(USAGE.to_string()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("netc-bench: {e}");
            ExitCode::FAILURE
        }
    }
}
