//! Timing probes (ignored by default; run with `--release -- --ignored
//! --nocapture`): reachability over 100k nodes / 500k edges from scratch
//! and under single-edge changes.

mod engine_util;

use engine_util::*;
use netc_compiler::plan::ColPat::{Bind, Ignore};
use std::time::Instant;

#[test]
#[ignore]
fn reachability_100k_500k() {
    let workers: usize = std::env::var("WORKERS")
        .ok()
        .and_then(|w| w.parse().ok())
        .unwrap_or(1);
    let mut p = P::new();
    let source = p.nums("source", 1);
    let edge = p.nums("edge", 2);
    let reach = p.nums("reach", 1);
    let r1 = rule(reach, slots(&[0]), scan(source, binds(1)), vec![]);
    let r2 = rule(
        reach,
        slots(&[1]),
        scan(reach, binds(1)),
        vec![join(edge, slots(&[0]), vec![0], vec![Ignore, Bind])],
    );
    p.stratum(&[reach], true, vec![r1, r2]);
    let nodes = 100_000i64;
    let mut x: u64 = 1;
    let mut edges = Vec::new();
    for _ in 0..500_000 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        edges.push(((x >> 33) as i64 % nodes, (x >> 13) as i64 % nodes));
    }
    for &(a, b) in &edges {
        p.fact(edge, row(&[a, b]));
    }
    p.fact(source, row(&[0]));
    let t = Instant::now();
    let mut e = p.engine(workers);
    let scratch = t.elapsed();
    eprintln!(
        "workers {workers}: from scratch {scratch:?}, reach {} rows, {:?}",
        e.len(reach),
        e.stats().last
    );
    let mut worst = std::time::Duration::ZERO;
    let mut total = std::time::Duration::ZERO;
    for i in 0..20 {
        let (a, b) = edges[i * 7919];
        let t = Instant::now();
        e.commit(tx_delete(edge, &[&[a, b]])).unwrap();
        e.commit(tx_insert(edge, &[&[a, b]])).unwrap();
        let d = t.elapsed() / 2;
        worst = worst.max(d);
        total += d;
    }
    let t = Instant::now();
    let c = e.commit(tx_insert(edge, &[&[0, nodes + 5]])).unwrap();
    let leaf = t.elapsed();
    eprintln!(
        "single change: mean {:?}, worst {:?}, new leaf {:?} ({} changes)",
        total / 20,
        worst,
        leaf,
        c.len()
    );
    eprintln!(
        "speedup (mean) {:.0}x",
        scratch.as_secs_f64() / (total / 20).as_secs_f64()
    );
}

/// The benchmark's shape: `reach(s, y) :- source(s), edge(s, y).
/// reach(s, z) :- reach(s, y), edge(y, z).` with 10 sources. Writes the
/// facts as ASP to `$FACTS_LP` if set (for a clingo comparison).
#[test]
#[ignore]
fn reach_from_10_sources() {
    let workers: usize = std::env::var("WORKERS")
        .ok()
        .and_then(|w| w.parse().ok())
        .unwrap_or(1);
    let mut p = P::new();
    let edge = p.nums("edge", 2);
    let source = p.nums("source", 1);
    let reach = p.nums("reach", 2);
    // reach(s, y) :- source(s), edge(s, y).
    let r1 = rule(
        reach,
        slots(&[0, 1]),
        scan(source, binds(1)),
        vec![join(edge, slots(&[0]), vec![0], vec![Ignore, Bind])],
    );
    // reach(s, z) :- reach(s, y), edge(y, z).
    let r2 = rule(
        reach,
        slots(&[0, 2]),
        scan(reach, binds(2)),
        vec![join(edge, slots(&[1]), vec![0], vec![Ignore, Bind])],
    );
    p.stratum(&[reach], true, vec![r1, r2]);
    let nodes = 100_000i64;
    let mut x: u64 = 1;
    let mut edges = Vec::new();
    for _ in 0..500_000 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        edges.push(((x >> 33) as i64 % nodes, (x >> 13) as i64 % nodes));
    }
    let sources: Vec<i64> = (0..10).map(|i| i * 7919).collect();
    if let Ok(path) = std::env::var("FACTS_LP") {
        let mut s = String::new();
        for (a, b) in &edges {
            s.push_str(&format!("edge({a},{b}).\n"));
        }
        for a in &sources {
            s.push_str(&format!("source({a}).\n"));
        }
        std::fs::write(path, s).unwrap();
    }
    let mut tx = netc_engine::Transaction::new();
    for &(a, b) in &edges {
        tx.insert(edge, row(&[a, b]));
    }
    for &a in &sources {
        tx.insert(source, row(&[a]));
    }
    let t = Instant::now();
    let mut e = p.engine(workers);
    let st = e.apply(tx).unwrap();
    let scratch = t.elapsed();
    eprintln!(
        "workers {workers}: from scratch {scratch:?}, reach {} rows, {st:?}",
        e.len(reach)
    );
    let mut total = std::time::Duration::ZERO;
    let mut worst = std::time::Duration::ZERO;
    for i in 0..20 {
        let (a, b) = edges[i * 7919];
        let t = Instant::now();
        e.commit(tx_delete(edge, &[&[a, b]])).unwrap();
        e.commit(tx_insert(edge, &[&[a, b]])).unwrap();
        let d = t.elapsed() / 2;
        worst = worst.max(d);
        total += d;
    }
    eprintln!(
        "single change: mean {:?}, worst {worst:?}; speedup (mean) {:.0}x",
        total / 20,
        scratch.as_secs_f64() / (total / 20).as_secs_f64()
    );
}

/// The benchmark's join: `out(x, u) :- a(x, y), b(y, z), c(z, w), d(w, v),
/// e(v, u).` with 200k uniform facts per relation. Writes ASP facts to
/// `$FACTS_LP` if set.
#[test]
#[ignore]
fn join5_1m() {
    let workers: usize = std::env::var("WORKERS")
        .ok()
        .and_then(|w| w.parse().ok())
        .unwrap_or(1);
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../bench/programs/join5.dl"
    ))
    .unwrap();
    let c = netc_compiler::compile_text("join5.dl", &text);
    let plan = std::sync::Arc::new(c.plan.expect("plan"));
    let m = 200_000i64;
    let mut x: u64 = 5;
    let mut tx = netc_engine::Transaction::new();
    let mut lp = String::new();
    for name in ["a", "b", "c", "d", "e"] {
        let r = plan.relation_id(name).unwrap();
        for _ in 0..m {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let (p, q) = ((x >> 33) as i64 % m, (x >> 13) as i64 % m);
            tx.insert(r, row(&[p, q]));
            lp.push_str(&format!("{name}({p},{q}).\n"));
        }
    }
    if let Ok(path) = std::env::var("FACTS_LP") {
        std::fs::write(path, lp).unwrap();
    }
    let t = Instant::now();
    let mut e = netc_engine::Engine::new(plan.clone(), workers).unwrap();
    let st = e.apply(tx).unwrap();
    eprintln!(
        "join5 workers {workers}: from scratch {:?}, out {} rows, {st:?}",
        t.elapsed(),
        e.len(plan.relation_id("out").unwrap())
    );
}
