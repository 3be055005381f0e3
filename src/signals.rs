//! Ctrl-C and SIGTERM: a flag the long-running commands poll, so that they
//! stop at a safe point and go through their normal clean-up (closing the
//! recording, restoring global state) instead of dying mid-way.

use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};

static CAUGHT: AtomicI32 = AtomicI32::new(0);

/// Flight-recorder triggers asked for (SIGUSR1, a line on stdin, the
/// synthetic schedule); the recording loop turns each into a trigger().
pub static TRIGGERS: AtomicU64 = AtomicU64::new(0);

extern "C" fn on_trigger(_sig: libc::c_int) {
    TRIGGERS.fetch_add(1, Ordering::Relaxed);
}

/// Makes SIGUSR1 ask for a flight-recorder trigger.
pub fn install_trigger_on_sigusr1() {
    // SAFETY: the handler only touches an atomic; SA_RESTART keeps reads going.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_trigger as *const () as usize;
        sa.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(libc::SIGUSR1, &sa, std::ptr::null_mut());
    }
}

extern "C" fn on_signal(sig: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    CAUGHT.store(sig, Ordering::Relaxed);
}

/// Installs the handler for SIGINT and SIGTERM.
pub fn install() {
    // SAFETY: the handler only stores to an atomic; sigaction arguments are
    // valid.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as *const () as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(libc::SIGINT, &sa, std::ptr::null_mut());
        libc::sigaction(libc::SIGTERM, &sa, std::ptr::null_mut());
    }
}

/// The signal caught so far, if any.
pub fn caught() -> Option<i32> {
    match CAUGHT.load(Ordering::Relaxed) {
        0 => None,
        s => Some(s),
    }
}
