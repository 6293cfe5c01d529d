//! Arrangement sharing: rules joining the same relation on the same key
//! columns use one arrangement within a stratum (each stratum is its own
//! dataflow, see `engine/render.rs`), also into its loop.

mod engine_util;

use engine_util::*;
use netc_compiler::plan::ColPat::{Bind, Const, Ignore};

#[test]
fn joins_on_the_same_key_share_one_arrangement() {
    let mut p = P::new();
    let e = p.nums("e", 2);
    let f = p.nums("f", 2);
    let g = p.nums("g", 2);
    let pp = p.nums("p", 2);
    let q = p.nums("q", 2);
    let r = p.nums("r", 1);
    let t = p.nums("t", 2);
    let n = p.nums("n", 1);
    let m = p.nums("m", 2);
    let ej = |left| join(e, slots(&[left]), vec![0], vec![Ignore, Bind]);
    // p(x,z) :- e(x,y), e(y,z).        builds e[1] and e[0]
    let r1 = rule(pp, slots(&[0, 2]), scan(e, binds(2)), vec![ej(1)]);
    // q(x,z) :- f(x,y), e(y,z).        builds f[1], shares e[0]
    let r2 = rule(q, slots(&[0, 2]), scan(f, binds(2)), vec![ej(1)]);
    // r(x) :- g(x,1), e(x,_).          shares e[0]
    let r3 = rule(
        r,
        slots(&[0]),
        scan(g, vec![Bind, Const(n_(1))]),
        vec![join(e, slots(&[0]), vec![0], vec![Ignore, Ignore])],
    );
    p.stratum(&[pp, q, r], false, vec![r1, r2, r3]);
    // t(x,y) :- e(x,y). t(x,z) :- t(x,y), e(y,z).   builds e[0] (entered), t[1] in the loop
    let t1 = rule(t, slots(&[0, 1]), scan(e, binds(2)), vec![]);
    let t2 = rule(t, slots(&[0, 2]), scan(t, binds(2)), vec![ej(1)]);
    p.stratum(&[t], true, vec![t1, t2]);
    // n(x) :- g(x,_), !e(x,_).  (twice)  builds the key set e{0} once
    let n1 = rule(
        n,
        slots(&[0]),
        scan(g, vec![Bind, Ignore]),
        vec![anti(e, slots(&[0]), vec![0])],
    );
    let n2 = rule(
        n,
        slots(&[0]),
        scan(g, vec![Bind, Ignore]),
        vec![anti(e, slots(&[0]), vec![0])],
    );
    // m(x,y) :- g(x,y), !p(x,y).   p arrives as a set: arranged as is, no distinct
    let m1 = rule(
        m,
        slots(&[0, 1]),
        scan(g, binds(2)),
        vec![anti(pp, slots(&[0, 1]), vec![0, 1])],
    );
    p.stratum(&[n, m], false, vec![n1, n2, m1]);
    for (a, b) in [(1, 2), (2, 3)] {
        p.fact(e, row(&[a, b]));
    }
    p.fact(f, row(&[0, 1]));
    p.fact(g, row(&[1, 1]));
    p.fact(g, row(&[1, 3]));
    p.fact(g, row(&[7, 1]));

    for workers in [1, 3] {
        let eng = p.engine(workers);
        assert_eq!(
            eng.stats().arrangements,
            7,
            "e[1], e[0], f[1] | e[0], t[1] | e{{0}}, p{{0,1}}"
        );
        assert_eq!(eng.contents(pp), rows(&[&[1, 3]]));
        assert_eq!(eng.contents(q), rows(&[&[0, 2]]));
        assert_eq!(eng.contents(r), rows(&[&[1]]));
        assert_eq!(eng.contents(t), rows(&[&[1, 2], &[1, 3], &[2, 3]]));
        assert_eq!(eng.contents(n), rows(&[&[7]]));
        assert_eq!(eng.contents(m), rows(&[&[1, 1], &[7, 1]]));
    }
}

fn n_(x: i64) -> netc_compiler::value::Value {
    n(x)
}
