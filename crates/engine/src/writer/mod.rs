//! The writer: turns records into frames on the current file, rotates to
//! the next file when one is full, stores every loss as a frame, times each
//! frame's write, and feeds the flusher. In inline mode the caller's thread
//! drives it; in ring mode the writer thread does. How a frame's bytes reach
//! the file is the storage back-end's business ([`crate::io`], chosen once
//! in [`Writer::create`]); the writer only asks it what it does
//! (asynchronous completions, page cache or not), never which one it is.
//!
//! Packed framing: records of consecutive sequence numbers are gathered in
//! one open frame (a buffer allocated once,
//! [`PACKED_PAYLOAD`](crate::format::PACKED_PAYLOAD) bytes, [`pack`]) and
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
//! ledger ([`ledger`]: [`Pending`](ledger::Pending), a bounded number of
//! entries allocated once) and count as
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
//!
//! The writer in parts, each after those it uses; [`Writer`] is the
//! coordinator that puts frames through them:
//!
//! | module | owns |
//! |---|---|
//! | `report` | what the writer did ([`WriterReport`], [`PoolStats`]) and [`Step`] |
//! | `pack` | packed framing's open frame and its sealing |
//! | `ledger` | the back-end, and the frames submitted to it and not yet written (how far the file is written) |
//! | `rotation` | the recording's files: the next one from the pool or of our own, names, the reserve, the pool's refill |
//! | `retire` | a loop recording's disk budget and the flight recorder's event limit: which finished files leave at a switch, the claim the next file opens with, the thread that recycles or deletes them |
//! | `losses` | which loss frame a gap or a failure needs, and the drop counts |
//! | `raw` | raw framing's chunk sums and the sidecar |
//! | `completion` | the completion bookkeeping: reaping the back-end's writes, pacing what it holds, counting frames written, rolling a failed write back |
//! | `close` | closing a file (at a switch or the end) and the recording's end, [`Writer::finish`] |
//!
//! Design choice: each part is a type of its own that never imports the
//! writer — but `completion` and `close`, which are the coordinator's own
//! steps (they move its chain, sequence numbers and report) in `impl
//! Writer` blocks of their own files, so that this one keeps a frame's
//! way through the parts — and the policy stays here — when a packed frame is sealed, which
//! frames wait for the writes in flight, when to rotate, which loss to
//! store, how a failure is rolled back. The writer holds one of each part
//! and the state every frame needs (the current file, the chain, the next
//! sequence number, the report), so the order of a frame's steps is read
//! in one place and the mechanics of each step in its part.

use std::fs::File;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use rtrec_sys as sys;

use crate::config::{Alloc, Config, Flush, Framing, Mode};
use crate::error::{Error, Failure, FailureKind};
use crate::file::{self, OpenFile};
use crate::flusher::{FileMark, Flusher};
use crate::format::{self, FrameKind, LossPayload, PackedInfo, FRAME_HEADER_LEN, HEADER_LEN};
use crate::io::{self as backend, Backend};
use crate::stats::LiveStats;

mod close;
mod completion;
mod earlier;
mod ledger;
mod losses;
mod pack;
mod raw;
mod report;
mod retire;
mod rotation;

use earlier::Earlier;
use ledger::Ledger;
use losses::Losses;
use pack::{Pack, Sealed};
use raw::RawSums;
pub use report::{PoolStats, RetireStats};
pub(crate) use report::{Step, WriterReport};
use retire::Retire;
use rotation::Rotation;

/// See the module docs. The fields drop in this order when a writer is
/// dropped unfinished (an error in [`Writer::create`], a panic): the
/// current file, then the recording's name claim and the pool's refiller,
/// then the flush thread, the back-end last.
pub(crate) struct Writer {
    cfg: Config,
    /// The file being written.
    cur: Option<OpenFile>,
    /// The recording's files and the switch to the next one.
    files: Rotation,
    flusher: Flusher,
    hdr: [u8; FRAME_HEADER_LEN],
    /// CRC of the last frame written: the next frame's link.
    chain: u32,
    /// Raw framing: chunk sums of the current file, and of the closed ones.
    raw: RawSums,
    /// The current file failed: records are dropped until it is closed
    /// (at the end; in flight mode, at once, so a later event can try).
    file_failed: bool,
    /// What was dropped, and the record whose write failed.
    losses: Losses,
    next_seq: u64,
    report: WriterReport,
    live: Arc<LiveStats>,
    /// Packed framing: the open frame.
    pack: Pack,
    /// The back-end every frame goes through, and the frames in flight.
    ledger: Ledger,
    /// The loop's budget and the flight recorder's event limit.
    retire: Retire,
    /// What the recording says once, at its start ([`Writer::start_notes`]).
    start_notes: Vec<String>,
}

/// The file of the current file, if one is open.
fn file_of(cur: &Option<OpenFile>) -> Option<&File> {
    cur.as_ref().map(|c| &*c.file)
}

impl Writer {
    /// Creates the writer in named steps: the file size and the pool
    /// ([`rotation::choose_files`]), the directory's name
    /// ([`rotation::sync_parent`]), the back-end, chosen once
    /// ([`crate::io::open`]), the flush thread ([`start_flusher`]), the
    /// recording's name ([`Rotation::new`]), then the first file (not in
    /// flight mode: event files come with triggers).
    pub(crate) fn create(dir: &Path, cfg: &Config, live: Arc<LiveStats>) -> Result<Writer, Error> {
        file::check_dir(dir)?;
        let mut cfg = cfg.clone();
        let mut report = WriterReport {
            write_samples: Vec::with_capacity(cfg.keep_write_samples),
            files: Vec::with_capacity(16),
            ..WriterReport::default()
        };
        // A loop: the directory's budget lock and what its budget owns,
        // before the sizing, which counts what it will retire as free.
        // A card that cannot pre-allocate is written with zeros instead
        // (file::reserve): said once, at the start.
        report.warnings.extend(file::fallocate_note(dir));
        let earlier = Earlier::list(dir, &cfg)?;
        let choice = rotation::choose_files(dir, &mut cfg, &mut report, earlier.bytes())?;
        let mut start_notes = Vec::new();
        for clamped in retire::fit_to_card(dir, &mut cfg, earlier.bytes(), choice.pool.as_ref())? {
            report.warnings.push(clamped.clone());
            start_notes.push(clamped);
        }
        rotation::sync_parent(dir, &mut report);
        let opened = backend::open(&cfg)
            .map_err(|e| Error::io("allocating the write back-end's buffers for", dir, e))?;
        report.warnings.extend(opened.warning);
        let io = opened.backend;
        // A refused back-end's fallback is the one the recording states.
        cfg.io = io.io();
        let mut flusher = start_flusher(dir, &cfg, io.as_ref(), &live)?;
        report.warnings.extend(flusher.take_warnings());
        let mut retire = Retire::new(&cfg, earlier, choice.pool.clone());
        // What the budget retires at the start leaves now, before the
        // first file takes its room.
        start_notes.extend(retire.start());
        let mut files = Rotation::new(dir, &cfg, choice.pool)?;
        files.set_own_size(choice.own_size);
        let mut w = Writer {
            retire,
            cur: None,
            files,
            flusher,
            hdr: [0; FRAME_HEADER_LEN],
            chain: 0,
            raw: RawSums::default(),
            file_failed: false,
            losses: Losses::default(),
            next_seq: 0,
            report,
            live,
            pack: Pack::new(cfg.framing),
            ledger: Ledger::new(io),
            cfg,
            start_notes,
        };
        if w.cfg.flight.is_none() {
            if let Err(e) = w.next_file().and_then(|f| w.install(f)) {
                w.files.release_reserve();
                return Err(e);
            }
        }
        // A loop's earlier recordings over the directory's budget leave
        // now, before the first record.
        w.hand_over_retired(None);
        Ok(w)
    }

    /// The files' size, as [`rotation::choose_files`] chose it.
    pub(crate) fn file_size(&self) -> u64 {
        self.cfg.file_size
    }

    /// The loop's budget as fitted to the card ([`retire::fit_to_card`]).
    pub(crate) fn retention(&self) -> &crate::config::Retention {
        &self.cfg.retention
    }

    /// The sentences the recording says at its start: a budget clamped to
    /// the card, recordings retired that the loop does not own (also in
    /// the summary's warnings).
    pub(crate) fn start_notes(&self) -> &[String] {
        &self.start_notes
    }

    /// The recording's name (files are `BASE-NNNN.rtr`, events `BASE-evNNNNN-NNNN.rtr`).
    #[allow(dead_code)]
    pub(crate) fn base(&self) -> &str {
        self.files.base()
    }

    /// Gets the next file ([`Rotation::next_file`]); [`Writer::install`]
    /// makes it the current one.
    fn next_file(&mut self) -> Result<OpenFile, Error> {
        self.files.next_file(&self.cfg, &mut self.report.pool)
    }

    /// Makes `f` the current file; the flusher syncs it and the directories
    /// naming it (the pool's too, for a pool file) before any durable point
    /// inside it.
    fn install(&mut self, f: OpenFile) -> Result<(), Error> {
        let dirs = self.files.dirs(&f);
        if let Err(e) = self.ledger.start(&f.file, f.offset) {
            let e = Error::io("preparing the write back-end for", &f.path, e);
            // Kept open: its reserved room takes the closing frames.
            self.cur = Some(f);
            return Err(e);
        }
        self.report.files.push(f.path.clone());
        self.retire.opened(&f.path);
        let mark = self
            .cfg
            .framing
            .has_frames()
            .then(|| FileMark::new(f.header.clone(), self.ledger.bypasses_page_cache()));
        let r = self
            .flusher
            .switch(f.file.clone(), dirs, self.next_seq, mark);
        self.cur = Some(f);
        // A failure is the recording's, kept by `fail` like a failed
        // record's: the file takes the closing frames after it.
        let _ = self.put_layout();
        r.map_err(|e| Error::io("syncing", self.files.dir(), e))
    }

    /// Writes the recording's layout ([`Config::layout`]) as the first
    /// frame of the file just installed (format version 6: every file of
    /// the recording opens with it, so no file depends on another for
    /// it), when it has one. On the writer's thread at a file's open,
    /// never in `record()`.
    fn put_layout(&mut self) -> Step {
        // Taken and put back: the frame is written from the configuration
        // without a copy.
        let Some(text) = self.cfg.layout.take() else {
            return Ok(());
        };
        let (seq, now) = (self.next_seq, sys::monotonic_ns());
        let r = self.put(FrameKind::Layout, seq, now, text.as_bytes());
        self.cfg.layout = Some(text);
        r
    }

    /// Flight recorder: opens the first file of event `event`, whose records
    /// start at `first_seq`.
    pub(crate) fn begin_event(&mut self, event: u64, first_seq: u64) -> Step {
        self.live.events.store(event + 1, Ordering::Relaxed);
        self.files.begin_event(event);
        self.next_seq = first_seq;
        self.retire.begin_event();
        self.open_next_or_fail()?;
        self.hand_over_retired(None);
        Ok(())
    }

    /// Hands the files [`Retire`] decided on to its thread; they leave the
    /// recording's file list (the oldest entries) and the live counters
    /// count them.
    fn hand_over_retired(&mut self, claim: Option<(Arc<File>, Vec<std::path::PathBuf>)>) {
        let n = self.retire.hand_over(claim).min(self.report.files.len());
        self.report.files.drain(..n);
        let (files, bytes) = self.retire.retired();
        self.live.retired_files.store(files, Ordering::Relaxed);
        self.live.retired_bytes.store(bytes, Ordering::Relaxed);
        self.live
            .retired_unclaimed
            .store(self.retire.unclaimed(), Ordering::Relaxed);
        let (files, bytes) = self.retire.retired_unshipped();
        self.live.retired_unshipped.store(files, Ordering::Relaxed);
        self.live
            .retired_unshipped_bytes
            .store(bytes, Ordering::Relaxed);
    }

    /// Opens the next file ([`Writer::next_file`], [`Writer::install`])
    /// while recording: a failure (e.g. no space for the next file) is
    /// kept typed, with its errno.
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

    /// Fails the recording because the ring holds an entry no producer
    /// makes ([`crate::ring::corrupt`]): the records from there on cannot
    /// be read, and are counted as lost at the end.
    pub(crate) fn ring_corrupt(&mut self) {
        self.fail(Failure {
            kind: FailureKind::Io,
            errno: None,
            message: "the ring between the recording thread and the writer holds an entry no single producer makes: two threads recorded into one recorder at once, which the recorder does not allow (docs/c-api.md, \"Threads\"); the records from there on are counted as lost".into(),
        });
    }

    /// The sentence an end frame gives after the recording's first
    /// failure ("write error: …"), empty without one.
    fn failure_reason(&self) -> String {
        self.report
            .error
            .as_ref()
            .map(|f| format!("write error: {}", f.message))
            .unwrap_or_default()
    }

    /// Flight recorder: closes the current event's file after a write
    /// failure, the same way a recording ends after one (the failed record
    /// stored as a loss, the end frame aborted with the reason), and clears
    /// the failure so the next trigger can open a new event. The summary
    /// keeps the first failure. `post`: the post-trigger span and records
    /// captured.
    pub(crate) fn abort_event(&mut self, post: (u64, u64)) {
        let _ = self.ledger.wait_all();
        self.files.release_reserve();
        if self.cur.is_some() {
            if let Some(loss) = self.losses.unstored(self.next_seq) {
                let _ = self.store_loss(loss, sys::monotonic_ns(), false);
            }
            let reason = self.failure_reason();
            if self.close_current(false, false, &reason, post).is_err() {
                // Left unfinished: verify reports its intact prefix.
                self.cur = None;
            }
        }
        self.file_failed = false;
        self.losses.clear_failure();
        if self.cfg.alloc == Alloc::Append {
            // Room for the next event's closing frames, if there is any.
            self.files.renew_reserve();
        }
    }

    /// True when the data record just handed over was not stored because
    /// its own `write()` failed (flight mode counts it as dropped).
    pub(crate) fn record_failed(&self) -> bool {
        self.losses.record_failed()
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
        if let Some(gap) = Losses::gap(self.next_seq, seq) {
            self.write_loss(gap, ts_ns)?;
        }
        if self.cfg.framing == Framing::Packed && format::packable(payload.len()) {
            let r = self.pack(seq, ts_ns, payload);
            if r.is_err() {
                self.losses.failed_through(seq);
            }
            return r;
        }
        self.seal()?;
        self.ensure_room(self.cfg.stored_len(payload.len()))?;
        let t0 = sys::monotonic_ns();
        let r = self.put(FrameKind::Data, seq, ts_ns, payload);
        let dt = sys::monotonic_ns() - t0;
        if r.is_err() {
            self.losses.failed_at(seq);
        }
        r?;
        self.next_seq = seq + 1;
        self.wrote(1, payload.len() as u64, dt)
    }

    /// The frame just `put` holds `records` records of `bytes` bytes and
    /// took `dt` ns: counted as written now, or (asynchronous back-ends)
    /// queued in the ledger until its writes complete.
    fn wrote(&mut self, records: u64, bytes: u64, dt: u64) -> Step {
        let end = self.cur.as_ref().map(|c| c.offset);
        if !self.ledger.is_async() {
            self.count_written(records, bytes, dt, self.next_seq, end.unwrap_or(0));
            return Ok(());
        }
        self.ledger.queue(end, self.next_seq, records, bytes);
        let r = self.reap(false);
        if r.is_err() {
            // This frame's records are the caller's to count (as for a
            // failed `write()` of it); the frames before it were counted.
            self.losses.undiscard(records);
        }
        r
    }

    /// Packed framing: adds a record to the open frame, writing the frame
    /// first when the record does not fit in it (or its file), and after
    /// when the frame's first record has waited `max_latency_ns`.
    fn pack(&mut self, seq: u64, ts_ns: u64, payload: &[u8]) -> Step {
        let add = Pack::record_len(payload.len());
        let offset = self.cur.as_ref().map(|c| c.offset);
        if self.pack.is_open() && self.pack.overflows(add, offset, self.usable()) {
            self.seal()?;
        }
        if !self.pack.is_open() {
            self.ensure_room((FRAME_HEADER_LEN + PackedInfo::LEN + add) as u64)?;
            self.pack.open(seq, ts_ns);
        }
        self.pack.add(payload, ts_ns);
        self.next_seq = seq + 1;
        self.tick(ts_ns)
    }

    /// Packed framing: the longest the writer thread may sleep at `now`
    /// with an empty ring, ns — a quarter of `max_latency_ns`, and no
    /// later than the open frame is due — so that no record waits longer
    /// than that bound (see `writer_thread`'s `Idle`). `None` for the
    /// other framings: they poll every `writer_poll_us`.
    pub(crate) fn idle_bound_ns(&self, now: u64) -> Option<u64> {
        if self.cfg.framing != Framing::Packed {
            return None;
        }
        let bound = self.cfg.max_latency_ns;
        let quarter = bound / 4;
        Some(
            self.pack
                .due_in(now, bound)
                .map_or(quarter, |d| d.min(quarter)),
        )
    }

    /// Packed framing: writes the open frame when its first record has
    /// waited `max_latency_ns` at `now` (`CLOCK_MONOTONIC`). The writer
    /// thread calls it on each poll, so a frame never waits for the next
    /// record.
    pub(crate) fn tick(&mut self, now: u64) -> Step {
        self.reap(false)?;
        if self.pack.due(now, self.cfg.max_latency_ns) {
            self.seal()?;
        }
        Ok(())
    }

    /// Packed framing: writes the open frame, if any, as one packed frame.
    fn seal(&mut self) -> Step {
        let Some(Sealed {
            buf,
            records,
            bytes,
            first_seq,
            first_ts,
        }) = self.pack.take()
        else {
            return Ok(());
        };
        let t0 = sys::monotonic_ns();
        let r = self.put(FrameKind::Packed, first_seq, first_ts, &buf);
        let dt = sys::monotonic_ns() - t0;
        // Given back: no allocation.
        self.pack.put_back(buf);
        match r.and_then(|()| self.wrote(records, bytes, dt)) {
            Ok(()) => Ok(()),
            Err(e) => {
                // Not stored: from the open frame's first record on (or an
                // earlier frame's, when a write in flight failed too), the
                // recording ends with a loss frame (see `finish`), and these
                // records count as accepted but not stored.
                self.losses.discard(records);
                self.next_seq = self.next_seq.min(first_seq);
                self.losses.failed_through(first_seq + records - 1);
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
        self.losses.drop_records(loss.count);
        self.next_seq = self.next_seq.max(loss.first_seq + loss.count);
        if self.cfg.framing != Framing::Raw {
            if rotate {
                self.ensure_room(FRAME_HEADER_LEN as u64 + LossPayload::LEN as u64)?;
            }
            self.put(FrameKind::Loss, loss.first_seq, ts_ns, &loss.encode())?;
        }
        // Raw files cannot hold a loss; the sidecar stores the count.
        self.losses.stored(loss.count);
        let end = self.cur.as_ref().map_or(0, |c| c.offset);
        self.flusher.publish(self.next_seq, end);
        Ok(())
    }

    /// Ring mode: a record handed over by the producer that the writer did
    /// not store (its `write()` failed, or an earlier one did). The loss is
    /// stored at the end; this counts it for the summary.
    pub(crate) fn discard(&mut self) {
        self.losses.discard(1);
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
        let usable = self.cfg.usable_bytes_of(cur.size);
        if cur.offset + need <= usable || need > usable {
            return Ok(());
        }
        self.switch_file()
    }

    /// Bytes records can use in the current file (the recording's files
    /// when there is none): its own size less the reserved tail, since a
    /// recording of known length's own file beside a pool may be larger
    /// than the pool's files ([`OpenFile::size`]).
    fn usable(&self) -> u64 {
        let size = self.cur.as_ref().map_or(self.cfg.file_size, |c| c.size);
        self.cfg.usable_bytes_of(size)
    }

    /// Closes the current file as continued and makes the next one
    /// current. The next file first: if there is none, the current one
    /// stays open and its reserved room takes the loss and the end frame.
    fn switch_file(&mut self) -> Step {
        let index = self.files.index();
        self.mark(format_args!("begin writer switch to file {index}"));
        // A loop's earlier hand-overs are done before the next file is
        // taken: the disk bound holds whatever the retire thread's share.
        self.retire.catch_up();
        let next = match self.next_file() {
            Ok(f) => f,
            Err(e) => {
                self.mark(format_args!("end writer switch to file {index}"));
                return Err(self.fail(Failure::from_error(&e)));
            }
        };
        let r = match self.close_current(true, true, "", (0, 0)) {
            Ok(()) => self
                .install(next)
                .map_err(|e| self.fail(Failure::from_error(&e))),
            Err(f) => {
                // The old file is gone from `cur` and its close failed:
                // the next one takes the closing frames (the loss frame
                // of what is dropped from now on, the aborted end frame),
                // so the drops are stored, not only counted. The durable
                // point stays frozen (`close_current`).
                let _ = self.install(next);
                Err(f)
            }
        };
        let r = r.and_then(|()| self.claim_retired());
        self.mark(format_args!("end writer switch to file {index}"));
        r
    }

    /// A loop recording, at a switch, the next file just installed: which
    /// finished files are retired ([`Retire::decide`]), the claim written
    /// as the new file's first frame, then the files handed over.
    fn claim_retired(&mut self) -> Step {
        if !self.retire.loops() {
            return Ok(());
        }
        let claim = self.retire.decide();
        let seq = self.next_seq;
        self.put(
            FrameKind::Retired,
            seq,
            sys::monotonic_ns(),
            &claim.encode(),
        )?;
        // The files leave once the claim is durable: the retire thread
        // syncs the file holding it and the directories naming it first.
        let holder = self
            .cur
            .as_ref()
            .map(|c| (c.file.clone(), self.files.dirs(c)));
        self.hand_over_retired(holder);
        Ok(())
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
        let data = matches!(kind, FrameKind::Data | FrameKind::Packed);
        if self.ledger.is_async() && data {
            // A full ledger: the oldest frame's writes first, before this
            // frame is submitted (a failure then is an earlier frame's).
            while self.ledger.is_full() {
                let r = self.ledger.wait_oldest(file_of(&self.cur));
                self.reaped(r)?;
            }
        }
        let (start, chain) = (self.cur.as_ref().map_or(0, |c| c.offset), self.chain);
        let held = self.ledger.begin(start, chain, seq);
        let r = self.put_inner(kind, seq, ts_ns, payload).and_then(|()| {
            self.ledger.restamp_put(held);
            if !self.ledger.is_async() || data {
                return Ok(());
            }
            self.ledger.through(file_of(&self.cur))
        });
        r.map_err(|e| self.put_failed(e, start, chain))
    }

    /// [`Writer::put`] failed with `e` for a frame at `start` after chain
    /// value `chain`: rolls back to it (asynchronous back-ends: to the
    /// first frame a failed write hit, [`Writer::async_failed`]).
    fn put_failed(&mut self, e: Failure, start: u64, chain: u32) -> Failure {
        self.chain = chain;
        if self.ledger.is_async() {
            // Earlier frames' writes may have failed too: the rollback
            // goes to the first frame hit.
            return self.async_failed(start, e);
        }
        // A synchronous write fails before the file's end moves past the
        // frame's start: the rollback writes there again.
        self.roll_back(start, e)
    }

    /// Encodes the frame (its header links to the frame before it) and
    /// hands it to the back-end at the current file's end.
    fn put_inner(&mut self, kind: FrameKind, seq: u64, ts_ns: u64, payload: &[u8]) -> Step {
        let cur = self.cur.as_mut().ok_or_else(Failure::closed)?;
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
        self.ledger.write(&cur.file, head, body)?;
        cur.offset += (head.len() + body.len()) as u64;
        if self.cfg.framing == Framing::Raw {
            self.raw.update(body);
        }
        if !self.ledger.is_async() {
            self.flusher.advance(cur.offset);
        }
        Ok(())
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
            let test = "a_held_last_block_is_written_by_the_next_frame_or_after_its_bound";
            if !rtrec_host::features::require_io(test, io.name(), &std::env::temp_dir()) {
                continue;
            }
            held_last_block(io);
        }
    }

    /// A writer of framed, zero-filled 4 MiB files in `dir` through `io`.
    fn framed_writer(dir: &Path, io: Io) -> Writer {
        let cfg = Config {
            io,
            alloc: Alloc::Zero,
            framing: Framing::Framed,
            file_size: 4 << 20,
            ..Config::default()
        };
        Writer::create(dir, &cfg, Arc::new(LiveStats::default())).unwrap()
    }

    fn held_last_block(io: Io) {
        let dir = tempfile::tempdir().unwrap();
        let mut w = framed_writer(dir.path(), io);
        let bound = w.cfg.max_latency_ns;
        w.hold_tails();
        let t0 = 1_000_000_000;
        // Frames of 5,000 bytes and more end inside a 4 KiB block (the
        // unit of direct writes on ext4): the first two are written by the
        // frame after each, within the bound.
        for seq in 0..3u64 {
            w.write_data(seq, seq, &[seq as u8; 5000]).unwrap();
            w.pace(false, false, || t0 + seq).unwrap();
            w.reap(false).unwrap();
            assert_eq!(
                w.report.records_written, seq,
                "frame {seq}: held, not written"
            );
        }
        // No frame comes: the block is written once it has waited the bound.
        w.pace(false, false, || t0 + 2 + bound - 1).unwrap();
        assert_eq!(w.report.records_written, 2);
        w.pace(false, false, || t0 + 2 + bound).unwrap();
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
            let test = "frames_gathered_while_behind_count_as_written_only_once_written";
            if !rtrec_host::features::require_io(test, io.name(), dir.path()) {
                continue;
            }
            let mut w = framed_writer(dir.path(), io);
            if w.ledger.io() != io {
                // The kernel refused io_uring: the buffered fallback does
                // not coalesce.
                continue;
            }
            w.pace(true, true, || 0).unwrap();
            for seq in 0..20 {
                w.write_data(seq, seq, &[seq as u8; 1000]).unwrap();
            }
            assert_eq!(w.report.records_written, 0, "{io}: gathered, not written");
            w.pace(false, false, || 0).unwrap();
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
