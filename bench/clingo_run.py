"""Clingo's side of one benchmark workload, run in its own process by run.py.

Usage: python3 clingo_run.py PROGRAM.lp FACTS.lp OUTPUT_PRED [--dump FILE]

Times, through clingo's Python API (the same library as the `clingo`
executable; PyPI wheel): loading (parsing) the program and the facts text,
grounding, and solving. For a stratified Datalog program the grounder
computes the whole answer, and solving just confirms the single model.
The timed region starts after the interpreter and the clingo module are
loaded, so it is comparable with netc-bench's from-scratch region (compile,
read facts, evaluate). Prints one JSON object on stdout; the caller measures
peak RSS with wait4() (which includes the Python interpreter, ~15 MB).
"""

from __future__ import annotations

import json
import sys
import time

import clingo


def main() -> int:
    args = sys.argv[1:]
    dump = None
    if "--dump" in args:
        i = args.index("--dump")
        dump = args[i + 1]
        del args[i : i + 2]
    if len(args) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    program, facts, pred = args

    c0 = time.process_time()
    t0 = time.perf_counter()
    ctl = clingo.Control(["--warn=none"])
    ctl.load(program)
    ctl.load(facts)
    t1 = time.perf_counter()
    ctl.ground([("base", [])])
    t2 = time.perf_counter()
    models: list[list[clingo.Symbol]] = []
    ctl.solve(on_model=lambda m: models.append(m.symbols(shown=True)))
    t3 = time.perf_counter()
    cpu = time.process_time() - c0

    if len(models) != 1:
        print(f"expected exactly one answer set, got {len(models)}", file=sys.stderr)
        return 1
    rows = [s for s in models[0] if s.name == pred]
    if dump:
        lines = sorted("\t".join(str(a) for a in s.arguments) for s in rows)
        with open(dump, "w") as f:
            f.writelines(line + "\n" for line in lines)
    print(
        json.dumps(
            {
                "load_s": t1 - t0,
                "ground_s": t2 - t1,
                "solve_s": t3 - t2,
                "total_s": t3 - t0,
                "cpu_s": cpu,
                "output_size": len(rows),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
