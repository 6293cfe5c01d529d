"""Incremental re-verification (`netc verify --since OLD`) equals a full one.

Soundness: for Hypothesis-drawn single changes to the quickstart intent —
add a VM, remove a VM, move a VM to another host, add an ACL rule, remove
a DIP — and for single faults injected into the artifacts (the mutants of
test_verify.py, so violating changes too), the report of

    netc verify --artifacts NEW --since OLD --since-intent OLD.ndl NEW.ndl

(verify OLD in full, then re-check only what the change can affect) has
exactly the verdicts, violation counts and counterexamples of a full
`netc verify --artifacts NEW NEW.ndl`.

Incrementality, asserted with counters: a change to one tenant's ACLs
re-checks that tenant's VMs and not every VM.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from test_verify import MUTANTS, verify

REPO = Path(__file__).resolve().parent.parent
BASE = (REPO / "examples" / "quickstart" / "intent.ndl").read_text()

pytestmark = pytest.mark.netc


def compile_text(netc: str, text: str, work: Path) -> tuple[Path, Path]:
    """Compiles intent `text` (cached by content): (intent file, artifact dir)."""
    h = hashlib.sha1(text.encode()).hexdigest()[:12]
    intent, out = work / f"{h}.ndl", work / f"{h}.out"
    if not out.exists():
        intent.write_text(text)
        r = subprocess.run([netc, "compile", str(intent), "--out", str(out)], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
    return intent, out


# --------------------------------------------------------------- single changes to the intent

def add_vm(tenant: str, i: int, host: int) -> str:
    mac = f"02:00:00:00:0{3 if tenant == 'acme' else 4}:{i:02x}"
    return BASE + (
        f'vm("{tenant}", "new{i}", {mac}, 10.1.1.{100 + i}, "h{host}").\n'
        f'vm_port("h{host}", "{tenant}", "new{i}", {20 + i}).\n'
    )


def remove_vm(line_vm: str, line_port: str) -> str:
    assert line_vm in BASE and line_port in BASE
    return BASE.replace(line_vm + "\n", "").replace(line_port + "\n", "")


def move_app2(host: int) -> str:
    return BASE.replace(
        'vm("globex", "app2", 02:00:00:00:02:02, 10.1.1.12, "h4").',
        f'vm("globex", "app2", 02:00:00:00:02:02, 10.1.1.12, "h{host}").',
    ).replace('vm_port("h4", "globex", "app2", 10).', f'vm_port("h{host}", "globex", "app2", 12).')


def add_acl(tenant: str, prio: int, dst: str, port: int, allow: bool) -> str:
    rule = f'acl("{tenant}", "r{prio}", {prio}, 0.0.0.0/0, {dst}, 6, {port}, {port}, "{"allow" if allow else "deny"}").\n'
    return BASE + rule


def remove_dip() -> str:
    return BASE.replace('dip_pool(203.0.113.10, 6, 80, "acme", "web2", 8080, 1).\n', "")


intent_changes = st.one_of(
    st.builds(add_vm, st.sampled_from(["acme", "globex"]), st.integers(1, 9), st.integers(1, 4)),
    st.sampled_from([
        remove_vm('vm("acme", "db1", 02:00:00:00:01:03, 10.1.2.21, "h2").', 'vm_port("h2", "acme", "db1", 10).'),
        remove_vm('vm("globex", "app2", 02:00:00:00:02:02, 10.1.1.12, "h4").', 'vm_port("h4", "globex", "app2", 10).'),
        remove_dip(),
    ]),
    st.builds(move_app2, st.sampled_from([1, 2, 3])),
    st.builds(
        add_acl,
        st.sampled_from(["acme", "globex"]),
        st.integers(101, 300),
        st.sampled_from(["10.1.1.0/24", "10.1.2.0/24", "10.1.1.12/32", "0.0.0.0/0"]),
        st.sampled_from([22, 80, 5432, 8080]),
        st.booleans(),
    ),
)

QUICKSTART_MUTANTS = [m for m in MUTANTS if m[1] == "quickstart"]


def untimed(verdicts: list[dict]) -> list[dict]:
    """The verdicts with the times some details report ("…, 18 ms)") blanked."""
    return [{**v, "detail": re.sub(r"\d+(\.\d+)? ms\b", "_ ms", v.get("detail", ""))} for v in verdicts]


def same_report(full: dict, inc: dict) -> None:
    assert inc["stats"]["incremental"]["vms"] == full["stats"]["vms"]
    assert [(v["invariant"], v["status"], v["violations"]) for v in inc["verdicts"]] == [
        (v["invariant"], v["status"], v["violations"]) for v in full["verdicts"]
    ]
    assert untimed(inc["verdicts"]) == untimed(full["verdicts"])
    for k in ("devices", "flows", "vms", "outcomes", "pairs"):
        assert inc["stats"][k] == full["stats"][k], k


def mutated(bad: Path, good: Path, mutate) -> Path:
    """A copy of the artifacts `good` at `bad` with one fault injected (made once per work dir)."""
    if not bad.exists():
        shutil.copytree(good, bad)
        mutate(bad)
    return bad


def mutant_incremental_equals_full(netc_bin: str, intent: Path, good: Path, bad: Path, invariant: str,
                                   reverse: bool) -> dict:
    """Verify the change good -> bad (or bad -> good when `reverse`) in full and
    with --since; the reports must be equal and name `invariant` violated
    when breaking. Returns the incremental report."""
    old, new = (bad, good) if reverse else (good, bad)
    rc_full, full, err = verify(netc_bin, ["--artifacts", str(new), str(intent)])
    rc_inc, inc, err2 = verify(netc_bin, ["--artifacts", str(new), "--since", str(old), str(intent)])
    assert rc_full == (0 if reverse else 1), err
    assert rc_inc == rc_full, err2
    same_report(full, inc)
    if not reverse:
        assert {v["invariant"]: v["status"] for v in inc["verdicts"]}[invariant] == "violated"
    return inc


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("incremental")


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(change=intent_changes)
def test_intent_change_incremental_equals_full(netc_bin: str, work: Path, change: str) -> None:
    old_intent, old = compile_text(netc_bin, BASE, work)
    new_intent, new = compile_text(netc_bin, change, work)
    rc_full, full, err = verify(netc_bin, ["--artifacts", str(new), str(new_intent)])
    assert rc_full in (0, 1), err
    rc_inc, inc, err = verify(
        netc_bin, ["--artifacts", str(new), "--since", str(old), "--since-intent", str(old_intent), str(new_intent)]
    )
    assert rc_inc == rc_full, err
    same_report(full, inc)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutant=st.sampled_from(QUICKSTART_MUTANTS), reverse=st.booleans())
def test_violating_change_incremental_equals_full(netc_bin: str, work: Path, mutant: tuple, reverse: bool) -> None:
    """A fault injected (or repaired, `reverse`) between two generations."""
    intent, good = compile_text(netc_bin, BASE, work)
    bad = work / f"mutant-{mutant[0]}"
    if not bad.exists():
        shutil.copytree(good, bad)
        shutil.rmtree(bad / "ovs", ignore_errors=True)
        mutant[2](bad)
    mutant_incremental_equals_full(netc_bin, intent, good, bad, mutant[3], reverse)


def test_acl_change_rechecks_only_its_tenant(netc_bin: str, work: Path) -> None:
    old_intent, old = compile_text(netc_bin, BASE, work)
    new_intent, new = compile_text(netc_bin, add_acl("globex", 250, "10.1.1.0/24", 22, False), work)
    rc, inc, err = verify(
        netc_bin, ["--artifacts", str(new), "--since", str(old), "--since-intent", str(old_intent), str(new_intent)]
    )
    assert rc == 0, err
    u = inc["stats"]["incremental"]
    assert not u["full"]
    # globex's app1 and app2 are re-checked (their tenant's policy changed);
    # an acme VM whose traces never evaluated the ACL table with values a
    # globex flow (reg6=5002) can match keeps its result
    assert u["vms"] == 5 and 2 <= u["rechecked"] < 5, u


def test_since_needs_artifacts(netc_bin: str, tmp_path: Path) -> None:
    r = subprocess.run([netc_bin, "verify", "--since", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert "--artifacts" in r.stderr


# ------------------------------------------------ cached table lookups carried across a rebuild

# A rebuilt bridge keeps the old one's cached lookups that no added or
# removed flow can match (`Bridge::carry_cache`). Each edit below adds (or
# removes) one flow of h1's forwarding table 30 whose fields the table
# already matches, so the old cache has entries with those very fields:
# the acme ones (reg6=5001) must go, the globex ones may stay. A lookup kept
# wrongly would re-trace web1's packets through the old table and miss the
# new drop, so the incremental report would say REACH-1 proven.
CACHE_EDITS = [
    # (name, row to add or None, flow to remove, invariant the full report violates or None)
    ("acme-drop-above", ["h1", "30", "150", "ip,reg6=5001,nw_dst=10.1.1.12", "drop", "2"], None, "REACH-1"),
    ("globex-drop-above", ["h1", "30", "150", "ip,reg6=5002,nw_dst=10.1.1.12", "drop", "2"], None, "REACH-1"),
    ("acme-catch-all-below", ["h1", "30", "50", "ip,reg6=5001", "drop", "2"], None, None),
    ("acme-route-removed", None, ("h1", "30", "100", "reg6=5001,nw_src=10.1.0.0/16,nw_dst=10.1.1.12"), "REACH-1"),
]


@pytest.mark.parametrize(("name", "row", "gone", "violated"), CACHE_EDITS, ids=[e[0] for e in CACHE_EDITS])
@pytest.mark.parametrize("reverse", [False, True], ids=["apply", "undo"])
def test_flow_edit_meeting_cached_lookups_incremental_equals_full(
    netc_bin: str, work: Path, name: str, row: list[str] | None, gone: tuple | None, violated: str | None, reverse: bool
) -> None:
    from test_verify import edit, flow, read_rows, write_rows

    intent, compiled = compile_text(netc_bin, BASE, work)
    # both generations read from the relations (same flow order and
    # `file:line`s), so the edit is the only difference
    good = work / "cache-base"
    if not good.exists():
        shutil.copytree(compiled, good)
        shutil.rmtree(good / "ovs", ignore_errors=True)
    edited = work / f"cache-{name}"
    if not edited.exists():
        shutil.copytree(good, edited)
        if row is not None:
            write_rows(edited, "ovs_flow", [*read_rows(edited, "ovs_flow"), row])
        if gone is not None:
            edit(edited, "ovs_flow", flow(*gone), lambda r: None)
    old, new = (edited, good) if reverse else (good, edited)
    rc_full, full, err = verify(netc_bin, ["--artifacts", str(new), str(intent)])
    rc_inc, inc, err2 = verify(netc_bin, ["--artifacts", str(new), "--since", str(old), str(intent)])
    st_ = {v["invariant"]: v["status"] for v in full["verdicts"]}
    if violated and not reverse:
        assert rc_full == 1 and st_[violated] == "violated", err
    else:
        assert rc_full == 0, (err, [v for v in full["verdicts"] if v["status"] == "violated"])
    assert rc_inc == rc_full, err2
    assert not inc["stats"]["incremental"]["full"]
    same_report(full, inc)


# ------------------------------------------------ table checks re-run only when what they read changed

# Faults in one load-balancer instance's rows (AFF-1: a reordered or
# emptied vector slot on one Mux, one Mux's tunnel to the wrong host) or in
# one pair of SNAT grants (AFF-4). Both generations read their flows from
# the relations (same `file:line`s), so the fault is the only difference:
# the update rebuilds no bridge and re-runs only the table checks that read
# the changed relation. A check skipped wrongly would keep the old (proven)
# verdict while the full verification finds the fault.
TABLE_MUTANTS = [m for m in MUTANTS if m[1] == "ananta"]


def flows_from_relations(netc_bin: str, work: Path, example: str) -> tuple[Path, Path]:
    """(intent, artifact dir read from the relations only) of an example."""
    intent = REPO / "examples" / example / "intent.ndl"
    base = work / f"{example}-rows"
    if not base.exists():
        _, compiled = compile_text(netc_bin, intent.read_text(), work)
        shutil.copytree(compiled, base)
        shutil.rmtree(base / "ovs", ignore_errors=True)
    return intent, base


@pytest.mark.parametrize("mutant", TABLE_MUTANTS, ids=[m[0] for m in TABLE_MUTANTS])
@pytest.mark.parametrize("reverse", [False, True], ids=["break", "repair"])
def test_table_fault_on_one_instance_incremental_equals_full(
    netc_bin: str, work: Path, mutant: tuple, reverse: bool
) -> None:
    intent, good = flows_from_relations(netc_bin, work, "ananta")
    bad = mutated(work / f"table-mutant-{mutant[0]}", good, mutant[2])
    inc = mutant_incremental_equals_full(netc_bin, intent, good, bad, mutant[3], reverse)
    u = inc["stats"]["incremental"]
    assert not u["full"] and u["bridges_rebuilt"] == 0, u
    assert any(r.startswith(mutant[3]) for r in u["tables_rerun"]), u
    assert "CAP-1" not in u["tables_rerun"], u  # it reads only the P4 switches' rows


def test_capacity_cut_on_one_switch_caught_incrementally(netc_bin: str, work: Path) -> None:
    """agg1 holds quickstart's HMux VIP (2 host-table entries); its
    capacity cut to 1 violates CAP-1 there only. The artifacts are the
    same: the update re-runs CAP-1 and nothing else, re-traces no VM."""
    old_intent, old = compile_text(netc_bin, BASE, work)
    capped = BASE.replace(
        'switch("agg1", "agg", 10.255.1.1, 16384, 4096, 512).', 'switch("agg1", "agg", 10.255.1.1, 1, 4096, 512).'
    )
    assert capped != BASE
    new_intent = work / "capped.ndl"
    new_intent.write_text(capped)
    same_artifacts = work / "capped.out"
    if not same_artifacts.exists():
        shutil.copytree(old, same_artifacts)
    rc_full, full, err = verify(netc_bin, ["--artifacts", str(same_artifacts), str(new_intent)])
    rc_inc, inc, err2 = verify(
        netc_bin,
        ["--artifacts", str(same_artifacts), "--since", str(old), "--since-intent", str(old_intent), str(new_intent)],
    )
    assert rc_full == 1 and {v["invariant"]: v["status"] for v in full["verdicts"]}["CAP-1"] == "violated", err
    assert rc_inc == 1, err2
    same_report(full, inc)
    u = inc["stats"]["incremental"]
    assert u["tables_rerun"] == ["CAP-1"] and u["retraced"] == 0 and u["bridges_rebuilt"] == 0, u


# ------------------------------------------------ an ACL change re-runs only the pair checks

# The update keeps each VM's delivered sets (`VmChecked::delivered`) and, for
# a change of its tenant's ACLs alone, re-runs REACH-1/ACL-1 on them without
# re-tracing or re-checking any outcome. The artifacts stay those of the
# other intent, so the pairs disagree with the new ACLs: a deny the flows do
# not enforce (ACL-1) or, reversed, an allow the flows drop (REACH-1). Pair
# checks skipped, or read from stale or wrongly cut sets, would keep the old
# (proven) verdict.
@pytest.mark.parametrize(
    ("deny_first", "violated"), [(False, "ACL-1"), (True, "REACH-1")], ids=["deny-added", "deny-removed"]
)
def test_acl_change_without_new_artifacts_rereads_only_the_pairs(
    netc_bin: str, work: Path, deny_first: bool, violated: str
) -> None:
    deny = add_acl("acme", 300, "10.1.1.0/24", 80, False)
    plain_intent, plain = compile_text(netc_bin, BASE, work)
    deny_intent, denied = compile_text(netc_bin, deny, work)
    old_intent, old, new_intent = (deny_intent, denied, plain_intent) if deny_first else (plain_intent, plain, deny_intent)
    rc_full, full, err = verify(netc_bin, ["--artifacts", str(old), str(new_intent)])
    rc_inc, inc, err2 = verify(
        netc_bin, ["--artifacts", str(old), "--since", str(old), "--since-intent", str(old_intent), str(new_intent)]
    )
    assert rc_full == 1 and {v["invariant"]: v["status"] for v in full["verdicts"]}[violated] == "violated", err
    assert rc_inc == 1, err2
    same_report(full, inc)
    u = inc["stats"]["incremental"]
    assert not u["full"] and u["retraced"] == 0 and u["bridges_rebuilt"] == 0 and u["rechecked"] >= 2, u


# ------------------------------------------------ AFF-3 across an update (which bridges tap is kept)

# The update keeps which bridges have NF taps and re-reads only the dirty
# devices' (a scan of every flow per update was most of an update that
# changed no artifact); AFF-3 re-runs while any bridge taps. A tap state
# kept wrongly would skip AFF-3 and keep the old verdict.
NF_MUTANTS = [m for m in MUTANTS if m[1] == "nfchain"]


@pytest.mark.parametrize("mutant", NF_MUTANTS, ids=[m[0] for m in NF_MUTANTS])
@pytest.mark.parametrize("reverse", [False, True], ids=["break", "repair"])
def test_nf_fault_incremental_equals_full(netc_bin: str, work: Path, mutant: tuple, reverse: bool) -> None:
    intent, good = flows_from_relations(netc_bin, work, "nfchain")
    bad = mutated(work / f"nf-mutant-{mutant[0]}", good, mutant[2])
    inc = mutant_incremental_equals_full(netc_bin, intent, good, bad, mutant[3], reverse)
    u = inc["stats"]["incremental"]
    assert not u["full"] and "AFF-3" in u["tables_rerun"], u


# ------------------------------------------------ AFF-1 citations when the rows above them move

# An AFF-1 finding cites its row's `file:line` (in the Mux's pushed
# document). A row inserted above it in the same document (one no check or
# trace reads: a tunnel to a TIP no slot names, a VIP with no slots) moves
# that line and nothing else; the update re-reads only the rows that differ
# (`lb.rs`, `table_recheck.rs`), so a finding kept with its old citation,
# or a load-balancer row id not renumbered, would differ from the full
# report. The cited line must really move (else the test proves nothing).
SHIFTS = [
    # (mutant, relation, row inserted first, on the Mux the mutant breaks)
    ("mux-tunnel-wrong-host", "agent_mux_tunnel", ["mux1", "0", "10.9.9.9", "192.168.0.9", "02:00:00:00:09:09"]),
    ("empty-vector-slot", "agent_mux_vip", ["mux3", "1", "198.18.0.1", "6", "9", "0"]),
]


@pytest.mark.parametrize(("mutant_name", "rel", "row"), SHIFTS, ids=[s[0] for s in SHIFTS])
@pytest.mark.parametrize("reverse", [False, True], ids=["insert", "remove"])
def test_aff1_citation_follows_its_moved_line(
    netc_bin: str, work: Path, mutant_name: str, rel: str, row: list[str], reverse: bool
) -> None:
    from test_verify import read_rows, write_rows

    mutant = next(m for m in TABLE_MUTANTS if m[0] == mutant_name)
    intent, good = flows_from_relations(netc_bin, work, "ananta")
    bad = mutated(work / f"table-mutant-{mutant[0]}", good, mutant[2])
    shifted = work / f"shifted-{mutant[0]}"
    if not shifted.exists():
        shutil.copytree(bad, shifted)
        write_rows(shifted, rel, [row, *read_rows(shifted, rel)])
    old, new = (shifted, bad) if reverse else (bad, shifted)
    citation_follows_moved_line(netc_bin, intent, old, new, "AFF-1")


def citation_follows_moved_line(netc_bin: str, intent: Path, old: Path, new: Path, invariant: str) -> dict:
    """`invariant` violated in both generations, a line above what it cites
    added or removed between them: the full report's verdict cites other
    lines than `old`'s, and the incremental report (no full rebuild) equals
    it. Returns the update's incremental stats."""
    _, before, _ = verify(netc_bin, ["--artifacts", str(old), str(intent)])
    rc_full, full, err = verify(netc_bin, ["--artifacts", str(new), str(intent)])
    rc_inc, inc, err2 = verify(netc_bin, ["--artifacts", str(new), "--since", str(old), str(intent)])
    verdict = lambda r: next(v for v in r["verdicts"] if v["invariant"] == invariant)  # noqa: E731
    assert rc_full == 1 and verdict(full)["status"] == "violated", err
    assert verdict(full) != verdict(before), "the moved line changed no citation"
    assert rc_inc == 1, err2
    assert not inc["stats"]["incremental"]["full"], inc["stats"]["incremental"]
    same_report(full, inc)
    return inc["stats"]["incremental"]


# ------------------------------------------------ AFF-4's citations follow a host's SNAT flows

# A host's SNAT grants are kept with their flows' positions and moved by
# the update's flow moves; a grant whose flow only moved changes no AFF-4
# finding but the lines an overlap cites, so the check is skipped only when
# it found nothing. Here two of ananta's h1 SNAT flows overlap (AFF-4
# violated in both generations) and a flow no packet reaches is added above
# them (or removed): a skipped re-run would cite the old lines.
def snat_flows_overlap(d: Path) -> None:
    f = d / "ovs" / "h1.flows"
    lines = f.read_text().splitlines(keepends=True)
    # 10.10.1.11's grant of 131.107.0.99 given to a second address as well
    at = next(i for i, x in enumerate(lines) if "nw_src=10.10.1.11" in x and "nat(src=131.107.0.99:" in x)
    lines.insert(at + 1, lines[at].replace("nw_src=10.10.1.11", "nw_src=10.10.1.99"))
    f.write_text("".join(lines))


@pytest.mark.parametrize("reverse", [False, True], ids=["insert", "remove"])
def test_aff4_citation_follows_its_moved_flow(netc_bin: str, work: Path, reverse: bool) -> None:
    intent = REPO / "examples" / "ananta" / "intent.ndl"
    _, good = compile_text(netc_bin, intent.read_text(), work)
    bad = mutated(work / "snat-flows-overlap", good, snat_flows_overlap)
    shifted = work / "snat-flows-shifted"
    if not shifted.exists():
        shutil.copytree(bad, shifted)
        f = shifted / "ovs" / "h1.flows"
        f.write_text("table=250,priority=1,actions=drop\n" + f.read_text())
    old, new = (shifted, bad) if reverse else (bad, shifted)
    u = citation_follows_moved_line(netc_bin, intent, old, new, "AFF-4")
    assert u["bridges_rebuilt"] == 1, u
    assert "AFF-4" in u["tables_rerun"], u


# ------------------------------------------------ NF taps appearing or disappearing in an update

# Which bridges tap is kept across updates and re-read only for the dirty
# devices. Here every tap of nfchain goes (table 45's flows that send to an
# NF group) or comes back, with the IDS hashing asymmetrically (an AFF-3
# fault): a tap state not updated when taps appear would skip AFF-3 and keep
# the untapped generation's vacuous verdict.
def untap(d: Path) -> None:
    from test_verify import read_rows, write_rows

    rows = read_rows(d, "ovs_flow")
    kept = [r for r in rows if not (r[1] == "45" and "group:" in r[4])]
    assert len(kept) < len(rows), "nfchain has no tap to remove"
    write_rows(d, "ovs_flow", kept)


@pytest.mark.parametrize("reverse", [False, True], ids=["taps-appear", "taps-disappear"])
def test_nf_taps_appearing_or_disappearing_incremental_equals_full(netc_bin: str, work: Path, reverse: bool) -> None:
    mutant = next(m for m in NF_MUTANTS if m[0] == "nf-asymmetric-hash")
    intent, good = flows_from_relations(netc_bin, work, "nfchain")
    tapped = mutated(work / f"nf-mutant-{mutant[0]}", good, mutant[2])
    untapped = mutated(work / "nf-untapped", good, untap)
    old, new = (tapped, untapped) if reverse else (untapped, tapped)
    rc_full, full, err = verify(netc_bin, ["--artifacts", str(new), str(intent)])
    rc_inc, inc, err2 = verify(netc_bin, ["--artifacts", str(new), "--since", str(old), str(intent)])
    aff3 = {v["invariant"]: v["status"] for v in full["verdicts"]}["AFF-3"]
    assert (aff3 == "violated") != reverse, (aff3, err)
    assert rc_inc == rc_full, err2
    u = inc["stats"]["incremental"]
    assert not u["full"], u
    if not reverse:
        assert "AFF-3" in u["tables_rerun"], u
    same_report(full, inc)


# --------------------------------------------------------------- update sequences, each equal to a full run

# a small `netc gen` scenario with every kind of part: hosts shared by
# tenants, a software Mux and VIPs, a Hoverboard, multicast groups, NFs
TINY_GEN = ["--k", "4", "--hosts", "8", "--tenants", "4", "--vms-per-tenant", "6", "--vips", "4",
            "--smuxes", "1", "--hoverboards", "1", "--mcast-groups", "2", "--flows", "50"]


@pytest.mark.parametrize("dirty_from", ["edit", "compare"])
def test_update_sequence_each_equals_full(netc_bin: str, work: Path, dirty_from: str) -> None:
    """60 updates in one verifier (remove a VM, add it back, an ACL rule
    added and removed, for 15 VMs): after each, the incremental report
    equals a full verification of that generation (`--check-each`). The
    verifier keeps results in slots that a removed VM frees and an added
    one takes, and visits only the VMs whose footprints read a changed
    part: a peer whose footprint stops (remove) and starts (add back)
    reading the VM's port, a tenant's VMs on a changed ACL, the VMs of
    other tenants that read only the changed bridges."""
    driver = Path(netc_bin).parent / "examples" / "incremental_bench"
    assert driver.is_file(), f"{driver}: build it (cargo build --release -p netc-verify --example incremental_bench)"
    intent, out = work / "tiny.ndl", work / "tiny_out"
    if not out.exists():
        g = subprocess.run([netc_bin, "gen", "--preset", "S", *TINY_GEN, "--out", str(intent)],
                           capture_output=True, text=True, timeout=120)
        assert g.returncode == 0, g.stderr
        c = subprocess.run([netc_bin, "compile", str(intent), "--out", str(out)], capture_output=True, text=True, timeout=300)
        assert c.returncode == 0, c.stderr
    cmd = [str(driver), "--artifacts", str(out), "--intent", str(intent), "--changes", "30", "--check-each",
           "--schema", str(REPO / "rules" / "schema.ndl")]
    if dirty_from == "compare":
        cmd.append("--compare")
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    res = json.loads(r.stdout)
    assert res["updates_checked_against_full"] == 60
    assert res["incremental"]["full_rebuilds"] == 0
    by_kind = res["by_kind"]
    # the updates visited fewer VMs than there are (an index, not a scan)
    assert by_kind["remove VM"]["visited_vms_max"] < res["vms"], by_kind["remove VM"]
