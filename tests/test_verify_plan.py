"""PLAN-1 on two generations: `netc verify --artifacts NEW --against OLD`.

Duet: the quickstart's public VIP pinned on HMux switch tor1 (old
generation) and then on tor2 (new generation): a move the rules render
correctly — tor1 withdraws it, tor2 holds it, the SMux holds it in both — is
proven. Two mutants of the new generation are caught with a counterexample
citing the rows: tor1 still holding it (two switches announce it at once)
and no SMux holding it while it moves. Without `--against`, PLAN-1 is not
checked.

Anolis: examples/anolis with only version 6 (old) → versions 6..8 (new, A2
failed, A6 added): the chains that change keep a first common node and the
sync ops sit on it: proven. Mutants of the new agent rows: a changed chain
with no node of the old one (no first common node), a sync op at a node that
is not in both chains.

Andromeda: the quickstart with acme/db1 moved from h2 to h3. The rollout
order (db1's new host, then h2 with a hairpin, the rest, the hairpin
removed) keeps db1 reachable in every intermediate state: proven. The flat
order (`NETC_ROLLOUT=flat`: every device once, by name, no hairpin) is a
violation whose counterexample is a packet web1 → db1 the ACLs allow,
black-holed at h3 in the state after h1 is pushed; so is removing the
hairpin before the senders move (`NETC_ROLLOUT=unpin-early`), black-holed
at h2.
"""

from __future__ import annotations

import os
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from test_verify import read_rows, status, verify, write_rows

REPO = Path(__file__).resolve().parent.parent
BASE = (REPO / "examples" / "quickstart" / "intent.ndl").read_text()
VIP = "203.0.113.10"

pytestmark = pytest.mark.netc


@pytest.fixture(scope="module")
def gens(netc_bin: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("plan")
    out = {}
    for sw in ("tor1", "tor2"):
        intent = base / f"{sw}.ndl"
        intent.write_text(BASE + f'vip_placement({VIP}, "{sw}").\n')
        d = base / f"{sw}.out"
        r = subprocess.run([netc_bin, "compile", str(intent), "--out", str(d)], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        out[sw], out[f"{sw}.ndl"] = d, intent
    return out


def plan1(report: dict) -> dict:
    return next(v for v in report["verdicts"] if v["invariant"] == "PLAN-1")


def test_pinned_placement_is_rendered(gens: dict[str, Path]) -> None:
    # the premise of the tests below: each generation has the VIP on its switch
    for sw in ("tor1", "tor2"):
        rows = read_rows(gens[sw], "p4_announce")
        assert [sw, f"{VIP}/32"] in rows, rows


def test_move_via_smuxes_is_proven(netc_bin: str, gens: dict[str, Path]) -> None:
    rc, report, err = verify(netc_bin, ["--artifacts", str(gens["tor2"]), "--against", str(gens["tor1"]), str(gens["tor2.ndl"])])
    assert rc == 0, err
    p = plan1(report)
    assert p["status"] == "proven", p
    assert p["detail"].startswith("Duet: 1 VIP move"), p


def test_without_against_plan1_is_not_checked(netc_bin: str, gens: dict[str, Path]) -> None:
    rc, report, err = verify(netc_bin, ["--artifacts", str(gens["tor2"]), str(gens["tor2.ndl"])])
    assert rc == 0, err
    assert status(report)["PLAN-1"] == "not_checked"


def mutant(gens: dict[str, Path], tmp_path: Path, change) -> Path:
    d = tmp_path / "new"
    shutil.copytree(gens["tor2"], d)
    # the verifier reads the OVS rows when the rendered OVS files are absent;
    # switches are always read from their requests (p4/*.txtpb)
    shutil.rmtree(d / "ovs", ignore_errors=True)
    change(d)
    return d


def test_both_switches_hold_it(netc_bin: str, gens: dict[str, Path], tmp_path: Path) -> None:
    def keep_old(d: Path) -> None:
        # tor1 keeps its old request (the VIP's entries) and its announcement
        shutil.copy(gens["tor1"] / "p4" / "tor1.txtpb", d / "p4" / "tor1.txtpb")
        old = [r for r in read_rows(gens["tor1"], "p4_announce") if r[0] == "tor1"]
        write_rows(d, "p4_announce", read_rows(d, "p4_announce") + old)

    d = mutant(gens, tmp_path, keep_old)
    rc, report, err = verify(netc_bin, ["--artifacts", str(d), "--against", str(gens["tor1"]), str(gens["tor2.ndl"])])
    assert rc == 1, err
    p = plan1(report)
    assert p["status"] == "violated", p
    cx = p["counterexamples"][0]
    assert "both tor1 and tor2" in cx["summary"], cx
    assert any("tor1.txtpb" in c for c in cx["cites"]), cx


def test_no_smux_during_the_move(netc_bin: str, gens: dict[str, Path], tmp_path: Path) -> None:
    def drop_smux(d: Path) -> None:
        write_rows(d, "agent_mux_vip", [r for r in read_rows(d, "agent_mux_vip") if r[2] != VIP])

    d = mutant(gens, tmp_path, drop_smux)
    rc, report, err = verify(netc_bin, ["--artifacts", str(d), "--against", str(gens["tor1"]), str(gens["tor2.ndl"])])
    assert rc == 1, err
    p = plan1(report)
    assert p["status"] == "violated", p
    assert any("no SMux holds it in the new generation" in c["summary"] for c in p["counterexamples"]), p


# ---------------------------------------------------------------- Anolis

ANOLIS = (REPO / "examples" / "anolis" / "intent.ndl").read_text()


@pytest.fixture(scope="module")
def anolis(netc_bin: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("anolis")
    # the old generation: version 6 synced and current (proxy1 on A3: A6 is not a peer yet)
    old_text = ANOLIS.replace('anolis_current("isp-lb", 8)', 'anolis_current("isp-lb", 6)').replace(
        '"proxy1", 10.0.8.3, "A6"', '"proxy1", 10.0.8.3, "A3"'
    )
    assert old_text != ANOLIS
    out = {}
    for name, text in (("old", old_text), ("new", ANOLIS)):
        intent = base / f"{name}.ndl"
        intent.write_text(text)
        d = base / f"{name}.out"
        r = subprocess.run([netc_bin, "compile", str(intent), "--out", str(d)], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        out[name], out[f"{name}.ndl"] = d, intent
    return out


def anolis_verify(netc_bin: str, new: Path, g: dict[str, Path]) -> tuple[int, dict]:
    rc, report, err = verify(netc_bin, ["--artifacts", str(new), "--against", str(g["old"]), str(g["new.ndl"])])
    assert rc in (0, 1), err
    return rc, plan1(report)


def test_anolis_change_with_first_common_nodes_is_proven(netc_bin: str, anolis: dict[str, Path]) -> None:
    syncs = read_rows(anolis["new"], "agent_anolis_sync")
    assert syncs, "the premise: the new generation syncs the ranges whose chain changed"
    rc, p = anolis_verify(netc_bin, anolis["new"], anolis)
    assert rc == 0 and p["status"] == "proven", p
    assert "Anolis: 4 key range(s) whose chain changed" in p["detail"], p


def anolis_mutant(anolis: dict[str, Path], tmp_path: Path, change) -> Path:
    d = tmp_path / "new"
    shutil.copytree(anolis["new"], d)
    change(d)
    return d


def test_anolis_chain_without_a_common_node_is_caught(netc_bin: str, anolis: dict[str, Path], tmp_path: Path) -> None:
    lo, hi = read_rows(anolis["new"], "agent_anolis_sync")[0][3:5]

    def replace_chain(d: Path) -> None:
        rows = read_rows(d, "agent_anolis_chain")
        write_rows(d, "agent_anolis_chain", [r[:6] + [r[6] + "x"] if r[3:5] == [lo, hi] else r for r in rows])

    rc, p = anolis_verify(netc_bin, anolis_mutant(anolis, tmp_path, replace_chain), anolis)
    assert rc == 1 and p["status"] == "violated", p
    cx = next(c for c in p["counterexamples"] if "no first common node" in c["summary"])
    assert f"({lo}, {hi}]" in cx["summary"], cx
    # the chains as pushed: the nodes' documents
    assert any(re.search(r"host/A\d\.json:\d+", c) for c in cx["cites"]), cx


def test_anolis_sync_at_the_wrong_node_is_caught(netc_bin: str, anolis: dict[str, Path], tmp_path: Path) -> None:
    def move_sync(d: Path) -> None:
        rows = read_rows(d, "agent_anolis_sync")
        rows[0][0] = "A2"  # failed in version 7: in the old chain, not in the new one
        write_rows(d, "agent_anolis_sync", rows)

    rc, p = anolis_verify(netc_bin, anolis_mutant(anolis, tmp_path, move_sync), anolis)
    assert rc == 1 and p["status"] == "violated", p
    cx = p["counterexamples"][0]
    assert "the sync op is at A2, which is not in both chains" in cx["summary"], cx
    assert any(re.search(r"host/A2\.json:\d+", c) for c in cx["cites"]), cx


# ---------------------------------------------------------------- Andromeda: a VM moves

def moved_intent(text: str) -> str:
    out = text.replace('10.1.2.21, "h2")', '10.1.2.21, "h3")').replace(
        'vm_port("h2", "acme", "db1", 10).', 'vm_port("h3", "acme", "db1", 11).'
    )
    assert out.count('"h3"') == text.count('"h3"') + 2
    return out


@pytest.fixture(scope="module")
def move(netc_bin: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("move")
    out = {}
    for name, text in (("old", BASE), ("new", moved_intent(BASE))):
        intent = base / f"{name}.ndl"
        intent.write_text(text)
        d = base / f"{name}.out"
        r = subprocess.run([netc_bin, "compile", str(intent), "--out", str(d)], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        out[name], out[f"{name}.ndl"] = d, intent
    return out


def verify_env(netc_bin: str, args: list[str], env: dict[str, str]) -> tuple[int, dict, str]:
    r = subprocess.run([netc_bin, "verify", "--json", *args], capture_output=True, text=True, timeout=600,
                       env={**os.environ, **env})
    return r.returncode, json.loads(r.stdout) if r.stdout.strip().startswith("{") else {}, r.stderr


def test_vm_move_with_hairpin_first_is_proven(netc_bin: str, move: dict[str, Path]) -> None:
    rc, report, err = verify(netc_bin, ["--artifacts", str(move["new"]), "--against", str(move["old"]), str(move["new.ndl"])])
    assert rc == 0, err
    p = plan1(report)
    assert p["status"] == "proven", p
    assert "1 VM move(s) (acme/db1 h2 → h3)" in p["detail"] and "hairpin first" in p["detail"], p


def plan1_violated(netc_bin: str, move: dict[str, Path], order: str) -> tuple[dict, dict]:
    """Verifies the move with the rollout in `order` (NETC_ROLLOUT): exit 1,
    PLAN-1 violated; returns the report and PLAN-1's first counterexample."""
    rc, report, err = verify_env(
        netc_bin, ["--artifacts", str(move["new"]), "--against", str(move["old"]), str(move["new.ndl"])],
        {"NETC_ROLLOUT": order},
    )
    assert rc == 1, err
    p = plan1(report)
    assert p["status"] == "violated", p
    return report, p["counterexamples"][0]


def test_vm_move_in_the_flat_order_is_black_holed(netc_bin: str, move: dict[str, Path]) -> None:
    report, cx = plan1_violated(netc_bin, move, "flat")
    assert "h1 gets its new artifacts" in cx["summary"] and "black-holed" in cx["summary"], cx
    assert "acme/web1 → acme/db1" in cx["summary"], cx
    # a concrete packet the ACLs allow (web → db on 5432), dropped at h3 in that state
    assert cx["packet"]["headers"]["nw_dst"] == "10.1.2.21", cx
    assert cx["packet"]["headers"]["tp_dst"] == "5432", cx
    [path] = cx["paths"]
    assert path["end"].startswith("dropped"), path
    assert any(h.startswith("h3 table=40") for h in path["hops"]), path
    # every other invariant of the new generation itself still holds
    assert all(v["status"] != "violated" for v in report["verdicts"] if v["invariant"] != "PLAN-1"), report


def test_vm_move_with_the_hairpin_removed_first_is_black_holed(netc_bin: str, move: dict[str, Path]) -> None:
    _, cx = plan1_violated(netc_bin, move, "unpin-early")
    # h1 still tunnels db1's packets to h2, which no longer forwards them
    assert "(phase 4: h2 gets its new artifacts)" in cx["summary"] and "black-holed" in cx["summary"], cx
    [path] = cx["paths"]
    assert path["end"].startswith("dropped") and any(h.startswith("h2 table=0") for h in path["hops"]), path
