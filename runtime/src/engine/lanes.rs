//! Lanes: the pieces split over threads that run them side by side.
//!
//! Expects: a [`PieceMap`] (pieces numbered in stratum order).
//! Guarantees:
//! - LANE-STRATUM: every piece of a stratum is in one lane, so a counted
//!   row's changes from several rule pieces still reach the driver in one
//!   part of one worker (`driver.rs`).
//! - LANE-ORDER: each lane runs its own pieces in piece order; before it
//!   decides whether piece `q` runs, every other lane has handled all of its
//!   pieces that `q` reads from ([`Lanes::wait`]). Waits point only to lower
//!   pieces, so two lanes never wait on each other.
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

/// Which lane runs each piece, and what each piece waits for.
pub struct Lanes {
    /// How many lanes (1: every piece in lane 0, nothing to wait for).
    pub count: usize,
    /// Per piece: its lane.
    pub of: Vec<usize>,
    /// Per piece, then per lane: how far (in piece order) that lane must
    /// have handled its own pieces before this piece is decided — one past
    /// the highest piece of that lane it reads from; 0: nothing.
    wait: Vec<u32>,
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
            p = end;
        }
        let mut wait = vec![0u32; n * count];
        for q in 0..n {
            for &r in &preds[q] {
                let w = &mut wait[q * count + of[r]];
                *w = (*w).max(r as u32 + 1);
            }
        }
        Lanes { count, of, wait }
    }

    /// How far lane `lane` must have handled its pieces before piece `q`
    /// is decided (see [`Lanes::wait`]'s field docs).
    pub fn wait(&self, q: usize, lane: usize) -> u32 {
        self.wait[q * self.count + lane]
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

    /// Two independent chains go to different lanes; a piece reading both
    /// waits for the other lane's piece it reads; a split stratum's pieces
    /// share a lane.
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
        let reader = w
            .iter()
            .copied()
            .find(|&p| map.pieces[p].reads.contains(&id("u")))
            .unwrap();
        for (x, &lane) in [u, v].iter().zip([lanes.of[u], lanes.of[v]].iter()) {
            assert_eq!(lanes.wait(reader, lane), *x as u32 + 1);
        }
        let one = Lanes::assign(&plan, &map, 1);
        assert!(one.of.iter().all(|&l| l == 0));
    }
}
