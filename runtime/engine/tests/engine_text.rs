//! Programs from text (`netc_compiler::compile_text`): the fabric example
//! and a mixed program, with the strongest oracle there is for an
//! incremental engine — after every commit, every relation equals what a
//! fresh engine computes from scratch on the same base facts — and with
//! results independent of the worker count.

use netc_compiler::plan::{Plan, RelId};
use netc_compiler::value::{Row, Value};
use netc_engine::{Engine, Transaction};
use std::sync::Arc;

fn compile(name: &str, text: &str) -> Arc<Plan> {
    let c = netc_compiler::compile_text(name, text);
    assert!(!c.diagnostics.has_errors(), "{name} does not compile");
    Arc::new(c.plan.expect("a plan"))
}

/// Every relation of `e` equals a from-scratch evaluation of its base facts.
fn assert_matches_scratch(e: &Engine, workers: usize, context: &str) {
    let mut plan = (**e.plan()).clone();
    plan.facts = (0..plan.relations.len())
        .flat_map(|r| e.base_facts(r).into_iter().map(move |row| (r, row)))
        .collect();
    let fresh = Engine::new(Arc::new(plan), workers).unwrap();
    for rel in 0..e.plan().relations.len() {
        assert_eq!(
            e.contents(rel),
            fresh.contents(rel),
            "{context}: relation {}",
            e.plan().relations[rel].name
        );
    }
}

fn rel(p: &Plan, name: &str) -> RelId {
    p.relation_id(name)
        .unwrap_or_else(|| panic!("no relation {name}"))
}

fn s(x: &str) -> Value {
    Value::sym(x)
}

#[test]
fn fabric_example_updates_match_from_scratch() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/fabric/fabric.ndl"
    ))
    .unwrap();
    let plan = compile("fabric.ndl", &text);
    let link = rel(&plan, "link");
    let attached = rel(&plan, "attached");
    let unreachable = rel(&plan, "unreachable");
    let mut one = Engine::new(plan.clone(), 1).unwrap();
    let mut three = Engine::new(plan.clone(), 3).unwrap();
    for r in 0..plan.relations.len() {
        assert_eq!(one.contents(r), three.contents(r));
    }
    // leaf3 hangs off spine2 alone: h3 cannot reach the other subnets.
    assert_eq!(one.len(unreachable), 4);

    let nodes = [
        "leaf1", "leaf2", "leaf3", "spine1", "spine2", "h1", "h2", "h3",
    ];
    let mut x: u64 = 3;
    for step in 0..25 {
        let mut t = Transaction::new();
        for _ in 0..2 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let (a, b) = (
                nodes[(x >> 33) as usize % nodes.len()],
                nodes[(x >> 40) as usize % nodes.len()],
            );
            let row: Row = vec![s(a), s(b)];
            if one.contains(link, &row) {
                t.delete(link, row);
            } else {
                t.insert(link, row);
            }
        }
        if step % 7 == 3 {
            t.delete(attached, vec![s("h2"), Value::Ipv4(0x0a000214)]);
        }
        if step % 7 == 5 {
            t.insert(attached, vec![s("h2"), Value::Ipv4(0x0a000214)]);
        }
        let c1 = one.commit(t.clone()).unwrap();
        let c3 = three.commit(t).unwrap();
        assert_eq!(c1, c3, "step {step}");
        assert_matches_scratch(&one, 2, &format!("step {step}"));
    }
}

const MIXED: &str = r#"
.type Host <: symbol
.decl edge(a: Host, b: Host, w: number)
.decl addr(h: Host, ip: ipv4)
.decl net(p: prefix4, zone: symbol)
.decl path(a: Host, b: Host)
.decl lonely(h: Host)
.decl out_deg(h: Host, n: number)
.decl out_w(h: Host, total: number)
.decl cheapest(h: Host, w: number)
.decl dearest(h: Host, w: number)
.decl zone_of(h: Host, z: symbol)
.decl zone_size(z: symbol, n: number)
.decl mutual(a: Host, b: Host)
.decl onward(a: Host, b: Host, n: number)

path(a, b) :- edge(a, b, _).
path(a, c) :- path(a, b), edge(b, c, _), a != c.
lonely(h) :- addr(h, _), !path(h, _), !path(_, h).
out_deg(h, n) :- addr(h, _), n = count : { edge(h, _, _) }.
out_w(h, t) :- addr(h, _), t = sum w : { edge(h, _, w) }.
cheapest(h, w) :- addr(h, _), w = min x : { edge(h, _, x) }.
dearest(h, w) :- addr(h, _), w = max x : { edge(h, _, x) }.
zone_of(h, z) :- addr(h, ip), net(p, z), contains(p, ip).
zone_size(z, n) :- net(_, z), n = count : { zone_of(_, z) }.
mutual(a, b) :- path(a, b), path(b, a), a < b.
// An aggregate over a lower stratum inside a recursive one.
onward(a, b, n) :- edge(a, b, _), n = count : { edge(b, _, _) }.
onward(a, c, n) :- onward(a, b, m), m > 0, edge(b, c, _), n = count : { edge(c, _, _) }.

net(10.0.0.0/8, "ten").
net(10.1.0.0/16, "ten-one").
net(192.168.0.0/16, "home").
"#;

#[test]
fn mixed_program_updates_match_from_scratch() {
    let plan = compile("mixed.dl", MIXED);
    let edge = rel(&plan, "edge");
    let addr = rel(&plan, "addr");
    let hosts = ["a", "b", "c", "d", "e"];
    let ips = [0x0a000001u32, 0x0a010002, 0xc0a80003, 0x08080808];
    let mut one = Engine::new(plan.clone(), 1).unwrap();
    let mut four = Engine::new(plan.clone(), 4).unwrap();
    let mut x: u64 = 11;
    let mut next = || {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        x >> 33
    };
    for step in 0..30 {
        let mut t = Transaction::new();
        for _ in 0..3 {
            let r = next();
            let (a, b) = (hosts[r as usize % 5], hosts[(r >> 4) as usize % 5]);
            let w = (r >> 8) as i64 % 4;
            let row = vec![s(a), s(b), Value::Number(w)];
            if r % 3 == 0 {
                t.delete(edge, row);
            } else {
                t.insert(edge, row);
            }
        }
        let r = next();
        let row = vec![
            s(hosts[r as usize % 5]),
            Value::Ipv4(ips[(r >> 3) as usize % 4]),
        ];
        if r % 2 == 0 {
            t.insert(addr, row);
        } else {
            t.delete(addr, row);
        }
        let c1 = one.commit(t.clone()).unwrap();
        let c4 = four.commit(t).unwrap();
        assert_eq!(c1, c4, "step {step}");
        assert_matches_scratch(&one, 1, &format!("step {step}"));
    }
    // Symbols come back sorted by text.
    let zones: Vec<Row> = one.contents(rel(&plan, "zone_size"));
    let names: Vec<String> = zones.iter().map(|r| r[0].to_string()).collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
}

#[test]
fn small_programs_from_text() {
    let plan = compile(
        "small.dl",
        r#"
.decl nat(n: number)
nat(0).
nat(y) :- nat(x), y = x + 1, y < 5.
.decl ok()
ok() :- nat(3).
.decl fl(x: float)
fl(1.5). fl(2.25).
.decl fsum(s: float)
fsum(s) :- s = sum x : { fl(x) }.
.decl big(n: number)
big(n) :- nat(n), n >= 3, !ok().
.decl pow2(n: number)
pow2(n) :- n = 1.
pow2(y) :- pow2(x), y = x * 2, y < 20.
"#,
    );
    let mut e = Engine::new(plan.clone(), 2).unwrap();
    let num = |n: i64| vec![Value::Number(n)];
    assert_eq!(
        e.contents(rel(&plan, "nat")),
        (0..5).map(num).collect::<Vec<_>>()
    );
    assert_eq!(e.contents(rel(&plan, "ok")), vec![Vec::<Value>::new()]);
    assert_eq!(
        e.contents(rel(&plan, "fsum")),
        vec![vec![Value::Float(netc_compiler::value::F64(3.75))]]
    );
    assert_eq!(e.len(rel(&plan, "big")), 0);
    let pow2: Vec<_> = [1, 2, 4, 8, 16].into_iter().map(num).collect();
    assert_eq!(
        e.contents(rel(&plan, "pow2")),
        pow2,
        "a rule without atoms inside a loop"
    );
    // Retracting the fact that starts the recursion empties it, and the
    // nullary relation with it.
    let mut t = Transaction::new();
    t.delete(rel(&plan, "nat"), num(0));
    let c = e.commit(t).unwrap();
    assert_eq!(c.get(rel(&plan, "ok")), &[(vec![], -1)]);
    assert_eq!(e.len(rel(&plan, "nat")), 0);
    let mut t = Transaction::new();
    t.insert(rel(&plan, "nat"), num(3));
    let c = e.commit(t).unwrap();
    assert_eq!(c.get(rel(&plan, "ok")), &[(vec![], 1)]);
    assert!(c.get(rel(&plan, "big")).is_empty());
    // Without nat(3), ok() fails and the negation lets big(4) through.
    let mut t = Transaction::new();
    t.delete(rel(&plan, "nat"), num(3))
        .insert(rel(&plan, "nat"), num(4));
    let c = e.commit(t).unwrap();
    assert_eq!(c.get(rel(&plan, "ok")), &[(vec![], -1)]);
    assert_eq!(c.get(rel(&plan, "big")), &[(num(4), 1)]);
    assert_eq!(c.get(rel(&plan, "nat")), &[(num(3), -1)]);
}

#[test]
fn engine_is_send() {
    fn send<T: Send>() {}
    send::<Engine>();
}

/// Filters right after a scan, a join (the leading scan–join and a later
/// one), a bind and an aggregate, at the end of a body and in its middle,
/// are checked in the step before them (body.rs fuses them): each
/// relation equals the same rule computed here with plain iterators, after
/// every commit of a pseudo-random insert/delete sequence.
#[test]
fn fused_filters_agree_with_a_direct_evaluation() {
    let text = r#"
.decl e(a: number, b: number)
.decl w(a: number, x: number)
.decl big(a: number, b: number)
.decl up(a: number, c: number)
.decl up3(a: number, c: number, x: number)
.decl sumb(a: number, s: number)
.decl heavy(a: number, s: number)
.decl mid(a: number, b: number)
.output big, up, up3, sumb, heavy, mid
big(a, b) :- e(a, b), b > 3, a != b.
up(a, c) :- e(a, b), e(b, c), a < c.
up3(a, c, x) :- e(a, b), e(b, c), a < b, w(c, x), x > a.
sumb(a, s) :- e(a, _), s = sum b : { e(a, b) }, s > 4.
heavy(a, s) :- w(a, x), s = x * 2, s >= 6, a != x.
mid(a, b) :- e(a, b), a < b, w(a, x), x != b.
"#;
    let plan = compile("filters.ndl", text);
    let (e_rel, w_rel) = (rel(&plan, "e"), rel(&plan, "w"));
    let mut one = Engine::new(plan.clone(), 1).unwrap();
    let mut two = Engine::new(plan.clone(), 2).unwrap();
    let n = |v: i64| Value::Number(v);
    let mut x: u64 = 11;
    for step in 0..60 {
        let mut t = Transaction::new();
        for _ in 0..3 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let (r, a, b) = ((x >> 60) & 1, (x >> 33) % 7, (x >> 45) % 7);
            let (r, row) = if r == 0 {
                (e_rel, vec![n(a as i64), n(b as i64)])
            } else {
                (w_rel, vec![n(a as i64), n(b as i64)])
            };
            if one.contains(r, &row) {
                t.delete(r, row);
            } else {
                t.insert(r, row);
            }
        }
        one.commit(t.clone()).unwrap();
        two.commit(t).unwrap();
        let pairs = |r: RelId| -> Vec<(i64, i64)> {
            one.contents(r)
                .iter()
                .map(|row| match (row[0], row[1]) {
                    (Value::Number(a), Value::Number(b)) => (a, b),
                    _ => panic!("not numbers"),
                })
                .collect()
        };
        let (e, w) = (pairs(e_rel), pairs(w_rel));
        let mut want: std::collections::BTreeMap<&str, std::collections::BTreeSet<Vec<i64>>> =
            Default::default();
        for &(a, b) in &e {
            if b > 3 && a != b {
                want.entry("big").or_default().insert(vec![a, b]);
            }
            for &(b2, c) in &e {
                if b2 == b && a < c {
                    want.entry("up").or_default().insert(vec![a, c]);
                }
                for &(c2, xx) in &w {
                    if b2 == b && a < b && c2 == c && xx > a {
                        want.entry("up3").or_default().insert(vec![a, c, xx]);
                    }
                }
            }
            let s: i64 = e.iter().filter(|p| p.0 == a).map(|p| p.1).sum();
            if s > 4 {
                want.entry("sumb").or_default().insert(vec![a, s]);
            }
            for &(a2, xx) in &w {
                if a2 == a && a < b && xx != b {
                    want.entry("mid").or_default().insert(vec![a, b]);
                }
            }
        }
        for &(a, xx) in &w {
            if xx * 2 >= 6 && a != xx {
                want.entry("heavy").or_default().insert(vec![a, xx * 2]);
            }
        }
        for name in ["big", "up", "up3", "sumb", "heavy", "mid"] {
            let r = rel(&plan, name);
            let got: std::collections::BTreeSet<Vec<i64>> = one
                .contents(r)
                .iter()
                .map(|row| {
                    row.iter()
                        .map(|v| match v {
                            Value::Number(x) => *x,
                            _ => panic!("not a number"),
                        })
                        .collect()
                })
                .collect();
            let expected = want.remove(name).unwrap_or_default();
            assert_eq!(got, expected, "step {step}: {name}");
            assert_eq!(
                one.contents(r),
                two.contents(r),
                "step {step}: {name}, 2 workers"
            );
        }
    }
}
