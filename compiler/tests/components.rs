//! Souffle front-end constructs expanded into plain relations: several
//! names in one `.decl`, `.pragma`, components (`.comp`/`.init`, type
//! parameters, inheritance, `.override`, nesting), `eqrel`, and the numeric
//! overloads of `to_float`/`to_number`/`to_unsigned`. What these programs
//! compute is tested through `netc run` (tests/test_souffle_conformance.py);
//! here: the names and rules the expansion produces, and its errors.

use netc_compiler::compile_text;
use netc_compiler::diagnostics::Severity;

/// Relation names of the plan, sorted; panics with the diagnostics on error.
fn relations(text: &str) -> Vec<String> {
    let c = compile_text("t.dl", text);
    let plan = c
        .plan
        .unwrap_or_else(|| panic!("{}", c.diagnostics.render_all(&c.sources)));
    let mut names: Vec<String> = plan.relations.iter().map(|r| r.name.clone()).collect();
    names.sort();
    names
}

/// Rendered errors and warnings (codes and messages).
fn diagnostics(text: &str) -> (Vec<(&'static str, String)>, String) {
    let c = compile_text("t.dl", text);
    let list = c
        .diagnostics
        .sorted()
        .iter()
        .map(|d| (d.code, d.message.clone()))
        .collect();
    (list, c.diagnostics.render_all(&c.sources))
}

#[test]
fn one_decl_declares_several_relations() {
    let names = relations(".decl A, B(x: number)\nA(1). B(x) :- A(x).\n.output B\n");
    assert_eq!(names, ["A", "B"]);
}

#[test]
fn identifiers_may_contain_question_marks() {
    let names = relations(".decl is_ok?(x: number)\nis_ok?(1).\n.output is_ok?\n");
    assert_eq!(names, ["is_ok?"]);
}

#[test]
fn known_pragmas_are_silent_and_unknown_ones_warn_once() {
    let (d, _) = diagnostics(
        ".pragma \"magic-transform\" \"*\"\n.pragma \"jobs\" \"4\"\n.decl a(x: number)\na(1).\n.output a\n",
    );
    assert!(d.is_empty(), "{d:?}");
    let (d, text) = diagnostics(
        ".pragma \"frobnicate\" \"1\"\n.pragma \"frobnicate\" \"2\"\n.decl a(x: number)\na(1).\n.output a\n",
    );
    assert_eq!(d.len(), 1, "{text}");
    assert_eq!(d[0].0, "W0006");
    assert!(text.contains("t.dl:1:1"), "{text}");
}

const GRAPH: &str = r#"
.comp Graph<N> {
    .decl edge(a: N, b: N)
    .decl reach(a: N, b: N) overridable
    reach(x, y) :- edge(x, y).
    reach(x, z) :- reach(x, y), edge(y, z).
}
.comp Sym<N> : Graph<N> {
    .override reach
    reach(x, y) :- edge(x, y) ; edge(y, x).
    reach(x, z) :- reach(x, y), reach(y, z).
}
.comp Pair<M> {
    .init left = Graph<M>
    .init right = Sym<M>
    .decl both(a: M, b: M)
    both(x, y) :- left.reach(x, y), right.reach(x, y).
}
.init g = Graph<number>
.init p = Pair<symbol>
g.edge(1, 2).
p.left.edge("a", "b").
p.right.edge("a", "b").
.output g.reach, p.both
"#;

#[test]
fn components_expand_to_prefixed_relations() {
    let names = relations(GRAPH);
    assert_eq!(
        names,
        [
            "g.edge",
            "g.reach",
            "p.both",
            "p.left.edge",
            "p.left.reach",
            "p.right.edge",
            "p.right.reach"
        ]
    );
    let c = compile_text("t.dl", GRAPH);
    let plan = c.plan.expect("plan");
    let both = &plan.relations[plan.relation_id("p.both").expect("p.both")];
    // the type parameter became the argument
    assert_eq!(both.columns[0].type_name, "symbol");
}

#[test]
fn override_replaces_the_base_rules() {
    // Sym's own rules only: its reach is symmetric; Graph's two rules are gone
    // (a third rule would make the count 4).
    let c = compile_text("t.dl", GRAPH);
    let plan = c.plan.expect("plan");
    let right = plan.relation_id("p.right.reach").expect("rel");
    let rules = plan
        .strata
        .iter()
        .flat_map(|s| s.rules.iter())
        .filter(|r| r.head == right)
        .count();
    assert_eq!(
        rules, 3,
        "two disjuncts of the first rule and the closure rule"
    );
}

#[test]
fn component_errors_name_the_component_and_instance() {
    let (d, text) = diagnostics(".comp C<T> { .decl r(x: T) }\n.init i = C\n");
    assert_eq!(d[0].0, "E0117", "{text}");
    assert!(
        d[0].1.contains("instance `i`") && d[0].1.contains("component `C`"),
        "{text}"
    );
    assert!(text.contains("t.dl:2:1"), "{text}");

    let (d, text) = diagnostics(".init i = Nope\n");
    assert!(d[0].1.contains("unknown component `Nope`"), "{text}");
    assert!(text.contains("t.dl:1:11"), "{text}");

    let (d, text) = diagnostics(
        ".comp A { .decl r(x: number) r(1). }\n.comp B : A { .override r r(2). }\n.init b = B\n.output b.r\n",
    );
    assert!(
        d.iter()
            .any(|(c, m)| *c == "E0117" && m.contains("overridable")),
        "{text}"
    );

    let (d, text) = diagnostics(".comp A : A { }\n.init a = A\n");
    assert!(d[0].1.contains("inherits from itself"), "{text}");

    let (d, text) = diagnostics(".comp A { .init a = A }\n.init a = A\n");
    assert!(d[0].1.contains("nests more than"), "{text}");
}

#[test]
fn eqrel_becomes_closure_rules() {
    let c = compile_text(
        "t.dl",
        ".decl same(a: number, b: number) eqrel\nsame(1, 2). same(2, 3).\n.output same\n",
    );
    let plan = c
        .plan
        .unwrap_or_else(|| panic!("{}", c.diagnostics.render_all(&c.sources)));
    let same = plan.relation_id("same").expect("same");
    let rules = plan
        .strata
        .iter()
        .flat_map(|s| s.rules.iter())
        .filter(|r| r.head == same)
        .count();
    assert_eq!(rules, 3);
    assert!(c
        .diagnostics
        .sorted()
        .iter()
        .all(|d| d.severity != Severity::Error));

    let (d, text) = diagnostics(".decl same(a: number, b: symbol) eqrel\n.output same\n");
    assert_eq!(d[0].0, "E0112", "{text}");
}

#[test]
fn numeric_conversions_have_souffles_overloads() {
    let names = relations(
        ".decl r(f: float, u: unsigned, n: number)\n\
         r(to_float(n), to_unsigned(n), to_number(to_float(n))) :- n = 3.\n\
         r(to_float(u), to_unsigned(to_float(u)), to_number(u)) :- u = 4u.\n.output r\n",
    );
    assert_eq!(names, ["r"]);
}

#[test]
fn unsupported_souffle_constructs_are_named_with_a_pointer_to_the_spec() {
    for (text, construct, at) in [
        (
            ".decl r(x: number)\nr(x) :- r(x), x = nil.\n",
            "records (`nil`)",
            "t.dl:2:19",
        ),
        (
            ".decl r(x: number)\nr(x) :- r(x), x = $A(1).\n",
            "ADT constructors",
            "t.dl:2:19",
        ),
        (
            ".decl r(x: number)\nr(x) :- r(x), x = [1, 2].\n",
            "record values",
            "t.dl:2:19",
        ),
        (".type P = [a: number]\n", "record types", "t.dl:1:11"),
        (
            ".type S = C { r: number } | D { s: number }\n",
            "algebraic data types",
            "t.dl:1:11",
        ),
        (
            ".decl r(x: number) choice-domain x\n",
            "`choice-domain`",
            "t.dl:1:20",
        ),
        (
            ".decl r(x: number)\nr(x) <= r(y) :- x < y.\n",
            "subsumption",
            "t.dl:2:6",
        ),
        (
            ".decl r(x: number)\n.limitsize r(n=5)\n",
            "`.limitsize`",
            "t.dl:2:1",
        ),
        (
            ".decl r(x: number)\nr(x) :- x = range(0, 5).\n",
            "`range`",
            "t.dl:2:13",
        ),
    ] {
        let (d, rendered) = diagnostics(text);
        assert!(
            d.iter()
                .any(|(_, m)| m.contains(construct) && m.contains("not supported")),
            "{text}: {rendered}"
        );
        assert!(
            rendered.contains("specs/language.md section 10"),
            "{rendered}"
        );
        assert!(rendered.contains(at), "{text}: {rendered}");
    }
}

#[test]
fn mean_is_a_float_sum_over_a_count() {
    let names = relations(
        ".decl r(g: symbol, x: number)\n.decl m(g: symbol, v: float)\n\
         r(\"a\", 1). r(\"a\", 2).\n\
         m(g, v) :- r(g, _), v = mean x : { r(g, x) }.\n.output m\n",
    );
    assert_eq!(names, ["m", "r"]);
    let (d, text) = diagnostics(
        ".decl r(x: number)\n.decl m(v: float)\nr(1).\nm(v + 1.0) :- r(_), v < mean x : { r(x) }.\n.output m\n",
    );
    assert!(
        d.iter().any(|(c, m)| *c == "E0202" && m.contains("`mean`")),
        "{text}"
    );
}
