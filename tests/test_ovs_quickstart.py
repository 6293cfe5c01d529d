"""The quickstart's compiled flows in real Open vSwitch (one ovs-vswitchd per host).

Every check injects Scapy-built frames into dummy ports and reads what leaves
every port of every host (pcap), carrying VXLAN frames between hosts'
underlay ports: isolation between tenants with overlapping addresses, ACLs,
anti-spoofing, the VIP path (a Mux's packet → DNAT to the DIP → DSR reply
with the VIP as source), multicast to the (tenant, group) members only.
"""

from __future__ import annotations

import csv
import subprocess
import zlib
from ipaddress import IPv4Address
from pathlib import Path

import pytest
from scapy.all import ARP, IP, TCP, UDP, Ether  # type: ignore[import-untyped]
from scapy.layers.vxlan import VXLAN  # type: ignore[import-untyped]

from ovs_fixture import GATEWAY_MAC, Fabric, ensure_ovs

pytestmark = pytest.mark.netc

REPO = Path(__file__).resolve().parent.parent
QUICKSTART = REPO / "examples" / "quickstart" / "intent.ndl"
ROUTER = "fe:ff:ff:ff:ff:ff"
HOSTS = {"h1": "192.168.0.11", "h2": "192.168.0.12", "h3": "192.168.0.13", "h4": "192.168.0.14"}
WEB1 = ("02:00:00:00:01:01", "10.1.1.11")  # acme, h1 port 10
WEB2 = ("02:00:00:00:01:02", "10.1.1.12")  # acme, h3 port 10
DB1 = ("02:00:00:00:01:03", "10.1.2.21")  # acme, h2 port 10
APP1 = ("02:00:00:00:02:01", "10.1.1.11")  # globex, h1 port 11
APP2 = ("02:00:00:00:02:02", "10.1.1.12")  # globex, h4 port 10


def compile_intent(netc: str, out: Path, *intent: Path) -> Path:
    r = subprocess.run([netc, "compile", *map(str, intent), "--out", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return out


def push(netc: str, artifacts: Path, host: str, bridge: str) -> subprocess.CompletedProcess:
    return subprocess.run([netc, "agent", "--host", host, "--artifacts", str(artifacts),
                           "--bridge", bridge, "--once"], capture_output=True, text=True, timeout=600)


def relation(out: Path, name: str) -> list[list[str]]:
    with open(out / "relations" / f"{name}.csv") as f:
        return list(csv.reader(f, delimiter="\t"))


def hash5(proto: int, src: str, dst: str, sport: int, dport: int) -> int:
    """specs/functors.md §6: CRC-32/ISO-HDLC over proto‖src‖dst‖sport‖dport."""
    b = bytes([proto]) + IPv4Address(src).packed + IPv4Address(dst).packed
    return zlib.crc32(b + sport.to_bytes(2, "big") + dport.to_bytes(2, "big"))


def frame(src, dst, proto="tcp", sport=40000, dport=80, dmac=ROUTER):
    l4 = TCP(sport=sport, dport=dport) if proto == "tcp" else UDP(sport=sport, dport=dport)
    return Ether(src=src[0], dst=dmac) / IP(src=src[1], dst=dst[1] if isinstance(dst, tuple) else dst) / l4


def vxlan(fab: Fabric, src_host: str, dst_ip: str, vni: int, inner):
    """A VXLAN frame as the fabric hands it to the host owning dst_ip."""
    return (Ether(src=GATEWAY_MAC, dst=fab.by_ip(dst_ip).mac) / IP(src=src_host, dst=dst_ip)
            / UDP(sport=50000, dport=4789) / VXLAN(vni=vni, flags=8) / inner)


@pytest.fixture(scope="module")
def quick(netc_bin, tmp_path_factory):
    ensure_ovs()
    out = compile_intent(netc_bin, tmp_path_factory.mktemp("qs") / "out", QUICKSTART)
    ports = {"h1": [10, 11], "h2": [10], "h3": [10], "h4": [10]}
    fab = Fabric({h: (ip, ports[h]) for h, ip in HOSTS.items()})
    try:
        for h, host in fab.hosts.items():
            r = push(netc_bin, out, h, host.bridge)
            assert r.returncode == 0, r.stderr
        yield fab, out
    finally:
        fab.stop()


def only(got: dict) -> set:
    return set(got)


def test_installed_flows_equal_the_compiled_files(quick):
    fab, out = quick
    for h, host in fab.hosts.items():
        want = len((out / "ovs" / f"{h}.flows").read_text().splitlines())
        groups = len((out / "ovs" / f"{h}.groups").read_text().splitlines())
        dump = [ln for ln in host.ofctl("dump-flows", "--no-stats").splitlines() if "priority=" in ln]
        assert len(dump) == want + groups, f"{h}: {len(dump)} flows on the bridge, {want}+{groups} compiled"


def test_same_tenant_crosses_hosts_in_vxlan_with_its_vni(quick):
    fab, _ = quick
    got = fab.send("h1", "vm10", frame(WEB1, WEB2), expect=1)
    assert only(got) == {("h1", "p0")}
    outer = got[("h1", "p0")][0]
    assert outer[IP].dst == HOSTS["h3"] and outer[IP].src == HOSTS["h1"]
    assert outer[VXLAN].vni == 5001 and outer[UDP].dport == 4789
    arrived = fab.carry(got)
    assert only(arrived) == {("h3", "vm10")}
    f = arrived[("h3", "vm10")][0]
    assert (f[Ether].src, f[Ether].dst) == (ROUTER, WEB2[0])
    assert (f[IP].src, f[IP].dst, f[TCP].dport) == (WEB1[1], WEB2[1], 80)


def test_overlapping_tenant_addresses_stay_apart(quick):
    fab, _ = quick
    # globex app1 has acme web1's address; its traffic to 10.1.1.12 goes to globex app2 (h4), VNI 5002
    got = fab.send("h1", "vm11", frame(APP1, APP2), expect=1)
    outer = got[("h1", "p0")][0]
    assert (outer[IP].dst, outer[VXLAN].vni) == (HOSTS["h4"], 5002)
    assert only(fab.carry(got)) == {("h4", "vm10")}
    # a frame of one tenant's VNI delivered to a host of the other tenant reaches nobody
    for host, vni, own in (("h4", 5001, 5002), ("h3", 5002, 5001)):
        inner = Ether(src="02:00:00:00:09:09", dst=ROUTER) / IP(src="10.1.1.11", dst="10.1.1.12") / TCP()
        got = fab.send(host, "p0", vxlan(fab, "192.168.0.11", HOSTS[host], vni, inner))
        assert got == {}, f"VNI {vni} leaked on {host}: {only(got)}"
        # control: the same frame with the host's own tenant's VNI is delivered
        got = fab.send(host, "p0", vxlan(fab, "192.168.0.11", HOSTS[host], own, inner), expect=1)
        assert only(got) == {(host, "vm10")}


def test_anti_spoofing_drops_foreign_source_mac_or_ip(quick):
    fab, _ = quick
    assert fab.send("h1", "vm11", frame((WEB1[0], APP1[1]), APP2)) == {}  # acme's MAC on globex's port
    assert fab.send("h1", "vm10", frame((WEB1[0], "10.1.1.99"), WEB2)) == {}  # an address not its own


def test_acl_allows_web_to_db_5432_and_denies_ssh_and_the_rest(quick):
    fab, _ = quick
    got = fab.send("h1", "vm10", frame(WEB1, DB1, dport=5432), expect=1)
    assert only(fab.carry(got)) == {("h2", "vm10")}
    assert fab.send("h1", "vm10", frame(WEB1, DB1, dport=22)) == {}
    assert fab.send("h1", "vm10", frame(WEB1, DB1, dport=80)) == {}


def test_arp_is_answered_by_the_virtual_router(quick):
    fab, _ = quick
    req = Ether(src=WEB1[0], dst="ff:ff:ff:ff:ff:ff") / ARP(op=1, hwsrc=WEB1[0], psrc=WEB1[1], pdst=WEB2[1])
    got = fab.send("h1", "vm10", req, expect=1)
    rep = got[("h1", "vm10")][0]
    assert rep[ARP].op == 2 and rep[ARP].hwsrc == ROUTER and rep[ARP].psrc == WEB2[1]


def mux_choice(out: Path, client: str, sport: int) -> tuple[str, str, str]:
    """What the quickstart's Mux does for a client connection to the VIP:
    member = vector[hash5 % n] (agent_mux_*), and its tunnel (host, DIP MAC)."""
    n = int(next(r for r in relation(out, "agent_mux_vip") if r[1] == "0")[5])
    idx = hash5(6, client, "203.0.113.10", sport, 80) % n
    member = next(r[6] for r in relation(out, "agent_mux_member") if int(r[4]) == idx)
    tun = next(r for r in relation(out, "agent_mux_tunnel") if r[2] == member)
    return member, tun[3], tun[4]


@pytest.mark.parametrize("sport", [40001, 40002, 40003, 40004])
def test_vip_reaches_the_muxs_dip_and_the_reply_leaves_as_the_vip(quick, sport):
    fab, out = quick
    client = "198.51.100.7"
    dip, underlay, dmac = mux_choice(out, client, sport)
    host = fab.by_ip(underlay)
    inner = Ether(src="aa:55:aa:55:00:99", dst=dmac) / IP(src=client, dst="203.0.113.10") / TCP(sport=sport, dport=80)
    got = fab.send(host.name, "p0", vxlan(fab, "192.168.100.1", underlay, 5001, inner), expect=1)
    assert only(got) == {(host.name, "vm10")}
    f = got[(host.name, "vm10")][0]
    assert (f[IP].dst, f[TCP].dport, f[Ether].dst) == (dip, 8080, dmac)
    # direct server return: the DIP's reply leaves the uplink with the VIP as source
    reply = Ether(src=dmac, dst=ROUTER) / IP(src=dip, dst=client) / TCP(sport=8080, dport=sport, flags="SA")
    got = fab.send(host.name, "vm10", reply, expect=1)
    assert only(got) == {(host.name, "uplink")}
    r = got[(host.name, "uplink")][0]
    assert (r[IP].src, r[TCP].sport, r[IP].dst, r[TCP].dport) == ("203.0.113.10", 80, client, sport)


def test_a_vm_reaches_its_tenants_vip_through_the_mux(quick):
    fab, _ = quick
    got = fab.send("h2", "vm10", frame(DB1, "203.0.113.10"), expect=1)
    outer = got[("h2", "p0")][0]
    assert (outer[IP].dst, outer[VXLAN].vni, outer[Ether].dst) == ("203.0.113.10", 5001, GATEWAY_MAC)


def test_multicast_reaches_only_the_groups_members(quick):
    fab, _ = quick
    got = fab.send("h1", "vm10", frame(WEB1, "239.1.1.1", proto="udp", dport=5000, dmac="01:00:5e:01:01:01"), expect=1)
    assert only(got) == {("h1", "p0")}  # web1 is the only local member, and the sender
    outer = got[("h1", "p0")][0]
    assert (outer[IP].dst, outer[VXLAN].vni) == ("239.1.1.1", 5001)
    # The fabric (P4) replicates the copy to every host; netdev-dummy has one
    # address per port, so the fixture re-addresses each copy to the host.
    received = set()
    for name, host in fab.hosts.items():
        if name == "h1":
            continue
        copy = vxlan(fab, HOSTS["h1"], host.ip, 5001, outer[VXLAN].payload)
        received |= set(fab.send(name, "p0", copy))
    assert received == {("h3", "vm10")}  # web2; not db1 (acme, no member), not globex's h4
    # globex has no such group: its VM's packet to the address goes nowhere,
    # and a forged copy with globex's VNI reaches nobody on a member host
    assert fab.send("h1", "vm11", frame(APP1, "239.1.1.1", proto="udp", dport=5000, dmac="01:00:5e:01:01:01")) == {}
    forged = vxlan(fab, HOSTS["h4"], HOSTS["h3"], 5002, outer[VXLAN].payload)
    assert fab.send("h3", "p0", forged) == {}
