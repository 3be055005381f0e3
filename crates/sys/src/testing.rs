//! Test support shared by the workspace's tests: a global allocator that
//! counts allocations per thread, which the real-time tests use to prove
//! that `record()` allocates nothing, and counters of the real `fallocate`
//! and `ftruncate` calls, which prove that a pooled recording makes neither,
//! and a seccomp filter installer ([`install_seccomp`]).
//!
//! Design choice: always compiled, no cargo feature. It was a `testing`
//! feature that only the tests' dev-dependencies enabled, so the test
//! build compiled every crate of the workspace a second time beside the
//! release build (CI's largest cost). What the binary carries of it is
//! two relaxed atomic adds, beside a `fallocate` and an `ftruncate`
//! system call (never in `record()`); the allocator is installed only by
//! a test binary, and the linker drops what nothing calls.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::AtomicU64;

/// Calls of [`crate::fallocate`] made by this process so far.
pub static FALLOCATE: AtomicU64 = AtomicU64::new(0);

/// Calls of [`crate::ftruncate`] made by this process so far.
pub static FTRUNCATE: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

/// Forwards to the system allocator and counts `alloc` and `realloc` calls
/// of the calling thread. Install it in a test binary with
/// `#[global_allocator] static A: CountingAllocator = CountingAllocator;`.
pub struct CountingAllocator;

// SAFETY: forwards every call to the system allocator unchanged; the
// counter is a const-initialised thread-local, which never allocates.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCS.with(|c| c.set(c.get() + 1));
        // SAFETY: the caller upholds alloc's contract.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: the caller upholds dealloc's contract.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        ALLOCS.with(|c| c.set(c.get() + 1));
        // SAFETY: the caller upholds realloc's contract.
        unsafe { System.realloc(p, l, n) }
    }
}

/// Allocations made so far on the calling thread (with [`CountingAllocator`]
/// installed; always 0 otherwise).
pub fn thread_allocations() -> u64 {
    ALLOCS.with(|c| c.get())
}

/// One instruction of a classic BPF program (`struct sock_filter`):
/// `(code, jt, jf, k)`.
pub type BpfInsn = (u16, u8, u8, u32);

/// `prctl(PR_SET_NO_NEW_PRIVS)` then `seccomp(SECCOMP_SET_MODE_FILTER)`
/// with `prog` for the calling thread (and the threads it starts). The
/// real-time tests kill on every system call with it; the io_uring
/// fallback test refuses `io_uring_setup` with `EPERM`.
///
/// # Errors
/// The errno of `prctl` or `seccomp`.
pub fn install_seccomp(prog: &[BpfInsn]) -> std::io::Result<()> {
    #[repr(C)]
    struct SockFilter {
        code: u16,
        jt: u8,
        jf: u8,
        k: u32,
    }
    #[repr(C)]
    struct SockFprog {
        len: u16,
        filter: *const SockFilter,
    }
    let insns: Vec<SockFilter> = prog
        .iter()
        .map(|&(code, jt, jf, k)| SockFilter { code, jt, jf, k })
        .collect();
    let fprog = SockFprog {
        len: insns.len() as u16,
        filter: insns.as_ptr(),
    };
    // SAFETY: prctl/seccomp with valid arguments; the program outlives the call.
    unsafe {
        crate::errno::cvt(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))?;
        crate::errno::cvt(libc::syscall(
            libc::SYS_seccomp,
            1, /* SET_MODE_FILTER */
            0,
            &fprog as *const SockFprog,
        ))?;
    }
    Ok(())
}
