//! The flusher: a background thread of lower priority than the writer that
//! pushes written data to storage according to the [`Flush`] strategy, and
//! makes them durable every `sync_every_ns`, so no flush or sync call ever
//! runs on the producer's (or, in ring mode, the writer's) thread.
//!
//! The writing side only stores how far it has written ([`Flusher::advance`],
//! [`Flusher::publish`]) and wakes the thread when a `flush_every` boundary
//! is crossed; the thread works on whole `flush_every` chunks behind that
//! point.
//!
//! Durability (see `docs/durability.md`): when the writer switches to a new
//! file, the thread first fsyncs that file and the directories involved (the
//! recording directory and, for a pool file, the pool's), so a new file and
//! its name are on storage before any durable point inside it. Every
//! `sync_every_ns` it then reads the writer's published sequence number,
//! `fdatasync`s the file and publishes that number as the durable point
//! ([`LiveStats::durable_seq`]). The sequence number is read between two
//! reads of the file epoch: when the writer switched files meanwhile, the
//! sync is skipped (the writer's close already made the old file durable).
//!
//! **The durable mark** (format version 4, [`crate::format::FLAG_OPEN`];
//! PostgreSQL's `minRecoveryPoint` in `pg_control` is the model): after
//! each completed durability `fdatasync`, the thread rewrites the file's
//! header with `valid_len` = the offset that sync covered ([`FileMark`]).
//! The offset is the end of the last frame the writer had counted as
//! written when the sync began ([`Flusher::publish`]), so it always ends a
//! frame and never points past durable data. The header sits in one
//! sector, so it lands whole or not at all; it becomes durable itself with
//! the next sync, so after a power cut the mark lags the last durable point
//! by up to one `sync_every_ns`. The cost is one header write per sync
//! interval on this thread, never on the writer's or the producer's.
//! Through the page cache it is a 72-byte `pwrite()` into page 0; with
//! `O_DIRECT` the first 4 KiB (header and the frames behind it) are read
//! back once per file and written whole at every mark, once the writer is
//! past them (it never rewrites a block behind its partial last one), so
//! the mark starts once the frames pass 4 KiB. The writer's close takes
//! the mark's lock first ([`Flusher::closing`]): no mark is written after
//! the final header.

use std::fs::File;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use rtrec_sys as sys;

use crate::config::{Config, Flush, TraceMarker};
use crate::error::Failure;
use crate::format::{FileHeader, HEADER_LEN};
use crate::stats::{Latency, LatencySummary, LiveStats};

/// The current file, the directories whose entries name it, and its
/// durable mark (framed files).
type Target = (Arc<File>, Vec<PathBuf>, Option<Arc<FileMark>>);

/// Bytes rewritten at the start of an `O_DIRECT` file to move its mark:
/// the largest logical block size direct I/O accepts, so the write covers
/// whole blocks of any device.
const DIRECT_HEAD: usize = 4096;

/// The durable mark of one framed file: its header, rewritten with
/// [`FileHeader::with_mark`] after each durability sync, until the writer
/// closes the file (see the module docs).
pub(crate) struct FileMark {
    header: FileHeader,
    /// `O_DIRECT`: rewrite the first [`DIRECT_HEAD`] bytes whole.
    direct: bool,
    state: Mutex<MarkState>,
}

/// What one file's mark has done so far.
#[derive(Default)]
struct MarkState {
    /// Closed: the final header is the writer's.
    closed: bool,
    /// The mark written last.
    at: u64,
    /// `O_DIRECT`: the file's first [`DIRECT_HEAD`] bytes, read back once
    /// at the first mark and rewritten from here at every later one. The
    /// writer never rewrites a block behind its partial last one and the
    /// mark starts only past the first block, so only the header's bytes
    /// in it change, and those are the mark's. Read once per file, not
    /// once per durable point: on a disk each read back is a seek away
    /// from the data and back (`docs/bench.md`, "`hdd-5400`: what a
    /// durable point and a file switch cost").
    head: Option<sys::AlignedBuf>,
}

impl FileMark {
    /// The mark of a file whose header is `header`, written with `O_DIRECT`
    /// when `direct`.
    pub(crate) fn new(header: FileHeader, direct: bool) -> Arc<FileMark> {
        Arc::new(FileMark {
            header,
            direct,
            state: Mutex::new(MarkState::default()),
        })
    }

    /// Moves the mark to `off` (the frames before it are durable), unless
    /// the file is closed or the mark is there already.
    fn advance(&self, f: &File, off: u64) -> std::io::Result<()> {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if st.closed || off <= st.at.max(HEADER_LEN as u64) {
            return Ok(());
        }
        let head = self.header.with_mark(off).encode();
        if self.direct {
            if off < DIRECT_HEAD as u64 {
                // The writer may still rewrite these bytes.
                return Ok(());
            }
            if st.head.is_none() {
                let mut b = sys::AlignedBuf::new(DIRECT_HEAD, DIRECT_HEAD)?;
                if sys::pread_full(f, &mut b, 0)? < DIRECT_HEAD {
                    return Ok(());
                }
                st.head = Some(b);
            }
            let b = st.head.as_mut().expect("read above");
            b[..HEADER_LEN].copy_from_slice(&head);
            sys::pwrite_all(f, b, 0)?;
        } else {
            sys::pwrite_all(f, &head, 0)?;
        }
        st.at = off;
        Ok(())
    }

    /// The writer closes the file: no mark after this.
    fn close(&self) {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).closed = true;
    }
}

struct Shared {
    written: AtomicU64,
    epoch: AtomicU64,
    file: Mutex<Option<Target>>,
    stop: AtomicBool,
    /// The writer's next sequence number after its last write to the
    /// current file.
    seq: AtomicU64,
    /// The end of the last frame counted as written in the current file
    /// (with `seq`): where a durable mark may go.
    frames_end: AtomicU64,
    /// The writer's next sequence number when it closed (and synced) the
    /// file before the current one: durable once the directories are synced.
    closed_seq: AtomicU64,
    live: Arc<LiveStats>,
}

/// What the flush thread did.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct FlushStats {
    /// Flush calls made.
    pub flushes: u64,
    /// CPU time the flush thread used, ns.
    pub cpu_ns: u64,
    /// Latency of each flush step (one chunk), ns.
    pub flush_ns: Option<LatencySummary>,
    /// Durability syncs made (`sync_every_ns`, and the syncs of new files
    /// and their directories).
    pub syncs: u64,
    /// Latency of each durability sync, ns.
    pub sync_ns: Option<LatencySummary>,
    /// First flush failure, if any, with its errno (flushing goes on; the
    /// final fsync decides whether the recording failed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<Failure>,
}

/// Handle to the flush thread.
pub(crate) struct Flusher {
    shared: Arc<Shared>,
    every: u64,
    next_wake: u64,
    thread: Option<JoinHandle<FlushStats>>,
    /// What the thread's setup could not apply (its CPU), for the
    /// recording's warnings ([`Flusher::take_warnings`]).
    warnings: Vec<String>,
}

impl Flusher {
    /// The warnings of the thread's start: a CPU it could not be pinned
    /// to (taken once).
    pub(crate) fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }

    /// Starts the thread (none for [`Flush::None`] without `sync_every_ns`:
    /// then [`Flusher::switch`] syncs new files itself).
    pub(crate) fn start(cfg: &Config, live: Arc<LiveStats>) -> std::io::Result<Flusher> {
        let shared = Arc::new(Shared {
            written: AtomicU64::new(0),
            epoch: AtomicU64::new(0),
            file: Mutex::new(None),
            stop: AtomicBool::new(false),
            seq: AtomicU64::new(0),
            frames_end: AtomicU64::new(HEADER_LEN as u64),
            closed_seq: AtomicU64::new(0),
            live,
        });
        let every = cfg.flush_every.max(1);
        // What the thread's setup could not apply; complete when
        // `spawn_settled` returns (it waits for the setup).
        let warnings = Arc::new(Mutex::new(Vec::new()));
        let thread = if cfg.flush == Flush::None && cfg.sync_every_ns == 0 {
            None
        } else {
            let s = shared.clone();
            let (strategy, nice, cpu) = (cfg.flush, cfg.flusher_nice, cfg.rt.flusher_cpu);
            let sync_every = cfg.sync_every_ns;
            let marker = cfg.trace_marker.clone();
            let warned = warnings.clone();
            Some(crate::rt::spawn_settled(
                "rtrec-flush",
                move || {
                    // Lower priority than the writer: best effort, errors ignored
                    // (an unprivileged user may not lower a nice value it raised).
                    // A caller that raised its own thread to SCHED_FIFO before
                    // creating the recorder does not hand that policy to the
                    // flusher: a flusher above the producer would delay its
                    // periods (never an error: lowering needs no privilege).
                    let _ = sys::set_normal_policy();
                    let _ = sys::set_thread_nice(nice);
                    // The CPU was asked for: a failure is said, as the
                    // writer's is (a CPU that does not exist, or outside
                    // the process's cpuset).
                    if let Some(c) = cpu {
                        if let Err(e) = sys::pin_to_cpu(c) {
                            warned
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .push(format!(
                                    "{} be pinned to CPU {c}: {e}",
                                    crate::rt::FLUSHER_SCHEDULING_FAILED
                                ));
                        }
                    }
                },
                move |()| run(&s, strategy, every, sync_every, marker.as_ref()),
            )?)
        };
        let warnings = std::mem::take(&mut *warnings.lock().unwrap_or_else(|e| e.into_inner()));
        Ok(Flusher {
            shared,
            every,
            next_wake: every,
            thread,
            warnings,
        })
    }

    /// Points the flusher at a new file (offsets restart at 0) whose name
    /// lives in `dirs`; the thread fsyncs the file and `dirs` before any
    /// durable point inside it. `closed_seq`: every record before it is in
    /// files closed (and synced) so far. `mark`: the file's durable mark
    /// (framed files), moved after each durability sync.
    ///
    /// Without a thread the syncs happen here, on the caller's thread (only
    /// with `Flush::None` and `sync_every_ns` 0: no durability syncs, so no
    /// mark either).
    pub(crate) fn switch(
        &mut self,
        file: Arc<File>,
        dirs: Vec<PathBuf>,
        closed_seq: u64,
        mark: Option<Arc<FileMark>>,
    ) -> std::io::Result<()> {
        self.shared.closed_seq.store(closed_seq, Ordering::Release);
        self.shared.seq.store(closed_seq, Ordering::Release);
        self.shared
            .frames_end
            .store(HEADER_LEN as u64, Ordering::Release);
        if self.thread.is_none() {
            sync_new(&file, &dirs)?;
            self.shared.live.publish_durable(closed_seq);
        }
        {
            let mut g = self.shared.file.lock().unwrap_or_else(|e| e.into_inner());
            *g = Some((file, dirs, mark));
            self.shared.written.store(0, Ordering::Release);
            self.shared.epoch.fetch_add(1, Ordering::AcqRel);
        }
        self.next_wake = self.every;
        if let Some(t) = &self.thread {
            t.thread().unpark();
        }
        Ok(())
    }

    /// Publishes that every record before `seq` is written (or its loss
    /// stored) in the current file, in frames that end at `frames_end`.
    /// Three atomic stores, no system call.
    #[inline]
    pub(crate) fn publish(&self, seq: u64, frames_end: u64) {
        self.shared.frames_end.store(frames_end, Ordering::Release);
        self.shared.seq.store(seq, Ordering::Release);
        self.shared.live.written_seq.store(seq, Ordering::Release);
    }

    /// Tells the flusher the file now holds `offset` bytes; wakes it when a
    /// chunk boundary was crossed. Called by whoever writes (no lock).
    #[inline]
    pub(crate) fn advance(&mut self, offset: u64) {
        self.shared.written.store(offset, Ordering::Release);
        if offset >= self.next_wake {
            self.next_wake = (offset / self.every + 1) * self.every;
            if let Some(t) = &self.thread {
                t.thread().unpark();
            }
        }
    }

    /// The writer is about to write the current file's final header: no
    /// durable mark is written into it after this returns (a mark being
    /// written is waited for).
    pub(crate) fn closing(&self) {
        let g = self.shared.file.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, _, Some(m))) = &*g {
            m.close();
        }
    }

    /// Stops the thread and returns what it did (idempotent: a second call
    /// returns empty stats).
    pub(crate) fn stop(&mut self) -> FlushStats {
        self.shared.stop.store(true, Ordering::Release);
        match self.thread.take() {
            Some(t) => {
                t.thread().unpark();
                t.join().unwrap_or_default()
            }
            None => FlushStats::default(),
        }
    }
}

impl Drop for Flusher {
    fn drop(&mut self) {
        if self.thread.is_some() {
            self.stop();
        }
    }
}

/// Fsyncs a new file and the directories naming it.
fn sync_new(f: &File, dirs: &[PathBuf]) -> std::io::Result<()> {
    sys::fsync(f)?;
    for d in dirs {
        sys::fsync(&File::open(d)?)?;
    }
    Ok(())
}

/// The flush thread's loop: follow the writer to each new file, flush the
/// chunks behind its written offset, make the file durable every
/// `sync_every`, then nap until woken or the next sync is due.
fn run(
    s: &Shared,
    strategy: Flush,
    every: u64,
    sync_every: u64,
    marker: Option<&TraceMarker>,
) -> FlushStats {
    let mut w = Worker {
        s,
        strategy,
        every,
        sync_every,
        marker,
        stats: FlushStats::default(),
        lat: Latency::new(),
        sync_lat: Latency::new(),
        epoch: u64::MAX,
        file: None,
        file_mark: None,
        flushed: 0,
        durable: 0,
        next_sync: sys::monotonic_ns().saturating_add(sync_every),
    };
    loop {
        let stopping = s.stop.load(Ordering::Acquire);
        w.follow_switch();
        if let Some(f) = w.file.clone() {
            w.flush_chunks(&f);
            if !stopping {
                w.sync_if_due(&f);
            }
        }
        if stopping {
            break;
        }
        w.nap();
    }
    w.stats.flush_ns = w.lat.summary();
    w.stats.sync_ns = w.sync_lat.summary();
    w.stats.cpu_ns = sys::thread_cpu_ns();
    w.stats
}

/// The flush thread's state between two turns of [`run`]'s loop.
struct Worker<'a> {
    s: &'a Shared,
    strategy: Flush,
    every: u64,
    sync_every: u64,
    /// Each step is marked `begin flush STEP` / `end flush STEP` around
    /// its system calls (see `docs/explain.md`).
    marker: Option<&'a TraceMarker>,
    stats: FlushStats,
    lat: Latency,
    sync_lat: Latency,
    /// The writer's file epoch this state follows.
    epoch: u64,
    file: Option<Arc<File>>,
    file_mark: Option<Arc<FileMark>>,
    /// Bytes before this offset have been handed to the kernel.
    flushed: u64,
    /// The durable point published last.
    durable: u64,
    /// When the next durability sync is due, monotonic ns.
    next_sync: u64,
}

impl Worker<'_> {
    fn mark(&self, what: &str, step: std::fmt::Arguments<'_>) {
        if let Some(m) = self.marker {
            m.mark(format_args!("{what} flush {step}"));
        }
    }

    /// Keeps the first failure; true when `r` succeeded.
    fn note(&mut self, r: std::io::Result<()>) -> bool {
        match r {
            Ok(()) => true,
            Err(err) => {
                // A failed sync or flush: no durable point past the last
                // one (`LiveStats::freeze_durable`).
                self.s.live.freeze_durable();
                self.stats
                    .error
                    .get_or_insert_with(|| Failure::from_io(&err));
                false
            }
        }
    }

    /// When the writer has switched files: follows it, and fsyncs the new
    /// file and its name first; then the closed files before it (synced
    /// by the writer) are named on storage too, and durable.
    fn follow_switch(&mut self) {
        let e = self.s.epoch.load(Ordering::Acquire);
        if e == self.epoch {
            return;
        }
        let target = self
            .s
            .file
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        self.epoch = e;
        self.flushed = 0;
        self.file = target.as_ref().map(|(f, _, _)| f.clone());
        self.file_mark = target.as_ref().and_then(|(_, _, m)| m.clone());
        let Some((f, dirs, _)) = target else {
            return;
        };
        let t0 = sys::monotonic_ns();
        self.mark("begin", format_args!("fsync of a new file"));
        let r = sync_new(&f, &dirs);
        self.mark("end", format_args!("fsync of a new file"));
        self.sync_lat.record(sys::monotonic_ns() - t0);
        self.stats.syncs += 1;
        if self.note(r) {
            let closed = self.s.closed_seq.load(Ordering::Acquire);
            self.durable = self.durable.max(closed);
            self.s.live.publish_durable(closed);
        }
    }

    /// Flushes every whole chunk behind the writer's offset (one step per
    /// chunk; one whole-file sync covers them all).
    fn flush_chunks(&mut self, f: &File) {
        let (strategy, every) = (self.strategy, self.every);
        let written = self.s.written.load(Ordering::Acquire);
        while strategy != Flush::None
            && written >= self.flushed + every
            && !self.s.stop.load(Ordering::Acquire)
        {
            let (t0, flushed) = (sys::monotonic_ns(), self.flushed);
            let name = strategy.name();
            // `format_args!` inline at each use: a kept `Arguments`
            // only compiles on rustc newer than the declared MSRV.
            self.mark("begin", format_args!("{name} {every}@{flushed}"));
            let r = flush_chunk(f, strategy, flushed, every);
            self.mark("end", format_args!("{name} {every}@{flushed}"));
            self.lat.record(sys::monotonic_ns() - t0);
            self.stats.flushes += 1;
            self.note(r);
            self.flushed += every;
            if matches!(strategy, Flush::Fdatasync | Flush::Fsync) {
                // One whole-file sync covers every chunk behind `written`.
                self.flushed = written / every * every;
            }
        }
    }

    /// Every `sync_every`: `fdatasync` the file when the writer published
    /// records since the last durable point (and did not switch files
    /// meanwhile), publish the durable point and move the file's mark.
    fn sync_if_due(&mut self, f: &File) {
        let now = sys::monotonic_ns();
        if self.sync_every == 0 || now < self.next_sync {
            return;
        }
        self.next_sync = now.saturating_add(self.sync_every);
        // Both read before the sync: the frames before `frames_end`
        // were written before it began, so it covers them.
        let seq = self.s.seq.load(Ordering::Acquire);
        let frames_end = self.s.frames_end.load(Ordering::Acquire);
        if seq <= self.durable || self.s.epoch.load(Ordering::Acquire) != self.epoch {
            return;
        }
        self.mark("begin", format_args!("fdatasync (durability)"));
        let r = sys::fdatasync(f);
        self.mark("end", format_args!("fdatasync (durability)"));
        self.sync_lat.record(sys::monotonic_ns() - now);
        self.stats.syncs += 1;
        if !self.note(r) {
            return;
        }
        self.durable = seq;
        self.s.live.publish_durable(seq);
        if let Some(m) = self.file_mark.clone() {
            self.mark("begin", format_args!("durable mark {frames_end}"));
            let r = m.advance(f, frames_end);
            self.mark("end", format_args!("durable mark {frames_end}"));
            self.note(r);
        }
    }

    /// Sleeps until woken (a chunk boundary, a new file, stop), at most
    /// 100 ms and no later than the next durability sync (at least 1 ms).
    fn nap(&self) {
        let mut nap = 100_000_000u64;
        if self.sync_every > 0 {
            nap = nap.min(
                self.next_sync
                    .saturating_sub(sys::monotonic_ns())
                    .max(1_000_000),
            );
        }
        thread::park_timeout(Duration::from_nanos(nap));
    }
}

/// One flush step for the chunk `[start, start + every)`.
fn flush_chunk(f: &File, strategy: Flush, start: u64, every: u64) -> std::io::Result<()> {
    match strategy {
        Flush::None => Ok(()),
        Flush::Fdatasync => sys::fdatasync(f),
        Flush::Fsync => sys::fsync(f),
        Flush::Sfr => sys::sync_file_range(f, start, every, sys::sfr::WRITE),
        Flush::Window => {
            sys::sync_file_range(f, start, every, sys::sfr::WRITE)?;
            if start >= every {
                let old = start - every;
                sys::sync_file_range(
                    f,
                    old,
                    every,
                    sys::sfr::WAIT_BEFORE | sys::sfr::WRITE | sys::sfr::WAIT_AFTER,
                )?;
                sys::fadvise_dontneed(f, old, every)?;
            }
            Ok(())
        }
    }
}
