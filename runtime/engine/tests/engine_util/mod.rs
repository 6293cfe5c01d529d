//! Shared helpers for the engine tests: hand-built plans and small values.
#![allow(dead_code)]

use netc_compiler::plan::AggFunc;
use netc_compiler::plan::{
    Body, ColPat, Column, Expr, Plan, RelId, Relation, RulePlan, Scan, Source, Step, Stratum,
};
use netc_compiler::source::{FileId, Span};
use netc_compiler::types::Prim;
use netc_compiler::value::{Row, Value};
use netc_engine::{Changes, Engine, Transaction};
use std::sync::Arc;

pub fn span() -> Span {
    Span::new(FileId(0), 0, 0)
}

pub fn n(x: i64) -> Value {
    Value::Number(x)
}

pub fn row(xs: &[i64]) -> Row {
    xs.iter().map(|&x| n(x)).collect()
}

pub fn rows(xs: &[&[i64]]) -> Vec<Row> {
    xs.iter().map(|r| row(r)).collect()
}

/// The plan of an NDlog program given as text (`file` names it in
/// diagnostics); the test fails if it does not compile.
pub fn compile_text(file: &str, text: &str) -> Arc<Plan> {
    let c = netc_compiler::compile_text(file, text);
    assert!(!c.diagnostics.has_errors(), "{file} does not compile");
    Arc::new(c.plan.expect("a plan"))
}

/// The id of relation `name` in `p`; the test fails if there is none.
pub fn rel_named(p: &Plan, name: &str) -> RelId {
    p.relation_id(name)
        .unwrap_or_else(|| panic!("no relation {name}"))
}

pub fn slot(i: usize) -> Expr {
    Expr::Slot(i)
}

pub fn slots(is: &[usize]) -> Vec<Expr> {
    is.iter().map(|&i| Expr::Slot(i)).collect()
}

pub fn binds(k: usize) -> Vec<ColPat> {
    vec![ColPat::Bind; k]
}

/// A plan under construction.
pub struct P {
    pub plan: Plan,
}

impl P {
    pub fn new() -> P {
        P {
            plan: Plan {
                relations: vec![],
                strata: vec![],
                facts: vec![],
                fact_spans: vec![],
            },
        }
    }

    /// Declares a relation with columns of the given types.
    pub fn rel(&mut self, name: &str, prims: &[Prim]) -> RelId {
        self.plan.relations.push(Relation {
            name: name.to_string(),
            columns: prims
                .iter()
                .enumerate()
                .map(|(i, p)| Column {
                    name: format!("c{i}"),
                    type_name: p.name().to_string(),
                    prims: vec![*p],
                })
                .collect(),
            location: None,
            inputs: vec![],
            outputs: vec![],
            printsize: false,
            span: span(),
        });
        self.plan.relations.len() - 1
    }

    /// Declares a relation of `arity` number columns.
    pub fn nums(&mut self, name: &str, arity: usize) -> RelId {
        self.rel(name, &vec![Prim::Number; arity])
    }

    pub fn stratum(&mut self, relations: &[RelId], recursive: bool, rules: Vec<RulePlan>) {
        self.plan.strata.push(Stratum {
            relations: relations.to_vec(),
            recursive,
            rules,
        });
    }

    pub fn fact(&mut self, rel: RelId, r: Row) {
        self.plan.facts.push((rel, r));
    }

    pub fn engine(&self, workers: usize) -> Engine {
        Engine::new(Arc::new(self.plan.clone()), workers).expect("engine starts")
    }

    /// An engine with its pieces split over `lanes` lanes of `workers` each.
    #[allow(dead_code)]
    pub fn engine_in_lanes(&self, workers: usize, lanes: usize) -> Engine {
        Engine::with_lanes(Arc::new(self.plan.clone()), workers, lanes).expect("engine starts")
    }
}

pub fn rule(head: RelId, head_exprs: Vec<Expr>, source: Source, steps: Vec<Step>) -> RulePlan {
    RulePlan {
        head,
        head_exprs,
        body: Body { source, steps },
        span: span(),
    }
}

pub fn scan(rel: RelId, cols: Vec<ColPat>) -> Source {
    Source::Scan(Scan { rel, cols })
}

pub fn join(rel: RelId, left_key: Vec<Expr>, right_key: Vec<usize>, cols: Vec<ColPat>) -> Step {
    Step::Join {
        rel,
        left_key,
        right_key,
        cols,
    }
}

pub fn anti(rel: RelId, left_key: Vec<Expr>, right_cols: Vec<usize>) -> Step {
    Step::AntiJoin {
        rel,
        left_key,
        right_cols,
    }
}

pub fn agg(
    func: AggFunc,
    group: Vec<usize>,
    inner: Body,
    value: Option<Expr>,
    result: Prim,
) -> Step {
    Step::Aggregate {
        func,
        group,
        inner: Box::new(inner),
        value,
        order: vec![],
        result,
        distinct: vec![],
    }
}

/// `path(x,z) :- edge(x,z). path(x,z) :- path(x,y), edge(y,z).`
pub fn tc_plan() -> (P, RelId, RelId) {
    let mut p = P::new();
    let edge = p.nums("edge", 2);
    let path = p.nums("path", 2);
    let r1 = rule(path, slots(&[0, 1]), scan(edge, binds(2)), vec![]);
    let r2 = rule(
        path,
        slots(&[0, 2]),
        scan(path, binds(2)),
        vec![join(
            edge,
            slots(&[1]),
            vec![0],
            vec![ColPat::Ignore, ColPat::Bind],
        )],
    );
    p.stratum(&[path], true, vec![r1, r2]);
    (p, edge, path)
}

pub fn tx_insert(rel: RelId, rs: &[&[i64]]) -> Transaction {
    let mut t = Transaction::new();
    for r in rs {
        t.insert(rel, row(r));
    }
    t
}

pub fn tx_delete(rel: RelId, rs: &[&[i64]]) -> Transaction {
    let mut t = Transaction::new();
    for r in rs {
        t.delete(rel, row(r));
    }
    t
}

/// The changes of one relation as (row, diff) with number rows.
pub fn ch(c: &Changes, rel: RelId) -> Vec<(Row, isize)> {
    c.get(rel).to_vec()
}

pub fn plus(xs: &[&[i64]]) -> Vec<(Row, isize)> {
    xs.iter().map(|r| (row(r), 1)).collect()
}

pub fn minus(xs: &[&[i64]]) -> Vec<(Row, isize)> {
    xs.iter().map(|r| (row(r), -1)).collect()
}

/// Merges +/- lists into one list sorted by row.
pub fn sorted(mut v: Vec<(Row, isize)>) -> Vec<(Row, isize)> {
    v.sort();
    v
}

/// Every relation's contents from a fresh engine loaded with `facts`: the
/// oracle a warm engine's commits are held to.
pub fn from_scratch(
    plan: &Plan,
    facts: &std::collections::BTreeSet<(RelId, Row)>,
) -> Vec<Vec<Row>> {
    let mut p = plan.clone();
    p.facts = facts.iter().cloned().collect();
    p.fact_spans.clear();
    let e = Engine::new(Arc::new(p), 1).unwrap();
    (0..plan.relations.len()).map(|r| e.contents(r)).collect()
}

/// Asserts that a warm engine after a commit holds `after` (from
/// [`from_scratch`]) and that the commit's `changes` are exactly the net
/// difference from `before`; `what` names the commit in a failure.
pub fn assert_commit_exact(
    e: &Engine,
    plan: &Plan,
    changes: &Changes,
    before: &[Vec<Row>],
    after: &[Vec<Row>],
    what: &str,
) {
    use std::collections::BTreeSet;
    for (id, r) in plan.relations.iter().enumerate() {
        let name = &r.name;
        assert_eq!(e.contents(id), after[id], "{name} after {what}");
        let (old, new): (BTreeSet<&Row>, BTreeSet<&Row>) =
            (before[id].iter().collect(), after[id].iter().collect());
        let mut net: Vec<(Row, isize)> = new
            .difference(&old)
            .map(|r| ((*r).clone(), 1))
            .chain(old.difference(&new).map(|r| ((*r).clone(), -1)))
            .collect();
        net.sort();
        let mut got = changes.get(id).to_vec();
        got.sort();
        assert_eq!(got, net, "{name}'s changes in {what}");
    }
}

/// One base-fact edit, made both in the transaction a warm engine commits
/// and in `facts`, the set [`from_scratch`] is given.
pub fn edit(
    t: &mut Transaction,
    facts: &mut std::collections::BTreeSet<(RelId, Row)>,
    id: RelId,
    xs: Row,
    insert: bool,
) {
    if insert {
        facts.insert((id, xs.clone()));
        t.insert(id, xs);
    } else {
        facts.remove(&(id, xs.clone()));
        t.delete(id, xs);
    }
}
