"""The intent model (rules/*.ndl) on every example (examples/*/intent.ndl).

Each test runs `netc run -D - rules/*.ndl <intent files>` and checks the KEY
outputs of the example against values computed here, independently of the
rules, from the intent facts (parsed with a small fact reader below):

  * every example: no error_* row;
  * quickstart/ananta: ordered DIP vectors, resilient slot remap, SNAT, DSR,
    Fastpath, and AFF-1 (hash5 computed here with zlib.crc32 picks the same
    DIP as the rules' hash5 over the vector);
  * duet: with the fixed placement of examples/duet/placement.ndl: DIP
    vectors, ECMP and tunnel entries on the placed switch, /32 announcements,
    the two-level TIP fan-out, and the placement itself against the
    reference greedy (examples/duet/placement_ref.py);
  * rubik: every DIP in exactly one mapping, local mappings not announced;
  * yoda: rules on every assigned instance, L4 mapping only to ready ones;
  * anolis: chains, head/tail, FCN, sync ops and gateway ECMP computed from
    the ring facts per the paper's definitions;
  * athena: two tenants sharing 239.1.1.1 get disjoint distributions
    (packets are followed through the P4 replicas and OVS groups);
  * andromeda: offload flows exactly for pairs above the threshold; flows
    grow linearly with network size under Hoverboard, quadratically without;
  * nfchain: on every host of the tenant, one symmetric dp_hash group per
    hop with the same instances in the same order, the steering flows of
    both directions, the fan-out to the hops, the copies' delivery;
  * tests/data/bad_intent/*.ndl: each yields exactly the error_* relations
    its first line announces.
"""

from __future__ import annotations

import importlib.util
import ipaddress
import re
import struct
import subprocess
import zlib
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from netc_dump import run_dump
from test_intent_errors import extra_facts

REPO = Path(__file__).resolve().parent.parent
RULES = sorted(str(p) for p in (REPO / "rules").glob("*.ndl"))
EXAMPLES = REPO / "examples"
BAD = REPO / "tests" / "data" / "bad_intent"

pytestmark = pytest.mark.netc


# ---------------------------------------------------------------- running netc
def run_netc(netc_bin: str, *intent: str | Path, extra_text: str | None = None, tmp_path: Path | None = None):
    files = [str(p) for p in intent]
    if extra_text is not None:
        assert tmp_path is not None
        p = tmp_path / "extra.ndl"
        p.write_text(extra_text)
        files.append(str(p))
    return run_dump(netc_bin, [*RULES, *files], timeout=600)


def errors(rels):
    return {k: v for k, v in rels.items() if k.startswith("error_") and v}


# ---------------------------------------------------------------- reading intent facts
_FACT = re.compile(r"([a-z_][a-z0-9_]*)\((.*)\)\.\s*$")


def _split_args(s: str) -> list[str]:
    out, cur, q = [], "", False
    for ch in s:
        if ch == '"':
            q = not q
            continue
        if ch == "," and not q:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    out.append(cur.strip())
    return out


def read_facts(*paths: Path) -> dict[str, list[tuple[str, ...]]]:
    facts: dict[str, list[tuple[str, ...]]] = defaultdict(list)
    for p in paths:
        for raw in Path(p).read_text().splitlines():
            line = re.sub(r"//.*$", "", raw).strip()
            # several facts may share a line
            for part in re.findall(r"[a-z_][a-z0-9_]*\([^()]*\)\.", line):
                m = _FACT.match(part)
                if m and ":-" not in line:
                    facts[m.group(1)].append(tuple(_split_args(m.group(2))))
    return facts


def ip(s: str) -> int:
    return int(ipaddress.ip_address(s))


# ---------------------------------------------------------------- hash5 (specs/functors.md §6), independently
def hash5(proto: int, src: str, dst: str, sport: int, dport: int) -> int:
    data = struct.pack("!BIIHH", proto, ip(src), ip(dst), sport, dport)
    return zlib.crc32(data) & 0xFFFFFFFF


def test_hash5_vector():
    assert hash5(6, "10.0.0.1", "10.0.0.2", 12345, 80) == 0x09275D9F


# ---------------------------------------------------------------- every example is clean
ALL = [
    ("quickstart", ["intent.ndl"]),
    ("ananta", ["intent.ndl"]),
    ("duet", ["intent.ndl", "placement.ndl"]),
    ("rubik", ["intent.ndl", "placement.ndl"]),
    ("yoda", ["intent.ndl"]),
    ("anolis", ["intent.ndl"]),
    ("athena", ["intent.ndl"]),
    ("andromeda", ["intent.ndl"]),
    ("nfchain", ["intent.ndl"]),
]
_cache: dict[str, dict] = {}


def example(netc_bin, name):
    if name not in _cache:
        files = dict(ALL)[name]
        _cache[name] = run_netc(netc_bin, *[EXAMPLES / name / f for f in files])
    return _cache[name]


@pytest.mark.parametrize("name", [n for n, _ in ALL])
def test_example_has_no_errors(netc_bin, name):
    rels = example(netc_bin, name)
    assert "ovs_flow" in rels, "the run printed no ovs_flow relation"
    assert errors(rels) == {}
    for f in dict(ALL)[name]:
        assert (EXAMPLES / name / f).is_file()
    assert (EXAMPLES / name / "README.md").is_file()


# ---------------------------------------------------------------- shared checks
def expected_vector(facts, vip, proto, port, down=()):
    """Ordered, weighted, resilient DIP vector of a one-level VIP endpoint."""
    vms = {(t, n): (ipx, h) for t, n, _m, ipx, h in facts["vm"]}
    dips = []
    for v, pr, po, t, n, tp, w in facts["dip_pool"]:
        if (v, pr, po) == (vip, str(proto), str(port)):
            dips.append((ip(vms[(t, n)][0]), int(tp), vms[(t, n)][0], (t, n), int(w)))
    dips.sort()
    slots = []
    for _k, tp, addr, key, w in dips:
        slots += [(addr, key, tp)] * w
    live = [i for i, s in enumerate(slots) if (s[1], s[2]) not in down]
    out = []
    for i, s in enumerate(slots):
        if (s[1], s[2]) in down:
            s = slots[live[i % len(live)]]
        out.append(s[0])
    return out


def vector_of(rels, rel, vip, proto, port, where=None):
    rows = rels[rel]
    if where is None:
        sel = [(int(r[3]), r[5]) for r in rows if r[0:3] == (vip, str(proto), str(port))]
    else:
        sel = [(int(r[4]), r[6]) for r in rows if r[0] == where and r[1:4] == (vip, str(proto), str(port))]
    sel.sort()
    assert [i for i, _ in sel] == list(range(len(sel))), "indices are not 0..n-1"
    return [m for _, m in sel]


def check_aff1(tmp_path, netc_bin, intent, vip, proto, port, rels):
    """The rules' hash5 % n over the vector == this file's crc32 % n."""
    flows = [(f"198.18.{i}.{j}", 1024 + 7 * i + j) for i in range(3) for j in range(1, 6)]
    extra = (
        "\n".join(f"aff_flow({a}, {sp})." for a, sp in flows)
        + f"""
.decl aff_flow(src: ipv4, sport: number)
.decl aff_choice(src: ipv4, sport: number, dip: ipv4)
aff_choice(s, sp, d) :- aff_flow(s, sp), lb_vector({vip}, {proto}, {port}, 0, n),
    i = hash5({proto}, s, {vip}, sp, {port}) % itou(n), lb_member({vip}, {proto}, {port}, j, _, d), itou(j) = i.
.output aff_choice
"""
    )
    out = run_netc(netc_bin, intent, extra_text=extra, tmp_path=tmp_path)
    vec = vector_of(rels, "lb_member", vip, proto, port)
    got = {(r[0], int(r[1])): r[2] for r in out["aff_choice"]}
    assert len(got) == len(flows)
    for a, sp in flows:
        assert got[(a, sp)] == vec[hash5(proto, a, vip, sp, port) % len(vec)]


def acl_pair_verdicts(rels):
    """(src vm, dst vm, port) -> action, joined from the per-class report."""
    cls = {(r[0], r[1]): (r[2], r[3]) for r in rels["acl_vm_class"]}
    by_class = {}
    for t, cs, cd, _proto, port, a in rels["acl_class_verdict"]:
        by_class.setdefault((t, cs, cd), []).append((port, a))
    out = {}
    for (t, s), (cs, _) in cls.items():
        for (t2, d), (_, cd) in cls.items():
            if t2 == t and s != d:
                for port, a in by_class.get((t, cs, cd), []):
                    out[(s, d, port)] = a
    return out


# ---------------------------------------------------------------- quickstart
def test_quickstart(netc_bin, tmp_path):
    rels = example(netc_bin, "quickstart")
    facts = read_facts(EXAMPLES / "quickstart" / "intent.ndl")
    vec = expected_vector(facts, "203.0.113.10", 6, 80)
    assert vector_of(rels, "lb_member", "203.0.113.10", 6, 80) == vec == ["10.1.1.11", "10.1.1.12"]
    assert vector_of(rels, "agent_mux_member", "203.0.113.10", 6, 80, where="mux1") == vec
    # public VIP: plain packets and the tenant's own VNI
    assert {r[1] for r in rels["agent_mux_vip"]} == {"0", "5001"}
    # tunnels only between hosts of the same vnet: globex (5002) only h1<->h4
    peers = {(r[0], r[1], r[2]) for r in rels["ovs_tunnel_peer"]}
    assert {p for p in peers if p[1] == "5002"} == {("h1", "5002", "h4"), ("h4", "5002", "h1")}
    # anti-spoofing: one ip + one arp flow per VM port, a drop per port
    t0 = [r for r in rels["ovs_flow"] if r[1] == "0"]
    assert sum("nw_src=" in r[3] for r in t0) == 5
    assert sum(r[2] == "10" and r[4] == "drop" for r in t0) == 5
    # ACL verdicts: web->db 5432 allowed (200 > 100), ssh to db denied
    verdict = acl_pair_verdicts(rels)
    assert verdict[("web1", "db1", "5432")] == "allow"
    assert verdict[("web1", "db1", "22")] == "deny"
    assert verdict[("db1", "web1", "22")] == "allow"
    # multicast: only acme's VNI
    assert {r[1] for r in rels["p4_mcast"]} == {"5001"}
    check_aff1(tmp_path, netc_bin, EXAMPLES / "quickstart" / "intent.ndl", "203.0.113.10", 6, 80, rels)


# ---------------------------------------------------------------- ananta
def test_ananta(netc_bin, tmp_path):
    rels = example(netc_bin, "ananta")
    path = EXAMPLES / "ananta" / "intent.ndl"
    facts = read_facts(path)
    down = {(("contoso", "web2"), 8080)}
    vec = expected_vector(facts, "131.107.0.10", 6, 80, down=down)
    assert vector_of(rels, "lb_member", "131.107.0.10", 6, 80) == vec
    assert vec == ["10.10.1.11", "10.10.1.13", "10.10.1.13", "10.10.1.13", "10.10.1.14"]
    # resilient hashing: with web2 healthy only slot 1 differs
    healthy_text = path.read_text().replace('dip_health("contoso", "web2", 6, 8080, "down").', "")
    hp = tmp_path / "healthy.ndl"
    hp.write_text(healthy_text)
    healthy = vector_of(run_netc(netc_bin, hp), "lb_member", "131.107.0.10", 6, 80)
    assert [i for i in range(len(vec)) if vec[i] != healthy[i]] == [1]
    assert healthy[1] == "10.10.1.12"
    # every Mux of the pool holds the same vector, the SNAT grants and the black hole
    muxes = {r[0] for r in facts["smux"]}
    assert len(muxes) == 8
    for m in muxes:
        assert vector_of(rels, "agent_mux_member", "131.107.0.10", 6, 80, where=m) == vec
    snat = {(r[1], r[2], r[3]) for r in rels["agent_mux_snat"]}
    assert len(rels["agent_mux_snat"]) == 8 * len(snat) == 8 * 4
    assert {r[1] for r in rels["agent_mux_blackhole"]} == {"131.107.1.50"} and len(rels["agent_mux_blackhole"]) == 8
    # SNAT ranges: 8 ports, disjoint per VIP
    ranges = defaultdict(list)
    for h, t, v, dip, svip, lo, hi in rels["agent_snat_range"]:
        assert int(hi) - int(lo) == 7
        ranges[svip].append(range(int(lo), int(hi) + 1))
    for rs in ranges.values():
        ports = [p for r in rs for p in r]
        assert len(ports) == len(set(ports))
    # DSR and DNAT on every DIP host
    dnat = [r for r in rels["ovs_flow"] if r[1] == "40" and r[2] == "110"]
    dsr = [r for r in rels["ovs_flow"] if r[1] == "15" and r[2] == "100"]
    assert len(dnat) == len(dsr) == 4 + 2 + 1
    # Fastpath: h3 sends app1's connection straight to sql1's host h2
    fp = [r for r in rels["ovs_flow"] if r[0] == "h3" and r[2] == "120"]
    assert len(fp) == 1 and "tp_src=49152" in fp[0][3] and "192.168.0.12->tun_dst" in fp[0][4]
    check_aff1(tmp_path, netc_bin, path, "131.107.0.10", 6, 80, rels)


# ---------------------------------------------------------------- duet
def _load_placement_ref():
    spec = importlib.util.spec_from_file_location("placement_ref", EXAMPLES / "duet" / "placement_ref.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_duet(netc_bin):
    rels = example(netc_bin, "duet")
    facts = read_facts(EXAMPLES / "duet" / "intent.ndl", EXAMPLES / "duet" / "placement.ndl")
    placement = dict(facts["vip_placement"])
    hosts = {h: u for h, u, _t, _p in facts["host"]}
    vms = {ipx: (m, h) for _t, _n, m, ipx, h in facts["vm"]}
    announced = {(r[0], r[1]) for r in rels["p4_announce"]}
    for t, vip, pr, po, _e in facts["vip"]:
        dips = expected_vector(facts, vip, pr, po)
        sw = placement.get(vip)
        p4 = [r for r in rels["p4_vip"] if r[2] == vip]
        if sw is None:
            assert p4 == [] and not any(a[1] == f"{vip}/32" for a in announced)
            continue
        assert {r[0] for r in p4} == {sw} and (sw, f"{vip}/32") in announced
        members = vector_of(rels, "p4_ecmp_member", vip, pr, po, where=sw)
        if len(dips) <= 512:
            assert members == dips
            tun = {(r[2], r[3], r[4]) for r in rels["p4_tunnel"] if r[0] == sw}
            for d in dips:
                assert (d, hosts[vms[d][1]], vms[d][0]) in tun
        else:
            # two levels: k = ceil(600/512) = 2 TIPs; DIP of rank r in partition r % k
            k = -(-len(dips) // 512)
            tip_base = ip(next(p for v, p in facts["duet_tip_range"] if v == vip).split("/")[0])
            tips = [str(ipaddress.ip_address(tip_base + p)) for p in range(k)]
            assert members == tips
            seen = []
            for p, tip in enumerate(tips):
                tsw = placement[tip]
                tvec = vector_of(rels, "p4_ecmp_member", tip, pr, po, where=tsw)
                assert tvec == [d for r, d in enumerate(dips) if r % k == p]
                assert (tsw, f"{tip}/32") in announced
                seen += tvec
                # the SMuxes hold the same two levels
                assert vector_of(rels, "agent_mux_member", tip, pr, po, where="smux1") == tvec
            assert sorted(seen, key=ip) == dips and len(set(seen)) == len(dips) == 600
    # CAP-1 holds on every switch
    for sw, _r, _l, hc, ec, tc in facts["switch"]:
        assert sum(r[0] == sw for r in rels["p4_vip"]) <= int(hc)
        assert sum(r[0] == sw for r in rels["p4_ecmp_member"]) <= int(ec)
        assert sum(r[0] == sw for r in rels["p4_tunnel"]) <= int(tc)
    # the placement is what the reference greedy computes from the rules' placement_* outputs
    ref = _load_placement_ref()
    traffic = defaultdict(dict)
    for v, s, m in facts["placement_traffic"]:
        traffic[v][s] = int(m)
    assert ref.place_from_outputs(rels, traffic) == placement


# ---------------------------------------------------------------- rubik
def test_rubik(netc_bin):
    rels = example(netc_bin, "rubik")
    facts = read_facts(EXAMPLES / "rubik" / "intent.ndl")
    vm_host = {n: h for _t, n, _m, _i, h in facts["vm"]}
    host_tor = {h: tor for h, _u, tor, _p in facts["host"]}
    local_tors = {tor for _v, tor in facts["rubik_local"]}
    mapping = Counter((r[5], r[3]) for r in rels["rubik_mapping"])
    pool = [r[4] for r in facts["dip_pool"]]
    assert sorted(n for n, _ in mapping) == sorted(pool)  # every DIP exactly once
    for (n, where), c in mapping.items():
        assert c == 1
        tor = host_tor[vm_host[n]]
        assert where == (tor if tor in local_tors else "residual")
    # local mappings live on their ToR and are not announced; the residual is
    assert {r[0] for r in rels["p4_vip_local"]} == local_tors
    assert {a[0] for a in rels["p4_announce"]} == {"agg1"}
    assert not any(a[0] in local_tors for a in rels["p4_announce"])
    assert len(rels["p4_ecmp_member_local"]) + len(rels["p4_ecmp_member"]) == len(pool)


# ---------------------------------------------------------------- yoda
def test_yoda(netc_bin):
    rels = example(netc_bin, "yoda")
    facts = read_facts(EXAMPLES / "yoda" / "intent.ndl")
    rules = {(v, n, p) for v, n, p, _m, _a in facts["l7_rule"]}
    for inst in ("y1", "y2"):
        assert {(r[1], r[2], r[3]) for r in rels["agent_l7_rule"] if r[0] == inst} == rules
    assert not any(r[0] == "y3" for r in rels["agent_l7_rule"])
    assert rels["yoda_l4_mapping"] == [("52.0.0.10", "y1")]
    assert vector_of(rels, "lb_member", "52.0.0.10", 6, 80) == ["10.90.0.1"]


# ---------------------------------------------------------------- anolis
def anolis_model(facts, cluster):
    L = int(next(r[1] for r in facts["anolis_cluster"] if r[0] == cluster))
    synced = int(next(r[1] for r in facts["anolis_synced"] if r[0] == cluster))
    current = int(next(r[1] for r in facts["anolis_current"] if r[0] == cluster))
    ring = defaultdict(dict)
    for c, v, n, pos in facts["anolis_peer"]:
        if c == cluster and synced <= int(v) <= current:
            ring[int(v)][n] = int(pos)
    positions = sorted({p for r in ring.values() for p in r.values()})
    ranges = [(positions[i - 1], positions[i]) for i in range(len(positions))]  # i=0 wraps
    chains = {}
    for v, nodes in ring.items():
        order = sorted(nodes, key=nodes.get)
        for lo, hi in ranges:
            tail = next((n for n in order if nodes[n] >= hi), order[0])
            t = order.index(tail)
            ln = min(L, len(order))
            # head = (L-1)-th predecessor of the tail
            chains[(v, lo, hi)] = [order[(t - d) % len(order)] for d in range(ln - 1, -1, -1)]
    fcn = {}
    for lo, hi in ranges:
        first = chains[(synced, lo, hi)]
        later = [chains[(v, lo, hi)] for v in ring]
        fcn[(lo, hi)] = next((n for n in first if all(n in c for c in later)), None)
    return chains, fcn, synced, current, ring


def test_anolis(netc_bin):
    rels = example(netc_bin, "anolis")
    facts = read_facts(EXAMPLES / "anolis" / "intent.ndl")
    chains, fcn, synced, current, ring = anolis_model(facts, "isp-lb")
    got = defaultdict(dict)
    for c, v, lo, hi, i, n in rels["anolis_chain"]:
        got[(int(v), int(lo), int(hi))][int(i)] = n
    got = {k: [d[i] for i in range(len(d))] for k, d in got.items()}
    assert got == chains
    for (v, _lo, hi), ch in chains.items():  # tail = ring owner of the range's keys
        owners = sorted((p, n) for n, p in ring[v].items() if p >= hi) or sorted((p, n) for n, p in ring[v].items())
        assert ch[-1] == owners[0][1]
    assert {(int(r[1]), int(r[2])): r[3] for r in rels["anolis_fcn"]} == fcn
    changed = {k for k in fcn if set(chains[(synced, *k)]) != set(chains[(current, *k)])}
    assert {(int(r[3]), int(r[4])): r[0] for r in rels["agent_anolis_sync"]} == {k: fcn[k] for k in changed}
    # gateway ECMP set = current peer list, in ring order
    addr = {n: a for _c, n, a in facts["anolis_node"]}
    order = sorted(ring[current], key=ring[current].get)
    assert [r[3] for r in sorted(rels["p4_route_member"], key=lambda r: int(r[2]))] == [addr[n] for n in order]
    # every NF's default gateway is a current peer
    defaults = {r[0]: r[3] for r in rels["agent_nf_gateway"] if r[5] == "1"}
    assert defaults == {nf: gw for _c, nf, _a, gw in facts["anolis_nf"]}
    assert all(g in ring[current] for g in defaults.values())


# ---------------------------------------------------------------- athena
def deliveries(rels, facts, vni, group, sender):
    """Follow one multicast packet of (vni, group) from the sender VM through
    the OVS and P4 outputs; returns the set of (tenant, vm) it reaches."""
    vm_of_port = {(h, int(p)): (t, n) for h, t, n, p in facts["vm_port"]}
    vm_host = {(t, n): h for t, n, _m, _i, h in facts["vm"]}
    host_at = {(tor, int(p)): h for h, _u, tor, p in facts["host"]}
    host_port = {h: (tor, int(p)) for h, _u, tor, p in facts["host"]}
    nbr = {}
    for a, ap, b, bp, _c in facts["link"]:
        nbr[(a, int(ap))] = (b, int(bp))
        nbr[(b, int(bp))] = (a, int(ap))
    mgid = {(r[0], r[1], r[2]): r[3] for r in rels["p4_mcast"]}
    reps = defaultdict(set)
    for sw, gid, port in rels["p4_mcast_replica"]:
        reps[(sw, gid)].add(int(port))
    groups = {(r[0], r[1]): r[3] for r in rels["ovs_group"]}

    def ovs(host, table):
        hit = [
            r
            for r in rels["ovs_flow"]
            if r[0] == host and r[1] == table and f"reg6={vni}," in r[3] and r[3].endswith(f"nw_dst={group}")
        ]
        assert len(hit) <= 1
        return hit[0][4] if hit else None

    def group_members(host, actions, in_port=None):
        out = set()
        m = re.search(r"group:(\d+)", actions or "")
        if m:
            for b in re.findall(r"output:(\d+)", groups[(host, m.group(1))]):
                if int(b) != in_port:
                    out.add(vm_of_port[(host, int(b))])
        return out

    shost = vm_host[sender]
    sport = next(int(p) for h, t, n, p in facts["vm_port"] if (t, n) == sender)
    act = ovs(shost, "30")
    got = group_members(shost, act, sport)
    if act and "tun_dst" in act:
        assert f"set_field:{vni}->tun_id" in act
        seen = set()
        todo = [(*host_port[shost], True)]
        while todo:
            sw, inport, _ = todo.pop()
            if (sw, inport) in seen:
                continue
            seen.add((sw, inport))
            gid = mgid.get((sw, vni, group))
            if gid is None:
                continue
            for p in reps[(sw, gid)] - {inport}:
                if (sw, p) in host_at:
                    h = host_at[(sw, p)]
                    got |= group_members(h, ovs(h, "40"))
                else:
                    todo.append((*nbr[(sw, p)], False))
    return got


def test_athena_disjoint(netc_bin):
    rels = example(netc_bin, "athena")
    facts = read_facts(EXAMPLES / "athena" / "intent.ndl")
    # (vni, group) keys: red and blue share 239.1.1.1 but never a multicast group id
    for sw in {r[0] for r in rels["p4_mcast"]}:
        ids = [r[3] for r in rels["p4_mcast"] if r[0] == sw]
        assert len(ids) == len(set(ids))
    red = deliveries(rels, facts, "100", "239.1.1.1", ("red", "r0"))
    assert red == {("red", "r1"), ("red", "r2"), ("red", "r3")}  # r4 denied
    for sender in (("blue", "b1"), ("blue", "b2"), ("blue", "b3")):
        blue = deliveries(rels, facts, "200", "239.1.1.1", sender)
        assert blue == {("blue", "b1"), ("blue", "b2"), ("blue", "b3")} - {sender}  # b4 not on the allow list
    assert deliveries(rels, facts, "200", "239.2.2.2", ("blue", "b1")) == {("blue", "b4")}
    # no replica of a red key ever leads to a blue-only host and vice versa
    assert {(r[0], r[2]) for r in rels["mcast_rejected"]} == {("red", "r4"), ("blue", "b4")}
    for h, t, vni, _g, vm in rels["agent_mcast_member"]:
        assert (t, vm) in {(x[0], x[1]) for x in facts["vm"]}


# ---------------------------------------------------------------- andromeda
def _andromeda_gen():
    spec = importlib.util.spec_from_file_location("andromeda_gen", EXAMPLES / "andromeda" / "gen_intent.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_andromeda_offload(netc_bin):
    rels = example(netc_bin, "andromeda")
    facts = read_facts(EXAMPLES / "andromeda" / "intent.ndl")
    th = int(facts["offload_threshold"][0][0])
    vm = {(t, n): (i, h) for t, n, _m, i, h in facts["vm"]}
    hosts = {h: u for h, u, _t, _p in facts["host"]}
    expect = {(s, d) for t, s, d, k in facts["flow_usage"] if int(k) > th and vm[(t, s)][1] != vm[(t, d)][1]}
    assert {(r[1], r[2]) for r in rels["andromeda_offload"]} == expect and expect
    off = [r for r in rels["ovs_flow"] if r[1] == "30" and r[2] == "110"]
    assert len(off) == len(expect)
    for s, d in expect:
        (sip, sh), (dip, dh) = vm[("hb", s)], vm[("hb", d)]
        assert any(r[0] == sh and f"nw_src={sip},nw_dst={dip}" in r[3] and f"{hosts[dh]}->tun_dst" in r[4] for r in off)
    # hosts of the Hoverboard network know no remote VM: every other
    # destination goes to the Hoverboard select group
    remote = [
        r
        for r in rels["ovs_flow"]
        if r[0] in hosts and r[1] == "30" and r[2] == "100" and "reg6=4001" in r[3] and "tun_dst" in r[4]
    ]
    assert remote == []
    # ... while the Hoverboards hold a route to every VM of the network
    n_hb = sum(1 for t, *_ in facts["vm"] if t == "hb")
    for hb, _ip in facts["hoverboard"]:
        assert sum(r[0] == hb and r[1] == "30" and "reg6=4001" in r[3] for r in rels["ovs_flow"]) == n_hb
    assert all(len(re.findall("bucket=", r[3])) == 2 for r in rels["ovs_group"] if r[1] == "1")


def test_andromeda_growth(netc_bin, tmp_path):
    gen = _andromeda_gen()
    counts = {}
    for n in (12, 24, 48):
        p = tmp_path / f"a{n}.ndl"
        p.write_text(gen.generate(vms_per_net=n, hosts=n // 3, usage=[]))
        rels = run_netc(netc_bin, p)
        assert errors(rels) == {}
        flows = Counter()
        for r in rels["ovs_flow"]:
            for vni in ("4001", "4002"):
                if f"reg6={vni}" in r[3] or f"tun_id={vni}" in r[3]:
                    flows[vni] += 1
        counts[n] = flows
    # doubling the network (VMs and hosts) doubles Hoverboard flows, quadruples preprogrammed ones
    for a, b in ((12, 24), (24, 48)):
        hb = counts[b]["4001"] / counts[a]["4001"]
        pp = counts[b]["4002"] / counts[a]["4002"]
        assert 1.8 <= hb <= 2.2, counts
        assert pp >= 3.2, counts


# ---------------------------------------------------------------- NF chains (AFF-3)
def test_nfchain(netc_bin):
    facts = read_facts(EXAMPLES / "nfchain" / "intent.ndl")
    rels = example(netc_bin, "nfchain")
    vni = next(r[1] for r in facts["tenant"] if r[0] == "shop")
    vms = {r[1]: r for r in facts["vm"] if r[0] == "shop"}  # name -> (tenant, name, mac, ip, host)
    port = {r[2]: r[3] for r in facts["vm_port"] if r[1] == "shop"}
    host_ip = {r[0]: r[1] for r in facts["host"]}
    hops: dict[int, list[str]] = defaultdict(list)
    for _t, _c, hop, v in facts["nf_instance"]:
        hops[int(hop)].append(v)
    shop_hosts = {v[4] for v in vms.values()}
    groups = {(r[0], int(r[1])): r for r in rels["ovs_group"]}
    flows = defaultdict(set)
    for h, t, p, m, a, _c in rels["ovs_flow"]:
        flows[(h, int(t), int(p))].add((m, a))
    steer = set()
    for _t, _c, src, dst, proto, po in facts["nf_steer"]:
        pn = {"6": "tcp", "17": "udp"}[proto]
        fwd_port = f",tp_dst={po}" if po != "0" else ""
        rev_port = f",tp_src={po}" if po != "0" else ""
        steer.add(f"{pn},reg5=0,reg6={vni},nw_src={src},nw_dst={dst}{fwd_port}")
        steer.add(f"{pn},reg5=0,reg6={vni},nw_src={dst},nw_dst={src}{rev_port}")
    for h in shop_hosts:
        for hop, instances in hops.items():
            kind, text = groups[(h, 10000 + hop)][2:4]
            head, *buckets = text.split(",bucket=actions=")
            assert kind == "select"
            assert head == f"selection_method=dp_hash,selection_method_param={(1 << 32) | hop}"
            want = []
            for v in sorted(instances):
                _t, _n, mac, _ip, vh = vms[v]
                if vh == h:
                    want.append(f"mod_dl_src:fe:ff:ff:ff:ff:ff,mod_dl_dst:{mac},output:{port[v]}")
                else:
                    want.append(f"mod_dl_src:fe:ff:ff:ff:ff:ff,mod_dl_dst:{mac},"
                                f"set_field:{vni}->tun_id,set_field:{host_ip[vh]}->tun_dst,output:1")
            assert buckets == want, (h, hop)
        tap = "load:1->NXM_NX_REG5[],resubmit(,45),resubmit(,30)"
        assert flows[(h, 30, 130)] == {(m, tap) for m in steer}, h
        fan = ",".join(f"group:{10000 + hop}" for hop in sorted(hops))
        assert flows[(h, 45, 100)] == {(f"reg5=1,reg6={vni}", fan)}, h
    # copies tunnelled to an instance (source: the router MAC) are delivered by its MAC on its host
    for v in {v for vs in hops.values() for v in vs}:
        _t, _n, mac, _ip, vh = vms[v]
        assert (f"ip,reg6={vni},dl_src=fe:ff:ff:ff:ff:ff,dl_dst={mac}",
                f"mod_dl_src:fe:ff:ff:ff:ff:ff,mod_dl_dst:{mac},output:{port[v]}") in flows[(vh, 40, 108)]
    assert sorted((r[0], r[3], r[4]) for r in rels["agent_nf_instance"]) == sorted(
        (vms[v][4], str(hop), v) for hop, vs in hops.items() for v in vs)


# ---------------------------------------------------------------- bad intent
@pytest.mark.parametrize("path", sorted(BAD.glob("*.ndl")), ids=lambda p: p.stem)
def test_bad_intent(netc_bin, path, tmp_path):
    first = path.read_text().splitlines()[0]
    m = re.match(r"//\s*expect:\s*(.*)$", first)
    assert m, f"{path.name}: first line must be `// expect: error_...`"
    expected = {e.strip() for e in m.group(1).split(",")}
    files = [path, *extra_facts(path, tmp_path)]
    rels = run_netc(netc_bin, *files)
    assert set(errors(rels)) == expected


# ---------------------------------------------------------------- OVS flows are valid ovs-ofctl syntax
@pytest.mark.parametrize("name", ["quickstart", "ananta", "rubik", "yoda", "athena", "andromeda", "nfchain"])
def test_ovs_flows_parse(netc_bin, name, tmp_path):
    """Every ovs_flow row, rendered as specs/targets.md §3.1 says, is accepted
    by `ovs-ofctl parse-flows` (skipped when Open vSwitch is not installed)."""
    import shutil

    ofctl = shutil.which("ovs-ofctl")
    if ofctl is None:
        pytest.skip("ovs-ofctl not installed (Debian: openvswitch-common)")
    rels = example(netc_bin, name)
    lines = sorted(
        {
            f"table={t},priority={p},cookie={c}" + (f",{m}" if m else "") + f",actions={a}"
            for _h, t, p, m, a, c in rels["ovs_flow"]
        }
    )
    f = tmp_path / "flows.txt"
    f.write_text("\n".join(lines) + "\n")
    r = subprocess.run([ofctl, "parse-flows", str(f)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.count("FLOW_MOD") == len(lines)
    # one OpenFlow key (table, priority, match) per bridge
    keys = Counter((h, t, p, m) for h, t, p, m, _a, _c in rels["ovs_flow"])
    assert max(keys.values()) == 1


# ---------------------------------------------------------------- ACL port ranges -> masked matches
def test_acl_port_ranges(netc_bin, tmp_path):
    ranges = [(80, 80), (1000, 2000), (1, 65534), (0, 1023), (3, 12), (1024, 65535), (0, 65535), (32768, 32769)]
    lines = ['switch("tor1", "tor", 10.255.0.1, 16384, 4096, 512).', 'host("h1", 192.168.0.11, "tor1", 1).']
    lines += ['tenant("t", 7).', 'vnet("t", "n", 10.0.0.0/16).', 'vm("t", "a", 02:00:00:00:00:01, 10.0.0.1, "h1").']
    lines += ['vm_port("h1", "t", "a", 10).']
    for i, (lo, hi) in enumerate(ranges):
        lines.append(f'acl("t", "r{i}", {100 + i}, 10.0.0.0/16, 10.0.{i}.0/24, 6, {lo}, {hi}, "allow").')
    p = tmp_path / "acl.ndl"
    p.write_text("\n".join(lines) + "\n")
    rels = run_netc(netc_bin, p)
    assert errors(rels) == {}
    for i, (lo, hi) in enumerate(ranges):
        rows = [r for r in rels["ovs_flow"] if r[1] == "20" and r[2] == str(1100 + i)]
        covered = set()
        for r in rows:
            m = re.search(r"tp_dst=(\d+)(?:/(\d+))?", r[3])
            if m is None:
                block = range(0, 65536)
            else:
                v, mask = int(m.group(1)), int(m.group(2) or 65535)
                size = 65536 - mask
                assert size & (size - 1) == 0 and v % size == 0  # an aligned prefix block
                block = range(v, v + size)
            assert not covered & set(block), "blocks overlap"
            covered |= set(block)
        assert covered == set(range(lo, hi + 1)), (lo, hi)


# ---------------------------------------------------------------- incremental: a health report moves one slot
def test_ananta_health_update(netc_bin, tmp_path):
    script = tmp_path / "tx.txt"
    script.write_text(
        '-dip_health("contoso", "web2", 6, 8080, "down").\ncommit.\n'
        '+dip_health("contoso", "web1", 6, 8080, "down").\ncommit.\n'
    )
    r = subprocess.run(
        [
            netc_bin,
            "run",
            "-D",
            str(tmp_path),
            "--updates",
            str(script),
            *RULES,
            str(EXAMPLES / "ananta" / "intent.ndl"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    commits, cur = [], []
    for line in r.stdout.splitlines():
        if line.startswith("commit "):
            commits.append(cur)
            cur = []
        elif line.startswith(("+lb_member(", "-lb_member(")):
            cur.append(line)
    assert commits[0] == [
        "+lb_member(131.107.0.10, 6, 80, 1, 6001, 10.10.1.12)",
        "-lb_member(131.107.0.10, 6, 80, 1, 6001, 10.10.1.13)",
    ]
    # web1 down: its slot 0 goes to live slot 0 % 4 = 0, i.e. slot 1 (web2); nothing else moves
    assert commits[1] == [
        "+lb_member(131.107.0.10, 6, 80, 0, 6001, 10.10.1.12)",
        "-lb_member(131.107.0.10, 6, 80, 0, 6001, 10.10.1.11)",
    ]
