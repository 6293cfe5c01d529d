"""Re-check a saved reproducer directory against netc and the clingo reference.

    cd tests && python -m oracle.replay /tmp/netc-oracle-failures/latest [--netc BIN] [--workers 1 3]

Reads prog.dl, facts/*.facts, updates.txt (and case.json for the worker
counts), recomputes the reference with clingo (and the naive evaluator as a
cross-check) and runs netc exactly as the property test does.  Exit 0 when
netc agrees, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from . import check, naive_ref
from .gen import Example
from .model import parse_facts_line, parse_program, parse_script


def load_case(d: Path) -> Example:
    prog = parse_program((d / "prog.dl").read_text())
    facts: dict[str, list[tuple[int, ...]]] = {}
    for r in prog.inputs:
        f = d / "facts" / f"{r.name}.facts"
        lines = f.read_text().splitlines() if f.exists() else []
        facts[r.name] = [parse_facts_line(ln, r.col_types) for ln in lines if ln]
    txs = parse_script((d / "updates.txt").read_text()) if (d / "updates.txt").exists() else []
    workers: tuple[int | None, ...] = (None,)
    if (d / "case.json").exists():
        workers = tuple(json.loads((d / "case.json").read_text())["workers"])
    return Example(prog, facts, txs, workers)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("case_dir", type=Path)
    default_bin = os.environ.get("NETC_BIN", str(Path(__file__).resolve().parents[2] / "target/release/netc"))
    ap.add_argument("--netc", default=default_bin)
    ap.add_argument("--workers", nargs="*", type=int)
    args = ap.parse_args(argv)
    ex = load_case(args.case_dir)
    if args.workers:
        ex.workers = tuple(args.workers)
    expected = check.expected_states(ex)
    for db, exp in zip(ex.states(), expected, strict=True):
        naive = naive_ref.evaluate(ex.program, db)
        if {k: naive[k] for k in exp} != exp:
            print("WARNING: clingo and naive references disagree -- oracle bug?", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="netc-replay-") as tmp:
        work = Path(tmp)
        check.write_case(ex, work)
        problems = check.run_netc(args.netc, ex, work, expected)
        print(check.describe_case(ex, expected))
        print("=== commands ===")
        print(check.commands(args.netc, ex))
        if problems:
            print("=== problems ===")
            print("\n\n".join(problems))
            keep = Path(tempfile.mkdtemp(prefix="netc-replay-keep-"))
            shutil.copytree(work, keep, dirs_exist_ok=True)
            print(f"(netc outputs kept in {keep})")
            return 1
    print("OK: netc agrees with the reference")
    return 0


if __name__ == "__main__":
    sys.exit(main())
