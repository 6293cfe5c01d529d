"""`netc compile --out DIR` replaces DIR as a whole or not at all.

`netc compile` starts dumping and rendering what the placement cannot change
(the OVS flows, the host agents' documents) into a staging directory while
the placement is computed, before it knows whether the intent is good. These
tests run the real binary on a generated S scenario (1,000 VMs, so that early
rendering has real work) and check that a compile refused for bad intent
leaves an existing DIR exactly as it was and no staging directory behind, and
that a good compile still replaces DIR with the complete, same output.
"""

from __future__ import annotations

import filecmp
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.netc


def compile_(netc_bin: str, out: Path, *intent: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [netc_bin, "compile", *map(str, intent), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )


def tree(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def same_tree(a: Path, b: Path) -> bool:
    cmp = filecmp.dircmp(a, b)
    if cmp.left_only or cmp.right_only or cmp.funny_files:
        return False
    _, mismatch, errors = filecmp.cmpfiles(a, b, cmp.common_files, shallow=False)
    return not mismatch and not errors and all(same_tree(a / d, b / d) for d in cmp.common_dirs)


def leftovers(parent: Path) -> list[str]:
    """Staging or replaced directories `netc compile` would have left."""
    return sorted(p.name for p in parent.iterdir() if ".tmp-" in p.name or ".old-" in p.name)


def test_bad_intent_leaves_the_previous_output_untouched(netc_bin: str, s_intent: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    good = compile_(netc_bin, out, s_intent)
    assert good.returncode == 0, good.stderr
    before = tree(out)
    assert any(k.startswith("ovs/") for k in before) and any(k.startswith("host/") for k in before)
    # One VM on a host that does not exist: an error_* finding, known only
    # after the evaluation, when the early rendering is under way.
    bad = tmp_path / "bad.ndl"
    bad.write_text('vm("t0", "stray", 02:00:00:ff:00:01, 10.208.9.9, "no-such-host").\n')
    r = compile_(netc_bin, out, s_intent, bad)
    assert r.returncode == 1, r.stderr
    assert "vm unknown host" in r.stderr and "nothing was written" in r.stderr, r.stderr
    assert "panicked" not in r.stderr
    assert tree(out) == before, "a refused compile changes nothing in --out"
    assert leftovers(tmp_path) == []


def test_bad_intent_creates_no_output_directory(netc_bin: str, s_intent: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.ndl"
    bad.write_text('vm("t0", "stray", 02:00:00:ff:00:01, 10.208.9.9, "no-such-host").\n')
    out = tmp_path / "fresh"
    r = compile_(netc_bin, out, s_intent, bad)
    assert r.returncode == 1, r.stderr
    assert not out.exists()
    assert leftovers(tmp_path) == []


def test_bad_intent_leaves_no_parent_directory_it_made(netc_bin: str, s_intent: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.ndl"
    bad.write_text('vm("t0", "stray", 02:00:00:ff:00:01, 10.208.9.9, "no-such-host").\n')
    r = compile_(netc_bin, tmp_path / "a" / "b" / "out", s_intent, bad)
    assert r.returncode == 1, r.stderr
    assert not (tmp_path / "a").exists(), sorted(p.name for p in tmp_path.rglob("*"))


def test_a_good_compile_replaces_the_directory_with_the_same_output(netc_bin: str, s_intent: Path, tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    assert compile_(netc_bin, first, s_intent).returncode == 0
    second.mkdir()
    (second / "stale.txt").write_text("from an older run")
    r = compile_(netc_bin, second, s_intent)
    assert r.returncode == 0, r.stderr
    assert not (second / "stale.txt").exists()
    assert same_tree(first, second), "the same intent compiles to the same bytes"
    assert leftovers(tmp_path) == []
