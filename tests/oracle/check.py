"""Compare netc against the clingo reference for one Example.

Used by tests/test_oracle_clingo.py and by `python -m oracle.replay`.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
from pathlib import Path

from . import clingo_ref, netc_cli
from .gen import Example
from .model import Database, fmt_tuple, render_facts_file, render_script

FAILURE_ROOT = Path(os.environ.get("NETC_ORACLE_FAILURES", "/tmp/netc-oracle-failures"))

Outputs = dict[str, frozenset]


def write_case(ex: Example, d: Path) -> None:
    d.mkdir(parents=True, exist_ok=True)
    (d / "prog.dl").write_text(ex.program.souffle())
    facts = d / "facts"
    facts.mkdir(exist_ok=True)
    for r in ex.program.inputs:
        (facts / f"{r.name}.facts").write_text(render_facts_file(ex.facts_lines.get(r.name, [])))
    (d / "updates.txt").write_text(render_script(ex.transactions))
    (d / "case.json").write_text(json.dumps({"workers": list(ex.workers)}) + "\n")


def expected_states(ex: Example) -> list[Outputs]:
    return [clingo_ref.solve(ex.program, db) for db in ex.states()]


def diff(actual: Outputs, expected: Outputs) -> list[str]:
    lines: list[str] = []
    for rel in sorted(set(actual) | set(expected)):
        a = actual.get(rel, frozenset())
        e = expected.get(rel, frozenset())
        for t in sorted(e - a, key=_key):
            lines.append(f"  missing (expected, netc lacks): {fmt_tuple(rel, t)}")
        for t in sorted(a - e, key=_key):
            lines.append(f"  extra   (netc has, unexpected): {fmt_tuple(rel, t)}")
    return lines


def _key(t):
    return tuple((0, v, "") if isinstance(v, int) else (1, 0, str(v)) for v in t)


def run_netc(netc: str, ex: Example, d: Path, expected: list[Outputs]) -> list[str]:
    """Returns a list of human-readable problems (empty = netc agrees)."""
    schemas = {r.name: r.col_types for r in ex.program.outputs}
    problems: list[str] = []
    per_worker: dict[object, tuple[str, Outputs]] = {}
    for w in ex.workers:
        tag = f"w{w if w is not None else 'default'}"
        # 1. plain batch run: initial outputs
        r0 = netc_cli.run(netc_cli.netc_argv(netc, out_dir=f"out-init-{tag}", workers=w), cwd=d)
        if r0.returncode != 0 or r0.timed_out:
            problems.append(f"[{tag}] batch run failed:\n{r0.describe()}")
            continue
        init, fmt = netc_cli.read_outputs(d / f"out-init-{tag}", schemas)
        problems += [f"[{tag}] batch run output format: {p}" for p in fmt]
        dl = diff(init, expected[0])
        if dl:
            problems.append(
                f"[{tag}] initial outputs (batch run, no --updates) differ from reference:\n" + "\n".join(dl)
            )
            continue
        # 2. incremental run
        r = netc_cli.run(netc_cli.netc_argv(netc, out_dir=f"out-{tag}", workers=w, updates="updates.txt"), cwd=d)
        if r.returncode != 0 or r.timed_out:
            problems.append(f"[{tag}] --updates run failed:\n{r.describe()}")
            continue
        try:
            commits = netc_cli.parse_updates_stdout(r.stdout)
        except netc_cli.NetcOutputError as e:
            problems.append(f"[{tag}] cannot parse --updates stdout: {e}\n{r.describe()}")
            continue
        if [c.number for c in commits] != list(range(1, len(ex.transactions) + 1)):
            problems.append(
                f"[{tag}] expected commits 1..{len(ex.transactions)}, got {[c.number for c in commits]}\n{r.describe()}"
            )
            continue
        state = {k: set(v) for k, v in init.items()}
        bad = False
        for c, exp in zip(commits, expected[1:], strict=True):
            seen = set()
            for sign, rel, row in c.changes:
                where = f"[{tag}] commit {c.number}: {sign}{fmt_tuple(rel, row)}"
                if rel not in schemas:
                    problems.append(f"{where}: change for a relation that is not an output")
                    bad = True
                    continue
                if (rel, row) in seen:
                    problems.append(f"{where}: tuple changed twice in one commit")
                    bad = True
                seen.add((rel, row))
                if sign == "+":
                    if row in state[rel]:
                        problems.append(f"{where}: inserted but was already present")
                        bad = True
                    state[rel].add(row)
                else:
                    if row not in state[rel]:
                        problems.append(f"{where}: deleted but was not present")
                        bad = True
                    state[rel].discard(row)
            dl = diff({k: frozenset(v) for k, v in state.items()}, exp)
            if dl:
                problems.append(
                    f"[{tag}] after commit {c.number} (initial outputs + printed changes) differ from reference:\n"
                    + "\n".join(dl)
                    + f"\n  printed changes of commit {c.number}: "
                    + (" ".join(f"{s}{fmt_tuple(rl, rw)}" for s, rl, rw in c.changes) or "(none)")
                )
                bad = True
            if bad:
                break
        if bad:
            continue
        final, fmt = netc_cli.read_outputs(d / f"out-{tag}", schemas)
        problems += [f"[{tag}] --updates run output format: {p}" for p in fmt]
        dl = diff(final, expected[-1])
        if dl:
            problems.append(f"[{tag}] final -D outputs of the --updates run differ from reference:\n" + "\n".join(dl))
            continue
        per_worker[w] = (r.stdout, final)
    if len(per_worker) > 1:
        items = list(per_worker.items())
        (w0, (out0, fin0)) = items[0]
        for w, (out, fin) in items[1:]:
            if out != out0:
                problems.append(
                    f"--updates stdout differs between --workers {w0} and --workers {w}:\n"
                    f"--- workers {w0} ---\n{out0}\n--- workers {w} ---\n{out}"
                )
            if fin != fin0:
                problems.append(f"final outputs differ between --workers {w0} and --workers {w}")
    return problems


def describe_case(ex: Example, expected: list[Outputs] | None = None) -> str:
    parts = [
        "=== prog.dl ===",
        ex.program.souffle().rstrip(),
    ]
    for r in ex.program.inputs:
        body = render_facts_file(ex.facts_lines.get(r.name, [])).rstrip() or "(empty)"
        parts += [f"=== facts/{r.name}.facts ===", body]
    parts += ["=== updates.txt ===", render_script(ex.transactions).rstrip()]
    if expected is not None:
        parts.append("=== expected outputs (clingo) ===")
        for i, out in enumerate(expected):
            label = "initial" if i == 0 else f"after commit {i}"
            rows = [fmt_tuple(rel, t) for rel in sorted(out) for t in sorted(out[rel], key=_key)]
            parts.append(f"{label}: " + (" ".join(rows) if rows else "(all empty)"))
    return "\n".join(parts)


def commands(netc: str, ex: Example) -> str:
    lines = []
    for w in ex.workers:
        tag = f"w{w if w is not None else 'default'}"
        lines.append(shlex.join(netc_cli.netc_argv(netc, out_dir=f"out-init-{tag}", workers=w)))
        lines.append(shlex.join(netc_cli.netc_argv(netc, out_dir=f"out-{tag}", workers=w, updates="updates.txt")))
    return "\n".join(lines)


def save_failure(netc: str, ex: Example, workdir: Path, expected: list[Outputs], problems: list[str]) -> Path:
    """Copy the case to FAILURE_ROOT/<hash>/ with run.sh, expected.txt, report.txt."""
    text = (
        ex.program.souffle() + render_script(ex.transactions) + repr(sorted(ex.facts_lines.items())) + repr(ex.workers)
    )
    h = hashlib.sha1(text.encode()).hexdigest()[:12]
    dest = FAILURE_ROOT / h
    if dest.exists():
        shutil.rmtree(dest)
    FAILURE_ROOT.mkdir(parents=True, exist_ok=True)
    shutil.copytree(workdir, dest)
    (dest / "run.sh").write_text(
        '#!/bin/sh\n# re-run netc on this case (from this directory)\ncd "$(dirname "$0")"\n'
        + commands(netc, ex)
        + "\n"
    )
    (dest / "run.sh").chmod(0o755)
    (dest / "expected.txt").write_text(describe_case(ex, expected) + "\n")
    (dest / "prog.lp").write_text(clingo_ref.program_to_asp(ex.program, ex.initial_db))
    (dest / "report.txt").write_text("\n\n".join(problems) + "\n")
    latest = FAILURE_ROOT / "latest"
    if latest.is_symlink() or latest.exists():
        latest.unlink()
    latest.symlink_to(dest)
    return dest


def format_failure(netc: str, ex: Example, expected: list[Outputs], problems: list[str], saved: Path) -> str:
    return (
        f"netc disagrees with the clingo reference ({len(problems)} problem(s)).\n"
        f"Reproducer saved in {saved} (run.sh, report.txt, expected.txt, prog.lp).\n"
        f"Re-check: cd {Path(__file__).resolve().parent.parent} && python -m oracle.replay {saved}\n\n"
        + describe_case(ex, expected)
        + "\n=== commands (run in the reproducer directory) ===\n"
        + commands(netc, ex)
        + "\n=== problems ===\n"
        + "\n\n".join(problems)
    )


def db_repr(db: Database) -> str:
    return " ".join(fmt_tuple(r, t) for r in sorted(db) for t in sorted(db[r]))
