//! The worker and lane counts never change a result: random transaction
//! sequences over a plan with recursion, negation and aggregates give
//! identical changes with 1 and 4 workers, and with one lane and with three
//! (and the closure matches a naive one).

mod engine_util;

use engine_util::*;
use netc_compiler::plan::AggFunc;
use netc_compiler::plan::{Body, ColPat::Bind, ColPat::Ignore, Source};
use netc_compiler::types::Prim;
use netc_engine::Transaction;
use proptest::prelude::*;
use std::collections::BTreeSet;

struct Rels {
    node: usize,
    edge: usize,
    source: usize,
    path: usize,
}

fn plan() -> (P, Rels) {
    let mut p = P::new();
    let node = p.nums("node", 1);
    let edge = p.nums("edge", 2);
    let source = p.nums("source", 1);
    let path = p.nums("path", 2);
    let reach = p.nums("reach", 1);
    let unreached = p.nums("unreached", 1);
    let deg = p.nums("deg", 2);
    let weight = p.nums("weight", 2);
    let far = p.nums("far", 2);
    let eb = || join(edge, slots(&[1]), vec![0], vec![Ignore, Bind]);
    p.stratum(
        &[path],
        true,
        vec![
            rule(path, slots(&[0, 1]), scan(edge, binds(2)), vec![]),
            rule(path, slots(&[0, 2]), scan(path, binds(2)), vec![eb()]),
        ],
    );
    p.stratum(
        &[reach],
        true,
        vec![
            rule(reach, slots(&[0]), scan(source, binds(1)), vec![]),
            rule(
                reach,
                slots(&[1]),
                scan(reach, binds(1)),
                vec![join(edge, slots(&[0]), vec![0], vec![Ignore, Bind])],
            ),
        ],
    );
    let out = |cols| Body {
        source: Source::Outer,
        steps: vec![join(edge, slots(&[0]), vec![0], cols)],
    };
    p.stratum(
        &[unreached, deg, weight, far],
        false,
        vec![
            rule(
                unreached,
                slots(&[0]),
                scan(node, binds(1)),
                vec![anti(reach, slots(&[0]), vec![0])],
            ),
            rule(
                deg,
                slots(&[0, 1]),
                scan(node, binds(1)),
                vec![agg(
                    AggFunc::Count,
                    vec![0],
                    out(vec![Ignore, Ignore]),
                    None,
                    Prim::Number,
                )],
            ),
            rule(
                weight,
                slots(&[0, 1]),
                scan(node, binds(1)),
                vec![agg(
                    AggFunc::Sum,
                    vec![0],
                    out(vec![Ignore, Bind]),
                    Some(slot(1)),
                    Prim::Number,
                )],
            ),
            // far(x, m) :- path(x, _), m = max y : path(x, y).
            rule(
                far,
                slots(&[0, 1]),
                scan(path, vec![Bind, Ignore]),
                vec![agg(
                    AggFunc::Max,
                    vec![0],
                    Body {
                        source: Source::Outer,
                        steps: vec![join(path, slots(&[0]), vec![0], vec![Ignore, Bind])],
                    },
                    Some(slot(1)),
                    Prim::Number,
                )],
            ),
        ],
    );
    (
        p,
        Rels {
            node,
            edge,
            source,
            path,
        },
    )
}

fn naive_tc(edges: &BTreeSet<(i64, i64)>) -> BTreeSet<(i64, i64)> {
    let mut tc = edges.clone();
    loop {
        let new: Vec<_> = tc
            .iter()
            .flat_map(|&(a, b)| {
                edges
                    .iter()
                    .filter(move |e| e.0 == b)
                    .map(move |e| (a, e.1))
            })
            .filter(|x| !tc.contains(x))
            .collect();
        if new.is_empty() {
            return tc;
        }
        tc.extend(new);
    }
}

/// (relation choice, a, b, insert?)
type Op = (u8, i64, i64, bool);

fn to_tx(r: &Rels, ops: &[Op], edges: &mut BTreeSet<(i64, i64)>) -> Transaction {
    let mut t = Transaction::new();
    for &(k, a, b, ins) in ops {
        let (rel, rw) = match k % 4 {
            0 | 1 => (r.edge, row(&[a, b])),
            2 => (r.node, row(&[a])),
            _ => (r.source, row(&[a])),
        };
        if rel == r.edge {
            if ins {
                edges.insert((a, b));
            } else {
                edges.remove(&(a, b));
            }
        }
        if ins {
            t.insert(rel, rw);
        } else {
            t.delete(rel, rw);
        }
    }
    t
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn one_and_four_workers_agree(txs in prop::collection::vec(prop::collection::vec((0u8..4, 0i64..6, 0i64..6, prop::bool::weighted(0.7)), 1..8), 1..8)) {
        let (p, r) = plan();
        let mut one = p.engine_in_lanes(1, 1);
        let mut four = p.engine(4);
        let mut lanes = p.engine_in_lanes(1, 3);
        let mut edges = BTreeSet::new();
        for ops in &txs {
            let t = to_tx(&r, ops, &mut edges);
            let c1 = one.commit(t.clone()).unwrap();
            let c4 = four.commit(t.clone()).unwrap();
            prop_assert_eq!(&c1, &c4);
            prop_assert_eq!(&c1, &lanes.commit(t).unwrap());
            let tc: Vec<_> = naive_tc(&edges).into_iter().map(|(a, b)| row(&[a, b])).collect();
            prop_assert_eq!(one.contents(r.path), tc);
        }
        for rel in 0..p.plan.relations.len() {
            prop_assert_eq!(one.contents(rel), four.contents(rel));
            prop_assert_eq!(one.contents(rel), lanes.contents(rel));
        }
    }
}
