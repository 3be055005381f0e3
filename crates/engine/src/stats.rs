//! Latency statistics: an allocation-free recorder (an HdrHistogram sized
//! once up front) and its serialisable summary with the keys every rtrec
//! JSON output uses (`min`, `mean`, `p50`, `p99`, `p999`, `max`, in ns);
//! and the live counters ([`LiveStats`]) the producer, the writer and the
//! flush thread publish while recording.

use std::sync::atomic::AtomicU64;

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
    /// after each sync and by the writer after closing a file.
    pub durable_seq: AtomicU64,
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
    fn an_empty_recorder_has_no_summary() {
        assert!(Latency::new().summary().is_none());
    }
}
