"""Push speed: netc's OVS path vs `ovs-ofctl --bundle add-flows` on the same flows.

Starts a private ovsdb-server + ovs-vswitchd (tests/ovs_fixture.py), writes N
flows as a netc artifact directory (`ovs/h1.flows`), and times, on an empty
bridge each time:
  A. ovs-ofctl -O OpenFlow15 --bundle add-flows BRIDGE h1.flows
  B. netc agent --host h1 --artifacts DIR --bridge BRIDGE --once
     (netc's path: dump the bridge, diff by cookie, write and send one bundle)
and prints flows/s of each and the ratio B/A (the goal: <= 1.5).

    python3 bench/ovs/run.py --netc target/release/netc [--flows 100000] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from ovs_fixture import OvsHost  # noqa: E402


def flows(n: int) -> str:
    return "".join(
        f"table=30,priority=100,cookie={0x0200000000000000 + i:#018x},ip,reg6={5000 + i % 7},"
        f"nw_dst={10 + (i >> 16)}.{(i >> 8) & 255}.{i & 255}.1,actions=set_field:{5000 + i % 7}->tun_id,"
        f"set_field:192.168.{(i >> 8) & 255}.{i & 255}->tun_dst,output:1\n"
        for i in range(n))


def timed(cmd: list[str]) -> float:
    t = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    dt = time.perf_counter() - t
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd[:3])}... failed: {r.stderr}")
    return dt


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--netc", required=True)
    ap.add_argument("--flows", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="netc-bench-ovs-"))
    art = root / "art"
    (art / "ovs").mkdir(parents=True)
    (art / "ovs" / "h1.flows").write_text(flows(a.flows))
    (art / "ovs" / "h1.groups").write_text("")
    h = OvsHost("h1", "192.168.0.11", 1, root / "ovs").start()
    try:
        h.build([10], {})
        res = {"ofctl": [], "netc": []}
        for _ in range(a.runs):
            h.ofctl("del-flows")
            res["ofctl"].append(timed(["ovs-ofctl", "-O", "OpenFlow15", "--bundle", "add-flows", h.bridge,
                                       str(art / "ovs" / "h1.flows")]))
            n = sum(1 for ln in h.ofctl("dump-flows", "--no-stats").splitlines() if "priority=" in ln)
            assert n == a.flows, n
            h.ofctl("del-flows")
            res["netc"].append(timed([a.netc, "agent", "--host", "h1", "--artifacts", str(art),
                                      "--bridge", h.bridge, "--once"]))
            n = sum(1 for ln in h.ofctl("dump-flows", "--no-stats").splitlines() if "priority=" in ln)
            assert n == a.flows, n
        best = {k: min(v) for k, v in res.items()}
        out = {
            "flows": a.flows,
            "runs": a.runs,
            "ofctl_bundle_s": best["ofctl"],
            "netc_push_s": best["netc"],
            "ofctl_flows_per_s": round(a.flows / best["ofctl"]),
            "netc_flows_per_s": round(a.flows / best["netc"]),
            "ratio": round(best["netc"] / best["ofctl"], 3),
            "all_s": res,
        }
        print(json.dumps(out, indent=2))
        if out["ratio"] > 1.5:
            sys.exit(f"netc's push is {out['ratio']}x ovs-ofctl --bundle (goal <= 1.5x)")
    finally:
        h.stop()


if __name__ == "__main__":
    main()
