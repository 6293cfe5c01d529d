//! Mutual recursion and negation (stratified, and of a lower stratum inside
//! a recursive one).

mod engine_util;

use engine_util::*;
use netc_compiler::plan::ColPat::{Bind, Ignore};

#[test]
fn mutual_recursion_even_odd() {
    let mut p = P::new();
    let succ = p.nums("succ", 2);
    let even = p.nums("even", 1);
    let odd = p.nums("odd", 1);
    let odd_rule = rule(
        odd,
        slots(&[1]),
        scan(even, binds(1)),
        vec![join(succ, slots(&[0]), vec![0], vec![Ignore, Bind])],
    );
    let even_rule = rule(
        even,
        slots(&[1]),
        scan(odd, binds(1)),
        vec![join(succ, slots(&[0]), vec![0], vec![Ignore, Bind])],
    );
    p.stratum(&[even, odd], true, vec![odd_rule, even_rule]);
    p.fact(even, row(&[0]));
    for i in 0..10 {
        p.fact(succ, row(&[i, i + 1]));
    }
    let mut e = p.engine(2);
    assert_eq!(
        e.contents(even),
        rows(&[&[0], &[2], &[4], &[6], &[8], &[10]])
    );
    assert_eq!(e.contents(odd), rows(&[&[1], &[3], &[5], &[7], &[9]]));

    let c = e.commit(tx_delete(succ, &[&[4, 5]])).unwrap();
    assert_eq!(ch(&c, even), minus(&[&[6], &[8], &[10]]));
    assert_eq!(ch(&c, odd), minus(&[&[5], &[7], &[9]]));
    assert_eq!(ch(&c, succ), minus(&[&[4, 5]]));

    let c = e.commit(tx_insert(succ, &[&[4, 5]])).unwrap();
    assert_eq!(ch(&c, even), plus(&[&[6], &[8], &[10]]));
    assert_eq!(ch(&c, odd), plus(&[&[5], &[7], &[9]]));

    // A back edge makes every number both even and odd.
    let c = e.commit(tx_insert(succ, &[&[10, 0]])).unwrap();
    assert_eq!(ch(&c, odd), plus(&[&[0], &[2], &[4], &[6], &[8], &[10]]));
    assert_eq!(ch(&c, even), plus(&[&[1], &[3], &[5], &[7], &[9]]));
    assert_eq!(e.len(even), 11);
    assert_eq!(e.len(odd), 11);
}

/// reach from sources; `unreached(x) :- node(x), !reach(x).`;
/// `sink(x) :- node(x), !edge(x, _).`
#[test]
fn stratified_negation() {
    let mut p = P::new();
    let node = p.nums("node", 1);
    let edge = p.nums("edge", 2);
    let source = p.nums("source", 1);
    let reach = p.nums("reach", 1);
    let unreached = p.nums("unreached", 1);
    let sink = p.nums("sink", 1);
    let r1 = rule(reach, slots(&[0]), scan(source, binds(1)), vec![]);
    let r2 = rule(
        reach,
        slots(&[1]),
        scan(reach, binds(1)),
        vec![join(edge, slots(&[0]), vec![0], vec![Ignore, Bind])],
    );
    p.stratum(&[reach], true, vec![r1, r2]);
    let u = rule(
        unreached,
        slots(&[0]),
        scan(node, binds(1)),
        vec![anti(reach, slots(&[0]), vec![0])],
    );
    let s = rule(
        sink,
        slots(&[0]),
        scan(node, binds(1)),
        vec![anti(edge, slots(&[0]), vec![0])],
    );
    p.stratum(&[unreached, sink], false, vec![u, s]);
    for i in 1..=4 {
        p.fact(node, row(&[i]));
    }
    p.fact(edge, row(&[1, 2]));
    p.fact(edge, row(&[1, 3]));
    p.fact(source, row(&[1]));
    let mut e = p.engine(1);
    assert_eq!(e.contents(unreached), rows(&[&[4]]));
    assert_eq!(e.contents(sink), rows(&[&[2], &[3], &[4]]));

    let c = e.commit(tx_insert(edge, &[&[3, 4]])).unwrap();
    assert_eq!(ch(&c, unreached), minus(&[&[4]]));
    assert_eq!(ch(&c, sink), minus(&[&[3]]));

    // Removing one of two edges out of 1 keeps 1 a non-sink.
    let c = e.commit(tx_delete(edge, &[&[1, 2]])).unwrap();
    assert_eq!(ch(&c, unreached), plus(&[&[2]]));
    assert!(ch(&c, sink).is_empty());

    let mut t = tx_delete(source, &[&[1]]);
    t.insert(source, row(&[2]));
    let c = e.commit(t).unwrap();
    assert_eq!(
        ch(&c, unreached),
        sorted([plus(&[&[1], &[3], &[4]]), minus(&[&[2]])].concat())
    );
    assert_eq!(e.contents(reach), rows(&[&[2]]));
}

/// `ok(x,y) :- edge(x,y), !blocked(y). ok(x,z) :- ok(x,y), edge(y,z), !blocked(z).`
#[test]
fn negation_of_a_lower_stratum_inside_recursion() {
    let mut p = P::new();
    let edge = p.nums("edge", 2);
    let blocked = p.nums("blocked", 1);
    let ok = p.nums("ok", 2);
    let r1 = rule(
        ok,
        slots(&[0, 1]),
        scan(edge, binds(2)),
        vec![anti(blocked, slots(&[1]), vec![0])],
    );
    let r2 = rule(
        ok,
        slots(&[0, 2]),
        scan(ok, binds(2)),
        vec![
            join(edge, slots(&[1]), vec![0], vec![Ignore, Bind]),
            anti(blocked, slots(&[2]), vec![0]),
        ],
    );
    p.stratum(&[ok], true, vec![r1, r2]);
    for (a, b) in [(1, 2), (2, 3), (3, 4)] {
        p.fact(edge, row(&[a, b]));
    }
    let mut e = p.engine(2);
    assert_eq!(e.len(ok), 6);
    let c = e.commit(tx_insert(blocked, &[&[3]])).unwrap();
    assert_eq!(ch(&c, ok), minus(&[&[1, 3], &[1, 4], &[2, 3], &[2, 4]]));
    let c = e.commit(tx_delete(blocked, &[&[3]])).unwrap();
    assert_eq!(ch(&c, ok), plus(&[&[1, 3], &[1, 4], &[2, 3], &[2, 4]]));
}
