//! Base-fact set semantics, transaction validation, rules without atoms,
//! expressions (binds, filters, undefined results), symbol ordering, plan
//! validation and clean shutdown.

mod engine_util;

use engine_util::*;
use netc_compiler::plan::{BinOp, CmpOp};
use netc_compiler::plan::{Cond, Expr, Source, Step};
use netc_compiler::types::Prim;
use netc_compiler::value::Value;
use netc_engine::{Changes, Engine, EngineError, Transaction};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[test]
fn base_facts_are_a_set() {
    let (mut p, edge, path) = tc_plan();
    p.fact(edge, row(&[1, 2]));
    p.fact(edge, row(&[1, 2])); // a duplicate program fact
    let mut e = p.engine(2);
    assert_eq!(e.contents(edge), rows(&[&[1, 2]]));

    let c = e.commit(tx_insert(edge, &[&[1, 2]])).unwrap();
    assert_eq!(c, Changes::default(), "inserting a present fact is a no-op");
    assert_eq!(e.stats().last.epoch, None, "and does not even run");

    let c = e.commit(tx_delete(edge, &[&[5, 6]])).unwrap();
    assert!(c.is_empty(), "deleting an absent fact is a no-op");

    let mut t = tx_insert(edge, &[&[2, 3]]);
    t.delete(edge, row(&[2, 3]));
    assert!(
        e.commit(t).unwrap().is_empty(),
        "insert then delete cancels"
    );
    assert!(!e.is_base_fact(edge, &row(&[2, 3])));

    let mut t = tx_delete(edge, &[&[1, 2]]);
    t.insert(edge, row(&[1, 2]));
    assert!(
        e.commit(t).unwrap().is_empty(),
        "delete then insert cancels"
    );
    assert!(e.is_base_fact(edge, &row(&[1, 2])));

    // Deleting once removes it even though it was inserted twice.
    let c = e.commit(tx_delete(edge, &[&[1, 2]])).unwrap();
    assert_eq!(ch(&c, edge), minus(&[&[1, 2]]));
    assert_eq!(ch(&c, path), minus(&[&[1, 2]]));
    assert_eq!(e.len(path), 0);
}

#[test]
fn invalid_rows_reject_the_whole_transaction() {
    let (p, edge, path) = tc_plan();
    let mut e = p.engine(1);
    let mut t = tx_insert(edge, &[&[1, 2]]);
    t.insert(edge, row(&[1]));
    assert!(matches!(
        e.commit(t),
        Err(EngineError::Arity {
            expected: 2,
            found: 1,
            ..
        })
    ));
    let mut t = tx_insert(edge, &[&[1, 2]]);
    t.insert(edge, vec![n(1), Value::sym("x")]);
    let err = e.commit(t).unwrap_err();
    assert!(matches!(err, EngineError::Type { .. }), "{err}");
    let mut t = tx_insert(edge, &[&[1, 2]]);
    t.insert(99, row(&[1]));
    assert_eq!(e.commit(t), Err(EngineError::UnknownRelation(99)));
    assert_eq!(e.len(edge), 0, "nothing was applied");
    assert_eq!(e.len(path), 0);
    // Still usable.
    assert_eq!(
        ch(&e.commit(tx_insert(edge, &[&[1, 2]])).unwrap(), path),
        plus(&[&[1, 2]])
    );
}

#[test]
fn rules_without_atoms_and_expressions() {
    let mut p = P::new();
    let one = p.nums("one", 1);
    let r = p.nums("r", 1);
    let q = p.nums("q", 2);
    let big = p.nums("big", 1);
    // one(1) :- true.
    let r1 = rule(one, vec![Expr::Const(n(1))], Source::Unit, vec![]);
    // one(x) :- x = 40 + 2.
    let r2 = rule(
        one,
        slots(&[0]),
        Source::Unit,
        vec![Step::Bind(Expr::Binary(
            BinOp::Add,
            Box::new(Expr::Const(n(40))),
            Box::new(Expr::Const(n(2))),
        ))],
    );
    // q(x, y) :- r(x), y = 10 / x.      (x = 0 gives no row)
    let r3 = rule(
        q,
        slots(&[0, 1]),
        scan(r, binds(1)),
        vec![Step::Bind(Expr::Binary(
            BinOp::Div,
            Box::new(Expr::Const(n(10))),
            Box::new(slot(0)),
        ))],
    );
    // big(x) :- r(x), x > 3.
    let r4 = rule(
        big,
        slots(&[0]),
        scan(r, binds(1)),
        vec![Step::Filter(Cond::Compare(
            CmpOp::Gt,
            slot(0),
            Expr::Const(n(3)),
        ))],
    );
    p.stratum(&[one, q, big], false, vec![r1, r2, r3, r4]);
    let mut e = p.engine(2);
    assert_eq!(e.contents(one), rows(&[&[1], &[42]]));
    let c = e.commit(tx_insert(r, &[&[0], &[2], &[5]])).unwrap();
    assert_eq!(ch(&c, q), plus(&[&[2, 5], &[5, 2]]));
    assert_eq!(ch(&c, big), plus(&[&[5]]));
    assert!(ch(&c, one).is_empty());
}

#[test]
fn contents_and_changes_sort_symbols_by_text() {
    let mut p = P::new();
    let s = p.rel("s", &[Prim::Symbol]);
    let mut e = p.engine(2);
    let names = ["zz-basics", "aa-basics", "mm-basics"];
    let mut t = Transaction::new();
    for x in names {
        t.insert(s, vec![Value::sym(x)]);
    }
    let c = e.commit(t).unwrap();
    let expect: Vec<_> = ["aa-basics", "mm-basics", "zz-basics"]
        .iter()
        .map(|x| vec![Value::sym(x)])
        .collect();
    assert_eq!(c.inserted(s).cloned().collect::<Vec<_>>(), expect);
    assert_eq!(e.contents(s), expect);
}

#[test]
fn invalid_plans_and_worker_counts_are_errors() {
    let mut p = P::new();
    let a = p.nums("a", 1);
    let b = p.nums("b", 1);
    p.stratum(
        &[b],
        false,
        vec![rule(b, slots(&[3]), scan(a, binds(1)), vec![])],
    );
    let err = Engine::new(Arc::new(p.plan.clone()), 1).err().unwrap();
    assert!(
        matches!(
            err,
            EngineError::InvalidPlan {
                invariant: "PLAN-SLOTS",
                ..
            }
        ),
        "{err}"
    );

    let mut p = P::new();
    let a = p.nums("a", 1);
    let b = p.nums("b", 1);
    // b reads itself but the stratum claims not to be recursive.
    p.stratum(
        &[b],
        false,
        vec![
            rule(b, slots(&[0]), scan(b, binds(1)), vec![]),
            rule(b, slots(&[0]), scan(a, binds(1)), vec![]),
        ],
    );
    let err = Engine::new(Arc::new(p.plan.clone()), 1).err().unwrap();
    assert!(
        matches!(
            err,
            EngineError::InvalidPlan {
                invariant: "PLAN-RECURSIVE",
                ..
            }
        ),
        "{err}"
    );

    let (p, ..) = tc_plan();
    assert_eq!(
        Engine::new(Arc::new(p.plan.clone()), 0).err(),
        Some(EngineError::NoWorkers)
    );
    // Lanes decide their order as the epoch goes: one worker each.
    assert_eq!(
        Engine::with_lanes(Arc::new(p.plan.clone()), 2, 2).err(),
        Some(EngineError::LanesOfWorkers {
            lanes: 2,
            workers: 2
        })
    );
    assert!(Engine::with_lanes(Arc::new(p.plan.clone()), 2, 1).is_ok());
}

#[test]
fn drop_joins_workers_quickly() {
    let (mut p, edge, _) = tc_plan();
    for i in 0..100 {
        p.fact(edge, row(&[i, i + 1]));
    }
    for workers in [1, 4] {
        let e = p.engine(workers);
        let t = Instant::now();
        drop(e);
        assert!(
            t.elapsed() < Duration::from_secs(2),
            "drop took {:?}",
            t.elapsed()
        );
    }
}

#[test]
fn a_dead_worker_is_an_error_not_a_hang() {
    let (p, edge, path) = tc_plan();
    for victim in [0, 2] {
        let mut e = p.engine(3);
        e.commit(tx_insert(edge, &[&[1, 2]])).unwrap();
        e.inject_worker_panic(victim);
        let t = Instant::now();
        let err = e.commit(tx_insert(edge, &[&[2, 3]])).unwrap_err();
        assert!(matches!(err, EngineError::WorkerDied { .. }), "{err}");
        assert!(matches!(
            e.commit(tx_insert(edge, &[&[3, 4]])),
            Err(EngineError::Poisoned(_))
        ));
        // The last consistent state stays readable.
        assert_eq!(e.contents(path), rows(&[&[1, 2]]));
        drop(e);
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "took {:?}",
            t.elapsed()
        );
    }
}
