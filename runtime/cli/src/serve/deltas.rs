//! The numbered stream of per-device output deltas (`GET /v1/deltas`).
//!
//! Every applied change appends one entry per device it touched; entries are
//! numbered 1, 2, 3, ... in the order they were applied and never renumbered.
//! A consumer (the ONOS app, a host agent) remembers the last number it saw
//! and long-polls `since=N`: it gets every entry after N at once, or waits
//! until one arrives (or the wait ends, answering an empty list).
//!
//! Guarantees: the log keeps the last [`KEEP`] entries; a consumer that
//! fell further behind is told so ([`Since::TooOld`]) and must resync from
//! the full state rather than miss a delta silently. Numbering restarts at 1
//! when the daemon restarts, and `epoch` (the daemon's start time) changes,
//! so a consumer can tell.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// Entries kept for consumers that are behind.
pub const KEEP: usize = 100_000;

/// One device's delta of one applied change, as JSON.
#[derive(Clone, Debug)]
pub struct Entry {
    pub seq: u64,
    pub json: serde_json::Value,
}

/// What a `since=N` asks for.
pub enum Since {
    Entries(Vec<Entry>),
    /// N is older than the oldest kept entry.
    TooOld {
        oldest: u64,
    },
    /// N is after the last entry: the consumer counted in another daemon's
    /// numbering (before a restart).
    Ahead {
        last: u64,
    },
}

#[derive(Default)]
struct Inner {
    entries: VecDeque<Entry>,
    last: u64,
    /// Counts [`DeltaLog::nudge`]s: a waiter woken by one re-reads its inbox.
    nudges: u64,
}

/// What a waiter last saw (`mark`), to sleep until it changes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Mark {
    last: u64,
    nudges: u64,
}

/// The log, shared by the request threads.
#[derive(Default)]
pub struct DeltaLog {
    inner: Mutex<Inner>,
    arrived: Condvar,
}

impl DeltaLog {
    /// Appends entries (their `seq` is assigned here, and inserted into the
    /// JSON object) and wakes every waiting consumer.
    pub fn append(&self, items: Vec<serde_json::Value>) {
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        for mut json in items {
            g.last += 1;
            let seq = g.last;
            if let Some(o) = json.as_object_mut() {
                o.insert("seq".into(), seq.into());
            }
            g.entries.push_back(Entry { seq, json });
            if g.entries.len() > KEEP {
                g.entries.pop_front();
            }
        }
        self.arrived.notify_all();
    }

    /// The log's state now, for [`DeltaLog::wait_change`].
    pub fn mark(&self) -> Mark {
        let g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        Mark {
            last: g.last,
            nudges: g.nudges,
        }
    }

    /// Wakes every waiter without appending (a new poll was parked).
    pub fn nudge(&self) {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).nudges += 1;
        self.arrived.notify_all();
    }

    /// Sleeps until an entry is appended or a nudge comes after `mark` was
    /// taken, or `timeout` passes.
    pub fn wait_change(&self, mark: Mark, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        while g.last == mark.last && g.nudges == mark.nudges {
            let now = Instant::now();
            if now >= deadline {
                return;
            }
            g = self
                .arrived
                .wait_timeout(g, deadline - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// The number of the last entry (0 before any).
    pub fn last(&self) -> u64 {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).last
    }

    /// Entries after `since`, waiting up to `wait` for one if there is none yet.
    pub fn since(&self, since: u64, wait: Duration) -> Since {
        let deadline = Instant::now() + wait;
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            let oldest = g.entries.front().map_or(g.last + 1, |e| e.seq);
            if since > g.last {
                return Since::Ahead { last: g.last };
            }
            if since + 1 < oldest && since < g.last {
                return Since::TooOld { oldest };
            }
            if g.last > since {
                return Since::Entries(
                    g.entries
                        .iter()
                        .filter(|e| e.seq > since)
                        .cloned()
                        .collect(),
                );
            }
            let now = Instant::now();
            if now >= deadline {
                return Since::Entries(Vec::new());
            }
            g = self
                .arrived
                .wait_timeout(g, deadline - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbered_in_order_and_delivered_after_since() {
        let log = DeltaLog::default();
        log.append(vec![
            serde_json::json!({"device": "h1"}),
            serde_json::json!({"device": "h2"}),
        ]);
        let Since::Entries(e) = log.since(1, Duration::ZERO) else {
            panic!("entries expected")
        };
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].seq, 2);
        assert_eq!(e[0].json["seq"], 2);
        let Since::Entries(e) = log.since(2, Duration::from_millis(10)) else {
            panic!("entries expected")
        };
        assert!(e.is_empty());
    }

    #[test]
    fn a_waiting_consumer_wakes_on_append() {
        let log = std::sync::Arc::new(DeltaLog::default());
        let l2 = log.clone();
        let t = std::thread::spawn(move || match l2.since(0, Duration::from_secs(10)) {
            Since::Entries(e) => e.len(),
            _ => 0,
        });
        std::thread::sleep(Duration::from_millis(50));
        log.append(vec![serde_json::json!({"device": "h1"})]);
        assert_eq!(t.join().unwrap(), 1);
    }

    #[test]
    fn wait_change_returns_on_append_or_nudge_after_the_mark() {
        let log = std::sync::Arc::new(DeltaLog::default());
        let mark = log.mark();
        log.nudge();
        let t0 = Instant::now();
        log.wait_change(mark, Duration::from_secs(10));
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "a nudge after the mark wakes"
        );
        let mark = log.mark();
        let l2 = log.clone();
        let t = std::thread::spawn(move || {
            let t0 = Instant::now();
            l2.wait_change(mark, Duration::from_secs(10));
            t0.elapsed()
        });
        std::thread::sleep(Duration::from_millis(50));
        log.append(vec![serde_json::json!({"device": "h1"})]);
        assert!(t.join().unwrap() < Duration::from_secs(5));
        let t0 = Instant::now();
        log.wait_change(log.mark(), Duration::from_millis(20));
        assert!(
            t0.elapsed() >= Duration::from_millis(20),
            "nothing new: waits the timeout"
        );
    }
}
