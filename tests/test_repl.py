"""`netc repl`: driven through stdin (scripts), and through a real pty.

What is asserted:
  * `?-` queries with variables, constants and `_` print the matching rows;
    an error shows a caret under the offending column;
  * `:assert`/`:retract` print each touched device's delta, and retract
    undoes assert exactly;
  * `:whatif FILE` prints the delta and a verdict and leaves the session
    unchanged;
  * `:explain` of a derived flow reaches intent facts whose `file:line`
    really holds that fact;
  * on a terminal (a real pty), Tab completes a relation name, the cursor
    keys and Ctrl-U edit the line, and the history file keeps the lines (a
    second session recalls them with the Up arrow).
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import shutil
import subprocess
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
QUICKSTART = REPO / "examples" / "quickstart" / "intent.ndl"
DB2 = 'vm("acme", "db2", 02:00:00:00:01:04, 10.1.2.22, "h2").'
DB2_PORT = 'vm_port("h2", "acme", "db2", 11).'


def repl(netc: str, lines: list[str], *intent: Path, state: Path | None = None):
    args = [netc, "repl", *map(str, intent)]
    if state:
        args += ["--state", str(state)]
    return subprocess.run(args, input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=300)


def test_queries_with_patterns_and_caret_errors(netc_bin):
    r = repl(
        netc_bin,
        ['?- vm(T, N, _, _, "h1").', '?- vm("acme", "web1", _, _, "h1").', "?- vm(T, N, _, 300.1.1.1, H)."],
        QUICKSTART,
    )
    assert r.returncode == 1  # a line failed in a script
    out = r.stdout.splitlines()
    assert out[0].split() == ["T", "|", "N"]
    assert '"acme"   | "web1"' in r.stdout and '"globex" | "app1"' in r.stdout
    assert "(2 rows)" in r.stdout and "true." in r.stdout
    err = r.stderr.splitlines()
    i = next(k for k, line in enumerate(err) if "300.1.1.1" in line and line.startswith("  | ?-"))
    caret = err[i + 1]
    assert caret.index("^") == err[i].index("300.1.1.1")


def test_assert_retract_show_device_deltas(netc_bin):
    r = repl(
        netc_bin,
        [f":assert {DB2}", f":assert {DB2_PORT}", '?- vm(_, "db2", _, _, H).', f":retract {DB2_PORT}", f":retract {DB2}"],
        QUICKSTART,
    )
    assert r.returncode == 0, r.stderr
    blocks = r.stdout.split("h2: ")
    assert len(blocks) >= 3, r.stdout
    added = re.findall(r"^  \+ (.*)$", r.stdout, re.M)
    removed = re.findall(r"^  - (.*)$", r.stdout, re.M)
    assert added and sorted(added) == sorted(removed), "retract must undo assert exactly"
    assert any("10.1.2.22" in a for a in added)
    assert '"h2"' in r.stdout  # the query saw the asserted VM


def test_whatif_reports_and_leaves_state_unchanged(netc_bin, tmp_path):
    changed = tmp_path / "intent.ndl"
    changed.write_text(QUICKSTART.read_text() + "\n" + DB2 + "\n" + DB2_PORT + "\n")
    local = tmp_path / "orig.ndl"
    shutil.copy(QUICKSTART, local)
    q = '?- ovs_flow("h2", T, P, M, A, C).'
    # the verdict's cited artifacts are kept under the state directory: the test's own
    r = repl(netc_bin, [q, f":whatif {changed}", q], local, state=tmp_path / "st")
    assert r.returncode == 0, r.stderr
    assert "verdict: " in r.stdout and "nothing applied" in r.stdout
    assert re.search(r"^h2: \+\d+ -\d+$", r.stdout, re.M)
    counts = re.findall(r"^\((\d+) rows?\)$", r.stdout, re.M)
    assert len(counts) == 2 and counts[0] == counts[1], r.stdout


def test_explain_cites_intent_lines_that_hold_the_facts(netc_bin):
    r = repl(netc_bin, ['?- ovs_flow("h1", T, P, M, A, C).'], QUICKSTART)
    rows = [line for line in r.stdout.splitlines()[2:] if " | " in line]
    assert rows, r.stdout
    # a flow of web1's subnet on h1, derived from several intent facts
    row = next((x for x in rows if "10.1.1.11" in x), rows[0])
    vals = [c.strip() for c in row.split(" | ")]
    atom = f'ovs_flow("h1", {", ".join(vals)}).'
    r = repl(netc_bin, [f":explain {atom}"], QUICKSTART)
    assert r.returncode == 0, r.stderr
    assert "by the rule at" in r.stdout
    cites = re.findall(r"^\s*(.*?)   <- intent fact at (.*):(\d+):(\d+)$", r.stdout, re.M)
    assert cites and all(p == str(QUICKSTART) for _, p, _, _ in cites), r.stdout
    rule_facts = re.findall(r"^\s*(.*?)   <- fact of the standard rules at <netc>/(.*):(\d+):(\d+)$", r.stdout, re.M)
    for fact, path, line, col in cites + rule_facts:
        text = (REPO / path if not path.startswith("/") else Path(path)).read_text().splitlines()[int(line) - 1]
        assert text[int(col) - 1 :].startswith(fact), (fact, text)
    r = repl(netc_bin, [':explain vm("acme", "nobody", 02:00:00:00:00:99, 10.9.9.9, "h1").'], QUICKSTART)
    assert "not derivable" in r.stdout


def test_json_mode_answers_each_line_with_one_json_line(netc_bin):
    lines = ['?- vm(T, N, _, _, "h1").', "", "% a comment", "?- vm(T, N, _, 300.1.1.1, H).", ":help"]
    r = subprocess.run(
        [netc_bin, "repl", str(QUICKSTART), "--json"],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 1, r.stderr  # a line failed
    docs = [json.loads(x) for x in r.stdout.splitlines()]
    assert [d["line"] for d in docs] == [lines[0], lines[3], lines[4]], "blank and comment lines answer nothing"
    assert docs[0]["ok"] is True and "(2 rows)" in docs[0]["output"] and '"web1"' in docs[0]["output"]
    assert docs[1]["ok"] is False and "300.1.1.1" in docs[1]["error"] and "^" in docs[1]["error"]
    assert docs[2]["ok"] is True and ":whatif" in docs[2]["output"]


class Terminal:
    """A `netc repl` on a real pty: bounded reads on the master fd, each
    keystroke sent only once the prompt is drawn (rustyline is in raw mode
    only while it reads a line: a key typed earlier is cooked by the tty —
    Ctrl-D there is an end-of-file the REPL never sees), a cursor-position
    query answered, and the child stopped by pid."""

    PROMPT = "netc> "

    def __init__(self, netc: str, state: Path):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: only exec
            os.environ["TERM"] = "xterm"
            os.environ.pop("NO_COLOR", None)
            os.execv(netc, [netc, "repl", str(QUICKSTART), "--state", str(state)])
        self.seen = ""

    def read_until(self, pattern: str, timeout: float = 120) -> str:
        """Reads until `pattern` matches what arrived since the last call;
        returns that text (raises with it after `timeout` seconds)."""
        buf = b""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.fd], [], [], 0.2)
            if not ready:
                continue
            try:
                chunk = os.read(self.fd, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            if b"\x1b[6n" in chunk:  # where is the cursor? (top left will do)
                os.write(self.fd, b"\x1b[1;1R")
            buf += chunk
            text = buf.decode(errors="replace")
            if re.search(pattern, text):
                self.seen += text
                return text
        raise AssertionError(f"no {pattern!r} within {timeout}s in {buf.decode(errors='replace')!r}")

    def line(self, keys: bytes, answer: str) -> str:
        """Types `keys` (ending in Enter) and waits for `answer`, then for
        the next prompt."""
        os.write(self.fd, keys)
        return self.read_until(f"(?s){answer}.*{re.escape(self.PROMPT)}")

    def wait(self, timeout: float = 60) -> int:
        """The child's exit status, polled until `timeout`."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            # drain, so a child writing its last bytes never blocks on a full pty
            if select.select([self.fd], [], [], 0.1)[0]:
                try:
                    os.read(self.fd, 65536)
                except OSError:
                    pass
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.pid = 0
                return os.waitstatus_to_exitcode(status)
        raise AssertionError(f"netc repl did not exit within {timeout}s; it showed {self.seen[-400:]!r}")

    def close(self) -> None:
        if self.pid:
            try:
                os.kill(self.pid, 9)
                os.waitpid(self.pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
        os.close(self.fd)


LEFT = b"\x1b[D"
UP = b"\x1b[A"


def test_terminal_completion_editing_and_history(netc_bin, tmp_path):
    state = tmp_path / "state"
    t = Terminal(netc_bin, state)
    try:
        t.read_until(re.escape(Terminal.PROMPT))
        # Tab completes the relation name
        os.write(t.fd, b"?- vm_p\t")
        t.read_until(r"vm_port\(")
        # line editing: the host typed short, the cursor moved back over
        # `, T, N, P).` (11 characters), the missing `1"` inserted there
        out = t.line(b'"h, T, N, P).' + LEFT * 11 + b'1"\r', r"\(2 rows\)")
        assert "web1" in out and "app1" in out, out
        # Ctrl-U kills the line typed so far: only the second query runs
        out = t.line(b"?- garbage(\x15?- vm(T, \"web1\", _, _, H).\r", r"\(1 row\)")
        assert '"h1"' in out and "error" not in out, out
        os.write(t.fd, b":quit\r")
        assert t.wait() == 0
    finally:
        t.close()
    history = (state / "repl_history").read_text()
    assert '?- vm_port("h1", T, N, P).' in history, history
    # a second session recalls the first one's lines with Up
    t = Terminal(netc_bin, state)
    try:
        t.read_until(re.escape(Terminal.PROMPT))
        os.write(t.fd, UP * 3)  # `:quit`, the vm query, the vm_port query
        t.read_until(r"vm_port")
        out = t.line(b"\r", r"\(2 rows\)")
        assert "web1" in out, out
        os.write(t.fd, b"\x04")  # Ctrl-D on an empty line ends the session
        assert t.wait() == 0
    finally:
        t.close()
