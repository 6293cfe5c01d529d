"""Running `netc run` and parsing what it prints and writes.

Contract (Souffle-compatible batch mode plus incremental updates):
  netc run [-F DIR] [-D DIR] [--workers N] [--updates SCRIPT] FILE...
  * each `.output R` -> DIR/R.csv, tab-separated, rows sorted
  * with --updates: after each `commit.` the commit's output changes are printed
    to stdout as `+R(1, 2)` / `-R(1, 2)`, then `commit N`.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from .model import ParseError, parse_value, split_args

Value = int | str
Row = tuple[Value, ...]

NETC_TIMEOUT = float(os.environ.get("NETC_ORACLE_TIMEOUT", 60))


class NetcOutputError(Exception):
    pass


@dataclass
class RunResult:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    timed_out: bool = False

    def describe(self) -> str:
        return (
            f"$ {shlex.join(self.argv)}\n"
            f"exit code: {'TIMEOUT' if self.timed_out else self.returncode}\n"
            f"--- stdout ---\n{_clip(self.stdout)}\n--- stderr ---\n{_clip(self.stderr)}"
        )


def _clip(s: str, n: int = 4000) -> str:
    return s if len(s) <= n else s[:n] + f"\n... ({len(s) - n} more chars)"


def run(argv: list[str], cwd: Path, timeout: float = NETC_TIMEOUT) -> RunResult:
    try:
        p = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
        return RunResult(argv, -1, out, err, timed_out=True)
    return RunResult(argv, p.returncode, p.stdout, p.stderr)


def netc_argv(
    netc: str,
    facts_dir: str = "facts",
    out_dir: str = "out",
    prog: str = "prog.dl",
    workers: int | None = None,
    updates: str | None = None,
) -> list[str]:
    argv = [netc, "run", "-F", facts_dir, "-D", out_dir]
    if workers is not None:
        argv += ["--workers", str(workers)]
    if updates is not None:
        argv += ["--updates", updates]
    argv.append(prog)
    return argv


# --------------------------------------------------------------------------
# CSV outputs


def read_csv(path: Path, types: tuple[str, ...]) -> list[Row]:
    """Rows of a tab-separated output; symbols verbatim, numbers parsed."""
    rows: list[Row] = []
    for ln, line in enumerate(path.read_text().splitlines(), 1):
        fields = line.split("\t")
        if len(fields) != len(types):
            raise NetcOutputError(f"{path}:{ln}: expected {len(types)} fields, got {len(fields)}: {line!r}")
        row: list[Value] = []
        for f, ty in zip(fields, types, strict=True):
            if ty == "symbol":
                row.append(f)
            else:
                try:
                    row.append(int(f))
                except ValueError:
                    raise NetcOutputError(f"{path}:{ln}: {f!r} is not a number") from None
        rows.append(tuple(row))
    return rows


def _sort_key(row: Row):
    return tuple((0, v, "") if isinstance(v, int) else (1, 0, v) for v in row)


def read_outputs(out_dir: Path, schemas: dict[str, tuple[str, ...]]) -> tuple[dict[str, frozenset[Row]], list[str]]:
    """Contents of every output relation plus a list of format problems
    (missing file, unsorted rows, duplicate rows)."""
    contents: dict[str, frozenset[Row]] = {}
    problems: list[str] = []
    for name, types in sorted(schemas.items()):
        path = out_dir / f"{name}.csv"
        if not path.exists():
            problems.append(f"missing output file {path.name}")
            contents[name] = frozenset()
            continue
        rows = read_csv(path, types)
        if len(set(rows)) != len(rows):
            problems.append(f"{path.name}: duplicate rows")
        if rows != sorted(rows, key=_sort_key):
            problems.append(f"{path.name}: rows not sorted")
        contents[name] = frozenset(rows)
    return contents, problems


# --------------------------------------------------------------------------
# --updates stdout

_CHANGE_RE = re.compile(r"([+-])\s*([A-Za-z_][A-Za-z0-9_.]*)\((.*)\)\.?")
_COMMIT_RE = re.compile(r"commit\s+(\d+)\.?")


@dataclass
class Commit:
    number: int
    changes: list[tuple[str, str, Row]] = field(default_factory=list)  # (sign, rel, row)


def parse_updates_stdout(text: str) -> list[Commit]:
    commits: list[Commit] = []
    pending: list[tuple[str, str, Row]] = []
    for ln, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        m = _COMMIT_RE.fullmatch(line)
        if m:
            commits.append(Commit(int(m.group(1)), pending))
            pending = []
            continue
        m = _CHANGE_RE.fullmatch(line)
        if m:
            try:
                row = tuple(parse_value(a) for a in split_args(m.group(3))) if m.group(3).strip() else ()
            except ParseError as e:
                raise NetcOutputError(f"stdout line {ln}: {e}") from None
            pending.append((m.group(1), m.group(2), row))
            continue
        raise NetcOutputError(f"stdout line {ln}: cannot parse {raw!r}")
    if pending:
        raise NetcOutputError(f"{len(pending)} change line(s) after the last `commit N` line")
    return commits
