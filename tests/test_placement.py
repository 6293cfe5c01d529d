"""The VIP placement built-in (runtime/intent/src/placement/, specs/intent.md §5)
through the CLI, against the Python reference examples/duet/placement_ref.py.

  * property (Hypothesis): random fabrics (ToRs, aggs, a core; random table
    sizes and link capacities), random VIPs (DIPs on random hosts, traffic
    from random switches), random previous placements and parameters are
    written as intent facts; `netc run` gives the rules' placement_*
    relations, the reference places from them, and `netc compile` (which
    runs the built-in) must announce exactly those endpoints on exactly
    those switches (`p4_announce`);
  * examples/duet: `netc compile examples/duet/intent.ndl` (no placement.ndl)
    places the VIPs as the example's README says, overflow stays on the
    SMuxes, and explicit `vip_placement` facts win over the built-in;
  * bad placement inputs that no error_* rule reports are refused with the
    relation, column and value named, and nothing is written.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from netc_dump import run_dump

REPO = Path(__file__).resolve().parent.parent
RULES = sorted(str(p) for p in (REPO / "rules").glob("*.ndl"))
DUET = REPO / "examples" / "duet"

pytestmark = pytest.mark.netc

_spec = importlib.util.spec_from_file_location("placement_ref", DUET / "placement_ref.py")
ref = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ref)

PLACEMENT_RELS = [
    "placement_need",
    "placement_switch",
    "placement_link",
    "placement_member_tor",
    "placement_tip",
    "placement_route_free",
]


# ---------------------------------------------------------------- running netc
def rules_outputs(netc_bin: str, intent: Path) -> dict[str, list[tuple[str, ...]]]:
    """The rules' placement_* relations (`netc run`, which has no built-in)."""
    return run_dump(netc_bin, [*RULES, str(intent)], timeout=600)


def compile_placement(netc_bin: str, out: Path, *intent: Path) -> dict[str, str]:
    """`netc compile`, then endpoint -> switch from the /32s each switch announces."""
    r = subprocess.run(
        [netc_bin, "compile", *map(str, intent), "--out", str(out)], capture_output=True, text=True, timeout=600
    )
    assert r.returncode == 0, f"netc compile failed (exit {r.returncode}):\n{r.stderr[-4000:]}"
    placed = {}
    for line in (out / "relations" / "p4_announce.csv").read_text().splitlines():
        sw, prefix = line.split("\t")
        ep = prefix.removesuffix("/32")
        assert ep not in placed, f"{ep} announced by {placed[ep]} and {sw}"
        placed[ep] = sw
    return placed


def relation(out: Path, name: str) -> list[list[str]]:
    return [line.split("\t") for line in (out / "relations" / f"{name}.csv").read_text().splitlines() if line]


# ---------------------------------------------------------------- random intents
@st.composite
def intents(draw):
    n_tor = draw(st.integers(2, 4))
    n_agg = draw(st.integers(1, 2))
    core = draw(st.booleans())
    tors = [f"tor{i}" for i in range(1, n_tor + 1)]
    aggs = [f"agg{i}" for i in range(1, n_agg + 1)]
    switches = [(t, "tor") for t in tors] + [(a, "agg") for a in aggs] + ([("core1", "core")] if core else [])
    caps = st.sampled_from([1000, 2000, 5000, 10000, 40000])
    lines = ['tenant("t", 100).', 'vnet("t", "v", 10.0.0.0/8).', 'smux("mux1", 192.168.100.1).']
    lines.append("vip_aggregate(100.64.0.0/16).")
    for i, (name, role) in enumerate(switches):
        h, e, t = draw(st.integers(2, 24)), draw(st.integers(1, 40)), draw(st.integers(1, 24))
        lines.append(f'switch("{name}", "{role}", 10.255.0.{i + 1}, {h}, {e}, {t}).')
    port = defaultdict(lambda: 1)

    def link(a, b, c):
        lines.append(f'link("{a}", {port[a]}, "{b}", {port[b]}, {c}).')
        port[a] += 1
        port[b] += 1

    for t in tors:
        ups = draw(st.sets(st.sampled_from(aggs), min_size=1, max_size=len(aggs)))
        for a in sorted(ups):
            link(t, a, draw(caps))
    if core:
        for a in aggs:
            link(a, "core1", draw(caps))
    hosts = []
    for ti, t in enumerate(tors):
        for j in range(draw(st.integers(1, 2))):
            h = f"h{ti + 1}-{j + 1}"
            hosts.append(h)
            lines.append(f'host("{h}", 192.168.{ti + 1}.{j + 1}, "{t}", {40 + j}).')
    names = [s for s, _ in switches]
    n_vip = draw(st.integers(1, 6))
    vm = 0
    for k in range(1, n_vip + 1):
        vip = f"100.64.0.{k}"
        lines.append(f'vip("t", {vip}, 6, 80, "public").')
        for _ in range(draw(st.integers(1, 5))):
            vm += 1
            h = draw(st.sampled_from(hosts))
            lines.append(f'vm("t", "vm{vm}", 02:00:00:00:00:{vm:02x}, 10.0.0.{vm}, "{h}").')
            lines.append(f'vm_port("{h}", "t", "vm{vm}", {10 + vm}).')
            lines.append(f'dip_pool({vip}, 6, 80, "t", "vm{vm}", 8080, {draw(st.integers(1, 3))}).')
        for src in draw(st.sets(st.sampled_from(names), max_size=2)):
            lines.append(f'placement_traffic({vip}, "{src}", {draw(st.integers(0, 6000))}).')
        if draw(st.integers(0, 3)) == 0:
            lines.append(f'placement_previous({vip}, "{draw(st.sampled_from(names))}").')
    headroom = draw(st.sampled_from([0.6, 0.8, 1.0]))
    delta = draw(st.sampled_from([0.0, 0.05, 0.2]))
    lines.append(f"placement_params({headroom}, {delta}).")
    return "\n".join(lines) + "\n"


def facts(text: str, name: str) -> list[list[str]]:
    rows = []
    for m in re.finditer(rf"^{name}\((.*)\)\.$", text, re.M):
        rows.append([x.strip().strip('"') for x in m.group(1).split(",")])
    return rows


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=intents())
def test_builtin_matches_the_reference(netc_bin, tmp_path_factory, text):
    d = tmp_path_factory.mktemp("place")
    intent = d / "intent.ndl"
    intent.write_text(text)
    rels = rules_outputs(netc_bin, intent)
    assert not any(v for k, v in rels.items() if k.startswith("error_")), text
    traffic: dict[str, dict[str, int]] = defaultdict(dict)
    for v, s, m in facts(text, "placement_traffic"):
        traffic[v][s] = int(m)
    previous = {v: s for v, s in facts(text, "placement_previous")}
    (h, dl), = facts(text, "placement_params")
    want = ref.place_from_outputs(rels, traffic, previous, float(h), float(dl))
    got = compile_placement(netc_bin, d / "out", intent)
    assert got == want, f"intent:\n{text}"


# ---------------------------------------------------------------- examples/duet
DUET_PLACED = {
    "100.64.0.1": "core1",  # blob: its vector is the 2 TIPs
    "100.64.255.0": "agg1",
    "100.64.255.1": "agg2",
    "100.64.0.2": "core1",  # table
    "100.64.0.3": "agg1",  # queue
    "100.64.1.1": "agg2",  # www
}
DUET_ON_SMUX = ["100.64.1.2", "100.64.1.3", "100.64.1.4", "100.64.1.5"]  # api (fits nowhere), img, cdn, ftp


def test_duet_example_is_placed_by_the_builtin(netc_bin, tmp_path):
    got = compile_placement(netc_bin, tmp_path / "out", DUET / "intent.ndl")
    assert got == DUET_PLACED
    # the reference greedy agrees, from the rules' own placement_* outputs
    rels = rules_outputs(netc_bin, DUET / "intent.ndl")
    text = (DUET / "intent.ndl").read_text()
    traffic: dict[str, dict[str, int]] = defaultdict(dict)
    for v, s, m in facts(text, "placement_traffic"):
        traffic[v][s] = int(m)
    assert ref.place_from_outputs(rels, traffic) == DUET_PLACED
    # overflow stays on the SMuxes: no switch holds api/img/cdn/ftp, every SMux holds every VIP
    p4_vips = {row[1] for row in relation(tmp_path / "out", "p4_ecmp_member")}
    assert p4_vips == set(DUET_PLACED)
    mux_vips = {(row[0], row[2]) for row in relation(tmp_path / "out", "agent_mux_vip")}
    for mux in ("smux1", "smux2"):
        for v in [*DUET_PLACED, *DUET_ON_SMUX]:
            assert (mux, v) in mux_vips
    # CAP-1: tunnel entries per switch as the README says
    tunnels = defaultdict(int)
    for row in relation(tmp_path / "out", "p4_tunnel"):
        tunnels[row[0]] += 1
    assert dict(tunnels) == {"core1": 26, "agg1": 316, "agg2": 332}


def test_explicit_vip_placement_facts_win(netc_bin, tmp_path):
    # placement.ndl pins what the built-in computes: same artifacts
    pinned = compile_placement(netc_bin, tmp_path / "a", DUET / "intent.ndl", DUET / "placement.ndl")
    assert pinned == DUET_PLACED
    # one pinned row: it alone is the placement (the built-in writes nothing)
    pin = tmp_path / "pin.ndl"
    pin.write_text('vip_placement(100.64.1.5, "tor4").\n')
    assert compile_placement(netc_bin, tmp_path / "b", DUET / "intent.ndl", pin) == {"100.64.1.5": "tor4"}


# ---------------------------------------------------------------- bad placement inputs
SMALL = """switch("tor1", "tor", 10.255.0.1, 16, 16, 16).
tenant("t", 100).
vnet("t", "v", 10.0.0.0/8).
host("h1", 192.168.1.1, "tor1", 1).
vm("t", "vm1", 02:00:00:00:00:01, 10.0.0.1, "h1").
vip("t", 100.64.0.1, 6, 80, "public").
dip_pool(100.64.0.1, 6, 80, "t", "vm1", 8080, 1).
"""


@pytest.mark.parametrize(
    "extra, words",
    [
        ('placement_traffic(100.64.0.1, "tor1", -5).', ["placement_traffic", "mbps", "-5", "non-negative"]),
        ("placement_params(0.8, 0.05).\nplacement_params(0.7, 0.05).", ["placement_params", "single"]),
        (
            'switch("tor2", "tor", 10.255.0.2, 16, 16, 16).\n'
            'placement_previous(100.64.0.1, "tor1").\nplacement_previous(100.64.0.1, "tor2").',
            ["placement_previous", "one switch per VIP"],
        ),
    ],
)
def test_bad_placement_input_is_refused(netc_bin, tmp_path, extra, words):
    intent = tmp_path / "intent.ndl"
    intent.write_text(SMALL + extra + "\n")
    out = tmp_path / "out"
    r = subprocess.run([netc_bin, "compile", str(intent), "--out", str(out)], capture_output=True, text=True)
    assert r.returncode != 0
    for w in words:
        assert w in r.stderr, r.stderr
    assert "panicked" not in r.stderr
    assert not out.exists()


def test_params_out_of_range_is_the_rules_finding(netc_bin, tmp_path):
    intent = tmp_path / "intent.ndl"
    intent.write_text(SMALL + 'placement_traffic(100.64.0.1, "tor1", 5).\nplacement_params(1.5, 0.05).\n')
    r = subprocess.run(
        [netc_bin, "compile", str(intent), "--out", str(tmp_path / "out")], capture_output=True, text=True
    )
    assert r.returncode != 0
    assert "placement_params" in r.stderr and "intent.ndl:" in r.stderr, r.stderr
