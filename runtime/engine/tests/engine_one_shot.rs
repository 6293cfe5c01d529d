//! A one-shot engine (`Engine::new_one_shot`, what `netc compile` runs):
//! the strata that a change of the `later` relations cannot reach are
//! dropped from the dataflow after commit 0. Its contents and its later
//! commits must be exactly an ordinary engine's, for any worker count, and
//! a change it can no longer compute is refused without changing anything.

use netc_compiler::plan::{Plan, RelId};
use netc_compiler::value::Value;
use netc_engine::{Engine, EngineError, Transaction};
use proptest::prelude::*;
use std::sync::Arc;

/// `reach` (recursive) and the strata above it are released; `placed` is
/// the later input, read by `served` together with released relations;
/// `unserved` reads `served` under negation (a kept stratum above a kept
/// one), and `orphan` negates `reach` (released).
const PROGRAM: &str = r#"
.decl edge(a: number, b: number)
.decl start(a: number)
.decl reach(a: number)
.decl degree(a: number, n: number)
.decl orphan(a: number)
.decl placed(a: number, s: number)
.decl served(a: number, s: number, n: number)
.decl unserved(a: number)

reach(a) :- start(a).
reach(b) :- reach(a), edge(a, b).
degree(a, n) :- reach(a), n = count : { edge(a, _) }.
orphan(a) :- edge(a, _), !reach(a).
served(a, s, n) :- placed(a, s), reach(a), degree(a, n).
unserved(a) :- reach(a), !served(a, _, _).
"#;

fn plan(edges: &[(i64, i64)], starts: &[i64]) -> Arc<Plan> {
    let mut text = PROGRAM.to_string();
    for (a, b) in edges {
        text.push_str(&format!("edge({a}, {b}).\n"));
    }
    for a in starts {
        text.push_str(&format!("start({a}).\n"));
    }
    let c = netc_compiler::compile_text("one_shot.ndl", &text);
    assert!(!c.diagnostics.has_errors(), "the test program compiles");
    Arc::new(c.plan.expect("a plan"))
}

fn rel(p: &Plan, name: &str) -> RelId {
    p.relation_id(name).expect("relation")
}

fn assert_same_contents(a: &Engine, b: &Engine, context: &str) {
    for r in 0..a.plan().relations.len() {
        assert_eq!(
            a.contents(r),
            b.contents(r),
            "{context}: relation {}",
            a.plan().relations[r].name
        );
    }
}

/// Commits `placements` (as inserts, then deletes of every other one) to a
/// one-shot engine and an ordinary one: same changes, same contents.
fn check(edges: &[(i64, i64)], starts: &[i64], placements: &[(i64, i64)], workers: usize) {
    let p = plan(edges, starts);
    let placed = rel(&p, "placed");
    let mut ordinary = Engine::new(p.clone(), workers).unwrap();
    let mut one_shot = Engine::new_one_shot(p.clone(), workers, &[placed]).unwrap();
    assert_same_contents(&ordinary, &one_shot, "commit 0");
    let mut tx = Transaction::new();
    for &(a, s) in placements {
        tx.insert(placed, vec![Value::Number(a), Value::Number(s)]);
    }
    assert_eq!(
        ordinary.commit(tx.clone()).unwrap(),
        one_shot.commit(tx).unwrap(),
        "placement commit"
    );
    assert_same_contents(&ordinary, &one_shot, "after the placement");
    let mut tx = Transaction::new();
    for &(a, s) in placements.iter().step_by(2) {
        tx.delete(placed, vec![Value::Number(a), Value::Number(s)]);
    }
    assert_eq!(
        ordinary.commit(tx.clone()).unwrap(),
        one_shot.commit(tx).unwrap(),
        "second placement commit"
    );
    assert_same_contents(&ordinary, &one_shot, "after the second placement");
}

#[test]
fn a_released_relation_cannot_change_and_nothing_changes() {
    let p = plan(&[(1, 2), (2, 3), (4, 5)], &[1]);
    let (placed, edge, reach) = (rel(&p, "placed"), rel(&p, "edge"), rel(&p, "reach"));
    let mut e = Engine::new_one_shot(p.clone(), 2, &[placed]).unwrap();
    let before: Vec<_> = (0..p.relations.len()).map(|r| e.contents(r)).collect();
    let mut tx = Transaction::new();
    tx.insert(placed, vec![Value::Number(2), Value::Number(9)]);
    tx.insert(edge, vec![Value::Number(3), Value::Number(4)]);
    match e.commit(tx) {
        Err(EngineError::Released(name)) => assert_eq!(name, "edge"),
        other => panic!("expected Released(edge), got {other:?}"),
    }
    let after: Vec<_> = (0..p.relations.len()).map(|r| e.contents(r)).collect();
    assert_eq!(before, after, "a refused commit changes nothing");
    assert_eq!(e.len(reach), 3);
    // The engine is not poisoned: the changeable relation still commits.
    let mut tx = Transaction::new();
    tx.insert(placed, vec![Value::Number(2), Value::Number(9)]);
    let c = e.commit(tx).unwrap();
    let served = rel(&p, "served");
    assert_eq!(
        c.get(served).to_vec(),
        vec![(
            vec![Value::Number(2), Value::Number(9), Value::Number(1)],
            1
        )]
    );
}

#[test]
fn an_unknown_later_relation_is_refused() {
    let p = plan(&[], &[]);
    let n = p.relations.len();
    assert!(matches!(
        Engine::new_one_shot(p, 1, &[n + 3]),
        Err(EngineError::UnknownRelation(r)) if r == n + 3
    ));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn one_shot_equals_ordinary(
        edges in proptest::collection::vec((0i64..12, 0i64..12), 0..30),
        starts in proptest::collection::vec(0i64..12, 0..4),
        placements in proptest::collection::vec((0i64..12, 0i64..3), 0..10),
        workers in 1usize..4,
    ) {
        check(&edges, &starts, &placements, workers);
    }
}
