//! `NETC_ENGINE_TRACE`: where a commit's time goes, piece by piece.
//!
//! Set to anything, every worker prints, after each epoch, one line per
//! piece it ran — its stratum's relations (with `#rules[i,..]` or `#union`
//! for the pieces of a split stratum, `pieces.rs`), the size of its dataflow
//! (timely identifiers: operators and channels), worker steps until its
//! probe passed, rows the interpreted operators handled, rows captured,
//! microseconds — and a total line:
//!
//! ```text
//! netc-trace w0 piece 191 ovs_flow ops 793 steps 4 rec 82 out 38 us 1816
//! netc-trace w0 epoch 12 inputs 2 pieces 94 ops 5466 us 16437
//! ```
//!
//! Unset, the driver holds no [`Trace`] and pays one branch per piece run.

use super::pieces::PieceMap;
use netc_compiler::plan::Plan;
use std::time::Instant;

/// Per-worker trace state (see module docs).
pub struct Trace {
    worker: usize,
    /// Per piece: its stratum's relations, named (`PieceMap::label`).
    labels: Vec<String>,
    lines: String,
    runs: usize,
    operators: usize,
    started: Option<Instant>,
}

impl Trace {
    pub fn from_env(plan: &Plan, map: &PieceMap, worker: usize) -> Option<Trace> {
        std::env::var_os("NETC_ENGINE_TRACE")?;
        let labels = (0..map.len()).map(|p| map.label(plan, p)).collect();
        Some(Trace {
            worker,
            labels,
            lines: String::new(),
            runs: 0,
            operators: 0,
            started: None,
        })
    }

    pub fn piece(
        &mut self,
        p: usize,
        ops: usize,
        steps: u32,
        records: u64,
        out: usize,
        at: Instant,
    ) {
        use std::fmt::Write;
        self.started.get_or_insert(at);
        self.runs += 1;
        self.operators += ops;
        let us = at.elapsed().as_micros();
        let _ = writeln!(
            self.lines,
            "netc-trace w{} piece {p} {} ops {ops} steps {steps} rec {records} out {out} us {us}",
            self.worker, self.labels[p]
        );
    }

    pub fn epoch_done(&mut self, epoch: u64, inputs: usize) {
        let us = self.started.take().map_or(0, |t| t.elapsed().as_micros());
        // One write for the whole epoch, so workers' lines do not interleave.
        eprintln!(
            "{}netc-trace w{} epoch {epoch} inputs {inputs} pieces {} ops {} us {us}",
            std::mem::take(&mut self.lines),
            self.worker,
            self.runs,
            self.operators
        );
        self.runs = 0;
        self.operators = 0;
    }
}
