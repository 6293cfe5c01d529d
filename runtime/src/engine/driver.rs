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

use super::lanes::{Lanes, Unit};
use super::pieces::{Kind, PieceMap};
use super::render::{self, Built, Dirty, Piece};
use super::skip::Skip;
use super::tuple::Tuple;
use super::EngineError;
use differential_dataflow::input::InputSession;
use netc_compiler::plan::{Plan, RelId};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use timely::communication::initialize::WorkerGuards;
use timely::worker::Worker;

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

/// Rows of captured changes a worker gathers before it sends them to the
/// driver as one [`Reply::Part`]. Why: a warm commit runs ~100 pieces with
/// a few rows each, and a message per piece woke the driver thread ~100
/// times per commit (context switches were ~9% of a change's CPU); a
/// from-scratch epoch still streams, so no worker holds more than about
/// this many rows (plus one piece's output) beyond what the driver has.
const PART_ROWS: usize = 1 << 16;

/// Sends `pending` (if any) to the driver as one part. `None`: the driver is gone.
fn send_part(tx: &Sender<Reply>, worker: usize, epoch: u64, pending: &mut Updates) -> Option<()> {
    if pending.is_empty() {
        return Some(());
    }
    let updates = std::mem::take(pending);
    tx.send(Reply::Part {
        worker,
        epoch,
        updates,
    })
    .ok()
}

/// The pieces a one-shot engine drops after their first run
/// (`Engine::new_one_shot`). Closing a piece's input lets its dataflow
/// drain, and timely then drops it with every arrangement it held; its
/// results are already with the driver and in its readers' inputs.
struct Release {
    after_first_run: Arc<Vec<bool>>,
    /// Pieces whose input is closed: they never run again.
    done: Vec<bool>,
}

impl Release {
    fn new(after_first_run: Arc<Vec<bool>>) -> Release {
        let done = vec![false; after_first_run.len()];
        Release {
            after_first_run,
            done,
        }
    }

    /// Called after piece `p` ran and handed its changes on.
    fn after_run(&mut self, p: usize, piece: &mut Piece) {
        if self.after_first_run[p] && !self.done[p] {
            self.done[p] = true;
            std::mem::replace(&mut piece.input, InputSession::new()).close();
        }
    }
}

fn aborted(abort: &AtomicBool) -> bool {
    abort.load(Ordering::Relaxed)
}

/// What every worker builds from: the pieces, their shared dirty stamps
/// and deferring state, and its lane.
struct Pieces {
    map: Arc<PieceMap>,
    dirty: Dirty,
    skip: Option<Arc<Skip>>,
    handoff: Arc<Handoff>,
    lane: usize,
}

/// A worker's place among the lanes and its ways out.
#[derive(Clone, Copy)]
struct LaneCtx<'a> {
    lane: usize,
    /// The worker's number among all lanes' workers.
    id: usize,
    handoff: &'a Handoff,
    tx: &'a Sender<Reply>,
    abort: &'a AtomicBool,
}

/// What the lanes share (`lanes.rs`).
struct Handoff {
    lanes: Lanes,
    /// Per piece: captured rows from other lanes' pieces, taken into its
    /// pending rows when its lane reaches it.
    inbox: Vec<Mutex<Updates>>,
    /// Per piece: the stamp of the latest epoch in which it was handled
    /// (run, or left unrun, and its rows handed on), or seen settled.
    handled: Vec<AtomicU64>,
    /// The pieces' run marks (what makes a piece run this epoch).
    dirty: Dirty,
}

/// How far [`Handoff::settled`] looks down a piece's inputs in one call.
const SETTLE_DEPTH: u32 = 32;

impl Handoff {
    fn ready(&self, unit: &Unit, stamp: u64) -> bool {
        unit.reads
            .iter()
            .all(|&p| self.settled(p, stamp, SETTLE_DEPTH))
    }

    /// Whether piece `p` can bring no more changes this epoch: its lane
    /// handled it, or (after the first epoch, when every piece runs) nothing
    /// marked it to run and every piece it reads from is settled — the
    /// driver marks base facts' pieces before the epoch and a piece's
    /// readers are marked by its capture before it counts as handled, so
    /// no mark can come later. Why: a lane busy with a long piece is slow
    /// to pass over the unmarked pieces of its own that the other lane's
    /// next unit reads; the waiting lane sees them settled itself (and
    /// records it, so the next look is one load).
    fn settled(&self, p: usize, stamp: u64, depth: u32) -> bool {
        if self.handled[p].load(Ordering::Acquire) == stamp {
            return true;
        }
        let clean = stamp > 1
            && depth > 0
            && self.dirty[p].load(Ordering::Acquire) != stamp
            && self.lanes.preds[p]
                .iter()
                .all(|&q| self.settled(q, stamp, depth - 1));
        // Marks come only before the inputs settle: re-read after them.
        if clean && self.dirty[p].load(Ordering::Acquire) != stamp {
            self.handled[p].fetch_max(stamp, Ordering::AcqRel);
            return true;
        }
        false
    }
}

/// One worker's life: build, then serve commands until shutdown.
fn worker_loop(
    worker: &mut Worker,
    plan: &Plan,
    pieces: Pieces,
    mut release: Release,
    rx: &Receiver<Command>,
    tx: &Sender<Reply>,
    abort: &AtomicBool,
) {
    let (lane, handoff) = (pieces.lane, pieces.handoff);
    // One worker per lane when there are several (`Workers::start`).
    let index = lane * worker.peers() + worker.index();
    let mine = |p: usize| handoff.lanes.of[p] == lane;
    let built = render::build(
        worker,
        plan,
        pieces.map,
        pieces.dirty,
        pieces.skip,
        mine,
        index,
    );
    let cx = LaneCtx {
        lane,
        id: index,
        handoff: &handoff,
        tx,
        abort,
    };
    let mut b: Built = match built {
        Ok(mut b) => {
            b.start(worker.index());
            let _ = tx.send(Reply::Ready {
                worker: index,
                result: Ok(b.counters.arrangements.get()),
            });
            b
        }
        Err(e) => {
            abort.store(true, Ordering::SeqCst);
            let _ = tx.send(Reply::Ready {
                worker: index,
                result: Err(e),
            });
            return;
        }
    };
    loop {
        if aborted(abort) {
            return;
        }
        match rx.try_recv() {
            Ok(Command::Commit { epoch, data }) => {
                let Some(pieces) = run_epoch(worker, &mut b, &mut release, &cx, epoch, &data)
                else {
                    return;
                };
                drop(data);
                let records = b.counters.records.replace(0);
                if tx
                    .send(Reply::Done {
                        worker: index,
                        epoch,
                        records,
                        pieces,
                    })
                    .is_err()
                {
                    return;
                }
            }
            Ok(Command::Panic) => panic!("worker {index} was asked to fail"),
            Ok(Command::Shutdown) | Err(TryRecvError::Disconnected) => break,
            Err(TryRecvError::Empty) => {
                worker.step_or_park(Some(SLICE));
            }
        }
    }
    // Close the inputs and let the dataflow drain (all workers do the same).
    drop(b);
    while worker.has_dataflows() && !aborted(abort) {
        worker.step_or_park(Some(SLICE));
    }
}

/// One epoch on this worker (see module docs): feeds this worker's stride of
/// the base-fact changes to the pieces that read them, then runs, in
/// stratum order (with lanes: LANES), every piece that has input this epoch (or has never run),
/// handing each one's captured changes to the pieces above that read them
/// and then, gathered into [`Reply::Part`]s, to the driver.
/// The same pieces run on every worker: a piece's base input is decided
/// from the whole batch, its derived input from the shared `dirty` stamps.
/// Returns how many pieces ran; `None`: aborted, or the driver is gone.
fn run_epoch(
    worker: &mut Worker,
    b: &mut Built,
    release: &mut Release,
    cx: &LaneCtx<'_>,
    epoch: u64,
    data: &Updates,
) -> Option<usize> {
    let (index, peers) = (worker.index(), worker.peers());
    let (handoff, tx) = (cx.handoff, cx.tx);
    let stamp = epoch + 1;
    b.stamp.set(stamp);
    if let Some(t) = b.trace.as_mut() {
        t.epoch_start();
        t.base_fed(&b.map, data, peers);
    }
    for (i, (rel, t, d)) in data.iter().enumerate() {
        if i % peers == index {
            for &p in &b.map.base[*rel] {
                if b.pieces[p].is_some() {
                    b.pending[p].push((*rel, t.clone(), *d));
                }
            }
        }
    }
    // Captured changes not yet sent: pieces' outputs are gathered into
    // parts of about `PART_ROWS` rows (see there).
    let mut pending = Updates::new();
    let mut ran = 0;
    if handoff.lanes.count == 1 {
        for p in 0..b.pieces.len() {
            ran += usize::from(run_piece(worker, b, release, cx, stamp, p, &mut pending)?);
            // Never between two pieces of one stratum: a counted row's
            // changes from several rule pieces are netted in one part.
            if pending.len() >= PART_ROWS && b.map.ends_stratum(p) {
                send_part(tx, cx.id, epoch, &mut pending)?;
            }
        }
    } else {
        // LANE-READY: the lowest ready unit first.
        let units = &handoff.lanes.units[cx.lane];
        let mut left: Vec<usize> = (0..units.len()).collect();
        let mut idle = 0u32;
        while !left.is_empty() {
            let Some(k) = left.iter().position(|&u| handoff.ready(&units[u], stamp)) else {
                if aborted(cx.abort) {
                    return None;
                }
                idle = idle.saturating_add(1);
                if idle < 2_000 {
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
                continue;
            };
            idle = 0;
            let unit = &units[left.remove(k)];
            for p in unit.first..unit.end {
                let inbox = std::mem::take(
                    &mut *handoff.inbox[p]
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner),
                );
                b.pending[p].extend(inbox);
                ran += usize::from(run_piece(worker, b, release, cx, stamp, p, &mut pending)?);
                handoff.handled[p].store(stamp, Ordering::Release);
            }
            if pending.len() >= PART_ROWS {
                send_part(tx, cx.id, epoch, &mut pending)?;
            }
        }
    }
    send_part(tx, cx.id, epoch, &mut pending)?;
    if let Some(t) = b.trace.as_mut() {
        t.epoch_done(epoch, data.len());
    }
    Some(ran)
}

/// Piece `p` in this epoch, if this worker builds it: runs it if it has
/// input (or never ran) and hands its captured changes to its readers'
/// pending rows (another lane's: their inboxes) and, for the driver, to
/// `pending`. `Some(true)`: it ran; `None`: aborted, or the driver is gone.
fn run_piece(
    worker: &mut Worker,
    b: &mut Built,
    release: &mut Release,
    cx: &LaneCtx<'_>,
    stamp: u64,
    p: usize,
    pending: &mut Updates,
) -> Option<bool> {
    let Some(piece) = b.pieces[p].as_mut() else {
        return Some(false);
    };
    // Marked by the driver (base facts) or a lower piece's capture.
    let run = b.dirty[p].load(Ordering::Acquire) == stamp;
    if release.done[p] {
        if run || !b.pending[p].is_empty() {
            let message = format!("internal error: piece {p} was released, yet it has input");
            let _ = cx.tx.send(Reply::Died {
                worker: cx.id,
                message,
            });
            return None;
        }
        return Some(false);
    }
    if piece.time > 0 && !run {
        // Deferred rows (`skip.rs`): a row and its undoing cancel here.
        let rows = &mut b.pending[p];
        if rows.len() > 2 * b.pending_floor[p] {
            super::consolidate(rows);
            b.pending_floor[p] = rows.len().max(512);
        }
        return Some(false);
    }
    // Taken, not drained: the first epoch's buffers are large.
    for (rel, t, d) in std::mem::take(&mut b.pending[p]) {
        piece.input.update((rel, t), d);
    }
    let started = b.trace.as_ref().map(|t| t.start(b.counters.records.get()));
    let mut steps = 0u32;
    piece.time += 1;
    let next = piece.time;
    piece.input.advance_to(next);
    piece.input.flush();
    while piece.frontier.get() < next {
        if aborted(cx.abort) {
            return None;
        }
        worker.step_or_park(Some(SLICE));
        steps += 1;
    }
    let mut out = std::mem::take(&mut *piece.captured.borrow_mut());
    if let (Some(t), Some(start)) = (b.trace.as_mut(), started) {
        let records = b.counters.records.get();
        t.piece(p, piece.operators, steps, records, out.len(), start);
        t.derived_fed(&b.map, p, &out);
    }
    release.after_run(p, piece);
    for (rel, t, d) in &out {
        for &q in b.map.targets(p, *rel) {
            if b.pieces[q].is_some() {
                b.pending[q].push((*rel, t.clone(), *d));
            } else {
                cx.handoff.inbox[q]
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push((*rel, t.clone(), *d));
            }
        }
    }
    // A rule piece's derivations of a set relation are its union
    // piece's input only (see `pieces.rs`).
    if b.map.pieces[p].kind != Kind::Whole {
        out.retain(|(rel, ..)| b.map.to_driver(p, *rel));
    }
    if pending.is_empty() {
        *pending = out;
    } else {
        pending.extend(out);
    }
    Some(true)
}
