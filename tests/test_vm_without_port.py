"""A VM whose port is not reported yet (no `vm_port`) is not in the data plane.

`vm_port` is reported by the host agent once the VM's port exists on
br-int (specs/intent.md §2). Until then the VM is left out everywhere, as
an NF instance without a port already was: its host's ToR does not admit
its tenant's VNI for it, it is no DIP of any VIP (like a DIP whose probe has
not answered), it gets no multicast copy. The intent is valid in that
state, so `netc check --intent` accepts it and `netc verify INTENT` (the
path `plan` and `apply` gate on) must prove it — before, the rules still
announced the VM to the switches and Muxes and verify reported ISO-1,
ISO-2 and AFF-1 violations for an intent a user cannot get wrong.

For every example with reported ports, one VM of each role it has (DIP,
multicast member, Yoda instance, NF instance, plain VM) loses its
`vm_port` line; the result must verify, and the VM must be gone from what
the Muxes, switches and agents are given.
"""

from __future__ import annotations

import csv
import re
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.netc

REPO = Path(__file__).resolve().parent.parent
# duet has one VM per port line (708) and takes minutes to verify: the rules
# it exercises are the same as ananta's and rubik's.
EXAMPLES = ["quickstart", "ananta", "athena", "andromeda", "nfchain", "rubik", "yoda"]
PORT = re.compile(r'^vm_port\("([^"]+)", "([^"]+)", "([^"]+)", (\d+)\)\.')
ROLES = {
    "dip": re.compile(r'^dip_pool\([^,]+, \d+, \d+, "([^"]+)", "([^"]+)"'),
    "mcast": re.compile(r'^mcast_member\("([^"]+)", [^,]+, "([^"]+)"'),
    "yoda": re.compile(r'^yoda_instance\("[^"]+", "([^"]+)", "([^"]+)"'),
    "nf": re.compile(r'^nf_instance\("([^"]+)", "[^"]+", \d+, "([^"]+)"'),
}


def cases() -> list[tuple[str, str, int]]:
    """(example, role, line index of the vm_port fact to drop)."""
    out = []
    for ex in EXAMPLES:
        lines = (REPO / "examples" / ex / "intent.ndl").read_text().splitlines()
        roles: dict[tuple[str, str], set[str]] = {}
        for line in lines:
            for role, rx in ROLES.items():
                m = rx.match(line)
                if m:
                    roles.setdefault((m.group(1), m.group(2)), set()).add(role)
        seen: set[str] = set()
        for i, line in enumerate(lines):
            m = PORT.match(line)
            if not m:
                continue
            for role in sorted(roles.get((m.group(2), m.group(3)), {"plain"})):
                if role not in seen:
                    seen.add(role)
                    out.append((ex, role, i))
    return out


CASES = cases()


def test_every_role_is_exercised() -> None:
    """The case list read something: each role occurs in some example."""
    assert {role for _ex, role, _i in CASES} == {"dip", "mcast", "yoda", "nf", "plain"}, CASES


def without_port(example: str, index: int, tmp_path: Path) -> tuple[Path, list[str], tuple[str, str, str]]:
    """A copy of the example's intent with one vm_port line blanked (other lines keep their numbers)."""
    src = REPO / "examples" / example
    lines = (src / "intent.ndl").read_text().splitlines()
    m = PORT.match(lines[index])
    assert m, lines[index]
    lines[index] = "// " + lines[index] + "  (port not reported yet)"
    intent = tmp_path / "intent.ndl"
    intent.write_text("\n".join(lines) + "\n")
    extra = [str(p) for p in sorted(src.glob("*.ndl")) if p.name != "intent.ndl"]
    return intent, extra, (m.group(1), m.group(2), m.group(3))


def vm_address(intent: Path, tenant: str, vm: str) -> tuple[str, str, str]:
    """(MAC, IP, VNI) of the VM, read from the intent's vm and tenant facts."""
    text = intent.read_text()
    m = re.search(rf'^vm\("{re.escape(tenant)}", "{re.escape(vm)}", ([0-9a-f:]+), ([0-9.]+),', text, re.M)
    t = re.search(rf'^tenant\("{re.escape(tenant)}", (\d+)\)', text, re.M)
    assert m and t, f"no vm or tenant fact for {tenant}/{vm}"
    return m.group(1), m.group(2), t.group(1)


def rows(out: Path, relation: str) -> list[list[str]]:
    path = out / "relations" / f"{relation}.csv"
    if not path.is_file():
        return []
    with path.open() as f:
        return list(csv.reader(f, delimiter="\t"))


@pytest.mark.parametrize(("example", "role", "index"), CASES, ids=[f"{e}-{r}" for e, r, _ in CASES])
def test_a_vm_without_a_port_is_left_out_and_verifies(netc_bin, tmp_path, example, role, index):
    intent, extra, (host, tenant, vm) = without_port(example, index, tmp_path)
    files = [str(intent), *extra]

    r = subprocess.run([netc_bin, "check", "--intent", *files], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr

    r = subprocess.run([netc_bin, "verify", *files], capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "VIOLATED" not in r.stdout, r.stdout[-3000:]
    assert r.stdout.strip().splitlines()[-1].startswith("proven:"), r.stdout[-2000:]

    out = tmp_path / "out"
    r = subprocess.run([netc_bin, "compile", *files, "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    mac, ip, vni = vm_address(intent, tenant, vm)
    # nothing is handed to a device for the VM: no agent row names it, no Mux
    # or switch tunnels to it (by MAC: addresses overlap across tenants), no
    # load-balancing vector or multicast copy holds it
    for relation in ("agent_vm", "agent_dip", "agent_probe", "agent_mcast_member", "agent_nf_instance"):
        named = [row for row in rows(out, relation) if vm in row and tenant in row]
        assert not named, (relation, named)
    for relation in ("agent_mux_tunnel", "p4_tunnel"):
        hit = [row for row in rows(out, relation) if mac in row]
        assert not hit, (relation, hit)
    for relation in ("agent_mux_member", "p4_ecmp_member", "p4_ecmp_member_local"):
        hit = [row for row in rows(out, relation) if row[-2:] == [vni, ip]]
        assert not hit, (relation, hit)
