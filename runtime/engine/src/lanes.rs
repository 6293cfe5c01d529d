//! Lanes: the pieces split over threads that run them side by side.
//!
//! Expects: a [`PieceMap`] (pieces numbered in stratum order).
//! Guarantees:
//! - LANE-STRATUM: every piece of a stratum is in one lane, so a counted
//!   row's changes from several rule pieces still reach the driver in one
//!   part of one worker (`driver.rs`).
//! - LANE-READY: a lane runs its strata as *units* (a stratum's pieces, in
//!   order), each as soon as every piece it reads from, in any lane, has
//!   settled this epoch (run, or left unrun; a piece nothing marked whose
//!   inputs have all settled counts as settled without its lane passing
//!   over it: `driver.rs`) — the lowest such unit first,
//!   so not necessarily in piece order: while one unit waits for the other
//!   lane, a later independent one runs. Reads point only to lower pieces,
//!   so some unit is always ready: two lanes never wait on each other.
//! - One worker per lane: the workers of a lane must run its pieces in the
//!   same order, and the order is decided as the epoch goes.
//! - The assignment depends on the plan only: every run of a plan splits
//!   the same way, and results never depend on it (only the wall time).
//!
//! Why: a warm change runs ~50–100 small pieces whose cost is timely's
//! per-operator bookkeeping, not data (issue 8). Data-parallel workers
//! each pay that cost for every piece; lanes run *different* pieces on the
//! machine's cores at once, so independent pieces (the flows, the ACL
//! classes, Duet's vector chain, the placement's inputs) overlap.
//!
//! How pieces are split: list scheduling of strata, in order, over an
//! estimate of each piece's size (its rules' steps: the operators it
//! builds), as if every piece ran; a stratum goes to the lane where it could
//! start first, given its inputs' estimated finish times.

use super::pieces::{Kind, PieceMap};
use netc_compiler::plan::{Body, Plan, Step};

/// Which lane runs each piece, and what each unit waits for.
pub struct Lanes {
    /// How many lanes (1: every piece in lane 0, nothing to wait for).
    pub count: usize,
    /// Per piece: its lane.
    pub of: Vec<usize>,
    /// Per lane: its units (a stratum's pieces, `first..end`), in order.
    pub units: Vec<Vec<Unit>>,
    /// Per piece: the pieces it reads from (lower ones, in any lane).
    pub preds: Vec<Vec<usize>>,
}

/// One stratum's pieces, run together by one lane.
pub struct Unit {
    pub first: usize,
    pub end: usize,
    /// The pieces of other units it reads from.
    pub reads: Vec<usize>,
}

impl Lanes {
    /// Splits `map`'s pieces over `count` lanes (see module docs).
    pub fn assign(plan: &Plan, map: &PieceMap, count: usize) -> Lanes {
        let count = count.max(1);
        let n = map.len();
        let mut preds: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (p, spec) in map.pieces.iter().enumerate() {
            for &(rel, _) in &spec.outputs {
                for &q in map.targets(p, rel) {
                    preds[q].push(p);
                }
            }
        }
        let size: Vec<f64> = (0..n).map(|p| estimated_size(plan, map, p)).collect();
        let mut of = vec![0; n];
        let mut finish = vec![0.0f64; n];
        let mut free = vec![0.0f64; count];
        let mut units: Vec<Vec<Unit>> = (0..count).map(|_| Vec::new()).collect();
        let mut p = 0;
        while p < n {
            let stratum = map.pieces[p].stratum;
            let end = (p..n)
                .find(|&q| map.pieces[q].stratum != stratum)
                .unwrap_or(n);
            let ready = (p..end)
                .flat_map(|q| preds[q].iter())
                .map(|&r| finish[r])
                .fold(0.0, f64::max);
            let lane = (0..count)
                .min_by(|&a, &b| free[a].max(ready).total_cmp(&free[b].max(ready)))
                .unwrap_or(0);
            let mut t = free[lane].max(ready);
            for q in p..end {
                of[q] = lane;
                t += size[q];
                finish[q] = t;
            }
            free[lane] = t;
            let mut reads: Vec<usize> = (p..end)
                .flat_map(|q| preds[q].iter().copied())
                .filter(|r| !(p..end).contains(r))
                .collect();
            reads.sort_unstable();
            reads.dedup();
            units[lane].push(Unit {
                first: p,
                end,
                reads,
            });
            p = end;
        }
        for ps in &mut preds {
            ps.sort_unstable();
            ps.dedup();
        }
        Lanes {
            count,
            of,
            units,
            preds,
        }
    }
}

/// Roughly how many operators piece `p` builds: a fixed part (input,
/// partition, capture, distinct) and a few per rule step.
fn estimated_size(plan: &Plan, map: &PieceMap, p: usize) -> f64 {
    let spec = &map.pieces[p];
    let stratum = &plan.strata[spec.stratum];
    let rules: Vec<usize> = match &spec.kind {
        Kind::Whole => (0..stratum.rules.len()).collect(),
        Kind::Rules(rs) => rs.clone(),
        Kind::Union => Vec::new(),
    };
    let steps: usize = rules
        .iter()
        .map(|&i| 1 + body_steps(&stratum.rules[i].body))
        .sum();
    let size = 6.0 + 2.0 * spec.outputs.len() as f64 + 3.0 * steps as f64;
    if stratum.recursive {
        3.0 * size
    } else {
        size
    }
}

fn body_steps(body: &Body) -> usize {
    body.steps
        .iter()
        .map(|s| match s {
            Step::Aggregate { inner, .. } => 2 + body_steps(inner),
            Step::Join { .. } | Step::AntiJoin { .. } => 1,
            Step::Filter(_) | Step::Bind(_) => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two independent chains go to different lanes; a unit reading both
    /// waits for the pieces it reads; a split stratum's pieces share a lane
    /// and a unit.
    #[test]
    fn independent_chains_split_and_readers_wait() {
        let text = "
            .decl a(x: number)
            .decl b(x: number)
            .decl c(x: number)
            .decl d(x: number)
            .decl u(x: number)
            .decl v(x: number)
            .decl w(x: number)
            .output w
            u(x) :- a(x), b(x), c(x).
            v(x) :- d(x), b(x), c(x).
            w(x) :- u(x), v(x).
            w(x) :- a(x).
            w(x) :- b(x).
            w(x) :- c(x).
            w(x) :- d(x).
        ";
        let c = netc_compiler::compile_text("lanes.ndl", text);
        let plan = c.plan.expect("a plan");
        let map = PieceMap::new(&plan);
        let id = |n: &str| plan.relation_id(n).unwrap();
        let piece_of = |r| {
            (0..map.len())
                .find(|&p| map.pieces[p].outputs.iter().any(|(o, _)| *o == r))
                .unwrap()
        };
        let lanes = Lanes::assign(&plan, &map, 2);
        let (u, v) = (piece_of(id("u")), piece_of(id("v")));
        assert_ne!(lanes.of[u], lanes.of[v], "independent strata overlap");
        let w: Vec<usize> = (0..map.len())
            .filter(|&p| map.pieces[p].outputs.iter().any(|(o, _)| *o == id("w")))
            .collect();
        assert!(w.len() >= 4, "w is split: {w:?}");
        assert!(w.iter().all(|&p| lanes.of[p] == lanes.of[w[0]]));
        let unit = lanes.units[lanes.of[w[0]]]
            .iter()
            .find(|x| x.first == w[0])
            .unwrap();
        assert_eq!(unit.end, w[w.len() - 1] + 1, "w's pieces are one unit");
        assert!(unit.reads.contains(&u) && unit.reads.contains(&v));
        assert!(unit.reads.iter().all(|r| !w.contains(r)));
        let one = Lanes::assign(&plan, &map, 1);
        assert!(one.of.iter().all(|&l| l == 0));
        assert_eq!(one.units[0].len(), plan.strata.len());
        let covered: usize = lanes.units.iter().flatten().map(|x| x.end - x.first).sum();
        assert_eq!(covered, map.len(), "every piece is in one unit");
    }
}
