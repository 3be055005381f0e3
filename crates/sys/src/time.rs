//! Clocks and sleeps: monotonic, real, thread- and process-CPU time in
//! nanoseconds, the monotonic clock's resolution, and a sleep until an
//! absolute monotonic deadline.
//!
//! Design choice: these go straight to the C library, not through rustix.
//! glibc answers `CLOCK_MONOTONIC` and `CLOCK_REALTIME` from the vDSO with no
//! system call, which the engine's seccomp test (no syscall at all while
//! recording) proves for this path; one path for every clock keeps that
//! proof valid for all of them.

/// `clock_gettime(clock)` in nanoseconds.
fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out-pointer; these clocks always exist on Linux,
    // so the call cannot fail.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// `clock_gettime(CLOCK_MONOTONIC)` in nanoseconds. Served by the vDSO (no
/// system call) on the architectures rtrec targets. See clock_gettime(2).
#[inline]
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// `clock_gettime(CLOCK_REALTIME)` in nanoseconds since the Unix epoch.
/// See clock_gettime(2).
pub fn realtime_ns() -> u64 {
    clock_ns(libc::CLOCK_REALTIME)
}

/// `clock_gettime(CLOCK_THREAD_CPUTIME_ID)`: CPU time of the calling thread.
/// See clock_gettime(2).
pub fn thread_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// `clock_gettime(CLOCK_PROCESS_CPUTIME_ID)`: CPU time of every thread of
/// the calling process, those that have ended included (io_uring's workers
/// are threads of the process). See clock_gettime(2).
pub fn process_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_PROCESS_CPUTIME_ID)
}

/// `getrusage(RUSAGE_CHILDREN)`: user + system CPU time, ns (the kernel
/// counts microseconds), of every child process of this process that has
/// ended and been waited for, with every thread of theirs (io_uring's
/// workers included) and the children they waited for. The difference
/// across one child's run is that child's whole CPU, if nothing else is
/// reaped meanwhile. See getrusage(2).
pub fn children_cpu_ns() -> u64 {
    // SAFETY: zeroed is a valid rusage; getrusage fills it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to a rusage this function owns.
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) } != 0 {
        return 0;
    }
    let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    (us(ru.ru_utime) + us(ru.ru_stime)) * 1000
}

/// `clock_getres(CLOCK_MONOTONIC)` in nanoseconds: 1 with high-resolution
/// timers, a scheduler tick (1–10 ms) without them; `None` if the call
/// fails. See clock_getres(2).
pub fn monotonic_resolution_ns() -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out-pointer.
    let rc = unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC, &mut ts) };
    (rc == 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, deadline)`: sleep until
/// an absolute monotonic time (no drift from relative sleeps), retrying on
/// `EINTR`. See clock_nanosleep(2).
pub fn sleep_until_monotonic(deadline_ns: u64) {
    let ts = libc::timespec {
        tv_sec: (deadline_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (deadline_ns % 1_000_000_000) as libc::c_long,
    };
    loop {
        // SAFETY: ts is a valid timespec; the remaining-time pointer may be
        // null with TIMER_ABSTIME.
        let r = unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            )
        };
        if r != libc::EINTR {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monotonic_clock_moves_forward() {
        let a = monotonic_ns();
        sleep_until_monotonic(a + 1_000_000);
        assert!(monotonic_ns() >= a + 1_000_000);
    }
}
