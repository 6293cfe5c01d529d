"""The README's first command, as written, so it cannot rot: its `netc apply`
part runs in a temp working directory (state in `.netc/` there), the lab's
bridges must then hold exactly the compiled flows, and `netc lab stop` must
stop every daemon it started."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import pytest

from ovs_fixture import ensure_ovs

pytestmark = pytest.mark.netc

REPO = Path(__file__).resolve().parent.parent
CARGO_RUN = "cargo run --release -p netc-cli --"


def first_command() -> list[str]:
    text = (REPO / "README.md").read_text()
    block = text.split("```sh\n", 1)[1].split("```", 1)[0]
    line = block.splitlines()[0]
    assert "apt-get install -y openvswitch-switch" in line, "the first command installs OVS where missing"
    assert CARGO_RUN in line, f"the first command runs netc through cargo: {line}"
    args = shlex.split(line.split(CARGO_RUN, 1)[1].split("#")[0])
    assert args[0] == "apply", f"the first command is `netc apply`: {line}"
    return args


def test_readme_first_command_applies_the_quickstart_on_the_lab(netc_bin, tmp_path):
    ensure_ovs()
    args = first_command()
    args = [a if not a.endswith(".ndl") else str(REPO / a) for a in args]
    r = subprocess.run([netc_bin, *args], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    try:
        assert r.returncode == 0, r.stdout + r.stderr
        out = tmp_path / "out"
        c = subprocess.run([netc_bin, "compile", str(REPO / "examples/quickstart/intent.ndl"), "--out", str(out)],
                           capture_output=True, text=True, timeout=300)
        assert c.returncode == 0, c.stderr
        for h in ("h1", "h2", "h3", "h4"):
            mgmt = tmp_path / ".netc" / "lab" / h / "br-int.mgmt"
            assert mgmt.exists(), f"{h}: no bridge"
            dump = subprocess.run(["ovs-ofctl", "-O", "OpenFlow15", "--no-stats", "dump-flows", f"unix:{mgmt}"],
                                  capture_output=True, text=True, timeout=60, check=True).stdout
            flows = [ln for ln in dump.splitlines() if "priority=" in ln]
            want = len((out / "ovs" / f"{h}.flows").read_text().splitlines())
            groups = len((out / "ovs" / f"{h}.groups").read_text().splitlines())
            assert len(flows) == want + groups, f"{h}: {len(flows)} flows, {want}+{groups} compiled"
    finally:
        st = subprocess.run([netc_bin, "lab", "status", "--json"], cwd=tmp_path, capture_output=True, text=True,
                            timeout=60)
        seen = [p for h in json.loads(st.stdout or '{"hosts": []}')["hosts"]
                for p in (h["ovsdb_server"], h["ovs_vswitchd"]) if p]
        s = subprocess.run([netc_bin, "lab", "stop"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert s.returncode == 0, s.stderr
    for pid in seen:
        stat = Path(f"/proc/{pid}/stat")
        assert not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] == "Z", f"pid {pid} still runs"
