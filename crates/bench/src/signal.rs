//! Ctrl-C and SIGTERM during a bench: a flag the timing loops poll, so the
//! run stops at once, discards the unfinished set, and unwinds through the
//! normal clean-up (loads stopped, sysctls put back, image removed). A second
//! Ctrl-C kills rtrec ([`Repeat::Kills`]), and the next rtrec run or
//! `rtrec tune --restore` puts the settings back. The handlers are
//! `rtrec_host::signals`'s.

use rtrec_host::signals::{self, Repeat, StopSignals};

/// Installs the handlers and clears the flag; the signals take their default
/// action again when the guard is dropped.
///
/// # Errors
/// The handlers cannot be installed.
pub fn install() -> rtrec_host::Result<StopSignals> {
    StopSignals::install(Repeat::Kills)
}

/// True once SIGINT or SIGTERM arrived while the guard was installed.
pub fn interrupted() -> bool {
    signals::caught().is_some()
}
