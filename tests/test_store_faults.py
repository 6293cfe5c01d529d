"""What netc says about a store it cannot use is true, and never costs history.

A store that cannot be written (a read-only file system), that has no room
(a file size limit), that is empty (0 bytes) or that has netc's id but lacks
tables is not "corrupted — move it away" (which would throw history away):
each is named for what it is, exit 2, and the file is left byte for byte as
it was. Reading commands (`status`, `history`, `diff`) keep working on a
read-only store. The devices are an inventory that reaches none (the store
is what is under test here; tests/test_apply_faults.py pushes to real OVS).
"""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
QUICKSTART = REPO / "examples" / "quickstart" / "intent.ndl"
NEW_VM = '\nvm("acme", "db2", 02:00:00:00:01:04, 10.1.2.22, "h2").\nvm_port("h2", "acme", "db2", 11).\n'
HARMFUL = ("corrupted", "move `")


def run(netc: str, *args, cwd: Path, pre: tuple = (), timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([*pre, netc, *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=timeout)


@pytest.fixture(scope="module")
def applied(netc_bin: str, tmp_path_factory) -> Path:
    """`st/` holding generations 1 and 2 (checkpointed into state.db alone)."""
    work = tmp_path_factory.mktemp("faults")
    (work / "none.toml").write_text("# no device is reached\n")
    shutil.copy(QUICKSTART, work / "intent.ndl")
    for n in (1, 2):
        r = run(netc_bin, "apply", "--state", "st", "--inventory", "none.toml", "intent.ndl", cwd=work)
        assert r.returncode == 0, r.stderr
        (work / "intent.ndl").write_text(QUICKSTART.read_text() + NEW_VM)
    with sqlite3.connect(work / "st" / "state.db") as c:
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return work


def _copy(applied: Path, tmp_path: Path) -> Path:
    work = tmp_path / "w"
    shutil.copytree(applied, work)
    return work


def _digest(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def _no_harmful_advice(r: subprocess.CompletedProcess) -> None:
    assert not any(h in r.stderr for h in HARMFUL), r.stderr


def test_empty_state_file_does_not_restart_history(netc_bin, applied, tmp_path):
    work = _copy(applied, tmp_path)
    db = work / "st" / "state.db"
    db.write_bytes(b"")
    for args in (["status"], ["history"], ["apply", "--inventory", "none.toml", "intent.ndl"]):
        r = run(netc_bin, *args, "--state", "st", cwd=work)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert "is empty (0 bytes)" in r.stderr and "restore" in r.stderr, r.stderr
        assert db.stat().st_size == 0, f"{args}: the empty file was written (history restarted)"


def test_netc_store_missing_tables_is_said_and_untouched(netc_bin, applied, tmp_path):
    work = _copy(applied, tmp_path)
    db = work / "st" / "state.db"
    with sqlite3.connect(db) as c:
        c.execute("DROP TABLE intent_fact")
    with sqlite3.connect(db) as c:
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    (work / "st" / "state.db-wal").unlink(missing_ok=True)
    (work / "st" / "state.db-shm").unlink(missing_ok=True)
    before = _digest(db)
    for args in (["status"], ["history"], ["apply", "--inventory", "none.toml", "intent.ndl"]):
        r = run(netc_bin, *args, "--state", "st", cwd=work)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert "table(s) intent_fact are missing" in r.stderr, r.stderr
        assert "no such table" not in r.stderr, r.stderr
        assert _digest(db) == before, f"{args}: the store was modified"


def test_file_size_limit_is_no_room_not_corruption(netc_bin, applied, tmp_path):
    """Under `prlimit --fsize` SQLite cannot even size its shared-memory
    file: that is a refused write, not a damaged store."""
    work = _copy(applied, tmp_path)
    db = work / "st" / "state.db"
    (work / "st" / "state.db-shm").unlink(missing_ok=True)
    before = _digest(db)
    r = run(netc_bin, "apply", "--state", "st", "--inventory", "none.toml", "intent.ndl", cwd=work,
            pre=("prlimit", "--fsize=20000"))
    assert r.returncode == 2, r.stdout + r.stderr
    _no_harmful_advice(r)
    assert "no room to write" in r.stderr and "not damage in the store" in r.stderr, r.stderr
    assert _digest(db) == before


@pytest.fixture
def read_only_state(applied, tmp_path):
    """The applied state on a tmpfs mounted read-only (root only: a root
    process ignores file modes, so only a read-only mount stops its writes)."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mnt)], capture_output=True).returncode:
        pytest.skip("needs root to mount a tmpfs (a read-only mount is the only read-only store root cannot write)")
    try:
        shutil.copytree(applied, mnt / "w")
        for f in ("state.db-wal", "state.db-shm"):
            (mnt / "w" / "st" / f).unlink(missing_ok=True)
        subprocess.run(["mount", "-o", "remount,ro", str(mnt)], check=True)
        yield mnt / "w"
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


def test_read_only_store_is_read_and_not_called_corrupted(netc_bin, read_only_state):
    work = read_only_state
    r = run(netc_bin, "history", "--state", "st", cwd=work)
    assert r.returncode == 0, r.stderr
    assert len([ln for ln in r.stdout.splitlines() if ln.strip()[:1].isdigit()]) == 2, r.stdout
    r = run(netc_bin, "status", "--state", "st", cwd=work)
    assert r.returncode in (0, 1) and "generation" in r.stdout, r.stdout + r.stderr
    r = run(netc_bin, "diff", "1", "2", "--state", "st", cwd=work)
    assert r.returncode == 0, r.stderr
    # plan changes nothing: it reads the store, and its candidate goes where it can be written
    r = run(netc_bin, "plan", "--state", "st", "intent.ndl", cwd=work)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "verify: proven" in r.stdout and "no device changes" in r.stdout, r.stdout
    r = run(netc_bin, "apply", "--state", "st", "--inventory", "none.toml", "intent.ndl", cwd=work)
    assert r.returncode == 2, r.stdout + r.stderr
    _no_harmful_advice(r)
    assert "cannot be written" in r.stderr and "status, history and diff still read it" in r.stderr, r.stderr
