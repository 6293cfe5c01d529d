"""SNAT, Fastpath and the Hoverboard default route in real Open vSwitch.

examples/ananta (SNAT ranges, a Fastpath redirect) and a small Hoverboard
intent written here are compiled and pushed into one ovs-vswitchd per host
(and per Hoverboard); Scapy frames are injected at VM ports, VXLAN frames
are carried between hosts' underlay ports, and every test asserts what
leaves which port (specs/ovs-pipeline.md §3, §9; rules/snat.ndl,
rules/lb_ananta.ndl, rules/andromeda.ndl).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from scapy.all import IP, TCP, UDP, Ether  # type: ignore[import-untyped]
from scapy.layers.vxlan import VXLAN  # type: ignore[import-untyped]

from ovs_fixture import GATEWAY_MAC, Fabric, ensure_ovs

pytestmark = pytest.mark.netc

REPO = Path(__file__).resolve().parent.parent
ANANTA = REPO / "examples" / "ananta" / "intent.ndl"
ROUTER = "fe:ff:ff:ff:ff:ff"
MUX = "192.168.100.1"
# (MAC, IP, host, port) from examples/ananta/intent.ndl
WEB1 = ("02:00:00:00:10:01", "10.10.1.11", "h1", "vm10")
WEB2 = ("02:00:00:00:10:02", "10.10.1.12", "h2", "vm10")
SQL1 = ("02:00:00:00:10:21", "10.10.2.21", "h2", "vm11")
APP1 = ("02:00:00:00:10:31", "10.10.3.31", "h3", "vm11")


def compile_and_push(netc: str, intent: Path, out: Path, fab: Fabric) -> None:
    r = subprocess.run([netc, "compile", str(intent), "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    for h, host in fab.hosts.items():
        r = subprocess.run([netc, "agent", "--host", h, "--artifacts", str(out), "--bridge", host.bridge, "--once"],
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, f"{h}: {r.stderr}"


def vxlan(fab: Fabric, src_ip: str, dst_ip: str, vni: int, inner):
    return (Ether(src=GATEWAY_MAC, dst=fab.by_ip(dst_ip).mac) / IP(src=src_ip, dst=dst_ip)
            / UDP(sport=50000, dport=4789) / VXLAN(vni=vni, flags=8) / inner)


@pytest.fixture(scope="module")
def ananta(netc_bin, tmp_path_factory):
    ensure_ovs()
    hosts = {"h1": ("192.168.0.11", [10, 11]), "h2": ("192.168.0.12", [10, 11]),
             "h3": ("192.168.0.13", [10, 11]), "h4": ("192.168.0.14", [10, 11, 12])}
    fab = Fabric(hosts)
    try:
        compile_and_push(netc_bin, ANANTA, tmp_path_factory.mktemp("ananta") / "out", fab)
        yield fab
    finally:
        fab.stop()


# ---------------------------------------------------------------- SNAT (conntrack)
@pytest.mark.parametrize("vm, lo, sport", [(WEB1, 1024, 33000), (WEB1, 1024, 33001), (WEB2, 1040, 33002)])
def test_snat_leaves_with_the_vip_and_a_granted_port_and_the_reply_is_un_natted(ananta, vm, lo, sport):
    fab = ananta
    mac, ip, host, port = vm
    out = Ether(src=mac, dst=ROUTER) / IP(src=ip, dst="198.51.100.80") / TCP(sport=sport, dport=443, flags="S")
    got = fab.send(host, port, out, expect=1)
    assert set(got) == {(host, "uplink")}, got
    f = got[(host, "uplink")][0]
    # the VM's LOWEST range (rules/snat.ndl): web1 1024..1031 (its 1032 range goes to the agent), web2 1040..1047
    assert f[IP].src == "131.107.0.99" and lo <= f[TCP].sport <= lo + 7, f.summary()
    assert (f[IP].dst, f[TCP].dport) == ("198.51.100.80", 443)
    # the Mux tunnels the reply to the DIP's host; conntrack restores the VM's address and port
    reply = (Ether(src=GATEWAY_MAC, dst=ROUTER) / IP(src="198.51.100.80", dst="131.107.0.99")
             / TCP(sport=443, dport=f[TCP].sport, flags="SA"))
    back = fab.send(host, "p0", vxlan(fab, MUX, fab.hosts[host].ip, 6001, reply), expect=1)
    assert set(back) == {(host, port)}, back
    b = back[(host, port)][0]
    assert (b[IP].src, b[IP].dst, b[TCP].sport, b[TCP].dport, b[Ether].dst) == ("198.51.100.80", ip, 443, sport, mac)


def test_snat_return_without_a_connection_is_dropped(ananta):
    fab = ananta
    stray = Ether(src=GATEWAY_MAC, dst=ROUTER) / IP(src="198.51.100.81", dst="131.107.0.99") / TCP(sport=443, dport=1025, flags="SA")
    assert fab.send("h1", "p0", vxlan(fab, MUX, fab.hosts["h1"].ip, 6001, stray)) == {}


# ---------------------------------------------------------------- Fastpath
def test_fastpath_sends_the_redirected_connection_straight_to_the_dip_host(ananta):
    fab = ananta
    mac, ip, host, port = APP1
    syn = Ether(src=mac, dst=ROUTER) / IP(src=ip, dst="131.107.0.20") / TCP(sport=49152, dport=1433, flags="S")
    trace = fab.hosts[host].trace("11", syn)
    # the Fastpath flow (priority 120, concern 8 in the cookie's top byte) decides
    assert re.search(r"priority 120, cookie 0x8[0-9a-f]{14}\b", trace), trace[-1500:]
    got = fab.send(host, port, syn, expect=1)
    assert set(got) == {(host, "p0")}
    outer = got[(host, "p0")][0]
    assert (outer[IP].dst, outer[VXLAN].vni) == ("192.168.0.12", 6001)  # sql1's host, not a Mux
    assert outer[VXLAN].payload[Ether].dst == SQL1[0]
    arrived = fab.carry(got)
    assert set(arrived) == {("h2", "vm11")}
    d = arrived[("h2", "vm11")][0]
    # the DIP host's DNAT serves it as if the Mux had sent it
    assert (d[IP].src, d[IP].dst, d[TCP].sport, d[TCP].dport) == (ip, SQL1[1], 49152, 1433)


def test_a_connection_without_redirect_takes_the_host_lb_group(ananta):
    fab = ananta
    mac, ip, host, port = APP1
    syn = Ether(src=mac, dst=ROUTER) / IP(src=ip, dst="131.107.0.20") / TCP(sport=49153, dport=1433, flags="S")
    trace = fab.hosts[host].trace("11", syn)
    assert "priority 120" not in trace and "group:2000" in trace, trace[-1500:]
    got = fab.send(host, port, syn, expect=1)
    arrived = fab.carry(got)
    assert len(arrived) == 1 and next(iter(arrived)) in {("h2", "vm11"), ("h4", "vm11")}


# ---------------------------------------------------------------- Hoverboard default route
HB_INTENT = """
switch("tor1", "tor", 10.255.0.1, 16384, 4096, 512).
host("h1", 192.168.0.11, "tor1", 1).
host("h2", 192.168.0.12, "tor1", 2).
hoverboard("hb1", 192.168.0.21).
hoverboard("hb2", 192.168.0.22).
offload_threshold(20).
tenant("hb", 4001).
vnet("hb", "main", 10.128.0.0/16).
vnet_model("hb", "hoverboard").
vm("hb", "vm01", 02:0f:a1:00:00:01, 10.128.0.2, "h1").
vm("hb", "vm02", 02:0f:a1:00:00:02, 10.128.0.3, "h2").
vm_port("h1", "hb", "vm01", 10).
vm_port("h2", "hb", "vm02", 10).
acl_default("hb", "allow").
// vm01 -> vm02 is busy: offloaded to a direct flow; vm02 -> vm01 is not
flow_usage("hb", "vm01", "vm02", 850).
flow_usage("hb", "vm02", "vm01", 5).
"""
VM01 = ("02:0f:a1:00:00:01", "10.128.0.2")
VM02 = ("02:0f:a1:00:00:02", "10.128.0.3")


@pytest.fixture(scope="module")
def hoverboard(netc_bin, tmp_path_factory):
    ensure_ovs()
    d = tmp_path_factory.mktemp("hb")
    (d / "intent.ndl").write_text(HB_INTENT)
    fab = Fabric({"h1": ("192.168.0.11", [10]), "h2": ("192.168.0.12", [10]),
                  "hb1": ("192.168.0.21", []), "hb2": ("192.168.0.22", [])})
    try:
        compile_and_push(netc_bin, d / "intent.ndl", d / "out", fab)
        yield fab
    finally:
        fab.stop()


@pytest.mark.parametrize("sport", [40001, 40002, 40003, 40004])
def test_hoverboard_default_route_goes_through_a_hoverboard(hoverboard, sport):
    fab = hoverboard
    pkt = Ether(src=VM02[0], dst=ROUTER) / IP(src=VM02[1], dst=VM01[1]) / UDP(sport=sport, dport=53)
    got = fab.send("h2", "vm10", pkt, expect=1)
    assert set(got) == {("h2", "p0")}
    outer = got[("h2", "p0")][0]
    assert outer[IP].dst in {"192.168.0.21", "192.168.0.22"} and outer[VXLAN].vni == 4001
    hb = fab.by_ip(outer[IP].dst).name
    bounced = fab.carry(got)
    # the Hoverboard sends it back into the tunnel, now to vm01's host
    assert set(bounced) == {(hb, "p0")}
    again = bounced[(hb, "p0")][0]
    assert (again[IP].dst, again[VXLAN].vni) == ("192.168.0.11", 4001)
    arrived = fab.carry(bounced)
    assert set(arrived) == {("h1", "vm10")}
    f = arrived[("h1", "vm10")][0]
    assert (f[IP].src, f[IP].dst, f[Ether].dst) == (VM02[1], VM01[1], VM01[0])


def test_an_offloaded_pair_goes_host_to_host(hoverboard):
    fab = hoverboard
    pkt = Ether(src=VM01[0], dst=ROUTER) / IP(src=VM01[1], dst=VM02[1]) / UDP(sport=40000, dport=53)
    got = fab.send("h1", "vm10", pkt, expect=1)
    outer = got[("h1", "p0")][0]
    assert (outer[IP].dst, outer[VXLAN].vni) == ("192.168.0.12", 4001)  # straight to h2, no Hoverboard
    assert set(fab.carry(got)) == {("h2", "vm10")}


def test_a_hoverboard_drops_vnis_it_does_not_serve(hoverboard):
    fab = hoverboard
    inner = Ether(src=VM02[0], dst=ROUTER) / IP(src=VM02[1], dst=VM01[1]) / UDP(sport=1, dport=53)
    assert fab.send("hb1", "p0", vxlan(fab, "192.168.0.12", "192.168.0.21", 4999, inner)) == {}
