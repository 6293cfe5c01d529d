//! `netc compile --timings`: where a compile's time goes, phase by phase.
//!
//! [`Timings`] is a stopwatch over the consecutive phases of the main
//! thread: [`Timings::lap`] closes the phase that ran since the previous
//! lap, with its wall time and the CPU time of *every* thread meanwhile (the
//! rules are evaluated on the timely workers, not on the main thread). A
//! phase may have [`Part`]s, pieces of it measured on their own — on the
//! main thread, or on a second thread beside it — so parts may overlap each
//! other; the phases add up to at most the total. One exception: the second
//! thread's rendering begins beside the placement and goes on after it, and
//! is reported with the writing phase (`thread: "second"`), so those parts
//! may be longer than that phase.
//!
//! Read by `commands/compile.rs`, which prints [`Timings::table`] on stderr
//! or puts [`Timings::json`] in its JSON document.

use std::time::{Duration, Instant};

/// Wall and CPU time of one stretch of work.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Span {
    pub wall: Duration,
    pub cpu: Duration,
}

/// A point to measure a [`Span`] from: on the calling thread only
/// ([`Mark::thread`]) or over the whole process ([`Mark::process`]).
#[derive(Clone, Copy, Debug)]
pub struct Mark {
    at: Instant,
    cpu: Duration,
    whole_process: bool,
}

impl Mark {
    /// CPU counted for the calling thread only: a part that runs beside
    /// others.
    pub fn thread() -> Mark {
        Mark {
            at: Instant::now(),
            cpu: crate::cpu::thread(),
            whole_process: false,
        }
    }

    /// CPU counted for every thread of the process.
    pub fn process() -> Mark {
        Mark {
            at: Instant::now(),
            cpu: crate::cpu::process(),
            whole_process: true,
        }
    }

    /// The span from this mark to now.
    pub fn span(&self) -> Span {
        let cpu_now = if self.whole_process {
            crate::cpu::process()
        } else {
            crate::cpu::thread()
        };
        Span {
            wall: self.at.elapsed(),
            cpu: cpu_now.saturating_sub(self.cpu),
        }
    }
}

impl std::ops::AddAssign for Span {
    fn add_assign(&mut self, other: Span) {
        self.wall += other.wall;
        self.cpu += other.cpu;
    }
}

/// A piece of a phase measured on its own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Part {
    /// Stable name (the JSON key), e.g. `render`.
    pub name: &'static str,
    /// What people read.
    pub label: &'static str,
    /// `main` or `second`: which thread ran it (CPU is that thread's).
    pub thread: &'static str,
    pub span: Span,
}

/// One phase of the main thread.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Phase {
    /// Stable name (the JSON key), e.g. `evaluate_rules`.
    pub name: &'static str,
    pub label: &'static str,
    pub span: Span,
    pub parts: Vec<Part>,
}

/// The phases of one command run, in order.
#[derive(Debug)]
pub struct Timings {
    start: Mark,
    last: Mark,
    phases: Vec<Phase>,
}

impl Default for Timings {
    fn default() -> Self {
        Timings::start()
    }
}

impl Timings {
    /// Starts the clock: the first phase begins now.
    pub fn start() -> Timings {
        let m = Mark::process();
        Timings {
            start: m,
            last: m,
            phases: Vec::new(),
        }
    }

    /// Closes the phase that ran since the previous lap (or the start).
    pub fn lap(&mut self, name: &'static str, label: &'static str) -> &mut Phase {
        let now = Mark::process();
        let span = Span {
            wall: now.at.saturating_duration_since(self.last.at),
            cpu: now.cpu.saturating_sub(self.last.cpu),
        };
        self.last = now;
        self.phases.push(Phase {
            name,
            label,
            span,
            parts: Vec::new(),
        });
        self.phases.last_mut().expect("just pushed")
    }

    /// Closes the stretch since the previous lap as two phases: `first`,
    /// measured by the caller (it began at that lap), then the rest.
    pub fn lap_split(
        &mut self,
        first: (&'static str, &'static str, Span),
        rest: (&'static str, &'static str),
    ) {
        let whole = self.lap(rest.0, rest.1).span;
        let head = Span {
            wall: first.2.wall.min(whole.wall),
            cpu: first.2.cpu.min(whole.cpu),
        };
        let tail = Span {
            wall: whole.wall - head.wall,
            cpu: whole.cpu - head.cpu,
        };
        let rest_phase = self.phases.pop().expect("just pushed");
        self.phases.push(Phase {
            name: first.0,
            label: first.1,
            span: head,
            parts: Vec::new(),
        });
        self.phases.push(Phase {
            span: tail,
            ..rest_phase
        });
    }

    /// The phase closed under `name`, to add its parts.
    pub fn phase_mut(&mut self, name: &str) -> Option<&mut Phase> {
        self.phases.iter_mut().find(|p| p.name == name)
    }

    pub fn phases(&self) -> &[Phase] {
        &self.phases
    }

    /// Wall and CPU time from the start to the last lap.
    pub fn total(&self) -> Span {
        Span {
            wall: self.last.at.saturating_duration_since(self.start.at),
            cpu: self.last.cpu.saturating_sub(self.start.cpu),
        }
    }

    /// The phases as a table for people (stderr), with the 1-minute load
    /// average: on a shared machine wall time says little without it.
    pub fn table(&self) -> String {
        let mut out = format!("{:<46} {:>9} {:>9}\n", "phase", "wall s", "CPU s");
        let line = |out: &mut String, label: String, s: &Span| {
            out.push_str(&format!(
                "{label:<46} {:>9.2} {:>9.2}\n",
                s.wall.as_secs_f64(),
                s.cpu.as_secs_f64()
            ));
        };
        for p in &self.phases {
            line(&mut out, p.label.to_string(), &p.span);
            for part in &p.parts {
                let thread = if part.thread == "main" {
                    String::new()
                } else {
                    format!(" ({} thread)", part.thread)
                };
                line(&mut out, format!("  {}{thread}", part.label), &part.span);
            }
        }
        line(&mut out, "total".into(), &self.total());
        out.push_str("(CPU: every thread of the process, except a part's: its own thread's");
        match load_average() {
            Some(l) => out.push_str(&format!("; load average {l:.2})\n")),
            None => out.push_str(")\n"),
        }
        out
    }

    /// The phases as JSON: `{"wall_s", "cpu_s", "load_average", "phases":
    /// [{"phase", "wall_s", "cpu_s", "parts": [{"part", "thread", "wall_s",
    /// "cpu_s"}]}]}`.
    pub fn json(&self) -> serde_json::Value {
        let secs = |d: Duration| (d.as_secs_f64() * 1e6).round() / 1e6;
        let phases: Vec<serde_json::Value> = self
            .phases
            .iter()
            .map(|p| {
                let parts: Vec<serde_json::Value> = p
                    .parts
                    .iter()
                    .map(|part| {
                        serde_json::json!({
                            "part": part.name,
                            "thread": part.thread,
                            "wall_s": secs(part.span.wall),
                            "cpu_s": secs(part.span.cpu),
                        })
                    })
                    .collect();
                serde_json::json!({
                    "phase": p.name,
                    "wall_s": secs(p.span.wall),
                    "cpu_s": secs(p.span.cpu),
                    "parts": parts,
                })
            })
            .collect();
        let total = self.total();
        serde_json::json!({
            "wall_s": secs(total.wall),
            "cpu_s": secs(total.cpu),
            "load_average": load_average(),
            "phases": phases,
        })
    }
}

/// The 1-minute load average (`/proc/loadavg`), if the system has one.
fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Busy for `ms` of this thread's CPU time (wall time is at least
    /// that, however loaded the machine).
    fn spin(ms: u64) {
        let start = crate::cpu::thread();
        let mut x = 1u64;
        while crate::cpu::thread() - start < Duration::from_millis(ms) {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
    }

    #[test]
    fn laps_are_consecutive_and_add_up_to_the_total() {
        let mut t = Timings::start();
        spin(20);
        t.lap("a", "a");
        let inner = Mark::process();
        spin(10);
        let first = inner.span();
        spin(10);
        t.lap_split(("b", "b", first), ("c", "c"));
        let names: Vec<&str> = t.phases().iter().map(|p| p.name).collect();
        assert_eq!(names, ["a", "b", "c"]);
        let sum: Duration = t.phases().iter().map(|p| p.span.wall).sum();
        assert_eq!(sum, t.total().wall);
        assert!(t.phases()[0].span.wall >= Duration::from_millis(20));
        assert!(t.phases()[1].span.wall >= Duration::from_millis(10));
        assert!(t.phases()[2].span.wall >= Duration::from_millis(10));
        assert!(t.phases()[0].span.cpu >= Duration::from_millis(20));
        let json = t.json();
        assert_eq!(json["phases"].as_array().unwrap().len(), 3);
        assert!(t.table().contains("total"));
    }
}
