"""Souffle programs netc answers as Souffle does, one directory per feature.

Each `tests/souffle/<feature>/<name>.dl` runs through `netc run -F -D`, the
command a Souffle user runs (`souffle -F -D`); every file netc writes must
equal `<name>.expected/<file>` and no other file may appear (output files
are named as Souffle names them: `inst.rel.csv` for a component instance's
relation). The expected files are derived by hand from Souffle's documented
semantics; `UPDATE_EXPECT=1` rewrites them from netc's output and is meant
only for files whose content has been checked by hand. `<name>.facts/`, when
present, is the `-F` directory.

Also here: incremental updates of an `eqrel` relation agree with a run
from scratch, and the refusals of what the front end cannot express name
the construct.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from test_cli import assert_clean_error, netc, write

pytestmark = pytest.mark.netc

ROOT = Path(__file__).parent / "souffle"
PROGRAMS = sorted(ROOT.glob("*/*.dl"))


@pytest.mark.parametrize("prog", PROGRAMS, ids=[f"{p.parent.name}/{p.stem}" for p in PROGRAMS])
def test_program_answers_as_souffle(netc_bin, tmp_path, prog: Path):
    facts = prog.with_suffix(".facts")
    out = tmp_path / "out"
    out.mkdir()
    r = netc(netc_bin, "run", "-F", str(facts if facts.is_dir() else tmp_path), "-D", str(out), str(prog))
    assert_clean_error(r, 0)
    expected_dir = prog.with_suffix(".expected")
    got = {p.name: p.read_text() for p in out.iterdir()}
    if os.environ.get("UPDATE_EXPECT") == "1":
        expected_dir.mkdir(exist_ok=True)
        for old in expected_dir.iterdir():
            old.unlink()
        for name, text in got.items():
            (expected_dir / name).write_text(text)
    want = {p.name: p.read_text() for p in expected_dir.iterdir()}
    assert got == want


EQREL = """\
.decl link(a: number, b: number)
.input link
.decl same(a: number, b: number) eqrel
same(x, y) :- link(x, y).
.output same
"""


def rows(path: Path) -> set[str]:
    return set(path.read_text().splitlines()) if path.exists() else set()


def test_eqrel_updates_agree_with_a_run_from_scratch(netc_bin, tmp_path):
    prog = write(tmp_path, "eq.dl", EQREL)
    write(tmp_path, "f0/link.facts", "1\t2\n2\t3\n4\t5\n")
    updates = write(tmp_path, "u.txt", "+link(3, 4).\ncommit.\n-link(2, 3).\ncommit.\n")
    (tmp_path / "o0").mkdir()
    (tmp_path / "ou").mkdir()
    start = netc(netc_bin, "run", "-F", str(tmp_path / "f0"), "-D", str(tmp_path / "o0"), str(prog))
    assert_clean_error(start, 0)
    state = rows(tmp_path / "o0" / "same.csv")
    assert len(state) == 9 + 4, state
    # the initial state, then each commit's printed changes applied to it
    # (`-D` is written after the last commit: checked below too)
    r = netc(netc_bin, "run", "-F", str(tmp_path / "f0"), "-D", str(tmp_path / "ou"), str(prog),
             "--updates", str(updates))
    assert_clean_error(r, 0)
    states = []
    for line in r.stdout.splitlines():
        if line.startswith(("+same(", "-same(")):
            row = line[6:-1].replace(", ", "\t")
            (state.add if line[0] == "+" else state.discard)(row)
        elif line.startswith("commit"):
            states.append(set(state))
    assert len(states) == 2, r.stdout
    for i, facts in enumerate(["1\t2\n2\t3\n4\t5\n3\t4\n", "1\t2\n4\t5\n3\t4\n"]):
        write(tmp_path, f"f{i + 1}/link.facts", facts)
        (tmp_path / f"o{i + 1}").mkdir()
        s = netc(netc_bin, "run", "-F", str(tmp_path / f"f{i + 1}"), "-D", str(tmp_path / f"o{i + 1}"), str(prog))
        assert_clean_error(s, 0)
        assert states[i] == rows(tmp_path / f"o{i + 1}" / "same.csv"), (i, r.stdout)
    # after the first commit 1..5 are one class: 25 pairs; after the second, {1,2} and {3,4,5}
    assert len(states[0]) == 25 and len(states[1]) == 4 + 9
    assert rows(tmp_path / "ou" / "same.csv") == states[1]


@pytest.mark.parametrize(
    "text, construct",
    [
        (".type Pair = [a: number, b: number]\n", "record"),
        (".type Shape = Circle { r: number } | Square { s: number }\n", "ADT"),
        (".decl r(x: number)\n.limitsize r(n=5)\n", "limitsize"),
        (".decl r(x: number) choice-domain x\n", "choice-domain"),
        (".decl r(x: number)\nr(x) :- x = range(0, 5).\n", "range"),
        (".decl r(x: number)\n.decl m(x: float)\nm(v) :- r(_), v < mean x : { r(x) }.\n", "mean"),
        (".decl r(x: number)\nr(x) <= r(y) :- x < y.\n", "subsumption"),
    ],
)
def test_refusals_name_the_construct_and_the_spec(netc_bin, tmp_path, text, construct):
    prog = write(tmp_path, "p.dl", text)
    r = netc(netc_bin, "check", str(prog))
    assert_clean_error(r, 1)
    assert construct in r.stderr and "specs/language.md" in r.stderr, r.stderr
    assert "p.dl:" in r.stderr, r.stderr


@pytest.mark.parametrize("name", ["components/params_inherit", "components/nested", "eqrel/closure"])
def test_export_writes_plain_relations_with_souffles_file_names(netc_bin, tmp_path, name):
    """`netc export --souffle` of components and eqrel: plain relations and
    rules (an instance's `inst.rel` declared `inst__rel`, writing Souffle's
    `inst.rel.csv`); the export, run again, writes the expected files."""
    prog = ROOT / f"{name}.dl"
    ex = netc(netc_bin, "export", "--souffle", str(prog))
    assert_clean_error(ex, 0)
    lines = ex.stdout.splitlines()
    assert not [x for x in lines if x.startswith((".comp", ".init")) or x.endswith(" eqrel")], ex.stdout
    exported = write(tmp_path, "exported.dl", ex.stdout)
    out = tmp_path / "out"
    out.mkdir()
    r = netc(netc_bin, "run", "-F", str(tmp_path), "-D", str(out), str(exported))
    assert_clean_error(r, 0)
    want = {p.name: p.read_text() for p in prog.with_suffix(".expected").iterdir()}
    assert {p.name: p.read_text() for p in out.iterdir()} == want
