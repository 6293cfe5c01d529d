//! The worker side of the driver: what each timely worker thread runs —
//! its command loop ([`worker_loop`]), one epoch over its lane's units
//! (`run_epoch`), one piece's step (`run_piece`) — and the state the lanes
//! share ([`Handoff`]).
//!
//! Expects the pieces and lanes `Workers::start` built, and commands on
//! its channel. Guarantees what the driver's module map states for the
//! workers: captured changes reach the driver in parts of about
//! [`PART_ROWS`] rows cut only after a stratum's last piece; a piece of
//! another lane gets its rows through its inbox; a released piece's input
//! is closed after its first run; every wait checks the abort flag.

use super::{Command, Reply, Updates, SLICE};
use crate::lanes::{Lanes, Unit};
use crate::pieces::{Kind, PieceMap};
use crate::render::{self, Built, Dirty, Piece};
use crate::skip::Skip;
use differential_dataflow::input::InputSession;
use netc_compiler::plan::Plan;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender, TryRecvError};
use std::sync::{Arc, Mutex, PoisonError};
use timely::worker::Worker;

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
pub(super) struct Release {
    after_first_run: Arc<Vec<bool>>,
    /// Pieces whose input is closed: they never run again.
    done: Vec<bool>,
}

impl Release {
    pub(super) fn new(after_first_run: Arc<Vec<bool>>) -> Release {
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
pub(super) struct Pieces {
    pub(super) map: Arc<PieceMap>,
    pub(super) dirty: Dirty,
    pub(super) skip: Option<Arc<Skip>>,
    pub(super) handoff: Arc<Handoff>,
    pub(super) lane: usize,
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
pub(super) struct Handoff {
    pub(super) lanes: Lanes,
    /// Per piece: captured rows from other lanes' pieces, taken into its
    /// pending rows when its lane reaches it.
    pub(super) inbox: Vec<Mutex<Updates>>,
    /// Per piece: the stamp of the latest epoch in which it was handled
    /// (run, or left unrun, and its rows handed on), or seen settled.
    pub(super) handled: Vec<AtomicU64>,
    /// The pieces' run marks (what makes a piece run this epoch).
    pub(super) dirty: Dirty,
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
pub(super) fn worker_loop(
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
            crate::consolidate(rows);
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
