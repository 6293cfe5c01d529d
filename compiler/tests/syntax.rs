//! Parser tests: a program using every construct parses to the expected
//! shape, and each syntax error fixture under `tests/errors/syntax/` renders
//! exactly as its `.expected` file (regenerate with `UPDATE_EXPECT=1`).

use netc_compiler::ast::*;
use netc_compiler::diagnostics::Diagnostics;
use netc_compiler::source::SourceMap;
use netc_compiler::syntax;
use std::path::Path;

fn parse(text: &str) -> (Program, Diagnostics, SourceMap) {
    parse_named("t.dl", text)
}

fn parse_named(name: &str, text: &str) -> (Program, Diagnostics, SourceMap) {
    let mut sources = SourceMap::new();
    let mut diags = Diagnostics::new();
    let p = syntax::parse_text(&mut sources, name, text, &mut diags);
    (p, diags, sources)
}

#[test]
fn every_construct_parses() {
    let text = r#"
// Souffle constructs
.type Host <: symbol
.type Ip = ipv4 | ipv6
.type Alias = number
.decl edge(a: number, b: number)
.decl path(a: number, b: number) output
.decl flow(@host: Host, dst: Ip, p: prefix4, m: mac)
.input edge(IO=file, filename="edges.tsv", delimiter=",")
.output path, flow
.printsize path
edge(1, 2). edge(2, 3).
flow("h1", 10.0.0.1, 10.0.0.0/8, de:ad:be:ef:00:01).
flow("h2", 2001:db8::1, 192.168.0.0/16, 00:00:00:00:00:01).
path(x, y) :- edge(x, y).
path(x, z) :- path(x, y), edge(y, z), !edge(z, x), x != z.
p2(x), p3(x) :- edge(x, _) ; (edge(_, x), x > 1).
c(x, n) :- edge(x, _), n = count : { edge(x, _) }.
s(t) :- t = sum y : { edge(_, y) }.
m(t) :- t = min y : edge(_, y).
a(x) :- edge(x, y), x + 2 * y ^ 2 band 7 < (y - 1) * 3, contains(10.0.0.0/8, 10.1.2.3).
b(s) :- edge(x, _), s = cat("n", to_string(x)), !contains("x", s), -x < 0.
u(x) :- edge(x, _), x = 42u, 1.5 < 2.0, true.
"#;
    let (p, diags, sources) = parse(text);
    assert!(!diags.has_errors(), "{}", diags.render_all(&sources));
    let decls: Vec<&Decl> = p
        .items
        .iter()
        .filter_map(|i| if let Item::Decl(d) = i { Some(d) } else { None })
        .collect();
    assert_eq!(decls.len(), 3);
    assert!(decls[2].attrs[0].located && !decls[2].attrs[1].located);
    assert_eq!(decls[1].qualifiers[0].name, "output");
    let types: Vec<&TypeDecl> = p
        .items
        .iter()
        .filter_map(|i| if let Item::Type(t) = i { Some(t) } else { None })
        .collect();
    assert!(matches!(&types[1].def, TypeDef::Union(m) if m.len() == 2));
    assert!(matches!(&types[2].def, TypeDef::Alias(_)));
    let rules: Vec<&Rule> = p
        .items
        .iter()
        .filter_map(|i| if let Item::Rule(r) = i { Some(r) } else { None })
        .collect();
    // 4 facts + 9 rules
    assert_eq!(rules.iter().filter(|r| r.is_fact()).count(), 4);
    let flow = &rules[2].heads[0];
    assert!(matches!(&flow.args[1], Expr::Lit(Lit::Ipv4(a), _) if a == "10.0.0.1"));
    assert!(matches!(&flow.args[2], Expr::Lit(Lit::Prefix4(a), _) if a == "10.0.0.0/8"));
    assert!(matches!(&flow.args[3], Expr::Lit(Lit::Mac(_), _)));
    assert!(matches!(&rules[3].heads[0].args[1], Expr::Lit(Lit::Ipv6(a), _) if a == "2001:db8::1"));
    let rec = rules[5];
    assert_eq!(rec.body.len(), 1);
    assert!(matches!(&rec.body[0][2], Literal::Negated(a, _) if a.relation.name == "edge"));
    assert!(matches!(&rec.body[0][3], Literal::Compare(CmpOp::Ne, ..)));
    let disj = rules[6];
    assert_eq!(disj.heads.len(), 2);
    assert_eq!(
        disj.body.len(),
        2,
        "`;` splits the body into two conjunctions"
    );
    assert!(matches!(&disj.body[1][0], Literal::Group(g, _) if g[0].len() == 2));
    let count = rules[7];
    assert!(matches!(
        &count.body[0][1],
        Literal::Compare(
            CmpOp::Eq,
            Expr::Var(_),
            Expr::Aggregate {
                func: AggFunc::Count,
                target: None,
                ..
            },
            _
        )
    ));
    let min = rules[9];
    assert!(
        matches!(&min.body[0][0], Literal::Compare(_, _, Expr::Aggregate { func: AggFunc::Min, target: Some(_), body, .. }, _) if body[0].len() == 1)
    );
    // precedence: x + ((2 * (y ^ 2)) band 7)?  Souffle: band binds looser than +, so (x + 2*y^2) band 7
    let arith = rules[10];
    match &arith.body[0][1] {
        Literal::Compare(CmpOp::Lt, Expr::Binary(BinOp::BAnd, l, _, _), _, _) => {
            assert!(
                matches!(**l, Expr::Binary(BinOp::Add, _, ref r, _) if matches!(**r, Expr::Binary(BinOp::Mul, _, ref p, _) if matches!(**p, Expr::Binary(BinOp::Pow, ..))))
            );
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(
        matches!(&arith.body[0][2], Literal::Constraint(f, args, _) if f.name == "contains" && args.len() == 2)
    );
    let b = rules[11];
    assert!(matches!(&b.body[0][2], Literal::NegatedConstraint(..)));
    assert!(matches!(
        &b.body[0][3],
        Literal::Compare(CmpOp::Lt, Expr::Unary(UnOp::Neg, ..), ..)
    ));
    let u = rules[12];
    assert!(
        matches!(&u.body[0][1], Literal::Compare(_, _, Expr::Lit(Lit::Unsigned(n), _), _) if n == "42")
    );
    assert!(matches!(&u.body[0][3], Literal::Bool(true, _)));
}

#[test]
fn errors_are_all_reported_in_one_pass() {
    let (_, diags, _) = parse("a(x) :- b(x)\nc(1).\n.decl d(x number)\ne(1) :- .\nf(2).\n");
    assert_eq!(diags.error_count(), 3, "{:?}", diags.items);
}

#[test]
fn includes_are_spliced_and_cycles_reported() {
    let dir = std::env::temp_dir().join(format!("netc-include-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(dir.join("main.dl"), ".include \"sub/lib.dl\"\nr(1).\n").unwrap();
    std::fs::write(
        dir.join("sub/lib.dl"),
        ".decl r(x: number)\n.include \"../main.dl\"\n",
    )
    .unwrap();
    let mut sources = SourceMap::new();
    let mut diags = Diagnostics::new();
    let p = syntax::parse_files(&mut sources, &[dir.join("main.dl")], &mut diags);
    assert_eq!(p.items.len(), 2, "decl from the include, then the fact");
    assert!(matches!(p.items[0], Item::Decl(_)));
    let text = diags.render_all(&sources);
    assert!(
        text.contains("E0004") && text.contains("include cycle"),
        "{text}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn syntax_error_fixtures_render_as_expected() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/errors/syntax");
    let update = std::env::var("UPDATE_EXPECT").is_ok();
    let mut n = 0;
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "dl"))
    {
        n += 1;
        let text = std::fs::read_to_string(&path).unwrap();
        let name = format!("{}.dl", path.file_stem().unwrap().to_string_lossy());
        let (_, diags, sources) = parse_named(&name, &text);
        let got = diags.render_all(&sources);
        assert!(diags.has_errors(), "{name}: no error reported");
        let expected_path = path.with_extension("expected");
        if update {
            std::fs::write(&expected_path, &got).unwrap();
        } else {
            let want = std::fs::read_to_string(&expected_path).unwrap_or_default();
            assert_eq!(
                got, want,
                "{name}: rendered diagnostics differ (UPDATE_EXPECT=1 to regenerate)"
            );
        }
    }
    assert!(n >= 6, "expected the syntax error fixtures, found {n}");
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    // Runs in a small thread stack on purpose: the limit must hold in debug builds too.
    let handle = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(|| {
            for depth in [10usize, 63, 65, 1_000, 100_000] {
                let text = format!(
                    "r(x) :- s(x), x < {}1{}.\nq(x) :- {}s(x){}.\nn(x) :- s(x), {}x = 1.\n",
                    "(".repeat(depth),
                    ")".repeat(depth),
                    "(".repeat(depth),
                    ")".repeat(depth),
                    "-".repeat(depth)
                );
                let (_, diags, sources) = parse(&text);
                let rendered = diags.render_all(&sources);
                if depth < 60 {
                    assert!(!diags.has_errors(), "depth {depth}: {rendered}");
                } else {
                    assert!(
                        rendered.contains("nested more than 64 levels"),
                        "depth {depth}: {rendered}"
                    );
                }
            }
        })
        .unwrap();
    handle.join().expect("the parser overflowed its stack");
}

#[test]
fn negated_groups_parse() {
    let (p, diags, sources) = parse("r(x) :- s(x), !(x < 2 ; x > 5).\n");
    assert!(!diags.has_errors(), "{}", diags.render_all(&sources));
    let Item::Rule(r) = &p.items[0] else { panic!() };
    assert!(
        matches!(&r.body[0][1], Literal::NegatedConstraint(inner, _) if matches!(**inner, Literal::Group(..)))
    );
}
