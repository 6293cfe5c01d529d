//! Functional-dependency checks (`engine/fdcheck.rs`): a rule
//! `e(k) :- r(k, a1, _), r(k, a2, _), a1 < a2` is evaluated by the driver
//! from `r`'s changes, not by the dataflow. These tests hold every commit's
//! contents and net changes to the rule's plain meaning, computed here
//! from the base facts by a nested loop over pairs of rows, over random
//! sequences of inserts and deletes that make and unmake conflicts; with 1
//! and 2 workers, with `r` counted (no other stratum reads it: a split
//! stratum of four rule pieces) and with `r` a set (a twin rule the
//! recogniser does not take, evaluated by the dataflow, reads it), and in
//! a one-shot engine.

use netc_compiler::plan::Plan;
use netc_compiler::value::Row;
use netc_engine::{Engine, Transaction};
use proptest::prelude::*;
use std::collections::BTreeSet;
use std::sync::Arc;

mod engine_util;
use engine_util::{compile_text, rel_named, row};

/// `r` from four rules reading four different sets (split, counted), and
/// base facts of its own; `e` (head columns swapped) also takes base facts.
const COUNTED: &str = "
.decl s1(h: number, k: number, a: number, c: number)
.decl s2(h: number, k: number, a: number, c: number)
.decl s3(h: number, k: number, a: number, c: number)
.decl s4(h: number, k: number, a: number, c: number)
.decl r(h: number, k: number, a: number, c: number)
.decl e(k: number, h: number)
.output r, e
r(h, k, a, c) :- s1(h, k, a, c).
r(h, k, a, c) :- s2(h, k, a, c).
r(h, k, a, c) :- s3(h, k, a, c), s1(h, _, _, _).
r(h, k, a, c) :- s4(h, k, a, c), !s2(h, k, a, c).
e(k, h) :- r(h, k, a1, _), r(h, k, a2, _), a1 < a2.
";

/// The same with a twin of the check that the recogniser does not take (a
/// second, redundant comparison), so `r` is read by another stratum.
fn with_twin() -> String {
    format!(
        "{COUNTED}
.decl e2(k: number, h: number)
.output e2
e2(k, h) :- r(h, k, a1, _), r(h, k, a2, _), a1 < a2, a2 > a1.
"
    )
}

/// Relations a commit may change.
const EDITABLE: [&str; 6] = ["s1", "s2", "s3", "s4", "r", "e"];

/// One edit: insert (`true`) or delete a base fact of `EDITABLE[rel]`
/// with values `(h, k, a, c)` (`e` takes `(h, k)`).
type Edit = (usize, [i64; 4], bool);

/// `r` and `e` by their rules' plain meaning, from the base facts.
fn expected(facts: &BTreeSet<(String, Vec<i64>)>) -> (BTreeSet<Vec<i64>>, BTreeSet<Vec<i64>>) {
    let of = |n: &str| -> BTreeSet<Vec<i64>> {
        facts
            .iter()
            .filter(|(r, _)| r == n)
            .map(|(_, v)| v.clone())
            .collect()
    };
    let (s1, s2, s3, s4) = (of("s1"), of("s2"), of("s3"), of("s4"));
    let mut r = of("r");
    r.extend(s1.iter().cloned());
    r.extend(s2.iter().cloned());
    r.extend(
        s3.iter()
            .filter(|x| s1.iter().any(|y| y[0] == x[0]))
            .cloned(),
    );
    r.extend(s4.iter().filter(|x| !s2.contains(*x)).cloned());
    let mut e = of("e");
    for x in &r {
        for y in &r {
            if x[0] == y[0] && x[1] == y[1] && x[2] < y[2] {
                e.insert(vec![x[1], x[0]]);
            }
        }
    }
    (r, e)
}

fn rows_of(set: &BTreeSet<Vec<i64>>) -> Vec<Row> {
    set.iter().map(|v| row(v)).collect()
}

/// Runs `commits` warm on `plan` and checks `r`, `e` (and the twin `e2`,
/// if there is one) after each, and `e`'s net changes.
fn run(plan: &Arc<Plan>, commits: &[Vec<Edit>], workers: usize) {
    let mut engine = Engine::new(plan.clone(), workers).unwrap();
    let (r, e) = (rel_named(plan, "r"), rel_named(plan, "e"));
    let twin = plan.relation_id("e2");
    let mut facts: BTreeSet<(String, Vec<i64>)> = BTreeSet::new();
    let mut before = BTreeSet::new();
    for (i, edits) in commits.iter().enumerate() {
        let mut t = Transaction::new();
        for &(rel, vals, insert) in edits {
            let name = EDITABLE[rel];
            let vals = if name == "e" {
                vals[..2].to_vec()
            } else {
                vals.to_vec()
            };
            let id = rel_named(plan, name);
            if insert {
                facts.insert((name.to_string(), vals.clone()));
                t.insert(id, row(&vals));
            } else {
                facts.remove(&(name.to_string(), vals.clone()));
                t.delete(id, row(&vals));
            }
        }
        let changes = engine.commit(t).unwrap();
        let (want_r, want_e) = expected(&facts);
        assert_eq!(engine.contents(r), rows_of(&want_r), "r after commit {i}");
        assert_eq!(
            engine.contents(e),
            rows_of(&want_e),
            "e after commit {i}, {workers} worker(s)"
        );
        if let Some(e2) = twin {
            // The twin has no base facts: only what the rule derives.
            let derived = expected(&facts.iter().filter(|(n, _)| n != "e").cloned().collect()).1;
            assert_eq!(
                engine.contents(e2),
                rows_of(&derived),
                "e2 after commit {i}"
            );
        }
        let mut net: Vec<(Row, isize)> = want_e
            .difference(&before)
            .map(|v| (row(v), 1))
            .chain(before.difference(&want_e).map(|v| (row(v), -1)))
            .collect();
        net.sort();
        let mut got = changes.get(e).to_vec();
        got.sort();
        assert_eq!(got, net, "e's changes in commit {i}, {workers} worker(s)");
        before = want_e;
    }
    // A one-shot engine started on the final facts computes the same.
    let mut p = (**plan).clone();
    for (name, vals) in &facts {
        p.facts.push((rel_named(plan, name), row(vals)));
    }
    p.fact_spans.clear();
    let one = Engine::new_one_shot(Arc::new(p), workers, &[]).unwrap();
    let (want_r, want_e) = expected(&facts);
    assert_eq!(one.contents(r), rows_of(&want_r));
    assert_eq!(
        one.contents(e),
        rows_of(&want_e),
        "one-shot e, {workers} worker(s)"
    );
}

/// A conflict made, kept by a second, unmade one value at a time, and a
/// duplicate value (same key and value, another `c`) that is no conflict.
#[test]
fn conflicts_come_and_go_with_their_rows() {
    let s1 = |h, k, a, c, ins| (0, [h, k, a, c], ins);
    let r = |h, k, a, c, ins| (4, [h, k, a, c], ins);
    let commits = vec![
        vec![s1(1, 1, 5, 0, true)],
        vec![r(1, 1, 5, 1, true)],
        vec![r(1, 1, 6, 0, true)],
        vec![s1(1, 1, 7, 0, true)],
        vec![r(1, 1, 6, 0, false)],
        vec![s1(1, 1, 7, 0, false), s1(1, 1, 5, 0, false)],
        vec![
            r(1, 1, 5, 1, false),
            r(2, 2, 1, 1, true),
            r(2, 2, 2, 1, true),
        ],
        vec![(5, [2, 2, 0, 0], true)],
        vec![r(2, 2, 1, 1, false)],
    ];
    let counted = compile_text("fd.ndl", COUNTED);
    let twin = compile_text("fd2.ndl", &with_twin());
    for workers in [1, 2] {
        run(&counted, &commits, workers);
        run(&twin, &commits, workers);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn checks_match_the_plain_meaning(
        commits in proptest::collection::vec(
            proptest::collection::vec(
                (
                    prop::sample::select(vec![0usize, 0, 1, 2, 3, 4, 4, 5]),
                    (0i64..2, 0i64..2, 0i64..3, 0i64..2).prop_map(|(h, k, a, c)| [h, k, a, c]),
                    prop::bool::weighted(0.6),
                ),
                1..5,
            ),
            1..10,
        ),
        twin in any::<bool>(),
        workers in 1usize..3,
    ) {
        let plan = if twin {
            compile_text("fd2.ndl", &with_twin())
        } else {
            compile_text("fd.ndl", COUNTED)
        };
        run(&plan, &commits, workers);
    }
}
