"""PLAN-1 (Duet part) on two generations: `netc verify --artifacts NEW --against OLD`.

The quickstart's public VIP pinned on HMux switch tor1 (old generation) and
then on tor2 (new generation): a move the rules render correctly — tor1
withdraws it, tor2 holds it, the SMux holds it in both — is proven. Two
mutants of the new generation are caught with a counterexample citing the
rows: tor1 still holding it (two switches announce it at once) and no SMux
holding it while it moves. Without `--against`, PLAN-1 is not checked.
"""

from __future__ import annotations

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
    assert p["detail"].startswith("1 VIP move"), p


def test_without_against_plan1_is_not_checked(netc_bin: str, gens: dict[str, Path]) -> None:
    rc, report, err = verify(netc_bin, ["--artifacts", str(gens["tor2"]), str(gens["tor2.ndl"])])
    assert rc == 0, err
    assert status(report)["PLAN-1"] == "not_checked"


def mutant(gens: dict[str, Path], tmp_path: Path, change) -> Path:
    d = tmp_path / "new"
    shutil.copytree(gens["tor2"], d)
    # the verifier reads rows when the rendered OVS/P4 files are absent
    shutil.rmtree(d / "ovs", ignore_errors=True)
    shutil.rmtree(d / "p4", ignore_errors=True)
    change(d)
    return d


def test_both_switches_hold_it(netc_bin: str, gens: dict[str, Path], tmp_path: Path) -> None:
    def keep_old(d: Path) -> None:
        for rel in ("p4_vip", "p4_ecmp_member", "p4_announce"):
            old = [r for r in read_rows(gens["tor1"], rel) if r[0] == "tor1"]
            write_rows(d, rel, read_rows(d, rel) + old)

    d = mutant(gens, tmp_path, keep_old)
    rc, report, err = verify(netc_bin, ["--artifacts", str(d), "--against", str(gens["tor1"]), str(gens["tor2.ndl"])])
    assert rc == 1, err
    p = plan1(report)
    assert p["status"] == "violated", p
    cx = p["counterexamples"][0]
    assert "both tor1 and tor2" in cx["summary"], cx
    assert any("p4_vip.csv" in c for c in cx["cites"]), cx


def test_no_smux_during_the_move(netc_bin: str, gens: dict[str, Path], tmp_path: Path) -> None:
    def drop_smux(d: Path) -> None:
        write_rows(d, "agent_mux_vip", [r for r in read_rows(d, "agent_mux_vip") if r[2] != VIP])

    d = mutant(gens, tmp_path, drop_smux)
    rc, report, err = verify(netc_bin, ["--artifacts", str(d), "--against", str(gens["tor1"]), str(gens["tor2.ndl"])])
    assert rc == 1, err
    p = plan1(report)
    assert p["status"] == "violated", p
    assert any("no SMux holds it in the new generation" in c["summary"] for c in p["counterexamples"]), p
