"""The embedded default: the local OVS lab (`netc lab`) and `netc trace`, in real OVS.

Each test starts its own lab in a temp state directory (one ovsdb-server +
ovs-vswitchd --enable-dummy per quickstart host), and stops it with
`netc lab stop`, then checks every pid it saw is gone.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from ovs_fixture import ensure_ovs

pytestmark = pytest.mark.netc

REPO = Path(__file__).resolve().parent.parent
QUICKSTART = REPO / "examples" / "quickstart" / "intent.ndl"


def netc(bin_: str, *args: str, env=None, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([bin_, *args], capture_output=True, text=True, timeout=300, env=env, cwd=cwd)


def pids(bin_: str, state: Path) -> dict[str, tuple[int | None, int | None]]:
    r = netc(bin_, "lab", "status", "--state", str(state), "--json")
    assert r.returncode == 0, r.stderr
    return {h["host"]: (h["ovsdb_server"], h["ovs_vswitchd"]) for h in json.loads(r.stdout)["hosts"]}


def alive(pid: int) -> bool:
    """A stopped daemon may linger as a zombie until init reaps it: that is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def stop(bin_: str, state: Path) -> None:
    seen = [p for pair in pids(bin_, state).values() for p in pair if p]
    r = netc(bin_, "lab", "stop", "--state", str(state), "--json")
    assert r.returncode == 0, r.stderr
    assert sorted(json.loads(r.stdout)["stopped"]) == sorted(seen)
    assert not [p for p in seen if alive(p)]
    assert not (state / "lab").exists()


@pytest.fixture(scope="module")
def lab(netc_bin, tmp_path_factory):
    ensure_ovs()
    state = tmp_path_factory.mktemp("lab") / "st"
    r = netc(netc_bin, "lab", "up", str(QUICKSTART), "--state", str(state))
    try:
        assert r.returncode == 0, r.stderr
        yield state
    finally:
        stop(netc_bin, state)


def trace(bin_: str, state: Path, *args: str) -> tuple[int, dict]:
    r = netc(bin_, "trace", *args, "--state", str(state), "--json")
    assert r.returncode in (0, 1), r.stderr
    return r.returncode, json.loads(r.stdout)


def test_lab_up_is_idempotent(netc_bin, lab):
    before = pids(netc_bin, lab)
    assert set(before) == {"h1", "h2", "h3", "h4"}
    assert all(a and b and alive(a) and alive(b) for a, b in before.values())
    r = netc(netc_bin, "lab", "up", str(QUICKSTART), "--state", str(lab))
    assert r.returncode == 0, r.stderr
    assert pids(netc_bin, lab) == before


def test_same_tenant_is_delivered_over_vxlan_with_its_vni(netc_bin, lab):
    rc, t = trace(netc_bin, lab, "acme/web1", "acme/web2", "tcp/80")
    assert rc == 0 and t["reached"]
    assert [h["host"] for h in t["hops"]] == ["h1", "h3"]
    assert t["hops"][1]["ingress"]["tunnel"] == [5001, "192.168.0.11", "192.168.0.13"]
    assert t["fates"] == [{"fate": "delivered", "host": "h3", "ofport": 10, "tenant": "acme", "vm": "web2"}]
    assert all(tb["cookie"] for h in t["hops"] for tb in h["tables"])


def test_acl_denied_pair_is_dropped_at_the_acl_table(netc_bin, lab):
    rc, t = trace(netc_bin, lab, "web1", "db1", "tcp/22")
    assert rc == 1 and not t["reached"]
    [fate] = t["fates"]
    assert (fate["fate"], fate["host"], fate["table"]) == ("dropped", "h1", 20)
    assert int(fate["cookie"], 16) >> 56 == 3  # concern 3 = acl.ndl
    rc, _ = trace(netc_bin, lab, "web1", "db1", "tcp/5432")
    assert rc == 0  # the control: the allowed port gets through


def test_a_drop_flow_added_by_hand_is_named_not_called_a_table_miss(netc_bin, lab):
    """ofproto/trace prints no cookie for a flow added by hand (cookie 0):
    the trace used to say "no flow matched (table miss)" for it. It names
    the flow that dropped the packet as one netc did not write."""
    r = netc(netc_bin, "lab", "status", "--state", str(lab), "--json")
    bridge = {h["host"]: h["bridge"] for h in json.loads(r.stdout)["hosts"]}["h1"]
    flow = "table=0,priority=65000,ip,nw_dst=10.1.1.12"
    add = subprocess.run(["ovs-ofctl", "-O", "OpenFlow15", "add-flow", bridge, flow + ",actions=drop"],
                         capture_output=True, text=True, timeout=60)
    assert add.returncode == 0, add.stderr
    try:
        r = netc(netc_bin, "trace", "acme/web1", "acme/web2", "tcp/80", "--state", str(lab))
        assert r.returncode == 1, r.stdout + r.stderr
        assert "table miss" not in r.stdout, r.stdout
        assert "dropped on h1 at table 0 by a flow netc did not write" in r.stdout, r.stdout
        assert "cookie 0: ip,nw_dst=10.1.1.12" in r.stdout, r.stdout
    finally:
        subprocess.run(["ovs-ofctl", "-O", "OpenFlow15", "--strict", "del-flows", bridge, flow],
                       capture_output=True, timeout=60)
    rc, _ = trace(netc_bin, lab, "acme/web1", "acme/web2", "tcp/80")
    assert rc == 0  # the control: without the hand-added flow it is delivered


def test_the_lab_switch_argument_works_from_anywhere(netc_bin, lab, tmp_path):
    """`lab status` names each bridge by an absolute `unix:` path, which
    ovs-ofctl can open from any directory (it resolves a relative one
    against its own run directory)."""
    r = netc(netc_bin, "lab", "status", "--state", str(lab), "--json")
    for h in json.loads(r.stdout)["hosts"]:
        assert h["bridge"].startswith("unix:/"), h
    dump = subprocess.run(["ovs-ofctl", "-O", "OpenFlow15", "dump-flows", h["bridge"]], capture_output=True,
                          text=True, timeout=60, cwd=tmp_path)
    assert dump.returncode == 0 and "cookie=" in dump.stdout, dump.stderr


@pytest.mark.parametrize("src,dst", [("globex/app1", "acme/web2"), ("acme/web1", "globex/app2")])
def test_cross_tenant_with_overlapping_addresses_is_never_delivered(netc_bin, lab, src, dst):
    rc, t = trace(netc_bin, lab, src, dst, "tcp/80")
    assert rc == 1 and not t["reached"]
    tenant = src.split("/")[0]
    assert all(f.get("tenant", tenant) == tenant for f in t["fates"])


@pytest.mark.parametrize("sport", ["40001", "40002", "40003"])
def test_vip_reaches_a_dip_through_the_mux(netc_bin, lab, sport):
    rc, t = trace(netc_bin, lab, "db1", "203.0.113.10", "tcp/80", "--sport", sport)
    assert rc == 0
    mux = [h["ingress"]["mux"] for h in t["hops"] if h["ingress"]["mux"]]
    assert len(mux) == 1 and mux[0]["dip"] in ("10.1.1.11", "10.1.1.12")
    [fate] = t["fates"]
    assert fate["fate"] == "delivered" and fate["tenant"] == "acme"
    assert fate["vm"] == {"10.1.1.11": "web1", "10.1.1.12": "web2"}[mux[0]["dip"]]


def _appctl(state: Path, host: str, *args: str) -> str:
    ctl = state / "lab" / host / "vswitchd.ctl"
    r = subprocess.run(["ovs-appctl", "-t", str(ctl), "--timeout=20", *args],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    return r.stdout


def _sent(state: Path, host: str, port: str) -> list:
    from scapy.all import rdpcap

    p = state / "lab" / host / f"{port}.pcap"
    return list(rdpcap(str(p))) if p.exists() and p.stat().st_size > 24 else []


def _until(what, timeout: float = 10.0):
    """Polls `what()` until it is truthy or the deadline passes (bounded)."""
    deadline = time.monotonic() + timeout
    while True:
        got = what()
        if got or time.monotonic() > deadline:
            return got
        time.sleep(0.1)


def test_underlay_routes_cover_every_peer(netc_bin, lab):
    routes = _appctl(lab, "h1", "ovs/route/show")
    assert re.search(r"User: 192\.168\.0\.0/24 dev br-phy SRC 192\.168\.0\.11", routes), routes
    out = _appctl(lab, "h1", "ofproto/trace", "br-int",
                  "in_port=10,tcp,dl_src=02:00:00:00:01:01,dl_dst=fe:ff:ff:ff:ff:ff,"
                  "nw_src=10.1.1.11,nw_dst=10.1.1.12,tp_src=40000,tp_dst=80,nw_ttl=64")
    assert "native tunnel routing failed" not in out
    assert "tunneling from aa:55:aa:55:00:01 192.168.0.11 to aa:55:aa:55:00:03 192.168.0.13" in out, out
    assert "tnl_push(" in out.split("Datapath actions:")[1]


def test_a_real_packet_crosses_the_underlay_between_lab_hosts(netc_bin, lab):
    """web1 (h1, port 10) -> web2 (h3, port 10): the frame injected at h1's VM
    port leaves h1's p0 VXLAN-encapsulated (VNI 5001, 192.168.0.11 -> .13);
    handed to h3's p0 (the wire between the simulated hosts), h3 decapsulates
    it and delivers the inner packet on web2's port with the router's MAC."""
    from scapy.all import IP, TCP, UDP, Ether, raw
    from scapy.layers.vxlan import VXLAN

    payload = b"netc-underlay-%d" % os.getpid()
    frame = (Ether(src="02:00:00:00:01:01", dst="fe:ff:ff:ff:ff:ff")
             / IP(src="10.1.1.11", dst="10.1.1.12", ttl=64) / TCP(sport=40000, dport=80) / payload)
    mine = lambda f: payload in raw(f)  # noqa: E731
    _appctl(lab, "h1", "netdev-dummy/receive", "vm10", raw(frame).hex())
    wire = _until(lambda: [f for f in _sent(lab, "h1", "p0") if mine(f)])
    assert len(wire) == 1, "nothing left h1's p0"
    outer = wire[0]
    assert (outer[Ether].src, outer[Ether].dst) == ("aa:55:aa:55:00:01", "aa:55:aa:55:00:03")
    assert (outer[IP].src, outer[IP].dst, outer[UDP].dport) == ("192.168.0.11", "192.168.0.13", 4789)
    assert outer[VXLAN].vni == 5001
    assert not [f for f in _sent(lab, "h1", "uplink") if mine(f)]
    _appctl(lab, "h3", "netdev-dummy/receive", "p0", raw(outer).hex())
    got = _until(lambda: [f for f in _sent(lab, "h3", "vm10") if mine(f)])
    assert len(got) == 1, "h3 did not deliver the packet to web2's port"
    inner = got[0]
    assert (inner[IP].src, inner[IP].dst, inner[TCP].dport) == ("10.1.1.11", "10.1.1.12", 80)
    assert inner[Ether].dst == "02:00:00:00:01:02" and inner[Ether].src == "fe:ff:ff:ff:ff:ff"


def test_ports_follow_an_intent_change(netc_bin, tmp_path):
    ensure_ovs()
    state = tmp_path / "st"
    text = QUICKSTART.read_text()
    changed = tmp_path / "intent.ndl"
    changed.write_text(text.replace('vm_port("h1", "globex", "app1", 11).\n', "")
                       + 'vm("acme", "web3", 02:00:00:00:01:04, 10.1.1.13, "h2").\n'
                       + 'vm_port("h2", "acme", "web3", 12).\n')
    try:
        assert netc(netc_bin, "lab", "up", str(QUICKSTART), "--state", str(state)).returncode == 0
        r = netc(netc_bin, "lab", "up", str(changed), "--state", str(state))
        assert r.returncode == 0, r.stderr
        ports = {}
        for h in ("h1", "h2"):
            out = subprocess.run(["ovs-vsctl", f"--db=unix:{state}/lab/{h}/db.sock", "list-ports", "br-int"],
                                 capture_output=True, text=True, timeout=30, check=True).stdout
            ports[h] = sorted(p for p in out.split() if p.startswith("vm"))
        assert ports == {"h1": ["vm10"], "h2": ["vm10", "vm12"]}
        rc, t = trace(netc_bin, state, "acme/web1", "acme/web3", "tcp/80")
        assert rc == 0 and t["fates"][0]["host"] == "h2"
    finally:
        stop(netc_bin, state)


def test_missing_ovs_is_named_with_the_fix(netc_bin, tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for tool in ("cat", "sh"):  # a PATH with no OVS at all
        os.symlink(shutil.which(tool), bindir / tool)
    env = dict(os.environ, PATH=str(bindir))
    r = netc(netc_bin, "lab", "up", str(QUICKSTART), "--state", str(tmp_path / "st"), env=env)
    assert r.returncode == 2
    assert "Open vSwitch is not installed" in r.stderr and "ovs-vswitchd" in r.stderr
    assert "apt-get install -y openvswitch-switch" in r.stderr
    assert "panicked" not in r.stderr and not (tmp_path / "st" / "lab" / "h1").exists()


def test_trace_without_a_lab_says_how_to_start_one(netc_bin, tmp_path):
    r = netc(netc_bin, "trace", "web1", "web2", "--state", str(tmp_path / "none"))
    assert r.returncode == 2 and "no lab is running" in r.stderr and "netc apply" in r.stderr
