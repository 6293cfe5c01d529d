"""`netc export --souffle` keeps a program's meaning.

Souffle itself is not installable here (no Debian or PyPI package), so the
exported program is run through netc's own Souffle-compatible mode, which is
checked against clingo elsewhere: the exported program — pure Souffle, with
IP addresses, prefixes and MACs encoded as numbers and network functors as
bit arithmetic — must produce exactly the encoded outputs of the original.
Hypothesis draws the addresses, prefixes and lengths, so edge cases such as
/0 and /32 prefixes are exercised.
"""

from __future__ import annotations

import ipaddress
import re
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.netc

PROGRAM = """\
.decl addr(name: symbol, a: ipv4)
.input addr
.decl net(p: prefix4)
.input net
.decl hw(name: symbol, m: mac)
.input hw
.decl inside(name: symbol, p: prefix4)
.decl outside(name: symbol, p: prefix4)
.decl sub(p: prefix4, q: prefix4)
.decl facts_of(p: prefix4, len: number, first: ipv4, last: ipv4, second: ipv4)
.decl host_prefix(name: symbol, p: prefix4)
.decl ordered(a: ipv4, b: ipv4)
.decl macs(name: symbol, m: mac, u: unsigned)
.output inside, outside, sub, facts_of, host_prefix, ordered, macs
inside(n, p) :- addr(n, a), net(p), contains(p, a).
outside(n, p) :- addr(n, a), net(p), !contains(p, a).
sub(p, q) :- net(p), net(q), p != q, contains(p, q).
facts_of(p, l, f, b, s) :- net(p), l = prefix_len(p), f = network(p), b = broadcast(p), s = nth_addr(p, 1).
host_prefix(n, p) :- addr(n, a), net(q), l = prefix_len(q), p = prefix(a, l).
ordered(a, b) :- addr(_, a), addr(_, b), a < b.
macs(n, m, u) :- hw(n, m), u = mac_to_unsigned(m), u > 1000.
"""


def encode(value: str) -> str:
    """The export's encoding of one field (see compiler/src/souffle_export.rs)."""
    if "/" in value:
        net, length = value.split("/")
        return str((int(ipaddress.IPv4Address(net)) << 8) | int(length))
    if value.count(".") == 3:
        return str(int(ipaddress.IPv4Address(value)))
    if value.count(":") == 5:
        return str(int(value.replace(":", ""), 16))
    return value


def read_outputs(d: Path, encode_fields: bool) -> dict[str, list[str]]:
    out = {}
    for f in sorted(d.glob("*.csv")):
        rows = [line.split("\t") for line in f.read_text().splitlines()]
        if encode_fields:
            rows = [[encode(x) for x in r] for r in rows]
        out[f.stem] = sorted("\t".join(r) for r in rows)
    return out


ipv4 = st.integers(0, 2**32 - 1).map(lambda i: str(ipaddress.IPv4Address(i)))
prefix4 = st.tuples(st.integers(0, 2**32 - 1), st.integers(0, 32)).map(
    lambda t: str(ipaddress.IPv4Network((t[0], t[1]), strict=False))
)
mac = st.integers(0, 2**48 - 1).map(lambda i: ":".join(f"{(i >> s) & 0xFF:02x}" for s in range(40, -8, -8)))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    addrs=st.lists(ipv4, min_size=1, max_size=6, unique=True),
    nets=st.lists(prefix4, min_size=1, max_size=5, unique=True),
    macs=st.lists(mac, min_size=1, max_size=3, unique=True),
)
def test_exported_program_means_the_same(netc_bin, tmp_path_factory, addrs, nets, macs):
    tmp = tmp_path_factory.mktemp("export")
    (tmp / "prog.ndl").write_text(PROGRAM)
    facts = tmp / "facts"
    facts.mkdir()
    (facts / "addr.facts").write_text("".join(f"h{i}\t{a}\n" for i, a in enumerate(addrs)))
    (facts / "net.facts").write_text("".join(f"{p}\n" for p in nets))
    (facts / "hw.facts").write_text("".join(f"h{i}\t{m}\n" for i, m in enumerate(macs)))

    r = subprocess.run([netc_bin, "run", "-F", str(facts), "-D", str(tmp / "orig"), str(tmp / "prog.ndl")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    ex = subprocess.run(
        [netc_bin, "export", "--souffle", "-F", str(facts), "--facts-out", str(tmp / "efacts"), str(tmp / "prog.ndl")],
        capture_output=True,
        text=True,
    )
    assert ex.returncode == 0, ex.stderr
    exported = ex.stdout
    for decl in re.findall(r"^\.decl \w+\((.*)\)$", exported, re.M):
        types = {attr.split(":")[1].strip() for attr in decl.split(",")}
        assert types <= {"number", "unsigned", "float", "symbol"}, decl
    assert "@" not in exported.replace("@netc_", "")
    (tmp / "exported.dl").write_text(exported)
    r2 = subprocess.run([netc_bin, "run", "-F", str(tmp / "efacts"), "-D", str(tmp / "exp"), str(tmp / "exported.dl")], capture_output=True, text=True)
    assert r2.returncode == 0, r2.stderr + exported
    assert read_outputs(tmp / "exp", False) == read_outputs(tmp / "orig", True)


def export(netc_bin, path: Path, program: str) -> subprocess.CompletedProcess:
    """`netc export --souffle` of `program`, written to `path`."""
    path.write_text(program)
    return subprocess.run([netc_bin, "export", "--souffle", str(path)], capture_output=True, text=True)


def test_hash5_becomes_a_declared_user_functor(netc_bin, tmp_path):
    ex = export(
        netc_bin,
        tmp_path / "h.ndl",
        ".decl f(s: ipv4, d: ipv4)\n.decl h(v: unsigned)\n.output h\nf(10.0.0.1, 10.0.0.2).\n"
        "h(v) :- f(s, d), v = hash5(6, s, d, 1000, 80).\n",
    )
    assert ex.returncode == 0, ex.stderr
    assert ".functor netc_hash5(" in ex.stdout
    assert "@netc_hash5(6, " in ex.stdout


def test_ipv6_functors_are_refused_with_a_reason(netc_bin, tmp_path):
    ex = export(
        netc_bin,
        tmp_path / "v6.ndl",
        ".decl a(x: ipv6)\n.decl b(p: prefix6)\n.decl c(x: ipv6)\n.output c\n"
        "a(2001:db8::1). b(2001:db8::/32).\nc(x) :- a(x), b(p), contains(p, x).\n",
    )
    assert ex.returncode == 1
    assert "v6.ndl:6:1" in ex.stderr and "IPv6" in ex.stderr, ex.stderr


def test_replace_is_a_user_functor_and_concat_is_refused(netc_bin, tmp_path):
    ex = export(
        netc_bin,
        tmp_path / "r.ndl",
        '.decl w(s: symbol)\n.decl r(s: symbol)\n.output r\nw("a,b").\nr(x) :- w(s), x = replace(s, "a", "c").\n',
    )
    assert ex.returncode == 0, ex.stderr
    assert ".functor netc_replace(" in ex.stdout and "@netc_replace(" in ex.stdout
    ex = export(
        netc_bin,
        tmp_path / "c.ndl",
        '.decl w(k: number, s: symbol)\n.decl r(s: symbol)\n.output r\nw(2, "b"). w(1, "a").\n'
        "r(x) :- x = concat s by k : { w(k, s) }.\n",
    )
    assert ex.returncode == 1
    assert "c.ndl:5:1" in ex.stderr and "concat" in ex.stderr, ex.stderr
    run = subprocess.run([netc_bin, "run", "-D", "-", str(tmp_path / "c.ndl")], capture_output=True, text=True)
    assert run.returncode == 0 and "a,b" in run.stdout, run.stdout + run.stderr
