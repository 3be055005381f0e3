//! The writer: turns records into frames on the current file, rotates to
//! the next file when one is full, stores every loss as a frame, times each
//! frame's write, and feeds the flusher. In inline mode the caller's thread
//! drives it; in ring mode the writer thread does. How a frame's bytes reach
//! the file is the storage back-end's business ([`crate::io`], chosen once
//! in [`Writer::create`]); the writer only asks it what it does
//! (asynchronous completions, page cache or not), never which one it is.
//!
//! Packed framing: records of consecutive sequence numbers are gathered in
//! one open frame (a buffer allocated once, [`PACKED_PAYLOAD`] bytes) and
//! written as one [`FrameKind::Packed`] frame when it is full, before a loss,
//! a trigger or the end frame, when rotating to the next file, and when its
//! oldest record has waited `max_latency_ns` (checked on each record and by
//! the writer thread's poll, [`Writer::tick`]; in inline mode, with no
//! writer thread, by the next record or the end). Records in the open frame
//! are queued, not written: they count as written only once their frame
//! is; a kill or power cut loses at most `max_latency_ns` of them (and the
//! writer poll interval), and a failed write of the frame makes them
//! records the writer accepted but could not store: counted as
//! `writer_failed` drops and covered by the loss frame the recording ends
//! with, like a failed record of its own frame.
//!
//! With an asynchronous back-end ([`Backend::is_async`]: every one but
//! `buffered` — io_uring's writes complete later, and the gathering
//! back-ends coalesce frames while the writer is behind, see [`Writer::pace`])
//! a frame's writes may complete after `put` returns: data frames wait in a small
//! ledger ([`Pending`], [`LEDGER`] entries allocated once) and count as
//! written — and are published to the flusher, so for the next durable
//! point — only when the back-end's completed offset passes their end
//! (reaped after each frame, on each poll of the writer thread, and while
//! it is idle). Every other frame (loss, trigger, end) first waits for all
//! writes in flight, and then for its own: they stay in sequence order with
//! the data frames, and a failure found then is handled before them. A
//! failed completion is handled like a failed `write()`: the frames from
//! the one it hit on are rolled back, their records counted as discarded
//! and stored as the closing loss.
//!
//! Write errors end the recording honestly (see `docs/durability.md`): a
//! failed `write()` is rolled back to the start of its frame; from then on
//! records are dropped and counted, and [`Writer::finish`] stores them as
//! one loss frame and an end frame marked aborted with the reason, in the
//! room every file keeps for them (`RESERVED_BYTES` at the end of
//! pre-allocated and pool files; in append mode, a small hidden reserve file
//! that is deleted to free its blocks when the disk is full). A file switch
//! opens the next file before closing the current one, so a next file that
//! cannot be had leaves the current one open for those closing frames.

use std::collections::VecDeque;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use rtrec_sys as sys;

use crate::config::{Alloc, Config, Flush, Framing, Mode, OnPoolEmpty};
use crate::error::{Error, Failure};
use crate::file::{self, OpenFile};
use crate::flusher::{FlushStats, Flusher};
use crate::format::{
    self, EndPayload, FileHeader, FrameKind, LossPayload, LossReason, PackedInfo, FRAME_HEADER_LEN,
    HEADER_LEN, PACKED_PAYLOAD,
};
use crate::io::{self as backend, Backend};
use crate::pool::{Pool, Refiller};
use crate::sizing::END_PAYLOAD_MAX;
use crate::stats::{Latency, LiveStats};

/// What the writer's steps return: a failure is also kept in the report
/// (the first one wins), typed, for the summary.
pub(crate) type Step = Result<(), Failure>;

/// How the file pool served the recording.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct PoolStats {
    /// Files taken from the pool.
    pub taken: u64,
    /// Files pre-allocated with fallocate because the pool was empty.
    pub fallbacks: u64,
    /// Times the writer waited for a prepared file.
    pub waits: u64,
    /// Total time waited, ns.
    pub wait_ns: u64,
    /// Files prepared when the recording was created (the pool was empty).
    pub prepared_at_start: u64,
    /// Files prepared by the background refiller while recording.
    pub refilled_while_recording: u64,
    /// Files prepared in `finish()` after the recording was closed.
    pub refilled_on_finish: u64,
}

/// What the writer did; merged into the recorder's summary.
#[derive(Debug, Default)]
pub(crate) struct WriterReport {
    pub(crate) records_written: u64,
    pub(crate) bytes_written: u64,
    pub(crate) file_bytes: u64,
    pub(crate) lost_stored: u64,
    /// Drops as the files count them (every loss frame, and the loss stored
    /// at the end): what the last end frame says.
    pub(crate) dropped: u64,
    /// Records the producer handed over (ring mode) that the writer could
    /// not store: the one whose `write()` failed and those after it.
    pub(crate) discarded: u64,
    /// The durable point at the end (see [`LiveStats::durable_seq`]).
    pub(crate) durable_seq: u64,
    pub(crate) files: Vec<PathBuf>,
    pub(crate) write_lat: Latency,
    pub(crate) write_samples: Vec<u64>,
    pub(crate) flush: FlushStats,
    /// CPU time of the thread that ran the writer, at the end of the
    /// recording (before the pool is refilled), ns.
    pub(crate) cpu_ns: u64,
    pub(crate) pool: PoolStats,
    pub(crate) error: Option<Failure>,
    pub(crate) warnings: Vec<String>,
}

/// Asynchronous back-ends: the most data frames whose writes may be in flight
/// (the writer waits for the oldest when the ledger is full).
pub(crate) const LEDGER: usize = 256;

/// Asynchronous back-ends: a data frame submitted and not yet counted as
/// written (see the module docs).
#[derive(Clone, Copy, Debug)]
struct Pending {
    /// File offsets of the frame's first byte and of its end.
    start: u64,
    end: u64,
    /// The chain value before it (restored when it fails).
    chain: u32,
    /// Its first sequence number, and the next one after it.
    first_seq: u64,
    seq_after: u64,
    /// Records and payload bytes in it.
    records: u64,
    bytes: u64,
    /// When it was submitted (`CLOCK_MONOTONIC`, ns).
    t0: u64,
}

/// Packed framing: the frame being filled (see the module docs).
struct OpenPack {
    /// [`PackedInfo`] space, then each record behind its LEB128 length.
    buf: Vec<u8>,
    /// Records in it (0: no open frame).
    count: u32,
    /// Their payload bytes.
    bytes: u64,
    /// Sequence number and time of the first record.
    first_seq: u64,
    first_ts: u64,
    /// Time of the last record.
    last_ts: u64,
}

/// See the module docs.
pub(crate) struct Writer {
    dir: PathBuf,
    base: String,
    cfg: Config,
    cur: Option<OpenFile>,
    cur_base: String,
    /// Keeps `base` taken until the writer is dropped (see
    /// [`file::NameClaim`]).
    _name_claim: file::NameClaim,
    cur_index: u32,
    pool: Option<Pool>,
    refiller: Option<Refiller>,
    flusher: Flusher,
    hdr: [u8; FRAME_HEADER_LEN],
    /// The recording id stored in each file header (new for each event).
    recording_id: u64,
    /// CRC of the last frame written: the next frame's link.
    chain: u32,
    /// Raw framing: chunk sums of the current file, and of the closed ones.
    raw_sum: format::RawSummer,
    raw_sums: Vec<format::RawFileSums>,
    /// Append mode: the reserve file deleted to make room for the closing
    /// frames when the disk is full.
    reserve: Option<PathBuf>,
    /// The current file failed: records are dropped until it is closed
    /// (at the end; in flight mode, at once, so a later event can try).
    file_failed: bool,
    /// The data record whose `write()` failed, if one did.
    failed_seq: Option<u64>,
    next_seq: u64,
    dropped: u64,
    report: WriterReport,
    live: Arc<LiveStats>,
    pack: OpenPack,
    /// The storage back-end every frame goes through (see [`crate::io`]),
    /// chosen once in [`Writer::create`].
    io: Box<dyn Backend>,
    /// Asynchronous back-ends: data frames submitted, not yet counted.
    ledger: VecDeque<Pending>,
    /// The last frame `put`: its start offset, the chain before it, its
    /// first sequence number, when it was submitted.
    last_put: (u64, u32, u64, u64),
    /// The completed offset last given to the flusher.
    advanced: u64,
    /// Ring mode, the writer behind: the back-end coalesces frames (see
    /// [`Writer::pace`]).
    coalescing: bool,
    /// Ring mode, caught up: the back-end holds unwritten bytes from this
    /// file offset since this time (`CLOCK_MONOTONIC` ns; see
    /// [`Writer::pace`]).
    held: Option<(u64, u64)>,
}

impl Writer {
    /// Creates the writer in named steps: the pool ([`open_pool`]), the
    /// directory's name ([`sync_parent`]), the back-end, chosen once
    /// ([`crate::io::open`]), the flush thread ([`start_flusher`]), then
    /// the first file (not in flight mode: event files come with
    /// triggers).
    pub(crate) fn create(dir: &Path, cfg: &Config, live: Arc<LiveStats>) -> Result<Writer, Error> {
        file::check_dir(dir)?;
        let mut cfg = cfg.clone();
        let mut report = WriterReport {
            write_samples: Vec::with_capacity(cfg.keep_write_samples),
            files: Vec::with_capacity(16),
            ..WriterReport::default()
        };
        let pool = match cfg.alloc {
            Alloc::Pool => Some(open_pool(dir, &mut cfg, &mut report)?),
            _ => None,
        };
        sync_parent(dir, &mut report);
        let opened = backend::open(&cfg)
            .map_err(|e| Error::io("allocating the write back-end's buffers for", dir, e))?;
        report.warnings.extend(opened.warning);
        let io = opened.backend;
        // A refused back-end's fallback is the one the recording states.
        cfg.io = io.io();
        let flusher = start_flusher(dir, &cfg, io.as_ref(), &live)?;
        let (base, name_claim) = file::claim_recording_base(dir, &cfg)?;
        let reserve = if cfg.alloc == Alloc::Append {
            Some(file::create_reserve(dir, &base)?)
        } else {
            None
        };
        let refiller = match &pool {
            Some(p) if cfg.pool.refill_while_recording => Some(p.start_refiller()),
            _ => None,
        };
        let mut w = Writer {
            dir: dir.to_path_buf(),
            cur_base: base.clone(),
            base,
            _name_claim: name_claim,
            cur: None,
            cur_index: 0,
            pool,
            refiller,
            flusher,
            hdr: [0; FRAME_HEADER_LEN],
            recording_id: format::new_recording_id(),
            chain: 0,
            raw_sum: format::RawSummer::default(),
            raw_sums: Vec::new(),
            reserve,
            file_failed: false,
            failed_seq: None,
            next_seq: 0,
            dropped: 0,
            report,
            live,
            pack: OpenPack {
                buf: Vec::new(),
                count: 0,
                bytes: 0,
                first_seq: 0,
                first_ts: 0,
                last_ts: 0,
            },
            ledger: VecDeque::with_capacity(if io.is_async() { LEDGER } else { 0 }),
            io,
            last_put: (0, 0, 0, 0),
            advanced: 0,
            coalescing: false,
            held: None,
            cfg,
        };
        if w.cfg.framing == Framing::Packed {
            w.pack.buf.reserve_exact(PACKED_PAYLOAD);
        }
        if w.cfg.flight.is_none() {
            if let Err(e) = w.next_file().and_then(|f| w.install(f)) {
                w.release_reserve();
                return Err(e);
            }
        }
        Ok(w)
    }

    /// The recording's name (files are `BASE-NNNN.rtr`, events `BASE-evNNNNN-NNNN.rtr`).
    #[allow(dead_code)]
    pub(crate) fn base(&self) -> &str {
        &self.base
    }

    /// Gets the next file of `cur_base`: from the pool, or as the strategy
    /// (or the pool's empty policy) says. [`Writer::install`] makes it the
    /// current one.
    fn next_file(&mut self) -> Result<OpenFile, Error> {
        let index = self.cur_index;
        // A file of our own (no pool, or the pool's fallback).
        let prepare = |w: &Self| {
            file::prepare(
                &w.dir,
                &w.cur_base,
                index,
                &w.cfg,
                sys::realtime_ns(),
                w.recording_id,
            )
        };
        let f = match self.pool.clone() {
            None => prepare(self)?,
            Some(pool) => {
                let path = self
                    .dir
                    .join(file::file_name(&self.cur_base, index, self.cfg.framing));
                let header = FileHeader {
                    flags: self.cfg.header_flags() | format::FLAG_OPEN,
                    generation: 0,
                    created_ns: 0,
                    created_mono_ns: 0,
                    config_digest: self.cfg.digest(),
                    valid_len: 0,
                    recording_id: self.recording_id,
                    index,
                };
                let mut waited_since = None;
                loop {
                    if let Some(f) = pool.take(&path, header.clone())? {
                        self.report.pool.taken += 1;
                        if let Some(t0) = waited_since {
                            self.report.pool.waits += 1;
                            self.report.pool.wait_ns += sys::monotonic_ns() - t0;
                        }
                        break f;
                    }
                    match self.cfg.pool.on_empty {
                        OnPoolEmpty::Fallocate => {
                            self.report.pool.fallbacks += 1;
                            break prepare(self)?;
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
        };
        self.cur_index += 1;
        Ok(f)
    }

    /// Makes `f` the current file; the flusher syncs it and the directories
    /// naming it (the pool's too, for a pool file) before any durable point
    /// inside it.
    fn install(&mut self, f: OpenFile) -> Result<(), Error> {
        let mut dirs = vec![self.dir.clone()];
        if let (Some(p), true) = (&self.pool, f.header.flags & format::FLAG_POOLED != 0) {
            dirs.push(p.dir().to_path_buf());
        }
        if let Err(e) = self.io.start(&f.file, f.offset) {
            let e = Error::io("preparing the write back-end for", &f.path, e);
            // Kept open: its reserved room takes the closing frames.
            self.cur = Some(f);
            return Err(e);
        }
        self.report.files.push(f.path.clone());
        let mark = self.cfg.framing.has_frames().then(|| {
            crate::flusher::FileMark::new(f.header.clone(), self.io.bypasses_page_cache())
        });
        let r = self
            .flusher
            .switch(f.file.clone(), dirs, self.next_seq, mark);
        self.cur = Some(f);
        r.map_err(|e| Error::io("syncing", &self.dir, e))
    }

    /// Append mode: deletes the reserve file, so its blocks are free for the
    /// closing frames (and the raw sidecar).
    fn release_reserve(&mut self) {
        if let Some(r) = self.reserve.take() {
            let _ = std::fs::remove_file(r);
        }
    }

    /// Flight recorder: opens the first file of event `event`, whose records
    /// start at `first_seq`.
    pub(crate) fn begin_event(&mut self, event: u64, first_seq: u64) -> Step {
        self.live.events.store(event + 1, Ordering::Relaxed);
        self.cur_base = format!("{}-ev{event:05}", self.base);
        self.cur_index = 0;
        self.recording_id = format::new_recording_id();
        self.next_seq = first_seq;
        self.open_next_or_fail()
    }

    /// [`Writer::open_next`] while recording: a failure (e.g. no space for
    /// the next file) is kept typed, with its errno.
    fn open_next_or_fail(&mut self) -> Step {
        self.next_file()
            .and_then(|f| self.install(f))
            .map_err(|e| self.fail(Failure::from_error(&e)))
    }

    /// Marks `args` in the trace ([`Config::trace_marker`]), in ring mode
    /// only: in inline mode this runs on the producer's thread, which is
    /// never marked.
    fn mark(&self, args: std::fmt::Arguments<'_>) {
        if let (Some(m), Mode::Ring) = (&self.cfg.trace_marker, self.cfg.mode) {
            m.mark(args);
        }
    }

    /// Keeps the first failure for the summary and hands it back.
    fn fail(&mut self, f: Failure) -> Failure {
        self.mark(format_args!("writer failed: {:?}", f.kind));
        self.file_failed = true;
        self.report.error.get_or_insert_with(|| f.clone());
        f
    }

    /// Flight recorder: closes the current event's file after a write
    /// failure, the same way a recording ends after one (the failed record
    /// stored as a loss, the end frame aborted with the reason), and clears
    /// the failure so the next trigger can open a new event. The summary
    /// keeps the first failure. `post`: the post-trigger span and records
    /// captured.
    pub(crate) fn abort_event(&mut self, post: (u64, u64)) {
        let _ = self.io.wait_all();
        self.release_reserve();
        if self.cur.is_some() {
            if let Some(seq) = self.failed_seq.filter(|&s| s >= self.next_seq) {
                let loss = LossPayload {
                    first_seq: self.next_seq,
                    count: seq + 1 - self.next_seq,
                    reason: LossReason::WriterFailed,
                };
                let _ = self.store_loss(loss, sys::monotonic_ns(), false);
            }
            let reason = self
                .report
                .error
                .as_ref()
                .map(|f| format!("write error: {}", f.message))
                .unwrap_or_default();
            if self.close_current(false, false, &reason, post).is_err() {
                // Left unfinished: verify reports its intact prefix.
                self.cur = None;
            }
        }
        self.file_failed = false;
        self.failed_seq = None;
        if self.cfg.alloc == Alloc::Append {
            // Room for the next event's closing frames, if there is any.
            self.reserve = file::create_reserve(&self.dir, &self.base).ok();
        }
    }

    /// True when the data record just handed over was not stored because
    /// its own `write()` failed (flight mode counts it as dropped).
    pub(crate) fn record_failed(&self) -> bool {
        self.failed_seq.is_some()
    }

    /// Flight recorder: closes the current event's file.
    pub(crate) fn end_event(&mut self, post_ns: u64, post_records: u64) -> Step {
        self.close_current(true, false, "", (post_ns, post_records))
    }

    /// True once a write failed; later records are dropped and counted
    /// (in flight mode, until [`Writer::abort_event`]).
    pub(crate) fn failed(&self) -> bool {
        self.file_failed
    }

    /// Writes one record (packed framing: adds it to the open frame). Any
    /// gap before `seq` that no loss frame explained is stored as a loss
    /// first.
    pub(crate) fn write_data(&mut self, seq: u64, ts_ns: u64, payload: &[u8]) -> Step {
        if seq > self.next_seq {
            let gap = LossPayload {
                first_seq: self.next_seq,
                count: seq - self.next_seq,
                reason: LossReason::RingFull,
            };
            self.write_loss(gap, ts_ns)?;
        }
        if self.cfg.framing == Framing::Packed && format::packable(payload.len()) {
            let r = self.pack(seq, ts_ns, payload);
            if r.is_err() {
                self.failed_seq = Some(self.failed_seq.map_or(seq, |s| s.max(seq)));
            }
            return r;
        }
        self.seal()?;
        self.ensure_room(self.cfg.stored_len(payload.len()))?;
        let t0 = sys::monotonic_ns();
        let r = self.put(FrameKind::Data, seq, ts_ns, payload);
        let dt = sys::monotonic_ns() - t0;
        if r.is_err() {
            self.failed_seq = Some(seq);
        }
        r?;
        self.next_seq = seq + 1;
        self.wrote(1, payload.len() as u64, dt)
    }

    /// The frame just `put` holds `records` records of `bytes` bytes and
    /// took `dt` ns: counted as written now, or (asynchronous back-ends) queued in the
    /// ledger until its writes complete.
    fn wrote(&mut self, records: u64, bytes: u64, dt: u64) -> Step {
        if !self.is_async() {
            let end = self.cur.as_ref().map_or(0, |c| c.offset);
            self.count_written(records, bytes, dt, self.next_seq, end);
            return Ok(());
        }
        let (start, chain, first_seq, t0) = self.last_put;
        let end = self.cur.as_ref().map_or(start, |c| c.offset);
        self.ledger.push_back(Pending {
            start,
            end,
            chain,
            first_seq,
            seq_after: self.next_seq,
            records,
            bytes,
            t0,
        });
        let r = self.reap(false);
        if r.is_err() {
            // This frame's records are the caller's to count (as for a
            // failed `write()` of it); the frames before it were counted.
            self.report.discarded = self.report.discarded.saturating_sub(records);
        }
        r
    }

    /// True when the back-end's writes may complete later (io_uring; the
    /// gathering back-ends, while coalescing).
    fn is_async(&self) -> bool {
        self.io.is_async()
    }

    /// Asynchronous back-ends: reaps the completions that came (all, waiting
    /// for them, when `all`), counts the frames now wholly written, and
    /// handles a failed write.
    fn reap(&mut self, all: bool) -> Step {
        if !self.is_async() {
            return Ok(());
        }
        let r = if all {
            self.flush_gathered().and_then(|()| self.io.wait_all())
        } else {
            self.io.poll()
        };
        self.reaped(r)
    }

    /// After reaping (`r`: how the wait went): counts the frames the
    /// completed offset passed, or handles the first failed write.
    fn reaped(&mut self, r: io::Result<()>) -> Step {
        let g = &mut self.io;
        let err = match r {
            Err(e) => Some((g.completed_to(), e)),
            Ok(()) => g.take_error(),
        };
        if let Some((off, e)) = err {
            return Err(self.async_failed(off, Failure::from_io(&e)));
        }
        let done = g.completed_to();
        self.count_completed(done);
        Ok(())
    }

    /// Counts the ledger's frames that end at or before `done`.
    fn count_completed(&mut self, done: u64) {
        let now = sys::monotonic_ns();
        while let Some(p) = self.ledger.front().copied().filter(|p| p.end <= done) {
            self.ledger.pop_front();
            let dt = now.saturating_sub(p.t0);
            self.count_written(p.records, p.bytes, dt, p.seq_after, p.end);
        }
        if done > self.advanced {
            self.advanced = done;
            self.flusher.advance(done);
        }
    }

    /// Asynchronous back-ends: a write at file offset `off` failed with `e`.
    /// Waits for the other writes in flight; the frames before `off` are
    /// written, the rest are rolled back and their records discarded
    /// (stored as the closing loss), as after a failed `write()`.
    fn async_failed(&mut self, off: u64, e: Failure) -> Failure {
        let (mut off, mut e) = (off, e);
        let _ = self.io.wait_all();
        if let Some((o, earlier)) = self.io.take_error().filter(|(o, _)| *o < off) {
            (off, e) = (o, Failure::from_io(&earlier));
        }
        // Frames gathered and not yet written (coalescing) are not written
        // either (taken after the error, which also bounds this offset).
        off = off.min(self.io.completed_to());
        self.count_completed(off);
        let mut back = off;
        if let Some(first) = self.ledger.front().copied() {
            back = first.start;
            self.chain = first.chain;
            self.next_seq = first.first_seq;
            let mut last = first.first_seq;
            for p in self.ledger.drain(..) {
                self.report.discarded += p.records;
                last = last.max(p.seq_after.saturating_sub(1));
            }
            self.failed_seq = Some(self.failed_seq.map_or(last, |s| s.max(last)));
        }
        let mut f = e;
        if let Some(cur) = self.cur.as_mut() {
            f = f.context(&format!("writing '{}'", cur.path.display()));
            if back < cur.offset {
                cur.offset = back;
            }
            let _ = self.io.rollback(&cur.file, cur.offset);
        }
        self.fail(f)
    }

    /// Asynchronous back-ends: waits for all writes in flight and counts them
    /// (before a frame that must follow them, and at the end).
    fn settle(&mut self) -> Step {
        self.reap(true)
    }

    /// Writes what the back-end has gathered and not yet written, if any.
    fn flush_gathered(&mut self) -> io::Result<()> {
        let (from, t) = (self.io.unwritten_from(), sys::monotonic_ns());
        match &self.cur {
            Some(cur) => self.io.flush(&cur.file)?,
            None => return Ok(()),
        }
        self.restamp(from, t);
        Ok(())
    }

    /// The frames in the ledger whose last bytes were held or gathered
    /// (unwritten from file offset `from` when the call that started at
    /// `t` began) and have now been written or submitted: their `write()`
    /// time starts at `t`.
    ///
    /// Design choice: a frame's `write()` latency is that of the write
    /// that ends it, from its submission, as for a frame written at once;
    /// the wait before it (for the next frame, at most `max_latency_ns`,
    /// or for a buffer to fill while behind) is not the storage's time,
    /// and counted in it the `write()` figure of a `direct` recording
    /// would grow by the record period. When the frame is *written* still
    /// follows the completion (the counters, the durable point).
    fn restamp(&mut self, from: Option<u64>, t: u64) {
        let Some(from) = from else { return };
        let sent = self.io.unwritten_from().unwrap_or(u64::MAX);
        for p in self.ledger.iter_mut().rev() {
            if p.end <= from {
                break;
            }
            if p.end <= sent {
                p.t0 = t;
            }
        }
    }

    /// Ring mode: the writer thread calls [`Writer::pace`] after every
    /// frame and when idle, so the back-end may hold a frame's partial
    /// last block for the next frame ([`crate::io::Backend::hold_tail`];
    /// inline mode writes every frame through to its last byte).
    ///
    /// Not with packed framing: a packed frame's records have already
    /// waited up to `max_latency_ns` in the open frame, and a held block
    /// could add as much again to the span a kill or power cut loses.
    pub(crate) fn hold_tails(&mut self) {
        if self.cfg.framing != Framing::Packed {
            self.io.hold_tail(true);
        }
    }

    /// Ring mode, after each frame and when idle, at `now`
    /// (`CLOCK_MONOTONIC` ns): whether the writer is `behind` (see
    /// [`crate::io::coalesce_next`]) and whether another frame is
    /// `waiting` in the ring. While behind, the back-end coalesces frames
    /// into larger writes; once it has caught up, what is gathered is
    /// written at once and each frame is written through again.
    ///
    /// Caught up, a partial last block held back ([`Writer::hold_tails`])
    /// is written once it has waited `max_latency_ns` with no frame
    /// coming to write it whole: the bound packed framing puts on a
    /// record's wait, so a kill or power cut loses no more of the last
    /// frame than of a packed frame's records. Frames that come closer
    /// together than that are written block by block, each block once.
    pub(crate) fn pace(&mut self, behind: bool, waiting: bool, now: u64) -> Step {
        if behind != self.coalescing {
            self.coalescing = behind;
            self.io.coalesce(behind);
            if !behind {
                self.held = None;
                let r = self.flush_gathered();
                return self.reaped(r);
            }
        }
        if behind || waiting {
            return Ok(());
        }
        let Some(from) = self.io.unwritten_from() else {
            self.held = None;
            return Ok(());
        };
        // Since when the first unwritten byte is held: a new offset means
        // the bytes held before it were written meanwhile.
        let since = match self.held {
            Some((at, t)) if at == from => t,
            _ => {
                self.held = Some((from, now));
                now
            }
        };
        if now.saturating_sub(since) < self.cfg.max_latency_ns {
            return Ok(());
        }
        self.held = None;
        let r = self.flush_gathered();
        self.reaped(r)
    }

    /// Ring mode, nothing to write: waits for a write in flight, if any,
    /// and counts what completed; false (nothing waited) otherwise, so the
    /// writer thread sleeps its poll interval.
    pub(crate) fn wait_in_flight(&mut self) -> Result<bool, Failure> {
        if !self.io.in_flight() {
            return Ok(false);
        }
        let r = self.io.wait_one();
        self.reaped(r)?;
        Ok(true)
    }

    /// Counts records as written by one `write()` that took `dt` ns; every
    /// record before `seq_after` is written, in frames that end at `end`.
    fn count_written(&mut self, records: u64, bytes: u64, dt: u64, seq_after: u64, end: u64) {
        self.report.write_lat.record(dt);
        if self.report.write_samples.len() < self.report.write_samples.capacity() {
            self.report.write_samples.push(dt);
        }
        self.report.records_written += records;
        self.report.bytes_written += bytes;
        // Everything before `seq_after` is now written (packed framing: the
        // open frame was just written whole).
        self.flusher.publish(seq_after, end);
        self.live
            .records_written
            .store(self.report.records_written, Ordering::Relaxed);
        self.live
            .bytes_written
            .store(self.report.bytes_written, Ordering::Relaxed);
        self.live.max_write_ns.fetch_max(dt, Ordering::Relaxed);
    }

    /// Packed framing: adds a record to the open frame, writing the frame
    /// first when the record does not fit in it (or its file), and after
    /// when the frame's first record has waited `max_latency_ns`.
    fn pack(&mut self, seq: u64, ts_ns: u64, payload: &[u8]) -> Step {
        let add = format::leb128_len(payload.len()) + payload.len();
        if self.pack.count > 0 {
            let framed = (FRAME_HEADER_LEN + self.pack.buf.len() + add) as u64;
            let in_file = self
                .cur
                .as_ref()
                .is_some_and(|c| c.offset + framed <= self.cfg.usable_file_bytes());
            if self.pack.buf.len() + add > PACKED_PAYLOAD || !in_file {
                self.seal()?;
            }
        }
        if self.pack.count == 0 {
            self.ensure_room((FRAME_HEADER_LEN + PackedInfo::LEN + add) as u64)?;
            self.pack.buf.clear();
            self.pack.buf.extend_from_slice(&[0; PackedInfo::LEN]);
            self.pack.first_seq = seq;
            self.pack.first_ts = ts_ns;
        }
        // Within the capacity reserved at creation: no allocation.
        format::put_leb128(&mut self.pack.buf, payload.len());
        self.pack.buf.extend_from_slice(payload);
        self.pack.count += 1;
        self.pack.bytes += payload.len() as u64;
        self.pack.last_ts = ts_ns;
        self.next_seq = seq + 1;
        self.tick(ts_ns)
    }

    /// Packed framing: writes the open frame when its first record has
    /// waited `max_latency_ns` at `now` (`CLOCK_MONOTONIC`). The writer
    /// thread calls it on each poll, so a frame never waits for the next
    /// record.
    pub(crate) fn tick(&mut self, now: u64) -> Step {
        self.reap(false)?;
        if self.pack.count > 0 && now.saturating_sub(self.pack.first_ts) >= self.cfg.max_latency_ns
        {
            self.seal()?;
        }
        Ok(())
    }

    /// Packed framing: writes the open frame, if any, as one packed frame.
    fn seal(&mut self) -> Step {
        if self.pack.count == 0 {
            return Ok(());
        }
        let info = PackedInfo {
            count: self.pack.count,
            span_ns: self.pack.last_ts.saturating_sub(self.pack.first_ts),
        };
        self.pack.buf[..PackedInfo::LEN].copy_from_slice(&info.encode());
        let (records, bytes) = (self.pack.count as u64, self.pack.bytes);
        (self.pack.count, self.pack.bytes) = (0, 0);
        // Taken out for the call and put back: no allocation.
        let buf = std::mem::take(&mut self.pack.buf);
        let t0 = sys::monotonic_ns();
        let r = self.put(
            FrameKind::Packed,
            self.pack.first_seq,
            self.pack.first_ts,
            &buf,
        );
        let dt = sys::monotonic_ns() - t0;
        self.pack.buf = buf;
        match r.and_then(|()| self.wrote(records, bytes, dt)) {
            Ok(()) => Ok(()),
            Err(e) => {
                // Not stored: from the open frame's first record on (or an
                // earlier frame's, when a write in flight failed too), the
                // recording ends with a loss frame (see `finish`), and these
                // records count as accepted but not stored.
                self.report.discarded += records;
                self.next_seq = self.next_seq.min(self.pack.first_seq);
                let last = self.pack.first_seq + records - 1;
                self.failed_seq = Some(self.failed_seq.map_or(last, |s| s.max(last)));
                Err(e)
            }
        }
    }

    /// Stores that `loss.count` records from `loss.first_seq` were dropped.
    pub(crate) fn write_loss(&mut self, loss: LossPayload, ts_ns: u64) -> Step {
        self.store_loss(loss, ts_ns, true)
    }

    /// [`Writer::write_loss`]; `rotate`: may move to the next file for room
    /// (false after a failure: the frame goes into the reserved room).
    fn store_loss(&mut self, loss: LossPayload, ts_ns: u64, rotate: bool) -> Step {
        // Frames stay in sequence order: the open frame goes first, and the
        // writes in flight complete before.
        self.seal()?;
        self.settle()?;
        self.dropped += loss.count;
        self.next_seq = self.next_seq.max(loss.first_seq + loss.count);
        if self.cfg.framing == Framing::Raw {
            // Raw files cannot hold a loss; the sidecar stores the count.
            self.report.lost_stored += loss.count;
            let end = self.cur.as_ref().map_or(0, |c| c.offset);
            self.flusher.publish(self.next_seq, end);
            return Ok(());
        }
        if rotate {
            self.ensure_room(FRAME_HEADER_LEN as u64 + LossPayload::LEN as u64)?;
        }
        self.put(FrameKind::Loss, loss.first_seq, ts_ns, &loss.encode())?;
        self.report.lost_stored += loss.count;
        let end = self.cur.as_ref().map_or(0, |c| c.offset);
        self.flusher.publish(self.next_seq, end);
        Ok(())
    }

    /// Ring mode: a record handed over by the producer that the writer did
    /// not store (its `write()` failed, or an earlier one did). The loss is
    /// stored at the end; this counts it for the summary.
    pub(crate) fn discard(&mut self) {
        self.report.discarded += 1;
    }

    /// Writes a frame of another kind (the flight recorder's trigger).
    #[allow(dead_code)]
    pub(crate) fn write_marker(
        &mut self,
        kind: FrameKind,
        seq: u64,
        ts_ns: u64,
        payload: &[u8],
    ) -> Step {
        if self.cfg.framing == Framing::Raw {
            return Ok(());
        }
        self.seal()?;
        self.settle()?;
        self.ensure_room(self.cfg.stored_len(payload.len()))?;
        self.put(kind, seq, ts_ns, payload)
    }

    /// Rotates to the next file when `need` more bytes do not fit.
    fn ensure_room(&mut self, need: u64) -> Step {
        let Some(cur) = self.cur.as_ref() else {
            return Err(self.fail(Failure::closed()));
        };
        if cur.offset + need <= self.cfg.usable_file_bytes() || need > self.cfg.usable_file_bytes()
        {
            return Ok(());
        }
        // The next file first: if there is none, the current one stays
        // open and its reserved room takes the loss and the end frame.
        let index = self.cur_index;
        self.mark(format_args!("begin writer switch to file {index}"));
        let next = match self.next_file() {
            Ok(f) => f,
            Err(e) => {
                self.mark(format_args!("end writer switch to file {index}"));
                return Err(self.fail(Failure::from_error(&e)));
            }
        };
        let r = self.close_current(true, true, "", (0, 0)).and_then(|()| {
            self.install(next)
                .map_err(|e| self.fail(Failure::from_error(&e)))
        });
        self.mark(format_args!("end writer switch to file {index}"));
        r
    }

    /// One frame, one `writev()` (or `write()` for raw payloads), retried
    /// only for short writes and EINTR.
    ///
    /// A failed call is rolled back: the file position goes back to the
    /// frame's start (a partial frame there is overwritten by the closing
    /// frames, or cut off at close) and the chain to the frame before.
    ///
    /// Asynchronous back-ends: a data frame's writes are left in flight (see
    /// [`Writer::wrote`]); any other frame's are waited for here.
    fn put(&mut self, kind: FrameKind, seq: u64, ts_ns: u64, payload: &[u8]) -> Step {
        if self.is_async() && matches!(kind, FrameKind::Data | FrameKind::Packed) {
            // A full ledger: the oldest frame's writes first, before this
            // frame is submitted (a failure then is an earlier frame's).
            while self.ledger.len() == LEDGER {
                let r = self.flush_gathered().and_then(|()| self.io.wait_one());
                self.reaped(r)?;
            }
        }
        let (start, chain) = (self.cur.as_ref().map(|c| c.offset), self.chain);
        self.last_put = (start.unwrap_or(0), chain, seq, sys::monotonic_ns());
        let held = self.io.unwritten_from();
        let r = self.put_inner(kind, seq, ts_ns, payload).and_then(|()| {
            self.restamp(held, self.last_put.3);
            if !self.is_async() || matches!(kind, FrameKind::Data | FrameKind::Packed) {
                return Ok(());
            }
            self.flush_gathered()?;
            self.io.wait_all()?;
            match self.io.take_error() {
                Some((_, e)) => Err(e.into()),
                None => Ok(()),
            }
        });
        r.map_err(|e| {
            self.chain = chain;
            if self.is_async() {
                // Earlier frames' writes may have failed too: the rollback
                // goes to the first frame hit.
                return self.async_failed(start.unwrap_or(0), e);
            }
            // Which file, for the one sentence (the error path only).
            let e = match &self.cur {
                Some(cur) => e.context(&format!("writing '{}'", cur.path.display())),
                None => e,
            };
            if let (Some(cur), Some(start)) = (self.cur.as_mut(), start) {
                cur.offset = start;
                let _ = self.io.rollback(&cur.file, start);
            }
            self.fail(e)
        })
    }

    fn put_inner(&mut self, kind: FrameKind, seq: u64, ts_ns: u64, payload: &[u8]) -> Step {
        let cur = self.cur.as_mut().ok_or_else(Failure::closed)?;
        let f: &File = &cur.file;
        let (mut head, body): (&[u8], &[u8]) = (&[], payload);
        if self.cfg.framing.has_frames() {
            // A file's first frame links to the header, every later one to
            // the frame before it (see the format module's chaining).
            let prev = if cur.offset == HEADER_LEN as u64 {
                format::chain_seed(&cur.header)
            } else {
                self.chain
            };
            self.chain = format::encode_frame_header(
                &mut self.hdr,
                cur.header.generation,
                kind,
                seq,
                ts_ns,
                prev,
                payload,
            );
            head = &self.hdr;
        }
        self.io.write(f, head, body)?;
        cur.offset += (head.len() + body.len()) as u64;
        if self.cfg.framing == Framing::Raw {
            self.raw_sum.update(body);
        }
        if !self.io.is_async() {
            self.flusher.advance(cur.offset);
        }
        Ok(())
    }

    fn close_current(
        &mut self,
        complete: bool,
        continued: bool,
        reason: &str,
        post: (u64, u64),
    ) -> Step {
        self.seal()?;
        self.settle()?;
        if self.cfg.framing.has_frames() {
            let end = EndPayload {
                complete,
                continued,
                records_written: self.report.records_written,
                records_dropped: self.dropped,
                bytes_written: self.report.bytes_written,
                post_ns: post.0,
                post_records: post.1,
                reason: reason.to_string(),
            };
            let mut bytes = end.encode();
            bytes.truncate(END_PAYLOAD_MAX);
            let seq = self.next_seq;
            self.put(FrameKind::End, seq, sys::monotonic_ns(), &bytes)?;
        }
        let Some(mut cur) = self.cur.take() else {
            return Err(self.fail(Failure::closed()));
        };
        self.report.file_bytes += cur.offset;
        if self.cfg.framing == Framing::Raw {
            let name = cur
                .path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned());
            let sums = self.raw_sum.finish_file(name.unwrap_or_default());
            self.raw_sums.push(sums);
        }
        // No durable mark after the final header (the flusher may be about
        // to write one).
        self.flusher.closing();
        self.io
            .stop(&cur.file)
            .and_then(|()| file::close(&mut cur, self.cfg.framing))
            .map_err(|e| {
                let f = Failure::from_io(&e).context(&format!("closing '{}'", cur.path.display()));
                self.fail(f)
            })?;
        // Fsynced: durable once its name is too. The flusher publishes that
        // after syncing the directories for the next file, `finish` after
        // syncing the directory itself.
        Ok(())
    }

    /// Ends the recording: stores drops up to `end_seq`, writes the end frame,
    /// truncates, fsyncs, stops the flusher, writes the raw sidecar.
    ///
    /// After a write failure the records from the failed one to `end_seq`
    /// are stored as one loss frame (reason `writer-failed`) and the end
    /// frame is marked aborted with the failure's sentence, whatever
    /// `complete` says.
    pub(crate) fn finish(mut self, end_seq: u64, complete: bool, reason: &str) -> WriterReport {
        // The writes in flight first: a failure among them is stored below.
        if !self.failed() {
            let _ = self.settle();
        }
        let failed = self.failed();
        if failed {
            self.release_reserve();
        }
        if end_seq > self.next_seq && self.cur.is_some() {
            let gap = LossPayload {
                first_seq: self.next_seq,
                count: end_seq - self.next_seq,
                reason: if failed {
                    LossReason::WriterFailed
                } else {
                    LossReason::RingFull
                },
            };
            let _ = self.store_loss(gap, sys::monotonic_ns(), !failed);
        }
        if end_seq > self.next_seq {
            // Could not be stored (no file was left open): still counted.
            self.dropped += end_seq - self.next_seq;
            self.next_seq = end_seq;
        }
        let failure = self
            .report
            .error
            .as_ref()
            .filter(|_| failed)
            .map(|f| f.message.clone());
        let (complete, reason) = match &failure {
            Some(m) => (false, format!("write error: {m}")),
            None => (complete, reason.to_string()),
        };
        let closed = if self.cur.is_some() {
            self.close_current(complete, false, &reason, (0, 0))
        } else {
            Ok(())
        };
        self.release_reserve();
        // The last file's name too (the flusher may not have got to it).
        if closed.is_ok() && File::open(&self.dir).and_then(|d| sys::fsync(&d)).is_ok() {
            self.live
                .durable_seq
                .fetch_max(self.next_seq, Ordering::AcqRel);
        }
        if let Err(e) = closed {
            // Already kept when it was the first failure.
            self.fail(e);
        }
        self.report.cpu_ns = sys::thread_cpu_ns();
        self.report.flush = self.flusher.stop();
        if let Some(r) = self.refiller.take() {
            self.report.pool.refilled_while_recording = r.stop();
        }
        if let (Some(pool), true) = (&self.pool, self.cfg.pool.refill_on_finish) {
            // Replace what this recording got, up to the target (see
            // `Pool::refill`): disk use stays what the next recording needs.
            let used = self.report.pool.taken + self.report.pool.fallbacks;
            match pool.refill(used) {
                Ok(n) => self.report.pool.refilled_on_finish = n as u64,
                // Every record is stored; only the next recording's start is
                // affected, so this is a warning, not a recording error.
                Err(e) => self
                    .report
                    .warnings
                    .push(format!("the pool could not be refilled: {e}")),
            }
        }
        if self.cfg.framing == Framing::Raw {
            self.write_sidecar(complete, &reason);
        }
        self.report.dropped = self.dropped;
        self.report.durable_seq = self.live.durable_seq.load(Ordering::Acquire);
        self.report
    }

    fn write_sidecar(&mut self, complete: bool, reason: &str) {
        let meta = serde_json::json!({
            "format": "rtrec-raw-sidecar-2",
            "files": self.report.files,
            "chunk_bytes": format::RAW_CHUNK,
            "file_sums": self.raw_sums,
            "complete": complete,
            "reason": reason,
            "records_written": self.report.records_written,
            "records_dropped": self.dropped,
            "bytes_written": self.report.bytes_written,
            "config": self.cfg,
        });
        let path = self.dir.join(format!("{}.meta.json", self.base));
        let r = sys::create_new(&path).and_then(|mut f| {
            use std::io::Write;
            f.write_all(
                serde_json::to_string_pretty(&meta)
                    .unwrap_or_default()
                    .as_bytes(),
            )?;
            sys::fsync(&f)
        });
        if let Err(e) = r {
            self.fail(Failure::from_io(&e).context(&format!("writing '{}'", path.display())));
        }
    }
}

/// [`Writer::create`]'s pool step: opens (or creates) the pool, moves back
/// a recording a crash left in it, resizes a pool of another size, checks
/// that records fit its files (whose size then decides `cfg.file_size`),
/// and prepares one file when none is ready. Warnings go to `report`.
fn open_pool(dir: &Path, cfg: &mut Config, report: &mut WriterReport) -> Result<Pool, Error> {
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

/// [`Writer::create`]'s step for the recording directory's own name (it
/// may just have been created): its parent is synced once, before
/// recording. Best effort: a parent we may not read is named in a warning.
fn sync_parent(dir: &Path, report: &mut WriterReport) {
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

/// [`Writer::create`]'s flusher step. A back-end that bypasses the page
/// cache leaves no dirty page to write back: the flush thread then only
/// makes the durability points (a device cache flush).
fn start_flusher(
    dir: &Path,
    cfg: &Config,
    io: &dyn Backend,
    live: &Arc<LiveStats>,
) -> Result<Flusher, Error> {
    let flush_cfg = if io.bypasses_page_cache() {
        Config {
            flush: Flush::None,
            ..cfg.clone()
        }
    } else {
        cfg.clone()
    };
    Flusher::start(&flush_cfg, live.clone())
        .map_err(|e| Error::io("starting the flush thread for", dir, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Io;
    use crate::reader::{verify_file, FileStatus};

    /// Caught up, a frame's partial last block waits for the next frame
    /// (which writes it whole) for at most `max_latency_ns`; until then
    /// the frame is not counted as written, and after it the block is
    /// written alone and the frame counted.
    #[test]
    fn a_held_last_block_is_written_by_the_next_frame_or_after_its_bound() {
        for io in [Io::Direct, Io::Buffered] {
            held_last_block(io);
        }
    }

    fn held_last_block(io: Io) {
        let dir = tempfile::tempdir().unwrap();
        let cfg = Config {
            io,
            alloc: Alloc::Zero,
            framing: Framing::Framed,
            file_size: 4 << 20,
            ..Config::default()
        };
        let bound = cfg.max_latency_ns;
        let mut w = Writer::create(dir.path(), &cfg, Arc::new(LiveStats::default())).unwrap();
        w.hold_tails();
        let t0 = 1_000_000_000;
        // Frames of 5,000 bytes and more end inside a 4 KiB block (the
        // unit of direct writes on ext4): the first two are written by the
        // frame after each, within the bound.
        for seq in 0..3u64 {
            w.write_data(seq, seq, &[seq as u8; 5000]).unwrap();
            w.pace(false, false, t0 + seq).unwrap();
            w.reap(false).unwrap();
            assert_eq!(
                w.report.records_written, seq,
                "frame {seq}: held, not written"
            );
        }
        // No frame comes: the block is written once it has waited the bound.
        w.pace(false, false, t0 + 2 + bound - 1).unwrap();
        assert_eq!(w.report.records_written, 2);
        w.pace(false, false, t0 + 2 + bound).unwrap();
        w.reap(false).unwrap();
        assert_eq!(w.report.records_written, 3);
        let report = w.finish(3, true, "");
        assert!(report.error.is_none(), "{:?}", report.error);
        let r = verify_file(&report.files[0]).unwrap();
        assert_eq!(r.status, FileStatus::Complete, "{:?}", r.notes);
        assert_eq!(r.records, 3);
    }

    /// While the writer is behind, the `direct` and `uring-buffered`
    /// back-ends gather frames: they are not counted as written (nor
    /// published for a durable point) until the writer has caught up and
    /// the gathered bytes are written; the file then verifies whole.
    #[test]
    fn frames_gathered_while_behind_count_as_written_only_once_written() {
        for io in [Io::Direct, Io::UringBuffered] {
            let dir = tempfile::tempdir().unwrap();
            let cfg = Config {
                io,
                alloc: Alloc::Zero,
                framing: Framing::Framed,
                file_size: 4 << 20,
                ..Config::default()
            };
            let mut w = Writer::create(dir.path(), &cfg, Arc::new(LiveStats::default())).unwrap();
            if w.io.io() != io {
                // The kernel refused io_uring: the buffered fallback does
                // not coalesce.
                continue;
            }
            w.pace(true, true, 0).unwrap();
            for seq in 0..20 {
                w.write_data(seq, seq, &[seq as u8; 1000]).unwrap();
            }
            assert_eq!(w.report.records_written, 0, "{io}: gathered, not written");
            w.pace(false, false, 0).unwrap();
            w.settle().unwrap();
            assert_eq!(w.report.records_written, 20, "{io}");
            let report = w.finish(20, true, "");
            assert!(report.error.is_none(), "{io}: {:?}", report.error);
            let r = verify_file(&report.files[0]).unwrap();
            assert_eq!(r.status, FileStatus::Complete, "{io}: {:?}", r.notes);
            assert_eq!(r.records, 20, "{io}");
        }
    }
}
