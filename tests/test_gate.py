"""One verdict on every path: the gate checks what is pushed, or says it did not.

Every example, and copies of the standard rules with a fault a rule author
could make, go through every path a user has to a verdict:

  * `netc verify INTENT --json`;
  * `netc compile INTENT --out D` then `netc verify --artifacts D INTENT --json`;
  * `netc plan --json` (fresh state) and `netc apply --json` (an empty
    inventory: nothing is pushed, the verdict is the gate's);
  * `netc serve`'s `POST /v1/plan` and `POST /v1/verify` (a real daemon on
    127.0.0.1, stopped by its pid);
  * the REPL's `:whatif FILE`.

The verdict documents must be equal (timings and the directory the cited
artifacts sit in aside). The rule faults must be refused by `plan` and
`apply` (exit 1, nothing committed). Every `file:line` a report cites must
name a file that exists after the command. "Not checked" (never "proven")
is what an invariant says when the artifacts hold nothing it reads.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from test_serve import Daemon as ServeDaemon

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = sorted(p.name for p in (REPO / "examples").iterdir() if (p / "intent.ndl").is_file())

pytestmark = pytest.mark.netc


def fault_anolis_synced(rules: Path) -> None:
    # the gateway ECMP follows the synced peer list, not the current one
    f = rules / "anolis.ndl"
    text = f.read_text()
    new = re.sub(
        r"(anolis_gateway\(c, gw\), anolis_cluster\(c, _, svc\), )anolis_current\(c, cur\)",
        r"\1anolis_synced(c, cur)",
        text,
    )
    assert new.count("anolis_synced(c, cur)") == 2, "the fault no longer applies to rules/anolis.ndl"
    f.write_text(new)


def fault_port_vni_any(rules: Path) -> None:
    # a host's ToR port admits every VNI of every host, not only its own
    f = rules / "overlay.ndl"
    text = f.read_text()
    old = "p4_port_vni(tor, p, vni) :- host_tenant(h, _, vni), host(h, _, tor, p)"
    assert old in text, "the fault no longer applies to rules/overlay.ndl"
    f.write_text(text.replace(old, "p4_port_vni(tor, p, vni) :- host_tenant(_, _, vni), host(h, _, tor, p)"))


# (name, example, fault, invariant it must violate)
FAULTS = [
    ("anolis-synced", "anolis", fault_anolis_synced, "ROUTE-1"),
    ("port-vni-any", "quickstart", fault_port_vni_any, "ISO-1"),
    ("port-vni-any-athena", "athena", fault_port_vni_any, "ISO-1"),
]

CASES = [(e, None) for e in EXAMPLES] + [(f[1], f) for f in FAULTS]
IDS = EXAMPLES + [f[0] for f in FAULTS]


def run(netc: str, *args: str, cwd: Path, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([netc, *args], capture_output=True, text=True, timeout=timeout, cwd=cwd)


def doc(stdout: str) -> dict:
    assert stdout.strip().startswith("{"), stdout[:500]
    return json.loads(stdout)


CITED_DIR = re.compile(r"(/[^\s\[\]\"]*?/verified/(?:candidate-[0-9a-f]{12}|gen-\d+)|\.netc/verified/(?:candidate-[0-9a-f]{12}|gen-\d+))/")


def normal(report: dict, out_dir: Path | None = None) -> dict:
    """The report without timings, with the cited artifact directory named `<A>`."""
    r = json.loads(json.dumps(report))
    r.pop("stats", None)
    text = json.dumps(r)
    text = CITED_DIR.sub("<A>/", text)
    if out_dir is not None:
        text = text.replace(str(out_dir) + "/", "<A>/")
    return json.loads(text)


def statuses_from_text(text: str) -> dict[str, tuple[str, str]]:
    """(status, detail) per invariant from a human report."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"^(proven|VIOLATED|not checked)\s+(\S+)\s+(.*)$", line)
        if m:
            status = {"proven": "proven", "VIOLATED": "violated", "not checked": "not_checked"}[m.group(1)]
            out[m.group(2)] = (status, m.group(3).strip())
    return out


def cited_files(report: dict) -> list[str]:
    """Every `path:line` a report cites."""
    found = re.findall(r"((?:/|\.netc/)[^\s\[\]\"]+?\.(?:flows|groups|txtpb|json|csv|ndl)):\d+", json.dumps(report))
    return sorted(set(found))


class Daemon(ServeDaemon):
    """`netc serve --no-push` (test_serve.py's, stopped by its pid), with the rules under test."""

    def __init__(self, netc: str, state: Path, rules: Path | None, intent: Path, cwd: Path):
        extra = ("--rules", str(rules)) if rules is not None else ()
        super().__init__(netc, state, intent, extra=extra, cwd=cwd)

    def post(self, path: str, body: dict) -> tuple[int, dict]:
        return self.call("POST", path, body, timeout=300)


@pytest.mark.parametrize(("example", "fault"), CASES, ids=IDS)
def test_every_path_gives_one_verdict(netc_bin: str, tmp_path: Path, example: str, fault) -> None:
    intent = REPO / "examples" / example / "intent.ndl"
    rules_args: list[str] = []
    rules = None
    if fault is not None:
        rules = tmp_path / "rules"
        shutil.copytree(REPO / "rules", rules)
        fault[2](rules)
        rules_args = ["--rules", str(rules)]
    work = tmp_path / "work"
    work.mkdir()
    out = tmp_path / "out"
    r = run(netc_bin, "compile", *rules_args, str(intent), "--out", str(out), cwd=work)
    assert r.returncode == 0, r.stderr
    inventory = tmp_path / "none.toml"
    inventory.write_text("# no device is reached: the gate's verdict is all this run is about\n")
    state = tmp_path / "s-apply"
    repl_input = f":whatif {intent}\n"
    commands = {
        "verify INTENT": (["verify", "--json", *rules_args, str(intent)], None),
        "verify --artifacts": (["verify", "--json", *rules_args, "--artifacts", str(out), str(intent)], None),
        "plan": (["plan", "--json", "--state", str(tmp_path / "s-plan"), *rules_args, str(intent)], "report"),
        "apply": (
            ["apply", "--json", "--state", str(state), "--inventory", str(inventory), *rules_args, str(intent)],
            "report",
        ),
        "repl": (["repl", "--state", str(tmp_path / "s-repl"), *rules_args, str(intent)], None),
    }

    def one(name: str) -> subprocess.CompletedProcess:
        args, _ = commands[name]
        feed = repl_input if name == "repl" else None
        return subprocess.run([netc_bin, *args], input=feed, capture_output=True, text=True, timeout=900, cwd=work)

    def serve() -> dict[str, tuple[int, dict]]:
        d = Daemon(netc_bin, tmp_path / "s-serve", rules, intent, work)
        try:
            return {"serve plan": d.post("/v1/plan", {}), "serve verify": d.post("/v1/verify", {})}
        finally:
            d.stop()

    # two at a time, the daemon (two verifications) first: the machine's two
    # cores, and a large example verifies for minutes
    with ThreadPoolExecutor(max_workers=2) as pool:
        served = pool.submit(serve)
        done = dict(zip(commands, pool.map(one, commands)))
        answers = served.result()
    reports: dict[str, dict] = {}
    codes: dict[str, int] = {}
    for name, (_, field) in commands.items():
        if name == "repl":
            continue
        r = done[name]
        codes[name] = r.returncode
        reports[name] = doc(r.stdout)[field] if field else doc(r.stdout)
    r = done["repl"]
    assert r.returncode == 0, r.stderr
    assert "verdict: " in r.stdout, r.stdout
    whatif = statuses_from_text(r.stdout)
    for name, (status, body) in answers.items():
        assert status == 200, (name, body)
        codes[name] = 1 if body["verdict"] == "violated" else 0
        reports[name] = body["report"]

    # every document cites only files that exist now that every command has ended
    for path, report in reports.items():
        for f in cited_files(report):
            p = Path(f) if f.startswith("/") else work / f
            assert p.is_file(), (path, f)

    first = normal(reports["verify INTENT"])
    for path, report in reports.items():
        assert normal(report, out) == first, path
    violated = any(v["status"] == "violated" for v in first["verdicts"])
    for path, code in codes.items():
        assert code == (1 if violated else 0), (path, code)
    assert whatif == {v["invariant"]: (v["status"], v["detail"]) for v in first["verdicts"]}

    # no counterexample without an intent line behind it
    for v in first["verdicts"]:
        for cx in v["counterexamples"]:
            assert any(re.search(r"intent\.ndl:\d+", c) for c in cx["cites"]), cx

    if fault is None:
        assert not violated, [v for v in first["verdicts"] if v["status"] == "violated"][:1]
        return
    st = {v["invariant"]: v["status"] for v in first["verdicts"]}
    assert st[fault[3]] == "violated", st
    # refused: nothing was committed
    r = run(netc_bin, "history", "--json", "--state", str(state), cwd=work)
    assert r.returncode != 0 or json.loads(r.stdout) in ([], {"generations": []}), r.stdout


def test_vacuous_only_without_such_devices(netc_bin: str, tmp_path: Path) -> None:
    """Switch checks say "not checked" only when there is no switch; a
    switch the relations name without its request is refused."""
    out = tmp_path / "out"
    intent = REPO / "examples" / "quickstart" / "intent.ndl"
    assert run(netc_bin, "compile", str(intent), "--out", str(out), cwd=tmp_path).returncode == 0
    rep = doc(run(netc_bin, "verify", "--json", "--artifacts", str(out), str(intent), cwd=tmp_path).stdout)
    st = {v["invariant"]: v for v in rep["verdicts"]}
    assert st["ACL-2"]["status"] == "proven" and "4 switches" in st["ACL-2"]["detail"]
    assert st["AFF-3"]["status"] == "not_checked" and "no NF chain taps" in st["AFF-3"]["detail"]
    assert all("vacuous" not in v["detail"] for v in rep["verdicts"])

    # no switch at all: the switch invariants are not checked, not proven
    bare = tmp_path / "bare"
    shutil.copytree(out, bare)
    shutil.rmtree(bare / "p4")
    for f in (bare / "relations").glob("p4_*.csv"):
        f.write_text("")
    r = run(netc_bin, "verify", "--json", "--artifacts", str(bare), str(intent), cwd=tmp_path)
    rep = doc(r.stdout)
    st = {v["invariant"]: v for v in rep["verdicts"]}
    for inv in ["ACL-2", "ROUTE-1", "REACH-2"]:
        assert st[inv]["status"] == "not_checked" and "no P4 switches" in st[inv]["detail"], st[inv]
    junit = tmp_path / "j.xml"
    run(netc_bin, "verify", "--artifacts", str(bare), str(intent), "--junit", str(junit), cwd=tmp_path)
    xml = junit.read_text()
    for inv in ["ACL-2", "ROUTE-1", "REACH-2", "AFF-2", "PLAN-1", "AFF-3"]:
        case = re.search(rf'<testcase [^>]*name="{inv}">(.*?)</testcase>', xml, re.S)
        assert case and "<skipped" in case.group(1), (inv, xml)

    # the requests gone but the rows naming the switches kept: refused, never "0 switches"
    partial = tmp_path / "partial"
    shutil.copytree(out, partial)
    gone = sorted((partial / "p4").glob("*.txtpb"))[0]
    gone.unlink()
    r = run(netc_bin, "verify", "--json", "--artifacts", str(partial), str(intent), cwd=tmp_path)
    assert r.returncode == 2, r.stdout
    assert f"`{gone.stem}`" in r.stderr and "incomplete" in r.stderr, r.stderr


def test_without_intent_switch_edges_are_not_called_proven(netc_bin: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    intent = REPO / "examples" / "quickstart" / "intent.ndl"
    assert run(netc_bin, "compile", str(intent), "--out", str(out), cwd=tmp_path).returncode == 0
    rep = doc(run(netc_bin, "verify", "--json", "--artifacts", str(out), cwd=tmp_path).stdout)
    st = {v["invariant"]: v for v in rep["verdicts"]}
    for inv in ["ISO-1", "ISO-2"]:
        assert st[inv]["status"] == "not_checked" and "need the intent" in st[inv]["detail"], st[inv]


def test_cookies_are_printed_as_the_files_print_them(netc_bin: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    intent = REPO / "examples" / "quickstart" / "intent.ndl"
    assert run(netc_bin, "compile", str(intent), "--out", str(out), cwd=tmp_path).returncode == 0
    # h1's ingress classifies web1's packets into globex's VNI: an ISO-1 path counterexample
    flows = out / "ovs" / "h1.flows"
    lines = flows.read_text().splitlines()
    i = next(i for i, line in enumerate(lines) if "in_port=10" in line and ",ip," in line and "load:5001->NXM_NX_REG6" in line)
    lines[i] = lines[i].replace("load:5001->NXM_NX_REG6", "load:5002->NXM_NX_REG6")
    flows.write_text("\n".join(lines) + "\n")
    r = run(netc_bin, "verify", "--json", "--artifacts", str(out), str(intent), cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    hops = [h for v in doc(r.stdout)["verdicts"] for cx in v["counterexamples"] for p in cx["paths"] for h in p["hops"]]
    cited = [(m.group(1), m.group(2), int(m.group(3))) for h in hops for m in [re.search(r"cookie=(\S+) .*\[(.*\.flows):(\d+)\]", h)] if m]
    assert cited, hops
    for cookie, file, line in cited:
        text = Path(file).read_text().splitlines()[line - 1]
        assert int(re.search(r"cookie=(0x[0-9a-f]+)", text).group(1), 16) == int(cookie, 16), (cookie, text)
        assert cookie.startswith("0x"), cookie


def test_daemon_plans_against_what_a_cli_apply_committed(netc_bin: str, tmp_path: Path) -> None:
    """`serve` takes in a generation the CLI committed before it plans; a
    plan names its base, and applying against a base that moved is refused."""
    state = tmp_path / "state"
    inventory = tmp_path / "none.toml"
    inventory.write_text("# no device is reached\n")
    intent = tmp_path / "intent.ndl"
    full = (REPO / "examples" / "quickstart" / "intent.ndl").read_text()
    intent.write_text(full)
    r = run(netc_bin, "apply", "--state", str(state), "--inventory", str(inventory), str(intent), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    d = Daemon(netc_bin, state, None, intent, tmp_path)
    try:
        r = run(netc_bin, "plan", "--json", "--server", d.url, "--state", str(state), str(intent), cwd=tmp_path)
        first = doc(r.stdout)
        assert r.returncode == 0 and first["base"] == 1 and first["devices"] == {}, first
        # the CLI removes globex's app2 (h4's only VM) behind the daemon's back
        less = [line for line in full.splitlines() if '"app2"' not in line]
        assert len(less) == len(full.splitlines()) - 2
        intent.write_text("\n".join(less) + "\n")
        r = run(netc_bin, "apply", "--state", str(state), "--inventory", str(inventory), str(intent), cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        # the original intent again, through the daemon: planned against generation 2, the VM comes back
        intent.write_text(full)
        r = run(netc_bin, "plan", "--json", "--server", d.url, "--state", str(state), str(intent), cwd=tmp_path)
        second = doc(r.stdout)
        assert r.returncode == 0 and second["base"] == 2, second
        assert second["devices"].get("h4", {}).get("added", 0) > 0, second["devices"]
        local = doc(run(netc_bin, "plan", "--json", "--state", str(state), str(intent), cwd=tmp_path).stdout)
        assert {k: (v["added"], v["removed"]) for k, v in second["devices"].items()} == {
            k: (v["added"], v["removed"]) for k, v in local["devices"].items()
        }
        # applying the first plan (base 1) is refused: its base moved
        status, body = d.post("/v1/apply", {"files": [{"name": str(intent), "text": intent.read_text()}], "base": 1})
        assert status == 409 and body["error"]["code"] == "base_moved", body
    finally:
        d.stop()


def test_rollback_after_a_move_and_an_acl_change_is_not_a_false_black_hole(netc_bin: str, tmp_path: Path) -> None:
    """Rolling back a VM move made together with an ACL change: packets the
    rolled-back ACL drops may be dropped while that ACL is still in place;
    PLAN-1 flags only what both generations deliver and a step loses."""
    base = (REPO / "examples" / "quickstart" / "intent.ndl").read_text()
    web3 = 'vm("acme", "web3", 02:00:00:00:01:05, 10.1.1.13, "h2").\nvm_port("h2", "acme", "web3", 11).\n'
    moved = (
        (base + web3)
        .replace('vm("acme", "web2", 02:00:00:00:01:02, 10.1.1.12, "h3")', 'vm("acme", "web2", 02:00:00:00:01:02, 10.1.1.12, "h4")')
        .replace('vm_port("h3", "acme", "web2", 10)', 'vm_port("h4", "acme", "web2", 11)')
    ) + 'acl("acme", "no-ssh-from-db", 160, 10.1.2.0/24, 10.1.1.0/24, 6, 22, 22, "deny").\n'
    assert moved.count('"h4"') > base.count('"h4"')
    state, inventory, intent = tmp_path / "st", tmp_path / "none.toml", tmp_path / "intent.ndl"
    inventory.write_text("# no device is reached\n")
    for text in (base, base + web3, moved):
        intent.write_text(text)
        r = run(netc_bin, "apply", "--state", str(state), "--inventory", str(inventory), str(intent), cwd=tmp_path)
        assert r.returncode == 0, r.stdout + r.stderr
    r = run(netc_bin, "rollback", "--json", "2", "--state", str(state), cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    report = doc(r.stdout)["report"]
    plan1 = next(v for v in report["verdicts"] if v["invariant"] == "PLAN-1")
    assert plan1["status"] == "proven" and "1 VM move" in plan1["detail"], plan1

    # a real black hole in the same kind of change is still found: the move again, in the flat order (no hairpin)
    intent.write_text(moved)
    r = subprocess.run(
        [netc_bin, "plan", "--json", "--state", str(state), str(intent)],
        capture_output=True, text=True, timeout=600, cwd=tmp_path, env={**os.environ, "NETC_ROLLOUT": "flat"},
    )
    flat = next(v for v in doc(r.stdout)["report"]["verdicts"] if v["invariant"] == "PLAN-1")
    assert flat["status"] == "violated", flat


def test_rollback_restores_the_labs_topology(netc_bin: str, tmp_path: Path) -> None:
    """After `netc rollback`, the lab (real OVS daemons, stopped by pid) holds
    the rolled-back generation's hosts and VM ports, so `netc trace` follows it."""
    if shutil.which("ovs-vswitchd") is None:
        pytest.fail("Open vSwitch is not installed (scripts/test.sh installs it)")
    base = (REPO / "examples" / "quickstart" / "intent.ndl").read_text()
    intent = tmp_path / "intent.ndl"
    state = tmp_path / "st"
    try:
        intent.write_text(base)
        assert run(netc_bin, "apply", "--state", str(state), str(intent), cwd=tmp_path).returncode == 0
        intent.write_text(base + 'vm("acme", "web3", 02:00:00:00:01:05, 10.1.1.13, "h2").\nvm_port("h2", "acme", "web3", 11).\n')
        r = run(netc_bin, "apply", "--state", str(state), str(intent), cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        r = run(netc_bin, "trace", "--state", str(state), "web1", "web3", "tcp/80", cwd=tmp_path)
        assert r.returncode == 0 and "delivered to acme/web3" in r.stdout, r.stdout + r.stderr
        r = run(netc_bin, "rollback", "--state", str(state), cwd=tmp_path)
        assert r.returncode == 0, r.stdout + r.stderr
        topo = json.loads((state / "lab" / "topology.json").read_text())
        h2 = next(h for h in topo["hosts"] if h["name"] == "h2")
        assert [p["vm"] for p in h2["ports"]] == ["db1"], h2
        r = run(netc_bin, "trace", "--state", str(state), "web1", "web3", "tcp/80", cwd=tmp_path)
        assert r.returncode == 2 and "neither a VM of the lab" in r.stderr, r.stdout + r.stderr
        r = run(netc_bin, "trace", "--state", str(state), "web1", "web2", "tcp/80", cwd=tmp_path)
        assert r.returncode == 0, r.stdout + r.stderr
    finally:
        run(netc_bin, "lab", "stop", "--state", str(state), cwd=tmp_path)


# a VM joining quickstart's VIP as a third DIP
NEW_DIP = (
    'vm("acme", "web3", 02:00:00:00:01:05, 10.1.1.13, "h2").\n'
    'vm_port("h2", "acme", "web3", 11).\n'
    'dip_pool(203.0.113.10, 6, 80, "acme", "web3", 8080, 1).\n'
)


def test_a_routine_dip_addition_and_its_rollback_need_no_force(netc_bin: str, tmp_path: Path) -> None:
    """Adding a DIP to quickstart's VIP remaps flows on the stateless HMux
    (agg1): AFF-2 names the endpoint; `--accept AFF-2:KEY --reason` accepts
    exactly that, for this change, recorded with who and why — no --force.
    The software Mux keeps its connections and is not flagged."""
    base = (REPO / "examples" / "quickstart" / "intent.ndl").read_text()
    more = base + NEW_DIP
    state, inventory, intent = tmp_path / "st", tmp_path / "none.toml", tmp_path / "intent.ndl"
    inventory.write_text("# no device is reached\n")
    common = ["--state", str(state), "--inventory", str(inventory)]
    intent.write_text(base)
    assert run(netc_bin, "apply", *common, str(intent), cwd=tmp_path).returncode == 0
    intent.write_text(more)
    # the change made at once violates AFF-2; plan offers it staged through
    # the SMuxes (tests/test_staged_change.py), so it exits 0
    r = run(netc_bin, "plan", "--json", "--state", str(state), str(intent), cwd=tmp_path)
    assert r.returncode == 0 and doc(r.stdout)["staged"]["verdict"] == "proven", r.stdout
    aff2 = next(v for v in doc(r.stdout)["report"]["verdicts"] if v["invariant"] == "AFF-2")
    assert aff2["status"] == "violated", aff2
    assert {c["key"] for c in aff2["counterexamples"]} == {"203.0.113.10:80/6"}, aff2
    assert all("`agg1`" in c["summary"] for c in aff2["counterexamples"]), aff2

    waiver = "AFF-2:203.0.113.10:80/6"
    for bad, says in [
        (["--accept", waiver], "--reason"),
        (["--accept", "AFF-2:198.51.100.1:80/6", "--reason", "x"], "accepts no violation"),
        (["--accept", "ISO-1:acme", "--reason", "x"], "cannot be accepted"),
        (["--accept", "AFF-2", "--reason", "x"], "INVARIANT:KEY"),
    ]:
        r = run(netc_bin, "apply", *common, *bad, str(intent), cwd=tmp_path)
        assert r.returncode == 2 and says in r.stderr, (bad, r.stderr)
    env = {k: v for k, v in os.environ.items() if k not in ("USER", "LOGNAME")}
    env["USER"] = "alice"
    r = subprocess.run(
        [netc_bin, "apply", "--json", *common, "--accept", waiver, "--reason", "web3 joins the pool", str(intent)],
        capture_output=True, text=True, timeout=600, cwd=tmp_path, env=env,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    done = doc(r.stdout)
    assert done["generation"] == 2 and done["forced"] is False and done["verdict"] == "proven", done
    aff2 = next(v for v in done["report"]["verdicts"] if v["invariant"] == "AFF-2")
    assert aff2["status"] == "accepted" and "by alice: web3 joins the pool" in aff2["detail"], aff2
    rows = sqlite3.connect(state / "state.db").execute("SELECT id, forced, actor, note FROM generation").fetchall()
    assert rows[-1][:3] == (2, 0, "alice") and "accepted AFF-2:203.0.113.10:80/6" in rows[-1][3], rows
    assert "web3 joins the pool" in rows[-1][3], rows

    # rolling back removes the DIP: the same endpoint remaps again, accepted the same way
    r = run(netc_bin, "rollback", *common, "--accept", waiver, "--reason", "undo web3", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    note = sqlite3.connect(state / "state.db").execute("SELECT note FROM generation ORDER BY id DESC").fetchone()[0]
    assert note.startswith("rollback to 1; accepted AFF-2:203.0.113.10:80/6"), note


def test_the_daemon_takes_the_same_waivers(netc_bin: str, tmp_path: Path) -> None:
    base = (REPO / "examples" / "quickstart" / "intent.ndl").read_text()
    more = base + NEW_DIP
    state, inventory, intent = tmp_path / "st", tmp_path / "none.toml", tmp_path / "intent.ndl"
    inventory.write_text("# no device is reached\n")
    intent.write_text(base)
    assert run(netc_bin, "apply", "--state", str(state), "--inventory", str(inventory), str(intent), cwd=tmp_path).returncode == 0
    d = Daemon(netc_bin, state, None, intent, tmp_path)
    try:
        files = [{"name": str(intent), "text": more}]
        # as `netc plan`: the change made at once remaps agg1 (AFF-2), so it is staged
        status, body = d.post("/v1/plan", {"files": files})
        assert status == 200 and body["verdict"] == "proven" and body["staged"]["vips"] == ["203.0.113.10"], body
        aff2 = next(v for v in body["report"]["verdicts"] if v["invariant"] == "AFF-2")
        assert aff2["status"] == "violated", aff2
        # with the remap accepted, the change is made at once: nothing to stage
        status, body = d.post("/v1/plan", {"files": files, "accept": ["AFF-2:203.0.113.10:80/6"], "reason": "web3 joins"})
        assert status == 200 and body["verdict"] == "proven", body
        aff2 = next(v for v in body["report"]["verdicts"] if v["invariant"] == "AFF-2")
        assert aff2["status"] == "accepted" and body["staged"] is None, aff2
        status, body = d.post("/v1/plan", {"files": files, "accept": ["AFF-2:198.51.100.1:80/6"], "reason": "x"})
        assert status == 422 and body["error"]["code"] == "waiver_unused", body
        status, body = d.post("/v1/plan", {"files": files, "accept": ["AFF-2:203.0.113.10:80/6"]})
        assert status == 400 and "reason" in body["error"]["message"], body
    finally:
        d.stop()


def test_who_applied_is_recorded_without_user(netc_bin: str, tmp_path: Path) -> None:
    """A generation records the login name of whoever applied it, also where
    `USER` and `LOGNAME` are unset (a service, a container)."""
    import pwd

    state, inventory = tmp_path / "st", tmp_path / "none.toml"
    inventory.write_text("# no device is reached\n")
    env = {k: v for k, v in os.environ.items() if k not in ("USER", "LOGNAME")}
    r = subprocess.run(
        [netc_bin, "apply", "--state", str(state), "--inventory", str(inventory), str(REPO / "examples" / "quickstart" / "intent.ndl")],
        capture_output=True, text=True, timeout=600, cwd=tmp_path, env=env,
    )
    assert r.returncode == 0, r.stderr
    actor = sqlite3.connect(state / "state.db").execute("SELECT actor FROM generation").fetchone()[0]
    assert actor == pwd.getpwuid(os.geteuid()).pw_name != "unknown", actor


def test_a_fact_written_twice_is_one_fact_to_the_verifier(netc_bin: str, tmp_path: Path) -> None:
    """Facts are a set: an intent split over files that repeat a VM (or the
    whole intent given twice) is the same intent. The verifier used to trace
    each VM once per copy and report REACH-1 violations (a VM delivering "to
    its own in_port"), so `plan` refused an intent the engine reads as valid."""
    quick = (REPO / "examples" / "quickstart" / "intent.ndl").read_text()
    (tmp_path / "a.ndl").write_text(quick)
    (tmp_path / "b.ndl").write_text(quick)
    once = run(netc_bin, "verify", "--json", "a.ndl", cwd=tmp_path)
    twice = run(netc_bin, "verify", "--json", "a.ndl", "b.ndl", cwd=tmp_path)
    assert once.returncode == 0 and twice.returncode == 0, twice.stdout[-3000:] + twice.stderr
    s1, s2 = doc(once.stdout)["stats"], doc(twice.stdout)["stats"]
    assert s2["vms"] == s1["vms"] > 0 and s2["pairs"] == s1["pairs"], (s1, s2)
    assert s2["switches"] == s1["switches"] > 0 and s2["agents"] == s1["agents"] > 0, (s1, s2)
    r = run(netc_bin, "plan", "--state", "st", "a.ndl", "b.ndl", cwd=tmp_path)
    assert r.returncode == 0 and "verify: proven" in r.stdout, r.stdout[-3000:] + r.stderr
