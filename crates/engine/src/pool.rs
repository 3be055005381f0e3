//! The file pool: files prepared while idle (allocated and zero-filled, or
//! recycled from finished recordings) so that starting a recording allocates
//! nothing and finishing one truncates nothing — our answer to S1's open
//! problem (9–121 ms `write()` maxima when other files are allocated or
//! truncated during a recording).
//!
//! Layout: the pool lives in the recording directory, in the hidden
//! subdirectory `.pool/`: `pool.json` (file size and target count) and one
//! `slot-<id>.rtp` per ready file. A slot is a full-size, written-once file
//! whose header has [`FLAG_SLOT`]. Taking a slot renames it to the
//! recording's name (a metadata change, no allocation) and writes a new
//! header with the next generation; the recording's valid length goes into
//! the header at the end instead of a truncate. Recycling gives a finished
//! recording a new generation and renames it back into `.pool/`.
//!
//! Crash recovery: a slot's header is rewritten only after the slot was
//! renamed out of `.pool/` (to a hidden name; the recording's name comes
//! once the header is synced), but after a power cut the header write may
//! be on storage while the rename is not: a `slot-*.rtp` whose header shows
//! a recording (no [`FLAG_SLOT`]) holds an unfinished recording. It is never
//! taken as free; [`Pool::recover`] (run when a recording starts, and by
//! `rtrec recover`) moves it back into the recording directory as
//! `recovered-STAMP-ID-NNNN.rtr`, and `rtrec verify` mentions it. A crash
//! between a take's (or a preparation's) two renames leaves a hidden
//! `.NAME.tmp` in the recording directory: `rtrec recover` moves it into
//! place the same way when it holds a recording's header and removes it
//! otherwise ([`recover_leftovers`](crate::recovery::recover_leftovers)).
//! These repairs are `recovery/`'s (its `slots` part, an `impl Pool` of
//! its own); this module keeps the slots' life: prepared, taken,
//! recycled, trimmed.
//!
//! Concurrency: any number of recorders, in one process or many, share a
//! directory and its pool. Every change of the pool's names (taking a
//! slot, putting one back, recovering, removing, rewriting `pool.json`)
//! happens under an exclusive `flock` on `.pool/lock`
//! ([`Pool::lock`]), held only for those few system calls: never while a
//! file is zero-filled and never by a producer. Preparing a slot needs no
//! lock (its names are unique: a counter, the pid and the clock, created
//! with `O_EXCL`). `pool.json` is replaced as PostgreSQL's
//! `durable_rename()` does: a temporary file of a unique name, written and
//! fsynced, renamed over it, then the directory fsynced — a reader without
//! the lock sees the old description or the new one, never a part.
//!
//! Generations only grow per file (slot: +1, taken: +1), so frames of any
//! earlier life never carry the current generation and a reader stops at
//! them instead of reading them as data.
//!
//! Sizes and disk use (design choices):
//! - A pool keeps files of one size, and `pool.json` says where that size
//!   came from ([`SizeFrom`]: `--file-size`, `pool prepare`, the
//!   open-ended default, a small card's default); a description written by
//!   an older rtrec has none and counts as set by no one. Who may set it
//!   is [`crate::sizing`]'s rule: an explicit size or an open-ended
//!   recording's default, never a recording of known length, so a short
//!   test cannot leave tiny files to every later recording.
//! - A recording that sets another size ([`Pool::open_resized`],
//!   [`Pool::resize_from`]) gets a pool of its size: the idle files of the
//!   old size are removed before it starts (idle time, nothing is recording
//!   yet), and the writer says so in one line. A slot of another size that
//!   appears later (a preparation that was in flight) is never taken.
//! - Nothing is zero-filled for nothing: a recording that finds no ready
//!   file gets its first file with `fallocate` (counted as a fallback),
//!   and the refill after a recording replaces the bytes it wrote
//!   ([`Pool::refill_bytes`]): they are owed to the pool (`owed_bytes` in
//!   `pool.json`, summed over recordings) and a file is prepared for every
//!   whole file's worth, up to the target. A 3-byte recording prepares
//!   nothing; a 100 MiB recording in a pool of 64 MiB files prepares one
//!   file and owes 36 MiB to the next.
//! - [`Pool::trim`] gives back ready files beyond a count, [`Pool::remove`]
//!   the whole pool; [`PoolStatus`] lists every file with its bytes on disk.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use serde::{Deserialize, Serialize};

use rtrec_sys as sys;

use crate::config::{Alloc, Framing};
use crate::error::Error;
use crate::file::{self, OpenFile};
use crate::format::{FileHeader, FLAG_POOLED, FLAG_SLOT, HEADER_LEN};
use crate::sizing::SizeFrom;

/// Name of the pool's directory inside a recording directory.
pub const POOL_DIR: &str = ".pool";
/// Extension of a ready slot.
pub const SLOT_EXT: &str = "rtp";
const META: &str = "pool.json";
/// The lock file of the pool's name changes (see the module docs).
pub const LOCK_FILE: &str = "lock";

/// The lock file of the recordings writing in the directory: each holds a
/// shared `flock` on it while it writes; one that ends gives back its
/// files' unused tails only when it can take it exclusively (no other
/// recording writing). Every pooled recorder holds it
/// ([`WritersLock`]); [`Pool::remove`] removes it with the pool.
pub const WRITERS_FILE: &str = "writers";

/// The lock file of topping the pool up: [`Pool::refill`] and
/// [`Pool::prepare`] hold an exclusive `flock` on it while they count the
/// ready files and prepare the missing ones, so recorders that end at once
/// prepare what is missing once, not once each; so do the refiller thread
/// and a loop's [`Pool::recycle_below_target`], so the pool never holds
/// more spare files than its target. It is a lock of its own,
/// not [`LOCK_FILE`], because it is held across zero-filling, which the
/// name lock never is; a recorder waiting for it is past its last record.
pub const REFILL_FILE: &str = "refill";

/// A recording writing in a directory: a shared `flock` on
/// `.pool/writers` ([`WRITERS_FILE`]), released when dropped. Every pooled
/// [`crate::Recorder`] holds one from its creation until it is dropped,
/// whichever program made it (the command line, the C library, the
/// bench), so a recording that ends can tell whether it is the only one
/// writing in the directory ([`WritersLock::alone`]) before it gives back
/// its files' unused tails.
pub struct WritersLock {
    file: File,
}

impl WritersLock {
    /// Takes the shared lock of the pool of the recording directory `dir`;
    /// `None` when the directory has no pool or the lock cannot be taken
    /// (then nobody gives back a tail on the strength of it). Waits while
    /// a recording that ended alone gives back its tails (a few
    /// `ftruncate` calls): a recorder takes it in
    /// [`crate::Recorder::create`], before its first record.
    pub fn take(dir: &Path) -> Option<WritersLock> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join(POOL_DIR).join(WRITERS_FILE))
            .ok()?;
        sys::lock_shared(&file).ok()?;
        Some(WritersLock { file })
    }

    /// True when no other recording holds the lock; this one then holds it
    /// exclusively until dropped. Never waits.
    pub fn alone(&self) -> bool {
        sys::lock_exclusive(&self.file, false).unwrap_or(false)
    }
}

/// What [`give_back_tails`] did with a recording's files.
#[derive(Debug, Default)]
pub struct Tails {
    /// Bytes of unused tail given back (truncated).
    pub given_back_bytes: u64,
    /// The files whose unused tail was kept because another recording was
    /// writing in the directory: path, valid length, tail bytes.
    pub kept: Vec<(PathBuf, u64, u64)>,
}

/// The valid length a finished framed file's header records (`None`
/// while unfinished: its `valid_len` is then a durable mark, not the end).
fn finished_len(path: &Path) -> Option<u64> {
    let mut head = [0u8; HEADER_LEN];
    let f = File::open(path).ok()?;
    std::os::unix::fs::FileExt::read_exact_at(&f, &mut head, 0).ok()?;
    FileHeader::decode(&head).ok()?.finished_len()
}

/// Gives back the unused tails of a finished recording's `files` (pooled
/// files keep their whole size when closed, so a short recording would
/// hold a whole pool file) when `writing`, the recording's own
/// [`WritersLock`] held since before its recorder was created, shows no
/// other recording writing in the directory ([`WritersLock::alone`]);
/// otherwise each tail is kept and listed, because truncating a large
/// file can stall the file system's journal under a running recorder.
/// The lock is released at the end. The rule of `rtrec record` and of the
/// C library's finish (docs/durability.md, "File sizes and the pool").
pub fn give_back_tails(writing: Option<WritersLock>, files: &[PathBuf]) -> Tails {
    let alone = writing.as_ref().is_some_and(WritersLock::alone);
    let mut t = Tails::default();
    for path in files {
        let Ok(len) = std::fs::metadata(path).map(|m| m.len()) else {
            continue;
        };
        let Some(valid) = finished_len(path).filter(|&v| v >= HEADER_LEN as u64 && v < len) else {
            continue;
        };
        let given = alone
            && std::fs::OpenOptions::new()
                .write(true)
                .open(path)
                .and_then(|f| {
                    f.set_len(valid)?;
                    f.sync_all()
                })
                .is_ok();
        if given {
            t.given_back_bytes += len - valid;
        } else {
            t.kept.push((path.clone(), valid, len - valid));
        }
    }
    drop(writing);
    t
}

/// A process-wide counter that makes the names of slots and temporary
/// files this process creates unique among its threads.
static NAME_SEQ: AtomicU64 = AtomicU64::new(0);

/// The exclusive `flock` on `.pool/lock`, released when dropped (see
/// [`Pool::lock`]).
pub struct PoolLock {
    _file: File,
}

/// What `pool.json` holds. Fields added later have defaults, so a
/// description written by an older rtrec still reads (and an older rtrec
/// ignores them).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoolMeta {
    /// Bytes per file.
    pub file_size: u64,
    /// Files the pool is topped up to.
    pub files: u32,
    /// Where `file_size` came from; `None`: written by an rtrec that did
    /// not say (before issue 31), so any recording may have set it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_from: Option<SizeFrom>,
    /// Bytes recordings wrote into files that were not yet replaced by a
    /// prepared file ([`Pool::refill_bytes`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub owed_bytes: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl PoolMeta {
    /// A description of `files` files of `file_size` bytes from `from`,
    /// nothing owed.
    pub fn new(file_size: u64, files: u32, from: SizeFrom) -> PoolMeta {
        PoolMeta {
            file_size,
            files,
            size_from: Some(from),
            owed_bytes: 0,
        }
    }

    /// The same pool for a recording: size, target and origin (what is
    /// owed is bookkeeping, not a description).
    fn describes(&self, other: &PoolMeta) -> bool {
        (self.file_size, self.files, self.size_from)
            == (other.file_size, other.files, other.size_from)
    }
}

/// A pool of prepared files.
#[derive(Clone, Debug)]
pub struct Pool {
    dir: PathBuf,
    meta: PoolMeta,
}

/// What `rtrec pool status` shows.
#[derive(Clone, Debug, Serialize)]
pub struct PoolStatus {
    /// The pool's directory.
    pub dir: PathBuf,
    /// Bytes per file.
    pub file_size: u64,
    /// Where the file size came from (`"--file-size"`, `"default"`,
    /// `"pool prepare"`, `"small card"`); `null` for a pool described by
    /// an rtrec from before it was recorded.
    pub size_from: Option<SizeFrom>,
    /// Bytes recordings wrote that the refill has not replaced yet (a
    /// file is prepared for each whole file's worth).
    #[serde(default)]
    pub owed_bytes: u64,
    /// Files the pool is topped up to.
    pub target_files: u32,
    /// Files ready now.
    pub ready_files: u32,
    /// Preparations in progress or interrupted (hidden temporary files).
    pub preparing_files: u32,
    /// Disk space the ready files hold (their size).
    pub ready_bytes: u64,
    /// Disk space the ready files take, as allocated (`st_blocks`).
    #[serde(default)]
    pub disk_bytes: u64,
    /// Every ready file, oldest first.
    #[serde(default)]
    pub slots: Vec<SlotInfo>,
}

/// One ready file of the pool.
#[derive(Clone, Debug, Serialize)]
pub struct SlotInfo {
    /// Its name in the pool directory.
    pub name: String,
    /// Its size, bytes.
    pub bytes: u64,
    /// What it takes on disk, bytes (`st_blocks` × 512).
    pub disk_bytes: u64,
}

/// What [`Pool::open_resized`] did to a pool of another file size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resized {
    /// The pool's file size before.
    pub old_file_size: u64,
    /// Its file size now.
    pub new_file_size: u64,
    /// Idle files of the old size removed.
    pub removed_files: u32,
    /// Disk space they took, bytes.
    pub freed_bytes: u64,
}

impl std::fmt::Display for Resized {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the pool's files were {} bytes and this recording needs {} bytes: {} idle file(s) of the old size removed ({} bytes freed), new ones are prepared in the new size",
            self.old_file_size, self.new_file_size, self.removed_files, self.freed_bytes
        )
    }
}

/// What [`Pool::trim`] or [`Pool::remove`] gave back.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Trimmed {
    /// Ready files removed.
    pub removed_files: u32,
    /// Disk space they took, bytes.
    pub freed_bytes: u64,
}

impl Pool {
    /// The pool directory of recording directory `rec_dir`.
    pub fn dir_of(rec_dir: &Path) -> PathBuf {
        rec_dir.join(POOL_DIR)
    }

    /// Opens the pool of `rec_dir`, if there is one.
    ///
    /// # Errors
    /// `.pool` is a symlink, not a directory, or not owned by this user;
    /// `pool.json` is damaged or unreadable.
    pub fn open(rec_dir: &Path) -> Result<Option<Pool>, Error> {
        let dir = Self::dir_of(rec_dir);
        let meta_path = dir.join(META);
        let d = match Self::checked_dir(&dir) {
            Ok(d) => d,
            Err(Error::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
                return Ok(None)
            }
            Err(e) => return Err(e),
        };
        let read = d.open_existing_nofollow(META, false).and_then(|mut f| {
            let mut b = Vec::new();
            io::Read::read_to_end(&mut f, &mut b).map(|_| b)
        });
        match read {
            Ok(b) => {
                let meta: PoolMeta = serde_json::from_slice(&b).map_err(|e| {
                    Error::Usage(format!(
                        "the pool description '{}' is damaged: {e}",
                        meta_path.display()
                    ))
                })?;
                Ok(Some(Pool { dir, meta }))
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io("reading", &meta_path, e)),
        }
    }

    /// The pool directory `dir`, opened without following a symlink and
    /// checked to be a real directory owned by this process's user: a
    /// `.pool` planted by someone else in a shared directory would let them
    /// pick the files root writes into.
    fn checked_dir(dir: &Path) -> Result<sys::Dir, Error> {
        let d = sys::Dir::open_nofollow(dir).map_err(|e| match e.raw_os_error() {
            // `O_DIRECTORY|O_NOFOLLOW` gives a symlink `ENOTDIR` (the
            // directory test comes first): told apart here, so that a
            // symlinked pool is `ELOOP`, as the C API documents.
            Some(libc::ELOOP | libc::ENOTDIR) => {
                let symlink = std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_symlink());
                let (errno, what) = if symlink {
                    (libc::ELOOP, "a symlink")
                } else {
                    (libc::ENOTDIR, "not a directory")
                };
                Error::Path {
                    message: format!(
                        "'{}' is {what}; rtrec uses only a real pool directory (remove it)",
                        dir.display()
                    ),
                    errno,
                }
            }
            _ => Error::io("opening", dir, e),
        })?;
        let info = d.info().map_err(|e| Error::io("reading", dir, e))?;
        let me = sys::effective_uid();
        if info.uid != me {
            return Err(Error::Path {
                message: format!(
                    "'{}' belongs to uid {}, not to this user (uid {me}); rtrec uses only a pool directory of its own (remove it)",
                    dir.display(),
                    info.uid
                ),
                errno: libc::EPERM,
            });
        }
        Ok(d)
    }

    /// This pool's directory, opened and checked as [`Pool::open`] does.
    pub(crate) fn open_dir(&self) -> Result<sys::Dir, Error> {
        Self::checked_dir(&self.dir)
    }

    /// Opens the pool of `rec_dir`, creating an empty one (no file prepared
    /// yet) with `file_size` and `files` if there is none.
    ///
    /// A pool with no file ready and none in preparation holds nothing, so
    /// it takes the new size and count (a failed first preparation must not
    /// pin a size on later recordings). Safe against other recorders doing
    /// the same at the same time: the decision and the write happen under
    /// the pool's lock.
    pub fn open_or_create(rec_dir: &Path, file_size: u64, files: u32) -> Result<Pool, Error> {
        Self::open_or_create_from(rec_dir, file_size, files, SizeFrom::FileSize)
    }

    /// As [`Pool::open_or_create`], recording `from` as where a new pool's
    /// file size came from.
    ///
    /// # Errors
    /// As [`Pool::open_or_create`].
    pub fn open_or_create_from(
        rec_dir: &Path,
        file_size: u64,
        files: u32,
        from: SizeFrom,
    ) -> Result<Pool, Error> {
        let wanted = PoolMeta::new(file_size, files, from);
        if let Some(p) = Self::open(rec_dir)? {
            if p.keeps(&wanted)? {
                return Ok(p);
            }
        }
        file::check_dir(rec_dir)?;
        let dir = Self::dir_of(rec_dir);
        let refused = |what: &'static str, path: &Path, e: io::Error| match e.kind() {
            io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem => Error::path(
                format!(
                    "cannot create the file pool in '{}': {e}",
                    rec_dir.display()
                ),
                &e,
            ),
            _ => Error::io(what, path, e),
        };
        let rec = sys::Dir::open_nofollow(rec_dir)
            .map_err(|e| refused("opening the recording directory", rec_dir, e))?;
        let created = match rec.create_dir(POOL_DIR, 0o755) {
            Ok(()) => true,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => false,
            Err(e) => return Err(refused("creating the pool directory", &dir, e)),
        };
        let d = Self::checked_dir(&dir)?;
        let _lock = Self::lock_dir(&d)?;
        // Again under the lock: another recorder may have written it.
        if let Some(p) = Self::open(rec_dir)? {
            if p.keeps(&wanted)? {
                return Ok(p);
            }
        }
        let pool = Pool { dir, meta: wanted };
        pool.write_meta_locked(&d, &pool.meta)
            .map_err(|e| match e {
                Error::Io {
                    action,
                    path,
                    source,
                } => refused(action, &path, source),
                e => e,
            })?;
        if created {
            // The pool directory's own name.
            rec.sync().map_err(|e| Error::io("syncing", rec_dir, e))?;
        }
        Ok(pool)
    }

    /// Whether this pool stays as it is for a recording that asks for
    /// `wanted`: it has files ready or in preparation, or that description.
    fn keeps(&self, wanted: &PoolMeta) -> Result<bool, Error> {
        let st = self.status()?;
        Ok(st.ready_files > 0 || st.preparing_files > 0 || self.meta.describes(wanted))
    }

    /// Whether an open-ended recording without `--file-size` takes this
    /// pool's file size (see [`crate::sizing`]): it was chosen by a person
    /// (`--file-size`, `pool prepare`), or by a default and files of it are
    /// ready or in preparation (they are used, never thrown away). A
    /// description from an older rtrec (no origin) may have been set by a
    /// short recording: it does not stand.
    ///
    /// # Errors
    /// The pool directory cannot be listed.
    pub fn size_stands(&self) -> Result<bool, Error> {
        Ok(match self.meta.size_from {
            None => false,
            Some(from) if from.is_explicit() => true,
            Some(_) => {
                let st = self.status()?;
                st.ready_files > 0 || st.preparing_files > 0
            }
        })
    }

    /// Where the pool's file size came from; `None` for a description
    /// from an older rtrec.
    pub fn size_from(&self) -> Option<SizeFrom> {
        self.meta.size_from
    }

    /// Takes the pool's lock: an exclusive `flock` on `.pool/lock` (created
    /// if missing), blocking until the holder releases it. Every change of
    /// the pool's names happens under it; hold it for a few system calls
    /// only, never across an allocation or a recording.
    ///
    /// # Errors
    /// The pool directory or the lock file cannot be opened.
    pub fn lock(&self) -> Result<PoolLock, Error> {
        Self::lock_dir(&self.open_dir()?)
    }

    pub(crate) fn lock_dir(d: &sys::Dir) -> Result<PoolLock, Error> {
        Self::lock_named(d, LOCK_FILE)
    }

    /// The exclusive `flock` on the lock file `name` in the pool directory
    /// (created if missing), blocking until the holder releases it.
    pub(crate) fn lock_named(d: &sys::Dir, name: &str) -> Result<PoolLock, Error> {
        Self::lock_named_wait(d, name, true).map(|l| l.expect("a blocking lock is always taken"))
    }

    /// As [`Pool::lock_named`]; without `wait`, `None` when another
    /// holds the lock.
    pub(crate) fn lock_named_wait(
        d: &sys::Dir,
        name: &str,
        wait: bool,
    ) -> Result<Option<PoolLock>, Error> {
        let path = d.join(name);
        let file = loop {
            match d.open_existing_nofollow(name, true) {
                Ok(f) => break f,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io("opening the lock file", &path, e)),
            }
            match d.create_excl(name, 0o644) {
                Ok(f) => break f,
                // Created by another recorder meanwhile: open theirs.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(Error::io("creating the lock file", &path, e)),
            }
        };
        let locked =
            sys::lock_exclusive(&file, wait).map_err(|e| Error::io("locking", &path, e))?;
        Ok(locked.then_some(PoolLock { _file: file }))
    }

    /// Bytes per file.
    pub fn file_size(&self) -> u64 {
        self.meta.file_size
    }

    /// Files the pool is topped up to.
    pub fn target_files(&self) -> u32 {
        self.meta.files
    }

    /// The pool's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Ready slots, oldest name first.
    pub fn ready(&self) -> io::Result<Vec<PathBuf>> {
        let mut v = Vec::new();
        for e in std::fs::read_dir(&self.dir)? {
            let p = e?.path();
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if name.starts_with("slot-") && name.ends_with(&format!(".{SLOT_EXT}")) {
                v.push(p);
            }
        }
        v.sort();
        Ok(v)
    }

    /// The pool's state.
    pub fn status(&self) -> Result<PoolStatus, Error> {
        let ready = self
            .ready()
            .map_err(|e| Error::io("listing", &self.dir, e))?;
        let preparing = std::fs::read_dir(&self.dir)
            .map_err(|e| Error::io("listing", &self.dir, e))?
            .filter_map(|e| e.ok())
            .filter(|e| {
                e.file_name()
                    .to_str()
                    .is_some_and(|n| n.starts_with(".slot-") && n.ends_with(".tmp"))
            })
            .count();
        let slots: Vec<SlotInfo> = ready
            .iter()
            .filter_map(|p| {
                let m = std::fs::symlink_metadata(p).ok()?;
                Some(SlotInfo {
                    name: p.file_name()?.to_string_lossy().into_owned(),
                    bytes: m.len(),
                    disk_bytes: std::os::unix::fs::MetadataExt::blocks(&m) * 512,
                })
            })
            .collect();
        Ok(PoolStatus {
            dir: self.dir.clone(),
            file_size: self.meta.file_size,
            size_from: self.meta.size_from,
            owed_bytes: self.meta.owed_bytes,
            target_files: self.meta.files,
            ready_files: ready.len() as u32,
            preparing_files: preparing as u32,
            ready_bytes: slots.iter().map(|s| s.bytes).sum(),
            disk_bytes: slots.iter().map(|s| s.disk_bytes).sum(),
            slots,
        })
    }

    /// Opens the pool of `rec_dir` for files of `file_size` bytes, creating
    /// it with `files` as target if there is none. A pool of another size
    /// is resized: its idle files are removed (before anything records) and
    /// it takes `file_size` and `files`; what was removed comes back for the
    /// caller to tell.
    ///
    /// # Errors
    /// As [`Pool::open_or_create`]; a ready file cannot be removed.
    pub fn open_resized(
        rec_dir: &Path,
        file_size: u64,
        files: u32,
    ) -> Result<(Pool, Option<Resized>), Error> {
        Self::open_resized_from(rec_dir, file_size, files, SizeFrom::FileSize)
    }

    /// As [`Pool::open_resized`], recording `from` as where the size came
    /// from (`rtrec pool prepare`: [`SizeFrom::PoolPrepare`]).
    ///
    /// # Errors
    /// As [`Pool::open_resized`].
    pub fn open_resized_from(
        rec_dir: &Path,
        file_size: u64,
        files: u32,
        from: SizeFrom,
    ) -> Result<(Pool, Option<Resized>), Error> {
        Self::open_or_create_from(rec_dir, file_size, files, from)?
            .resize_from(file_size, files, from)
    }

    /// This pool for files of `file_size` bytes: itself when it has that
    /// size, else the same pool with its idle files removed and `file_size`
    /// and `files` as its description (see [`Pool::open_resized`]). A slot
    /// that holds an unfinished recording is never removed.
    ///
    /// # Errors
    /// A ready file cannot be removed or `pool.json` rewritten.
    pub fn resize(&self, file_size: u64, files: u32) -> Result<(Pool, Option<Resized>), Error> {
        self.resize_from(file_size, files, SizeFrom::FileSize)
    }

    /// As [`Pool::resize`], recording `from` as where the size came from.
    /// A pool of that size already keeps its files; only its description
    /// changes when the origin differs (what is owed is kept).
    ///
    /// # Errors
    /// As [`Pool::resize`].
    pub fn resize_from(
        &self,
        file_size: u64,
        files: u32,
        from: SizeFrom,
    ) -> Result<(Pool, Option<Resized>), Error> {
        if self.meta.file_size == file_size {
            if self.meta.size_from == Some(from) {
                return Ok((self.clone(), None));
            }
            let d = self.open_dir()?;
            let _lock = Self::lock_dir(&d)?;
            let meta = PoolMeta {
                size_from: Some(from),
                ..self.meta.clone()
            };
            self.write_meta_locked(&d, &meta)?;
            return Ok((self.with_meta(meta), None));
        }
        let d = self.open_dir()?;
        let _lock = Self::lock_dir(&d)?;
        let t = self.remove_ready_locked(&d, 0)?;
        let resized = Resized {
            old_file_size: self.meta.file_size,
            new_file_size: file_size,
            removed_files: t.removed_files,
            freed_bytes: t.freed_bytes,
        };
        let meta = PoolMeta::new(file_size, files, from);
        self.write_meta_locked(&d, &meta)?;
        Ok((self.with_meta(meta), Some(resized)))
    }

    fn with_meta(&self, meta: PoolMeta) -> Pool {
        Pool {
            dir: self.dir.clone(),
            meta,
        }
    }

    /// Replaces `pool.json` with `meta`, durably (PostgreSQL's
    /// `durable_rename()`): a temporary file of a name no other writer uses
    /// (`.pool.json.PID-N.tmp`, `O_EXCL`), written and fsynced, renamed
    /// over `pool.json`, then the directory fsynced. A crash at any point
    /// leaves the old description or the new one (and at worst a stray
    /// temporary file, which [`Pool::remove`] clears). Call with the lock
    /// held.
    fn write_meta_locked(&self, d: &sys::Dir, meta: &PoolMeta) -> Result<(), Error> {
        let json = serde_json::to_vec_pretty(meta).unwrap_or_default();
        let tmp = format!(
            ".{META}.{}-{}.tmp",
            std::process::id(),
            NAME_SEQ.fetch_add(1, Ordering::Relaxed)
        );
        let tmp_path = self.dir.join(&tmp);
        let written = d.create_excl(&tmp, 0o644).and_then(|mut f| {
            io::Write::write_all(&mut f, &json)?;
            sys::fsync(&f)
        });
        let named = written
            .map_err(|e| Error::io("writing", &tmp_path, e))
            .and_then(|()| {
                d.rename_replace(&tmp, META)
                    .map_err(|e| Error::io("writing", &self.dir.join(META), e))
            });
        if let Err(e) = named {
            let _ = d.remove_file(&tmp);
            return Err(e);
        }
        d.sync().map_err(|e| Error::io("syncing", &self.dir, e))
    }

    /// Removes ready files beyond the first `keep` (the newest go first).
    /// A slot holding a recording a crash interrupted is data, not a free
    /// file: it is never removed (`recover` moves it back).
    fn remove_ready_locked(&self, d: &sys::Dir, keep: usize) -> Result<Trimmed, Error> {
        let st = self.status()?;
        let mut t = Trimmed::default();
        let free = st
            .slots
            .iter()
            .filter(|s| recording_in_slot(&self.dir.join(&s.name)).is_none());
        let free: Vec<&SlotInfo> = free.collect();
        for slot in free.iter().skip(keep).rev() {
            match d.remove_file(&slot.name) {
                Ok(()) => {
                    t.removed_files += 1;
                    t.freed_bytes += slot.disk_bytes;
                }
                Err(e) => return Err(Error::io("removing", &self.dir.join(&slot.name), e)),
            }
        }
        Ok(t)
    }

    /// Makes `files` (at least 1) the number of files the pool is topped up
    /// to; ready files beyond it stay until [`Pool::trim`].
    ///
    /// # Errors
    /// `pool.json` cannot be rewritten.
    pub fn set_target(&self, files: u32) -> Result<Pool, Error> {
        let d = self.open_dir()?;
        let _lock = Self::lock_dir(&d)?;
        self.set_target_locked(&d, files)
    }

    fn set_target_locked(&self, d: &sys::Dir, files: u32) -> Result<Pool, Error> {
        let meta = PoolMeta {
            files: files.max(1),
            ..self.meta.clone()
        };
        self.write_meta_locked(d, &meta)?;
        Ok(self.with_meta(meta))
    }

    /// Keeps at most `keep` ready files and makes `keep` (at least 1) the
    /// target, so that refills do not grow the pool back.
    ///
    /// # Errors
    /// A file cannot be removed or `pool.json` rewritten.
    pub fn trim(&self, keep: u32) -> Result<(Pool, Trimmed), Error> {
        let d = self.open_dir()?;
        let _lock = Self::lock_dir(&d)?;
        let t = self.remove_ready_locked(&d, keep as usize)?;
        Ok((self.set_target_locked(&d, keep)?, t))
    }

    /// Removes the pool: its ready files, `pool.json` and the directory.
    /// Refused while a file is being prepared (another rtrec is at work) or
    /// while a slot holds a recording a crash interrupted (recover it first).
    ///
    /// # Errors
    /// [`Error::Usage`] while a preparation is in progress; a file cannot be
    /// removed.
    pub fn remove(self) -> Result<Trimmed, Error> {
        let d = self.open_dir()?;
        let lock = Self::lock_dir(&d)?;
        let st = self.status()?;
        let crashed = self.unfinished()?.len();
        if crashed > 0 {
            let rec_dir = self.dir.parent().unwrap_or(&self.dir);
            return Err(Error::Usage(format!(
                "'{}' holds {crashed} recording(s) a crash interrupted; `rtrec recover {}` moves them back first; nothing was removed",
                self.dir.display(),
                rec_dir.display()
            )));
        }
        if st.preparing_files > 0 {
            return Err(Error::Usage(format!(
                "{} file(s) are being prepared in '{}' (another rtrec at work, or one that was killed: remove its .slot-*.tmp files); nothing was removed",
                st.preparing_files,
                self.dir.display()
            )));
        }
        let t = self.remove_ready_locked(&d, 0)?;
        d.remove_file(META)
            .map_err(|e| Error::io("removing", &self.dir.join(META), e))?;
        // Temporary descriptions a crash left, then the lock file itself
        // (a recorder waiting for the lock finds the pool gone).
        let names = d.names().map_err(|e| Error::io("listing", &self.dir, e))?;
        for n in names.iter().filter_map(|n| n.to_str()) {
            if n.starts_with(&format!(".{META}.")) && n.ends_with(".tmp") {
                d.remove_file(n)
                    .map_err(|e| Error::io("removing", &self.dir.join(n), e))?;
            }
        }
        for lock_file in [WRITERS_FILE, REFILL_FILE] {
            d.remove_file(lock_file)
                .map_err(|e| Error::io("removing", &self.dir.join(lock_file), e))?;
        }
        d.remove_file(LOCK_FILE)
            .map_err(|e| Error::io("removing", &self.dir.join(LOCK_FILE), e))?;
        drop((lock, d));
        std::fs::remove_dir(&self.dir).map_err(|e| Error::io("removing", &self.dir, e))?;
        Ok(t)
    }

    /// The refill after a recording that got `used` files: tops the pool up
    /// to `min(used, target)` ready files (at least 1), so the next
    /// recording of the same length starts from the pool and no more disk
    /// is held than it needs. Returns how many files were prepared.
    ///
    /// # Errors
    /// As [`Pool::prepare_one`].
    pub fn refill(&self, used: u64) -> Result<u32, Error> {
        let want = (used.max(1)).min(self.meta.files as u64) as u32;
        // Counted and topped up under the refill lock (see [`REFILL_FILE`]).
        let _refill = Self::lock_named(&self.open_dir()?, REFILL_FILE)?;
        let have = self
            .ready()
            .map_err(|e| Error::io("listing", &self.dir, e))?
            .len() as u32;
        let todo = want.saturating_sub(have);
        for _ in 0..todo {
            self.prepare_one()?;
        }
        Ok(todo)
    }

    /// The refill after a recording that wrote `used_bytes` into files it
    /// got from this pool or instead of it (see the module docs): adds them
    /// to what is owed (at most the target's worth), prepares a file for
    /// every whole file's worth owed while fewer than the target are ready,
    /// and writes what stays owed to `pool.json` (nothing owed once the
    /// target is ready). Returns how many files were prepared.
    ///
    /// # Errors
    /// `pool.json` cannot be read or rewritten; as [`Pool::prepare_one`].
    pub fn refill_bytes(&self, used_bytes: u64) -> Result<u32, Error> {
        let d = self.open_dir()?;
        // Counted and topped up under the refill lock (see [`REFILL_FILE`]).
        let _refill = Self::lock_named(&d, REFILL_FILE)?;
        // What other recordings owed meanwhile: the description on disk.
        let now = self.reread_meta()?;
        let size = now.file_size.max(1);
        let cap = size.saturating_mul(now.files as u64);
        let mut owed = now.owed_bytes.saturating_add(used_bytes).min(cap);
        let have = self
            .ready()
            .map_err(|e| Error::io("listing", &self.dir, e))?
            .len() as u32;
        let missing = now.files.saturating_sub(have);
        let todo = (owed / size).min(missing as u64) as u32;
        let pool = self.with_meta(now.clone());
        for _ in 0..todo {
            pool.prepare_one()?;
            owed -= size;
        }
        if have + todo >= now.files {
            owed = 0;
        }
        if owed != now.owed_bytes {
            let _lock = Self::lock_dir(&d)?;
            // Again under the name lock: a resize may have come between.
            let latest = self.reread_meta()?;
            if latest.describes(&now) {
                let meta = PoolMeta {
                    owed_bytes: owed,
                    ..latest
                };
                self.write_meta_locked(&d, &meta)?;
            }
        }
        Ok(todo)
    }

    /// `pool.json` as it is on disk now (other recorders change it).
    fn reread_meta(&self) -> Result<PoolMeta, Error> {
        let rec_dir = self.dir.parent().unwrap_or(&self.dir);
        match Self::open(rec_dir)? {
            Some(p) => Ok(p.meta),
            None => Err(Error::Usage(format!(
                "the pool '{}' was removed",
                self.dir.display()
            ))),
        }
    }

    /// A slot name no other preparation uses: the clock first (names sort
    /// oldest first), then the pid and this process's counter, so that two
    /// threads or processes never pick the same one.
    pub(crate) fn slot_name() -> String {
        format!(
            "slot-{:020}-{}-{}.{SLOT_EXT}",
            sys::realtime_ns(),
            std::process::id(),
            NAME_SEQ.fetch_add(1, Ordering::Relaxed)
        )
    }

    fn slot_header(generation: u64) -> FileHeader {
        FileHeader {
            flags: FLAG_SLOT,
            generation,
            created_ns: 0,
            created_mono_ns: 0,
            config_digest: 0,
            valid_len: 0,
            recording_id: 0,
            index: 0,
        }
    }

    /// Prepares one new slot: allocate, zero-fill, commit, name.
    pub fn prepare_one(&self) -> Result<PathBuf, Error> {
        let name = Self::slot_name();
        let f = file::prepare_at(
            &self.dir,
            &name,
            Alloc::Zero,
            self.meta.file_size,
            Framing::Framed,
            Self::slot_header(sys::realtime_ns()),
        )?;
        Ok(f.path)
    }

    /// Tops the pool up to its target; `progress(done, todo)` after each file.
    /// Returns how many files were prepared.
    pub fn prepare(&self, mut progress: impl FnMut(u32, u32)) -> Result<u32, Error> {
        let _refill = Self::lock_named(&self.open_dir()?, REFILL_FILE)?;
        let have = self
            .ready()
            .map_err(|e| Error::io("listing", &self.dir, e))?
            .len() as u32;
        let todo = self.meta.files.saturating_sub(have);
        for i in 0..todo {
            self.prepare_one()?;
            progress(i + 1, todo);
        }
        Ok(todo)
    }

    /// Slots that hold an unfinished recording (see the module docs).
    pub fn unfinished(&self) -> Result<Vec<Unfinished>, Error> {
        let mut v = Vec::new();
        for slot in self
            .ready()
            .map_err(|e| Error::io("listing", &self.dir, e))?
        {
            if let Some(header) = recording_in_slot(&slot) {
                v.push(Unfinished { slot, header });
            }
        }
        Ok(v)
    }

    /// Takes a ready slot as the file `dest`: rename, new header (next
    /// generation, [`FLAG_POOLED`]), position after the header. No
    /// allocation, no truncation. `None` when no slot is ready.
    pub(crate) fn take(
        &self,
        dest: &Path,
        mut header: FileHeader,
    ) -> Result<Option<OpenFile>, Error> {
        let pool = self.open_dir()?;
        let (rec, dest_name) =
            sys::Dir::of_file(dest).map_err(|e| Error::io("opening the directory of", dest, e))?;
        // Held from the listing to the rename: no other recorder takes,
        // returns or removes a slot meanwhile.
        let lock = Self::lock_dir(&pool)?;
        let slots = self
            .ready()
            .map_err(|e| Error::io("listing", &self.dir, e))?;
        for slot in slots {
            if recording_in_slot(&slot).is_some() {
                // Left by a crash: data, not a free slot (see `recover`).
                continue;
            }
            let slot_name = slot.file_name().unwrap_or_default();
            match pool.stat(slot_name) {
                // Another size (a preparation in flight while the pool was
                // resized): never taken; trim or the next resize removes it.
                Ok(info) if info.is_file && info.size != self.meta.file_size => continue,
                Ok(info) => check_slot(&slot, &info)?,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(Error::io("reading", &slot, e)),
            }
            // Claimed under a hidden name first: the name `dest` appears
            // only once the new header is on storage (below).
            let hidden = format!(".{}.tmp", dest_name.to_string_lossy());
            match pool.rename_noreplace(slot_name, &rec, &hidden) {
                Ok(()) => {}
                // Taken by someone else meanwhile.
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(Error::io("taking a pool file as", dest, e)),
            }
            drop(lock);
            let file = rec
                .open_existing_nofollow(&hidden, true)
                .map_err(|e| Error::io("opening", dest, e))?;
            // Again on the open file: a link made between the check and
            // the rename shows here.
            let info = sys::file_info(&file).map_err(|e| Error::io("reading", dest, e))?;
            check_slot(dest, &info)?;
            let old = read_header(&file).ok();
            let size = file
                .metadata()
                .map_err(|e| Error::io("reading", dest, e))?
                .len();
            if size != self.meta.file_size {
                return Err(Error::Usage(format!(
                    "the pool file '{}' has {size} bytes, the pool's files have {}; run `rtrec pool prepare` again",
                    slot.display(),
                    self.meta.file_size
                )));
            }
            header.flags |= FLAG_POOLED;
            header.generation = old.map_or_else(sys::realtime_ns, |h| h.generation.wrapping_add(1));
            header.created_ns = sys::realtime_ns();
            header.created_mono_ns = sys::monotonic_ns();
            header.valid_len = 0;
            sys::pwrite_all(&file, &header.encode(), 0)
                .map_err(|e| Error::io("writing the header of", dest, e))?;
            // As PostgreSQL's durable_rename: the file's header is synced
            // before its name appears, so a power cut never leaves a `.rtr`
            // name over a header-less file (the directory is synced before
            // the first durable point in it: docs/durability.md).
            sys::fdatasync(&file).map_err(|e| Error::io("syncing the header of", dest, e))?;
            rec.rename_noreplace(&hidden, &rec, dest_name)
                .map_err(|e| Error::io("naming", dest, e))?;
            sys::seek_to(&file, HEADER_LEN as u64).map_err(|e| Error::io("seeking in", dest, e))?;
            return Ok(Some(OpenFile {
                file: Arc::new(file),
                path: dest.to_path_buf(),
                header,
                offset: HEADER_LEN as u64,
                size: self.meta.file_size,
            }));
        }
        Ok(None)
    }

    /// Puts a finished recording back into the pool: its data are given up.
    /// Refuses files of another size and, unless `force`, unfinished ones
    /// (they may be recording right now).
    pub fn recycle(&self, recording: &Path, force: bool) -> Result<PathBuf, Error> {
        let (rec, rec_name) = sys::Dir::of_file(recording)
            .map_err(|e| Error::io("opening the directory of", recording, e))?;
        let file = rec
            .open_existing_nofollow(rec_name, true)
            .map_err(|e| Error::io("opening", recording, e))?;
        let info = sys::file_info(&file).map_err(|e| Error::io("reading", recording, e))?;
        check_slot(recording, &info)?;
        let size = info.size;
        if size != self.meta.file_size {
            return Err(Error::Usage(format!(
                "'{}' has {size} bytes but the pool's files have {}; only pool-sized files can be recycled",
                recording.display(),
                self.meta.file_size
            )));
        }
        let h = read_header(&file).map_err(|_| {
            Error::Usage(format!(
                "'{}' is not an rtrec recording; it was left alone",
                recording.display()
            ))
        })?;
        if h.finished_len().is_none() && !force {
            return Err(Error::Usage(format!(
                "'{}' is unfinished (it may be recording now); use --force to recycle it anyway",
                recording.display()
            )));
        }
        let slot = Self::slot_header(h.generation.wrapping_add(1));
        sys::pwrite_all(&file, &slot.encode(), 0)
            .map_err(|e| Error::io("writing the header of", recording, e))?;
        sys::fdatasync(&file).map_err(|e| Error::io("syncing", recording, e))?;
        let pool = self.open_dir()?;
        let name = Self::slot_name();
        let _lock = Self::lock_dir(&pool)?;
        rec.rename_noreplace(rec_name, &pool, &name)
            .map_err(|e| Error::io("moving into the pool", recording, e))?;
        Ok(self.dir.join(name))
    }

    /// A loop's retired file: recycles `recording` into the pool only while
    /// the pool holds fewer ready files than its target, counted and
    /// recycled under the refill lock ([`REFILL_FILE`]), as the refiller
    /// thread counts and prepares ([`Pool::start_refiller`]): checked apart,
    /// the two could each fill the last place, leaving one spare more than
    /// the target and the loop's disk bound broken (seen by tests/soak.rs).
    /// Returns whether it was recycled (`false`: the pool is full).
    ///
    /// # Errors
    /// As [`Pool::recycle`]; the refill lock cannot be taken.
    pub fn recycle_below_target(&self, recording: &Path) -> Result<bool, Error> {
        let _refill = Self::lock_named(&self.open_dir()?, REFILL_FILE)?;
        if self.ready_count() >= self.meta.files {
            return Ok(false);
        }
        self.recycle(recording, false).map(|_| true)
    }

    /// Ready files, `u32::MAX` when they cannot be listed (so nothing is
    /// added to a pool that cannot be counted).
    pub(crate) fn ready_count(&self) -> u32 {
        self.ready().map_or(u32::MAX, |v| v.len() as u32)
    }

    /// One step of the refiller: under the refill lock, prepares a file
    /// when fewer than the target are ready. True when it made one.
    fn refill_step(&self) -> bool {
        let Ok(_refill) = self
            .open_dir()
            .and_then(|d| Self::lock_named(&d, REFILL_FILE))
        else {
            return false;
        };
        self.ready_count() < self.meta.files && self.prepare_one().is_ok()
    }

    /// Starts a background thread that keeps the pool topped up, at nice 19
    /// and in the idle I/O class, so its allocation and zero-filling yield to
    /// the recording.
    pub fn start_refiller(&self) -> Refiller {
        let stop = Arc::new(AtomicBool::new(false));
        let made = Arc::new(AtomicU64::new(0));
        let (s, m, pool) = (stop.clone(), made.clone(), self.clone());
        let thread = crate::rt::spawn_settled(
            "rtrec-pool",
            || {
                // Never the creator's SCHED_FIFO policy (a nice value means
                // nothing to a SCHED_FIFO thread), then the lowest CPU and
                // I/O priority.
                let _ = sys::set_normal_policy();
                let _ = sys::set_thread_nice(19);
                let _ = sys::set_thread_ioprio(3, 7);
            },
            move |()| {
                while !s.load(Ordering::Acquire) {
                    if pool.refill_step() {
                        m.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
            },
        )
        .ok();
        Refiller { stop, made, thread }
    }
}

/// Refuses a pool file that is not a regular file of this user with one
/// link: a second link (made by whoever can write the directory) would have
/// root overwrite the file behind it, wherever it is.
fn check_slot(path: &Path, info: &sys::FileInfo) -> Result<(), Error> {
    let me = sys::effective_uid();
    let why = if !info.is_file {
        "is not a regular file".to_string()
    } else if info.nlink != 1 {
        format!(
            "has {} hard links (another name points at the same file)",
            info.nlink
        )
    } else if info.uid != me {
        format!("belongs to uid {}, not to this user (uid {me})", info.uid)
    } else {
        return Ok(());
    };
    Err(Error::Path {
        message: format!(
            "'{}' {why}; rtrec refuses to write into it (remove it)",
            path.display()
        ),
        errno: libc::EPERM,
    })
}

/// A slot holding an unfinished recording (see [`Pool::unfinished`]).
#[derive(Clone, Debug)]
pub struct Unfinished {
    /// The slot's path in `.pool/`.
    pub slot: PathBuf,
    /// Its header: the recording's id, the file's index and creation time.
    pub header: FileHeader,
}

/// The header of `slot` when it shows a recording rather than a free slot.
fn recording_in_slot(slot: &Path) -> Option<FileHeader> {
    let f = File::open(slot).ok()?;
    let h = read_header(&f).ok()?;
    (h.flags & FLAG_SLOT == 0 && h.recording_id != 0).then_some(h)
}

pub(crate) fn read_header(f: &File) -> io::Result<FileHeader> {
    use std::os::unix::fs::FileExt;
    let mut b = [0u8; HEADER_LEN];
    f.read_exact_at(&mut b, 0)?;
    FileHeader::decode(&b).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))
}

/// A running background refiller; stops on [`Refiller::stop`] or drop.
pub struct Refiller {
    stop: Arc<AtomicBool>,
    made: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
}

impl Refiller {
    /// Stops the thread (after the file in progress) and returns how many
    /// files it prepared.
    pub fn stop(mut self) -> u64 {
        self.halt()
    }

    fn halt(&mut self) -> u64 {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.made.load(Ordering::Relaxed)
    }
}

impl Drop for Refiller {
    fn drop(&mut self) {
        self.halt();
    }
}
