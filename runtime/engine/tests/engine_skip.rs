//! Deferred input (`engine/skip.rs`): a warm commit leaves a piece unrun
//! while no rule of it can join the rows it would be fed, and feeds them
//! when it next runs. These tests hold every commit to a from-scratch
//! evaluation of the same base facts (a fresh engine, whose first epoch
//! runs every piece with everything) and to exact net changes, over random
//! sequences where partners appear after a row was deferred, deferred rows
//! are retracted, and deletions are deferred; with 1 and 2 workers. They
//! also check that deferring happens (`CommitStats::pieces_run`).

use netc_compiler::plan::{Plan, RelId};
use netc_compiler::value::Row;
use netc_engine::{Engine, Transaction};
use proptest::prelude::*;
use std::collections::BTreeSet;
use std::sync::Arc;

mod engine_util;
use engine_util::{assert_commit_exact, compile_text, edit, from_scratch, rel_named, row};

/// Chains of joins (`h1`, `h6`), negation (`h2`, `h7`), an aggregate
/// (`h3`), a self-join (`h4`), constant patterns (`h5`), a derived
/// neighbour (`d`), and a split stratum (`o`: five rules reading different
/// sets, read by `h7`, so a union piece).
const PROGRAM: &str = "
.decl a(x: number, y: number)
.decl b(y: number, z: number)
.decl c(z: number)
.decl e(x: number, y: number)
.decl d(x: number)
.decl h1(x: number, z: number)
.decl h2(x: number)
.decl h3(x: number, n: number)
.decl h4(x: number)
.decl h5(x: number)
.decl h6(x: number, z: number)
.decl o(x: number, y: number)
.decl h7(x: number)
.output d, h1, h2, h3, h4, h5, h6, o, h7
d(x) :- a(x, y), b(y, _).
h1(x, z) :- a(x, y), b(y, z), c(z).
h2(x) :- a(x, y), !c(y).
h3(x, n) :- d(x), n = count : { a(x, _) }.
h4(x) :- e(x, y), e(y, x).
h5(x) :- a(x, 1), b(1, x).
h6(x, z) :- d(x), b(x, z), c(z).
o(x, y) :- a(x, y), c(y).
o(x, y) :- b(x, y), e(y, x).
o(x, y) :- e(x, y), c(x).
o(x, y) :- d(x), e(x, y).
o(x, y) :- a(x, z), e(z, y), c(y).
h7(x) :- o(x, y), c(y), !e(x, x).
";

/// Relations a commit may change (`d` and `o` are derived: base facts too).
const EDITABLE: [&str; 6] = ["a", "b", "c", "e", "d", "o"];

fn compile() -> Arc<Plan> {
    compile_text("skip.ndl", PROGRAM)
}

fn arity(name: &str) -> usize {
    match name {
        "c" | "d" => 1,
        _ => 2,
    }
}

/// One edit: insert (`true`) or delete a base fact of `EDITABLE[i]`.
type Edit = (usize, i64, i64, bool);

/// Runs `commits` warm and checks each against a from-scratch evaluation
/// and its changes against the net difference. Returns the pieces each
/// commit ran.
fn run(commits: &[Vec<Edit>], workers: usize) -> Vec<usize> {
    let plan = compile();
    let mut e = Engine::new(plan.clone(), workers).unwrap();
    let mut facts: BTreeSet<(RelId, Row)> = BTreeSet::new();
    let mut before = from_scratch(&plan, &facts);
    let mut ran = Vec::new();
    for (i, edits) in commits.iter().enumerate() {
        let mut t = Transaction::new();
        for &(r, x, y, insert) in edits {
            let name = EDITABLE[r];
            let id = rel_named(&plan, name);
            edit(&mut t, &mut facts, id, row(&[x, y][..arity(name)]), insert);
        }
        let changes = e.commit(t).unwrap();
        ran.push(e.stats().last.pieces_run);
        let after = from_scratch(&plan, &facts);
        let what = format!("commit {i}, {workers} worker(s)");
        assert_commit_exact(&e, &plan, &changes, &before, &after, &what);
        before = after;
    }
    ran
}

/// `h1(x, z) :- a(x, y), b(y, z), c(z)` with the partners arriving one
/// commit at a time: the `a` row is deferred, then fed when `b` meets it.
#[test]
fn a_deferred_row_is_fed_when_its_partner_arrives() {
    let a = |x, y, ins| (0, x, y, ins);
    let b = |y, z, ins| (1, y, z, ins);
    let c = |z, ins| (2, z, 0, ins);
    let commits = vec![
        vec![c(7, true)],
        // a(1, 2) has no b(2, _), no c(2), no d(1), no e(_, _): deferred
        // everywhere except `h2` (it reads `c` in a negation: not gated).
        vec![a(1, 2, true)],
        // b(2, 3) meets a(1, 2): `d`, `h1` and `h5`'s... pieces run.
        vec![b(2, 3, true)],
        vec![c(3, true)],
        // Retract a deferred row before its partner arrives.
        vec![a(4, 5, true)],
        vec![a(4, 5, false)],
        vec![b(5, 7, true)],
        // A deferred deletion, then the partner's deletion.
        vec![a(1, 2, false)],
        vec![b(2, 3, false)],
        vec![a(1, 2, true), b(2, 3, true)],
    ];
    for workers in [1, 2] {
        let ran = run(&commits, workers);
        // a(1, 2) alone runs h2's piece only (a's readers otherwise wait).
        assert!(
            ran[1] < ran[2],
            "deferring ran {} pieces for a row with no partner, {} when the partner came",
            ran[1],
            ran[2]
        );
    }
}

/// Self-joins never use their own relation as the witness: `h4(x) :- e(x,
/// y), e(y, x)` with `e(1, 1)` inserted and deleted.
#[test]
fn a_self_join_is_never_deferred_on_itself() {
    let e = |x, y, ins| (3, x, y, ins);
    let commits = vec![
        vec![e(1, 1, true)],
        vec![e(1, 1, false)],
        vec![e(1, 2, true)],
        vec![e(2, 1, true)],
        vec![e(1, 2, false), e(2, 1, false)],
    ];
    for workers in [1, 2] {
        run(&commits, workers);
    }
}

/// Two rows that are each other's only partner, deleted in one commit and
/// in two: neither deletion may be deferred while the other's row still
/// feeds a derivation.
#[test]
fn mutual_partners_deleted_together() {
    let a = |x, y, ins| (0, x, y, ins);
    let c = |z, ins| (2, z, 0, ins);
    let commits = vec![
        vec![a(1, 2, true), c(2, true)],
        vec![a(1, 2, false), c(2, false)],
        vec![a(1, 2, true), c(2, true)],
        vec![a(1, 2, false)],
        vec![c(2, false)],
        vec![c(2, true)],
        vec![a(1, 2, true)],
    ];
    for workers in [1, 2] {
        run(&commits, workers);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn deferred_input_matches_a_fresh_evaluation(
        commits in proptest::collection::vec(
            proptest::collection::vec(
                (prop::sample::select(vec![0usize, 0, 1, 1, 2, 3, 3, 4, 5]), 0i64..4, 0i64..4, prop::bool::weighted(0.6)),
                1..4,
            ),
            1..12,
        ),
    ) {
        for workers in [1, 2] {
            run(&commits, workers);
        }
    }
}
