//! Which dataflows (pieces) the engine builds for a plan, and where each
//! piece's changes go.
//!
//! Expects: a validated plan.
//! Guarantees:
//! - A recursive stratum, or one whose rules read fewer than
//!   [`MIN_GROUPS`] different sets of relations, is one piece ([`Kind::Whole`]).
//! - SPLIT: any other stratum is several *rule pieces*, one per set of
//!   relations read (rules reading exactly the same relations share one),
//!   plus, if a relation of the stratum is read by another stratum, one
//!   *union piece* after them. Why: a piece's cost is its size (every
//!   operator's frontier moves when it runs), and a stratum like `ovs_flow`
//!   (every rule writing a flow) was reached whole by every change; now a
//!   change runs only the rules reading what it changed. A rule piece hands
//!   its derivations of a relation on as a multiset ([`Out::ToUnion`]) to
//!   the union piece, which makes the relation `distinct(base ∪
//!   derivations)` ([`Out::Set`]); a relation no other stratum reads goes
//!   to the driver counted from every rule piece ([`Out::Counted`]), its
//!   base facts in the first rule piece deriving it.
//! - Pieces are numbered in stratum order, a stratum's pieces consecutive
//!   (its union piece last), so every piece reads only lower ones.
//! - The price: rules in different pieces no longer share arrangements.

use super::render::Routes;
use netc_compiler::plan::{Plan, RelId};
use std::collections::{BTreeMap, BTreeSet};

/// A stratum is split only into this many rule pieces or more. Why: each
/// piece has a fixed size (its input, capture, and the union's
/// distinct: ~15 timely identifiers), so splitting a stratum of two or
/// three rules made the changes reaching it reach more, not less (measured
/// on S: +30 to +100 identifiers per change for `lb_member`, `lb_map_dip`,
/// `lb_slot_member`), while `ovs_flow`'s 36 rules, `ovs_group`'s 7 and
/// `tun_target`'s 8 shrank by 1,864, 247 and 168.
const MIN_GROUPS: usize = 4;

/// What one piece renders.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The whole stratum (recursive or not).
    Whole,
    /// Some of a non-recursive stratum's rules (indices into its `rules`).
    Rules(Vec<usize>),
    /// A split stratum's relations read by other strata, made sets.
    Union,
}

/// Where a piece's changes of one relation go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Out {
    /// A set: to the driver and to the pieces reading the relation.
    Set,
    /// A multiset of derivations: to the driver, which counts them.
    Counted,
    /// A multiset of derivations: to this union piece only.
    ToUnion(usize),
}

#[derive(Clone, Debug)]
pub struct PieceSpec {
    pub stratum: usize,
    pub kind: Kind,
    /// Relations of lower strata (or input-only) its rules read.
    pub reads: BTreeSet<RelId>,
    /// Its stratum's relations whose input stream it takes: their base
    /// facts and, for a union piece, the rule pieces' derivations.
    pub own: Vec<RelId>,
    /// The relations it produces, in order, and where each goes.
    pub outputs: Vec<(RelId, Out)>,
    /// Of a rule piece of a stratum with a union piece: that piece.
    pub union: Vec<usize>,
}

/// Every piece of a plan and the routes between them (see module docs).
pub struct PieceMap {
    pub pieces: Vec<PieceSpec>,
    /// Per relation: the pieces fed its base facts.
    pub base: Vec<Vec<usize>>,
    /// Per relation: the pieces reading it from another stratum.
    pub readers: Vec<Vec<usize>>,
    /// Per stratum: its first piece (and `strata` past the end).
    first: Vec<usize>,
}

impl PieceMap {
    pub fn new(plan: &Plan) -> PieceMap {
        let routes = Routes::new(plan);
        let n = plan.relations.len();
        let mut pieces = Vec::new();
        let mut first = Vec::with_capacity(plan.strata.len() + 1);
        for (s, stratum) in plan.strata.iter().enumerate() {
            first.push(pieces.len());
            let whole_reads = routes.reads(s).clone();
            let groups = if stratum.recursive {
                BTreeMap::new()
            } else {
                let mut g: BTreeMap<BTreeSet<RelId>, Vec<usize>> = BTreeMap::new();
                for (i, rule) in stratum.rules.iter().enumerate() {
                    let rs: BTreeSet<RelId> =
                        rule.body.reads().into_iter().map(|(r, _)| r).collect();
                    g.entry(rs).or_default().push(i);
                }
                g
            };
            if groups.len() < MIN_GROUPS {
                let outputs = stratum
                    .relations
                    .iter()
                    .map(|&r| {
                        let o = if !stratum.recursive && routes.unread(r) {
                            Out::Counted
                        } else {
                            Out::Set
                        };
                        (r, o)
                    })
                    .collect();
                pieces.push(PieceSpec {
                    stratum: s,
                    kind: Kind::Whole,
                    reads: whole_reads,
                    own: stratum.relations.clone(),
                    outputs,
                    union: Vec::new(),
                });
                continue;
            }
            // Rule pieces in the order of their first rule.
            let mut groups: Vec<(BTreeSet<RelId>, Vec<usize>)> = groups.into_iter().collect();
            groups.sort_by_key(|(_, rules)| rules[0]);
            let sets: Vec<RelId> = stratum
                .relations
                .iter()
                .copied()
                .filter(|&r| !routes.unread(r))
                .collect();
            let union = (!sets.is_empty()).then_some(pieces.len() + groups.len());
            let mut base_taken = BTreeSet::new();
            for (reads, rules) in groups {
                let mut heads: Vec<RelId> = rules.iter().map(|&i| stratum.rules[i].head).collect();
                heads.sort_unstable();
                heads.dedup();
                let mut own = Vec::new();
                let outputs = heads
                    .into_iter()
                    .map(|r| match union {
                        Some(u) if sets.contains(&r) => (r, Out::ToUnion(u)),
                        _ => {
                            if base_taken.insert(r) {
                                own.push(r);
                            }
                            (r, Out::Counted)
                        }
                    })
                    .collect();
                pieces.push(PieceSpec {
                    stratum: s,
                    kind: Kind::Rules(rules),
                    reads,
                    own,
                    outputs,
                    union: union.into_iter().collect(),
                });
            }
            // A counted relation no rule of the stratum derives (a rule the
            // lowering dropped) still needs its base facts: the first rule
            // piece takes them.
            let first_rules = first[s];
            for &r in &stratum.relations {
                if !sets.contains(&r) && base_taken.insert(r) {
                    let spec = &mut pieces[first_rules];
                    spec.own.push(r);
                    spec.outputs.push((r, Out::Counted));
                }
            }
            if union.is_some() {
                pieces.push(PieceSpec {
                    stratum: s,
                    kind: Kind::Union,
                    reads: BTreeSet::new(),
                    own: sets.clone(),
                    outputs: sets.iter().map(|&r| (r, Out::Set)).collect(),
                    union: Vec::new(),
                });
            }
        }
        first.push(pieces.len());
        let mut base = vec![Vec::new(); n];
        let mut readers = vec![Vec::new(); n];
        let derived: Vec<bool> = (0..n).map(|r| routes.owner(r).is_some()).collect();
        for (p, spec) in pieces.iter().enumerate() {
            for &r in &spec.own {
                base[r].push(p);
            }
            for &r in &spec.reads {
                if derived[r] {
                    readers[r].push(p);
                } else {
                    base[r].push(p);
                }
            }
        }
        PieceMap {
            pieces,
            base,
            readers,
            first,
        }
    }

    pub fn len(&self) -> usize {
        self.pieces.len()
    }

    /// Where piece `p`'s changes of `rel` go (their readers' inputs).
    pub fn targets(&self, p: usize, rel: RelId) -> &[usize] {
        match self.out(p, rel) {
            Some(Out::Set) => &self.readers[rel],
            Some(Out::ToUnion(_)) => &self.pieces[p].union,
            _ => &[],
        }
    }

    /// Whether piece `p`'s changes of `rel` go to the driver.
    pub fn to_driver(&self, p: usize, rel: RelId) -> bool {
        !matches!(self.out(p, rel), Some(Out::ToUnion(_)))
    }

    /// How piece `p` makes `rel` (`None`: it does not output it).
    pub fn out(&self, p: usize, rel: RelId) -> Option<Out> {
        self.pieces[p]
            .outputs
            .iter()
            .find(|(r, _)| *r == rel)
            .map(|(_, o)| *o)
    }

    /// Whether `p` is its stratum's last piece (the driver sends captured
    /// changes only there, so a counted row's changes from several rule
    /// pieces are netted in one part).
    pub fn ends_stratum(&self, p: usize) -> bool {
        self.first[self.pieces[p].stratum + 1] == p + 1
    }

    /// A piece's name for `NETC_ENGINE_TRACE`: its stratum's relations,
    /// and which part of a split stratum it is.
    pub fn label(&self, plan: &Plan, p: usize) -> String {
        let spec = &self.pieces[p];
        let names: Vec<&str> = plan.strata[spec.stratum]
            .relations
            .iter()
            .map(|&r| plan.relations[r].name.as_str())
            .collect();
        let names = names.join(",");
        match &spec.kind {
            Kind::Whole => names,
            Kind::Rules(rules) => format!("{names}#rules{rules:?}").replace(' ', ""),
            Kind::Union => format!("{names}#union"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `u` (read by `w`): four rules reading four different sets, split
    /// with a union piece; `w` (read by no one): split, counted, no union;
    /// `v`: two rules, one piece.
    #[test]
    fn strata_with_enough_different_reads_are_split() {
        let text = "
            .decl a(x: number)
            .decl b(x: number)
            .decl c(x: number)
            .decl u(x: number)
            .decl v(x: number)
            .decl w(x: number)
            .output v, w
            u(x) :- a(x).
            u(x) :- b(x).
            u(x) :- c(x).
            u(x) :- a(x), b(x).
            v(x) :- a(x).
            v(x) :- b(x).
            w(x) :- u(x).
            w(x) :- a(x), c(x).
            w(x) :- b(x), c(x).
            w(x) :- c(x), u(x).
        ";
        let c = netc_compiler::compile_text("split.ndl", text);
        let plan = c.plan.expect("a plan");
        let map = PieceMap::new(&plan);
        let id = |n: &str| plan.relation_id(n).unwrap();
        let of = |r: RelId| -> Vec<&PieceSpec> {
            map.pieces
                .iter()
                .filter(|p| p.outputs.iter().any(|(o, _)| *o == r))
                .collect()
        };
        let u = of(id("u"));
        assert_eq!(u.len(), 5, "four rule pieces and a union");
        assert_eq!(u[4].kind, Kind::Union);
        assert_eq!(u[4].own, vec![id("u")]);
        let w = of(id("w"));
        assert_eq!(w.len(), 4);
        assert!(w.iter().all(|p| p.outputs == vec![(id("w"), Out::Counted)]));
        assert_eq!(w.iter().filter(|p| p.own == vec![id("w")]).count(), 1);
        assert_eq!(of(id("v")).len(), 1);
        assert_eq!(of(id("v"))[0].kind, Kind::Whole);
        // u's rule pieces feed the union piece only; its union feeds w's readers.
        let union = map
            .pieces
            .iter()
            .position(|p| p.kind == Kind::Union)
            .unwrap();
        assert!(map.targets(union - 1, id("u")) == [union]);
        assert!(!map.to_driver(union - 1, id("u")));
        assert!(map.ends_stratum(union));
        assert_eq!(map.readers[id("u")].len(), 2);
    }
}
