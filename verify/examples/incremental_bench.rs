//! Full vs incremental verification on one artifact set (run by `bench/verify/run.py`).
//!
//! Expects an artifact directory written by `netc compile` and the intent it
//! came from (its base facts give the policy; `rules/schema.ndl` declares
//! them, so nothing is evaluated here). Measures, in one process:
//! 1. a full verification ([`Verifier::new`]): wall time and peak RSS;
//! 2. `--changes N` one-VM changes through [`Verifier::update`], alternating
//!    *remove VM v* (its entry in the policy and every flow and agent row
//!    that names its port, MAC or address in its VNI — on its host and on
//!    its peers' hosts) and *add VM v back* (the original generation), for
//!    VMs drawn by a fixed-seed PRNG: the time of each update (the diff of
//!    the two generations included) and how many VMs it re-checked.
//!
//! Prints one JSON object (`--json OUT` also writes it). Not a test: times
//! are what this machine did in this run.

use netc_compiler::value::Value;
use netc_verify::artifacts::{Artifacts, Row};
use netc_verify::dirty::Dirty;
use netc_verify::incremental::Verifier;
use netc_verify::policy::{Acl, Facts, Policy, Vm};
use netc_verify::space::mac;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

struct Args {
    artifacts: PathBuf,
    intent: PathBuf,
    schema: PathBuf,
    changes: usize,
    acl: bool,
    /// Find what changed by comparing the generations (`Verifier::update`)
    /// instead of being told by the edit (`Verifier::update_dirty`).
    compare: bool,
    /// After every update, verify the same generation in full and fail
    /// unless the reports agree (a test of update sequences: slots reused,
    /// footprints that start or stop reading a part, renumberings logged
    /// across updates).
    check_each: bool,
    json: Option<PathBuf>,
}

fn args() -> Result<Args, String> {
    let mut a = Args {
        artifacts: PathBuf::new(),
        intent: PathBuf::new(),
        schema: PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../rules/schema.ndl")),
        changes: 200,
        acl: true,
        compare: false,
        check_each: false,
        json: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut v = || it.next().ok_or(format!("{k} needs a value"));
        match k.as_str() {
            "--artifacts" => a.artifacts = v()?.into(),
            "--intent" => a.intent = v()?.into(),
            "--schema" => a.schema = v()?.into(),
            "--changes" => a.changes = v()?.parse().map_err(|e| format!("--changes: {e}"))?,
            "--json" => a.json = Some(v()?.into()),
            "--no-acl" => a.acl = false,
            "--compare" => a.compare = true,
            "--check-each" => a.check_each = true,
            _ => {
                return Err(format!(
                "unknown argument `{k}` (--artifacts DIR --intent FILE [--changes N] [--compare] [--check-each] [--json OUT])"
            ))
            }
        }
    }
    if a.artifacts.as_os_str().is_empty() || a.intent.as_os_str().is_empty() {
        return Err(
            "usage: incremental_bench --artifacts DIR --intent FILE [--changes N] [--json OUT]"
                .into(),
        );
    }
    Ok(a)
}

fn facts(schema: &Path, intent: &Path) -> Result<Facts, String> {
    let c = netc_compiler::compile_files(&[schema.to_path_buf(), intent.to_path_buf()]);
    let plan = c
        .plan
        .as_ref()
        .ok_or_else(|| format!("{}: the intent does not compile", intent.display()))?;
    let mut f = Facts::new();
    for ((rel, row), span) in plan.facts.iter().zip(&plan.fact_spans) {
        f.entry(plan.relations[*rel].name.clone())
            .or_default()
            .push(Row {
                vals: row
                    .iter()
                    .map(|v| match v {
                        Value::Symbol(s) => s.as_str().to_string(),
                        other => other.to_string(),
                    })
                    .collect(),
                at: c.sources.location(*span),
            });
    }
    Ok(f)
}

/// CPU time this thread has run (ms), from the scheduler's count in
/// `/proc/thread-self/schedstat` (ns; 0 where there is none).
fn thread_cpu_ms() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0.0, |ns| ns / 1e6)
}

fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

/// What [`without`] took out, each item with its position, so [`with`]
/// puts back exactly the generation it was taken from.
#[derive(Default)]
struct Removed {
    flows: Vec<(String, usize, netc_verify::artifacts::FlowText)>,
    rows: Vec<(String, usize, std::sync::Arc<Row>)>,
    vm: Option<(usize, std::sync::Arc<Vm>)>,
}

/// The generation without VM `v`: its policy entry and every row naming it,
/// what that edit touched (the devices of the flows and rows it removed,
/// the relations it removed rows from), and what it took out.
fn without(a: &Artifacts, p: &Policy, v: &Vm) -> (Artifacts, Policy, Dirty, Removed) {
    let ip = std::net::Ipv4Addr::from(v.ip).to_string();
    let (vni, m) = (v.vni.to_string(), mac(v.mac));
    let names_ip = |t: &str| {
        t.split([',', '=', ':', '>', '(', ')', '\t', '/'])
            .any(|tok| tok == ip)
            && (t.contains(&vni))
    };
    let port = format!("in_port={},", v.port);
    let out = format!("output:{}", v.port);
    let mine = |dev: &str, text: &str| {
        text.contains(&m)
            || names_ip(text)
            || (dev == v.host
                && (text.contains(&port)
                    || text.ends_with(&out)
                    || text.contains(&format!("{out},"))))
    };
    let mut n = a.clone();
    let mut dirty = Dirty::default();
    let mut removed = Removed::default();
    for (dev, flows) in n.flows.iter_mut() {
        let mut at = 0;
        flows.retain(|f| {
            let gone = mine(dev, &format!("{},{}", f.matches, f.actions));
            if gone {
                removed.flows.push((dev.clone(), at, f.clone()));
            }
            at += 1;
            !gone
        });
        if removed.flows.last().is_some_and(|(d, _, _)| d == dev) {
            dirty.devices.insert(dev.clone());
        }
    }
    for (rel, rows) in n.relations.iter_mut() {
        let mut at = 0;
        rows.retain(|r| {
            let dev = r.vals.first().map_or("", |s| s.as_str());
            let gone = mine(dev, &r.vals.join("\t"));
            if gone {
                dirty.devices.insert(dev.to_string());
                dirty.relations.insert(rel.clone());
                removed.rows.push((rel.clone(), at, r.clone()));
            }
            at += 1;
            !gone
        });
    }
    let mut q = p.clone();
    let at = q
        .vms
        .iter()
        .position(|x| x.tenant == v.tenant && x.name == v.name);
    if let Some(i) = at {
        removed.vm = Some((i, q.vms.remove(i)));
    }
    (n, q, dirty, removed)
}

/// The generation [`without`] was given back: `a` and `p` (its result)
/// with what it took out put back where it was. The driver keeps no copy
/// of the first generation (at 100k VMs each copy is ~2 GB): it rebuilds
/// it from the verifier's.
fn with(a: &Artifacts, p: &Policy, removed: &Removed) -> (Artifacts, Policy) {
    let mut n = a.clone();
    // positions ascend per device and relation: inserted in order, each
    // lands where it was
    for (dev, at, f) in &removed.flows {
        let flows = n.flows.entry(dev.clone()).or_default();
        flows.insert((*at).min(flows.len()), f.clone());
    }
    for (rel, at, r) in &removed.rows {
        let rows = n.relations.entry(rel.clone()).or_default();
        rows.insert((*at).min(rows.len()), r.clone());
    }
    let mut q = p.clone();
    if let Some((i, vm)) = &removed.vm {
        q.vms.insert((*i).min(q.vms.len()), vm.clone());
    }
    (n, q)
}

/// The generation whose policy gains one ACL rule for `v`'s tenant, above
/// every other: deny TCP port 22 to `v` (the artifacts are left as they
/// are, so the checks of that tenant's VMs read their outcomes again).
fn with_acl(p: &Policy, v: &Vm) -> Policy {
    // the other tenants' rules (and every other map) stay shared with `p`,
    // as an edit of one generation into the next would leave them
    let mut q = p.clone();
    let rules = std::sync::Arc::make_mut(
        std::sync::Arc::make_mut(&mut q.acls)
            .entry(v.tenant.clone())
            .or_default(),
    );
    let top = rules.iter().map(|r| r.priority).max().unwrap_or(0);
    rules.push(Acl {
        priority: top + 1,
        src: (0, 0),
        dst: (v.ip, 32),
        proto: 6,
        lo: 22,
        hi: 22,
        allow: false,
        at: "bench".into(),
    });
    q
}

/// One kind of change: the time and the VMs re-checked of each.
#[derive(Default)]
struct Kind {
    ms: Vec<f64>,
    rechecked: Vec<f64>,
    retraced: Vec<f64>,
    /// Per change: VMs whose results the update looked at.
    visited: Vec<f64>,
    /// Per change: devices the edit named dirty.
    dirty_devices: Vec<f64>,
    /// Per change: CPU time of the updating thread (ms): what the update
    /// cost whatever else the machine ran (wall time is `ms`).
    cpu_ms: Vec<f64>,
    /// Per change: diff, path checks, table checks (ms).
    phases: Vec<[f64; 3]>,
    /// Summed over the changes: VMs re-traced that met each kind of change.
    met: BTreeMap<&'static str, usize>,
    /// Per change: the phases split finer (`Update::steps`, ms).
    steps: Vec<BTreeMap<&'static str, f64>>,
}

impl Kind {
    fn summary(&self) -> serde_json::Value {
        let sorted = |v: &[f64]| {
            let mut s = v.to_vec();
            s.sort_by(f64::total_cmp);
            s
        };
        let (ms, rc, rt, vi, cpu, dd) = (
            sorted(&self.ms),
            sorted(&self.rechecked),
            sorted(&self.retraced),
            sorted(&self.visited),
            sorted(&self.cpu_ms),
            sorted(&self.dirty_devices),
        );
        // a step a change did not take counts as 0 ms in that change
        let names: std::collections::BTreeSet<&str> =
            self.steps.iter().flat_map(|s| s.keys().copied()).collect();
        let steps: BTreeMap<&str, f64> = names
            .into_iter()
            .map(|n| {
                let v: Vec<f64> = self
                    .steps
                    .iter()
                    .map(|s| s.get(n).copied().unwrap_or(0.0))
                    .collect();
                (n, pct(&sorted(&v), 50.0))
            })
            .collect();
        // a step some changes take (a table check whose rows a VM change
        // touched) may have a p50 of 0 and still cost most of those changes:
        // its mean and how many changes took it say so
        let mut mean: BTreeMap<&str, serde_json::Value> = BTreeMap::new();
        for n in steps.keys() {
            let took: Vec<f64> = self
                .steps
                .iter()
                .filter_map(|s| s.get(n).copied())
                .collect();
            let sum: f64 = took.iter().sum();
            mean.insert(
                n,
                serde_json::json!({"mean_ms": sum / self.steps.len().max(1) as f64, "changes": took.len()}),
            );
        }
        serde_json::json!({
            "changes": ms.len(),
            "p50_step_ms": steps,
            "mean_step_ms": mean,
            "p50_ms": pct(&ms, 50.0),
            "p99_ms": pct(&ms, 99.0),
            "p50_cpu_ms": pct(&cpu, 50.0),
            "p99_cpu_ms": pct(&cpu, 99.0),
            "max_ms": ms.last().copied().unwrap_or(0.0),
            "rechecked_vms_p50": pct(&rc, 50.0),
            "rechecked_vms_max": rc.last().copied().unwrap_or(0.0),
            "retraced_vms_p50": pct(&rt, 50.0),
            "retraced_vms_max": rt.last().copied().unwrap_or(0.0),
            "visited_vms_p50": pct(&vi, 50.0),
            "visited_vms_max": vi.last().copied().unwrap_or(0.0),
            "dirty_devices_p50": pct(&dd, 50.0),
            "retraced_vms_met": self.met,
            "p50_phase_ms": {
                "diff": pct(&sorted(&self.phases.iter().map(|p| p[0]).collect::<Vec<_>>()), 50.0),
                "paths": pct(&sorted(&self.phases.iter().map(|p| p[1]).collect::<Vec<_>>()), 50.0),
                "tables": pct(&sorted(&self.phases.iter().map(|p| p[2]).collect::<Vec<_>>()), 50.0),
            },
        })
    }
}

/// Whether two reports say the same (every verdict, count and
/// counterexample, the outcome and pair counts; times aside), and if not
/// the first difference.
fn same_reports(
    inc: &netc_verify::report::Report,
    full: &netc_verify::report::Report,
) -> Result<(), String> {
    let seen = |r: &netc_verify::report::Report| {
        let mut verdicts = r.verdicts.clone();
        for v in &mut verdicts {
            v.detail = without_times(&v.detail);
        }
        serde_json::json!({
            "verdicts": verdicts,
            "outcomes": r.stats.outcomes,
            "pairs": r.stats.pairs,
            "vms": r.stats.vms,
        })
    };
    let (a, b) = (seen(inc), seen(full));
    if a == b {
        return Ok(());
    }
    let (a, b): (Vec<char>, Vec<char>) = (
        a.to_string().chars().collect(),
        b.to_string().chars().collect(),
    );
    let at = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let near = |s: &[char]| {
        s[at.saturating_sub(120)..(at + 200).min(s.len())]
            .iter()
            .collect::<String>()
    };
    Err(format!("incremental …{}… vs full …{}…", near(&a), near(&b)))
}

/// A verdict's detail with the times it names (`8 ms`) blanked: how long a
/// check took is not what it found.
fn without_times(detail: &str) -> String {
    let words: Vec<&str> = detail.split(' ').collect();
    let timed = |i: usize| {
        words.get(i + 1).is_some_and(|w| w.starts_with("ms"))
            && words[i].chars().all(|c| c.is_ascii_digit() || c == '.')
    };
    (0..words.len())
        .map(|i| if timed(i) { "_" } else { words[i] })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A hash of everything a generation holds (its `Debug` text): equal for
/// equal generations.
fn fingerprint(a: &Artifacts, p: &Policy) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    format!("{a:?}{p:?}").hash(&mut h);
    h.finish()
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[i.clamp(1, sorted.len()) - 1]
}

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(2);
    }
}

fn run() -> Result<(), String> {
    let a = args()?;
    let artifacts = Artifacts::load(&a.artifacts).map_err(|e| e.to_string())?;
    let policy = Policy::from_facts(&facts(&a.schema, &a.intent)?);
    let flows: usize = artifacts.flows.values().map(Vec::len).sum();
    let vms = policy.vms.len();
    let t0 = Instant::now();
    // `--check-each` also checks that `with` gives back the first generation
    let first = a.check_each.then(|| fingerprint(&artifacts, &policy));
    // the first generation is the verifier's alone (see `with`)
    let mut v = Verifier::new(artifacts, policy, 3).map_err(|e| e.to_string())?;
    let full_s = t0.elapsed().as_secs_f64();
    let full_rss = peak_rss_mb();
    let kept_mb = |v: &Verifier| v.kept_bytes() as f64 / 1048576.0;
    let full_kept = kept_mb(&v);
    let full_report = v
        .report(&netc_verify::NoProvenance, None)
        .map_err(|e| e.to_string())?;
    let violated = |r: &netc_verify::report::Report| {
        r.verdicts
            .iter()
            .filter(|x| x.violations > 0)
            .map(|x| format!("{}:{}", x.invariant, x.violations))
            .collect::<Vec<_>>()
    };
    eprintln!(
        "full: {vms} VMs, {flows} flows in {full_s:.1} s, peak RSS {full_rss:.0} MB, kept {full_kept:.0} MB, violated {:?}",
        violated(&full_report)
    );
    // xorshift64*: the same VMs on every machine
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        seed ^= seed >> 12;
        seed ^= seed << 25;
        seed ^= seed >> 27;
        seed.wrapping_mul(0x2545_f491_4f6c_dd1d)
    };
    let mut kinds: BTreeMap<&str, Kind> = BTreeMap::new();
    let mut fulls = 0usize;
    let (compare, check_each) = (a.compare, a.check_each);
    let mut checked_updates = 0usize;
    // every update in order: which steps a change took is bimodal (a VM
    // that is a load-balancer backend moves Mux rows and bridges others do
    // not), so a step's p50 and mean alone do not say which changes paid it
    let mut updates: Vec<serde_json::Value> = Vec::new();
    let mut step =
        |v: &mut Verifier, kind: &'static str, a: Artifacts, p: Policy, d: &Dirty, vm: &str| {
            let full = check_each.then(|| (a.clone(), p.clone()));
            let cpu0 = thread_cpu_ms();
            let up = if compare {
                v.update(a, p)
            } else {
                v.update_dirty(a, p, d)
            }
            .map_err(|e| e.to_string())?;
            let cpu = thread_cpu_ms() - cpu0;
            if let Some((a, p)) = full {
                let fresh = Verifier::new(a, p, 3).map_err(|e| e.to_string())?;
                same_reports(
                    &v.report(&netc_verify::NoProvenance, None)
                        .map_err(|e| e.to_string())?,
                    &fresh
                        .report(&netc_verify::NoProvenance, None)
                        .map_err(|e| e.to_string())?,
                )
                .map_err(|e| {
                    format!(
                        "update {} ({kind}): incremental != full: {e}",
                        checked_updates + 1
                    )
                })?;
                checked_updates += 1;
            }
            let k = kinds.entry(kind).or_default();
            k.ms.push(up.millis);
            k.rechecked.push(up.rechecked as f64);
            k.retraced.push(up.retraced as f64);
            k.visited.push(up.visited as f64);
            k.dirty_devices.push(d.devices.len() as f64);
            k.cpu_ms.push(cpu);
            k.phases
                .push([up.diff_millis, up.paths_millis, up.tables_millis]);
            for (w, n) in &up.met {
                *k.met.entry(w).or_default() += n;
            }
            k.steps.push(up.steps.clone());
            fulls += usize::from(up.full);
            updates.push(serde_json::json!({
                "kind": kind,
                "vm": vm,
                "ms": up.millis,
                "cpu_ms": cpu,
                "dirty_devices": d.devices.len(),
                "dirty_relations": d.relations.len(),
                "bridges_rebuilt": up.bridges_rebuilt,
                "retraced": up.retraced,
                "steps": up.steps,
            }));
            Ok::<f64, String>(up.millis)
        };
    for i in 0..a.changes.div_ceil(2) {
        // every iteration starts and ends at the first generation
        let vm = v.policy().vms[(next() % vms.max(1) as u64) as usize].clone();
        let (na, np, dirty, removed) = without(v.artifacts(), v.policy(), &vm);
        let name = format!("{}/{}", vm.tenant, vm.name);
        let ms = step(&mut v, "remove VM", na, np, &dirty, &name)?;
        let (back, policy) = with(v.artifacts(), v.policy(), &removed);
        if first.is_some_and(|f| f != fingerprint(&back, &policy)) {
            return Err(format!(
                "adding {}/{} back did not give the first generation",
                vm.tenant, vm.name
            ));
        }
        step(&mut v, "add VM", back, policy, &dirty, &name)?;
        if a.acl {
            let none = Dirty::default();
            let (same, policy) = (v.artifacts().clone(), v.policy().clone());
            let acl = with_acl(&policy, &vm);
            step(&mut v, "ACL rule (policy)", same, acl, &none, &name)?;
            let same = v.artifacts().clone();
            step(&mut v, "ACL rule (policy)", same, policy, &none, &name)?;
        }
        if i % 10 == 0 {
            eprintln!(
                "change {}: remove {}/{}: {ms:.2} ms",
                2 * i + 1,
                vm.tenant,
                vm.name
            );
        }
    }
    let last = v
        .report(&netc_verify::NoProvenance, None)
        .map_err(|e| e.to_string())?;
    let per_kind: BTreeMap<&str, serde_json::Value> =
        kinds.iter().map(|(k, x)| (*k, x.summary())).collect();
    let all = kinds.values().fold(Kind::default(), |mut acc, k| {
        acc.ms.extend(&k.ms);
        acc.rechecked.extend(&k.rechecked);
        acc.retraced.extend(&k.retraced);
        acc.visited.extend(&k.visited);
        acc.dirty_devices.extend(&k.dirty_devices);
        acc.cpu_ms.extend(&k.cpu_ms);
        acc.phases.extend(&k.phases);
        acc.steps.extend(k.steps.iter().cloned());
        for (w, n) in &k.met {
            *acc.met.entry(w).or_default() += n;
        }
        acc
    });
    let mut summary = all.summary();
    summary["full_rebuilds"] = fulls.into();
    summary["kind"] = "every change below".into();
    let p50 = summary["p50_ms"].as_f64().unwrap_or(0.0);
    let out = serde_json::json!({
        "artifacts": a.artifacts.display().to_string(),
        "vms": vms,
        "flows": flows,
        "full": {"seconds": full_s, "peak_rss_mb": full_rss, "kept_mb": full_kept, "violated": violated(&full_report)},
        "incremental": summary,
        "by_kind": per_kind,
        "dirty_from": if a.compare { "comparing the generations" } else { "the edit" },
        "speedup_p50": if p50 > 0.0 { full_s * 1e3 / p50 } else { 0.0 },
        "back_to_start_same_verdicts": violated(&last) == violated(&full_report),
        "updates_checked_against_full": checked_updates,
        "peak_rss_mb": peak_rss_mb(),
        // the VM results kept packed (`kept.rs`), after the last update
        "kept_mb": kept_mb(&v),
        "updates": updates,
    });
    let text = serde_json::to_string_pretty(&out).map_err(|e| e.to_string())?;
    println!("{text}");
    if let Some(p) = a.json {
        std::fs::write(&p, text + "\n").map_err(|e| format!("{}: {e}", p.display()))?;
    }
    Ok(())
}
