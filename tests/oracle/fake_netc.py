"""A stand-in for `netc run` implementing the CLI contract with naive_ref.

Used only to test the harness itself (tests/test_oracle_selftest.py): the
property test must pass against a correct implementation and must catch a
deliberately broken one (env FAKE_NETC_BUG=ignore_deletes|drop_change|unsorted).

    python -m oracle.fake_netc run [-F DIR] [-D DIR] [--workers N] [--updates S] FILE
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from . import naive_ref
from .model import apply_tx, fmt_tuple, parse_facts_line, parse_program, parse_script, render_facts_file


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="netc")
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("-F", default=".")
    r.add_argument("-D", default=".")
    r.add_argument("--workers", type=int, default=1)
    r.add_argument("--updates")
    r.add_argument("files", nargs="+")
    args = ap.parse_args(argv)
    bug = os.environ.get("FAKE_NETC_BUG", "")
    prog = parse_program("".join(Path(f).read_text() for f in args.files))
    db = {}
    for rel in prog.inputs:
        f = Path(args.F) / f"{rel.name}.facts"
        lines = f.read_text().splitlines() if f.exists() else []
        db[rel.name] = frozenset(parse_facts_line(ln, rel.col_types) for ln in lines if ln)
    outs = [o.name for o in prog.outputs]

    def outputs(edb):
        res = naive_ref.evaluate(prog, edb)
        return {n: res[n] for n in outs}

    cur = outputs(db)
    if args.updates:
        for n, tx in enumerate(parse_script(Path(args.updates).read_text()), 1):
            if bug == "ignore_deletes":
                tx = tuple(op for op in tx if op.sign == "+")
            db = apply_tx(db, tx)
            new = outputs(db)
            changes = []
            for rel in outs:
                changes += [("+", rel, t) for t in new[rel] - cur[rel]]
                changes += [("-", rel, t) for t in cur[rel] - new[rel]]
            changes.sort()
            if bug == "drop_change" and changes:
                new[changes[0][1]] = cur[changes[0][1]] ^ {changes[0][2]}
                changes = changes[1:]
            for sign, rel, t in changes:
                print(f"{sign}{fmt_tuple(rel, t)}")
            print(f"commit {n}")
            cur = new
    out_dir = Path(args.D)
    out_dir.mkdir(parents=True, exist_ok=True)
    for rel in outs:
        rows = sorted(cur[rel], reverse=(bug == "unsorted"))
        (out_dir / f"{rel}.csv").write_text(render_facts_file(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
