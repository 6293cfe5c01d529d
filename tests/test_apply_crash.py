"""`kill -9` of `netc apply` at random points, 60 times, against real OVS.

After every kill, the next `netc apply` must converge: exit 0, the store
consistent (SQLite integrity, no journal left, no half-written generation),
and every real bridge holding exactly the flows and groups of the last
committed generation. The kill lands anywhere in an apply: while compiling,
verifying, between the journal and the first push, between two bridges'
bundles, or around the commit; the delays are spread over an apply's
measured duration so every phase is hit many times.
"""

from __future__ import annotations

import random
import signal
import subprocess
import time

from ovs_fixture import Fabric
from test_apply import NETC, assert_bridges_hold, assert_store_consistent, db, netc, write_inventory

TRIALS = 60

# A small intent (two hosts, one tenant) and a variant: the kills alternate
# between them so an interrupted apply really leaves a mix of generations.
SMALL = """\
switch("tor1", "tor", 10.255.0.1, 16384, 4096, 512).
host("h1", 192.168.0.11, "tor1", 1).
host("h2", 192.168.0.12, "tor1", 2).
host("h3", 192.168.0.13, "tor1", 3).
tenant("acme", 5001).
vnet("acme", "prod", 10.1.0.0/16).
subnet("acme", "prod", "web", 10.1.1.0/24, 10.1.1.1).
vm("acme", "web1", 02:00:00:00:01:01, 10.1.1.11, "h1").
vm("acme", "web2", 02:00:00:00:01:02, 10.1.1.12, "h2").
vm("acme", "web3", 02:00:00:00:01:03, 10.1.1.13, "h3").
vm_port("h1", "acme", "web1", 10).
vm_port("h2", "acme", "web2", 10).
vm_port("h3", "acme", "web3", 10).
acl("acme", "no-ssh", 150, 0.0.0.0/0, 10.1.1.0/24, 6, 22, 22, "deny").
acl_default("acme", "allow").
"""
VARIANTS = [
    SMALL,
    SMALL.replace('"no-ssh", 150, 0.0.0.0/0, 10.1.1.0/24, 6, 22, 22', '"no-ssh", 150, 0.0.0.0/0, 10.1.1.0/24, 6, 2222, 2222'),
    SMALL.replace('vm_port("h3", "acme", "web3", 10).', 'vm_port("h3", "acme", "web3", 11).'),
]


def test_kill_9_at_random_points_then_apply_converges(tmp_path):
    rng = random.Random(20261121)
    hosts = {"h1": ("192.168.0.11", [10]), "h2": ("192.168.0.12", [10]), "h3": ("192.168.0.13", [10, 11])}
    fabric = Fabric(hosts)
    try:
        state = tmp_path / "state"
        inv = write_inventory(tmp_path / "inv.toml", {h: fabric.hosts[h].bridge for h in hosts})
        intents = []
        for i, text in enumerate(VARIANTS):
            p = tmp_path / f"v{i}.ndl"
            p.write_text(text)
            intents.append(p)

        t0 = time.monotonic()
        r = netc("apply", "--state", state, "--inventory", inv, intents[0])
        duration = time.monotonic() - t0
        assert r.returncode == 0, r.stderr
        assert_bridges_hold(fabric, state)

        killed_mid = interrupted_seen = 0
        current = 0
        deadline = time.monotonic() + 420  # a bound, far above the expected ~90 s
        # At least TRIALS kills; on a loaded machine the journal's window can
        # be missed by chance, so keep going (bounded) until it was hit 5 times.
        trial = 0
        while trial < TRIALS or (interrupted_seen < 5 and trial < 3 * TRIALS):
            assert time.monotonic() < deadline, f"only {trial} trials in time"
            current = (current + rng.randrange(1, len(intents))) % len(intents)
            p = subprocess.Popen([NETC, "apply", "--state", str(state), "--inventory", str(inv), str(intents[current])],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(rng.uniform(0.0, duration * 1.2))
            p.send_signal(signal.SIGKILL)
            rc = p.wait(timeout=30)
            killed_mid += rc == -signal.SIGKILL
            with db(state) as c:
                interrupted_seen += c.execute("SELECT count(*) FROM applying").fetchone()[0]

            # converge: the same intent, or the other one, applied to the end
            target = intents[rng.randrange(len(intents))]
            t0 = time.monotonic()
            r = netc("apply", "--state", state, "--inventory", inv, target)
            # the next kill's delay follows how long an apply takes right now
            duration = 0.5 * duration + 0.5 * (time.monotonic() - t0)
            assert r.returncode == 0, f"trial {trial}: {r.stdout}{r.stderr}"
            assert_store_consistent(state)
            g = assert_bridges_hold(fabric, state)
            with db(state) as c:
                files = [row[0] for row in c.execute("SELECT path FROM intent_file WHERE gen = ?", (g,))]
            assert files == [str(target)], f"trial {trial}: the last generation is not the converging apply's"
            current = intents.index(target)
            trial += 1

        # the kills must really have interrupted applies, and some after the journal was written
        assert killed_mid >= TRIALS // 2, killed_mid
        assert interrupted_seen >= 5, interrupted_seen
        r = netc("status", "--state", state)
        assert r.returncode == 0, r.stdout + r.stderr
    finally:
        fabric.stop()
