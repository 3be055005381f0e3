//! The journal of machine-wide state rtrec changes: one file per process,
//! persisted before each change and rewritten after each undo. What a change
//! is and how it is undone belong to [`crate::change`] and the private `undo` module;
//! this module knows nothing of sysctls or loop devices.
//!
//! rtrec changes state that outlives it: `vm.dirty_*` sysctls, a block
//! device's I/O scheduler, tracefs switches, loop-mounted ext4 images. This
//! module owns the promise that all of it is put back — on normal exit, on
//! drop, while a panic unwinds, and, when the owner was killed (SIGKILL, OOM,
//! power cut of the process but not of the machine), by the next rtrec
//! process or by `rtrec tune --restore`.
//!
//! The protocol:
//!
//! 1. [`Journal::record`] persists a [`Change`] (what to do to put the state
//!    back) *before* the caller makes the change. The journal of a process is
//!    one file, `<dir>/owner-<pid>-<starttime>.json`, rewritten atomically
//!    (with [`rtrec_sys::write_atomic`]: temporary file, `fsync`, `rename`,
//!    `fsync` of the directory) on every record and undo. The start
//!    time (field 22 of `/proc/<pid>/stat`) tells a dead owner from a new
//!    process that got the same pid.
//! 2. The owner undoes its entries itself: [`Journal::undo`],
//!    [`Journal::undo_all`], or automatically with a [`Restorer`] or
//!    [`GlobalLock`](crate::lock::GlobalLock) guard when it is dropped — also during a panic.
//! 3. Entries of owners that died are undone by [`restore_stale`](crate::restore::restore_stale), newest
//!    first, and their file is deleted.
//!
//! Sysctls, schedulers and tracefs files are shared by every process on the
//! machine, so they are only changed — and only restored for a dead owner —
//! while holding the [`GlobalLock`](crate::lock::GlobalLock). Otherwise two rtrec processes (parallel
//! tests, say) could interleave: A saves 20 and sets 100, B saves 100, A puts
//! back 20, B puts back 100, and the machine is left at 100. [`Journal::record`]
//! refuses such a change unless this process holds the lock.
//!
//! The directory is `$RTREC_STATE_DIR` if set, else `/run/rtrec`. `/run` is
//! emptied at boot (it is a tmpfs on most distributions), and a reboot also
//! resets nearly everything the journal describes — mounts, loop devices,
//! sysctls, schedulers, tracefs: a journal that vanishes at reboot is exactly
//! right, and one that survived a reboot would write old values over the
//! boot's. Where `/run` is not a tmpfs, the boot id stored in each journal
//! catches that case: after a reboot only its files are removed.

use std::fs::{self, DirBuilder};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use serde::{Deserialize, Serialize};

use crate::change::{Change, EntryId};
use crate::error::{io_err, Error, Result};
use crate::lockfile::{held_by_process, unpoisoned as lock};
use crate::procstat::{self, Task};
use crate::undo;

/// Environment variable naming the journal directory (default
/// [`DEFAULT_STATE_DIR`]). Tests point it at a private directory.
pub const STATE_DIR_ENV: &str = "RTREC_STATE_DIR";

/// The journal directory when [`STATE_DIR_ENV`] is not set.
pub const DEFAULT_STATE_DIR: &str = "/run/rtrec";

/// Version of the journal file format, stored in every file.
pub(crate) const FORMAT_VERSION: u32 = 1;

/// One journal entry as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Entry {
    pub(crate) id: EntryId,
    pub(crate) change: Change,
    /// Which [`Journal`] handle of this process recorded it (0: a handle
    /// dropped earlier). Not stored: it means nothing to another process.
    #[serde(skip)]
    handle: u64,
}

/// The content of `owner-<pid>-<starttime>.json`.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct JournalFile {
    version: u32,
    /// `/proc/sys/kernel/random/boot_id` of the boot that wrote it: pids and
    /// start times mean nothing across a reboot, and where the directory is
    /// not a tmpfs the journal survives one.
    #[serde(default)]
    pub(crate) boot_id: String,
    pub(crate) pid: u32,
    pub(crate) starttime: u64,
    /// Oldest first; undone newest first.
    pub(crate) entries: Vec<Entry>,
}

/// The journal directory: `$RTREC_STATE_DIR`, else `/run/rtrec`.
pub fn state_dir() -> PathBuf {
    std::env::var_os(STATE_DIR_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_STATE_DIR))
}

/// Creates `dir` (mode 0700) if needed and returns its canonical path.
pub(crate) fn ensure_dir(dir: &Path) -> Result<PathBuf> {
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(io_err(format_args!("creating {}", dir.display())))?;
    Ok(existing_dir(dir)?.expect("just created"))
}

/// Checks an existing state directory (ours, writable by nobody else) and
/// returns its canonical path; `None` if it does not exist.
pub(crate) fn existing_dir(dir: &Path) -> Result<Option<PathBuf>> {
    let meta = match fs::metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_err(format_args!("inspecting {}", dir.display()))(e)),
    };
    let euid = rtrec_sys::effective_uid();
    let reason = if !meta.is_dir() {
        Some("not a directory".to_string())
    } else if meta.uid() != euid {
        Some(format!("owned by uid {}, not by us ({euid})", meta.uid()))
    } else if meta.mode() & 0o022 != 0 {
        // Not fixed by a chmod: RTREC_STATE_DIR=/tmp must not make /tmp 0700.
        Some(format!(
            "writable by others (mode {:o})",
            meta.mode() & 0o7777
        ))
    } else {
        None
    };
    if let Some(reason) = reason {
        return Err(Error::UnsafeStateDir {
            dir: dir.to_owned(),
            reason,
        });
    }
    let canonical = dir
        .canonicalize()
        .map_err(io_err(format_args!("resolving {}", dir.display())))?;
    Ok(Some(canonical))
}

/// Start time (field 22 of `/proc/<pid>/stat`, in clock ticks since boot)
/// and state letter of a process; `None` if there is no such process.
fn proc_stat(pid: u32) -> Option<(u64, char)> {
    let stat = procstat::task_stat(Task::Process(pid))?;
    Some((stat.starttime()?, stat.state()?))
}

/// Whether the process that wrote a journal still runs. A zombie counts as
/// dead: it holds no locks and will never undo anything.
pub(crate) fn owner_alive(pid: u32, starttime: u64) -> bool {
    matches!(proc_stat(pid), Some((t, state)) if t == starttime && state != 'Z' && state != 'X')
}

/// This boot's id (empty if the kernel does not say).
pub(crate) fn boot_id() -> &'static str {
    static BOOT_ID: OnceLock<String> = OnceLock::new();
    BOOT_ID.get_or_init(|| {
        fs::read_to_string("/proc/sys/kernel/random/boot_id")
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    })
}

/// This process's pid and start time.
pub(crate) fn current_owner() -> Result<(u32, u64)> {
    let pid = std::process::id();
    let (starttime, _) = proc_stat(pid).ok_or_else(|| Error::Io {
        what: format!("reading /proc/{pid}/stat"),
        source: io::Error::new(io::ErrorKind::InvalidData, "no start time"),
    })?;
    Ok((pid, starttime))
}

fn journal_file_name(pid: u32, starttime: u64) -> String {
    format!("owner-{pid}-{starttime}.json")
}

/// Parses `owner-<pid>-<starttime>.json` (or `….json.tmp`, second value
/// true).
pub(crate) fn parse_journal_file_name(name: &str) -> Option<(u32, u64, bool)> {
    let rest = name.strip_prefix("owner-")?;
    let (rest, tmp) = match rest.strip_suffix(".json.tmp") {
        Some(r) => (r, true),
        None => (rest.strip_suffix(".json")?, false),
    };
    let (pid, starttime) = rest.split_once('-')?;
    Some((pid.parse().ok()?, starttime.parse().ok()?, tmp))
}

/// Writes `file`'s entries to `path`, or deletes `path` when none are left.
pub(crate) fn persist(path: &Path, file: &JournalFile) -> Result<()> {
    if file.entries.is_empty() {
        return match fs::remove_file(path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => {
                Err(io_err(format_args!("removing {}", path.display()))(e))
            }
            _ => Ok(()),
        };
    }
    let json = serde_json::to_vec_pretty(file).map_err(|source| Error::Json {
        path: path.to_owned(),
        source,
    })?;
    rtrec_sys::write_atomic(path, &json, 0o600)
        .map_err(io_err(format_args!("writing {}", path.display())))
}

/// Reads a journal file; `None` if it does not exist.
pub(crate) fn read_journal(path: &Path) -> Result<Option<JournalFile>> {
    match fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|source| Error::Json {
                path: path.to_owned(),
                source,
            }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_err(format_args!("reading {}", path.display()))(e)),
    }
}

/// The journal of one process in one directory, shared by all its
/// [`Journal`] handles so that they never overwrite each other's entries.
#[derive(Debug)]
struct Shared {
    dir: PathBuf,
    path: PathBuf,
    file: JournalFile,
    next_id: u64,
}

impl Shared {
    fn persist(&self) -> Result<()> {
        persist(&self.path, &self.file)
    }

    fn index(&self, id: EntryId) -> Option<usize> {
        self.file.entries.iter().position(|e| e.id == id)
    }

    /// Undoes entry `id` after the newer entries with the same key (they
    /// changed the same thing again, on top of it), newest first. Stops at
    /// the first failure, which leaves that entry and the older ones in place.
    fn undo(&mut self, id: EntryId) -> Result<()> {
        let index = self.index(id).ok_or(Error::NoSuchEntry(id))?;
        let key = undo::key(&self.file.entries[index].change);
        let mut ids: Vec<EntryId> = self.file.entries[index..]
            .iter()
            .filter(|e| undo::key(&e.change) == key)
            .map(|e| e.id)
            .collect();
        ids.reverse();
        for id in ids {
            let index = self.index(id).expect("collected above");
            undo::undo(&self.file.entries[index].change)?;
            self.file.entries.remove(index);
            self.persist()?;
        }
        Ok(())
    }
}

/// Journals opened by this process, one per directory.
static JOURNALS: Mutex<Vec<Weak<Mutex<Shared>>>> = Mutex::new(Vec::new());
pub(crate) static NEXT_HANDLE: AtomicU64 = AtomicU64::new(1);

/// A handle on this process's journal: records changes before they are made
/// and undoes them.
///
/// All handles of a process in one directory share one journal file;
/// [`undo_all`](Journal::undo_all) undoes only the entries recorded through
/// this handle. Dropping a `Journal` undoes nothing — its entries stay in the
/// file until they are undone or this process dies and [`restore_stale`](crate::restore::restore_stale)
/// runs. Wrap it in a [`Restorer`] to undo on drop.
#[derive(Debug)]
pub struct Journal {
    shared: Arc<Mutex<Shared>>,
    handle: u64,
}

impl Journal {
    /// Opens this process's journal in [`state_dir`], creating the directory
    /// (mode 0700) if needed.
    ///
    /// # Errors
    /// The directory cannot be created or belongs to another user, or this
    /// process's journal file exists but cannot be read.
    pub fn open() -> Result<Journal> {
        Journal::open_in(&state_dir())
    }

    /// Opens this process's journal in `dir`. See [`open`](Journal::open).
    ///
    /// # Errors
    /// As [`open`](Journal::open).
    pub fn open_in(dir: &Path) -> Result<Journal> {
        let dir = ensure_dir(dir)?;
        let (pid, starttime) = current_owner()?;
        let mut journals = lock(&JOURNALS);
        journals.retain(|w| w.strong_count() > 0);
        let existing = journals.iter().filter_map(Weak::upgrade).find(|s| {
            let s = lock(s);
            s.dir == dir && s.file.pid == pid
        });
        let shared = match existing {
            Some(shared) => shared,
            None => {
                let path = dir.join(journal_file_name(pid, starttime));
                // Entries left by handles of this process that were dropped
                // without undoing are still ours.
                let file = read_journal(&path)?.unwrap_or_else(|| JournalFile {
                    version: FORMAT_VERSION,
                    boot_id: boot_id().to_string(),
                    pid,
                    starttime,
                    entries: Vec::new(),
                });
                let next_id = file.entries.iter().map(|e| e.id.0 + 1).max().unwrap_or(1);
                let shared = Arc::new(Mutex::new(Shared {
                    dir,
                    path,
                    file,
                    next_id,
                }));
                journals.push(Arc::downgrade(&shared));
                shared
            }
        };
        Ok(Journal {
            shared,
            handle: NEXT_HANDLE.fetch_add(1, Ordering::Relaxed),
        })
    }

    /// Persists `change` — call it *before* making the change, so that a
    /// crash right after the change still finds it in the journal.
    ///
    /// # Errors
    /// [`Error::GlobalLockNotHeld`] for a sysctl, scheduler or tracefs change
    /// while this process holds no [`GlobalLock`](crate::lock::GlobalLock) of the journal's directory;
    /// an I/O error if the journal cannot be written (then nothing was
    /// recorded, and the caller must not make the change).
    pub fn record(&self, change: Change) -> Result<EntryId> {
        let mut shared = lock(&self.shared);
        if change.is_global() && !held_by_process(&shared.dir) {
            return Err(Error::GlobalLockNotHeld {
                change,
                dir: shared.dir.clone(),
            });
        }
        let id = EntryId(shared.next_id);
        shared.next_id += 1;
        shared.file.entries.push(Entry {
            id,
            change,
            handle: self.handle,
        });
        if let Err(e) = shared.persist() {
            shared.file.entries.pop();
            return Err(e);
        }
        Ok(id)
    }

    /// Puts back what entry `id` found and removes the entry. Newer entries
    /// that changed the same thing again are undone first (from any handle of
    /// this process), so the value ends as `id` found it.
    ///
    /// # Errors
    /// [`Error::NoSuchEntry`] if `id` is not in the journal; otherwise the
    /// undo's error, and the entries not yet undone stay in the journal.
    pub fn undo(&self, id: EntryId) -> Result<()> {
        lock(&self.shared).undo(id)
    }

    /// Undoes the entries `ids`, newest (last) first, emptying it; keeps
    /// going past failures and returns the first.
    ///
    /// # Errors
    /// The first undo that failed; its entry stays in the journal.
    pub fn undo_each(&self, ids: &mut Vec<EntryId>) -> Result<()> {
        let mut first = Ok(());
        while let Some(id) = ids.pop() {
            if let Err(e) = self.undo(id) {
                if first.is_ok() {
                    first = Err(e);
                }
            }
        }
        first
    }

    /// Removes entry `id` without undoing it: the change it announced was
    /// never made (the step failed, or the thing was someone else's).
    pub(crate) fn forget(&self, id: EntryId) -> Result<()> {
        let mut shared = lock(&self.shared);
        if let Some(index) = shared.index(id) {
            shared.file.entries.remove(index);
            shared.persist()?;
        }
        Ok(())
    }

    /// Undoes every entry recorded through this handle, newest first. Keeps
    /// going past failures.
    ///
    /// # Errors
    /// [`Error::Undo`] listing what could not be put back; those entries
    /// (and older ones about the same thing) stay in the journal.
    pub fn undo_all(&self) -> Result<()> {
        let mut shared = lock(&self.shared);
        let mine: Vec<EntryId> = shared
            .file
            .entries
            .iter()
            .rev()
            .filter(|e| e.handle == self.handle)
            .map(|e| e.id)
            .collect();
        let mut failed = Vec::new();
        for id in mine {
            // An earlier failure may have left it; undo() of a newer entry
            // may already have removed it.
            let Some(index) = shared.index(id) else {
                continue;
            };
            let change = shared.file.entries[index].change.clone();
            if let Err(e) = shared.undo(id) {
                failed.push(format!("{change}: {e}"));
            }
        }
        if failed.is_empty() {
            Ok(())
        } else {
            Err(Error::Undo(failed))
        }
    }

    /// The changes recorded through this handle and not yet undone, oldest
    /// first.
    pub fn pending(&self) -> Vec<(EntryId, Change)> {
        lock(&self.shared)
            .file
            .entries
            .iter()
            .filter(|e| e.handle == self.handle)
            .map(|e| (e.id, e.change.clone()))
            .collect()
    }

    /// The journal file of this process (it exists only while it holds
    /// entries).
    pub fn path(&self) -> PathBuf {
        lock(&self.shared).path.clone()
    }
}

/// A [`Journal`] that undoes everything recorded through it when dropped —
/// at the end of a scope, on an early `return`, and while a panic unwinds
/// (not with `panic = "abort"`, nor on SIGKILL: then [`restore_stale`](crate::restore::restore_stale) in the
/// next rtrec process does it).
///
/// Errors while undoing on drop are printed on stderr; call
/// [`finish`](Restorer::finish) to get them instead.
#[derive(Debug)]
pub struct Restorer {
    journal: Journal,
}

impl Restorer {
    /// A restorer on this process's journal in [`state_dir`].
    ///
    /// # Errors
    /// As [`Journal::open`].
    pub fn new() -> Result<Restorer> {
        Ok(Restorer::from(Journal::open()?))
    }

    /// Undoes everything now and reports failures.
    ///
    /// # Errors
    /// As [`Journal::undo_all`].
    pub fn finish(self) -> Result<()> {
        self.journal.undo_all()
        // Drop then finds nothing left to undo.
    }
}

impl From<Journal> for Restorer {
    fn from(journal: Journal) -> Restorer {
        Restorer { journal }
    }
}

impl std::ops::Deref for Restorer {
    type Target = Journal;
    fn deref(&self) -> &Journal {
        &self.journal
    }
}

impl Drop for Restorer {
    fn drop(&mut self) {
        if let Err(e) = self.journal.undo_all() {
            eprintln!("rtrec: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn journal_file_names_round_trip() {
        assert_eq!(
            parse_journal_file_name(&journal_file_name(12, 345)),
            Some((12, 345, false))
        );
        assert_eq!(
            parse_journal_file_name("owner-12-345.json.tmp"),
            Some((12, 345, true))
        );
        assert_eq!(parse_journal_file_name("global.lock"), None);
        assert_eq!(parse_journal_file_name("owner-x-1.json"), None);
    }

    #[test]
    fn this_process_is_alive_and_a_wrong_start_time_is_not() {
        let (pid, starttime) = current_owner().unwrap();
        assert!(owner_alive(pid, starttime));
        assert!(!owner_alive(pid, starttime + 1));
    }
}
