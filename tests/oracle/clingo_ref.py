"""Reference semantics via ASP: translate a Souffle-subset program to clingo.

Translation notes (Souffle semantics -> ASP):
  * relation `r`        -> predicate `p_r` (Souffle names may start uppercase)
  * variable `x`        -> `V_x`; `_` in a positive/negated atom stays `_`
                           (clingo projects anonymous variables in negative
                           literals, i.e. `not p(X,_)` = "no tuple with X")
  * `!r(..)`            -> `not p_r(..)`
  * `x != y` etc.       -> same comparison in ASP
  * aggregates: Souffle aggregates a single-atom body tuple by tuple (its
    `_` positions included) and a body it materialises (more than one
    positive atom, an inner aggregate, a repeated variable:
    model.souffle_materializes) over the DISTINCT bindings of its named
    variables.  In the first case every `_` becomes a fresh variable of the
    element tuple; in the second it stays `_` (local to the condition), so
    clingo's set semantics over element tuples coincides with Souffle's:
        c = count : { b(x, _) }            ->  C = #count{ W1 : p_b(X,W1) }
        s = sum y : { b(x, y, _) }         ->  S = #sum{ Y,Y,W1 : p_b(X,Y,W1) }
        s = sum y : { b(x, y, _), c(y) }   ->  S = #sum{ Y,X,Y : p_b(X,Y,_),p_c(Y) }
    count/sum of an empty group is 0 in both.  min/max of an empty group
    makes Souffle's rule not fire, whereas clingo yields #sup/#inf; we add
    `M != #sup` / `M != #inf`.
The program is stratified, so there must be exactly one answer set.
"""

from __future__ import annotations

import clingo

from .model import (
    Agg,
    Atom,
    BinOp,
    Cmp,
    Const,
    Database,
    Literal,
    Neg,
    Program,
    Rule,
    Term,
    Var,
    Wild,
    expand_rules,
    souffle_materializes,
)


def pred(rel: str) -> str:
    return f"p_{rel}"


class _Ctx:
    def __init__(self) -> None:
        self.fresh = 0

    def new_wild(self) -> str:
        self.fresh += 1
        return f"W{self.fresh}"


def _term(t: Term) -> str:
    if isinstance(t, Var):
        return f"V_{t.name}"
    if isinstance(t, Const):
        return _value(t.value)
    if isinstance(t, Wild):
        return "_"
    if isinstance(t, BinOp):
        return f"({_term(t.left)}{t.op}{_term(t.right)})"
    raise TypeError(t)


def _value(v: int | str) -> str:
    if isinstance(v, str):  # symbol -> clingo string (ordered by text, like netc)
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    return str(v) if v >= 0 else f"({v})"


def _atom(a: Atom, wild_as: _Ctx | None = None, names: list[str] | None = None) -> str:
    args = []
    for t in a.args:
        if isinstance(t, Wild) and wild_as is not None:
            w = wild_as.new_wild()
            assert names is not None
            names.append(w)
            args.append(w)
        else:
            args.append(_term(t))
            if names is not None and isinstance(t, Var):
                names.append(_term(t))
    return f"{pred(a.rel)}({','.join(args)})"


_ASP_CMP = {"<": "<", "<=": "<=", ">": ">", ">=": ">=", "=": "=", "!=": "!="}


def _collect_vars(t: Term, names: list[str]) -> None:
    if isinstance(t, Var):
        names.append(_term(t))
    elif isinstance(t, BinOp):
        _collect_vars(t.left, names)
        _collect_vars(t.right, names)


def _literal(lit: Literal, ctx: _Ctx) -> str:
    if isinstance(lit, Atom):
        return _atom(lit)
    if isinstance(lit, Neg):
        return f"not {_atom(lit.atom)}"
    if isinstance(lit, Cmp):
        return f"{_term(lit.left)}{_ASP_CMP[lit.op]}{_term(lit.right)}"
    if isinstance(lit, Agg):
        names: list[str] = []
        conds: list[str] = []
        fresh_wilds = None if souffle_materializes(lit) else ctx
        for il in lit.body:
            if isinstance(il, Atom):
                conds.append(_atom(il, fresh_wilds, names))
            elif isinstance(il, Neg):
                conds.append(f"not {_atom(il.atom)}")
            elif isinstance(il, Cmp):
                conds.append(_literal(il, ctx))
                _collect_vars(il.left, names)
                _collect_vars(il.right, names)
            else:
                raise TypeError(f"nested aggregate {il}")
        uniq = list(dict.fromkeys(names))
        res = _term(lit.result)
        cond = ",".join(conds)
        if lit.func == "count":
            tup = ",".join(uniq) if uniq else "0"
            return f"{res}=#count{{ {tup} : {cond} }}"
        assert lit.target is not None
        tup = ",".join([_term(lit.target)] + uniq)
        s = f"{res}=#{lit.func}{{ {tup} : {cond} }}"
        if lit.func == "min":
            s += f", {res}!=#sup"
        elif lit.func == "max":
            s += f", {res}!=#inf"
        return s
    raise TypeError(lit)


def rule_to_asp(rule: Rule) -> str:
    ctx = _Ctx()
    head = _atom(rule.head)
    if not rule.body:
        return f"{head}."
    # Aggregates last only for readability; order is irrelevant in ASP.
    body = ", ".join(_literal(lit, ctx) for lit in rule.body)
    return f"{head} :- {body}."


def program_to_asp(prog: Program, edb: Database) -> str:
    lines = [f"% {rule}\n{rule_to_asp(rule)}" for rule in expand_rules(prog.rules)]
    for name in sorted(edb):
        for tup in sorted(edb[name]):
            lines.append(f"{pred(name)}({','.join(map(_value, tup))}).")
    for r in prog.relations:
        lines.append(f"#show {pred(r.name)}/{r.arity}.")
    # declare every predicate so an empty relation doesn't trigger "undefined" info
    for r in prog.relations:
        lines.append(f"#defined {pred(r.name)}/{r.arity}.")
    return "\n".join(lines) + "\n"


class ClingoError(Exception):
    pass


def solve(prog: Program, edb: Database, relations: list[str] | None = None) -> Database:
    """From-scratch answer: relation -> set of tuples (for `relations`, default: outputs)."""
    text = program_to_asp(prog, edb)
    ctl = clingo.Control(["--warn=none", "--models=0"])
    try:
        ctl.add("base", [], text)
        ctl.ground([("base", [])])
    except RuntimeError as e:  # clingo reports syntax/grounding errors this way
        raise ClingoError(f"{e}\n--- ASP program ---\n{text}") from e
    models: list[list[clingo.Symbol]] = []
    ctl.solve(on_model=lambda m: models.append(list(m.symbols(shown=True))))
    if len(models) != 1:
        raise ClingoError(f"expected exactly one answer set, got {len(models)}\n{text}")
    wanted = relations if relations is not None else [r.name for r in prog.outputs]
    back = {pred(n): n for n in wanted}
    out: dict[str, set[tuple[int, ...]]] = {n: set() for n in wanted}
    for sym in models[0]:
        name = back.get(sym.name)
        if name is None:
            continue
        tup: list[int | str] = []
        for a in sym.arguments:
            if a.type == clingo.SymbolType.Number:
                tup.append(a.number)
            elif a.type == clingo.SymbolType.String:
                tup.append(a.string)
            else:
                raise ClingoError(f"unexpected value {a} in {sym}\n{text}")
        out[name].add(tuple(tup))
    return {k: frozenset(v) for k, v in out.items()}
