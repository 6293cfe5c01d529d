"""`netc gen`: the scenario generator (runtime/cli/src/gen/, docs/gen.md).

  * determinism: the same seed and knobs give identical bytes, another seed
    different bytes; directory mode holds exactly the single file's sections;
  * the schema: every fact is of a relation rules/schema.ndl declares, with
    its arity;
  * counts: each preset has exactly the documented numbers of switches,
    links, hosts, tenants, VMs, VIPs, ACL rules, groups, NF clusters, flows
    (L is the Andromeda scale: 100,000 VMs on 10,000 hosts, 10,000 tenants,
    30,000 VIPs) — counted here from the text, not from netc's summary;
  * validity: preset S compiles (`netc compile`) with zero findings; preset M
    passes `netc check --intent` (no error_* row);
  * bad knobs: exit 2 naming the knob, nothing written.
The timing of preset L is a benchmark (bench/gen/bench_gen.py), not a test.
"""

from __future__ import annotations

import re
import subprocess
from collections import Counter
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.netc

FACT = re.compile(r"^([a-z_][a-z0-9_]*)\((.*)\)\.$")


def gen(netc_bin: str, out: Path | str, *args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([netc_bin, "gen", *args, "--out", str(out)], capture_output=True, text=True, timeout=timeout)


def schema_arity() -> dict[str, int]:
    text = (REPO / "rules" / "schema.ndl").read_text()
    out = {}
    for m in re.finditer(r"^\.decl\s+([a-z_0-9]+)\((.*)\)\s*$", text, re.M):
        out[m.group(1)] = len(m.group(2).split(","))
    return out


def facts(path: Path) -> Counter:
    """Relation -> number of facts; checks every line is a comment, blank or a fact."""
    arity = schema_arity()
    count: Counter = Counter()
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line or line.startswith("//"):
            continue
        m = FACT.match(line)
        assert m, f"{path}:{n}: not a fact: {line}"
        rel, args = m.group(1), m.group(2)
        assert rel in arity, f"{path}:{n}: `{rel}` is not an input relation of rules/schema.ndl"
        # generated symbols never contain commas, so commas split the columns
        assert len(args.split(",")) == arity[rel], f"{path}:{n}: {rel} needs {arity[rel]} columns: {line}"
        count[rel] += 1
    return count


def test_same_seed_same_bytes_other_seed_other_bytes(netc_bin, tmp_path):
    for name, seed in [("a", "7"), ("b", "7"), ("c", "8")]:
        r = gen(netc_bin, tmp_path / f"{name}.ndl", "--preset", "S", "--seed", seed)
        assert r.returncode == 0, r.stderr
    a, b, c = ((tmp_path / f"{n}.ndl").read_bytes() for n in "abc")
    assert a == b
    assert a != c


def test_directory_mode_holds_the_same_sections(netc_bin, tmp_path):
    assert gen(netc_bin, tmp_path / "one.ndl", "--preset", "S").returncode == 0
    r = gen(netc_bin, f"{tmp_path / 'dir'}/", "--preset", "S")
    assert r.returncode == 0, r.stderr
    parts = [(tmp_path / "dir" / f).read_text() for f in ("topology.ndl", "tenants.ndl", "services.ndl", "policy.ndl")]
    assert "\n".join(parts) == (tmp_path / "one.ndl").read_text()
    assert "4 files" in r.stderr


# preset -> (switch, link, host, tenant, vm, vip, acl, mcast_group, anolis_cluster, flow_usage)
COUNTS = {
    "S": (22, 40, 100, 100, 1_000, 300, 400, 10, 2, 1_000),
    "M": (82, 288, 1_000, 1_000, 10_000, 3_000, 4_000, 100, 4, 10_000),
    "L": (502, 4_200, 10_000, 10_000, 100_000, 30_000, 40_000, 1_000, 8, 100_000),
}
RELS = ("switch", "link", "host", "tenant", "vm", "vip", "acl", "mcast_group", "anolis_cluster", "flow_usage")


@pytest.mark.parametrize("preset", ["S", "M", "L"])
def test_preset_counts_and_schema(netc_bin, tmp_path, preset):
    out = tmp_path / f"{preset}.ndl"
    r = gen(netc_bin, out, "--preset", preset)
    assert r.returncode == 0, r.stderr
    c = facts(out)
    assert tuple(c[rel] for rel in RELS) == COUNTS[preset]
    # every VM has its port report; every VIP at least one DIP; the summary agrees
    assert c["vm_port"] == c["vm"]
    assert c["dip_pool"] >= c["vip"]
    assert f"{c['vm']} VMs on {c['host']} hosts" in r.stderr
    assert f"{c['dip_pool']} DIPs" in r.stderr


def test_l_has_50_hosts_on_each_of_200_tors(netc_bin, tmp_path):
    out = tmp_path / "L.ndl"
    assert gen(netc_bin, out, "--preset", "L").returncode == 0
    per_tor: Counter = Counter()
    for line in out.read_text().splitlines():
        if line.startswith("host("):
            per_tor[line.split(",")[2].strip()] += 1
    assert len(per_tor) == 200 and set(per_tor.values()) == {50}


def test_knobs_override_the_preset(netc_bin, tmp_path):
    out = tmp_path / "k.ndl"
    knobs = (
        "--k 6 --hosts-per-tor 3 --tenants 7 --vms-per-tenant 5 --vips 9 --acls-per-tenant 2 --mcast-groups 3 "
        "--nf-chains 1 --flows 11 --smuxes 0 --hoverboards 0 --hoverboard-pct 0"
    )
    r = gen(netc_bin, out, "--preset", "S", *knobs.split())
    assert r.returncode == 0, r.stderr
    c = facts(out)
    assert (
        c["host"],
        c["tenant"],
        c["vm"],
        c["vip"],
        c["acl"],
        c["mcast_group"],
        c["anolis_cluster"],
        c["flow_usage"],
        c["smux"],
        c["hoverboard"],
        c["vnet_model"],
    ) == (54, 7, 35, 9, 14, 3, 1, 11, 0, 0, 0)
    # k=6: 18 ToRs + 18 aggs + 9 cores + 2 gateways
    assert c["switch"] == 47


def test_s_compiles_with_zero_findings(netc_bin, tmp_path):
    r = gen(netc_bin, f"{tmp_path / 'scen'}/", "--preset", "S", "--seed", "3")
    assert r.returncode == 0, r.stderr
    files = sorted(str(p) for p in (tmp_path / "scen").glob("*.ndl"))
    c = subprocess.run(
        [netc_bin, "compile", *files, "--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=1800
    )
    assert c.returncode == 0, c.stderr[-4000:]
    assert "error[intent]" not in c.stderr
    rel = tmp_path / "out" / "relations"
    # the scenario exercises the rules: VM flows, VIPs on the SMuxes, multicast, Anolis
    for name in ("ovs_flow", "agent_mux_vip", "agent_mcast_member", "p4_route", "agent_snat_range"):
        assert (rel / f"{name}.csv").stat().st_size > 0, name


def test_m_checks_with_zero_findings(netc_bin, tmp_path):
    out = tmp_path / "M.ndl"
    assert gen(netc_bin, out, "--preset", "M").returncode == 0
    c = subprocess.run([netc_bin, "check", "--intent", str(out)], capture_output=True, text=True, timeout=3600)
    assert c.returncode == 0, c.stderr[-4000:]
    assert "error[intent]" not in c.stderr


@pytest.mark.parametrize(
    "args, knob",
    [
        (["--k", "5"], "--k"),
        (["--hosts", "0"], "--hosts"),
        (["--hoverboards", "0"], "--hoverboard-pct"),
        (["--vms-per-tenant", "1"], "--flows"),
        (["--max-dips", "40000"], "--max-dips"),
    ],
)
def test_bad_knob_is_a_usage_error_and_writes_nothing(netc_bin, tmp_path, args, knob):
    out = tmp_path / "x.ndl"
    r = gen(netc_bin, out, "--preset", "S", *args)
    assert r.returncode == 2
    assert knob in r.stderr and "out of range" in r.stderr
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []


def test_help_teaches(netc_bin):
    r = subprocess.run([netc_bin, "gen", "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0
    for word in (
        "--preset",
        "--seed",
        "--k",
        "--hosts-per-tor",
        "--vips",
        "--mcast-groups",
        "--nf-chains",
        "100,000 VMs",
        "docs/gen.md",
    ):
        assert word in r.stdout, word
