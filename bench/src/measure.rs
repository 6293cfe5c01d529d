//! Latency statistics and the process's memory high-water mark.
//!
//! Expects: latencies in seconds. Guarantees: nearest-rank percentiles
//! (p50 of 1,000 samples is the 500th smallest), reported in microseconds;
//! peak RSS is the kernel's `VmHWM` for this process (so `bench/run.py` runs
//! each workload in its own process to get a per-workload peak); CPU time is
//! the process's user + system time over all threads.

use serde_json::{json, Value};

/// Nearest-rank percentile of sorted samples; `q` in (0, 100].
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((q / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// `{n, p50_us, p90_us, p99_us, max_us, mean_us}` of latencies in seconds.
pub fn summary(samples: &[f64]) -> Value {
    let mut s = samples.to_vec();
    s.sort_by(f64::total_cmp);
    let us = |x: f64| (x * 1e6 * 10.0).round() / 10.0;
    let mean = if s.is_empty() {
        f64::NAN
    } else {
        s.iter().sum::<f64>() / s.len() as f64
    };
    json!({
        "n": s.len(),
        "p50_us": us(percentile(&s, 50.0)),
        "p90_us": us(percentile(&s, 90.0)),
        "p99_us": us(percentile(&s, 99.0)),
        "max_us": us(s.last().copied().unwrap_or(f64::NAN)),
        "mean_us": us(mean),
    })
}

/// A `VmXXX:` line of /proc/self/status, in MiB (`None` off Linux).
fn proc_status_mib(key: &str) -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(key))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// Peak resident set size of this process so far, MiB.
pub fn peak_rss_mib() -> Option<f64> {
    proc_status_mib("VmHWM:")
}

/// Current resident set size, MiB.
pub fn rss_mib() -> Option<f64> {
    proc_status_mib("VmRSS:")
}

/// CPU time (user + system) of this process, all threads, in seconds
/// (`/proc/self/stat`, 10 ms resolution; `None` off Linux). Reported next to
/// wall time because the benchmark machine is shared.
pub fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the parenthesised command name start at field 3 (`state`).
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0) // USER_HZ is 100 on Linux
}

/// CPU time of this process (all threads, the running ones up to now),
/// nanoseconds, from `clock_gettime(CLOCK_PROCESS_CPUTIME_ID)`: unlike
/// [`cpu_seconds`] it has nanosecond resolution, so one change (and each of
/// its phases) can be measured; unlike wall time it does not grow with the
/// machine's load (the benchmark machine is shared). The sum of
/// `/proc/self/task/*/schedstat`, used before, lags by up to a scheduler
/// tick (~1 ms here) for the thread reading it. `None` if the clock cannot
/// be read.
pub fn process_cpu_ns() -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the call's duration.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    (rc == 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank() {
        let s: Vec<f64> = (1..=1000).map(f64::from).collect();
        assert_eq!(percentile(&s, 50.0), 500.0);
        assert_eq!(percentile(&s, 99.0), 990.0);
        assert_eq!(percentile(&s, 100.0), 1000.0);
        assert_eq!(percentile(&[3.0], 50.0), 3.0);
    }

    #[test]
    fn process_cpu_grows_with_work() {
        let before = process_cpu_ns().expect("a CPU clock");
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
        assert!(process_cpu_ns().expect("a CPU clock") > before, "{x}");
    }
}
