"""`netc verify`: soundness on mutated artifacts, silence on correct ones.

Each example is compiled once (`netc compile`); the unmutated artifact
directory must verify (exit 0, no invariant VIOLATED). Then each mutant —
one fault injected into a copy of the artifacts, the kind of bug a rule or a
renderer could make — must be caught: exit 1, the expected invariant
VIOLATED, with a counterexample (a concrete packet and its hop-by-hop path
for path invariants, cited artifact rows). The counterexample packets are
written as a pcap and decoded again (by Scapy when installed, else by a
minimal reader here) to check they are the frames the report describes.

Mutations edit `relations/*.csv` (the rows the OVS/P4/Mux targets render);
when the OVS target has written `ovs/*.flows`, the mutant drops that
directory so the verifier reads the mutated rows (they carry the same text).
An `agent_*` relation's mutation is written into the host-agent documents
(`host/<device>.json`), which are what is pushed and what the verifier
reads.
"""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = ["quickstart", "ananta", "rubik", "yoda", "athena", "andromeda", "nfchain"]

pytestmark = pytest.mark.netc


def compile_example(netc: str, name: str, out: Path) -> Path:
    r = subprocess.run(
        [netc, "compile", str(REPO / "examples" / name / "intent.ndl"), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    return out


def verify(netc: str, args: list[str]) -> tuple[int, dict, str]:
    r = subprocess.run(
        [netc, "verify", "--json", *args], capture_output=True, text=True, timeout=600
    )
    report = json.loads(r.stdout) if r.stdout.strip().startswith("{") else {}
    return r.returncode, report, r.stderr


def status(report: dict) -> dict[str, str]:
    return {v["invariant"]: v["status"] for v in report["verdicts"]}


@pytest.fixture(scope="module")
def compiled(netc_bin: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("verify")
    return {e: compile_example(netc_bin, e, base / e) for e in EXAMPLES}


@pytest.mark.parametrize("example", EXAMPLES)
def test_correct_artifacts_are_proven(netc_bin: str, compiled: dict[str, Path], example: str) -> None:
    intent = str(REPO / "examples" / example / "intent.ndl")
    rc, report, err = verify(netc_bin, ["--artifacts", str(compiled[example]), intent])
    assert rc == 0, (err, [v for v in report.get("verdicts", []) if v["status"] == "violated"][:2])
    st = status(report)
    for inv in ["ISO-1", "ISO-2", "ISO-3", "REACH-1", "ACL-1", "AFF-1", "AFF-4", "CAP-1"]:
        assert st[inv] == "proven", (inv, st)
    # AFF-3 reads NF chain taps: only nfchain has them; elsewhere it is not checked, never "proven"
    assert st["AFF-3"] == ("proven" if example == "nfchain" else "not_checked"), st
    # compile-then-verify gives the same verdicts
    rc2, report2, _ = verify(netc_bin, [intent])
    assert rc2 == 0 and status(report2) == st


# ---------------------------------------------------------------- mutations

Rows = dict[str, list[list[str]]]


def read_rows(d: Path, rel: str) -> list[list[str]]:
    p = d / "relations" / f"{rel}.csv"
    return [line.split("\t") for line in p.read_text().splitlines() if line]


def write_rows(d: Path, rel: str, rows: list[list[str]]) -> None:
    (d / "relations" / f"{rel}.csv").write_text("".join("\t".join(r) + "\n" for r in rows))
    if rel.startswith("agent_") and (d / "host").is_dir():
        write_docs(d, rel, rows)


def host_sections() -> dict[str, tuple[str, list[str]]]:
    """relation -> (section, columns after the device) of the host-agent
    documents, as `targets/src/host/mod.rs` (SECTIONS) renders them."""
    src = (REPO / "targets" / "src" / "host" / "mod.rs").read_text()
    table = src.split("pub const SECTIONS", 1)[1].split("];", 1)[0]
    out = {}
    for rel, section, cols in re.findall(r'\(\s*"(agent_\w+)",\s*"(\w+)",\s*&\[([^\]]*)\],?\s*\)', table):
        out[rel] = (section, re.findall(r'"(\w+)"', cols))
    assert "agent_mux_member" in out, "SECTIONS not found in targets/src/host/mod.rs"
    return out


HOST_SECTIONS = host_sections()


def write_docs(d: Path, rel: str, rows: list[list[str]]) -> None:
    """Writes `rel`'s rows into each device's host-agent document (numbers as JSON numbers)."""
    section, cols = HOST_SECTIONS[rel]
    # a device the rows name without a document gets one (a row moved to another agent)
    for device in {r[0] for r in rows}:
        f = d / "host" / f"{device}.json"
        if not f.exists():
            f.write_text(json.dumps({"host": device, "schema": "netc-host-agent/1"}) + "\n")
    for f in (d / "host").glob("*.json"):
        doc = json.loads(f.read_text())
        mine = [r[1:] for r in rows if r[0] == f.stem]
        if mine:
            # in the rows' order: a row put first takes the section's first lines
            doc[section] = [{c: int(v) if v.lstrip("-").isdigit() else v for c, v in zip(cols, r)} for r in mine]
        else:
            doc.pop(section, None)
        f.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")


def edit(d: Path, rel: str, pick: Callable[[list[str]], bool], change: Callable[[list[str]], list[str] | None]) -> None:
    """Applies `change` to the first row `pick` selects (None deletes it)."""
    rows = read_rows(d, rel)
    for i, r in enumerate(rows):
        if pick(r):
            new = change(list(r))
            if new is None:
                del rows[i]
            else:
                rows[i] = new
            write_rows(d, rel, rows)
            return
    raise AssertionError(f"mutation found no row to change in {rel}")


def flow(host: str, table: str, prio: str, match_has: str) -> Callable[[list[str]], bool]:
    return lambda r: r[0] == host and r[1] == table and r[2] == prio and match_has in r[3]


def set_col(i: int, f: Callable[[str], str]) -> Callable[[list[str]], list[str]]:
    def g(r: list[str]) -> list[str]:
        r[i] = f(r[i])
        return r

    return g


def m_flip_vni(d: Path) -> None:
    # web1's port is classified into globex's VNI
    edit(d, "ovs_flow", flow("h1", "0", "100", "in_port=10,dl_src=02:00:00:00:01:01,ip"),
         set_col(4, lambda a: a.replace("load:5001->NXM_NX_REG6[]", "load:5002->NXM_NX_REG6[]")))


def m_drop_acl_deny(d: Path) -> None:
    edit(d, "ovs_flow", lambda r: r[0] == "h1" and r[1] == "20" and r[2] == "1100", lambda r: None)


def m_spoof(d: Path) -> None:
    edit(d, "ovs_flow", flow("h1", "0", "100", "in_port=10,dl_src=02:00:00:00:01:01,ip"),
         set_col(3, lambda m: "in_port=10,ip"))


def m_tunnel_wrong_host(d: Path) -> None:
    edit(d, "ovs_flow", flow("h1", "30", "100", "reg6=5001,nw_src=10.1.0.0/16,nw_dst=10.1.1.12"),
         set_col(4, lambda a: a.replace("192.168.0.13", "192.168.0.12")))


def m_tunnel_other_tenant(d: Path) -> None:
    edit(d, "ovs_flow", flow("h1", "30", "100", "reg6=5001,nw_src=10.1.0.0/16,nw_dst=10.1.1.12"),
         set_col(4, lambda a: a.replace("5001->tun_id", "5002->tun_id").replace("192.168.0.13", "192.168.0.14")))


def m_wrong_port(d: Path) -> None:
    edit(d, "ovs_flow", flow("h1", "40", "100", "reg6=5001,nw_dst=10.1.1.11"),
         set_col(4, lambda a: a.replace("output:10", "output:11")))


def m_missed_prune(d: Path) -> None:
    # acme's group on h1 also copies to globex's app1 (port 11)
    edit(d, "ovs_group", lambda r: r[0] == "h1" and r[1] == "1000", set_col(3, lambda b: b + ",bucket=output:11"))


def m_drop_delivery(d: Path) -> None:
    edit(d, "ovs_flow", flow("h3", "40", "100", "reg6=5001,nw_dst=10.1.1.12"), lambda r: None)


def m_reorder_vector(d: Path) -> None:
    rows = read_rows(d, "agent_mux_member")
    mine = [r for r in rows if r[0] == "mux2"]
    ep = (mine[0][1], mine[0][2], mine[0][3])
    slots = [r for r in mine if (r[1], r[2], r[3]) == ep]
    a = next(r for r in slots if r[4] == "0")
    b = next(r for r in slots if r[6] != a[6])
    a[5], a[6], b[5], b[6] = b[5], b[6], a[5], a[6]
    write_rows(d, "agent_mux_member", rows)


def m_empty_slot(d: Path) -> None:
    edit(d, "agent_mux_member", lambda r: r[0] == "mux3" and r[4] == "1", lambda r: None)


def m_mux_tunnel_wrong_host(d: Path) -> None:
    edit(d, "agent_mux_tunnel", lambda r: r[0] == "mux1", set_col(3, lambda u: "192.168.0.99"))


def m_snat_overlap(d: Path) -> None:
    rows = read_rows(d, "agent_mux_snat")
    first = rows[0]
    other = next(r for r in rows if r[1] == first[1] and r[5] != first[5])
    other[2], other[3] = first[2], first[3]
    write_rows(d, "agent_mux_snat", rows)


def m_same_tenant_prune(d: Path) -> None:
    # athena: h1 has no member of red's 239.1.1.1 (r0 only sends), so it
    # must not deliver the group; the mutant's h1 accepts it into red's
    # group 1000 and that group copies to r0, which never joined
    rows = read_rows(d, "ovs_flow")
    rows.append(["h1", "40", "100", "ip,reg6=100,nw_dst=239.1.1.1", "group:1000", "6"])
    write_rows(d, "ovs_flow", rows)
    edit(d, "ovs_group", lambda r: r[0] == "h1" and r[1] == "1000" and r[3] == "", set_col(3, lambda b: "bucket=output:10"))


def m_nf_asymmetric_hash(d: Path) -> None:
    # nfchain: h1's IDS hop hashes the 5-tuple in order (not symmetric)
    edit(d, "ovs_group", lambda r: r[0] == "h1" and r[1] == "10000",
         set_col(3, lambda b: b.replace("selection_method=dp_hash,selection_method_param=4294967296",
                                        "selection_method=hash,fields(ip_src,ip_dst,nw_proto,tcp_src,tcp_dst)")))


def m_nf_bucket_order(d: Path) -> None:
    # nfchain: h3 lists the IDS instances in another order than h1 and h2
    def swap(b: str) -> str:
        head, *buckets = b.split(",bucket=")
        assert len(buckets) == 2, b
        return ",bucket=".join([head, buckets[1], buckets[0]])

    edit(d, "ovs_group", lambda r: r[0] == "h3" and r[1] == "10000", set_col(3, swap))


def m_nf_reply_untapped(d: Path) -> None:
    # nfchain: db1's host no longer taps the replies of web -> db tcp/5432
    edit(d, "ovs_flow", flow("h3", "30", "130", "nw_src=10.2.2.0/24,nw_dst=10.2.1.0/24,tp_src=5432"), lambda r: None)


# (name, example, mutation, invariant it must violate, expects a path counterexample)
MUTANTS = [
    ("flip-vni", "quickstart", m_flip_vni, "ISO-1", True),
    ("drop-acl-deny", "quickstart", m_drop_acl_deny, "ACL-1", True),
    ("drop-anti-spoofing", "quickstart", m_spoof, "ISO-3", True),
    ("tunnel-wrong-host", "quickstart", m_tunnel_wrong_host, "REACH-1", True),
    ("tunnel-other-tenant", "quickstart", m_tunnel_other_tenant, "ISO-1", True),
    ("deliver-wrong-port", "quickstart", m_wrong_port, "ISO-1", True),
    ("missed-mcast-prune-cross-tenant", "quickstart", m_missed_prune, "ISO-2", True),
    ("missed-mcast-prune", "athena", m_same_tenant_prune, "ISO-2", True),
    ("drop-delivery-flow", "quickstart", m_drop_delivery, "REACH-1", True),
    ("reorder-dip-vector", "ananta", m_reorder_vector, "AFF-1", False),
    ("empty-vector-slot", "ananta", m_empty_slot, "AFF-1", False),
    ("mux-tunnel-wrong-host", "ananta", m_mux_tunnel_wrong_host, "AFF-1", False),
    ("overlap-snat-ranges", "ananta", m_snat_overlap, "AFF-4", False),
    ("nf-asymmetric-hash", "nfchain", m_nf_asymmetric_hash, "AFF-3", True),
    ("nf-bucket-order", "nfchain", m_nf_bucket_order, "AFF-3", True),
    ("nf-reply-untapped", "nfchain", m_nf_reply_untapped, "AFF-3", True),
]


@pytest.mark.parametrize(("name", "example", "mutate", "invariant", "path"), MUTANTS, ids=[m[0] for m in MUTANTS])
def test_mutant_is_caught(
    netc_bin: str,
    compiled: dict[str, Path],
    tmp_path: Path,
    name: str,
    example: str,
    mutate: Callable[[Path], None],
    invariant: str,
    path: bool,
) -> None:
    d = tmp_path / name
    shutil.copytree(compiled[example], d)
    shutil.rmtree(d / "ovs", ignore_errors=True)
    mutate(d)
    pcap = tmp_path / "cx.pcap"
    junit = tmp_path / "junit.xml"
    intent = str(REPO / "examples" / example / "intent.ndl")
    rc, report, err = verify(netc_bin, ["--artifacts", str(d), intent, "--pcap", str(pcap), "--junit", str(junit)])
    assert rc == 1, err
    st = status(report)
    assert st[invariant] == "violated", st
    v = next(v for v in report["verdicts"] if v["invariant"] == invariant)
    cx = v["counterexamples"][0]
    assert cx["cites"], cx
    if path:
        assert cx["packet"] and cx["packet"]["ingress"], cx
        assert cx["paths"] and all(p["hops"] for p in cx["paths"]), cx
        # the mutated row is on the path of the counterexample, cited by file:line
        hops = "\n".join(h for p in cx["paths"] for h in p["hops"])
        assert str(d / "relations") in hops
    frames = read_pcap(pcap)
    with_packet = [c for v in report["verdicts"] for c in v["counterexamples"] if c["packet"]]
    assert [f.hex() for f in frames] == [c["packet"]["frame_hex"] for c in with_packet]
    if frames:
        check_frame(frames[0], with_packet[0]["packet"]["headers"])
    assert f'name="{invariant}"' in junit.read_text() and "<failure" in junit.read_text()


def read_pcap(p: Path) -> list[bytes]:
    data = p.read_bytes()
    assert struct.unpack("<I", data[:4])[0] == 0xA1B2C3D4 and struct.unpack("<I", data[20:24])[0] == 1
    frames, off = [], 24
    while off < len(data):
        _, _, incl, _ = struct.unpack("<IIII", data[off : off + 16])
        frames.append(data[off + 16 : off + 16 + incl])
        off += 16 + incl
    return frames


def check_frame(frame: bytes, headers: dict[str, str]) -> None:
    """The frame decodes (Scapy if installed) to the headers the report shows."""
    try:
        from scapy.all import Ether  # type: ignore[import-untyped]
    except ImportError:
        assert frame[6:12].hex(":") == headers["dl_src"]
        return
    e = Ether(frame)
    assert e.src == headers["dl_src"] and e.dst == headers["dl_dst"]
    if "nw_src" in headers:
        ip = e.payload
        assert ip.src == headers["nw_src"] and ip.dst == headers["nw_dst"]
        if "tp_dst" in headers:
            assert ip.payload.dport == int(headers["tp_dst"])
            # checksums as Scapy recomputes them
            raw = bytes(e)
            e2 = Ether(raw)
            del e2.payload.chksum
            del e2.payload.payload.chksum
            assert bytes(Ether(bytes(e2))) == raw


# ---------------------------------------------------------------- CLI contract


def test_input_errors_exit_2(netc_bin: str, tmp_path: Path, compiled: dict[str, Path]) -> None:
    rc, _, err = verify(netc_bin, ["--artifacts", str(tmp_path / "nope")])
    assert rc == 2 and "not an artifact directory" in err
    d = tmp_path / "bad"
    shutil.copytree(compiled["quickstart"], d)
    shutil.rmtree(d / "ovs", ignore_errors=True)
    edit(d, "ovs_flow", lambda r: r[1] == "30", set_col(4, lambda a: "learn(table=9)"))
    rc, _, err = verify(netc_bin, ["--artifacts", str(d)])
    assert rc == 2 and "ovs_flow.csv:" in err and "learn" in err


def test_artifacts_only_mode(netc_bin: str, compiled: dict[str, Path], tmp_path: Path) -> None:
    rc, report, _ = verify(netc_bin, ["--artifacts", str(compiled["quickstart"])])
    st = status(report)
    # the OVS paths are proven, but the switches' edge checks need the intent: not "proven"
    assert rc == 0 and st["ISO-1"] == "not_checked" and st["REACH-1"] == "not_checked", st
    iso1 = next(v for v in report["verdicts"] if v["invariant"] == "ISO-1")
    assert "every packet of" in iso1["detail"] and "need the intent" in iso1["detail"], iso1
    d = tmp_path / "m"
    shutil.copytree(compiled["quickstart"], d)
    shutil.rmtree(d / "ovs", ignore_errors=True)
    m_flip_vni(d)
    rc, report, _ = verify(netc_bin, ["--artifacts", str(d)])
    assert rc == 1 and status(report)["ISO-1"] == "violated"


def test_against_reports_remapped_fraction(netc_bin: str, compiled: dict[str, Path], tmp_path: Path) -> None:
    # the same generation: nothing moves
    d = compiled["ananta"]
    rc, report, _ = verify(netc_bin, ["--artifacts", str(d), "--against", str(d)])
    assert rc == 0 and status(report)["AFF-2"] == "proven"
    assert any("0/4294967296" in n for n in report["notes"])
    # one slot of mux2 now picks another DIP: exactly that slot's hashes move;
    # mux2 is a software Mux, whose connection table keeps established
    # connections on their DIP, so AFF-2 holds (the remap is reported; the
    # instances' disagreement is AFF-1's) — HMux remaps are violations
    # (tests/test_verify_against_store.py)
    new = tmp_path / "new"
    shutil.copytree(d, new)
    shutil.rmtree(new / "ovs", ignore_errors=True)
    m_reorder_vector(new)
    rc, report, _ = verify(netc_bin, ["--artifacts", str(new), "--against", str(d)])
    assert rc == 1 and status(report)["AFF-2"] == "proven" and status(report)["AFF-1"] == "violated"
    assert any("on `mux2`: a software Mux" in n for n in report["notes"]), report["notes"]
