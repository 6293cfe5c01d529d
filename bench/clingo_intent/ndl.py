"""A reader for the NDlog subset the standard rules and intent facts use.

Written from the language as the rules use it (rules/*.ndl, specs), not
from netc's parser, so the clingo reference does not share netc's reading
of the text. Produces plain tuples:

  expressions  ('var', name) | ('wild',) | ('const', Value) | ('bin', op, l, r)
               | ('neg', e) | ('call', name, [args])
               | ('agg', func, target, [lits], [order keys])   (keys: `concat x by k1, k2`)
  literals     ('atom', rel, [args]) | ('not', ('atom', ...)) | ('pred', call)
               | ('notpred', call) | ('cmp', op, l, r) | ('or', [[lits], [lits]])
  rules        Rule(head=('atom', rel, args), body=[lits], where='file:line')

Operator precedence is the language's (loosest first): lor, land, bor,
bxor, band, bshl/bshr, + -, * / % ^ (all left-associative except ^).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .values import Float, Ipv4, Mac, Prefix4

AGGREGATES = ("count", "sum", "min", "max", "mean", "concat")
# functors that are constraints (hold / do not hold) rather than values
PREDICATE_FUNCTORS = ("contains", "match")
BIN_LEVEL = {
    "lor": 0,
    "land": 1,
    "bor": 2,
    "bxor": 3,
    "band": 4,
    "bshl": 5,
    "bshr": 5,
    "+": 6,
    "-": 6,
    "*": 7,
    "/": 7,
    "%": 7,
}
CMP_OPS = ("=", "!=", "<", "<=", ">", ">=")

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+|//[^\n]*|/\*.*?\*/)
  | (?P<str>"(?:[^"\\]|\\.)*")
  | (?P<mac>[0-9A-Fa-f]{2}(?::[0-9A-Fa-f]{2}){5}(?![0-9A-Za-z_]))
  | (?P<pfx>\d+\.\d+\.\d+\.\d+/\d+)
  | (?P<ip>\d+\.\d+\.\d+\.\d+)
  | (?P<float>\d+\.\d+(?:[eE][-+]?\d+)?)
  | (?P<int>0[xX][0-9A-Fa-f]+|0b[01]+|\d+)
  | (?P<dir>\.[a-z]+)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>:-|<=|>=|!=|[=<>(){},;.!@:+\-*/%^])
    """,
    re.VERBOSE | re.DOTALL,
)


class NdlError(Exception):
    """Text the reader does not understand, at file:line:col."""


@dataclass
class Tok:
    kind: str
    text: str
    where: str


@dataclass
class Rule:
    head: tuple
    body: list
    where: str


@dataclass
class Program:
    decls: dict[str, list[str]] = field(default_factory=dict)  # relation -> column types
    located: set[str] = field(default_factory=set)
    outputs: list[str] = field(default_factory=list)
    rules: list[Rule] = field(default_factory=list)
    facts: dict[str, set[tuple]] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)


def tokenize(text: str, name: str) -> list[Tok]:
    toks: list[Tok] = []
    pos, line, line_start = 0, 1, 0
    n = len(text)
    while pos < n:
        m = _TOKEN.match(text, pos)
        if m is None:
            raise NdlError(f"{name}:{line}:{pos - line_start + 1}: unexpected character {text[pos]!r}")
        kind = m.lastgroup
        s = m.group()
        if kind != "ws":
            toks.append(Tok(kind, s, f"{name}:{line}:{pos - line_start + 1}"))
        nl = s.count("\n")
        if nl:
            line += nl
            line_start = pos + s.rindex("\n") + 1
        pos = m.end()
    toks.append(Tok("eof", "", f"{name}:{line}:1"))
    return toks


def _int(text: str) -> int:
    if text[:2] in ("0x", "0X"):
        return int(text[2:], 16)
    if text[:2] == "0b":
        return int(text[2:], 2)
    return int(text)


def _unescape(s: str) -> str:
    body = s[1:-1]
    if "\\" not in body:
        return body
    out, i = [], 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            out.append({"n": "\n", "t": "\t", "\\": "\\", '"': '"'}.get(nxt, nxt))
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def literal_value(tok: Tok):
    k = tok.kind
    if k == "str":
        return _unescape(tok.text)
    if k == "int":
        return _int(tok.text)
    if k == "ip":
        return Ipv4.parse(tok.text)
    if k == "pfx":
        return Prefix4.parse(tok.text)
    if k == "mac":
        return Mac.parse(tok.text)
    if k == "float":
        return Float(float(tok.text))
    raise NdlError(f"{tok.where}: expected a value, found {tok.text!r}")


class _Parser:
    def __init__(self, toks: list[Tok], relations: set[str]):
        self.t = toks
        self.i = 0
        self.relations = relations

    def peek(self, k: int = 0) -> Tok:
        return self.t[min(self.i + k, len(self.t) - 1)]

    def next(self) -> Tok:
        tok = self.t[self.i]
        self.i += 1
        return tok

    def expect(self, text: str) -> Tok:
        tok = self.next()
        if tok.text != text or tok.kind == "str":
            raise NdlError(f"{tok.where}: expected `{text}`, found `{tok.text}`")
        return tok

    def at(self, text: str) -> bool:
        tok = self.peek()
        return tok.text == text and tok.kind in ("op", "ident", "dir")

    # ---------------------------------------------------------------- statements
    def program(self, prog: Program) -> None:
        while self.peek().kind != "eof":
            tok = self.peek()
            if tok.kind == "dir":
                self.directive(prog)
            else:
                self.clause(prog)

    def directive(self, prog: Program) -> None:
        d = self.next()
        if d.text == ".type":
            name = self.next().text
            self.expect("=")
            prog.aliases[name] = self.next().text
        elif d.text == ".decl":
            name = self.next().text
            self.expect("(")
            cols: list[str] = []
            while not self.at(")"):
                if self.at("@"):
                    self.next()
                    prog.located.add(name)
                self.next()  # column name
                self.expect(":")
                cols.append(self.next().text)
                if self.at(","):
                    self.next()
            self.expect(")")
            prog.decls[name] = cols
        elif d.text in (".output", ".input"):
            names = [self.next().text]
            while self.at(","):
                self.next()
                names.append(self.next().text)
            if d.text == ".output":
                prog.outputs.extend(n for n in names if n not in prog.outputs)
        else:
            raise NdlError(f"{d.where}: directive {d.text} is not in the subset this reader knows")

    def clause(self, prog: Program) -> None:
        where = self.peek().where
        head = self.atom()
        if self.at(":-"):
            self.next()
            body = self.disjunction()
            self.expect(".")
            prog.rules.append(Rule(head, body, where))
            return
        self.expect(".")
        args = head[2]
        if all(a[0] == "const" for a in args):
            prog.facts.setdefault(head[1], set()).add(tuple(a[1] for a in args))
        else:  # a fact with computed arguments: a rule with an empty body
            prog.rules.append(Rule(head, [], where))

    # ---------------------------------------------------------------- bodies
    def disjunction(self) -> list:
        """Returns a conjunction (list of literals); `;` makes an ('or', ...) literal."""
        alts = [self.conjunction()]
        while self.at(";"):
            self.next()
            alts.append(self.conjunction())
        if len(alts) == 1:
            return alts[0]
        return [("or", alts)]

    def conjunction(self) -> list:
        lits = [self.literal()]
        while self.at(","):
            self.next()
            lits.append(self.literal())
        return lits

    def literal(self):
        tok = self.peek()
        if self.at("!"):
            self.next()
            name = self.peek().text
            if name in self.relations:
                return ("not", self.atom())
            call = self.primary()
            if call[0] != "call":
                raise NdlError(f"{tok.where}: expected an atom after `!`")
            return ("notpred", call)
        if self.at("("):
            save = self.i
            try:
                self.next()
                inner = self.disjunction()
                self.expect(")")
                if self.peek().text not in CMP_OPS and self.peek().text not in BIN_LEVEL:
                    return inner[0] if len(inner) == 1 else ("or", [inner])
            except NdlError:
                pass
            self.i = save
        if tok.kind == "ident" and tok.text in self.relations and self.peek(1).text == "(":
            return self.atom()
        left = self.expr()
        op = self.peek()
        if op.text not in CMP_OPS:
            if left[0] == "call" and left[1] in PREDICATE_FUNCTORS:
                return ("pred", left)
            raise NdlError(f"{op.where}: expected a comparison, found `{op.text}`")
        self.next()
        right = self.aggregate_or_expr()
        return ("cmp", op.text, left, right)

    def aggregate_or_expr(self):
        tok = self.peek()
        nxt = self.peek(1)
        if tok.kind == "ident" and tok.text in AGGREGATES and (nxt.text == ":" or nxt.kind == "ident"):
            self.next()
            target = None
            if not self.at(":"):
                target = self.expr()
            order = []
            if self.peek().kind == "ident" and self.peek().text == "by":
                self.next()
                order.append(self.expr())
                while self.at(","):
                    self.next()
                    order.append(self.expr())
            self.expect(":")
            self.expect("{")
            body = self.disjunction()
            self.expect("}")
            return ("agg", tok.text, target, body, order)
        return self.expr()

    def atom(self):
        name = self.next()
        if name.kind != "ident":
            raise NdlError(f"{name.where}: expected a relation name, found `{name.text}`")
        self.expect("(")
        return ("atom", name.text, self.args())

    def args(self):
        """The comma-separated expressions up to and including `)` (after `(`)."""
        out = []
        while not self.at(")"):
            out.append(self.expr())
            if self.at(","):
                self.next()
        self.expect(")")
        return out

    # ---------------------------------------------------------------- expressions
    def expr(self, min_level: int = 0):
        lhs = self.power()
        while True:
            op = self.peek()
            if op.kind not in ("op", "ident") or op.text not in BIN_LEVEL:
                return lhs
            level = BIN_LEVEL[op.text]
            if level < min_level:
                return lhs
            self.next()
            rhs = self.expr(level + 1)
            lhs = ("bin", op.text, lhs, rhs)

    def power(self):
        base = self.unary()
        if self.at("^"):
            self.next()
            return ("bin", "^", base, self.power())
        return base

    def unary(self):
        if self.at("-"):
            self.next()
            e = self.unary()
            if e[0] == "const" and isinstance(e[1], int):
                return ("const", -e[1])
            if e[0] == "const" and isinstance(e[1], Float):
                return ("const", Float(-e[1].x))
            return ("neg", e)
        if self.peek().kind == "ident" and self.peek().text in ("bnot", "lnot") and self.peek(1).text not in (",", ")"):
            op = self.next().text
            return ("un", op, self.unary())
        return self.primary()

    def primary(self):
        tok = self.next()
        if tok.kind == "op" and tok.text == "(":
            e = self.expr()
            self.expect(")")
            return e
        if tok.kind == "ident":
            if tok.text == "_":
                return ("wild",)
            if self.at("("):
                self.next()
                return ("call", tok.text, self.args())
            return ("var", tok.text)
        return ("const", literal_value(tok))


def parse_files(files: list[tuple[str, str]]) -> Program:
    """Parses (name, text) pairs as one program."""
    tokens = [(name, tokenize(text, name)) for name, text in files]
    relations: set[str] = set()
    for _, toks in tokens:
        for a, b in zip(toks, toks[1:]):
            if a.kind == "dir" and a.text == ".decl":
                relations.add(b.text)
    prog = Program()
    for _, toks in tokens:
        _Parser(toks, relations).program(prog)
    return prog
