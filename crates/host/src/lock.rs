//! The machine-wide lock, [`GlobalLock`], under which sysctls, I/O
//! schedulers and tracefs are changed, and which carries the journal that
//! puts them back before it is released.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::thread;
use std::time::{Duration, Instant};

use crate::allowlist::Allowlist;
use crate::error::{Error, Result};
use crate::journal::{ensure_dir, state_dir, Journal, NEXT_HANDLE};
use crate::lockfile::{
    held_by_thread, lock_file, lock_holder, unpoisoned as lock, GLOBAL_LOCK, HELD,
};
use crate::restore::{restore, RestoreReport, Scope};
use crate::signals;

/// How long [`GlobalLock::acquire_with`] waits by default: long enough for
/// another rtrec's short change of settings, short enough that a forgotten
/// benchmark in another terminal is noticed.
pub const DEFAULT_LOCK_TIMEOUT: Duration = Duration::from_secs(300);

/// How often a waiter tries the lock again. `flock` itself cannot time out
/// and restarts after a signal, so waiting is polling.
const POLL: Duration = Duration::from_millis(50);

/// How to wait for the global lock: see [`GlobalLock::acquire_with`].
#[derive(Debug, Clone)]
pub struct Wait {
    /// Give up after this long; `None` waits for ever.
    pub timeout: Option<Duration>,
    /// Stop waiting when a stop signal is caught
    /// ([`signals::caught`]; needs a [`signals::StopSignals`] guard, without
    /// which a stop signal ends the process anyway).
    pub interruptible: bool,
    /// What to obey when restoring the changes of dead owners.
    pub allow: Allowlist,
}

impl Default for Wait {
    fn default() -> Wait {
        Wait {
            timeout: Some(DEFAULT_LOCK_TIMEOUT),
            interruptible: true,
            allow: Allowlist::rtrec(),
        }
    }
}

/// The machine-wide lock for changing sysctls, I/O schedulers and tracefs:
/// `flock(LOCK_EX)` on `<dir>/global.lock`.
///
/// Whoever changes such state holds it from before the first change until
/// after the last undo, so two rtrec processes never interleave changes to
/// the same values. The kernel releases it when the holder dies, however it
/// dies. Acquiring it first restores what dead owners left of those kinds
/// (see [`restored`](GlobalLock::restored)).
///
/// It carries a [`journal`](GlobalLock::journal) whose entries are undone
/// when the lock is dropped, *before* it is released:
///
/// ```no_run
/// # fn main() -> rtrec_host::Result<()> {
/// let lock = rtrec_host::lock::GlobalLock::acquire()?;
/// rtrec_host::sysctl::apply_flusher_off(lock.journal())?;
/// // ... record ...
/// drop(lock); // flusher settings put back, then the lock released
/// # Ok(()) }
/// ```
///
/// The lock is per directory: processes with different `RTREC_STATE_DIR`s
/// do not exclude each other.
#[derive(Debug)]
pub struct GlobalLock {
    journal: Journal,
    restored: RestoreReport,
    token: u64,
    /// Closed (releasing the lock) after `drop` has undone the journal.
    _file: File,
}

impl GlobalLock {
    /// Waits for the global lock of [`state_dir`].
    ///
    /// # Errors
    /// [`Error::WouldDeadlock`] if this thread acquired it already (and has
    /// not dropped it); I/O errors on the lock file or journals.
    pub fn acquire() -> Result<GlobalLock> {
        GlobalLock::acquire_in(&state_dir())
    }

    /// Waits for the global lock of `dir`. See [`acquire`](GlobalLock::acquire).
    ///
    /// # Errors
    /// As [`acquire`](GlobalLock::acquire).
    pub fn acquire_in(dir: &Path) -> Result<GlobalLock> {
        let dir = ensure_dir(dir)?;
        if held_by_thread(&dir) {
            return Err(Error::WouldDeadlock(dir));
        }
        let file = lock_file(&dir, GLOBAL_LOCK, true)?.expect("blocking lock");
        GlobalLock::locked(dir, file, &Allowlist::rtrec())
    }

    /// Waits for the global lock of `dir` as `wait` says: polling, so that
    /// a stop signal ends the wait ([`Error::Interrupted`]) and a timeout
    /// gives up ([`Error::LockTimeout`]), both naming the holder.
    ///
    /// # Errors
    /// As [`acquire`](GlobalLock::acquire), and the two above.
    pub fn acquire_with(dir: &Path, wait: &Wait) -> Result<GlobalLock> {
        let dir = ensure_dir(dir)?;
        if held_by_thread(&dir) {
            return Err(Error::WouldDeadlock(dir));
        }
        let start = Instant::now();
        loop {
            if let Some(file) = lock_file(&dir, GLOBAL_LOCK, false)? {
                return GlobalLock::locked(dir, file, &wait.allow);
            }
            if wait.interruptible {
                if let Some(signal) = signals::caught() {
                    return Err(Error::Interrupted {
                        signal: signals::name(signal),
                        holder: lock_holder(&dir),
                    });
                }
            }
            if wait.timeout.is_some_and(|t| start.elapsed() >= t) {
                return Err(Error::LockTimeout {
                    waited: start.elapsed(),
                    holder: lock_holder(&dir),
                });
            }
            thread::sleep(POLL);
        }
    }

    /// Who holds the global lock of `dir`, for messages: "pid 1234
    /// (rtrec bench --paper)", or "another process" when it cannot be told.
    pub fn holder_in(dir: &Path) -> String {
        lock_holder(dir)
    }

    /// Takes the global lock of [`state_dir`] if it is free; `None` if
    /// another process (or another thread of this one) holds it.
    ///
    /// # Errors
    /// I/O errors on the lock file or journals.
    pub fn try_acquire() -> Result<Option<GlobalLock>> {
        GlobalLock::try_acquire_in(&state_dir())
    }

    /// Takes the global lock of `dir` if it is free. See
    /// [`try_acquire`](GlobalLock::try_acquire).
    ///
    /// # Errors
    /// As [`try_acquire`](GlobalLock::try_acquire).
    pub fn try_acquire_in(dir: &Path) -> Result<Option<GlobalLock>> {
        let dir = ensure_dir(dir)?;
        match lock_file(&dir, GLOBAL_LOCK, false)? {
            Some(file) => GlobalLock::locked(dir, file, &Allowlist::rtrec()).map(Some),
            None => Ok(None),
        }
    }

    fn locked(dir: PathBuf, mut file: File, allow: &Allowlist) -> Result<GlobalLock> {
        // Say who holds it, for the messages of those who wait.
        let _ = file
            .set_len(0)
            .and_then(|()| writeln!(file, "{}", std::process::id()));
        let journal = Journal::open_in(&dir)?;
        let token = NEXT_HANDLE.fetch_add(1, Ordering::Relaxed);
        lock(&HELD).push((dir.clone(), thread::current().id(), token));
        // From here on, dropping `lock` unregisters it.
        let mut lock = GlobalLock {
            journal,
            restored: RestoreReport::default(),
            token,
            _file: file,
        };
        lock.restored = restore(&dir, Scope::StaleGlobal, allow)?;
        Ok(lock)
    }

    /// A journal whose entries are undone when this lock is dropped, before
    /// the lock is released.
    pub fn journal(&self) -> &Journal {
        &self.journal
    }

    /// What acquiring the lock put back for dead owners.
    pub fn restored(&self) -> &RestoreReport {
        &self.restored
    }
}

impl Drop for GlobalLock {
    fn drop(&mut self) {
        if let Err(e) = self.journal.undo_all() {
            eprintln!("rtrec: {e}");
        }
        lock(&HELD).retain(|(_, _, token)| *token != self.token);
        // `_file` closes after this body: the kernel releases the flock.
    }
}
