//! Evaluation of plan expressions, conditions and column patterns over rows,
//! and the slot bookkeeping that lets rows carry only live values.
//!
//! Expects: a validated plan (`validate.rs`), so every `Expr::Slot` is in
//! range (PLAN-SLOTS) and every pattern has one entry per column. A slot out
//! of range is still handled safely: it trips a `debug_assert` and the
//! expression is undefined (the row is dropped), never a panic in release.
//! Guarantees:
//! - `None`/`false` means "drop the row"; nothing here panics on user data
//!   (functors return `None` for undefined results).
//! - Expressions read a row through [`Slots`], so a join can evaluate what it
//!   emits on the *virtual* row "left row ++ bound columns of the right
//!   tuple" ([`Joined`], [`Appended`]) without building it.
//! - A [`Layout`] maps the plan's (logical) slots to positions in a physical
//!   row; [`Layout::expr`] rewrites an expression to physical positions.

use super::tuple::{Builder, Tuple};
use netc_compiler::functors::{self, Builtin};
use netc_compiler::plan::CmpOp;
use netc_compiler::plan::{ColPat, Cond, Expr};
use netc_compiler::value::Value;
use std::collections::BTreeSet;

/// Something expressions can read slots of.
pub trait Slots {
    fn slot(&self, i: usize) -> Option<Value>;
}

impl Slots for Tuple {
    #[inline]
    fn slot(&self, i: usize) -> Option<Value> {
        self.get(i)
    }
}

/// The virtual row `left ++ right[binds]`.
pub struct Joined<'a> {
    pub left: &'a Tuple,
    pub right: &'a Tuple,
    pub binds: &'a [usize],
}

impl Slots for Joined<'_> {
    #[inline]
    fn slot(&self, i: usize) -> Option<Value> {
        let n = self.left.len();
        if i < n {
            self.left.get(i)
        } else {
            self.right.get(*self.binds.get(i - n)?)
        }
    }
}

/// The virtual row `row ++ [extra]`.
pub struct Appended<'a> {
    pub row: &'a Tuple,
    pub extra: Value,
}

impl Slots for Appended<'_> {
    #[inline]
    fn slot(&self, i: usize) -> Option<Value> {
        let n = self.row.len();
        if i < n {
            self.row.get(i)
        } else {
            (i == n).then_some(self.extra)
        }
    }
}

/// Reads a slot of a binding row.
#[inline]
fn slot<R: Slots + ?Sized>(row: &R, i: usize) -> Option<Value> {
    let v = row.slot(i);
    debug_assert!(v.is_some(), "PLAN-SLOTS violated: slot {i} is not bound");
    v
}

/// Evaluates an expression on a binding row; `None` when undefined.
pub fn eval<R: Slots + ?Sized>(e: &Expr, row: &R) -> Option<Value> {
    match e {
        Expr::Slot(i) => slot(row, *i),
        Expr::Const(v) => Some(*v),
        Expr::Call(Builtin::Cat, args) => cat(args, row),
        Expr::Call(f, args) => with_args(args, row, |a| functors::eval(*f, a)).flatten(),
        Expr::Binary(op, a, b) => functors::eval_binary(*op, &eval(a, row)?, &eval(b, row)?),
        Expr::Unary(op, a) => functors::eval_unary(*op, &eval(a, row)?),
    }
}

/// `cat(...)`, its `to_string(x)` arguments fused into the concatenation
/// (`functors::cat_converted`): the rules build every OVS flow's match and
/// actions as `cat("ip,reg6=", to_string(vni), ...)`, and interning each
/// converted number or address as a symbol of its own cost a lock, a hash
/// and an interner entry per conversion. Past 8 arguments, the plain path.
fn cat<R: Slots + ?Sized>(args: &[Expr], row: &R) -> Option<Value> {
    const N: usize = 8;
    if args.len() > N {
        return with_args(args, row, |a| functors::eval(Builtin::Cat, a)).flatten();
    }
    let mut buf = [(false, Value::Number(0)); N];
    for (b, a) in buf.iter_mut().zip(args) {
        *b = match a {
            Expr::Call(Builtin::ToString, x) if x.len() == 1 => (true, eval(&x[0], row)?),
            _ => (false, eval(a, row)?),
        };
    }
    functors::cat_converted(&buf[..args.len()])
}

/// Evaluates `args` into a stack buffer (a heap one past 8 arguments) and
/// hands them to `f`; `None` if an argument is undefined.
fn with_args<R: Slots + ?Sized, X>(
    args: &[Expr],
    row: &R,
    f: impl FnOnce(&[Value]) -> X,
) -> Option<X> {
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
pub fn cond<R: Slots + ?Sized>(c: &Cond, row: &R) -> Option<bool> {
    match c {
        Cond::Compare(op, a, b) => {
            let (a, b) = (eval(a, row)?, eval(b, row)?);
            let float = matches!(a, Value::Float(_));
            Some(match op {
                // Equality needs no interner lookup: `Ord` is consistent with
                // `Eq` (floats compare as IEEE 754 does: `functors::compare`)
                CmpOp::Eq if !float => a == b,
                CmpOp::Ne if !float => a != b,
                _ => functors::compare(*op, &a, &b),
            })
        }
        Cond::Call(f, args) => with_args(args, row, |a| functors::holds_defined(*f, a)).flatten(),
        Cond::Not(c) => cond(c, row).map(|b| !b),
    }
}

/// Whether a row passes a condition.
#[inline]
pub fn holds<R: Slots + ?Sized>(c: &Cond, row: &R) -> bool {
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

/// Adds the slots an expression reads to `out`.
pub fn expr_slots(e: &Expr, out: &mut BTreeSet<usize>) {
    match e {
        Expr::Slot(i) => {
            out.insert(*i);
        }
        Expr::Const(_) => {}
        Expr::Call(_, args) => args.iter().for_each(|a| expr_slots(a, out)),
        Expr::Binary(_, a, b) => {
            expr_slots(a, out);
            expr_slots(b, out);
        }
        Expr::Unary(_, a) => expr_slots(a, out),
    }
}

/// Adds the slots a condition reads to `out`.
pub fn cond_slots(c: &Cond, out: &mut BTreeSet<usize>) {
    match c {
        Cond::Compare(_, a, b) => {
            expr_slots(a, out);
            expr_slots(b, out);
        }
        Cond::Call(_, args) => args.iter().for_each(|a| expr_slots(a, out)),
        Cond::Not(c) => cond_slots(c, out),
    }
}

/// Where each logical slot of the plan sits in a physical row:
/// `self.0[p]` is the logical slot at position `p`.
#[derive(Clone, Debug, PartialEq)]
pub struct Layout(pub Vec<usize>);

impl Layout {
    /// Positions 0..n holding slots 0..n.
    pub fn identity(n: usize) -> Layout {
        Layout((0..n).collect())
    }

    /// The position of a logical slot (an out-of-range position if the slot
    /// is not held: reading it is undefined, see the module docs).
    pub fn phys(&self, s: usize) -> usize {
        self.0.iter().position(|&l| l == s).unwrap_or(usize::MAX)
    }

    /// This layout followed by logical slots `from..from + n`.
    pub fn extended(&self, from: usize, n: usize) -> Layout {
        Layout(self.0.iter().copied().chain(from..from + n).collect())
    }

    /// Rewrites an expression from logical slots to positions.
    pub fn expr(&self, e: &Expr) -> Expr {
        match e {
            Expr::Slot(i) => Expr::Slot(self.phys(*i)),
            Expr::Const(v) => Expr::Const(*v),
            Expr::Call(f, args) => Expr::Call(*f, args.iter().map(|a| self.expr(a)).collect()),
            Expr::Binary(op, a, b) => {
                Expr::Binary(*op, Box::new(self.expr(a)), Box::new(self.expr(b)))
            }
            Expr::Unary(op, a) => Expr::Unary(*op, Box::new(self.expr(a))),
        }
    }

    pub fn exprs(&self, es: &[Expr]) -> Vec<Expr> {
        es.iter().map(|e| self.expr(e)).collect()
    }

    /// Rewrites a condition from logical slots to positions.
    pub fn cond(&self, c: &Cond) -> Cond {
        match c {
            Cond::Compare(op, a, b) => Cond::Compare(*op, self.expr(a), self.expr(b)),
            Cond::Call(f, args) => Cond::Call(*f, self.exprs(args)),
            Cond::Not(c) => Cond::Not(Box::new(self.cond(c))),
        }
    }

    /// A program that keeps the logical slots `keep` (in that order).
    pub fn keep(&self, keep: &[usize]) -> RowProg {
        RowProg::new(
            &keep
                .iter()
                .map(|&s| Expr::Slot(self.phys(s)))
                .collect::<Vec<_>>(),
        )
    }
}

/// Computes a tuple of expressions over a row (join keys, kept slots, heads).
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

    /// Whether it copies positions 0..n of a row of width n unchanged.
    pub fn is_identity(&self, n: usize) -> bool {
        self.slots
            .as_ref()
            .is_some_and(|s| s.len() == n && s.iter().enumerate().all(|(k, &i)| k == i))
    }

    /// The tuple, or `None` if an expression is undefined.
    #[inline]
    pub fn apply<R: Slots + ?Sized>(&self, row: &R) -> Option<Tuple> {
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
/// columns it binds.
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

    /// The bound columns, in order (they become consecutive slots).
    pub fn binds(&self) -> &[usize] {
        &self.binds
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn nums(xs: &[i64]) -> Tuple {
        Tuple::from_values(&xs.iter().map(|&x| Value::Number(x)).collect::<Vec<_>>())
    }

    #[test]
    fn col_prog_checks_and_binds() {
        let p = ColProg::new(&[
            ColPat::Bind,
            ColPat::SameAs(0),
            ColPat::Const(Value::Number(7)),
            ColPat::Ignore,
            ColPat::Bind,
        ]);
        assert!(p.matches(&nums(&[1, 1, 7, 9, 5])));
        assert!(!p.matches(&nums(&[1, 2, 7, 9, 5])));
        assert!(!p.matches(&nums(&[1, 1, 8, 9, 5])));
        assert_eq!(p.binds(), &[0, 4]);
        assert!(!p.is_identity());
        assert!(ColProg::new(&[ColPat::Bind, ColPat::Bind]).is_identity());
    }

    #[test]
    fn virtual_rows_and_layouts() {
        let left = nums(&[10, 11]);
        let right = nums(&[20, 21, 22]);
        let j = Joined {
            left: &left,
            right: &right,
            binds: &[2, 0],
        };
        assert_eq!(
            RowProg::new(&[Expr::Slot(3), Expr::Slot(0)]).apply(&j),
            Some(nums(&[20, 10]))
        );
        assert_eq!(j.slot(4), None);
        let a = Appended {
            row: &left,
            extra: Value::Number(5),
        };
        assert_eq!(
            RowProg::new(&[Expr::Slot(2), Expr::Const(Value::Number(3))]).apply(&a),
            Some(nums(&[5, 3]))
        );
        // Logical slots 4 and 7 held at positions 0 and 1.
        let l = Layout(vec![4, 7]);
        assert_eq!(l.expr(&Expr::Slot(7)), Expr::Slot(1));
        assert_eq!(l.keep(&[7]).apply(&nums(&[40, 70])), Some(nums(&[70])));
        assert_eq!(l.extended(8, 2), Layout(vec![4, 7, 8, 9]));
        assert!(RowProg::new(&[Expr::Slot(0), Expr::Slot(1)]).is_identity(2));
    }

    /// The reference: `cat` over its arguments each evaluated on its own,
    /// `to_string` interning its symbol (the path before the fused one).
    fn cat_unfused(args: &[Expr], row: &Tuple) -> Option<Value> {
        let vals = args
            .iter()
            .map(|a| match a {
                Expr::Call(f, xs) => {
                    let xs = xs
                        .iter()
                        .map(|x| eval(x, row))
                        .collect::<Option<Vec<_>>>()?;
                    functors::eval(*f, &xs)
                }
                _ => eval(a, row),
            })
            .collect::<Option<Vec<_>>>()?;
        functors::eval(Builtin::Cat, &vals)
    }

    fn any_arg() -> impl Strategy<Value = Expr> {
        let to_string = |x| Expr::Call(Builtin::ToString, vec![x]);
        prop_oneof![
            (0usize..4).prop_map(Expr::Slot),
            (0usize..4).prop_map(move |i| to_string(Expr::Slot(i))),
            "[a-z,=]{0,4}".prop_map(|t| Expr::Const(Value::sym(&t))),
            any::<i64>().prop_map(move |n| to_string(Expr::Const(Value::Number(n)))),
            // `to_string` with a wrong arity is undefined, fused or not.
            Just(Expr::Call(Builtin::ToString, vec![])),
        ]
    }

    proptest! {
        /// `cat(.., to_string(x), ..)` evaluated on the fused path gives the
        /// symbol the unfused evaluation gives (and is undefined alike), for
        /// up to 10 arguments (past 8 is the plain path) over rows of
        /// symbols, numbers, addresses and MACs.
        #[test]
        fn fused_cat_equals_unfused(
            args in proptest::collection::vec(any_arg(), 0..11),
            row in proptest::collection::vec(
                prop_oneof![
                    any::<i64>().prop_map(Value::Number),
                    any::<u32>().prop_map(Value::Ipv4),
                    any::<u64>().prop_map(|m| Value::Mac(m & 0xffff_ffff_ffff)),
                    "[a-z.:]{0,5}".prop_map(|t| Value::sym(&t)),
                ],
                4,
            ),
        ) {
            let row = Tuple::from_values(&row);
            let e = Expr::Call(Builtin::Cat, args.clone());
            prop_assert_eq!(eval(&e, &row), cat_unfused(&args, &row));
        }
    }
}
