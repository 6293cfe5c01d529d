"""Hypothesis-generated intents in real OVS: tenants with overlapping address
spaces on three hosts. For every generated intent netc's flows are pushed
(reconciling from the previous example's state) and frames are sent between
VMs: a frame reaches exactly the VM of the SENDER's tenant that owns the
destination address (when the tenant's ACL default allows), and nothing of
another tenant ever receives it (ISO-1), also when both tenants use the
same addresses.
"""

from __future__ import annotations

import subprocess

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scapy.all import IP, TCP, Ether  # type: ignore[import-untyped]

from ovs_fixture import Fabric, ensure_ovs
from test_ovs_quickstart import ROUTER, push

pytestmark = pytest.mark.netc

HOSTS = {"h1": "192.168.0.11", "h2": "192.168.0.12", "h3": "192.168.0.13"}
PORTS = list(range(10, 16))


@pytest.fixture(scope="module")
def fabric():
    ensure_ovs()
    fab = Fabric({h: (ip, PORTS) for h, ip in HOSTS.items()})
    try:
        yield fab
    finally:
        fab.stop()


@st.composite
def intents(draw):
    n_tenants = draw(st.integers(2, 3))
    free = {h: list(PORTS) for h in HOSTS}
    vms = []  # (tenant, name, mac, ip, host, port)
    defaults = {}
    for t in range(n_tenants):
        defaults[t] = draw(st.sampled_from(["allow", "allow", "deny"]))
        hosts_ips = draw(st.lists(st.tuples(st.sampled_from(sorted(HOSTS)), st.integers(10, 13)),
                                  min_size=1, max_size=3, unique_by=lambda x: x[1]))
        for k, (h, last) in enumerate(hosts_ips):
            if not free[h]:
                continue
            port = free[h].pop(0)
            vms.append((t, f"v{t}_{k}", f"02:00:00:00:{t + 1:02x}:{k + 1:02x}", f"10.1.1.{last}", h, port))
    return n_tenants, defaults, vms


def render(n_tenants, defaults, vms) -> str:
    lines = ['switch("tor1", "tor", 10.255.0.1, 16384, 4096, 512).']
    lines += [f'host("{h}", {ip}, "tor1", {i + 1}).' for i, (h, ip) in enumerate(sorted(HOSTS.items()))]
    for t in range(n_tenants):
        lines += [f'tenant("t{t}", {5001 + t}).', f'vnet("t{t}", "net", 10.1.0.0/16).',
                  f'acl_default("t{t}", "{defaults[t]}").']
    for t, name, mac, ip, h, port in vms:
        lines += [f'vm("t{t}", "{name}", {mac}, {ip}, "{h}").', f'vm_port("{h}", "t{t}", "{name}", {port}).']
    return "\n".join(lines) + "\n"


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(intents())
def test_generated_tenants_are_isolated_and_reachable(netc_bin, fabric, tmp_path_factory, spec):
    n_tenants, defaults, vms = spec
    d = tmp_path_factory.mktemp("gen")
    (d / "intent.ndl").write_text(render(*spec))
    r = subprocess.run([netc_bin, "compile", str(d / "intent.ndl"), "--out", str(d / "out")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    for h, host in fabric.hosts.items():
        r = push(netc_bin, d / "out", h, host.bridge)
        assert r.returncode == 0, r.stderr
    for a in vms:
        for b in vms:
            if a is b or a[3] == b[3] and a[0] == b[0]:
                continue
            f = Ether(src=a[2], dst=ROUTER) / IP(src=a[3], dst=b[3]) / TCP(sport=40000, dport=80)
            owner = next((v for v in vms if v[0] == a[0] and v[3] == b[3]), None)
            want = set()
            if owner is not None and defaults[a[0]] == "allow" and owner is not a:
                want = {(owner[4], f"vm{owner[5]}")}
            got = fabric.send(a[4], f"vm{a[5]}", f, expect=1 if want else None)
            arrived = {k for k in got if k[1] != "p0"} | {k for k in fabric.carry(got) if k[1] != "p0"}
            assert arrived == want, f"{a[1]} -> {b[3]} (tenant t{a[0]}): got {arrived}, want {want}"
