"""bench/suite.py's result handling, without running a benchmark.

`--replot` draws docs/perf's PNGs from earlier result files (e.g. S and M from a
whole-suite run, L from a later `--presets L` run). These tests build small
result documents in the suite's own shape, so they check the merge rule (a later
file's preset replaces an earlier one's), the plots written, and the errors for
files that are not suite results.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SUITE = REPO / "bench" / "suite.py"


def _suite_module():
    spec = importlib.util.spec_from_file_location("netc_bench_suite", SUITE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _preset(name: str, vms: int, wall_s: float, p50: float) -> dict:
    samples = [p50 * (0.5 + i / 10) for i in range(10)]
    return {
        "preset": name,
        "compile": {"rc": 0, "wall_s": wall_s, "peak_rss_mib": vms / 10},
        "warm": {"vms": vms, "changes": {"add_vm": {"samples_ms": samples}}},
    }


def _result(path: Path, commit: str, presets: list[dict], hover: list[dict] | None = None) -> Path:
    path.write_text(
        json.dumps({"suite": "issue-8", "commit": commit, "presets": presets, "hoverboard_scaling": hover or []})
    )
    return path


def test_merge_keeps_the_last_file_per_preset_and_its_commit(tmp_path):
    first = _result(
        tmp_path / "a.json",
        "aaaaaaa",
        [_preset("S", 1000, 1.0, 3.0), _preset("M", 10000, 12.0, 4.0)],
        [{"vms": 1000, "flows": 12000}, {"vms": 10000, "flows": 0}],
    )
    second = _result(
        tmp_path / "b.json",
        "bbbbbbb",
        [_preset("L", 100000, 150.0, 20.0), _preset("M", 10000, 9.0, 2.0)],
        [{"vms": 10000, "flows": 121000}],
    )
    doc = _suite_module().merged_results([first, second])
    assert [r["preset"] for r in doc["presets"]] == ["S", "M", "L"]
    by = {r["preset"]: r for r in doc["presets"]}
    assert by["S"]["commit"] == "aaaaaaa"
    assert by["M"]["commit"] == "bbbbbbb" and by["M"]["compile"]["wall_s"] == 9.0
    assert by["L"]["commit"] == "bbbbbbb"
    # a Hoverboard point without flows (a failed compile) never replaces or adds a point
    assert [(h["vms"], h["flows"]) for h in doc["hoverboard_scaling"]] == [(1000, 12000), (10000, 121000)]


def test_replot_writes_every_plot(tmp_path):
    res = _result(
        tmp_path / "r.json",
        "ccccccc",
        [_preset("S", 1000, 1.0, 3.0), _preset("L", 100000, 150.0, 20.0)],
        [{"vms": 1000, "flows": 12000}, {"vms": 100000, "flows": 1200000}],
    )
    out = tmp_path / "plots"
    r = subprocess.run(
        [sys.executable, str(SUITE), "--replot", str(res), "--plots", str(out)], capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr
    made = sorted(p.name for p in out.iterdir())
    assert made == ["cdf-L.png", "cdf-S.png", "compile-scaling.png", "hoverboard-flows.png"]
    for p in out.iterdir():
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    ("content", "args", "message"),
    [
        ('{"result": {}}', ["--plots", "OUT"], "is not a suite result"),
        ("{not json", ["--plots", "OUT"], "--replot:"),
        (None, ["--plots", "OUT"], "No such file"),
        ('{"suite": "issue-8", "presets": []}', [], "--replot needs --plots"),
    ],
)
def test_replot_rejects_bad_input_with_a_clear_error(tmp_path, content, args, message):
    f = tmp_path / "in.json"
    if content is not None:
        f.write_text(content)
    args = [str(tmp_path / "plots") if a == "OUT" else a for a in args]
    r = subprocess.run([sys.executable, str(SUITE), "--replot", str(f), *args], capture_output=True, text=True)
    assert r.returncode == 2
    assert message in r.stderr
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "plots").exists()


def test_run_step_reports_ok_and_kills_a_step_at_its_deadline(tmp_path):
    suite = _suite_module()
    cap = 2 * 1024**3
    ok = suite.run_step([sys.executable, "-c", "print(sum(range(3_000_000)))"], cap, 60, tmp_path)
    assert ok["outcome"] == "ok" and ok["rc"] == 0, ok
    assert ok["stdout"].strip() == str(sum(range(3_000_000)))
    assert ok["cpu_s"] > 0 and ok["wall_s"] < 60
    # A step that outlives its deadline, with a child in its process group:
    # both are killed at the deadline, not when the step would have ended.
    marker = tmp_path / "child-alive"
    child = tmp_path / "child.py"
    child.write_text(f"import time\ntime.sleep(30)\nopen({str(marker)!r}, 'w').close()\n")
    script = f"import subprocess, sys, time\nsubprocess.Popen([sys.executable, {str(child)!r}])\ntime.sleep(30)\n"
    slow = suite.run_step([sys.executable, "-c", script], cap, 1.5, tmp_path)
    assert slow["outcome"].startswith("timeout after 2 s"), slow
    assert slow["rc"] == -9 and 1.4 < slow["wall_s"] < 20, slow
    time.sleep(0.5)
    assert not marker.exists()


def test_the_table_shows_each_verification_kind_and_the_stall():
    """The verification target is checked over all updates; the table must still show each
    kind's own p50, flag a kind over the target, and show the slowest update."""
    suite = _suite_module()
    kinds = {
        "ACL rule (policy)": {"p50_ms": 4.9, "max_ms": 82680.6, "changes": 100},
        "add VM": {"p50_ms": 67.1, "max_ms": 232.6, "changes": 50},
        "remove VM": {"p50_ms": 21.0, "max_ms": 99.3, "changes": 50},
    }
    doc = {
        "presets": [],
        "verification": {
            "L": {
                "status": "ok",
                "result": {
                    "full": {"seconds": 762.0, "peak_rss_mb": 13485.0},
                    "incremental": {"p50_ms": 8.8, "p99_ms": 221.8, "max_ms": 82680.6, "changes": 200},
                    "by_kind": kinds,
                },
            }
        },
        "clingo_intent": {},
        "hoverboard_scaling": [],
    }
    text = suite.table(doc)
    assert "incremental p50 8.8 ms, p99 221.8 ms, max 82680.6 ms (200 changes)" in text
    assert "add VM p50 67.1 / max 232.6 ms (50)" in text
    assert "over 50 ms p50 by itself: add VM" in text
    assert "remove VM" not in text.split("by itself:")[1]
    kinds["add VM"]["p50_ms"] = 44.2
    assert "every kind within 50 ms p50" in suite.table(doc)
