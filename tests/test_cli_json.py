"""The feel of every `netc` command: `--help` ends in its exit codes, `--json`
is accepted everywhere and a failure under it is one JSON document on
stdout, and progress and colour appear only on a terminal.

The subcommands are read from `netc --help` (not listed here), so a new
command without the epilogue or `--json` fails `test_every_command_*`; one
without a bad input below fails `test_json_failure_*` until it gets one.
Terminals are real ptys (`pty.fork`), read with bounded select loops.
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.netc

REPO = Path(__file__).resolve().parent.parent
QUICKSTART = REPO / "examples" / "quickstart" / "intent.ndl"

BAD_DL = "x(\n"  # a program that ends mid-rule: bad.dl:2:1
BAD_NDL = 'vm("a" 1).\n'  # a missing comma: bad.ndl:1:8


def netc(bin_: str, *args: str, cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    return subprocess.run([bin_, *args], capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env)


def subcommands(bin_: str) -> list[str]:
    """The commands `netc --help` lists (clap's `Commands:` block)."""
    top = netc(bin_, "--help")
    assert top.returncode == 0, top.stderr
    block = top.stdout.split("Commands:\n", 1)[1].split("\n\n", 1)[0]
    names = [line.split()[0] for line in block.splitlines() if line.startswith("  ") and line.split()]
    names = [n for n in names if n != "help"]
    assert len(names) >= 20, names
    return names


def test_every_command_documents_exit_codes_and_takes_json(netc_bin):
    top = netc(netc_bin, "--help")
    assert "Exit codes" in top.stdout and "--json" in top.stdout
    for cmd in subcommands(netc_bin):
        r = netc(netc_bin, cmd, "--help")
        assert r.returncode == 0, (cmd, r.stderr)
        text = r.stdout
        # the epilogue is last: what 0, 1 and 2 mean for this command
        tail = text.split("\nExit codes:\n", 1)
        assert len(tail) == 2, f"`netc {cmd} --help` has no 'Exit codes:' section:\n{text}"
        codes = dict(re.findall(r"^  (\d+)  (.+)$", tail[1], re.M))
        assert {"0", "1", "2"} <= codes.keys(), (cmd, tail[1])
        assert all(codes[c].strip() for c in "012"), (cmd, codes)
        assert re.search(r"^\s+--json\b", text, re.M), f"`netc {cmd}` has no --json option:\n{text}"


def _bad_inputs(tmp: Path) -> dict[str, tuple[list[str], int, str | None]]:
    """Per command: arguments that fail, the exit code, and a `file:line:col`
    the JSON must cite (None where the failure is not about a file's text)."""
    (tmp / "bad.dl").write_text(BAD_DL)
    (tmp / "bad.ndl").write_text(BAD_NDL)
    bad_dl, bad_ndl, st, gone = str(tmp / "bad.dl"), str(tmp / "bad.ndl"), str(tmp / "st"), str(tmp / "nostate")
    at_dl, at_ndl = "bad.dl:2:1", "bad.ndl:1:8"
    return {
        "check": (["check", bad_dl], 1, at_dl),
        "run": (["run", "-D", "-", bad_dl], 1, at_dl),
        "export": (["export", "--souffle", bad_dl], 1, at_dl),
        "decode-p4": (["decode-p4", str(tmp / "missing.txtpb")], 2, None),
        "tofino": (["tofino", str(tmp / "not-artifacts")], 2, None),
        "capacity": (["capacity", bad_ndl], 1, at_ndl),
        "compile": (["compile", bad_ndl, "--out", str(tmp / "out")], 1, at_ndl),
        "gen": (["gen", "--preset", "S", "--out", "-"], 2, None),
        "verify": (["verify", bad_ndl], 2, at_ndl),
        "predict": (["predict", "--artifacts", str(tmp), "--packet", "host=h1"], 2, None),
        "serve": (["serve", bad_ndl, "--state", st, "--listen", "127.0.0.1:0", "--no-push"], 2, None),
        "repl": (["repl", bad_ndl, "--state", st], 2, None),
        "plan": (["plan", bad_ndl, "--state", st], 1, at_ndl),
        "apply": (["apply", bad_ndl, "--state", st], 1, at_ndl),
        "rollback": (["rollback", "1", "--state", gone], 2, None),
        "status": (["status", "--state", gone], 2, None),
        "history": (["history", "--state", gone], 2, None),
        "diff": (["diff", "1", "2", "--state", gone], 2, None),
        "agent": (["agent", "--host", "h1", "--artifacts", str(tmp / "no-artifacts"), "--bridge", "unix:" + str(tmp / "no.mgmt"), "--once"], 2, None),
        "lab": (["lab", "up", bad_ndl, "--state", st], 1, at_ndl),
        "trace": (["trace", "web1", "web2", "--state", gone], 2, None),
    }


def test_json_failure_is_one_document_on_stdout_for_every_command(netc_bin, tmp_path):
    cases = _bad_inputs(tmp_path)
    missing = [c for c in subcommands(netc_bin) if c not in cases]
    assert not missing, f"give these commands a bad input here: {missing}"
    for cmd, (args, code, at) in cases.items():
        r = netc(netc_bin, *args, "--json", cwd=tmp_path)
        assert r.returncode == code, (cmd, r.returncode, r.stdout, r.stderr)
        assert "panicked" not in r.stderr and "RUST_BACKTRACE" not in r.stderr, (cmd, r.stderr)
        lines = r.stdout.splitlines()
        assert len(lines) == 1, f"{cmd}: stdout must be one JSON document, got {r.stdout!r}"
        doc = json.loads(lines[0])
        err = doc["error"]
        assert err["exit"] == code, (cmd, doc)
        assert err["message"].strip(), (cmd, doc)
        assert "\x1b[" not in r.stderr, f"{cmd}: no escape codes on a pipe: {r.stderr!r}"
        if at is not None:
            cited = [d.get("at") or "" for d in err.get("diagnostics", [])]
            assert any(c.endswith(at) for c in cited), (cmd, doc)
        # the person still gets the message on stderr
        assert r.stderr.strip(), cmd


# program text made of Datalog's own pieces, so most inputs get far enough
# to fail somewhere interesting (parse, names, types, strata) or even pass
PIECES = st.sampled_from(
    [".decl ", ".input ", ".output ", "e", "p", "(", ")", "x", "y", ", ", ": number", ": symbol",
     " :- ", "!", ".", "\n", '"s"', "1", " = ", "count : { e(x, _) }", "_", "\t", "é", ";"]
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(PIECES, max_size=40).map("".join))
def test_check_json_is_one_document_whatever_the_program(netc_bin, tmp_path, text):
    prog = tmp_path / "p.dl"
    prog.write_text(text)
    r = netc(netc_bin, "check", str(prog), "--json")
    assert r.returncode in (0, 1), (text, r.returncode, r.stderr)
    assert "panicked" not in r.stderr, r.stderr
    [line] = r.stdout.splitlines()
    doc = json.loads(line)
    if r.returncode == 0:
        assert doc["ok"] is True
        return
    err = doc["error"]
    assert err["exit"] == 1 and err["diagnostics"], doc
    lines = text.split("\n")
    for d in err["diagnostics"]:
        m = re.fullmatch(r".*p\.dl:(\d+):(\d+)", d["at"] or "")
        assert m, d  # every error names file:line:col ...
        line_no, col = int(m[1]), int(m[2])
        assert 1 <= line_no <= len(lines) + 1 and col >= 1, (d, text)  # ... inside the file
        assert d["severity"] in ("error", "warning") and d["message"], d


def test_json_success_is_json_only(netc_bin, tmp_path):
    out = tmp_path / "out"
    r = netc(netc_bin, "compile", str(QUICKSTART), "--out", str(out), "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["artifacts"] > 0 and doc["relations"] > 0
    assert (out / "relations").is_dir()
    r = netc(netc_bin, "check", "--intent", str(QUICKSTART), "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["ok"] is True
    r = netc(netc_bin, "verify", "--artifacts", str(out), str(QUICKSTART), "--json")
    assert r.returncode == 0, r.stderr
    assert len(r.stdout.strip().splitlines()) >= 1
    json.loads(r.stdout)


def _on_pty(argv: list[str], env: dict[str, str], timeout: float = 120) -> tuple[int, bytes]:
    """Runs argv with stdout and stderr on a new pty; everything it wrote and
    its exit code (the child is killed by pid at the deadline)."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: only exec
        os.execve(argv[0], argv, env)
    buf = b""
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if select.select([fd], [], [], 0.2)[0]:
                try:
                    chunk = os.read(fd, 65536)
                except OSError:  # EIO: the child is gone
                    break
                if not chunk:
                    break
                buf += chunk
        else:
            raise AssertionError(f"{argv} still running after {timeout}s: {buf!r}")
        _, status = os.waitpid(pid, 0)
        pid = 0
        return os.waitstatus_to_exitcode(status), buf
    finally:
        if pid:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
        os.close(fd)


SGR_COLOUR = re.compile(rb"\x1b\[3\dm")


def test_compile_on_a_terminal_shows_a_spinner_and_colour(netc_bin, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env["TERM"] = "xterm"
    code, shown = _on_pty([netc_bin, "compile", str(QUICKSTART), "--out", str(tmp_path / "a")], env)
    assert code == 0, shown
    assert b"compile: compiling the rules" in shown, shown  # the spinner's stage
    assert b"\x1b[2K" in shown, "the spinner redraws its line"
    assert SGR_COLOUR.search(shown), f"colour on a terminal: {shown!r}"
    # NO_COLOR: the spinner stays, the colour goes
    code, shown = _on_pty([netc_bin, "compile", str(QUICKSTART), "--out", str(tmp_path / "b")], {**env, "NO_COLOR": "1"})
    assert code == 0 and b"compiled" in shown, shown
    assert not SGR_COLOUR.search(shown), shown
    # --json on a terminal: no spinner, stdout is the JSON document
    code, shown = _on_pty([netc_bin, "compile", str(QUICKSTART), "--out", str(tmp_path / "c"), "--json"], env)
    assert code == 0 and b"compile: compiling" not in shown, shown
    # a pipe: plain text, not one escape code
    r = netc(netc_bin, "compile", str(QUICKSTART), "--out", str(tmp_path / "d"))
    assert r.returncode == 0 and "compiled 1 intent file" in r.stderr, r.stderr
    assert "\x1b" not in r.stderr and "\x1b" not in r.stdout, r.stderr


def test_plan_on_a_terminal_shows_its_stages_and_errors_stay_readable(netc_bin, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env["TERM"] = "xterm"
    code, shown = _on_pty([netc_bin, "plan", str(QUICKSTART), "--state", str(tmp_path / "st")], env)
    assert code == 0, shown
    assert b"plan: compiling the rules" in shown and b"plan: diffing against the last generation" in shown, shown
    assert SGR_COLOUR.search(shown), shown  # +adds green, -removes red
    # the spinner is cleared before diagnostics: their lines arrive whole
    (tmp_path / "bad.ndl").write_text(BAD_NDL)
    code, shown = _on_pty([netc_bin, "compile", str(tmp_path / "bad.ndl"), "--out", str(tmp_path / "o")], env)
    assert code == 1, shown
    # the screen: per line, what is left after the last carriage return (the
    # spinner's redraws return to column 0 and clear the line)
    screen = [ln.rstrip("\r").split("\r")[-1].replace("\x1b[2K", "") for ln in shown.decode(errors="replace").split("\n")]
    assert any(ln.startswith("error[E0001]: expected `,` or `)` after an argument") for ln in screen), screen
    assert any(re.fullmatch(r"  --> .*bad\.ndl:1:8", ln) for ln in screen), screen


def test_run_json_streams_one_line_per_commit_then_the_outputs(netc_bin, tmp_path):
    (tmp_path / "f").mkdir()
    (tmp_path / "f" / "edge.facts").write_text("1\t2\n")
    (tmp_path / "tc.dl").write_text(
        ".decl edge(a: number, b: number)\n.input edge\n.decl path(a: number, b: number)\n.output path\n"
        "path(x, y) :- edge(x, y).\npath(x, z) :- path(x, y), edge(y, z).\n"
    )
    (tmp_path / "tx").write_text("+edge(2, 3).\ncommit.\n-edge(1, 2).\ncommit.\n")
    args = ["run", "-F", str(tmp_path / "f"), "-D", "-", "--updates", str(tmp_path / "tx"), str(tmp_path / "tc.dl"), "--json"]
    r = netc(netc_bin, *args)
    assert r.returncode == 0, r.stderr
    docs = [json.loads(x) for x in r.stdout.splitlines()]
    assert docs == [
        {"commit": 1, "changes": ["+path(1, 3)", "+path(2, 3)"]},
        {"commit": 2, "changes": ["-path(1, 2)", "-path(1, 3)"]},
        {"outputs": {"path": {"rows": 1, "tuples": [["2", "3"]]}}},
    ]
