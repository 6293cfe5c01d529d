"""clingo as an independent reference on netc's standard intent rules (issue 8).

Usage:
  python3 bench/clingo_intent.py                       # S and M from `netc gen`
  python3 bench/clingo_intent.py --presets S           # one preset
  python3 bench/clingo_intent.py --intent examples/quickstart/intent.ndl
  python3 bench/clingo_intent.py --presets S --gen-args --tenants 5 --vms-per-tenant 4

For each scenario: `netc gen`, `netc compile` (wall, peak RSS), the
placement pinned (bench/clingo_intent/reference.py says why), `netc run -D`
for every `.output` relation of the standard rules; then the rules and the
intent facts translated to clingo (bench/clingo_intent/translate.py) and
solved from scratch in a separate process (load, ground, solve timed; peak
RSS); then every output relation compared row by row. Exit 1 if any
relation differs (the rows that differ are printed), 2 on a usage or
process error. Timings go to --json (default
bench/results/clingo-intent-<date>-<commit>.json).

Every netc and clingo process of M and L (or of any scenario with --bigmem)
runs under `flock /tmp/netc-bigmem.lock prlimit --as=10000000000` (this
machine's rule for runs that may pass 2 GB: netc compile of M peaks at
~2.7 GB); --no-lock keeps the prlimit cap but not the lock, for a caller
that already holds it (bench/suite.py --clingo).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from clingo_intent import reference  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
LOCK = ["flock", "/tmp/netc-bigmem.lock"]
CAP = ["prlimit", "--as=10000000000", "--"]


def _netc_bin(arg: str | None) -> str:
    if arg:
        return arg
    if os.environ.get("NETC_BIN"):
        return os.environ["NETC_BIN"]
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    return str(target / "release" / "netc")


def _commit() -> str:
    r = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
    return r.stdout.strip() or "unknown"


def _print_result(name: str, res: dict) -> None:
    c = res["clingo"]
    print(
        f"{name}: {res['relations_compared']} relations ({res['relations_nonempty']} non-empty), "
        f"{res['rows_compared']} rows: {'EQUAL' if res['equal'] else 'DIFFERENT'}; "
        f"clingo load {c['load_s']:.2f} s + ground {c['ground_s']:.2f} s + solve {c['solve_s']:.2f} s "
        f"= {c['total_s']:.2f} s (CPU {c['cpu_s']:.2f} s), peak RSS {c['peak_rss_mb']:.0f} MB; "
        f"netc compile {res['netc_compile']['wall_s']:.2f} s (CPU {res['netc_compile']['cpu_s']:.2f} s), "
        f"{res['netc_compile']['peak_rss_mb']:.0f} MB"
    )
    for m in res["mismatches"]:
        print(f"  MISMATCH {m['relation']}: netc {m['netc_rows']} rows, clingo {m['clingo_rows']} rows")
        for row in m["only_netc"]:
            print(f"    only netc:   {row}")
        for row in m["only_clingo"]:
            print(f"    only clingo: {row}")


def main(argv: list[str]) -> int:
    if argv[:1] == ["--worker"] and len(argv) == 2:
        return reference.worker(Path(argv[1]))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--presets", nargs="*", default=None, help="netc gen presets (default S M)")
    ap.add_argument("--intent", nargs="*", type=Path, help="intent files instead of netc gen")
    ap.add_argument("--gen-args", nargs=argparse.REMAINDER, default=[], help="extra `netc gen` knobs (last)")
    ap.add_argument("--netc", help="netc binary (default $NETC_BIN, else $CARGO_TARGET_DIR/release/netc)")
    ap.add_argument("--work", type=Path, default=Path("/tmp/netc-clingo-intent"), help="scratch directory")
    ap.add_argument("--json", type=Path, help="result JSON path")
    ap.add_argument("--bigmem", action="store_true", help="flock + prlimit around every step, whatever the preset")
    ap.add_argument("--no-lock", action="store_true", help="prlimit without flock (the caller holds the lock)")
    a = ap.parse_args(argv)
    netc = _netc_bin(a.netc)
    if not Path(netc).is_file():
        print(f"error: no netc binary at {netc}\n  = hint: build it or pass --netc / set NETC_BIN", file=sys.stderr)
        return 2
    scenarios: list[tuple[str, list[Path] | None]] = []
    if a.intent:
        scenarios.append(("intent", [p.resolve() for p in a.intent]))
    for p in a.presets if a.presets is not None else ([] if a.intent else ["S", "M"]):
        scenarios.append((p, None))
    doc: dict = {"commit": _commit(), "date": time.strftime("%Y-%m-%d %H:%M:%S"), "netc": netc, "scenarios": {}}
    ok = True
    for name, intent in scenarios:
        work = a.work / name
        if intent is None:
            gen_dir = work / "intent"
            subprocess.run(["rm", "-rf", str(gen_dir)], check=True)
            r = subprocess.run(
                [netc, "gen", "--preset", name, *a.gen_args, "--out", f"{gen_dir}/"], capture_output=True, text=True
            )
            if r.returncode != 0:
                print(f"error: netc gen --preset {name} failed:\n{r.stderr}", file=sys.stderr)
                return 2
            intent = sorted(gen_dir.glob("*.ndl"))
        wrap = None
        if a.bigmem or name in ("M", "L"):
            wrap = CAP if a.no_lock else LOCK + CAP
        try:
            res = reference.run_scenario(netc, intent, work, wrap)
        except RuntimeError as e:
            print(f"error: {name}: {e}", file=sys.stderr)
            return 2
        if a.gen_args and name != "intent":
            res["gen_args"] = a.gen_args
        doc["scenarios"][name] = res
        _print_result(name, res)
        ok = ok and res["equal"]
    out = a.json or REPO / "bench/results" / f"clingo-intent-{time.strftime('%Y-%m-%d')}-{doc['commit']}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"wrote {out}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
