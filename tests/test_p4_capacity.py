"""`netc capacity`: table use per switch against the Duet and Tofino models."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.netc


def run(netc_bin, *args):
    return subprocess.run([netc_bin, "capacity", *map(str, args)], capture_output=True, text=True, timeout=600)


def test_duet_counts_match_the_rows(netc_bin, tmp_path):
    ex = REPO / "examples" / "duet" / "intent.ndl"
    r = run(netc_bin, ex, "--json")
    assert r.returncode == 0, r.stderr
    uses = {u["device"]: u for u in json.loads(r.stdout)}
    out = tmp_path / "out"
    c = subprocess.run([netc_bin, "compile", str(ex), "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert c.returncode == 0, c.stderr

    def rows(rel, sw):
        return sum(1 for line in (out / "relations" / f"{rel}.csv").read_text().splitlines() if line.split("\t")[0] == sw)

    assert set(uses) == {line.split("\t")[0] for line in (out / "relations" / "p4_switch_config.csv").read_text().splitlines()}
    for sw, u in uses.items():
        lim = {x["name"]: x for x in u["limits"]}
        assert lim["host"]["used"] == rows("p4_vip", sw) + rows("p4_vip_local", sw)
        assert lim["ecmp"]["used"] == rows("p4_ecmp_member", sw) + rows("p4_ecmp_member_local", sw)
        assert lim["tunnel"]["used"] == rows("p4_tunnel", sw)
        assert (lim["host"]["capacity"], lim["ecmp"]["capacity"], lim["tunnel"]["capacity"]) == (16384, 4096, 512)


def test_tofino_profile_respects_the_exact_table_minimum(netc_bin):
    r = run(netc_bin, REPO / "examples" / "athena" / "intent.ndl", "--profile", "tofino", "--json")
    assert r.returncode == 0, r.stderr
    for u in json.loads(r.stdout):
        lim = {x["name"]: x for x in u["limits"]}
        assert lim["stages"]["capacity"] == 12 and lim["sram"]["capacity"] == 960 and lim["tcam"]["capacity"] == 288
        for t in u["tables"]:
            # every used table takes at least one block; an exact table is sized for >= 1,024 entries
            assert (t["entries"] == 0) == (t["sram_blocks"] + t["tcam_blocks"] == 0), t
        assert lim["stages"]["used"] <= 12


def test_over_capacity_names_switch_and_limit(netc_bin, tmp_path):
    lines = ['switch("tor1", "tor", 10.255.0.1, 100000, 100000, 100000).',
             'tenant("web", 7002).', 'vnet("web", "front", 10.30.0.0/16).',
             'smux("smux1", 192.168.100.1).', 'vip_aggregate(100.64.0.0/16).']
    for v in (1, 2):
        lines += [f'vip("web", 100.64.1.{v}, 6, 80, "public").', f'vip_placement(100.64.1.{v}, "tor1").']
    for i in range(600):
        h = f"h{i // 20}"
        if i % 20 == 0:
            lines.append(f'host("{h}", 192.168.{i // 20}.1, "tor1", {1 + i // 20}).')
        lines.append(f'vm("web", "w{i}", 02:00:00:00:{i >> 8:02x}:{i & 255:02x}, 10.30.{i >> 8}.{i & 255}, "{h}").')
        lines.append(f'dip_pool(100.64.1.{1 + i % 2}, 6, 80, "web", "w{i}", 8080, 1).')
        # a DIP is in service once its port is reported
        lines.append(f'vm_port("{h}", "web", "w{i}", {10 + i % 20}).')
    src = tmp_path / "cap.ndl"
    src.write_text("\n".join(lines) + "\n")
    r = run(netc_bin, src)
    assert r.returncode == 1
    assert "OVER CAPACITY" in r.stdout and "switch `tor1`" in r.stderr and "`tunnel`" in r.stderr
    assert run(netc_bin, src, "--profile", "tofino").returncode == 0  # the Tofino model has room


def test_unknown_profile_is_a_usage_error(netc_bin):
    r = run(netc_bin, REPO / "examples" / "athena" / "intent.ndl", "--profile", "nope")
    assert r.returncode == 2 and "duet" in r.stderr
