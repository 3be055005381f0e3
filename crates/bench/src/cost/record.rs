//! One cell's recording: `bytes` of `size`-byte records through the
//! engine at a fixed rate, in bursts, with the CPU time of each of its
//! threads, of the whole process and the machine's steal over it
//! ([`Recorded`]).

use std::path::Path;

use anyhow::Context;
use rtrec_engine::{Alloc, Config, Framing, Io, PeriodicTimer, Recorder, Summary};
use rtrec_sys as sys;

use super::options::BURST_NS;
use crate::producer::{self, RtRequest};
use crate::throughput::record_ring;

/// What one cell's recording cost.
#[derive(Clone, Debug, Default)]
pub(super) struct Recorded {
    /// The producer's CPU over its bursts, ns.
    pub producer_cpu_ns: u64,
    /// The writer thread's, ns.
    pub writer_cpu_ns: u64,
    /// The flush thread's, ns.
    pub flusher_cpu_ns: u64,
    /// The process's from the recorder's creation (done) to after it
    /// finished, ns.
    pub process_cpu_ns: u64,
    /// The process's to create the recorder (files, ring, threads), ns.
    pub setup_cpu_ns: u64,
    /// Payload bytes stored.
    pub bytes: u64,
    /// File bytes written.
    pub file_bytes: u64,
    /// Writes of the writer.
    pub writes: u64,
    /// Records dropped.
    pub dropped: u64,
    /// Wall time, ns.
    pub wall_ns: u64,
    /// The ring's size, bytes.
    pub ring_bytes: usize,
    /// The machine's steal over the recording, a fraction of its CPU time.
    pub steal_share: f64,
}

/// How the producer paces: `records` in bursts of `per_burst`, one burst
/// every `period_ns`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Bursts {
    /// Records in all.
    pub records: u64,
    /// Records per burst.
    pub per_burst: u64,
    /// Between two bursts' starts, ns.
    pub period_ns: u64,
}

impl Bursts {
    /// `bytes` of `size`-byte records at `rate` bytes/s: bursts
    /// [`BURST_NS`] apart, or one record each when a record takes longer
    /// at that rate.
    pub(super) fn new(bytes: u64, size: u64, rate: f64) -> Bursts {
        let records = (bytes / size).max(1);
        let per_burst = ((rate * BURST_NS as f64 / 1e9) / size as f64).max(1.0) as u64;
        let period_ns = (per_burst as f64 * size as f64 / rate * 1e9) as u64;
        Bursts {
            records,
            per_burst,
            period_ns: period_ns.max(1),
        }
    }
}

/// Records `bytes` of `size`-byte records with back-end `io` at `rate`
/// bytes/s into `dir` (which must exist and be empty), the producer with
/// the run's real-time setup `rt`.
pub(super) fn record(
    dir: &Path,
    io: Io,
    size: u64,
    bytes: u64,
    rate: f64,
    rt: &RtRequest,
) -> anyhow::Result<Recorded> {
    let b = Bursts::new(bytes, size, rate);
    let cfg = config(io, size, rate, b.records, rt);
    let ring_bytes = cfg.ring_bytes;
    let setup0 = sys::process_cpu_ns();
    let mut rec = Recorder::create(dir, cfg).context("starting a cost recording")?;
    let steal0 = steal_ticks();
    let t0 = sys::monotonic_ns();
    let cpu0 = sys::process_cpu_ns();
    let producer_cpu_ns = std::thread::scope(|scope| {
        scope
            .spawn(|| produce(&mut rec, size, b, rt))
            .join()
            .map_err(|_| anyhow::anyhow!("a cost recording's producer panicked"))
    })?;
    let s = rec.finish().context("ending a cost recording")?;
    let process_cpu_ns = sys::process_cpu_ns() - cpu0;
    let wall_ns = sys::monotonic_ns() - t0;
    Ok(Recorded {
        producer_cpu_ns,
        process_cpu_ns,
        setup_cpu_ns: cpu0 - setup0,
        wall_ns,
        ring_bytes,
        steal_share: steal_share(steal0, steal_ticks()),
        ..of_summary(&s)
    })
}

/// The summary's part of [`Recorded`].
fn of_summary(s: &Summary) -> Recorded {
    Recorded {
        writer_cpu_ns: s.writer_cpu_ns.unwrap_or(0),
        flusher_cpu_ns: s.flush.cpu_ns,
        bytes: s.bytes_written,
        file_bytes: s.file_bytes,
        writes: s.write_ns.map_or(0, |w| w.count),
        dropped: s.records_dropped,
        ..Recorded::default()
    }
}

/// The producer: raises its real-time setup, then records `b.records` in
/// bursts; its thread's CPU over the bursts only, so the timer's sleeps
/// are not charged to `record()`.
fn produce(rec: &mut Recorder, size: u64, b: Bursts, rt: &RtRequest) -> u64 {
    let _ = producer::raise(rt);
    let buf = vec![0xa5u8; size as usize];
    let mut timer = PeriodicTimer::new(b.period_ns);
    let (mut left, mut cpu) = (b.records, 0);
    while left > 0 {
        timer.wait();
        let n = left.min(b.per_burst);
        let c0 = sys::thread_cpu_ns();
        for _ in 0..n {
            let _ = rec.record(&buf);
        }
        cpu += sys::thread_cpu_ns() - c0;
        left -= n;
    }
    cpu
}

/// The engine's configuration of a cell, as `rtrec record` would make it
/// for this rate: ring mode, [`Framing::auto`], the ring sized for the
/// rate's record period, files fallocated as they are opened, the writer at the run's real-time priority.
fn config(io: Io, size: u64, rate: f64, records: u64, rt: &RtRequest) -> Config {
    let mut cfg = Config {
        io,
        max_record: size as usize,
        framing: Framing::auto(size as usize),
        file_size: crate::throughput::probe_file_bytes(size),
        prefix: "cost".into(),
        // As the throughput study: a long recording's steady state once
        // its pool is spent, no pool zero-filled by a thread of ours.
        alloc: Alloc::Fallocate,
        ..Config::default()
    };
    let period_ns = ((size as f64 / rate * 1e9) as u64).max(1);
    cfg.ring_bytes = record_ring(&cfg, period_ns, records);
    cfg.rt.writer_priority = rt.writer_priority();
    cfg
}

/// The machine's (steal, all) ticks from `/proc/stat`'s `cpu` line.
fn steal_ticks() -> (u64, u64) {
    let cpu = rtrec_host::procstat::stat().unwrap_or_default().all;
    (cpu.steal, cpu.total())
}

/// Steal between two [`steal_ticks`], a fraction of all (0 when no tick
/// passed).
fn steal_share(a: (u64, u64), b: (u64, u64)) -> f64 {
    let all = b.1.saturating_sub(a.1);
    if all == 0 {
        0.0
    } else {
        b.0.saturating_sub(a.0) as f64 / all as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bursts_carry_the_rate_and_a_large_record_is_a_burst_of_one() {
        let mib = (1u64 << 20) as f64;
        // 64 MiB/s of 64 B records: ~1,048 records every 1 ms.
        let b = Bursts::new(256 << 20, 64, 64.0 * mib);
        assert_eq!(b.records, 4 << 20);
        assert_eq!(b.per_burst, 1048);
        let rate = (b.per_burst * 64) as f64 / (b.period_ns as f64 / 1e9);
        assert!((rate / (64.0 * mib) - 1.0).abs() < 1e-3, "{rate}");
        // 1 MiB records at 16 MiB/s: one every 62.5 ms.
        let b = Bursts::new(16 << 20, 1 << 20, 16.0 * mib);
        assert_eq!((b.records, b.per_burst, b.period_ns), (16, 1, 62_500_000));
    }
}
