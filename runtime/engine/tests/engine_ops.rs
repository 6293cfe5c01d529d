//! The operators a warm piece is rendered with (`engine/body.rs`,
//! `engine/render.rs`): an aggregate's group keys made distinct by
//! `Time::distinct_keys` (at the epoch's time `distinct_total`, in a loop
//! `distinct`), a negation as `rows − semijoin(rows)` and a counted output
//! left unexchanged on one worker. Random commit sequences are held to a
//! from-scratch evaluation of the same base facts (a fresh engine) and to
//! exact net changes, with 1 and 2 workers, over group keys projected from
//! rows that share them (so the key set must really be distinct), groups
//! that lose their last inner row (count 0), the outer rows joined back to
//! the result, negation on a projection and on a whole row, and an
//! aggregate over a recursive stratum's relation.

use netc_compiler::plan::RelId;
use netc_compiler::value::Row;
use netc_engine::{Engine, Transaction};
use proptest::prelude::*;
use std::collections::BTreeSet;

mod engine_util;
use engine_util::{assert_commit_exact, compile_text, edit, from_scratch, rel_named, row};

/// `n`: keys from `a`'s first column (shared by several `a` rows), head
/// from the group and result only; `m`: the outer row joined back; `s`,
/// `lo`: sum and min; `k`: negation on a projection (`!b(y, _)`); `w`:
/// negation of a whole row; `r` recursive, read by the aggregate `rc`
/// (a lower stratum, so the keys' distinct runs at the epoch's time);
/// `cnt`: a count with a negation inside its body.
const PROGRAM: &str = "
.decl a(x: number, y: number)
.decl b(y: number, z: number)
.decl c(z: number)
.decl n(x: number, k: number)
.decl m(x: number, y: number, k: number)
.decl s(x: number, t: number)
.decl lo(x: number, t: number)
.decl k(x: number, y: number)
.decl w(x: number, y: number)
.decl r(x: number, y: number)
.decl rc(x: number, k: number)
.decl cnt(y: number, k: number)
.output n, m, s, lo, k, w, r, rc, cnt
n(x, q) :- a(x, _), q = count : { b(x, _) }.
m(x, y, q) :- a(x, y), q = count : { b(x, z), c(z) }.
s(x, t) :- a(x, _), t = sum z : { b(x, z) }.
lo(x, t) :- a(x, _), t = min z : { b(x, z) }.
k(x, y) :- a(x, y), !b(y, _).
w(x, y) :- a(x, y), !b(x, y).
r(x, y) :- a(x, y).
r(x, z) :- r(x, y), b(y, z).
rc(x, q) :- c(x), q = count : { r(x, _) }.
cnt(y, q) :- b(y, _), q = count : { a(x, y), !c(x) }.
";

/// Relations a commit may change.
const EDITABLE: [&str; 3] = ["a", "b", "c"];

fn arity(name: &str) -> usize {
    if name == "c" {
        1
    } else {
        2
    }
}

/// One edit: insert (`true`) or delete a base fact of `EDITABLE[i]`.
type Edit = (usize, i64, i64, bool);

/// Runs `commits` warm; checks each against a from-scratch evaluation and
/// its changes against the net difference.
fn run(commits: &[Vec<Edit>], workers: usize) {
    let plan = compile_text("ops.ndl", PROGRAM);
    let mut e = Engine::new(plan.clone(), workers).unwrap();
    let mut facts: BTreeSet<(RelId, Row)> = BTreeSet::new();
    let mut before = from_scratch(&plan, &facts);
    for (i, edits) in commits.iter().enumerate() {
        let mut t = Transaction::new();
        for &(r, x, y, insert) in edits {
            let name = EDITABLE[r];
            let id = rel_named(&plan, name);
            edit(&mut t, &mut facts, id, row(&[x, y][..arity(name)]), insert);
        }
        let changes = e.commit(t).unwrap();
        let after = from_scratch(&plan, &facts);
        let what = format!("commit {i}, {workers} worker(s)");
        assert_commit_exact(&e, &plan, &changes, &before, &after, &what);
        before = after;
    }
}

/// Two `a` rows share the group key 1: one group, counted once; then the
/// group's inner rows go (count 0) and the key's last outer row goes.
#[test]
fn shared_group_keys_and_an_emptied_group() {
    let commits = vec![
        vec![
            (0, 1, 2, true),
            (0, 1, 3, true),
            (1, 1, 5, true),
            (2, 5, 0, true),
        ],
        vec![(1, 1, 5, false)],
        vec![(0, 1, 2, false)],
        vec![(0, 1, 3, false), (1, 2, 7, true)],
    ];
    for workers in [1, 2] {
        run(&commits, workers);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    #[test]
    fn aggregates_and_negation_match_a_fresh_evaluation(
        commits in proptest::collection::vec(
            proptest::collection::vec(
                (prop::sample::select(vec![0usize, 0, 1, 1, 2]), 0i64..4, 0i64..4, prop::bool::weighted(0.6)),
                1..4,
            ),
            1..10,
        ),
    ) {
        for workers in [1, 2] {
            run(&commits, workers);
        }
    }
}
