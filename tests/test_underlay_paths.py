"""The underlay routes (rules/overlay.ndl, `p4_underlay`) follow shortest
paths, computed here independently by breadth-first search.

The rules find each switch's hop distance to every other switch layer by layer
(`p4_ul_d0` .. `p4_ul_d8`, each layer the neighbours of the one before that
are in neither of the two before it) and route out of the lowest port toward a
neighbour one hop closer (specs/targets.md §1.11; paths up to 8 hops).
Hypothesis draws fabrics the layering must get right: parallel links, links
listed in either direction, disconnected parts, chains longer than 8 hops,
cycles of odd length (where two neighbours can be equally far). For every
switch and every other switch's loopback /32, the route must exist exactly
when the target is 1..8 hops away, with the port the BFS picks.
"""

from collections import deque
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from netc_dump import run_dump

REPO = Path(__file__).resolve().parent.parent
RULES = sorted(str(p) for p in (REPO / "rules").glob("*.ndl"))
MAX_HOPS = 8


@st.composite
def fabrics(draw):
    """(number of switches, links as (a, a_port, b, b_port)); ports unique per switch."""
    n = draw(st.integers(2, 16))
    pairs = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=40))
    if draw(st.booleans()):  # a chain through every switch: up to 15 hops
        pairs += [(i, i + 1) for i in range(n - 1)]
    next_port = [1] * n
    links = []
    for a, b in pairs:
        if a == b:
            continue
        # ports drawn so that the lowest port is not always the first link
        pa = next_port[a] + draw(st.integers(0, 3))
        pb = next_port[b] + draw(st.integers(0, 3))
        next_port[a], next_port[b] = pa + 1, pb + 1
        links.append((a, pa, b, pb))
    return n, links


def intent_text(n, links) -> str:
    lines = [f'switch("s{i}", "agg", 10.9.{i // 200}.{1 + i % 200}, 100, 100, 100).' for i in range(n)]
    lines += [f'link("s{a}", {pa}, "s{b}", {pb}, 1000).' for a, pa, b, pb in links]
    return "\n".join(lines) + "\n"


def loopback(i: int) -> str:
    return f"10.9.{i // 200}.{1 + i % 200}/32"


def expected_routes(n, links):
    """(switch, loopback /32) -> port, by BFS from each target."""
    adj = {i: [] for i in range(n)}
    for a, pa, b, pb in links:
        adj[a].append((pa, b))
        adj[b].append((pb, a))
    out = {}
    for t in range(n):
        dist = {t: 0}
        todo = deque([t])
        while todo:
            x = todo.popleft()
            for _, y in adj[x]:
                if y not in dist:
                    dist[y] = dist[x] + 1
                    todo.append(y)
        for a, d in dist.items():
            if 1 <= d <= MAX_HOPS:
                port = min(p for p, b in adj[a] if dist.get(b) == d - 1)
                out[(f"s{a}", loopback(t))] = str(port)
    return out


def run(netc_bin, path):
    return run_dump(netc_bin, [*RULES, str(path)], timeout=120)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fabrics())
def test_underlay_routes_follow_bfs_shortest_paths(netc_bin, tmp_path, fabric):
    n, links = fabric
    path = tmp_path / "fabric.ndl"
    path.write_text(intent_text(n, links))
    rels = run(netc_bin, path)
    errors = {k: v for k, v in rels.items() if k.startswith("error_") and v}
    assert not errors
    got = {(s, pfx): port for s, pfx, port in rels.get("p4_underlay", [])}
    assert got == expected_routes(n, links)


def test_a_chain_longer_than_eight_hops_is_routed_up_to_eight(netc_bin, tmp_path):
    links = [(i, 2, i + 1, 1) for i in range(11)]
    path = tmp_path / "chain.ndl"
    path.write_text(intent_text(12, links))
    got = {(s, pfx): port for s, pfx, port in run(netc_bin, path).get("p4_underlay", [])}
    assert got[("s0", loopback(8))] == "2"
    assert ("s0", loopback(9)) not in got
    assert got[("s11", loopback(3))] == "1"
    assert got == expected_routes(12, links)
