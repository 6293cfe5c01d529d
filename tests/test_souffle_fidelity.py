"""Datalog as Souffle reads it: what netc used to drop silently.

Souffle runs the C preprocessor on its input, so real programs include
their facts and headers with `#include "file"`. netc runs no preprocessor:
it reads `#include "file"` as `.include "file"`, skips the line markers a
preprocessor writes, and refuses every other preprocessor line by name —
a program that drops its facts and exits 0 is a wrong answer. A `/*` that
is never closed is an error at its line, not the rest of the file dropped
(specs/language.md §1). Everything runs through `netc run`, as a Souffle
user would.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from netc_dump import parse_dump
from test_cli import assert_clean_error, netc, write

pytestmark = pytest.mark.netc

PROGRAM = """\
.decl edge(a: number, b: number)
.decl path(a: number, b: number)
.output path
path(x, y) :- edge(x, y).
path(x, z) :- path(x, y), edge(y, z).
"""


def relation(out: str, name: str) -> set[tuple[int, ...]]:
    """The rows of relation `name` in `-D -` output, as numbers."""
    return {tuple(map(int, row)) for row in parse_dump(out)[name]}


def paths(out: str) -> set[tuple[int, int]]:
    """The rows of `path` in `-D -` output."""
    return relation(out, "path")  # type: ignore[return-value]


def test_hash_include_reads_the_file_souffle_would(netc_bin: str, tmp_path: Path) -> None:
    write(tmp_path, "edb.dl", "edge(1, 2).\nedge(2, 3).\n")
    prog = write(tmp_path, "main.dl", PROGRAM + '#include "edb.dl"\n')
    r = netc(netc_bin, "run", "-D", "-", str(prog))
    assert r.returncode == 0, r.stderr
    assert paths(r.stdout) == {(1, 2), (2, 3), (1, 3)}, r.stdout


def test_preprocessor_line_markers_are_skipped(netc_bin: str, tmp_path: Path) -> None:
    prog = write(tmp_path, "cpp.dl", '# 1 "main.dl"\n' + PROGRAM + '#line 9\nedge(4, 5).\n')
    r = netc(netc_bin, "run", "-D", "-", str(prog))
    assert r.returncode == 0, r.stderr
    assert paths(r.stdout) == {(4, 5)}, r.stdout


@pytest.mark.parametrize("line, name", [
    ("#define N 3", "#define"),
    ("#ifdef DEBUG", "#ifdef"),
    ("#include <facts.dl>", "#include <...>"),
    ("#pragma once", "#pragma"),
])
def test_other_preprocessor_lines_are_refused_by_name(netc_bin: str, tmp_path: Path, line: str, name: str) -> None:
    prog = write(tmp_path, "pp.dl", PROGRAM + "edge(1, 2).\n" + line + "\n")
    r = netc(netc_bin, "run", "-D", "-", str(prog))
    assert_clean_error(r, 1)
    assert f"`{name}" in r.stderr and "preprocessor" in r.stderr, r.stderr
    assert "pp.dl:7:1" in r.stderr, r.stderr
    assert "path\n" not in r.stdout, "nothing is output from a refused program"


def test_an_unterminated_block_comment_is_an_error(netc_bin: str, tmp_path: Path) -> None:
    prog = write(tmp_path, "c.dl", PROGRAM + "edge(1, 2).\n/* the rest\nedge(2, 3).\n")
    r = netc(netc_bin, "run", "-D", "-", str(prog))
    assert_clean_error(r, 1)
    assert "unterminated comment" in r.stderr and "c.dl:7:1" in r.stderr, r.stderr
    # closed, the same comment is a comment
    prog.write_text(PROGRAM + "edge(1, 2).\n/* the rest */\nedge(2, 3).\n")
    r = netc(netc_bin, "run", "-D", "-", str(prog))
    assert r.returncode == 0, r.stderr
    assert paths(r.stdout) == {(1, 2), (2, 3), (1, 3)}, r.stdout


def test_floats_compare_as_ieee_754(netc_bin: str, tmp_path: Path) -> None:
    """Souffle compares floats as C++ does: `-0.0 = 0.0` holds, `-0.0 < 0.0`
    does not; -0.0 and 0.0 stay two rows (Souffle keeps a float's bits)."""
    prog = write(tmp_path, "f.dl", """\
.decl s(x: float)
s(-0.0). s(0.0). s(1.5).
.decl eq(x: float)
.output eq
eq(x) :- s(x), x = 0.0.
.decl below(x: float)
.output below
below(x) :- s(x), x < 0.0.
.decl ne(x: float)
.output ne
ne(x) :- s(x), x != 0.0.
.decl consts(n: number)
.output consts
consts(1) :- -0.0 = 0.0.
consts(2) :- -0.0 < 0.0.
""")
    r = netc(netc_bin, "run", "-D", str(tmp_path / "out"), str(prog))
    assert r.returncode == 0, r.stderr
    rows = {name: (tmp_path / "out" / f"{name}.csv").read_text().splitlines()
            for name in ("eq", "below", "ne", "consts")}
    assert len(rows["eq"]) == 2 and {float(x) for x in rows["eq"]} == {0.0}, rows
    assert rows["below"] == [], rows
    assert [float(x) for x in rows["ne"]] == [1.5], rows
    assert rows["consts"] == ["1"], rows


def test_an_input_relation_is_present_in_the_first_fixpoint(netc_bin: str, tmp_path: Path) -> None:
    """`lim` read from a facts file is there when `fact` is first computed:
    Souffle stops at 11. (Computed first with `lim` empty, the negation let
    `fact` grow without bound before the input arrived: it never ended.)"""
    facts = tmp_path / "in"
    facts.mkdir()
    (facts / "lim.facts").write_text("11\n")
    prog = write(tmp_path, "lim.dl", (
        ".decl fact(i: number)\n.decl lim(i: number)\n.input lim\n.output fact\n"
        "fact(0).\nfact(i + 1) :- fact(i), !lim(i).\n"))
    r = netc(netc_bin, "run", "-F", str(facts), "-D", "-", str(prog))
    assert r.returncode == 0, r.stderr
    assert relation(r.stdout, "fact") == {(i,) for i in range(12)}, r.stdout


AGGREGATES = """\
.decl vip_member(v: number, t: symbol, m: symbol)
.decl vm(t: symbol, m: symbol, x: number)
.decl edge(x: number, y: number, z: symbol)
.decl n(v: number, c: number)
.decl s(v: number, c: number)
.decl mx(v: number, c: number)
.decl deg(x: number, c: number)
.decl loops(x: number, c: number)
.output n, s, mx, deg, loops
vip_member(1, "a", "x"). vip_member(1, "b", "x"). vip_member(1, "a", "y").
vm("a", "x", 1). vm("b", "x", 2). vm("a", "y", 3).
edge(1, 2, "a"). edge(1, 2, "b"). edge(1, 3, "a"). edge(1, 1, "a"). edge(1, 1, "b").
n(v, c) :- vip_member(v, _, _), c = count : { vip_member(v, _, m), vm(_, m, _) }.
s(v, c) :- vip_member(v, _, _), c = sum k : { vip_member(v, _, m), vm(_, m, k) }.
mx(v, c) :- vip_member(v, _, _), c = max k : { vip_member(v, _, m), vm(_, m, k) }.
deg(x, c) :- edge(x, _, _), c = count : { edge(x, _, _) }.
loops(x, c) :- edge(x, _, _), c = count : { edge(x, x, _) }.
"""


def test_aggregates_follow_souffles_materialised_bodies(netc_bin: str, tmp_path: Path) -> None:
    """Souffle evaluates an aggregate whose body has more than one atom (or
    an inner aggregate, or one atom repeating a variable) as a relation of
    the body's named variables: a set, so what only a `_` tells apart is one
    binding. A single atom is read tuple by tuple. Expected values worked
    out by hand from that rule (Souffle's MaterializeAggregationQueries):
    - n: named bindings (v, m) = {(1,x), (1,y)} -> 2 (5 combinations of rows);
    - s: bindings (v, m, k) = {(1,x,1), (1,x,2), (1,y,3)} -> 1+2+3 = 6 (not 9);
    - mx: 3 either way; deg: 5 tuples of edge(1, _, _);
    - loops: edge(x, x, _) repeats x: bindings {x=1} -> 1 (2 tuples)."""
    prog = write(tmp_path, "agg.dl", AGGREGATES)
    r = netc(netc_bin, "run", "-D", "-", str(prog))
    assert r.returncode == 0, r.stderr
    got = {name: relation(r.stdout, name) for name in ["n", "s", "mx", "deg", "loops"]}
    assert got == {"n": {(1, 2)}, "s": {(1, 6)}, "mx": {(1, 3)}, "deg": {(1, 5)}, "loops": {(1, 1)}}, got

    # the same answers incrementally: a binding that another row still
    # supplies does not move the count or the sum
    script = write(tmp_path, "u.txt", '-vm("b", "x", 2).\ncommit.\n+vm("b", "x", 2).\n+vm("c", "y", 3).\ncommit.\n')
    r = netc(netc_bin, "run", "--updates", str(script), str(prog))
    assert r.returncode == 0, r.stderr
    commits = r.stdout.split("commit 1\n")
    assert set(commits[0].split()) == {"+s(1,", "4)", "-s(1,", "6)"}, r.stdout
    assert set(commits[1].replace("commit 2", "").split()) == {"+s(1,", "6)", "-s(1,", "4)"}, r.stdout


def test_a_nullary_relation_is_read_and_written_as_souffle_does(netc_bin: str, tmp_path: Path) -> None:
    facts = tmp_path / "in"
    facts.mkdir()
    (facts / "flag.facts").write_text("\n")
    prog = write(tmp_path, "z.dl", ".decl flag()\n.decl t()\n.decl f()\n.input flag\n.output t, f\nt() :- flag().\n")
    out = tmp_path / "out"
    r = netc(netc_bin, "run", "-F", str(facts), "-D", str(out), str(prog))
    assert r.returncode == 0, r.stderr
    assert (out / "t.csv").read_text() == "()\n" and (out / "f.csv").read_text() == ""
    r = netc(netc_bin, "run", "-F", str(facts), "-D", "-", str(prog))
    assert "---------------\nt\n\n===============\n()\n===============\n" in r.stdout, r.stdout


def test_io_headers_and_stdout(netc_bin: str, tmp_path: Path) -> None:
    facts = tmp_path / "in"
    facts.mkdir()
    (facts / "edge.facts").write_text("a,b\n1,2\n2,3\n")
    prog = write(tmp_path, "h.dl", PROGRAM.replace(".output path", (
        '.input edge(headers=true, delimiter=",")\n'
        '.output path(headers=true, delimiter=",")\n.output path(IO=stdout)\n')))
    out = tmp_path / "out"
    r = netc(netc_bin, "run", "-F", str(facts), "-D", str(out), str(prog))
    assert r.returncode == 0, r.stderr
    assert (out / "path.csv").read_text() == "a,b\n1,2\n1,3\n2,3\n"
    # IO=stdout prints as Souffle does, without headers unless asked
    assert "---------------\npath\n===============\n1\t2\n1\t3\n2\t3\n===============\n" in r.stdout, r.stdout


@pytest.mark.parametrize("directive, named", [
    (".output path(compress=true)", "`compress`"),
    (".input edge(rfc4180=true)", "`rfc4180`"),
    (".input edge(IO=sqlite)", "`IO=sqlite`"),
    (".output path(IO=sqlite)", "`IO=sqlite`"),
    (".output path(headers=yes)", "`headers=yes`"),
])
def test_io_parameters_netc_lacks_are_refused_by_name(netc_bin: str, tmp_path: Path, directive: str, named: str) -> None:
    prog = write(tmp_path, "io.dl", PROGRAM + directive + "\n")
    r = netc(netc_bin, "run", "-D", str(tmp_path / "out"), str(prog))
    assert_clean_error(r, 1)
    assert "E0116" in r.stderr and named in r.stderr and "io.dl:6:" in r.stderr, r.stderr
    assert "specs/language.md §3" in r.stderr, r.stderr


def test_an_invalid_match_pattern_is_false_negated_or_not(netc_bin: str, tmp_path: Path) -> None:
    prog = write(tmp_path, "m.dl", (
        ".decl r(s: symbol)\n.decl yes(s: symbol)\n.decl no(s: symbol)\n.decl ok(s: symbol)\n.output yes, no, ok\n"
        'r("abc").\nyes(s) :- r(s), match("(", s).\nno(s) :- r(s), !match("(", s).\nok(s) :- r(s), !match("b.*", s).\n'))
    r = netc(netc_bin, "run", "-D", "-", str(prog))
    assert r.returncode == 0, r.stderr
    got = parse_dump(r.stdout)
    assert got["yes"] == [] and got["no"] == [] and got["ok"] == [("abc",)], got
    assert "W0005" in r.stderr and "m.dl:7:" in r.stderr, r.stderr
