"""`netc apply/plan --server URL` through a real `netc serve` that pushes.

Every daemon is a real `netc serve --json` process on 127.0.0.1 (ephemeral
port; its first stdout line gives url and pid) and is stopped by its pid;
every bridge is a real ovs-vswitchd (--enable-dummy) from tests/ovs_fixture.py,
checked with `ovs-ofctl dump-flows` by cookie against what the store says was
committed (test_apply.py's helpers).

What is asserted:
  * apply through the daemon puts exactly the committed generation on the
    bridges; a second apply is a warm change (`full_evaluations` stays 1,
    `last_input_changes` is the changed facts only), and `plan --server`
    prints the same JSON as the local `netc plan` on the same store;
  * an unreachable device: exit 1 naming it, the others put back, nothing
    committed, no delta published, the bridges unchanged;
  * kill -9 of the daemon after a push, restart: the state is recovered and
    the next apply converges (drift included);
  * a verifier violation is refused (exit 1, nothing pushed) and `--force`
    applies and records it;
  * bad intent prints the local command's diagnostics (file:line:col);
  * a wrong token, a refused connection and another netc version are
    clear exit-2 errors;
  * without --inventory the daemon pushes to the local lab, as `netc apply`.
"""

from __future__ import annotations

import http.server
import json
import os
import sqlite3
import subprocess
import threading
import time
from pathlib import Path

import pytest

from ovs_fixture import Fabric
from test_apply import (
    QS_HOSTS,
    QUICKSTART,
    ROOT,
    assert_bridges_hold,
    assert_store_consistent,
    changed_quickstart,
    committed,
    netc,
    write_inventory,
)
from test_serve import OwnedProcess


@pytest.fixture(scope="module")
def fabric():
    f = Fabric(QS_HOSTS)
    try:
        yield f
    finally:
        f.stop()


class Daemon(OwnedProcess):
    """`netc serve --json` on an ephemeral loopback port."""

    def __init__(self, state: Path, *args: str):
        self.state = state
        self.err = state.parent / f"serve-{time.monotonic_ns()}.err"
        self.proc = subprocess.Popen(
            [os.environ.get("NETC_BIN", str(ROOT / "target" / "release" / "netc")), "serve", "--json",
             "--listen", "127.0.0.1:0", "--state", str(state), *map(str, args)],
            stdout=subprocess.PIPE, stderr=open(self.err, "w"), text=True)
        self.lines: list[dict] = []
        got: dict = {}

        def read():
            for line in self.proc.stdout:
                ev = json.loads(line)
                self.lines.append(ev)
                if ev["event"] == "listening":
                    got["ev"] = ev

        self.reader = threading.Thread(target=read, daemon=True)
        self.reader.start()
        deadline = time.monotonic() + 90
        while "ev" not in got and time.monotonic() < deadline and self.proc.poll() is None:
            time.sleep(0.05)
        if "ev" not in got:
            self.stop()
            pytest.fail(f"netc serve did not start:\n{self.err.read_text()}")
        self.url = got["ev"]["url"]
        assert got["ev"]["pid"] == self.proc.pid
        self.token = Path(got["ev"]["token_file"]).read_text().strip()

    def status(self) -> dict:
        r = netc_status_via_http(self.url, self.token)
        return r



def netc_status_via_http(url: str, token: str, headers: dict | None = None) -> dict:
    import urllib.request
    req = urllib.request.Request(url + "/v1/status")
    req.add_header("Authorization", f"Bearer {token}")
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return {"status": r.status, **json.loads(r.read())}
    except urllib.error.HTTPError as e:
        return {"status": e.code, **json.loads(e.read())}


@pytest.fixture
def daemons():
    started: list[Daemon] = []

    def start(state: Path, *args) -> Daemon:
        d = Daemon(state, *args)
        started.append(d)
        return d

    yield start
    for d in started:
        d.stop()


def untimed(plan: dict) -> dict:
    """A plan's JSON without the verifier's running times (total and per phase: the only fields that may differ)."""
    plan["report"]["stats"].pop("millis")
    plan["report"]["stats"].pop("phases")
    return plan


def via(d: Daemon, *args) -> subprocess.CompletedProcess:
    return netc(*args[:1], "--server", d.url, "--state", d.state, *args[1:])


def test_apply_through_the_daemon_pushes_warm_and_prints_as_local(fabric, daemons, tmp_path):
    state = tmp_path / "state"
    inv = write_inventory(tmp_path / "inv.toml", {h: fabric.hosts[h].bridge for h in QS_HOSTS})
    d = daemons(state, "--inventory", inv)

    r = via(d, "apply", "--json", QUICKSTART)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["generation"] == 1 and out["verdict"] == "proven" and out["base"] is None
    assert sorted(p["device"] for p in out["pushed"]) == sorted(QS_HOSTS)
    assert assert_bridges_hold(fabric, state) == 1

    # the same question asked locally and through the daemon: the same answer
    changed = changed_quickstart(tmp_path)
    local = netc("plan", "--json", "-v", "--state", state, changed)
    remote = via(d, "plan", "--json", "-v", changed)
    assert local.returncode == remote.returncode == 0, local.stderr + remote.stderr
    assert untimed(json.loads(remote.stdout)) == untimed(json.loads(local.stdout))
    assert set(json.loads(remote.stdout)["devices"]) == {"h2"}
    human_local = netc("plan", "--state", state, changed)
    assert via(d, "plan", changed).stdout == human_local.stdout

    r = via(d, "apply", changed)
    assert r.returncode == 0, r.stderr
    assert "applied generation 2: 4 devices pushed" in r.stdout, r.stdout
    assert assert_bridges_hold(fabric, state) == 2
    st = d.status()
    assert st["counters"]["full_evaluations"] == 1, st["counters"]  # never recompiled from scratch
    assert st["counters"]["warm_changes"] == 2
    assert st["counters"]["last_input_changes"] == 2  # the one vm_port fact out, its new version in
    assert st["push"] == "inventory" and st["generation"] == 2

    # nothing to change: no generation, and drift is repaired as netc apply does
    fabric.hosts["h3"].ofctl("del-flows", "table=0")
    r = via(d, "apply", changed)
    assert r.returncode == 0 and "no changes: devices hold generation 2" in r.stdout, r.stdout + r.stderr
    assert assert_bridges_hold(fabric, state) == 2
    with sqlite3.connect(state / "state.db") as c:
        cmd = c.execute("SELECT command FROM generation WHERE id = 2").fetchone()[0]
    assert cmd == "netc serve: POST /v1/apply"
    assert_store_consistent(state)
    applied = [e for e in d.lines if e["event"] == "applied"]
    assert [(e["generation"], e["committed"]) for e in applied] == [(1, True), (2, True), (2, False)]
    assert any(e["event"] == "request" and e["path"] == "/v1/apply" and e["status"] == 200 for e in d.lines)


def test_unreachable_device_aborts_cleanly_through_the_daemon(fabric, daemons, tmp_path):
    state = tmp_path / "state"
    bridges = {h: fabric.hosts[h].bridge for h in QS_HOSTS}
    good = write_inventory(tmp_path / "inv.toml", bridges)
    d = daemons(state, "--inventory", good)
    assert via(d, "apply", QUICKSTART).returncode == 0
    g = assert_bridges_hold(fabric, state)
    d.stop()

    bad = write_inventory(tmp_path / "bad.toml", {**bridges, "h3": f"unix:{tmp_path}/missing.mgmt"})
    d = daemons(state, "--inventory", bad)
    last_delta = d.status()["deltas"]["last"]
    changed = tmp_path / "changed.ndl"
    changed.write_text(QUICKSTART.read_text().replace(
        'acl("acme", "no-ssh-to-db", 150,', 'acl("acme", "no-ssh-to-db", 160,'))
    r = via(d, "apply", "--json", changed)
    assert r.returncode == 1, r.stdout + r.stderr
    out = json.loads(r.stdout)
    assert out["error"]["device"] == "h3" and out["committed"] is False
    assert "missing.mgmt" in out["error"]["address"]
    assert "h1" in out["restored"] and "h2" in out["restored"]
    assert "device `h3`" in r.stderr and "nothing was committed" in r.stderr
    assert assert_bridges_hold(fabric, state) == g  # every bridge holds the previous generation
    assert_store_consistent(state)
    st = d.status()
    assert st["generation"] == g and st["deltas"]["last"] == last_delta  # nothing committed or published
    # the session went back too: a plan against it still sees the whole change
    r = via(d, "plan", "--json", changed)
    assert r.returncode == 0 and json.loads(r.stdout)["devices"], r.stdout + r.stderr


def test_kill9_after_a_push_then_restart_recovers_and_converges(fabric, daemons, tmp_path):
    state = tmp_path / "state"
    inv = write_inventory(tmp_path / "inv.toml", {h: fabric.hosts[h].bridge for h in QS_HOSTS})
    d = daemons(state, "--inventory", inv)
    changed = changed_quickstart(tmp_path)
    assert via(d, "apply", changed).returncode == 0
    g = assert_bridges_hold(fabric, state)
    d.kill9()

    d2 = daemons(state, "--inventory", inv)
    st = d2.status()
    assert st["generation"] == g and st["files"] == [str(changed)]
    assert d2.lines[0]["generation"] == g
    # drift while no daemon ran, and a new change: the next apply converges
    fabric.hosts["h1"].ofctl("del-flows", "table=0")
    r = via(d2, "apply", "--json", QUICKSTART)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["generation"] == g + 1
    assert assert_bridges_hold(fabric, state) == g + 1
    assert_store_consistent(state)
    assert d2.status()["counters"]["full_evaluations"] == 1


def test_violation_is_refused_then_forced_through_the_daemon(fabric, daemons, tmp_path):
    state = tmp_path / "state"
    inv = write_inventory(tmp_path / "inv.toml", {h: fabric.hosts[h].bridge for h in QS_HOSTS})
    rules = tmp_path / "rules"
    rules.mkdir()
    for f in (ROOT / "rules").glob("*.ndl"):
        (rules / f.name).write_text(f.read_text())
    (rules / "zz_fault.ndl").write_text(  # every VM may also reach the other tenant's VNI (ISO-1)
        'ovs_flow(h, 0, 200, cat("in_port=1,tun_id=", to_string(v2)), '
        'cat("load:", to_string(v1), "->NXM_NX_REG6[],resubmit(,40)"), 1) :-\n'
        '    vm(t1, _, _, _, h), tenant(t1, v1), tenant(t2, v2), t1 != t2.\n')
    d = daemons(state, "--inventory", inv, "--rules", rules)
    before = {h: fabric.hosts[h].ofctl("dump-flows", "--no-stats") for h in QS_HOSTS}
    r = via(d, "apply", QUICKSTART)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "VIOLATED" in r.stdout and "refused" in r.stderr and "nothing was pushed" in r.stderr
    assert {h: fabric.hosts[h].ofctl("dump-flows", "--no-stats") for h in QS_HOSTS} == before
    assert committed(state)[0] is None
    assert d.status()["generation"] == 0

    r = via(d, "apply", "--force", "--json", QUICKSTART)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["forced"] is True and out["verdict"] == "violated"
    assert assert_bridges_hold(fabric, state) == out["generation"]
    r = netc("history", "--json", "--state", state)
    last = json.loads(r.stdout)[-1]
    assert last["forced"] is True and last["verdict"] == "violated"


def test_bad_intent_token_connection_and_version_errors(daemons, tmp_path):
    state = tmp_path / "state"
    d = daemons(state, "--no-push", QUICKSTART)
    bad = tmp_path / "bad.ndl"
    bad.write_text(QUICKSTART.read_text() + 'vm("acme", "x"\n')
    local = netc("plan", "--state", tmp_path / "none", bad)
    remote = via(d, "plan", bad)
    assert local.returncode == remote.returncode == 1
    assert f"{bad}:" in remote.stderr and remote.stderr == local.stderr
    ghost = tmp_path / "ghost.ndl"
    ghost.write_text(QUICKSTART.read_text() + '\nvm("acme", "ghost", 02:00:00:00:09:09, 10.1.1.99, "h99").\n')
    local = netc("plan", "--state", tmp_path / "none2", ghost)
    remote = via(d, "apply", ghost)
    assert local.returncode == remote.returncode == 1
    assert "problem(s) in the intent" in remote.stderr and f"{ghost}:" in remote.stderr, remote.stderr
    assert remote.stderr == local.stderr

    wrong = tmp_path / "wrong.token"
    wrong.write_text("not-the-token\n")
    r = netc("apply", "--server", d.url, "--token-file", wrong, QUICKSTART)
    assert r.returncode == 2 and "refused the token" in r.stderr
    r = netc("apply", "--server", d.url, "--state", tmp_path / "nowhere", QUICKSTART)
    assert r.returncode == 2 and "no token" in r.stderr and "serve.token" in r.stderr
    env_ok = subprocess.run([str(x) for x in [os.environ.get("NETC_BIN", ROOT / "target" / "release" / "netc"),
                             "plan", "--server", d.url, QUICKSTART]],
                            capture_output=True, text=True, timeout=120, env=dict(os.environ, NETC_TOKEN=d.token),
                            cwd=tmp_path)
    assert env_ok.returncode == 0, env_ok.stderr

    # the daemon refuses a client that says it is another netc
    st = netc_status_via_http(d.url, d.token, {"Netc-Version": "0.0.0-other"})
    assert st["status"] == 409 and st["error"]["code"] == "version_mismatch"

    # nothing listens: refused connection, clearly
    r = netc("plan", "--server", "http://127.0.0.1:1", "--state", state, QUICKSTART)
    assert r.returncode == 2 and "cannot reach the daemon" in r.stderr and "netc serve" in r.stderr
    r = netc("plan", "--server", "https://127.0.0.1:1", "--state", state, QUICKSTART)
    assert r.returncode == 2 and "https is not supported" in r.stderr
    r = netc("apply", "--server", d.url, "--inventory", tmp_path / "x.toml", QUICKSTART)
    assert r.returncode == 2 and "--inventory" in r.stderr

    # a daemon of another netc version (an HTTP server on loopback that answers as one)
    class Old(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            body = json.dumps({"generation": 0, "version": "0.0.1", "api": 1}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    srv = http.server.HTTPServer(("127.0.0.1", 0), Old)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        r = netc("apply", "--server", f"http://127.0.0.1:{srv.server_port}", "--state", state, QUICKSTART)
    finally:
        srv.shutdown()
        srv.server_close()
    assert r.returncode == 2 and "version mismatch" in r.stderr and "0.0.1" in r.stderr, r.stderr


def test_without_inventory_the_daemon_pushes_to_the_local_lab(daemons, tmp_path):
    state = tmp_path / "state"
    d = daemons(state)
    try:
        r = via(d, "apply", "--json", QUICKSTART)
        assert r.returncode == 0, r.stderr
        out = json.loads(r.stdout)
        assert sorted(p["device"] for p in out["pushed"]) == sorted(QS_HOSTS)
        assert all(p["route"] == "ovs" and str(state.resolve() / "lab") in p["address"] for p in out["pushed"])
        # netc status reads the routes the generation recorded and compares the bridges
        r = netc("status", "--json", "--state", state)
        assert r.returncode == 0, r.stdout + r.stderr
        assert all(x["state"] == "in-sync" for x in json.loads(r.stdout)["devices"])
        assert d.status()["push"] == "lab"
    finally:
        d.stop()
        s = netc("lab", "stop", "--state", state)
        assert s.returncode == 0, s.stderr
