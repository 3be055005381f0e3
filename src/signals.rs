//! Ctrl-C and SIGTERM: a flag the long-running commands poll, so that they
//! stop at a safe point and go through their normal clean-up (closing the
//! recording, restoring global state) instead of dying mid-way; and SIGUSR1
//! as a flight-recorder trigger. The handlers are `rtrec_host::signals`'s.

use std::sync::atomic::AtomicU64;

use rtrec_host::signals::{self, Repeat, StopSignals, SIGUSR1};

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
