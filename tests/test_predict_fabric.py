"""`netc predict` follows one packet through every device of the artifacts:
OVS bridges, P4 switches, Hoverboards (issue 28 point 4, issue 29 point 5).

With the intent files the packet crosses the fabric as the intent wires it:
a bridge's tunnel enters its host's ToR port, each switch runs netc.p4's
ingress on its `.txtpb` entries (the concrete interpreter REACH-2 replays its
counterexamples with), a port leads over its `link` to the next switch or to
the attached host's bridge. The tests run the CLI on the compiled examples
and assert the path and the final fate: VM to VM across quickstart's four
switches, a client to quickstart's VIP at the aggregation switch that
balances it, Duet's two-level VIP -> TIP -> DIP chain, and a switch
counterexample's path equal, line for line, to what predict prints for the
counterexample's own packet. Without intent, the Hoverboards are in the
artifacts' underlay map: a Hoverboard re-tunnelling a tenant's traffic with
another tenant's VNI is caught by `netc verify --artifacts D`, and predict
follows the packet past the Hoverboard to the VM it reaches.
"""

from __future__ import annotations

import ipaddress
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from test_verify_p4 import compile_examples, edit_block, verify
from test_verify_underlay import host_route

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = ["quickstart", "duet", "andromeda", "athena"]

pytestmark = pytest.mark.netc


def intent(example: str) -> str:
    return str(REPO / "examples" / example / "intent.ndl")


@pytest.fixture(scope="module")
def compiled(netc_bin: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return compile_examples(netc_bin, tmp_path_factory.mktemp("predict"), EXAMPLES)


def predict(netc: str, d: Path, packet: str, *intent_files: str, text: bool = False):
    args = [netc, "predict", "--artifacts", str(d), "--packet", packet, *intent_files]
    r = subprocess.run(args if text else [*args, "--json"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout if text else json.loads(r.stdout)


def chain(pred: dict) -> list[dict]:
    """The segments from the first to the last along `from` (one copy each way)."""
    segs = pred["segments"]
    out = [segs[-1]]
    while out[0]["from"] is not None:
        out.insert(0, segs[out[0]["from"][0]])
    assert out[0] is segs[0], segs
    return out


def facts(example: str, rel: str) -> list[list[str]]:
    """The example's `rel` facts (several may share a line), values unquoted."""
    text = "\n".join(ln for ln in Path(intent(example)).read_text().splitlines() if not ln.lstrip().startswith("//"))
    return [[v.strip().strip('"') for v in m.group(1).split(",")]
            for m in re.finditer(rf"(?<![\w.]){rel}\(([^()]*)\)\.", text)]


def test_vm_to_vm_crosses_the_switches(netc_bin: str, compiled: dict[str, Path]) -> None:
    """web1 (h1, behind tor1) to web2 (h3, behind tor2): the tunnel enters
    tor1 at h1's port, crosses an aggregation switch, leaves tor2 by h3's
    port and is delivered to web2's port by h3's bridge."""
    pred = predict(netc_bin, compiled["quickstart"],
                   "host=h1,in_port=10,tcp,eth_src=02:00:00:00:01:01,eth_dst=fe:ff:ff:ff:ff:ff,"
                   "ip_src=10.1.1.11,ip_dst=10.1.1.12,tp_dst=80", intent("quickstart"))
    segs = chain(pred)
    kinds = [(s["kind"], s["device"]) for s in segs]
    assert kinds[0] == ("bridge", "h1") and kinds[1] == ("switch", "tor1"), kinds
    assert kinds[-2] == ("switch", "tor2") and kinds[-1] == ("bridge", "h3"), kinds
    assert kinds[2][0] == "switch" and kinds[2][1] in ("agg1", "agg2"), kinds
    tor1 = segs[1]
    assert (tor1["in_port"], tor1["tun_id"], tor1["tun_dst"]) == (1, 5001, "192.168.0.13"), tor1
    assert tor1["lines"][0].startswith("tor1 ingress port 1: VXLAN vni 5001 to 192.168.0.13"), tor1["lines"]
    assert any(re.search(r"tor1\.txtpb:\d+  tor1\.underlay", e) for e in tor1["lines"]), tor1["lines"]
    assert segs[-2]["paths"][0]["fate"]["to"] == "host h3"
    last = segs[-1]
    assert (last["in_port"], last["tun_id"]) == (1, 5001), last
    fate = last["paths"][0]["fate"]
    assert fate["kind"] == "output" and fate["headers"]["dl_dst"] == "02:00:00:00:01:02", fate


def test_a_client_to_the_vip_is_balanced_by_its_switch_to_a_dip(netc_bin: str, compiled: dict[str, Path]) -> None:
    """An Internet client's packet to 203.0.113.10:80 entering agg1 (which
    balances it, p4_vip): encapsulated to a DIP's host, delivered to that
    DIP's port at its target port 8080."""
    dips = {r[4]: r for r in facts("quickstart", "dip_pool") if r[0] == "203.0.113.10"}
    vms = {r[1]: r for r in facts("quickstart", "vm") if r[0] == "acme"}
    for sport in (40000, 40001, 40002, 40003):
        pred = predict(netc_bin, compiled["quickstart"],
                       f"host=agg1,in_port=3,tcp,ip_src=198.51.100.7,ip_dst=203.0.113.10,tp_src={sport},tp_dst=80",
                       intent("quickstart"))
        segs = chain(pred)
        first = segs[0]
        assert first["kind"] == "switch" and any("agg1.vip" in x for x in first["lines"]), first
        assert first["paths"][0]["fate"]["tun_id"] == 5001, first["paths"]
        last = segs[-1]
        assert last["kind"] == "bridge", last
        fate = last["paths"][0]["fate"]
        assert fate["kind"] == "output", fate
        h = fate["headers"]
        vm = next(v for v in dips if vms[v][3] == h["nw_dst"])
        assert h["dl_dst"] == vms[vm][2] and h["tp_dst"] == dips[vm][5] and last["device"] == vms[vm][4], (h, last)


def test_duet_vip_tip_dip_chain(netc_bin: str, compiled: dict[str, Path]) -> None:
    """Duet's two-level VIP 100.64.0.1: core1 sends it (VXLAN VNI 0) to a TIP
    of its range, the TIP's holder to a DIP's host; the DIP's bridge
    delivers it rewritten to the DIP at its target port."""
    tips = ipaddress.ip_network(next(r[1] for r in facts("duet", "duet_tip_range") if r[0] == "100.64.0.1"))
    dips = {r[4]: r for r in facts("duet", "dip_pool") if r[0] == "100.64.0.1"}
    vm_ip = {r[1]: r[3] for r in facts("duet", "vm")}
    ends = set()
    for sport in range(40000, 40006):
        pred = predict(netc_bin, compiled["duet"],
                       f"host=core1,in_port=9,tcp,ip_src=198.51.100.7,ip_dst=100.64.0.1,tp_src={sport},tp_dst=443",
                       intent("duet"))
        segs = chain(pred)
        assert segs[0]["device"] == "core1" and any("core1.vip" in x for x in segs[0]["lines"]), segs[0]
        to_tip = [s for s in segs if s["kind"] == "switch" and s["tun_id"] == 0]
        assert to_tip and ipaddress.ip_address(to_tip[0]["tun_dst"]) in tips, [s["lines"][0] for s in segs]
        assert any(re.match(r"  entry .*\.vip$", x) for x in to_tip[0]["lines"]), to_tip[0]["lines"]
        last = segs[-1]
        fate = last["paths"][0]["fate"]
        assert last["kind"] == "bridge" and fate["kind"] == "output", (last, fate)
        h = fate["headers"]
        assert h["nw_dst"] in {vm_ip[v] for v in dips} and h["tp_dst"] == "8443", h
        ends.add(h["nw_dst"])
    assert ends, ends


def test_multicast_is_replicated_by_the_switches_to_every_accepted_member(netc_bin: str,
                                                                         compiled: dict[str, Path]) -> None:
    """Athena: r0's packet to 239.1.1.1 goes to its ToR, which replicates it
    (the switches' multicast groups) to the hosts of the group's accepted
    members; each member's bridge delivers it; r4, whose membership the
    policy denies, gets no copy."""
    pred = predict(netc_bin, compiled["athena"],
                   "host=h1,in_port=10,udp,eth_src=02:00:00:00:0a:00,eth_dst=01:00:5e:01:01:01,"
                   "ip_src=10.0.0.10,ip_dst=239.1.1.1,tp_dst=5000", intent("athena"))
    segs = pred["segments"]
    assert segs[1]["kind"] == "switch" and segs[1]["device"] == "tor1", segs[1]
    assert any("replicated by multicast group" in x for s in segs if s["kind"] == "switch" for x in s["lines"])
    members = {r[2] for r in facts("athena", "mcast_member") if r[0] == "red" and r[1] == "239.1.1.1"}
    denied = {r[2] for r in facts("athena", "mcast_policy") if r[0] == "red" and r[3] == "deny"}
    vm = {r[1]: (r[4], r[2]) for r in facts("athena", "vm") if r[0] == "red"}
    got = {(s["device"], p["fate"]["port"]) for s in segs[2:] if s["kind"] == "bridge" for p in s["paths"]
           if p["fate"]["kind"] == "output"}
    ports = {r[2]: int(r[3]) for r in facts("athena", "vm_port") if r[1] == "red"}
    want = {(vm[m][0], ports[m]) for m in members - denied}
    assert got == want, (got, want)
    assert "r4" in denied and vm["r4"][0] not in {s["device"] for s in segs}, segs


def test_a_switch_counterexample_path_is_what_predict_prints(netc_bin: str, compiled: dict[str, Path],
                                                             tmp_path: Path) -> None:
    """tor2 loses its route to h3 (REACH-1): for each counterexample, its
    packet given to predict (host=SWITCH + the packet line as printed) gives
    the same switch hops, line for line, and the same end."""
    d = tmp_path / "quickstart"
    shutil.copytree(compiled["quickstart"], d)
    f = d / "p4" / "tor2.txtpb"
    block = host_route(f, "192.168.0.13")
    edit_block(f, lambda b: b == block, lambda b: None)
    rc, report, err = verify(netc_bin, ["--artifacts", str(d), intent("quickstart")])
    assert rc == 1, err
    cxs = [cx for v in report["verdicts"] if v["invariant"] in ("REACH-1", "REACH-2")
           for cx in v.get("counterexamples", [])]
    assert cxs, report["verdicts"]
    for cx in cxs:
        sw = cx["packet"]["ingress"].split()[1]
        line = ",".join(f"{k}={v}" for k, v in cx["packet"]["headers"].items())
        pred = predict(netc_bin, d, f"host={sw},{line}", intent("quickstart"))
        lines = [x for s in chain(pred) if s["kind"] == "switch" for x in s["lines"]]
        path = cx["paths"][0]
        end_sw, end = path["end"].split(": ", 1)
        assert lines == [*path["hops"], f"  → {end}"], (lines, path)
        assert end_sw == [s for s in chain(pred) if s["kind"] == "switch"][-1]["device"]
        # and the text output prints the same lines
        text = predict(netc_bin, d, f"host={sw},{line}", intent("quickstart"), text=True)
        assert all(f"    {x}\n" in text for x in lines), text


def test_without_intent_a_switch_sends_vxlan_to_the_owner_of_its_destination(netc_bin: str,
                                                                            compiled: dict[str, Path]) -> None:
    pred = predict(netc_bin, compiled["quickstart"],
                   "host=agg1,in_port=3,tcp,ip_src=198.51.100.7,ip_dst=203.0.113.10,tp_dst=80")
    first = pred["segments"][0]
    fate = first["paths"][0]["fate"]
    assert fate["kind"] == "forward" and fate["to"].startswith("links unknown (no intent given)"), fate
    owner = fate["to"].rsplit(" is ", 1)[1].removesuffix("'s")
    assert pred["segments"][1]["device"] == owner and pred["segments"][1]["kind"] == "bridge", pred["segments"]
    assert pred["segments"][1]["paths"][0]["fate"]["kind"] == "output"


@pytest.mark.parametrize("packet, message", [
    ("host=tor1,in_port=1,tun_id=5001,tcp,ip_src=10.1.1.11,ip_dst=10.1.1.12", "needs `tun_dst=`"),
    ("host=h1,in_port=10,tun_id=5001,tun_dst=192.168.0.11,tcp,ip_dst=10.1.1.12", "goes with `in_port=1`"),
    ("host=core9,in_port=1,tcp,ip_dst=10.1.1.12", "agg1, agg2"),
    ("host=tor1,in_port=1,tun_dst=192.168.0.11,tcp", "give its `tun_id=`"),
])
def test_bad_packets_are_refused(netc_bin: str, compiled: dict[str, Path], packet: str, message: str) -> None:
    r = subprocess.run([netc_bin, "predict", "--artifacts", str(compiled["quickstart"]), "--packet", packet,
                        intent("quickstart")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and message in r.stderr and "panicked" not in r.stderr, r.stderr


def test_a_switch_drops_a_frame_that_is_not_ipv4(netc_bin: str, compiled: dict[str, Path]) -> None:
    pred = predict(netc_bin, compiled["quickstart"],
                   "host=tor1,in_port=49,arp,arp_op=1,arp_spa=10.1.1.11,arp_tpa=10.1.1.12", intent("quickstart"))
    (seg,) = pred["segments"]
    assert seg["paths"][0]["fate"] == {"kind": "drop", "why": "not IPv4: netc.p4 drops every frame that is not IPv4"}


def hoverboard_mutant(compiled: dict[str, Path], tmp_path: Path) -> Path:
    """hb1 re-tunnels tenant hb's (VNI 4001) packets for 10.128.0.10 with
    tenant pp's VNI 4002: host01 then delivers them to pp's VM of that address."""
    d = tmp_path / "andromeda"
    shutil.copytree(compiled["andromeda"], d)
    f = d / "ovs" / "hb1.flows"
    old = "ip,reg6=4001,nw_dst=10.128.0.10,actions=set_field:192.168.1.1->tun_dst,IN_PORT"
    text = f.read_text()
    assert text.count(old) == 1, text
    f.write_text(text.replace(old, old.replace("actions=", "actions=set_field:4002->tun_id,")))
    return d


def iso1(report: dict) -> dict:
    return next(v for v in report["verdicts"] if v["invariant"] == "ISO-1")


def test_a_hoverboard_retunnelling_another_tenants_vni_is_caught_without_intent(
        netc_bin: str, compiled: dict[str, Path], tmp_path: Path) -> None:
    rc, report, err = verify(netc_bin, ["--artifacts", str(compiled["andromeda"])])
    assert iso1(report)["status"] != "violated", iso1(report)
    d = hoverboard_mutant(compiled, tmp_path)
    rc, report, err = verify(netc_bin, ["--artifacts", str(d)])
    assert rc == 1 and iso1(report)["status"] == "violated", (err, iso1(report))
    cx = iso1(report)["counterexamples"][0]
    assert "(tenant hb) reaches pp/" in cx["summary"], cx["summary"]
    assert any(re.search(r"hb1\.flows:\d+", c) for c in cx["cites"]) or any(
        "hb1" in h for p in cx["paths"] for h in p["hops"]), cx


def test_predict_follows_past_the_hoverboard(netc_bin: str, compiled: dict[str, Path], tmp_path: Path) -> None:
    d = hoverboard_mutant(compiled, tmp_path)
    pred = predict(netc_bin, d, "host=host02,in_port=10,tcp,eth_src=02:0f:a1:00:00:02,eth_dst=fe:ff:ff:ff:ff:ff,"
                                "ip_src=10.128.0.3,ip_dst=10.128.0.10,tp_dst=80")
    segs = pred["segments"]
    tunnels = {p["fate"]["tun_dst"]: p["fate"]["to"] for p in segs[0]["paths"] if p["fate"]["kind"] == "tunnel"}
    assert tunnels == {"192.168.200.1": "hb1", "192.168.200.2": "hb2"}, tunnels
    via_hb1 = [s for s in segs if s["from"] and segs[s["from"][0]]["device"] == "hb1"]
    assert [(s["device"], s["tun_id"]) for s in via_hb1] == [("host01", 4002)], via_hb1
    fate = via_hb1[0]["paths"][0]["fate"]
    assert fate["kind"] == "output" and fate["headers"]["dl_dst"] == "02:0f:a2:00:00:09", fate
