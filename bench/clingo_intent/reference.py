"""One scenario through netc and through clingo, and the comparison.

  prepare   netc compile (wall, peak RSS); pin the placement; netc run -D for
            every `.output` relation (the non-located ones, error_* included)
  translate the standard rules (the files netc embeds, in its order) and the
            intent facts -> rules.lp + facts.lp (translate.py)
  solve     clingo in a separate process (worker): load, ground, solve timed,
            peak RSS (VmHWM), every output relation dumped as sorted TSV
  compare   relation by relation, row by row; a difference is a failure

What cannot be a clingo rule: `vip_placement` is written by netc's placement
built-in (runtime/intent/src/placement, Duet's greedy, sticky), not by a rule. It is
taken from netc's own compile and given to BOTH sides as facts: the rules
derive `p4_announce(sw, prefix(ep, 32))` from exactly the `vip_placement(ep,
sw)` rows whose switch exists and whose endpoint has a DIP vector, and a
compiled (valid) intent has no other rows (error_placement_unknown_switch and
error_placement_not_an_endpoint are empty), so p4_announce read backwards is
the placement. netc is re-run with it pinned and must produce the same
relations, which checks the pin.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import ndl, translate

REPO = Path(__file__).resolve().parents[2]
LEFT_OUT = [
    {
        "what": "vip_placement",
        "why": "written by netc's placement built-in (runtime/intent/src/placement: Duet §2.3 greedy, "
        "sticky), not by a rule; taken from netc's compile (p4_announce read backwards) and "
        "given to both sides as facts",
    }
]


def rule_files(rules_dir: Path | None = None) -> list[Path]:
    """The standard rules in the order netc embeds them (runtime/intent/src/rules.rs)."""
    rules_dir = rules_dir or REPO / "rules"
    embedded = (REPO / "runtime/intent/src/rules.rs").read_text()
    names = re.findall(r'include_str!\("\.\./\.\./\.\./rules/([a-z_0-9]+\.ndl)"\)', embedded)
    on_disk = sorted(p.name for p in rules_dir.glob("*.ndl"))
    if sorted(names) != on_disk:
        raise RuntimeError(f"rules.rs embeds {sorted(names)} but {rules_dir} holds {on_disk}")
    return [rules_dir / n for n in names]


def read_rows(path: Path) -> list[str]:
    if not path.exists():
        return []
    return sorted(line for line in path.read_text().split("\n") if line)


class ProcessFailed(RuntimeError):
    def __init__(self, cmd: list[str], code: int, stderr: str):
        super().__init__(f"`{' '.join(map(str, cmd))}` exited {code}:\n{stderr[-3000:]}")
        self.code = code


@contextlib.contextmanager
def _held(cmd: list[str]):
    """A leading `flock FILE` is taken here, before any clock starts (a wait
    for the machine's big-memory lock is not the step's time); yields the
    rest of the command. flock(2) on the same file, so it excludes flock(1)."""
    if cmd[:1] != ["flock"]:
        yield cmd
        return
    with open(cmd[1], "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield cmd[2:]
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _run(cmd: list[str]) -> subprocess.CompletedProcess:
    with _held(cmd) as run:
        r = subprocess.run(run, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"`{' '.join(map(str, cmd))}` exited {r.returncode}:\n{r.stderr[-3000:]}")
    return r


def timed(cmd: list[str]) -> tuple[float, float, str, float]:
    """(wall seconds, peak RSS MB from wait4, stdout, CPU seconds) of one process."""
    with _held(cmd) as run, tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(run, stdout=out, stderr=err, text=True)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if p.returncode != 0:
            raise ProcessFailed(cmd, p.returncode, err.read())
        return wall, ru.ru_maxrss / 1024, out.read(), ru.ru_utime + ru.ru_stime


@dataclass
class NetcSide:
    relations: dict[str, list[str]]
    located: set[str]
    pinned: Path | None
    compile_s: float
    compile_rss_mb: float
    compile_cpu_s: float
    notes: list[str] = field(default_factory=list)


def _pin_placement(compiled: Path, pinned: Path) -> int:
    lines = []
    for row in read_rows(compiled / "relations" / "p4_announce.csv"):
        sw, pfx = row.split("\t")
        addr, length = pfx.split("/")
        if length != "32":
            raise RuntimeError(f"p4_announce row {row!r} is not a /32: cannot read the placement back")
        lines.append(f'vip_placement({addr}, "{sw}").')
    pinned.write_text(
        "// vip_placement as netc's placement built-in chose it (from p4_announce)\n" + "\n".join(lines) + "\n"
    )
    return len(lines)


def prepare(
    netc: str, intent: list[Path], work: Path, outputs: list[str], located: set[str], wrap: list[str] | None = None
) -> NetcSide:
    """netc's side. A bad intent (compile exits 1: some error_* row) is still
    compared: every relation then comes from `netc run`, which writes them all."""
    w = wrap or []
    work.mkdir(parents=True, exist_ok=True)
    out1 = work / "netc_compile"
    bad_intent = False
    try:
        wall, rss, _, cpu = timed([*w, netc, "compile", *map(str, intent), "--out", str(out1)])
    except ProcessFailed as e:
        if e.code != 1:
            raise
        bad_intent, wall, rss, cpu = True, 0.0, 0.0, 0.0
    intent_facts = ndl.parse_files([(str(p), p.read_text()) for p in intent])
    pinned = None
    notes: list[str] = []
    if bad_intent:
        notes.append("bad intent: netc compile refused it; every relation from netc run (no placement)")
    elif "vip_placement" not in intent_facts.facts:
        pinned = work / "pinned_placement.ndl"
        n = _pin_placement(out1, pinned)
        notes.append(f"placement pinned: {n} vip_placement rows from netc's compile")
    inputs = [*map(str, intent)] + ([str(pinned)] if pinned else [])
    out2 = work / "netc_compile_pinned"
    if not bad_intent:
        _run([*w, netc, "compile", *inputs, "--out", str(out2)])
        for f in sorted((out1 / "relations").glob("*.csv")):
            if read_rows(f) != read_rows(out2 / "relations" / f.name):
                raise RuntimeError(f"pinning the placement changed {f.name}: the pin is not netc's placement")
    run_dir = work / "netc_run"
    run_dir.mkdir(exist_ok=True)
    for old in run_dir.glob("*.csv"):
        old.unlink()
    _run([*w, netc, "run", "-D", str(run_dir), *map(str, rule_files()), *inputs])
    if not bad_intent:
        for rel in sorted(located & set(outputs)):
            if read_rows(out2 / "relations" / f"{rel}.csv") != read_rows(run_dir / f"{rel}.csv"):
                raise RuntimeError(
                    f"netc compile (embedded rules) and netc run on {REPO / 'rules'} differ on {rel}: "
                    "the binary's rules are not the files on disk; rebuild netc"
                )
    relations: dict[str, list[str]] = {}
    for rel in outputs:
        from_compile = rel in located and not bad_intent
        src = out2 / "relations" / f"{rel}.csv" if from_compile else run_dir / f"{rel}.csv"
        if not src.exists():
            raise RuntimeError(f"netc wrote no {src}")
        relations[rel] = read_rows(src)
    return NetcSide(relations, located, pinned, wall, rss, cpu, notes)


@dataclass
class Translated:
    rules_lp: Path
    facts_lp: Path
    outputs: list[str]
    located: set[str]
    rules: int
    facts: int
    translate_s: float


def parse_program(intent: list[Path], pinned: Path | None) -> ndl.Program:
    files = [(f"rules/{p.name}", p.read_text()) for p in rule_files()]
    files += [(str(p), p.read_text()) for p in intent]
    if pinned is not None:
        files.append((str(pinned), pinned.read_text()))
    return ndl.parse_files(files)


def outputs_of_rules() -> tuple[list[str], set[str]]:
    prog = ndl.parse_files([(f"rules/{p.name}", p.read_text()) for p in rule_files()])
    return prog.outputs, prog.located


def translate_scenario(intent: list[Path], pinned: Path | None, work: Path) -> Translated:
    t0 = time.perf_counter()
    prog = parse_program(intent, pinned)
    rules_text, _ = translate.rules_to_asp(prog)
    facts_text = translate.facts_to_asp(prog.facts)
    rules_lp, facts_lp = work / "rules.lp", work / "facts.lp"
    rules_lp.write_text(rules_text)
    facts_lp.write_text(facts_text)
    (work / "clingo_meta.json").write_text(
        json.dumps({"intent": [str(p) for p in intent], "pinned": str(pinned) if pinned else None})
    )
    return Translated(
        rules_lp,
        facts_lp,
        prog.outputs,
        prog.located,
        translate.rule_count(prog),
        sum(len(v) for v in prog.facts.values()),
        time.perf_counter() - t0,
    )


def solve(work: Path, wrap: list[str] | None = None) -> dict:
    """Runs the clingo worker on work/rules.lp + facts.lp in its own process."""
    cmd = [*(wrap or []), sys.executable, str(REPO / "bench/clingo_intent.py"), "--worker", str(work)]
    wall, rss, out, _ = timed(cmd)
    res = json.loads(out.strip().splitlines()[-1])
    res["process_wall_s"] = wall
    res["wait4_rss_mb"] = rss
    return res


def worker(work: Path) -> int:
    """The timed clingo run (in its own process, so its peak RSS is its own)."""
    import clingo

    meta = json.loads((work / "clingo_meta.json").read_text())
    prog = parse_program([Path(p) for p in meta["intent"]], Path(meta["pinned"]) if meta["pinned"] else None)
    rules_text, ctx = translate.rules_to_asp(prog)
    if rules_text != (work / "rules.lp").read_text():
        print("rules.lp is not the translation of the current rules", file=sys.stderr)
        return 2
    del prog
    c0 = time.process_time()
    t0 = time.perf_counter()
    ctl = clingo.Control(["--warn=none"])
    ctl.load(str(work / "rules.lp"))
    ctl.load(str(work / "facts.lp"))
    t1 = time.perf_counter()
    ctl.ground([("base", [])], context=ctx)
    t2 = time.perf_counter()
    models: list[list] = []
    ctl.solve(on_model=lambda m: models.append(list(m.symbols(shown=True))))
    t3 = time.perf_counter()
    cpu = time.process_time() - c0
    if len(models) != 1:
        print(f"expected exactly one answer set, got {len(models)}", file=sys.stderr)
        return 1
    outputs, _ = outputs_of_rules()
    rows = translate.model_rows(models[0], outputs)
    out_dir = work / "clingo"
    out_dir.mkdir(exist_ok=True)
    for rel, lines in rows.items():
        (out_dir / f"{rel}.csv").write_text("".join(line + "\n" for line in lines))
    hwm = 0.0
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            hwm = int(line.split()[1]) / 1024
    print(
        json.dumps(
            {
                "load_s": t1 - t0,
                "ground_s": t2 - t1,
                "solve_s": t3 - t2,
                "total_s": t3 - t0,
                "cpu_s": cpu,
                "peak_rss_mb": hwm,
                "atoms_shown": len(models[0]),
            }
        )
    )
    return 0


def compare(netc_rows: dict[str, list[str]], clingo_rows: dict[str, list[str]], examples: int = 3) -> list[dict]:
    """Every relation's rows on both sides; one entry per relation that differs."""
    bad = []
    for rel in sorted(netc_rows):
        a, b = set(netc_rows[rel]), set(clingo_rows.get(rel, []))
        if a != b:
            bad.append(
                {
                    "relation": rel,
                    "netc_rows": len(a),
                    "clingo_rows": len(b),
                    "only_netc": sorted(a - b)[:examples],
                    "only_clingo": sorted(b - a)[:examples],
                }
            )
    return bad


def clingo_rows(work: Path, outputs: list[str]) -> dict[str, list[str]]:
    return {rel: read_rows(work / "clingo" / f"{rel}.csv") for rel in outputs}


def run_scenario(netc: str, intent: list[Path], work: Path, wrap: list[str] | None = None) -> dict:
    """netc and clingo on one scenario; the result document (mismatches empty = equal)."""
    outputs, located = outputs_of_rules()
    side = prepare(netc, intent, work, outputs, located, wrap)
    tr = translate_scenario(intent, side.pinned, work)
    res = solve(work, wrap)
    mism = compare(side.relations, clingo_rows(work, outputs))
    return {
        "intent": [str(p) for p in intent],
        "relations_compared": len(outputs),
        "relations_nonempty": sum(1 for r in outputs if side.relations[r]),
        "rows_compared": sum(len(v) for v in side.relations.values()),
        "rules_translated": tr.rules,
        "facts": tr.facts,
        "translate_s": tr.translate_s,
        "clingo": res,
        "netc_compile": {"wall_s": side.compile_s, "cpu_s": side.compile_cpu_s, "peak_rss_mb": side.compile_rss_mb},
        "notes": side.notes,
        "left_out": LEFT_OUT,
        "mismatches": mism,
        "equal": not mism,
    }


def solve_program(prog: ndl.Program) -> dict[str, list[str]]:
    """clingo on a parsed program in this process (tests; no timing): relation -> rows."""
    import clingo

    text, ctx = translate.rules_to_asp(prog)
    ctl = clingo.Control(["--warn=none"])
    ctl.add("base", [], text)
    ctl.add("base", [], translate.facts_to_asp(prog.facts))
    ctl.ground([("base", [])], context=ctx)
    models: list[list] = []
    ctl.solve(on_model=lambda m: models.append(list(m.symbols(shown=True))))
    if len(models) != 1:
        raise RuntimeError(f"expected exactly one answer set, got {len(models)}")
    return translate.model_rows(models[0], prog.outputs)
