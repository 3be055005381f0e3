//! What the recording cost in CPU (issue 34): the CPU time of the
//! producer's loop, the writer thread, the flush thread and the whole
//! process, and each per MiB of payload recorded — `record --json`'s
//! `cost` section and the summary's `CPU per MiB recorded` line.
//!
//! Design choices:
//! - **Per MiB of payload stored** (`bytes_written`), not of file bytes:
//!   what the user's data cost, framing and padding included in the price.
//! - **Each thread's own clock** (`CLOCK_THREAD_CPUTIME_ID`): the writer
//!   and flush threads read theirs as they end (the engine's summary); the
//!   producer's is read around the source's loop, so it holds everything
//!   that loop does — the timer's waits and the pattern for the synthetic
//!   source, the assembly of records for `--stdin` (whose reading thread
//!   is not in it) — beside `record()` itself, whose share is its measured
//!   time (`record_ns`'s mean × count, wall time of calls that do not
//!   block). In inline mode the producer's thread writes, so there is no
//!   writer figure.
//! - **The process's clock beside the threads**
//!   (`CLOCK_PROCESS_CPUTIME_ID`, from the source's start to the
//!   recording's end), so CPU no thread above accounts for — io_uring's
//!   kernel workers, the pool's refiller, the watchers — is not hidden.
//!   Setup before the source starts (the pool's zero-fill, the ring's
//!   pre-faulting) is not in it.
//! - **The floor it is set against** (fio's CPU for the same bytes, a
//!   `memcpy` and a CRC32C of them) is measured by `rtrec bench --study
//!   cost`, not here: a recording does not run fio beside itself.
//! - **Feature `cost`** (in `full`): the board's record-only binary leaves
//!   the line and the section out; they took it past its 1 MB budget
//!   (`docs/embedded.md`).

use rtrec_engine::Summary;
use serde::Serialize;

/// `clock()` with feature `cost`, else 0 and no call (module docs): the
/// reads of the producer's and the process's clocks.
pub fn cpu_ns(clock: fn() -> u64) -> u64 {
    if cfg!(feature = "cost") {
        clock()
    } else {
        0
    }
}

/// CPU time per MiB of payload, ns: the summary's line ([`Cost::per_mib`]).
#[derive(Clone, Copy, Debug)]
pub struct PerMib {
    /// The producer's loop.
    pub producer: f64,
    /// Inside `record()` (its measured time).
    pub record_calls: f64,
    /// The writer thread (absent in inline mode).
    pub writer: Option<f64>,
    /// The flush thread.
    pub flusher: f64,
    /// The whole process from the source's start to the end.
    pub process: f64,
}

/// The recording's CPU cost (module docs).
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Cost {
    /// Payload bytes stored.
    pub payload_bytes: u64,
    /// The producer's loop, ns.
    pub producer_cpu_ns: u64,
    /// Inside `record()`, ns (its measured time, `record_ns`).
    pub record_calls_ns: u64,
    /// The writer thread, ns (absent in inline mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub writer_cpu_ns: Option<u64>,
    /// The flush thread, ns.
    pub flusher_cpu_ns: u64,
    /// The whole process, ns.
    pub process_cpu_ns: u64,
}

/// CPU clocks read when the source starts.
#[derive(Clone, Copy, Debug)]
pub struct CostClock {
    process_ns: u64,
}

impl CostClock {
    /// Reads the process's CPU clock now.
    pub fn start() -> CostClock {
        CostClock {
            process_ns: cpu_ns(rtrec_sys::process_cpu_ns),
        }
    }

    /// The cost of the recording `s`, whose producer's loop took
    /// `producer_cpu_ns`; the process's clock is read now.
    pub fn cost(&self, s: &Summary, producer_cpu_ns: u64) -> Cost {
        if !cfg!(feature = "cost") {
            // Nothing reads it (module docs): no code for it either.
            return Cost::default();
        }
        Cost {
            payload_bytes: s.bytes_written,
            producer_cpu_ns,
            record_calls_ns: s.record_ns.map_or(0, |r| r.mean.saturating_mul(r.count)),
            writer_cpu_ns: s.writer_cpu_ns,
            flusher_cpu_ns: s.flush.cpu_ns,
            process_cpu_ns: cpu_ns(rtrec_sys::process_cpu_ns).saturating_sub(self.process_ns),
        }
    }
}

impl Cost {
    /// Each figure per MiB of payload stored; `None` when nothing was
    /// stored. Not in the JSON, which carries the totals (what was
    /// measured) and `payload_bytes` to divide by.
    pub fn per_mib(&self) -> Option<PerMib> {
        let mib = self.payload_bytes as f64 / (1u64 << 20) as f64;
        let per = |ns: u64| ns as f64 / mib;
        (self.payload_bytes > 0).then(|| PerMib {
            producer: per(self.producer_cpu_ns),
            record_calls: per(self.record_calls_ns),
            writer: self.writer_cpu_ns.map(per),
            flusher: per(self.flusher_cpu_ns),
            process: per(self.process_cpu_ns),
        })
    }

    /// The summary's line, or nothing when no payload was stored.
    pub fn line(&self) -> Option<String> {
        let p = self.per_mib()?;
        let t = |ns: f64| rtrec_units::format_duration(ns.round() as u64);
        let writer = p
            .writer
            .map(|w| format!(", writer {}", t(w)))
            .unwrap_or_default();
        Some(format!(
            "CPU per MiB recorded: producer {} (in record() {}){writer}, flusher {}; the whole process {} ({} of CPU for {})\n",
            t(p.producer),
            t(p.record_calls),
            t(p.flusher),
            t(p.process),
            t(self.process_cpu_ns as f64),
            rtrec_units::format_size(self.payload_bytes),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_mib_divides_each_thread_by_the_payload_stored() {
        let totals = Cost {
            payload_bytes: 2 << 20,
            producer_cpu_ns: 8_000_000,
            record_calls_ns: 600_000,
            writer_cpu_ns: Some(3_000_000),
            flusher_cpu_ns: 1_000_000,
            process_cpu_ns: 13_000_000,
        };
        let c = totals;
        let p = c.per_mib().unwrap();
        assert_eq!(p.producer, 4_000_000.0);
        assert_eq!(p.record_calls, 300_000.0);
        assert_eq!(p.writer, Some(1_500_000.0));
        assert_eq!(p.flusher, 500_000.0);
        assert_eq!(p.process, 6_500_000.0);
        let line = c.line().unwrap();
        assert!(line.starts_with("CPU per MiB recorded: producer 4 ms (in record() 300 µs), writer 1.5 ms, flusher 500 µs"), "{line}");
        assert!(
            line.contains("the whole process 6.5 ms (13 ms of CPU for 2 MiB)"),
            "{line}"
        );
        let none = Cost {
            payload_bytes: 0,
            ..totals
        };
        assert!(none.per_mib().is_none() && none.line().is_none());
    }
}
