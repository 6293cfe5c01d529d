//! Plan shapes produced by the lowering: scans, joins, negation, recursion,
//! aggregates, disjunctions, facts, and the text dump.

use netc_compiler::ast::{AggFunc, BinOp, CmpOp};
use netc_compiler::functors::Builtin;
use netc_compiler::plan::{Body, ColPat, Cond, Expr, IoSpec, Plan, RulePlan, Source, Step};
use netc_compiler::types::Prim;
use netc_compiler::value::Value;
use netc_compiler::{check, diagnostics::Diagnostics, lower, source::SourceMap, syntax};

/// Parses, checks (no errors allowed) and lowers.
fn plan(text: &str) -> Plan {
    let mut sources = SourceMap::new();
    let mut diags = Diagnostics::new();
    let program = syntax::parse_text(&mut sources, "test.dl", text, &mut diags);
    let checked = check::check(&program, &mut diags);
    assert!(
        !diags.has_errors(),
        "unexpected errors:\n{}",
        diags.render_all(&sources)
    );
    lower::try_lower(&checked.expect("checked")).expect("lowers")
}

/// The rule plans deriving `name`, in order.
fn rules<'p>(p: &'p Plan, name: &str) -> Vec<&'p RulePlan> {
    let id = p.relation_id(name).expect("relation exists");
    p.strata
        .iter()
        .flat_map(|s| &s.rules)
        .filter(|r| r.head == id)
        .collect()
}

fn only_rule<'p>(p: &'p Plan, name: &str) -> &'p RulePlan {
    let rs = rules(p, name);
    assert_eq!(rs.len(), 1, "expected one rule for {name}");
    rs[0]
}

fn scan(body: &Body) -> (usize, &[ColPat]) {
    match &body.source {
        Source::Scan(s) => (s.rel, &s.cols),
        other => panic!("expected a scan, found {other:?}"),
    }
}

fn n(v: i64) -> Expr {
    Expr::Const(Value::Number(v))
}

const EDGE: &str = ".decl edge(a: number, b: number)\n.input edge\n";

#[test]
fn transitive_closure_scans_then_joins_on_the_shared_variable() {
    let p = plan(&format!("{EDGE}.decl path(a: number, b: number)\n.output path\npath(x, y) :- edge(x, y).\npath(x, z) :- path(x, y), edge(y, z).\n"));
    let (edge, path) = (
        p.relation_id("edge").unwrap(),
        p.relation_id("path").unwrap(),
    );
    let rs = rules(&p, "path");
    assert_eq!(rs.len(), 2);
    let r = rs[1];
    assert_eq!(scan(&r.body), (path, &[ColPat::Bind, ColPat::Bind][..]));
    match &r.body.steps[..] {
        [Step::Join {
            rel,
            left_key,
            right_key,
            cols,
        }] => {
            assert_eq!(*rel, edge);
            assert_eq!(left_key, &vec![Expr::Slot(1)]);
            assert_eq!(right_key, &vec![0]);
            assert_eq!(cols, &vec![ColPat::Ignore, ColPat::Bind]);
        }
        other => panic!("unexpected steps {other:?}"),
    }
    assert_eq!(r.head_exprs, vec![Expr::Slot(0), Expr::Slot(2)]);
    let s = p
        .strata
        .iter()
        .find(|s| s.relations == vec![path])
        .expect("stratum of path");
    assert!(s.recursive);
}

#[test]
fn scan_patterns_cover_repeats_constants_and_wildcards() {
    let p = plan(".decl e(a: number, b: number, c: number, d: number)\n.input e\n.decl r(x: number)\n.output r\nr(x) :- e(x, x, 5, _).\n");
    let r = only_rule(&p, "r");
    assert_eq!(
        scan(&r.body).1,
        &[
            ColPat::Bind,
            ColPat::SameAs(0),
            ColPat::Const(Value::Number(5)),
            ColPat::Ignore
        ][..]
    );
    assert!(r.body.steps.is_empty());
    assert_eq!(r.head_exprs, vec![Expr::Slot(0)]);
}

#[test]
fn negation_is_an_antijoin_in_a_later_stratum() {
    let p = plan(&format!(
        "{EDGE}.decl b(x: number, y: number, z: number)\n.input b\n.decl blocked(x: number)\nblocked(x) :- edge(x, x).\n.decl r(x: number)\n.output r\nr(x) :- edge(x, _), !b(x, _, 3), !blocked(x).\n"
    ));
    let r = only_rule(&p, "r");
    let (b, blocked) = (
        p.relation_id("b").unwrap(),
        p.relation_id("blocked").unwrap(),
    );
    match &r.body.steps[..] {
        [Step::AntiJoin {
            rel: r1,
            left_key: k1,
            right_cols: c1,
        }, Step::AntiJoin {
            rel: r2,
            left_key: k2,
            right_cols: c2,
        }] => {
            assert_eq!((*r1, k1, c1), (b, &vec![Expr::Slot(0), n(3)], &vec![0, 2]));
            assert_eq!((*r2, k2, c2), (blocked, &vec![Expr::Slot(0)], &vec![0]));
        }
        other => panic!("unexpected steps {other:?}"),
    }
    let pos = |name: &str| {
        p.strata
            .iter()
            .position(|s| s.relations.contains(&p.relation_id(name).unwrap()))
            .unwrap()
    };
    assert!(pos("blocked") < pos("r"));
    assert!(!p.strata[pos("r")].recursive);
}

#[test]
fn count_is_grouped_by_the_outer_variables_it_mentions() {
    let p = plan(&format!("{EDGE}.decl node(x: number)\n.input node\n.decl deg(x: number, n: number)\n.output deg\ndeg(x, n) :- node(x), n = count : {{ edge(x, _) }}.\n"));
    let r = only_rule(&p, "deg");
    let edge = p.relation_id("edge").unwrap();
    match &r.body.steps[..] {
        [Step::Aggregate {
            func: AggFunc::Count,
            group,
            inner,
            value: None,
            order,
            result: Prim::Number,
            ..
        }] => {
            assert!(order.is_empty());
            assert_eq!(group, &vec![0]);
            assert!(matches!(inner.source, Source::Outer));
            match &inner.steps[..] {
                [Step::Join {
                    rel,
                    left_key,
                    right_key,
                    cols,
                }] => {
                    assert_eq!(
                        (*rel, left_key, right_key),
                        (edge, &vec![Expr::Slot(0)], &vec![0])
                    );
                    assert_eq!(cols, &vec![ColPat::Ignore, ColPat::Ignore]);
                }
                other => panic!("unexpected inner steps {other:?}"),
            }
        }
        other => panic!("unexpected steps {other:?}"),
    }
    assert_eq!(r.head_exprs, vec![Expr::Slot(0), Expr::Slot(1)]);
}

#[test]
fn sum_min_and_aggregates_inside_expressions() {
    let p = plan(&format!(
        "{EDGE}.decl t(n: number)\n.output t\nt(s) :- s = sum y : {{ edge(_, y) }}.\nt(x) :- edge(x, _), x < max y : {{ edge(_, y) }}.\nt(count : {{ edge(_, _) }}).\n.decl u(n: unsigned)\n.input u\n.decl m(n: unsigned)\n.output m\nm(k) :- k = min v : u(v).\n"
    ));
    let rs = rules(&p, "t");
    assert_eq!(rs.len(), 3);
    // sum: no outer variables → unit source, empty group, value over the inner row.
    assert!(matches!(rs[0].body.source, Source::Unit));
    match &rs[0].body.steps[..] {
        [Step::Aggregate {
            func: AggFunc::Sum,
            group,
            inner,
            value: Some(Expr::Slot(0)),
            result: Prim::Number,
            ..
        }] => {
            assert!(group.is_empty());
            assert!(
                matches!(&inner.steps[..], [Step::Join { cols, .. }] if cols == &vec![ColPat::Ignore, ColPat::Bind])
            );
        }
        other => panic!("unexpected steps {other:?}"),
    }
    // max inside a comparison: computed first into a fresh slot, then compared.
    match &rs[1].body.steps[..] {
        [Step::Aggregate {
            func: AggFunc::Max, ..
        }, Step::Filter(Cond::Compare(CmpOp::Lt, Expr::Slot(0), Expr::Slot(1)))] => {}
        other => panic!("unexpected steps {other:?}"),
    }
    // an aggregate in a head: a rule with a unit body.
    assert!(matches!(rs[2].body.source, Source::Unit));
    assert_eq!(rs[2].head_exprs, vec![Expr::Slot(0)]);
    // min over unsigned, single-atom form.
    let m = only_rule(&p, "m");
    assert!(matches!(
        &m.body.steps[..],
        [Step::Aggregate {
            func: AggFunc::Min,
            result: Prim::Unsigned,
            value: Some(Expr::Slot(0)),
            ..
        }]
    ));
}

#[test]
fn an_aggregate_equal_to_a_bound_variable_is_compared() {
    let p = plan(&format!(
        "{EDGE}.decl r(x: number)\n.output r\nr(x) :- edge(x, _), x = count : {{ edge(_, _) }}.\n"
    ));
    let r = only_rule(&p, "r");
    match &r.body.steps[..] {
        [Step::Aggregate { .. }, Step::Filter(Cond::Compare(CmpOp::Eq, Expr::Slot(0), Expr::Slot(1)))] =>
            {}
        other => panic!("unexpected steps {other:?}"),
    }
}

#[test]
fn nested_aggregates_have_their_own_group_keys() {
    let p = plan(&format!(
        "{EDGE}.decl r(x: number, n: number)\n.output r\nr(x, n) :- edge(x, _), n = count : {{ edge(x, y), c = count : {{ edge(y, _) }}, c > 1 }}.\n"
    ));
    let r = only_rule(&p, "r");
    let [Step::Aggregate { group, inner, .. }] = &r.body.steps[..] else {
        panic!("{:?}", r.body.steps)
    };
    assert_eq!(group, &vec![0]);
    // inner: t0 = x; join edge(=t0, →t1); aggregate by (t1); filter.
    match &inner.steps[..] {
        [Step::Join { left_key, .. }, Step::Aggregate { group: g2, .. }, Step::Filter(Cond::Compare(CmpOp::Gt, Expr::Slot(2), _))] =>
        {
            assert_eq!(left_key, &vec![Expr::Slot(0)]);
            assert_eq!(g2, &vec![1]);
        }
        other => panic!("unexpected inner steps {other:?}"),
    }
}

#[test]
fn disjunctions_and_multiple_heads_give_several_rule_plans() {
    let p = plan(&format!(
        "{EDGE}.decl a(x: number)\n.decl b(x: number)\n.output a, b\na(x), b(x) :- edge(x, y), (y < 3 ; y > 10).\n"
    ));
    for name in ["a", "b"] {
        let rs = rules(&p, name);
        assert_eq!(rs.len(), 2, "{name}");
        assert!(matches!(
            &rs[0].body.steps[..],
            [Step::Filter(Cond::Compare(CmpOp::Lt, Expr::Slot(1), _))]
        ));
        assert!(matches!(
            &rs[1].body.steps[..],
            [Step::Filter(Cond::Compare(CmpOp::Gt, Expr::Slot(1), _))]
        ));
    }
}

#[test]
fn assignments_bind_and_literals_take_the_context_type() {
    let p = plan(".decl u(x: unsigned)\n.input u\n.decl v(x: unsigned)\n.output v\nv(x) :- u(x), x < 5.\nv(z) :- u(x), z = x * 2, y = 3, z > y.\n");
    let vs = rules(&p, "v");
    match &vs[0].body.steps[..] {
        [Step::Filter(Cond::Compare(CmpOp::Lt, Expr::Slot(0), Expr::Const(Value::Unsigned(5))))] => {
        }
        other => panic!("unexpected steps {other:?}"),
    }
    // `y = 3` takes the type of the `z` it is compared with: unsigned.
    match &vs[1].body.steps[..] {
        [Step::Bind(Expr::Binary(BinOp::Mul, _, k)), Step::Bind(Expr::Const(Value::Unsigned(3))), Step::Filter(Cond::Compare(CmpOp::Gt, Expr::Slot(1), Expr::Slot(2)))] =>
        {
            assert_eq!(**k, Expr::Const(Value::Unsigned(2)));
        }
        other => panic!("unexpected steps {other:?}"),
    }
}

#[test]
fn a_bind_step_computes_an_assignment() {
    let p = plan(&format!(
        "{EDGE}.decl r(x: number)\n.output r\nr(y) :- edge(x, _), y = x + 1.\n"
    ));
    let r = only_rule(&p, "r");
    assert_eq!(r.body.steps.len(), 1);
    match &r.body.steps[0] {
        Step::Bind(Expr::Binary(BinOp::Add, a, b)) => {
            assert_eq!(**a, Expr::Slot(0));
            assert_eq!(**b, n(1));
        }
        other => panic!("unexpected step {other:?}"),
    }
    assert_eq!(r.head_exprs, vec![Expr::Slot(1)]);
}

#[test]
fn facts_are_evaluated_with_their_column_types() {
    let p = plan(".type Port <: unsigned\n.decl r(x: number, p: Port, s: symbol, a: prefix4)\n.output r\nr(1 + 2, 80, cat(\"a\", \"b\"), 10.0.0.0/8).\n");
    let r = p.relation_id("r").unwrap();
    assert_eq!(p.facts.len(), 1);
    let (rel, row) = &p.facts[0];
    assert_eq!(*rel, r);
    assert_eq!(row[0], Value::Number(3));
    assert_eq!(row[1], Value::Unsigned(80));
    assert_eq!(row[2], Value::sym("ab"));
    assert_eq!(row[3], Value::parse("10.0.0.0/8", Prim::Prefix4).unwrap());
    assert!(p.strata.is_empty(), "facts need no stratum");
}

#[test]
fn a_body_without_atoms_starts_from_unit() {
    let p = plan(".decl r(x: number)\n.output r\nr(x) :- x = 2, x > 1.\n");
    let r = only_rule(&p, "r");
    assert!(matches!(r.body.source, Source::Unit));
    match &r.body.steps[..] {
        [Step::Bind(Expr::Const(Value::Number(2))), Step::Filter(Cond::Compare(CmpOp::Gt, Expr::Slot(0), Expr::Const(Value::Number(1))))] =>
            {}
        other => panic!("unexpected steps {other:?}"),
    }
}

#[test]
fn expression_arguments_join_or_filter() {
    let p = plan(".decl a(x: number)\n.decl b(x: number)\n.input a, b\n.decl r(x: number)\n.decl s(x: number)\n.output r, s\nr(x) :- a(x), b(x + 1).\ns(y) :- b(y + 1), a(y).\n");
    let b = p.relation_id("b").unwrap();
    let r = only_rule(&p, "r");
    match &r.body.steps[..] {
        [Step::Join {
            rel,
            left_key,
            right_key,
            cols,
        }] => {
            assert_eq!(*rel, b);
            assert_eq!(
                left_key,
                &vec![Expr::Binary(
                    BinOp::Add,
                    Box::new(Expr::Slot(0)),
                    Box::new(n(1))
                )]
            );
            assert_eq!((right_key, cols), (&vec![0], &vec![ColPat::Ignore]));
        }
        other => panic!("unexpected steps {other:?}"),
    }
    // The first atom binds the expression's column; the comparison waits for `y`.
    let s = only_rule(&p, "s");
    assert_eq!(scan(&s.body), (b, &[ColPat::Bind][..]));
    match &s.body.steps[..] {
        [Step::Join { cols, .. }, Step::Filter(Cond::Compare(CmpOp::Eq, Expr::Slot(0), Expr::Binary(BinOp::Add, y, _)))] =>
        {
            assert_eq!(cols, &vec![ColPat::Bind]);
            assert_eq!(**y, Expr::Slot(1));
        }
        other => panic!("unexpected steps {other:?}"),
    }
}

#[test]
fn the_next_atom_is_the_one_with_most_bound_arguments() {
    let p = plan(".decl a(x: number)\n.decl b(y: number, z: number)\n.decl c(x: number, y: number)\n.input a, b, c\n.decl r(x: number, z: number)\n.output r\nr(x, z) :- a(x), b(y, z), c(x, y).\n");
    let (b, c) = (p.relation_id("b").unwrap(), p.relation_id("c").unwrap());
    let r = only_rule(&p, "r");
    match &r.body.steps[..] {
        [Step::Join {
            rel: first,
            left_key: k1,
            ..
        }, Step::Join {
            rel: second,
            left_key: k2,
            ..
        }] => {
            assert_eq!((*first, k1), (c, &vec![Expr::Slot(0)]));
            assert_eq!((*second, k2), (b, &vec![Expr::Slot(1)]));
        }
        other => panic!("unexpected steps {other:?}"),
    }
    assert_eq!(r.head_exprs, vec![Expr::Slot(0), Expr::Slot(2)]);
}

#[test]
fn constraint_functors_filter_and_negate() {
    let p = plan(".decl a(x: ipv4)\n.input a\n.decl r(x: ipv4)\n.output r\nr(x) :- a(x), contains(10.0.0.0/8, x), !contains(10.1.0.0/16, x), !x = 10.0.0.1.\n");
    let r = only_rule(&p, "r");
    match &r.body.steps[..] {
        [Step::Filter(Cond::Call(Builtin::PrefixContains, a1)), Step::Filter(Cond::Not(c2)), Step::Filter(Cond::Not(c3))] =>
        {
            assert_eq!(a1[1], Expr::Slot(0));
            assert!(matches!(&**c2, Cond::Call(Builtin::PrefixContains, _)));
            assert!(matches!(
                &**c3,
                Cond::Compare(CmpOp::Eq, Expr::Slot(0), Expr::Const(Value::Ipv4(_)))
            ));
        }
        other => panic!("unexpected steps {other:?}"),
    }
}

#[test]
fn relations_carry_types_locations_and_io() {
    let p = plan(
        ".type Ip = ipv4 | ipv6\n.type Host <: symbol\n.decl link(@h: Host, ip: Ip) input\n.input link(IO=file, filename=\"l.tsv\")\n.decl out(h: Host) output printsize\nout(h) :- link(h, _).\n",
    );
    let link = &p.relations[p.relation_id("link").unwrap()];
    assert_eq!(link.location, Some(0));
    assert_eq!(link.columns[0].type_name, "Host");
    assert_eq!(link.columns[0].prims, vec![Prim::Symbol]);
    assert_eq!(link.columns[1].prims, vec![Prim::Ipv4, Prim::Ipv6]);
    assert_eq!(link.inputs.len(), 2);
    assert_eq!(link.inputs[0], IoSpec::default());
    assert_eq!(
        link.inputs[1].params.get("filename").map(String::as_str),
        Some("l.tsv")
    );
    let out = &p.relations[p.relation_id("out").unwrap()];
    assert_eq!(
        (out.outputs.len(), out.printsize, out.location),
        (1, true, None)
    );
}

#[test]
fn false_drops_a_disjunct_and_true_is_ignored() {
    let p = plan(&format!(
        "{EDGE}.decl r(x: number)\n.output r\nr(x) :- edge(x, _), (false ; true).\n"
    ));
    let rs = rules(&p, "r");
    assert_eq!(rs.len(), 1);
    assert!(rs[0].body.steps.is_empty());
}

#[test]
fn a_long_chain_of_relations_stratifies_without_recursion_limits() {
    let n = 5000;
    let mut text = String::from(".decl r0(x: number)\n.input r0\n");
    for i in 1..=n {
        text += &format!(".decl r{i}(x: number)\nr{i}(x) :- r{}(x).\n", i - 1);
    }
    text += &format!(".output r{n}\nr0(x) :- r{n}(x).\n");
    let p = plan(&text);
    // One big recursive component.
    assert_eq!(p.strata.len(), 1);
    assert!(p.strata[0].recursive);
    assert_eq!(p.strata[0].relations.len(), n + 1);
}

#[test]
fn strata_come_in_dependency_order() {
    let p = plan(&format!(
        "{EDGE}.decl c(x: number)\n.decl b(x: number)\n.decl a(x: number)\n.output c\nc(x) :- b(x), !a(x).\nb(x) :- a(x).\na(x) :- edge(x, _).\n"
    ));
    let pos = |name: &str| {
        p.strata
            .iter()
            .position(|s| s.relations.contains(&p.relation_id(name).unwrap()))
            .unwrap()
    };
    assert!(pos("a") < pos("b") && pos("b") < pos("c"));
    lower::verify::verify(&p).expect("invariants hold");
}

#[test]
fn dump_is_readable_and_stable() {
    let p = plan(&format!(
        "{EDGE}.decl path(a: number, b: number)\n.output path\nedge(1, 2).\npath(x, y) :- edge(x, y).\npath(x, z) :- path(x, y), edge(y, z), !edge(z, x), x != z.\n.decl deg(x: number, n: number)\n.output deg\ndeg(x, n) :- edge(x, _), n = count : {{ edge(x, _) }}.\n"
    ));
    let expected = "\
relation edge(a: number, b: number) input()
relation path(a: number, b: number) output()
relation deg(x: number, n: number) output()
fact edge(1, 2)
stratum 0 [path] recursive
  rule path(s0, s1)
    scan edge(→s0, →s1)
  rule path(s0, s2)
    scan path(→s0, →s1)
    join edge(=s1, →s2)
    antijoin edge(=s2, =s0)
    filter s0 != s2
stratum 1 [deg]
  rule deg(s0, s1)
    scan edge(→s0, _)
    aggregate s1 := count by (s0) as number {
      outer(t0)
      join edge(=t0, _)
    }
";
    assert_eq!(lower::dump(&p), expected);
}
