//! Robustness of check and lowering: no panic on any input, and every
//! program the checker accepts lowers to a plan that passes `verify`.

use netc_compiler::ast::*;
use netc_compiler::source::{FileId, Span};
use netc_compiler::{check, diagnostics::Diagnostics, lower, source::SourceMap, syntax};
use proptest::prelude::*;

fn sp() -> Span {
    Span::new(FileId(0), 0, 1)
}

fn ident(s: &str) -> Ident {
    Ident {
        name: s.to_string(),
        span: sp(),
    }
}

fn decl(name: &str, n: usize) -> Item {
    let attrs = (0..n)
        .map(|i| Attr {
            name: ident(&format!("a{i}")),
            ty: ident("number"),
            located: false,
            span: sp(),
        })
        .collect();
    Item::Decl(Decl {
        name: ident(name),
        attrs,
        qualifiers: vec![ident("output")],
        span: sp(),
    })
}

fn atom(name: &str, args: Vec<Expr>) -> Atom {
    Atom {
        relation: ident(name),
        args,
        span: sp(),
    }
}

fn var(s: &str) -> Expr {
    Expr::Var(ident(s))
}

/// Checks a hand-built program (no parser involved).
fn check_ast(items: Vec<Item>) -> (Diagnostics, bool) {
    let mut sources = SourceMap::new();
    sources.add("t.dl", None, " ".repeat(8));
    let mut diags = Diagnostics::new();
    let ok = check::check(
        &Program {
            items,
            ..Default::default()
        },
        &mut diags,
    )
    .map(|c| lower::try_lower(&c).expect("lowers"))
    .is_some();
    (diags, ok)
}

#[test]
fn deeply_nested_expressions_are_an_error_not_a_crash() {
    let mut e = var("x");
    for _ in 0..500 {
        e = Expr::Binary(
            BinOp::Add,
            Box::new(e),
            Box::new(Expr::Lit(Lit::Int("1".into()), sp())),
            sp(),
        );
    }
    let body = vec![vec![
        Literal::Atom(atom("a", vec![var("x")])),
        Literal::Compare(CmpOp::Eq, var("y"), e, sp()),
    ]];
    let rule = Item::Rule(Rule {
        heads: vec![atom("r", vec![var("y")])],
        body,
        span: sp(),
    });
    let (diags, ok) = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || check_ast(vec![decl("a", 1), decl("r", 1), rule]))
        .expect("spawn")
        .join()
        .expect("no panic, no stack overflow");
    assert!(!ok);
    assert!(
        diags.items.iter().any(|d| d.code == "E0115"),
        "{:?}",
        diags.items
    );
}

#[test]
fn deeply_nested_groups_are_an_error_not_a_crash() {
    let mut lit = Literal::Atom(atom("a", vec![var("x")]));
    for _ in 0..500 {
        lit = Literal::Group(vec![vec![lit]], sp());
    }
    let rule = Item::Rule(Rule {
        heads: vec![atom("r", vec![var("x")])],
        body: vec![vec![lit]],
        span: sp(),
    });
    let (diags, ok) = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || check_ast(vec![decl("a", 1), decl("r", 1), rule]))
        .expect("spawn")
        .join()
        .expect("no panic, no stack overflow");
    assert!(!ok);
    assert!(diags.items.iter().any(|d| d.code == "E0115"));
}

#[test]
fn an_empty_program_is_fine() {
    let (diags, ok) = check_ast(vec![]);
    assert!(ok && diags.items.is_empty());
}

/// A tiny deterministic generator of random (often wrong) programs.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[(self.next() % xs.len() as u64) as usize]
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

const RELS: &[(&str, &[&str])] = &[
    ("e", &["number", "number"]),
    ("f", &["number", "unsigned"]),
    ("g", &["symbol"]),
    ("h", &["Host", "Ip"]),
    ("p", &["number", "number"]),
    ("q", &["number"]),
    ("u", &["unsigned"]),
];
const VARS: &[&str] = &["x", "y", "z", "w", "_"];

fn gen_expr(g: &mut Gen, depth: usize) -> String {
    match g.next() % 10 {
        0..=4 => g.pick(VARS).to_string(),
        5 => g
            .pick(&["1", "2u", "0", "\"s\"", "10.0.0.1", "1.5", "-3"])
            .to_string(),
        6 if depth < 2 => format!(
            "{} {} {}",
            gen_expr(g, depth + 1),
            g.pick(&["+", "-", "*", "/", "%"]),
            gen_expr(g, depth + 1)
        ),
        7 if depth < 2 => format!(
            "{}({})",
            g.pick(&["strlen", "cat", "max", "itou", "to_string", "nope"]),
            gen_expr(g, depth + 1)
        ),
        8 if depth < 1 => {
            let (r, cols) = RELS[(g.next() % RELS.len() as u64) as usize];
            let args: Vec<String> = cols.iter().map(|_| gen_expr(g, 2)).collect();
            let func = g.pick(&["count", "sum", "min", "max"]);
            let target = if func == "count" {
                String::new()
            } else {
                format!("{} ", g.pick(&["x", "y", "z"]))
            };
            format!("{func} {target}: {{ {r}({}) }}", args.join(", "))
        }
        _ => g.pick(&["x", "y"]).to_string(),
    }
}

fn gen_atom(g: &mut Gen) -> String {
    let (r, cols) = RELS[(g.next() % RELS.len() as u64) as usize];
    let args: Vec<String> = cols
        .iter()
        .map(|_| {
            if g.chance(80) {
                g.pick(VARS).to_string()
            } else {
                gen_expr(g, 1)
            }
        })
        .collect();
    format!("{r}({})", args.join(", "))
}

fn gen_literal(g: &mut Gen, depth: usize) -> String {
    match g.next() % 9 {
        0..=3 => gen_atom(g),
        4 => format!("!{}", gen_atom(g)),
        5 => format!(
            "{} {} {}",
            gen_expr(g, 0),
            g.pick(&["=", "!=", "<", ">="]),
            gen_expr(g, 0)
        ),
        6 if depth < 2 => format!(
            "({} ; {})",
            gen_literal(g, depth + 1),
            gen_literal(g, depth + 1)
        ),
        7 => format!(
            "contains({}, {})",
            g.pick(&["10.0.0.0/8", "\"a\"", "x"]),
            g.pick(&["x", "y", "\"b\""])
        ),
        _ => format!("{} = {}", g.pick(&["x", "y", "z"]), gen_expr(g, 0)),
    }
}

/// Mostly well-formed rules over number relations: atoms first, then
/// filters, negations, assignments and aggregates over bound variables.
fn gen_tame_rule(g: &mut Gen) -> String {
    let atoms = [("e", 2), ("p", 2), ("q", 1)];
    let mut body = Vec::new();
    let mut bound: Vec<String> = Vec::new();
    for _ in 0..(1 + g.next() % 3) {
        let (r, n) = atoms[(g.next() % 3) as usize];
        let args: Vec<String> = (0..n)
            .map(|_| match g.next() % 10 {
                0 => "_".to_string(),
                1 => "7".to_string(),
                _ => g.pick(&["x", "y", "z", "w"]).to_string(),
            })
            .collect();
        for a in &args {
            if a.len() == 1 && a != "_" && a != "7" && !bound.contains(a) {
                bound.push(a.clone());
            }
        }
        body.push(format!("{r}({})", args.join(", ")));
    }
    if bound.is_empty() {
        body.push("x = 1".to_string());
        bound.push("x".to_string());
    }
    let mut fresh = 0;
    for _ in 0..(g.next() % 4) {
        let v = bound[(g.next() % bound.len() as u64) as usize].clone();
        let lit = match g.next() % 7 {
            0 => format!("!q({v})"),
            1 => format!("{v} < {}", g.next() % 10),
            2 => format!("({v} < 2 ; {v} > 5)"),
            3 => format!("!e({v}, _)"),
            4 | 5 => {
                fresh += 1;
                let n = format!("n{fresh}");
                let rhs = match g.next() % 4 {
                    0 => format!("{v} + 1"),
                    1 => format!("count : {{ e({v}, _) }}"),
                    2 => format!("sum t : {{ e({v}, t) }}"),
                    _ => format!("max t : {{ p(t, {v}) }}"),
                };
                bound.push(n.clone());
                format!("{n} = {rhs}")
            }
            _ => format!("{v} != {}", bound[(g.next() % bound.len() as u64) as usize]),
        };
        body.push(lit);
    }
    let pick = |g: &mut Gen| bound[(g.next() % bound.len() as u64) as usize].clone();
    let head = if g.chance(50) {
        format!("p({}, {})", pick(g), pick(g))
    } else {
        format!("q({})", pick(g))
    };
    format!("{head} :- {}.\n", body.join(", "))
}

fn gen_program(seed: u64) -> String {
    let mut g = Gen(seed | 1);
    let tame = seed.is_multiple_of(2);
    let mut text = String::from(".type Host <: symbol\n.type Ip = ipv4 | ipv6\n");
    for (r, cols) in RELS {
        let attrs: Vec<String> = cols
            .iter()
            .enumerate()
            .map(|(i, t)| format!("a{i}: {t}"))
            .collect();
        text += &format!(".decl {r}({})\n", attrs.join(", "));
    }
    text += ".input e, f, g, h\n.output p, q, u\n";
    for _ in 0..(1 + g.next() % 4) {
        if tame {
            text += &gen_tame_rule(&mut g);
            continue;
        }
        let (r, cols) = RELS[(4 + g.next() % 3) as usize];
        let head: Vec<String> = cols
            .iter()
            .map(|_| {
                if g.chance(85) {
                    g.pick(&["x", "y", "z", "w"]).to_string()
                } else {
                    gen_expr(&mut g, 1)
                }
            })
            .collect();
        let body: Vec<String> = (0..(1 + g.next() % 4))
            .map(|_| gen_literal(&mut g, 0))
            .collect();
        text += &format!("{r}({}) :- {}.\n", head.join(", "), body.join(", "));
    }
    text
}

proptest! {
    // 600 cases by default; PROPTEST_CASES=100000 for a longer hunt.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(600),
        ..ProptestConfig::default()
    })]

    #[test]
    fn accepted_programs_lower_to_verified_plans(seed in any::<u64>()) {
        let text = gen_program(seed);
        let mut sources = SourceMap::new();
        let mut diags = Diagnostics::new();
        let program = syntax::parse_text(&mut sources, "gen.dl", &text, &mut diags);
        let checked = check::check(&program, &mut diags);
        prop_assert_eq!(checked.is_some(), !diags.has_errors(), "{}", text);
        let _ = diags.render_all(&sources);
        if let Some(c) = checked {
            let lowered = lower::try_lower(&c);
            prop_assert!(lowered.is_ok(), "{}\n{:?}", text, lowered.err());
            let _ = lower::dump(&lowered.unwrap());
        }
    }
}

#[test]
fn the_generator_produces_some_accepted_programs() {
    let accepted = (1..400u64)
        .map(|seed| seed * 2)
        .filter(|seed| {
            let mut sources = SourceMap::new();
            let mut diags = Diagnostics::new();
            let program =
                syntax::parse_text(&mut sources, "gen.dl", &gen_program(*seed), &mut diags);
            check::check(&program, &mut diags).is_some() && !diags.has_errors()
        })
        .count();
    assert!(
        accepted >= 100,
        "only {accepted} of 399 tame generated programs were accepted"
    );
}
