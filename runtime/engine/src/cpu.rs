//! CPU time as the kernel counts it, for reports that must hold on a shared
//! machine (`netc compile --timings`, the engine's build time): wall time
//! grows with the load, CPU time does not.
//!
//! - [`process`]: every thread of this process, up to now;
//! - [`thread`]: the calling thread only (a phase run on a second thread
//!   beside another one).

use std::time::Duration;

/// CPU time (user + system) of every thread of this process so far; zero if
/// the clock cannot be read.
pub fn process() -> Duration {
    read(libc::CLOCK_PROCESS_CPUTIME_ID)
}

/// CPU time (user + system) of the calling thread so far; zero if the clock
/// cannot be read.
pub fn thread() -> Duration {
    read(libc::CLOCK_THREAD_CPUTIME_ID)
}

fn read(clock: libc::clockid_t) -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the call's duration.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(
        ts.tv_sec.max(0) as u64,
        ts.tv_nsec.clamp(0, 999_999_999) as u32,
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn cpu_time_grows_with_work_and_a_thread_counts_only_its_own() {
        let (p0, t0) = (super::process(), super::thread());
        let mut x = 0u64;
        while super::thread() - t0 < std::time::Duration::from_millis(30) {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let (p1, t1) = (super::process(), super::thread());
        assert!(t1 > t0 && p1 > p0);
        // The process has spent at least what this thread spent meanwhile.
        assert!(p1 - p0 >= t1 - t0 - std::time::Duration::from_millis(2));
        let other = std::thread::spawn(super::thread).join().unwrap();
        assert!(other < t1 - t0);
    }
}
