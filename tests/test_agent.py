"""`netc agent` with real processes: a real ovs-vswitchd, real TCP listeners on
loopback as the DIPs, the agent daemon probing them, and `netc compile`
re-run on its dip_health report (this test plays the controller).

A DIP whose listener is closed leaves the host's OVS select group (the
host-side LB of a "tenant" VIP) within the configured detection time plus
one compile and push; it comes back when the listener reopens.
"""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

import pytest

from ovs_fixture import OvsHost, ensure_ovs

pytestmark = pytest.mark.netc

INTERVAL_MS, TIMEOUT_MS, FALL, RISE = 100, 100, 3, 2
DETECT = (FALL * INTERVAL_MS + TIMEOUT_MS) / 1000
SLACK = 0.5
D1_MAC, D2_MAC = "02:00:00:00:01:02", "02:00:00:00:01:03"


def listener(ip: str, port: int = 0) -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((ip, port))
    s.listen(16)
    return s


def intent(p1: int, p2: int) -> str:
    return f"""
switch("tor1", "tor", 10.255.0.1, 16384, 4096, 512).
host("h1", 192.168.0.11, "tor1", 1).
host("h2", 192.168.0.12, "tor1", 2).
tenant("acme", 5001).
vnet("acme", "lo", 127.0.0.0/8).
vm("acme", "c1", 02:00:00:00:01:01, 127.0.0.10, "h1").
vm("acme", "d1", {D1_MAC}, 127.0.0.11, "h1").
vm("acme", "d2", {D2_MAC}, 127.0.0.12, "h2").
vm_port("h1", "acme", "c1", 10).
vm_port("h1", "acme", "d1", 11).
vm_port("h2", "acme", "d2", 10).
vip("acme", 10.9.9.9, 6, 80, "tenant").
dip_pool(10.9.9.9, 6, 80, "acme", "d1", {p1}, 1).
dip_pool(10.9.9.9, 6, 80, "acme", "d2", {p2}, 1).
"""


class Controller:
    """Recompiles whenever the agent's health report changes."""

    def __init__(self, netc: str, intent: Path, health: Path, out: Path):
        self.netc, self.intent, self.health, self.out = netc, intent, health, out
        self.seen: bytes | None = None
        self.compile_s: list[float] = []

    def step(self) -> None:
        now = self.health.read_bytes() if self.health.exists() else b""
        if now == self.seen and self.out.exists():
            return
        self.seen = now
        files = [str(self.intent)] + ([str(self.health)] if now else [])
        t = time.monotonic()
        r = subprocess.run([self.netc, "compile", *files, "--out", str(self.out)],
                           capture_output=True, text=True, timeout=120)
        self.compile_s.append(time.monotonic() - t)
        assert r.returncode == 0, r.stderr


def group(h: OvsHost) -> str:
    return next((ln for ln in h.ofctl("dump-groups").splitlines() if "group_id=2000" in ln), "")


def wait(ctrl: Controller, cond, limit: float) -> float:
    """Seconds until `cond` holds, playing the controller in between. The
    condition is checked BEFORE a controller step, so a compile triggered by
    the very report being waited for is not counted in the time."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        if cond():
            return time.monotonic() - t0
        ctrl.step()
        if cond():
            return time.monotonic() - t0
        time.sleep(0.02)
    raise AssertionError(f"condition not met within {limit}s")


def test_a_closed_dip_leaves_the_select_group_and_returns(netc_bin, tmp_path):
    ensure_ovs()
    l1, l2 = listener("127.0.0.11"), listener("127.0.0.12")
    p1, p2 = l1.getsockname()[1], l2.getsockname()[1]
    (tmp_path / "intent.ndl").write_text(intent(p1, p2))
    health, out = tmp_path / "h1-health.ndl", tmp_path / "out"
    ctrl = Controller(netc_bin, tmp_path / "intent.ndl", health, out)
    ctrl.step()
    h = OvsHost("h1", "192.168.0.11", 1, tmp_path / "ovs").start()
    agent = None
    try:
        h.build([10, 11], {})
        agent = subprocess.Popen(
            [netc_bin, "agent", "--host", "h1", "--artifacts", str(out), "--bridge", h.bridge,
             "--health-out", str(health), "--interval-ms", str(INTERVAL_MS), "--timeout-ms", str(TIMEOUT_MS),
             "--fall", str(FALL), "--rise", str(RISE)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wait(ctrl, lambda: D1_MAC in group(h) and D2_MAC in group(h), 20)
        assert 'dip_health("acme", "d1", 6, %d, "up").' % p1 in health.read_text()

        l1.close()  # d1 dies
        t_health = wait(ctrl, lambda: '"d1", 6, %d, "down"' % p1 in health.read_text(), 10)
        # detection ≤ fall × interval + timeout, plus one tick of scheduling slack (shared 2-core CI)
        assert t_health <= DETECT + SLACK, f"detected after {t_health:.2f}s > {DETECT + SLACK:.2f}s"
        t_group = wait(ctrl, lambda: D1_MAC not in group(h), 10)
        budget = DETECT + SLACK + max(ctrl.compile_s) + 1.5  # detection + one compile + one agent tick and push
        assert t_health + t_group <= budget, f"left the group after {t_health + t_group:.2f}s > {budget:.2f}s"
        print(f"\nd1 reported down after {t_health:.2f}s (configured {DETECT:.2f}s), "
              f"out of the select group after {t_health + t_group:.2f}s")
        assert D2_MAC in group(h), "the healthy DIP must stay"

        l1 = listener("127.0.0.11", p1)  # d1 is back
        wait(ctrl, lambda: D1_MAC in group(h), 10)
    finally:
        if agent is not None:
            agent.terminate()
            agent.wait(timeout=10)
        h.stop()
        l1.close()
        l2.close()
