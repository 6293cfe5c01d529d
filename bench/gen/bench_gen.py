"""Times `netc gen` (and optionally `netc compile` of its output).

    python3 bench/gen/bench_gen.py                      # preset L, 3 runs; target < 60 s
    python3 bench/gen/bench_gen.py --presets S M L --runs 5
    python3 bench/gen/bench_gen.py --compile S M        # also time `netc compile` on S and M
    python3 bench/gen/bench_gen.py --netc target/release/netc

Prints one line per measurement (wall seconds, best and median of the runs,
output size, peak RSS of the child) and a verdict for the L target (written
in under a minute). Exit code 1 only if the generator fails or L misses the
target; compile times are reported, never fatal. This is a benchmark script,
not a unit test: its numbers go into docs/gen.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TARGET_L_SECONDS = 60.0


def netc_path(arg: str | None) -> str:
    if arg:
        return arg
    if os.environ.get("NETC_BIN"):
        return os.environ["NETC_BIN"]
    subprocess.run(["cargo", "build", "--release", "-p", "netc-cli"], cwd=REPO, check=True)
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    return str(target / "release" / "netc")


def timed(cmd: list[str], timeout: float) -> tuple[float, subprocess.CompletedProcess, int]:
    """Runs cmd; returns (wall seconds, the result, the child's own peak RSS in KB)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=out, stderr=err)
        deadline = t0 + timeout
        while True:
            pid, status, usage = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                p.kill()
                os.wait4(p.pid, 0)
                raise subprocess.TimeoutExpired(cmd, timeout)
            time.sleep(0.01)
        dt = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        code = os.waitstatus_to_exitcode(status)
        r = subprocess.CompletedProcess(cmd, code, out.read().decode(), err.read().decode())
    return dt, r, usage.ru_maxrss


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--presets", nargs="+", default=["L"], choices=["S", "M", "L"])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seed", default="1")
    ap.add_argument(
        "--compile",
        nargs="*",
        default=[],
        choices=["S", "M", "L"],
        help="also time `netc compile` of these presets (once each)",
    )
    ap.add_argument("--compile-timeout", type=float, default=3600)
    ap.add_argument("--netc", help="the netc binary (default: $NETC_BIN, else cargo build --release)")
    args = ap.parse_args()
    netc = netc_path(args.netc)
    failed = False
    with tempfile.TemporaryDirectory(prefix="netc-gen-bench-") as tmp:
        for preset in args.presets:
            out = Path(tmp) / f"{preset}.ndl"
            times = []
            for _ in range(args.runs):
                dt, r, rss = timed([netc, "gen", "--preset", preset, "--seed", args.seed, "--out", str(out)], 600)
                if r.returncode != 0:
                    print(f"gen {preset}: FAILED (exit {r.returncode})\n{r.stderr}", file=sys.stderr)
                    return 1
                times.append(dt)
            size = out.stat().st_size
            best, med = min(times), statistics.median(times)
            print(
                f"gen {preset}: best {best:.2f} s, median {med:.2f} s over {len(times)} runs; "
                f"{size / 1e6:.1f} MB; peak RSS {rss / 1024:.0f} MB"
            )
            print(f"    {r.stderr.strip()}")
            if preset == "L":
                ok = med < TARGET_L_SECONDS
                failed |= not ok
                print(f"    target: preset L in < {TARGET_L_SECONDS:.0f} s -> {'MET' if ok else 'MISSED'}")
        for preset in args.compile:
            scen = Path(tmp) / f"c-{preset}.ndl"
            subprocess.run(
                [netc, "gen", "--preset", preset, "--seed", args.seed, "--out", str(scen)],
                check=True,
                capture_output=True,
            )
            try:
                dt, r, rss = timed(
                    [netc, "compile", str(scen), "--out", str(Path(tmp) / f"out-{preset}")], args.compile_timeout
                )
                verdict = "ok" if r.returncode == 0 else f"exit {r.returncode}"
                print(f"compile {preset}: {dt:.1f} s ({verdict}); peak RSS {rss / 1024:.0f} MB")
                if r.returncode != 0:
                    print("    " + "\n    ".join(r.stderr.strip().splitlines()[-5:]))
            except subprocess.TimeoutExpired:
                print(f"compile {preset}: did not finish in {args.compile_timeout:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
