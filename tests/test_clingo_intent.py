"""clingo as an independent reference on the standard intent rules (issue 8).

bench/clingo_intent.py translates rules/*.ndl and an intent's facts to
clingo (its own reader of the text, its own functors) and compares every
`.output` relation with what netc computes. Here: a small `netc gen`
scenario, the examples and some bad intents must be equal on every
relation; random small scenarios too (Hypothesis); and the comparison must
catch a difference — perturbed facts, and rules deliberately mistranslated
(a max read as min, a concat ordered by text, a negation dropped, a
disjunction cut, a replace that does nothing, hash5's byte order, a MAC's
text form) — so "equal" is not vacuous.
"""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))

from clingo_intent import ndl, reference, translate, values  # noqa: E402

SMALL = [
    "--k", "4", "--hosts", "8", "--tenants", "6", "--vms-per-tenant", "5", "--vips", "10",
    "--max-dips", "6", "--acls-per-tenant", "3", "--mcast-groups", "4", "--nf-chains", "1",
    "--smuxes", "1", "--hoverboards", "2", "--hoverboard-pct", "50", "--snat-pct", "50", "--flows", "30",
]  # fmt: skip


def _gen(netc: str, out: Path, knobs: list[str]) -> list[Path]:
    r = subprocess.run([netc, "gen", *knobs, "--out", f"{out}/"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return sorted(out.glob("*.ndl"))


@pytest.fixture(scope="module")
def small(netc_bin, tmp_path_factory):
    """The small scenario through netc (compile, placement pinned, run) and parsed for clingo."""
    work = tmp_path_factory.mktemp("clingo_small")
    intent = _gen(netc_bin, work / "intent", ["--preset", "S", *SMALL])
    outputs, located = reference.outputs_of_rules()
    side = reference.prepare(netc_bin, intent, work, outputs, located)
    prog = reference.parse_program(intent, side.pinned)
    return {"netc": netc_bin, "intent": intent, "work": work, "side": side, "prog": prog}


def _explain(mism: list[dict]) -> str:
    return "\n".join(
        f"{m['relation']}: netc {m['netc_rows']} clingo {m['clingo_rows']}; "
        f"only netc {m['only_netc']}; only clingo {m['only_clingo']}"
        for m in mism
    )


@pytest.mark.netc
def test_small_scenario_is_equal_on_every_output_relation(small, tmp_path):
    res = reference.run_scenario(small["netc"], small["intent"], tmp_path / "run")
    assert res["equal"], _explain(res["mismatches"])
    # every .output relation of the standard rules is compared, and the
    # scenario exercises a good share of them with real rows
    assert res["relations_compared"] == len(reference.outputs_of_rules()[0]) >= 100
    assert res["relations_nonempty"] >= 30, res
    assert res["rows_compared"] >= 1000, res
    for key in ("load_s", "ground_s", "solve_s", "peak_rss_mb"):
        assert res["clingo"][key] > 0, res["clingo"]
    assert any("placement pinned" in n for n in res["notes"])
    assert (tmp_path / "run/pinned_placement.ndl").read_text().count("vip_placement(") >= 1


EXAMPLES = ["quickstart", "ananta", "andromeda", "anolis", "athena", "nfchain", "rubik", "yoda"]
BAD = ["acl_priority_tie", "anolis_no_fcn", "capacity", "l7_split_sum", "nf_steer_overlap", "snat_overlap"]


@pytest.mark.netc
@pytest.mark.parametrize("name", EXAMPLES + [f"bad:{b}" for b in BAD])
def test_examples_and_bad_intents_are_equal(netc_bin, tmp_path, name):
    if name.startswith("bad:"):
        intent = [REPO / "tests/data/bad_intent" / f"{name[4:]}.ndl"]
    else:
        intent = sorted((REPO / "examples" / name).glob("*.ndl"))
    res = reference.run_scenario(netc_bin, intent, tmp_path)
    assert res["equal"], _explain(res["mismatches"])
    if name.startswith("bad:"):
        # the refused intent's error relation is among the rows both sides agree on
        expect = intent[0].read_text().split("// expect:")[1].split()[0]
        rows = reference.read_rows(tmp_path / "netc_run" / f"{expect}.csv")
        assert rows, f"{expect} is empty for {name}"
        assert rows == reference.read_rows(tmp_path / "clingo" / f"{expect}.csv")


@pytest.mark.netc
def test_perturbed_facts_are_detected(small):
    """clingo on the facts minus one VM must differ from netc where that VM shows."""
    prog = copy.deepcopy(small["prog"])
    ported = {(t, v) for (_h, t, v, _p) in prog.facts["vm_port"]}
    victim = min(row for row in prog.facts["vm"] if (row[0], row[1]) in ported)
    prog.facts["vm"].discard(victim)
    mism = reference.compare(small["side"].relations, reference.solve_program(prog))
    by_rel = {m["relation"]: m for m in mism}
    assert "agent_vm" in by_rel and "ovs_flow" in by_rel, _explain(mism)
    tenant, vm = victim[0], victim[1]
    assert any(f"\t{tenant}\t" in r and f"\t{vm}\t" in r for r in by_rel["agent_vm"]["only_netc"])
    assert by_rel["agent_vm"]["only_clingo"] == []


def _mutate_rules(prog: ndl.Program, fn) -> ndl.Program:
    prog = copy.deepcopy(prog)
    prog.rules = [ndl.Rule(r.head, fn(r.head, r.body), r.where) for r in prog.rules]
    return prog


def _max_to_min(head, body):
    return [
        ("cmp", lit[1], lit[2], ("agg", "min", *lit[3][2:]))
        if lit[0] == "cmp" and lit[3][0] == "agg" and lit[3][1] == "max"
        else lit
        for lit in body
    ]


def _concat_by_text(head, body):
    return [
        ("cmp", lit[1], lit[2], (*lit[3][:4], []))
        if lit[0] == "cmp" and lit[3][0] == "agg" and lit[3][1] == "concat"
        else lit
        for lit in body
    ]


def _drop_negation_of_hoverboard(head, body):
    return [lit for lit in body if not (lit[0] == "not" and lit[1][1] == "hoverboard_tenant")]


def _first_alternative(head, body):
    return [lit[1][0][0] if lit[0] == "or" and len(lit[1][0]) == 1 else lit for lit in body]


def _hash5_little_endian(proto, src, dst, sport, dport):
    data = bytes([proto]) + src.a.to_bytes(4, "little") + dst.a.to_bytes(4, "little")
    return __import__("zlib").crc32(data + sport.to_bytes(2, "little") + dport.to_bytes(2, "little"))


MUTATIONS = {
    "aggregate max read as min": ("rules", _max_to_min),
    "concat ordered by its texts, not its keys": ("rules", _concat_by_text),
    "replace a no-op": ("functor", ("replace", lambda s, old, new: s)),
    "negation dropped (!hoverboard_tenant)": ("rules", _drop_negation_of_hoverboard),
    "disjunction cut to its first alternative": ("rules", _first_alternative),
    "hash5 in little-endian": ("functor", ("hash5", _hash5_little_endian)),
    "to_string(mac) in upper case": ("functor", ("to_string", lambda x: values.to_text(x).upper())),
}


@pytest.mark.netc
@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_a_mistranslated_rule_is_detected(small, monkeypatch, mutation):
    kind, what = MUTATIONS[mutation]
    prog = small["prog"]
    if kind == "rules":
        prog = _mutate_rules(prog, what)
    else:
        name, fn = what
        monkeypatch.setitem(values.FUNCTORS, name, fn)
    mism = reference.compare(small["side"].relations, reference.solve_program(prog))
    assert mism, f"{mutation}: clingo still agrees with netc on every relation"


@pytest.mark.netc
def test_unmutated_in_process_translation_agrees(small):
    """The baseline of the mutation tests: the same in-process path, unmutated, is equal."""
    mism = reference.compare(small["side"].relations, reference.solve_program(small["prog"]))
    assert not mism, _explain(mism)


def test_hash5_matches_the_spec_vectors():
    ip = values.Ipv4.parse
    assert values.FUNCTORS["hash5"](6, ip("10.0.0.1"), ip("10.0.0.2"), 12345, 80) == 0x09275D9F
    assert values.FUNCTORS["hash5"](17, ip("192.168.1.10"), ip("8.8.8.8"), 53, 53) == 0x4F292446
    assert values.FUNCTORS["hash5_sym"](17, ip("192.168.1.10"), ip("8.8.8.8"), 53, 53) == 0x8938BEE8
    assert values.FUNCTORS["hash5_sym"](6, ip("10.0.0.2"), ip("10.0.0.1"), 1, 65535) == 0xAE47285F


def test_encoding_keeps_netc_order_for_large_numbers_and_addresses():
    nums = [-5, 0, 7, 2**31 - 1, 2**31, 2198221326, 4294967295]
    enc = [values.encode(n) for n in nums]
    assert enc == sorted(enc) and [values.decode(s) for s in enc] == nums
    ips = [values.Ipv4.parse(t) for t in ("9.0.0.1", "10.0.0.1", "128.0.0.1", "255.255.255.255")]
    assert [values.encode(a) for a in ips] == sorted(values.encode(a) for a in ips)
    assert str(values.decode(values.encode(values.Mac.parse("fe:ff:ff:ff:ff:ff")))) == "fe:ff:ff:ff:ff:ff"


def test_an_unknown_construct_is_reported_with_its_place():
    with pytest.raises(ndl.NdlError, match=r"x\.ndl:2:\d+"):
        ndl.parse_files([("x.ndl", ".decl r(a: number)\n.plan 1\n")])
    assert translate.expand_or([("or", [[("atom", "a", [])], [("atom", "b", [])]])]) == [
        [("atom", "a", [])],
        [("atom", "b", [])],
    ]


def _ndl_literal(v) -> str:
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return str(v)


_ODD_INTS = [-1, 0, 1, 7, 17, 600, 1023, 65535, 65536, 4294967296]


@st.composite
def _fact_mutations(draw, facts: dict[str, list[tuple]]):
    """1-4 edits of an intent's facts: drop a fact, change one column, or add a changed copy."""
    rels = sorted(r for r, rows in facts.items() if rows)
    edits = []
    for _ in range(draw(st.integers(1, 4))):
        rel = draw(st.sampled_from(rels))
        i = draw(st.integers(0, len(facts[rel]) - 1))
        op = draw(st.sampled_from(["drop", "change", "copy"]))
        col = draw(st.integers(0, len(facts[rel][i]) - 1))
        old = facts[rel][i][col]
        pool = [row[col] for row in facts[rel]]
        if isinstance(old, int):
            pool += _ODD_INTS
        new = draw(st.sampled_from(pool))
        edits.append((rel, i, op, col, new))
    return edits


@pytest.mark.netc
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_intent_facts_give_equal_relations_errors_included(small, tmp_path_factory, data):
    """Bad intent on purpose: edited facts (out-of-range values, dangling names,
    duplicates) make the error_* rules fire; netc run and clingo must agree on
    every relation, errors included."""
    files = [*small["intent"], small["side"].pinned]
    base = ndl.parse_files([(str(p), p.read_text()) for p in files]).facts
    facts = {rel: sorted(rows, key=repr) for rel, rows in base.items()}
    for rel, i, op, col, new in data.draw(_fact_mutations(facts)):
        if rel not in facts:  # an earlier edit dropped its last fact
            continue
        i = min(i, len(facts[rel]) - 1)
        row = facts[rel][i]
        changed = row[:col] + (new,) + row[col + 1 :]
        if op == "drop":
            facts[rel] = facts[rel][:i] + facts[rel][i + 1 :]
        elif op == "change":
            facts[rel] = facts[rel][:i] + [changed] + facts[rel][i + 1 :]
        else:
            facts[rel] = facts[rel] + [changed]
        if not facts[rel]:
            del facts[rel]
    work = tmp_path_factory.mktemp("clingo_mut")
    text = "".join(f"{rel}({', '.join(map(_ndl_literal, row))}).\n" for rel in sorted(facts) for row in facts[rel])
    (work / "mutated.ndl").write_text(text)
    out = work / "netc_run"
    out.mkdir()
    r = subprocess.run(
        [small["netc"], "run", "-D", str(out), *map(str, reference.rule_files()), str(work / "mutated.ndl")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    outputs, _ = reference.outputs_of_rules()
    netc_rows = {rel: reference.read_rows(out / f"{rel}.csv") for rel in outputs}
    prog = reference.parse_program([work / "mutated.ndl"], None)
    mism = reference.compare(netc_rows, reference.solve_program(prog))
    assert not mism, _explain(mism)


@pytest.mark.netc
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(1, 100_000),
    tenants=st.integers(2, 6),
    vms=st.integers(2, 6),
    acls=st.integers(0, 5),
    hoverboard_pct=st.sampled_from([0, 50, 100]),
    mcast=st.integers(0, 4),
)
def test_random_small_scenarios_are_equal(netc_bin, tmp_path_factory, seed, tenants, vms, acls, hoverboard_pct, mcast):
    work = tmp_path_factory.mktemp("clingo_hyp")
    knobs = [
        "--preset", "S", "--seed", str(seed), "--k", "4", "--hosts", "6", "--tenants", str(tenants),
        "--vms-per-tenant", str(vms), "--vips", "6", "--max-dips", "5", "--acls-per-tenant", str(acls),
        "--mcast-groups", str(mcast), "--nf-chains", "1", "--smuxes", "1", "--hoverboards", "2",
        "--hoverboard-pct", str(hoverboard_pct), "--snat-pct", "50",
        "--flows", str(min(10, tenants * vms * (vms - 1))),
    ]  # fmt: skip
    intent = _gen(netc_bin, work / "intent", knobs)
    res = reference.run_scenario(netc_bin, intent, work)
    assert res["equal"], f"netc gen {' '.join(knobs)}:\n{_explain(res['mismatches'])}"
