"""The intent-level ACL report per class (rules/acl.ndl) equals the verdict
per VM pair computed directly from the acl facts.

`acl_vm_class` + `acl_class_verdict` replace a report per VM pair x probed
port (quadratic in a tenant's VMs). Hypothesis draws a tenant's VMs and ACL
rules (random prefixes, protocols, port ranges, priorities, default) on top
of the quickstart topology; for every ordered pair of distinct VMs and every
probed (proto, port) the class join must give what a direct evaluation of
"highest-priority matching rule, else the tenant default" gives.
"""

import ipaddress
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from netc_dump import run_dump

REPO = Path(__file__).resolve().parent.parent
RULES = sorted(str(p) for p in (REPO / "rules").glob("*.ndl"))
TOPOLOGY = """
switch("tor1", "tor", 10.255.0.1, 16384, 4096, 512).
switch("agg1", "agg", 10.255.1.1, 16384, 4096, 512).
link("tor1", 49, "agg1", 1, 40000).
host("h1", 192.168.0.11, "tor1", 1).
host("h2", 192.168.0.12, "tor1", 2).
tenant("t", 7001).
vnet("t", "n", 10.2.0.0/16).
subnet("t", "n", "all", 10.2.0.0/16, 10.2.0.1).
"""


def prefix(addr: int, length: int) -> str:
    return str(ipaddress.ip_network((addr, length), strict=False))


prefixes = st.builds(
    prefix,
    st.integers(0x0A020000, 0x0A02FFFF),
    st.sampled_from([0, 16, 20, 24, 26, 28, 30, 32]),
)


@st.composite
def rules(draw):
    proto = draw(st.sampled_from([0, 6, 17]))
    if proto == 0:
        lo, hi = 0, 65535
    else:
        lo = draw(st.integers(1, 40))
        hi = draw(st.integers(lo, 45))
    return (draw(prefixes), draw(prefixes), proto, lo, hi, draw(st.sampled_from(["allow", "deny"])))


scenario = st.tuples(
    st.lists(st.integers(2, 0xFFFE), min_size=2, max_size=12, unique=True),
    st.lists(rules(), min_size=1, max_size=8),
    st.sampled_from([None, "allow", "deny"]),
)


def intent_text(vm_hosts, acls, default) -> str:
    lines = [TOPOLOGY]
    for i, low in enumerate(vm_hosts):
        ipx = str(ipaddress.ip_address(0x0A020000 + low))
        lines.append(f'vm("t", "v{i}", 02:00:00:00:{i // 256:02x}:{i % 256:02x}, {ipx}, "h{1 + i % 2}").')
        lines.append(f'vm_port("h{1 + i % 2}", "t", "v{i}", {20 + i}).')
    for j, (sp, dp, proto, lo, hi, a) in enumerate(acls):
        lines.append(f'acl("t", "r{j}", {100 + 10 * j}, {sp}, {dp}, {proto}, {lo}, {hi}, "{a}").')
    if default:
        lines.append(f'acl_default("t", "{default}").')
    return "\n".join(lines) + "\n"


def run(netc_bin, path):
    return run_dump(netc_bin, [*RULES, str(path)], timeout=120)


def expected(vm_hosts, acls, default):
    """(src, dst, proto, port) -> action, evaluated per pair from the facts."""
    ips = {f"v{i}": ipaddress.ip_address(0x0A020000 + low) for i, low in enumerate(vm_hosts)}
    probes = {(p, lo) for _, _, p, lo, _, _ in acls if p != 0}
    out = {}
    for s, sip in ips.items():
        for d, dip in ips.items():
            if s == d:
                continue
            for proto, port in probes:
                best = None
                for j, (sp, dp, p2, lo2, hi2, a) in enumerate(acls):
                    hit = p2 == 0 or (p2 == proto and lo2 <= port <= hi2)
                    hit = hit and sip in ipaddress.ip_network(sp) and dip in ipaddress.ip_network(dp)
                    if hit and (best is None or 100 + 10 * j > best[0]):
                        best = (100 + 10 * j, a)
                out[(s, d, str(proto), str(port))] = best[1] if best else (default or "allow")
    return out


def from_classes(rels):
    cls = {r[1]: (r[2], r[3]) for r in rels.get("acl_vm_class", [])}
    verdict = {(cs, cd, p, o): a for _, cs, cd, p, o, a in rels.get("acl_class_verdict", [])}
    probes = {(p, o) for _, _, _, p, o, _ in rels.get("acl_class_verdict", [])}
    out = {}
    for s, (cs, _) in cls.items():
        for d, (_, cd) in cls.items():
            if s != d:
                for p, o in probes:
                    out[(s, d, p, o)] = verdict[(cs, cd, p, o)]
    return out


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scenario)
def test_class_verdicts_equal_pair_verdicts(netc_bin, tmp_path, sc):
    vm_hosts, acls, default = sc
    path = tmp_path / "acl.ndl"
    path.write_text(intent_text(vm_hosts, acls, default))
    rels = run(netc_bin, path)
    assert not any(k.startswith("error_") and v for k, v in rels.items()), {k: v for k, v in rels.items() if k.startswith("error_") and v}
    assert from_classes(rels) == expected(vm_hosts, acls, default)
    # classes, not pairs: at most one class per distinct rule prefix (+ 0/0) per side
    n_src = len({sp for sp, *_ in acls} | {"0.0.0.0/0"})
    n_dst = len({dp for _, dp, *_ in acls} | {"0.0.0.0/0"})
    n_probes = len({(p, lo) for _, _, p, lo, _, _ in acls if p != 0})
    assert len(rels.get("acl_class_verdict", [])) <= n_src * n_dst * n_probes
