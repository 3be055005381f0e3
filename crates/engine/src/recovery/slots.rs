//! The pool's side of a crash: recordings a power cut left in pool slots
//! moved back ([`Pool::recover`], which a recording's start runs too),
//! the preparations a killed preparer left ([`Pool::remove_stale_preparations`]),
//! slots a killed recycle stranded in the recording directory
//! ([`Pool::reclaim_stranded`]), and the hidden `.NAME.tmp` files a crash
//! left between the two renames of a preparation or a take
//! ([`recover_leftovers`]); how a recovered file is named
//! ([`RECOVERED_PREFIX`]) and whether a recording writes in the directory
//! now ([`recording_now`]), which every repair asks first.
//!
//! Design choice: the repairs that act on a [`Pool`] are methods of it,
//! in an `impl Pool` block here rather than in `pool.rs`, so the pool's
//! module keeps slots, their preparation, taking and recycling, and every
//! crash repair is under `recovery/`; the pool lends them its directory
//! handle and locks (`pub(crate)`), and callers still write
//! `pool.recover()`.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use rtrec_sys as sys;

use crate::error::Error;
use crate::format::{FileHeader, FLAG_SLOT};
use crate::pool::{Pool, POOL_DIR, REFILL_FILE, WRITERS_FILE};

impl Pool {
    /// Moves every slot holding an unfinished recording back into the
    /// recording directory (no replacing), then fsyncs both directories.
    /// Returns each move, from and to.
    pub fn recover(&self) -> Result<Vec<(PathBuf, PathBuf)>, Error> {
        let rec_dir = self.dir().parent().unwrap_or(self.dir()).to_path_buf();
        let mut moved = Vec::new();
        let _lock = self.lock()?;
        for u in self.unfinished()? {
            let dest = rec_dir.join(recovered_name(&u.header));
            sys::rename_noreplace(&u.slot, &dest)
                .map_err(|e| Error::io("moving back the unfinished recording", &u.slot, e))?;
            moved.push((u.slot, dest));
        }
        if !moved.is_empty() {
            for d in [self.dir(), rec_dir.as_path()] {
                File::open(d)
                    .and_then(|f| sys::fsync(&f))
                    .map_err(|e| Error::io("syncing", d, e))?;
            }
        }
        Ok(moved)
    }

    /// After a crash: removes the preparations a killed preparer left in
    /// the pool (`.slot-*.tmp`: a file being allocated and zero-filled,
    /// never data). Only while the refill lock is free: every preparation
    /// holds it, so none in progress is touched (`None` then). Returns
    /// what was removed.
    ///
    /// # Errors
    /// Listing the pool or removing a file fails.
    pub fn remove_stale_preparations(&self) -> Result<Option<Vec<PathBuf>>, Error> {
        let d = self.open_dir()?;
        let Some(_refill) = Self::lock_named_wait(&d, REFILL_FILE, false)? else {
            return Ok(None);
        };
        let mut removed = Vec::new();
        for e in std::fs::read_dir(self.dir()).map_err(|e| Error::io("listing", self.dir(), e))? {
            let Ok(e) = e else { continue };
            let name = e.file_name();
            let Some(n) = name.to_str() else { continue };
            if n.starts_with(".slot-") && n.ends_with(".tmp") {
                d.remove_file(n)
                    .map_err(|err| Error::io("removing", &e.path(), err))?;
                removed.push(e.path());
            }
        }
        Ok(Some(removed))
    }

    /// After a crash: a pool slot stranded in the recording directory
    /// `rec_dir` under a recording's name (a recycle writes the slot
    /// header, then renames the file into the pool; a kill between the
    /// two leaves the file with a slot header and no data). Each is
    /// finished as the recycle would have: moved into the pool while it
    /// holds fewer ready files than its target and the file has the
    /// pool's size, else removed. Returns each file and where it went
    /// (`None`: removed). Nothing is done while a pooled recording writes
    /// in the directory ([`recording_now`]): its loop may be recycling.
    ///
    /// # Errors
    /// Listing, renaming or removing fails.
    pub fn reclaim_stranded(
        &self,
        rec_dir: &Path,
    ) -> Result<Vec<(PathBuf, Option<PathBuf>)>, Error> {
        let mut done = Vec::new();
        if recording_now(rec_dir) {
            return Ok(done);
        }
        let ext = format!(".{}", crate::file::FRAMED_EXT);
        for e in std::fs::read_dir(rec_dir).map_err(|e| Error::io("listing", rec_dir, e))? {
            let Ok(e) = e else { continue };
            let path = e.path();
            let is_slot = e
                .file_name()
                .to_str()
                .is_some_and(|n| !n.starts_with('.') && n.ends_with(&ext))
                && e.file_type().is_ok_and(|t| t.is_file())
                && File::open(&path)
                    .and_then(|f| crate::pool::read_header(&f))
                    .is_ok_and(|h| h.flags & FLAG_SLOT != 0);
            if !is_slot {
                continue;
            }
            let to = self.return_slot(&path)?;
            done.push((path, to));
        }
        if !done.is_empty() {
            File::open(rec_dir)
                .and_then(|f| sys::fsync(&f))
                .map_err(|e| Error::io("syncing", rec_dir, e))?;
        }
        Ok(done)
    }

    /// A stranded slot (see [`Pool::reclaim_stranded`]): into the pool
    /// under a new slot name when it fits and the pool is below its target
    /// (counted under the refill lock, as [`Pool::recycle_below_target`]),
    /// else removed.
    fn return_slot(&self, path: &Path) -> Result<Option<PathBuf>, Error> {
        let d = self.open_dir()?;
        let _refill = Self::lock_named(&d, REFILL_FILE)?;
        let fits = std::fs::symlink_metadata(path).is_ok_and(|m| m.len() == self.file_size());
        if fits && self.ready_count() < self.target_files() {
            let (rec, name) = sys::Dir::of_file(path)
                .map_err(|e| Error::io("opening the directory of", path, e))?;
            let slot = Self::slot_name();
            let _lock = Self::lock_dir(&d)?;
            rec.rename_noreplace(name, &d, &slot)
                .map_err(|e| Error::io("moving into the pool", path, e))?;
            sys::fsync(&File::open(self.dir()).map_err(|e| Error::io("opening", self.dir(), e))?)
                .map_err(|e| Error::io("syncing", self.dir(), e))?;
            return Ok(Some(self.dir().join(slot)));
        }
        std::fs::remove_file(path).map_err(|e| Error::io("removing", path, e))?;
        Ok(None)
    }
}

/// How the name [`recovered_name`] gives starts (a loop's budget owns
/// such loop files: `writer::earlier`).
pub(crate) const RECOVERED_PREFIX: &str = "recovered-";

/// The name a recording found after a crash gets in its directory:
/// `recovered-STAMP-ID-NNNN.rtr` (creation time, recording id, index).
fn recovered_name(h: &FileHeader) -> String {
    format!(
        "{RECOVERED_PREFIX}{}-{:016x}-{:04}.{}",
        crate::file::utc_stamp(h.created_ns / 1_000_000_000),
        h.recording_id,
        h.index,
        crate::file::FRAMED_EXT
    )
}

/// What [`recover_leftovers`] did with a hidden `.NAME.tmp` a crash left
/// between the two renames of a preparation (`file::prepare_at`) or of
/// `Pool::take`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Leftover {
    /// Removed: a preparation the crash caught (a file is written only
    /// once its name appeared, so it held no record).
    Removed(PathBuf),
    /// Left alone: a recording is writing in the directory (it may be
    /// preparing this file).
    Busy(PathBuf),
}

/// The hidden temporary files of recordings in `rec_dir` (`.NAME.rtr.tmp`,
/// `.NAME.raw.tmp`): a preparation in progress, or one a crash left.
///
/// # Errors
/// The directory cannot be listed.
pub fn leftover_tmp(rec_dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(rec_dir)? {
        let e = e?;
        let name = e.file_name();
        let Some(n) = name.to_str() else { continue };
        let exts = [crate::file::FRAMED_EXT, crate::file::RAW_EXT];
        let recording = n
            .strip_prefix('.')
            .and_then(|n| n.strip_suffix(".tmp"))
            .is_some_and(|n| exts.iter().any(|x| n.ends_with(&format!(".{x}"))));
        if recording && e.file_type()?.is_file() {
            v.push(e.path());
        }
    }
    v.sort();
    Ok(v)
}

/// True while a pooled recording writes in `rec_dir`: it holds the
/// directory's writers lock ([`WRITERS_FILE`](crate::pool::WRITERS_FILE)) shared. A crash leaves no
/// holder, so repairs after a crash check this first.
pub fn recording_now(rec_dir: &Path) -> bool {
    let writers = rec_dir.join(POOL_DIR).join(WRITERS_FILE);
    File::open(writers)
        .ok()
        .is_some_and(|f| !sys::lock_exclusive(&f, false).unwrap_or(false))
}

/// After a crash: removes each [`leftover_tmp`] of `rec_dir`, then fsyncs
/// the directory. None holds a record: a recording writes into a file
/// only once its name appeared (`file::prepare_at` and `Pool::take` name
/// the file before they return it), so a file still under its temporary
/// name, with a recording's header or not, is a preparation the crash
/// caught. While a pooled recording holds the directory's writers lock
/// ([`WRITERS_FILE`](crate::pool::WRITERS_FILE)) nothing is touched.
///
/// # Errors
/// Listing, renaming, removing or syncing fails.
pub fn recover_leftovers(rec_dir: &Path) -> Result<Vec<Leftover>, Error> {
    let found = leftover_tmp(rec_dir).map_err(|e| Error::io("listing", rec_dir, e))?;
    if found.is_empty() {
        return Ok(found.into_iter().map(Leftover::Busy).collect());
    }
    if recording_now(rec_dir) {
        return Ok(found.into_iter().map(Leftover::Busy).collect());
    }
    let mut done = Vec::new();
    for tmp in found {
        std::fs::remove_file(&tmp).map_err(|e| Error::io("removing", &tmp, e))?;
        done.push(Leftover::Removed(tmp));
    }
    File::open(rec_dir)
        .and_then(|f| sys::fsync(&f))
        .map_err(|e| Error::io("syncing", rec_dir, e))?;
    Ok(done)
}
