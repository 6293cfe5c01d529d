"""Per-edit latency of the warm session users drive: `netc repl --json`.

`suite.py` times the engine (`netc-bench intent`). This times what a user
waits for at the prompt (the same session `netc serve` holds,
`runtime/intent/src/warm.rs`): one `:assert`/`:retract` line written, its
answer read, then the next. The edits are generated from the intent file:

    vm        assert then retract a new VM of the first tenant on an existing
              host (in no DIP pool: the VIP placement's inputs do not move)
    dip_pool  assert then retract a DIP-pool row adding one of the first
              VIP's tenant's VMs to it (moves the placement's model)

    python3 bench/repl_edits.py --intent /tmp/M.ndl                  # 40 VM edits
    python3 bench/repl_edits.py --intent /tmp/M.ndl --kind dip_pool --edits 20 --json out.json

Prints one JSON line (p50/p90/p99/max in ms); exit 1 if an edit is refused.
A measurement of this run on this machine, never a test.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def vm_edits(text: str, n: int) -> list[str]:
    vms = re.findall(r'^vm\("([^"]+)", "[^"]+", [^,]+, [^,]+, "([^"]+)"\)\.', text, re.M)
    if not vms:
        sys.exit("repl_edits: the intent has no vm(...) facts")
    tenant = vms[0][0]
    hosts = sorted({h for _, h in vms})
    lines = []
    for i in range(n // 2):
        host = hosts[i % len(hosts)]
        fact = f'vm("{tenant}", "bench-vm{i}", 02:00:00:fe:{i // 256:02x}:{i % 256:02x}, 10.254.{i // 250}.{i % 250 + 1}, "{host}").'
        lines += [f":assert {fact}", f":retract {fact}"]
    return lines


def dip_pool_edits(text: str, n: int) -> list[str]:
    m = re.search(r'^dip_pool\(([^,]+), (\d+), (\d+), "([^"]+)", "([^"]+)", (\d+), (\d+)\)\.', text, re.M)
    if not m:
        sys.exit("repl_edits: the intent has no dip_pool(...) facts")
    vip, proto, port, tenant, member, dport, weight = m.groups()
    names = [v for v in re.findall(rf'^vm\("{re.escape(tenant)}", "([^"]+)"', text, re.M) if v != member]
    if not names:
        sys.exit(f"repl_edits: tenant {tenant} has no other VM to add to {vip}'s pool")
    lines = []
    for i in range(n // 2):
        fact = f'dip_pool({vip}, {proto}, {port}, "{tenant}", "{names[i % len(names)]}", {dport}, {weight}).'
        lines += [f":assert {fact}", f":retract {fact}"]
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--intent", required=True, type=Path)
    ap.add_argument("--kind", choices=["vm", "dip_pool"], default="vm")
    ap.add_argument("--edits", type=int, default=40, help="edits (asserts and retracts), even")
    ap.add_argument("--netc", default=os.environ.get("NETC_BIN", str(REPO / "target" / "release" / "netc")))
    ap.add_argument("--json", type=Path, help="also write the result here")
    a = ap.parse_args()
    text = a.intent.read_text()
    lines = (vm_edits if a.kind == "vm" else dip_pool_edits)(text, max(2, a.edits))
    p = subprocess.Popen(
        [a.netc, "repl", str(a.intent), "--json"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        bufsize=1,
    )
    assert p.stdin and p.stdout
    started = time.perf_counter()
    # the first answer arrives once the intent is evaluated
    p.stdin.write("?- vm(T, N, _, _, _).\n")
    p.stdin.flush()
    if not p.stdout.readline():
        sys.exit("repl_edits: netc repl exited before answering")
    start_s = time.perf_counter() - started
    lat = []
    for line in lines:
        t = time.perf_counter()
        p.stdin.write(line + "\n")
        p.stdin.flush()
        ans = json.loads(p.stdout.readline())
        lat.append((time.perf_counter() - t) * 1e3)
        if not ans.get("ok"):
            print(json.dumps({"refused": line, "answer": ans}), file=sys.stderr)
            p.kill()
            p.wait(timeout=60)
            return 1
    p.stdin.close()
    p.wait(timeout=600)
    lat.sort()

    def q(f: float) -> float:
        return round(lat[min(len(lat) - 1, int(f * len(lat)))], 2)

    out = {
        "netc": a.netc,
        "intent": str(a.intent),
        "kind": a.kind,
        "edits": len(lat),
        "start_s": round(start_s, 2),
        "p50_ms": round(statistics.median(lat), 2),
        "p90_ms": q(0.9),
        "p99_ms": q(0.99),
        "max_ms": round(lat[-1], 2),
    }
    print(json.dumps(out))
    if a.json:
        a.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
