//! Lanes: a warm engine's pieces split between threads that run at once.
//!
//! Expects: a [`PieceMap`]; every lane is its own timely computation with
//! one worker (`driver.rs`), building only the pieces of its lane.
//! Guarantees:
//! - LANE: every piece of a stratum is in the same lane (so a counted
//!   row's changes from several rule pieces are in one lane's part, as with
//!   one worker). Strata are dealt out wave by wave (`PieceMap::waves`:
//!   pieces of one wave read nothing of each other) to the lane with the
//!   fewest rules in that wave, so the pieces a change reaches in one wave
//!   tend to be split between the lanes.
//! - ORDER: a lane runs its pieces in piece order, as one worker does; before
//!   it decides whether piece `p` runs, it waits until every piece of
//!   another lane feeding `p` has finished the epoch ([`Lanes::done`]), and
//!   takes the rows they sent it ([`Lanes::inbox`]). A lane marks each of its
//!   pieces done for the epoch, run or not, after handing its changes on.
//!   Since pieces only read lower pieces, waiting never cycles: every piece a
//!   lane waits for is below the one it is at, and the other lane has passed
//!   or will pass it without waiting on anything above.
//! - Why: a warm change runs ~60–120 pieces of a few rows each, and their
//!   cost is fixed per piece (progress tracking, scheduling: ~50 µs), not
//!   per row; one worker runs them one after another on one core while the
//!   other idles. Two workers sharing every piece by key do not help (each
//!   runs every operator); two lanes each run half the pieces.
//! - `dirty` stamps and deferring (`skip.rs`) are shared by the lanes as by
//!   workers: a piece's run is decided only after all its sources finished,
//!   and the deferring checks are made under one lock, in any order.

use super::driver::Updates;
use super::pieces::PieceMap;
use super::tuple::Tuple;
use netc_compiler::plan::{Plan, RelId};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
#[cfg(test)]
use std::sync::Arc;
use std::sync::{Mutex, OnceLock, PoisonError};
use std::thread::Thread;
use std::time::Duration;

/// Spins (about 20–50 µs) a lane waits for another before it parks.
const SPINS: u32 = 1 << 10;

/// The longest a parked lane sleeps before it looks again (a missed wakeup
/// costs at most this).
const PARK: Duration = Duration::from_millis(1);

/// The lanes of one engine (see module docs), shared by their threads.
pub struct Lanes {
    /// Per piece: its lane.
    pub of: Vec<usize>,
    /// Per piece: the pieces of other lanes whose changes it is fed.
    from_others: Vec<Vec<usize>>,
    /// Per piece: the last epoch's stamp it finished (run or not).
    done: Vec<AtomicU64>,
    /// Per piece: rows other lanes' pieces sent it this epoch.
    inbox: Vec<Mutex<Updates>>,
    /// Per lane: its thread, once it has started ([`Lanes::register`]).
    threads: Vec<OnceLock<Thread>>,
    /// Per lane: whether it may be parked waiting for another lane.
    parked: Vec<AtomicBool>,
    pub count: usize,
}

impl Lanes {
    pub fn new(plan: &Plan, map: &PieceMap, count: usize) -> Lanes {
        let wave = map.waves();
        let starts = map.strata_starts();
        let mut load: Vec<Vec<usize>> = Vec::new();
        let mut of = vec![0usize; map.len()];
        for (s, stratum) in plan.strata.iter().enumerate() {
            let (first, end) = (starts[s], starts[s + 1]);
            if first == end {
                continue;
            }
            let w = wave[first];
            if load.len() <= w {
                load.resize_with(w + 1, || vec![0; count]);
            }
            let lane = (0..count).min_by_key(|&l| load[w][l]).unwrap_or(0);
            load[w][lane] += stratum.rules.len() + 1;
            of[first..end].fill(lane);
        }
        let mut from_others = vec![Vec::new(); map.len()];
        for p in 0..map.len() {
            for (rel, _) in &map.pieces[p].outputs {
                for &q in map.targets(p, *rel) {
                    if of[q] != of[p] && !from_others[q].contains(&p) {
                        from_others[q].push(p);
                    }
                }
            }
        }
        Lanes {
            of,
            from_others,
            done: (0..map.len()).map(|_| AtomicU64::new(0)).collect(),
            inbox: (0..map.len()).map(|_| Mutex::new(Vec::new())).collect(),
            threads: (0..count).map(|_| OnceLock::new()).collect(),
            parked: (0..count).map(|_| AtomicBool::new(false)).collect(),
            count,
        }
    }

    /// Called by lane `lane`'s thread before its first epoch.
    pub fn register(&self, lane: usize) {
        let _ = self.threads[lane].set(std::thread::current());
    }

    /// Waits (as lane `lane`) until every piece of another lane feeding `p`
    /// has finished the epoch of `stamp`, then moves the rows they sent `p`
    /// into `pending`. `false`: aborted while waiting.
    pub fn wait_for_sources(
        &self,
        lane: usize,
        p: usize,
        stamp: u64,
        pending: &mut Updates,
        abort: &AtomicBool,
    ) -> bool {
        for &q in &self.from_others[p] {
            let mut spins = 0u32;
            while self.done[q].load(Ordering::Acquire) < stamp {
                if abort.load(Ordering::Relaxed) {
                    return false;
                }
                // The other lane is usually microseconds away; when it is
                // not (a long piece, or descheduled on a busy machine),
                // park until it finishes a piece instead of burning a core.
                spins += 1;
                if spins < SPINS {
                    std::hint::spin_loop();
                    continue;
                }
                self.parked[lane].store(true, Ordering::SeqCst);
                if self.done[q].load(Ordering::SeqCst) < stamp {
                    std::thread::park_timeout(PARK);
                }
                self.parked[lane].store(false, Ordering::SeqCst);
            }
        }
        if !self.from_others[p].is_empty() {
            let mut inbox = self.inbox[p].lock().unwrap_or_else(PoisonError::into_inner);
            pending.append(&mut inbox);
        }
        true
    }

    /// Hands a row to piece `q` of another lane.
    pub fn send(&self, q: usize, row: (RelId, Tuple, isize)) {
        self.inbox[q]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(row);
    }

    /// Piece `p` finished the epoch of `stamp` (its changes handed on);
    /// wakes a parked lane, which checks what it waits for.
    pub fn finish(&self, p: usize, stamp: u64) {
        self.done[p].store(stamp, Ordering::SeqCst);
        for (lane, parked) in self.parked.iter().enumerate() {
            if parked.load(Ordering::SeqCst) {
                if let Some(t) = self.threads[lane].get() {
                    t.unpark();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use netc_compiler::value::Value;

    /// `u` and `v` are one wave, so they go to different lanes; `w`
    /// reads both, so one of them feeds it from the other lane.
    fn lanes() -> (Lanes, usize, usize) {
        let text = "
            .decl a(x: number)
            .decl u(x: number)
            .decl v(x: number)
            .decl w(x: number)
            .output w
            u(x) :- a(x).
            v(x) :- a(x).
            w(x) :- u(x), v(x).
        ";
        let plan = netc_compiler::compile_text("lanes.ndl", text)
            .plan
            .expect("a plan");
        let map = PieceMap::new(&plan);
        let id = |n: &str| plan.relation_id(n).unwrap();
        let making = |n: &str| {
            (0..map.len())
                .find(|&p| map.pieces[p].outputs.iter().any(|(r, _)| *r == id(n)))
                .unwrap()
        };
        let (pu, pv, pw) = (making("u"), making("v"), making("w"));
        let lanes = Lanes::new(&plan, &map, 2);
        assert_ne!(lanes.of[pu], lanes.of[pv], "one wave, split");
        let other = if lanes.of[pu] == lanes.of[pw] { pv } else { pu };
        assert_eq!(lanes.from_others[pw], vec![other]);
        (lanes, other, pw)
    }

    /// A lane waits until the other lane's piece has finished the epoch,
    /// however late, and then has the rows it sent.
    #[test]
    fn a_piece_waits_for_its_source_in_the_other_lane() {
        let (lanes, source, reader) = lanes();
        let lanes = Arc::new(lanes);
        let me = lanes.of[reader];
        lanes.register(me);
        let abort = AtomicBool::new(false);
        let row = (0, Tuple::from_values(&[Value::Number(7)]), 1);
        let other = {
            let (lanes, row) = (lanes.clone(), row.clone());
            std::thread::spawn(move || {
                lanes.register(lanes.of[source]);
                // Long past the spinning: the reader parks.
                std::thread::sleep(Duration::from_millis(30));
                lanes.send(reader, row);
                lanes.finish(source, 1);
            })
        };
        let mut pending = Vec::new();
        assert!(lanes.wait_for_sources(me, reader, 1, &mut pending, &abort));
        assert_eq!(pending, vec![row], "the source's rows, after it finished");
        other.join().unwrap();
        // The next epoch: nothing finished it yet; aborting ends the wait.
        abort.store(true, Ordering::SeqCst);
        assert!(!lanes.wait_for_sources(me, reader, 2, &mut pending, &abort));
    }
}
