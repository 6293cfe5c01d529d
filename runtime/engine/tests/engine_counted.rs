//! Relations no other stratum reads (every output) are *counted*: the
//! dataflow hands their derivations to the driver, which keeps the set.
//! These tests hold that to set semantics where it is easiest to get wrong:
//! a row derived several ways (and also a base fact), its derivations
//! removed one by one, across workers, with the commit's `Changes` net.

use netc_compiler::plan::{Plan, RelId};
use netc_compiler::value::Row;
use netc_engine::{Changes, Engine, Transaction};
use std::sync::Arc;

mod engine_util;
use engine_util::{compile_text, rel_named, row};

fn compile(text: &str) -> Arc<Plan> {
    compile_text("counted.ndl", text)
}

/// `out` is read by no other stratum, so it is counted; `mid` feeds `out`
/// and `other`, so it stays a set in the dataflow.
const PROGRAM: &str = "
.decl a(x: number, y: number)
.decl b(x: number)
.decl mid(x: number, y: number)
.decl out(x: number)
.decl other(x: number)
.output out, other
mid(x, y) :- a(x, y).
out(x) :- mid(x, _).
out(x) :- b(x).
other(x) :- mid(x, y), y > 1.
";

fn changes_of(c: &Changes, rel: RelId) -> Vec<(Row, isize)> {
    c.get(rel).to_vec()
}

fn one(t: &mut Transaction, rel: RelId, xs: &[i64], insert: bool) {
    if insert {
        t.insert(rel, row(xs));
    } else {
        t.delete(rel, row(xs));
    }
}

fn check(workers: usize) {
    let plan = compile(PROGRAM);
    let (a, b, out) = (
        rel_named(&plan, "a"),
        rel_named(&plan, "b"),
        rel_named(&plan, "out"),
    );
    let mut e = Engine::new(plan.clone(), workers).unwrap();
    let step = |e: &mut Engine, ops: &[(RelId, &[i64], bool)]| {
        let mut t = Transaction::new();
        for (rel, xs, ins) in ops {
            one(&mut t, *rel, xs, *ins);
        }
        e.commit(t).unwrap()
    };

    // Three derivations of out(1): two through `mid`, one through `b`.
    let c = step(
        &mut e,
        &[(a, &[1, 1], true), (a, &[1, 2], true), (b, &[1], true)],
    );
    assert_eq!(
        changes_of(&c, out),
        vec![(row(&[1]), 1)],
        "{workers} workers"
    );
    assert_eq!(e.contents(out), vec![row(&[1])]);

    // Removing two of them changes nothing in `out`.
    let c = step(&mut e, &[(a, &[1, 1], false), (b, &[1], false)]);
    assert!(changes_of(&c, out).is_empty(), "{workers} workers: {c:?}");
    assert_eq!(e.contents(out), vec![row(&[1])]);

    // Replacing the last derivation by another in one commit: no change.
    let c = step(&mut e, &[(a, &[1, 2], false), (a, &[1, 3], true)]);
    assert!(changes_of(&c, out).is_empty(), "{workers} workers: {c:?}");

    // The last one goes: so does the row.
    let c = step(&mut e, &[(a, &[1, 3], false)]);
    assert_eq!(
        changes_of(&c, out),
        vec![(row(&[1]), -1)],
        "{workers} workers"
    );
    assert!(e.contents(out).is_empty());

    // And it can come back, as a base fact of `out` itself plus a rule.
    let c = step(&mut e, &[(out, &[1], true), (b, &[1], true)]);
    assert_eq!(
        changes_of(&c, out),
        vec![(row(&[1]), 1)],
        "{workers} workers"
    );
    let c = step(&mut e, &[(out, &[1], false)]);
    assert!(changes_of(&c, out).is_empty(), "{workers} workers: {c:?}");
    assert!(e.contains(out, &row(&[1])));
}

#[test]
fn a_counted_row_stays_while_any_derivation_does() {
    for workers in [1, 3] {
        check(workers);
    }
}

#[test]
fn many_derivations_across_workers_match_from_scratch() {
    let plan = compile(PROGRAM);
    let (a, out) = (rel_named(&plan, "a"), rel_named(&plan, "out"));
    for workers in [1, 2] {
        let mut e = Engine::new(plan.clone(), workers).unwrap();
        // 50 keys, each derived by up to 7 rows of `a`; then every other
        // derivation removed, then the rest.
        let mut t = Transaction::new();
        for x in 0..50 {
            for y in 0..(x % 7 + 1) {
                t.insert(a, row(&[x, y]));
            }
        }
        e.commit(t).unwrap();
        assert_eq!(e.len(out), 50);
        for parity in [0, 1] {
            let mut t = Transaction::new();
            for x in 0..50 {
                for y in (0..(x % 7 + 1)).filter(|y| y % 2 == parity) {
                    t.delete(a, row(&[x, y]));
                }
            }
            let c = e.commit(t).unwrap();
            let gone = changes_of(&c, out);
            if parity == 0 {
                // keys with a single derivation (y = 0 only) disappear
                let expect: Vec<(Row, isize)> = (0..50)
                    .filter(|x| x % 7 == 0)
                    .map(|x| (row(&[x]), -1))
                    .collect();
                assert_eq!(gone, expect, "{workers} workers");
            } else {
                assert_eq!(gone.len(), 50 - 8, "{workers} workers");
            }
        }
        assert_eq!(e.len(out), 0);
    }
}
