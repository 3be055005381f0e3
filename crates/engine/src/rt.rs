//! Opt-in real-time helpers for the caller's thread: lock memory, SCHED_FIFO
//! priority, CPU affinity. The writer thread gets its own from
//! [`crate::RtConfig`]; the periodic timer is in [`crate::schedule`].

use std::io;

use rtrec_sys as sys;

/// What to apply to the calling thread.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RtSetup {
    /// `mlockall(MCL_CURRENT|MCL_FUTURE)` for the whole process.
    pub lock_memory: bool,
    /// SCHED_FIFO priority (1..=99).
    pub priority: Option<i32>,
    /// CPU to pin to.
    pub cpu: Option<usize>,
}

/// Which parts of an [`RtSetup`] could not be applied, one sentence each
/// (e.g. not permitted for an unprivileged user). Never fatal: the recording
/// runs, and the caller reports these.
pub fn apply(setup: &RtSetup) -> Vec<String> {
    let mut warnings = Vec::new();
    let mut note = |what: &str, r: io::Result<()>| {
        if let Err(e) = r {
            warnings.push(format!("could not {what}: {e}"));
        }
    };
    if setup.lock_memory {
        note("lock memory (mlockall)", sys::lock_all_memory());
    }
    if let Some(p) = setup.priority {
        note(
            &format!("set SCHED_FIFO priority {p}"),
            sys::set_fifo_priority(p),
        );
    }
    if let Some(c) = setup.cpu {
        note(&format!("pin to CPU {c}"), sys::pin_to_cpu(c));
    }
    warnings
}

/// The soft `RLIMIT_MEMLOCK` (`getrlimit(RLIMIT_MEMLOCK, …)`), bytes: what
/// [`apply`]'s `mlockall` may lock without privilege. `Ok(None)`: unlimited.
///
/// # Errors
/// The errno of `getrlimit`.
pub fn memlock_limit() -> io::Result<Option<u64>> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `r` is a valid, writable `rlimit` for the duration of the call.
    if unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut r) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // `rlim_t` is 32 bits on 32-bit ARM: the cast is not the same type there.
    #[allow(clippy::unnecessary_cast)]
    let limit = r.rlim_cur as u64;
    Ok((r.rlim_cur != libc::RLIM_INFINITY).then_some(limit))
}
