//! The emulator's own timing error: for every request, the delay the model
//! asked for against the delay actually served (from receiving the request
//! to replying). The server never replies early, so the error is how late
//! it was — an overloaded emulator (slow backing disk, a starved CPU) shows
//! here instead of silently making the device look faster or slower.
//! [`Timing`] accumulates; [`EmulatorStats`] is what the emulator writes to
//! its stats file and what the bench reports.

use serde::{Deserialize, Serialize};

/// Counters and the error distribution, accumulated by the server.
#[derive(Debug, Clone)]
pub struct Timing {
    stats: EmulatorStats,
    /// Errors in power-of-two buckets: bucket `i` holds errors below
    /// `2^i` ns (bucket 0: exactly 0).
    buckets: [u64; 64],
}

/// What the emulator reports (its stats file, JSON).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmulatorStats {
    /// The profile served.
    pub profile: String,
    /// Read requests served.
    pub reads: u64,
    /// Write requests served.
    pub writes: u64,
    /// Flushes served.
    pub flushes: u64,
    /// Garbage-collection pauses served.
    pub gc_pauses: u64,
    /// Requests that did not start where the previous one ended: each
    /// costs a disk's `seek` (issue 47: what a durable point and a file
    /// switch cost a disk, counted).
    #[serde(default)]
    pub seeks: u64,
    /// Bytes read.
    pub bytes_read: u64,
    /// Bytes written.
    pub bytes_written: u64,
    /// Sum of the delays the model asked for, ns.
    pub asked_ns: u64,
    /// Sum of the delays served, ns.
    pub served_ns: u64,
    /// Requests served earlier than asked (must stay 0).
    pub early: u64,
    /// Mean of served − asked per request, ns.
    pub error_mean_ns: u64,
    /// 99th percentile of served − asked, ns (upper edge of its
    /// power-of-two bucket).
    pub error_p99_ns: u64,
    /// Largest served − asked, ns.
    pub error_max_ns: u64,
    /// Longest single delay asked, ns.
    pub asked_max_ns: u64,
    /// Most requests waiting at once (counted each time the device picks
    /// one, the picked one included): above 1 only when the kernel keeps
    /// several in flight.
    #[serde(default)]
    pub queue_max: u64,
    /// Requests served ahead of an older one (`sync-first` order).
    #[serde(default)]
    pub sync_ahead: u64,
    /// Writes served first because they had waited `ASYNC_EXPIRE`.
    #[serde(default)]
    pub async_expired: u64,
    /// Bytes of ext4 journal found in the image (0: none found, every
    /// write served as writeback).
    #[serde(default)]
    pub journal_bytes: u64,
}

impl EmulatorStats {
    /// Requests served.
    pub fn requests(&self) -> u64 {
        self.reads + self.writes + self.flushes
    }

    /// How the queue was used, in words: `queue: up to 161 waiting, 1,771
    /// served ahead of older ones, 4,065 writes let through after 250 ms;
    /// journal of 128 MiB found` (or `no ext4 journal found: every write
    /// served as writeback`).
    pub fn queue_summary(&self) -> String {
        let journal = if self.journal_bytes > 0 {
            format!(
                "journal of {} found",
                rtrec_units::format_size(self.journal_bytes)
            )
        } else {
            "no ext4 journal found: every write served as writeback".to_string()
        };
        format!(
            "queue: up to {} waiting, {} served ahead of older ones, {} writes let through after {}; {journal}",
            self.queue_max,
            self.sync_ahead,
            self.async_expired,
            rtrec_units::format_duration(crate::limits::ASYNC_EXPIRE.as_nanos() as u64)
        )
    }

    /// The timing error in words: `mean 38.1 µs, p99 131 µs, max 289 µs`,
    /// with `, N served early` when any was (the bench table and the
    /// recording summary both print it).
    pub fn error_summary(&self) -> String {
        use rtrec_units::format_duration;
        let early = if self.early > 0 {
            format!(", {} served early", self.early)
        } else {
            String::new()
        };
        format!(
            "mean {}, p99 {}, max {}{early}",
            format_duration(self.error_mean_ns),
            format_duration(self.error_p99_ns),
            format_duration(self.error_max_ns)
        )
    }
}

/// What kind of request a sample was.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    /// A read of this many bytes.
    Read(u64),
    /// A write of this many bytes.
    Write(u64),
    /// A flush.
    Flush,
}

impl Timing {
    /// Empty, for `profile`.
    pub fn new(profile: &str) -> Timing {
        Timing {
            stats: EmulatorStats {
                profile: profile.to_string(),
                ..EmulatorStats::default()
            },
            buckets: [0; 64],
        }
    }

    /// Records one request: `asked` and `served` in ns.
    pub fn record(&mut self, kind: Kind, asked: u64, served: u64) {
        let s = &mut self.stats;
        match kind {
            Kind::Read(b) => {
                s.reads += 1;
                s.bytes_read += b;
            }
            Kind::Write(b) => {
                s.writes += 1;
                s.bytes_written += b;
            }
            Kind::Flush => s.flushes += 1,
        }
        s.asked_ns += asked;
        s.served_ns += served;
        s.asked_max_ns = s.asked_max_ns.max(asked);
        if served < asked {
            s.early += 1;
        }
        let err = served.saturating_sub(asked);
        s.error_max_ns = s.error_max_ns.max(err);
        self.buckets[(64 - err.leading_zeros()) as usize % 64] += 1;
    }

    /// One pick of the device: `waiting` requests queued, whether the
    /// picked one passed an older write, whether it was an expired write.
    pub fn note_queue(&mut self, waiting: u64, ahead: bool, expired: bool) {
        let s = &mut self.stats;
        s.queue_max = s.queue_max.max(waiting);
        s.sync_ahead += u64::from(ahead);
        s.async_expired += u64::from(expired);
    }

    /// The journal found in the image, bytes.
    pub fn set_journal_bytes(&mut self, n: u64) {
        self.stats.journal_bytes = n;
    }

    /// GC pauses so far (the model counts them).
    pub fn set_gc_pauses(&mut self, n: u64) {
        self.stats.gc_pauses = n;
    }

    /// The model's count of requests off the sequential path so far.
    pub fn set_seeks(&mut self, n: u64) {
        self.stats.seeks = n;
    }

    /// The stats now, with mean and p99 worked out.
    pub fn snapshot(&self) -> EmulatorStats {
        let mut s = self.stats.clone();
        let n = s.requests();
        if let Some(mean) = s.served_ns.saturating_sub(s.asked_ns).checked_div(n) {
            s.error_mean_ns = mean;
            let want = n - n / 100;
            let mut seen = 0;
            for (i, c) in self.buckets.iter().enumerate() {
                seen += c;
                if seen >= want {
                    s.error_p99_ns = if i == 0 { 0 } else { (1u64 << i) - 1 };
                    break;
                }
            }
            s.error_p99_ns = s.error_p99_ns.min(s.error_max_ns);
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_served_minus_asked_and_early_replies_are_counted() {
        let mut t = Timing::new("emmc");
        for _ in 0..99 {
            t.record(Kind::Write(4096), 1_000, 1_100);
        }
        t.record(Kind::Flush, 2_000_000, 2_500_000);
        t.record(Kind::Read(512), 1_000, 900);
        let s = t.snapshot();
        assert_eq!((s.writes, s.flushes, s.reads), (99, 1, 1));
        assert_eq!(s.bytes_written, 99 * 4096);
        assert_eq!(s.early, 1);
        assert_eq!(s.error_max_ns, 500_000);
        assert_eq!(s.asked_max_ns, 2_000_000);
        // 99 of 101 errors are 100 ns: p99 falls in the bucket below 128 ns.
        assert_eq!(s.error_p99_ns, 127);
    }

    #[test]
    fn the_queue_summary_names_the_journal_or_its_absence() {
        let mut t = Timing::new("emmc");
        t.note_queue(3, true, false);
        t.note_queue(1, false, true);
        let s = t.snapshot();
        assert_eq!(
            s.queue_summary(),
            "queue: up to 3 waiting, 1 served ahead of older ones, 1 writes let through after 250 ms; no ext4 journal found: every write served as writeback"
        );
        t.set_journal_bytes(128 << 20);
        assert!(t
            .snapshot()
            .queue_summary()
            .ends_with("journal of 128 MiB found"));
    }
}
