"""NDlog rules and facts -> a clingo program plus its @-functions.

Rule by rule (after expanding `(a ; b)` into one rule per alternative):
  relation r            -> predicate r_r
  variable x            -> V_x;  `_` in an atom stays `_` (outside aggregates)
  !r(..)                -> not r_r(..)   (clingo projects `_` in negative literals)
  a plain comparison    -> the same comparison (values are encoded so clingo's
                           term order is netc's order; values.py)
  any computed term     -> a fresh variable E and `E = @eK(V1, ..)`: the
                           expression is evaluated in Python (values.py), with
                           netc's arithmetic; no row when it is undefined
  contains(p, x), match(re, s) -> @eK(..) = 1   (negated: = 0)
  a comparison with a float literal -> @eK(L, R) = 1 (floats are opaque terms)
  n = count : { B }     -> V_n = #count{ all variables of B : B }: both count the
                           distinct bindings of B's variables (netc folds the
                           inner rows, one per binding; `_` becomes a fresh
                           variable so it is part of the binding)
  s = sum w : { B }     -> #sum{ W, vars : B };  min/max -> #min/#max over terms,
                           plus `!= #sup` / `!= #inf` (netc: no row for an
                           empty group; clingo would yield #sup/#inf)
  s = concat x by k : { B }
                        -> auxiliary predicates: the elements E = (k.., x) of
                           each group G (the outer variables B uses, bound by
                           the rule's literals before it), each element's
                           rank (#count of smaller E), the texts joined rank
                           by rank, and the join at rank n-1 (clingo's term
                           order on E is netc's value order: values.py)
The program is stratified, so clingo's grounder computes the one answer set.
"""

from __future__ import annotations

import clingo

from . import values
from .ndl import Program


def pred(rel: str) -> str:
    return f"r_{rel}"


class Context:
    """The @-functions of one translated program (clingo looks them up by name)."""

    def __init__(self) -> None:
        self.count = 0

    def add(self, fn) -> str:
        name = f"e{self.count}"
        self.count += 1
        setattr(self, name, fn)
        return name


def _free_vars(e, out: list[str]) -> None:
    kind = e[0]
    if kind == "var":
        if e[1] not in out:
            out.append(e[1])
    elif kind == "bin":
        _free_vars(e[2], out)
        _free_vars(e[3], out)
    elif kind in ("neg", "un"):
        _free_vars(e[-1], out)
    elif kind == "call":
        for a in e[2]:
            _free_vars(a, out)


def _evaluator(e):
    """A Python function of an environment dict -> value (raises Undefined)."""
    kind = e[0]
    if kind == "var":
        name = e[1]
        return lambda env: env[name]
    if kind == "const":
        v = e[1]
        return lambda env: v
    if kind == "bin":
        op, left, right = e[1], _evaluator(e[2]), _evaluator(e[3])
        return lambda env: values.binary(op, left(env), right(env))
    if kind == "neg":
        inner = _evaluator(e[1])
        return lambda env: values.binary("-", 0, inner(env))
    if kind == "un":
        op, inner = e[1], _evaluator(e[2])
        if op == "bnot":
            return lambda env: ~inner(env)
        return lambda env: int(inner(env) == 0)
    if kind == "call":
        fn = values.FUNCTORS.get(e[1])
        if fn is None:
            raise NotImplementedError(f"functor {e[1]}")
        args = [_evaluator(a) for a in e[2]]
        return lambda env: fn(*[a(env) for a in args])
    raise NotImplementedError(kind)


def _clingo_fn(names: list[str], ev, post=None):
    def fn(*syms):
        try:
            env = {n: values.decode(s) for n, s in zip(names, syms)}
            v = ev(env)
            if post is not None:
                v = post(v)
            return values.encode(v)
        except (values.Undefined, TypeError, AttributeError, ValueError):
            return []

    return fn


def expand_or(body: list) -> list[list]:
    """Disjunctions in a body -> the list of plain conjunctions."""
    alts: list[list] = [[]]
    for lit in body:
        if lit[0] == "or":
            options = [c for alt in lit[1] for c in expand_or(alt)]
            alts = [a + o for a in alts for o in options]
        else:
            alts = [a + [lit] for a in alts]
    return alts


class _RuleWriter:
    def __init__(self, ctx: Context, tag: str = "0"):
        self.ctx = ctx
        self.fresh = 0
        # `concat`: the rule's literals translated so far, their variables,
        # and the auxiliary rules written for it (tag keeps names unique)
        self.outer: list[str] = []
        self.outer_vars: list[str] = []
        self.aux: list[str] = []
        self.tag = tag

    def new(self, prefix: str) -> str:
        self.fresh += 1
        return f"{prefix}{self.fresh}"

    def simple(self, e) -> str | None:
        if e[0] == "var":
            return f"V_{e[1]}"
        if e[0] == "const" and not isinstance(e[1], values.Float):
            return values.asp_text(e[1])
        return None

    def term(self, e, pre: list[str], wild: list[str] | None = None) -> str:
        """Clingo text of a term; computed terms add `E = @f(..)` to `pre`."""
        if e[0] == "wild":
            if wild is None:
                return "_"
            w = self.new("W")
            wild.append(w)
            return w
        s = self.simple(e)
        if s is not None:
            return s
        names: list[str] = []
        _free_vars(e, names)
        fn = self.ctx.add(_clingo_fn(names, _evaluator(e)))
        var = self.new("E")
        args = ",".join(f"V_{n}" for n in names)
        pre.append(f"{var}=@{fn}({args})")
        return var

    def atom(self, a, pre: list[str], wild: list[str] | None = None) -> str:
        args = [self.term(t, pre, wild) for t in a[2]]
        return f"{pred(a[1])}({','.join(args)})" if args else pred(a[1])

    def test(self, names: list[str], ev, want: int) -> str:
        fn = self.ctx.add(_clingo_fn(names, ev, post=int))
        return f"@{fn}({','.join('V_' + n for n in names)})={want}"

    def literal(self, lit, wild: list[str] | None = None) -> list[str]:
        kind = lit[0]
        pre: list[str] = []
        if kind == "atom":
            out = self.atom(lit, pre, wild)
            return pre + [out]
        if kind == "not":
            out = self.atom(lit[1], pre)
            return pre + [f"not {out}"]
        if kind in ("pred", "notpred"):
            names: list[str] = []
            _free_vars(lit[1], names)
            return [self.test(names, _evaluator(lit[1]), 1 if kind == "pred" else 0)]
        if kind == "cmp":
            op, left, right = lit[1], lit[2], lit[3]
            if right[0] == "agg":
                return self.aggregate(left, right)
            if any(e[0] == "const" and isinstance(e[1], values.Float) for e in (left, right)):
                names = []
                _free_vars(left, names)
                _free_vars(right, names)
                le, re_ = _evaluator(left), _evaluator(right)
                return [self.test(names, lambda env: values.compare(op, le(env), re_(env)), 1)]
            lt = self.term(left, pre)
            rt = self.term(right, pre)
            return pre + [f"{lt}{op}{rt}"]
        raise NotImplementedError(f"literal {kind}")

    def aggregate(self, result, agg) -> list[str]:
        _, func, target, body, order = agg
        if func == "mean":
            raise NotImplementedError("mean aggregate")
        conjs = expand_or(body)
        if len(conjs) != 1:
            raise NotImplementedError("disjunction inside an aggregate")
        if func == "concat":
            return self.concat(result, target, order, conjs[0])
        wild: list[str] = []
        conds: list[str] = []
        for lit in conjs[0]:
            conds.extend(self.literal(lit, wild))
        names: list[str] = []
        for lit in conjs[0]:
            _lit_vars(lit, names)
        tuple_vars = [f"V_{n}" for n in names] + wild
        pre: list[str] = []
        res = self.term(result, pre)
        cond = ", ".join(conds)
        if func == "count":
            tup = ",".join(tuple_vars) if tuple_vars else "0"
            return pre + [f"{res}=#count{{ {tup} : {cond} }}"]
        tpre: list[str] = []
        tgt = self.term(target, tpre)
        cond = ", ".join(tpre + conds)
        tup = ",".join([tgt] + tuple_vars)
        out = [f"{res}=#{func}{{ {tup} : {cond} }}"]
        if func == "min":
            out.append(f"{res}!=#sup")
        elif func == "max":
            out.append(f"{res}!=#inf")
        return pre + out

    def concat(self, result, target, order: list, inner: list) -> list[str]:
        names: list[str] = []
        for lit in inner:
            _lit_vars(lit, names)
        for e in [target, *order]:
            _free_vars(e, names)
        group = ",".join(f"V_{n}" for n in names if n in self.outer_vars)
        g = group + "," if group else ""
        p = f"cc{self.tag}_{self.new('')}"
        conds: list[str] = []
        for lit in inner:
            conds.extend(self.literal(lit))
        pre: list[str] = []
        keys = [self.term(e, pre) for e in order]
        x = self.term(target, pre)
        elem = f"({','.join(keys + [x])}{',' if not keys else ''})"
        join = self.ctx.add(_clingo_fn(["a", "b"], lambda env: values.binary_cat(env["a"], env["b"])))
        body = ", ".join(self.outer + conds + pre)
        self.aux += [
            f"{p}_e({g}{elem},{x}) :- {body}.",
            f"{p}_r({g}E,R) :- {p}_e({g}E,_), R = #count{{ E2 : {p}_e({g}E2,_), E2 < E }}.",
            f"{p}_u({g}0,X) :- {p}_r({g}E,0), {p}_e({g}E,X).",
            f"{p}_u({g}R,S) :- {p}_u({g}R0,S0), R = R0+1, {p}_r({g}E,R), {p}_e({g}E,X), S = @{join}(S0,X).",
            f"{p}_n({g}N) :- {p}_e({g}_,_), N = #count{{ E : {p}_e({g}E,_) }}.",
            f"{p}({g}S) :- {p}_n({g}N), {p}_u({g}N-1,S).",
        ]
        rpre: list[str] = []
        res = self.term(result, rpre)
        return rpre + [f"{p}({g}{res})"]

    def rule(self, head, body: list) -> str:
        lits: list[str] = []
        for lit in body:
            self.outer = list(lits)
            lits.extend(self.literal(lit))
            _lit_vars(lit, self.outer_vars)
        pre: list[str] = []
        h = self.atom(head, pre)
        lits.extend(pre)
        aux = "".join(a + "\n" for a in self.aux)
        if not lits:
            return f"{aux}{h}."
        return f"{aux}{h} :- {', '.join(lits)}."


def _lit_vars(lit, out: list[str]) -> None:
    kind = lit[0]
    if kind == "atom":
        for a in lit[2]:
            _free_vars(a, out)
    elif kind == "not":
        _lit_vars(lit[1], out)
    elif kind in ("pred", "notpred"):
        _free_vars(lit[1], out)
    elif kind == "cmp":
        _free_vars(lit[2], out)
        if lit[3][0] != "agg":
            _free_vars(lit[3], out)


def rules_to_asp(prog: Program) -> tuple[str, Context]:
    """The rules (and the rules files' own facts) as clingo text, and their @-functions."""
    ctx = Context()
    lines: list[str] = []
    for i, r in enumerate(prog.rules):
        for j, body in enumerate(expand_or(r.body)):
            w = _RuleWriter(ctx, f"{i}_{j}")
            lines.append(f"% {r.where}\n{w.rule(r.head, body)}")
    for rel in sorted(prog.decls):
        lines.append(f"#defined {pred(rel)}/{len(prog.decls[rel])}.")
    for rel in prog.outputs:
        lines.append(f"#show {pred(rel)}/{len(prog.decls[rel])}.")
    return "\n".join(lines) + "\n", ctx


def facts_to_asp(facts: dict[str, set[tuple]]) -> str:
    out: list[str] = []
    for rel in sorted(facts):
        p = pred(rel)
        for row in sorted(facts[rel], key=lambda t: tuple(map(str, t))):
            out.append(f"{p}({','.join(values.asp_text(v) for v in row)}).")
    return "\n".join(out) + "\n"


def model_rows(symbols: list[clingo.Symbol], outputs: list[str]) -> dict[str, list[str]]:
    """Shown atoms -> relation -> sorted TSV lines in netc's text form."""
    back = {pred(r): r for r in outputs}
    rows: dict[str, set[str]] = {r: set() for r in outputs}
    for s in symbols:
        rel = back.get(s.name)
        if rel is not None:
            rows[rel].add("\t".join(values.to_text(values.decode(a)) for a in s.arguments))
    return {r: sorted(v) for r, v in rows.items()}


def rule_count(prog: Program) -> int:
    return sum(len(expand_or(r.body)) for r in prog.rules)
