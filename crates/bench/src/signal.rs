//! Ctrl-C and SIGTERM during a bench: a flag the timing loops poll, so the
//! run stops at once, discards the unfinished set, and unwinds through the
//! normal clean-up (loads stopped, sysctls put back, image removed). The
//! handler resets itself (SA_RESETHAND): a second Ctrl-C kills rtrec, and
//! the next rtrec run or `rtrec tune --restore` puts the settings back.

use std::sync::atomic::{AtomicBool, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    INTERRUPTED.store(true, Ordering::Relaxed);
}

/// True once SIGINT or SIGTERM arrived while a [`Guard`] was installed.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}

/// The handlers, installed while this lives; the previous ones come back
/// when it is dropped.
pub struct Guard {
    old: [libc::sigaction; 2],
}

const SIGNALS: [libc::c_int; 2] = [libc::SIGINT, libc::SIGTERM];

impl Guard {
    /// Installs the handlers and clears the flag.
    pub fn install() -> Guard {
        INTERRUPTED.store(false, Ordering::Relaxed);
        // SAFETY: sigaction structs are plain data, zeroed is valid; the
        // handler only stores to an atomic.
        unsafe {
            let mut old: [libc::sigaction; 2] = std::mem::zeroed();
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as usize;
            sa.sa_flags = libc::SA_RESTART | libc::SA_RESETHAND;
            libc::sigemptyset(&mut sa.sa_mask);
            for (i, s) in SIGNALS.iter().enumerate() {
                libc::sigaction(*s, &sa, &mut old[i]);
            }
            Guard { old }
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        // SAFETY: puts back the dispositions saved by install().
        unsafe {
            for (i, s) in SIGNALS.iter().enumerate() {
                libc::sigaction(*s, &self.old[i], std::ptr::null_mut());
            }
        }
    }
}
