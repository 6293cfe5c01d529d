//! Network intent through a warm engine: the measurement behind
//! `bench/suite.py` (issue 8).
//!
//! Expects: one intent file (e.g. from `netc gen --preset S|M|L`) that
//! compiles with the standard rules.
//! Guarantees, in one process and one JSON object:
//! - **from scratch**: load (parse, check, lower) + evaluate (engine and the
//!   VIP placement built-in) + render every device's artifacts in memory
//!   (`netc_targets::render_all`, not written to disk), each timed;
//! - **warm changes**: six kinds of single intent change — add a VM, remove
//!   a DIP, add an ACL rule, move a VM to another host, add a VIP, fail a
//!   DIP — each timed from the `Engine::commit` call to the rendered
//!   per-device deltas: the changed rows of every located output relation,
//!   grouped by device and rendered by every target that consumes them
//!   (inserted and deleted rows separately). Every change whose commit
//!   moves the VIP placement's inputs (adding a VIP, and any change of a
//!   DIP VM's need or ToR) is followed by the placement's incremental
//!   update and the commit of its delta (`placement::follow`: only the VIPs
//!   touched), inside the timed part; untimed commits follow it too, so
//!   the placement is always current. Every measured
//!   change is undone (untimed) before the next, so all samples start from
//!   the same state, and the engine's output sizes are checked to be back
//!   to the from-scratch sizes at the end;
//! - **the same changes from scratch**: for a few samples, the intent facts
//!   with the change applied are evaluated and rendered by a fresh engine
//!   (the warm engine is dropped first, so the two never coexist).

use crate::measure;
use netc_compiler::plan::{Plan, RelId};
use netc_compiler::value::{Row, Sym, Value};
use netc_engine::{Changes, Diff, Engine, Transaction};
use netc_intent as intent;
use netc_intent::placement::{follow, Follower, Placement};
use netc_targets::DeviceRows;
use serde_json::{json, Value as Json};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

pub struct IntentArgs {
    pub intent: PathBuf,
    /// Measured changes per kind.
    pub changes: usize,
    /// From-scratch re-evaluations with one change applied (0 to skip).
    pub scratch_samples: usize,
    pub workers: usize,
    /// The kinds of change to measure (`--kinds`; default all six).
    pub kinds: Vec<&'static str>,
}

/// The six kinds of change, in report order.
pub const KINDS: [&str; 6] = [
    "add_vm",
    "remove_dip",
    "add_acl",
    "move_vm",
    "add_vip",
    "fail_dip",
];

/// `--kinds a,b`: a comma-separated subset of [`KINDS`] (e.g. `add_vip`
/// alone, to profile one kind at L).
pub fn parse_kinds(list: &str) -> Result<Vec<&'static str>, String> {
    list.split(',')
        .map(|k| {
            KINDS
                .iter()
                .copied()
                .find(|x| *x == k.trim())
                .ok_or_else(|| {
                    format!(
                        "--kinds: unknown kind `{k}`, expected some of {}",
                        KINDS.join(",")
                    )
                })
        })
        .collect()
}

/// One change: untimed setup, the timed transaction, untimed undo.
struct Step {
    setup: Vec<(RelId, Row, Diff)>,
    timed: Vec<(RelId, Row, Diff)>,
    undo: Vec<(RelId, Row, Diff)>,
    /// For `add_vm`/`move_vm`: whether the VM is in a DIP pool, so the
    /// change also moves the load balancers' vectors (the kind's latencies
    /// are two populations; the JSON reports each).
    dip_member: Option<bool>,
}

struct Rels {
    vm: RelId,
    vm_port: RelId,
    dip_pool: RelId,
    dip_health: RelId,
    acl: RelId,
    vip: RelId,
    host: RelId,
}

impl Rels {
    fn new(plan: &Plan) -> Result<Rels, String> {
        Ok(Rels {
            vm: rel(plan, "vm")?,
            vm_port: rel(plan, "vm_port")?,
            dip_pool: rel(plan, "dip_pool")?,
            dip_health: rel(plan, "dip_health")?,
            acl: rel(plan, "acl")?,
            vip: rel(plan, "vip")?,
            host: rel(plan, "host")?,
        })
    }
}

fn rel(plan: &Plan, name: &str) -> Result<RelId, String> {
    plan.relation_id(name)
        .ok_or_else(|| format!("the rules have no relation `{name}`"))
}

fn secs(t: Instant) -> f64 {
    t.elapsed().as_secs_f64()
}

pub fn run(a: &IntentArgs) -> Result<Json, String> {
    let t_load = Instant::now();
    let c = intent::load(std::slice::from_ref(&a.intent), None)
        .map_err(|e| format!("cannot read {}: {e}", a.intent.display()))?;
    if c.diagnostics.error_count() > 0 {
        return Err(format!(
            "{} does not compile:\n{}",
            a.intent.display(),
            c.diagnostics.render_all(&c.sources)
        ));
    }
    let plan = Arc::new(c.plan.ok_or("no plan despite no errors")?);
    let load_s = secs(t_load);
    eprintln!("[intent] loaded in {load_s:.2} s");

    let t_eval = Instant::now();
    let (mut engine, placement) = evaluate(plan.clone(), a.workers)?;
    // Lanes (the engine's default: two on a machine with a second core).
    let lanes = engine.stats().lanes;
    let eval_s = secs(t_eval);
    let rss_after_eval = measure::peak_rss_mib();
    eprintln!("[intent] evaluated in {eval_s:.2} s");
    let t_render = Instant::now();
    let artifacts = render_everything(&plan, &engine)?;
    let render_s = secs(t_render);
    eprintln!("[intent] rendered {artifacts} artifacts in {render_s:.2} s");
    let outputs = intent::located_outputs(&plan);
    let sizes_before: Vec<usize> = outputs.iter().map(|&r| engine.len(r)).collect();
    // The largest relations (derived and base): where the memory goes.
    let mut sizes: Vec<(usize, String)> = (0..plan.relations.len())
        .map(|r| (engine.len(r), plan.relations[r].name.clone()))
        .collect();
    sizes.sort_unstable_by(|a, b| b.cmp(a));
    let total_rows: usize = sizes.iter().map(|s| s.0).sum();
    let largest: Vec<Json> = sizes
        .iter()
        .take(15)
        .map(|(n, name)| json!({"relation": name, "rows": n}))
        .collect();
    let ovs_flow = plan.relation_id("ovs_flow");
    let flows = ovs_flow.map_or(0, |r| engine.len(r));
    let vms = plan.relation_id("vm").map_or(0, |r| engine.len(r));

    let rels = Rels::new(&plan)?;
    // The placement and its follower (`placement::follow`), when the
    // intent has VIPs to place.
    let mut placed: Option<(Placement, Follower)> =
        placement.and_then(|p| Some((p, Follower::new(&engine)?)));
    let mut kinds = serde_json::Map::new();
    let mut scratch_steps: Vec<(String, Step)> = Vec::new();
    let t_changes = Instant::now();
    for kind in a.kinds.iter().copied() {
        let steps = make_steps(kind, &engine, &rels, a.changes);
        if steps.is_empty() {
            kinds.insert(kind.into(), json!({"skipped": "no facts of this kind"}));
            continue;
        }
        let mut lat = Vec::with_capacity(steps.len());
        let mut rows_changed = Vec::with_capacity(steps.len());
        let mut devices = Vec::with_capacity(steps.len());
        let mut bytes = 0usize;
        let mut dataflow_ms = Vec::with_capacity(steps.len());
        let mut records = Vec::with_capacity(steps.len());
        let mut cpu_ms = Vec::with_capacity(steps.len());
        // Latencies split by `Step::dip_member`: (in a DIP pool, not).
        let mut by_member: (Vec<f64>, Vec<f64>) = (Vec::new(), Vec::new());
        let mut phases = Phases::default();
        // With the engine's trace on, mark which epoch is the timed change.
        let mark = std::env::var_os("NETC_ENGINE_TRACE").is_some();
        for s in &steps {
            commit_placed(&mut engine, &mut placed, &s.setup)?;
            if mark {
                eprintln!("netc-trace timed {kind}");
            }
            let mut clock = PhaseClock::start();
            let t = Instant::now();
            let mut ch = commit(&mut engine, &s.timed)?;
            clock.lap(&mut phases.commit);
            if let Some((p, f)) = placed.as_mut() {
                // The placement follows every change of its inputs (a VIP
                // added, a DIP VM's need or ToR moved), as a warm
                // controller must before the change's deltas are final.
                let more = follow::settle(&mut engine, p, f, &ch).map_err(|e| e.to_string())?;
                for (r, v) in more.by_rel {
                    ch.by_rel.entry(r).or_default().extend(v);
                }
                clock.lap(&mut phases.placement);
            }
            let flow_ms = engine.stats().last.dataflow.as_secs_f64() * 1e3;
            let recs = engine.stats().last.records as f64;
            let (n_dev, n_bytes) = render_delta(&plan, &outputs, &ch)?;
            clock.lap(&mut phases.render);
            let took_ms = t.elapsed().as_secs_f64() * 1e3;
            lat.push(took_ms);
            match s.dip_member {
                Some(true) => by_member.0.push(took_ms),
                Some(false) => by_member.1.push(took_ms),
                None => {}
            }
            if let Some(total) = clock.total_ms() {
                cpu_ms.push(total);
            }
            dataflow_ms.push(flow_ms);
            records.push(recs);
            rows_changed.push(outputs.iter().map(|&r| ch.get(r).len()).sum::<usize>() as f64);
            devices.push(n_dev as f64);
            bytes += n_bytes;
            commit_placed(&mut engine, &mut placed, &s.undo)?;
        }
        let mut sorted = lat.clone();
        sorted.sort_by(f64::total_cmp);
        eprintln!(
            "[intent] {kind}: {} changes, p50 {:.3} ms, p99 {:.3} ms (CPU p50 {:.3} ms)",
            lat.len(),
            measure::percentile(&sorted, 50.0),
            measure::percentile(&sorted, 99.0),
            {
                let mut c = cpu_ms.clone();
                c.sort_by(f64::total_cmp);
                measure::percentile(&c, 50.0)
            }
        );
        let mut entry = json!({
                "n": lat.len(),
                "latency_ms": ms_summary(&lat),
                "last_commit_dataflow_ms": ms_summary(&dataflow_ms),
                // CPU time of all threads over the timed part (load-independent).
                "cpu_ms": ms_summary(&cpu_ms),
                // The same CPU time by phase: the change's commit, the
                // placement following it (update and the delta's commit:
                // `placement::follow::settle`), rendering.
                "cpu_ms_by_phase": phases.summary(),
                "last_commit_records": ms_summary(&records),
                "samples_ms": lat,
                "output_rows_changed": ms_summary(&rows_changed),
                "devices_touched": ms_summary(&devices),
                "rendered_bytes_total": bytes,
        });
        if !by_member.0.is_empty() || !by_member.1.is_empty() {
            // VMs in a DIP pool also move the load balancers' vectors (and,
            // for "tenant" VIPs, the hosts' select groups): a second, slower
            // population whose share decides where the p50 falls.
            entry["latency_ms_by_vm"] = json!({
                "dip_pool_member": ms_summary(&by_member.0),
                "not_in_a_pool": ms_summary(&by_member.1),
            });
        }
        kinds.insert(kind.into(), entry);
        if let Some(s) = steps.into_iter().next() {
            scratch_steps.push((kind.to_string(), s));
        }
    }
    let changes_s = secs(t_changes);
    let sizes_after: Vec<usize> = outputs.iter().map(|&r| engine.len(r)).collect();
    let restored = sizes_before == sizes_after;
    let differing: Vec<Json> = outputs
        .iter()
        .zip(sizes_before.iter().zip(&sizes_after))
        .filter(|(_, (b, a))| b != a)
        .map(|(&r, (b, a))| json!({"relation": plan.relations[r].name, "before": b, "after": a}))
        .collect();
    let rss_end_warm = measure::peak_rss_mib();
    drop(engine);
    drop(placed);

    let mut scratch = Vec::new();
    for (kind, s) in scratch_steps.iter().take(a.scratch_samples) {
        let mut p = (*plan).clone();
        apply_to_facts(&mut p, &s.setup);
        apply_to_facts(&mut p, &s.timed);
        let t = Instant::now();
        let (e, _) = evaluate(Arc::new(p), a.workers)?;
        let p = e.plan().clone();
        render_everything(&p, &e)?;
        let took = secs(t);
        eprintln!("[intent] from scratch with one {kind}: {took:.2} s");
        scratch.push(json!({"kind": kind, "seconds": took}));
    }

    Ok(json!({
        "intent": a.intent.display().to_string(),
        "workers": a.workers,
        "lanes": lanes,
        "vms": vms,
        "ovs_flows": flows,
        "artifacts": artifacts,
        "relation_rows_total": total_rows,
        "largest_relations": largest,
        "from_scratch": {
            "load_s": load_s,
            "evaluate_s": eval_s,
            "render_s": render_s,
            "total_s": load_s + eval_s + render_s,
            "peak_rss_mib_after_evaluate": rss_after_eval,
        },
        "changes": kinds,
        "changes_wall_s": changes_s,
        "outputs_restored": restored,
        "outputs_differing": differing,
        "peak_rss_mib_warm": rss_end_warm,
        "scratch_with_change": scratch,
        "peak_rss_mib_end": measure::peak_rss_mib(),
        "cpu_s": measure::cpu_seconds(),
    }))
}

/// CPU ms of one timed change's phases, one sample per change.
#[derive(Default)]
struct Phases {
    commit: Vec<f64>,
    placement: Vec<f64>,
    render: Vec<f64>,
}

impl Phases {
    fn summary(&self) -> Json {
        let mut m = serde_json::Map::new();
        for (name, v) in [
            ("commit", &self.commit),
            ("placement", &self.placement),
            ("render", &self.render),
        ] {
            if !v.is_empty() {
                m.insert(name.into(), ms_summary(v));
            }
        }
        Json::Object(m)
    }
}

/// The process's CPU time (all threads) since the start and since the last
/// lap; `None` throughout where it cannot be read.
struct PhaseClock {
    start: Option<u64>,
    last: Option<u64>,
}

impl PhaseClock {
    fn start() -> PhaseClock {
        let now = measure::process_cpu_ns();
        PhaseClock {
            start: now,
            last: now,
        }
    }

    /// Pushes the CPU ms since the last lap onto `into`.
    fn lap(&mut self, into: &mut Vec<f64>) {
        let now = measure::process_cpu_ns();
        if let (Some(a), Some(b)) = (self.last, now) {
            into.push(b.saturating_sub(a) as f64 / 1e6);
        }
        self.last = now;
    }

    fn total_ms(&self) -> Option<f64> {
        Some(self.last?.saturating_sub(self.start?) as f64 / 1e6)
    }
}

/// `intent::evaluate`, keeping the placement for incremental updates.
fn evaluate(plan: Arc<Plan>, workers: usize) -> Result<(Engine, Option<Placement>), String> {
    let mut engine = Engine::new(plan, workers).map_err(|e| e.to_string())?;
    engine
        .commit(Transaction::new())
        .map_err(|e| e.to_string())?;
    let placement = netc_intent::placement::place_into(&mut engine).map_err(|e| e.to_string())?;
    Ok((engine, placement))
}

/// `{n, p50, p90, p99, max, mean}` of samples, in their own unit.
fn ms_summary(samples: &[f64]) -> Json {
    let mut s = samples.to_vec();
    s.sort_by(f64::total_cmp);
    let mean = s.iter().sum::<f64>() / s.len().max(1) as f64;
    json!({
        "n": s.len(),
        "p50": measure::percentile(&s, 50.0),
        "p90": measure::percentile(&s, 90.0),
        "p99": measure::percentile(&s, 99.0),
        "max": s.last().copied().unwrap_or(f64::NAN),
        "mean": mean,
    })
}

/// A commit outside the timed part, with the placement kept current.
fn commit_placed(
    engine: &mut Engine,
    placed: &mut Option<(Placement, Follower)>,
    changes: &[(RelId, Row, Diff)],
) -> Result<Changes, String> {
    let Some((p, f)) = placed.as_mut() else {
        return commit(engine, changes);
    };
    let tx = Transaction {
        changes: changes.to_vec(),
    };
    follow::commit_and_follow(engine, p, f, tx).map_err(|e| e.to_string())
}

fn commit(engine: &mut Engine, changes: &[(RelId, Row, Diff)]) -> Result<Changes, String> {
    let tx = Transaction {
        changes: changes.to_vec(),
    };
    engine.commit(tx).map_err(|e| e.to_string())
}

fn render_everything(plan: &Plan, engine: &Engine) -> Result<usize, String> {
    let outs = intent::located_outputs(plan);
    let devices = netc_targets::group_by_device(plan, &outs, |r| engine.contents(r));
    let a = netc_targets::render_all(&devices).map_err(|e| e.to_string())?;
    Ok(a.len())
}

/// Renders the changed located rows per device: returns (devices, bytes).
fn render_delta(plan: &Plan, outputs: &[RelId], ch: &Changes) -> Result<(usize, usize), String> {
    let mut bytes = 0;
    let mut touched = 0;
    for sign in [1isize, -1] {
        let rows_of = |r: RelId| -> Vec<Row> {
            ch.get(r)
                .iter()
                .filter(|(_, d)| d.signum() == sign)
                .map(|(row, _)| row.clone())
                .collect()
        };
        let devices: BTreeMap<String, DeviceRows> =
            netc_targets::group_by_device(plan, outputs, rows_of);
        touched = touched.max(devices.len());
        for a in netc_targets::render_all(&devices).map_err(|e| e.to_string())? {
            bytes += a.contents.len();
        }
    }
    Ok((touched, bytes))
}

fn apply_to_facts(plan: &mut Plan, changes: &[(RelId, Row, Diff)]) {
    for (r, row, d) in changes {
        match d {
            Diff::Insert => plan.facts.push((*r, row.clone())),
            Diff::Delete => plan.facts.retain(|(fr, frow)| !(fr == r && frow == row)),
        }
    }
}

/// `n` evenly spread picks from `v` (deterministic).
fn spread<T: Clone>(v: &[T], n: usize) -> Vec<T> {
    if v.is_empty() {
        return Vec::new();
    }
    let n = n.min(v.len());
    (0..n).map(|i| v[i * v.len() / n].clone()).collect()
}

fn sym(v: &Value) -> Option<Sym> {
    match v {
        Value::Symbol(s) => Some(*s),
        _ => None,
    }
}

fn make_steps(kind: &str, e: &Engine, r: &Rels, n: usize) -> Vec<Step> {
    use Diff::{Delete as D, Insert as I};
    let vms = e.base_facts(r.vm);
    let ports = e.base_facts(r.vm_port);
    // vm_port(host, tenant, vm, ofport) by (tenant, vm)
    let port_of: BTreeMap<(Sym, Sym), Row> = ports
        .iter()
        .filter_map(|p| Some(((sym(&p[1])?, sym(&p[2])?), p.clone())))
        .collect();
    let vm_with_port: Vec<(Row, Row)> = vms
        .iter()
        .filter_map(|v| {
            let p = port_of.get(&(sym(&v[0])?, sym(&v[1])?))?;
            Some((v.clone(), p.clone()))
        })
        .collect();
    let pools = e.base_facts(r.dip_pool);
    let step = |setup, timed, undo| Step {
        setup,
        timed,
        undo,
        dip_member: None,
    };
    // dip_pool(vip, proto, port, tenant, vm, tport, weight): the pools' VMs
    let in_pool: BTreeSet<(Sym, Sym)> = pools
        .iter()
        .filter_map(|p| Some((sym(&p[3])?, sym(&p[4])?)))
        .collect();
    let member = |v: &Row| Some(in_pool.contains(&(sym(&v[0])?, sym(&v[1])?)));
    match kind {
        "add_vm" => spread(&vm_with_port, n)
            .into_iter()
            .map(|(v, p)| Step {
                dip_member: member(&v),
                ..step(
                    vec![(r.vm, v.clone(), D), (r.vm_port, p.clone(), D)],
                    vec![(r.vm, v, I), (r.vm_port, p, I)],
                    vec![],
                )
            })
            .collect(),
        "remove_dip" => spread(&pools, n)
            .into_iter()
            .map(|p| {
                step(
                    vec![],
                    vec![(r.dip_pool, p.clone(), D)],
                    vec![(r.dip_pool, p, I)],
                )
            })
            .collect(),
        "add_acl" => spread(&e.base_facts(r.acl), n)
            .into_iter()
            .map(|a| step(vec![(r.acl, a.clone(), D)], vec![(r.acl, a, I)], vec![]))
            .collect(),
        "move_vm" => {
            let hosts: Vec<Value> = e.base_facts(r.host).into_iter().map(|h| h[0]).collect();
            if hosts.len() < 2 {
                return Vec::new();
            }
            spread(&vm_with_port, n)
                .into_iter()
                .enumerate()
                .map(|(i, (v, p))| {
                    let at = hosts.iter().position(|h| *h == v[4]).unwrap_or(0);
                    let to = hosts[(at + 1 + i % (hosts.len() - 1)) % hosts.len()];
                    let mut v2 = v.clone();
                    v2[4] = to;
                    let mut p2 = p.clone();
                    p2[0] = to;
                    // a fresh ofport on the new host (generated ones are small)
                    p2[3] = Value::Number(60000 + (i % 5000) as i64);
                    let there = vec![
                        (r.vm, v.clone(), D),
                        (r.vm_port, p.clone(), D),
                        (r.vm, v2.clone(), I),
                        (r.vm_port, p2.clone(), I),
                    ];
                    let dip_member = member(&v);
                    let back = vec![
                        (r.vm, v2, D),
                        (r.vm_port, p2, D),
                        (r.vm, v, I),
                        (r.vm_port, p, I),
                    ];
                    Step {
                        dip_member,
                        ..step(vec![], there, back)
                    }
                })
                .collect()
        }
        "add_vip" => {
            let by_ep: BTreeMap<u32, Vec<Row>> = pools.iter().fold(BTreeMap::new(), |mut m, p| {
                if let Value::Ipv4(ip) = p[0] {
                    m.entry(ip).or_insert_with(Vec::new).push(p.clone());
                }
                m
            });
            let vips = e.base_facts(r.vip);
            spread(&vips, n)
                .into_iter()
                .filter_map(|v| {
                    let Value::Ipv4(ip) = v[1] else { return None };
                    let mut rows = vec![(r.vip, v.clone())];
                    rows.extend(
                        by_ep
                            .get(&ip)
                            .into_iter()
                            .flatten()
                            .filter(|p| p[1] == v[2] && p[2] == v[3])
                            .map(|p| (r.dip_pool, p.clone())),
                    );
                    Some(Step {
                        setup: rows.iter().map(|(rr, x)| (*rr, x.clone(), D)).collect(),
                        timed: rows.into_iter().map(|(rr, x)| (rr, x, I)).collect(),
                        undo: vec![],
                        dip_member: None,
                    })
                })
                .collect()
        }
        "fail_dip" => {
            let down = Value::Symbol(Sym::new("down"));
            spread(&pools, n)
                .into_iter()
                .map(|p| {
                    let h = vec![p[3], p[4], p[1], p[5], down];
                    step(
                        vec![],
                        vec![(r.dip_health, h.clone(), I)],
                        vec![(r.dip_health, h, D)],
                    )
                })
                .filter(|s| !e.is_base_fact(r.dip_health, &s.timed[0].1))
                .collect()
        }
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The quickstart's web1 and web2 are the DIPs of its one VIP; its other
    /// VMs are in no pool: add_vm and move_vm steps say which is which.
    #[test]
    fn vm_steps_know_which_vms_are_in_a_dip_pool() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../examples/quickstart/intent.ndl");
        let c = intent::load(std::slice::from_ref(&path), None).expect("the quickstart loads");
        let plan = Arc::new(c.plan.expect("a plan"));
        let (engine, _) = evaluate(plan.clone(), 1).expect("it evaluates");
        let rels = Rels::new(&plan).expect("the bench's relations");
        for kind in ["add_vm", "move_vm"] {
            let steps = make_steps(kind, &engine, &rels, 100);
            assert!(steps.len() >= 3, "{kind}: {} steps", steps.len());
            let mut members = Vec::new();
            for s in &steps {
                let (_, vm, _) = s
                    .timed
                    .iter()
                    .chain(&s.setup)
                    .find(|(r, _, _)| *r == rels.vm)
                    .expect("a vm row");
                let name = match vm[1] {
                    Value::Symbol(n) => n.as_str().to_string(),
                    _ => panic!("vm name"),
                };
                let expect = name == "web1" || name == "web2";
                assert_eq!(s.dip_member, Some(expect), "{kind} {name}");
                members.push(name);
            }
            assert!(members.iter().any(|n| n == "web1"), "{kind}: {members:?}");
            assert!(members.iter().any(|n| n == "app1"), "{kind}: {members:?}");
        }
    }
}
