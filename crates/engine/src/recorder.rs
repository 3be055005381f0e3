//! The recorder: the public object a real-time application holds. It owns
//! the producer end of the data path (ring mode) or the writer itself (inline
//! mode), assigns sequence numbers and timestamps, counts every drop, and
//! assembles the [`Summary`] at the end.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;

use rtrb::Producer;
use serde::{Deserialize, Serialize};

use rtrec_sys as sys;

use crate::config::{Config, Mode, OnFull, RtConfig};
use crate::error::{Error, Failure};
use crate::flight::{Flight, FlightStats};
use crate::flusher::FlushStats;
use crate::format::{LossPayload, LossReason};
use crate::ring::{self, PendingLoss, RingShared, ENTRY_DATA, ENTRY_LOSS, ENTRY_TRIGGER};
use crate::schedule::PeriodicTimer;
use crate::stats::LiveStats;
use crate::stats::{Latency, LatencySummary};
use crate::writer::{PoolStats, Writer, WriterReport};
use crate::writer_thread::{self, ThreadReport};

/// Why `record()` did not store a record. The record is counted as dropped
/// and the loss is stored in the file (never silent).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// The ring was full (the writer is behind): drop-newest.
    #[error("the ring is full; the record was dropped and counted")]
    RingFull,
    /// The record is larger than the configured maximum.
    #[error("the record is larger than the configured maximum; it was dropped and counted")]
    TooLarge,
    /// Writing failed earlier (see the summary's `error`).
    #[error("the writer has failed; the record was dropped and counted")]
    WriterFailed,
}

impl RecordError {
    fn reason(self) -> LossReason {
        match self {
            RecordError::RingFull => LossReason::RingFull,
            RecordError::TooLarge => LossReason::TooLarge,
            RecordError::WriterFailed => LossReason::WriterFailed,
        }
    }
}

/// Drop counters by reason.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Drops {
    /// Ring full (writer behind).
    pub ring_full: u64,
    /// Larger than `max_record`.
    pub too_large: u64,
    /// After a write error.
    pub writer_failed: u64,
}

impl Drops {
    fn count(&mut self, e: RecordError) {
        match e {
            RecordError::RingFull => self.ring_full += 1,
            RecordError::TooLarge => self.too_large += 1,
            RecordError::WriterFailed => self.writer_failed += 1,
        }
    }
    /// All drops.
    pub fn total(&self) -> u64 {
        self.ring_full + self.too_large + self.writer_failed
    }
}

/// What a recording did. This struct is the `--json` schema of
/// `rtrec record`; field names carry their unit.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Summary {
    /// The configuration used.
    pub config: Config,
    /// True when the recording ended as asked (not aborted), no write
    /// failed and nothing was dropped: every record offered is in the files.
    pub complete: bool,
    /// Why it was aborted, when it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub abort_reason: Option<String>,
    /// `record()` calls.
    pub records_offered: u64,
    /// Records accepted by `record()`: copied into the ring (ring mode) or
    /// written (inline mode). See `docs/durability.md`.
    pub records_queued: u64,
    /// Records stored in files (`write()` returned): they survive the death
    /// of the process.
    pub records_written: u64,
    /// Records dropped (all reasons); every one is stored as a loss frame
    /// (or, when no file could take it, counted in the last end frame). The
    /// last file's end frame stores the same number.
    pub records_dropped: u64,
    /// Every record with a smaller sequence number is on storage or its
    /// loss is: what survives a power cut. At the end of a recording whose
    /// files closed cleanly, equal to `records_offered`.
    pub durable_seq: u64,
    /// Drops by reason.
    pub drops: Drops,
    /// A recording with a layout ([`Config::layout`]): records whose
    /// length is not the layout's size. They are recorded all the same
    /// (never dropped for it): a reader decoding by the layout will refuse
    /// them, so they are counted here, at record time. 0 without a layout.
    #[serde(default)]
    pub layout_misfits: u64,
    /// Dropped records whose loss frame is in a file.
    pub losses_stored: u64,
    /// Payload bytes stored.
    pub bytes_written: u64,
    /// File bytes including headers and frames.
    pub file_bytes: u64,
    /// The files written, in order.
    pub files: Vec<PathBuf>,
    /// Periods whose release was missed (see [`PeriodicTimer`]).
    pub missed_periods: u64,
    /// Latency of each record's `write()`/`writev()` call, ns.
    pub write_ns: Option<LatencySummary>,
    /// Latency of `record()` on the caller's thread, ns: from a clock read
    /// at its entry to one before its return, the histogram update
    /// included ([`Recorder::record`]).
    pub record_ns: Option<LatencySummary>,
    /// Lateness of each period's release against the schedule, ns.
    pub lateness_ns: Option<LatencySummary>,
    /// What the flush thread did.
    pub flush: FlushStats,
    /// CPU time of the writer thread, ns (ring mode; `None` in inline mode,
    /// where the caller's thread writes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub writer_cpu_ns: Option<u64>,
    /// How the file pool served the recording.
    pub pool: PoolStats,
    /// The files' size and why (`crate::sizing`'s rule): given, the
    /// pool's, the open-ended default (fitted to the free space), or a
    /// known length's exact need. Absent from earlier summaries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_sizing: Option<crate::sizing::FileSizing>,
    /// A loop recording (or the flight recorder's event limit): files
    /// retired while recording (recycled into the pool or deleted; they
    /// are no longer in `files`).
    #[serde(default)]
    pub retired_files: u64,
    /// Bytes of those files (header and frames).
    #[serde(default)]
    pub retired_bytes: u64,
    /// The loop: the sequence number after the last retired record (the
    /// records below it were retired); 0 when none was.
    #[serde(default)]
    pub retired_seq_to: u64,
    /// Flight-recorder events retired whole by `keep_events`.
    #[serde(default)]
    pub retired_events: u64,
    /// A loop recording: files of the directory's earlier, closed
    /// recordings retired to keep the directory within the budget (the
    /// budget is the directory's, see `docs/unattended.md`).
    #[serde(default)]
    pub retired_earlier_files: u64,
    /// Bytes those files took on disk.
    #[serde(default)]
    pub retired_earlier_bytes: u64,
    /// Of the retired files, those the retire thread had not reached by
    /// the next file switch: the writer deleted them itself, so that the
    /// directory stayed within its bound (`docs/unattended.md`).
    #[serde(default)]
    pub retired_late_files: u64,
    /// Retired files kept on disk because the RETIRED claim or the
    /// directory's retirement record naming them could not be made
    /// durable (a file leaves only after what names it is on the disk).
    #[serde(default)]
    pub retired_unclaimed: u64,
    /// A loop in a shipped directory (`rtrec ship`'s ledger `.shipped`
    /// is there, or `--unshipped-headroom` was given): of
    /// `retired_earlier_files`, those of recordings the ledger did not say
    /// were shipped, retired beyond the headroom or by the age limit
    /// (docs/unattended.md, "The budget knows"). 0 otherwise.
    #[serde(default)]
    pub retired_unshipped_files: u64,
    /// Bytes those files took on disk.
    #[serde(default)]
    pub retired_unshipped_bytes: u64,
    /// A loop recording: empty recordings it owned (no record, no loss:
    /// restarts whose source ended at once), removed when it started, so
    /// they do not accumulate (`docs/unattended.md`, "What the budget
    /// owns").
    #[serde(default)]
    pub retired_empty_recordings: u64,
    /// A loop recording with `--keep-scope dir`: the recordings it retired
    /// (whole or in part) that it does not own, by name. Empty otherwise:
    /// a loop's budget retires only its own recordings by default.
    #[serde(default)]
    pub retired_other_recordings: Vec<String>,
    /// Writes submitted again after the kernel gave them up for a
    /// transient reason: io_uring completions of `-ECANCELED`, `-EINTR` or
    /// `-EAGAIN`, which signals cause (a worker thread that could not
    /// start). Each was written in the end, or its failure is `error`.
    #[serde(default)]
    pub io_resubmitted: u64,
    /// What the flight recorder did (flight mode only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flight: Option<FlightStats>,
    /// Triggers asked for with [`Recorder::trigger`].
    pub triggers: u64,
    /// Records that found the ring full and waited for room
    /// ([`OnFull::Block`]; always 0 under [`OnFull::Drop`]).
    pub ring_waits: u64,
    /// Time `record()` spent waiting for room in all, ns.
    pub ring_wait_ns: u64,
    /// The longest single wait for room, ns.
    pub ring_wait_max_ns: u64,
    /// Wall time from creation to the end of `finish()`, ns.
    pub duration_ns: u64,
    /// The first failure while recording, if any: its kind, errno and
    /// sentence (`"error": {"kind", "errno", "message"}` in JSON). Records
    /// after it were dropped and counted as `writer_failed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<Failure>,
    /// The last file's end frame was written and says the recording is
    /// complete. With `error`, the failure came after it (closing the file:
    /// its final truncate, header or sync), so the file reads as complete
    /// while whether its tail reached the disk is unknown; without, the
    /// usual end. False when the end frame says aborted or was not
    /// written. Not in the JSON summary (`error` says what failed).
    #[serde(skip)]
    pub end_complete: bool,
    /// Settings that could not be applied (e.g. real-time priority without
    /// the privilege); the recording ran without them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Raw `write()` latencies (only with `keep_write_samples`).
    #[serde(skip)]
    pub write_samples: Vec<u64>,
    /// Raw `record()` latencies in call order, as many as
    /// `keep_write_samples` allows (the same clock reads as
    /// `record_latency`).
    #[serde(skip)]
    pub record_samples: Vec<u64>,
    /// The full `write()` latency histogram (lossless export).
    #[serde(skip)]
    pub write_latency: Latency,
    /// The full `record()` latency histogram.
    #[serde(skip)]
    pub record_latency: Latency,
}

impl Summary {
    /// Adds the schedule's lateness and missed periods (from the caller's
    /// periodic timer).
    pub fn attach_schedule(&mut self, timer: &PeriodicTimer) {
        self.lateness_ns = timer.lateness().summary();
        self.missed_periods = timer.missed();
    }
}

/// Under [`OnFull::Block`]: spin this many times for room before sleeping
/// (a writer that is just behind frees room within microseconds).
const WAIT_SPINS: u32 = 1000;
/// Then sleep this long between looks (the writer polls every
/// `writer_poll_us`, so a shorter sleep would only burn CPU).
const WAIT_SLEEP: std::time::Duration = std::time::Duration::from_micros(50);

/// The waits of `record()` for room under [`OnFull::Block`].
#[derive(Clone, Copy, Debug, Default)]
struct Waits {
    count: u64,
    total_ns: u64,
    max_ns: u64,
}

impl Waits {
    fn add(&mut self, ns: u64) {
        self.count += 1;
        self.total_ns += ns;
        self.max_ns = self.max_ns.max(ns);
    }
}

enum Inner {
    Ring {
        producer: Producer<u8>,
        shared: Arc<RingShared>,
        thread: Option<JoinHandle<ThreadReport>>,
    },
    Inline {
        writer: Option<Box<Writer>>,
    },
}

/// Records periodic data into files in a directory.
///
/// # Real-time contract
///
/// In [`Mode::Ring`] (the default), once [`Recorder::create`] has returned,
/// [`Recorder::record`] copies the record into a pre-allocated, pre-faulted
/// ring and returns: it allocates nothing, takes no lock, makes no system
/// call (the clock is read through the vDSO) and never waits. When the ring
/// is full the record is dropped, counted and the loss stored in the file
/// (drop-newest). Under [`OnFull::Block`] (opt-in, for producers that can
/// wait, such as a pipe) `record()` instead waits for room when the ring is
/// full, which makes system calls; while the ring has room it is the same
/// wait-free copy. In [`Mode::Inline`] the caller's thread calls `write()`
/// itself, which is what the published study measures.
///
/// # Example
///
/// ```no_run
/// let dir = std::path::Path::new("/tmp");
/// let mut rec = rtrec_engine::Recorder::create(dir, rtrec_engine::Config::default())?;
/// rec.record(b"sample")?;
/// let summary = rec.finish()?;
/// assert_eq!(summary.records_written, 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Recorder {
    cfg: Config,
    inner: Inner,
    next_seq: u64,
    pending: Option<PendingLoss>,
    pending_triggers: u64,
    triggers: u64,
    drops: Drops,
    /// The layout's record size, when the recording has one.
    layout_size: Option<usize>,
    /// Records of another size than the layout's (a plain counter: only
    /// the producer's thread touches it).
    layout_misfits: u64,
    waits: Waits,
    record_lat: Latency,
    record_samples: Vec<u64>,
    /// The last `record()` call's time, not yet in `record_lat` and
    /// `record_samples`: the next call adds it (so that the histogram
    /// update is inside a call's measured time), the summary adds the last.
    unsettled_ns: Option<u64>,
    started_ns: u64,
    finished: bool,
    live: Arc<LiveStats>,
    /// A pooled recording's shared lock on `.pool/writers`, held until the
    /// recorder is dropped ([`crate::pool::WritersLock`]).
    _writing: Option<crate::pool::WritersLock>,
    /// See [`Recorder::start_notes`].
    start_notes: Vec<String>,
}

impl Recorder {
    /// Validates `cfg`, prepares the first file in `dir` (allocation happens
    /// here, so too little space is found before the first record), starts
    /// the flush thread and, in ring mode, the writer thread.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] for an impossible configuration, [`Error::Usage`]
    /// for an unusable directory,
    /// [`Error::NoSpace`] when the pre-allocation does not fit, [`Error::Io`]
    /// for other system errors. Nothing that looks like a recording is left
    /// behind on error.
    pub fn create(dir: &Path, mut cfg: Config) -> Result<Recorder, Error> {
        cfg.validate()?;
        let started_ns = sys::monotonic_ns();
        let live = Arc::new(LiveStats::default());
        // The ring first: a ring that cannot be allocated leaves no file.
        let mut ring = match cfg.mode {
            Mode::Ring => Some(ring::new_prefaulted(cfg.ring_bytes)?),
            Mode::Inline => None,
        };
        let writer = Writer::create(dir, &cfg, live.clone())?;
        // The size the files got (the pool's, or the open-ended default
        // fitted to the free space): what `config()` and the summary say.
        cfg.file_size = writer.file_size();
        // A loop's budget as fitted to the card (clamped when larger).
        cfg.retention = writer.retention().clone();
        let start_notes = writer.start_notes().to_vec();
        // The writer has opened (or made) the pool: say we write here.
        let writing = (cfg.alloc == crate::config::Alloc::Pool)
            .then(|| crate::pool::WritersLock::take(dir))
            .flatten();
        let inner = match cfg.mode {
            Mode::Inline => Inner::Inline {
                writer: Some(Box::new(writer)),
            },
            Mode::Ring => {
                let (producer, consumer) = ring.take().expect("allocated above in ring mode");
                live.ring_capacity_bytes
                    .store(cfg.ring_bytes as u64, Ordering::Relaxed);
                let shared = Arc::new(RingShared::new());
                let thread = spawn_writer_thread(dir, &cfg, consumer, writer, &shared, &live)?;
                Inner::Ring {
                    producer,
                    shared,
                    thread: Some(thread),
                }
            }
        };
        // Reserved now: record() pushes within it and never allocates.
        let record_samples = Vec::with_capacity(cfg.keep_write_samples);
        let layout_size = cfg.layout_size();
        Ok(Recorder {
            cfg,
            inner,
            next_seq: 0,
            pending: None,
            pending_triggers: 0,
            triggers: 0,
            drops: Drops::default(),
            layout_size,
            layout_misfits: 0,
            waits: Waits::default(),
            record_lat: Latency::new(),
            record_samples,
            unsettled_ns: None,
            started_ns,
            finished: false,
            live,
            _writing: writing,
            start_notes,
        })
    }

    /// What the recording says once, at its start, for the caller to
    /// show at once: a disk budget clamped to the card, recordings a
    /// `--keep-scope dir` budget retired that the loop does not own.
    /// Each is also in the summary's warnings.
    pub fn start_notes(&self) -> &[String] {
        &self.start_notes
    }

    /// The configuration in use.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Counters for a progress display, readable from any thread while
    /// recording.
    pub fn live(&self) -> Arc<LiveStats> {
        self.live.clone()
    }

    /// The sequence number the next record will get.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// Records one record. See the real-time contract on [`Recorder`].
    ///
    /// Its measured time (the summary's `record_ns`) runs from its first
    /// clock read, at entry, to its second, after the record is queued or
    /// its drop counted. The histogram update is inside it: each call adds
    /// the previous call's time to the histogram on entry, the summary the
    /// last one. Left out are only the instructions before the first read
    /// samples the clock and after the second does (entry, storing the
    /// time, return).
    ///
    /// # Errors
    ///
    /// The record was dropped (and counted, and the loss stored); see
    /// [`RecordError`]. Recording goes on.
    #[inline]
    pub fn record(&mut self, data: &[u8]) -> Result<(), RecordError> {
        self.record_since(sys::monotonic_ns(), data)
    }

    /// [`Recorder::record`] for a caller that read the monotonic clock
    /// itself on entry (`entry_ns`, [`rtrec_sys::monotonic_ns`]): its
    /// measured time then starts there. The C API reads it before its
    /// handle lookup, so that `record_ns` holds everything a C caller
    /// pays between the call and its return. `entry_ns` is also the
    /// record's timestamp.
    ///
    /// # Errors
    ///
    /// As [`Recorder::record`].
    #[inline]
    pub fn record_since(&mut self, entry_ns: u64, data: &[u8]) -> Result<(), RecordError> {
        let t0 = entry_ns;
        self.settle_record_time();
        let seq = self.next_seq;
        self.next_seq += 1;
        if self.layout_size.is_some_and(|n| n != data.len()) {
            self.layout_misfits += 1;
        }
        let r = if data.len() > self.cfg.max_record {
            Err(RecordError::TooLarge)
        } else {
            match &mut self.inner {
                Inner::Ring {
                    producer,
                    shared,
                    thread,
                } => {
                    let mut waited_since = None;
                    let r = loop {
                        if shared.failed.load(Ordering::Relaxed) {
                            break Err(RecordError::WriterFailed);
                        }
                        if Self::push_backlog(
                            producer,
                            &mut self.pending,
                            &mut self.pending_triggers,
                            seq,
                        ) && ring::push(producer, ENTRY_DATA, seq, t0, data)
                        {
                            break Ok(());
                        }
                        if self.cfg.on_full == OnFull::Drop {
                            break Err(RecordError::RingFull);
                        }
                        // OnFull::Block: the writer drains the ring; a
                        // writer thread that has ended never will.
                        if thread.as_ref().is_none_or(|t| t.is_finished()) {
                            break Err(RecordError::WriterFailed);
                        }
                        let spins = waited_since.get_or_insert((t0, 0u32));
                        spins.1 = spins.1.saturating_add(1);
                        if spins.1 < WAIT_SPINS {
                            std::hint::spin_loop();
                        } else {
                            std::thread::sleep(WAIT_SLEEP);
                        }
                    };
                    if waited_since.is_some() {
                        self.waits.add(sys::monotonic_ns() - t0);
                    }
                    r
                }
                Inner::Inline { writer } => {
                    write_inline(writer.as_deref_mut(), &self.live, seq, t0, data)
                }
            }
        };
        match r {
            Ok(()) => {
                LiveStats::bump(&self.live.records_queued);
            }
            Err(e) => {
                self.drops.count(e);
                LiveStats::bump(&self.live.records_dropped);
                let cause = match e {
                    RecordError::RingFull => &self.live.drops_ring_full,
                    RecordError::TooLarge => &self.live.drops_too_large,
                    RecordError::WriterFailed => &self.live.drops_writer_failed,
                };
                LiveStats::bump(cause);
                self.note_loss(seq, t0, e);
            }
        }
        self.unsettled_ns = Some(sys::monotonic_ns().saturating_sub(t0));
        r
    }

    /// Adds the last call's time to the `record()` histogram and samples:
    /// at the next call's entry (inside its measured time, which so holds
    /// one histogram update like every call) and before the summary.
    #[inline]
    fn settle_record_time(&mut self) {
        let Some(dt) = self.unsettled_ns.take() else {
            return;
        };
        self.record_lat.record(dt);
        // Within the capacity reserved at creation: never allocates.
        if self.record_samples.len() < self.record_samples.capacity() {
            self.record_samples.push(dt);
        }
    }

    /// Flight recorder: saves the pre-trigger window to a new event file and
    /// records the next `post` span into it. Real-time safe like
    /// [`Recorder::record`]: if the ring has no room for the trigger right
    /// now, it is kept and pushed before the next record (never lost).
    ///
    /// # Errors
    ///
    /// [`RecordError::WriterFailed`] when writing failed earlier. Without a
    /// flight configuration a trigger is counted and otherwise ignored.
    pub fn trigger(&mut self) -> Result<(), RecordError> {
        if let Inner::Ring {
            producer, shared, ..
        } = &mut self.inner
        {
            if shared.failed.load(Ordering::Relaxed) {
                return Err(RecordError::WriterFailed);
            }
            self.triggers += 1;
            self.pending_triggers += 1;
            // If it does not fit, it waits for the next record.
            Self::push_backlog(
                producer,
                &mut self.pending,
                &mut self.pending_triggers,
                self.next_seq,
            );
        } else {
            self.triggers += 1;
        }
        Ok(())
    }

    #[inline]
    fn push_triggers(producer: &mut Producer<u8>, pending: &mut u64, seq: u64) -> bool {
        while *pending > 0 {
            if !ring::push(producer, ENTRY_TRIGGER, seq, sys::monotonic_ns(), &[]) {
                return false;
            }
            *pending -= 1;
        }
        true
    }

    /// Pushes what waits to go before record `seq`, in sequence order: the
    /// pending loss (records the full ring dropped, numbered before `seq`),
    /// then the pending triggers (at `seq`). The one order for `record()`,
    /// `trigger()` and the end: an event that opens at a trigger never
    /// receives a loss of records before its first (verify would call that
    /// frame out of order). False if something did not fit; it is kept.
    #[inline]
    fn push_backlog(
        producer: &mut Producer<u8>,
        pending: &mut Option<PendingLoss>,
        triggers: &mut u64,
        seq: u64,
    ) -> bool {
        Self::push_pending(producer, pending) && Self::push_triggers(producer, triggers, seq)
    }

    /// Pushes a pending loss entry if there is one; false if it did not fit.
    #[inline]
    fn push_pending(producer: &mut Producer<u8>, pending: &mut Option<PendingLoss>) -> bool {
        match pending {
            None => true,
            Some(p) => {
                if ring::push(producer, ENTRY_LOSS, p.first_seq, p.ts_ns, &p.payload()) {
                    *pending = None;
                    true
                } else {
                    false
                }
            }
        }
    }

    /// Remembers a dropped sequence number so its loss gets stored.
    #[inline]
    fn note_loss(&mut self, seq: u64, ts_ns: u64, e: RecordError) {
        match &mut self.inner {
            Inner::Ring { .. } => match &mut self.pending {
                // Consecutive drops merge into one loss entry (the first
                // reason names it; the summary counts each reason exactly).
                // A pending loss is always pushed before any later record,
                // so drops while one is pending are always consecutive.
                Some(p) => p.count += 1,
                None => {
                    self.pending = Some(PendingLoss {
                        first_seq: seq,
                        count: 1,
                        reason: e.reason(),
                        ts_ns,
                    })
                }
            },
            Inner::Inline { writer } => {
                if let Some(w) = writer.as_mut() {
                    if !w.failed() {
                        let loss = LossPayload {
                            first_seq: seq,
                            count: 1,
                            reason: e.reason(),
                        };
                        let _ = w.write_loss(loss, ts_ns);
                    }
                }
            }
        }
    }

    /// Ends the recording: drains the ring, stores remaining losses, writes
    /// the end frame, truncates unused space and syncs it.
    ///
    /// # Errors
    ///
    /// [`Error::WriterPanicked`] when the writer thread died,
    /// [`Error::AlreadyFinished`] on a second call; an I/O error during
    /// the recording is reported in [`Summary::error`] instead, with the
    /// counts of what was stored.
    pub fn finish(mut self) -> Result<Summary, Error> {
        self.end(true, String::new())
    }

    /// Ends the recording as aborted: the end frame says so (with `reason`),
    /// and `rtrec verify` reports it as incomplete.
    pub fn abort(mut self, reason: &str) -> Result<Summary, Error> {
        self.end(false, reason.to_string())
    }

    fn end(&mut self, complete: bool, reason: String) -> Result<Summary, Error> {
        self.finished = true;
        let end_seq = self.next_seq;
        let (report, flight) = match &mut self.inner {
            Inner::Ring {
                producer,
                shared,
                thread,
            } => {
                // Not real-time any more: wait for room for what is pending.
                while (self.pending.is_some() || self.pending_triggers > 0)
                    && !shared.failed.load(Ordering::Acquire)
                {
                    let pushed = Self::push_backlog(
                        producer,
                        &mut self.pending,
                        &mut self.pending_triggers,
                        end_seq,
                    );
                    if !pushed {
                        std::thread::sleep(std::time::Duration::from_micros(200));
                    }
                    if thread.as_ref().is_some_and(|t| t.is_finished()) {
                        break;
                    }
                }
                shared.end_seq.store(end_seq, Ordering::Release);
                if let Ok(mut g) = shared.end.lock() {
                    *g = (complete, reason.clone());
                }
                shared.stop.store(true, Ordering::Release);
                let t = thread.take().ok_or(Error::AlreadyFinished)?;
                let r = t.join().map_err(|_| Error::WriterPanicked)?;
                (r.writer, r.flight)
            }
            Inner::Inline { writer } => {
                let w = writer.take().ok_or(Error::AlreadyFinished)?;
                (w.finish(end_seq, complete, &reason), None)
            }
        };
        Ok(self.summary(report, flight, complete, reason))
    }

    /// The summary of the recording the writer reported on.
    fn summary(
        &mut self,
        report: WriterReport,
        flight: Option<FlightStats>,
        complete: bool,
        reason: String,
    ) -> Summary {
        self.settle_record_time();
        // Records the writer had accepted but could not store (ring mode,
        // after a write failure) are drops for the same reason.
        self.drops.writer_failed += report.discarded;
        // The live counters too: the last `--status` line, written after
        // this, says what the summary says (the producer never counted
        // these).
        self.live
            .records_dropped
            .fetch_add(report.discarded, Ordering::Relaxed);
        self.live
            .drops_writer_failed
            .fetch_add(report.discarded, Ordering::Relaxed);
        let dropped = self.drops.total();
        let queued = match self.cfg.mode {
            Mode::Ring => self.next_seq - (dropped - report.discarded),
            Mode::Inline => report.records_written,
        };
        let abort_reason = match (&report.error, complete) {
            (Some(f), _) => Some(format!("write error: {}", f.message)),
            (None, false) => Some(reason),
            (None, true) => None,
        };
        Summary {
            config: self.cfg.clone(),
            complete: complete && report.error.is_none() && dropped == 0,
            abort_reason,
            records_offered: self.next_seq,
            records_queued: queued,
            records_written: report.records_written,
            records_dropped: dropped,
            durable_seq: report.durable_seq,
            drops: self.drops,
            layout_misfits: self.layout_misfits,
            losses_stored: report.lost_stored,
            bytes_written: report.bytes_written,
            file_bytes: report.file_bytes,
            files: report.files,
            missed_periods: 0,
            write_ns: report.write_lat.summary(),
            record_ns: self.record_lat.summary(),
            lateness_ns: None,
            flush: report.flush,
            writer_cpu_ns: (self.cfg.mode == Mode::Ring).then_some(report.cpu_ns),
            pool: report.pool,
            file_sizing: report.file_sizing,
            retired_files: report.retired.files,
            retired_bytes: report.retired.bytes,
            retired_earlier_files: report.retired.earlier_files,
            retired_earlier_bytes: report.retired.earlier_bytes,
            retired_late_files: report.retired.late,
            retired_unclaimed: report.retired.unclaimed,
            retired_unshipped_files: report.retired.unshipped_files,
            retired_unshipped_bytes: report.retired.unshipped_bytes,
            retired_empty_recordings: report.retired.empty_recordings,
            retired_other_recordings: report.retired.others,
            io_resubmitted: report.io_resubmitted,
            retired_seq_to: report.retired.seq_to,
            retired_events: report.retired.events,
            flight,
            triggers: self.triggers,
            ring_waits: self.waits.count,
            ring_wait_ns: self.waits.total_ns,
            ring_wait_max_ns: self.waits.max_ns,
            duration_ns: sys::monotonic_ns() - self.started_ns,
            error: report.error,
            end_complete: report.end_complete,
            warnings: report.warnings,
            write_samples: report.write_samples,
            record_samples: std::mem::take(&mut self.record_samples),
            write_latency: report.write_lat,
            record_latency: self.record_lat.clone(),
        }
    }
}

/// Starts the writer thread (ring mode) over `consumer`, with the flight
/// recorder's window allocated here, before recording starts.
/// Inline mode's `record()`: the producer writes itself; a failed write
/// is the recording's failure, said in [`LiveStats::writer_failed`] (the
/// writer thread says so in ring mode).
#[inline]
fn write_inline(
    writer: Option<&mut Writer>,
    live: &LiveStats,
    seq: u64,
    t0: u64,
    data: &[u8],
) -> Result<(), RecordError> {
    match writer {
        Some(w) if !w.failed() => w.write_data(seq, t0, data).map_err(|_| {
            live.writer_failed.store(true, Ordering::Release);
            RecordError::WriterFailed
        }),
        _ => Err(RecordError::WriterFailed),
    }
}

fn spawn_writer_thread(
    dir: &Path,
    cfg: &Config,
    consumer: rtrb::Consumer<u8>,
    writer: Writer,
    shared: &Arc<RingShared>,
    live: &Arc<LiveStats>,
) -> Result<JoinHandle<ThreadReport>, Error> {
    let s = shared.clone();
    let (max, poll) = (cfg.max_record, cfg.writer_poll_us);
    let rt = cfg.rt.clone();
    // Allocated here, before recording starts.
    let flight = cfg.flight.clone().map(|f| Flight::new(f, cfg.max_record));
    let ring_live = live.clone();
    crate::rt::spawn_settled(
        "rtrec-writer",
        move || writer_thread_setup(&rt),
        move |warnings| {
            let mut report =
                writer_thread::run_writer(consumer, writer, s, max, poll, flight, ring_live);
            report.writer.warnings.extend(warnings);
            report
        },
    )
    .map_err(|e| Error::io("starting the writer thread for", dir, e))
}

/// The writer thread's scheduling, on that thread: the SCHED_FIFO priority
/// and CPU asked for (what could not be had is a warning, not an error).
fn writer_thread_setup(rt: &RtConfig) -> Vec<String> {
    let mut warnings = Vec::new();
    match rt.writer_priority {
        Some(p) => {
            if let Err(e) = sys::set_fifo_priority(p) {
                warnings.push(format!(
                    "{} get SCHED_FIFO priority {p}: {e}",
                    crate::rt::WRITER_SCHEDULING_FAILED
                ));
            }
        }
        // No priority asked: the normal policy, not the one
        // the creating thread may have (a writer at the
        // producer's SCHED_FIFO priority delays its periods).
        None => {
            let _ = sys::set_normal_policy();
        }
    }
    if let Some(c) = rt.writer_cpu {
        if let Err(e) = sys::pin_to_cpu(c) {
            warnings.push(format!(
                "{} be pinned to CPU {c}: {e}",
                crate::rt::WRITER_SCHEDULING_FAILED
            ));
        }
    }
    warnings
}

impl Drop for Recorder {
    fn drop(&mut self) {
        if !self.finished {
            let _ = self.end(false, "the recorder was dropped without finish()".into());
        }
    }
}
