//! Aggregates: count/sum/min/max per group, groups appearing and
//! disappearing, count/sum of an empty group (0), an aggregate without
//! groups, unsigned sums and multiplicities (equal values count twice).

mod engine_util;

use engine_util::*;
use netc_compiler::plan::AggFunc;
use netc_compiler::plan::{Body, ColPat::Bind, ColPat::Ignore, Source};
use netc_compiler::types::Prim;
use netc_compiler::value::Value;

struct Rels {
    node: usize,
    edge: usize,
    uedge: usize,
    deg: usize,
    total: usize,
    lo: usize,
    hi: usize,
    all: usize,
    usum: usize,
}

fn plan() -> (P, Rels) {
    let mut p = P::new();
    let node = p.nums("node", 1);
    let edge = p.nums("edge", 3);
    let uedge = p.rel("uedge", &[Prim::Number, Prim::Unsigned]);
    let deg = p.nums("deg", 2);
    let total = p.nums("total", 2);
    let lo = p.nums("lo", 2);
    let hi = p.nums("hi", 2);
    let all = p.nums("all", 1);
    let usum = p.rel("usum", &[Prim::Number, Prim::Unsigned]);
    // edges of the group key x, binding w as inner slot 1
    let out_edges = |cols| Body {
        source: Source::Outer,
        steps: vec![join(edge, slots(&[0]), vec![0], cols)],
    };
    let per_node = |head, func, value: Option<netc_compiler::plan::Expr>, result| {
        let cols = if value.is_some() {
            vec![Ignore, Ignore, Bind]
        } else {
            vec![Ignore, Ignore, Ignore]
        };
        rule(
            head,
            slots(&[0, 1]),
            scan(node, binds(1)),
            vec![agg(func, vec![0], out_edges(cols), value, result)],
        )
    };
    let rules = vec![
        per_node(deg, AggFunc::Count, None, Prim::Number),
        per_node(total, AggFunc::Sum, Some(slot(1)), Prim::Number),
        per_node(lo, AggFunc::Min, Some(slot(1)), Prim::Number),
        per_node(hi, AggFunc::Max, Some(slot(1)), Prim::Number),
        // all(c) :- c = count : edge(_, _, _).
        rule(
            all,
            slots(&[0]),
            Source::Unit,
            vec![agg(
                AggFunc::Count,
                vec![],
                Body {
                    source: Source::Outer,
                    steps: vec![join(edge, vec![], vec![], vec![Ignore; 3])],
                },
                None,
                Prim::Number,
            )],
        ),
        // usum(x, s) :- node(x), s = sum w : uedge(x, w).
        rule(
            usum,
            slots(&[0, 1]),
            scan(node, binds(1)),
            vec![agg(
                AggFunc::Sum,
                vec![0],
                Body {
                    source: Source::Outer,
                    steps: vec![join(uedge, slots(&[0]), vec![0], vec![Ignore, Bind])],
                },
                Some(slot(1)),
                Prim::Unsigned,
            )],
        ),
    ];
    p.stratum(&[deg, total, lo, hi, all, usum], false, rules);
    (
        p,
        Rels {
            node,
            edge,
            uedge,
            deg,
            total,
            lo,
            hi,
            all,
            usum,
        },
    )
}

fn swap(from: &[i64], to: &[i64]) -> Vec<(netc_compiler::value::Row, isize)> {
    sorted(vec![(row(from), -1), (row(to), 1)])
}

#[test]
fn aggregates_follow_their_groups() {
    let (mut p, r) = plan();
    for x in 1..=3 {
        p.fact(r.node, row(&[x]));
    }
    for e in [[1, 2, 5], [1, 3, 5], [2, 3, -1]] {
        p.fact(r.edge, row(&e));
    }
    let mut e = p.engine(2);
    assert_eq!(e.contents(r.deg), rows(&[&[1, 2], &[2, 1], &[3, 0]]));
    assert_eq!(
        e.contents(r.total),
        rows(&[&[1, 10], &[2, -1], &[3, 0]]),
        "equal weights both count"
    );
    assert_eq!(
        e.contents(r.lo),
        rows(&[&[1, 5], &[2, -1]]),
        "min of no rows: no row"
    );
    assert_eq!(e.contents(r.hi), rows(&[&[1, 5], &[2, -1]]));
    assert_eq!(e.contents(r.all), rows(&[&[3]]));

    let c = e
        .commit(tx_insert(r.edge, &[&[3, 1, 7], &[1, 4, 9]]))
        .unwrap();
    assert_eq!(
        ch(&c, r.deg),
        swap(&[3, 0], &[3, 1])
            .into_iter()
            .chain(swap(&[1, 2], &[1, 3]))
            .collect::<Vec<_>>()
            .pipe(sorted)
    );
    assert_eq!(
        ch(&c, r.total),
        sorted([swap(&[3, 0], &[3, 7]), swap(&[1, 10], &[1, 19])].concat())
    );
    assert_eq!(ch(&c, r.lo), plus(&[&[3, 7]]));
    assert_eq!(
        ch(&c, r.hi),
        sorted([plus(&[&[3, 7]]), swap(&[1, 5], &[1, 9])].concat())
    );
    assert_eq!(ch(&c, r.all), swap(&[3], &[5]));

    let c = e.commit(tx_delete(r.edge, &[&[2, 3, -1]])).unwrap();
    assert_eq!(ch(&c, r.deg), swap(&[2, 1], &[2, 0]));
    assert_eq!(ch(&c, r.total), swap(&[2, -1], &[2, 0]));
    assert_eq!(ch(&c, r.lo), minus(&[&[2, -1]]));
    assert_eq!(ch(&c, r.hi), minus(&[&[2, -1]]));

    // A new group appears with count 0, an old one disappears.
    let mut t = tx_insert(r.node, &[&[5]]);
    t.delete(r.node, row(&[1]));
    let c = e.commit(t).unwrap();
    assert_eq!(
        ch(&c, r.deg),
        sorted([plus(&[&[5, 0]]), minus(&[&[1, 3]])].concat())
    );
    assert_eq!(
        ch(&c, r.total),
        sorted([plus(&[&[5, 0]]), minus(&[&[1, 19]])].concat())
    );
    assert_eq!(ch(&c, r.lo), minus(&[&[1, 5]]));
    assert_eq!(ch(&c, r.hi), minus(&[&[1, 9]]));
    assert!(ch(&c, r.all).is_empty());

    // Count over everything, down to zero.
    let all_edges: Vec<Vec<i64>> = e
        .contents(r.edge)
        .iter()
        .map(|row| {
            row.iter()
                .map(|v| if let Value::Number(n) = v { *n } else { 0 })
                .collect()
        })
        .collect();
    let refs: Vec<&[i64]> = all_edges.iter().map(|v| v.as_slice()).collect();
    let c = e.commit(tx_delete(r.edge, &refs)).unwrap();
    assert_eq!(ch(&c, r.all), swap(&[4], &[0]));
    assert_eq!(e.contents(r.lo), Vec::<netc_compiler::value::Row>::new());
    assert_eq!(e.contents(r.deg), rows(&[&[2, 0], &[3, 0], &[5, 0]]));
}

#[test]
fn unsigned_sums_stay_unsigned() {
    let (mut p, r) = plan();
    p.fact(r.node, row(&[1]));
    p.fact(r.node, row(&[2]));
    let u = |x: i64, w: u64| vec![Value::Number(x), Value::Unsigned(w)];
    let mut e = p.engine(1);
    assert_eq!(e.contents(r.usum), vec![u(1, 0), u(2, 0)]);
    let mut t = netc_engine::Transaction::new();
    t.insert(r.uedge, u(1, 3))
        .insert(r.uedge, u(1, 4))
        .insert(r.uedge, u(2, u64::MAX));
    let c = e.commit(t).unwrap();
    assert_eq!(
        c.get(r.usum),
        &[
            (u(1, 0), -1),
            (u(1, 7), 1),
            (u(2, 0), -1),
            (u(2, u64::MAX), 1)
        ]
    );
}

trait Pipe: Sized {
    fn pipe<R>(self, f: impl FnOnce(Self) -> R) -> R {
        f(self)
    }
}
impl<T> Pipe for T {}
