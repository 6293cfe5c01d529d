//! Bad input never panics: the whole front end (lexer, parser, checker,
//! lowering, Souffle export) runs on random text, on random token soup drawn
//! from the language's vocabulary, and on valid programs with random edits.
//! Each case must come back with a plan or with diagnostics — never a panic,
//! and never a plan together with an error.
//!
//! The case count is bounded for CI (`PROPTEST_CASES` overrides; default 256
//! per property). Failures are shrunk by proptest and persisted in
//! `proptest-regressions/` as reproducers.

use netc_compiler::{compile_text, souffle_export};
use proptest::prelude::*;

const SEED_PROGRAMS: &[&str] = &[
    ".decl edge(a: number, b: number)\n.decl path(a: number, b: number)\n.output path\nedge(1, 2). edge(2, 3).\npath(x, y) :- edge(x, y).\npath(x, z) :- path(x, y), edge(y, z).\n",
    ".type Host <: symbol\n.decl vm(@h: Host, ip: ipv4, m: mac)\n.decl net(p: prefix4)\n.decl inside(h: Host, p: prefix4)\n.output inside\nvm(\"h1\", 10.0.0.1, de:ad:be:ef:00:01). net(10.0.0.0/8).\ninside(h, p) :- vm(h, a, _), net(p), contains(p, a).\n",
    ".decl a(x: number)\n.decl b(x: number, y: number)\n.decl c(x: number, n: number)\n.decl d(x: number)\n.output c, d\na(1). a(2). b(1, 5). b(1, 6).\nc(x, n) :- a(x), n = count : { b(x, _) }.\nd(x) :- a(x), !b(x, _).\nd(s) :- s = sum y : { b(_, y) }.\n",
    ".decl f(p: number, s: ipv4, d: ipv4, sp: number, dp: number)\n.decl h(v: unsigned)\n.output h\nf(6, 10.0.0.1, 10.0.0.2, 1000, 80).\nh(v) :- f(p, s, d, sp, dp), v = hash5(p, s, d, sp, dp) % 7u ; f(p, d, s, dp, sp), v = hash5_sym(p, s, d, sp, dp).\n",
    ".decl s(x: symbol)\n.decl t(x: symbol, n: number)\n.output t\ns(\"abc\"). s(\"de\").\nt(y, n) :- s(x), y = cat(x, \"!\"), n = strlen(y), n > 2, !contains(\"z\", y), (n < 10 ; n > 100).\n",
];

const VOCAB: &[&str] = &[
    ".decl",
    ".type",
    ".input",
    ".output",
    ".include",
    ".printsize",
    "r",
    "s",
    "x",
    "y",
    "_",
    "(",
    ")",
    "{",
    "}",
    ",",
    ".",
    ":",
    ";",
    "!",
    "=",
    "!=",
    "<",
    "<=",
    ">",
    ">=",
    "+",
    "-",
    "*",
    "/",
    "%",
    "^",
    ":-",
    "<:",
    "|",
    "@",
    "number",
    "symbol",
    "ipv4",
    "prefix4",
    "count",
    "sum",
    "min",
    "max",
    "1",
    "42u",
    "1.5",
    "\"s\"",
    "10.0.0.1",
    "10.0.0.0/8",
    "::1",
    "de:ad:be:ef:00:01",
    "contains",
    "cat",
    "hash5",
    "band",
    "bnot",
    "\n",
    " ",
];

fn check_no_panic(text: &str) {
    let c = compile_text("fuzz.dl", text);
    // Rendering must not panic either (spans must be valid).
    let _ = c.diagnostics.render_all(&c.sources);
    if let Some(plan) = &c.plan {
        assert!(
            !c.diagnostics.has_errors(),
            "a plan was produced despite errors for:\n{text}"
        );
        let _ = souffle_export::export(plan, &c.sources);
    }
}

fn mutate(program: &str, edits: &[(u8, usize, usize)]) -> String {
    let mut toks: Vec<String> = program
        .split_inclusive([' ', '(', ')', ',', '.', '\n'])
        .map(str::to_string)
        .collect();
    for &(kind, a, b) in edits {
        if toks.is_empty() {
            break;
        }
        let i = a % toks.len();
        match kind % 4 {
            0 => {
                toks.remove(i);
            }
            1 => toks.insert(i, VOCAB[b % VOCAB.len()].to_string()),
            2 => {
                let j = b % toks.len();
                toks.swap(i, j);
            }
            _ => {
                let t = toks[b % toks.len()].clone();
                toks.insert(i, t);
            }
        }
    }
    toks.concat()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(256), ..ProptestConfig::default() })]

    #[test]
    fn random_text_never_panics(text in "\\PC{0,200}") {
        check_no_panic(&text);
    }

    #[test]
    fn token_soup_never_panics(idx in proptest::collection::vec(0usize..VOCAB.len(), 0..60)) {
        let text: Vec<&str> = idx.iter().map(|i| VOCAB[*i]).collect();
        check_no_panic(&text.join(" "));
    }

    #[test]
    fn mutated_programs_never_panic(seed in 0usize..SEED_PROGRAMS.len(), edits in proptest::collection::vec((any::<u8>(), any::<usize>(), any::<usize>()), 1..6)) {
        check_no_panic(&mutate(SEED_PROGRAMS[seed], &edits));
    }
}

#[test]
fn seed_programs_compile_cleanly() {
    for p in SEED_PROGRAMS {
        let c = compile_text("seed.dl", p);
        assert!(c.plan.is_some(), "{}", c.diagnostics.render_all(&c.sources));
    }
}
