"""The mutation suite: one realistic fault per mutant in the pushed
artifacts of the examples, verified the way a user runs it
(`netc verify --artifacts DIR INTENT`), with the catch rate per kind.

Each example is compiled once (`netc compile`); each mutant edits a copy of
its artifact files as text — what a renderer bug or a hand edit would push —
and is classified by the verdict:

- caught: exit 1, a violated invariant of those the kind must break, with a
  counterexample that cites an artifact line of the edited file;
- refused: exit 2 (an input error: what the device itself would refuse);
- proven: exit 0 — a fault the verifier missed;
- other: any other outcome (a crash, an unexpected invariant).

Benign kinds edit without changing what the devices do (line order, a
cookie, blank lines); any verdict but proven is a false alarm.

    python3 bench/mutants.py [--netc PATH] [--examples a,b] [--kinds k1,k2]

prints the table (Markdown) and exits 1 on a missed mutant or a false
alarm. `tests/test_mutation_suite.py` runs it in CI; docs/mutation.md
keeps the latest table.
"""

from __future__ import annotations

import argparse
import codecs
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# duet's 708 VMs take minutes per verification: left out of the suite
EXAMPLES = ["quickstart", "athena", "ananta", "yoda", "rubik", "andromeda", "nfchain"]


@dataclass
class Mutant:
    kind: str
    example: str
    file: str  # relative to the artifact directory
    edit: Callable[[str], str]
    expect: tuple[str, ...]  # invariants one of which must be violated (empty: benign)
    what: str


def intent(example: str) -> Path:
    return REPO / "examples" / example / "intent.ndl"


def lines_of(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def without_line(i: int) -> Callable[[str], str]:
    return lambda t: "".join(x for j, x in enumerate(lines_of(t)) if j != i)


def replace_line(i: int, new: str) -> Callable[[str], str]:
    return lambda t: "".join(new if j == i else x for j, x in enumerate(lines_of(t)))


def insert_after(i: int, new: str) -> Callable[[str], str]:
    return lambda t: "".join(x + (new if j == i else "") for j, x in enumerate(lines_of(t)))


# ---------------------------------------------------------------- the kinds


def mcast_bucket_removed(d: Path, ex: str) -> Iterator[Mutant]:
    """A member's bucket dropped from its host's multicast group (type=all)."""
    for g in sorted((d / "ovs").glob("*.groups")):
        for i, line in enumerate(lines_of(g.read_text())):
            if "type=all" in line and "bucket=output:" in line:
                new = re.sub(r",bucket=output:\d+", "", line, count=1)
                yield Mutant("mcast-bucket-removed", ex, f"ovs/{g.name}", replace_line(i, new),
                             ("REACH-1",), f"{g.name}:{i + 1} loses its first bucket")


def mcast_receive_flow_removed(d: Path, ex: str) -> Iterator[Mutant]:
    """A member host's table 40 flow for a group deleted."""
    for f in sorted((d / "ovs").glob("*.flows")):
        for i, line in enumerate(lines_of(f.read_text())):
            if line.startswith("table=40,") and re.search(r"nw_dst=2(2[4-9]|3\d)\.", line):
                yield Mutant("mcast-rx-flow-removed", ex, f"ovs/{f.name}", without_line(i),
                             ("REACH-1",), f"{f.name}:{i + 1} deleted")


def port_number(escaped: str) -> int:
    """A P4Runtime port as the request writes it (bytes, C-escaped)."""
    return int.from_bytes(codecs.escape_decode(escaped.encode())[0], "big")


def mcast_replica_removed(d: Path, ex: str) -> Iterator[Mutant]:
    """A ToR's replica toward a member's host port removed (the first of each ToR)."""
    hp = d / "relations" / "p4_host_port.csv"
    host_ports = {(r[0], int(r[1])) for r in csv.reader(hp.open(), delimiter="\t")} if hp.exists() else set()
    for p in sorted((d / "p4").glob("*.txtpb")) if (d / "p4").is_dir() else []:
        text = p.read_text()
        for m in re.finditer(r'\n *replicas \{\n[^}]*port: "((?:[^"\\]|\\.)*)"\n *\}', text):
            if (p.stem, port_number(m.group(1))) not in host_ports:
                continue
            start, end = m.span()
            yield Mutant("mcast-replica-removed", ex, f"p4/{p.name}",
                         lambda t, s=start, e=end: t[:s] + t[e:],
                         ("REACH-1",), f"{p.name}: replica to host port {port_number(m.group(1))} removed")
            break  # one per switch


def hostlb_bucket_removed(d: Path, ex: str) -> Iterator[Mutant]:
    """The last bucket of a host load-balancer group removed on one host."""
    for g in sorted((d / "ovs").glob("*.groups")):
        for i, line in enumerate(lines_of(g.read_text())):
            if "selection_method=hash" in line and line.count("bucket=") >= 2:
                new = line.rstrip("\n").rsplit(",bucket=", 1)[0] + "\n"
                yield Mutant("hostlb-bucket-removed", ex, f"ovs/{g.name}", replace_line(i, new),
                             ("AFF-1",), f"{g.name}:{i + 1} loses its last bucket")


def hostlb_weight_changed(d: Path, ex: str) -> Iterator[Mutant]:
    """One bucket of a host load-balancer group weighted differently on one host."""
    for g in sorted((d / "ovs").glob("*.groups")):
        for i, line in enumerate(lines_of(g.read_text())):
            if "selection_method=hash" in line and "weight:1," in line:
                yield Mutant("hostlb-weight-changed", ex, f"ovs/{g.name}",
                             replace_line(i, line.replace("weight:1,", "weight:3,", 1)),
                             ("AFF-1",), f"{g.name}:{i + 1} first bucket weight 3")
                break


def group_undefined(d: Path, ex: str) -> Iterator[Mutant]:
    """A group a flow names deleted (OVS: OFPBAC_BAD_OUT_GROUP)."""
    for g in sorted((d / "ovs").glob("*.groups"))[:2]:
        if g.read_text().strip():
            yield Mutant("group-undefined", ex, f"ovs/{g.name}", without_line(0),
                         ("PUSH-1",), f"{g.name}:1 deleted")


def group_twice(d: Path, ex: str) -> Iterator[Mutant]:
    """A group line written twice (OVS: OFPGMFC_GROUP_EXISTS)."""
    for g in sorted((d / "ovs").glob("*.groups"))[:2]:
        first = g.read_text().split("\n", 1)[0]
        if first:
            yield Mutant("group-twice", ex, f"ovs/{g.name}", insert_after(0, first + "\n"),
                         ("PUSH-1",), f"{g.name}:1 duplicated")


def flow_duplicate_other_action(d: Path, ex: str) -> Iterator[Mutant]:
    """A table 30 flow written again with `drop` (OVS keeps the one added last)."""
    for f in sorted((d / "ovs").glob("*.flows"))[:2]:
        for i, line in enumerate(lines_of(f.read_text())):
            if line.startswith("table=30,priority=100,") and "actions=" in line:
                dup = line.split("actions=")[0] + "actions=drop\n"
                yield Mutant("flow-duplicate", ex, f"ovs/{f.name}", insert_after(i, dup),
                             ("PUSH-1",), f"{f.name}:{i + 1} duplicated with drop")
                break


def vm_delivery_removed(d: Path, ex: str) -> Iterator[Mutant]:
    """A VM's table 40 delivery flow deleted (its tenant's packets black-holed)."""
    for f in sorted((d / "ovs").glob("*.flows"))[:2]:
        for i, line in enumerate(lines_of(f.read_text())):
            if line.startswith("table=40,priority=100,") and re.search(r"nw_dst=10\.[\d.]+,actions=.*output:\d+$", line.strip()):
                yield Mutant("vm-delivery-removed", ex, f"ovs/{f.name}", without_line(i),
                             ("REACH-1",), f"{f.name}:{i + 1} deleted")
                break


def spoof_check_removed(d: Path, ex: str) -> Iterator[Mutant]:
    """A port's table 0 IP flow no longer checks the source address."""
    for f in sorted((d / "ovs").glob("*.flows"))[:1]:
        for i, line in enumerate(lines_of(f.read_text())):
            if line.startswith("table=0,") and ",ip,nw_src=" in line and "in_port=" in line:
                new = re.sub(r",ip,nw_src=[\d.]+", ",ip", line)
                yield Mutant("spoof-check-removed", ex, f"ovs/{f.name}", replace_line(i, new),
                             ("ISO-3",), f"{f.name}:{i + 1} nw_src dropped")
                break


def _tenant_ports(text: str) -> dict[str, list[int]]:
    """A bridge's VM ports by the VNI its table 0 gives them."""
    ports: dict[str, list[int]] = {}
    for m in re.finditer(r"^table=0,.*?in_port=(\d+),.*load:(\d+)->NXM_NX_REG6", text, re.M):
        if m.group(1) != "1":
            ports.setdefault(m.group(2), [])
            if int(m.group(1)) not in ports[m.group(2)]:
                ports[m.group(2)].append(int(m.group(1)))
    return ports


def _dip_ports(text: str) -> set[int]:
    """The ports whose VM sends DSR replies (table 15 flows, by reg7)."""
    return {int(p) for p in re.findall(r"^table=15,.*reg7=(\d+),", text, re.M)}


# a DSR reply flow (table 32) delivering on this host: (vni, client address, port)
LOCAL_REPLY = r"table=32,.*reg6=(\d+),nw_dst=([\d.]+),actions=.*mod_dl_dst:[0-9a-f:]+,output:(\d+)$"


def dsr_reply_misdelivered(d: Path, ex: str) -> Iterator[Mutant]:
    """A DSR reply flow (table 32: the source already rewritten to the VIP)
    delivering to another VM's port of the same tenant, on a host where a
    DIP other than that VM sends replies."""
    for f in sorted((d / "ovs").glob("*.flows")):
        text = f.read_text()
        ports, dips = _tenant_ports(text), _dip_ports(text)
        for i, line in enumerate(lines_of(text)):
            m = re.match(LOCAL_REPLY, line.strip())
            if not m:
                continue
            same = dips & set(ports.get(m.group(1), []))  # DIPs whose replies take this VNI's flows
            other = [p for p in ports.get(m.group(1), []) if p != int(m.group(3)) and same - {p}]
            if other:
                new = re.sub(r"output:\d+$", f"output:{other[0]}", line.rstrip("\n")) + "\n"
                yield Mutant("dsr-reply-misdelivered", ex, f"ovs/{f.name}", replace_line(i, new),
                             ("ISO-1",), f"{f.name}:{i + 1} delivers to port {other[0]}")


def dsr_reply_match_changed(d: Path, ex: str) -> Iterator[Mutant]:
    """A DSR reply flow delivering on its host matching another address of
    the tenant: replies to that address reach this flow's VM (PUSH-1 too
    when a flow already matches it)."""
    for f in sorted((d / "ovs").glob("*.flows")):
        text = f.read_text()
        ports, dips = _tenant_ports(text), _dip_ports(text)
        clients = re.findall(r"^table=32,.*reg6=(\d+),nw_dst=([\d.]+),", text, re.M)
        for i, line in enumerate(lines_of(text)):
            m = re.match(LOCAL_REPLY, line.strip())
            if not m or not (dips & set(ports.get(m.group(1), []))) - {int(m.group(3))}:
                continue
            others = sorted({ip for v, ip in clients if v == m.group(1) and ip != m.group(2)})
            if others:
                new = line.replace(f"nw_dst={m.group(2)},", f"nw_dst={others[0]},", 1)
                yield Mutant("dsr-reply-match-changed", ex, f"ovs/{f.name}", replace_line(i, new),
                             ("ISO-1",), f"{f.name}:{i + 1} matches {others[0]}")


def p4_unknown_action(d: Path, ex: str) -> Iterator[Mutant]:
    """A switch entry naming an action id the P4Info lacks (P4Runtime refuses the write)."""
    for p in sorted((d / "p4").glob("*.txtpb"))[:2] if (d / "p4").is_dir() else []:
        yield Mutant("p4-unknown-action", ex, f"p4/{p.name}",
                     lambda t: re.sub(r"action_id: \d+", "action_id: 999999", t, count=1),
                     ("PUSH-1",), f"{p.name}: first action id unknown")


def benign_reordered(d: Path, ex: str) -> Iterator[Mutant]:
    for f in sorted((d / "ovs").glob("*.flows"))[:2]:
        yield Mutant("benign-reordered", ex, f"ovs/{f.name}",
                     lambda t: "".join(reversed(lines_of(t))), (), f"{f.name} lines reversed")


def benign_cookie(d: Path, ex: str) -> Iterator[Mutant]:
    for f in sorted((d / "ovs").glob("*.flows"))[:2]:
        yield Mutant("benign-cookie", ex, f"ovs/{f.name}",
                     lambda t: re.sub(r"cookie=0x[0-9a-f]+", "cookie=0x0123456789abcdef", t, count=1),
                     (), f"{f.name} first cookie changed")


def benign_blank_lines(d: Path, ex: str) -> Iterator[Mutant]:
    for f in sorted((d / "ovs").glob("*.groups"))[:1]:
        yield Mutant("benign-blank-lines", ex, f"ovs/{f.name}", lambda t: "\n" + t + "\n\n",
                     (), f"{f.name} blank lines added")


KINDS = [
    mcast_bucket_removed, mcast_receive_flow_removed, mcast_replica_removed,
    hostlb_bucket_removed, hostlb_weight_changed,
    group_undefined, group_twice, flow_duplicate_other_action, vm_delivery_removed, spoof_check_removed,
    p4_unknown_action, dsr_reply_misdelivered, dsr_reply_match_changed,
    benign_reordered, benign_cookie, benign_blank_lines,
]


# ---------------------------------------------------------------- running


def verify(netc: str, d: Path, ex: str) -> tuple[int, dict]:
    r = subprocess.run([netc, "verify", "--json", "--artifacts", str(d), str(intent(ex))],
                       capture_output=True, text=True, timeout=600)
    report = json.loads(r.stdout) if r.stdout.strip().startswith("{") else {}
    return r.returncode, report


def classify(m: Mutant, rc: int, report: dict, edited: Path) -> str:
    if not m.expect:
        return "proven" if rc == 0 else "false alarm"
    if rc == 0:
        return "proven"
    if rc == 2:
        return "refused"
    if rc != 1:
        return "other"
    # the counterexample must cite the edited device: its edited file, or
    # the device's other artifact file (a flow naming a group lost)
    device = str(edited.with_suffix(""))
    for v in report.get("verdicts", []):
        if v["invariant"] in m.expect and v["status"] == "violated" and v["counterexamples"]:
            cites = json.dumps(v["counterexamples"])
            if re.search(re.escape(device) + r"\.(flows|groups|txtpb):\d", cites):
                return "caught"
    return "other"


def run(netc: str, examples: list[str], kinds: list[str] | None, work: Path) -> list[tuple[Mutant, str]]:
    results = []
    for ex in examples:
        base = work / ex
        r = subprocess.run([netc, "compile", str(intent(ex)), "--out", str(base)],
                           capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            raise SystemExit(f"netc compile {ex} failed: {r.stderr}")
        for k in KINDS:
            for n, m in enumerate(k(base, ex)):
                if kinds and m.kind not in kinds:
                    continue
                d = work / f"{ex}.{m.kind}.{n}"
                shutil.copytree(base, d)
                f = d / m.file
                f.write_text(m.edit(f.read_text()))
                rc, report = verify(netc, d, ex)
                results.append((m, classify(m, rc, report, f)))
                shutil.rmtree(d)
    return results


def table(results: list[tuple[Mutant, str]]) -> str:
    rows: dict[str, dict[str, int]] = {}
    for m, c in results:
        r = rows.setdefault(m.kind, {"mutants": 0, "examples": set(), "caught": 0, "refused": 0,
                                     "proven": 0, "other": 0, "false alarm": 0})
        r["mutants"] += 1
        r["examples"].add(m.example)
        key = c if m.expect else ("false alarm" if c != "proven" else "ok")
        if key != "ok":
            r[key] += 1
    out = ["| kind | examples | mutants | caught | refused | proven (missed) | other | false alarms |",
           "|---|---|---|---|---|---|---|---|"]
    for k, r in rows.items():
        out.append(f"| {k} | {len(r['examples'])} | {r['mutants']} | {r['caught']} | {r['refused']} | "
                   f"{r['proven'] if not k.startswith('benign') else '-'} | {r['other']} | {r['false alarm']} |")
    return "\n".join(out)


def failures(results: list[tuple[Mutant, str]]) -> list[str]:
    bad = []
    for m, c in results:
        if (m.expect and c not in ("caught", "refused")) or (not m.expect and c != "proven"):
            bad.append(f"{m.example} {m.kind}: {m.what} → {c}")
    return bad


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target")) / "release" / "netc"
    ap.add_argument("--netc", default=os.environ.get("NETC_BIN", str(default)))
    ap.add_argument("--examples", default=",".join(EXAMPLES))
    ap.add_argument("--kinds", default="")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="netc-mutants-") as w:
        results = run(args.netc, args.examples.split(","), [k for k in args.kinds.split(",") if k], Path(w))
    print(table(results))
    bad = failures(results)
    for b in bad:
        print("FAIL:", b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
