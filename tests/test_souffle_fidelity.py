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
from test_cli import assert_clean_error, netc, write

pytestmark = pytest.mark.netc

PROGRAM = """\
.decl edge(a: number, b: number)
.decl path(a: number, b: number)
.output path
path(x, y) :- edge(x, y).
path(x, z) :- path(x, y), edge(y, z).
"""


def paths(out: str) -> set[tuple[int, int]]:
    """The rows of `path` in `-D -` output."""
    block = out.split("path\n===============\n", 1)[1].split("===============", 1)[0]
    return {tuple(map(int, line.split("\t"))) for line in block.splitlines() if line}


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
