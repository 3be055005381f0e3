//! The lock files of a state directory — `flock`ed files the kernel releases
//! when their holder dies, however it dies — and which global locks this
//! process holds. The base that [`crate::journal`], [`crate::restore`] and
//! [`crate::lock`] build on.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::thread::{self, ThreadId};

use crate::error::{io_err, Result};

/// Locks a mutex, even one poisoned by a panic elsewhere.
pub(crate) fn unpoisoned<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while the lock was held must not stop the undo that runs
    // while that panic unwinds.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// GlobalLocks held by this process: directory, holding thread, token.
pub(crate) static HELD: Mutex<Vec<(PathBuf, ThreadId, u64)>> = Mutex::new(Vec::new());

pub(crate) fn held_by_process(dir: &Path) -> bool {
    unpoisoned(&HELD).iter().any(|(d, _, _)| d == dir)
}

pub(crate) fn held_by_thread(dir: &Path) -> bool {
    let me = thread::current().id();
    unpoisoned(&HELD)
        .iter()
        .any(|(d, t, _)| d == dir && *t == me)
}

/// Opens `<dir>/<name>` and takes `flock(LOCK_EX)` on it; `None` when
/// `blocking` is false and another open file holds it.
pub(crate) fn lock_file(dir: &Path, name: &str, blocking: bool) -> Result<Option<File>> {
    let path = dir.join(name);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(&path)
        .map_err(io_err(format_args!("opening {}", path.display())))?;
    match rtrec_sys::lock_exclusive(&file, blocking) {
        Ok(true) => Ok(Some(file)),
        Ok(false) => Ok(None),
        Err(e) => Err(io_err(format_args!("locking {}", path.display()))(e)),
    }
}

/// Who holds the global lock, for messages: the pid its holder wrote in it
/// and that process's command line ("pid 1234 (rtrec bench --paper)").
pub(crate) fn lock_holder(dir: &Path) -> String {
    let mut s = String::new();
    let _ = File::open(dir.join(GLOBAL_LOCK)).and_then(|mut f| f.read_to_string(&mut s));
    let pid = s.trim();
    if pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
        return "another process".to_string();
    }
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let words: Vec<String> = cmdline
        .split(|&b| b == 0)
        .filter(|w| !w.is_empty())
        .map(|w| String::from_utf8_lossy(w).into_owned())
        .collect();
    if words.is_empty() {
        format!("pid {pid}")
    } else {
        format!("pid {pid} ({})", words.join(" "))
    }
}

pub(crate) const GLOBAL_LOCK: &str = "global.lock";
/// Serializes restorers, so that two never rewrite the same dead owner's
/// journal at once. Held only while restoring; never while waiting for
/// [`GLOBAL_LOCK`], so the two cannot deadlock.
pub(crate) const RESTORE_LOCK: &str = "restore.lock";
