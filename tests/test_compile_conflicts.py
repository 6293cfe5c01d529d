"""`netc compile` refuses artifacts whose flows or groups would overwrite
each other on a bridge (`error_ovs_flow_conflict`, `error_ovs_group_conflict`
in rules/validate.ndl).

The engine evaluates these two checks outside the dataflow
(runtime/engine/src/fdcheck.rs), from the rules' derivations of `ovs_flow`
and `ovs_group`. These tests run the real binary on a generated S scenario
with one extra fact appended: a flow (or group) with the key of a generated
one and other actions must be refused, citing the appended fact, and
nothing written; the same flow again under another cookie (same key, same
actions) is no conflict and compiles.
"""

from __future__ import annotations

import csv
import json
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.netc


def compile_(netc_bin: str, out: Path, intent: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [netc_bin, "compile", str(intent), "--out", str(out), *extra],
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def s_rows(netc_bin: str, s_intent: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[list[str]]]:
    """The generated S scenario's ovs_flow and ovs_group rows."""
    out = tmp_path_factory.mktemp("s-out") / "out"
    r = compile_(netc_bin, out, s_intent)
    assert r.returncode == 0, r.stderr
    rows = {}
    for rel in ("ovs_flow", "ovs_group"):
        with open(out / "relations" / f"{rel}.csv", newline="") as f:
            rows[rel] = list(csv.reader(f, delimiter="\t"))
    return rows


def with_fact(s_intent: Path, tmp_path: Path, fact: str) -> tuple[Path, int]:
    """A copy of the S intent with `fact` appended, and the fact's line."""
    text = s_intent.read_text()
    if not text.endswith("\n"):
        text += "\n"
    intent = tmp_path / "s-plus.ndl"
    intent.write_text(text + fact + "\n")
    return intent, text.count("\n") + 1


def assert_refused(r: subprocess.CompletedProcess, out: Path, error: str, intent: Path, line: int) -> None:
    """Refused with `error`, citing the appended fact's line; nothing written."""
    assert r.returncode == 1, r.stderr
    assert error in r.stderr, r.stderr
    assert f"--> {intent}:{line}:1" in r.stderr, r.stderr
    assert not out.exists(), "no artifacts are written for conflicting intent"


def first_with_match(rows: list[list[str]]) -> list[str]:
    return next(r for r in rows if r[3] and '"' not in r[3] + r[4])


def test_a_flow_with_another_action_for_a_generated_key_is_refused(netc_bin, s_intent, s_rows, tmp_path):
    h, tb, p, m, a, _ = first_with_match(s_rows["ovs_flow"])
    other = "output:4242" if a != "output:4242" else "drop"
    intent, line = with_fact(s_intent, tmp_path, f'ovs_flow("{h}", {tb}, {p}, "{m}", "{other}", 1).')
    out = tmp_path / "out"
    r = compile_(netc_bin, out, intent)
    assert_refused(r, out, f'error[intent]: ovs flow conflict: host="{h}" table={tb} priority={p} match="{m}"', intent, line)
    j = compile_(netc_bin, out, intent, "--json")
    assert j.returncode == 1
    findings = json.loads(j.stdout or j.stderr)["error"]["findings"]
    assert [f["kind"] for f in findings] == ["ovs_flow_conflict"], findings
    assert f"{intent}:{line}:1" in findings[0]["cited"], findings


def test_the_same_flow_under_another_cookie_is_no_conflict(netc_bin, s_intent, s_rows, tmp_path):
    h, tb, p, m, a, cookie = first_with_match(s_rows["ovs_flow"])
    intent, _ = with_fact(s_intent, tmp_path, f'ovs_flow("{h}", {tb}, {p}, "{m}", "{a}", {int(cookie) + 1}).')
    r = compile_(netc_bin, tmp_path / "out", intent)
    assert r.returncode == 0, r.stderr


def test_a_group_with_another_type_for_a_generated_id_is_refused(netc_bin, s_intent, s_rows, tmp_path):
    h, g, t, b = next(r for r in s_rows["ovs_group"] if '"' not in r[3])
    other = "all" if t != "all" else "select"
    intent, line = with_fact(s_intent, tmp_path, f'ovs_group("{h}", {g}, "{other}", "{b}").')
    out = tmp_path / "out"
    r = compile_(netc_bin, out, intent)
    assert_refused(r, out, f'error[intent]: ovs group conflict: host="{h}" group_id={g}', intent, line)
