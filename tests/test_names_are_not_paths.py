"""A name that becomes a file path never leaves its directory.

A host named `../../../escaped/EVIL` in an intent is refused as bad intent
(`error_bad_name`, with the fact's `file:line`) by `compile`, `verify`,
`plan` and `serve`'s `POST /v1/plan`, and nothing is written outside the
output or state directory. A stored artifact path edited to climb out of
the store (`../`), in a row without a hash (as an older netc stored them;
test_store_trust.py covers rows with one), is refused when a generation is
written out for the verifier (`plan`, `verify --against GEN`): exit 2,
nothing written outside.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
from test_gate import REPO, Daemon, run

pytestmark = pytest.mark.netc

BAD = REPO / "tests" / "data" / "bad_intent" / "bad_name.ndl"


def escaped(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if "escaped" in p.parts or p.name.startswith("EVIL")]


def test_a_hostile_device_name_is_refused_on_every_path(netc_bin: str, tmp_path: Path) -> None:
    work = tmp_path / "a" / "b" / "c"
    work.mkdir(parents=True)
    for args in (["compile", str(BAD), "--out", "out"], ["verify", str(BAD)], ["plan", "--state", "st", str(BAD)]):
        r = run(netc_bin, *args, cwd=work)
        assert r.returncode in (1, 2), (args, r.stderr)
        assert "bad name" in r.stderr and f"{BAD}:3:1" in r.stderr, (args, r.stderr)
    d = Daemon(netc_bin, work / "st2", None, REPO / "examples" / "quickstart" / "intent.ndl", work)
    try:
        status, body = d.post("/v1/plan", {"files": [{"name": "bad.ndl", "text": BAD.read_text()}]})
        assert status == 422 and "bad_name" in json.dumps(body), body
    finally:
        d.stop()
    assert escaped(tmp_path) == [], escaped(tmp_path)


def test_a_stored_path_that_climbs_out_is_refused(netc_bin: str, tmp_path: Path) -> None:
    work = tmp_path / "a" / "b" / "c"
    work.mkdir(parents=True)
    state, inventory = work / "st", work / "none.toml"
    inventory.write_text("# no device is reached\n")
    intent = REPO / "examples" / "quickstart" / "intent.ndl"
    r = run(netc_bin, "apply", "--state", str(state), "--inventory", str(inventory), str(intent), cwd=work)
    assert r.returncode == 0, r.stderr
    db = sqlite3.connect(state / "state.db")
    # without its hash, as an older netc stored rows: with one, the hash check refuses the row first
    db.execute(
        "UPDATE device_output SET path = '../../../../escaped/EVIL.flows', sha256 = NULL WHERE path = 'ovs/h1.flows'"
    )
    db.commit()
    db.close()
    r = run(netc_bin, "plan", "--state", str(state), str(intent), cwd=work)
    assert r.returncode == 2 and "not a plain relative name" in r.stderr, r.stdout + r.stderr
    r = run(netc_bin, "verify", "--against", "1", "--state", str(state), str(intent), cwd=work)
    assert r.returncode == 2 and "not a plain relative name" in r.stderr, r.stdout + r.stderr
    assert escaped(tmp_path) == [], escaped(tmp_path)
    # the store was not repaired or rewritten by the refusals
    path = sqlite3.connect(state / "state.db").execute("SELECT path FROM device_output WHERE path LIKE '%EVIL%'").fetchone()
    assert path == ("../../../../escaped/EVIL.flows",)


def test_the_escape_would_have_landed_where_the_test_looks(tmp_path: Path) -> None:
    """The fixture's climb from the test's working directory stays inside tmp_path,
    so `escaped()` would see a file the guards let through."""
    work = tmp_path / "a" / "b" / "c"
    assert (work / "out" / "ovs" / "../../../escaped/EVIL.flows").resolve().is_relative_to(tmp_path)
    assert (work / "st" / "verified" / "gen-1" / "../../../../escaped/EVIL.flows").resolve().is_relative_to(tmp_path)


def test_state_is_private_and_a_readable_token_is_named(netc_bin: str, tmp_path: Path) -> None:
    """The store holds every device's configuration: a state directory netc
    makes is 0700, its database 0600; a token file others can read is
    accepted with a warning that names it."""
    state, inventory = tmp_path / "st", tmp_path / "none.toml"
    inventory.write_text("# no device is reached\n")
    intent = REPO / "examples" / "quickstart" / "intent.ndl"
    r = run(netc_bin, "apply", "--state", str(state), "--inventory", str(inventory), str(intent), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert state.stat().st_mode & 0o777 == 0o700
    for f in state.glob("state.db*"):
        assert f.stat().st_mode & 0o077 == 0, (f, oct(f.stat().st_mode))
    token = tmp_path / "token"
    token.write_text("a-shared-secret\n")
    token.chmod(0o644)
    log = tmp_path / "serve.log"
    with open(log, "w") as err:
        proc = subprocess.Popen(
            [netc_bin, "serve", "--no-push", "--listen", "127.0.0.1:0", "--state", str(state), "--token-file", str(token)],
            stdout=subprocess.DEVNULL, stderr=err, cwd=tmp_path,
        )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and "listening on" not in log.read_text() and proc.poll() is None:
            time.sleep(0.1)
        assert "listening on" in log.read_text(), log.read_text()
        assert f"token file `{token}` is readable by others (mode 644)" in log.read_text(), log.read_text()
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
