"""The host load balancer's select groups (rules/lb_ananta.ndl, `hostlb_*`)
equal those of the plain per-host formulation they replaced.

A host's bucket list differs from the VIP's only where the host holds one of
the VIP's DIPs, so the rules build each VIP's list once (`hostlb_vlist`, a
`concat`), make the one local bucket of a host holding one DIP local in it
(`replace`), and build a list of its own only for a host holding several
(`hostlb_complex`, `hostlb_hlist`). The reference
below is the earlier formulation — every (host, VIP) pair ranks and joins its
own buckets — run on the same facts with the rest of the rules unchanged.
Hypothesis draws `netc gen` scenarios with few hosts (so hosts hold zero,
one or several DIPs of a VIP) and compares every `ovs_group` row.
"""

import subprocess
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from netc_dump import run_dump

REPO = Path(__file__).resolve().parent.parent
START = "// One bucket's text, on host h"
END = "ovs_flow(h, 30, 95,"

# rules/lb_ananta.ndl's host-LB section before the splice (kept verbatim)
REFERENCE = '''\
// one bucket's text, on host h
.decl hostlb_bucket(h: Device, vip: ipv4, pr: Proto, po: L4Port, ip: ipv4, tp: L4Port, text: symbol)
hostlb_bucket(h, vip, pr, po, ip, tp, cat("bucket=weight:", to_string(w), ",actions=mod_dl_dst:", to_string(m), ",resubmit(,40)")) :-
    hostlb_vip(h, t, _, vip, pr, po), hostlb_dip(t, vip, pr, po, ip, tp, w, m, h, _).
hostlb_bucket(h, vip, pr, po, ip, tp, cat("bucket=weight:", to_string(w), ",actions=mod_dl_dst:", to_string(m), ",", a)) :-
    hostlb_vip(h, t, _, vip, pr, po), hostlb_dip(t, vip, pr, po, ip, tp, w, m, hd, vni), hd != h,
    host(hd, hip, _, _), tunnel_actions(vni, hip, a).
tun_target(vni, hip) :- hostlb_dip(_, _, _, _, _, _, _, _, hd, vni), host(hd, hip, _, _).
// buckets in (DIP, target port) order
.decl hostlb_rank(h: Device, vip: ipv4, pr: Proto, po: L4Port, ip: ipv4, tp: L4Port, r: number)
.decl hostlb_bbefore(h: Device, vip: ipv4, pr: Proto, po: L4Port, ip: ipv4, tp: L4Port, ip2: ipv4, tp2: L4Port)
hostlb_bbefore(h, vip, pr, po, ip, tp, ip2, tp2) :-
    hostlb_bucket(h, vip, pr, po, ip, tp, _), hostlb_bucket(h, vip, pr, po, ip2, tp2, _), ip2 < ip.
hostlb_bbefore(h, vip, pr, po, ip, tp, ip, tp2) :-
    hostlb_bucket(h, vip, pr, po, ip, tp, _), hostlb_bucket(h, vip, pr, po, ip, tp2, _), tp2 < tp.
hostlb_rank(h, vip, pr, po, ip, tp, r) :-
    hostlb_bucket(h, vip, pr, po, ip, tp, _), r = count : { hostlb_bbefore(h, vip, pr, po, ip, tp, _ip2, _tp2) }.
.decl hostlb_upto(h: Device, vip: ipv4, pr: Proto, po: L4Port, r: number, text: symbol)
hostlb_upto(h, vip, pr, po, 0, s) :- hostlb_rank(h, vip, pr, po, ip, tp, 0), hostlb_bucket(h, vip, pr, po, ip, tp, s).
hostlb_upto(h, vip, pr, po, r, cat(s0, ",", s)) :-
    hostlb_upto(h, vip, pr, po, r0, s0), hostlb_rank(h, vip, pr, po, ip, tp, r), r0 = r - 1, hostlb_bucket(h, vip, pr, po, ip, tp, s).
.decl hostlb_n(h: Device, vip: ipv4, pr: Proto, po: L4Port, n: number)
hostlb_n(h, vip, pr, po, n) :- hostlb_bucket(h, vip, pr, po, _, _, _), n = count : { hostlb_bucket(h, vip, pr, po, _ip, _tp, _s) }.
// the hash covers the 5-tuple (OVS's own hash: see specs/ovs-pipeline.md on AFF-1)
.decl hostlb_fields(pr: Proto, f: symbol)
hostlb_fields(6, "selection_method=hash,fields(ip_src,ip_dst,nw_proto,tcp_src,tcp_dst)").
hostlb_fields(17, "selection_method=hash,fields(ip_src,ip_dst,nw_proto,udp_src,udp_dst)").
hostlb_fields(pr, "selection_method=hash,fields(ip_src,ip_dst,nw_proto)") :- hostlb_vip(_, _, _, _, pr, _), pr != 6, pr != 17.
ovs_group(h, id, "select", cat(f, ",", s)) :-
    hostlb_gid(h, vip, pr, po, id), hostlb_fields(pr, f), hostlb_n(h, vip, pr, po, n), hostlb_upto(h, vip, pr, po, r, s), r = n - 1.
ovs_group(h, id, "select", f) :-
    hostlb_gid(h, vip, pr, po, id), hostlb_fields(pr, f), !hostlb_n(h, vip, pr, po, _).
'''


def rules_dir(tmp: Path, reference: bool) -> list[str]:
    d = tmp / ("ref" if reference else "new")
    d.mkdir()
    for p in (REPO / "rules").glob("*.ndl"):
        text = p.read_text()
        if p.name == "lb_ananta.ndl":
            a, b = text.index(START), text.index(END)
            if reference:
                text = text[:a] + REFERENCE + text[b:]
            else:
                text += "\n.output hostlb_nlocal, hostlb_complex\n"
        (d / p.name).write_text(text)
    return sorted(str(p) for p in d.glob("*.ndl"))


def run(netc_bin, rules, intent):
    return {k: sorted(v) for k, v in run_dump(netc_bin, [*rules, str(intent)]).items()}


def generate(netc_bin, path, seed, hosts, tenants, vms, vips, max_dips):
    cmd = [netc_bin, "gen", "--preset", "S", "--seed", str(seed), "--hosts", str(hosts), "--tenants", str(tenants),
           "--vms-per-tenant", str(vms), "--vips", str(vips), "--max-dips", str(max_dips), "--flows", "4",
           "--out", str(path)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr


def compare(netc_bin, tmp_path, knobs):
    intent = tmp_path / "intent.ndl"
    generate(netc_bin, intent, *knobs)
    new = run(netc_bin, rules_dir(tmp_path, False), intent)
    ref = run(netc_bin, rules_dir(tmp_path, True), intent)
    assert not {k: v for k, v in new.items() if k.startswith("error_") and v}
    assert new["ovs_group"] == ref["ovs_group"]
    assert new["ovs_flow"] == ref["ovs_flow"]
    return new


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.integers(1, 10_000),
    st.integers(2, 12),
    st.integers(2, 6),
    st.integers(2, 12),
    st.integers(1, 12),
    st.integers(1, 8),
)
def test_spliced_groups_equal_per_host_groups(netc_bin, tmp_path_factory, seed, hosts, tenants, vms, vips, max_dips):
    compare(netc_bin, tmp_path_factory.mktemp("hostlb"), (seed, hosts, tenants, vms, vips, max_dips))


def test_every_kind_of_host_is_exercised(netc_bin, tmp_path):
    # 3 hosts, 8 VMs per tenant and up to 8 DIPs per VIP: hosts holding
    # several DIPs of a VIP (their own list), one (the splice), and none.
    rels = compare(netc_bin, tmp_path, (7, 3, 4, 8, 12, 8))
    assert any(r[-1] == "1" for r in rels["hostlb_nlocal"]), "no host holding exactly one DIP"
    assert rels["hostlb_complex"], "no host holding several DIPs"
