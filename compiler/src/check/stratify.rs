//! Stratification (E0301, E0302) and relation-usage warnings (W0002, W0003).
//!
//! Expects: clauses with resolved atoms (unresolved ones are skipped).
//! Guarantees: [`stratify`] returns the strongly connected components of
//! the predicate dependency graph that contain a relation with rules, in an
//! order where every component comes after the components it reads
//! (CHECKED-STRATIFIED); a component in which a relation depends negatively
//! or through an aggregate on another relation of the same component is
//! reported once, with the cycle spelled out and a label at the literal of
//! each step. Tarjan's algorithm runs iteratively (no recursion), so huge
//! programs cannot overflow the stack; the order is deterministic (relations
//! in declaration order, dependencies in rule order).

use super::ir::{Clause, Expr, Leaf, RelId, RelInfo, StratumInfo};
use super::Reporter;
use crate::diagnostics::Diagnostic;
use crate::source::Span;
use std::collections::VecDeque;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DepKind {
    Pos,
    Neg,
    Agg,
}

/// `head` reads `dep` at `span`.
#[derive(Clone, Copy, Debug)]
pub struct Dep {
    pub head: RelId,
    pub dep: RelId,
    pub kind: DepKind,
    pub span: Span,
}

/// The relations a clause reads, with how and where.
pub fn reads(c: &Clause) -> Vec<(RelId, DepKind, Span)> {
    let mut out = Vec::new();
    leaves_reads(&c.body, false, &mut out, 0);
    for e in &c.head.args {
        expr_reads(e, &mut out, 0);
    }
    out
}

fn leaves_reads(
    leaves: &[Leaf],
    in_agg: bool,
    out: &mut Vec<(RelId, DepKind, Span)>,
    depth: usize,
) {
    for leaf in leaves {
        match leaf {
            Leaf::Pos(a) => {
                if let Some(rel) = a.rel {
                    out.push((
                        rel,
                        if in_agg { DepKind::Agg } else { DepKind::Pos },
                        a.span,
                    ));
                }
            }
            Leaf::Neg(a, s) => {
                if let Some(rel) = a.rel {
                    out.push((rel, DepKind::Neg, *s));
                }
            }
            _ => {}
        }
        for e in leaf.exprs() {
            expr_reads(e, out, depth);
        }
    }
}

fn expr_reads(e: &Expr, out: &mut Vec<(RelId, DepKind, Span)>, depth: usize) {
    if depth > super::resolve::MAX_NESTING {
        return;
    }
    e.aggregates(&mut |a| {
        leaves_reads(&a.body, true, out, depth + 1);
        if let Some(t) = &a.target {
            expr_reads(t, out, depth + 1);
        }
    });
}

/// Computes the strata and reports negation/aggregation through recursion.
pub fn stratify(rels: &[RelInfo], clauses: &[Clause], r: &mut Reporter) -> Vec<StratumInfo> {
    let n = rels.len();
    let mut deps: Vec<Dep> = Vec::new();
    let mut has_rules = vec![false; n];
    for c in clauses {
        let Some(head) = c.head.rel.filter(|h| *h < n) else {
            continue;
        };
        has_rules[head] = true;
        for (dep, kind, span) in reads(c) {
            if dep < n {
                deps.push(Dep {
                    head,
                    dep,
                    kind,
                    span,
                });
            }
        }
    }
    let mut adj: Vec<Vec<RelId>> = vec![Vec::new(); n];
    for d in &deps {
        if !adj[d.head].contains(&d.dep) {
            adj[d.head].push(d.dep);
        }
    }
    let mut by_head: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, d) in deps.iter().enumerate() {
        by_head[d.head].push(i);
    }
    let sccs = tarjan(&adj);
    let mut comp = vec![0usize; n];
    for (i, scc) in sccs.iter().enumerate() {
        for &v in scc {
            comp[v] = i;
        }
    }
    // One error per component, at its first offending literal.
    let mut reported = vec![false; sccs.len()];
    for d in &deps {
        let c = comp[d.head];
        if d.kind != DepKind::Pos && comp[d.dep] == c && !reported[c] {
            reported[c] = true;
            report_cycle(rels, &deps, &by_head, &comp, d, r);
        }
    }
    let mut recursive = vec![false; sccs.len()];
    for d in &deps {
        if comp[d.head] == comp[d.dep] {
            recursive[comp[d.head]] = true;
        }
    }
    sccs.into_iter()
        .enumerate()
        .filter(|(_, scc)| scc.iter().any(|v| has_rules[*v]))
        .map(|(i, mut scc)| {
            scc.sort_unstable();
            StratumInfo {
                relations: scc,
                recursive: recursive[i],
            }
        })
        .collect()
}

/// Tarjan's SCC algorithm with an explicit stack. Components come out in
/// reverse topological order of `adj`, i.e. dependencies first.
pub fn tarjan(adj: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let n = adj.len();
    let mut index: Vec<Option<usize>> = vec![None; n];
    let mut low = vec![0usize; n];
    let mut on_stack = vec![false; n];
    let mut stack: Vec<usize> = Vec::new();
    let mut sccs: Vec<Vec<usize>> = Vec::new();
    let mut next = 0usize;
    for root in 0..n {
        if index[root].is_some() {
            continue;
        }
        let mut calls: Vec<(usize, usize)> = vec![(root, 0)];
        index[root] = Some(next);
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&mut (u, ref mut i)) = calls.last_mut() {
            if let Some(&w) = adj[u].get(*i) {
                *i += 1;
                match index[w] {
                    None => {
                        index[w] = Some(next);
                        low[w] = next;
                        next += 1;
                        stack.push(w);
                        on_stack[w] = true;
                        calls.push((w, 0));
                    }
                    Some(iw) if on_stack[w] => low[u] = low[u].min(iw),
                    Some(_) => {}
                }
            } else {
                calls.pop();
                if let Some(&(p, _)) = calls.last() {
                    low[p] = low[p].min(low[u]);
                }
                if Some(low[u]) == index[u] {
                    let mut scc = Vec::new();
                    while let Some(w) = stack.pop() {
                        on_stack[w] = false;
                        scc.push(w);
                        if w == u {
                            break;
                        }
                    }
                    sccs.push(scc);
                }
            }
        }
    }
    sccs
}

/// Reports a negative/aggregate dependency `bad` inside a cycle, spelling the cycle out.
fn report_cycle(
    rels: &[RelInfo],
    deps: &[Dep],
    by_head: &[Vec<usize>],
    comp: &[usize],
    bad: &Dep,
    r: &mut Reporter,
) {
    let name = |id: RelId| rels.get(id).map_or("?", |r| r.name.as_str());
    let (code, verb, what) = match bad.kind {
        DepKind::Neg => (
            "E0301",
            "depends negatively on",
            "negation through recursion",
        ),
        _ => ("E0302", "aggregates over", "aggregation through recursion"),
    };
    // Shortest path dep → ... → head inside the component (BFS over head→dep edges).
    let path = path_back(deps, by_head, comp, bad.dep, bad.head);
    let mut message = format!("{what}: `{}` {verb} `{}`", name(bad.head), name(bad.dep));
    if bad.head == bad.dep {
        message = format!("{what}: `{}` {verb} itself", name(bad.head));
    } else {
        for d in &path {
            message += &format!(", which depends on `{}`", name(d.dep));
        }
    }
    let mut diag = Diagnostic::error(code, bad.span, message);
    for d in &path {
        diag = diag.with_label(
            d.span,
            format!("`{}` reads `{}` here", name(d.head), name(d.dep)),
        );
    }
    let hint = match bad.kind {
        _ if bad.head == bad.dep => format!(
            "a relation cannot be defined through {} of itself; compute that part in a separate relation first",
            if bad.kind == DepKind::Neg { "the negation" } else { "an aggregate" }
        ),
        DepKind::Neg => format!("`{}` must be complete before it is negated; break the cycle so that `{}` does not depend on `{}`", name(bad.dep), name(bad.dep), name(bad.head)),
        _ => format!("`{}` must be complete before it is aggregated; break the cycle so that `{}` does not depend on `{}`", name(bad.dep), name(bad.dep), name(bad.head)),
    };
    r.push(diag.with_hint(hint));
}

fn path_back(
    deps: &[Dep],
    by_head: &[Vec<usize>],
    comp: &[usize],
    from: RelId,
    to: RelId,
) -> Vec<Dep> {
    if from == to {
        return vec![];
    }
    let c = comp[from];
    let mut prev: Vec<Option<usize>> = vec![None; comp.len()];
    let mut seen = vec![false; comp.len()];
    seen[from] = true;
    let mut queue = VecDeque::from([from]);
    while let Some(u) = queue.pop_front() {
        if u == to {
            break;
        }
        for &i in &by_head[u] {
            let d = &deps[i];
            if comp[d.dep] == c && !seen[d.dep] {
                seen[d.dep] = true;
                prev[d.dep] = Some(i);
                queue.push_back(d.dep);
            }
        }
    }
    let mut path = Vec::new();
    let mut at = to;
    while let Some(i) = prev[at] {
        path.push(deps[i]);
        at = deps[i].head;
        if at == from || path.len() > comp.len() {
            break;
        }
    }
    path.reverse();
    path
}

/// W0002 (declared, never used) and W0003 (read, but always empty).
/// `clauses` include facts (clauses without a body).
pub fn usage_warnings(rels: &[RelInfo], clauses: &[Clause], r: &mut Reporter) {
    let n = rels.len();
    let mut defined = vec![false; n];
    let mut first_read: Vec<Option<Span>> = vec![None; n];
    for c in clauses {
        if let Some(h) = c.head.rel.filter(|h| *h < n) {
            defined[h] = true;
        }
        for (dep, _, span) in reads(c) {
            if dep < n && first_read[dep].is_none_or(|s| span < s) {
                first_read[dep] = Some(span);
            }
        }
    }
    for (i, rel) in rels.iter().enumerate() {
        let io = !rel.inputs.is_empty() || !rel.outputs.is_empty() || rel.printsize;
        match first_read[i] {
            None if !defined[i] && !io => r.push(
                Diagnostic::warning(
                    "W0002",
                    rel.name_span,
                    format!("relation `{}` is declared but never used", rel.name),
                )
                .with_hint(format!(
                    "remove the declaration, or add `.output {}` if it is a result",
                    rel.name
                )),
            ),
            Some(span) if !defined[i] && rel.inputs.is_empty() => r.push(
                Diagnostic::warning(
                    "W0003",
                    span,
                    format!(
                        "relation `{}` is always empty: it has no rules, no facts and no `.input`",
                        rel.name
                    ),
                )
                .with_label(rel.name_span, "declared here")
                .with_hint(format!(
                    "add `.input {}` to read it from a file, or rules or facts that derive it",
                    rel.name
                )),
            ),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::tarjan;

    #[test]
    fn components_come_dependencies_first() {
        // 0 reads 1; 1 and 2 read each other; 2 reads 3.
        let adj = vec![vec![1], vec![2], vec![1, 3], vec![]];
        let sccs: Vec<Vec<usize>> = tarjan(&adj)
            .into_iter()
            .map(|mut s| {
                s.sort();
                s
            })
            .collect();
        assert_eq!(sccs, vec![vec![3], vec![1, 2], vec![0]]);
    }

    #[test]
    fn a_million_node_chain_needs_no_recursion() {
        let n = 1_000_000;
        let adj: Vec<Vec<usize>> = (0..n)
            .map(|i| if i + 1 < n { vec![i + 1] } else { vec![0] })
            .collect();
        let sccs = tarjan(&adj);
        assert_eq!(sccs.len(), 1);
        assert_eq!(sccs[0].len(), n);
    }
}
