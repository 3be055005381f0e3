//! Ctrl-C and SIGTERM: a flag the long-running commands poll, so that they
//! stop at a safe point and go through their normal clean-up (closing the
//! recording, restoring global state) instead of dying mid-way.

use std::sync::atomic::{AtomicI32, Ordering};

static CAUGHT: AtomicI32 = AtomicI32::new(0);

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
