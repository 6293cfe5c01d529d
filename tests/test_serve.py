"""`netc serve`: a real daemon process on 127.0.0.1 (ephemeral port), over HTTP.

The request/answer sessions — every endpoint refusing a missing or wrong
token (401), queries and their errors, bad intent refused (422) leaving the
state as it was, `paths` and `.include` read only under --intent-dir with
nothing of a refused file in the answer — are scripts under
`tests/sessions/serve/`, run by `test_serve_sessions.py`. Asserted here:
  * the generated token file is mode 0600;
  * a body over the limit is refused (413) before it is read;
  * a change through the warm daemon commits incrementally (the daemon's
    `full_evaluations` counter stays 1) and its per-device deltas name
    exactly the devices whose rows differ between two from-scratch
    `netc compile` runs of the old and new intent;
  * the deltas stream (long-poll) delivers the change to a waiting consumer;
  * after kill -9 the daemon restarts from the store with the same state;
  * slow clients do not stop it: unauthenticated connections trickling a
    body are answered 401 and closed, an authenticated one that is too slow
    gets 408, and parked long-polls hold no request worker (/v1/status and a
    plan answer meanwhile; past the bound a poll is 503 with Retry-After).
Every daemon is stopped by its pid.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import stat
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
QUICKSTART = REPO / "examples" / "quickstart" / "intent.ndl"
NEW_VM = (
    '\nvm("acme", "db2", 02:00:00:00:01:04, 10.1.2.22, "h2").\n'
    'vm_port("h2", "acme", "db2", 11).\n'
)


class OwnedProcess:
    """A daemon a test started (`self.proc`), stopped by its pid."""

    def kill9(self):
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)

    def stop(self):
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=30)


class Daemon(OwnedProcess):
    def __init__(self, netc: str, state: Path, *intent: Path, extra: tuple[str, ...] = (), cwd: Path | None = None):
        self.state = state
        self.log = state.parent / f"serve-{time.monotonic_ns()}.log"
        self.proc = subprocess.Popen(
            # --no-push: these tests are about the session and the API; pushing is test_apply_server.py's
            [netc, "serve", "--no-push", "--listen", "127.0.0.1:0", "--state", str(state), *extra, *map(str, intent)],
            stdout=subprocess.DEVNULL,
            stderr=open(self.log, "w"),
            cwd=cwd,
        )
        deadline = time.monotonic() + 90
        self.url = None
        while time.monotonic() < deadline and self.url is None:
            m = re.search(r"listening on (http://[0-9.:]+)", self.log.read_text())
            if m:
                self.url = m.group(1)
                break
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        if self.url is None:
            self.stop()
            pytest.fail(f"netc serve did not start:\n{self.log.read_text()}")
        self.token = (state / "serve.token").read_text().strip()

    def call(self, method: str, path: str, body=None, token: str | None = "default", timeout=120):
        req = urllib.request.Request(self.url + path, method=method)
        if token == "default":
            token = self.token
        if token is not None:
            req.add_header("Authorization", f"Bearer {token}")
        data = None if body is None else json.dumps(body).encode()
        try:
            with urllib.request.urlopen(req, data=data, timeout=timeout) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())



@pytest.fixture
def daemon(netc_bin, tmp_path):
    started: list[Daemon] = []

    def start(
        *intent: Path, state: Path | None = None, intent_dir: Path | None = tmp_path, extra: tuple[str, ...] = ()
    ) -> Daemon:
        # the tests' intent files live in tmp_path: the directory `paths` may name
        if intent_dir is not None:
            extra = ("--intent-dir", str(intent_dir), *extra)
        d = Daemon(netc_bin, state or tmp_path / "state", *intent, extra=extra)
        started.append(d)
        return d

    yield start
    for d in started:
        d.stop()


def located_rows(netc_bin: str, intent: Path, out: Path) -> dict[str, set]:
    """Device -> set of (relation, row) from a from-scratch `netc compile`."""
    subprocess.run([netc_bin, "compile", str(intent), "--out", str(out)], check=True, capture_output=True)
    by: dict[str, set] = {}
    for f in (out / "relations").glob("*.csv"):
        with open(f) as fh:
            for row in csv.reader(fh, delimiter="\t"):
                if row:
                    by.setdefault(row[0], set()).add((f.stem, tuple(row)))
    return by


def test_token_file_is_private(daemon):
    d = daemon(QUICKSTART)
    mode = stat.S_IMODE((d.state / "serve.token").stat().st_mode)
    assert mode == 0o600
    status, reply = d.call("GET", "/v1/status")
    assert status == 200 and reply["generation"] == 0


def test_oversized_body_is_refused_before_reading(daemon):
    d = daemon(QUICKSTART)
    host, port = d.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(
            (
                f"POST /v1/apply HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {d.token}\r\n"
                "Content-Type: application/json\r\nContent-Length: 999999999\r\n\r\n{"
            ).encode()
        )
        status, _, body = read_answer(s, 30)
    assert status == 413 and body["error"]["code"] == "too_large", body


def test_warm_change_deltas_match_from_scratch_and_do_not_recompile(daemon, netc_bin, tmp_path):
    intent = tmp_path / "intent.ndl"
    shutil.copy(QUICKSTART, intent)
    d = daemon(intent)
    status, reply = d.call("POST", "/v1/apply", {"paths": [str(intent)], "verify": True})
    assert status == 200, reply
    assert reply["generation"] == 1 and reply["verdict"] == "proven"

    # a consumer waits on the stream before the change
    got: dict = {}

    def consume():
        got["reply"] = d.call("GET", "/v1/deltas?since=0&wait=60")

    t = threading.Thread(target=consume)
    t.start()
    time.sleep(0.5)

    before = located_rows(netc_bin, intent, tmp_path / "before")
    intent.write_text(intent.read_text() + NEW_VM)
    after = located_rows(netc_bin, intent, tmp_path / "after")
    touched = {dev for dev in set(before) | set(after) if before.get(dev) != after.get(dev)}
    assert touched and touched != set(before) | set(after), "the change must touch some devices, not all"

    # plan first: reports the change, applies nothing
    status, plan = d.call("POST", "/v1/plan", {"paths": [str(intent)], "verify": False})
    assert status == 200, plan
    assert {x["device"] for x in plan["change"]["devices"]} == touched
    status, q = d.call("POST", "/v1/query", {"query": 'vm("acme", "db2", _, _, H)'})
    assert q["count"] == 0, "plan must not apply"

    status, reply = d.call("POST", "/v1/apply", {"paths": [str(intent)], "verify": False})
    assert status == 200, reply
    assert reply["generation"] == 2
    assert {x["device"] for x in reply["change"]["devices"]} == touched
    assert set(reply["changes"]) <= touched

    status, st = d.call("GET", "/v1/status")
    assert st["counters"]["full_evaluations"] == 1, st["counters"]
    assert st["counters"]["warm_changes"] == 2
    assert st["counters"]["last_input_changes"] == 2  # the two new facts, nothing else
    # the new VM is in no DIP pool: the VIP placement's inputs did not move, so it did not run again
    assert st["counters"]["placements"] == 1, st["counters"]

    t.join(timeout=90)
    assert not t.is_alive()
    status, stream = got["reply"]
    assert status == 200
    streamed = stream["deltas"]
    assert streamed and {e["device"] for e in streamed} == touched
    assert all(e["generation"] == 2 for e in streamed)
    assert [e["seq"] for e in streamed] == list(range(1, len(streamed) + 1))
    # each streamed row is exactly a row of the from-scratch difference
    for e in streamed:
        dev = e["device"]
        added = {(a["relation"], tuple(a["row"])) for a in e["added"]}
        removed = {(a["relation"], tuple(a["row"])) for a in e["removed"]}
        assert added == after.get(dev, set()) - before.get(dev, set())
        assert removed == before.get(dev, set()) - after.get(dev, set())
        # and carries netc's own rendering of a switch's change (what `plan -v`
        # lists), so a consumer programming the switch needs no renderer of its own
        listed = reply["devices"].get(dev, {}).get("entries", {"added": [], "removed": []})
        p4 = {k: [x for x in listed[k] if x.startswith("p4/")] for k in ("added", "removed")}
        assert e["entries"] == p4  # this change touches hosts only: empty (onos-app's tests stream switches)
    status, later = d.call("GET", f"/v1/deltas?since={stream['next']}&wait=0")
    assert status == 200 and later["deltas"] == []


def test_kill9_then_restart_recovers_the_committed_state(daemon, tmp_path):
    intent = tmp_path / "intent.ndl"
    intent.write_text(QUICKSTART.read_text() + NEW_VM)
    state = tmp_path / "state"
    d = daemon(QUICKSTART, state=state)
    status, reply = d.call("POST", "/v1/apply", {"paths": [str(intent)], "verify": False})
    assert status == 200 and reply["generation"] == 1
    _, q_before = d.call("POST", "/v1/query", {"query": "ovs_flow(D, T, P, M, A, C)"})
    d.kill9()
    d2 = daemon(state=state)  # no intent on the command line: only the store
    status, st = d2.call("GET", "/v1/status")
    assert st["generation"] == 1
    assert st["files"] == [str(intent)]
    _, q_after = d2.call("POST", "/v1/query", {"query": "ovs_flow(D, T, P, M, A, C)"})
    assert q_after["rows"] == q_before["rows"] and q_after["count"] > 0
    _, db2 = d2.call("POST", "/v1/query", {"query": 'vm("acme", "db2", _, _, H)'})
    assert db2["rows"] == [["acme", "db2", "02:00:00:00:01:04", "10.1.2.22", "h2"]]


def addr_of(d: Daemon) -> tuple[str, int]:
    host, port = d.url.removeprefix("http://").split(":")
    return host, int(port)


def read_answer(s: socket.socket, seconds: float) -> tuple[int, dict[str, str], dict]:
    """One HTTP answer from a raw socket the daemon closes after answering."""
    s.settimeout(seconds)
    deadline = time.monotonic() + seconds
    data = b""
    while time.monotonic() < deadline:
        try:
            chunk = s.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        data += chunk
        head, sep, body = data.partition(b"\r\n\r\n")
        m = re.search(rb"content-length: *(\d+)", head, re.I)
        if sep and m and len(body) >= int(m.group(1)):
            break
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode(errors="replace").split("\r\n")
    assert lines[0].startswith("HTTP/1.1 "), data[:200]
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return int(lines[0].split()[1]), headers, json.loads(body)


def closed_by_daemon(s: socket.socket, seconds: float) -> bool:
    """Whether the daemon closed the connection (EOF or reset) within `seconds`."""
    s.settimeout(0.2)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            s.send(b"x" * 100)
            if s.recv(65536) == b"":
                return True
        except socket.timeout:
            continue
        except (ConnectionResetError, BrokenPipeError):
            return True
    return False


def timed_status(d: Daemon) -> float:
    t0 = time.monotonic()
    status, _ = d.call("GET", "/v1/status", timeout=30)
    assert status == 200
    return time.monotonic() - t0


def test_trickled_bodies_do_not_stop_the_daemon(daemon):
    d = daemon(QUICKSTART, extra=("--read-timeout", "2"))
    head = "POST /v1/plan HTTP/1.1\r\nHost: x\r\n{auth}Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n"
    strangers = [socket.create_connection(addr_of(d), timeout=10) for _ in range(10)]
    slow = [socket.create_connection(addr_of(d), timeout=10) for _ in range(2)]
    try:
        for s in strangers:
            s.sendall(head.format(auth="").encode() + b"{")
        for s in slow:
            s.sendall(head.format(auth=f"Authorization: Bearer {d.token}\r\n").encode() + b"{")
        # the refusal comes from the headers, before the body
        for s in strangers:
            status, headers, body = read_answer(s, 5)
            assert status == 401 and body["error"]["code"] == "unauthorized"
            assert headers["connection"] == "close"
        stop = time.monotonic() + 5
        sent = {"n": 0}

        def trickle():
            while time.monotonic() < stop:
                for s in strangers + slow:
                    try:
                        s.send(b" " * 100)
                        sent["n"] += 1
                    except OSError:
                        pass
                time.sleep(0.05)

        t = threading.Thread(target=trickle)
        t.start()
        waits = []
        while time.monotonic() < stop - 0.5:
            waits.append(timed_status(d))
            time.sleep(0.3)
        t.join(timeout=30)
        assert not t.is_alive() and sent["n"] > 0
        assert len(waits) >= 5 and max(waits) < 1.5, waits
        # the authenticated but too slow clients were cut at the read deadline
        for s in slow:
            status, _, body = read_answer(s, 5)
            assert status == 408 and body["error"]["code"] == "timeout", body
        for s in strangers:
            assert closed_by_daemon(s, 5), "a refused connection must be closed, not drained"
    finally:
        for s in strangers + slow:
            s.close()
    assert timed_status(d) < 1.5


def test_long_polls_hold_no_request_worker(daemon, tmp_path):
    intent = tmp_path / "intent.ndl"
    shutil.copy(QUICKSTART, intent)
    d = daemon(intent)
    request = f"GET /v1/deltas?since=0&wait=40 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {d.token}\r\n\r\n"
    polls: list[socket.socket] = []
    try:
        for _ in range(12):
            s = socket.create_connection(addr_of(d), timeout=10)
            s.sendall(request.encode())
            polls.append(s)
        time.sleep(1)
        assert timed_status(d) < 1.5
        t0 = time.monotonic()
        status, plan = d.call("POST", "/v1/plan", {"paths": [str(intent)], "verify": False}, timeout=60)
        assert status == 200, plan
        assert time.monotonic() - t0 < 20
        # the waiter's bound: 64 parked polls, the next is told to come back
        for _ in range(64 - len(polls)):
            s = socket.create_connection(addr_of(d), timeout=10)
            s.sendall(request.encode())
            polls.append(s)
        time.sleep(1.5)
        extra = socket.create_connection(addr_of(d), timeout=10)
        extra.sendall(request.encode())
        status, headers, body = read_answer(extra, 10)
        extra.close()
        assert status == 503 and body["error"]["code"] == "busy" and headers.get("retry-after") == "1", body
        assert timed_status(d) < 1.5
        # an apply publishes deltas: every parked poll is answered with them
        intent.write_text(intent.read_text() + NEW_VM)
        status, reply = d.call("POST", "/v1/apply", {"paths": [str(intent)], "verify": False}, timeout=120)
        assert status == 200, reply
        for s in polls:
            status, _, body = read_answer(s, 20)
            assert status == 200 and body["deltas"], body
            assert {e["generation"] for e in body["deltas"]} == {1}
    finally:
        for s in polls:
            s.close()
    # a poll whose wait ends without a delta answers an empty list
    status, st = d.call("GET", "/v1/status")
    last = st["deltas"]["last"]
    t0 = time.monotonic()
    status, reply = d.call("GET", f"/v1/deltas?since={last}&wait=1")
    assert status == 200 and reply["deltas"] == [] and reply["next"] == last
    assert 0.9 <= time.monotonic() - t0 < 5


def test_apply_while_a_cli_apply_holds_the_state_is_409(daemon, netc_bin, tmp_path):
    """The daemon and `netc apply` share one apply lock per state directory:
    while a CLI apply holds it (planned, not yet pushed), the daemon's apply
    is refused with 409 `apply_running` naming the holder, commits nothing,
    and the daemon keeps answering."""
    state = tmp_path / "state"
    d = daemon(QUICKSTART, state=state)
    (tmp_path / "none.toml").write_text("# no device is reached\n")
    intent = tmp_path / "intent.ndl"
    intent.write_text(QUICKSTART.read_text() + NEW_VM)
    cli = subprocess.Popen(
        [netc_bin, "apply", "--state", str(state), "--inventory", str(tmp_path / "none.toml"), str(intent)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=dict(os.environ, NETC_APPLY_HOLD_AFTER_PLAN="1"),
    )
    try:
        deadline = time.monotonic() + 120
        err = ""
        while "holding after planning" not in err and time.monotonic() < deadline:
            line = cli.stderr.readline()
            if not line:
                break
            err += line
        assert "holding after planning" in err, err
        status, reply = d.call("POST", "/v1/apply", {"paths": [str(intent)], "verify": False})
        assert status == 409, reply
        assert reply["error"]["code"] == "apply_running", reply
        assert f"pid {cli.pid}" in reply["error"]["message"], reply
        status, st = d.call("GET", "/v1/status")
        assert status == 200 and st["generation"] == 0, st
    finally:
        out, err = cli.communicate("\n", timeout=120)
    assert cli.returncode == 0, out + err
    with sqlite3.connect(state / "state.db") as c:
        commands = [r[0] for r in c.execute("SELECT command FROM generation ORDER BY id")]
    assert len(commands) == 1 and "serve" not in commands[0], commands  # the daemon committed nothing
