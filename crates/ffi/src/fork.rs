//! `fork()` detection: which process generation a recorder was created in.
//!
//! A recorder's writer and flush threads exist only in the process that
//! created it; after `fork()` the child has a copy of the recorder and
//! none of its threads. Recording into that copy would store nothing, and
//! finishing it would wait for a writer that is not there (or, in direct
//! mode, write into the parent's file). So the library counts forks: a
//! `pthread_atfork()` child handler, registered once by the first
//! `rtrec_recorder_create()`, adds one to a process-wide generation, and
//! every recorder keeps the generation it was created in. A call on a
//! recorder of another generation returns `-ECHILD` (see
//! `docs/c-api.md`, "fork()").
//!
//! Design choices:
//! - A generation, not `getpid()`: `rtrec_recorder_record()` makes no
//!   system call, so its check is one relaxed atomic load and a compare.
//!   Relaxed is enough: the handler runs in the child before `fork()`
//!   returns there, on the thread that then goes on.
//! - `ECHILD` ("no child processes"): the errno nearest to "this object
//!   belongs to the parent"; no other rtrec call returns it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Once;

/// Forks since the library was loaded, as this process sees them.
static GENERATION: AtomicU64 = AtomicU64::new(0);

/// The `pthread_atfork()` child handler: async-signal-safe (one atomic
/// add).
extern "C" fn in_child() {
    GENERATION.fetch_add(1, Ordering::Relaxed);
}

/// The generation of this process, registering the handler first (once;
/// `rtrec_recorder_create()` calls it, before any recorder exists). A
/// failed registration (`ENOMEM` only) leaves forks undetected: the
/// library then behaves as before this check existed, which is not worth
/// failing a recorder for.
pub(crate) fn generation_at_create() -> u64 {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: registers a handler that only adds to an atomic.
        unsafe { libc::pthread_atfork(None, None, Some(in_child)) };
    });
    GENERATION.load(Ordering::Relaxed)
}

/// Whether a recorder created in `generation` belongs to a parent of this
/// process. The real-time check: one relaxed load, no system call.
#[inline]
pub(crate) fn forked_since(generation: u64) -> bool {
    GENERATION.load(Ordering::Relaxed) != generation
}

/// The sentence of a recorder used in a child, for `call`.
pub(crate) fn message(call: &str) -> String {
    format!(
        "{call}: this recorder was created in the parent process; after fork() the child has no writer thread: create a new recorder in the child (or exec)"
    )
}
