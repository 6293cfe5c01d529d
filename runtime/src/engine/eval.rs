//! Evaluation of plan expressions, conditions and column patterns over rows.
//!
//! Expects: a validated plan (`validate.rs`), so every `Expr::Slot` is in
//! range (PLAN-SLOTS) and every pattern has one entry per column. A slot out
//! of range is still handled safely: it trips a `debug_assert` and the
//! expression is undefined (the row is dropped), never a panic in release.
//! Guarantees: `None`/`false` means "drop the row"; nothing here panics on
//! user data (functors return `None` for undefined results).

use super::tuple::{Builder, Tuple};
use netc_compiler::ast::CmpOp;
use netc_compiler::functors;
use netc_compiler::plan::{ColPat, Cond, Expr};
use netc_compiler::value::Value;

/// Reads a slot of a binding row.
#[inline]
fn slot(row: &Tuple, i: usize) -> Option<Value> {
    let v = row.get(i);
    debug_assert!(
        v.is_some(),
        "PLAN-SLOTS violated: slot {i} of a row of width {}",
        row.len()
    );
    v
}

/// Evaluates an expression on a binding row; `None` when undefined.
pub fn eval(e: &Expr, row: &Tuple) -> Option<Value> {
    match e {
        Expr::Slot(i) => slot(row, *i),
        Expr::Const(v) => Some(*v),
        Expr::Call(f, args) => with_args(args, row, |a| functors::eval(*f, a)).flatten(),
        Expr::Binary(op, a, b) => functors::eval_binary(*op, &eval(a, row)?, &eval(b, row)?),
        Expr::Unary(op, a) => functors::eval_unary(*op, &eval(a, row)?),
    }
}

/// Evaluates `args` into a stack buffer (a heap one past 8 arguments) and
/// hands them to `f`; `None` if an argument is undefined.
fn with_args<R>(args: &[Expr], row: &Tuple, f: impl FnOnce(&[Value]) -> R) -> Option<R> {
    const N: usize = 8;
    if args.len() <= N {
        let mut buf = [Value::Number(0); N];
        for (b, a) in buf.iter_mut().zip(args) {
            *b = eval(a, row)?;
        }
        Some(f(&buf[..args.len()]))
    } else {
        let vals = args
            .iter()
            .map(|a| eval(a, row))
            .collect::<Option<Vec<_>>>()?;
        Some(f(&vals))
    }
}

/// Evaluates a condition: `Some(truth)`, or `None` when an operand is
/// undefined (then neither the condition nor its negation holds).
pub fn cond(c: &Cond, row: &Tuple) -> Option<bool> {
    match c {
        Cond::Compare(op, a, b) => {
            let (a, b) = (eval(a, row)?, eval(b, row)?);
            Some(match op {
                // Equality needs no interner lookup: `Ord` is consistent with `Eq`.
                CmpOp::Eq => a == b,
                CmpOp::Ne => a != b,
                _ => functors::compare(*op, &a, &b),
            })
        }
        Cond::Call(f, args) => with_args(args, row, |a| functors::holds(*f, a)),
        Cond::Not(c) => cond(c, row).map(|b| !b),
    }
}

/// Whether a row passes a condition.
#[inline]
pub fn holds(c: &Cond, row: &Tuple) -> bool {
    cond(c, row) == Some(true)
}

/// If every expression is a slot, the slots.
pub fn all_slots(exprs: &[Expr]) -> Option<Vec<usize>> {
    exprs
        .iter()
        .map(|e| {
            if let Expr::Slot(i) = e {
                Some(*i)
            } else {
                None
            }
        })
        .collect()
}

/// Computes a tuple of expressions over a row (join keys, rule heads).
#[derive(Clone, Debug)]
pub struct RowProg {
    exprs: Vec<Expr>,
    /// Fast path: every expression is a slot.
    slots: Option<Vec<usize>>,
}

impl RowProg {
    pub fn new(exprs: &[Expr]) -> RowProg {
        RowProg {
            exprs: exprs.to_vec(),
            slots: all_slots(exprs),
        }
    }

    /// The tuple, or `None` if an expression is undefined.
    #[inline]
    pub fn apply(&self, row: &Tuple) -> Option<Tuple> {
        let mut b = Builder::new();
        match &self.slots {
            Some(s) => {
                for &i in s {
                    b.push(slot(row, i)?);
                }
            }
            None => {
                for e in &self.exprs {
                    b.push(eval(e, row)?);
                }
            }
        }
        Some(b.finish())
    }
}

/// A compiled list of [`ColPat`]s: the checks a tuple must pass and the
/// columns it appends.
#[derive(Clone, Debug)]
pub struct ColProg {
    same: Vec<(usize, usize)>,
    consts: Vec<(usize, Value)>,
    binds: Vec<usize>,
    /// Every column is `Bind`: the tuple itself is the output.
    identity: bool,
}

impl ColProg {
    pub fn new(cols: &[ColPat]) -> ColProg {
        let mut p = ColProg {
            same: vec![],
            consts: vec![],
            binds: vec![],
            identity: false,
        };
        for (i, c) in cols.iter().enumerate() {
            match c {
                ColPat::Bind => p.binds.push(i),
                ColPat::SameAs(j) => p.same.push((i, *j)),
                ColPat::Const(v) => p.consts.push((i, *v)),
                ColPat::Ignore => {}
            }
        }
        p.identity =
            p.binds.len() == cols.len() && p.binds.iter().enumerate().all(|(k, &i)| k == i);
        p
    }

    /// Whether the patterns are all `Bind` (a scan that is the relation itself).
    pub fn is_identity(&self) -> bool {
        self.identity
    }

    /// Whether a tuple passes the `SameAs`/`Const` checks.
    #[inline]
    pub fn matches(&self, t: &Tuple) -> bool {
        self.consts.iter().all(|(i, v)| t.get(*i) == Some(*v))
            && self
                .same
                .iter()
                .all(|(i, j)| t.get(*i).is_some() && t.get(*i) == t.get(*j))
    }

    /// A scan: the bound columns of `t`, if it passes the checks.
    #[inline]
    pub fn scan(&self, t: &Tuple) -> Option<Tuple> {
        if self.identity {
            return Some(t.clone());
        }
        if !self.matches(t) {
            return None;
        }
        Some(t.project(&self.binds))
    }

    /// A join: `row` extended with the bound columns of `t`, if it passes.
    #[inline]
    pub fn extend(&self, row: &Tuple, t: &Tuple) -> Option<Tuple> {
        if !self.matches(t) {
            return None;
        }
        let mut b = Builder::from(row);
        for &i in &self.binds {
            b.push(t.get(i)?);
        }
        Some(b.finish())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn col_prog_checks_and_binds() {
        let p = ColProg::new(&[
            ColPat::Bind,
            ColPat::SameAs(0),
            ColPat::Const(Value::Number(7)),
            ColPat::Ignore,
            ColPat::Bind,
        ]);
        let t = |a, b, c, d, e| {
            Tuple::from_values(&[
                Value::Number(a),
                Value::Number(b),
                Value::Number(c),
                Value::Number(d),
                Value::Number(e),
            ])
        };
        assert_eq!(
            p.scan(&t(1, 1, 7, 9, 5)),
            Some(Tuple::from_values(&[Value::Number(1), Value::Number(5)]))
        );
        assert_eq!(p.scan(&t(1, 2, 7, 9, 5)), None);
        assert_eq!(p.scan(&t(1, 1, 8, 9, 5)), None);
        assert!(!p.is_identity());
        assert!(ColProg::new(&[ColPat::Bind, ColPat::Bind]).is_identity());
    }

    #[test]
    fn row_prog_slots_fast_path() {
        let p = RowProg::new(&[Expr::Slot(1), Expr::Const(Value::Number(3))]);
        let row = Tuple::from_values(&[Value::Number(1), Value::Number(2)]);
        assert_eq!(
            p.apply(&row),
            Some(Tuple::from_values(&[Value::Number(2), Value::Number(3)]))
        );
        let q = RowProg::new(&[Expr::Slot(1), Expr::Slot(0)]);
        assert_eq!(
            q.apply(&row),
            Some(Tuple::from_values(&[Value::Number(2), Value::Number(1)]))
        );
    }
}
