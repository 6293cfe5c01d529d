"""Property test: netc (incremental, differential dataflow) vs clingo (from scratch).

For every generated example (random stratified program + facts + 1..6
transactions) this runs
    netc run -F facts -D out-init [--workers W] prog.dl                         (batch)
    netc run -F facts -D out [--workers W] --updates updates.txt prog.dl       (incremental)
and checks
  * the batch outputs equal clingo's answer for the initial facts,
  * after EVERY commit, initial outputs + all printed changes so far equal
    clingo's from-scratch answer for the facts at that commit (and every
    printed change is a real change: no `+` of a present tuple, no `-` of an
    absent one),
  * the final -D CSVs equal the answer after the last commit (sorted, no dups),
  * with two worker counts, stdout and outputs are identical.

Env: NETC_ORACLE_EXAMPLES (default 200), NETC_ORACLE_LONG_EXAMPLES (default 25,
up to 20 commits each), CI=true => derandomized,
NETC_BIN (skip the cargo build), NETC_ORACLE_DISABLE (feature list, see
oracle/gen.py), NETC_ORACLE_FAILURES (reproducer root, default
/tmp/netc-oracle-failures).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from oracle import check, gen
from oracle.model import Atom, Const, Op, Program, Relation, Rule, Var

EXAMPLES = int(os.environ.get("NETC_ORACLE_EXAMPLES", "200"))
LONG_EXAMPLES = int(os.environ.get("NETC_ORACLE_LONG_EXAMPLES", "25"))
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")

pytestmark = pytest.mark.netc


def _check(netc_bin: str, ex: gen.Example) -> None:
    expected = check.expected_states(ex)
    with tempfile.TemporaryDirectory(prefix="netc-oracle-") as tmp:
        work = Path(tmp)
        check.write_case(ex, work)
        problems = check.run_netc(netc_bin, ex, work, expected)
        if problems:
            saved = check.save_failure(netc_bin, ex, work, expected, problems)
            pytest.fail(check.format_failure(netc_bin, ex, expected, problems, saved), pytrace=False)


def test_netc_smoke_transitive_closure(netc_bin):
    """One fixed example first, so a broken CLI fails fast and readably."""
    x, y, z = Var("x"), Var("y"), Var("z")
    prog = Program(
        [Relation("edge", 2, is_input=True), Relation("path", 2, is_output=True)],
        [
            Rule(Atom("path", (x, y)), (Atom("edge", (x, y)),)),
            Rule(Atom("path", (x, z)), (Atom("path", (x, y)), Atom("edge", (y, z)))),
        ],
    )
    ex = gen.Example(
        prog,
        {"edge": [(1, 2), (2, 3)]},
        [
            (Op("+", "edge", (3, 4)),),
            (Op("-", "edge", (2, 3)), Op("+", "edge", (4, 1))),
            (Op("-", "edge", (9, 9)),),
        ],
        (1, 3),
    )
    _check(netc_bin, ex)


def test_netc_smoke_constants_only(netc_bin):
    """Rule with a constant head and a fact in the program text."""
    x = Var("x")
    prog = Program(
        [Relation("e", 1, is_input=True), Relation("r", 2, is_output=True)],
        [Rule(Atom("r", (x, Const(0))), (Atom("e", (x,)),)), Rule(Atom("r", (Const(7), Const(7))))],
    )
    ex = gen.Example(prog, {"e": [(1,)]}, [(Op("+", "e", (2,)),), (Op("-", "e", (1,)),)], (None,))
    _check(netc_bin, ex)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=IN_CI,
    database=None if IN_CI else settings.default.database,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    print_blob=True,
)
@given(ex=gen.examples())
def test_netc_matches_clingo(netc_bin, ex):
    _check(netc_bin, ex)


@settings(
    max_examples=LONG_EXAMPLES,
    deadline=None,
    derandomize=IN_CI,
    database=None if IN_CI else settings.default.database,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    print_blob=True,
)
@given(ex=gen.examples(max_tx=20))
def test_netc_matches_clingo_long_scripts(netc_bin, ex):
    """Fewer examples, up to 20 commits each: incremental state must not drift."""
    _check(netc_bin, ex)
