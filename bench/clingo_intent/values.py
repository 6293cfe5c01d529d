"""Values of the intent model, their clingo encoding, and the built-in functors.

Encoding (chosen so clingo's term order is netc's value order within a
type, which `<`, `#min` and `#max` rely on; clingo integers are 32-bit):

  number, unsigned   clingo integer if it fits in 32 bits signed, else
                     big(v >> 16, v & 0xffff)  (functions sort after every
                     integer, and (hi, lo) sorts numerically); negative
                     values below -2^31 are refused
  symbol             clingo string (clingo and netc both order by bytes)
  ipv4               ip(a >> 16, a & 0xffff)
  prefix4            pfx(a >> 16, a & 0xffff, len)  (netc orders by address, then length)
  mac                mac(m >> 32, (m >> 16) & 0xffff, m & 0xffff)
  float              fl("text")  (only compared through Python)

The functors compute what netc's compiler/src/functors/ define, re-written
here from their documented meaning: hash5 is CRC-32/ISO-HDLC (zlib.crc32)
of proto(1) | src(4) | dst(4) | sport(2) | dport(2), big-endian
(specs/functors.md); integer `/` and `%` truncate toward zero like Rust's;
to_string is the value's text form as netc prints it.
"""

from __future__ import annotations

import re

import zlib
from dataclasses import dataclass

import clingo

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


class Undefined(Exception):
    """A functor has no value for these arguments: netc drops the row."""


def _mask4(length: int) -> int:
    return 0 if length == 0 else (0xFFFFFFFF << (32 - length)) & 0xFFFFFFFF


@dataclass(frozen=True, order=True)
class Ipv4:
    a: int

    @staticmethod
    def parse(text: str) -> Ipv4:
        parts = [int(p) for p in text.split(".")]
        if len(parts) != 4 or any(p > 255 for p in parts):
            raise ValueError(f"`{text}` is not an IPv4 address")
        return Ipv4((parts[0] << 24) | (parts[1] << 16) | (parts[2] << 8) | parts[3])

    def __str__(self) -> str:
        a = self.a
        return f"{a >> 24}.{(a >> 16) & 255}.{(a >> 8) & 255}.{a & 255}"


@dataclass(frozen=True, order=True)
class Prefix4:
    a: int
    length: int

    @staticmethod
    def parse(text: str) -> Prefix4:
        addr, length = text.split("/")
        n = int(length)
        a = Ipv4.parse(addr).a
        if n > 32 or a & ~_mask4(n) & 0xFFFFFFFF:
            raise ValueError(f"`{text}` is not a network prefix")
        return Prefix4(a, n)

    def __str__(self) -> str:
        return f"{Ipv4(self.a)}/{self.length}"


@dataclass(frozen=True, order=True)
class Mac:
    m: int

    @staticmethod
    def parse(text: str) -> Mac:
        return Mac(int(text.replace(":", "").replace("-", ""), 16))

    def __str__(self) -> str:
        return ":".join(f"{(self.m >> s) & 255:02x}" for s in (40, 32, 24, 16, 8, 0))


@dataclass(frozen=True, order=True)
class Float:
    x: float

    def __str__(self) -> str:
        # Rust's f64 Display: integral values without ".0"
        if self.x == int(self.x) and abs(self.x) < 1e16:
            return str(int(self.x))
        return repr(self.x)


def encode(v) -> clingo.Symbol:
    if isinstance(v, bool):
        return clingo.Number(int(v))
    if isinstance(v, int):
        if INT32_MIN <= v <= INT32_MAX:
            return clingo.Number(v)
        if v < 0 or v >= 2**48:
            raise Undefined(f"integer {v} outside the encodable range")
        return clingo.Function("big", [clingo.Number(v >> 16), clingo.Number(v & 0xFFFF)])
    if isinstance(v, str):
        return clingo.String(v)
    if isinstance(v, Ipv4):
        return clingo.Function("ip", [clingo.Number(v.a >> 16), clingo.Number(v.a & 0xFFFF)])
    if isinstance(v, Prefix4):
        return clingo.Function("pfx", [clingo.Number(v.a >> 16), clingo.Number(v.a & 0xFFFF), clingo.Number(v.length)])
    if isinstance(v, Mac):
        m = v.m
        return clingo.Function(
            "mac", [clingo.Number(m >> 32), clingo.Number((m >> 16) & 0xFFFF), clingo.Number(m & 0xFFFF)]
        )
    if isinstance(v, Float):
        return clingo.Function("fl", [clingo.String(repr(v.x))])
    raise TypeError(f"cannot encode {v!r}")


def asp_text(v) -> str:
    """The clingo source text of a value (facts files)."""
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    if isinstance(v, int) and INT32_MIN <= v <= INT32_MAX:
        return str(v)
    return str(encode(v))


def decode(s: clingo.Symbol):
    t = s.type
    if t == clingo.SymbolType.Number:
        return s.number
    if t == clingo.SymbolType.String:
        return s.string
    name, args = s.name, s.arguments
    if name == "ip":
        return Ipv4((args[0].number << 16) | args[1].number)
    if name == "big":
        return (args[0].number << 16) | args[1].number
    if name == "pfx":
        return Prefix4((args[0].number << 16) | args[1].number, args[2].number)
    if name == "mac":
        return Mac((args[0].number << 32) | (args[1].number << 16) | args[2].number)
    if name == "fl":
        return Float(float(args[0].string))
    raise TypeError(f"unexpected symbol {s}")


def to_text(v) -> str:
    """netc's text form of a value (CSV outputs, to_string)."""
    return v if isinstance(v, str) else str(v)


# ------------------------------------------------------------------ operators
def _trunc_div(x: int, y: int) -> int:
    if y == 0:
        raise Undefined("division by zero")
    q = abs(x) // abs(y)
    return q if (x >= 0) == (y >= 0) else -q


def _trunc_rem(x: int, y: int) -> int:
    if y == 0:
        raise Undefined("remainder by zero")
    return x - _trunc_div(x, y) * y


def binary(op: str, x, y):
    if isinstance(x, Float) or isinstance(y, Float):
        a, b = float(getattr(x, "x", x)), float(getattr(y, "x", y))
        ops = {"+": a + b, "-": a - b, "*": a * b}
        if op == "/":
            return Float(a / b)
        if op in ops:
            return Float(ops[op])
        raise Undefined(f"{op} on floats")
    if not isinstance(x, int) or not isinstance(y, int):
        raise Undefined(f"{op} on non-numbers {x!r}, {y!r}")
    if op == "+":
        return x + y
    if op == "-":
        return x - y
    if op == "*":
        return x * y
    if op == "/":
        return _trunc_div(x, y)
    if op == "%":
        return _trunc_rem(x, y)
    if op == "^":
        if y < 0:
            raise Undefined("negative exponent")
        return x**y
    if op == "band":
        return x & y
    if op == "bor":
        return x | y
    if op == "bxor":
        return x ^ y
    if op == "bshl":
        return x << y if y < 64 else 0
    if op == "bshr":
        return x >> min(y, 63)
    if op == "land":
        return int(x != 0 and y != 0)
    if op == "lor":
        return int(x != 0 or y != 0)
    raise Undefined(f"unknown operator {op}")


def compare(op: str, x, y) -> bool:
    a = x.x if isinstance(x, Float) else x
    b = y.x if isinstance(y, Float) else y
    return {
        "=": a == b,
        "!=": a != b,
        "<": a < b,
        "<=": a <= b,
        ">": a > b,
        ">=": a >= b,
    }[op]


# ------------------------------------------------------------------ functors
def _hash5(proto, src, dst, sport, dport) -> int:
    if not (isinstance(src, Ipv4) and isinstance(dst, Ipv4)):
        raise Undefined("hash5 needs two IPv4 addresses")
    if not (0 <= proto <= 255 and 0 <= sport <= 65535 and 0 <= dport <= 65535):
        raise Undefined("hash5 argument out of range")
    data = (
        bytes([proto])
        + src.a.to_bytes(4, "big")
        + dst.a.to_bytes(4, "big")
        + sport.to_bytes(2, "big")
        + dport.to_bytes(2, "big")
    )
    return zlib.crc32(data)


def _hash5_sym(proto, src, dst, sport, dport) -> int:
    if (src, sport) > (dst, dport):
        src, sport, dst, dport = dst, dport, src, sport
    return _hash5(proto, src, dst, sport, dport)


def _contains(p, x) -> int:
    """contains(prefix, address|prefix), or contains(substring, symbol)."""
    if isinstance(p, str) and isinstance(x, str):
        return int(p in x)
    if not isinstance(p, Prefix4):
        return 0
    m = _mask4(p.length)
    if isinstance(x, Ipv4):
        return int(x.a & m == p.a & m)
    if isinstance(x, Prefix4):
        return int(p.length <= x.length and x.a & m == p.a & m)
    return 0


def _match(pattern, s) -> int:
    """match(re, s): the whole of s matches re (std::regex_match); an invalid pattern matches nothing."""
    if not isinstance(pattern, str) or not isinstance(s, str):
        return 0
    try:
        return int(re.fullmatch(pattern, s) is not None)
    except re.error:
        return 0


def _nth_addr(p, n):
    if not isinstance(p, Prefix4) or not isinstance(n, int) or n < 0 or n >= 2 ** (32 - p.length):
        raise Undefined("nth_addr out of range")
    return Ipv4((p.a & _mask4(p.length)) | n)


def _prefix(a, n):
    if not isinstance(a, Ipv4) or not isinstance(n, int) or not 0 <= n <= 32:
        raise Undefined("prefix out of range")
    return Prefix4(a.a & _mask4(n), n)


def _cat(*xs):
    if not all(isinstance(x, str) for x in xs):
        raise Undefined("cat of a non-symbol")
    return "".join(xs)


def binary_cat(a, b):
    """`concat`'s step: two texts joined with `,`."""
    return _cat(a, ",", b)


def _replace(s, old, new):
    if not all(isinstance(x, str) for x in (s, old, new)):
        raise Undefined("replace of a non-symbol")
    return s.replace(old, new, 1) if old else s


def _need_int(x):
    if not isinstance(x, int):
        raise Undefined("not an integer")
    return x


def _undefined(why: str):
    raise Undefined(why)


FUNCTORS = {
    "cat": _cat,
    "replace": _replace,
    "to_string": lambda x: to_text(x),
    "strlen": lambda s: len(s),
    "contains": _contains,
    "match": _match,
    "prefix_len": lambda p: p.length if isinstance(p, Prefix4) else _undefined("prefix_len of a non-prefix"),
    "network": lambda p: Ipv4(p.a),
    "broadcast": lambda p: Ipv4(p.a | (~_mask4(p.length) & 0xFFFFFFFF)),
    "nth_addr": _nth_addr,
    "prefix": _prefix,
    "min": lambda *xs: min(xs),
    "max": lambda *xs: max(xs),
    "abs": lambda x: abs(_need_int(x)),
    "itou": lambda x: _need_int(x) if x >= 0 else x + 2**64,
    "utoi": lambda x: _need_int(x) if x < 2**63 else x - 2**64,
    "ipv4_to_unsigned": lambda a: a.a,
    "unsigned_to_ipv4": lambda u: Ipv4(u) if 0 <= u < 2**32 else _undefined("not an IPv4 address"),
    "mac_to_unsigned": lambda m: m.m,
    "unsigned_to_mac": lambda u: Mac(u) if 0 <= u < 2**48 else _undefined("not a MAC"),
    "hash5": _hash5,
    "hash5_sym": _hash5_sym,
}
