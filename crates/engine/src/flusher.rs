//! The flusher: a background thread of lower priority than the writer that
//! pushes written data to storage according to the [`Flush`] strategy, so no
//! flush call ever runs on the producer's (or, in ring mode, the writer's)
//! thread.
//!
//! The writing side only stores how far it has written ([`Flusher::advance`])
//! and wakes the thread when a `flush_every` boundary is crossed; the thread
//! works on whole `flush_every` chunks behind that point.

use std::fs::File;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use rtrec_sys as sys;

use crate::config::{Config, Flush};
use crate::error::Failure;
use crate::stats::{Latency, LatencySummary};

struct Shared {
    written: AtomicU64,
    epoch: AtomicU64,
    file: Mutex<Option<Arc<File>>>,
    stop: AtomicBool,
}

/// What the flush thread did.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct FlushStats {
    /// Flush calls made.
    pub flushes: u64,
    /// CPU time the flush thread used, ns.
    pub cpu_ns: u64,
    /// Latency of each flush step (one chunk), ns.
    pub flush_ns: Option<LatencySummary>,
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
}

impl Flusher {
    /// Starts the thread (none for [`Flush::None`]).
    pub(crate) fn start(cfg: &Config) -> std::io::Result<Flusher> {
        let shared = Arc::new(Shared {
            written: AtomicU64::new(0),
            epoch: AtomicU64::new(0),
            file: Mutex::new(None),
            stop: AtomicBool::new(false),
        });
        let every = cfg.flush_every.max(1);
        let thread = if cfg.flush == Flush::None {
            None
        } else {
            let s = shared.clone();
            let (strategy, nice, cpu) = (cfg.flush, cfg.flusher_nice, cfg.rt.flusher_cpu);
            Some(
                thread::Builder::new()
                    .name("rtrec-flush".into())
                    .spawn(move || {
                        // Lower priority than the writer: best effort, errors ignored
                        // (an unprivileged user may not lower a nice value it raised).
                        let _ = sys::set_thread_nice(nice);
                        if let Some(c) = cpu {
                            let _ = sys::pin_to_cpu(c);
                        }
                        run(&s, strategy, every)
                    })?,
            )
        };
        Ok(Flusher {
            shared,
            every,
            next_wake: every,
            thread,
        })
    }

    /// Points the flusher at a new file (offsets restart at 0).
    pub(crate) fn switch(&mut self, file: Arc<File>) {
        let mut g = self.shared.file.lock().unwrap_or_else(|e| e.into_inner());
        *g = Some(file);
        self.shared.written.store(0, Ordering::Release);
        self.shared.epoch.fetch_add(1, Ordering::AcqRel);
        self.next_wake = self.every;
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

fn run(s: &Shared, strategy: Flush, every: u64) -> FlushStats {
    let mut stats = FlushStats::default();
    let mut lat = Latency::new();
    let mut epoch = u64::MAX;
    let mut file: Option<Arc<File>> = None;
    let mut flushed = 0u64; // bytes before this offset have been handed to the kernel
    loop {
        let stopping = s.stop.load(Ordering::Acquire);
        let e = s.epoch.load(Ordering::Acquire);
        if e != epoch {
            file = s.file.lock().unwrap_or_else(|p| p.into_inner()).clone();
            epoch = e;
            flushed = 0;
        }
        let written = s.written.load(Ordering::Acquire);
        if let Some(f) = &file {
            while written >= flushed + every && !s.stop.load(Ordering::Acquire) {
                let t0 = sys::monotonic_ns();
                let r = flush_chunk(f, strategy, flushed, every);
                lat.record(sys::monotonic_ns() - t0);
                stats.flushes += 1;
                if let Err(err) = r {
                    stats.error.get_or_insert_with(|| Failure::from_io(&err));
                }
                flushed += every;
                if matches!(strategy, Flush::Fdatasync | Flush::Fsync) {
                    // One whole-file sync covers every chunk behind `written`.
                    flushed = written / every * every;
                }
            }
        }
        if stopping {
            break;
        }
        thread::park_timeout(Duration::from_millis(100));
    }
    stats.flush_ns = lat.summary();
    stats.cpu_ns = sys::thread_cpu_ns();
    stats
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
