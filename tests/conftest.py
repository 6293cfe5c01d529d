"""Shared fixtures for the Python test-suite.

`netc_bin` (session scope) yields the path of a release `netc` binary:
  * $NETC_BIN if set (must exist and be executable), otherwise
  * builds it with `cargo build --release -p netc-cli` in the repo root.
A failed build, or a binary whose `netc run --help` does not mention
`--updates`, FAILS the requesting tests (never a silent skip).  To run only the
oracle self-tests (no netc needed): `pytest -m "not netc"`.
`s_intent` (session scope) is `netc gen --preset S` written once, read-only.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _target_dir() -> Path:
    t = os.environ.get("CARGO_TARGET_DIR")
    return Path(t) if t else REPO / "target"


_FAILED: list[str] = []  # a failed session fixture is retried per test; fail fast instead


@pytest.fixture(scope="session")
def netc_bin() -> str:
    if _FAILED:
        pytest.fail(_FAILED[0], pytrace=False)
    try:
        return _locate_netc()
    except pytest.fail.Exception as e:
        _FAILED.append(str(e))
        raise


def _locate_netc() -> str:
    env = os.environ.get("NETC_BIN")
    if env:
        p = Path(env)
        if not p.is_file() or not os.access(p, os.X_OK):
            pytest.fail(f"NETC_BIN={env} is not an executable file", pytrace=False)
        path = p.resolve()
    else:
        cmd = ["cargo", "build", "--release", "-p", "netc-cli"]
        try:
            r = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
        except FileNotFoundError:
            pytest.fail("cargo not found on PATH; set NETC_BIN to a built netc binary", pytrace=False)
        if r.returncode != 0:
            tail = "\n".join(r.stderr.splitlines()[-60:])
            pytest.fail(
                f"`{' '.join(cmd)}` failed (exit {r.returncode}) in {REPO}:\n{tail}",
                pytrace=False,
            )
        path = _target_dir() / "release" / "netc"
        if not path.is_file():
            pytest.fail(f"cargo build succeeded but {path} does not exist", pytrace=False)
    try:
        h = subprocess.run([str(path), "run", "--help"], capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail(f"`{path} run --help` timed out", pytrace=False)
    if "--updates" not in h.stdout + h.stderr:
        pytest.fail(
            f"{path} does not support `netc run --updates` yet "
            f"(`netc run --help` exit {h.returncode}):\n{h.stdout}{h.stderr}",
            pytrace=False,
        )
    return str(path)


@pytest.fixture(scope="session")
def s_intent(netc_bin: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`netc gen --preset S` (seed 1: 1,000 VMs, 300 VIPs) written once per
    session; tests read it and never change it."""
    intent = tmp_path_factory.mktemp("preset-s") / "s.ndl"
    subprocess.run([netc_bin, "gen", "--preset", "S", "--out", str(intent)], check=True, capture_output=True)
    return intent
