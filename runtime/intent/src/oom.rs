//! Out of memory: exit 2 saying how much the command needed, not SIGABRT.
//!
//! Expects: [`Guarded`] installed as the binary's `#[global_allocator]`
//! around the real allocator. Guarantees: when an allocation fails (an
//! address-space limit, `ulimit -v`, or memory exhausted), the process
//! prints on stderr `error: out of memory: ... needs about N GB ...`,
//! removes the output directories being staged ([`stage`]: a `netc
//! compile --out` that cannot finish leaves no `.out.tmp-PID` behind),
//! and exits with status 2 — where Rust's default is to print a line and
//! abort (status 134). Nothing is allocated to say it: the message is
//! built in a stack buffer from `/proc/self/statm` (what the process
//! holds) and the failed request's size. The hot path costs one null
//! check per allocation.
//!
//! An allocation failure inside `netc serve` ends the daemon too (exit 2,
//! with the message): a request cannot be unwound from inside the
//! allocator, so the daemon refuses, before running it, a request that
//! would not fit (the daemon's request budget, `serve/budget.rs`).

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Mutex;

/// An allocator that turns a failed allocation into [`out_of_memory`].
pub struct Guarded<A>(pub A);

// SAFETY: every call is forwarded to `A` unchanged; only a null result is
// acted on, and then the process ends without returning.
unsafe impl<A: GlobalAlloc> GlobalAlloc for Guarded<A> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as given.
        let p = unsafe { self.0.alloc(layout) };
        if p.is_null() {
            out_of_memory(layout.size());
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as given.
        let p = unsafe { self.0.alloc_zeroed(layout) };
        if p.is_null() {
            out_of_memory(layout.size());
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded as given.
        unsafe { self.0.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded as given.
        let p = unsafe { self.0.realloc(ptr, layout, new_size) };
        if p.is_null() {
            out_of_memory(new_size);
        }
        p
    }
}

/// Output directories being staged, removed if memory runs out (with the
/// C path made beforehand: removing an empty one allocates nothing).
static STAGED: Mutex<Vec<(PathBuf, CString)>> = Mutex::new(Vec::new());
/// The thread that is reporting an allocation failure (0: none).
static FAILING: AtomicI32 = AtomicI32::new(0);

/// Registers a directory being staged (removed on an out-of-memory exit).
pub fn stage(dir: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = CString::new(dir.as_os_str().as_bytes()) else {
        return;
    };
    if let Ok(mut v) = STAGED.lock() {
        v.push((dir.to_path_buf(), c));
    }
}

/// The directory is finished or removed: forget it.
pub fn unstage(dir: &Path) {
    if let Ok(mut v) = STAGED.lock() {
        v.retain(|(d, _)| d != dir);
    }
}

/// Says how much memory was needed and exits 2.
fn out_of_memory(size: usize) -> ! {
    // SAFETY: gettid has no preconditions.
    let me = unsafe { libc::gettid() };
    if let Err(owner) = FAILING.compare_exchange(0, me, Ordering::SeqCst, Ordering::SeqCst) {
        if owner == me {
            // failed again while cleaning up: say nothing more
            // SAFETY: `_exit` ends the process at once.
            unsafe { libc::_exit(2) }
        }
        // another thread ran out too and is saying so and cleaning up;
        // exiting here would cut that short: wait for its exit
        loop {
            // SAFETY: pause has no preconditions.
            unsafe { libc::pause() };
        }
    }
    let held = held_bytes();
    let mut buf = Buf::default();
    buf.put(b"error: out of memory: netc held ");
    buf.gb(held);
    buf.put(b" GB and asked for ");
    buf.gb(size as u64);
    buf.put(b" GB more; this command needs about ");
    buf.gb(held.saturating_add(size as u64));
    buf.put(b" GB or more\n   = hint: raise the memory limit (`ulimit -v`, the container's) or give netc a machine with more memory; a smaller intent needs less\n");
    // SAFETY: writing a stack buffer to fd 2.
    unsafe { libc::write(2, buf.bytes.as_ptr().cast(), buf.len) };
    if let Ok(dirs) = STAGED.try_lock() {
        for (d, c) in dirs.iter() {
            // SAFETY: a NUL-terminated path made when it was staged.
            if unsafe { libc::rmdir(c.as_ptr()) } != 0 {
                // not empty: this allocates, and usually can (the failed
                // request was large; a second failure just exits)
                let _ = std::fs::remove_dir_all(d);
            }
        }
    }
    // SAFETY: `_exit` ends the process at once (no destructors: the heap is full).
    unsafe { libc::_exit(2) }
}

/// The process's virtual size (`/proc/self/statm`, first field, in pages):
/// what an address-space limit counts.
fn held_bytes() -> u64 {
    statm_field(0)
}

/// The process's resident size (`/proc/self/statm`, second field): what it
/// really uses (the allocator reserves address space it has not touched,
/// and uses it before asking for more).
pub fn resident_bytes() -> u64 {
    statm_field(1)
}

/// Field `i` of `/proc/self/statm`, in bytes; read without allocating.
fn statm_field(i: usize) -> u64 {
    let mut raw = [0u8; 128];
    // SAFETY: a NUL-terminated path, a stack buffer of the given length.
    let n = unsafe {
        let fd = libc::open(c"/proc/self/statm".as_ptr(), libc::O_RDONLY);
        if fd < 0 {
            return 0;
        }
        let n = libc::read(fd, raw.as_mut_ptr().cast(), raw.len());
        libc::close(fd);
        n
    };
    let pages = raw[..n.max(0) as usize]
        .split(|b| *b == b' ')
        .nth(i)
        .unwrap_or(&[])
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .fold(0u64, |a, b| a * 10 + u64::from(b - b'0'));
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u64;
    pages * page
}

/// A message built without allocating.
struct Buf {
    bytes: [u8; 512],
    len: usize,
}

impl Default for Buf {
    fn default() -> Buf {
        Buf {
            bytes: [0; 512],
            len: 0,
        }
    }
}

impl Buf {
    fn put(&mut self, s: &[u8]) {
        let n = s.len().min(self.bytes.len() - self.len);
        self.bytes[self.len..self.len + n].copy_from_slice(&s[..n]);
        self.len += n;
    }
    /// `bytes` in GB (10^9) with one decimal, rounded up.
    fn gb(&mut self, bytes: u64) {
        let tenths = bytes.div_ceil(100_000_000);
        self.int(tenths / 10);
        self.put(b".");
        self.int(tenths % 10);
    }
    fn int(&mut self, mut v: u64) {
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        self.put(&digits[i..]);
    }
}
