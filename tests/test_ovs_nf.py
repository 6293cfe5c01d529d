"""NF chains (AFF-3) in real Open vSwitch: both directions of a connection
reach the same NF instance (specs/ovs-pipeline.md §7).

examples/nfchain is compiled and pushed into one ovs-vswitchd per host; a
connection's first packet and its reply (addresses and ports swapped) are
injected at the two VMs' ports, VXLAN copies are carried between hosts, and
the NF instances' ports' pcap files say which instance of every hop saw
each direction. Hypothesis draws the connections (VM pair, protocol,
ports). `ofproto/trace` confirms that OVS hashes both directions with its
symmetric datapath hash (`hash(sym_l4(...))`); it cannot show the bucket
itself (that is chosen after the datapath recirculates), so the pcap files
are the witness.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scapy.all import IP, TCP, UDP, Ether  # type: ignore[import-untyped]

from ovs_fixture import Fabric, ensure_ovs

pytestmark = pytest.mark.netc

REPO = Path(__file__).resolve().parent.parent
NFCHAIN = REPO / "examples" / "nfchain" / "intent.ndl"
ROUTER = "fe:ff:ff:ff:ff:ff"
HOSTS = {"h1": "192.168.0.11", "h2": "192.168.0.12", "h3": "192.168.0.13"}
# (MAC, IP, host, port) from examples/nfchain/intent.ndl
VMS = {
    "web1": ("02:00:00:00:06:01", "10.2.1.11", "h1", "vm10"),
    "web2": ("02:00:00:00:06:02", "10.2.1.12", "h2", "vm10"),
    "db1": ("02:00:00:00:06:03", "10.2.2.21", "h3", "vm10"),
}
INSTANCES = {("h2", "vm11"): ("ids1", 0), ("h3", "vm11"): ("ids2", 0), ("h1", "vm11"): ("mon1", 1)}


def compile_intent(netc: str, out: Path) -> Path:
    r = subprocess.run([netc, "compile", str(NFCHAIN), "--out", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return out


@pytest.fixture(scope="module")
def nf(netc_bin, tmp_path_factory):
    ensure_ovs()
    out = compile_intent(netc_bin, tmp_path_factory.mktemp("nf") / "out")
    fab = Fabric({h: (ip, [10, 11]) for h, ip in HOSTS.items()})
    try:
        for h, host in fab.hosts.items():
            r = subprocess.run([netc_bin, "agent", "--host", h, "--artifacts", str(out),
                                "--bridge", host.bridge, "--once"], capture_output=True, text=True, timeout=600)
            assert r.returncode == 0, r.stderr
        yield fab, out
    finally:
        fab.stop()


def packet(src: str, dst: str, proto: str, sport: int, dport: int, reply: bool = False):
    s, d = VMS[src], VMS[dst]
    flags = "SA" if reply else "S"
    l4 = TCP(sport=sport, dport=dport, flags=flags) if proto == "tcp" else UDP(sport=sport, dport=dport)
    return Ether(src=s[0], dst=ROUTER) / IP(src=s[1], dst=d[1]) / l4


def one_direction(fab: Fabric, src: str, dst: str, proto: str, sport: int, dport: int,
                  reply: bool = False, copies: int = 2):
    """Sends one packet from VM `src` and follows it across the underlay.
    Returns ({hop: instance that got a copy}, the frames `dst` received)."""
    host, port = VMS[src][2], VMS[src][3]
    got = fab.send(host, port, packet(src, dst, proto, sport, dport, reply), expect=copies + 1)
    seen = dict(got)
    for k, v in fab.carry(got).items():
        seen.setdefault(k, []).extend(v)
    taps: dict[int, str] = {}
    for where, frames in seen.items():
        if where in INSTANCES:
            name, hop = INSTANCES[where]
            assert hop not in taps, f"two instances of hop {hop} got copies: {taps[hop]}, {name}"
            mac = {"ids1": "02:00:00:00:06:11", "ids2": "02:00:00:00:06:12", "mon1": "02:00:00:00:06:21"}[name]
            for f in frames:
                # the copy is the packet itself, addressed to the instance
                assert f[Ether].dst == mac
                assert (f[IP].src, f[IP].dst) == (VMS[src][1], VMS[dst][1])
                assert (f.sport, f.dport) == (sport, dport)
            taps[hop] = name
    dh, dp = VMS[dst][2], VMS[dst][3]
    return taps, seen.get((dh, dp), [])


def connection(fab: Fabric, client: str, server: str, proto: str, cport: int, sport: int):
    fwd, delivered = one_direction(fab, client, server, proto, cport, sport)
    # the original still reaches the server, unchanged but for the routed MACs
    assert len(delivered) == 1, f"{client} → {server}: {len(delivered)} frames delivered"
    d = delivered[0]
    assert (d[Ether].dst, d[IP].src, d[IP].dst, d.sport, d.dport) == (
        VMS[server][0], VMS[client][1], VMS[server][1], cport, sport)
    rev, back = one_direction(fab, server, client, proto, sport, cport, reply=True)
    assert len(back) == 1, f"the reply {server} → {client} was not delivered"
    return fwd, rev


def test_the_flows_are_installed_with_symmetric_groups(nf):
    fab, out = nf
    for h, host in fab.hosts.items():
        groups = host.ofctl("dump-groups")
        assert groups.count("selection_method=dp_hash") == 2, groups
        assert "selection_method_param=4294967296," in groups and "selection_method_param=4294967297," in groups


@pytest.mark.parametrize("cport", [40001, 40002, 40003])
def test_both_directions_reach_the_same_instance_in_the_example(nf, cport):
    fab, _ = nf
    fwd, rev = connection(fab, "web1", "db1", "tcp", cport, 5432)
    assert set(fwd) == {0, 1} and fwd[1] == "mon1"
    assert fwd == rev


def test_the_chain_spreads_tcp_connections_over_the_instances(nf):
    fab, _ = nf
    used = set()
    for cport in range(41000, 41016):
        fwd, _ = one_direction(fab, "web2", "db1", "tcp", cport, 5432)
        used.add(fwd[0])
    assert used == {"ids1", "ids2"}


def test_udp_is_hashed_on_addresses_only(nf):
    """OVS's sym_l4 datapath hash leaves UDP ports out (measured here): every
    UDP flow between two VMs reaches one instance — still symmetric."""
    fab, _ = nf
    used = {one_direction(fab, "web2", "db1", "udp", cport, 53)[0][0] for cport in range(42000, 42004)}
    assert len(used) == 1


def test_untapped_traffic_gets_no_copy(nf):
    fab, _ = nf
    taps, delivered = one_direction(fab, "web1", "db1", "tcp", 40000, 80, copies=0)
    assert taps == {} and len(delivered) == 1


def test_ofproto_trace_shows_the_symmetric_datapath_hash(nf):
    fab, _ = nf
    fwd = fab.hosts["h1"].trace("10", packet("web1", "db1", "tcp", 40000, 5432))
    rev = fab.hosts["h3"].trace("10", packet("db1", "web1", "tcp", 5432, 40000, reply=True))
    for t in (fwd, rev):
        assert "resubmit(,45)" in t and "group:10000" in t
        dp = next(ln for ln in t.splitlines() if ln.startswith("Datapath actions:"))
        assert "hash(sym_l4(0))" in dp, t[-1500:]


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(client=st.sampled_from(["web1", "web2"]), proto=st.sampled_from(["tcp", "udp"]),
       cport=st.integers(1024, 65535), uport=st.integers(1, 65535))
def test_generated_connections_are_symmetric(nf, client, proto, cport, uport):
    fab, _ = nf
    sport = 5432 if proto == "tcp" else uport  # tcp is tapped on 5432 only, udp on any port
    fwd, rev = connection(fab, client, "db1", proto, cport, sport)
    assert set(fwd) == {0, 1}
    assert fwd == rev


def test_an_ordered_field_hash_breaks_affinity_on_real_ovs(nf):
    """The verifier's mutant `nf-asymmetric-hash` (tests/test_verify.py),
    played on the real daemon: with h1's IDS group hashing
    fields(ip_src,ip_dst,...) in order, some connection's two directions
    reach different instances — the symmetric hash is what keeps them
    together, not luck."""
    fab, out = nf
    line = next(ln for ln in (out / "ovs" / "h1.groups").read_text().splitlines() if ln.startswith("group_id=10000,"))
    broken = line.replace("selection_method=dp_hash,selection_method_param=4294967296",
                          "selection_method=hash,fields(ip_src,ip_dst,nw_proto,tcp_src,tcp_dst)")
    assert broken != line
    h1 = fab.hosts["h1"]
    h1.ofctl("mod-group", broken)
    try:
        split = []
        for cport in range(43000, 43006):
            fwd, rev = connection(fab, "web1", "db1", "tcp", cport, 5432)
            if fwd[0] != rev[0]:
                split.append(cport)
        assert split, "6 connections all kept affinity with an ordered hash"
    finally:
        h1.ofctl("mod-group", line)
    # the rendered group back: the connection that was split is whole again
    fwd, rev = connection(fab, "web1", "db1", "tcp", split[0], 5432)
    assert fwd == rev
