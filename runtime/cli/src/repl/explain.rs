//! `:explain rel(...)`: a tuple's derivation tree, down to the intent facts.
//!
//! Expects: a [`Warm`] session whose engine holds the current contents.
//! The engine keeps no provenance, so a tuple is re-derived top-down: a
//! rule explains it when its head can produce the tuple and its body holds
//! in the current contents (each positive atom a present row, each negated
//! one absent, each condition true), found by running the rule's plan body
//! with the head's values pushed into the scans. Each premise is explained
//! the same way. Guarantees:
//! - a leaf is an intent fact with its `file:line:col`, a row the placement
//!   built-in committed, or an honest stop: not in the relation ("not
//!   derivable"), the depth bound, a cycle, or the search budget;
//! - an aggregate (`n = count : { ... }`, sum, min, max) in a rule body is
//!   expanded as its group: the group key, the aggregate's value, and the
//!   combinations of rows that were folded into it (the first
//!   [`GROUP_SHOWN`], then "… and K more"), each explained in turn; the value
//!   is recomputed with the engine's own fold, so it is the one the engine got;
//! - the work is bounded ([`BUDGET`] rows visited per rule search), so a
//!   query never hangs the prompt.

use crate::engine::{eval_cond, eval_expr, fold_aggregate};
use crate::intent::pattern::{show, show_atom};
use crate::intent::warm::Warm;
use netc_compiler::plan::AggFunc;
use netc_compiler::plan::{ColPat, Expr, RelId, RulePlan, Source, Step};
use netc_compiler::types::Prim;
use netc_compiler::value::{Row, Value};

/// Rows visited at most while searching one rule's body.
pub const BUDGET: usize = 2_000_000;

/// Contributing combinations of an aggregate's group shown (the rest counted).
pub const GROUP_SHOWN: usize = 5;

/// Why a node has no children.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Leaf {
    /// An intent fact, at `file:line:col` (or "asserted at the prompt").
    Fact(String),
    /// A `vip_placement` row written by the placement built-in.
    Placement,
    /// `not rel(...)`: holds because no such row exists.
    Absent,
    NotDerivable,
    DepthLimit,
    Cycle,
    Budget,
    /// An aggregate's group: `atom` says the function, key and value; the
    /// children are the rows folded into it (shown ones).
    Group,
    /// The contributors of a group not shown: how many.
    More(usize),
}

/// One step of a derivation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    pub atom: String,
    /// The rule that derives it (`file:line:col`), when derived.
    pub rule: Option<String>,
    pub children: Vec<Node>,
    pub leaf: Option<Leaf>,
}

/// The derivation of `rel(row)`, at most `depth` rules deep.
pub fn explain(w: &Warm, rel: RelId, row: &[Value], depth: usize) -> Node {
    let mut stack = Vec::new();
    derive(w, rel, row, depth, &mut stack)
}

fn derive(
    w: &Warm,
    rel: RelId,
    row: &[Value],
    depth: usize,
    stack: &mut Vec<(RelId, Row)>,
) -> Node {
    let plan = w.plan();
    let atom = show_atom(&plan.relations[rel].name, row);
    let leaf = |l| Node {
        atom: atom.clone(),
        rule: None,
        children: Vec::new(),
        leaf: Some(l),
    };
    if let Some(at) = w.origin(rel, row) {
        return leaf(Leaf::Fact(at));
    }
    if w.is_placed(rel, row) {
        return leaf(Leaf::Placement);
    }
    if !w.engine().contains(rel, row) {
        return leaf(Leaf::NotDerivable);
    }
    if depth == 0 {
        return leaf(Leaf::DepthLimit);
    }
    if stack.iter().any(|(r, x)| *r == rel && x.as_slice() == row) {
        return leaf(Leaf::Cycle);
    }
    let mut out_of_budget = false;
    for rule in plan
        .strata
        .iter()
        .flat_map(|s| &s.rules)
        .filter(|r| r.head == rel)
    {
        match find_body(w, rule, row) {
            Search::Found(premises) => {
                stack.push((rel, row.to_vec()));
                let children = premises
                    .into_iter()
                    .map(|p| premise_node(w, p, depth - 1, stack))
                    .collect();
                stack.pop();
                return Node {
                    atom,
                    rule: Some(w.sources().location(rule.span)),
                    children,
                    leaf: None,
                };
            }
            Search::Budget => out_of_budget = true,
            Search::None => {}
        }
    }
    if out_of_budget {
        leaf(Leaf::Budget)
    } else {
        leaf(Leaf::NotDerivable)
    }
}

/// A premise of a found body as a node, explained `depth` rules deep.
fn premise_node(w: &Warm, p: Premise, depth: usize, stack: &mut Vec<(RelId, Row)>) -> Node {
    match p {
        Premise::Row(r, x) => derive(w, r, &x, depth, stack),
        Premise::Absent(text) => Node {
            atom: text,
            rule: None,
            children: Vec::new(),
            leaf: Some(Leaf::Absent),
        },
        Premise::Group(g) => {
            let mut children: Vec<Node> = Vec::new();
            for combination in g.shown {
                children.extend(
                    combination
                        .into_iter()
                        .map(|p| premise_node(w, p, depth, stack)),
                );
            }
            if g.total > GROUP_SHOWN {
                children.push(Node {
                    atom: format!("… and {} more", g.total - GROUP_SHOWN),
                    rule: None,
                    children: Vec::new(),
                    leaf: Some(Leaf::More(g.total - GROUP_SHOWN)),
                });
            }
            Node {
                atom: g.text,
                rule: None,
                children,
                leaf: Some(Leaf::Group),
            }
        }
    }
}

#[derive(Clone)]
enum Premise {
    Row(RelId, Row),
    Absent(String),
    /// An aggregate step's group and what was folded into it.
    Group(Group),
}

#[derive(Clone)]
struct Group {
    /// `count = 3 over the group ("h1", 80)`.
    text: String,
    /// The first [`GROUP_SHOWN`] combinations of rows folded in.
    shown: Vec<Vec<Premise>>,
    /// How many combinations were folded in.
    total: usize,
}

/// What the end of a body must satisfy.
enum Goal<'g> {
    /// The rule's head equals the wanted tuple (and slots are pruned by it).
    Head,
    /// Every solution of an aggregate's inner body is collected.
    Collect {
        agg: &'g Agg<'g>,
        /// Per solution, what the engine folds (see `fold_aggregate`).
        values: Vec<Vec<Value>>,
        shown: Vec<Vec<Premise>>,
        /// The bindings of `agg.distinct` folded in already.
        seen: std::collections::HashSet<Vec<Value>>,
    },
}

/// An aggregate step's fold: what it folds and into what.
struct Agg<'g> {
    func: AggFunc,
    value: Option<&'g Expr>,
    /// `concat`'s ordering keys.
    order: &'g [Expr],
    result: Prim,
    /// Fold one solution per binding of these slots (empty: every one).
    distinct: &'g [usize],
}

enum Search {
    Found(Vec<Premise>),
    None,
    Budget,
}

struct Ctx<'a> {
    w: &'a Warm,
    rule: &'a RulePlan,
    want: &'a [Value],
    /// For each slot, the head column's value it must equal (head column `j`
    /// is `Expr::Slot(s)`), so scans prune early.
    expect: Vec<Option<Value>>,
    visited: usize,
}

fn find_body(w: &Warm, rule: &RulePlan, want: &[Value]) -> Search {
    let mut expect = Vec::new();
    for (j, e) in rule.head_exprs.iter().enumerate() {
        if let (Expr::Slot(s), Some(v)) = (e, want.get(j)) {
            if expect.len() <= *s {
                expect.resize(*s + 1, None);
            }
            expect[*s] = Some(*v);
        }
    }
    let mut ctx = Ctx {
        w,
        rule,
        want,
        expect,
        visited: 0,
    };
    let mut premises = Vec::new();
    let found = match &rule.body.source {
        Source::Unit => steps(
            &mut ctx,
            &rule.body.steps,
            0,
            &mut Vec::new(),
            &mut premises,
            &mut Goal::Head,
        ),
        Source::Scan(scan) => {
            let mut hit = false;
            for t in w.engine().contents(scan.rel) {
                if !tick(&mut ctx) {
                    break;
                }
                let mut slots = Vec::new();
                if bind(&scan.cols, &t, &mut slots) && consistent(&ctx, &slots, 0) {
                    premises.push(Premise::Row(scan.rel, t));
                    if steps(
                        &mut ctx,
                        &rule.body.steps,
                        0,
                        &mut slots,
                        &mut premises,
                        &mut Goal::Head,
                    ) {
                        hit = true;
                        break;
                    }
                    premises.pop();
                }
            }
            hit
        }
        Source::Outer => false,
    };
    if found {
        Search::Found(premises)
    } else if ctx.visited >= BUDGET {
        Search::Budget
    } else {
        Search::None
    }
}

fn tick(ctx: &mut Ctx) -> bool {
    ctx.visited += 1;
    ctx.visited < BUDGET
}

/// Appends the bound columns of `t` to `slots` if `t` matches the patterns
/// (a join's key columns, compared already, are `Ignore`).
fn bind(cols: &[ColPat], t: &[Value], slots: &mut Vec<Value>) -> bool {
    let mut bound = Vec::new();
    for (i, c) in cols.iter().enumerate() {
        let Some(v) = t.get(i) else { return false };
        match c {
            ColPat::Bind => bound.push(*v),
            ColPat::SameAs(j) => {
                if t.get(*j) != Some(v) {
                    return false;
                }
            }
            ColPat::Const(k) => {
                if k != v {
                    return false;
                }
            }
            ColPat::Ignore => {}
        }
    }
    slots.extend(bound);
    true
}

/// Whether the slots from `from` on agree with the head's wanted values
/// (inside an aggregate's inner body slots are its own: nothing to prune).
fn consistent_for(ctx: &Ctx, goal: &Goal, slots: &[Value], from: usize) -> bool {
    !matches!(goal, Goal::Head) || consistent(ctx, slots, from)
}

/// Whether the slots from `from` on agree with the head's wanted values.
fn consistent(ctx: &Ctx, slots: &[Value], from: usize) -> bool {
    (from..slots.len()).all(|s| match ctx.expect.get(s) {
        Some(Some(v)) => slots[s] == *v,
        _ => true,
    })
}

/// Runs `body` from step `i` on; true when `goal` is met (a `Collect` goal
/// never is: it visits every solution, within the budget).
fn steps(
    ctx: &mut Ctx,
    body: &[Step],
    i: usize,
    slots: &mut Vec<Value>,
    premises: &mut Vec<Premise>,
    goal: &mut Goal,
) -> bool {
    let Some(step) = body.get(i) else {
        return match goal {
            Goal::Head => {
                let head: Option<Vec<Value>> = ctx
                    .rule
                    .head_exprs
                    .iter()
                    .map(|e| eval_expr(e, slots))
                    .collect();
                head.as_deref() == Some(ctx.want)
            }
            Goal::Collect {
                agg,
                values,
                shown,
                seen,
            } => {
                if !agg.distinct.is_empty() {
                    let binding: Vec<Value> = agg
                        .distinct
                        .iter()
                        .filter_map(|s| slots.get(*s).copied())
                        .collect();
                    if !seen.insert(binding) {
                        return false;
                    }
                }
                let v = match (agg.value, agg.func) {
                    (_, AggFunc::Count) => Some(vec![Value::Number(1)]),
                    (Some(e), _) => agg
                        .order
                        .iter()
                        .chain(Some(e))
                        .map(|e| eval_expr(e, slots))
                        .collect(),
                    (None, _) => None,
                };
                if let Some(v) = v {
                    values.push(v);
                    if shown.len() < GROUP_SHOWN {
                        shown.push(premises.clone());
                    }
                }
                false
            }
        };
    };
    let base = slots.len();
    match step {
        Step::Join {
            rel,
            left_key,
            right_key,
            cols,
        } => {
            let Some(key): Option<Vec<Value>> =
                left_key.iter().map(|e| eval_expr(e, slots)).collect()
            else {
                return false;
            };
            for t in ctx.w.engine().contents(*rel) {
                if !tick(ctx) {
                    return false;
                }
                if right_key
                    .iter()
                    .zip(&key)
                    .any(|(c, k)| t.get(*c) != Some(k))
                {
                    continue;
                }
                if bind(cols, &t, slots) && consistent_for(ctx, goal, slots, base) {
                    premises.push(Premise::Row(*rel, t));
                    if steps(ctx, body, i + 1, slots, premises, goal) {
                        return true;
                    }
                    premises.pop();
                }
                slots.truncate(base);
            }
            false
        }
        Step::AntiJoin {
            rel,
            left_key,
            right_cols,
        } => {
            let Some(key): Option<Vec<Value>> =
                left_key.iter().map(|e| eval_expr(e, slots)).collect()
            else {
                return false;
            };
            let present = ctx.w.engine().contents(*rel).iter().any(|t| {
                right_cols
                    .iter()
                    .zip(&key)
                    .all(|(c, k)| t.get(*c) == Some(k))
            });
            if present {
                return false;
            }
            let name = &ctx.w.plan().relations[*rel].name;
            let arity = ctx.w.plan().relations[*rel].arity();
            let args: Vec<String> = (0..arity)
                .map(|c| match right_cols.iter().position(|x| *x == c) {
                    Some(k) => crate::intent::pattern::show(&key[k]),
                    None => "_".into(),
                })
                .collect();
            premises.push(Premise::Absent(format!("not {name}({})", args.join(", "))));
            if steps(ctx, body, i + 1, slots, premises, goal) {
                return true;
            }
            premises.pop();
            false
        }
        Step::Filter(c) => eval_cond(c, slots) && steps(ctx, body, i + 1, slots, premises, goal),
        Step::Bind(e) => {
            let Some(v) = eval_expr(e, slots) else {
                return false;
            };
            slots.push(v);
            let ok = consistent_for(ctx, goal, slots, base)
                && steps(ctx, body, i + 1, slots, premises, goal);
            if !ok {
                slots.truncate(base);
            }
            ok
        }
        Step::Aggregate {
            func,
            group,
            inner,
            value,
            order,
            result,
            distinct,
        } => {
            let Some(key): Option<Vec<Value>> =
                group.iter().map(|g| slots.get(*g).copied()).collect()
            else {
                return false;
            };
            let agg = Agg {
                func: *func,
                value: value.as_ref(),
                order,
                result: *result,
                distinct,
            };
            let Some(g) = fold_group(ctx, &agg, &key, &inner.steps) else {
                return false;
            };
            slots.push(g.0);
            premises.push(Premise::Group(g.1));
            let ok = consistent_for(ctx, goal, slots, base)
                && steps(ctx, body, i + 1, slots, premises, goal);
            if !ok {
                premises.pop();
                slots.truncate(base);
            }
            ok
        }
    }
}

/// An aggregate over the group `key`: every solution of its inner body
/// (which starts from the key as slots `0..key.len()`), folded as the engine
/// folds them. `None` when it has no value (min/max of nothing) or the
/// search ran out of budget.
fn fold_group(ctx: &mut Ctx, agg: &Agg, key: &[Value], inner: &[Step]) -> Option<(Value, Group)> {
    let (func, result) = (agg.func, agg.result);
    let mut goal = Goal::Collect {
        agg,
        values: Vec::new(),
        shown: Vec::new(),
        seen: Default::default(),
    };
    steps(ctx, inner, 0, &mut key.to_vec(), &mut Vec::new(), &mut goal);
    if ctx.visited >= BUDGET {
        return None;
    }
    let Goal::Collect { values, shown, .. } = goal else {
        return None;
    };
    let v = fold_aggregate(func, result, &values)?;
    let key_text: Vec<String> = key.iter().map(show).collect();
    let text = format!(
        "{} = {} over the group ({}): {} combination{} of rows folded in",
        func.name(),
        show(&v),
        key_text.join(", "),
        values.len(),
        if values.len() == 1 { "" } else { "s" }
    );
    Some((
        v,
        Group {
            text,
            shown,
            total: values.len(),
        },
    ))
}

/// The tree as indented text, one node per line.
pub fn render(n: &Node) -> String {
    let mut out = String::new();
    render_into(n, 0, &mut out);
    out
}

fn render_into(n: &Node, indent: usize, out: &mut String) {
    let pad = "  ".repeat(indent);
    let how = match (&n.rule, &n.leaf) {
        (Some(r), _) => format!("by the rule at {r}"),
        (None, Some(Leaf::Fact(at))) if at.starts_with("<netc>") => {
            format!("fact of the standard rules at {at}")
        }
        (None, Some(Leaf::Fact(at))) => format!("intent fact at {at}"),
        (None, Some(Leaf::Placement)) => {
            "written by the placement built-in (specs/intent.md §5)".into()
        }
        (None, Some(Leaf::Absent)) => "holds: no such row".into(),
        (None, Some(Leaf::NotDerivable)) => {
            "NOT DERIVABLE: no such row, and no rule derives it".into()
        }
        (None, Some(Leaf::DepthLimit)) => "... (depth limit; `:explain` shows 12 levels)".into(),
        (None, Some(Leaf::Cycle)) => "(already being explained above: a cycle)".into(),
        (None, Some(Leaf::Budget)) => "(search budget exhausted; not expanded)".into(),
        (None, Some(Leaf::Group)) => "an aggregate of the rule above; folded in:".into(),
        (None, Some(Leaf::More(_))) => "(not shown)".into(),
        (None, None) => String::new(),
    };
    out.push_str(&format!("{pad}{}   <- {how}\n", n.atom));
    for c in &n.children {
        render_into(c, indent + 1, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::intent::warm::IntentText;

    const PATHS: &str =
        ".decl edge(a: number, b: number)\n.decl path(a: number, b: number)\n.output path\n\
             .decl blocked(a: number)\n.decl ok(a: number, b: number)\n.output ok\n\
             path(a, b) :- edge(a, b).\npath(a, c) :- path(a, b), edge(b, c).\n\
             ok(a, b) :- path(a, b), !blocked(b), a < b.\n";

    fn warm(test: &str, text: &str) -> Warm {
        warm_with(test, PATHS, text)
    }

    fn warm_with(test: &str, rules: &str, text: &str) -> Warm {
        let dir = std::env::temp_dir().join(format!("netc-explain-{test}-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        std::fs::write(dir.join("r.ndl"), rules).unwrap();
        let w = Warm::start(
            vec![IntentText {
                name: "facts.ndl".into(),
                text: text.into(),
            }],
            Some(&dir),
        )
        .unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        w
    }

    #[test]
    fn derivation_reaches_the_intent_facts_with_their_lines() {
        let w = warm("facts", "edge(1, 2).\nedge(2, 3).\nblocked(2).\n");
        let ok = w.plan().relation_id("ok").unwrap();
        let n = explain(&w, ok, &[Value::Number(1), Value::Number(3)], 12);
        assert!(n.rule.is_some(), "{n:?}");
        let text = render(&n);
        assert!(
            text.contains("edge(1, 2)   <- intent fact at facts.ndl:1:1"),
            "{text}"
        );
        assert!(
            text.contains("edge(2, 3)   <- intent fact at facts.ndl:2:1"),
            "{text}"
        );
        assert!(text.contains("not blocked(3)"), "{text}");
        // ok(1, 2) is not derivable: 2 is blocked.
        let n = explain(&w, ok, &[Value::Number(1), Value::Number(2)], 12);
        assert_eq!(n.leaf, Some(Leaf::NotDerivable));
    }

    #[test]
    fn the_depth_bound_is_reported() {
        let w = warm("depth", "edge(1, 2).\nedge(2, 3).\nedge(3, 4).\n");
        let path = w.plan().relation_id("path").unwrap();
        let n = explain(&w, path, &[Value::Number(1), Value::Number(4)], 1);
        assert!(render(&n).contains("depth limit"), "{}", render(&n));
        let full = render(&explain(
            &w,
            path,
            &[Value::Number(1), Value::Number(4)],
            12,
        ));
        assert!(
            full.contains("edge(3, 4)   <- intent fact at facts.ndl:3:1"),
            "{full}"
        );
    }

    const GROUPS: &str = ".decl member(g: number, x: number)\n.decl weight(x: number, w: number)\n\
             .decl size(g: number, n: number)\n.output size\n\
             .decl heaviest(g: number, w: number)\n.output heaviest\n\
             size(g, n) :- member(g, _), n = count : { member(g, _y) }.\n\
             heaviest(g, m) :- member(g, _), m = max w : { member(g, x), weight(x, w) }.\n";

    #[test]
    fn an_aggregate_shows_its_group_and_what_was_folded_in() {
        let facts: String = (1..=7)
            .map(|x| format!("member(1, {x}).\n"))
            .chain(["member(2, 8).\n".to_string()])
            .chain((1..=8).map(|x| format!("weight({x}, {}).\n", x * 10)))
            .collect();
        let w = warm_with("agg", GROUPS, &facts);
        let size = w.plan().relation_id("size").unwrap();
        let n = explain(&w, size, &[Value::Number(1), Value::Number(7)], 12);
        let text = render(&n);
        assert!(n.rule.is_some(), "{text}");
        assert!(
            text.contains("count = 7 over the group (1): 7 combinations of rows folded in"),
            "{text}"
        );
        // the first GROUP_SHOWN contributors, each down to its intent fact, then the rest counted
        for x in 1..=GROUP_SHOWN {
            assert!(
                text.contains(&format!(
                    "member(1, {x})   <- intent fact at facts.ndl:{x}:1"
                )),
                "{text}"
            );
        }
        assert!(text.contains("… and 2 more"), "{text}");
        assert!(
            !text.contains("member(2, 8)   <-"),
            "another group's row: {text}"
        );
        // a wrong count is not derivable
        let n = explain(&w, size, &[Value::Number(1), Value::Number(6)], 12);
        assert_eq!(n.leaf, Some(Leaf::NotDerivable));
        // max over a join: both rows of each combination are shown
        let heaviest = w.plan().relation_id("heaviest").unwrap();
        let text = render(&explain(
            &w,
            heaviest,
            &[Value::Number(2), Value::Number(80)],
            12,
        ));
        assert!(
            text.contains("max = 80 over the group (2): 1 combination"),
            "{text}"
        );
        assert!(
            text.contains("member(2, 8)   <- intent fact at facts.ndl:8:1"),
            "{text}"
        );
        assert!(
            text.contains("weight(8, 80)   <- intent fact at facts.ndl:16:1"),
            "{text}"
        );
        assert!(!text.contains("more"), "{text}");
    }
}
