"""Hypothesis strategies: random stratified Souffle programs + facts + update scripts.

Stratification by construction: EDB relations are level 0; every IDB relation
gets a level >= 1.  A rule for a relation at level l may use positive atoms of
any relation at level <= l (same level => recursion / mutual recursion), but
negations and aggregate bodies only relations at level < l.  Every cycle of
the dependency graph therefore stays inside one level and is purely positive.

Termination by construction: all values are non-negative; head arithmetic is
only `v + 1` (guard `v < 7`), `v - 1` (guard `v > 0`), `v * 2` (guard `v < 4`)
or `v + w` (guard `v + w < 8`), so arithmetic never produces a value > 7 and
every relation stays finite even under recursion.

Features can be switched off for bisecting with the env var
NETC_ORACLE_DISABLE, e.g. `NETC_ORACLE_DISABLE=agg,negation`.  Names:
  agg, multi_atom_agg, agg_filter, negation, neg_wildcard, arith, cmp,
  recursion, templates, idb_facts, dup_fact_lines, edb_output, dup_inserts,
  absent_deletes, wildcards, constants, bind_eq, agg_nobrace, disjunction,
  multi_head, agg_negation, agg_expr, multi_agg, agg_only, neg_only, empty_tx,
  symbols, neg_group
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from hypothesis import strategies as st

from .model import (
    Agg,
    Atom,
    BinOp,
    Cmp,
    Const,
    Database,
    Disj,
    Literal,
    Neg,
    NegGroup,
    Op,
    Program,
    Relation,
    Rule,
    Term,
    Transaction,
    Tuple,
    Var,
    Wild,
    apply_tx,
)

# values 0..DOMAIN_MAX; facts per input relation 0..MAX_FACTS (env knobs for stress runs)
DOMAIN_MAX = int(os.environ.get("NETC_ORACLE_DOMAIN_MAX", "7"))
MAX_FACTS = int(os.environ.get("NETC_ORACLE_MAX_FACTS", "14"))
FEATURES = (
    "agg",
    "multi_atom_agg",
    "agg_filter",
    "negation",
    "neg_wildcard",
    "arith",
    "cmp",
    "recursion",
    "templates",
    "idb_facts",
    "dup_fact_lines",
    "edb_output",
    "dup_inserts",
    "absent_deletes",
    "wildcards",
    "constants",
    "bind_eq",
    "agg_nobrace",
    "disjunction",
    "multi_head",
    "agg_negation",
    "agg_expr",
    "multi_agg",
    "agg_only",
    "neg_only",
    "empty_tx",
    "symbols",
    "neg_group",
)


def enabled_features() -> frozenset[str]:
    off = {f.strip() for f in os.environ.get("NETC_ORACLE_DISABLE", "").split(",") if f.strip()}
    unknown = off - set(FEATURES)
    if unknown:
        raise ValueError(f"unknown feature(s) in NETC_ORACLE_DISABLE: {sorted(unknown)}")
    return frozenset(set(FEATURES) - off)


@dataclass
class Example:
    program: Program
    facts_lines: dict[str, list[Tuple]]  # lines of each .facts file (may repeat)
    transactions: list[Transaction]
    workers: tuple[int | None, ...] = (None,)

    @property
    def initial_db(self) -> Database:
        return {r.name: frozenset(self.facts_lines.get(r.name, ())) for r in self.program.inputs}

    def states(self) -> list[Database]:
        """EDB after commit 0 (initial), 1, ..., n."""
        out = [self.initial_db]
        for tx in self.transactions:
            out.append(apply_tx(out[-1], tx))
        return out


def _chance(draw, pct: int) -> bool:
    """True with probability pct%; shrinks towards False."""
    return draw(st.integers(0, 99)) >= 100 - pct


SYMBOLS = ("a", "b", "ab", "B", "a b", "z9", "10")  # ordered by text: "10" < "B" < "a" < "a b" < ...
# characters that need care in scripts / change lines (quotes, escapes, commas, parentheses)
WEIRD_SYMBOLS = ('q"t', "b\\s", "c,d", "f(g)", "-1", "é")
if os.environ.get("NETC_ORACLE_WEIRD_SYMBOLS", "1") != "0":
    SYMBOLS = SYMBOLS + WEIRD_SYMBOLS


@dataclass
class _RuleBuilder:
    draw: object
    feats: frozenset[str]
    n: int = 0
    bound: list[Var] = field(default_factory=list)
    agg_results: list[Var] = field(default_factory=list)
    types: dict[Var, str] = field(default_factory=dict)

    def fresh(self, prefix: str = "x", ty: str = "number") -> Var:
        v = Var(f"{prefix}{self.n}")
        self.n += 1
        self.types[v] = ty
        return v

    def of(self, ty: str, pool: list[Var] | None = None) -> list[Var]:
        return [v for v in (self.bound if pool is None else pool) if self.types[v] == ty]


def _value(draw, ty: str = "number") -> int | str:
    if ty == "symbol":
        return draw(st.sampled_from(SYMBOLS))
    return draw(st.integers(0, DOMAIN_MAX))


def _gen_positive_atom(draw, b: _RuleBuilder, rel: Relation, must_share: bool) -> Atom:
    args: list[Term] = []
    for ty in rel.col_types:
        k = draw(st.integers(0, 9))
        same = b.of(ty)
        if k <= 3 and same:
            args.append(draw(st.sampled_from(same)))
        elif k == 8 and "constants" in b.feats:
            args.append(Const(_value(draw, ty)))
        elif k == 9 and "wildcards" in b.feats:
            args.append(Wild())
        else:
            args.append(b.fresh("x", ty))
    if must_share and b.bound and not any(a in b.bound for a in args):
        positions = [i for i, ty in enumerate(rel.col_types) if b.of(ty)]
        if positions:
            pos = draw(st.sampled_from(positions))
            args[pos] = draw(st.sampled_from(b.of(rel.col_types[pos])))
    for a in args:
        if isinstance(a, Var) and a not in b.bound:
            b.bound.append(a)
    return Atom(rel.name, tuple(args))


def _gen_cmp(draw, b: _RuleBuilder, vars_: list[Var]) -> Cmp:
    op = draw(st.sampled_from(["<", "!=", "<=", ">", ">=", "="]))
    left = draw(st.sampled_from(vars_))
    ty = b.types[left]
    others = [v for v in b.of(ty, vars_) if v != left]
    k = draw(st.integers(0, 3))
    right: Term
    if k == 0 or not others:
        right = Const(_value(draw, ty))
    elif k == 3 and "arith" in b.feats and ty == "number":
        right = BinOp("+", draw(st.sampled_from(b.of(ty, vars_))), Const(draw(st.integers(1, 2))))
    else:
        right = draw(st.sampled_from(others))
    return Cmp(op, left, right)


def _gen_negation(draw, b: _RuleBuilder, rel: Relation, pool: list[Var] | None = None) -> Neg:
    args: list[Term] = []
    for ty in rel.col_types:
        k = draw(st.integers(0, 9))
        same = b.of(ty, pool)
        if k <= 5 and same:
            args.append(draw(st.sampled_from(same)))
        elif k <= 7 or "neg_wildcard" not in b.feats:
            args.append(Const(_value(draw, ty)))
        else:
            args.append(Wild())
    return Neg(Atom(rel.name, tuple(args)))


def _gen_aggregate(draw, b: _RuleBuilder, lower: list[Relation]) -> tuple[Agg, list[Literal]]:
    outer = [v for v in b.bound if v not in b.agg_results]
    local: list[Var] = []
    n_atoms = 2 if ("multi_atom_agg" in b.feats and _chance(draw, 25)) else 1
    body: list[Literal] = []
    for i in range(n_atoms):
        rel = draw(st.sampled_from(lower))
        args: list[Term] = []
        for ty in rel.col_types:
            k = draw(st.integers(0, 9))
            if k <= 2 and b.of(ty, outer):
                args.append(draw(st.sampled_from(b.of(ty, outer))))  # correlated
            elif k <= 3 and b.of(ty, local):
                args.append(draw(st.sampled_from(b.of(ty, local))))
            elif k == 8 and "constants" in b.feats:
                args.append(Const(_value(draw, ty)))
            elif k == 9:
                args.append(Wild())
            else:
                v = b.fresh("y", ty)
                local.append(v)
                args.append(v)
        if i > 0:
            joinable = local + outer
            if joinable and not any(a in joinable for a in args):
                positions = [j for j, ty in enumerate(rel.col_types) if b.of(ty, joinable)]
                if positions:
                    pos = draw(st.sampled_from(positions))
                    args[pos] = draw(st.sampled_from(b.of(rel.col_types[pos], joinable)))
        body.append(Atom(rel.name, tuple(args)))
    if local and "agg_filter" in b.feats and _chance(draw, 20):
        v = draw(st.sampled_from(local))
        body.append(Cmp(draw(st.sampled_from(["<", ">", "!="])), v, Const(_value(draw, b.types[v]))))
    if "agg_negation" in b.feats and _chance(draw, 15):
        body.append(_gen_negation(draw, b, draw(st.sampled_from(lower)), local + outer))
    func = draw(st.sampled_from(["count", "sum", "min", "max"]))
    target: Term | None = None
    numeric = b.of("number", local)
    if func != "count":
        if not numeric:
            func = "count"
        else:
            target = draw(st.sampled_from(numeric))
            if "agg_expr" in b.feats and _chance(draw, 15):
                if draw(st.booleans()):
                    target = BinOp("+", target, Const(draw(st.integers(1, 3))))
                else:
                    target = BinOp("*", target, draw(st.sampled_from(numeric)))
    res = b.fresh("c")
    b.agg_results.append(res)
    braces = not (len(body) == 1 and "agg_nobrace" in b.feats and _chance(draw, 15))
    agg = Agg(res, func, target, tuple(body), braces)
    b.bound.append(res)
    extra: list[Literal] = []
    if "cmp" in b.feats and _chance(draw, 25):
        extra.append(Cmp(draw(st.sampled_from([">", "<", "!="])), res, Const(draw(st.integers(0, 3)))))
    return agg, extra


def _gen_binding(draw, b: _RuleBuilder) -> list[Literal]:
    """`v = w + c` (guarded), `v = c` or `w = v` binding a fresh variable v."""
    kind = draw(st.integers(0, 2)) if b.bound else 1
    if kind == 0 and not b.of("number"):
        kind = 2
    out: list[Literal]
    if kind == 0:
        v = b.fresh("b")
        w = draw(st.sampled_from(b.of("number")))
        c = draw(st.integers(1, 2))
        out = [Cmp("<", w, Const(DOMAIN_MAX + 1 - c)), Cmp("=", v, BinOp("+", w, Const(c)))]
    elif kind == 1:
        ty = "symbol" if ("symbols" in b.feats and _chance(draw, 20)) else "number"
        v = b.fresh("b", ty)
        out = [Cmp("=", v, Const(_value(draw, ty)))]
    else:
        w = draw(st.sampled_from(b.bound))
        v = b.fresh("b", b.types[w])
        out = [Cmp("=", w, v)]
    b.bound.append(v)
    return out


def _gen_head(draw, b: _RuleBuilder, head: Relation) -> tuple[Atom, list[Literal]]:
    args: list[Term] = []
    guards: list[Literal] = []
    for ty in head.col_types:
        k = draw(st.integers(0, 19))
        same = b.of(ty)
        if same and k < 15:
            args.append(draw(st.sampled_from(same)))
        elif same and k >= 17 and "arith" in b.feats and ty == "number":
            v = draw(st.sampled_from(same))
            kind = draw(st.integers(0, 3))
            if kind == 0:
                args.append(BinOp("+", v, Const(1)))
                guards.append(Cmp("<", v, Const(DOMAIN_MAX)))
            elif kind == 1:
                args.append(BinOp("-", v, Const(1)))
                guards.append(Cmp(">", v, Const(0)))
            elif kind == 2:
                args.append(BinOp("*", v, Const(2)))
                guards.append(Cmp("<", v, Const(4)))
            else:
                w = draw(st.sampled_from(same))
                args.append(BinOp("+", v, w))
                guards.append(Cmp("<", BinOp("+", v, w), Const(DOMAIN_MAX + 1)))
        else:
            args.append(Const(_value(draw, ty)))
    return Atom(head.name, tuple(args)), guards


def _gen_rule(
    draw,
    feats: frozenset[str],
    head: Relation,
    same_level: list[Relation],
    lower: list[Relation],
    recursive: bool,
    higher: list[Relation] | None = None,
) -> Rule:
    b = _RuleBuilder(draw, feats)
    shape = draw(st.integers(0, 99))
    if shape >= 96 and "agg_only" in feats and "agg" in feats:
        # no positive atom: `r(c, 3) :- [!e(1),] c = count : { e(_, _) }.`
        pre: list[Literal] = []
        if "negation" in feats and draw(st.booleans()):
            pre.append(_gen_negation(draw, b, draw(st.sampled_from(lower))))
        agg, extra = _gen_aggregate(draw, b, lower)
        head_atom, guards = _gen_head(draw, b, head)
        return Rule(head_atom, tuple(pre + [agg] + extra + guards))
    if shape >= 93 and "neg_only" in feats and "negation" in feats:
        # ground negations only: `r(1, 2) :- !e0(1), !e1(_, 3).`
        negs = [_gen_negation(draw, b, draw(st.sampled_from(lower))) for _ in range(draw(st.integers(1, 2)))]
        head_atom, _ = _gen_head(draw, b, head)
        return Rule(head_atom, tuple(negs))
    n_atoms = draw(st.sampled_from([1, 2, 2, 3, 3, 4]))
    body: list[Literal] = []
    for i in range(n_atoms):
        if i == 0 and recursive and same_level:
            pool = same_level
        elif recursive and same_level and _chance(draw, 15):
            pool = same_level
        else:
            pool = lower
        rel = draw(st.sampled_from(pool))
        atom = _gen_positive_atom(draw, b, rel, must_share=i > 0)
        if "disjunction" in feats and _chance(draw, 8):
            # `(r(x, y) ; s(y, x))`: both alternatives bind the same variables
            same_types = [r for r in pool if r.col_types == rel.col_types]
            rel2 = draw(st.sampled_from(same_types))
            uniform = len(set(rel.col_types)) == 1
            args2 = draw(st.permutations(atom.args)) if uniform else list(atom.args)
            body.append(Disj(((atom,), (Atom(rel2.name, tuple(args2)),))))
        else:
            body.append(atom)
    tail: list[Literal] = []
    if "disjunction" in feats and b.bound and _chance(draw, 10):
        alt1 = _gen_cmp(draw, b, list(b.bound))
        if "negation" in feats and lower and draw(st.booleans()):
            alt2: Literal = _gen_negation(draw, b, draw(st.sampled_from(lower)))
        else:
            alt2 = _gen_cmp(draw, b, list(b.bound))
        tail.append(Disj(((alt1,), (alt2,))))
    if "cmp" in feats and b.bound:
        for _ in range(draw(st.sampled_from([0, 0, 0, 1, 1, 2]))):
            tail.append(_gen_cmp(draw, b, list(b.bound)))
    if "neg_group" in feats and b.bound and _chance(draw, 10):
        # `!(x < 2 ; x > 5)`, `!(x = y, y != 3)`
        alts = tuple(
            tuple(_gen_cmp(draw, b, list(b.bound)) for _ in range(draw(st.integers(1, 2))))
            for _ in range(draw(st.integers(1, 2)))
        )
        tail.append(NegGroup(alts))
    lower_idb_or_edb = lower
    if "negation" in feats and lower_idb_or_edb and _chance(draw, 35):
        for _ in range(draw(st.integers(1, 2))):
            tail.append(_gen_negation(draw, b, draw(st.sampled_from(lower_idb_or_edb))))
    if "agg" in feats and lower and _chance(draw, 35):
        for _ in range(2 if "multi_agg" in feats and _chance(draw, 12) else 1):
            agg, extra = _gen_aggregate(draw, b, lower)
            tail.append(agg)
            tail.extend(extra)
    if "bind_eq" in feats and _chance(draw, 20):
        tail.extend(_gen_binding(draw, b))
    head_atom, guards = _gen_head(draw, b, head)
    extra_heads: list[Atom] = []
    if "multi_head" in feats and higher and _chance(draw, 10):
        # a second head at the same or a higher level keeps stratification
        h2, guards2 = _gen_head(draw, b, draw(st.sampled_from(higher)))
        extra_heads.append(h2)
        guards += guards2
    return Rule(head_atom, tuple(body + tail + guards), tuple(extra_heads))


def _template_rules(draw, h: Relation, e: Relation, partner: Relation | None) -> list[Rule]:
    """Classic recursive shapes for a binary relation h over a binary lower e."""
    x, y, z, p, a, c = (Var(n) for n in ("x", "y", "z", "p", "a", "c"))
    kind = draw(st.integers(0, 4))
    H = lambda s, t: Atom(h.name, (s, t))  # noqa: E731
    E = lambda s, t: Atom(e.name, (s, t))  # noqa: E731
    if kind == 0:  # right-linear transitive closure
        return [Rule(H(x, y), (E(x, y),)), Rule(H(x, z), (H(x, y), E(y, z)))]
    if kind == 1:  # non-linear transitive closure
        return [Rule(H(x, y), (E(x, y),)), Rule(H(x, z), (H(x, y), H(y, z)))]
    if kind == 2:  # same generation
        return [
            Rule(H(x, y), (E(x, p), E(y, p), Cmp("!=", x, y))),
            Rule(H(x, y), (E(x, a), H(a, c), E(y, c))),
        ]
    if kind == 3 and partner is not None:  # mutual recursion: odd/even length paths
        P = lambda s, t: Atom(partner.name, (s, t))  # noqa: E731
        return [
            Rule(H(x, y), (E(x, y),)),
            Rule(P(x, z), (H(x, y), E(y, z))),
            Rule(H(x, z), (P(x, y), E(y, z))),
        ]
    # bounded counting with recursion through arithmetic
    return [
        Rule(H(x, y), (E(x, y),)),
        Rule(H(x, BinOp("+", y, Const(1))), (H(x, y), E(y, _any(draw)), Cmp("<", y, Const(DOMAIN_MAX)))),
    ]


def _any(draw) -> Term:
    return Wild() if draw(st.booleans()) else Var("x")


NN = ("number", "number")


def _with_types(draw, r: Relation, feats: frozenset[str]) -> Relation:
    """Some relations get symbol columns (feature `symbols`)."""
    if "symbols" not in feats or not _chance(draw, 25):
        return r
    types = tuple("symbol" if _chance(draw, 50) else "number" for _ in range(r.arity))
    if "symbol" not in types:
        return r
    return Relation(r.name, r.arity, r.is_input, r.is_output, types)


@st.composite
def programs(draw, feats: frozenset[str] | None = None) -> Program:
    feats = enabled_features() if feats is None else feats
    n_edb = draw(st.integers(2, 6))
    edb = [
        Relation(
            f"e{i}",
            draw(st.sampled_from([2, 1, 2, 3])),
            is_input=True,
            is_output="edb_output" in feats and _chance(draw, 10),
        )
        for i in range(n_edb)
    ]
    edb = [_with_types(draw, r, feats) for r in edb]
    n_idb = draw(st.integers(2, 6))
    raw_levels = [draw(st.integers(1, n_idb)) for _ in range(n_idb)]
    dense = {lv: i + 1 for i, lv in enumerate(sorted(set(raw_levels)))}
    levels = sorted(dense[lv] for lv in raw_levels)
    idb = [Relation(f"r{i}", draw(st.sampled_from([2, 1, 2, 3])), is_output=True) for i in range(n_idb)]
    idb = [_with_types(draw, r, feats) for r in idb]
    level_of = {r.name: 0 for r in edb} | {r.name: lv for r, lv in zip(idb, levels, strict=True)}
    all_rels = edb + idb
    rules: list[Rule] = []
    for h in idb:
        lv = level_of[h.name]
        lower = [r for r in all_rels if level_of[r.name] < lv]
        same = [r for r in idb if level_of[r.name] == lv] if "recursion" in feats else []
        if "templates" in feats and "recursion" in feats and h.col_types == NN and _chance(draw, 30):
            bin_lower = [r for r in lower if r.col_types == NN]
            if bin_lower:
                partners = [r for r in same if r.col_types == NN and r != h]
                partner = draw(st.sampled_from(partners)) if partners else None
                rules.extend(_template_rules(draw, h, draw(st.sampled_from(bin_lower)), partner))
                continue
        n_rules = draw(st.integers(1, 3))
        for i in range(n_rules):
            recursive = i > 0 and bool(same) and _chance(draw, 60)
            higher = [r for r in idb if level_of[r.name] >= lv]
            rules.append(_gen_rule(draw, feats, h, same, lower, recursive, higher))
        if "idb_facts" in feats and _chance(draw, 10):
            rules.append(Rule(Atom(h.name, tuple(Const(_value(draw, ty)) for ty in h.col_types))))
    return Program(all_rels, rules)


def _col(ty: str):
    return st.sampled_from(SYMBOLS) if ty == "symbol" else st.integers(0, DOMAIN_MAX)


def _tuple(draw, rel: Relation) -> Tuple:
    return tuple(_value(draw, ty) for ty in rel.col_types)


@st.composite
def facts_for(draw, prog: Program, feats: frozenset[str] | None = None) -> dict[str, list[Tuple]]:
    feats = enabled_features() if feats is None else feats
    out: dict[str, list[Tuple]] = {}
    for r in prog.inputs:
        n = draw(st.sampled_from(range(MAX_FACTS + 1)))  # uniform size: st.lists and st.integers favour tiny
        lines = draw(st.lists(st.tuples(*[_col(ty) for ty in r.col_types]), min_size=n, max_size=n))
        if lines and "dup_fact_lines" in feats and _chance(draw, 10):
            lines.append(draw(st.sampled_from(lines)))
        out[r.name] = lines
    return out


@st.composite
def transactions_for(
    draw, prog: Program, initial: Database, feats: frozenset[str] | None = None, max_tx: int = 6
) -> list[Transaction]:
    feats = enabled_features() if feats is None else feats
    inputs = prog.inputs
    db = initial
    txs: list[Transaction] = []
    for _ in range(draw(st.integers(1, max_tx))):
        ops: list[Op] = []
        touched: set[tuple[str, Tuple]] = set()
        n_ops = 0 if ("empty_tx" in feats and _chance(draw, 8)) else draw(st.integers(1, 5))
        for _ in range(n_ops):
            rel = draw(st.sampled_from(inputs))
            present = sorted(db.get(rel.name, frozenset()))
            if draw(st.booleans()):  # delete
                if present and not ("absent_deletes" in feats and _chance(draw, 15)):
                    tup = draw(st.sampled_from(present))
                else:
                    tup = _tuple(draw, rel)
                sign = "-"
            else:
                if present and "dup_inserts" in feats and _chance(draw, 15):
                    tup = draw(st.sampled_from(present))
                else:
                    tup = _tuple(draw, rel)
                sign = "+"
            # never touch the same fact twice in one transaction: the order of
            # ops inside a transaction is not part of the contract
            if (rel.name, tup) in touched:
                continue
            touched.add((rel.name, tup))
            ops.append(Op(sign, rel.name, tup))
        tx = tuple(ops)
        txs.append(tx)
        db = apply_tx(db, tx)
    return txs


WORKER_CHOICES: list[tuple[int | None, ...]] = [(1,), (3,), (1, 3), (None,)]


@st.composite
def examples(draw, feats: frozenset[str] | None = None, max_tx: int = 6) -> Example:
    feats = enabled_features() if feats is None else feats
    prog = draw(programs(feats))
    facts = draw(facts_for(prog, feats))
    ex = Example(prog, facts, [], draw(st.sampled_from(WORKER_CHOICES)))
    ex.transactions = draw(transactions_for(prog, ex.initial_db, feats, max_tx))
    return ex
