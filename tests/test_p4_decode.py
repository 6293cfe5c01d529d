"""The verifier reads the P4 requests that will be pushed.

1. Its reader (`netc decode-p4`, verify/src/p4/) decodes every example's
   `DIR/p4/<switch>.txtpb` exactly as the official protobuf runtime does
   (`google.protobuf.text_format` + the `p4runtime` classes), field for
   field; and it refuses malformed text at file:line:col.
2. `netc verify --artifacts DIR` models the switches from those files: the
   unmutated examples are proven, and a fault injected into a `.txtpb` (not
   into the rows) is caught with a counterexample citing the `.txtpb` line.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "targets"))
import p4client  # noqa: E402,F401  (selects the protobuf runtime)
from google.protobuf import text_format  # noqa: E402
from google.protobuf.descriptor import FieldDescriptor  # noqa: E402
from p4.v1 import p4runtime_pb2  # noqa: E402

EXAMPLES = ["ananta", "rubik", "athena", "anolis", "duet"]


def official(msg) -> dict:
    """A message as plain data: set fields by name, bytes as hex, enums by name."""
    out = {}
    for fd, value in msg.ListFields():
        def one(v, fd=fd):
            if fd.type == FieldDescriptor.TYPE_MESSAGE:
                return official(v)
            if fd.type == FieldDescriptor.TYPE_BYTES:
                return v.hex()
            if fd.type == FieldDescriptor.TYPE_ENUM:
                return fd.enum_type.values_by_number[v].name
            return v
        out[fd.name] = [one(v) for v in value] if isinstance(value, Sequence) and not isinstance(value, (bytes, str)) else one(value)
    return out


@pytest.fixture(scope="module")
def compiled(netc_bin: str, tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("p4dec")
    out = {}
    for ex in EXAMPLES:
        d = base / ex
        files = sorted(str(p) for p in (REPO / "examples" / ex).glob("*.ndl"))
        r = subprocess.run([netc_bin, "compile", *files, "--out", str(d)], capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr
        out[ex] = d
    return out


def decode(netc_bin: str, f: Path) -> subprocess.CompletedProcess:
    return subprocess.run([netc_bin, "decode-p4", str(f)], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("example", EXAMPLES)
def test_the_verifiers_reading_equals_the_official_decode(netc_bin, compiled, example):
    files = sorted((compiled[example] / "p4").glob("*.txtpb"))
    assert files, example
    for f in files:
        r = decode(netc_bin, f)
        assert r.returncode == 0, r.stderr
        want = official(text_format.Parse(f.read_text(), p4runtime_pb2.WriteRequest()))
        assert json.loads(r.stdout) == want, f


def test_the_reader_handles_what_text_format_allows(netc_bin, tmp_path):
    # other spellings the official parser accepts: `:` before `{`, `<>`,
    # single quotes, adjacent strings, hex integers, `\x` escapes
    text = (
        "updates: < type: INSERT entity { table_entry { table_id: 0x02000002\n"
        "  match { field_id: 1 exact { value: '\\x01' \"\\003\" } }\n"
        "  action { action { action_id: 16777220 } } } } >\n"
    )
    f = tmp_path / "s.txtpb"
    f.write_text(text)
    r = decode(netc_bin, f)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == official(text_format.Parse(text, p4runtime_pb2.WriteRequest()))


@pytest.mark.parametrize(
    ("text", "where", "what"),
    [
        ("updates {\n  type: INSERT\n  entity { table_entry { table_id: 99 } }\n}\n", ":3:26", "no table with id 99"),
        ("updates {\n  type: UPSERT\n}\n", ":2:3", "expected INSERT, MODIFY or DELETE"),
        ("updates {\n  typo: INSERT\n}\n", ":2:3", "unknown field `typo` in Update"),
        ("updates {\n  type: INSERT\n", ":3:1", "expected `}`"),
        ('updates { entity { table_entry { table_id: 33554434 match { field_id: 1 exact { value: "\\001\\000\\000" } } } } type: INSERT }\n',
         ":1:", "does not fit in 9 bits"),
        ('updates { type: INSERT entity { table_entry { table_id: 33554436 match { field_id: 1 exact { value: "a" } } } } }\n',
         ":1:", "is ternary, found `exact`"),
    ],
)
def test_bad_text_is_an_error_at_file_line_col(netc_bin, tmp_path, text, where, what):
    f = tmp_path / "bad.txtpb"
    f.write_text(text)
    r = decode(netc_bin, f)
    assert r.returncode == 2, r.stdout
    assert f"{f}{where}" in r.stderr and what in r.stderr and "Traceback" not in r.stderr and "panicked" not in r.stderr


# ---------------------------------------------------------------- verify on the requests


def verify(netc_bin: str, d: Path, example: str) -> tuple[int, dict, str]:
    files = sorted(str(p) for p in (REPO / "examples" / example).glob("*.ndl"))
    r = subprocess.run([netc_bin, "verify", "--json", "--artifacts", str(d), *files],
                       capture_output=True, text=True, timeout=900)
    report = json.loads(r.stdout) if r.stdout.strip().startswith("{") else {}
    return r.returncode, report, r.stderr


def updates(text: str) -> list[tuple[int, int]]:
    """(start, end) character spans of the top-level `updates { ... }` blocks."""
    spans, depth, start = [], 0, None
    for m in re.finditer(r"[{}]", text):
        if m.group() == "{":
            if depth == 0:
                start = text.rfind("updates", 0, m.start())
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                spans.append((start, m.end()))
    return spans


def line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def edit_update(f: Path, pick, change) -> int:
    """Applies `change` to the first update block `pick` selects; returns its line."""
    text = f.read_text()
    for a, b in updates(text):
        block = text[a:b]
        if pick(block):
            f.write_text(text[:a] + change(block) + text[b:])
            return line_of(text, a)
    raise AssertionError(f"no update to change in {f}")


TABLE = {"vip": 33554439, "ecmp": 33554440, "tunnel": 33554442}
MEMBER_ACTION = "action_id: 16777224"


def is_table(name):
    return lambda blk: f"table_id: {TABLE[name]}\n" in blk


def m_flip_member_vni(d: Path) -> tuple[str, int]:
    # ananta agg1: one DIP member carries another VNI (to_member's mvni)
    f = d / "p4" / "agg1.txtpb"
    line = edit_update(f, lambda b: "action_profile_member" in b and MEMBER_ACTION in b,
                       lambda b: b.replace('value: "\\027q"', 'value: "\\027r"', 1))
    return f.name, line


def m_reorder_members(d: Path) -> tuple[str, int]:
    # ananta agg1: two slots of the VIP's ecmp vector point at swapped members
    f = d / "p4" / "agg1.txtpb"
    text = f.read_text()
    ecmp = [(a, b) for a, b in updates(text) if f"table_id: {TABLE['ecmp']}\n" in text[a:b]]
    ids = [re.search(r"action_profile_member_id: (\d+)", text[a:b]).group(1) for a, b in ecmp]
    i, j = 0, next(k for k in range(1, len(ids)) if ids[k] != ids[0])
    (a0, b0), (a1, b1) = ecmp[i], ecmp[j]
    blk0 = text[a0:b0].replace(f"action_profile_member_id: {ids[i]}", f"action_profile_member_id: {ids[j]}")
    blk1 = text[a1:b1].replace(f"action_profile_member_id: {ids[j]}", f"action_profile_member_id: {ids[i]}")
    f.write_text(text[:a0] + blk0 + text[b0:a1] + blk1 + text[b1:])
    return f.name, line_of(text, a0)


def m_tunnel_wrong_dst(d: Path) -> tuple[str, int]:
    # ananta agg1: a DIP's tunnel entry encapsulates to another host
    f = d / "p4" / "agg1.txtpb"

    def change(b: str) -> str:
        # encap(underlay, dmac): param 1 is the underlay address (4 bytes)
        return re.sub(r'(param_id: 1\n\s*value: ")([^"]*)(")', r'\1\\300\\250\\000\\143\3', b, count=1)

    return f.name, edit_update(f, is_table("tunnel"), change)


def m_drop_ecmp_slot(d: Path) -> tuple[str, int]:
    # ananta tor1: one slot of the VIP's vector is not installed
    f = d / "p4" / "tor1.txtpb"
    return f.name, edit_update(f, is_table("ecmp"), lambda b: "")


MUTANTS = [
    ("flip-member-vni", m_flip_member_vni, "AFF-1"),
    ("reorder-members-one-switch", m_reorder_members, "AFF-1"),
    ("tunnel-wrong-dst", m_tunnel_wrong_dst, "AFF-1"),
    ("drop-ecmp-slot", m_drop_ecmp_slot, "AFF-1"),
]


def test_unmutated_requests_are_proven(netc_bin, compiled):
    for ex in ("ananta", "rubik"):
        rc, report, err = verify(netc_bin, compiled[ex], ex)
        bad = [v for v in report.get("verdicts", []) if v["status"] == "violated"]
        assert rc == 0 and not bad, (ex, err[-2000:], bad[:1])


@pytest.mark.parametrize(("name", "mutate", "invariant"), MUTANTS, ids=[m[0] for m in MUTANTS])
def test_a_fault_in_the_request_is_caught_and_cites_its_line(netc_bin, compiled, tmp_path, name, mutate, invariant):
    d = tmp_path / name
    shutil.copytree(compiled["ananta"], d)
    fname, line = mutate(d)
    rc, report, err = verify(netc_bin, d, "ananta")
    assert rc == 1, err[-2000:]
    st = {v["invariant"]: v["status"] for v in report["verdicts"]}
    assert st[invariant] == "violated", st
    v = next(v for v in report["verdicts"] if v["invariant"] == invariant)
    text = json.dumps(v["counterexamples"])
    cited = re.findall(re.escape(fname) + r":(\d+)", text)
    assert cited, text[:2000]
    # the cited lines are update blocks of the mutated file (the fault's own
    # update, or the entry whose meaning it changed)
    assert any(abs(int(n) - line) < 400 for n in cited), (line, cited)
