//! Signal handling, the one module of rtrec that installs handlers (on
//! `signal-hook`): SIGINT, SIGTERM and SIGHUP become a flag that long-running work
//! polls, so it stops at a safe point and goes through its normal clean-up
//! (closing the recording, stopping loads, putting global state back)
//! instead of dying mid-way; and a signal such as SIGUSR1 can count requests
//! into a counter.
//!
//! Design choices:
//! - The handlers are registered once per process and stay; what a stop
//!   signal does is an atomic mode that [`StopSignals`] switches. Outside a
//!   [`StopSignals`] guard a stop signal takes its default action (the
//!   process ends), as if no handler were installed.
//! - Handlers only touch atomics (async-signal-safe); `signal-hook` installs
//!   them with `SA_RESTART`, so a blocking read or write is not cut short.
//! - [`Repeat::Kills`]: while a first stop signal is being handled, a second
//!   one ends the process at once (its default action) — a second Ctrl-C is
//!   how a user insists. The journal of global changes then puts the state
//!   back in the next rtrec run or `rtrec tune --restore`.

use std::sync::atomic::{AtomicI32, AtomicU64, AtomicU8, Ordering};
use std::sync::{Mutex, OnceLock};

pub use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM, SIGUSR1, SIGUSR2};

use crate::error::{Error, Result};

/// The stop signals: Ctrl-C, `kill`, and the hang-up of the terminal or
/// SSH session the command runs in (which must end a recording cleanly,
/// with its end frame, rather than kill it mid-file).
const STOP_SIGNALS: [i32; 3] = [SIGINT, SIGTERM, SIGHUP];

/// No guard: a stop signal takes its default action.
const INACTIVE: u8 = 0;
/// A guard with [`Repeat::Records`].
const RECORD: u8 = 1;
/// A guard with [`Repeat::Kills`].
const RECORD_THEN_KILL: u8 = 2;

static MODE: AtomicU8 = AtomicU8::new(INACTIVE);
/// The last stop signal caught while a guard was installed; 0 for none.
static CAUGHT: AtomicI32 = AtomicI32::new(0);

/// What a stop signal does after a first one was caught.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repeat {
    /// It is recorded too ([`caught`] then names the latest).
    Records,
    /// It ends the process at once (its default action).
    Kills,
}

/// SIGINT, SIGTERM and SIGHUP set [`caught`] while this lives; when it is dropped
/// they take their default action again.
#[derive(Debug)]
pub struct StopSignals {
    _private: (),
}

impl StopSignals {
    /// Clears [`caught`] and makes SIGINT, SIGTERM and SIGHUP set it.
    ///
    /// # Errors
    /// [`Error::Signal`] if a handler cannot be installed (it can only fail
    /// for a signal number the kernel refuses).
    pub fn install(repeat: Repeat) -> Result<StopSignals> {
        register_stop_handlers()?;
        CAUGHT.store(0, Ordering::SeqCst);
        let mode = match repeat {
            Repeat::Records => RECORD,
            Repeat::Kills => RECORD_THEN_KILL,
        };
        MODE.store(mode, Ordering::SeqCst);
        Ok(StopSignals { _private: () })
    }
}

impl Drop for StopSignals {
    fn drop(&mut self) {
        MODE.store(INACTIVE, Ordering::SeqCst);
    }
}

/// The stop signal (SIGINT, SIGTERM or SIGHUP) caught since the last
/// [`StopSignals::install`], if any.
pub fn caught() -> Option<i32> {
    match CAUGHT.load(Ordering::Relaxed) {
        0 => None,
        s => Some(s),
    }
}

/// The name of a stop signal, for messages (`"SIGINT"`).
pub fn name(signal: i32) -> &'static str {
    match signal {
        SIGINT => "SIGINT",
        SIGTERM => "SIGTERM",
        SIGHUP => "SIGHUP",
        SIGUSR1 => "SIGUSR1",
        SIGUSR2 => "SIGUSR2",
        _ => "a signal",
    }
}

/// Registers, once per process, the handler of the stop signals.
fn register_stop_handlers() -> Result<()> {
    static REGISTERED: OnceLock<std::result::Result<(), (i32, String)>> = OnceLock::new();
    let done = REGISTERED.get_or_init(|| {
        for signal in STOP_SIGNALS {
            // SAFETY: the action only loads and stores atomics, and
            // `emulate_default_handler` is async-signal-safe.
            unsafe { signal_hook::low_level::register(signal, move || on_stop(signal)) }
                .map_err(|e| (signal, e.to_string()))?;
        }
        Ok(())
    });
    done.clone().map_err(|(signal, e)| Error::Signal {
        signal,
        source: std::io::Error::other(e),
    })
}

/// The action of a stop signal (runs in the signal handler).
fn on_stop(signal: i32) {
    let take_default = match MODE.load(Ordering::SeqCst) {
        RECORD => {
            CAUGHT.store(signal, Ordering::SeqCst);
            false
        }
        RECORD_THEN_KILL => CAUGHT.swap(signal, Ordering::SeqCst) != 0,
        _ => true,
    };
    if take_default {
        let _ = signal_hook::low_level::emulate_default_handler(signal);
    }
}

/// Makes every `signal` (SIGUSR1, say) add one to `counter`, for the rest of
/// the process. Registering the same signal and counter again does nothing.
///
/// # Errors
/// [`Error::Signal`] if the handler cannot be installed (a signal the kernel
/// reserves, like SIGKILL).
pub fn count_into(signal: i32, counter: &'static AtomicU64) -> Result<()> {
    static COUNTED: Mutex<Vec<(i32, usize)>> = Mutex::new(Vec::new());
    let key = (signal, counter as *const AtomicU64 as usize);
    let mut counted = COUNTED.lock().unwrap_or_else(|e| e.into_inner());
    if counted.contains(&key) {
        return Ok(());
    }
    // SAFETY: the action only increments an atomic.
    unsafe {
        signal_hook::low_level::register(signal, move || {
            counter.fetch_add(1, Ordering::Relaxed);
        })
    }
    .map_err(|source| Error::Signal { signal, source })?;
    counted.push(key);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    // One test: the handlers and their mode are process-wide.
    #[test]
    fn stop_signals_are_caught_while_guarded_and_counted_signals_count() {
        let guard = StopSignals::install(Repeat::Records).unwrap();
        assert_eq!(caught(), None);
        signal_hook::low_level::raise(SIGTERM).unwrap();
        assert_eq!(caught(), Some(SIGTERM));
        assert_eq!(name(SIGTERM), "SIGTERM");
        drop(guard);
        let guard = StopSignals::install(Repeat::Kills).unwrap();
        assert_eq!(caught(), None, "install clears what an earlier guard saw");
        drop(guard);

        static COUNT: AtomicU64 = AtomicU64::new(0);
        count_into(SIGUSR1, &COUNT).unwrap();
        count_into(SIGUSR1, &COUNT).unwrap();
        signal_hook::low_level::raise(SIGUSR1).unwrap();
        assert_eq!(COUNT.load(Ordering::Relaxed), 1);
    }
}
