//! The machine-wide lock, [`GlobalLock`], under which sysctls, I/O
//! schedulers and tracefs are changed, and which carries the journal that
//! puts them back before it is released.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::thread;

use crate::error::{Error, Result};
use crate::journal::{ensure_dir, state_dir, Journal, NEXT_HANDLE};
use crate::lockfile::{held_by_thread, lock_file, unpoisoned as lock, GLOBAL_LOCK, HELD};
use crate::restore::{restore, RestoreReport, Scope};

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
        GlobalLock::locked(dir, file)
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
            Some(file) => GlobalLock::locked(dir, file).map(Some),
            None => Ok(None),
        }
    }

    fn locked(dir: PathBuf, mut file: File) -> Result<GlobalLock> {
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
        lock.restored = restore(&dir, Scope::StaleGlobal)?;
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
