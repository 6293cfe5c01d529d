#!/usr/bin/env python3
"""netc benchmarks: from-scratch evaluation and single-fact change latency, vs clingo.

    python3 bench/run.py                 # full size; writes bench/results/<date>-<commit>.json
    python3 bench/run.py --quick         # 10k nodes / 50k edges / 100k facts, 200 changes
    python3 bench/run.py --quick --check # CI smoke: exit 1 only on a crash or different answers

For each workload (reach, join5) this script
  1. generates the facts from a seed with `netc-bench gen` (TSV for netc, ASP for clingo);
  2. runs `netc-bench run` in its own process: from-scratch evaluation through the
     engine API, then N single-fact changes, one per commit (see bench/src/drive.rs);
  3. runs clingo (PyPI, Python API, bench/clingo_run.py) in its own process on the
     same program in ASP (bench/programs/*.lp) and the same facts;
  4. compares the two answers as sets of tuples;
and then prints a table and writes JSON. Peak RSS of each process comes from
wait4(); netc-bench also reports its own VmHWM. Timing targets never change
the exit code: only crashes and differing answers do.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent

SIZES = {
    "full": {"nodes": 100_000, "edges": 500_000, "sources": 10, "join_facts": 1_000_000, "changes": 1000},
    "quick": {"nodes": 10_000, "edges": 50_000, "sources": 10, "join_facts": 100_000, "changes": 200},
}
WORKLOADS = ("reach", "join5")
OUTPUT_PRED = {"reach": "reach", "join5": "out"}
TARGET_SPEEDUP = 1000.0
TARGET_RATIO = 3.0


def log(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def target_dir() -> Path:
    return Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))


def build() -> None:
    log("cargo build --release -p netc-bench -p netc-cli")
    subprocess.run(["cargo", "build", "--release", "-p", "netc-bench", "-p", "netc-cli"], cwd=ROOT, check=True)


def run_measured(cmd: list[str]) -> tuple[int, str, float, float]:
    """Runs cmd; returns (exit status, stdout, wall seconds, peak RSS MiB of that child alone)."""
    with tempfile.TemporaryFile() as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, cwd=ROOT)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read().decode()
    return proc.returncode, text, wall, usage.ru_maxrss / 1024.0


def last_json(text: str) -> dict:
    for line in reversed(text.strip().splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise ValueError(f"no JSON object in output: {text[-500:]!r}")


def read_rows(path: Path) -> set[tuple[int, ...]]:
    with open(path) as f:
        return {tuple(int(x) for x in line.split("\t")) for line in f if line.strip()}


def gen(binary: Path, workload: str, size: dict, seed: int, data: Path) -> Path:
    d = data / workload
    if workload == "reach":
        args = ["--nodes", size["nodes"], "--edges", size["edges"], "--sources", size["sources"]]
    else:
        args = ["--facts", size["join_facts"]]
    cmd = [str(binary), "gen", workload, *map(str, args), "--seed", str(seed), "--out", str(d)]
    subprocess.run(cmd, check=True)
    return d


def bench_workload(binary: Path, workload: str, size: dict, args: argparse.Namespace, data: Path) -> dict:
    facts = gen(binary, workload, size, args.seed, data)
    res: dict = {"workload": workload, "load_before": os.getloadavg()}
    netc_dump, clingo_dump = data / f"{workload}.netc.tsv", data / f"{workload}.clingo.tsv"

    log(f"{workload}: netc")
    cmd = [str(binary), "run", "--program", str(BENCH / "programs" / f"{workload}.dl"), "--facts", str(facts)]
    cmd += ["--changes", str(args.changes or size["changes"]), "--workers", str(args.workers), "--dump", str(netc_dump)]
    rc, out, wall, rss = run_measured(cmd)
    if rc != 0:
        res["error"] = f"netc-bench exited {rc}"
        return res
    res["netc"] = last_json(out) | {"process_wall_s": wall, "process_peak_rss_mib": rss}

    if args.cli:
        log(f"{workload}: netc run (CLI, end to end)")
        cli_out = data / f"{workload}.cli"
        cmd = [str(target_dir() / "release" / "netc"), "run", "-F", str(facts), "-D", str(cli_out)]
        rc, _, wall, rss = run_measured([*cmd, str(BENCH / "programs" / f"{workload}.dl")])
        res["netc_cli"] = {"exit": rc, "process_wall_s": wall, "process_peak_rss_mib": rss}
        if rc != 0:
            res["error"] = f"netc run exited {rc}"
            return res
        res["netc_cli"]["same_as_engine_api"] = read_rows(cli_out / f"{OUTPUT_PRED[workload]}.csv") == read_rows(
            netc_dump
        )

    if args.no_clingo:
        return res
    log(f"{workload}: clingo")
    res["load_before_clingo"] = os.getloadavg()
    cmd = [sys.executable, str(BENCH / "clingo_run.py"), str(BENCH / "programs" / f"{workload}.lp")]
    cmd += [str(facts / "facts.lp"), OUTPUT_PRED[workload], "--dump", str(clingo_dump)]
    rc, out, wall, rss = run_measured(cmd)
    if rc != 0:
        res["error"] = f"clingo_run.py exited {rc}"
        return res
    res["clingo"] = last_json(out) | {"process_wall_s": wall, "process_peak_rss_mib": rss}

    log(f"{workload}: comparing answers")
    a, b = read_rows(netc_dump), read_rows(clingo_dump)
    res["answers_equal"] = a == b
    if a != b:
        res["answer_diff"] = {"netc_only": sorted(a - b)[:10], "clingo_only": sorted(b - a)[:10]}
    return res


def verdicts(r: dict) -> dict:
    n = r.get("netc", {})
    c = r.get("clingo", {})
    out = {}
    if n:
        out["speedup_p50"] = n["speedup_p50"]
        out["speedup_target_met"] = n["speedup_p50"] >= TARGET_SPEEDUP
    if n and c:
        out["ratio_netc_over_clingo"] = n["from_scratch_s"] / c["total_s"]
        out["ratio_target_met"] = out["ratio_netc_over_clingo"] <= TARGET_RATIO
        if n.get("from_scratch_cpu_s") is not None and c.get("cpu_s"):
            out["cpu_ratio_netc_over_clingo"] = n["from_scratch_cpu_s"] / c["cpu_s"]
        # clingo has no incremental mode: a change costs it a full re-run.
        out["change_p50_vs_clingo_rerun"] = c["total_s"] / (n["latency"]["p50_us"] / 1e6)
    return out


def table(results: list[dict]) -> str:
    head = [
        "workload",
        "netc scratch s",
        "clingo s",
        "netc/clingo",
        "change p50 µs",
        "p99 µs",
        "max µs",
        "speedup",
        "netc RSS MB",
        "clingo RSS MB",
        "≥1000×",
        "≤3×",
        "same answer",
    ]
    rows = [head]
    yn = {True: "yes", False: "NO", None: "-"}
    for r in results:
        n, c, v = r.get("netc", {}), r.get("clingo", {}), r.get("verdicts", {})
        lat = n.get("latency", {})

        def f(x: float | None, fmt: str) -> str:
            return "-" if x is None else format(x, fmt)

        rows.append(
            [
                r["workload"] + (f" (ERROR: {r['error']})" if "error" in r else ""),
                f(n.get("from_scratch_s"), ".2f"),
                f(c.get("total_s"), ".2f"),
                f(v.get("ratio_netc_over_clingo"), ".2f"),
                f(lat.get("p50_us"), ".0f"),
                f(lat.get("p99_us"), ".0f"),
                f(lat.get("max_us"), ".0f"),
                f(v.get("speedup_p50"), ",.0f"),
                f(n.get("process_peak_rss_mib"), ".0f"),
                f(c.get("process_peak_rss_mib"), ".0f"),
                yn[v.get("speedup_target_met")],
                yn[v.get("ratio_target_met")],
                yn[r.get("answers_equal")],
            ]
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    lines = ["| " + " | ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) + " |" for row in rows]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    except (subprocess.CalledProcessError, FileNotFoundError):
        return "unknown"


def machine() -> dict:
    mem_kib = 0
    try:
        with open("/proc/meminfo") as f:
            mem_kib = int(f.readline().split()[1])
    except OSError:
        pass
    try:
        import clingo

        clingo_version = clingo.__version__
    except ImportError:
        clingo_version = None
    rustc = subprocess.run(["rustc", "--version"], check=False, capture_output=True, text=True).stdout.strip()
    return {
        "cpus": os.cpu_count(),
        "mem_gib": round(mem_kib / 2**20, 1),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "clingo": clingo_version,
        "rustc": rustc,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small sizes (CI smoke run, under a minute)")
    ap.add_argument(
        "--check", action="store_true", help="CI mode: exit 1 on crash or different answers; no results file"
    )
    ap.add_argument("--workloads", default=",".join(WORKLOADS), help="comma-separated subset of reach,join5")
    ap.add_argument(
        "--changes", type=int, default=0, help="single-fact changes per workload (default: 1000, quick 200)"
    )
    ap.add_argument("--workers", type=int, default=1, help="netc timely workers (default 1; clingo is sequential)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--skip-build", action="store_true", help="use the existing release binary")
    ap.add_argument("--no-clingo", action="store_true", help="netc only (no ratio, no answer check)")
    ap.add_argument("--cli", action="store_true", help="also time `netc run -F -D` end to end (process wall time)")
    ap.add_argument("--data", type=Path, default=None, help="where to write generated facts (default: a temp dir)")
    ap.add_argument(
        "--out", type=Path, default=None, help="results JSON path (default bench/results/<date>-<commit>.json)"
    )
    args = ap.parse_args()

    size_name = "quick" if args.quick else "full"
    size = SIZES[size_name]
    workloads = [w for w in args.workloads.split(",") if w]
    for w in workloads:
        if w not in WORKLOADS:
            ap.error(f"unknown workload {w!r}")

    if not args.skip_build:
        try:
            build()
        except subprocess.CalledProcessError as e:
            log(f"build failed (exit {e.returncode})")
            return 2
    binary = target_dir() / "release" / "netc-bench"
    tmp = None
    if args.data is None:
        tmp = tempfile.mkdtemp(prefix="netc-bench-")
        data = Path(tmp)
    else:
        data = args.data
        data.mkdir(parents=True, exist_ok=True)
    started = dt.datetime.now()
    try:
        results = []
        for w in workloads:
            r = bench_workload(binary, w, size, args, data)
            r["verdicts"] = verdicts(r)
            results.append(r)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)

    commit = git("rev-parse", "--short", "HEAD")
    report = {
        "date": started.isoformat(timespec="seconds"),
        "commit": commit,
        "dirty": bool(git("status", "--porcelain", "--untracked-files=no")),
        "size": size_name,
        "sizes": size,
        "workers": args.workers,
        "seed": args.seed,
        "machine": machine(),
        "load_after": os.getloadavg(),
        "targets": {"speedup_p50_min": TARGET_SPEEDUP, "ratio_netc_over_clingo_max": TARGET_RATIO},
        "results": results,
    }
    print(table(results))
    print(f"size={size_name} workers={args.workers} commit={commit} load(1,5,15)={os.getloadavg()}")

    if args.out is not None or not args.check:
        out = args.out or BENCH / "results" / f"{started:%Y-%m-%d}-{commit}{'-quick' if args.quick else ''}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=2) + "\n")
        log(f"wrote {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")

    failed = [
        r["workload"]
        for r in results
        if "error" in r or r.get("answers_equal") is False or r.get("netc_cli", {}).get("same_as_engine_api") is False
    ]
    if failed:
        log(f"FAILED (crash or different answers): {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
