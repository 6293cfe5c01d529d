"""`netc repl` sessions kept as scripts: `tests/sessions/repl/*.session`.

Each script (format: tests/README.md, `transcript.py`) runs twice through
the real binary on a real example, each run in its own fresh directory:
  * `netc repl ARGS --json`: each typed line's answer (its `output`, or its
    `error` as `! ` lines) must match the lines under that `>`;
  * `netc repl ARGS` as a person's script would: standard output must be
    the answers' lines in order, standard error the `! ` lines, and the
    exit code `@exit` (0 when absent).
So the text a person reads and the JSON a program reads say the same.
Some sessions also carry a property that holds whatever the exact text
(`PROPERTIES`): it is checked on every run, `UPDATE_EXPECT=1` included, so
regenerating cannot bless a broken behaviour.

`UPDATE_EXPECT=1` rewrites the answers that no longer match.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from pathlib import Path

import pytest

import transcript
from transcript import REPO

SESSIONS = sorted((REPO / "tests" / "sessions" / "repl").glob("*.session"))
pytestmark = pytest.mark.netc


def is_silent(line: str) -> bool:
    """Lines the REPL answers with nothing (`--json` prints no document)."""
    t = line.strip()
    return not t or t.startswith("//") or t.startswith("%")


def run(netc: str, s: transcript.Session, work: Path, json_mode: bool) -> subprocess.CompletedProcess:
    transcript.setup(s, work)
    args = [transcript.expand(a, work) for a in shlex.split(s.directive("run") or "")]
    text = "".join(step.line + "\n" for step in s.steps)
    cmd = [netc, "repl", *args] + (["--json"] if json_mode else [])
    return subprocess.run(cmd, input=text, capture_output=True, text=True, timeout=300, cwd=work)


def answers_of(s: transcript.Session, r: subprocess.CompletedProcess, work: Path) -> list[list[str]]:
    """Each step's answer lines (redacted), from a `--json` run."""
    docs = iter(json.loads(x) for x in r.stdout.splitlines())
    answers: list[list[str]] = []
    quit_ = False
    for step in s.steps:
        if is_silent(step.line) or quit_:
            answers.append([])
            continue
        doc = next(docs, None)
        if doc is None:  # `:quit` (or an end the REPL chose): nothing more answers
            quit_ = True
            answers.append([])
            continue
        assert doc["line"] == step.line, (doc, step.line)
        if doc["ok"]:
            answers.append([transcript.escape(x) for x in transcript.redact(doc["output"], work).splitlines()])
        else:
            answers.append(["! " + x if x else "!" for x in transcript.redact(doc["error"], work).splitlines()])
    assert next(docs, None) is None, "more JSON documents than lines"
    return answers


def split_streams(answers: list[list[str]]) -> tuple[list[str], list[str]]:
    out = [transcript.unescape(x) for a in answers for x in a if not x.startswith("!")]
    err = [x[2:] if x.startswith("! ") else x[1:] for a in answers for x in a if x.startswith("!")]
    return out, err


@pytest.mark.parametrize("path", SESSIONS, ids=[p.stem for p in SESSIONS])
def test_repl_session(netc_bin, tmp_path, path):
    s = transcript.parse(path)
    work_json, work_text = tmp_path / "json", tmp_path / "text"
    rj = run(netc_bin, s, work_json, json_mode=True)
    assert rj.stderr == "", rj.stderr
    got = answers_of(s, rj, work_json)
    rt = run(netc_bin, s, work_text, json_mode=False)
    check = PROPERTIES.get(path.stem)
    if check:
        check(s, got)
    for text in (rj.stdout, rt.stdout, rt.stderr):
        for secret in s.all("forbid"):
            assert secret not in text, f"{path.name}: the answers show `{secret}`"
    if transcript.UPDATE:
        transcript.write_back(s, got, exit_code=rt.returncode)
        s = transcript.parse(path)
    failures = []
    for step, answer in zip(s.steps, got):
        if not transcript.lines_match(step.expected, answer):
            failures.append(f"> {step.line}\n{transcript.diff(step.expected, answer)}")
    assert not failures, f"{path.name} (UPDATE_EXPECT=1 to accept):\n" + "\n".join(failures)
    # the plain run: the same answers, split into the two streams, and the exit code
    want_out, want_err = split_streams([step.expected for step in s.steps])
    got_out = transcript.redact(rt.stdout, work_text).splitlines()
    got_err = transcript.redact(rt.stderr, work_text).splitlines()
    assert transcript.lines_match(want_out, got_out), transcript.diff(want_out, got_out)
    assert transcript.lines_match(want_err, got_err), transcript.diff(want_err, got_err)
    assert rt.returncode == int(s.directive("exit", "0")), rt.stderr
    assert rj.returncode == rt.returncode


# ---------------------------------------------------------------- properties


def retract_undoes_assert(s: transcript.Session, got: list[list[str]]) -> None:
    """The rows `:retract` removes are exactly those `:assert` added."""
    added = [x for step, a in zip(s.steps, got) if step.line.startswith(":assert") for x in a if x.startswith("  + ")]
    removed = [x for step, a in zip(s.steps, got) if step.line.startswith(":retract") for x in a if x.startswith("  - ")]
    assert added and sorted(x[4:] for x in added) == sorted(x[4:] for x in removed), (added, removed)
    assert not any(x.startswith("  - ") for step, a in zip(s.steps, got) if step.line.startswith(":assert") for x in a)


def whatif_leaves_the_session(s: transcript.Session, got: list[list[str]]) -> None:
    """The same query before and after `:whatif` answers the same rows."""
    queries = [(step.line, a) for step, a in zip(s.steps, got) if step.line.startswith("?-")]
    assert len(queries) == 2 and queries[0] == queries[1], queries
    whatif = next(a for step, a in zip(s.steps, got) if step.line.startswith(":whatif"))
    assert any(x.startswith("verdict: ") for x in whatif) and "(nothing applied: the session is unchanged)" in whatif
    assert any(re.fullmatch(r"h2: \+\d+ -\d+", x) for x in whatif), whatif


def explain_cites_real_lines(s: transcript.Session, got: list[list[str]]) -> None:
    """Every fact `:explain` cites is at the `file:line:column` it names."""
    text = "\n".join(x for step, a in zip(s.steps, got) if step.line.startswith(":explain") for x in a)
    cites = re.findall(r"^\s*(.*?)   <- intent fact at (.*):(\d+):(\d+)$", text, re.M)
    rules = re.findall(r"^\s*(.*?)   <- fact of the standard rules at <netc>/(.*):(\d+):(\d+)$", text, re.M)
    assert cites and "by the rule at" in text, text
    assert {p for _, p, _, _ in cites} == {"{repo}/examples/quickstart/intent.ndl"}, cites
    for fact, path, line, col in cites + rules:
        file = REPO / path if not path.startswith("{repo}") else Path(path.replace("{repo}", str(REPO)))
        held = file.read_text().splitlines()[int(line) - 1]
        assert held[int(col) - 1 :].startswith(fact), (fact, held)
    assert "not derivable" in text


PROPERTIES = {
    "assert_retract": retract_undoes_assert,
    "whatif": whatif_leaves_the_session,
    "explain": explain_cites_real_lines,
}
