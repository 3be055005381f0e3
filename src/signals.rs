//! Ctrl-C and SIGTERM: a flag the long-running commands poll, so that they
//! stop at a safe point and go through their normal clean-up (closing the
//! recording, restoring global state) instead of dying mid-way; and SIGUSR1
//! as a flight-recorder trigger. The handlers are `rtrec_host::signals`'s.

use std::sync::atomic::AtomicU64;

use rtrec_host::signals::{self, Repeat, StopSignals, SIGUSR1, SIGUSR2};

/// Flight-recorder triggers asked for (SIGUSR1, a line on stdin, the
/// synthetic schedule); the recording loop turns each into a trigger().
pub static TRIGGERS: AtomicU64 = AtomicU64::new(0);

/// Makes SIGUSR1 ask for a flight-recorder trigger.
///
/// # Errors
/// The handler cannot be installed.
pub fn install_trigger_on_sigusr1() -> rtrec_host::Result<()> {
    signals::count_into(SIGUSR1, &TRIGGERS)
}

/// SIGUSR1 and SIGUSR2 that arrived with nothing to trigger: counted and
/// said after the recording, never the default action (which kills the
/// process and leaves the recording unfinished).
pub static STRAY: AtomicU64 = AtomicU64::new(0);

/// Makes SIGUSR1 (unless it triggers a flight recorder, `usr1_triggers`)
/// and SIGUSR2 harmless to a recording: each adds one to [`STRAY`].
/// Design choice: counted rather than ignored (`SIG_IGN`), so the summary
/// can say that something sent them, and no child inherits an ignored
/// disposition.
///
/// # Errors
/// The handler cannot be installed.
pub fn count_stray_user_signals(usr1_triggers: bool) -> rtrec_host::Result<()> {
    if !usr1_triggers {
        signals::count_into(SIGUSR1, &STRAY)?;
    }
    signals::count_into(SIGUSR2, &STRAY)
}

/// Makes SIGINT and SIGTERM set [`caught`] while the guard lives.
///
/// # Errors
/// The handlers cannot be installed.
pub fn install() -> rtrec_host::Result<StopSignals> {
    StopSignals::install(Repeat::Records)
}

/// The signal caught so far, if any.
pub fn caught() -> Option<i32> {
    signals::caught()
}
