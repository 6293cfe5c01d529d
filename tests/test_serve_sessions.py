"""`netc serve` sessions kept as scripts: `tests/sessions/serve/*.session`.

Each script (format: tests/README.md, `transcript.py`) starts a real daemon
on 127.0.0.1 (`netc serve --no-push --listen 127.0.0.1:0 --state STATE`
plus `@run`'s arguments, in a fresh working directory), sends its requests
over HTTP and compares each answer, then stops the daemon by its pid. A
request is

    > METHOD PATH [token=none|wrong|longer]
    BODY (JSON, any number of lines; none for no body)
    < STATUS
    ANSWER (JSON)

`token=` sends no token, a wrong one, or the right one with a character
more (default: the daemon's token). `{work}` and `{repo}` in a body name the
working directory and the repository, `{text:FILE}` is the text of FILE (of
the working directory) escaped for a JSON string. Answers are compared as JSON: the
value `"[..]"` matches anything, `[..]` inside a string any text; keys whose
values change run to run (`pid`, the deltas' `epoch`, `*_micros`) or
with the standard rules rather than with the behaviour under test (the
engine's `*_records`) are masked. `@forbid TEXT`: no answer may contain TEXT (a file the daemon must
not read out). `UPDATE_EXPECT=1` rewrites the answers that no longer match,
keeping the `"[..]"` masks written by hand.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from test_serve import Daemon

import transcript
from transcript import REPO

SESSIONS = sorted((REPO / "tests" / "sessions" / "serve").glob("*.session"))
MASK = "[..]"
VOLATILE = re.compile(r"^(pid|epoch|.*_micros|.*_records)$")
pytestmark = pytest.mark.netc


def masked(v, work: Path):
    """The answer with paths redacted and volatile values masked."""
    if isinstance(v, dict):
        return {k: MASK if VOLATILE.match(k) else masked(x, work) for k, x in v.items()}
    if isinstance(v, list):
        return [masked(x, work) for x in v]
    if isinstance(v, str):
        return transcript.redact(v, work)
    return v


def matches(want, got) -> bool:
    if want == MASK:
        return True
    if isinstance(want, dict):
        return isinstance(got, dict) and want.keys() == got.keys() and all(matches(want[k], got[k]) for k in want)
    if isinstance(want, list):
        return isinstance(got, list) and len(want) == len(got) and all(map(matches, want, got))
    if isinstance(want, str) and MASK in want:
        return isinstance(got, str) and transcript.lines_match([want], [got])
    return want == got and type(want) is type(got)


def carry(old, new):
    """`new`, keeping the masks `old` had at the same places."""
    if old == MASK:
        return MASK
    if isinstance(old, dict) and isinstance(new, dict):
        return {k: carry(old.get(k), v) for k, v in new.items()}
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [carry(a, b) for a, b in zip(old, new)]
    if isinstance(old, str) and MASK in old and matches(old, new):
        return old
    return new


def with_texts(body: str, work: Path) -> str:
    """`{text:FILE}` replaced by FILE's text (of the working directory),
    escaped as a JSON string's contents."""
    return re.sub(r"\{text:([^}]+)\}", lambda m: json.dumps((work / m.group(1)).read_text())[1:-1], body)


def pretty(v) -> list[str]:
    return json.dumps(v, indent=2, sort_keys=True, ensure_ascii=False).splitlines()


def split(step: transcript.Step) -> tuple[list[str], int | None, object]:
    """A step's body lines, expected status and expected answer."""
    at = next((i for i, x in enumerate(step.expected) if x.startswith("< ")), None)
    if at is None:
        return step.expected, None, None
    answer = "\n".join(step.expected[at + 1 :])
    return step.expected[:at], int(step.expected[at][2:]), json.loads(answer) if answer.strip() else None


@pytest.mark.parametrize("path", SESSIONS, ids=[p.stem for p in SESSIONS])
def test_serve_session(netc_bin, tmp_path, path):
    s = transcript.parse(path)
    work = tmp_path / "work"
    transcript.setup(s, work)
    args = [transcript.expand(a, work) for a in shlex.split(s.directive("run") or "")]
    d = Daemon(netc_bin, work / "state", extra=tuple(args), cwd=work)
    got_lines: list[list[str]] = []
    failures: list[str] = []
    try:
        for step in s.steps:
            method, target, *opts = step.line.split()
            body_lines, want_status, want = split(step)
            body_text = with_texts(transcript.expand("\n".join(body_lines), work), work)
            body = json.loads(body_text) if body_text.strip() else None
            token = {"": "default", "none": None, "wrong": "not-the-token", "longer": d.token + "x"}[
                dict(o.split("=", 1) for o in opts).get("token", "")
            ]
            status, reply = d.call(method, target, body, token=token)
            for secret in s.all("forbid"):
                assert secret not in json.dumps(reply), f"{path.name}: `> {step.line}` answers `{secret}`"
            reply = masked(reply, work)
            if want_status == status and matches(want, reply):
                got_lines.append(step.expected)
                continue
            got_lines.append([*body_lines, f"< {status}", *pretty(carry(want, reply))])
            failures.append(f"> {step.line}\n{transcript.diff(step.expected, got_lines[-1])}")
    finally:
        d.stop()
    if transcript.UPDATE:
        transcript.write_back(s, got_lines)
    else:
        assert not failures, f"{path.name} (UPDATE_EXPECT=1 to accept):\n" + "\n".join(failures)
