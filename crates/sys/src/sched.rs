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

/// `munlockall()`: undo [`lock_all_memory`] (after a probe of the
/// privilege). See mlockall(2).
///
/// # Errors
/// The errno of `munlockall`.
pub fn unlock_all_memory() -> io::Result<()> {
    // SAFETY: plain syscall.
    cvt(unsafe { libc::munlockall() })?;
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
    set_affinity([cpu])
}

/// `sched_setaffinity(0, {cpus})` for the calling thread; every CPU number
/// must be below `CPU_SETSIZE`.
fn set_affinity(cpus: impl IntoIterator<Item = usize>) -> io::Result<()> {
    // SAFETY: cpu_set_t is plain data; the callers keep every CPU_SET
    // index below CPU_SETSIZE.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for c in cpus {
            libc::CPU_SET(c, &mut set);
        }
        cvt(libc::sched_setaffinity(
            0,
            std::mem::size_of::<libc::cpu_set_t>(),
            &set,
        ))?;
    }
    Ok(())
}

/// `sched_setaffinity(0, {every CPU but avoid})`: the calling thread on
/// every CPU of the machine (as `available_parallelism` counts them, up
/// to `CPU_SETSIZE`) but `avoid`, or on all of them when there is only
/// one. See sched_setaffinity(2).
///
/// # Errors
/// The errno of `sched_setaffinity`.
pub fn run_anywhere_but(avoid: Option<u32>) -> io::Result<()> {
    let n = std::thread::available_parallelism().map_or(1, usize::from);
    // Every index is below `n` ≤ CPU_SETSIZE (capped).
    set_affinity(
        (0..n.min(libc::CPU_SETSIZE as usize)).filter(|&c| n == 1 || Some(c as u32) != avoid),
    )
}

/// The CPUs the calling thread may run on (its affinity mask, from
/// `sched_getaffinity`), lowest first: what `--cpu` and `--writer-cpu`
/// may name. See sched_getaffinity(2).
///
/// # Errors
/// The errno of `sched_getaffinity`.
pub fn allowed_cpus() -> io::Result<Vec<usize>> {
    // SAFETY: cpu_set_t is plain data; CPU_ISSET's index is below
    // CPU_SETSIZE by the range.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        cvt(libc::sched_getaffinity(
            0,
            std::mem::size_of::<libc::cpu_set_t>(),
            &mut set,
        ))?;
        Ok((0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect())
    }
}

/// Takes `cpu` out of the calling thread's affinity mask
/// (`sched_getaffinity`, then `sched_setaffinity` without it), so threads
/// it spawns from now on run elsewhere. Returns false, changing nothing,
/// when `cpu` is the only CPU the thread may run on. See
/// sched_setaffinity(2).
///
/// # Errors
/// `InvalidInput` for a CPU number past `CPU_SETSIZE`; the errno of
/// `sched_getaffinity` or `sched_setaffinity`.
pub fn avoid_cpu(cpu: usize) -> io::Result<bool> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(io::ErrorKind::InvalidInput.into());
    }
    // SAFETY: cpu_set_t is plain data; CPU_* are in range (checked above).
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        let size = std::mem::size_of::<libc::cpu_set_t>();
        cvt(libc::sched_getaffinity(0, size, &mut set))?;
        libc::CPU_CLR(cpu, &mut set);
        if libc::CPU_COUNT(&set) == 0 {
            return Ok(false);
        }
        cvt(libc::sched_setaffinity(0, size, &set))?;
    }
    Ok(true)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The CPUs the calling thread may run on.
    fn allowed() -> Vec<usize> {
        allowed_cpus().unwrap()
    }

    #[test]
    fn the_allowed_cpus_hold_the_one_this_thread_runs_on() {
        let cpus = allowed();
        // SAFETY: sched_getcpu has no preconditions.
        let now = unsafe { libc::sched_getcpu() };
        assert!(
            now >= 0 && cpus.contains(&(now as usize)),
            "{now} not in {cpus:?}"
        );
        assert!(cpus.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn a_cpu_avoided_is_left_out_of_the_threads_spawned_after_and_the_last_cpu_is_kept() {
        // On a thread of its own: the harness's threads keep their masks.
        std::thread::spawn(|| {
            let before = allowed();
            let cpu = before[0];
            let avoided = avoid_cpu(cpu).unwrap();
            assert_eq!(avoided, before.len() > 1, "{before:?}");
            let child = std::thread::spawn(allowed).join().unwrap();
            if avoided {
                assert!(!child.contains(&cpu), "{child:?}");
                assert_eq!(child.len(), before.len() - 1);
                // Pinning to the avoided CPU afterwards is allowed.
                pin_to_cpu(cpu).unwrap();
                assert_eq!(allowed(), [cpu]);
            }
            // Its only CPU is never taken away.
            let only = allowed();
            if only.len() == 1 {
                assert!(!avoid_cpu(only[0]).unwrap());
                assert_eq!(allowed(), only);
            }
            assert!(avoid_cpu(libc::CPU_SETSIZE as usize).is_err());
        })
        .join()
        .unwrap();
    }
}
