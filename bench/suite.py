#!/usr/bin/env python3
"""netc at Andromeda scale (issue 8): one command, scenarios S, M, L from `netc gen`.

    python3 bench/suite.py                    # S, M, L; 500 changes per kind; writes bench/results/suite-<date>-<commit>.json
    python3 bench/suite.py --presets S M      # skip L
    python3 bench/suite.py --quick            # S only, 50 changes per kind, no scaling/verify (CI-sized)
    python3 bench/suite.py --skip-build --cap-gb 10 --changes 500 --plots docs/perf

Per preset, each step in its own process under `prlimit --as=<cap>` (default
10 GB, so a scenario that does not fit fails cleanly instead of taking the
shared machine down), never two at once:
  1. `netc gen --preset P` (seed 1);
  2. full compile: `netc compile --out DIR` (intent -> every artifact on disk),
     wall time and peak RSS from wait4();
  3. `netc-bench intent` (bench/src/intent.rs): from scratch in memory, then
     six kinds of single intent change through the warm engine (add a VM,
     remove a DIP, add an ACL rule, move a VM, add a VIP, fail a DIP), each
     timed from the commit to the rendered per-device deltas; p50/p99; and a
     few of the same changes evaluated from scratch (the ratio is the headline);
  4. verification: bench/verify/run.py (full + incremental) when present.
Then flows vs VMs under the Hoverboard model (every tenant Hoverboard) at
1k / 10k / 100k VMs, a table on stdout, JSON, and PNG plots (--plots DIR).
Exit 1 only if a step crashed for a reason other than the memory cap;
missed targets are reported, never fatal.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
KINDS = ("add_vm", "remove_dip", "add_acl", "move_vm", "add_vip", "fail_dip")
TARGETS = {"compile_s": 60.0, "rss_gb": 8.0, "p50_ms": 5.0, "p99_ms": 50.0, "speedup": 1000.0}
# Seed systems' published numbers (ms), compared as ratios in docs/performance.md.
SEEDS_MS = {"Andromeda median update (30 partitions)": 184.0, "Ananta median VIP config": 75.0, "OVN add a port": 30.0}


def log(msg: str) -> None:
    print(f"[suite] {msg}", file=sys.stderr, flush=True)


def target_dir() -> Path:
    return Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))


def measured(cmd: list[str], cap_bytes: int, timeout: float, stdout=subprocess.PIPE) -> dict:
    """Runs cmd under an address-space cap; wall s, peak RSS MiB (wait4), rc, stdout."""
    full = ["prlimit", f"--as={cap_bytes}", "--", *cmd]
    start = time.monotonic()
    p = subprocess.Popen(full, stdout=stdout, stderr=subprocess.PIPE, text=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        return {"rc": None, "wall_s": time.monotonic() - start, "error": f"timeout after {timeout:.0f} s"}
    wall = time.monotonic() - start
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    res = {"rc": p.returncode, "wall_s": wall, "stdout": out or "", "stderr_tail": (err or "")[-2000:]}
    # ru_maxrss of RUSAGE_CHILDREN is the largest child so far; steps run one at a
    # time, in increasing size, so it is this step's peak unless an earlier one was larger.
    res["peak_rss_mib_children_max"] = ru.ru_maxrss / 1024
    return res


def wait4_run(cmd: list[str], cap_bytes: int, timeout: float) -> dict:
    """Like measured(), but the child's own peak RSS (os.wait4), output discarded."""
    full = ["prlimit", f"--as={cap_bytes}", "--", *cmd]
    start = time.monotonic()
    p = subprocess.Popen(full, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = start + timeout
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            p.kill()
            os.wait4(p.pid, 0)
            return {"rc": None, "wall_s": timeout, "error": "timeout"}
        time.sleep(0.05)
    wall = time.monotonic() - start
    err = p.stderr.read().decode(errors="replace")[-1500:] if p.stderr else ""
    return {
        "rc": os.waitstatus_to_exitcode(status),
        "wall_s": wall,
        "cpu_s": ru.ru_utime + ru.ru_stime,
        "peak_rss_mib": ru.ru_maxrss / 1024,
        "stderr_tail": err,
    }


def build() -> None:
    log("cargo build --release -p netc-runtime -p netc-bench")
    subprocess.run(["cargo", "build", "--release", "-j2", "-p", "netc-runtime", "-p", "netc-bench"], cwd=ROOT, check=True)


def gen(netc: Path, preset: str, out: Path, extra: list[str] | None = None) -> None:
    subprocess.run([str(netc), "gen", "--preset", preset, *(extra or []), "--out", str(out)], check=True, stdout=subprocess.DEVNULL)


def count_flows(out_dir: Path) -> int:
    rel = out_dir / "relations" / "ovs_flow.csv"
    if not rel.exists():
        return -1
    with rel.open() as f:
        return sum(1 for _ in f)


def run_preset(args, netc: Path, nbench: Path, preset: str, work: Path) -> dict:
    cap = int(args.cap_gb * 1e9)
    intent = work / f"{preset}.ndl"
    gen(netc, preset, intent)
    res: dict = {"preset": preset, "intent_bytes": intent.stat().st_size}
    log(f"{preset}: full compile (cap {args.cap_gb} GB)")
    out = work / f"out-{preset}"
    c = wait4_run([str(netc), "compile", "--out", str(out), str(intent)], cap, args.timeout)
    c["flows"] = count_flows(out) if c.get("rc") == 0 else None
    res["compile"] = c
    log(f"{preset}: compile rc={c.get('rc')} wall={c['wall_s']:.1f}s rss={c.get('peak_rss_mib', 0):.0f}MiB")
    subprocess.run(["rm", "-rf", str(out)])
    if c.get("rc") != 0:
        res["warm"] = {"skipped": "the full compile did not finish under the cap"}
        return res
    samples = args.scratch_samples if preset != "L" else 0
    log(f"{preset}: warm changes ({args.changes} per kind)")
    w = measured(
        [str(nbench), "intent", "--intent", str(intent), "--changes", str(args.changes), "--scratch-samples", str(samples)],
        cap,
        args.timeout,
    )
    if w.get("rc") == 0:
        res["warm"] = json.loads(w["stdout"])
    else:
        res["warm"] = {"error": w.get("error") or f"rc {w.get('rc')}", "stderr_tail": w.get("stderr_tail", "")}
    return res


def verification(preset: str, args, work: Path) -> dict:
    script = BENCH / "verify" / "run.py"
    if not script.exists():
        return {"status": "not measured (bench/verify/run.py absent)"}
    out = work / f"verify-{preset}.json"
    cmd = [sys.executable, str(script), "--preset", preset, "--changes", str(args.verify_changes), "--json", str(out), "--mem-limit", str(int(args.cap_gb * 1e9))]
    if args.skip_build:
        cmd.append("--skip-build")
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {"status": f"not measured (timeout after {args.timeout:.0f} s)"}
    if p.returncode != 0 or not out.exists():
        return {"status": f"failed rc={p.returncode}", "stderr_tail": p.stderr[-1500:]}
    return {"status": "ok", "result": json.loads(out.read_text())}


def hoverboard_scaling(netc: Path, args, work: Path) -> list[dict]:
    """ovs_flow rows vs VMs with every tenant on Hoverboard (10 VMs/tenant, 10 VMs/host)."""
    rows = []
    for vms in args.hoverboard_vms:
        tenants = vms // 10
        intent = work / f"hb-{vms}.ndl"
        hosts = max(vms // 10, 4)
        # k=4 holds at most 2,000 hosts (250 per ToR); k=20 has 200 ToRs.
        k = "4" if hosts <= 2000 else "20"
        extra = ["--tenants", str(tenants), "--hosts", str(hosts), "--k", k, "--hoverboard-pct", "100", "--vips", "0", "--acls-per-tenant", "0"]
        try:
            gen(netc, "S", intent, extra)
        except subprocess.CalledProcessError as e:
            rows.append({"vms": vms, "flows": None, "wall_s": 0.0, "peak_rss_mib": None, "rc": None, "error": f"netc gen failed: rc {e.returncode}"})
            continue
        out = work / f"hb-out-{vms}"
        log(f"hoverboard scaling: {vms} VMs")
        r = wait4_run([str(netc), "compile", "--out", str(out), str(intent)], int(args.cap_gb * 1e9), args.timeout)
        flows = count_flows(out) if r.get("rc") == 0 else None
        subprocess.run(["rm", "-rf", str(out)])
        rows.append({"vms": vms, "flows": flows, "wall_s": r["wall_s"], "peak_rss_mib": r.get("peak_rss_mib"), "rc": r.get("rc")})
    return rows


def p(d: dict, *keys, default=None):
    for k in keys:
        if not isinstance(d, dict) or k not in d:
            return default
        d = d[k]
    return d


def table(results: list[dict]) -> str:
    lines = ["| preset | compile wall s | compile CPU s | peak RSS GB | flows | " + " | ".join(f"{k} p50/p99 ms (CPU p50)" for k in KINDS) + " | scratch s (sampled) | speedup (scratch / p50) |"]
    lines.append("|" + "---|" * (6 + len(KINDS) + 1))
    for r in results:
        c = r["compile"]
        ok = c.get("rc") == 0
        cells = [r["preset"], f"{c['wall_s']:.1f}" + ("" if ok else f" (failed: rc {c.get('rc')})"), f"{c.get('cpu_s', 0):.1f}", f"{c.get('peak_rss_mib', 0) / 1024:.2f}", str(c.get("flows"))]
        w = r.get("warm", {})
        p50s = []
        for k in KINDS:
            lat = p(w, "changes", k, "latency_ms")
            cpu = p(w, "changes", k, "cpu_ms", "p50")
            if lat:
                cells.append(f"{lat['p50']:.2f} / {lat['p99']:.2f}" + (f" (CPU {cpu:.1f})" if cpu is not None else ""))
                p50s.append(lat["p50"])
            else:
                cells.append("—")
        sc = [s["seconds"] for s in w.get("scratch_with_change", [])]
        scratch = sum(sc) / len(sc) if sc else (c["wall_s"] if ok else None)
        cells.append(f"{scratch:.2f}" + ("" if sc else " (compile)") if scratch else "—")
        if scratch and p50s:
            med = sorted(p50s)[len(p50s) // 2]
            cells.append(f"{scratch * 1e3 / med:,.0f}×")
        else:
            cells.append("—")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plots(results: list[dict], scaling: list[dict], out: Path) -> list[str]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("matplotlib missing (pip install -r bench/requirements.txt): no plots")
        return []
    out.mkdir(parents=True, exist_ok=True)
    made = []
    for r in results:
        ch = p(r, "warm", "changes")
        if not ch:
            continue
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for k in KINDS:
            s = sorted(p(ch, k, "samples_ms", default=[]) or [])
            if s:
                ax.plot(s, [(i + 1) / len(s) for i in range(len(s))], label=k)
        ax.set_xscale("log")
        ax.set_xlabel("latency, commit → rendered device deltas (ms, log)")
        ax.set_ylabel("fraction of changes")
        ax.set_title(f"netc single intent changes, preset {r['preset']} (warm engine)")
        ax.axvline(5, color="grey", ls="--", lw=0.8)
        ax.axvline(50, color="grey", ls=":", lw=0.8)
        ax.legend(fontsize=8)
        f = out / f"cdf-{r['preset']}.png"
        fig.tight_layout()
        fig.savefig(f, dpi=110)
        plt.close(fig)
        made.append(str(f))
    pts = [(r["warm"]["vms"], r["compile"]["wall_s"], r["compile"]["peak_rss_mib"] / 1024) for r in results if r["compile"].get("rc") == 0 and "vms" in r.get("warm", {})]
    if pts:
        fig, ax = plt.subplots(1, 2, figsize=(10, 4))
        ax[0].loglog([x[0] for x in pts], [x[1] for x in pts], "o-")
        ax[0].set_xlabel("VMs")
        ax[0].set_ylabel("full compile wall s")
        ax[1].loglog([x[0] for x in pts], [x[2] for x in pts], "o-")
        ax[1].set_xlabel("VMs")
        ax[1].set_ylabel("peak RSS GB")
        fig.suptitle("full compile scaling (presets that finished under the cap)")
        fig.tight_layout()
        f = out / "compile-scaling.png"
        fig.savefig(f, dpi=110)
        plt.close(fig)
        made.append(str(f))
    hb = [s for s in scaling if s["flows"]]
    if hb:
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.loglog([s["vms"] for s in hb], [s["flows"] for s in hb], "o-", label="ovs_flow rows")
        x0, y0 = hb[0]["vms"], hb[0]["flows"]
        ax.loglog([s["vms"] for s in hb], [y0 * s["vms"] / x0 for s in hb], "--", color="grey", label="linear")
        ax.set_xlabel("VMs (all tenants Hoverboard)")
        ax.set_ylabel("OVS flows generated")
        ax.legend()
        fig.tight_layout()
        f = out / "hoverboard-flows.png"
        fig.savefig(f, dpi=110)
        plt.close(fig)
        made.append(str(f))
    return made


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--presets", nargs="+", default=["S", "M", "L"], choices=["S", "M", "L"])
    ap.add_argument("--changes", type=int, default=500, help="measured changes per kind (default 500)")
    ap.add_argument("--scratch-samples", type=int, default=2, help="from-scratch runs with one change (S, M; L uses the compile)")
    ap.add_argument("--cap-gb", type=float, default=10.0, help="address-space cap per process (default 10)")
    ap.add_argument("--timeout", type=float, default=1200.0, help="per step, seconds")
    ap.add_argument("--hoverboard-vms", type=int, nargs="*", default=[1000, 10000, 100000])
    ap.add_argument("--verify", nargs="*", default=["S"], help="presets to run bench/verify/run.py on")
    ap.add_argument("--verify-changes", type=int, default=100, help="one-VM changes re-verified incrementally per preset (default 100)")
    ap.add_argument("--quick", action="store_true", help="S only, 50 changes, no scaling or verification")
    ap.add_argument("--skip-build", action="store_true")
    ap.add_argument("--out", type=Path, default=None, help="JSON path (default bench/results/suite-<date>-<commit>.json)")
    ap.add_argument("--plots", type=Path, default=None, help="write PNG plots into DIR")
    ap.add_argument("--clingo", nargs="*", default=[], choices=["S", "M"], help="also clingo on the same rules and facts, from scratch, compared row by row (bench/clingo_intent.py)")
    args = ap.parse_args()
    if args.quick:
        args.presets, args.changes, args.scratch_samples, args.hoverboard_vms, args.verify = ["S"], 50, 1, [], []
    if not args.skip_build:
        build()
    rel = target_dir() / "release"
    netc, nbench = rel / "netc", rel / "netc-bench"
    for b in (netc, nbench):
        if not b.exists():
            log(f"missing {b}; build first (or drop --skip-build)")
            return 1
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip() or "unknown"
    started = dt.datetime.now(dt.timezone.utc)
    load_before = os.getloadavg()
    results, crashed = [], False
    with tempfile.TemporaryDirectory(prefix="netc-suite-") as tmp:
        work = Path(tmp)
        for preset in args.presets:
            r = run_preset(args, netc, nbench, preset, work)
            results.append(r)
            w = r.get("warm", {})
            if "error" in w and "memory" not in w.get("stderr_tail", "") and w.get("error", "").startswith("rc"):
                crashed = True
        ver = {pr: verification(pr, args, work) for pr in args.verify}
        scaling = hoverboard_scaling(netc, args, work) if args.hoverboard_vms else []
    doc = {
        "suite": "issue-8",
        "started_utc": started.isoformat(),
        "commit": commit,
        "machine": {"cpus": os.cpu_count(), "mem_gb": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1e9, 1), "kernel": platform.release(), "loadavg_before": load_before, "loadavg_after": os.getloadavg()},
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "targets": TARGETS,
        "seeds_ms": SEEDS_MS,
        "presets": results,
        "verification": ver,
        "hoverboard_scaling": scaling,
    }
    if args.clingo:  # the independent reference: time, RSS and equality per preset (bench/README.md)
        cj = BENCH / "results" / f"clingo-intent-{started:%Y-%m-%d}-{commit}.json"
        cmd = [sys.executable, str(BENCH / "clingo_intent.py"), "--netc", str(netc), "--presets", *args.clingo, "--json", str(cj), "--bigmem", "--no-lock"]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout * 4)
        doc["clingo_intent"] = json.loads(cj.read_text())["scenarios"] if p.returncode in (0, 1) and cj.exists() else {"error": f"rc {p.returncode}", "stderr_tail": p.stderr[-2000:]}
    print(table(results))
    if scaling:
        print("\n| VMs (Hoverboard) | flows | flows/VM | compile s |\n|---|---|---|---|")
        for s in scaling:
            fl = s["flows"]
            print(f"| {s['vms']} | {fl if fl else 'failed rc ' + str(s['rc'])} | {fl / s['vms']:.1f} |" if fl else f"| {s['vms']} | failed (rc {s['rc']}) | — |", f" {s['wall_s']:.1f} |")
    if args.plots:
        doc["plots"] = plots(results, scaling, args.plots)
    out = args.out or BENCH / "results" / f"suite-{started:%Y-%m-%d}-{commit}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1))
    log(f"wrote {out}")
    return 1 if crashed else 0


if __name__ == "__main__":
    sys.exit(main())
