//! Real-time scheduling of the calling thread: its id, `SCHED_FIFO`
//! priority, nice value, CPU affinity, I/O priority, and locking the
//! process's memory so no page fault stalls it.
//!
//! Design choice: libc rather than rustix for `sched_setscheduler` and
//! `ioprio_set` (rustix has neither), and for the rest of this module so its
//! calls read alike.

use std::io;

use crate::errno::cvt;

/// `gettid()`: the calling thread's kernel id. See gettid(2).
pub fn gettid() -> i32 {
    // SAFETY: gettid cannot fail.
    unsafe { libc::gettid() }
}

/// `mlockall(MCL_CURRENT | MCL_FUTURE)`: keep every page of the process
/// resident so no page fault stalls the real-time path. See mlockall(2).
///
/// # Errors
/// The errno of `mlockall` (`EPERM`, `ENOMEM` past `RLIMIT_MEMLOCK`).
pub fn lock_all_memory() -> io::Result<()> {
    // SAFETY: plain syscall.
    cvt(unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) })?;
    Ok(())
}

/// `sched_setscheduler(0, SCHED_FIFO, {priority})` for the calling thread.
/// Needs `CAP_SYS_NICE` (or an RLIMIT_RTPRIO). See sched_setscheduler(2).
///
/// # Errors
/// The errno of `sched_setscheduler`.
pub fn set_fifo_priority(priority: i32) -> io::Result<()> {
    let p = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: p is a valid sched_param; pid 0 is the calling thread.
    cvt(unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) })?;
    Ok(())
}

/// `sched_setscheduler(0, SCHED_OTHER, {0})`: the calling thread back to
/// the normal policy, whatever it inherited from the thread that spawned
/// it. Lowering a policy needs no privilege. See sched_setscheduler(2).
///
/// # Errors
/// The errno of `sched_setscheduler`.
pub fn set_normal_policy() -> io::Result<()> {
    let p = libc::sched_param { sched_priority: 0 };
    // SAFETY: p is a valid sched_param; pid 0 is the calling thread.
    cvt(unsafe { libc::sched_setscheduler(0, libc::SCHED_OTHER, &p) })?;
    Ok(())
}

/// `setpriority(PRIO_PROCESS, gettid(), nice)`: the nice value of the calling
/// thread only (Linux applies it per thread). See setpriority(2).
///
/// # Errors
/// The errno of `setpriority`.
pub fn set_thread_nice(nice: i32) -> io::Result<()> {
    // SAFETY: plain syscall on our own thread id.
    cvt(unsafe { libc::setpriority(libc::PRIO_PROCESS, gettid() as libc::id_t, nice) })?;
    Ok(())
}

/// `sched_setaffinity(0, {cpu})`: pin the calling thread to one CPU.
/// See sched_setaffinity(2).
///
/// # Errors
/// `InvalidInput` for a CPU number past `CPU_SETSIZE`; the errno of
/// `sched_setaffinity`.
pub fn pin_to_cpu(cpu: usize) -> io::Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(io::ErrorKind::InvalidInput.into());
    }
    // SAFETY: cpu_set_t is plain data; CPU_SET is in range (checked above).
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        cvt(libc::sched_setaffinity(
            0,
            std::mem::size_of::<libc::cpu_set_t>(),
            &set,
        ))?;
    }
    Ok(())
}

/// `ioprio_set(IOPRIO_WHO_PROCESS, gettid(), class << 13 | level)` for the
/// calling thread: class 1 = real-time, 2 = best-effort, 3 = idle; level 0
/// (highest) to 7. Honoured by BFQ. See ioprio_set(2).
///
/// # Errors
/// The errno of `ioprio_set`.
pub fn set_thread_ioprio(class: u32, level: u32) -> io::Result<()> {
    let prio = ((class & 0x7) << 13) | (level & 0x7);
    // SAFETY: plain syscall with integer arguments.
    cvt(unsafe {
        libc::syscall(
            libc::SYS_ioprio_set,
            1 as libc::c_long,
            gettid() as libc::c_long,
            prio as libc::c_long,
        )
    })?;
    Ok(())
}
