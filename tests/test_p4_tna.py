"""p4/netc_tna.p4 (Tofino) agrees with netc.p4, its P4Info, and hash5 % n.

bf-p4c is not available here, so nothing compiles the program; what is
checked instead:
- the program, parsed by the same parser as tests/test_p4_program.py,
  matches p4/netc_tna.p4info.txtpb exactly, and every table, action and
  profile of netc.p4 is in netc_tna.p4 with the same id, keys and params;
- the CRC polynomial the program spells out, run as a generic CRC, is
  hash5 (zlib's CRC-32) over the same fields;
- the modulo entries `netc tofino DIR` renders, decoded with the official
  p4runtime classes and run as the program's lookup chain (mod_b0..b3,
  mod_reduce), give exactly h5 % n for Hypothesis-chosen h5 and for the
  n of the examples plus edge and random n in 1..=65535.
"""

from __future__ import annotations

import random
import re
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "targets"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import p4client  # noqa: E402,F401  (selects the protobuf runtime)
from google.protobuf import text_format  # noqa: E402
from p4.v1 import p4runtime_pb2  # noqa: E402
from p4client import p4info, validate  # noqa: E402
from test_p4_program import (  # noqa: E402
    PREFIX,
    block,
    cp_name,
    parse_program,
    program_action_names,
    strip_comments,
    table_action_names,
)

TNA = REPO / "p4" / "netc_tna.p4"
TNA_INFO = REPO / "p4" / "netc_tna.p4info.txtpb"
V1 = REPO / "p4" / "netc.p4"
TOFINO_ONLY_TABLES = {"mod_b0", "mod_b1", "mod_b2", "mod_b3", "mod_reduce"}
TOFINO_ONLY_ACTIONS = {"add_residue", "reduce"}


@pytest.fixture(scope="module")
def tna():
    return parse_program(TNA.read_text())


@pytest.fixture(scope="module")
def v1():
    return parse_program(V1.read_text())


@pytest.fixture(scope="module")
def ix():
    return p4info.load(TNA_INFO)


def test_parser_finds_the_tofino_program(tna):
    assert len(tna["tables"]) == 18 and len(tna["actions"]) == 14 and len(tna["profiles"]) == 2
    assert tna["tables"]["mod_b2"]["keys"] == [("n", 16, 2), ("b2", 8, 2)]
    assert tna["tables"]["mod_reduce"]["keys"] == [("n", 16, 2), ("acc", 32, 5)]
    assert tna["tables"]["port_role"]["keys"] == [("ingress_port", 9, 2)]


def test_every_netc_p4_object_has_the_same_id_and_shape_on_tofino(tna, v1):
    for name, t in v1["tables"].items():
        assert tna["tables"][name] == t, name
    for name, a in v1["actions"].items():
        assert tna["actions"][name] == a, name
    assert tna["profiles"] == v1["profiles"]
    assert set(tna["tables"]) - set(v1["tables"]) == TOFINO_ONLY_TABLES
    assert set(tna["actions"]) - set(v1["actions"]) == TOFINO_ONLY_ACTIONS


def test_the_tofino_p4info_is_netc_p4info_plus_the_modulo_tables(ix):
    v1ix = p4info.load()
    for t in v1ix.info.tables:
        assert ix.tables[t.preamble.id] == t, t.preamble.name
    for a in v1ix.info.actions:
        assert ix.actions[a.preamble.id] == a, a.preamble.name
    for p in v1ix.info.action_profiles:
        assert ix.profiles[p.preamble.id] == p, p.preamble.name
    assert ix.info.pkg_info.arch == "tna"


def test_every_tofino_object_matches_its_p4info(tna, ix):
    assert {t.preamble.name for t in ix.info.tables} == {PREFIX + n for n in tna["tables"]}
    assert {a.preamble.name for a in ix.info.actions} == {cp_name(n) for n in program_action_names(tna)}
    for name, (id_, params) in tna["actions"].items():
        a = ix.actions[id_]
        assert a.preamble.name == PREFIX + name
        assert [(p.name, p.bitwidth) for p in a.params] == params, name
    for name, t in tna["tables"].items():
        pt = ix.tables[t["id"]]
        assert pt.preamble.name == PREFIX + name, name
        assert [(f.name, f.bitwidth, f.match_type) for f in pt.match_fields] == t["keys"], name
        assert [f.id for f in pt.match_fields] == list(range(1, len(t["keys"]) + 1)), name
        assert {ix.actions[r.id].preamble.name for r in pt.action_refs} == {cp_name(a) for a in table_action_names(t)}, name
        assert pt.size == t["size"], name
        assert pt.implementation_id == (tna["profiles"][t["impl"]][0] if t["impl"] else 0), name
    assert all(t >> 24 == 0x02 for t in ix.tables) and all(a >> 24 == 0x01 for a in ix.actions)


def metadata_fields_left_uninitialised(src: str) -> list[str]:
    """Fields of metadata_t the ingress parser's start state does not write.

    p4c warns "out parameter 'meta' may be uninitialized when
    'NetcIngressParser' terminates" unless every field is written."""
    src = strip_comments(src)
    body, _ = block(src, src.index("struct metadata_t"))
    fields = re.findall(r"[\w<>]+\s+(\w+)\s*;", body)
    parser = src.index("parser NetcIngressParser")
    start, _ = block(src, src.index("state start", parser))
    written = set(re.findall(r"\bmeta\.(\w+)\s*=", start))
    return [f for f in fields if f not in written]


def test_the_ingress_parser_initialises_every_metadata_field():
    assert metadata_fields_left_uninitialised(TNA.read_text()) == []
    # the check can fail: drop one assignment from a copy of the source
    src = TNA.read_text().replace("meta.acc = 0; ", "", 1)
    assert metadata_fields_left_uninitialised(src) == ["acc"]


def test_a_changed_id_in_the_tofino_program_is_noticed(tna, v1):
    # the comparison can fail: renumber one table in a copy of the source
    src = TNA.read_text().replace("@id(0x0200000a) table tunnel", "@id(0x0200001a) table tunnel")
    assert parse_program(src)["tables"]["tunnel"] != v1["tables"]["tunnel"]


# ---------------------------------------------------------------- the hash


def crc(poly: int, reversed_: bool, init: int, xor: int, data: bytes) -> int:
    """A generic 32-bit CRC from its parameters (reflected when `reversed_`)."""
    if reversed_:
        rpoly = int(f"{poly:032b}"[::-1], 2)
        rem = init
        for byte in data:
            rem ^= byte
            for _ in range(8):
                rem = (rem >> 1) ^ rpoly if rem & 1 else rem >> 1
        return rem ^ xor
    rem = init
    for byte in data:
        rem ^= byte << 24
        for _ in range(8):
            rem = ((rem << 1) ^ poly) & 0xFFFFFFFF if rem & 0x80000000 else (rem << 1) & 0xFFFFFFFF
    return rem ^ xor


def program_hash():
    src = strip_comments(TNA.read_text())
    m = re.search(
        r"CRCPolynomial<bit<32>>\(\s*32w(0x[0-9A-Fa-f]+)\s*,\s*(true|false)\s*,\s*(true|false)\s*,\s*(true|false)\s*,"
        r"\s*32w(0x[0-9A-Fa-f]+)\s*,\s*32w(0x[0-9A-Fa-f]+)\s*\)\s*(\w+)\s*;",
        src,
    )
    assert m, "CRCPolynomial not found"
    poly, rev, msb, ext, init, xor, name = m.groups()
    assert msb == "false" and ext == "false"
    h = re.search(r"Hash<bit<32>>\(\s*HashAlgorithm_t\.CUSTOM\s*,\s*" + name + r"\s*\)\s*(\w+)\s*;", src)
    assert h, "Hash extern over the polynomial not found"
    call = re.search(r"meta\.h5\s*=\s*" + h.group(1) + r"\.get\(\s*\{([^}]*)\}\s*\)", src)
    assert call, "meta.h5 = <hash>.get({...}) not found"
    fields = [f.strip() for f in call.group(1).split(",")]
    return (int(poly, 16), rev == "true", int(init, 16), int(xor, 16)), fields


def test_the_hash_reads_the_hash5_fields_in_order():
    _, fields = program_hash()
    assert fields == ["meta.l4_proto", "meta.l4_src", "meta.l4_dst", "meta.l4_sport", "meta.l4_dport"]


@settings(max_examples=300, deadline=None)
@given(
    st.integers(0, 255), st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1),
    st.integers(0, 65535), st.integers(0, 65535),
)
def test_the_programs_crc_is_hash5(proto, src, dst, sport, dport):
    (poly, rev, init, xor), _ = program_hash()
    data = struct.pack(">BIIHH", proto, src, dst, sport, dport)  # specs/functors.md §6.2
    assert crc(poly, rev, init, xor, data) == zlib.crc32(data)


# ---------------------------------------------------------------- h5 % n


class ModuloChain:
    """p4/netc_tna.p4's modulo chain, run over decoded P4Runtime entries."""

    def __init__(self, req: p4runtime_pb2.WriteRequest, ix):
        ids = {ix.tables[t].preamble.name.split(".")[1]: t for t in ix.tables}
        self.byte_tables = [{} for _ in range(4)]
        self.reduce = []
        by_id = {ids[f"mod_b{i}"]: i for i in range(4)}
        for u in req.updates:
            te = u.entity.table_entry
            params = [int.from_bytes(p.value, "big") for p in te.action.action.params]
            n = int.from_bytes(te.match[0].exact.value, "big")
            if te.table_id in by_id:
                b = int.from_bytes(te.match[1].exact.value, "big")
                self.byte_tables[by_id[te.table_id]][(n, b)] = params[0]
            elif te.table_id == ids["mod_reduce"]:
                r = te.match[1].range
                self.reduce.append((n, int.from_bytes(r.low, "big"), int.from_bytes(r.high, "big"), params[0]))
            else:
                raise AssertionError(f"unexpected table {te.table_id}")

    def index(self, n: int, h5: int) -> int | None:
        acc = 0
        for i, table in enumerate(self.byte_tables):
            r = table.get((n, (h5 >> (8 * i)) & 0xFF))  # a miss: NoAction
            if r is not None:
                acc = (acc + r) & 0xFFFFFFFF
        for m, lo, hi, sub in self.reduce:
            if m == n and lo <= acc <= hi:
                return (acc - sub) & 0xFFFF
        return None


def edge_and_random_sizes() -> list[int]:
    rnd = random.Random(20261121)
    edges = [1, 2, 3, 7, 255, 256, 257, 4096, 65521, 65534, 65535]
    return edges + [rnd.randint(2, 65535) for _ in range(9)]


@pytest.fixture(scope="module")
def chains(netc_bin, tmp_path_factory, ix):
    """Two artifact directories through `netc tofino`: the Duet example as
    compiled, and one whose p4_vip rows carry edge and random sizes."""
    netc = netc_bin
    out = {}
    duet = tmp_path_factory.mktemp("duet")
    subprocess.run([netc, "compile", *sorted((REPO / "examples" / "duet").glob("*.ndl")), "--out", duet],
                   check=True, capture_output=True, timeout=600)
    sized = tmp_path_factory.mktemp("sized")
    (sized / "relations").mkdir()
    rows = [f"sw{i % 3}\t5\t10.9.0.{i}\t6\t80\t{n}" for i, n in enumerate(edge_and_random_sizes())]
    (sized / "relations" / "p4_vip.csv").write_text("\n".join(rows) + "\n")
    for d in (duet, sized):
        r = subprocess.run([netc, "tofino", d], capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr
        for f in sorted((d / "p4_tna").glob("*.txtpb")):
            req = text_format.Parse(f.read_text(), p4runtime_pb2.WriteRequest())
            assert validate.check_write_request(req, ix) == [], f
            sizes = set(map(int, re.search(r"for n in \{([^}]*)\}", f.read_text()).group(1).split(", ")))
            out[(d.name, f.stem)] = (ModuloChain(req, ix), sizes)
    return out


def test_the_modulo_entries_cover_every_vector_size_of_the_example(chains):
    duet = {k: v for k, v in chains.items() if k[0].startswith("duet")}
    assert duet, "the Duet example has HMux switches"
    assert any(len(sizes) >= 1 for _, sizes in duet.values())
    assert {n for k, (_, s) in chains.items() if k[0].startswith("sized") for n in s} == set(edge_and_random_sizes())


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32 - 1), st.data())
def test_the_modulo_chain_is_exactly_h5_mod_n(chains, h5, data):
    key = data.draw(st.sampled_from(sorted(chains)))
    chain, sizes = chains[key]
    n = data.draw(st.sampled_from(sorted(sizes)))
    assert chain.index(n, h5) == h5 % n


def test_the_chain_is_exact_at_the_wrap_points(chains):
    for chain, sizes in chains.values():
        for n in sizes:
            k = (2**32 - 1) // n
            for h5 in (0, n - 1, n, k * n - 1, k * n, 2**32 - 1, 0x00FFFFFF, 0x01000000):
                assert chain.index(n, h5 % 2**32) == (h5 % 2**32) % n, (n, h5)


def test_a_size_without_entries_picks_no_member(chains):
    chain, sizes = next(iter(chains.values()))
    missing = next(n for n in range(2, 70000) if n not in sizes)
    assert chain.index(missing, 123456789) is None


def test_tofino_rejects_a_directory_that_is_not_an_artifact_directory(netc_bin, tmp_path):
    r = subprocess.run([netc_bin, "tofino", tmp_path], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "not an artifact directory" in r.stderr and "hint" in r.stderr


def test_tofino_names_the_row_with_a_bad_size(netc_bin, tmp_path):
    (tmp_path / "relations").mkdir()
    (tmp_path / "relations" / "p4_vip.csv").write_text("sw\t5\t10.0.0.1\t6\t80\t4\nsw\t5\t10.0.0.2\t6\t80\t0\n")
    r = subprocess.run([netc_bin, "tofino", tmp_path], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "p4_vip.csv:2:1" in r.stderr and not (tmp_path / "p4_tna").exists()
