//! Split strata (`engine/pieces.rs`): a stratum whose rules read different
//! relations runs as one piece per set of relations read, plus a union
//! piece for a relation other strata read. These tests hold it to set
//! semantics against a direct evaluation in plain Rust, over random
//! transaction sequences, with 1 and 2 workers: a set relation derived by
//! three rule pieces (and base facts) and read by an aggregate and a
//! counted relation derived by two rule pieces (and base facts); every
//! commit's `Changes` must be exactly the net difference.

use netc_compiler::plan::Plan;
use netc_compiler::value::Row;
use netc_engine::{Engine, Transaction};
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

mod engine_util;
use engine_util::{compile_text, rel_named, row};

/// `u`: four rules reading `a`, `b`, `c`, `a` and `b` (four rule pieces),
/// read by `v` and `w` (so a union piece makes it a set). `w`: read by no
/// one (counted), four rules reading `u`, `c`, `a`, `b` and `c`. `v`: an
/// aggregate whose head is its group key and the count. (`pieces.rs`
/// splits a stratum whose rules read at least four different sets.)
const PROGRAM: &str = "
.decl a(x: number, y: number)
.decl b(x: number, y: number)
.decl c(x: number)
.decl u(x: number, y: number)
.decl v(x: number, n: number)
.decl w(x: number)
.output u, v, w
u(x, y) :- a(x, y).
u(x, y) :- b(y, x), y > 0.
u(x, 0) :- c(x).
u(x, y) :- a(x, z), b(z, y).
v(x, n) :- u(x, _), n = count : { u(x, _y) }.
w(x) :- u(x, y), y > 2.
w(x) :- c(x).
w(x) :- a(_, x).
w(x) :- b(x, y), c(y).
";

fn compile() -> Arc<Plan> {
    compile_text("split.ndl", PROGRAM)
}

/// Base facts per relation name, as plain numbers.
type Facts = BTreeMap<&'static str, BTreeSet<Vec<i64>>>;

/// The program evaluated directly from `facts`: relation name → rows.
fn direct(facts: &Facts) -> BTreeMap<&'static str, BTreeSet<Vec<i64>>> {
    let get = |n: &str| facts.get(n).cloned().unwrap_or_default();
    let mut u = get("u");
    u.extend(get("a"));
    u.extend(
        get("b")
            .iter()
            .filter(|r| r[0] > 0)
            .map(|r| vec![r[1], r[0]]),
    );
    u.extend(get("c").iter().map(|r| vec![r[0], 0]));
    for ra in &get("a") {
        for rb in get("b").iter().filter(|rb| rb[0] == ra[1]) {
            u.insert(vec![ra[0], rb[1]]);
        }
    }
    let mut v = get("v");
    let mut counts: BTreeMap<i64, i64> = BTreeMap::new();
    for r in &u {
        *counts.entry(r[0]).or_default() += 1;
    }
    v.extend(counts.iter().map(|(x, n)| vec![*x, *n]));
    let mut w = get("w");
    w.extend(u.iter().filter(|r| r[1] > 2).map(|r| vec![r[0]]));
    w.extend(get("c"));
    w.extend(get("a").iter().map(|r| vec![r[1]]));
    w.extend(
        get("b")
            .iter()
            .filter(|r| get("c").contains(&vec![r[1]]))
            .map(|r| vec![r[0]]),
    );
    BTreeMap::from([("u", u), ("v", v), ("w", w)])
}

/// One edit: insert (`true`) or delete a base fact of a relation.
type Edit = (usize, i64, i64, bool);

const EDITABLE: [&str; 6] = ["a", "b", "c", "u", "v", "w"];

fn arity(name: &str) -> usize {
    match name {
        "c" | "w" => 1,
        _ => 2,
    }
}

fn run(commits: &[Vec<Edit>], workers: usize) {
    let plan = compile();
    let mut e = Engine::new(plan.clone(), workers).unwrap();
    let mut facts = Facts::new();
    let mut before = direct(&facts);
    for (i, edits) in commits.iter().enumerate() {
        let mut t = Transaction::new();
        for &(r, x, y, insert) in edits {
            let name = EDITABLE[r];
            let xs: Vec<i64> = [x, y][..arity(name)].to_vec();
            let set = facts.entry(name).or_default();
            if insert {
                set.insert(xs.clone());
                t.insert(rel_named(&plan, name), row(&xs));
            } else {
                set.remove(&xs);
                t.delete(rel_named(&plan, name), row(&xs));
            }
        }
        let changes = e.commit(t).unwrap();
        let after = direct(&facts);
        for name in ["u", "v", "w"] {
            let id = rel_named(&plan, name);
            let want: Vec<Row> = after[name].iter().map(|r| row(r)).collect();
            assert_eq!(
                e.contents(id),
                want,
                "{name} after commit {i}, {workers} worker(s)"
            );
            let mut net: Vec<(Row, isize)> = after[name]
                .difference(&before[name])
                .map(|r| (row(r), 1))
                .chain(before[name].difference(&after[name]).map(|r| (row(r), -1)))
                .collect();
            net.sort();
            let mut got = changes.get(id).to_vec();
            got.sort();
            assert_eq!(
                got, net,
                "{name}'s changes in commit {i}, {workers} worker(s)"
            );
        }
        before = after;
    }
}

#[test]
fn a_split_stratum_follows_its_rules() {
    // u(1, 3) derived by `a`, by `b` and as a base fact; removed one by one.
    let commits = vec![
        vec![
            (0, 1, 3, true),
            (1, 3, 1, true),
            (3, 1, 3, true),
            (2, 1, 0, true),
        ],
        vec![(0, 1, 3, false)],
        vec![(1, 3, 1, false), (2, 4, 0, true)],
        vec![(3, 1, 3, false), (5, 1, 0, true)],
        vec![(2, 1, 0, false), (0, 1, 5, true)],
        vec![(5, 1, 0, false), (0, 1, 5, false)],
    ];
    for workers in [1, 2] {
        run(&commits, workers);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn split_strata_match_a_direct_evaluation(
        commits in proptest::collection::vec(
            proptest::collection::vec((0usize..6, 0i64..4, 0i64..5, any::<bool>()), 1..6),
            1..8,
        ),
    ) {
        for workers in [1, 2] {
            run(&commits, workers);
        }
    }
}
