//! A request's memory budget: the daemon refuses, before running it, an
//! intent that cannot fit in the memory it has left.
//!
//! Expects: a request's intent texts. Guarantees: when the daemon runs
//! under an address-space limit (`ulimit -v`, `prlimit --as`), a request
//! whose intent needs more than the room left under it (its size times
//! [`BYTES_PER_INTENT_BYTE`], plus [`FLOOR`]; the room is the limit less
//! what the daemon has resident) is answered `507
//! insufficient_memory` naming both, and the daemon goes on serving. Why
//! before and not during: an allocation that fails cannot be unwound from
//! inside the allocator, so a request that ran out of memory would end the
//! daemon (`crate::oom` makes that exit 2 with a message, not SIGABRT). The
//! estimate is measured, not proven: netc's preset M (2.7 MB of intent)
//! compiles in 1 GB of address space and not in 0.5 GB, so 400 bytes per
//! intent byte over-estimates it a little. Without an address-space limit
//! nothing is refused here: the kernel's memory accounting then decides.

use super::api::ApiError;
use super::warm::IntentText;

/// Address space a request's intent needs per byte of intent text.
pub const BYTES_PER_INTENT_BYTE: u64 = 400;
/// Address space any request needs (threads, buffers, the answer).
pub const FLOOR: u64 = 64 * 1024 * 1024;

/// Refuses `files` when they need more memory than the daemon has left.
pub fn check(files: &[IntentText]) -> Result<(), ApiError> {
    let bytes: u64 = files.iter().map(|f| f.text.len() as u64).sum();
    let need = bytes
        .saturating_mul(BYTES_PER_INTENT_BYTE)
        .saturating_add(FLOOR);
    let Some(left) = headroom() else {
        return Ok(());
    };
    if need <= left {
        return Ok(());
    }
    Err(ApiError::new(
        507,
        "insufficient_memory",
        format!(
            "this request's intent ({bytes} bytes) needs about {} GB of memory; the daemon has {} GB left under its address-space limit",
            gb(need),
            gb(left)
        ),
    )
    .hint("nothing was run and the daemon keeps serving: send a smaller intent, or restart the daemon with a higher memory limit (`ulimit -v`)"))
}

/// Room left under the address-space limit; `None` without a limit.
fn headroom() -> Option<u64> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: a valid pointer to a `rlimit`.
    if unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut r) } != 0 || r.rlim_cur == libc::RLIM_INFINITY
    {
        return None;
    }
    // resident, not virtual: the allocator reserves address space up to
    // the limit and fills it before it asks for more
    Some(r.rlim_cur.saturating_sub(crate::oom::resident_bytes()))
}

fn gb(bytes: u64) -> String {
    format!("{:.1}", bytes as f64 / 1e9)
}
