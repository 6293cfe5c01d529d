"""Per-example golden outputs: `tests/golden/<example>/<name>.txt`.

Each file is the command a user runs on that example and what it prints:

    $ netc verify examples/quickstart/intent.ndl
    exit 0
    proven      PUSH-1   ...
    ...

The test runs the command named on the first line (from the repository's
root, `{work}` being a fresh directory: a plan's state directory starts
empty) and compares the exit code and the output (standard output and
standard error as a terminal shows them, one stream) with the rest of the
file. The output is redacted as in the session scripts (`transcript.py`:
`{repo}`, `{work}`, durations as `[TIME]`), and the expected lines may use
`[..]` and `...`. `UPDATE_EXPECT=1` rewrites the files that differ; a new
golden is a file holding only its `$ netc ...` line, filled in by a run with
`UPDATE_EXPECT=1`.

Every example under examples/ must have goldens. Duet's verify and plan are
left out: its verification takes minutes (test_gate.py covers it).
"""

from __future__ import annotations

import shlex
import subprocess

import pytest

import transcript
from transcript import REPO

GOLDEN = REPO / "tests" / "golden"
EXAMPLES = sorted(p.name for p in (REPO / "examples").iterdir() if p.is_dir())
FILES = sorted(f for ex in EXAMPLES for f in (GOLDEN / ex).glob("*.txt"))
pytestmark = pytest.mark.netc


def test_every_example_has_goldens():
    missing = [ex for ex in EXAMPLES if not list((GOLDEN / ex).glob("*.txt"))]
    assert not missing, f"examples without tests/golden/<example>/*.txt: {missing}"


@pytest.mark.parametrize("path", FILES, ids=[f"{f.parent.name}/{f.stem}" for f in FILES])
def test_example_output(netc_bin, tmp_path, path):
    lines = path.read_text().splitlines()
    assert lines and lines[0].startswith("$ netc "), f"{path}: the first line is the command, `$ netc ...`"
    work = tmp_path / "work"
    work.mkdir()
    args = [transcript.expand(a, work) for a in shlex.split(lines[0][2:])]
    r = subprocess.run(
        [netc_bin, *args[1:]], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600
    )
    got = [f"exit {r.returncode}", *transcript.redact(r.stdout, work).splitlines()]
    want = lines[1:]
    if transcript.UPDATE and not transcript.lines_match(want, got):
        path.write_text("\n".join([lines[0], *got]) + "\n")
        want = got
    assert transcript.lines_match(want, got), (
        f"{path.relative_to(REPO)} (UPDATE_EXPECT=1 to accept):\n{transcript.diff(want, got)}"
    )
