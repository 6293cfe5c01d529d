#!/usr/bin/env python3
"""netc at Andromeda scale (issue 8): the whole suite in one command, on `netc gen` S, M, L.

    python3 bench/suite.py --from-head --lock /tmp/netc-bigmem.lock --plots docs/perf   # everything, one run (~45-60 min on 2 cores)
    python3 bench/suite.py --presets S M                    # without L (still verification and clingo)
    python3 bench/suite.py --quick --skip-build             # S only, 50 changes per kind (CI-sized)
    python3 bench/suite.py --replot A.json B.json --plots docs/perf   # plots only, from earlier runs

Everything below runs in ONE invocation, so the figures are comparable:
  per preset (S; then M and L):
    1. `netc gen --preset P` (seed 1);
    2. full compile: `netc compile --out DIR` (intent -> every artifact on disk),
       wall, CPU and peak RSS from wait4();
    3. `netc-bench intent` (bench/src/intent.rs): from scratch in memory, then
       six kinds of single intent change through the warm engine (add a VM,
       remove a DIP, add an ACL rule, move a VM, add a VIP, fail a DIP), each
       timed from the commit to the rendered per-device deltas, >= 500 per kind
       where the scenario has that many (p50/p99, wall and CPU); then the same
       changes evaluated from scratch (one per kind: the ratio is the headline);
    4. verification, full and incremental: bench/verify/run.py;
  clingo on the same rules and facts for S and M (bench/clingo_intent.py), and
  flows vs VMs under the Hoverboard model at 1k / 10k / 100k VMs. Order: S's
  steps (small: they run while --lock is held by others), then M's and L's
  compile and warm changes (L's only if its compile fits), the Hoverboard
  points, verification of M and L, clingo on M.

Every step is its own process group under `prlimit --as=<--cap-gb>` with a
timeout, so a scenario that does not fit fails that step cleanly: its rc,
wall time, CPU and peak RSS are recorded with the reason and the suite goes
on. The JSON (bench/results/suite-<date>-<commit>.json) is rewritten after
every step, so an interrupted run keeps what finished. The binaries are
copied aside before the first step (later builds in the tree cannot change
them mid-run); --from-head builds them from a snapshot of HEAD instead of the
working tree (which may hold other people's uncommitted edits).
Exit 1 only if a step failed for a reason other than the memory cap or the
timeout; missed targets are reported, never fatal.
"""

from __future__ import annotations

import argparse
import datetime as dt
import fcntl
import io
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
KINDS = ("add_vm", "remove_dip", "add_acl", "move_vm", "add_vip", "fail_dip")
TARGETS = {
    "compile_s": 60.0,
    "rss_gb": 8.0,
    "p50_ms": 5.0,
    "p99_ms": 50.0,
    "speedup": 1000.0,
    "verify_incremental_p50_ms": 50.0,
}
# Seed systems' published numbers (ms), compared as ratios in docs/performance.md.
SEEDS_MS = {"Andromeda median update (30 partitions)": 184.0, "Ananta median VIP config": 75.0, "OVN add a port": 30.0}
# Exit statuses that mean "an allocation failed under the address-space cap":
# Rust aborts (SIGABRT) on a failed allocation; the kernel's OOM killer sends SIGKILL.
OOM_RCS = (-6, 134, -9, 137)
# Written into the --from-head snapshot: which commit its last build was of (reported by --skip-build).
SNAPSHOT_MARK = ".netc-suite-snapshot"


def log(msg: str) -> None:
    print(f"[suite {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def target_dir() -> Path:
    return Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))


# --- building and pinning the binaries -------------------------------------------------


def head_snapshot(dest: Path) -> str:
    """Makes dest hold exactly HEAD's files (git archive); rewrites only files whose bytes differ,
    so cargo's mtime-based fingerprints rebuild only what changed since the last snapshot."""
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    tar = subprocess.run(["git", "archive", "--format=tar", commit], cwd=ROOT, capture_output=True, check=True).stdout
    keep = set()
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        for m in t.getmembers():
            if not m.isfile():
                continue
            keep.add(m.name)
            path = dest / m.name
            data = t.extractfile(m).read()
            if path.exists() and path.read_bytes() == data:
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            path.chmod(m.mode & 0o777)
    for path in dest.rglob("*"):
        if path.is_file() and str(path.relative_to(dest)) not in keep and path.name != SNAPSHOT_MARK:
            path.unlink()
    (dest / SNAPSHOT_MARK).write_text(commit + "\n")
    return commit


def build(src: Path) -> None:
    for cmd in (
        ["cargo", "build", "--release", "-j2", "-p", "netc-cli", "-p", "netc-bench"],
        ["cargo", "build", "--release", "-j2", "-p", "netc-verify", "--example", "incremental_bench"],
    ):
        log(" ".join(cmd) + f"  (in {src})")
        subprocess.run(cmd, cwd=src, check=True)


def pin_binaries(dest: Path) -> dict[str, Path]:
    """Copies the release binaries to dest/release/ (laid out as a cargo target dir, so
    bench/verify/run.py --skip-build finds its driver there through CARGO_TARGET_DIR)."""
    rel = target_dir() / "release"
    wanted = {"netc": rel / "netc", "netc-bench": rel / "netc-bench", "incremental_bench": rel / "examples" / "incremental_bench"}
    pinned = {}
    for name, src in wanted.items():
        if not src.exists():
            continue
        to = dest / "release" / src.relative_to(rel)
        to.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, to)
        pinned[name] = to
    return pinned


# --- one step: a capped, timed process ------------------------------------------------


def run_step(cmd: list[str], cap_bytes: int, timeout: float, scratch: Path, env: dict | None = None, keep_stdout: bool = True) -> dict:
    """Runs cmd in its own process group under an address-space cap.

    Returns rc (negative: killed by that signal), wall s, CPU s and peak RSS MiB of the
    process tree (wait4 of the child: the largest of it and its waited-for descendants),
    the load average before/after, stdout (if kept) and the tail of stderr, and `outcome`:
    ok | out of memory under the cap | timeout | error. Output goes to files, so a chatty
    child can never block on a full pipe."""
    full = ["prlimit", f"--as={cap_bytes}", "--", *cmd]
    out_path, err_path = scratch / "step.stdout", scratch / "step.stderr"
    load_before = os.getloadavg()[0]
    start = time.monotonic()
    with out_path.open("wb") as fo, err_path.open("wb") as fe:
        p = subprocess.Popen(full, stdout=fo, stderr=fe, env=env, start_new_session=True)
        # Block in wait4 and let a timer kill the group at the deadline: a
        # parent polling 20 times a second wakes on a 2-core machine beside
        # the step it measures (warm p50s 30-50% higher in a probe, 2026-11-27).
        fired = threading.Event()

        def kill_group() -> None:
            fired.set()
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

        timer = threading.Timer(timeout, kill_group)
        timer.start()
        try:
            _, status, ru = os.wait4(p.pid, 0)
        finally:
            timer.cancel()
        timed_out = fired.is_set()
    p.returncode = os.waitstatus_to_exitcode(status)  # reaped by wait4; keep Popen from waiting again
    wall = time.monotonic() - start
    err = err_path.read_text(errors="replace")
    res = {
        "rc": p.returncode,
        "wall_s": wall,
        "cpu_s": ru.ru_utime + ru.ru_stime,
        "peak_rss_mib": ru.ru_maxrss / 1024,
        "load_1m_before": load_before,
        "load_1m_after": os.getloadavg()[0],
        "stderr_tail": err[-2000:],
    }
    if keep_stdout:
        res["stdout"] = out_path.read_text(errors="replace")
    if timed_out:
        res["outcome"] = f"timeout after {timeout:.0f} s (process group killed)"
    elif res["rc"] == 0:
        res["outcome"] = "ok"
    elif res["rc"] in OOM_RCS or "memory allocation" in err or "out of memory" in err.lower():
        res["outcome"] = f"out of memory under the {cap_bytes / 1e9:g} GB cap (rc {res['rc']}, peak RSS {res['peak_rss_mib']:.0f} MiB after {wall:.1f} s)"
    else:
        res["outcome"] = "error"
    return res


def failed_hard(res: dict) -> bool:
    """A failure that is not the memory cap or the timeout: a crash, a refused input."""
    return res.get("outcome") == "error"


def gen(netc: Path, preset: str, out: Path, extra: list[str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(netc), "gen", "--preset", preset, *(extra or []), "--out", str(out)], capture_output=True, text=True)


def count_flows(out_dir: Path) -> int:
    rel = out_dir / "relations" / "ovs_flow.csv"
    if not rel.exists():
        return -1
    with rel.open() as f:
        return sum(1 for _ in f)


# --- the steps -------------------------------------------------------------------------


class Suite:
    """The run: its arguments, the pinned binaries, and the JSON document saved after every step."""

    def __init__(self, args, bins: dict[str, Path], work: Path, doc: dict, out: Path):
        self.args, self.bins, self.work, self.doc, self.out = args, bins, work, doc, out
        self.cap = int(args.cap_gb * 1e9)
        self.hard_failures: list[str] = []

    def big_memory(self) -> None:
        """Takes --lock (if given) before the first step that may pass 2 GB, and keeps it to the end:
        S-sized steps run while others hold it; once taken, no one else's run slips in between."""
        lk = self.doc["lock"]
        if not self.args.lock or lk["waited_s"] is not None:
            return
        log(f"waiting for {self.args.lock}")
        t = time.monotonic()
        self.lock_fd = os.open(self.args.lock, os.O_RDWR | os.O_CREAT, 0o666)
        fcntl.flock(self.lock_fd, fcntl.LOCK_EX)
        lk["waited_s"] = time.monotonic() - t
        lk["taken_utc"] = dt.datetime.now(dt.timezone.utc).isoformat()
        log(f"holding {self.args.lock} (waited {lk['waited_s']:.0f} s)")

    def save(self) -> None:
        tmp = self.out.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self.doc, indent=1))
        tmp.replace(self.out)

    def step(self, name: str, cmd: list[str], timeout: float | None = None, env: dict | None = None, keep_stdout: bool = True) -> dict:
        log(f"{name}: start (load {os.getloadavg()[0]:.1f})")
        r = run_step(cmd, self.cap, timeout or self.args.timeout, self.work, env, keep_stdout)
        log(f"{name}: {r['outcome']} — wall {r['wall_s']:.1f} s, CPU {r['cpu_s']:.1f} s, peak RSS {r['peak_rss_mib']:.0f} MiB")
        if failed_hard(r):
            self.hard_failures.append(name)
            log(f"{name}: stderr tail:\n{r['stderr_tail'][-800:]}")
        self.doc["steps"].append({"step": name, "started_utc": dt.datetime.now(dt.timezone.utc).isoformat(), **{k: v for k, v in r.items() if k != "stdout"}})
        return r

    def preset(self, preset: str) -> None:
        a, netc = self.args, self.bins["netc"]
        if preset != "S":
            self.big_memory()
        res: dict = {"preset": preset}
        self.doc["presets"].append(res)
        intent = self.work / f"{preset}.ndl"
        g = gen(netc, preset, intent)
        if g.returncode != 0:
            res["compile"] = {"outcome": "error", "rc": g.returncode, "stderr_tail": g.stderr[-2000:], "wall_s": 0.0}
            self.hard_failures.append(f"gen {preset}")
            self.save()
            return
        res["intent_bytes"] = intent.stat().st_size
        out = self.work / f"out-{preset}"
        c = self.step(f"{preset} compile", [str(netc), "compile", "--out", str(out), str(intent)], keep_stdout=False)
        c["flows"] = count_flows(out) if c["rc"] == 0 else None
        res["compile"] = c
        shutil.rmtree(out, ignore_errors=True)
        self.save()
        if c["rc"] != 0:
            res["warm"] = {"skipped": f"the full compile did not finish: {c['outcome']}"}
        else:
            changes = a.changes if preset != "L" else a.l_changes
            samples = a.scratch_samples if preset != "L" else a.l_scratch_samples
            w = self.step(
                f"{preset} warm changes ({changes} per kind, {samples} from scratch)",
                [str(self.bins["netc-bench"]), "intent", "--intent", str(intent), "--changes", str(changes), "--scratch-samples", str(samples)],
            )
            if w["rc"] == 0:
                res["warm"] = json.loads(w["stdout"])
                res["warm"]["process"] = {k: v for k, v in w.items() if k not in ("stdout",)}
            else:
                res["warm"] = {"error": w["outcome"], **{k: v for k, v in w.items() if k != "stdout"}}
        self.save()

    def verification(self, preset: str, compiled: bool) -> None:
        a = self.args
        script = BENCH / "verify" / "run.py"
        ver = self.doc["verification"]
        if not script.exists() or "incremental_bench" not in self.bins:
            ver[preset] = {"status": "not measured: bench/verify/run.py or its driver (netc-verify example incremental_bench) is absent"}
        elif not compiled:
            ver[preset] = {"status": f"not run: {preset}'s full compile did not finish under the cap (see presets), so there are no artifacts to verify"}
        else:
            js = self.work / f"verify-{preset}.json"
            env = {**os.environ, "CARGO_TARGET_DIR": str(self.bins["netc"].parent.parent)}
            cmd = [sys.executable, str(script), "--preset", preset, "--changes", str(a.verify_changes), "--json", str(js),
                   "--work", str(self.work / f"verify-{preset}"), "--mem-limit", str(self.cap), "--skip-build"]
            if a.from_head:  # built from a snapshot of that commit; otherwise run.py records `unknown`
                cmd += ["--binaries-commit", self.doc["commit"]]
            r = self.step(f"{preset} verification (full + {a.verify_changes} incremental)", cmd, timeout=a.verify_timeout, env=env, keep_stdout=False)
            if r["rc"] == 0 and js.exists():
                ver[preset] = {"status": "ok", "result": json.loads(js.read_text()), "process": r}
            else:
                ver[preset] = {"status": f"failed: {r['outcome']}", "process": r}
            shutil.rmtree(self.work / f"verify-{preset}", ignore_errors=True)
        self.save()

    def clingo(self, preset: str) -> None:
        if preset != "S":
            self.big_memory()
        js = self.work / f"clingo-intent-{preset}.json"
        cmd = [sys.executable, str(BENCH / "clingo_intent.py"), "--netc", str(self.bins["netc"]), "--presets", preset,
               "--json", str(js), "--work", str(self.work / "clingo"), "--bigmem", "--no-lock"]
        r = self.step(f"clingo on {preset} (from scratch, every output relation compared)", cmd, keep_stdout=True)
        ci = self.doc["clingo_intent"]
        if r["rc"] in (0, 1) and js.exists():
            ci[preset] = {"status": "equal" if r["rc"] == 0 else "DIFFERENT", **json.loads(js.read_text())["scenarios"][preset], "summary": r["stdout"][-3000:]}
            if r["rc"] == 1:
                self.hard_failures.append(f"clingo {preset}: answers differ")
        else:
            ci[preset] = {"status": f"failed: {r['outcome']}", "process": r}
        shutil.rmtree(self.work / "clingo", ignore_errors=True)
        self.save()

    def hoverboard(self) -> None:
        """ovs_flow rows vs VMs with every tenant on Hoverboard (10 VMs/tenant, 10 VMs/host)."""
        netc = self.bins["netc"]
        for vms in self.args.hoverboard_vms:
            hosts = max(vms // 10, 4)
            # k=4 holds at most 2,000 hosts (250 per ToR); k=20 has 200 ToRs.
            k = "4" if hosts <= 2000 else "20"
            extra = ["--tenants", str(vms // 10), "--hosts", str(hosts), "--k", k, "--hoverboard-pct", "100", "--vips", "0", "--acls-per-tenant", "0"]
            intent = self.work / f"hb-{vms}.ndl"
            row: dict = {"vms": vms, "fat_tree_k": int(k), "hosts": hosts, "flows": None}
            self.doc["hoverboard_scaling"].append(row)
            g = gen(netc, "S", intent, extra)
            if g.returncode != 0:
                row.update({"outcome": "error", "rc": g.returncode, "stderr_tail": f"netc gen failed: {g.stderr[-1500:]}", "wall_s": 0.0})
                self.hard_failures.append(f"hoverboard gen {vms}")
                self.save()
                continue
            out = self.work / f"hb-out-{vms}"
            r = self.step(f"Hoverboard {vms} VMs compile", [str(netc), "compile", "--out", str(out), str(intent)], keep_stdout=False)
            row.update(r)
            row["flows"] = count_flows(out) if r["rc"] == 0 else None
            shutil.rmtree(out, ignore_errors=True)
            self.save()


# --- report ----------------------------------------------------------------------------


def p(d, *keys, default=None):
    for k in keys:
        if not isinstance(d, dict) or k not in d:
            return default
        d = d[k]
    return d


def speedups(w: dict) -> dict:
    """From-scratch seconds (with the change applied; else the in-memory from-scratch run) over
    warm p50, per kind where that kind was sampled from scratch, and for the median kind."""
    lat = {k: p(w, "changes", k, "latency_ms", "p50") for k in KINDS if p(w, "changes", k, "latency_ms")}
    sc = {s["kind"]: s["seconds"] for s in w.get("scratch_with_change", [])}
    scratch = sum(sc.values()) / len(sc) if sc else p(w, "from_scratch", "total_s")
    out = {"scratch_s": scratch, "scratch_is": "mean of scratch_with_change" if sc else "from_scratch.total_s (no change applied)"}
    if scratch and lat:
        p50s = sorted(lat.values())
        out["median_kind_p50_ms"] = p50s[len(p50s) // 2]
        out["speedup"] = scratch * 1e3 / out["median_kind_p50_ms"]
        out["per_kind"] = {k: sc[k] * 1e3 / lat[k] for k in lat if k in sc}
    return out


def verification_by_kind(by_kind: dict) -> str:
    """One line per verification run: each kind of update's p50 and max, and the kinds whose
    own p50 is over the target. Why: the target is checked over all updates, where cheap ACL
    changes can hide slow VM updates, and one stalled update shows only in the max."""
    target = TARGETS["verify_incremental_p50_ms"]
    cells = [f"{kind} p50 {k['p50_ms']:.1f} / max {k['max_ms']:.1f} ms ({k['changes']})" for kind, k in sorted(by_kind.items())]
    over = [kind for kind, k in sorted(by_kind.items()) if k["p50_ms"] > target]
    verdict = f"over {target:.0f} ms p50 by itself: {', '.join(over)}" if over else f"every kind within {target:.0f} ms p50"
    return "  by kind: " + "; ".join(cells) + f" — {verdict}" if cells else "  by kind: none reported"


def table(doc: dict) -> str:
    head = "| preset | compile wall s | CPU s | peak RSS GB | flows | " + " | ".join(f"{k} p50/p99 ms (CPU p50)" for k in KINDS) + " | scratch s | speedup |"
    lines = [head, "|" + "---|" * (7 + len(KINDS))]
    for r in doc["presets"]:
        c = r["compile"]
        ok = c.get("rc") == 0
        cells = [r["preset"], f"{c['wall_s']:.1f}" + ("" if ok else f" (failed: {c.get('outcome')})"), f"{c.get('cpu_s', 0):.1f}", f"{c.get('peak_rss_mib', 0) / 1024:.2f}", str(c.get("flows"))]
        w = r.get("warm", {})
        for k in KINDS:
            lat = p(w, "changes", k, "latency_ms")
            cpu = p(w, "changes", k, "cpu_ms", "p50")
            cells.append(f"{lat['p50']:.1f} / {lat['p99']:.1f}" + (f" ({cpu:.1f})" if cpu is not None else "") if lat else "—")
        s = speedups(w) if "changes" in w else {}
        cells.append(f"{s['scratch_s']:.2f}" if s.get("scratch_s") else "—")
        cells.append(f"{s['speedup']:,.0f}×" if s.get("speedup") else "—")
        lines.append("| " + " | ".join(cells) + " |")
    for pr, v in doc["verification"].items():
        inc = p(v, "result", "incremental")
        if inc:
            full = v["result"]["full"]
            lines.append(f"\nverification {pr}: full {full['seconds']:.1f} s / {full['peak_rss_mb']:.0f} MB; incremental p50 {inc['p50_ms']:.1f} ms, p99 {inc['p99_ms']:.1f} ms, max {inc['max_ms']:.1f} ms ({inc['changes']} changes)")
            lines.append(verification_by_kind(v["result"].get("by_kind", {})))
        else:
            lines.append(f"\nverification {pr}: {v['status']}")
    for name, sc in doc["clingo_intent"].items():
        if "clingo" not in sc:
            lines.append(f"\nclingo {name}: {sc['status']}")
            continue
        cl = sc["clingo"]
        lines.append(f"\nclingo {name}: {'equal' if sc['equal'] else 'DIFFERENT'} on {sc['relations_compared']} relations; clingo {cl['total_s']:.1f} s (CPU {cl['cpu_s']:.1f} s), {cl['peak_rss_mb']:.0f} MB")
    if doc["hoverboard_scaling"]:
        lines.append("\n| VMs (Hoverboard) | flows | flows/VM | compile s | peak RSS MiB |\n|---|---|---|---|---|")
        for s in doc["hoverboard_scaling"]:
            fl = s["flows"]
            lines.append(f"| {s['vms']} | {fl if fl else 'failed: ' + str(s.get('outcome'))} | {fl / s['vms']:.1f} |" if fl else f"| {s['vms']} | failed: {s.get('outcome')} | — |")
            lines[-1] += f" {s.get('wall_s', 0):.1f} | {s.get('peak_rss_mib') or 0:.0f} |"
    return "\n".join(lines)


def merged_results(files: list[Path]) -> dict:
    """One document from several suite runs, for plots only: per preset and per Hoverboard
    VM count the last file that has it wins (e.g. S and M from a whole-suite run, L from a
    later `--presets L` run). Each preset keeps the commit it was measured with."""
    presets: dict[str, dict] = {}
    hover: dict[int, dict] = {}
    for f in files:
        d = json.loads(f.read_text())
        if d.get("suite") != "issue-8":
            raise ValueError(f"{f} is not a suite result (its 'suite' field is {d.get('suite')!r})")
        for r in d["presets"]:
            presets[r["preset"]] = {**r, "commit": d.get("commit")}
        for h in d.get("hoverboard_scaling", []):
            if h.get("flows"):
                hover[h["vms"]] = h
    order = {"S": 0, "M": 1, "L": 2}
    return {
        "presets": sorted(presets.values(), key=lambda r: order.get(r["preset"], 9)),
        "hoverboard_scaling": [hover[v] for v in sorted(hover)],
    }


def plots(doc: dict, out: Path) -> list[str]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("matplotlib missing (pip install -r bench/requirements.txt): no plots")
        return []
    out.mkdir(parents=True, exist_ok=True)
    made = []
    for r in doc["presets"]:
        ch = p(r, "warm", "changes")
        if not ch:
            continue
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for k in KINDS:
            s = sorted(p(ch, k, "samples_ms", default=[]) or [])
            if s:
                ax.plot(s, [(i + 1) / len(s) for i in range(len(s))], label=f"{k} (n={len(s)})")
        ax.set_xscale("log")
        ax.set_xlabel("latency, commit → rendered device deltas (ms, log; wall)")
        ax.set_ylabel("fraction of changes")
        at = f", binaries of {r['commit']}" if r.get("commit") else ""
        ax.set_title(f"netc single intent changes, preset {r['preset']} (warm engine{at})")
        ax.axvline(5, color="grey", ls="--", lw=0.8, label="p50 target 5 ms")
        ax.axvline(50, color="grey", ls=":", lw=0.8, label="p99 target 50 ms")
        ax.legend(fontsize=8)
        f = out / f"cdf-{r['preset']}.png"
        fig.tight_layout()
        fig.savefig(f, dpi=110)
        plt.close(fig)
        made.append(str(f))
    pts = [(r["warm"]["vms"], r["compile"]["wall_s"], r["compile"]["peak_rss_mib"] / 1024) for r in doc["presets"] if r["compile"].get("rc") == 0 and "vms" in r.get("warm", {})]
    if pts:
        fig, ax = plt.subplots(1, 2, figsize=(10, 4))
        ax[0].loglog([x[0] for x in pts], [x[1] for x in pts], "o-")
        ax[0].axhline(TARGETS["compile_s"], color="grey", ls="--", lw=0.8)
        ax[0].set_xlabel("VMs")
        ax[0].set_ylabel("full compile wall s")
        ax[1].loglog([x[0] for x in pts], [x[2] for x in pts], "o-")
        ax[1].axhline(TARGETS["rss_gb"], color="grey", ls="--", lw=0.8)
        ax[1].set_xlabel("VMs")
        ax[1].set_ylabel("peak RSS GB")
        fig.suptitle("full compile scaling (presets that finished under the cap; dashed: L targets)")
        fig.tight_layout()
        f = out / "compile-scaling.png"
        fig.savefig(f, dpi=110)
        plt.close(fig)
        made.append(str(f))
    hb = [s for s in doc["hoverboard_scaling"] if s["flows"]]
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
    ap.add_argument("--changes", type=int, default=500, help="measured changes per kind, S and M (default 500)")
    ap.add_argument("--l-changes", type=int, default=500, help="measured changes per kind at L, if L compiles (default 500)")
    ap.add_argument("--scratch-samples", type=int, default=6, help="the same changes from scratch, one per kind (S, M; default 6 = every kind)")
    ap.add_argument("--l-scratch-samples", type=int, default=1, help="from-scratch samples at L (each is a whole L evaluation; default 1)")
    ap.add_argument("--cap-gb", type=float, default=10.0, help="address-space cap per process (default 10)")
    ap.add_argument("--timeout", type=float, default=1800.0, help="per step, seconds (default 1800)")
    ap.add_argument("--hoverboard-vms", type=int, nargs="*", default=[1000, 10000, 100000])
    ap.add_argument("--verify", nargs="*", default=None, choices=["S", "M", "L"], help="presets to verify, full + incremental (default: every preset run; bare --verify: none)")
    ap.add_argument("--verify-changes", type=int, default=100, help="one-VM/ACL changes re-verified incrementally per preset (default 100)")
    # L's full verification alone takes ~16 min and its 100 changes ~20 more
    # (AFF-4 re-checks a DIP VM in full): the general step timeout killed it.
    ap.add_argument("--verify-timeout", type=float, default=3600.0, help="per verification step, seconds (default 3600: L needs ~40 min)")
    ap.add_argument("--clingo", nargs="*", default=None, choices=["S", "M"], help="presets for clingo on the same rules and facts, from scratch (default: S and M if run; bare --clingo: none)")
    ap.add_argument("--quick", action="store_true", help="S only, 50 changes, one from-scratch sample; no verification, clingo or scaling")
    ap.add_argument("--skip-build", action="store_true", help="use the binaries already in $CARGO_TARGET_DIR/release")
    ap.add_argument("--from-head", action="store_true", help="build from a snapshot of HEAD (in $CARGO_TARGET_DIR/head-src), not the working tree")
    ap.add_argument("--lock", type=Path, default=None, help="a shared machine's big-memory lock: flocked before the first step that may pass 2 GB (M, L, clingo M, Hoverboard 100k) and held to the end")
    ap.add_argument("--out", type=Path, default=None, help="JSON path (default bench/results/suite-<date>-<commit>.json)")
    ap.add_argument("--plots", type=Path, default=None, help="write PNG plots into DIR")
    ap.add_argument(
        "--replot",
        type=Path,
        nargs="+",
        default=None,
        metavar="JSON",
        help="run nothing: draw the plots (into --plots) from these result files; a preset or Hoverboard point in a later file replaces an earlier one's",
    )
    args = ap.parse_args()
    if args.replot:
        if not args.plots:
            ap.error("--replot needs --plots DIR (where to write the PNGs)")
        try:
            doc = merged_results(args.replot)
        except (OSError, ValueError, KeyError) as e:
            ap.error(f"--replot: {e}")
        for f in plots(doc, args.plots):
            log(f"wrote {f}")
        return 0
    ran = [pr for pr in ("S", "M", "L") if pr in args.presets]
    if args.verify is None:
        args.verify = ran
    if args.clingo is None:
        args.clingo = [pr for pr in ran if pr in ("S", "M")]
    if args.quick:
        args.presets, ran, args.changes, args.scratch_samples, args.hoverboard_vms, args.verify, args.clingo = ["S"], ["S"], 50, 1, [], [], []

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip() or "unknown"
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True, text=True).stdout.split("\n")
    source = f"working tree at {commit}, {len([d for d in dirty if d])} files modified (by anyone) at build time"
    if args.from_head:
        src = target_dir() / "head-src"
        full = head_snapshot(src)
        commit, source = full[:7], f"snapshot of HEAD {full} (git archive)"
        build(src)
    elif not args.skip_build:
        build(ROOT)
    else:
        mark = target_dir() / "head-src" / SNAPSHOT_MARK
        snap = f"; the last --from-head snapshot there was of {mark.read_text().strip()}" if mark.exists() else ""
        source = f"prebuilt binaries in {target_dir() / 'release'} (tree at {commit}{snap})"

    with tempfile.TemporaryDirectory(prefix="netc-suite-") as tmp:
        work = Path(tmp)
        bins = pin_binaries(work / "bin")
        for b in ("netc", "netc-bench"):
            if b not in bins:
                log(f"missing {target_dir() / 'release' / b}; build first (or drop --skip-build)")
                return 1
        started = dt.datetime.now(dt.timezone.utc)
        out = args.out or BENCH / "results" / f"suite-{started:%Y-%m-%d}-{commit}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        doc = {
            "suite": "issue-8",
            "started_utc": started.isoformat(),
            "finished_utc": None,
            "commit": commit,
            "binaries": source,
            "lock": {"path": str(args.lock) if args.lock else None, "waited_s": None},
            "machine": {
                "cpus": os.cpu_count(),
                "mem_gb": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1e9, 1),
                "kernel": platform.release(),
                "loadavg_before": os.getloadavg(),
            },
            "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
            "targets": TARGETS,
            "seeds_ms": SEEDS_MS,
            "steps": [],
            "presets": [],
            "verification": {},
            "clingo_intent": {},
            "hoverboard_scaling": [],
        }
        suite = Suite(args, bins, work, doc, out)
        suite.save()
        log(f"binaries: {source}; JSON (rewritten after every step): {out}")
        # S's steps first (they run while others may hold --lock); then, under the lock, the steps
        # the targets hang on before the longer references: M and L compile + warm changes, the
        # Hoverboard points, verification of M (and L), clingo on M.
        def compiled(pr: str) -> bool:
            return any(r["preset"] == pr and r["compile"].get("rc") == 0 for r in doc["presets"])

        if "S" in ran:
            suite.preset("S")
            if "S" in args.verify:
                suite.verification("S", compiled("S"))
        if "S" in args.clingo:
            suite.clingo("S")
        for pr in (x for x in ran if x != "S"):
            suite.preset(pr)
        if args.hoverboard_vms:
            if max(args.hoverboard_vms) > 10000:
                suite.big_memory()
            suite.hoverboard()
        for pr in (x for x in ran if x != "S" and x in args.verify):
            suite.verification(pr, compiled(pr))
        for pr in (x for x in args.clingo if x != "S"):
            suite.clingo(pr)
        for r in doc["presets"]:
            if "changes" in r.get("warm", {}):
                r["speedup"] = speedups(r["warm"])
        doc["machine"]["loadavg_after"] = os.getloadavg()
        doc["finished_utc"] = dt.datetime.now(dt.timezone.utc).isoformat()
        doc["hard_failures"] = suite.hard_failures
        if args.plots:
            doc["plots"] = plots(doc, args.plots)
        suite.save()
    print(table(doc))
    log(f"wrote {out}")
    return 1 if suite.hard_failures else 0


if __name__ == "__main__":
    sys.exit(main())
