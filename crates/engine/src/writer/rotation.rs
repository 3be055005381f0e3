//! Rotation: the recording's files and the switch from one to the next.
//! Each next file comes from the pool (waiting for it, or falling back to
//! a file of our own, as the pool's empty policy says) or is prepared as
//! the allocation strategy says ([`Rotation::next_file`]); the pool is
//! opened and recovered before the recording ([`open_pool`]) and refilled
//! after it ([`Rotation::finish_pool`]). Also the recording's names (the
//! base claimed for it, a flight-recorder event's), its random recording
//! id, and append mode's reserve file.
//!
//! Writing the end frame of the file switched from, and making the next
//! file the current one, are the writer's: they go through its frames and
//! the flusher.

use std::fs::File;
use std::path::{Path, PathBuf};

use rtrec_sys as sys;

use crate::config::{Alloc, Config, OnPoolEmpty};
use crate::error::Error;
use crate::file::{self, OpenFile};
use crate::format::{self, FileHeader};
use crate::pool::{Pool, Refiller};

use super::report::{PoolStats, WriterReport};

/// The recording's files (see the module docs).
pub(super) struct Rotation {
    /// The recording directory.
    dir: PathBuf,
    /// The recording's name (files are `BASE-NNNN.rtr`).
    base: String,
    /// The name of the files being written: `base`, or an event's.
    cur_base: String,
    /// Keeps `base` taken until the writer is dropped (see
    /// [`file::NameClaim`]).
    _name_claim: file::NameClaim,
    /// The index of the next file.
    cur_index: u32,
    pool: Option<Pool>,
    refiller: Option<Refiller>,
    /// The recording id stored in each file header (new for each event).
    recording_id: u64,
    /// Append mode: the reserve file deleted to make room for the closing
    /// frames when the disk is full.
    reserve: Option<PathBuf>,
}

impl Rotation {
    /// The files of a recording in `dir`: claims its name, creates the
    /// reserve file (append mode) and starts the pool's refiller (when it
    /// refills while recording). No file is opened yet.
    pub(super) fn new(dir: &Path, cfg: &Config, pool: Option<Pool>) -> Result<Rotation, Error> {
        let (base, name_claim) = file::claim_recording_base(dir, cfg)?;
        let reserve = if cfg.alloc == Alloc::Append {
            Some(file::create_reserve(dir, &base)?)
        } else {
            None
        };
        let refiller = match &pool {
            Some(p) if cfg.pool.refill_while_recording => Some(p.start_refiller()),
            _ => None,
        };
        Ok(Rotation {
            dir: dir.to_path_buf(),
            cur_base: base.clone(),
            base,
            _name_claim: name_claim,
            cur_index: 0,
            pool,
            refiller,
            recording_id: format::new_recording_id(),
            reserve,
        })
    }

    /// The recording directory.
    pub(super) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The recording's name.
    pub(super) fn base(&self) -> &str {
        &self.base
    }

    /// The index the next file gets.
    pub(super) fn index(&self) -> u32 {
        self.cur_index
    }

    /// Flight recorder: the files of event `event` come next, from index
    /// 0, under a new recording id.
    pub(super) fn begin_event(&mut self, event: u64) {
        self.cur_base = format!("{}-ev{event:05}", self.base);
        self.cur_index = 0;
        self.recording_id = format::new_recording_id();
    }

    /// Gets the next file: from the pool, or as the strategy (or the
    /// pool's empty policy) says; `stats` counts how the pool served.
    pub(super) fn next_file(
        &mut self,
        cfg: &Config,
        stats: &mut PoolStats,
    ) -> Result<OpenFile, Error> {
        let index = self.cur_index;
        let f = match self.pool.clone() {
            None => self.prepare(cfg, index)?,
            Some(pool) => self.take(&pool, cfg, index, stats)?,
        };
        self.cur_index += 1;
        Ok(f)
    }

    /// A file of our own (no pool, or the pool's fallback).
    fn prepare(&self, cfg: &Config, index: u32) -> Result<OpenFile, Error> {
        file::prepare(
            &self.dir,
            &self.cur_base,
            index,
            cfg,
            sys::realtime_ns(),
            self.recording_id,
        )
    }

    /// A file taken from `pool` as file `index`; when none is ready, as
    /// the pool's empty policy says: a file of our own, or a wait for the
    /// refiller (started if it was not running).
    fn take(
        &mut self,
        pool: &Pool,
        cfg: &Config,
        index: u32,
        stats: &mut PoolStats,
    ) -> Result<OpenFile, Error> {
        let path = self
            .dir
            .join(file::file_name(&self.cur_base, index, cfg.framing));
        let header = FileHeader {
            flags: cfg.header_flags() | format::FLAG_OPEN,
            generation: 0,
            created_ns: 0,
            created_mono_ns: 0,
            config_digest: cfg.digest(),
            valid_len: 0,
            recording_id: self.recording_id,
            index,
        };
        let mut waited_since = None;
        loop {
            if let Some(f) = pool.take(&path, header.clone())? {
                stats.taken += 1;
                if let Some(t0) = waited_since {
                    stats.waits += 1;
                    stats.wait_ns += sys::monotonic_ns() - t0;
                }
                return Ok(f);
            }
            match cfg.pool.on_empty {
                OnPoolEmpty::Fallocate => {
                    stats.fallbacks += 1;
                    return self.prepare(cfg, index);
                }
                OnPoolEmpty::Wait => {
                    // Someone must prepare: make sure the refiller runs.
                    if self.refiller.is_none() {
                        self.refiller = Some(pool.start_refiller());
                    }
                    waited_since.get_or_insert_with(sys::monotonic_ns);
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
            }
        }
    }

    /// The directories that name `f`, which the flusher syncs before any
    /// durable point inside it: the recording's, and the pool's for a
    /// pool file.
    pub(super) fn dirs(&self, f: &OpenFile) -> Vec<PathBuf> {
        let mut dirs = vec![self.dir.clone()];
        if let (Some(p), true) = (&self.pool, f.header.flags & format::FLAG_POOLED != 0) {
            dirs.push(p.dir().to_path_buf());
        }
        dirs
    }

    /// Append mode: deletes the reserve file, so its blocks are free for the
    /// closing frames (and the raw sidecar).
    pub(super) fn release_reserve(&mut self) {
        if let Some(r) = self.reserve.take() {
            let _ = std::fs::remove_file(r);
        }
    }

    /// Append mode, flight recorder: a new reserve for the next event's
    /// closing frames, if there is room for one.
    pub(super) fn renew_reserve(&mut self) {
        self.reserve = file::create_reserve(&self.dir, &self.base).ok();
    }

    /// After the recording: stops the refiller and refills the pool for
    /// the next recording (when `cfg` says so), counted in `report`; a
    /// pool that cannot be refilled is a warning.
    pub(super) fn finish_pool(&mut self, cfg: &Config, report: &mut WriterReport) {
        if let Some(r) = self.refiller.take() {
            report.pool.refilled_while_recording = r.stop();
        }
        if let (Some(pool), true) = (&self.pool, cfg.pool.refill_on_finish) {
            // Replace what this recording got, up to the target (see
            // `Pool::refill`): disk use stays what the next recording needs.
            let used = report.pool.taken + report.pool.fallbacks;
            match pool.refill(used) {
                Ok(n) => report.pool.refilled_on_finish = n as u64,
                // Every record is stored; only the next recording's start is
                // affected, so this is a warning, not a recording error.
                Err(e) => report
                    .warnings
                    .push(format!("the pool could not be refilled: {e}")),
            }
        }
    }
}

/// [`Writer::create`](super::Writer::create)'s pool step: opens (or creates) the pool, moves back
/// a recording a crash left in it, resizes a pool of another size, checks
/// that records fit its files (whose size then decides `cfg.file_size`),
/// and prepares one file when none is ready. Warnings go to `report`.
pub(super) fn open_pool(
    dir: &Path,
    cfg: &mut Config,
    report: &mut WriterReport,
) -> Result<Pool, Error> {
    let p = Pool::open_or_create(dir, cfg.file_size, cfg.pool.files)?;
    // A recording a crash left in the pool goes back first.
    for (from, to) in p.recover()? {
        report.warnings.push(format!(
            "'{}' held a recording a crash interrupted; it was moved back as '{}'",
            from.display(),
            to.display()
        ));
    }
    // Then a pool of another size is resized (its idle files only).
    let (p, resized) = p.resize(cfg.file_size, cfg.pool.files)?;
    if let Some(r) = resized {
        report.warnings.push(r.to_string());
    }
    // The pool's file size decides; check that records still fit.
    cfg.file_size = p.file_size();
    if cfg.stored_len(cfg.max_record) > cfg.usable_file_bytes() {
        return Err(Error::Usage(format!(
            "the pool's files ({} bytes) cannot hold a record of {} bytes; prepare a pool with larger files",
            p.file_size(),
            cfg.max_record
        )));
    }
    if p.ready()
        .map_err(|e| Error::io("listing", p.dir(), e))?
        .is_empty()
    {
        // Not recording yet: preparing here is idle time.
        p.prepare_one()?;
        report.pool.prepared_at_start += 1;
    }
    Ok(p)
}

/// [`Writer::create`](super::Writer::create)'s step for the recording directory's own name (it
/// may just have been created): its parent is synced once, before
/// recording. Best effort: a parent we may not read is named in a warning.
pub(super) fn sync_parent(dir: &Path, report: &mut WriterReport) {
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if let Err(e) = File::open(parent).and_then(|d| sys::fsync(&d)) {
        report.warnings.push(format!(
            "the directory '{}' could not be synced ({e}); a power cut soon after the start may lose the recording directory's name",
            parent.display()
        ));
    }
}
