//! Opt-in real-time helpers for the caller's thread: lock memory, SCHED_FIFO
//! priority, CPU affinity. The writer thread gets its own from
//! [`crate::RtConfig`]; the periodic timer is in [`crate::schedule`].

use std::io;

use rtrec_sys as sys;

/// The SCHED_FIFO priority a timed thread gets by default: `rtrec record
/// --rt --priority`'s and `rtrec bench --priority`'s default; the writer
/// thread gets one below.
pub const DEFAULT_PRIORITY: i32 = 80;

/// The SCHED_FIFO priorities (`sched(7)`): a `--priority` outside them is
/// refused before anything runs.
pub const PRIORITIES: std::ops::RangeInclusive<i32> = 1..=99;

/// What to apply to the calling thread.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RtSetup {
    /// `mlockall(MCL_CURRENT|MCL_FUTURE)` for the whole process.
    pub lock_memory: bool,
    /// SCHED_FIFO priority (one of [`PRIORITIES`]).
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

/// How every summary warning of the writer thread's scheduling begins
/// (its SCHED_FIFO priority or CPU could not be had): one definition for
/// the writer that says it and the reports that pick those warnings out.
pub const WRITER_SCHEDULING_FAILED: &str = "the writer thread could not";

/// How a warning that the flush thread's scheduling could not be applied
/// begins (its CPU), as [`WRITER_SCHEDULING_FAILED`] does the writer's.
pub const FLUSHER_SCHEDULING_FAILED: &str = "the flush thread could not";

/// Which parts of `setup` would fail, tried on a short-lived thread of its
/// own: the thread's policy and CPU go with it, and a memory lock that
/// worked is undone (`munlockall`), so nothing of the trial stays. For a
/// caller that must refuse to record without its real-time setup
/// (`rtrec record --require-rt`) before anything is recorded.
pub fn probe(setup: &RtSetup) -> Vec<String> {
    let s = setup.clone();
    std::thread::spawn(move || {
        let failures = apply(&s);
        if s.lock_memory && !failures.iter().any(|f| f.contains("mlockall")) {
            let _ = sys::unlock_all_memory();
        }
        failures
    })
    .join()
    .unwrap_or_else(|_| vec!["the real-time probe panicked".to_string()])
}

/// Starts a thread named `name` that first runs `setup` (its own
/// scheduling: policy, nice value, CPU) and then `run` with what `setup`
/// returned, and returns only once `setup` has run.
///
/// Design choice: the engine's threads set their scheduling themselves
/// (std cannot hand a `pthread_attr` to a new thread), so without the wait
/// a thread created by a SCHED_FIFO producer would run at the producer's
/// priority until it got round to lowering it, and the recorder's creator
/// could not know which policy its writer has. One wait at start, never on
/// the hot path. The wait is a mutex and a condition variable, not a
/// channel: a channel's receive gives the caller's thread a std handle of
/// its own, which a C program's threads would then hold (valgrind reports
/// it as possibly lost).
pub(crate) fn spawn_settled<W, T>(
    name: &str,
    setup: impl FnOnce() -> W + Send + 'static,
    run: impl FnOnce(W) -> T + Send + 'static,
) -> io::Result<std::thread::JoinHandle<T>>
where
    T: Send + 'static,
{
    use std::sync::{Arc, Condvar, Mutex};
    /// Says "settled" when dropped: after `setup`, or when it panics.
    struct Settled(Arc<(Mutex<bool>, Condvar)>);
    impl Drop for Settled {
        fn drop(&mut self) {
            let (done, cv) = &*self.0;
            *done.lock().unwrap_or_else(|e| e.into_inner()) = true;
            cv.notify_all();
        }
    }
    let state = Arc::new((Mutex::new(false), Condvar::new()));
    let settled = Settled(state.clone());
    let handle = std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            let w = setup();
            drop(settled);
            run(w)
        })?;
    let (done, cv) = &*state;
    let mut d = done.lock().unwrap_or_else(|e| e.into_inner());
    while !*d {
        d = cv.wait(d).unwrap_or_else(|e| e.into_inner());
    }
    Ok(handle)
}
