//! Functional-dependency checks: rules the driver evaluates from a
//! relation's contents instead of the dataflow.
//!
//! Expects: a validated plan.
//! Guarantees:
//! - SHAPE: a rule is a *check* ([`FdCheck`]) iff its plan is a scan of a
//!   relation `r` (columns bound or ignored), a join of `r` with itself on
//!   key columns `K` (each joined to the same column), and one comparison
//!   `<`, `>` or `!=` of the two tuples' values of one column `c` outside
//!   `K`; its head is columns of `K`. That is
//!   `e(k) :- r(k, a1, _), r(k, a2, _), a1 < a2.` — `rules/validate.ndl`'s
//!   `error_ovs_flow_conflict` and the two plans of `error_ovs_group_conflict`.
//! - MEANING: since `Value`'s order is total and agrees with `==`, such a
//!   rule derives `head(k)` iff the rows of `r` with key `k` hold at least
//!   two different values in column `c`. [`Index`] keeps, per key, how many
//!   rows hold each value, and says which keys crossed that line in an
//!   epoch; the driver counts each conflicting key as one derivation of its
//!   head row (`lib.rs`), beside the head relation's other derivations.
//! - A check is taken out of the dataflow ([`split`]) only if no rule reads
//!   its head relation and the head's stratum is not recursive: the head is
//!   then *counted* (the driver makes it a set), and nothing in the
//!   dataflow needs it. Why: for `ovs_flow` (3.3M rows at L) the check was
//!   the only other-stratum reader, so the rule pieces' derivations were
//!   made distinct by a union piece, copied into the check's piece,
//!   arranged and self-joined (~3.1 µs CPU per row, ~15 CPU s at L); now
//!   `ovs_flow` is counted and the check costs one hash update per row.
//! - The plan the engine exposes keeps every rule (explanations and
//!   citations re-derive a conflict through the rule as written).

use super::tuple::{FxHashMap, Tuple};
use netc_compiler::plan::CmpOp;
use netc_compiler::plan::{Body, ColPat, Cond, Expr, Plan, RelId, RulePlan, Source, Step};
use netc_compiler::value::Value;
use std::collections::BTreeSet;

/// A rule of the shape in the module docs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FdCheck {
    /// The relation it derives.
    pub head: RelId,
    /// The relation it reads (twice).
    pub rel: RelId,
    /// The key columns of `rel`.
    key: Vec<usize>,
    /// The compared column of `rel`.
    value: usize,
    /// Per head column, its position in `key`.
    head_cols: Vec<usize>,
}

impl FdCheck {
    /// The check a rule is, if it has the shape (see module docs).
    pub fn recognize(rule: &RulePlan) -> Option<FdCheck> {
        let Body {
            source: Source::Scan(scan),
            steps,
        } = &rule.body
        else {
            return None;
        };
        let [Step::Join {
            rel,
            left_key,
            right_key,
            cols,
        }, Step::Filter(Cond::Compare(op, Expr::Slot(x), Expr::Slot(y)))] = steps.as_slice()
        else {
            return None;
        };
        if *rel != scan.rel || !matches!(op, CmpOp::Lt | CmpOp::Gt | CmpOp::Ne) {
            return None;
        }
        // Slot -> column: the scan binds its `Bind` columns in order, then
        // the join appends its own.
        let plain = |c: &ColPat| matches!(c, ColPat::Bind | ColPat::Ignore);
        if !scan.cols.iter().all(plain) || !cols.iter().all(plain) {
            return None;
        }
        let bound = |cs: &[ColPat]| -> Vec<usize> {
            (0..cs.len()).filter(|&i| cs[i] == ColPat::Bind).collect()
        };
        let left_cols = bound(&scan.cols);
        let right_cols = bound(cols);
        // The key: each join column equal to the same column of the scan.
        let mut key = Vec::with_capacity(right_key.len());
        for (l, &r) in left_key.iter().zip(right_key) {
            let Expr::Slot(s) = l else { return None };
            if left_cols.get(*s) != Some(&r) || key.contains(&r) {
                return None;
            }
            key.push(r);
        }
        if key.len() != left_key.len() || right_cols.iter().any(|c| key.contains(c)) {
            return None;
        }
        // The comparison: the same non-key column of each tuple.
        let column = |s: usize| -> Option<(bool, usize)> {
            match s.checked_sub(left_cols.len()) {
                None => Some((true, left_cols[s])),
                Some(j) => right_cols.get(j).map(|&c| (false, c)),
            }
        };
        let ((lx, cx), (ly, cy)) = (column(*x)?, column(*y)?);
        if lx == ly || cx != cy || key.contains(&cx) {
            return None;
        }
        let head_cols = rule
            .head_exprs
            .iter()
            .map(|e| match e {
                Expr::Slot(s) if *s < left_cols.len() => {
                    key.iter().position(|&k| k == left_cols[*s])
                }
                _ => None,
            })
            .collect::<Option<Vec<usize>>>()?;
        Some(FdCheck {
            head: rule.head,
            rel: scan.rel,
            key,
            value: cx,
            head_cols,
        })
    }

    /// The head row of key `k` (the key columns' values, in `key` order).
    fn head_row(&self, k: &Tuple) -> Tuple {
        let vals: Vec<Value> = self.head_cols.iter().filter_map(|&i| k.get(i)).collect();
        Tuple::from_values(&vals)
    }
}

/// The plan for the dataflow: `plan` without its checks' rules, and the
/// checks (see module docs for which are taken out).
pub fn split(plan: &Plan) -> (Plan, Vec<FdCheck>) {
    let mut read = BTreeSet::new();
    for s in &plan.strata {
        for rule in &s.rules {
            read.extend(rule.body.reads().into_iter().map(|(r, _)| r));
        }
    }
    let mut out = plan.clone();
    let mut checks = Vec::new();
    for s in out.strata.iter_mut().filter(|s| !s.recursive) {
        s.rules.retain(
            |rule| match FdCheck::recognize(rule).filter(|c| !read.contains(&c.head)) {
                Some(c) => {
                    checks.push(c);
                    false
                }
                None => true,
            },
        );
    }
    (out, checks)
}

/// The values of one key's rows: how many rows hold each value.
#[derive(Clone, Debug)]
enum Values {
    /// All rows hold one value (the common case: no conflict).
    One(Value, u32),
    /// At least two different values: a conflict.
    Many(FxHashMap<Value, u32>),
}

impl Values {
    fn conflict(&self) -> bool {
        matches!(self, Values::Many(_))
    }
}

/// A check's per-key view of its relation (see module docs).
#[derive(Clone, Debug)]
pub struct Index {
    pub check: FdCheck,
    keys: FxHashMap<Tuple, Values>,
    /// The keys whose conflict flipped this epoch, with their state before it.
    flipped: FxHashMap<Tuple, bool>,
}

impl Index {
    pub fn new(check: FdCheck) -> Index {
        Index {
            check,
            keys: FxHashMap::default(),
            flipped: FxHashMap::default(),
        }
    }

    /// Makes room for `n` more keys (a large first batch).
    pub fn reserve(&mut self, n: usize) {
        self.keys.reserve(n);
    }

    /// A row of the relation appeared (`d = 1`) or went (`d = -1`).
    /// `None`: it went from a key or value that holds no row (an internal
    /// error: the caller passes set changes).
    pub fn apply(&mut self, t: &Tuple, d: isize) -> Option<()> {
        let key = t.project(&self.check.key);
        let v = t.get(self.check.value)?;
        let before = self.keys.get(&key).is_some_and(Values::conflict);
        let after = if d > 0 {
            match self.keys.get_mut(&key) {
                None => {
                    self.keys.insert(key.clone(), Values::One(v, 1));
                    false
                }
                Some(Values::One(w, n)) if *w == v => {
                    *n += 1;
                    false
                }
                Some(vals) => {
                    if let Values::One(w, n) = *vals {
                        let mut m = FxHashMap::default();
                        m.insert(w, n);
                        *vals = Values::Many(m);
                    }
                    if let Values::Many(m) = vals {
                        *m.entry(v).or_insert(0) += 1;
                    }
                    true
                }
            }
        } else {
            let vals = self.keys.get_mut(&key)?;
            match vals {
                Values::One(w, n) if *w == v => {
                    *n -= 1;
                    if *n == 0 {
                        self.keys.remove(&key);
                    }
                    false
                }
                Values::One(..) => return None,
                Values::Many(m) => {
                    let n = m.get_mut(&v)?;
                    *n -= 1;
                    if *n == 0 {
                        m.remove(&v);
                    }
                    if m.len() == 1 {
                        let (&w, &n) = m.iter().next()?;
                        *vals = Values::One(w, n);
                        false
                    } else {
                        true
                    }
                }
            }
        };
        if before != after {
            self.flipped.entry(key).or_insert(before);
        }
        Some(())
    }

    /// The epoch's changes of head rows (one derivation per conflicting
    /// key), and the epoch's flips forgotten.
    pub fn drain(&mut self, out: &mut Vec<(RelId, Tuple, isize)>) {
        for (key, before) in std::mem::take(&mut self.flipped) {
            let after = self.keys.get(&key).is_some_and(Values::conflict);
            if after != before {
                out.push((
                    self.check.head,
                    self.check.head_row(&key),
                    if after { 1 } else { -1 },
                ));
            }
        }
    }

    /// Forgets the relation's rows (it cannot change any more).
    pub fn free(&mut self) {
        self.keys = FxHashMap::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(text: &str) -> Plan {
        netc_compiler::compile_text("fd.ndl", text)
            .plan
            .expect("a plan")
    }

    const DECLS: &str = "
        .decl r(h: symbol, t: number, m: symbol, a: symbol, c: number)
        .input r
        .decl e(h: symbol, t: number, m: symbol)
        .output e
    ";

    fn checks(rules: &str) -> Vec<FdCheck> {
        split(&plan(&format!("{DECLS}{rules}"))).1
    }

    #[test]
    fn the_conflict_shapes_are_checks() {
        let c = checks("e(h, t, m) :- r(h, t, m, a1, _), r(h, t, m, a2, _), a1 < a2.");
        assert_eq!(c.len(), 1);
        assert_eq!((c[0].key.clone(), c[0].value), (vec![0, 1, 2], 3));
        assert_eq!(c[0].head_cols, vec![0, 1, 2]);
        // `!=`, `>`, a head in another order, a bound but unused column.
        let c = checks("e(m, t, h) :- r(h, t, m, a1, c), r(h, t, m, a2, _), a2 != a1.");
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].head_cols, vec![2, 1, 0]);
        assert_eq!(
            checks("e(h, t, m) :- r(h, t, m, _, a1), r(h, t, m, _, a2), a1 > a2.").len(),
            1
        );
        // The ovs_group shape: a disjunction is two plans, two checks.
        let c = checks(
            ".decl g(h: symbol, id: number, t: symbol, b: symbol) .input g
             .decl eg(h: symbol, id: number) .output eg
             eg(h, i) :- g(h, i, t1, b1), g(h, i, t2, b2), (t1 != t2 ; b1 != b2).",
        );
        assert_eq!(c.len(), 2);
    }

    #[test]
    fn other_shapes_stay_rules() {
        for rule in [
            // a comparison that two equal values pass, or none of a key's rows
            "e(h, t, m) :- r(h, t, m, a1, _), r(h, t, m, a2, _), a1 <= a2.",
            // a key column compared
            "e(h, t, m) :- r(h, t, m, _, c1), r(h, t, m, _, c2), h < m.",
            // two different columns compared
            "e(h, t, m) :- r(h, t, m, a1, c1), r(h, t, m, a2, c2), c1 != c2, a1 != a2.",
            // not the same key column on both sides
            "e(h, t, m) :- r(h, t, m, a1, _), r(h, t, a1, a2, _), m < a2.",
            // a constant
            "e(h, t, m) :- r(h, t, m, a1, _), r(h, t, m, a2, 1), a1 < a2.",
            // a non-key column in the head
            "e(h, t, a1) :- r(h, t, m, a1, _), r(h, t, m, a2, _), a1 < a2.",
        ] {
            assert!(checks(rule).is_empty(), "{rule}");
        }
        // A head another rule reads stays in the dataflow.
        let read = ".decl f(h: symbol) .output f
            e(h, t, m) :- r(h, t, m, a1, _), r(h, t, m, a2, _), a1 < a2.
            f(h) :- e(h, _, _).";
        assert!(checks(read).is_empty());
    }
}
