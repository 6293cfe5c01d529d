"""Tidy checks over the tree: the house rules a reviewer would otherwise check by eye.

- every Rust source file opens with a `//!` module map;
- no Rust source file exceeds 800 lines;
- no glob import (`use a::b::*;`) outside tests (`#[cfg(test)]` modules,
  `tests.rs`, `tests/` directories);
- every repo path a reader's doc names (in backticks or a markdown link) exists;
- no doc names an internal work session or a machine-specific path;
- the workspace's crates depend only downwards, in the layers ARCHITECTURE.md
  names (`cargo metadata`), and the engine never imports the syntax tree.

Each check lists every offender as `file:line: what`, so one run shows all of
them. No Rust build and no netc binary needed: this reads files (and the
manifests, through `cargo metadata --no-deps`) only.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RUST_DIRS = ("compiler", "runtime", "targets", "verify", "bench")
MAX_LINES = 800
# Directories never walked: build output and tool caches.
SKIP_DIRS = {"target", ".git", "__pycache__", ".pytest_cache", ".hypothesis", ".venv", "node_modules"}


def walk(top: Path, suffix: str) -> list[Path]:
    """Files under top whose name ends in suffix, never descending into SKIP_DIRS."""
    out = []
    for d, dirs, files in os.walk(top):
        dirs[:] = [x for x in dirs if x not in SKIP_DIRS]
        out += [Path(d) / f for f in files if f.endswith(suffix)]
    return sorted(out)


def rust_files() -> list[Path]:
    return [f for d in RUST_DIRS for f in walk(ROOT / d, ".rs")]


def rel(p: Path) -> str:
    return p.relative_to(ROOT).as_posix()


def report(failures: list[str], what: str) -> None:
    if failures:
        pytest.fail(f"{len(failures)} {what}:\n" + "\n".join(failures), pytrace=False)


# --- Rust sources ---------------------------------------------------------


def test_rust_files_are_found():
    # Guards the other checks against passing vacuously (a moved tree, a wrong root).
    assert len(rust_files()) > 100


def test_every_rust_file_opens_with_a_module_map():
    failures = []
    for f in rust_files():
        first = f.read_text(encoding="utf-8").split("\n", 1)[0]
        if not first.startswith("//!"):
            failures.append(f"{rel(f)}:1: does not open with a `//!` module map (first line: {first[:60]!r})")
    report(failures, "Rust files without a `//!` map on their first line")


def test_no_rust_file_exceeds_800_lines():
    failures = []
    for f in rust_files():
        n = len(f.read_text(encoding="utf-8").splitlines())
        if n > MAX_LINES:
            failures.append(f"{rel(f)}:{MAX_LINES + 1}: {n} lines (at most {MAX_LINES}); split it")
    report(failures, f"Rust files over {MAX_LINES} lines")


CFG_TEST = re.compile(r"^\s*#\[cfg\(test\)\]\s*$")
MOD_DECL = re.compile(r"^(\s*)(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*(;|\{)")
USE_START = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?use\s")
GLOB = re.compile(r"(::|\{|,)\s*\*")


def is_test_file(f: Path) -> bool:
    parts = f.relative_to(ROOT).parts
    return f.name == "tests.rs" or "tests" in parts[:-1]


def cfg_test_module_files(files: list[Path]) -> set[Path]:
    """Files that are `#[cfg(test)] mod x;` of another file (x.rs or x/mod.rs beside it)."""
    out = set()
    for f in files:
        lines = f.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines[:-1]):
            m = MOD_DECL.match(lines[i + 1])
            if CFG_TEST.match(line) and m and m.group(3) == ";":
                # A module's children live beside it (mod.rs, lib.rs, main.rs) or in a folder of its name.
                base = f.parent if f.name in ("mod.rs", "lib.rs", "main.rs") else f.parent / f.stem
                out |= {base / f"{m.group(2)}.rs", base / m.group(2) / "mod.rs"}
    return out


def glob_imports(f: Path) -> list[tuple[int, str]]:
    """(line, statement) of every glob `use` outside `#[cfg(test)]` inline modules."""
    lines = f.read_text(encoding="utf-8").splitlines()
    found = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if CFG_TEST.match(line):
            j = i + 1
            while j < len(lines) and lines[j].lstrip().startswith("#["):
                j += 1  # more attributes on the same item
            m = MOD_DECL.match(lines[j]) if j < len(lines) else None
            if m and m.group(3) == "{":
                # rustfmt closes a module with `}` at the `mod` line's indentation.
                close = m.group(1) + "}"
                i = j + 1
                while i < len(lines) and lines[i].rstrip() != close:
                    i += 1
                i += 1
                continue
        if USE_START.match(line):
            start, stmt = i, line
            while ";" not in stmt and i + 1 < len(lines):
                i += 1
                stmt += " " + lines[i].strip()
            if GLOB.search(stmt.split("//", 1)[0]):
                found.append((start + 1, " ".join(stmt.split())))
        i += 1
    return found


def test_no_glob_imports_outside_tests():
    files = rust_files()
    test_mods = cfg_test_module_files(files)
    failures = []
    for f in files:
        if is_test_file(f) or f in test_mods:
            continue
        for line, stmt in glob_imports(f):
            failures.append(f"{rel(f)}:{line}: glob import `{stmt}`; name what is used")
    report(failures, "glob imports outside tests")


def test_glob_import_scan_skips_test_modules_only(tmp_path):
    # The scanner itself: a glob in a test module is allowed, one outside it is not.
    src = tmp_path / "x.rs"
    src.write_text(
        "//! x\nuse a::{b, c::*};\nfn f() {}\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n    mod inner {\n"
        "    }\n}\n\npub(crate) use d::\n    *;\n#[cfg(test)]\n#[allow(dead_code)]\nmod more {\n    use e::*;\n}\n",
        encoding="utf-8",
    )
    assert [n for n, _ in glob_imports(src)] == [2, 12]


# --- Crates ---------------------------------------------------------------

# The workspace's crates in layers, lowest first (ARCHITECTURE.md, "Code map"):
# a crate may depend only on crates of a lower layer, so nothing depends on
# the command line (netc-cli) and the engine depends on no intent or device.
CRATE_LAYERS = [
    ["netc-compiler"],
    ["netc-engine", "netc-targets"],
    ["netc-verify", "netc-intent"],
    ["netc-deploy"],
    ["netc-cli", "netc-bench"],
]


def workspace_dependencies() -> dict[str, set[str]]:
    """Each workspace crate -> the workspace crates it depends on (any kind: normal, dev, build)."""
    out = subprocess.run(
        ["cargo", "metadata", "--no-deps", "--format-version", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    packages = json.loads(out)["packages"]
    names = {p["name"] for p in packages}
    return {p["name"]: {d["name"] for d in p["dependencies"] if d["name"] in names} for p in packages}


def layer_violations(deps: dict[str, set[str]], layers: list[list[str]]) -> list[str]:
    """`crate: what` for every crate missing from the layers and every dependency that is not downwards."""
    layer = {name: i for i, names in enumerate(layers) for name in names}
    failures = [
        f"{c}: not in CRATE_LAYERS (tests/test_tidy.py); place it in a layer" for c in sorted(deps) if c not in layer
    ]
    for c in sorted(deps):
        for d in sorted(deps[c]):
            if c in layer and d in layer and layer[d] >= layer[c]:
                failures.append(f"{c}: depends on {d}, a crate of layer {layer[d]} (it is in layer {layer[c]})")
    return failures


def test_crates_depend_only_downwards():
    deps = workspace_dependencies()
    # Guards against passing vacuously: the runtime is split into these crates.
    assert {"netc-engine", "netc-intent", "netc-deploy", "netc-cli"} <= set(deps)
    report(layer_violations(deps, CRATE_LAYERS), "dependencies that are not downwards")


def test_layer_check_finds_upward_and_unplaced_crates():
    deps = {"a": set(), "b": {"a"}, "c": {"b", "a"}, "d": {"c"}}
    assert layer_violations(deps, [["a"], ["b", "c"]]) == [
        "d: not in CRATE_LAYERS (tests/test_tidy.py); place it in a layer",
        "c: depends on b, a crate of layer 1 (it is in layer 1)",
    ]
    assert layer_violations({"a": {"b"}, "b": set()}, [["a"], ["b"]]) == [
        "a: depends on b, a crate of layer 1 (it is in layer 0)"
    ]


# The engine interprets the plan IR (and may run its checks, `lower::verify`); the
# syntax tree and the checker are the compiler's alone. It names no relation either:
# it looks none up by a name written in its source.
ENGINE_FORBIDDEN = re.compile(r"netc_compiler::(ast|syntax|check)\b|relation_id\(\s*\"")


def test_engine_never_imports_the_syntax_tree_nor_names_a_relation():
    failures = []
    for f in walk(ROOT / "runtime" / "engine" / "src", ".rs"):
        for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            if ENGINE_FORBIDDEN.search(line.split("//", 1)[0]):
                failures.append(f"{rel(f)}:{n}: {line.strip()}")
    report(failures, "engine lines naming the compiler's syntax tree, its checker or a relation")


# --- Docs -----------------------------------------------------------------


def reader_docs() -> list[Path]:
    """The docs whose named paths must exist."""
    docs = [ROOT / "README.md", ROOT / "ARCHITECTURE.md", ROOT / "p4" / "README.md"]
    docs += sorted((ROOT / "specs").glob("*.md")) + sorted((ROOT / "docs").glob("*.md"))
    docs += sorted((ROOT / "examples").glob("*/README.md"))
    return [d for d in docs if d.exists()]


def all_docs() -> list[Path]:
    """Every markdown file in the tree (records and READMEs included)."""
    return walk(ROOT, ".md")


FENCE = re.compile(r"^\s*(```|~~~)")
BACKTICK = re.compile(r"`([^`\n]+)`")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
# File name endings that make a backticked word a file, with or without a `/`.
EXTENSIONS = (
    ".rs .py .md .ndl .dl .lp .toml .json .p4 .png .svg .txt .txtpb .sh .yaml .yml .csv .c .h .java .xml .lock"
).split()
# What may follow a path: a line or range (`file.rs:120`, `file.rs:12-40`), an anchor (`file.md#usage`),
# an item in it (`text.rs::flow_cookie`, `test_x.py::test_y`).
LOCATION = re.compile(r"(:\d+(?:[-–]\d+)?|#.*|::[\w:\[\]-]+)$")


def prose_lines(doc: Path):
    """(line number, text) of the lines outside fenced code blocks (commands, sample output)."""
    fenced = False
    for n, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield n, line


def repo_path_candidate(token: str, doc: Path, link: bool = False) -> str | None:
    """The path a backticked word or a link target names, or None when it is not a repo path.

    A link's target is always a path; a backticked word is one when it contains a `/` and either ends
    in a file extension or starts with a folder of the repo (or of the doc's folder). A bare file name
    (`mod.rs`, `scen.ndl`) is left alone: in prose it names a file of the context or an output."""
    t = token.strip().rstrip(".,;:")
    if not t or any(ch.isspace() for ch in t):
        return None  # a command or an expression, not a path
    if "://" in t or t.startswith(("mailto:", "#", "/", "~", "$")):
        return None  # URLs, anchors, absolute paths (examples in commands), variables
    t = LOCATION.sub("", t)
    if any(mark in t for mark in ("*", "?", "<", ">", "{", "}", "...", "…", "|", "=", "'", '"', "(", ")", "[", "]")):
        return None  # globs, templates, placeholders, code
    folder = t.endswith("/")
    t = t.rstrip("/")
    if not t:
        return None
    has_ext = t.endswith(tuple(EXTENSIONS))
    if link:
        return t
    if "/" not in t and not folder:
        return None
    first = t.split("/", 1)[0]
    if first in (".", "..") or has_ext:
        return t
    # Without a file ending, `a/b` is a repo path only if `a` is a folder of the repo or beside the doc
    # (this skips `tcp/80`, `10.0.0.0/8`, `read/write`).
    if (ROOT / first).is_dir() or (doc.parent / first).is_dir():
        return t
    return None


def named_paths(doc: Path):
    for n, line in prose_lines(doc):
        for m in LINK.finditer(line):
            yield n, m.group(1), True
        # A link's text is a label (it may name a file elsewhere); its target is what must exist.
        for m in BACKTICK.finditer(LINK.sub("", line)):
            yield n, m.group(1), False


def test_paths_named_in_docs_exist():
    failures = []
    for doc in reader_docs():
        for n, token, link in named_paths(doc):
            path = repo_path_candidate(token, doc, link)
            if path is None:
                continue
            if (ROOT / path).exists() or (doc.parent / path).exists():
                continue
            failures.append(f"{rel(doc)}:{n}: names `{path}`, which does not exist")
    report(failures, "paths named in docs that do not exist")


def test_path_candidates():
    doc = ROOT / "docs" / "gen.md"
    assert repo_path_candidate("runtime/cli/src/gen/tests.rs", doc) == "runtime/cli/src/gen/tests.rs"
    assert repo_path_candidate("../bench/results/x.json", doc) == "../bench/results/x.json"
    assert repo_path_candidate("runtime/cli/src/main.rs:12", doc) == "runtime/cli/src/main.rs"
    assert repo_path_candidate("specs/intent.md#intent", doc) == "specs/intent.md"
    assert repo_path_candidate("specs/", doc) == "specs"
    assert repo_path_candidate("perf/cdf-S.png", doc, link=True) == "perf/cdf-S.png"
    assert repo_path_candidate("mod.rs", doc) is None
    assert repo_path_candidate("targets/src/ovs/text.rs::flow_cookie", doc) == "targets/src/ovs/text.rs"
    assert repo_path_candidate("tests/test_gen.py::test_x[a]", doc) == "tests/test_gen.py"
    for not_a_path in (
        "tcp/80",
        "10.0.0.0/8",
        "https://example.org/a.md",
        "/tmp/out.json",
        "STATE/verified/...",
        "rules/*.ndl",
        "bench/results/<date>-<commit>.md",
        "netc compile scen/*.ndl --out out/",
        "netc-bench",
    ):
        assert repo_path_candidate(not_a_path, doc) is None, not_a_path


SESSION = re.compile(r"\b(sessions?|stops?)\s+#?\d+", re.IGNORECASE)
MACHINE_PATH = re.compile(r"(/work/|/root/|/home/[a-z_][\w-]*)")


def test_docs_name_no_sessions_or_machine_paths():
    failures = []
    for doc in all_docs():
        for n, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
            for m in SESSION.finditer(line):
                failures.append(f"{rel(doc)}:{n}: names an internal session: {m.group(0)!r}")
            for m in MACHINE_PATH.finditer(line):
                failures.append(f"{rel(doc)}:{n}: names a machine-specific path: {m.group(0)!r}")
    report(failures, "doc lines naming internal sessions or machine paths")


def test_session_and_machine_path_patterns():
    assert SESSION.search("see session 16") and SESSION.search("(stop 37)")
    assert MACHINE_PATH.search("in /work/main at ff08796") and MACHINE_PATH.search("/home/alice/x")
    assert not SESSION.search("a session that stops") and not MACHINE_PATH.search("/tmp/x and work/")
