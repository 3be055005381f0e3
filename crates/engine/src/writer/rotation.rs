//! Rotation: the recording's files and the switch from one to the next.
//! Each next file comes from the pool (waiting for it, or falling back to
//! a file of our own, as the pool's empty policy says) or is prepared as
//! the allocation strategy says ([`Rotation::next_file`]); the file size
//! and the pool are chosen before the recording by `crate::sizing`'s rule
//! ([`choose_files`]: the pool opened and recovered, an open-ended default
//! fitted to the free space) and the pool is refilled after it in
//! proportion to what was written ([`Rotation::finish_pool`]). Also the recording's names (the
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
use crate::sizing::{self, FileSizeBasis, FileSizing, SizeFrom};

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
    /// A recording of known length that takes pool files when they are
    /// ready: the exact size of a file of its own when none is (the rest
    /// of its need the ready ones left over; never a wait for the pool,
    /// never a pool-sized file).
    own_size: Option<u64>,
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
            own_size: None,
        })
    }

    /// A recording of known length: `size` is the exact size of a file of
    /// its own when the pool has none ready ([`FileChoice::own_size`]).
    pub(super) fn set_own_size(&mut self, size: Option<u64>) {
        self.own_size = size;
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

    /// True when a closed file of `size` bytes keeps its whole size (its
    /// tail not truncated at the switch): a loop's (`loops`) file of its
    /// own of the pool's size, so that the loop's retirement can recycle
    /// it into the pool and a later switch takes it. Truncated at the
    /// switch, no retired file had the pool's size, none was recycled, and
    /// the loop called `fallocate` at every switch beside an empty pool
    /// (issue 42, finding 8: "pool: 0 taken, 241 fallbacks"). Its header
    /// keeps `POOLED` clear (it did not come from the pool); its valid
    /// length counts, and the last files' tails are given back at the end
    /// ([`crate::pool::give_back_tails`]) or by `rtrec recover`.
    pub(super) fn keeps_whole(&self, loops: bool, size: u64) -> bool {
        loops && self.pool.as_ref().is_some_and(|p| p.file_size() == size)
    }

    /// The pool had no file ready: a file of our own, when the empty
    /// policy says so or it costs the recording nothing — its first file
    /// (taken before the first record, so `fallocate` there is idle time
    /// and no pool file is zero-filled for it) and every file of a
    /// recording of known length (exactly its size). `None`: wait.
    fn instead_of_pool(&self, cfg: &Config, index: u32) -> Option<Result<OpenFile, Error>> {
        let first = index == 0 && self.cur_base == self.base;
        if let Some(size) = self.own_size {
            let own = Config {
                file_size: size,
                ..cfg.clone()
            };
            return Some(self.prepare(&own, index));
        }
        (first || cfg.pool.on_empty == OnPoolEmpty::Fallocate).then(|| self.prepare(cfg, index))
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
            if let Some(f) = self.instead_of_pool(cfg, index) {
                stats.fallbacks += 1;
                return f;
            }
            // Someone must prepare: make sure the refiller runs.
            if self.refiller.is_none() {
                self.refiller = Some(pool.start_refiller());
            }
            waited_since.get_or_insert_with(sys::monotonic_ns);
            std::thread::sleep(std::time::Duration::from_millis(2));
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
            // Replace the bytes this recording wrote, up to the target (see
            // `Pool::refill_bytes`): a short recording zero-fills nothing.
            match pool.refill_bytes(report.file_bytes) {
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

/// What [`choose_files`] decided.
pub(super) struct FileChoice {
    /// The pool the recording takes its files from; `None`: files of its
    /// own.
    pub(super) pool: Option<Pool>,
    /// A recording of known length using the pool: the exact size of a
    /// file of its own when no pool file is ready (the rest of its need
    /// when the ready ones hold less than all of it).
    pub(super) own_size: Option<u64>,
}

impl FileChoice {
    /// Files of the recording's own, no pool.
    fn own() -> FileChoice {
        FileChoice {
            pool: None,
            own_size: None,
        }
    }
}

/// [`Writer::create`](super::Writer::create)'s sizing step, by
/// [`crate::sizing`]'s rule (`retirable`: what a loop's budget retires
/// before its first file, counted as free space): opens the pool (with `--alloc pool`) and
/// moves back a recording a crash left in it; then, by how the file size
/// was settled ([`Config::file_size_basis`]):
/// - given: the pool takes it (a pool of another size is resized);
/// - open-ended default: the pool's size when it stands
///   ([`Pool::size_stands`]), else the default fitted to the free space
///   ([`sizing::open_ended_file_size`]), which the pool then takes;
/// - known length: the pool's ready files (one after another when the
///   need is larger than one), then, when they do not hold it all, one
///   file of its own of exactly the rest; with none ready (or too few
///   whose files would last less than a second at the known rate), one
///   file of exactly the need; the pool is never created or resized.
///
/// `cfg.file_size` becomes the files' size; what was chosen and why goes
/// to `report.file_sizing`, warnings to `report`. Nothing is prepared: a
/// pool with no file ready gives the first file with `fallocate`.
///
/// # Errors
/// Too little space for the open-ended default; records larger than the
/// chosen files; the pool cannot be opened, recovered or resized.
pub(super) fn choose_files(
    dir: &Path,
    cfg: &mut Config,
    report: &mut WriterReport,
    retirable: u64,
) -> Result<FileChoice, Error> {
    let existing = match cfg.alloc {
        Alloc::Pool => Pool::open(dir)?,
        _ => None,
    };
    if let Some(p) = &existing {
        recover_pool(p, report)?;
    }
    let given = |from| FileSizing {
        file_size: cfg.file_size,
        from: Some(from),
        pool: false,
        free_bytes: None,
    };
    let (choice, sizing) = match (cfg.alloc, cfg.file_size_basis) {
        (Alloc::Pool, FileSizeBasis::Known { period_ns }) => {
            known_length(existing, cfg, period_ns)?
        }
        (Alloc::Pool, FileSizeBasis::Given) => {
            let sizing = given(SizeFrom::FileSize);
            (pool_of(dir, cfg, &sizing, report)?, sizing)
        }
        (Alloc::Pool, FileSizeBasis::OpenEnded { period_ns }) => {
            open_ended_in_pool(dir, existing, cfg, period_ns, report, retirable)?
        }
        (_, FileSizeBasis::OpenEnded { period_ns }) => {
            (FileChoice::own(), fitted(dir, cfg, period_ns, retirable)?)
        }
        (_, FileSizeBasis::Known { .. }) => (FileChoice::own(), given(SizeFrom::KnownLength)),
        (_, FileSizeBasis::Given) => (FileChoice::own(), given(SizeFrom::FileSize)),
    };
    cfg.file_size = sizing.file_size;
    if cfg.stored_len(cfg.max_record) > cfg.usable_file_bytes() {
        return Err(Error::Usage(format!(
            "{} cannot hold a record of {}; give a larger --file-size (the C API's file_size)",
            files_words(&sizing),
            rtrec_units::format_size(cfg.max_record as u64)
        )));
    }
    report.file_sizing = Some(sizing);
    Ok(choice)
}

/// "files of 1 MiB (a quarter of the 5.86 MiB free)": the chosen files in
/// words, for a refusal.
fn files_words(s: &FileSizing) -> String {
    let size = rtrec_units::format_size(s.file_size);
    match (s.pool, s.from, s.free_bytes) {
        (true, _, _) => format!("the pool's files ({size})"),
        (false, Some(SizeFrom::SmallCard), Some(free)) => format!(
            "files of {size} (a quarter of the {} free)",
            rtrec_units::format_size(free)
        ),
        _ => format!("files of {size}"),
    }
}

/// A recording a crash left in the pool goes back first.
fn recover_pool(p: &Pool, report: &mut WriterReport) -> Result<(), Error> {
    for (from, to) in p.recover()? {
        report.warnings.push(format!(
            "'{}' held a recording a crash interrupted; it was moved back as '{}'",
            from.display(),
            to.display()
        ));
    }
    Ok(())
}

/// The open-ended default for `dir`'s device and `cfg`'s rate (one record
/// every `period_ns`, each at most `cfg.max_record`:
/// [`sizing::default_file_size`]; on rotating media 10 s of data), fitted
/// to the free space of `dir`, counted with `retirable`: the bytes a
/// loop's budget retires before its first file (issue 42, finding 6:
/// after a kill on a full card the rule refused at every start, although
/// the budget would have freed the room).
fn fitted(
    dir: &Path,
    cfg: &Config,
    period_ns: Option<u64>,
    retirable: u64,
) -> Result<FileSizing, Error> {
    let d = File::open(dir).map_err(|e| Error::io("opening", dir, e))?;
    let free = sys::available_bytes(&d)
        .map_err(|e| Error::io("reading the free space of", dir, e))?
        .saturating_add(retirable);
    let rotating = sys::blockdev::rotational(&d).unwrap_or(false);
    let rate = period_ns.filter(|&p| p > 0).map(|p| {
        (cfg.stored_len(cfg.max_record) as u128 * 1_000_000_000 / p as u128).min(u64::MAX as u128)
            as u64
    });
    let (want, from) = sizing::default_file_size(rotating, rate);
    sizing::fitted_file_size(free, want, from).map_err(|n| Error::NoRoomForDefault {
        dir: dir.to_path_buf(),
        free_bytes: n.free_bytes,
        min_file_bytes: sizing::MIN_DEFAULT_FILE_SIZE,
    })
}

/// The pool of `dir` for files of `sizing`'s size, created or resized
/// (its idle files of another size removed, said in a warning).
fn pool_of(
    dir: &Path,
    cfg: &Config,
    sizing: &FileSizing,
    report: &mut WriterReport,
) -> Result<FileChoice, Error> {
    let from = sizing.from.unwrap_or(SizeFrom::FileSize);
    let p = Pool::open_or_create_from(dir, sizing.file_size, cfg.pool.files, from)?;
    let (p, resized) = p.resize_from(sizing.file_size, cfg.pool.files, from)?;
    if let Some(r) = resized {
        report.warnings.push(r.to_string());
    }
    Ok(FileChoice {
        pool: Some(p),
        own_size: None,
    })
}

/// An open-ended recording without a size of its own in a pooled
/// directory: the pool's size when it stands, else the fitted default.
fn open_ended_in_pool(
    dir: &Path,
    existing: Option<Pool>,
    cfg: &Config,
    period_ns: Option<u64>,
    report: &mut WriterReport,
    retirable: u64,
) -> Result<(FileChoice, FileSizing), Error> {
    if let Some(p) = existing {
        if p.size_stands()? {
            return Ok(pooled(p, None));
        }
    }
    let sizing = fitted(dir, cfg, period_ns, retirable)?;
    Ok((pool_of(dir, cfg, &sizing, report)?, sizing))
}

/// A recording of known length in a pooled directory (one record every
/// `period_ns` when the rate is known): the pool's ready files first,
/// then (when they do not hold its whole need) one file of its own of
/// exactly what they leave over; the pool is left as it is (never
/// created, resized or shrunk: a short recording cannot poison it). A
/// need that one pool file holds takes one; a longer one takes pool
/// files one after another, switching between them as an open-ended
/// recording does, rather than `fallocate` one fresh file of the whole
/// need beside an idle pool (issue 47). With no file ready it gets one
/// file of exactly its need.
///
/// Design choice, a pool with fewer ready files than the need: take what
/// is there, then allocate the rest in one file ([`known_rest`]). The
/// prepared files are used (no unwritten extent converted while writing
/// into them), one `fallocate` is made, of the shortfall only, and the
/// recording has one file more than the pool had ready. Leaving such a
/// pool idle and allocating the whole need in one file (the choice
/// before) allocated more than the shortfall and ignored what the user
/// prepared. Except when its files would last less than a second at the
/// known rate ([`sizing::MIN_FILE_SPAN_NS`], the switch rate the sizing
/// rule warns about): then the pool is left alone and the need gets one
/// file, as before, since the allocation is made anyway and a few of
/// those files would only add switches (two 64 KiB files for 800 KiB of
/// 16 KiB records at 1 ms: a switch every 3 ms at the start;
/// `tests/pool_sizing.rs`). A loop (`--keep`) short of pool files also
/// gets one file, as before: its budget counts every file at the pool's
/// size, and the rest may be larger. A pool that holds the whole need is taken
/// whatever its files' span: nothing is allocated while recording, which
/// is what a pool is prepared for.
fn known_length(
    existing: Option<Pool>,
    cfg: &Config,
    period_ns: Option<u64>,
) -> Result<(FileChoice, FileSizing), Error> {
    let need = cfg.file_size;
    let own = FileSizing {
        file_size: need,
        from: Some(SizeFrom::KnownLength),
        pool: false,
        free_bytes: None,
    };
    let Some(p) = existing else {
        return Ok((FileChoice::own(), own));
    };
    let ready = p.ready().map_err(|e| Error::io("listing", p.dir(), e))?;
    if ready.is_empty() {
        return Ok((FileChoice::own(), own));
    }
    if p.file_size() >= need {
        return Ok(pooled(p, Some(need)));
    }
    let rest = known_rest(cfg, p.file_size(), ready.len() as u64);
    let stored = cfg.stored_len(cfg.max_record);
    let span = sizing::file_span_ns(cfg.usable_bytes_of(p.file_size()), stored, period_ns);
    let short_files = span.is_some_and(|s| s < sizing::MIN_FILE_SPAN_NS);
    if rest.is_some() && (short_files || cfg.retention.loops()) {
        return Ok((FileChoice::own(), own));
    }
    Ok(pooled(p, rest))
}

/// A recording of known length (`cfg.file_size`: exactly its need) whose
/// need is larger than one pool file of `pool_size` bytes, with `ready`
/// pool files ready: the size of the file of its own it takes when they
/// are used up, `None` when they hold the whole need (a file of its own
/// is then only the pool's empty policy's, should another recording take
/// them first). One recording: what the ready files leave over. A
/// flight recorder's event: a whole event, since the pool serves every
/// event and a later one may find it empty.
fn known_rest(cfg: &Config, pool_size: u64, ready: u64) -> Option<u64> {
    let stored = cfg.stored_len(cfg.max_record).max(1);
    let header = format::HEADER_LEN as u64;
    // The need was rounded up to a page: this may count a few records
    // more than there are, never fewer.
    let records = cfg.usable_file_bytes().saturating_sub(header) / stored;
    let per_file = (cfg.usable_bytes_of(pool_size).saturating_sub(header) / stored).max(1);
    let left = records.saturating_sub(ready.saturating_mul(per_file));
    match (left, cfg.flight.is_some()) {
        (0, _) => None,
        (_, true) => Some(cfg.file_size),
        (_, false) => Some(sizing::records_file_size(left, stored).min(cfg.file_size)),
    }
}

/// The recording takes the files of `p`, of its size (and `own_size`'s
/// when none is ready, for a recording of known length).
fn pooled(p: Pool, own_size: Option<u64>) -> (FileChoice, FileSizing) {
    let sizing = FileSizing {
        file_size: p.file_size(),
        from: p.size_from(),
        pool: true,
        free_bytes: None,
    };
    let choice = FileChoice {
        pool: Some(p),
        own_size,
    };
    (choice, sizing)
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
