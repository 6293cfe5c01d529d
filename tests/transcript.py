"""Session scripts: tests kept as data, run through the real `netc`.

A session file (`tests/sessions/repl/*.session`, `tests/sessions/serve/*.session`)
is what a user types followed by what netc answers. The format (documented
for readers in tests/README.md):

  * `# text`       a comment (ignored; only before the first `>`);
  * `@directive`   sets the session up before netc starts — `@copy SRC DEST`
                   (SRC under the repository), `@write DEST TEXT` (appends a
                   line), `@symlink LINK TARGET`, `@mkdir DIR`, `@run ARGS`
                   (netc's arguments), `@forbid TEXT` (no answer may contain
                   it), `@exit N` (the REPL's exit code);
  * `> line`       a line the user types (REPL) or a request (serve);
  * other lines    the expected answer; in the REPL `! ` marks a line of
                   standard error. An answer line that would start with one
                   of `#@>!<\\` is written with a leading backslash.

Every process runs in a fresh working directory: relative paths in `@run`
and in the lines name files there. Before comparing, the actual output is
redacted: the repository's path becomes `{repo}`, the working directory's
`{work}`, durations `[TIME]`, UTC timestamps (a generation's time)
`[TIMESTAMP]`. In an expected line `[..]` matches any text,
and a line `...` any number of lines. `UPDATE_EXPECT=1` rewrites the
expected answers that no longer match (those that still match are kept, with
their wildcards).
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
UPDATE = "UPDATE_EXPECT" in os.environ  # the name the Rust tests read too
SPECIAL = "#@>!<\\"
DURATION = re.compile(r"(?<![\w.])\d+(?:\.\d+)? ?(?:ns|µs|us|ms|s)(?!\w)")
TIMESTAMP = re.compile(r"\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z")  # how the store shows a generation's time


@dataclass
class Step:
    """One `>` line and the lines of its expected answer, as written in the
    file (escapes and `! ` marks included: answers are compared in that form)."""

    line: str
    expected: list[str] = field(default_factory=list)


@dataclass
class Session:
    path: Path
    header: list[str]  # comments and directives, kept verbatim
    directives: list[tuple[str, str]]
    steps: list[Step]

    def directive(self, name: str, default: str | None = None) -> str | None:
        values = [v for k, v in self.directives if k == name]
        return values[-1] if values else default

    def all(self, name: str) -> list[str]:
        return [v for k, v in self.directives if k == name]


def unescape(line: str) -> str:
    return line[1:] if line.startswith("\\") and line[1:2] and line[1] in SPECIAL else line


def escape(line: str) -> str:
    return "\\" + line if line[:1] and line[0] in SPECIAL else line


def parse(path: Path) -> Session:
    header: list[str] = []
    directives: list[tuple[str, str]] = []
    steps: list[Step] = []
    for n, raw in enumerate(path.read_text().splitlines(), 1):
        if raw.startswith("> ") or raw == ">":
            steps.append(Step(raw[2:]))
        elif not steps:
            if raw.startswith("@"):
                name, _, value = raw[1:].partition(" ")
                directives.append((name, value.strip()))
            elif raw and not raw.startswith("#"):
                raise ValueError(f"{path}:{n}: before the first `>` only `#` comments and `@` directives")
            header.append(raw)
        elif raw.startswith("#"):
            raise ValueError(f"{path}:{n}: comments go before the first `>` (escape an answer's `#` as `\\#`)")
        else:
            steps[-1].expected.append(raw)
    return Session(path, header, directives, steps)


def setup(s: Session, work: Path) -> None:
    """Runs the session's file directives in `work` (created here)."""
    work.mkdir(parents=True, exist_ok=True)
    for name, value in s.directives:
        if name == "copy":
            src, dest = value.split()
            (work / dest).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(REPO / src, work / dest)
        elif name == "write":
            dest, _, text = value.partition(" ")
            (work / dest).parent.mkdir(parents=True, exist_ok=True)
            with open(work / dest, "a") as f:
                f.write(text + "\n")
        elif name == "symlink":
            link, target = value.split()
            (work / link).symlink_to(work / target)
        elif name == "mkdir":
            (work / value).mkdir(parents=True, exist_ok=True)
        elif name not in ("run", "forbid", "exit"):
            raise ValueError(f"{s.path}: unknown directive @{name}")


def expand(text: str, work: Path) -> str:
    return text.replace("{repo}", str(REPO)).replace("{work}", str(work))


def redact(text: str, work: Path) -> str:
    text = text.replace(str(work.resolve()), "{work}").replace(str(work), "{work}")
    text = text.replace(str(REPO), "{repo}")
    return DURATION.sub("[TIME]", TIMESTAMP.sub("[TIMESTAMP]", text))


def _line_matches(want: str, got: str) -> bool:
    if "[..]" not in want:
        return want == got
    pattern = ".*".join(re.escape(p) for p in want.split("[..]"))
    return re.fullmatch(pattern, got) is not None


def lines_match(want: list[str], got: list[str]) -> bool:
    """`want` (with `[..]` and `...` wildcards) against `got`, exactly: glob
    matching over lines, `...` as the star (iterative, so long outputs do not
    recurse)."""
    i = j = 0
    star, mark = -1, 0
    while j < len(got):
        if i < len(want) and want[i] == "...":
            star, mark = i, j
            i += 1
        elif i < len(want) and _line_matches(want[i], got[j]):
            i += 1
            j += 1
        elif star >= 0:  # let the last `...` take one more line
            mark += 1
            i, j = star + 1, mark
        else:
            return False
    while i < len(want) and want[i] == "...":
        i += 1
    return i == len(want)


def write_back(s: Session, answers: list[list[str]], exit_code: int | None = None) -> None:
    """Rewrites the session file: steps whose answer no longer matches get
    the actual (redacted) answer; the others keep theirs."""
    out: list[str] = []
    for raw in s.header:
        if exit_code is not None and raw.startswith("@exit"):
            continue
        out.append(raw)
    if exit_code is not None and exit_code != 0:
        out.append(f"@exit {exit_code}")
    for step, got in zip(s.steps, answers):
        out.append(f"> {step.line}".rstrip())
        keep = step.expected if lines_match(step.expected, got) else got
        out.extend(keep)
    s.path.write_text("\n".join(out) + "\n")


def diff(want: list[str], got: list[str]) -> str:
    import difflib

    return "\n".join(difflib.unified_diff(want, got, "expected", "actual", lineterm="", n=2))
