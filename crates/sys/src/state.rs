//! The journal of machine-wide state rtrec changes, and how it is put back.
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
//!    (temporary file, `fsync`, `rename`) on every record and undo. The start
//!    time (field 22 of `/proc/<pid>/stat`) tells a dead owner from a new
//!    process that got the same pid.
//! 2. The owner undoes its entries itself: [`Journal::undo`],
//!    [`Journal::undo_all`], or automatically with a [`Restorer`] or
//!    [`GlobalLock`] guard when it is dropped — also during a panic.
//! 3. Entries of owners that died are undone by [`restore_stale`], newest
//!    first, and their file is deleted.
//!
//! Sysctls, schedulers and tracefs files are shared by every process on the
//! machine, so they are only changed — and only restored for a dead owner —
//! while holding the [`GlobalLock`]. Otherwise two rtrec processes (parallel
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

use std::collections::HashSet;
use std::fmt;
use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, Weak};
use std::thread::{self, ThreadId};

use serde::{Deserialize, Serialize};

/// Environment variable naming the journal directory (default
/// [`DEFAULT_STATE_DIR`]). Tests point it at a private directory.
pub const STATE_DIR_ENV: &str = "RTREC_STATE_DIR";

/// The journal directory when [`STATE_DIR_ENV`] is not set.
pub const DEFAULT_STATE_DIR: &str = "/run/rtrec";

/// Version of the journal file format, stored in every file.
const FORMAT_VERSION: u32 = 1;

/// Errors of the journal, and of the modules that change state through it.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file-system or kernel-interface call failed; `what` says on what.
    #[error("{what}: {source}")]
    Io {
        /// What was being done ("writing /proc/sys/vm/dirty_ratio").
        what: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// A journal file could not be serialized or parsed.
    #[error("journal {path}: {source}", path = path.display())]
    Json {
        /// The journal file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: serde_json::Error,
    },
    /// The state directory belongs to another user or others may write to
    /// it, so its journals cannot be trusted (they name files to delete and
    /// values to write, as root).
    #[error("refusing to use state directory {dir}: {reason}", dir = dir.display())]
    UnsafeStateDir {
        /// The directory.
        dir: PathBuf,
        /// Why ("owned by uid 1000", "writable by others (mode 1777)").
        reason: String,
    },
    /// A change to machine-wide state was recorded without holding the
    /// [`GlobalLock`] of the journal's directory.
    #[error("changing {change} needs the global lock: hold a GlobalLock (of {dir}) while changing it", dir = dir.display())]
    GlobalLockNotHeld {
        /// The change that was refused.
        change: Change,
        /// The journal directory whose lock is needed.
        dir: PathBuf,
    },
    /// This thread already holds the [`GlobalLock`]; taking it again would
    /// wait forever.
    #[error("this thread already holds the global lock of {dir}; acquiring it again would deadlock", dir = .0.display())]
    WouldDeadlock(PathBuf),
    /// No entry with this id is in the journal (already undone?).
    #[error("journal entry {0} not found (already undone?)")]
    NoSuchEntry(EntryId),
    /// A name that would leave its kernel interface (`/`, `..`, empty).
    #[error("invalid {kind} name {name:?}")]
    InvalidName {
        /// What kind of name ("sysctl", "block device").
        kind: &'static str,
        /// The name given.
        name: String,
    },
    /// An external command (`mkfs.ext4`, `mount`, `losetup`) failed.
    #[error("`{command}` failed ({status}): {stderr}")]
    Command {
        /// The command line.
        command: String,
        /// Its exit status.
        status: std::process::ExitStatus,
        /// What it printed on stderr.
        stderr: String,
    },
    /// Some changes could not be put back; one line per change. Their
    /// entries stay in the journal, so a later restore retries them.
    #[error("could not put back {} change(s): {}", .0.len(), .0.join("; "))]
    Undo(Vec<String>),
}

/// `Result` of this module (and of [`crate::sysctl`] and [`crate::loopfs`]).
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Returns a closure wrapping an `io::Error` with what was being done.
pub(crate) fn io_err(what: impl fmt::Display) -> impl FnOnce(io::Error) -> Error {
    move |source| Error::Io {
        what: what.to_string(),
        source,
    }
}

/// One change to machine state, described by how to put it back.
///
/// Its `Display` says what undoing it does ("vm.dirty_ratio = 20",
/// "unmount /tmp/x/mnt"); [`RestoreReport`] lines are built from it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Change {
    /// A sysctl (`name` like `vm.dirty_ratio`, file `/proc/sys/vm/dirty_ratio`)
    /// to set back to `old`.
    Sysctl {
        /// Dotted name.
        name: String,
        /// Value to write back.
        old: String,
    },
    /// The I/O scheduler of a block device (`device` like `vda`) to set back
    /// to `old` (the bracketed name in `/sys/block/DEV/queue/scheduler`).
    Scheduler {
        /// Block device name, without `/dev/`.
        device: String,
        /// Scheduler to write back.
        old: String,
    },
    /// A file system mounted on `target`, to unmount.
    Mount {
        /// The mount point.
        target: PathBuf,
    },
    /// A loop device to detach, if it is still backed by `image` (a loop
    /// device freed by its owner may since serve someone else's image).
    LoopDevice {
        /// `/dev/loopN`.
        device: PathBuf,
        /// Its backing file.
        image: PathBuf,
    },
    /// A file rtrec created, to delete.
    RemoveFile {
        /// The file.
        path: PathBuf,
    },
    /// An (empty) directory rtrec created, to delete. Never removed
    /// recursively: a failed unmount must not turn into deleting the
    /// contents of the mounted file system.
    RemoveDir {
        /// The directory.
        path: PathBuf,
    },
    /// A tracefs file (`tracing_on`, `events/*/enable`, `set_event`, …) whose
    /// `old` content is written back, as `echo OLD > FILE` would.
    TraceFile {
        /// The file.
        path: PathBuf,
        /// Content to write back.
        old: String,
    },
}

impl Change {
    /// Whether this change is to state shared by the whole machine (sysctl,
    /// scheduler, tracefs), which is changed and restored only under the
    /// [`GlobalLock`].
    pub fn is_global(&self) -> bool {
        matches!(
            self,
            Change::Sysctl { .. } | Change::Scheduler { .. } | Change::TraceFile { .. }
        )
    }

    /// What this change is to: two entries with the same key must be undone
    /// newest first, and an older one must wait while a newer one cannot be
    /// undone. `vm.dirty_ratio` and `vm.dirty_bytes` are one thing (writing
    /// one zeroes the other), and so are the two background knobs.
    fn key(&self) -> String {
        match self {
            Change::Sysctl { name, .. } => format!("sysctl {}", crate::sysctl::pair_key(name)),
            Change::Scheduler { device, .. } => format!("scheduler {device}"),
            Change::LoopDevice { device, .. } => format!("loop {}", device.display()),
            Change::Mount { target: p }
            | Change::RemoveFile { path: p }
            | Change::RemoveDir { path: p }
            | Change::TraceFile { path: p, .. } => format!("path {}", p.display()),
        }
    }

    /// Puts the state back. Idempotent, and tolerant of state that is
    /// already back (nothing mounted, device detached, file gone).
    fn undo(&self) -> Result<()> {
        match self {
            Change::Sysctl { name, old } => crate::sysctl::restore_sysctl(name, old),
            Change::Scheduler { device, old } => crate::sysctl::restore_scheduler(device, old),
            Change::TraceFile { path, old } => crate::sysctl::restore_file(path, old),
            Change::Mount { target } => crate::loopfs::unmount(target),
            Change::LoopDevice { device, image } => crate::loopfs::detach(device, image),
            Change::RemoveFile { path } => match fs::remove_file(path) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => {
                    Err(io_err(format_args!("removing {}", path.display()))(e))
                }
                _ => Ok(()),
            },
            Change::RemoveDir { path } => match fs::remove_dir(path) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => Err(io_err(format_args!(
                    "removing directory {}",
                    path.display()
                ))(e)),
                _ => Ok(()),
            },
        }
    }
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Change::Sysctl { name, old } => write!(f, "{name} = {old}"),
            Change::Scheduler { device, old } => write!(f, "I/O scheduler of {device} = {old}"),
            Change::TraceFile { path, old } => write!(f, "{} = {old:?}", path.display()),
            Change::Mount { target } => write!(f, "unmount {}", target.display()),
            Change::LoopDevice { device, image } => {
                write!(f, "detach {} ({})", device.display(), image.display())
            }
            Change::RemoveFile { path } => write!(f, "remove file {}", path.display()),
            Change::RemoveDir { path } => write!(f, "remove directory {}", path.display()),
        }
    }
}

/// Identifies one entry of a process's journal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct EntryId(pub u64);

impl fmt::Display for EntryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// One journal entry as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Entry {
    id: EntryId,
    change: Change,
    /// Which [`Journal`] handle of this process recorded it (0: a handle
    /// dropped earlier). Not stored: it means nothing to another process.
    #[serde(skip)]
    handle: u64,
}

/// The content of `owner-<pid>-<starttime>.json`.
#[derive(Debug, Serialize, Deserialize)]
struct JournalFile {
    version: u32,
    /// `/proc/sys/kernel/random/boot_id` of the boot that wrote it: pids and
    /// start times mean nothing across a reboot, and where the directory is
    /// not a tmpfs the journal survives one.
    #[serde(default)]
    boot_id: String,
    pid: u32,
    starttime: u64,
    /// Oldest first; undone newest first.
    entries: Vec<Entry>,
}

/// What a restore put back, what it left for later, and what failed: one
/// human-readable line each, for the CLI to print.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RestoreReport {
    /// Changes put back ("vm.dirty_ratio = 20 (left by pid 1234)").
    pub restored: Vec<String>,
    /// Changes left in their journal for a later restore, with the reason
    /// (the global lock is held by a live rtrec, or a newer change to the same
    /// thing could not be undone).
    pub waiting: Vec<String>,
    /// Changes that could not be put back, with the error; their entries stay
    /// in the journal.
    pub failed: Vec<String>,
}

impl RestoreReport {
    /// True when there was nothing to restore.
    pub fn is_empty(&self) -> bool {
        self.restored.is_empty() && self.waiting.is_empty() && self.failed.is_empty()
    }

    fn merge(&mut self, other: RestoreReport) {
        self.restored.extend(other.restored);
        self.waiting.extend(other.waiting);
        self.failed.extend(other.failed);
    }
}

impl fmt::Display for RestoreReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (label, lines) in [
            ("restored", &self.restored),
            ("waiting", &self.waiting),
            ("failed", &self.failed),
        ] {
            for line in lines {
                writeln!(f, "{label}: {line}")?;
            }
        }
        Ok(())
    }
}

/// The journal directory: `$RTREC_STATE_DIR`, else `/run/rtrec`.
pub fn state_dir() -> PathBuf {
    std::env::var_os(STATE_DIR_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_STATE_DIR))
}

/// Creates `dir` (mode 0700) if needed and returns its canonical path.
fn ensure_dir(dir: &Path) -> Result<PathBuf> {
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(io_err(format_args!("creating {}", dir.display())))?;
    Ok(existing_dir(dir)?.expect("just created"))
}

/// Checks an existing state directory (ours, writable by nobody else) and
/// returns its canonical path; `None` if it does not exist.
fn existing_dir(dir: &Path) -> Result<Option<PathBuf>> {
    let meta = match fs::metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_err(format_args!("inspecting {}", dir.display()))(e)),
    };
    // SAFETY: geteuid has no preconditions and cannot fail.
    let euid = unsafe { libc::geteuid() };
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
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Field 2 is the command in parentheses and may itself hold spaces and
    // parentheses; the fields after the last ')' start with field 3.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_ascii_whitespace();
    let state = fields.next()?.chars().next()?;
    let starttime = fields.nth(22 - 4)?.parse().ok()?;
    Some((starttime, state))
}

/// Whether the process that wrote a journal still runs. A zombie counts as
/// dead: it holds no locks and will never undo anything.
fn owner_alive(pid: u32, starttime: u64) -> bool {
    matches!(proc_stat(pid), Some((t, state)) if t == starttime && state != 'Z' && state != 'X')
}

/// This boot's id (empty if the kernel does not say).
fn boot_id() -> &'static str {
    static BOOT_ID: OnceLock<String> = OnceLock::new();
    BOOT_ID.get_or_init(|| {
        fs::read_to_string("/proc/sys/kernel/random/boot_id")
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    })
}

/// This process's pid and start time.
fn current_owner() -> Result<(u32, u64)> {
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
fn parse_journal_file_name(name: &str) -> Option<(u32, u64, bool)> {
    let rest = name.strip_prefix("owner-")?;
    let (rest, tmp) = match rest.strip_suffix(".json.tmp") {
        Some(r) => (r, true),
        None => (rest.strip_suffix(".json")?, false),
    };
    let (pid, starttime) = rest.split_once('-')?;
    Some((pid.parse().ok()?, starttime.parse().ok()?, tmp))
}

/// Writes `path` atomically: temporary file, `fsync`, `rename`, `fsync` of
/// the directory. A crash leaves either the old or the new content.
fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut tmp_name = path.as_os_str().to_owned();
    tmp_name.push(".tmp");
    let tmp = PathBuf::from(tmp_name);
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    drop(file);
    fs::rename(&tmp, path)?;
    if let Some(dir) = path.parent() {
        File::open(dir)?.sync_all()?;
    }
    Ok(())
}

/// Writes `file`'s entries to `path`, or deletes `path` when none are left.
fn persist(path: &Path, file: &JournalFile) -> Result<()> {
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
    write_atomic(path, &json).map_err(io_err(format_args!("writing {}", path.display())))
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while the lock was held must not stop the undo that runs
    // while that panic unwinds.
    m.lock().unwrap_or_else(PoisonError::into_inner)
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
        let key = self.file.entries[index].change.key();
        let mut ids: Vec<EntryId> = self.file.entries[index..]
            .iter()
            .filter(|e| e.change.key() == key)
            .map(|e| e.id)
            .collect();
        ids.reverse();
        for id in ids {
            let index = self.index(id).expect("collected above");
            self.file.entries[index].change.undo()?;
            self.file.entries.remove(index);
            self.persist()?;
        }
        Ok(())
    }
}

/// Journals opened by this process, one per directory.
static JOURNALS: Mutex<Vec<Weak<Mutex<Shared>>>> = Mutex::new(Vec::new());
static NEXT_HANDLE: AtomicU64 = AtomicU64::new(1);

/// A handle on this process's journal: records changes before they are made
/// and undoes them.
///
/// All handles of a process in one directory share one journal file;
/// [`undo_all`](Journal::undo_all) undoes only the entries recorded through
/// this handle. Dropping a `Journal` undoes nothing — its entries stay in the
/// file until they are undone or this process dies and [`restore_stale`]
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
    /// while this process holds no [`GlobalLock`] of the journal's directory;
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
/// (not with `panic = "abort"`, nor on SIGKILL: then [`restore_stale`] in the
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

/// GlobalLocks held by this process: directory, holding thread, token.
static HELD: Mutex<Vec<(PathBuf, ThreadId, u64)>> = Mutex::new(Vec::new());

fn held_by_process(dir: &Path) -> bool {
    lock(&HELD).iter().any(|(d, _, _)| d == dir)
}

fn held_by_thread(dir: &Path) -> bool {
    let me = thread::current().id();
    lock(&HELD).iter().any(|(d, t, _)| d == dir && *t == me)
}

/// Opens `<dir>/<name>` and takes `flock(LOCK_EX)` on it; `None` when
/// `blocking` is false and another open file holds it.
fn lock_file(dir: &Path, name: &str, blocking: bool) -> Result<Option<File>> {
    let path = dir.join(name);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(&path)
        .map_err(io_err(format_args!("opening {}", path.display())))?;
    let op = if blocking {
        libc::LOCK_EX
    } else {
        libc::LOCK_EX | libc::LOCK_NB
    };
    loop {
        // SAFETY: flock on a valid, open descriptor; no memory is passed.
        if unsafe { libc::flock(file.as_raw_fd(), op) } == 0 {
            return Ok(Some(file));
        }
        let e = io::Error::last_os_error();
        match e.kind() {
            io::ErrorKind::Interrupted => continue,
            io::ErrorKind::WouldBlock if !blocking => return Ok(None),
            _ => return Err(io_err(format_args!("locking {}", path.display()))(e)),
        }
    }
}

/// Who holds the global lock, as its holder wrote it ("pid 1234"), for
/// messages.
fn lock_holder(dir: &Path) -> String {
    let mut s = String::new();
    let _ = File::open(dir.join(GLOBAL_LOCK)).and_then(|mut f| f.read_to_string(&mut s));
    match s.trim() {
        "" => "another process".to_string(),
        pid => format!("pid {pid}"),
    }
}

const GLOBAL_LOCK: &str = "global.lock";
/// Serializes restorers, so that two never rewrite the same dead owner's
/// journal at once. Held only while restoring; never while waiting for
/// [`GLOBAL_LOCK`], so the two cannot deadlock.
const RESTORE_LOCK: &str = "restore.lock";

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
/// # fn main() -> rtrec_sys::state::Result<()> {
/// let lock = rtrec_sys::state::GlobalLock::acquire()?;
/// rtrec_sys::sysctl::apply_flusher_off(lock.journal())?;
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

/// Which journals a restore undoes, and which of their entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// Dead owners, global kinds only; the caller holds the global lock.
    StaleGlobal,
    /// Dead owners, every kind; global kinds only if the lock can be had.
    Stale,
    /// Every owner but this process, every kind, lock or not.
    Forced,
}

/// Undoes the changes left by rtrec processes that died, newest first per
/// process, in [`state_dir`], and deletes their journals.
///
/// Mounts, loop devices and files are undone at once. Sysctls, schedulers
/// and tracefs files only if the [`GlobalLock`] is free (it is taken for the
/// time of the restore) or held by this process; otherwise they are listed
/// in [`RestoreReport::waiting`] and stay in the journal, and whoever next
/// acquires the lock puts them back.
///
/// # Errors
/// The directory belongs to another user, or a lock file cannot be opened.
/// Failures of single undos are reported in [`RestoreReport::failed`].
pub fn restore_stale() -> Result<RestoreReport> {
    restore_stale_in(&state_dir())
}

/// [`restore_stale`] in `dir`.
///
/// # Errors
/// As [`restore_stale`].
pub fn restore_stale_in(dir: &Path) -> Result<RestoreReport> {
    match existing_dir(dir)? {
        Some(dir) => restore(&dir, Scope::Stale),
        None => Ok(RestoreReport::default()),
    }
}

/// Like [`restore_stale`], but also undoes the changes of rtrec processes
/// that are still running (`rtrec tune --restore --force`), without waiting
/// for the global lock.
///
/// Dangerous: a running recorder or benchmark loses its settings and its
/// mounts under its feet (a busy mount is detached lazily), and when it ends
/// it may write values back over values set since. Meant for a hung or
/// stopped rtrec that cannot be killed cleanly.
///
/// # Errors
/// As [`restore_stale`].
pub fn restore_all_forced() -> Result<RestoreReport> {
    restore_all_forced_in(&state_dir())
}

/// [`restore_all_forced`] in `dir`.
///
/// # Errors
/// As [`restore_stale`].
pub fn restore_all_forced_in(dir: &Path) -> Result<RestoreReport> {
    match existing_dir(dir)? {
        Some(dir) => restore(&dir, Scope::Forced),
        None => Ok(RestoreReport::default()),
    }
}

fn restore(dir: &Path, scope: Scope) -> Result<RestoreReport> {
    // For Stale, take the global lock only for this restore, if it is free.
    let mut _global = None;
    let global_allowed = match scope {
        Scope::StaleGlobal | Scope::Forced => true,
        Scope::Stale if held_by_process(dir) => true,
        Scope::Stale => {
            _global = lock_file(dir, GLOBAL_LOCK, false)?;
            _global.is_some()
        }
    };
    let _restoring = lock_file(dir, RESTORE_LOCK, true)?;
    let own = current_owner()?;
    let boot = boot_id();
    let mut report = RestoreReport::default();
    let entries = fs::read_dir(dir).map_err(io_err(format_args!("listing {}", dir.display())))?;
    let mut files: Vec<_> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let (pid, starttime, tmp) = parse_journal_file_name(&name)?;
            Some((e.path(), pid, starttime, tmp))
        })
        .collect();
    // Newest owners first, as within one owner newest changes first.
    files.sort_by_key(|&(_, _, starttime, _)| std::cmp::Reverse(starttime));
    for (path, pid, starttime, tmp) in files {
        if tmp {
            // A write the owner did not finish; its previous journal is
            // still in place.
            if !owner_alive(pid, starttime) {
                let _ = fs::remove_file(&path);
            }
            continue;
        }
        // This process's own journal is undone through its handles.
        if (pid, starttime) == own {
            continue;
        }
        let file = match read_journal(&path) {
            Ok(Some(file)) => file,
            // Gone since the directory was listed: someone else restored it.
            Ok(None) => continue,
            Err(e) => {
                report.failed.push(format!("{e}; left in place"));
                continue;
            }
        };
        let same_boot = file.boot_id.is_empty() || file.boot_id == boot;
        if same_boot && owner_alive(pid, starttime) && scope != Scope::Forced {
            continue;
        }
        report.merge(restore_file(
            &path,
            file,
            !same_boot,
            scope,
            global_allowed,
            dir,
        ));
    }
    Ok(report)
}

/// Reads a journal file; `None` if it does not exist.
fn read_journal(path: &Path) -> Result<Option<JournalFile>> {
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

/// Undoes one dead (or, forced, live) owner's journal, newest first, and
/// rewrites its file with what is left, or deletes it. A journal from an
/// earlier boot (`rebooted`; when the directory is not a tmpfs) only has
/// files left to remove: the reboot reset everything else.
fn restore_file(
    path: &Path,
    mut file: JournalFile,
    rebooted: bool,
    scope: Scope,
    global_allowed: bool,
    dir: &Path,
) -> RestoreReport {
    let mut report = RestoreReport::default();
    let pid = file.pid;
    let count = file.entries.len();
    let mut blocked = HashSet::new();
    let mut kept = Vec::new();
    for entry in std::mem::take(&mut file.entries).into_iter().rev() {
        let change = &entry.change;
        let key = change.key();
        let file_kind = matches!(change, Change::RemoveFile { .. } | Change::RemoveDir { .. });
        if scope == Scope::StaleGlobal && !change.is_global() {
            // Not this restore's business; restore_stale does it.
        } else if rebooted && !file_kind {
            report.restored.push(format!(
                "{change} (left by pid {pid} before the last reboot, which reset it)"
            ));
            continue;
        } else if blocked.contains(&key) {
            report.waiting.push(format!(
                "{change} (left by pid {pid}): waits until a newer change to it is put back"
            ));
        } else if change.is_global() && !global_allowed {
            report.waiting.push(format!(
                "{change} (left by pid {pid}): waits for the global lock, held by {}",
                lock_holder(dir)
            ));
            blocked.insert(key);
        } else {
            match change.undo() {
                Ok(()) => {
                    report
                        .restored
                        .push(format!("{change} (left by pid {pid})"));
                    continue;
                }
                Err(e) => {
                    report
                        .failed
                        .push(format!("{change} (left by pid {pid}): {e}"));
                    blocked.insert(key);
                }
            }
        }
        kept.push(entry);
    }
    if kept.len() != count {
        kept.reverse();
        file.entries = kept;
        if let Err(e) = persist(path, &file) {
            report.failed.push(e.to_string());
        }
    }
    report
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

    #[test]
    fn dirty_ratio_and_dirty_bytes_are_one_thing_to_undo() {
        let change = |name: &str| Change::Sysctl {
            name: name.into(),
            old: "0".into(),
        };
        assert_eq!(
            change("vm.dirty_ratio").key(),
            change("vm.dirty_bytes").key()
        );
        assert_ne!(
            change("vm.dirty_ratio").key(),
            change("vm.dirty_background_bytes").key()
        );
    }

    #[test]
    fn changes_are_stored_tagged_by_kind() {
        let json = serde_json::to_string(&Change::Sysctl {
            name: "vm.dirty_ratio".into(),
            old: "20".into(),
        })
        .unwrap();
        assert_eq!(
            json,
            r#"{"kind":"sysctl","name":"vm.dirty_ratio","old":"20"}"#
        );
    }
}
