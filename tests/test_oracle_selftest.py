"""Self-tests of the oracle (no netc needed): run with `pytest -m "not netc"`.

* hand-written programs with answers worked out by hand, checked against BOTH
  references (clingo_ref and naive_ref);
* the generator: programs are stratified, range-restricted, round-trip through
  the parser, and the two independent references agree on every state;
* the netc output parsers.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from oracle import check, clingo_ref, gen, naive_ref, netc_cli
from oracle.model import Op, apply_tx, expand_rules, parse_facts_inline, parse_program, parse_script, render_script

SELFTEST_EXAMPLES = int(os.environ.get("NETC_ORACLE_SELFTEST_EXAMPLES", "150"))
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def both(prog_text: str, facts_text: str):
    prog = parse_program(prog_text)
    db = parse_facts_inline(facts_text)
    a = clingo_ref.solve(prog, db)
    b = naive_ref.evaluate(prog, db)
    b = {k: b[k] for k in a}
    assert a == b, f"clingo {a} != naive {b}"
    return {k: set(v) for k, v in a.items()}


def T(*tuples):
    return set(tuples)


# --------------------------------------------------------------------------
# hand-written programs with known answers

DECL2 = ".decl e(a: number, b: number)\n.input e\n"


def test_transitive_closure():
    out = both(
        DECL2
        + """
        .decl tc(a: number, b: number)
        .output tc
        tc(x, y) :- e(x, y).
        tc(x, z) :- tc(x, y), e(y, z).
        """,
        "e(1,2). e(2,3). e(3,1). e(5,6).",
    )
    cyc = {(a, b) for a in (1, 2, 3) for b in (1, 2, 3)}
    assert out["tc"] == cyc | T((5, 6))


def test_nonlinear_tc_and_same_generation():
    out = both(
        """
        .decl par(c: number, p: number)
        .input par
        .decl anc(a: number, b: number)
        .output anc
        .decl sg(a: number, b: number)
        .output sg
        anc(x, y) :- par(x, y).
        anc(x, z) :- anc(x, y), anc(y, z).
        sg(x, y) :- par(x, p), par(y, p), x != y.
        sg(x, y) :- par(x, a), sg(a, b), par(y, b).
        """,
        "par(1,0). par(2,0). par(3,1). par(4,2). par(5,4).",
    )
    assert out["anc"] == T((1, 0), (2, 0), (3, 1), (4, 2), (5, 4), (3, 0), (4, 0), (5, 2), (5, 0))
    assert out["sg"] == T((1, 2), (2, 1), (3, 4), (4, 3))


def test_mutual_recursion_odd_even():
    out = both(
        DECL2
        + """
        .decl odd(a: number, b: number)
        .decl even(a: number, b: number)
        .output odd, even
        odd(x, y) :- e(x, y).
        even(x, z) :- odd(x, y), e(y, z).
        odd(x, z) :- even(x, y), e(y, z).
        """,
        "e(1,2). e(2,3). e(3,4).",
    )
    assert out["odd"] == T((1, 2), (2, 3), (3, 4), (1, 4))
    assert out["even"] == T((1, 3), (2, 4))


def test_negation_and_wildcards():
    out = both(
        DECL2
        + """
        .decl src(a: number)
        .decl lone(a: number, b: number)
        .output src, lone
        src(x) :- e(x, _), !e(_, x).
        lone(x, y) :- e(x, y), !e(y, x), x != y.
        """,
        "e(1,2). e(2,1). e(2,3). e(4,4). e(5,1).",
    )
    assert out["src"] == T((5,))
    assert out["lone"] == T((2, 3), (5, 1))


def test_negation_of_lower_idb_stratum():
    out = both(
        DECL2
        + """
        .decl node(a: number)
        .decl reach(a: number)
        .decl unreach(a: number)
        .output reach, unreach
        node(x) :- e(x, _).
        node(y) :- e(_, y).
        reach(y) :- e(0, y).
        reach(z) :- reach(y), e(y, z).
        unreach(x) :- node(x), !reach(x).
        """,
        "e(0,1). e(1,2). e(3,4). e(4,3).",
    )
    assert out["reach"] == T((1,), (2,))
    assert out["unreach"] == T((0,), (3,), (4,))


def test_count_with_empty_group_is_zero():
    out = both(
        """
        .decl n(a: number)
        .input n
        .decl b(a: number, b: number)
        .input b
        .decl c(a: number, k: number)
        .output c
        c(x, k) :- n(x), k = count : { b(x, _) }.
        """,
        "n(1). n(2). n(3). b(1,5). b(1,6). b(3,3). b(9,9).",
    )
    assert out["c"] == T((1, 2), (2, 0), (3, 1))


def test_count_distinct_over_whole_tuple():
    # b(1, 5, 0) and b(1, 5, 1) are two tuples even though `_` hides the difference
    out = both(
        """
        .decl n(a: number)
        .input n
        .decl b(a: number, b: number, c: number)
        .input b
        .decl c(a: number, k: number)
        .output c
        c(x, k) :- n(x), k = count : { b(x, 5, _) }.
        """,
        "n(1). b(1,5,0). b(1,5,1). b(1,6,0).",
    )
    assert out["c"] == T((1, 2))


def test_sum_over_distinct_tuples():
    # y = 5 occurs in two distinct tuples -> counted twice; empty group -> 0
    out = both(
        """
        .decl n(a: number)
        .input n
        .decl b(a: number, b: number, c: number)
        .input b
        .decl s(a: number, k: number)
        .output s
        s(x, k) :- n(x), k = sum y : { b(x, y, _) }.
        """,
        "n(1). n(2). b(1,5,0). b(1,5,1). b(1,3,7).",
    )
    assert out["s"] == T((1, 13), (2, 0))


def test_min_max_empty_group_does_not_fire():
    out = both(
        DECL2
        + """
        .decl n(a: number)
        .input n
        .decl lo(a: number, k: number)
        .decl hi(a: number, k: number)
        .output lo, hi
        lo(x, m) :- n(x), m = min y : { e(x, y) }.
        hi(x, m) :- n(x), m = max y : { e(x, y), y < 5 }.
        """,
        "n(1). n(2). n(3). e(1,4). e(1,7). e(1,2). e(3,6).",
    )
    assert out["lo"] == T((1, 2), (3, 6))
    assert out["hi"] == T((1, 4))


def test_uncorrelated_aggregate_and_result_comparison():
    out = both(
        DECL2
        + """
        .decl total(k: number)
        .decl big(a: number, k: number)
        .output total, big
        total(k) :- k = count : { e(_, _) }.
        big(x, k) :- e(x, _), k = count : { e(x, _) }, k > 1.
        """,
        "e(1,1). e(1,2). e(2,2).",
    )
    assert out["total"] == T((3,))
    assert out["big"] == T((1, 2))


def test_multi_atom_aggregate_body():
    # Souffle materialises a body of two atoms into a relation of its named
    # variables (x, y): the `_` of e(y, _) collapses, so for x = 1 the count
    # is the 2 values of y (2 and 3), not the 3 pairs (y, _) — the count
    # issue #32 measured against Souffle (7 where Souffle answers 5)
    out = both(
        DECL2
        + """
        .decl n(a: number)
        .input n
        .decl two(a: number, k: number)
        .output two
        two(x, k) :- n(x), k = count : { e(x, y), e(y, _) }.
        """,
        "n(1). n(4). e(1,2). e(1,3). e(2,5). e(2,6). e(3,5).",
    )
    assert out["two"] == T((1, 2), (4, 0))


def test_aggregate_over_lower_idb_and_recursion_above():
    out = both(
        DECL2
        + """
        .decl deg(a: number, k: number)
        .decl chain(a: number, b: number)
        .output deg, chain
        deg(x, k) :- e(x, _), k = count : { e(x, _) }.
        chain(x, k) :- deg(x, k).
        chain(x, k + 1) :- chain(x, k), k < 4.
        """,
        "e(1,1). e(1,2). e(3,3).",
    )
    assert out["deg"] == T((1, 2), (3, 1))
    assert out["chain"] == {(1, k) for k in range(2, 5)} | {(3, k) for k in range(1, 5)}


def test_arithmetic_and_constants():
    out = both(
        """
        .decl v(a: number)
        .input v
        .decl w(a: number, b: number)
        .output w
        w(x * 2, 1) :- v(x), x < 4.
        w(x - 1, x + 1) :- v(x), x > 0, x + 1 < 8.
        w(3, 3).
        """,
        "v(0). v(2). v(7).",
    )
    assert out["w"] == T((0, 1), (4, 1), (1, 3), (3, 3))


def test_repeated_variables_and_constants_in_atoms():
    out = both(
        """
        .decl t(a: number, b: number, c: number)
        .input t
        .decl r(a: number)
        .output r
        r(x) :- t(x, x, 3).
        r(y) :- t(1, y, y).
        """,
        "t(2,2,3). t(2,2,4). t(1,5,5). t(1,5,6). t(4,4,3).",
    )
    assert out["r"] == T((2,), (4,), (5,))


def test_not_stratified_is_detected():
    prog = parse_program(
        """
        .decl e(a: number)
        .decl p(a: number)
        .decl q(a: number)
        p(x) :- e(x), !q(x).
        q(x) :- e(x), !p(x).
        """
    )
    with pytest.raises(naive_ref.NotStratified):
        naive_ref.strata(prog)


def test_clingo_asp_translation_shape():
    prog = parse_program(
        """
        .decl b(a: number, b: number, c: number)
        .decl s(a: number, k: number)
        s(x, k) :- b(x, _, _), k = sum y : { b(x, y, _) }.
        """
    )
    asp = clingo_ref.rule_to_asp(prog.rules[0])
    assert "#sum{ V_y,V_x,V_y,W1 : p_b(V_x,V_y,W1) }" in asp, asp


# --------------------------------------------------------------------------
# update-script semantics used by the test


def test_apply_tx_is_set_semantics():
    db = {"e": frozenset({(1,)})}
    db = apply_tx(db, (Op("+", "e", (1,)), Op("+", "e", (2,))))
    assert db["e"] == {(1,), (2,)}
    db = apply_tx(db, (Op("-", "e", (1,)), Op("-", "e", (9,))))
    assert db["e"] == {(2,)}


def test_script_roundtrip():
    txs = [(Op("+", "e", (1, 2)), Op("-", "f", (3,))), ()]
    text = render_script(txs)
    assert text == "+e(1, 2).\n-f(3).\ncommit.\ncommit.\n"
    assert parse_script(text) == txs


# --------------------------------------------------------------------------
# netc output parsers


def test_parse_updates_stdout():
    text = '+r(1, 2)\n-s("a, b", -3)\ncommit 1\ncommit 2\n+r(0, 0)\ncommit 3\n'
    cs = netc_cli.parse_updates_stdout(text)
    assert [c.number for c in cs] == [1, 2, 3]
    assert cs[0].changes == [("+", "r", (1, 2)), ("-", "s", ("a, b", -3))]
    assert cs[1].changes == []
    with pytest.raises(netc_cli.NetcOutputError):
        netc_cli.parse_updates_stdout("+r(1)\n")
    with pytest.raises(netc_cli.NetcOutputError):
        netc_cli.parse_updates_stdout("garbage\ncommit 1\n")


def test_read_outputs(tmp_path: Path):
    (tmp_path / "a.csv").write_text("1\t2\n10\t0\n")
    (tmp_path / "b.csv").write_text("10\n9\n")
    (tmp_path / "c.csv").write_text("")
    n = "number"
    got, problems = netc_cli.read_outputs(tmp_path, {"a": (n, n), "b": (n,), "c": (n,), "d": (n,)})
    assert got["a"] == {(1, 2), (10, 0)}
    assert got["c"] == frozenset()
    assert "b.csv: rows not sorted" in problems
    assert "missing output file d.csv" in problems
    assert not any(p.startswith("a.csv") for p in problems)


def test_diff_message():
    lines = check.diff({"r": frozenset({(1,), (2,)})}, {"r": frozenset({(2,), (3,)})})
    assert lines == [
        "  missing (expected, netc lacks): r(3)",
        "  extra   (netc has, unexpected): r(1)",
    ]


# --------------------------------------------------------------------------
# generator properties + cross-check of the two references


@settings(
    max_examples=SELFTEST_EXAMPLES,
    deadline=None,
    derandomize=IN_CI,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(ex=gen.examples())
def test_generated_examples_are_well_formed_and_references_agree(ex):
    prog = ex.program
    naive_ref.strata(prog)  # raises if not stratified
    for rule in expand_rules(prog.rules):
        naive_ref.check_safe(rule)
    naive_ref.check_types(prog)
    text = prog.souffle()
    assert parse_program(text).souffle() == text
    assert parse_script(render_script(ex.transactions)) == ex.transactions
    assert 2 <= len(prog.inputs) <= 6
    assert 1 <= len(ex.transactions) <= 6
    for db in ex.states():
        a = clingo_ref.solve(prog, db)  # asserts a unique answer set
        b = naive_ref.evaluate(prog, db)
        assert a == {k: b[k] for k in a}, f"references disagree on\n{text}\n{check.db_repr(db)}"
        for rel, tuples in a.items():
            types = prog.rel(rel).col_types
            for t in tuples:
                for v, ty in zip(t, types, strict=True):
                    ok = v in gen.SYMBOLS if ty == "symbol" else isinstance(v, int) and v >= 0
                    assert ok, (rel, t, types)


# --------------------------------------------------------------------------
# the harness itself, against a fake netc (oracle/fake_netc.py)

TESTS_DIR = Path(__file__).resolve().parent


def _fake_netc(tmp_path: Path, bug: str = "") -> str:
    script = tmp_path / f"netc-fake{('-' + bug) if bug else ''}"
    script.write_text(
        f'#!/bin/sh\nFAKE_NETC_BUG="{bug}" PYTHONPATH="{TESTS_DIR}" exec "{sys.executable}" -m oracle.fake_netc "$@"\n'
    )
    script.chmod(0o755)
    return str(script)


def _tc_example() -> gen.Example:
    prog = parse_program(
        DECL2
        + """
        .decl tc(a: number, b: number)
        .output tc
        tc(x, y) :- e(x, y).
        tc(x, z) :- tc(x, y), e(y, z).
        """
    )
    return gen.Example(
        prog,
        {"e": [(1, 2), (2, 3), (2, 3)]},
        [(Op("+", "e", (3, 4)),), (Op("-", "e", (2, 3)), Op("+", "e", (2, 3 + 2))), (Op("-", "e", (1, 2)),)],
        (1, 3),
    )


def _run_harness(netc: str, ex: gen.Example, tmp_path: Path) -> list[str]:
    work = tmp_path / "case"
    if work.exists():
        shutil.rmtree(work)
    check.write_case(ex, work)
    return check.run_netc(netc, ex, work, check.expected_states(ex))


def test_harness_accepts_correct_fake(tmp_path: Path):
    assert _run_harness(_fake_netc(tmp_path), _tc_example(), tmp_path) == []


@pytest.mark.parametrize("bug", ["ignore_deletes", "drop_change", "unsorted"])
def test_harness_catches_broken_fake(tmp_path: Path, bug: str):
    problems = _run_harness(_fake_netc(tmp_path, bug), _tc_example(), tmp_path)
    assert problems, f"harness missed bug {bug}"


@settings(max_examples=8, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(ex=gen.examples())
def test_harness_accepts_correct_fake_on_generated(ex):
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        problems = _run_harness(_fake_netc(tmp_path), ex, tmp_path)
        assert problems == [], "\n".join(problems)


def test_binding_equalities():
    out = both(
        """
        .decl v(a: number)
        .input v
        .decl w(a: number, b: number)
        .output w
        w(x, y) :- v(x), x < 7, y = x + 1.
        w(x, y) :- v(x), y = 0.
        w(y, y) :- v(x), x = y.
        """,
        "v(2). v(7).",
    )
    assert out["w"] == T((2, 3), (2, 0), (7, 0), (2, 2), (7, 7))


def test_disjunction_and_multiple_heads():
    out = both(
        DECL2
        + """
        .decl f(a: number)
        .input f
        .decl u(a: number, b: number)
        .decl lo(a: number)
        .decl hi(a: number)
        .output u, lo, hi
        u(x, y) :- (e(x, y) ; e(y, x)), (x < 2 ; !f(y)).
        lo(x), hi(y) :- e(x, y), x < y.
        lo(x) :- f(x) ; e(x, x).
        """,
        "e(1,2). e(3,1). e(4,4). f(1). f(9).",
    )
    assert out["u"] == T((1, 2), (1, 3), (4, 4))  # (2, 1) and (3, 1): x >= 2 and f(1)
    assert out["lo"] == T((1,), (9,), (4,))
    assert out["hi"] == T((2,))


def test_aggregate_extras_and_atomless_rules():
    out = both(
        DECL2
        + """
        .decl f(a: number)
        .input f
        .decl a(a: number, k: number)
        .decl s(k: number)
        .decl g(a: number)
        .decl two(a: number, b: number, c: number)
        .output a, s, g, two
        a(x, k) :- f(x), k = count : { e(x, y), !f(y) }.
        s(k) :- k = sum y * 2 : { e(_, y), !e(y, _) }.
        g(1) :- !f(1).
        g(2) :- !f(2), !e(_, 2).
        two(x, c, m) :- f(x), c = count : { e(x, _) }, m = max y + 1 : { e(y, x) }.
        """,
        "e(1,2). e(1,3). e(2,3). e(3,1). e(5,1). f(1). f(3).",
    )
    # a: f=1 -> e(1,2) (2 not in f), e(1,3) (3 in f) -> 1;  f=3 -> e(3,1), 1 in f -> 0
    assert out["a"] == T((1, 1), (3, 0))
    # s: tuples e(_, y) with no e(y, _): y in {2,3,1} all have out-edges -> empty -> 0
    assert out["s"] == T((0,))
    assert out["g"] == set()
    # two: x=1: count e(1,_)=2, max y+1 over e(y,1): y in {3,5} -> 6;  x=3: count 1, e(y,3): y in {1,2} -> 3
    assert out["two"] == T((1, 2, 6), (3, 1, 3))


def test_symbols_ordered_by_text():
    out = both(
        """
        .decl p(n: symbol, k: number)
        .input p
        .decl lt(a: symbol, b: symbol)
        .decl cnt(n: symbol, c: number)
        .decl tag(n: symbol, t: symbol)
        .output lt, cnt, tag
        lt(x, y) :- p(x, _), p(y, _), x < y.
        cnt(x, c) :- p(x, _), c = count : { p(x, _) }.
        tag(x, "small") :- p(x, k), k < 3.
        """,
        'p("B", 1). p("a", 2). p("a b", 3). p("10", 4). p("a", 5).',
    )
    order = ["10", "B", "a", "a b"]
    assert out["lt"] == {(order[i], order[j]) for i in range(4) for j in range(i + 1, 4)}
    assert out["cnt"] == T(("B", 1), ("a", 2), ("a b", 1), ("10", 1))
    assert out["tag"] == T(("B", "small"), ("a", "small"))


def test_type_checker_rejects_mixed_types():
    prog = parse_program(
        """
        .decl e(a: number, b: symbol)
        .decl r(a: number)
        r(x) :- e(x, y), x < y.
        """
    )
    with pytest.raises(naive_ref.IllTyped):
        naive_ref.check_types(prog)


def test_negated_constraint_groups():
    out = both(
        """
        .decl v(a: number, b: number)
        .input v
        .decl mid(a: number)
        .decl odd(a: number, b: number)
        .output mid, odd
        mid(x) :- v(x, _), !(x < 2 ; x > 5).
        odd(x, y) :- v(x, y), !(x = y, y != 3), !(x > 6).
        """,
        "v(1,1). v(3,3). v(4,5). v(6,6). v(7,0).",
    )
    assert out["mid"] == T((3,), (4,))
    assert out["odd"] == T((3, 3), (4, 5))
