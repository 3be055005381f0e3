//! Latency statistics: an allocation-free recorder (an HdrHistogram sized
//! once up front) and its serialisable summary with the keys every rtrec
//! JSON output uses (`min`, `mean`, `p50`, `p99`, `p999`, `max`, in ns);
//! and the live counters ([`LiveStats`]) the producer, the writer and the
//! flush thread publish while recording.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Highest value tracked exactly enough: 100 s in ns. Larger values are
/// clamped to it (and still counted).
pub const HIGHEST_NS: u64 = 100_000_000_000;

/// Records latencies in ns without allocating after construction.
#[derive(Clone, Debug)]
pub struct Latency {
    hist: Histogram<u64>,
    min: u64,
    max: u64,
    sum: u128,
}

impl Default for Latency {
    fn default() -> Self {
        Self::new()
    }
}

impl Latency {
    /// A recorder for 1 ns .. 100 s with 3 significant digits (about 0.1 %
    /// error); allocates here, never in [`Latency::record`].
    pub fn new() -> Self {
        let mut hist =
            Histogram::new_with_bounds(1, HIGHEST_NS, 3).expect("valid histogram bounds");
        hist.auto(false);
        Latency {
            hist,
            min: u64::MAX,
            max: 0,
            sum: 0,
        }
    }

    /// Records one value. Exact min, max and mean are kept beside the
    /// histogram so that the extremes S1 reports are not rounded.
    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.hist.saturating_record(ns.clamp(1, HIGHEST_NS));
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
        self.sum += ns as u128;
    }

    /// Number of values recorded.
    pub fn count(&self) -> u64 {
        self.hist.len()
    }

    /// Adds everything `other` recorded.
    pub fn merge(&mut self, other: &Latency) {
        let _ = self.hist.add(&other.hist);
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.sum += other.sum;
    }

    /// The underlying histogram (for lossless export).
    pub fn histogram(&self) -> &Histogram<u64> {
        &self.hist
    }

    /// The summary; `None` when nothing was recorded.
    ///
    /// Design choice: the histogram's percentiles are the highest value
    /// equivalent to their bucket, so a p99.9 could read above the exact
    /// maximum (21.5 µs beside 21.4 µs); every percentile is clamped to
    /// the exact min and max, which no sample lies outside.
    pub fn summary(&self) -> Option<LatencySummary> {
        let n = self.hist.len();
        if n == 0 {
            return None;
        }
        let q = |quantile| {
            self.hist
                .value_at_quantile(quantile)
                .clamp(self.min, self.max)
        };
        Some(LatencySummary {
            count: n,
            min: self.min,
            mean: (self.sum / n as u128) as u64,
            p50: q(0.50),
            p99: q(0.99),
            p999: q(0.999),
            max: self.max,
        })
    }
}

/// min / mean / p50 / p99 / p99.9 / max of a latency, in ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LatencySummary {
    /// Number of samples.
    pub count: u64,
    /// Smallest, exact.
    pub min: u64,
    /// Arithmetic mean, exact.
    pub mean: u64,
    /// Median (histogram, 3 significant digits).
    pub p50: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p999: u64,
    /// Largest, exact.
    pub max: u64,
}

/// Counters readable while recording (progress display, `--status`),
/// updated with atomic stores: no lock, no system call.
///
/// The three stages of a record, each a separate count (see
/// `docs/durability.md`): *queued* (accepted by `record()`; in inline mode
/// the same as written), *written* (`write()` returned: survives the death
/// of the process) and *durable* (synced to storage: survives a power cut).
#[derive(Debug, Default)]
pub struct LiveStats {
    /// Records accepted by `record()` (ring mode: copied into the ring).
    pub records_queued: AtomicU64,
    /// Records stored so far (`write()` returned).
    pub records_written: AtomicU64,
    /// Payload bytes stored so far.
    pub bytes_written: AtomicU64,
    /// Largest `write()` latency so far, ns.
    pub max_write_ns: AtomicU64,
    /// Records dropped so far (counted by the producer).
    pub records_dropped: AtomicU64,
    /// Flight-recorder events started so far.
    pub events: AtomicU64,
    /// Every record with a smaller sequence number has been written (or its
    /// loss stored) by the writer: the writer's next sequence number.
    pub written_seq: AtomicU64,
    /// Every record with a smaller sequence number is on storage (or its
    /// loss is): the last durable point, published by the flush thread
    /// after each sync and by the writer after closing a file, through
    /// [`LiveStats::publish_durable`].
    pub durable_seq: AtomicU64,
    /// A sync failed ([`LiveStats::freeze_durable`]): the durable point
    /// moves no further.
    pub durable_frozen: AtomicBool,
    /// Records dropped because the ring was full (part of
    /// `records_dropped`).
    pub drops_ring_full: AtomicU64,
    /// Records dropped because they were larger than `max_record`.
    pub drops_too_large: AtomicU64,
    /// Records dropped after a write error.
    pub drops_writer_failed: AtomicU64,
    /// Periods whose release was missed, published by a
    /// [`crate::PeriodicTimer`] given these stats
    /// ([`crate::PeriodicTimer::publish_to`]).
    pub missed_periods: AtomicU64,
    /// The longest lateness of a period's release so far, ns (published as
    /// `missed_periods` is).
    pub max_lateness_ns: AtomicU64,
    /// The ring's capacity, bytes (0 in direct mode: no ring).
    pub ring_capacity_bytes: AtomicU64,
    /// Bytes waiting in the ring, sampled by the writer thread before each
    /// drain (the fill only grows between two drains, so this is the peak
    /// since the last sample).
    pub ring_used_bytes: AtomicU64,
    /// The largest `ring_used_bytes` so far: how close the ring came to
    /// dropping.
    pub ring_high_water_bytes: AtomicU64,
    /// Files a loop recording (or the flight recorder's event limit)
    /// retired so far, published by the writer at each switch.
    pub retired_files: AtomicU64,
    /// Bytes of those files (header and frames).
    pub retired_bytes: AtomicU64,
    /// Retired files kept on disk because the RETIRED claim or the
    /// retirement record naming them could not be made durable (a file
    /// leaves only after what names it is on the disk): the directory
    /// grows past its budget by these. Published by the writer at each
    /// switch.
    pub retired_unclaimed: AtomicU64,
    /// A loop in a shipped directory: files of earlier recordings not yet
    /// shipped that the budget retired (beyond `--unshipped-headroom`, or
    /// by the age limit). Published by the writer at each switch.
    pub retired_unshipped: AtomicU64,
    /// Bytes those files took on disk.
    pub retired_unshipped_bytes: AtomicU64,
    /// The writer thread's heartbeat: data records it took from the ring
    /// and handed on without a failure (written, gathered into the open
    /// frame, or kept by the flight recorder), published only by the
    /// writer thread once it is done with them (ring mode; 0 inline).
    ///
    /// Design choice (issue 42, finding 3): a supervisor that asks "is the
    /// writer stuck?" compares this against [`LiveStats::records_queued`],
    /// which the producer advances: records queued at one look and not
    /// taken by the next mean a stuck writer. The writer's own sample of
    /// the ring ([`LiveStats::ring_used_bytes`]) cannot say so: it is
    /// taken before a drain, so it goes stale exactly while the writer
    /// hangs in `write()`.
    pub records_taken: AtomicU64,
    /// Set once writing failed for good (the recording, not a flight
    /// event): from then on every record is dropped and counted.
    pub writer_failed: AtomicBool,
}

/// One reading of [`LiveStats`], every counter as a plain number (what
/// `--status` writes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LiveSnapshot {
    /// [`LiveStats::records_queued`].
    pub records_queued: u64,
    /// [`LiveStats::records_written`].
    pub records_written: u64,
    /// [`LiveStats::records_dropped`].
    pub records_dropped: u64,
    /// [`LiveStats::written_seq`].
    pub written_seq: u64,
    /// [`LiveStats::durable_seq`].
    pub durable_seq: u64,
    /// [`LiveStats::events`].
    pub events: u64,
    /// [`LiveStats::bytes_written`].
    pub bytes_written: u64,
    /// [`LiveStats::drops_ring_full`].
    pub drops_ring_full: u64,
    /// [`LiveStats::drops_too_large`].
    pub drops_too_large: u64,
    /// [`LiveStats::drops_writer_failed`].
    pub drops_writer_failed: u64,
    /// [`LiveStats::missed_periods`].
    pub missed_periods: u64,
    /// [`LiveStats::max_write_ns`].
    pub max_write_ns: u64,
    /// [`LiveStats::max_lateness_ns`].
    pub max_lateness_ns: u64,
    /// [`LiveStats::ring_capacity_bytes`].
    pub ring_capacity_bytes: u64,
    /// [`LiveStats::ring_used_bytes`].
    pub ring_used_bytes: u64,
    /// [`LiveStats::ring_high_water_bytes`].
    pub ring_high_water_bytes: u64,
    /// [`LiveStats::retired_files`].
    pub retired_files: u64,
    /// [`LiveStats::retired_bytes`].
    pub retired_bytes: u64,
    /// [`LiveStats::retired_unclaimed`].
    pub retired_unclaimed: u64,
    /// [`LiveStats::retired_unshipped`].
    pub retired_unshipped: u64,
    /// [`LiveStats::retired_unshipped_bytes`].
    pub retired_unshipped_bytes: u64,
    /// [`LiveStats::records_taken`].
    pub records_taken: u64,
    /// [`LiveStats::writer_failed`].
    pub writer_failed: bool,
}

impl LiveStats {
    /// Publishes that every record before `seq` is durable (or its loss
    /// is), unless a sync has failed.
    pub fn publish_durable(&self, seq: u64) {
        if !self.durable_frozen.load(Ordering::Acquire) {
            self.durable_seq.fetch_max(seq, Ordering::AcqRel);
        }
    }

    /// A sync failed: the durable point stays where the last successful
    /// one put it. Design choice: for good, for the rest of the recording.
    /// A later sync that succeeds says nothing of the pages the failed one
    /// did not write (Linux may have marked them clean after the error:
    /// PostgreSQL's "fsyncgate"), so no later point is promised.
    pub fn freeze_durable(&self) {
        self.durable_frozen.store(true, Ordering::Release);
    }

    /// Reads every counter (each on its own: the snapshot is not one
    /// instant, but each number is one the recording really had).
    pub fn snapshot(&self) -> LiveSnapshot {
        let r = |a: &AtomicU64| a.load(Ordering::Acquire);
        LiveSnapshot {
            records_queued: r(&self.records_queued),
            records_written: r(&self.records_written),
            records_dropped: r(&self.records_dropped),
            written_seq: r(&self.written_seq),
            durable_seq: r(&self.durable_seq),
            events: r(&self.events),
            bytes_written: r(&self.bytes_written),
            drops_ring_full: r(&self.drops_ring_full),
            drops_too_large: r(&self.drops_too_large),
            drops_writer_failed: r(&self.drops_writer_failed),
            missed_periods: r(&self.missed_periods),
            max_write_ns: r(&self.max_write_ns),
            max_lateness_ns: r(&self.max_lateness_ns),
            ring_capacity_bytes: r(&self.ring_capacity_bytes),
            ring_used_bytes: r(&self.ring_used_bytes),
            ring_high_water_bytes: r(&self.ring_high_water_bytes),
            retired_files: r(&self.retired_files),
            retired_bytes: r(&self.retired_bytes),
            retired_unclaimed: r(&self.retired_unclaimed),
            retired_unshipped: r(&self.retired_unshipped),
            retired_unshipped_bytes: r(&self.retired_unshipped_bytes),
            records_taken: r(&self.records_taken),
            writer_failed: self.writer_failed.load(Ordering::Acquire),
        }
    }

    /// Adds one to a counter only the calling thread ever writes (the
    /// producer's counters, `&mut Recorder`): a load and a plain store, no
    /// read-modify-write.
    ///
    /// Design choice (issue 34, the producer's cost per record): a
    /// `fetch_add` is a locked instruction on x86-64, a full barrier that
    /// waits for every store before it, the record's copy into the ring
    /// among them, to reach the cache; perf put two thirds of `record()`'s
    /// own time on it at 64 B. With one writer the load and the store
    /// cannot lose an increment, and readers see each value whole as
    /// before.
    #[inline]
    pub(crate) fn bump(counter: &AtomicU64) {
        counter.store(counter.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }

    /// The writer thread's sample of the ring's fill (see
    /// [`LiveStats::ring_used_bytes`]).
    pub(crate) fn note_ring_fill(&self, used: u64) {
        self.ring_used_bytes.store(used, Ordering::Relaxed);
        self.ring_high_water_bytes
            .fetch_max(used, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_never_lie_outside_the_exact_min_and_max() {
        let mut l = Latency::new();
        // 26,400 ns sits in a bucket whose highest equivalent value is
        // above it: unclamped, p99.9 read above the max of 26,400.
        for _ in 0..10 {
            l.record(26_400);
        }
        let s = l.summary().unwrap();
        assert_eq!(
            (s.p50, s.p99, s.p999, s.max),
            (26_400, 26_400, 26_400, 26_400)
        );
        assert_eq!(s.min, 26_400);
    }

    #[test]
    fn summary_keeps_exact_extremes_and_mean() {
        let mut l = Latency::new();
        for v in [100, 200, 300, 1_000_001] {
            l.record(v);
        }
        let s = l.summary().unwrap();
        assert_eq!(
            (s.count, s.min, s.max, s.mean),
            (4, 100, 1_000_001, 250_150)
        );
        assert!(s.p50 >= 199 && s.p50 <= 201, "{}", s.p50);
    }

    #[test]
    fn a_single_writer_bump_counts_every_increment() {
        let live = LiveStats::default();
        for _ in 0..1000 {
            LiveStats::bump(&live.records_queued);
        }
        LiveStats::bump(&live.drops_ring_full);
        let s = live.snapshot();
        assert_eq!((s.records_queued, s.drops_ring_full), (1000, 1));
    }

    #[test]
    fn an_empty_recorder_has_no_summary() {
        assert!(Latency::new().summary().is_none());
    }
}
