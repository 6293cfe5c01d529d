//! Transitive closure and reachability: exact changes across commits,
//! deletions through cycles, base facts on derived relations, and
//! incrementality (a one-edge change does little work).

mod engine_util;

use engine_util::*;
use netc_compiler::value::Row;
use std::collections::BTreeSet;

/// Naive transitive closure of a set of edges.
fn naive_tc(edges: &BTreeSet<(i64, i64)>) -> BTreeSet<(i64, i64)> {
    let mut tc = edges.clone();
    loop {
        let mut new = Vec::new();
        for &(a, b) in &tc {
            for &(c, d) in edges {
                if b == c && !tc.contains(&(a, d)) {
                    new.push((a, d));
                }
            }
        }
        if new.is_empty() {
            return tc;
        }
        tc.extend(new);
    }
}

fn pairs(s: &BTreeSet<(i64, i64)>) -> Vec<Row> {
    s.iter().map(|&(a, b)| row(&[a, b])).collect()
}

#[test]
fn closure_follows_inserts_and_deletes_exactly() {
    let (mut p, edge, path) = tc_plan();
    p.fact(edge, row(&[1, 2]));
    p.fact(edge, row(&[2, 3]));
    let mut e = p.engine(1);
    assert_eq!(e.contents(path), rows(&[&[1, 2], &[1, 3], &[2, 3]]));

    let c = e.commit(tx_insert(edge, &[&[3, 4]])).unwrap();
    assert_eq!(ch(&c, edge), plus(&[&[3, 4]]));
    assert_eq!(ch(&c, path), plus(&[&[1, 4], &[2, 4], &[3, 4]]));
    assert_eq!(c.len(), 4);

    let c = e.commit(tx_delete(edge, &[&[2, 3]])).unwrap();
    assert_eq!(ch(&c, edge), minus(&[&[2, 3]]));
    assert_eq!(ch(&c, path), minus(&[&[1, 3], &[1, 4], &[2, 3], &[2, 4]]));
    assert_eq!(e.contents(path), rows(&[&[1, 2], &[3, 4]]));

    // Close a cycle: every node reaches every node.
    let mut t = tx_insert(edge, &[&[2, 3], &[4, 1]]);
    t.insert(edge, row(&[2, 3])); // a duplicate in the same transaction is a no-op
    let c = e.commit(t).unwrap();
    assert_eq!(ch(&c, edge), plus(&[&[2, 3], &[4, 1]]));
    assert_eq!(e.len(path), 16);
    assert_eq!(ch(&c, path).len(), 14);

    // Break the cycle: tuples only supported through it must go.
    let c = e.commit(tx_delete(edge, &[&[4, 1]])).unwrap();
    assert_eq!(
        ch(&c, path),
        minus(&[
            &[1, 1],
            &[2, 1],
            &[2, 2],
            &[3, 1],
            &[3, 2],
            &[3, 3],
            &[4, 1],
            &[4, 2],
            &[4, 3],
            &[4, 4]
        ])
    );
    assert_eq!(
        e.contents(path),
        rows(&[&[1, 2], &[1, 3], &[1, 4], &[2, 3], &[2, 4], &[3, 4]])
    );
}

#[test]
fn base_facts_of_a_derived_relation_stay_until_deleted() {
    let (p, edge, path) = tc_plan();
    let mut e = p.engine(2);
    let c = e.commit(tx_insert(path, &[&[1, 2]])).unwrap();
    assert_eq!(ch(&c, path), plus(&[&[1, 2]]));
    // Derived as well now: no visible change.
    let c = e.commit(tx_insert(edge, &[&[1, 2]])).unwrap();
    assert!(ch(&c, path).is_empty());
    // Still a base fact after the derivation goes.
    let c = e.commit(tx_delete(edge, &[&[1, 2]])).unwrap();
    assert!(ch(&c, path).is_empty());
    assert_eq!(e.contents(path), rows(&[&[1, 2]]));
    // The base fact joins the recursion like any path.
    let c = e.commit(tx_insert(edge, &[&[2, 3]])).unwrap();
    assert_eq!(ch(&c, path), plus(&[&[1, 3], &[2, 3]]));
    let c = e.commit(tx_delete(path, &[&[1, 2]])).unwrap();
    assert_eq!(ch(&c, path), minus(&[&[1, 2], &[1, 3]]));
}

#[test]
fn closure_matches_naive_over_a_sequence() {
    let (p, edge, path) = tc_plan();
    let mut e = p.engine(3);
    let mut edges = BTreeSet::new();
    let mut before = BTreeSet::new();
    let mut x: u64 = 7;
    for step in 0..40 {
        let mut t = engine_util::tx_insert(edge, &[]);
        for _ in 0..3 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let (a, b) = (((x >> 33) % 8) as i64, ((x >> 45) % 8) as i64);
            if (x >> 20).is_multiple_of(3) || step % 5 == 4 {
                t.delete(edge, row(&[a, b]));
                edges.remove(&(a, b));
            } else {
                t.insert(edge, row(&[a, b]));
                edges.insert((a, b));
            }
        }
        let c = e.commit(t).unwrap();
        let after = naive_tc(&edges);
        assert_eq!(e.contents(path), pairs(&after), "step {step}");
        let expect: Vec<(Row, isize)> = sorted(
            after
                .difference(&before)
                .map(|&(a, b)| (row(&[a, b]), 1))
                .chain(before.difference(&after).map(|&(a, b)| (row(&[a, b]), -1)))
                .collect(),
        );
        assert_eq!(ch(&c, path), expect, "step {step}");
        before = after;
    }
}

/// `reach(y) :- source(y). reach(y) :- reach(x), edge(x, y).`
fn reach_plan() -> (P, usize, usize, usize) {
    let mut p = P::new();
    let source = p.nums("source", 1);
    let edge = p.nums("edge", 2);
    let reach = p.nums("reach", 1);
    let r1 = rule(reach, slots(&[0]), scan(source, binds(1)), vec![]);
    let r2 = rule(
        reach,
        slots(&[1]),
        scan(reach, binds(1)),
        vec![join(
            edge,
            slots(&[0]),
            vec![0],
            vec![
                netc_compiler::plan::ColPat::Ignore,
                netc_compiler::plan::ColPat::Bind,
            ],
        )],
    );
    p.stratum(&[reach], true, vec![r1, r2]);
    (p, source, edge, reach)
}

#[test]
fn one_edge_change_on_a_big_graph_does_little_work() {
    let (mut p, source, edge, reach) = reach_plan();
    let nodes = 20_000i64;
    let mut x: u64 = 1;
    for _ in 0..60_000 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let (a, b) = ((x >> 33) as i64 % nodes, (x >> 13) as i64 % nodes);
        p.fact(edge, row(&[a, b]));
    }
    p.fact(source, row(&[0]));
    let mut e = p.engine(2);
    let scratch = e.stats().last.records;
    let reached = e.len(reach);
    assert!(
        reached > nodes as usize / 2,
        "the random graph is mostly reachable ({reached})"
    );
    assert!(scratch > 50_000, "from scratch does real work ({scratch})");

    // A new leaf hanging off the source.
    let c = e.commit(tx_insert(edge, &[&[0, nodes + 1]])).unwrap();
    assert_eq!(ch(&c, reach), plus(&[&[nodes + 1]]));
    let inc = e.stats().last.records;
    assert!(
        inc < 50,
        "one edge insert handled {inc} records (from scratch: {scratch})"
    );

    // And gone again.
    let c = e.commit(tx_delete(edge, &[&[0, nodes + 1]])).unwrap();
    assert_eq!(ch(&c, reach), minus(&[&[nodes + 1]]));
    assert!(e.stats().last.records < 50);
    assert_eq!(e.len(reach), reached);
}
