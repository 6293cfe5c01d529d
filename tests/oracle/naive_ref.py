"""Second reference: naive stratified bottom-up evaluation in plain Python.

Deliberately written independently of the ASP translation so the two
references can check each other (tests/test_oracle_selftest.py).  Also hosts
the static checks (stratification, range restriction) used by the generator
self-tests.
"""

from __future__ import annotations

from collections.abc import Iterator

from .model import (
    Agg,
    Atom,
    BinOp,
    Cmp,
    Const,
    Database,
    Literal,
    Neg,
    NegGroup,
    Program,
    Rule,
    Term,
    Tuple,
    Var,
    Wild,
    expand_rules,
    souffle_materializes,
    term_vars,
)

Env = dict[str, int]


class NotStratified(Exception):
    pass


class Unsafe(Exception):
    pass


# --------------------------------------------------------------------------
# Static analysis


def _body_rels(lits: tuple[Literal, ...], negative: bool, out: list[tuple[str, bool]]) -> None:
    for lit in lits:
        if isinstance(lit, Atom):
            out.append((lit.rel, negative))
        elif isinstance(lit, Neg):
            out.append((lit.atom.rel, True))
        elif isinstance(lit, Agg):
            _body_rels(lit.body, True, out)


def dependencies(rule: Rule) -> list[tuple[str, bool]]:
    """(relation, is_negative_or_aggregated) for every relation the rule reads."""
    out: list[tuple[str, bool]] = []
    _body_rels(rule.body, False, out)
    return out


def strata(prog: Program) -> list[list[str]]:
    """SCCs of the dependency graph in evaluation order; raises NotStratified."""
    names = [r.name for r in prog.relations]
    edges: dict[str, set[str]] = {n: set() for n in names}
    neg_edges: set[tuple[str, str]] = set()
    for rule in expand_rules(prog.rules):
        h = rule.head.rel
        for b, negative in dependencies(rule):
            edges[h].add(b)
            if negative:
                neg_edges.add((h, b))

    # Tarjan's SCC (iterative enough for our sizes: recursion is fine).
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    sccs: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            sccs.append(sorted(comp))

    for n in names:
        if n not in index:
            visit(n)
    # Tarjan emits SCCs in reverse topological order of the "depends on"
    # edges, i.e. dependencies first -- exactly evaluation order.
    comp_of = {n: i for i, c in enumerate(sccs) for n in c}
    for h, b in neg_edges:
        if comp_of[h] == comp_of[b]:
            raise NotStratified(f"{h} depends negatively on {b} within a cycle")
    return sccs


def _lits_vars(lits) -> set[str]:
    out: set[str] = set()
    for lit in lits:
        if isinstance(lit, Atom):
            for a in lit.args:
                out.update(v.name for v in term_vars(a))
        elif isinstance(lit, Neg):
            for a in lit.atom.args:
                out.update(v.name for v in term_vars(a))
        elif isinstance(lit, Cmp):
            out.update(v.name for v in term_vars(lit.left) + term_vars(lit.right))
        elif isinstance(lit, NegGroup):
            for alt in lit.alts:
                out |= _lits_vars(alt)
        elif isinstance(lit, Agg):
            out.add(lit.result.name)
            out.update(_lits_vars(lit.body))
            if lit.target is not None:
                out.update(v.name for v in term_vars(lit.target))
    return out


def check_safe(rule: Rule) -> None:
    """Range restriction in the conservative form the generator promises:
    every variable of the head, of a comparison, of a negation and every
    correlated aggregate variable is bound by a positive atom of the outer
    body (plain variable argument) or is an aggregate result.  Aggregate-local
    variables are fresh and bound by a positive atom inside the aggregate."""
    bound: set[str] = set()
    for lit in rule.body:
        if isinstance(lit, Atom):
            for a in lit.args:
                if isinstance(a, Var):
                    bound.add(a.name)
                elif isinstance(a, BinOp):
                    raise Unsafe(f"arithmetic in body atom {lit}")
    outer_names = set(bound)
    for lit in rule.body:
        if isinstance(lit, Agg):
            if lit.result.name in bound:
                raise Unsafe(f"aggregate result {lit.result} already bound")
            bound.add(lit.result.name)
    binders: set[int] = set()
    changed = True
    while changed:  # `v = expr` binds v once expr is bound
        changed = False
        for i, lit in enumerate(rule.body):
            if i in binders or not (isinstance(lit, Cmp) and lit.op == "="):
                continue
            for var, expr in ((lit.left, lit.right), (lit.right, lit.left)):
                if isinstance(var, Var) and var.name not in bound and {v.name for v in term_vars(expr)} <= bound:
                    bound.add(var.name)
                    binders.add(i)
                    changed = True
                    break
    for i, lit in enumerate(rule.body):
        if isinstance(lit, Atom) or i in binders:
            continue
        if isinstance(lit, Agg):
            inner_bound = set(outer_names)
            for il in lit.body:
                if isinstance(il, Atom):
                    inner_bound.update(a.name for a in il.args if isinstance(a, Var))
            for il in lit.body:
                if not isinstance(il, Atom):
                    missing = _lits_vars([il]) - inner_bound
                    if missing:
                        raise Unsafe(f"unbound {sorted(missing)} in aggregate {lit}")
            if lit.target is not None:
                missing = {v.name for v in term_vars(lit.target)} - inner_bound
                if missing:
                    raise Unsafe(f"unbound target {sorted(missing)} in {lit}")
            continue
        missing = _lits_vars([lit]) - bound
        if missing:
            raise Unsafe(f"unbound {sorted(missing)} in {lit} of {rule}")
    missing = {v.name for a in rule.head.args for v in term_vars(a)} - bound
    if missing:
        raise Unsafe(f"unbound head variables {sorted(missing)} in {rule}")
    if any(isinstance(a, Wild) for a in rule.head.args):
        raise Unsafe(f"wildcard in head of {rule}")


# --------------------------------------------------------------------------
# Evaluation


def _eval(t: Term, env: Env) -> int:
    if isinstance(t, Const):
        return t.value
    if isinstance(t, Var):
        return env[t.name]
    if isinstance(t, BinOp):
        a, b = _eval(t.left, env), _eval(t.right, env)
        if t.op == "+":
            return a + b
        if t.op == "-":
            return a - b
        if t.op == "*":
            return a * b
        raise ValueError(t.op)
    raise ValueError(f"cannot evaluate {t}")


def _compare(op: str, a: int, b: int) -> bool:
    return {
        "<": a < b,
        "<=": a <= b,
        ">": a > b,
        ">=": a >= b,
        "=": a == b,
        "!=": a != b,
    }[op]


def _bound(t: Term, env: Env) -> bool:
    return all(v.name in env for v in term_vars(t))


class _Evaluator:
    def __init__(self, db: dict[str, set[Tuple]]):
        self.db = db

    def match(self, atom: Atom, env: Env) -> Iterator[Env]:
        for tup in list(self.db.get(atom.rel, ())):
            e = env
            copied = False
            ok = True
            for arg, val in zip(atom.args, tup, strict=True):
                if isinstance(arg, Wild):
                    continue
                if isinstance(arg, Var) and arg.name not in e:
                    if not copied:
                        e = dict(e)
                        copied = True
                    e[arg.name] = val
                    continue
                if _eval(arg, e) != val:
                    ok = False
                    break
            if ok:
                yield e

    def solve(self, lits: list[Literal], env: Env, outer: set[str]) -> Iterator[Env]:
        """All extensions of env satisfying lits.  `outer` = variables that occur
        outside any given aggregate (used to find correlated variables)."""
        if not lits:
            yield env
            return
        # pick the first ready filter, otherwise the first atom
        pick = None
        for i, lit in enumerate(lits):
            if isinstance(lit, Cmp):
                if _bound(lit.left, env) and _bound(lit.right, env):
                    pick = i
                    break
                if lit.op == "=" and isinstance(lit.left, Var) and _bound(lit.right, env):
                    pick = i
                    break
                if lit.op == "=" and isinstance(lit.right, Var) and _bound(lit.left, env):
                    pick = i
                    break
            elif isinstance(lit, Neg):
                if all(_bound(a, env) for a in lit.atom.args if not isinstance(a, Wild)):
                    pick = i
                    break
            elif isinstance(lit, NegGroup):
                if all(v in env for v in _lits_vars([lit])):
                    pick = i
                    break
            elif isinstance(lit, Agg):
                corr = (_lits_vars(lit.body) | _target_vars(lit)) & outer
                if all(v in env for v in corr):
                    pick = i
                    break
        if pick is None:
            for i, lit in enumerate(lits):
                if isinstance(lit, Atom):
                    pick = i
                    break
        if pick is None:
            raise Unsafe(f"cannot schedule {[str(x) for x in lits]} with {sorted(env)}")
        lit = lits[pick]
        rest = lits[:pick] + lits[pick + 1 :]
        if isinstance(lit, Atom):
            for e in self.match(lit, env):
                yield from self.solve(rest, e, outer)
        elif isinstance(lit, Cmp):
            if _bound(lit.left, env) and _bound(lit.right, env):
                if _compare(lit.op, _eval(lit.left, env), _eval(lit.right, env)):
                    yield from self.solve(rest, env, outer)
            else:
                if isinstance(lit.left, Var) and lit.left.name not in env:
                    var, expr = lit.left, lit.right
                else:
                    var, expr = lit.right, lit.left
                e = dict(env)
                e[var.name] = _eval(expr, env)
                yield from self.solve(rest, e, outer)
        elif isinstance(lit, Neg):
            if next(self.match(lit.atom, env), None) is None:
                yield from self.solve(rest, env, outer)
        elif isinstance(lit, NegGroup):
            holds = any(all(_compare(c.op, _eval(c.left, env), _eval(c.right, env)) for c in alt) for alt in lit.alts)
            if not holds:
                yield from self.solve(rest, env, outer)
        elif isinstance(lit, Agg):
            val = self.aggregate(lit, env)
            if val is None:
                return
            if lit.result.name in env:
                if env[lit.result.name] == val:
                    yield from self.solve(rest, env, outer)
                return
            e = dict(env)
            e[lit.result.name] = val
            yield from self.solve(rest, e, outer)

    def aggregate(self, agg: Agg, env: Env) -> int | None:
        # a body Souffle materialises keeps its `_` existential: the distinct
        # bindings of the named variables are aggregated (model.souffle_materializes)
        body = agg.body if souffle_materializes(agg) else _name_wildcards(agg.body)
        names = sorted(_lits_vars(body) - set(env))
        seen: dict[tuple[int, ...], Env] = {}
        for e in self.solve(list(body), env, set(env)):
            seen.setdefault(tuple(e[n] for n in names), e)
        if agg.func == "count":
            return len(seen)
        vals = [_eval(agg.target, e) for e in seen.values()]
        if agg.func == "sum":
            return sum(vals)
        if not vals:
            return None
        return min(vals) if agg.func == "min" else max(vals)


def _target_vars(agg: Agg) -> set[str]:
    return set() if agg.target is None else {v.name for v in term_vars(agg.target)}


def _name_wildcards(lits: tuple[Literal, ...]) -> tuple[Literal, ...]:
    counter = [0]

    def fix_atom(a: Atom) -> Atom:
        args = []
        for t in a.args:
            if isinstance(t, Wild):
                counter[0] += 1
                args.append(Var(f"_w{counter[0]}"))
            else:
                args.append(t)
        return Atom(a.rel, tuple(args))

    out: list[Literal] = []
    for lit in lits:
        if isinstance(lit, Atom):
            out.append(fix_atom(lit))
        else:
            out.append(lit)  # wildcards inside a nested negation stay existential
    return tuple(out)


def _outer_vars(rule: Rule) -> set[str]:
    out = {v.name for a in rule.head.args for v in term_vars(a)}
    for lit in rule.body:
        if isinstance(lit, Agg):
            out.add(lit.result.name)
        else:
            out |= _lits_vars([lit])
    return out


def evaluate(prog: Program, edb: Database, max_rounds: int = 10_000) -> Database:
    """Least stratified model restricted to all relations."""
    db: dict[str, set[Tuple]] = {r.name: set() for r in prog.relations}
    for name, tuples in edb.items():
        db.setdefault(name, set()).update(tuples)
    ev = _Evaluator(db)
    for comp in strata(prog):
        # negated groups stay as they are: evaluated directly below, not via
        # the De Morgan rewrite the ASP translation uses
        rules = [r for r in expand_rules(prog.rules, neg_groups=False) if r.head.rel in comp]
        outers = [_outer_vars(r) for r in rules]
        for _ in range(max_rounds):
            changed = False
            for rule, outer in zip(rules, outers, strict=True):
                new = set()
                for env in ev.solve(list(rule.body), {}, outer):
                    new.add(tuple(_eval(a, env) for a in rule.head.args))
                before = len(db[rule.head.rel])
                db[rule.head.rel] |= new
                changed |= len(db[rule.head.rel]) != before
            if not changed:
                break
        else:
            raise RuntimeError(f"no fixpoint for {comp} after {max_rounds} rounds")
    return {k: frozenset(v) for k, v in db.items()}


class IllTyped(Exception):
    pass


def check_types(prog: Program) -> None:
    """Every variable has one type; atoms match declarations; arithmetic,
    sum/min/max targets and aggregate results are numbers."""
    decl = {r.name: r.col_types for r in prog.relations}

    def term_type(t: Term, env: dict[str, str]) -> str | None:
        if isinstance(t, Const):
            return "symbol" if isinstance(t.value, str) else "number"
        if isinstance(t, Var):
            return env.get(t.name)
        if isinstance(t, BinOp):
            for side in (t.left, t.right):
                if term_type(side, env) not in (None, "number"):
                    raise IllTyped(f"arithmetic on non-number in {t}")
            return "number"
        return None

    def unify(t: Term, ty: str, env: dict[str, str], where: str) -> None:
        if isinstance(t, Var):
            if env.setdefault(t.name, ty) != ty:
                raise IllTyped(f"{t} used as {env[t.name]} and {ty} in {where}")
        elif isinstance(t, (Const, BinOp)):
            got = term_type(t, env)
            if got is not None and got != ty:
                raise IllTyped(f"{t} is {got}, expected {ty} in {where}")

    def walk(lits, env, where) -> None:
        for lit in lits:
            if isinstance(lit, (Atom, Neg)):
                a = lit if isinstance(lit, Atom) else lit.atom
                for t, ty in zip(a.args, decl[a.rel], strict=True):
                    unify(t, ty, env, where)
        for lit in lits:
            if isinstance(lit, Agg):
                walk(lit.body, env, where)
                if lit.target is not None:
                    unify(lit.target, "number", env, where)
                unify(lit.result, "number", env, where)
        for _ in range(2):  # comparisons may propagate types through `v = w`
            for lit in lits:
                if isinstance(lit, Cmp):
                    lt, rt = term_type(lit.left, env), term_type(lit.right, env)
                    if lt and rt and lt != rt:
                        raise IllTyped(f"comparison of {lt} with {rt}: {lit} in {where}")
                    if lt and not rt:
                        unify(lit.right, lt, env, where)
                    if rt and not lt:
                        unify(lit.left, rt, env, where)

    for rule in expand_rules(prog.rules):
        env: dict[str, str] = {}
        walk(rule.body, env, str(rule))
        for t, ty in zip(rule.head.args, decl[rule.head.rel], strict=True):
            unify(t, ty, env, str(rule))
