"""`netc verify` on the P4 switches' own tables (specs/invariants.md §5b).

Each example with P4 switches is compiled once; the unmutated artifacts
verify (exit 0, ACL-2 and ROUTE-1 proven). Each mutant edits one
`p4/<switch>.txtpb` as text — the request that would be pushed — the kind of
fault a rule or the renderer could make: a switch ACL deny entry lost, a
host port's VNI changed, a host port's own VNI lost, a multicast replica
added on a port of another tenant's host, a gateway route slot pointed at
the wrong Anolis node, a DIP vector reordered on one switch, a tunnel
pointed at the wrong host. Each must be caught by `netc verify --artifacts
DIR INTENT` with exit 1, the invariant named, and the `.txtpb` line of the
mutated update cited (`file:line`, the line of its `updates {`), read from
the symbolic model of the switch's ingress (verify/src/p4/symbolic.rs), not
from `relations/`; a switch counterexample also carries its concrete packet
(VXLAN-wrapped when it arrives so), the entries matched hop by hop, and the
intent facts behind the expectation.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = ["athena", "ananta", "anolis"]

pytestmark = pytest.mark.netc


def intent(example: str) -> str:
    return str(REPO / "examples" / example / "intent.ndl")


def compile_examples(netc_bin: str, base: Path, examples: list[str]) -> dict[str, Path]:
    """`netc compile` of each example into `base/<example>`."""
    out = {}
    for e in examples:
        r = subprocess.run([netc_bin, "compile", intent(e), "--out", str(base / e)],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        out[e] = base / e
    return out


@pytest.fixture(scope="module")
def compiled(netc_bin: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return compile_examples(netc_bin, tmp_path_factory.mktemp("verify-p4"), EXAMPLES)


def verify(netc: str, args: list[str]) -> tuple[int, dict, str]:
    r = subprocess.run([netc, "verify", "--json", *args], capture_output=True, text=True, timeout=600)
    report = json.loads(r.stdout) if r.stdout.strip().startswith("{") else {}
    return r.returncode, report, r.stderr


def status(report: dict) -> dict[str, str]:
    return {v["invariant"]: v["status"] for v in report["verdicts"]}


@pytest.mark.parametrize("example", EXAMPLES)
def test_unmutated_switches_are_proven(netc_bin: str, compiled: dict[str, Path], example: str) -> None:
    rc, report, err = verify(netc_bin, ["--artifacts", str(compiled[example]), intent(example)])
    assert rc == 0, (err, [v for v in report.get("verdicts", []) if v["status"] == "violated"][:2])
    st = status(report)
    assert st["ACL-2"] == "proven" and st["ROUTE-1"] == "proven" and st["REACH-2"] == "proven", st
    n = len(list((compiled[example] / "p4").glob("*.txtpb")))
    detail = next(v["detail"] for v in report["verdicts"] if v["invariant"] == "ACL-2")
    assert detail.startswith(f"{n} switch"), detail
    # the human report and the JUnit file carry the switch checks too
    junit = compiled[example].parent / f"{example}-junit.xml"
    r = subprocess.run([netc_bin, "verify", "--artifacts", str(compiled[example]), intent(example),
                        "--junit", str(junit)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert re.search(r"proven\s+ACL-2", r.stdout) and re.search(r"proven\s+ROUTE-1", r.stdout), r.stdout
    assert 'name="ACL-2"' in junit.read_text() and 'name="ROUTE-1"' in junit.read_text()


def test_without_intent_the_switch_invariants_are_not_checked(netc_bin: str, compiled: dict[str, Path]) -> None:
    rc, report, _ = verify(netc_bin, ["--artifacts", str(compiled["ananta"])])
    st = status(report)
    assert rc == 0 and all(st[i] == "not_checked" for i in ("ACL-2", "ROUTE-1", "REACH-2")), st


# ---------------------------------------------------------------- the .txtpb as text

def blocks(text: str) -> list[tuple[int, str]]:
    """The top-level `updates { ... }` blocks: (1-based line of `updates {`, text)."""
    out, start, cur = [], None, []
    for n, line in enumerate(text.splitlines(keepends=True), 1):
        if line.startswith("updates {"):
            start, cur = n, [line]
        elif start is not None:
            cur.append(line)
            if line.rstrip() == "}":
                out.append((start, "".join(cur)))
                start = None
    return out


def pb_bytes(b: bytes) -> str:
    """Bytes as protobuf text format writes them in the requests: C escapes
    for tab, newline, return and quotes, printable characters as they are,
    the rest in octal."""
    named = {9: "\\t", 10: "\\n", 13: "\\r", 34: '\\"', 39: "\\'", 92: "\\\\"}
    return "".join(named.get(c) or (chr(c) if 32 <= c < 127 else f"\\{c:03o}") for c in b)


def edit_block(path: Path, pick: Callable[[str], bool], change: Callable[[str], str | None]) -> int:
    """Applies `change` to the one update block `pick` selects (None deletes
    it); returns the line of its `updates {`."""
    text = path.read_text()
    hits = [(n, b) for n, b in blocks(text) if pick(b)]
    assert len(hits) == 1, f"{path}: {len(hits)} blocks match"
    n, b = hits[0]
    new = change(b)
    path.write_text(text.replace(b, new if new is not None else "", 1))
    return n


def line_of(path: Path, marker: str) -> int:
    """Line of the `updates {` of the block holding `marker`."""
    found = [n for n, b in blocks(path.read_text()) if marker in b]
    assert len(found) == 1, (marker, found)
    return found[0]


# the `updates {` line the counterexample must cite: one, one of several, or none (the entry is gone)
Cite = int | list[int] | None

ACL, PORT_TENANT, ROUTE_MEMBER = "table_id: 33554436", "table_id: 33554435", "table_id: 33554444"
ECMP, TUNNEL = "table_id: 33554440\n", "table_id: 33554442\n"
DROP = "action_id: 16777217"


def m_drop_switch_acl_deny(d: Path) -> tuple[Path, Cite]:
    f = d / "p4" / "tor2.txtpb"
    edit_block(f, lambda b: ACL in b and DROP in b, lambda b: None)
    return f, None  # the entry is gone: the cite is the VIP entry that now balances


def m_port_vni_changed(d: Path) -> tuple[Path, Cite]:
    # tor2 port 1 is h3 (red only, VNI 100 = "d"); make it accept blue's 200 instead
    f = d / "p4" / "tor2.txtpb"
    edit_block(f, lambda b: PORT_TENANT in b and 'value: "\\001"' in b and 'value: "d"' in b,
               lambda b: b.replace('value: "d"', 'value: "\\310"  # mutated'))
    return f, line_of(f, "# mutated")


def m_port_own_vni_lost(d: Path) -> tuple[Path, Cite]:
    # tor2 port 1 is h3, red's VNI 100 ("d"): without its port_tenant entry red's h3 is cut off
    f = d / "p4" / "tor2.txtpb"
    edit_block(f, lambda b: PORT_TENANT in b and 'value: "\\001"' in b and 'value: "d"' in b, lambda b: None)
    return f, None  # the entry is gone: the cite is the port_role entry of the host port


def m_dip_vector_reordered(d: Path) -> tuple[Path, Cite]:
    # agg1's vector of 131.107.0.10:80/tcp is members 1,2,2,2,3 (as the software Mux's);
    # swap slots 0 and 4 on this switch only
    f = d / "p4" / "agg1.txtpb"
    slot = {0: 'value: "\\000"\n', 4: 'value: "\\004"\n'}
    for idx, member, new in ((0, "1", "3"), (4, "3", "1")):
        edit_block(f, lambda b, idx=idx: ECMP in b and '"\\203k\\000\\n"' in b
                   and b.rstrip().split("field_id: 4")[1].count(slot[idx]) == 1,
                   lambda b, member=member, new=new: b.replace(
                       f"action_profile_member_id: {member}\n",
                       f"action_profile_member_id: {new}  # mutated slot\n"))
    lines = [n for n, b in blocks(f.read_text()) if "# mutated slot" in b]
    assert len(lines) == 2, lines
    return f, lines


def m_tunnel_wrong_host(d: Path) -> tuple[Path, Cite]:
    # agg1's tunnel to DIP 10.10.1.11 (VNI 6001) encapsulates to its host 192.168.0.11; send it to .12
    f = d / "p4" / "agg1.txtpb"
    edit_block(f, lambda b: TUNNEL in b and '"\\n\\n\\001\\013"' in b,
               lambda b: b.replace('"\\300\\250\\000\\013"', '"\\300\\250\\000\\014"  # mutated'))
    return f, line_of(f, "# mutated")


def m_mcast_replica_other_tenant(d: Path) -> tuple[Path, Cite]:
    # tor2's group 1 is red's 239.1.1.1 (h3 on port 1, the uplink 50); port 2 is h4, blue only
    f = d / "p4" / "tor2.txtpb"
    edit_block(f, lambda b: "multicast_group_id: 1\n" in b,
               lambda b: b.replace("multicast_group_id: 1\n",
                                   'multicast_group_id: 1\n        replicas {\n          instance: 9\n'
                                   '          port: "\\002"  # mutated\n        }\n'))
    return f, line_of(f, "# mutated")


def m_route_wrong_member(d: Path) -> tuple[Path, Cite]:
    # slot 1 of 198.51.100.0/24 is A6 (10.0.9.6) by ring position; point it at A2, not a current peer
    f = d / "p4" / "gw1.txtpb"
    edit_block(f, lambda b: ROUTE_MEMBER in b and '"\\n\\000\\t\\006"' in b,
               lambda b: b.replace('"\\n\\000\\t\\006"', '"\\n\\000\\t\\002"  # mutated'))
    return f, line_of(f, "# mutated")


MUTANTS = [
    ("drop-switch-acl-deny", "ananta", m_drop_switch_acl_deny, "ACL-2"),
    ("port-vni-changed", "athena", m_port_vni_changed, "ISO-1"),
    ("mcast-replica-other-tenant", "athena", m_mcast_replica_other_tenant, "ISO-2"),
    ("route-wrong-member", "anolis", m_route_wrong_member, "ROUTE-1"),
    ("port-own-vni-lost", "athena", m_port_own_vni_lost, "REACH-1"),
    ("dip-vector-reordered", "ananta", m_dip_vector_reordered, "AFF-1"),
    ("tunnel-wrong-host", "ananta", m_tunnel_wrong_host, "AFF-1"),
]


@pytest.mark.parametrize(("name", "example", "mutate", "invariant"), MUTANTS, ids=[m[0] for m in MUTANTS])
def test_p4_mutant_is_caught(netc_bin: str, compiled: dict[str, Path], tmp_path: Path, name: str,
                             example: str, mutate: Callable[[Path], tuple[Path, Cite]],
                             invariant: str) -> None:
    d = tmp_path / name
    shutil.copytree(compiled[example], d)
    f, line = mutate(d)
    rc, report, err = verify(netc_bin, ["--artifacts", str(d), intent(example)])
    assert rc == 1, err
    st = status(report)
    assert st[invariant] == "violated", st
    cxs = next(v for v in report["verdicts"] if v["invariant"] == invariant)["counterexamples"]
    cites = "\n".join(c for cx in cxs for c in cx["cites"])
    assert re.search(re.escape(str(f)) + r":\d+", cites), cites
    def cited(n: int) -> bool:
        return re.search(re.escape(f"{f}:{n}") + r"(?!\d)", cites) is not None

    if isinstance(line, int):
        assert cited(line), (line, cites)
    elif line is not None:  # one of several mutated entries
        assert any(cited(n) for n in line), (line, cites)
    assert all(cx["summary"] for cx in cxs), cxs
    # a switch counterexample: its packet at the switch port, the entries matched, the intent facts
    on_switch = [cx for cx in cxs if cx["packet"] and cx["packet"]["ingress"].startswith("switch ")]
    if invariant != "AFF-1" or name == "dip-vector-reordered":
        assert on_switch, cxs
    for cx in on_switch:
        assert cx["paths"], cx
        assert any(re.search(r"\.txtpb:\d+", h) for p in cx["paths"] for h in p["hops"]), cx["paths"]
        assert len(cx["packet"]["frame_hex"]) >= 120, cx["packet"]
        if invariant in ("ISO-1", "ISO-2", "REACH-1", "ACL-2", "ROUTE-1"):
            assert any("intent.ndl:" in c for c in cx["cites"]), cx["cites"]
    # the human report names it too
    r = subprocess.run([netc_bin, "verify", "--artifacts", str(d), intent(example)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 1 and invariant in r.stdout


def test_a_txtpb_that_does_not_read_is_an_input_error(netc_bin: str, compiled: dict[str, Path], tmp_path: Path) -> None:
    d = tmp_path / "bad"
    shutil.copytree(compiled["anolis"], d)
    f = d / "p4" / "gw1.txtpb"
    f.write_text(f.read_text().replace("table_id: 33554444", "table_id: 33554444 bogus {", 1))
    rc, _, err = verify(netc_bin, ["--artifacts", str(d), intent("anolis")])
    assert rc == 2 and re.search(re.escape(str(f)) + r":\d+:\d+", err), err
