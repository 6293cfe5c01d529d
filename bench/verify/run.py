#!/usr/bin/env python3
"""Full vs incremental verification on a `netc gen` scenario (issue #6/#8).

One run: `netc gen --preset P` → `netc compile` (artifacts) → the Rust driver
`verify/examples/incremental_bench.rs`, which verifies the artifacts in full
(wall time, peak RSS) and then re-verifies one-VM changes incrementally —
`--changes N` runs N/2 iterations of: remove a VM, add it back, add an ACL
rule denying TCP/22 to it, remove the rule — and reports p50/p99 per kind
and overall, the phases of an update, what re-traced VMs met, and the ratio
full / incremental p50 (README.md has the measured runs). Every step runs under
`prlimit --as` (default 12 GB) so a scenario too large for the machine fails
cleanly instead of taking it down.

    python3 bench/verify/run.py                      # M (10k VMs), 100 iterations
    python3 bench/verify/run.py --preset L           # 100k VMs (needs L to compile)
    python3 bench/verify/run.py --preset S --changes 40 --json /tmp/v.json

Writes JSON to --json OUT (default bench/results/verify-<preset>-<date>-<commit>.json).
Exit 0 when every step ran (targets missed are reported, never fatal), 1 if a
step failed. Timing is a measurement of this run on this machine, never a test.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def target_dir() -> Path:
    return Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))


def run(cmd: list[str], limit: int, **kw) -> subprocess.CompletedProcess:
    full = ["prlimit", f"--as={limit}", *cmd] if limit else cmd
    print("+", " ".join(str(c) for c in cmd), file=sys.stderr, flush=True)
    return subprocess.run(full, text=True, **kw)


def binaries_commit(a: argparse.Namespace) -> tuple[str, str]:
    """The commit the measured binaries come from, and how that is known: the
    tree's HEAD says nothing about binaries built elsewhere (--skip-build), and
    a build here includes the working tree's uncommitted edits."""
    git = lambda *args: subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True).stdout  # noqa: E731
    head = git("rev-parse", "--short", "HEAD").strip() or "unknown"
    if a.skip_build:
        if a.binaries_commit:
            return a.binaries_commit, f"prebuilt in {target_dir() / 'release'}, from {a.binaries_commit} (as the caller said)"
        return "unknown", f"prebuilt in {target_dir() / 'release'}, commit not given (--binaries-commit); the tree was at {head}"
    modified = [line for line in git("status", "--porcelain", "--untracked-files=no").splitlines() if line]
    if modified:
        return f"{head}-dirty", f"built here from the working tree at {head} with {len(modified)} tracked files modified"
    return head, f"built here from {head} (clean tree)"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="M", choices=["S", "M", "L"])
    ap.add_argument("--changes", type=int, default=200, help="one-VM changes (alternating remove / add back)")
    ap.add_argument("--json", type=Path, help="output file")
    ap.add_argument("--work", type=Path, default=Path("/tmp/netc-bench-verify"), help="scratch dir (scenario, artifacts)")
    ap.add_argument("--mem-limit", type=int, default=12_000_000_000, help="address-space cap per step, bytes (0 = none)")
    ap.add_argument("--skip-build", action="store_true",
                    help="use the binaries already in $CARGO_TARGET_DIR/release (say which commit with --binaries-commit)")
    ap.add_argument("--binaries-commit", help="with --skip-build: the commit the prebuilt binaries were built from "
                    "(recorded as `commit` and in the file name; without it, `unknown`)")
    ap.add_argument("--pin", type=int, metavar="CPU",
                    help="run the driver under `taskset -c CPU` (recorded as `pin`): an unpinned driver migrating "
                    "between vCPUs of an idle machine ran its updates up to 2x slower (README, 2026-11-27)")
    a = ap.parse_args()

    if not a.skip_build:
        for cmd in (["cargo", "build", "--release", "-j2", "-p", "netc-cli"],
                    ["cargo", "build", "--release", "-j2", "-p", "netc-verify", "--example", "incremental_bench"]):
            if subprocess.run(cmd, cwd=REPO).returncode != 0:
                return 1
    netc = target_dir() / "release" / "netc"
    driver = target_dir() / "release" / "examples" / "incremental_bench"
    a.work.mkdir(parents=True, exist_ok=True)
    intent, out = a.work / f"{a.preset}.ndl", a.work / f"{a.preset}_out"

    g = run([str(netc), "gen", "--preset", a.preset, "--out", str(intent)], a.mem_limit, capture_output=True)
    if g.returncode:
        print(g.stderr, file=sys.stderr)
        print(f"netc gen of preset {a.preset} failed (exit {g.returncode})", file=sys.stderr)
        return 1
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.monotonic()
    c = run([str(netc), "compile", str(intent), "--out", str(out)], a.mem_limit, capture_output=True)
    compile_s = time.monotonic() - t0
    compile_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if c.returncode:
        print(c.stderr, file=sys.stderr)
        print(f"netc compile of preset {a.preset} failed (exit {c.returncode}); nothing to verify", file=sys.stderr)
        return 1
    pin = ["taskset", "-c", str(a.pin)] if a.pin is not None else []
    d = run([*pin, str(driver), "--artifacts", str(out), "--intent", str(intent), "--changes", str(a.changes),
             "--schema", str(REPO / "rules" / "schema.ndl")], a.mem_limit, capture_output=True)
    sys.stderr.write(d.stderr)
    if d.returncode:
        return 1
    res = json.loads(d.stdout)
    commit, binaries = binaries_commit(a)
    res.update({
        "preset": a.preset,
        "commit": commit,
        "binaries": binaries,
        "date": datetime.date.today().isoformat(),
        "compile": {"seconds": compile_s, "peak_rss_mb": max(compile_rss, before) / 1024},
        "machine": {"cpus": os.cpu_count(), "load_1m": os.getloadavg()[0]},
        "pin": a.pin,
        "target_100x": res["speedup_p50"] >= 100,
        "target_p50_50ms": res["incremental"]["p50_ms"] <= 50,
    })
    dest = a.json or REPO / "bench" / "results" / f"verify-{a.preset}-{res['date']}-{commit}.json"
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps(res, indent=2) + "\n")
    inc = res["incremental"]
    print(f"{a.preset}: {res['vms']} VMs, {res['flows']} flows | full {res['full']['seconds']:.1f} s, "
          f"{res['full']['peak_rss_mb']:.0f} MB | incremental p50 {inc['p50_ms']:.1f} ms p99 {inc['p99_ms']:.1f} ms "
          f"({inc['changes']} changes, p50 {inc['rechecked_vms_p50']:.0f} VMs re-checked) | "
          f"{res['speedup_p50']:.0f}x | wrote {dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
