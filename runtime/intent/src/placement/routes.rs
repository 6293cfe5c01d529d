//! Where traffic flows: hop-by-hop ECMP over shortest paths.
//!
//! Expects a [`Fabric`]'s directed links. Guarantees: [`Routes::leg`] gives,
//! for one unit of traffic from `src` to `dst`, the fraction that crosses
//! each directed link when every switch splits what it carries equally over
//! its next hops on shortest (hop-count) paths to `dst` — the ECMP routing
//! Duet's t_{i,s,v} assumes (thesis §2.3.1). `None` when `dst` cannot be
//! reached; an empty leg when `src == dst`. Legs are computed once per
//! (src, dst) and cached (the thesis: "all L_{i,s,v} can be pre-computed"),
//! in a table by node number ([`Routes::leg_between`]): the greedy asks for
//! a leg per candidate switch per endpoint (~10^8 times at L), so a lookup
//! must be two array indexings, not a hash of the names.
//! Nodes are numbered in name order, so every iteration is deterministic.

use super::model::Fabric;
use netc_compiler::value::Sym;
use std::cell::{OnceCell, RefCell};
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::rc::Rc;

/// One leg's unit load: (link index, fraction of the traffic), by link index.
pub type Leg = Rc<Vec<(usize, f64)>>;

/// The link graph with cached legs.
#[derive(Debug)]
pub struct Routes {
    node: BTreeMap<Sym, usize>,
    /// Out-neighbours per node, in name (= index) order.
    out: Vec<Vec<usize>>,
    /// In-neighbours per node, in name order.
    inn: Vec<Vec<usize>>,
    /// Directed links in (a, b) name order; index = link id.
    pub links: Vec<(Sym, Sym)>,
    link_id: HashMap<(usize, usize), usize>,
    /// Hops to a destination, per destination node.
    dist: RefCell<HashMap<usize, Rc<Vec<Option<u32>>>>>,
    /// Legs by source node, then destination node; a source's row is
    /// allocated when it is first asked for.
    legs: Vec<OnceCell<LegRow>>,
}

/// The legs from one source node, by destination node; each computed when
/// first asked for (`None` inside: unreachable).
type LegRow = Box<[OnceCell<Option<Leg>>]>;

impl Routes {
    pub fn new(fabric: &Fabric) -> Routes {
        let mut names: BTreeSet<Sym> = fabric.switches.keys().copied().collect();
        for (a, b) in fabric.links.keys() {
            names.insert(*a);
            names.insert(*b);
        }
        let node: BTreeMap<Sym, usize> = names.into_iter().zip(0..).collect();
        let n = node.len();
        let (mut out, mut inn) = (vec![Vec::new(); n], vec![Vec::new(); n]);
        let mut links = Vec::new();
        let mut link_id = HashMap::new();
        for (a, b) in fabric.links.keys() {
            let (ia, ib) = (node[a], node[b]);
            if ia == ib {
                continue;
            }
            out[ia].push(ib);
            inn[ib].push(ia);
            link_id.insert((ia, ib), links.len());
            links.push((*a, *b));
        }
        for v in out.iter_mut().chain(inn.iter_mut()) {
            v.sort_unstable();
        }
        Routes {
            node,
            out,
            inn,
            links,
            link_id,
            dist: RefCell::default(),
            legs: (0..n).map(|_| OnceCell::new()).collect(),
        }
    }

    /// The index of a directed link.
    pub fn link(&self, a: Sym, b: Sym) -> Option<usize> {
        let (ia, ib) = (*self.node.get(&a)?, *self.node.get(&b)?);
        self.link_id.get(&(ia, ib)).copied()
    }

    /// Unit load of traffic from `src` to `dst`; `None` if unreachable.
    pub fn leg(&self, src: Sym, dst: Sym) -> Option<Leg> {
        if src == dst {
            return Some(Rc::new(Vec::new()));
        }
        let (s, d) = (self.node_of(src)?, self.node_of(dst)?);
        self.leg_between(s, d).cloned()
    }

    /// The node number of a switch; `None` if it is in no link and not a
    /// switch of the fabric.
    pub fn node_of(&self, name: Sym) -> Option<usize> {
        self.node.get(&name).copied()
    }

    /// [`Routes::leg`] by node numbers ([`Routes::node_of`]).
    pub fn leg_between(&self, s: usize, d: usize) -> Option<&Leg> {
        let row =
            self.legs[s].get_or_init(|| (0..self.out.len()).map(|_| OnceCell::new()).collect());
        row[d].get_or_init(|| self.compute_leg(s, d)).as_ref()
    }

    fn compute_leg(&self, s: usize, d: usize) -> Option<Leg> {
        if s == d {
            return Some(Rc::new(Vec::new()));
        }
        let dist = self.dist_to(d);
        let top = dist[s]?;
        // Shares flow down the layers of equal distance to dst, each node
        // splitting what it holds equally over its next hops.
        let mut share: BTreeMap<usize, f64> = BTreeMap::from([(s, 1.0)]);
        let mut load: BTreeMap<usize, f64> = BTreeMap::new();
        for layer in (1..=top).rev() {
            let here: Vec<(usize, f64)> = share
                .iter()
                .filter(|(u, _)| dist[**u] == Some(layer))
                .map(|(u, x)| (*u, *x))
                .collect();
            for (u, x) in here {
                let hops: Vec<usize> = self.out[u]
                    .iter()
                    .copied()
                    .filter(|v| dist[*v] == Some(layer - 1))
                    .collect();
                let part = x / hops.len() as f64;
                for v in hops {
                    *load.entry(self.link_id[&(u, v)]).or_insert(0.0) += part;
                    *share.entry(v).or_insert(0.0) += part;
                }
            }
        }
        Some(Rc::new(load.into_iter().collect()))
    }

    /// Hop counts to `d` (BFS over in-links).
    fn dist_to(&self, d: usize) -> Rc<Vec<Option<u32>>> {
        if let Some(x) = self.dist.borrow().get(&d) {
            return x.clone();
        }
        let mut dist = vec![None; self.out.len()];
        dist[d] = Some(0);
        let mut q = VecDeque::from([d]);
        while let Some(v) = q.pop_front() {
            let dv = dist[v].unwrap_or(0);
            for &u in &self.inn[v] {
                if dist[u].is_none() {
                    dist[u] = Some(dv + 1);
                    q.push_back(u);
                }
            }
        }
        let dist = Rc::new(dist);
        self.dist.borrow_mut().insert(d, dist.clone());
        dist
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fabric(links: &[(&str, &str)]) -> Fabric {
        let mut f = Fabric::default();
        for (a, b) in links {
            f.links.insert((Sym::new(a), Sym::new(b)), 100);
            f.links.insert((Sym::new(b), Sym::new(a)), 100);
        }
        f
    }

    fn leg(r: &Routes, a: &str, b: &str) -> Option<Vec<(String, String, f64)>> {
        r.leg(Sym::new(a), Sym::new(b)).map(|l| {
            l.iter()
                .map(|(i, x)| {
                    let (p, q) = r.links[*i];
                    (p.as_str().to_string(), q.as_str().to_string(), *x)
                })
                .collect()
        })
    }

    #[test]
    fn ecmp_splits_equally_at_every_hop() {
        // t1 - a1, a2 - c ; t2 - a1 ; c has two paths down to t1
        let r = Routes::new(&fabric(&[
            ("t1", "a1"),
            ("t1", "a2"),
            ("a1", "c"),
            ("a2", "c"),
        ]));
        let l = leg(&r, "c", "t1").unwrap();
        let s = |a: &str, b: &str| l.iter().find(|x| x.0 == a && x.1 == b).map(|x| x.2);
        assert_eq!(s("c", "a1"), Some(0.5));
        assert_eq!(s("c", "a2"), Some(0.5));
        assert_eq!(s("a1", "t1"), Some(0.5));
        assert_eq!(s("a2", "t1"), Some(0.5));
        assert_eq!(l.len(), 4);
    }

    #[test]
    fn same_node_is_empty_and_unreachable_is_none() {
        let mut f = fabric(&[("t1", "a1")]);
        f.switches.insert(Sym::new("lonely"), [1, 1, 1]);
        let r = Routes::new(&f);
        assert_eq!(leg(&r, "t1", "t1"), Some(vec![]));
        assert_eq!(leg(&r, "t1", "lonely"), None);
        assert_eq!(leg(&r, "nowhere", "t1"), None);
    }

    #[test]
    fn unequal_branches_follow_hop_by_hop_split() {
        // s -> {x, y}; x -> {d}; y -> {p, q} -> d : x gets 1/2, p and q 1/4 each
        let mut f = Fabric::default();
        for (a, b) in [
            ("s", "x"),
            ("s", "y"),
            ("x", "z"),
            ("z", "d"),
            ("y", "p"),
            ("y", "q"),
            ("p", "d"),
            ("q", "d"),
        ] {
            f.links.insert((Sym::new(a), Sym::new(b)), 1);
        }
        let r = Routes::new(&f);
        let l = leg(&r, "s", "d").unwrap();
        let s = |a: &str, b: &str| l.iter().find(|x| x.0 == a && x.1 == b).map(|x| x.2);
        assert_eq!(s("s", "x"), Some(0.5));
        assert_eq!(s("z", "d"), Some(0.5));
        assert_eq!(s("y", "p"), Some(0.25));
        assert_eq!(s("q", "d"), Some(0.25));
    }
}
