"""`netc compile --timings`: each phase's wall and CPU time, on stderr and in --json.

Runs the real binary on a generated S scenario (1,000 VMs, 300 VIPs, so the
placement runs) and checks that every phase is reported, that the numbers are
sane (non-negative, phases add up to at most the total, a part fits in its
phase, the total fits in the process's own lifetime) and that the flag changes
no output byte.
"""

from __future__ import annotations

import filecmp
import json
import subprocess
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.netc

PHASES = [
    "load",
    "build_dataflow",
    "evaluate_rules",
    "placement",
    "placement_commit",
    "findings",
    "release",
    "write_outputs",
]
WRITE_PARTS = {
    "read",
    "group",
    "render",
    "write",
    "dump_format",
    "dump_write",
    "replace_dir",
}
# What the second thread does while the greedy runs: each settled relation
# read once, dumped and grouped for the targets that render early.
PLACEMENT_PARTS = {"read", "dump_format", "dump_write", "group"}
# JSON seconds are rounded to the microsecond, once per phase.
ROUNDING = 1e-5 * (len(PHASES) + 1)


def compile_(netc_bin: str, intent: Path, out: Path, *flags: str) -> tuple[subprocess.CompletedProcess, float]:
    start = time.monotonic()
    r = subprocess.run(
        [netc_bin, "compile", str(intent), "--out", str(out), *flags],
        capture_output=True,
        text=True,
        timeout=300,
    )
    return r, time.monotonic() - start


def same_tree(a: Path, b: Path) -> bool:
    cmp = filecmp.dircmp(a, b)
    if cmp.left_only or cmp.right_only or cmp.funny_files:
        return False
    _, mismatch, errors = filecmp.cmpfiles(a, b, cmp.common_files, shallow=False)
    if mismatch or errors:
        return False
    return all(same_tree(a / d, b / d) for d in cmp.common_dirs)


def test_json_timings_cover_every_phase_and_add_up(netc_bin: str, s_intent: Path, tmp_path: Path) -> None:
    r, lifetime = compile_(netc_bin, s_intent, tmp_path / "out", "--json", "--timings")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    t = doc["timings"]
    assert [p["phase"] for p in t["phases"]] == PHASES
    for key in ("wall_s", "cpu_s"):
        assert t[key] >= 0
        for p in t["phases"]:
            assert p[key] >= 0, p
            for part in p["parts"]:
                assert part[key] >= 0, part
        # Phases are consecutive stretches of the main thread.
        assert sum(p[key] for p in t["phases"]) <= t[key] + ROUNDING
    assert t["wall_s"] <= lifetime
    phases = {p["phase"]: p for p in t["phases"]}
    # Real work was measured where it happens: the rules on the workers
    # (CPU counts every thread), the greedy, the artifacts.
    for name in ("load", "evaluate_rules", "placement", "write_outputs"):
        assert phases[name]["wall_s"] > 0 and phases[name]["cpu_s"] > 0, name
    placement = phases["placement"]
    assert {p["part"] for p in placement["parts"]} == PLACEMENT_PARTS
    assert {p["thread"] for p in placement["parts"]} == {"second"}
    write = phases["write_outputs"]
    assert {p["part"] for p in write["parts"]} == WRITE_PARTS
    for part in write["parts"]:
        assert part["thread"] in ("main", "helper", "second")
        # The second thread's rendering began beside the placement, so only
        # the parts of this phase's own threads fit inside it.
        if part["thread"] != "second":
            assert part["wall_s"] <= write["wall_s"] + ROUNDING, part
    main_parts = sum(p["wall_s"] for p in write["parts"] if p["thread"] == "main")
    assert main_parts <= write["wall_s"] + ROUNDING
    assert t["load_average"] is None or t["load_average"] >= 0


def test_text_timings_on_stderr_and_outputs_unchanged(netc_bin: str, s_intent: Path, tmp_path: Path) -> None:
    plain, _ = compile_(netc_bin, s_intent, tmp_path / "plain")
    timed, _ = compile_(netc_bin, s_intent, tmp_path / "timed", "--timings")
    assert plain.returncode == 0 and timed.returncode == 0, timed.stderr
    assert "wall s" not in plain.stderr
    for label in (
        "load: parse, check, lower",
        "build the dataflow",
        "evaluate the rules",
        "placement (greedy)",
        "placement's commit",
        "release the dataflow",
        "write outputs",
        "artifacts: render",
        "relation dumps: write (second thread)",
        "total",
    ):
        assert label in timed.stderr, label
    total = [ln for ln in timed.stderr.splitlines() if ln.startswith("total")]
    assert len(total) == 1
    wall, cpu = (float(x) for x in total[0].split()[1:3])
    assert wall >= 0 and cpu >= 0
    assert same_tree(tmp_path / "plain", tmp_path / "timed")


def test_json_without_the_flag_has_no_timings(netc_bin: str, s_intent: Path, tmp_path: Path) -> None:
    r, _ = compile_(netc_bin, s_intent, tmp_path / "out", "--json")
    assert r.returncode == 0, r.stderr
    assert "timings" not in json.loads(r.stdout)
