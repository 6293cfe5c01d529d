"""`netc run -D -` for tests: evaluate rule/fact files, read every relation back.

`netc run -D -` prints each relation Souffle-style: a `-----` line, the
name, its attribute names (tab-separated; an empty line for a nullary
relation), a `=====` line, its rows (tab-separated), and a closing `=====`
line.
"""

from __future__ import annotations

import re
import subprocess

_BLOCK = re.compile(r"-{5,}\n(\S+)\n(?:[^=\n][^\n]*\n|\n)?={5,}\n(.*?)={5,}", re.S)


def parse_dump(text: str) -> dict[str, list[tuple[str, ...]]]:
    """Relation name -> its rows in printed order, each a tuple of column texts."""
    return {m.group(1): [tuple(x.split("\t")) for x in m.group(2).splitlines() if x] for m in _BLOCK.finditer(text)}


def run_dump(netc_bin: str, files: list[str], timeout: int = 300) -> dict[str, list[tuple[str, ...]]]:
    """`netc run -D - FILES...`, asserting it exits 0 (its stderr in the message)."""
    r = subprocess.run([netc_bin, "run", "-D", "-", *files], capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f"netc run failed (exit {r.returncode}):\n{r.stderr[-4000:]}"
    return parse_dump(r.stdout)
