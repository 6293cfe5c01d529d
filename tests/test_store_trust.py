"""The store is checked, not believed: a generation whose stored content no
longer matches the hashes recorded when it was committed is refused.

Two generations are applied with an inventory that reaches no device (the
quickstart, then with one VM more). Each case edits a copy of the state's
SQLite file by hand, as someone with write access to it could, and asserts:
  * an edited intent text (its sha256 column left as it was) is refused by
    `netc rollback`, and `netc serve` will not start from it;
  * an edited device artifact is refused by `netc rollback` (it would
    otherwise be re-verified and pushed), by `netc plan` (the base it diffs
    against) and by `netc verify --against GEN`;
  * every refusal is exit 2 and names the generation and the file;
  * a store an older netc wrote (no artifact hashes) is still read, with a
    note, and what is committed from it carries hashes again.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
QUICKSTART = REPO / "examples" / "quickstart" / "intent.ndl"
NEW_VM = '\nvm("acme", "db2", 02:00:00:00:01:04, 10.1.2.22, "h2").\nvm_port("h2", "acme", "db2", 11).\n'


def run(netc: str, *args: str, cwd: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([netc, *args], capture_output=True, text=True, cwd=cwd, timeout=timeout)


@pytest.fixture(scope="module")
def applied(netc_bin: str, tmp_path_factory) -> Path:
    """A work directory with `st/` holding generations 1 and 2, `none.toml` and `intent.ndl` (generation 2's)."""
    work = tmp_path_factory.mktemp("trust")
    (work / "none.toml").write_text("# no device is reached\n")
    intent = work / "intent.ndl"
    intent.write_text(QUICKSTART.read_text())
    for _ in range(2):
        r = run(netc_bin, "apply", "--state", "st", "--inventory", "none.toml", "intent.ndl", cwd=work)
        assert r.returncode == 0, r.stderr
        intent.write_text(QUICKSTART.read_text() + NEW_VM)
    return work


def copy(applied: Path, tmp_path: Path) -> Path:
    work = tmp_path / "w"
    shutil.copytree(applied, work)
    return work


def edit(work: Path, sql: str) -> None:
    with sqlite3.connect(work / "st" / "state.db") as db:
        assert db.execute(sql).rowcount >= 1, sql


def refused(r: subprocess.CompletedProcess, generation: int, file: str) -> dict:
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    err = json.loads(r.stdout)["error"]
    assert f"generation {generation}" in err["message"] and file in err["message"], err
    assert "SHA-256" in err["message"] and err["hint"], err
    return err


def test_an_edited_intent_text_is_refused(netc_bin: str, applied: Path, tmp_path: Path) -> None:
    work = copy(applied, tmp_path)
    edit(work, "UPDATE intent_file SET text = text || 'host(\"evil\").' WHERE gen IN (1, 2)")
    r = run(netc_bin, "rollback", "1", "--state", "st", "--inventory", "none.toml", "--json", cwd=work)
    refused(r, 1, "intent.ndl")
    # the daemon recovers from the last generation's texts: it does not start from an edited one
    try:
        r = run(netc_bin, "serve", "--no-push", "--listen", "127.0.0.1:0", "--state", "st", cwd=work, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("netc serve started from an edited intent text")
    assert r.returncode == 2, r.stderr
    assert "generation 2" in r.stderr and "intent.ndl" in r.stderr and "SHA-256" in r.stderr, r.stderr
    # the history still lists it: only reading its content refuses
    r = run(netc_bin, "history", "--state", "st", "--json", cwd=work)
    assert r.returncode == 0, r.stderr


def test_an_edited_artifact_is_refused_by_rollback_plan_and_verify(netc_bin: str, applied: Path, tmp_path: Path) -> None:
    work = copy(applied, tmp_path)
    edit(
        work,
        "UPDATE device_output SET text = replace(text, 'actions=', 'actions=output:99,') "
        "WHERE path = 'ovs/h1.flows' AND gen IN (1, 2)",
    )
    r = run(netc_bin, "rollback", "1", "--state", "st", "--inventory", "none.toml", "--json", cwd=work)
    refused(r, 1, "ovs/h1.flows")
    with sqlite3.connect(work / "st" / "state.db") as db:
        assert db.execute("SELECT max(id) FROM generation").fetchone()[0] == 2, "nothing was committed"
    r = run(netc_bin, "plan", "--state", "st", "--json", "intent.ndl", cwd=work)
    refused(r, 2, "ovs/h1.flows")
    r = run(netc_bin, "verify", "--against", "1", "--state", "st", "--json", "intent.ndl", cwd=work)
    refused(r, 1, "ovs/h1.flows")


def test_a_store_without_artifact_hashes_is_read_with_a_note(netc_bin: str, applied: Path, tmp_path: Path) -> None:
    work = copy(applied, tmp_path)
    edit(work, "UPDATE device_output SET sha256 = NULL WHERE gen = 1")
    edit(work, "UPDATE relation_file SET sha256 = NULL WHERE gen = 1")
    r = run(netc_bin, "rollback", "1", "--state", "st", "--inventory", "none.toml", "--json", cwd=work)
    assert r.returncode == 0, r.stderr
    assert "generation 1" in r.stderr and "no artifact hashes" in r.stderr, r.stderr
    with sqlite3.connect(work / "st" / "state.db") as db:
        last = db.execute("SELECT max(id) FROM generation").fetchone()[0]
        assert last == 3
        rows = db.execute("SELECT count(*), count(sha256) FROM device_output WHERE gen = 3").fetchone()
        assert rows[0] > 0 and rows[0] == rows[1], "a new generation records a hash for every artifact"
