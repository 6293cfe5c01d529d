"""AST for the Souffle subset exercised by the oracle tests.

The same AST is rendered to Souffle text (for netc), to ASP (clingo_ref) and
evaluated directly (naive_ref).  A small parser for the subset lets the
self-tests be written as readable Souffle text and lets reproducers be
re-checked from their `prog.dl`.

Only the `number` type is used.  A database is a mapping
relation name -> frozenset of int tuples.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# --------------------------------------------------------------------------
# Terms


@dataclass(frozen=True)
class Var:
    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Const:
    value: int | str  # str = a Souffle symbol

    def __str__(self) -> str:
        return fmt_value(self.value)


def fmt_value(v: int | str) -> str:
    """Program/script text form: numbers bare, symbols quoted with escapes."""
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return str(v)


@dataclass(frozen=True)
class Wild:
    def __str__(self) -> str:
        return "_"


@dataclass(frozen=True)
class BinOp:
    op: str  # one of + - *
    left: Term
    right: Term

    def __str__(self) -> str:
        return f"{_paren(self.left)} {self.op} {_paren(self.right)}"


Term = Var | Const | Wild | BinOp

ARITH_OPS = ("+", "-", "*")
CMP_OPS = ("<", "<=", ">", ">=", "=", "!=")
AGG_FUNCS = ("count", "sum", "min", "max")


def _paren(t: Term) -> str:
    return f"({t})" if isinstance(t, BinOp) else str(t)


def term_vars(t: Term) -> list[Var]:
    if isinstance(t, Var):
        return [t]
    if isinstance(t, BinOp):
        return term_vars(t.left) + term_vars(t.right)
    return []


# --------------------------------------------------------------------------
# Literals and rules


@dataclass(frozen=True)
class Atom:
    rel: str
    args: tuple[Term, ...]

    def __str__(self) -> str:
        return f"{self.rel}({', '.join(map(str, self.args))})"


@dataclass(frozen=True)
class Neg:
    atom: Atom

    def __str__(self) -> str:
        return f"!{self.atom}"


@dataclass(frozen=True)
class Cmp:
    op: str
    left: Term
    right: Term

    def __str__(self) -> str:
        return f"{self.left} {self.op} {self.right}"


@dataclass(frozen=True)
class Agg:
    """`result = func [target] : { body }`."""

    result: Var
    func: str
    target: Term | None  # None for count
    body: tuple[Literal, ...]
    braces: bool = True  # False: Souffle's short form `m = max x : b(x)` (single atom)

    def __str__(self) -> str:
        tgt = "" if self.target is None else f" {self.target}"
        inner = ", ".join(map(str, self.body))
        if not self.braces and len(self.body) == 1:
            return f"{self.result} = {self.func}{tgt} : {inner}"
        return f"{self.result} = {self.func}{tgt} : {{ {inner} }}"


@dataclass(frozen=True)
class Disj:
    """`( alt1 ; alt2 ; ... )` in a rule body; each alternative is a conjunction."""

    alts: tuple[tuple[Literal, ...], ...]

    def __str__(self) -> str:
        return "(" + " ; ".join(", ".join(map(str, alt)) for alt in self.alts) + ")"


@dataclass(frozen=True)
class NegGroup:
    """`!(c1 ; c2, c3)`: a negated, parenthesised group of comparisons."""

    alts: tuple[tuple[Cmp, ...], ...]

    def __str__(self) -> str:
        return "!(" + " ; ".join(", ".join(map(str, alt)) for alt in self.alts) + ")"


NEGATED_CMP = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "=": "!=", "!=": "="}


def negate_group(g: NegGroup) -> Disj:
    """De Morgan: not(A1 or A2) = not A1 and not A2; not(c1 and c2) = not c1 or not c2."""
    parts: list[Literal] = []
    for alt in g.alts:
        parts.append(Disj(tuple((Cmp(NEGATED_CMP[c.op], c.left, c.right),) for c in alt)))
    return Disj((tuple(parts),))


Literal = Atom | Neg | Cmp | Agg | Disj | NegGroup


@dataclass(frozen=True)
class Rule:
    head: Atom
    body: tuple[Literal, ...] = ()
    extra_heads: tuple[Atom, ...] = ()  # `h1(..), h2(..) :- body.`

    @property
    def heads(self) -> tuple[Atom, ...]:
        return (self.head, *self.extra_heads)

    def __str__(self) -> str:
        heads = ", ".join(map(str, self.heads))
        if not self.body:
            return f"{heads}."
        return f"{heads} :- {', '.join(map(str, self.body))}."


def _dnf(body: tuple[Literal, ...], neg_groups: bool) -> list[tuple[Literal, ...]]:
    out: list[tuple[Literal, ...]] = [()]
    for lit in body:
        if isinstance(lit, NegGroup) and neg_groups:
            lit = negate_group(lit)
        if isinstance(lit, Disj):
            out = [pre + alt_conj for pre in out for alt in lit.alts for alt_conj in _dnf(alt, neg_groups)]
        else:
            out = [pre + (lit,) for pre in out]
    return out


def expand_rule(rule: Rule, neg_groups: bool = True) -> list[Rule]:
    """Plain rules (one head, no disjunction) equivalent to `rule`; negated
    groups are rewritten with De Morgan unless neg_groups=False."""
    return [Rule(h, body) for h in rule.heads for body in _dnf(rule.body, neg_groups)]


def expand_rules(rules: list[Rule], neg_groups: bool = True) -> list[Rule]:
    return [r for rule in rules for r in expand_rule(rule, neg_groups)]


@dataclass(frozen=True)
class Relation:
    name: str
    arity: int
    is_input: bool = False
    is_output: bool = False
    types: tuple[str, ...] = ()  # "number" / "symbol" per column; () = all number

    @property
    def col_types(self) -> tuple[str, ...]:
        return self.types or ("number",) * self.arity


@dataclass
class Program:
    relations: list[Relation]
    rules: list[Rule] = field(default_factory=list)

    def rel(self, name: str) -> Relation:
        for r in self.relations:
            if r.name == name:
                return r
        raise KeyError(name)

    @property
    def inputs(self) -> list[Relation]:
        return [r for r in self.relations if r.is_input]

    @property
    def outputs(self) -> list[Relation]:
        return [r for r in self.relations if r.is_output]

    def souffle(self) -> str:
        out: list[str] = []
        for r in self.relations:
            attrs = ", ".join(f"a{i}: {t}" for i, t in enumerate(r.col_types))
            out.append(f".decl {r.name}({attrs})")
        for r in self.relations:
            if r.is_input:
                out.append(f".input {r.name}")
        for r in self.relations:
            if r.is_output:
                out.append(f".output {r.name}")
        out.append("")
        out.extend(str(rule) for rule in self.rules)
        return "\n".join(out) + "\n"


Tuple = tuple[int | str, ...]
Database = dict[str, frozenset[Tuple]]


def fmt_tuple(rel: str, t: Tuple) -> str:
    return f"{rel}({', '.join(map(fmt_value, t))})"


# --------------------------------------------------------------------------
# Update scripts


@dataclass(frozen=True)
class Op:
    sign: str  # "+" or "-"
    rel: str
    tup: Tuple

    def __str__(self) -> str:
        return f"{self.sign}{fmt_tuple(self.rel, self.tup)}."


Transaction = tuple[Op, ...]


def render_script(txs: list[Transaction]) -> str:
    lines: list[str] = []
    for tx in txs:
        lines.extend(str(op) for op in tx)
        lines.append("commit.")
    return "\n".join(lines) + "\n"


def apply_tx(db: Database, tx: Transaction) -> Database:
    """Set semantics: inserting a present fact / deleting an absent one is a no-op."""
    new = {k: set(v) for k, v in db.items()}
    for op in tx:
        s = new.setdefault(op.rel, set())
        if op.sign == "+":
            s.add(op.tup)
        else:
            s.discard(op.tup)
    return {k: frozenset(v) for k, v in new.items()}


def render_facts_file(lines: list[Tuple]) -> str:
    """Tab-separated; symbols verbatim (the generator never uses tabs/newlines in them)."""
    return "".join("\t".join(map(str, t)) + "\n" for t in lines)


def parse_facts_line(line: str, types: tuple[str, ...]) -> Tuple:
    fields = line.split("\t")
    if len(fields) != len(types):
        raise ParseError(f"expected {len(types)} fields in {line!r}")
    return tuple(f if ty == "symbol" else int(f) for f, ty in zip(fields, types, strict=True))


# --------------------------------------------------------------------------
# Parser for the subset (used by self-tests and replay)

_TOKEN_RE = re.compile(
    r"\s+|//[^\n]*|/\*.*?\*/"
    r'|(?P<tok>"(?:[^"\\]|\\.)*"|:-|<=|>=|!=|\.[A-Za-z_]+|[A-Za-z_][A-Za-z0-9_]*|\d+|[(),.:;{}<>=!+\-*_])',
    re.S,
)


class ParseError(Exception):
    pass


def _tokenize(text: str) -> list[str]:
    toks: list[str] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN_RE.match(text, pos)
        if not m:
            raise ParseError(f"bad character at {pos}: {text[pos : pos + 20]!r}")
        if m.group("tok"):
            toks.append(m.group("tok"))
        pos = m.end()
    return toks


class _Parser:
    def __init__(self, text: str):
        self.toks = _tokenize(text)
        self.i = 0

    def peek(self, k: int = 0) -> str | None:
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else None

    def next(self) -> str:
        t = self.peek()
        if t is None:
            raise ParseError("unexpected end of input")
        self.i += 1
        return t

    def expect(self, t: str) -> None:
        got = self.next()
        if got != t:
            raise ParseError(f"expected {t!r}, got {got!r} (token {self.i})")

    def program(self) -> Program:
        decls: dict[str, tuple[str, ...]] = {}
        order: list[str] = []
        inputs: set[str] = set()
        outputs: set[str] = set()
        rules: list[Rule] = []
        while self.peek() is not None:
            t = self.peek()
            if t == ".decl":
                self.next()
                name = self.next()
                self.expect("(")
                tys: list[str] = []
                while self.peek() != ")":
                    self.next()  # attr name
                    self.expect(":")
                    ty = self.next()
                    if ty not in ("number", "symbol"):
                        raise ParseError(f"unsupported type {ty}")
                    tys.append(ty)
                    if self.peek() == ",":
                        self.next()
                self.expect(")")
                decls[name] = tuple(tys)
                order.append(name)
            elif t in (".input", ".output"):
                self.next()
                target = inputs if t == ".input" else outputs
                target.add(self.next())
                while self.peek() == ",":
                    self.next()
                    target.add(self.next())
            else:
                rules.append(self.rule())
        rels = [
            Relation(n, len(decls[n]), n in inputs, n in outputs, decls[n] if "symbol" in decls[n] else ())
            for n in order
        ]
        return Program(rels, rules)

    def rule(self) -> Rule:
        heads = [self.atom()]
        while self.peek() == ",":
            self.next()
            heads.append(self.atom())
        body: tuple[Literal, ...] = ()
        if self.peek() == ":-":
            self.next()
            alts = [self.conj()]
            while self.peek() == ";":  # top-level disjunction `h :- a ; b.`
                self.next()
                alts.append(self.conj())
            body = alts[0] if len(alts) == 1 else (Disj(tuple(alts)),)
        self.expect(".")
        return Rule(heads[0], body, tuple(heads[1:]))

    def body(self, end: str) -> tuple[Literal, ...]:
        lits = [self.literal()]
        while self.peek() == ",":
            self.next()
            lits.append(self.literal())
        if self.peek() != end:
            raise ParseError(f"expected {end!r}, got {self.peek()!r}")
        return tuple(lits)

    def literal(self) -> Literal:
        t = self.peek()
        if t == "(":
            save = self.i
            try:
                return self.disjunction()
            except ParseError:
                self.i = save  # a parenthesised arithmetic term, e.g. `(x + 1) < y`
        if t == "!" and self.peek(1) == "(":
            self.next()
            d = self.disjunction()
            if not all(isinstance(c, Cmp) for alt in d.alts for c in alt):
                raise ParseError("only comparisons in a negated group")
            return NegGroup(d.alts)
        if t == "!":
            self.next()
            return Neg(self.atom())
        if t is not None and re.match(r"[A-Za-z]", t) and self.peek(1) == "(":
            return self.atom()
        if t is not None and re.match(r"[A-Za-z]", t) and self.peek(1) == "=" and self.peek(2) in AGG_FUNCS:
            res = Var(self.next())
            self.expect("=")
            func = self.next()
            target = None if func == "count" else self.term()
            self.expect(":")
            if self.peek() != "{":
                return Agg(res, func, target, (self.atom(),), braces=False)
            self.expect("{")
            inner = self.body("}")
            self.expect("}")
            return Agg(res, func, target, inner)
        left = self.term()
        op = self.next()
        if op not in CMP_OPS:
            raise ParseError(f"expected comparison, got {op!r}")
        return Cmp(op, left, self.term())

    def disjunction(self) -> Disj:
        self.expect("(")
        alts = [self.conj()]
        while self.peek() == ";":
            self.next()
            alts.append(self.conj())
        self.expect(")")
        return Disj(tuple(alts))

    def conj(self) -> tuple[Literal, ...]:
        lits = [self.literal()]
        while self.peek() == ",":
            self.next()
            lits.append(self.literal())
        return tuple(lits)

    def atom(self) -> Atom:
        name = self.next()
        self.expect("(")
        args = [self.term()]
        while self.peek() == ",":
            self.next()
            args.append(self.term())
        self.expect(")")
        return Atom(name, tuple(args))

    def term(self) -> Term:
        t = self.product()
        while self.peek() in ("+", "-"):
            op = self.next()
            t = BinOp(op, t, self.product())
        return t

    def product(self) -> Term:
        t = self.primary()
        while self.peek() == "*":
            self.next()
            t = BinOp("*", t, self.primary())
        return t

    def primary(self) -> Term:
        t = self.next()
        if t == "(":
            inner = self.term()
            self.expect(")")
            return inner
        if t == "_":
            return Wild()
        if t.startswith('"'):
            return Const(unquote(t))
        if t.isdigit():
            return Const(int(t))
        if re.match(r"[A-Za-z_]", t):
            return Var(t)
        raise ParseError(f"unexpected token {t!r}")


def parse_program(text: str) -> Program:
    return _Parser(text).program()


def unquote(t: str) -> str:
    body = t[1:-1]
    out = []
    i = 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            out.append({"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\"}.get(nxt, nxt))
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def parse_value(text: str) -> int | str:
    """A value in script/change notation: `-3` -> int, `"a b"` -> str (bare words kept as str)."""
    t = text.strip()
    if re.fullmatch(r"-?\d+", t):
        return int(t)
    if len(t) >= 2 and t[0] == '"' and t[-1] == '"':
        return unquote(t)
    return t


def split_args(text: str) -> list[str]:
    """Split `1, "a, b", 3` on top-level commas."""
    args: list[str] = []
    cur: list[str] = []
    in_str = False
    i = 0
    while i < len(text):
        c = text[i]
        if in_str:
            cur.append(c)
            if c == "\\" and i + 1 < len(text):
                cur.append(text[i + 1])
                i += 1
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
            cur.append(c)
        elif c == ",":
            args.append("".join(cur))
            cur = []
        else:
            cur.append(c)
        i += 1
    if in_str:
        raise ParseError(f"unterminated string in {text!r}")
    args.append("".join(cur))
    return [a.strip() for a in args]


_GROUND_ATOM_RE = re.compile(r'([A-Za-z_]\w*)\(((?:[^()"]|"(?:[^"\\]|\\.)*")*)\)')


def parse_facts_inline(text: str) -> Database:
    """Parse `r(1, 2). s("a").` style ground facts (for self-tests)."""
    db: dict[str, set[Tuple]] = {}
    for m in _GROUND_ATOM_RE.finditer(text):
        db.setdefault(m.group(1), set()).add(tuple(parse_value(x) for x in split_args(m.group(2))))
    return {k: frozenset(v) for k, v in db.items()}


def parse_script(text: str) -> list[Transaction]:
    txs: list[Transaction] = []
    cur: list[Op] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if line == "commit.":
            txs.append(tuple(cur))
            cur = []
            continue
        m = re.fullmatch(r"([+-])([A-Za-z_]\w*)\((.*)\)\.", line)
        if not m:
            raise ParseError(f"bad script line {line!r}")
        tup = tuple(parse_value(x) for x in split_args(m.group(3)))
        cur.append(Op(m.group(1), m.group(2), tup))
    return txs


def souffle_materializes(agg: Agg) -> bool:
    """Whether Souffle aggregates over the distinct bindings of the body's
    named variables, so the positions a `_` leaves open collapse (its
    MaterializeAggregationQueries pass turns such a body into a relation
    whose columns are the named variables): a body of more than one
    positive atom, or with an inner aggregate, or a single atom repeating a
    variable. Any other body is aggregated tuple by tuple. The two differ
    only when a positive atom has a `_`."""
    atoms = [lit for lit in agg.body if isinstance(lit, Atom)]
    if not any(isinstance(t, Wild) for a in atoms for t in a.args):
        return False
    if len(atoms) > 1 or any(isinstance(lit, Agg) for lit in agg.body):
        return True
    names = [t.name for t in atoms[0].args if isinstance(t, Var)] if atoms else []
    return len(names) != len(set(names))
