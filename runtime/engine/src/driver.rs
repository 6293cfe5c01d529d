//! The timely worker threads and the protocol that drives them.
//!
//! Expects: a validated plan; one [`Workers`] per engine, used from one
//! thread at a time.
//! Guarantees:
//! - `lanes` timely instances (`lanes.rs`) of `workers` threads
//!   (`Config::process`) each; the workers of a lane each build the same
//!   dataflows — their lane's pieces (`render::build`: one per piece,
//!   `pieces.rs`) — and then wait for [`Command`]s.
//! - LANES (`lanes.rs`, one worker each): a lane runs its units (a
//!   stratum's pieces) as they become ready — every piece they read from
//!   settled this epoch ([`Handoff::settled`]: handled by its lane, or seen
//!   by either lane to be unmarked with all its own inputs settled) — the
//!   lowest ready one first; with none ready it waits (spinning, then
//!   yielding; never past an abort).
//!   Captured rows for another lane's piece go to that piece's inbox and
//!   are taken into its pending rows when its lane reaches it; dirty stamps
//!   are shared by all. So a piece sees exactly what it would see in one
//!   lane.
//! - [`Workers::run`] is one epoch: every worker gets the same batch (an
//!   `Arc`) and inserts its stride of it (update i goes to worker
//!   i mod workers; the dataflow exchanges data by key anyway) into the
//!   pieces that read each relation, then runs the pieces in stratum order
//!   (`run_epoch`): a piece with input this epoch (or never run) advances
//!   its time by one and is stepped until its capture operator's frontier
//!   passes it; its captured
//!   changes go into the inputs of the pieces reading them and (except a
//!   rule piece's derivations for its union piece), gathered
//!   into [`Reply::Part`]s of about `PART_ROWS` rows, to the driver, which
//!   hands each part to the caller while the workers go on (so a
//!   from-scratch epoch never holds every
//!   derived row twice: once in a reply buffer, once in the caller's
//!   mirror). Pieces without input are not advanced and cost nothing. The
//!   parts of an epoch are exactly its derived changes; a part is cut only
//!   after a stratum's last piece, so all of a row's changes in an epoch
//!   are in one part of one worker (its stratum runs once per epoch, and
//!   its distinct or exchange places a row on one worker); consolidation
//!   within a part is the caller's.
//! - A piece marked in `release` (a one-shot engine's strata no later
//!   change can reach) has its input closed right after its first run
//!   ([`Release`]): its dataflow drains and timely drops it, arrangements
//!   and all; it never runs again (were it to get input, the worker fails).
//! - No unbounded blind waits: the driver waits in 100 ms slices and checks
//!   that every worker thread is alive; a worker that panics reports it
//!   (caught with `catch_unwind`) and sets the shared abort flag, which every
//!   other worker checks while stepping, so the driver gets an error instead
//!   of hanging. After a failure the workers are aborted and nothing more
//!   can run.
//! - Idle workers park (woken by `unpark` when a command is sent, or every
//!   100 ms), so an idle engine costs no CPU.
//! - [`Workers::shutdown`] (also on drop) closes the inputs, lets the
//!   dataflow drain and joins the threads; if a worker is stuck it is
//!   detached after a grace period rather than hanging the caller.

mod worker;

use super::lanes::Lanes;
use super::pieces::PieceMap;
use super::render::Dirty;
use super::skip::Skip;
use super::tuple::Tuple;
use super::EngineError;
use netc_compiler::plan::{Plan, RelId};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use timely::communication::initialize::WorkerGuards;
use worker::{worker_loop, Handoff, Pieces, Release};

/// Updates of one epoch: `(relation, tuple, diff)`.
pub type Updates = Vec<(RelId, Tuple, isize)>;

enum Command {
    Commit {
        epoch: u64,
        data: Arc<Updates>,
    },
    /// Makes the worker panic (to test failure handling).
    Panic,
    Shutdown,
}

enum Reply {
    Ready {
        worker: usize,
        result: Result<usize, String>,
    },
    /// The captured changes of one piece's run on one worker.
    Part {
        worker: usize,
        epoch: u64,
        updates: Updates,
    },
    Done {
        worker: usize,
        epoch: u64,
        records: u64,
        /// Pieces it ran (every worker runs the same ones).
        pieces: usize,
    },
    Died {
        worker: usize,
        message: String,
    },
}

/// What one epoch produced, summed over workers.
pub struct EpochOutput {
    /// Captured updates handed to the caller, before consolidation.
    pub updates: usize,
    pub records: u64,
    /// Pieces run (on each worker).
    pub pieces: usize,
}

pub struct Workers {
    /// One per worker thread, lane by lane (`lane * per_lane + index`).
    senders: Vec<Sender<Command>>,
    /// Lanes (`lanes.rs`): each its own timely instance of `per_lane` workers.
    lanes: usize,
    per_lane: usize,
    map: Arc<PieceMap>,
    dirty: Dirty,
    /// Deferring (`skip.rs`), shared with the workers' capture operators.
    skip: Option<Arc<Skip>>,
    /// Per relation, whether a stratum derives it.
    derived: Vec<bool>,
    replies: Receiver<Reply>,
    /// One per lane; empty once shut down.
    guards: Vec<WorkerGuards<()>>,
    abort: Arc<AtomicBool>,
    /// Shared arrangements each worker built.
    pub arrangements: usize,
}

const SLICE: Duration = Duration::from_millis(100);

impl Workers {
    /// Starts the threads — `lanes` timely instances (`lanes.rs`) of `n`
    /// workers each — and waits until every worker has built its lane's
    /// pieces. `release[s]`: the pieces of stratum `s` are released after
    /// their first run (see [`Release`]). `defer`: pieces may be left unrun
    /// while their input cannot reach their output (`skip.rs`).
    pub fn start(
        plan: Arc<Plan>,
        n: usize,
        lanes: usize,
        release: Arc<Vec<bool>>,
        defer: bool,
    ) -> Result<Workers, EngineError> {
        if n == 0 || lanes == 0 {
            return Err(EngineError::NoWorkers);
        }
        if lanes > 1 && n > 1 {
            return Err(EngineError::LanesOfWorkers { lanes, workers: n });
        }
        let (senders, receivers): (Vec<_>, Vec<_>) =
            (0..n * lanes).map(|_| mpsc::channel::<Command>()).unzip();
        let receivers = Arc::new(Mutex::new(
            receivers.into_iter().map(Some).collect::<Vec<_>>(),
        ));
        let (reply_tx, replies) = mpsc::channel::<Reply>();
        let abort = Arc::new(AtomicBool::new(false));
        let abort_w = abort.clone();
        let map = Arc::new(PieceMap::new(&plan));
        let dirty: Dirty = Arc::new((0..map.len()).map(|_| AtomicU64::new(0)).collect());
        let skip = if defer {
            Skip::new(&plan, &map).map(Arc::new)
        } else {
            None
        };
        let mut derived = vec![false; plan.relations.len()];
        for s in &plan.strata {
            for &r in &s.relations {
                derived[r] = true;
            }
        }
        let (map_d, dirty_d, skip_d) = (map.clone(), dirty.clone(), skip.clone());
        let release: Arc<Vec<bool>> = Arc::new(
            map.pieces
                .iter()
                .map(|spec| release.get(spec.stratum).copied().unwrap_or(false))
                .collect(),
        );
        let handoff = Arc::new(Handoff {
            inbox: (0..map.len()).map(|_| Mutex::new(Vec::new())).collect(),
            handled: (0..map.len()).map(|_| AtomicU64::new(0)).collect(),
            dirty: dirty.clone(),
            lanes: Lanes::assign(&plan, &map, lanes),
        });
        let mut guards = Vec::with_capacity(lanes);
        for lane in 0..lanes {
            let (receivers, reply_tx, abort_w) =
                (receivers.clone(), reply_tx.clone(), abort_w.clone());
            let (plan, map, dirty, skip) = (plan.clone(), map.clone(), dirty.clone(), skip.clone());
            let (release, handoff) = (release.clone(), handoff.clone());
            let started = timely::execute(timely::Config::process(n), move |worker| {
                let index = lane * n + worker.index();
                let rx = receivers
                    .lock()
                    .ok()
                    .and_then(|mut v| v.get_mut(index).and_then(Option::take));
                let Some(rx) = rx else {
                    let _ = reply_tx.send(Reply::Died {
                        worker: index,
                        message: "no command channel".into(),
                    });
                    abort_w.store(true, Ordering::SeqCst);
                    return;
                };
                let outcome = catch_unwind(AssertUnwindSafe(|| {
                    let release = Release::new(release.clone());
                    let pieces = Pieces {
                        map: map.clone(),
                        dirty: dirty.clone(),
                        skip: skip.clone(),
                        handoff: handoff.clone(),
                        lane,
                    };
                    worker_loop(worker, &plan, pieces, release, &rx, &reply_tx, &abort_w)
                }));
                if let Err(payload) = outcome {
                    let message = payload
                        .downcast_ref::<&str>()
                        .map(|s| s.to_string())
                        .or_else(|| payload.downcast_ref::<String>().cloned())
                        .unwrap_or_else(|| "panic".into());
                    abort_w.store(true, Ordering::SeqCst);
                    let _ = reply_tx.send(Reply::Died {
                        worker: index,
                        message,
                    });
                }
                if abort_w.load(Ordering::SeqCst) {
                    // Peers may be gone: do not wait for the dataflow to drain.
                    for id in worker.installed_dataflows() {
                        worker.drop_dataflow(id);
                    }
                }
            });
            match started {
                Ok(g) => guards.push(g),
                Err(e) => {
                    abort.store(true, Ordering::SeqCst);
                    return Err(EngineError::Start(e));
                }
            }
        }
        let mut w = Workers {
            senders,
            lanes,
            per_lane: n,
            map: map_d,
            dirty: dirty_d,
            skip: skip_d,
            derived,
            replies,
            guards,
            abort,
            arrangements: 0,
        };
        let mut ready = 0;
        while ready < n * lanes {
            match w.next_reply()? {
                Reply::Ready {
                    worker,
                    result: Ok(a),
                } => {
                    // Every worker of a lane builds the same; lanes differ.
                    if worker % n == 0 {
                        w.arrangements += a;
                    }
                    ready += 1;
                }
                Reply::Ready {
                    worker,
                    result: Err(e),
                } => {
                    w.fail();
                    return Err(EngineError::Internal(format!(
                        "worker {worker} could not render the plan: {e}"
                    )));
                }
                Reply::Died { worker, message } => {
                    w.fail();
                    return Err(EngineError::WorkerDied { worker, message });
                }
                Reply::Done { .. } | Reply::Part { .. } => {
                    return Err(EngineError::Internal(
                        "a worker finished an epoch before starting".into(),
                    ))
                }
            }
        }
        Ok(w)
    }

    /// Runs one epoch with `data` (see module docs), handing every part of
    /// its captured changes to `part` as it arrives. After `part` fails the
    /// epoch is still waited for (so no worker is left mid-epoch), no more
    /// parts are handed over, and its error is returned.
    pub fn run<F>(
        &mut self,
        epoch: u64,
        data: Arc<Updates>,
        mut part: F,
    ) -> Result<EpochOutput, EngineError>
    where
        F: FnMut(Updates) -> Result<(), EngineError>,
    {
        self.route_base(epoch, &data);
        for s in &self.senders {
            if s.send(Command::Commit {
                epoch,
                data: data.clone(),
            })
            .is_err()
            {
                self.fail();
                return Err(EngineError::WorkerDied {
                    worker: 0,
                    message: "a worker stopped accepting commands".into(),
                });
            }
        }
        self.wake();
        let mut out = EpochOutput {
            updates: 0,
            records: 0,
            pieces: 0,
        };
        let mut failed = None;
        let mut done = 0;
        let mut pieces_by_lane = vec![0; self.lanes];
        while done < self.senders.len() {
            match self.next_reply()? {
                Reply::Part {
                    epoch: e, updates, ..
                } if e == epoch => {
                    out.updates += updates.len();
                    if failed.is_none() {
                        failed = part(updates).err();
                    }
                }
                Reply::Done {
                    worker,
                    epoch: e,
                    records,
                    pieces,
                } if e == epoch => {
                    out.records += records;
                    let lane = &mut pieces_by_lane[worker / self.per_lane];
                    *lane = (*lane).max(pieces);
                    done += 1;
                }
                Reply::Died { worker, message } => {
                    self.fail();
                    return Err(EngineError::WorkerDied { worker, message });
                }
                Reply::Done {
                    worker, epoch: e, ..
                }
                | Reply::Part {
                    worker, epoch: e, ..
                } => {
                    self.fail();
                    return Err(EngineError::Internal(format!(
                        "worker {worker} reported epoch {e} while epoch {epoch} ran"
                    )));
                }
                Reply::Ready { .. } => {}
            }
        }
        out.pieces = pieces_by_lane.iter().sum();
        match failed {
            Some(e) => Err(e),
            None => Ok(out),
        }
    }

    /// Marks the pieces this epoch's base facts make run (all of them in
    /// the first epoch or without deferring; else those `skip.rs` cannot
    /// defer them for), after counting input-only relations' changes into
    /// `U`. Before the workers get the epoch, so every worker sees the same.
    fn route_base(&self, epoch: u64, data: &Updates) {
        let stamp = epoch + 1;
        let Some(skip) = self.skip.as_ref() else {
            for (rel, ..) in data {
                for &p in &self.map.base[*rel] {
                    self.dirty[p].fetch_max(stamp, Ordering::AcqRel);
                }
            }
            return;
        };
        let mut state = skip.state.lock().unwrap_or_else(PoisonError::into_inner);
        for (rel, t, d) in data {
            if skip.gates.counts_base(*rel, self.derived[*rel]) {
                state.update(&skip.gates, *rel, t, *d);
            }
        }
        for (rel, t, d) in data {
            for &p in &self.map.base[*rel] {
                if epoch == 0 {
                    self.dirty[p].fetch_max(stamp, Ordering::AcqRel);
                } else {
                    state.route(&skip.gates, &self.dirty, stamp, p, (*rel, t, *d));
                }
            }
        }
    }

    /// Makes one worker panic at its next command check (tests only).
    pub fn inject_panic(&mut self, worker: usize) {
        if let Some(s) = self.senders.get(worker) {
            let _ = s.send(Command::Panic);
        }
        self.wake();
    }

    /// The next reply, waiting in slices and checking the threads are alive.
    fn next_reply(&mut self) -> Result<Reply, EngineError> {
        loop {
            match self.replies.recv_timeout(SLICE) {
                Ok(r) => return Ok(r),
                Err(RecvTimeoutError::Timeout) => {
                    let dead = self
                        .guards
                        .iter()
                        .flat_map(|g| g.guards())
                        .position(|h| h.is_finished());
                    if let Some(worker) = dead {
                        // It may have reported before exiting.
                        if let Ok(r) = self.replies.try_recv() {
                            return Ok(r);
                        }
                        self.fail();
                        return Err(EngineError::WorkerDied {
                            worker,
                            message: "the worker thread exited unexpectedly".into(),
                        });
                    }
                }
                Err(RecvTimeoutError::Disconnected) => {
                    self.fail();
                    return Err(EngineError::WorkerDied {
                        worker: 0,
                        message: "all worker threads are gone".into(),
                    });
                }
            }
        }
    }

    fn wake(&self) {
        for h in self.guards.iter().flat_map(|g| g.guards()) {
            h.thread().unpark();
        }
    }

    /// Marks the computation as failed: every worker stops at its next check.
    fn fail(&mut self) {
        self.abort.store(true, Ordering::SeqCst);
        self.wake();
    }

    /// Stops the workers and joins them (see module docs).
    pub fn shutdown(&mut self) {
        let guards = std::mem::take(&mut self.guards);
        if guards.is_empty() {
            return;
        }
        for s in &self.senders {
            let _ = s.send(Command::Shutdown);
        }
        let threads = || guards.iter().flat_map(|g| g.guards());
        for h in threads() {
            h.thread().unpark();
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while !threads().all(|h| h.is_finished()) {
            if Instant::now() > deadline {
                self.abort.store(true, Ordering::SeqCst);
            }
            if Instant::now() > deadline + Duration::from_secs(5) {
                // A stuck thread: detach rather than hang the caller.
                std::mem::forget(guards);
                return;
            }
            for h in threads() {
                h.thread().unpark();
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        // `join` (unlike dropping the guards) does not panic on a worker panic.
        for g in guards {
            let _ = g.join();
        }
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        self.shutdown();
    }
}
