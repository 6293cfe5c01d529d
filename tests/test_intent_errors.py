"""Bad intent gets clear errors from `netc check --intent` and `netc compile`.

Each fixture in tests/data/bad_intent/ names, on its first line, the
`error_*` relation it must trigger (`// expect: error_x`). Both commands must
exit 1, name the problem, cite the offending fact with `file:line` from the
fixture, and (`compile`) write no artifacts at all. The good examples must
compile cleanly and write their located relations.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.netc

REPO = Path(__file__).resolve().parent.parent
BAD = sorted((REPO / "tests/data/bad_intent").glob("*.ndl"))
EXAMPLES = ["quickstart", "ananta", "athena", "anolis", "andromeda", "yoda"]


def expected_kind(path: Path) -> str:
    m = re.match(r"// expect: error_(\w+)", path.read_text().splitlines()[0])
    assert m, f"{path} must start with `// expect: error_<kind>`"
    return m.group(1)


def extra_facts(fixture: Path, tmp_path: Path) -> list[str]:
    """vip_too_many_dips.ndl holds all but its 513 DIPs, generated here."""
    if fixture.stem != "vip_too_many_dips":
        return []
    lines = []
    for i in range(513):
        lines.append(f'vm("t1", "d{i}", 02:00:00:00:{i >> 8:02x}:{i & 255:02x}, 10.0.{i // 250}.{i % 250 + 1}, "h1").')
        lines.append(f'dip_pool(100.64.0.1, 6, 80, "t1", "d{i}", 80, 1).')
        lines.append(f'vm_port("h1", "t1", "d{i}", {10 + i}).')
    extra = tmp_path / "dips.ndl"
    extra.write_text("\n".join(lines) + "\n")
    return [str(extra)]


@pytest.mark.parametrize("fixture", BAD, ids=[p.stem for p in BAD])
def test_bad_intent_is_refused_with_a_citation(netc_bin, tmp_path, fixture):
    kind = expected_kind(fixture)
    out = tmp_path / "out"
    files = [str(fixture), *extra_facts(fixture, tmp_path)]
    r = subprocess.run([netc_bin, "compile", *files, "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stderr
    assert f"error[intent]: {kind.replace('_', ' ')}:" in r.stderr, r.stderr
    assert "panicked" not in r.stderr
    assert not out.exists(), "no artifacts are written for bad intent"
    cited = re.findall(rf"--> {re.escape(str(fixture))}:(\d+):1", r.stderr)
    if "(no single fact to cite" not in r.stderr:
        assert cited, r.stderr
        lines = fixture.read_text().splitlines()
        for n in cited:
            assert lines[int(n) - 1].strip(), "a citation points at a fact line"
    c = subprocess.run([netc_bin, "check", "--intent", *files], capture_output=True, text=True, timeout=120)
    assert c.returncode == 1 and f"{kind.replace('_', ' ')}:" in c.stderr, c.stderr


@pytest.mark.parametrize("example", EXAMPLES)
def test_examples_compile_to_located_relations(netc_bin, tmp_path, example):
    out = tmp_path / "out"
    r = subprocess.run(
        [netc_bin, "compile", str(REPO / "examples" / example / "intent.ndl"), "--out", str(out)], capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, r.stderr
    files = sorted((out / "relations").glob("*.csv"))
    assert files, "located relations are written"
    assert any(f.stat().st_size > 0 for f in files)
    flows = (out / "relations" / "ovs_flow.csv").read_text().splitlines()
    assert all(len(line.split("\t")) == 6 for line in flows), "ovs_flow(@host, table, priority, match, actions, cookie)"


def test_compile_replaces_the_output_directory_as_a_whole(netc_bin, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "stale.txt").write_text("from an older run")
    r = subprocess.run([netc_bin, "compile", str(REPO / "examples/quickstart/intent.ndl"), "--out", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert not (out / "stale.txt").exists()
    assert (out / "relations" / "ovs_flow.csv").exists()
