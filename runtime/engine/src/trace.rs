//! `NETC_ENGINE_TRACE`: where a commit's time goes, piece by piece.
//!
//! Set to anything, every worker prints, after each epoch, one line per
//! piece it ran — its stratum's relations (with `#rules[i,..]` or `#union`
//! for the pieces of a split stratum, `pieces.rs`), the size of its dataflow
//! (timely identifiers: operators and channels), worker steps until its
//! capture operator's frontier passed, rows the interpreted operators
//! handled, rows captured,
//! the rows its input was fed on this worker before it ran (`in_base`: base
//! facts; `in_derived`: lower pieces' captured changes), microseconds of
//! wall time and of this worker thread's CPU time (`cpu_us`), when it
//! started in the epoch (`at_us`; with lanes, the gaps between a lane's
//! pieces are its waits for the other) — and a total
//! line with the epoch's wall and CPU time and the CPU spent outside any
//! piece's steps (`feed_cpu_us`: handing base facts and captured changes to
//! the pieces' inputs, sending parts, and with lanes waiting):
//!
//! ```text
//! netc-trace w0 piece 191 ovs_flow ops 793 steps 4 rec 82 out 38 in_base 0 in_derived 40 us 1816 cpu_us 1790 at_us 2210
//! netc-trace w0 epoch 12 inputs 2 pieces 94 ops 5466 us 16437 cpu_us 16100 feed_cpu_us 310
//! ```
//!
//! A piece's `cpu_us` is the worker thread's CPU while it stepped that
//! piece's run: on a loaded machine it does not grow with other processes'
//! work the way `us` does. A worker step runs every dataflow with queued
//! work, so the first piece run in an epoch also pays for moving the
//! inputs queued for the later ones. Sum a piece's `cpu_us` over the
//! workers (`w0`, `w1`, ...) for its cost.
//!
//! Unset, the driver holds no [`Trace`] and pays one branch per piece run.

use super::pieces::PieceMap;
use super::tuple::Tuple;
use netc_compiler::plan::{Plan, RelId};
use std::time::{Duration, Instant};

/// Per-worker trace state (see module docs).
pub struct Trace {
    worker: usize,
    /// Per piece: its stratum's relations, named (`PieceMap::label`).
    labels: Vec<String>,
    /// Per piece: rows fed to its input on this worker since it last ran,
    /// base facts and lower pieces' changes.
    fed_base: Vec<u64>,
    fed_derived: Vec<u64>,
    lines: String,
    runs: usize,
    operators: usize,
    /// When the epoch began (wall, this thread's CPU).
    started: Option<(Instant, Duration)>,
    /// This thread's CPU inside pieces' runs this epoch.
    piece_cpu: Duration,
}

/// Where a piece's run began (see [`Trace::start`]).
pub struct Start {
    at: Instant,
    cpu: Duration,
    records: u64,
}

impl Trace {
    pub fn from_env(plan: &Plan, map: &PieceMap, worker: usize) -> Option<Trace> {
        std::env::var_os("NETC_ENGINE_TRACE")?;
        Some(Trace::new(plan, map, worker))
    }

    fn new(plan: &Plan, map: &PieceMap, worker: usize) -> Trace {
        Trace {
            worker,
            labels: (0..map.len()).map(|p| map.label(plan, p)).collect(),
            fed_base: vec![0; map.len()],
            fed_derived: vec![0; map.len()],
            lines: String::new(),
            runs: 0,
            operators: 0,
            started: None,
            piece_cpu: Duration::ZERO,
        }
    }

    /// Call once an epoch begins, before the base facts are fed.
    pub fn epoch_start(&mut self) {
        self.started = Some((Instant::now(), crate::cpu::thread()));
        self.piece_cpu = Duration::ZERO;
    }

    /// Counts this worker's share of an epoch's base facts into the pieces
    /// fed them (update `i` goes to worker `i mod peers`, as the driver does).
    pub fn base_fed(&mut self, map: &PieceMap, data: &[(RelId, Tuple, isize)], peers: usize) {
        for (i, (rel, ..)) in data.iter().enumerate() {
            if i % peers == self.worker {
                for &p in &map.base[*rel] {
                    self.fed_base[p] += 1;
                }
            }
        }
    }

    /// Counts piece `p`'s captured changes into the pieces they are fed to.
    pub fn derived_fed(&mut self, map: &PieceMap, p: usize, out: &[(RelId, Tuple, isize)]) {
        for (rel, ..) in out {
            for &q in map.targets(p, *rel) {
                self.fed_derived[q] += 1;
            }
        }
    }

    /// Call right before a piece's run; `records` is the worker's record
    /// counter then.
    pub fn start(&self, records: u64) -> Start {
        Start {
            at: Instant::now(),
            cpu: crate::cpu::thread(),
            records,
        }
    }

    /// Call right after piece `p`'s capture frontier passed; `records` is
    /// the worker's record counter now.
    pub fn piece(&mut self, p: usize, ops: usize, steps: u32, records: u64, out: usize, s: Start) {
        use std::fmt::Write;
        let cpu = crate::cpu::thread().saturating_sub(s.cpu);
        self.piece_cpu += cpu;
        self.runs += 1;
        self.operators += ops;
        let us = s.at.elapsed().as_micros();
        // When it started in its epoch: with lanes, the gaps are waits.
        let at = self
            .started
            .map_or(0, |(t, _)| s.at.saturating_duration_since(t).as_micros());
        let (fb, fd) = (
            std::mem::take(&mut self.fed_base[p]),
            std::mem::take(&mut self.fed_derived[p]),
        );
        let _ = writeln!(
            self.lines,
            "netc-trace w{} piece {p} {} ops {ops} steps {steps} rec {} out {out} in_base {fb} in_derived {fd} us {us} cpu_us {} at_us {at}",
            self.worker,
            self.labels[p],
            records.saturating_sub(s.records),
            cpu.as_micros()
        );
    }

    pub fn epoch_done(&mut self, epoch: u64, inputs: usize) {
        let (us, cpu) = self.started.take().map_or((0, Duration::ZERO), |(t, c)| {
            (
                t.elapsed().as_micros(),
                crate::cpu::thread().saturating_sub(c),
            )
        });
        let feed = cpu.saturating_sub(self.piece_cpu);
        // One write for the whole epoch, so workers' lines do not interleave.
        eprintln!(
            "{}netc-trace w{} epoch {epoch} inputs {inputs} pieces {} ops {} us {us} cpu_us {} feed_cpu_us {}",
            std::mem::take(&mut self.lines),
            self.worker,
            self.runs,
            self.operators,
            cpu.as_micros(),
            feed.as_micros()
        );
        self.runs = 0;
        self.operators = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A piece's line counts the rows fed to it (this worker's stride of
    /// the base facts, lower pieces' changes) and the thread's CPU while it
    /// ran, which a busy loop of 20 ms must show.
    #[test]
    fn a_piece_line_counts_its_input_and_its_cpu() {
        let text = "
            .decl a(x: number)
            .decl u(x: number)
            .decl w(x: number)
            .output w
            u(x) :- a(x).
            w(x) :- u(x).
        ";
        let plan = netc_compiler::compile_text("t.ndl", text)
            .plan
            .expect("a plan");
        let map = PieceMap::new(&plan);
        let id = |n: &str| plan.relation_id(n).unwrap();
        let (pu, pw) = (map.base[id("a")][0], map.readers[id("u")][0]);
        let mut t = Trace::new(&plan, &map, 1);
        t.epoch_start();
        let row = |x: i64| Tuple::from_values(&[netc_compiler::value::Value::Number(x)]);
        let data: Vec<_> = (0..5).map(|x| (id("a"), row(x), 1)).collect();
        // Worker 1 of 2 takes updates 1 and 3.
        t.base_fed(&map, &data, 2);
        let s = t.start(10);
        let spin = crate::cpu::thread();
        let mut x = 0u64;
        while crate::cpu::thread() - spin < Duration::from_millis(20) {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let out: Vec<_> = (0..3).map(|x| (id("u"), row(x), 1)).collect();
        t.piece(pu, 7, 2, 15, out.len(), s);
        t.derived_fed(&map, pu, &out);
        let line = t.lines.lines().next().unwrap().to_string();
        assert!(
            line.contains(" rec 5 out 3 in_base 2 in_derived 0 "),
            "{line}"
        );
        let field = |line: &str, name: &str| -> u128 {
            let mut words = line.split(' ').skip_while(|w| *w != name);
            words.nth(1).and_then(|v| v.parse().ok()).expect(name)
        };
        assert!(field(&line, "cpu_us") >= 19_000, "{line}");
        let s = t.start(15);
        t.piece(pw, 7, 1, 15, 0, s);
        let line = t.lines.lines().nth(1).unwrap().to_string();
        assert!(line.contains(" in_base 0 in_derived 3 "), "{line}");
        // It started after the first piece's 20 ms, in the same epoch.
        assert!(field(&line, "at_us") >= 19_000, "{line}");
    }
}
