"""`netc verify`'s model is the device: a fault that breaks an invariant on
the device is proven broken (specs/invariants.md §1.2, §5b AFF-1, §5c PUSH-1).

Each example is compiled once; each mutant edits a copy of the artifact
files as text — what would be pushed — the way a renderer bug or a hand
edit could, and is verified the way a CI user runs it (`netc verify
--artifacts DIR INTENT`):

- two flows of one table and priority with one match and different
  actions (written before or after the original, fields in another order):
  OVS keeps the one added last and netc's push, reconciling by cookie,
  re-adds the other, so either may be on the bridge. PUSH-1 must cite both
  lines, and ISO-1 must see the copy that leaks to another tenant's VM;
- two flows of one priority whose matches overlap with different actions
  (OpenFlow leaves the winner undefined): PUSH-1, and ISO-1 for the leak;
- a flow naming a group the bridge lacks (OVS refuses the bundle,
  OFPBAC_BAD_OUT_GROUP), a group id defined twice (OFPGMFC_GROUP_EXISTS), a
  switch multicast entry naming a group the request does not install:
  PUSH-1 with the artifact line;
- what P4Runtime refuses outright (an action id the P4Info lacks, a member
  of another action profile, a key inserted twice): an input error, exit
  2, naming the `.txtpb` line;
- an HMux's tunnel entry deleted while its ECMP slot still names the DIP
  (the switch drops where the software Mux delivers), a Mux's tunnel row
  deleted while the switch delivers: AFF-1 with a concrete 5-tuple.

Edits that leave what the devices do unchanged — lines reordered, a cookie
changed, comments and blank lines, a flow written twice alike, match fields
written in another order — must stay proven. The model's reading of a
duplicate is checked against real OVS: the bridge keeps the flow added
last, so the order of the adds decides, and `netc predict` lists both.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from test_verify_p4 import blocks, compile_examples, edit_block, pb_bytes

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = ["yoda", "quickstart", "ananta", "athena", "andromeda", "nfchain", "rubik", "anolis"]

pytestmark = pytest.mark.netc


def intent(example: str) -> str:
    return str(REPO / "examples" / example / "intent.ndl")


@pytest.fixture(scope="module")
def compiled(netc_bin: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return compile_examples(netc_bin, tmp_path_factory.mktemp("device-model"), EXAMPLES)


def verify(netc: str, d: Path, example: str, *extra: str) -> tuple[int, dict, str]:
    r = subprocess.run([netc, "verify", "--json", "--artifacts", str(d), intent(example), *extra],
                       capture_output=True, text=True, timeout=600)
    report = json.loads(r.stdout) if r.stdout.strip().startswith("{") else {}
    return r.returncode, report, r.stderr


def status(report: dict) -> dict[str, str]:
    return {v["invariant"]: v["status"] for v in report["verdicts"]}


def cxs_of(report: dict, inv: str) -> list[dict]:
    return next(v for v in report["verdicts"] if v["invariant"] == inv)["counterexamples"]


def cited(cites: str, f: Path, line: int) -> bool:
    return re.search(re.escape(f"{f}:{line}") + r"(?!\d)", cites) is not None


# ---------------------------------------------------------------- .flows / .groups as text

def lines(f: Path) -> list[str]:
    return f.read_text().splitlines()


def write(f: Path, ls: list[str]) -> None:
    f.write_text("".join(x + "\n" for x in ls))


def index(f: Path, pred: Callable[[str], bool]) -> int:
    """0-based index of the one line `pred` selects."""
    hits = [i for i, x in enumerate(lines(f)) if pred(x)]
    assert len(hits) == 1, (f, hits)
    return hits[0]


def with_cookie(line: str, cookie: int) -> str:
    return re.sub(r"cookie=0x[0-9a-f]+", f"cookie={cookie:#018x}", line, count=1)


def insert(f: Path, at: int, line: str) -> int:
    """Inserts `line` before 0-based `at`; returns its 1-based line number."""
    ls = lines(f)
    ls.insert(at, line)
    write(f, ls)
    return at + 1


# A mutant returns the artifact lines (file, 1-based line) every finding of
# the first invariant must, between them, cite.
Cites = list[tuple[Path, int]]


def yoda_delivery(d: Path) -> tuple[Path, int, str]:
    """h1's table-40 delivery of yoda-vm1 (10.90.0.1, port 10); port 11 is shop/d1."""
    f = d / "ovs" / "h1.flows"
    i = index(f, lambda x: x.startswith("table=40,priority=100,") and ",reg6=9000,nw_dst=10.90.0.1," in x)
    return f, i, lines(f)[i]


def m_dup_after(d: Path) -> Cites:
    f, i, orig = yoda_delivery(d)
    bad = with_cookie(orig, 0x0A00000000000001).replace("output:10", "output:11")
    n = insert(f, len(lines(f)), bad)
    return [(f, i + 1), (f, n)]


def m_dup_before(d: Path) -> Cites:
    f, i, orig = yoda_delivery(d)
    bad = with_cookie(orig, 0x0A00000000000002).replace("output:10", "output:11")
    n = insert(f, i, bad)
    return [(f, n), (f, i + 2)]


def m_dup_fields_reordered(d: Path) -> Cites:
    # quickstart h1: acme's web1 (10.1.1.11, port 10) and globex's app1 (same address, port 11)
    f = d / "ovs" / "h1.flows"
    i = index(f, lambda x: x.startswith("table=30,priority=100,") and "reg6=5001,nw_src=10.1.0.0/16,nw_dst=10.1.1.11," in x)
    bad = ("table=30,priority=100,cookie=0x0a00000000000003,nw_dst=10.1.1.11,nw_src=10.1.0.0/16,reg6=5001,ip,"
           "actions=mod_dl_src:fe:ff:ff:ff:ff:ff,mod_dl_dst:02:00:00:00:02:01,output:11")
    n = insert(f, i + 3, bad)
    return [(f, i + 1), (f, n)]


def m_overlap_equal_priority(d: Path) -> Cites:
    # a route for acme's whole 10.1.1.0/24 at the priority of its host routes, into globex's app1
    f = d / "ovs" / "h1.flows"
    i = index(f, lambda x: x.startswith("table=30,priority=100,") and "reg6=5001,nw_src=10.1.0.0/16,nw_dst=10.1.1.11," in x)
    bad = ("table=30,priority=100,cookie=0x0a00000000000004,ip,reg6=5001,nw_dst=10.1.1.0/24,"
           "actions=mod_dl_src:fe:ff:ff:ff:ff:ff,mod_dl_dst:02:00:00:00:02:01,output:11")
    n = insert(f, len(lines(f)), bad)
    return [(f, i + 1), (f, n)]


def m_group_undefined(d: Path) -> Cites:
    f = d / "ovs" / "h1.flows"
    i = index(f, lambda x: x.startswith("table=40,") and x.endswith("actions=group:1000"))
    ls = lines(f)
    ls[i] = ls[i].replace("group:1000", "group:9999")
    write(f, ls)
    return [(f, i + 1)]


def m_group_defined_twice(d: Path) -> Cites:
    f = d / "ovs" / "host01.groups"
    i = index(f, lambda x: x.startswith("group_id=1,"))
    n = insert(f, len(lines(f)), "group_id=1,type=select,bucket=set_field:192.168.200.9->tun_dst,output:1")
    return [(f, i + 1), (f, n)]


# ---------------------------------------------------------------- .txtpb as text

def pb_ip(ip: str) -> str:
    """An IPv4 address as protobuf text-format writes its 4 bytes."""
    return pb_bytes(bytes(int(x) for x in ip.split(".")))


MCAST, TUNNEL = "table_id: 33554437\n", "table_id: 33554442\n"


def m_mcast_group_missing(d: Path) -> Cites:
    f = d / "p4" / "tor1.txtpb"
    n = edit_block(f, lambda b: MCAST in b and "action_id: 16777221" in b,
                   lambda b: b.replace('param_id: 1\n            value: "\\001"',
                                       'param_id: 1\n            value: "\\t"'))
    assert "\\t" in f.read_text()
    return [(f, n)]


def tunnel_deleted(switch: str, dip: str) -> Callable[[Path], Cites]:
    def m(d: Path) -> Cites:
        f = d / "p4" / f"{switch}.txtpb"
        edit_block(f, lambda b: TUNNEL in b and f'value: "{pb_ip(dip)}"' in b, lambda b: None)
        # the entries the switch matched for the lost packet: its vip entry
        vip = [n for n, b in blocks(f.read_text()) if "table_id: 33554439\n" in b]
        return [(f, n) for n in vip]
    return m


def m_mux_tunnel_row_deleted(d: Path) -> Cites:
    # quickstart: mux1's pushed document loses its tunnel to web1 (10.1.1.11) while agg1 still delivers there
    f = d / "host" / "mux1.json"
    doc = json.loads(f.read_text())
    doc["mux_tunnels"] = [t for t in doc["mux_tunnels"] if (t["mvni"], t["member"]) != (5001, "10.1.1.11")]
    f.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    # the Mux's vip items: the line of each object's `{` in the `mux_vips` section
    ls = lines(f)
    start = next(k for k, x in enumerate(ls) if x.strip().startswith('"mux_vips": ['))
    end = next(k for k in range(start, len(ls)) if ls[k].strip().startswith("]"))
    return [(f, k + 1) for k in range(start + 1, end) if ls[k].strip() == "{"]


MUTANTS = [
    # A: duplicate and overlapping flows
    ("dup-after-to-other-tenant", "yoda", m_dup_after, ["PUSH-1", "ISO-1"], "one match"),
    ("dup-before-to-other-tenant", "yoda", m_dup_before, ["PUSH-1", "ISO-1"], "one match"),
    ("dup-fields-reordered", "quickstart", m_dup_fields_reordered, ["PUSH-1", "ISO-1"], "one match"),
    ("overlap-equal-priority", "quickstart", m_overlap_equal_priority, ["PUSH-1", "ISO-1"], "undefined"),
    # B: what a device refuses or lacks
    ("group-undefined", "quickstart", m_group_undefined, ["PUSH-1"], "OFPBAC_BAD_OUT_GROUP"),
    ("group-defined-twice", "andromeda", m_group_defined_twice, ["PUSH-1"], "OFPGMFC_GROUP_EXISTS"),
    ("mcast-group-missing", "quickstart", m_mcast_group_missing, ["PUSH-1"], "multicast group 9"),
    # C: one 5-tuple, two fates
    ("hmux-tunnel-deleted-ananta", "ananta", tunnel_deleted("agg1", "10.10.1.11"), ["AFF-1"], "drops it"),
    ("hmux-tunnel-deleted-quickstart", "quickstart", tunnel_deleted("agg1", "10.1.1.12"), ["AFF-1"], "drops it"),
    ("hmux-tunnel-deleted-yoda", "yoda", tunnel_deleted("agg1", "10.90.0.1"), ["AFF-1"], "drops it"),
    ("mux-tunnel-row-deleted", "quickstart", m_mux_tunnel_row_deleted, ["AFF-1"], "drops it"),
]


@pytest.mark.parametrize(("name", "example", "mutate", "invariants", "says"), MUTANTS, ids=[m[0] for m in MUTANTS])
def test_fault_is_proven(netc_bin: str, compiled: dict[str, Path], tmp_path: Path, name: str, example: str,
                         mutate: Callable[[Path], Cites], invariants: list[str], says: str) -> None:
    d = tmp_path / name
    shutil.copytree(compiled[example], d)
    must_cite = mutate(d)
    rc, report, err = verify(netc_bin, d, example)
    assert rc == 1, (err, status(report) if report else None)
    st = status(report)
    for inv in invariants:
        assert st[inv] == "violated", (inv, st)
    cxs = cxs_of(report, invariants[0])
    assert any(says in cx["summary"] for cx in cxs), [cx["summary"] for cx in cxs]
    cites = "\n".join(c for cx in cxs for c in cx["cites"])
    assert all(cited(cites, f, n) for f, n in must_cite) if invariants[0] == "PUSH-1" \
        else any(cited(cites, f, n) for f, n in must_cite), (must_cite, cites)
    if invariants[0] == "AFF-1":
        # a concrete 5-tuple: the client packet, at the switch, with its source port
        with_packet = [cx for cx in cxs if cx["packet"]]
        assert with_packet, cxs
        assert all("hash5 = " in cx["summary"] and {"nw_src", "tp_src", "nw_dst", "tp_dst", "nw_proto"}
                   <= set(cx["packet"]["headers"]) for cx in with_packet), with_packet
    # an incremental re-verification from the correct artifacts finds the same
    rc2, report2, err2 = verify(netc_bin, d, example, "--since", str(compiled[example]))
    assert rc2 == 1 and status(report2) == st, (err2, status(report2))


def test_p4runtime_refusals_are_input_errors(netc_bin: str, compiled: dict[str, Path], tmp_path: Path) -> None:
    """What P4Runtime refuses, `netc verify` refuses first: exit 2 at the update's line."""
    def refused(name: str, change: Callable[[Path], int], says: str) -> None:
        d = tmp_path / name
        shutil.copytree(compiled["ananta"], d)
        f = d / "p4" / "agg1.txtpb"
        line = change(f)
        rc, report, err = verify(netc_bin, d, "ananta")
        assert rc == 2, (name, rc, err)
        assert says in err, (name, err)
        # the update's line (or a line inside it, for a field)
        at = [int(n) for n in re.findall(re.escape(f"{f}:") + r"(\d+)", err)]
        assert at and line <= at[0] < line + 40, (name, line, err)

    # an action the P4Info lacks
    refused("unknown-action", lambda f: edit_block(
        f, lambda b: TUNNEL in b and f'value: "{pb_ip("10.10.1.11")}"' in b,
        lambda b: b.replace("action_id: 16777225", "action_id: 16777299")), "16777299")

    # member 1 moved to the other action profile: the ecmp entry naming it
    # (of profile 285212673) is refused
    def other_profile(f: Path) -> int:
        edit_block(f, lambda b: "action_profile_member {" in b and "member_id: 1\n" in b,
                   lambda b: b.replace("action_profile_id: 285212673", "action_profile_id: 285212674"))
        return next(n for n, b in blocks(f.read_text()) if "action_profile_member_id: 1\n" in b)
    refused("member-of-other-profile", other_profile, "does not hold")

    # a key inserted twice: the second INSERT is refused
    def twice(f: Path) -> int:
        text = f.read_text()
        n, b = next((n, b) for n, b in blocks(text) if TUNNEL in b)
        f.write_text(text + b)
        return len(text.splitlines()) + 1
    refused("inserted-twice", twice, "already installed")


# ---------------------------------------------------------------- no false alarms

def e_reverse_flows(d: Path) -> None:
    for f in sorted((d / "ovs").glob("*.flows")):
        write(f, list(reversed(lines(f))))
    for f in sorted((d / "ovs").glob("*.groups")):
        write(f, list(reversed(lines(f))))


def e_cookies(d: Path) -> None:
    for k, f in enumerate(sorted((d / "ovs").glob("*.flows"))):
        ls = lines(f)
        ls[0] = with_cookie(ls[0], 0x0B00000000000000 + k)
        write(f, ls)


def e_comments(d: Path) -> None:
    for f in sorted((d / "ovs").glob("*.*")):
        ls = lines(f)
        write(f, ["# pushed by netc", "", *ls[:1], "   ", "# the rest", *ls[1:]])
    for f in sorted((d / "p4").glob("*.txtpb")):
        f.write_text("# a WriteRequest\n" + f.read_text())


def e_same_flow_twice(d: Path) -> None:
    # a line written twice (OVS keeps one), and once more with another cookie and the fields reordered
    for f in sorted((d / "ovs").glob("*.flows")):
        ls = lines(f)
        x = next(x for x in ls if x.startswith("table=0,priority=100,") and ",ip," in x)
        head, actions = x.split(",actions=")
        parts = head.split(",")
        fixed, match = parts[:3], parts[3:]
        again = ",".join([*fixed, *reversed(match)]) + ",actions=" + actions
        write(f, [*ls, x, with_cookie(again, 0x0C00000000000000)])


EDITS = [
    ("reverse-lines", ["yoda", "quickstart", "andromeda", "nfchain", "athena"], e_reverse_flows),
    ("cookies", ["quickstart", "rubik"], e_cookies),
    ("comments", ["quickstart", "andromeda", "ananta"], e_comments),
    ("same-flow-twice", ["yoda", "quickstart", "nfchain"], e_same_flow_twice),
]


@pytest.mark.parametrize(("name", "examples", "edit"), EDITS, ids=[e[0] for e in EDITS])
def test_semantics_preserving_edits_stay_proven(netc_bin: str, compiled: dict[str, Path], tmp_path: Path,
                                                name: str, examples: list[str], edit: Callable[[Path], None]) -> None:
    for example in examples:
        _, base, _ = verify(netc_bin, compiled[example], example)
        d = tmp_path / f"{name}-{example}"
        shutil.copytree(compiled[example], d)
        edit(d)
        rc, report, err = verify(netc_bin, d, example)
        assert rc == 0, (example, err, [(v["invariant"], [c["summary"] for c in v["counterexamples"]][:2])
                                         for v in report.get("verdicts", []) if v["status"] == "violated"])
        assert status(report) == status(base), example


@pytest.mark.parametrize("example", EXAMPLES)
def test_the_renderer_never_emits_what_push1_refuses(netc_bin: str, compiled: dict[str, Path], example: str) -> None:
    rc, report, err = verify(netc_bin, compiled[example], example)
    assert rc == 0, err
    assert status(report)["PUSH-1"] == "proven", report["verdicts"][0]


# ---------------------------------------------------------------- real OVS

def test_real_ovs_keeps_the_flow_added_last_and_the_model_runs_both(
        netc_bin: str, compiled: dict[str, Path], tmp_path: Path) -> None:
    pytest.importorskip("scapy")
    from ovs_fixture import OvsHost

    d = tmp_path / "dup"
    shutil.copytree(compiled["yoda"], d)
    (f, a), (_, b) = m_dup_after(d)
    first, second = lines(f)[a - 1], lines(f)[b - 1]
    host = OvsHost("h1", "192.168.0.11", 1, tmp_path / "ovs").start()
    try:
        host.build([10, 11], {})
        kept = []
        for order in ((first, second), (second, first)):
            bundle = tmp_path / "flows.bundle"
            bundle.write_text("".join(f"flow add {x}\n" for x in order))
            host.ofctl("del-flows")
            host.ofctl("bundle", str(bundle))
            dump = host.ofctl("dump-flows", "table=40")
            kept.append(re.findall(r"output:(\d+)", dump))
    finally:
        host.stop()
    # one flow of the two is on the bridge: the one added last
    assert kept == [["11"], ["10"]], kept
    # the model: a packet for yoda-vm1 arriving by VXLAN may go either way
    r = subprocess.run([netc_bin, "predict", "--json", "--artifacts", str(d), "--packet",
                        "host=h1,in_port=1,tun_id=9000,ip,ip_src=10.90.0.2,ip_dst=10.90.0.1"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    fates = [p["fate"] for s in json.loads(r.stdout)["segments"] if s["device"] == "h1" for p in s["paths"]]
    assert sorted(f.get("port") for f in fates if f["kind"] == "output") == [10, 11], fates
