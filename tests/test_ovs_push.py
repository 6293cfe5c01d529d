"""netc's OVS push against real ovs-vswitchd: atomic bundles, reconcile, bad input.

- reconcile fixes only the difference (a deleted flow, a foreign flow, a
  changed group) and a second run changes nothing;
- a rejected flow (by ovs-ofctl's parser or by the switch) fails the whole
  bundle: a clear error naming the host and the flow, the bridge unchanged;
- an unreachable bridge is a clear error naming the host;
- ovs-vswitchd killed in the middle of a large push: a clear error, and a
  later run (after the restart) reconciles the bridge to the intended state.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest

from ovs_fixture import OvsHost, ensure_ovs
from test_ovs_quickstart import QUICKSTART, compile_intent, push

pytestmark = pytest.mark.netc


def cookies(host: OvsHost) -> list[str]:
    out = host.ofctl("dump-flows", "--no-stats")
    return sorted(ln.split(",")[0].strip() for ln in out.splitlines() if "priority=" in ln)


@pytest.fixture()
def h1(tmp_path):
    ensure_ovs()
    h = OvsHost("h1", "192.168.0.11", 1, tmp_path / "ovs").start()
    try:
        h.build([10, 11], {})
        yield h
    finally:
        h.stop()


@pytest.fixture(scope="module")
def quick_out(netc_bin, tmp_path_factory):
    return compile_intent(netc_bin, tmp_path_factory.mktemp("push") / "out", QUICKSTART)


def variant(src: Path, dst: Path, extra_flow: str | None = None) -> Path:
    shutil.copytree(src, dst)
    if extra_flow:
        with open(dst / "ovs" / "h1.flows", "a") as f:
            f.write(extra_flow + "\n")
    return dst


def test_reconcile_fixes_only_the_difference(netc_bin, h1, quick_out):
    r = push(netc_bin, quick_out, "h1", h1.bridge)
    assert r.returncode == 0, r.stderr
    want = cookies(h1)
    r = push(netc_bin, quick_out, "h1", h1.bridge)
    assert "+0 -0 flows, +0 ~0 -0 groups" in r.stderr, r.stderr
    # drift: a flow deleted, a foreign flow added, the multicast group changed
    first = (quick_out / "ovs" / "h1.flows").read_text().splitlines()[5]
    cookie = first.split("cookie=")[1].split(",")[0]
    h1.ofctl("del-flows", f"cookie={cookie}/-1")
    h1.ofctl("add-flow", "table=7,priority=5,ip,actions=drop")
    h1.ofctl("mod-group", "group_id=1000,type=all,bucket=output:11")
    r = push(netc_bin, quick_out, "h1", h1.bridge)
    assert r.returncode == 0, r.stderr
    assert "+1 -1 flows, +0 ~1 -0 groups" in r.stderr, r.stderr
    assert cookies(h1) == want
    assert "output:10" in h1.ofctl("dump-groups")


def test_a_rejected_flow_leaves_the_bridge_unchanged(netc_bin, h1, quick_out, tmp_path):
    assert push(netc_bin, quick_out, "h1", h1.bridge).returncode == 0
    before = cookies(h1)
    groups = h1.ofctl("dump-groups")
    bad_flows = {
        "switch": "table=30,priority=77,cookie=0x0900000000000001,ip,actions=group:777",
        "parser": "table=30,priority=78,cookie=0x0900000000000002,ip,nw_foo=3,actions=drop",
    }
    for kind, bad in bad_flows.items():
        # the bad flow comes with a real change (a changed multicast group) in the same bundle
        art = variant(quick_out, tmp_path / kind, bad)
        (art / "ovs" / "h1.groups").write_text("group_id=1000,type=all,bucket=output:11\n")
        r = push(netc_bin, art, "h1", h1.bridge)
        assert r.returncode == 2, r.stderr
        assert "host `h1`" in r.stderr and bad in r.stderr, r.stderr
        assert "unchanged" in r.stderr
        assert cookies(h1) == before, f"{kind}: the bundle was not atomic"
        assert h1.ofctl("dump-groups") == groups


def test_an_unreachable_bridge_is_a_clear_error(netc_bin, quick_out, tmp_path):
    r = push(netc_bin, quick_out, "h1", f"unix:{tmp_path}/no-such-bridge.mgmt")
    assert r.returncode == 2
    assert "host `h1`" in r.stderr and "cannot reach bridge" in r.stderr, r.stderr


def big_artifacts(dst: Path, n: int, host: str = "h1") -> Path:
    (dst / "ovs").mkdir(parents=True)
    lines = [f"table=30,priority=100,cookie={0x0900000000000000 + i:#018x},ip,reg6=7,"
             f"nw_dst={10 + (i >> 16)}.{(i >> 8) & 255}.{i & 255}.1,actions=output:10" for i in range(n)]
    (dst / "ovs" / f"{host}.flows").write_text("\n".join(lines) + "\n")
    (dst / "ovs" / f"{host}.groups").write_text("")
    return dst


def test_ovs_restart_in_the_middle_of_a_push(netc_bin, h1, quick_out, tmp_path):
    assert push(netc_bin, quick_out, "h1", h1.bridge).returncode == 0
    art = big_artifacts(tmp_path / "big", 150_000)
    p = subprocess.Popen([netc_bin, "agent", "--host", "h1", "--artifacts", str(art), "--bridge", h1.bridge,
                          "--once"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(1.0)
        assert p.poll() is None, "the push finished before the restart; make it bigger"
        h1.kill_vswitchd()
        _, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 2, err
    assert "host `h1`" in err and "bridge" in err, err
    h1.start_vswitchd()
    # the bundle never committed: the restarted bridge holds none of the new flows
    assert not any(c.startswith("cookie=0x9") for c in cookies(h1))
    r = push(netc_bin, art, "h1", h1.bridge)
    assert r.returncode == 0, r.stderr
    assert len(cookies(h1)) == 150_000
