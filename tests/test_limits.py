"""Out of memory is an error message, not SIGABRT.

Under an address-space limit (`prlimit --as`) too small for the intent,
`netc compile` used to print "memory allocation of N bytes failed" and
abort (exit 134), leaving its staging directory behind. It now exits 2
with "out of memory ... needs about N GB" and a hint, and the output
directory's staging sibling is gone.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

LIMIT = 500_000_000  # bytes of address space: far below what preset M needs


def test_out_of_memory_exits_2_with_the_size(netc_bin: str, tmp_path: Path):
    intent = tmp_path / "m.ndl"
    subprocess.run([netc_bin, "gen", "--preset", "M", "--out", str(intent)], check=True, capture_output=True)
    for trial in range(3):
        out = tmp_path / f"out{trial}"
        r = subprocess.run(["prlimit", f"--as={LIMIT}", netc_bin, "compile", str(intent), "--out", str(out)],
                           capture_output=True, text=True, timeout=300, cwd=tmp_path)
        assert r.returncode == 2, f"exit {r.returncode}: {r.stderr[-2000:]}"
        assert "error: out of memory" in r.stderr and "needs about" in r.stderr and " GB" in r.stderr, r.stderr
        assert "hint:" in r.stderr, r.stderr
        left = sorted(p.name for p in tmp_path.iterdir() if ".tmp-" in p.name)
        assert left == [], f"staging left behind: {left}"
        assert not out.exists()
    # without the limit the same command works
    r = subprocess.run([netc_bin, "compile", str(intent), "--out", str(tmp_path / "ok")], capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]


def test_daemon_refuses_a_request_too_large_for_its_memory_and_keeps_serving(netc_bin: str, tmp_path: Path):
    """`netc serve` under `prlimit --as`: one request with preset M's intent
    used to end the daemon (SIGABRT). It is now refused before it runs
    (507 insufficient_memory, naming what it needs), and the daemon still
    answers, and still takes a small request."""
    from test_serve import QUICKSTART, Daemon

    intent = tmp_path / "m.ndl"
    subprocess.run([netc_bin, "gen", "--preset", "M", "--out", str(intent)], check=True, capture_output=True)
    limited = tmp_path / "netc-limited"
    limited.write_text(f'#!/bin/sh\nexec prlimit --as=700000000 "{netc_bin}" "$@"\n')
    limited.chmod(0o755)
    d = Daemon(str(limited), tmp_path / "state", QUICKSTART)
    try:
        code, body = d.call("POST", "/v1/plan", {"files": [{"name": "m.ndl", "text": intent.read_text()}]})
        assert code == 507, body
        assert body["error"]["code"] == "insufficient_memory", body
        assert "needs about" in body["error"]["message"] and "GB" in body["error"]["message"], body
        assert d.proc.poll() is None, "the daemon ended"
        code, body = d.call("GET", "/v1/status")
        assert code == 200, body
        code, body = d.call("POST", "/v1/plan", {"files": [{"name": "q.ndl", "text": QUICKSTART.read_text()}]})
        assert code == 200, body
    finally:
        d.stop()


def test_a_megabyte_identifier_is_not_echoed_in_full(netc_bin: str, tmp_path: Path):
    """A 1 MB identifier used to be echoed whole, several times (megabytes of
    stderr): diagnostics now show it cut, with its length, at its file:line."""
    from test_serve import QUICKSTART

    name = "x" * 1_000_000
    intent = tmp_path / "big.ndl"
    intent.write_text(QUICKSTART.read_text() + f'\nvm("acme", "{name}", 02:00:00:00:01:09, 10.1.2.29, "h9").\n')
    r = subprocess.run([netc_bin, "check", "--intent", str(intent)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 1, r.stderr[:2000]
    assert len(r.stderr) < 20_000, f"{len(r.stderr)} bytes of stderr"
    assert "(1000002 bytes in all)" in r.stderr and f"{intent}:" in r.stderr, r.stderr[:2000]
    program = tmp_path / "p.dl"
    program.write_text(f".decl a(x: number)\n{name}(1).\n")
    r = subprocess.run([netc_bin, "check", str(program)], capture_output=True, text=True, timeout=300)
    assert r.returncode != 0 and len(r.stderr) < 20_000, f"{len(r.stderr)} bytes of stderr"
    assert f"{program}:2:1" in r.stderr and "characters)" in r.stderr and "^" in r.stderr, r.stderr[:2000]
