"""The `netc` command line, end to end, as a user meets it.

Souffle-compatible batch mode (`-F`/`-D`, tab-separated facts, sorted CSV,
`-D -`), JSON-lines input, update scripts, exit codes (0 ok, 1 program
errors, 2 usage/input errors), and errors that name file:line:col with a
hint — never a panic or a stack trace. (Every command's `--help` epilogue,
`--json` and terminal behaviour: test_cli_json.py.)
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.netc

REPO = Path(__file__).resolve().parent.parent

TC = """\
.decl edge(a: number, b: number)
.input edge
.decl path(a: number, b: number)
.output path
path(x, y) :- edge(x, y).
path(x, z) :- path(x, y), edge(y, z).
"""


def netc(bin_: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([bin_, *args], capture_output=True, text=True, timeout=120, cwd=cwd)


def assert_clean_error(r: subprocess.CompletedProcess, code: int) -> None:
    assert r.returncode == code, (r.returncode, r.stdout, r.stderr)
    assert "panicked" not in r.stderr and "RUST_BACKTRACE" not in r.stderr, r.stderr


def write(tmp: Path, name: str, text: str) -> Path:
    p = tmp / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def test_batch_mode_reads_facts_and_writes_sorted_csv(netc_bin, tmp_path):
    prog = write(tmp_path, "tc.dl", TC)
    write(tmp_path, "facts/edge.facts", "3\t4\n1\t2\n2\t3\n10\t2\n")
    r = netc(netc_bin, "run", "-F", str(tmp_path / "facts"), "-D", str(tmp_path / "out"), str(prog))
    assert r.returncode == 0, r.stderr
    rows = (tmp_path / "out" / "path.csv").read_text().splitlines()
    expected = {(1, 2), (1, 3), (1, 4), (2, 3), (2, 4), (3, 4), (10, 2), (10, 3), (10, 4)}
    assert [tuple(map(int, line.split("\t"))) for line in rows] == sorted(expected)


def test_output_to_stdout_and_printsize(netc_bin, tmp_path):
    prog = write(tmp_path, "p.dl", TC.replace(".input edge", "edge(1, 2). edge(2, 3).") + ".printsize path\n")
    r = netc(netc_bin, "run", "-D", "-", str(prog))
    assert r.returncode == 0, r.stderr
    # as Souffle's `-D -`: the attribute names under the relation's name
    assert "path\na\tb\n===============\n1\t2\n1\t3\n2\t3\n===============" in r.stdout
    assert "path\t3" in r.stdout


def test_updates_print_each_commits_changes(netc_bin, tmp_path):
    prog = write(tmp_path, "tc.dl", TC)
    write(tmp_path, "f/edge.facts", "1\t2\n")
    script = write(tmp_path, "tx", "+edge(2, 3).\ncommit.\n-edge(1, 2).\n+edge(1, 2).\ncommit.\n-edge(1, 2).\ncommit.\n")
    r = netc(netc_bin, "run", "-F", str(tmp_path / "f"), "-D", str(tmp_path / "o"), "--updates", str(script), str(prog))
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "+path(1, 3)",
        "+path(2, 3)",
        "commit 1",
        "commit 2",  # delete then re-insert in one transaction: no net change
        "-path(1, 2)",
        "-path(1, 3)",
        "commit 3",
    ]
    assert (tmp_path / "o" / "path.csv").read_text() == "2\t3\n"


def test_jsonl_input_and_network_types(netc_bin, tmp_path):
    prog = write(
        tmp_path,
        "n.ndl",
        """
.decl vm(name: symbol, ip: ipv4, mac: mac)
.input vm(IO=jsonl)
.decl net(p: prefix4)
.input net(IO=file, filename="nets.tsv", delimiter=",")
.decl inside(name: symbol, p: prefix4, first: ipv4)
.output inside(delimiter=",")
inside(n, p, f) :- vm(n, a, _), net(p), contains(p, a), f = nth_addr(p, 1).
""",
    )
    write(
        tmp_path,
        "in/vm.jsonl",
        '["web1", "10.1.0.5", "de:ad:be:ef:00:01"]\n{"name": "db1", "ip": "192.168.1.7", "mac": "00:00:00:00:00:02"}\n',
    )
    write(tmp_path, "in/nets.tsv", "10.0.0.0/8\n192.168.0.0/16\n172.16.0.0/12\n")
    r = netc(netc_bin, "run", "-F", str(tmp_path / "in"), "-D", str(tmp_path / "out"), str(prog))
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "out" / "inside.csv").read_text() == "db1,192.168.0.0/16,192.168.0.1\nweb1,10.0.0.0/8,10.0.0.1\n"


@pytest.mark.parametrize(
    "facts, location, words",
    [
        ("1\t2\nx\t3\n", "edge.facts:2:1", "signed 64-bit integer"),
        ("1\t2\n4\t5\t6\n", "edge.facts:2:1", "this line has 3 fields"),
        ("1\t2\n7\tq\n", "edge.facts:2:3", "signed 64-bit integer"),
    ],
)
def test_bad_facts_name_file_line_column(netc_bin, tmp_path, facts, location, words):
    prog = write(tmp_path, "tc.dl", TC)
    write(tmp_path, "f/edge.facts", facts)
    out = tmp_path / "o"
    r = netc(netc_bin, "run", "-F", str(tmp_path / "f"), "-D", str(out), str(prog))
    assert_clean_error(r, 2)
    assert location in r.stderr and words in r.stderr, r.stderr
    assert "hint:" in r.stderr
    assert not (out / "path.csv").exists(), "nothing is written when an input is malformed"


def test_bad_update_script_applies_nothing(netc_bin, tmp_path):
    prog = write(tmp_path, "tc.dl", TC)
    write(tmp_path, "f/edge.facts", "1\t2\n")
    script = write(tmp_path, "tx", "+edge(2, 3).\ncommit.\n+edge(3, \"x\").\ncommit.\n")
    r = netc(netc_bin, "run", "-F", str(tmp_path / "f"), "-D", "-", "--updates", str(script), str(prog))
    assert_clean_error(r, 2)
    assert "tx:3:10" in r.stderr and "attribute `b` of `edge`" in r.stderr, r.stderr
    assert "commit 1" not in r.stdout, "the script is checked before any transaction is applied"


def test_program_errors_exit_1_with_all_diagnostics(netc_bin, tmp_path):
    prog = write(
        tmp_path,
        "bad.dl",
        ".decl edge(a: number, b: number)\npath(x, y) :- edg(x, y).\nq(x) :- edge(x, \"s\").\n",
    )
    r = netc(netc_bin, "check", str(prog))
    assert_clean_error(r, 1)
    assert "bad.dl:2:" in r.stderr and "bad.dl:3:" in r.stderr, r.stderr
    assert "did you mean `edge`" in r.stderr
    assert "^" in r.stderr, "the source line is shown with a caret"
    r2 = netc(netc_bin, "run", "-D", "-", str(prog))
    assert_clean_error(r2, 1)


def test_intent_checked_as_a_plain_program_is_capped_with_a_hint(netc_bin, tmp_path):
    intent = tmp_path / "s.ndl"
    r = netc(netc_bin, "gen", "--preset", "S", "--out", str(intent))
    assert r.returncode == 0, r.stderr
    facts = sum(1 for line in intent.read_text().splitlines() if line and not line.startswith(("//", ".")))
    r = netc(netc_bin, "check", str(intent))
    assert_clean_error(r, 1)
    shown = r.stderr.count("error[E0101]")
    assert shown == 20, shown
    assert f"... and {facts - 20} more not shown" in r.stderr
    assert f"{facts} errors found" in r.stderr
    assert "netc check --intent" in r.stderr and "`switch`" in r.stderr, r.stderr[-600:]
    # --json still lists every diagnostic, and gives the same hint.
    j = netc(netc_bin, "check", "--json", str(intent))
    assert j.returncode == 1
    error = json.loads(j.stdout)["error"]
    assert len(error["diagnostics"]) == facts
    assert "netc check --intent" in (error["hint"] or ""), error["hint"]
    # A plain program's own undeclared relation gets no intent hint.
    prog = write(tmp_path, "p.dl", "path(x, y) :- edge(x, y).\n")
    r = netc(netc_bin, "check", str(prog))
    assert_clean_error(r, 1)
    assert "--intent" not in r.stderr and "more not shown" not in r.stderr, r.stderr
    j = netc(netc_bin, "check", "--json", str(prog))
    assert json.loads(j.stdout)["error"]["hint"] is None


def test_usage_errors_exit_2(netc_bin, tmp_path):
    assert_clean_error(netc(netc_bin, "run"), 2)
    assert_clean_error(netc(netc_bin, "run", "--workers", "0", "x.dl"), 2)
    assert_clean_error(netc(netc_bin, "frobnicate"), 2)
    r = netc(netc_bin, "run", "-D", "-", str(tmp_path / "missing.dl"))
    assert r.returncode in (1, 2) and "cannot read" in r.stderr and "panicked" not in r.stderr


def test_workers_do_not_change_results(netc_bin, tmp_path):
    prog = write(tmp_path, "tc.dl", TC)
    edges = "".join(f"{i}\t{(i * 7 + 3) % 60}\n" for i in range(60))
    write(tmp_path, "f/edge.facts", edges)
    script = write(tmp_path, "tx", "".join(f"-edge({i}, {(i * 7 + 3) % 60}).\ncommit.\n" for i in range(0, 60, 7)))
    outs = []
    for w in ["1", "4"]:
        r = netc(netc_bin, "run", "-F", str(tmp_path / "f"), "-D", str(tmp_path / w), "--workers", w, "--updates", str(script), str(prog))
        assert r.returncode == 0, r.stderr
        outs.append((r.stdout, (tmp_path / w / "path.csv").read_text()))
    assert outs[0] == outs[1]
    assert outs[0][1], "non-trivial output"


def test_readme_first_command_example_runs(netc_bin):
    r = netc(netc_bin, "run", "-D", "-", str(REPO / "examples/fabric/fabric.ndl"))
    assert r.returncode == 0, r.stderr
    assert "unreachable\nhost\tdst\n===============\nh1\t10.0.3.0/24" in r.stdout


@pytest.mark.parametrize("case", ["run", "check-json", "status", "history"])
def test_a_closed_pipe_ends_the_command_quietly(netc_bin, tmp_path, case):
    """`netc status | head -1`: the reader goes away before netc writes. The
    command must end as `ls` does (SIGPIPE, or exit 0) — never exit 101
    with a panic from println! on stderr."""
    import signal

    prog = tmp_path / "p.dl"
    prog.write_text(".decl n(x: number)\nn(0).\nn(x + 1) :- n(x), x < 20000.\n.output n(IO=stdout)\n")
    quick = str(Path(__file__).resolve().parent.parent / "examples" / "quickstart" / "intent.ndl")
    state = tmp_path / "st"
    (tmp_path / "none.toml").write_text("# no device is reached\n")
    r = subprocess.run([netc_bin, "apply", "--state", str(state), "--inventory", str(tmp_path / "none.toml"), quick],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    argv = {
        "run": ["run", str(prog)],
        "check-json": ["check", "--intent", "--json", quick],
        "status": ["status", "--state", str(state)],
        "history": ["history", "--state", str(state)],
    }[case]
    p = subprocess.Popen([netc_bin, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)
    p.stdout.close()  # the reader is gone before the first write
    _out, err = p.communicate(timeout=300)
    assert p.returncode in (0, 1, -signal.SIGPIPE), (p.returncode, err.decode()[-2000:])
    assert b"panicked" not in err and b"internal error" not in err, err.decode()[-2000:]


def test_a_directory_of_intent_means_its_ndl_files(netc_bin, tmp_path):
    """`netc compile DIR`, `check --intent DIR`, `plan DIR`, `apply DIR`: a
    directory stands for the .ndl files directly in it, in name order — the
    same artifacts as naming them, and the store records each file."""
    rubik = Path(__file__).resolve().parent.parent / "examples" / "rubik"
    files = sorted(str(p) for p in rubik.glob("*.ndl"))
    assert len(files) == 2, files
    by_dir, by_files = tmp_path / "d", tmp_path / "f"
    for out, args in ((by_dir, [str(rubik)]), (by_files, files)):
        r = subprocess.run([netc_bin, "compile", *args, "--out", str(out)], capture_output=True, text=True,
                           timeout=300)
        assert r.returncode == 0, r.stderr
    rels = sorted(p.name for p in (by_files / "relations").iterdir())
    assert rels and rels == sorted(p.name for p in (by_dir / "relations").iterdir())
    for name in rels:
        assert (by_dir / "relations" / name).read_text() == (by_files / "relations" / name).read_text(), name
    r = subprocess.run([netc_bin, "check", "--intent", str(rubik)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    (tmp_path / "none.toml").write_text("# no device is reached\n")
    state = tmp_path / "st"
    r = subprocess.run([netc_bin, "apply", "--json", "--state", str(state), "--inventory", str(tmp_path / "none.toml"),
                        str(rubik)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    import sqlite3

    with sqlite3.connect(state / "state.db") as c:
        stored = [row[0] for row in c.execute("SELECT path FROM intent_file ORDER BY ord")]
    assert stored == files, stored
    # a directory without intent is a usage error that says so
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("not intent\n")
    r = subprocess.run([netc_bin, "plan", "--state", str(state), str(empty)], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "holds no .ndl file" in r.stderr and "Is a directory" not in r.stderr, r.stderr
