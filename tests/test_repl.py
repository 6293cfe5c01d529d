"""`netc repl`: what is not a transcript — the JSON protocol, and a real pty.

The sessions themselves (queries and caret errors, `:assert`/`:retract`
deltas, `:whatif`, `:explain`, the commands) are scripts under
`tests/sessions/repl/`, run by `test_repl_sessions.py`. Asserted here:
  * `--json` answers each line with one JSON document, and blank and
    comment lines with none;
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
import subprocess
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
QUICKSTART = REPO / "examples" / "quickstart" / "intent.ndl"


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
