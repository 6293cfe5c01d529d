"""REACH-1 on the P4 fabric (specs/invariants.md §5b): a host's tunnels
reach it over the underlay routes the switches are given.

Every host a P4 switch is attached to receives VXLAN at its underlay
address: VM-to-VM tunnels, the Muxes' and HMuxes' tunnels to DIPs. The
bridges' model alone sends such a packet straight to the host; the switches
forward it by their `underlay` entries. So `netc verify` walks, for every
host, a VXLAN packet of any VNI to its address from every switch over the
compiled `.txtpb` requests, and it must leave the host's ToR by the host's
own port. The mutants are the faults the issue measured as proven: the
ToR's /32 for a host deleted, or turned to another host's port, and a
switch one hop away routing the host's rack the wrong way. Each must be
caught by `netc verify --artifacts DIR INTENT` (exit 1, REACH-1 named, the
mutated update's `file:line` cited where the entry still exists, the host
fact cited always).
"""

from __future__ import annotations

import codecs
import ipaddress
import re
import shutil
from pathlib import Path

import pytest
from test_verify_p4 import blocks, compile_examples, edit_block, pb_bytes, status, verify

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = ["quickstart", "athena", "ananta", "rubik", "yoda", "nfchain", "andromeda"]
UNDERLAY = "table_id: 33554445\n"

pytestmark = pytest.mark.netc


def intent(example: str) -> str:
    return str(REPO / "examples" / example / "intent.ndl")


def hosts(example: str) -> list[tuple[str, str, str, int]]:
    """(host, underlay address, ToR, port) of the example's `host` facts."""
    pat = re.compile(r'\bhost\("([^"]+)",\s*([\d.]+),\s*"([^"]+)",\s*(\d+)\)\.')
    return [(h, a, t, int(p)) for h, a, t, p in pat.findall(Path(intent(example)).read_text())]


def value_of(block: str, field: str) -> bytes:
    m = re.search(field + r' \{\n\s*value: "((?:[^"\\]|\\.)*)"', block)
    assert m, block
    return codecs.escape_decode(m.group(1).encode())[0]


def route_of(block: str) -> tuple[bytes, int, bytes] | None:
    """(prefix bytes, length, port bytes) of an underlay entry."""
    if UNDERLAY not in block:
        return None
    length = int(re.search(r"prefix_len: (\d+)", block).group(1))
    port = codecs.escape_decode(re.search(r'param_id: 1\n\s*value: "((?:[^"\\]|\\.)*)"', block).group(1).encode())[0]
    return value_of(block, "lpm"), length, port


def port_bytes(p: int) -> bytes:
    return p.to_bytes(2, "big").lstrip(b"\0") or b"\0"


@pytest.fixture(scope="module")
def compiled(netc_bin: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return compile_examples(netc_bin, tmp_path_factory.mktemp("underlay"), EXAMPLES)


def reach1(report: dict) -> dict:
    return next(v for v in report["verdicts"] if v["invariant"] == "REACH-1")


def attached(example: str, d: Path) -> tuple[str, str, str, int]:
    """The first host attached to a switch of the artifacts."""
    switches = {p.stem for p in (d / "p4").glob("*.txtpb")}
    return next(h for h in hosts(example) if h[2] in switches)


def host_route(f: Path, addr: str) -> str:
    """The one underlay /32 block of `f` for `addr`."""
    want = ipaddress.IPv4Address(addr).packed
    hits = [b for _, b in blocks(f.read_text()) if (r := route_of(b)) and r[0] == want and r[1] == 32]
    assert len(hits) == 1, (f, addr, len(hits))
    return hits[0]


def caught(netc_bin: str, example: str, d: Path, addr: str) -> list[dict]:
    rc, report, err = verify(netc_bin, ["--artifacts", str(d), intent(example)])
    assert rc == 1, (err, status(report))
    assert status(report)["REACH-1"] == "violated", status(report)
    cxs = [cx for cx in reach1(report)["counterexamples"] if addr in cx["summary"]]
    assert cxs, [cx["summary"] for cx in reach1(report)["counterexamples"]]
    for cx in cxs:
        assert cx["packet"] and cx["packet"]["ingress"].startswith("switch "), cx
        assert any(re.search(r"intent\.ndl:\d+:\d+  host\(", c) for c in cx["cites"]), cx["cites"]
    return cxs


def copy_of(compiled: dict[str, Path], example: str, tmp_path: Path) -> Path:
    d = tmp_path / example
    shutil.copytree(compiled[example], d)
    return d


def route_port(f: Path, block: str, port: bytes, new: bytes) -> int:
    """Turns the route `block` of `f` from `port` to `new`; the line of its `updates {`."""
    old = f'value: "{pb_bytes(port)}"\n'
    assert old in block, (old, block)
    return edit_block(f, lambda b: b == block, lambda b: b.replace(old, f'value: "{pb_bytes(new)}"\n', 1))


def cites(cx: dict, f: Path, line: int) -> bool:
    return any(re.search(re.escape(f"{f}:{line}") + r"(?!\d)", c) for c in cx["cites"])


@pytest.mark.parametrize("example", EXAMPLES)
def test_every_host_is_walked_and_proven(netc_bin: str, compiled: dict[str, Path], example: str) -> None:
    rc, report, err = verify(netc_bin, ["--artifacts", str(compiled[example]), intent(example)])
    assert rc == 0, (err, status(report))
    switches = {p.stem for p in (compiled[example] / "p4").glob("*.txtpb")}
    n = len({a for _, a, t, _ in hosts(example) if t in switches})
    assert n > 0
    detail = reach1(report)["detail"]
    assert f"{n} host underlay address" in detail and reach1(report)["status"] == "proven", detail


@pytest.mark.parametrize("example", EXAMPLES)
def test_a_tor_without_its_hosts_route_is_caught(netc_bin: str, compiled: dict[str, Path], example: str,
                                                 tmp_path: Path) -> None:
    d = copy_of(compiled, example, tmp_path)
    h, addr, tor, _ = attached(example, d)
    f = d / "p4" / f"{tor}.txtpb"
    block = host_route(f, addr)
    edit_block(f, lambda b: b == block, lambda b: None)
    cxs = caught(netc_bin, example, d, addr)
    assert any(f"dropped at switch {tor}" in cx["summary"] for cx in cxs), [cx["summary"] for cx in cxs]


@pytest.mark.parametrize("example", EXAMPLES)
def test_a_tor_routing_a_host_to_another_port_is_caught(netc_bin: str, compiled: dict[str, Path], example: str,
                                                        tmp_path: Path) -> None:
    d = copy_of(compiled, example, tmp_path)
    h, addr, tor, port = attached(example, d)
    f = d / "p4" / f"{tor}.txtpb"
    other = port + 1 if port < 40 else port - 1
    line = route_port(f, host_route(f, addr), port_bytes(port), port_bytes(other))
    cxs = caught(netc_bin, example, d, addr)
    hit = [cx for cx in cxs if f"switch {tor} sends packets to {addr}" in cx["summary"]]
    assert hit, [cx["summary"] for cx in cxs]
    assert cites(hit[0], f, line), (line, hit[0]["cites"])


@pytest.mark.parametrize("example", EXAMPLES)
def test_a_neighbour_routing_a_host_the_wrong_way_is_caught(netc_bin: str, compiled: dict[str, Path],
                                                            example: str, tmp_path: Path) -> None:
    """Another switch's route covering the host (its /32, or its rack
    prefix) turned out of a port where nothing is attached: the packets
    leave the fabric."""
    d = copy_of(compiled, example, tmp_path)
    h, addr, tor, _ = attached(example, d)
    want = int(ipaddress.IPv4Address(addr))
    for f in sorted((d / "p4").glob("*.txtpb")):
        if f.stem == tor:
            continue
        routes = [(b, r) for _, b in blocks(f.read_text()) if (r := route_of(b))]
        covering = [(b, r) for b, r in routes
                    if r[1] and (int.from_bytes(r[0].rjust(4, b"\0"), "big") >> (32 - r[1])) == want >> (32 - r[1])]
        if not covering:
            continue
        block, (_, _, port) = max(covering, key=lambda br: br[1][1])
        unused = port_bytes(max(int.from_bytes(r[2], "big") for _, r in routes) + 7)
        line = route_port(f, block, port, unused)
        cxs = caught(netc_bin, example, d, addr)
        cited = [cx for cx in cxs if cites(cx, f, line)]
        assert cited, ([cx["summary"] for cx in cxs], line)
        return
    pytest.fail(f"{example}: no switch besides {tor} routes {addr}")
