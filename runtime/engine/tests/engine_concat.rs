//! `concat x by k1, .. : { body }`: per group, the distinct (keys, x) of
//! the body in `Value` order, their texts joined with `,` — checked after
//! every commit of a random sequence against a plain model of that
//! definition and against a from-scratch engine; a group with no rows has
//! no result; keys order by value (10 after 9), not by text.

use netc_compiler::plan::{Plan, RelId};
use netc_compiler::value::{Row, Value};
use netc_engine::{Engine, Transaction};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

const PROGRAM: &str = "
.decl part(g: symbol, k: number, t: symbol)
.decl tag(k: number, w: number)
.input part, tag
.decl joined(g: symbol, s: symbol)
.decl tagged(g: symbol, s: symbol)
.output joined, tagged
joined(g, s) :- part(g, _, _), s = concat t by k : { part(g, k, t) }.
// every tag of k is one more binding of (k, t): still one part
tagged(g, s) :- part(g, _, _), s = concat cat(t, \"!\") by k, t : { part(g, k, t), tag(k, _) }.
";

fn plan() -> Arc<Plan> {
    let c = netc_compiler::compile_text("concat.ndl", PROGRAM);
    assert!(!c.diagnostics.has_errors(), "the program does not compile");
    Arc::new(c.plan.expect("a plan"))
}

fn rel(p: &Plan, name: &str) -> RelId {
    p.relation_id(name).unwrap()
}

fn s(x: &str) -> Value {
    Value::sym(x)
}

/// The definition, directly: group → sorted distinct (k, t) → joined texts.
fn model(
    parts: &BTreeSet<(String, i64, String)>,
    tags: &BTreeSet<(i64, i64)>,
) -> (Vec<Row>, Vec<Row>) {
    let mut joined: BTreeMap<&str, Vec<(i64, &str)>> = BTreeMap::new();
    let mut tagged: BTreeMap<&str, BTreeSet<(i64, String)>> = BTreeMap::new();
    for (g, k, t) in parts {
        joined.entry(g).or_default().push((*k, t));
        if tags.iter().any(|(tk, _)| tk == k) {
            tagged.entry(g).or_default().insert((*k, format!("{t}!")));
        }
    }
    let rows = |m: Vec<(&str, String)>| -> Vec<Row> {
        m.into_iter()
            .map(|(g, text)| vec![s(g), s(&text)])
            .collect()
    };
    let j = joined
        .into_iter()
        .map(|(g, mut v)| {
            v.sort();
            (g, v.iter().map(|(_, t)| *t).collect::<Vec<_>>().join(","))
        })
        .collect();
    let t = tagged
        .into_iter()
        .map(|(g, v)| {
            (
                g,
                v.into_iter().map(|(_, t)| t).collect::<Vec<_>>().join(","),
            )
        })
        .collect();
    (rows(j), rows(t))
}

fn sorted(mut rows: Vec<Row>) -> Vec<Row> {
    netc_engine::sort_rows(&mut rows);
    rows
}

#[test]
fn keys_order_by_value_and_an_empty_group_has_no_row() {
    let p = plan();
    let (part, joined) = (rel(&p, "part"), rel(&p, "joined"));
    let mut e = Engine::new(p.clone(), 1).unwrap();
    let mut t = Transaction::new();
    for (g, k, x) in [
        ("a", 10, "ten"),
        ("a", 9, "nine"),
        ("a", 9, "alsonine"),
        ("b", 1, "one"),
    ] {
        t.insert(part, vec![s(g), Value::Number(k), s(x)]);
    }
    e.commit(t).unwrap();
    assert_eq!(
        e.contents(joined),
        vec![vec![s("a"), s("alsonine,nine,ten")], vec![s("b"), s("one")]]
    );
    let mut t = Transaction::new();
    t.delete(part, vec![s("b"), Value::Number(1), s("one")]);
    e.commit(t).unwrap();
    assert_eq!(
        e.contents(joined),
        vec![vec![s("a"), s("alsonine,nine,ten")]]
    );
}

#[test]
fn random_commits_match_the_definition_and_a_fresh_engine() {
    let p = plan();
    let (part, tag) = (rel(&p, "part"), rel(&p, "tag"));
    let (joined, tagged) = (rel(&p, "joined"), rel(&p, "tagged"));
    let mut e = Engine::new(p.clone(), 2).unwrap();
    let (mut parts, mut tags) = (BTreeSet::new(), BTreeSet::new());
    let mut x: u64 = 7;
    let mut next = |n: u64| {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (x >> 33) % n
    };
    for step in 0..60 {
        let mut t = Transaction::new();
        for _ in 0..1 + next(4) {
            if next(3) == 0 {
                let row = (next(5) as i64, next(2) as i64);
                let r = vec![Value::Number(row.0), Value::Number(row.1)];
                if tags.remove(&row) {
                    t.delete(tag, r);
                } else {
                    tags.insert(row);
                    t.insert(tag, r);
                }
            } else {
                let g = ["g1", "g2", "g3"][next(3) as usize].to_string();
                let row = (
                    g,
                    next(12) as i64,
                    ["x", "y", "zz"][next(3) as usize].to_string(),
                );
                let r = vec![s(&row.0), Value::Number(row.1), s(&row.2)];
                if parts.remove(&row) {
                    t.delete(part, r);
                } else {
                    parts.insert(row);
                    t.insert(part, r);
                }
            }
        }
        e.commit(t).unwrap();
        let (want_j, want_t) = model(&parts, &tags);
        assert_eq!(e.contents(joined), sorted(want_j), "step {step}: joined");
        assert_eq!(e.contents(tagged), sorted(want_t), "step {step}: tagged");
    }
    let mut fresh = (*p).clone();
    fresh.facts = [part, tag]
        .into_iter()
        .flat_map(|r| e.base_facts(r).into_iter().map(move |row| (r, row)))
        .collect();
    let fresh = Engine::new(Arc::new(fresh), 1).unwrap();
    assert_eq!(e.contents(joined), fresh.contents(joined));
    assert_eq!(e.contents(tagged), fresh.contents(tagged));
}
