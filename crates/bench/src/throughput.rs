//! `rtrec bench --study throughput`: for each write back-end and record
//! size, the highest record rate the recorder keeps up with for
//! `--probe-duration` (default 60 s), as a fraction of what fio writes with
//! the same back-end and block size on the same file system in the same run;
//! beside it the lateness of the producer's releases and CPU seconds
//! (writer + flush thread) per GiB stored.
//!
//! Design choices:
//! - **A rate holds when the recorder loses nothing and keeps up**
//!   ([`holds`], rule [`HoldRule::Drops`], the default): 0 records dropped,
//!   no writer error, and at the producer's last record the writer's backlog
//!   (records queued but not yet written) at most half the ring
//!   ([`BACKLOG_LIMIT`]) and at most 5 % of the payload offered during the
//!   probe ([`BACKLOG_OF_OFFERED`]) or 4 records ([`BACKLOG_RECORDS`]),
//!   whichever is more: a writer slower than the rate would
//!   overflow the ring in a longer probe, and a ring sized for long stalls
//!   would otherwise hide it in a short one. Lateness and missed periods are reported beside it, not judged:
//!   one hypervisor hiccup makes a release late whatever the back-end does.
//!   `--hold-rule max` (every release within one period, no missed period)
//!   or `p99` adds the producer's schedule to the rule.
//! - **The search is reproducible: coarse bisection, then k-of-k
//!   confirmation.** A coarse search with short probes (`--coarse-duration`,
//!   default 5 s) raises the rate ×4 from 1 MiB/s until a probe fails, then
//!   bisects the interval geometrically `--steps` times (default 5). The
//!   candidate is then confirmed: it must hold `--confirmations` (k, default
//!   3) full-length probes in a row; on the first that does not, the rate
//!   steps down 10 % ([`STEP_DOWN`]) and the k start again (at most
//!   [`MAX_STEP_DOWNS`] times; a row none of whose rates held k times says
//!   so, `confirmed` false, rate 0). The answer is the highest rate that
//!   held k of k.
//! - **The producer is a real application**: each probe's producer thread
//!   gets the run's real-time setup ([`crate::producer`], `record --rt`'s:
//!   SCHED_FIFO 80, writer 79, mlockall; `--no-rt` for normal priority),
//!   raised after the recorder exists so its flush thread stays normal.
//! - **A probe is a whole recording** through the engine (ring mode, the
//!   pool, the framing and the ring size `rtrec record` would choose for
//!   that rate and record size), in a fresh directory
//!   that is deleted after it, so probes do not fill the file system; a
//!   rate whose recording would not fit in the free space is not probed
//!   (the row then says the limit was the space, `capped`).
//! - **A probe reclaims its own space as it records**, as a logger's
//!   retention job does: a thread at nice 10 deletes finished files, all but
//!   the newest [`KEEP_FILES`], so a 60 s probe at the device's full rate
//!   fits on the bench's 2 GiB file system. Each deletion frees a file's
//!   extents (a journal transaction, like the BGTRUNC load), and every
//!   back-end pays it alike; only when even that does not fit is a rate
//!   left unprobed (`capped`).
//! - **fio per back-end, like for like** ([`fio_job`]): sequential writes of
//!   the record size (at least 4 KiB for `O_DIRECT`, the engine's block)
//!   with `psync` (buffered: `direct=0`, `end_fsync=1`; direct:
//!   `direct=1`) and `io_uring` at the engine's default depth
//!   ([`rtrec_engine::DEFAULT_IO_DEPTH`]) for `uring` (`direct=1`) and
//!   `uring-buffered` (`direct=0`). The job file is in the JSON
//!   (`fio_job`). Without fio, the device's bandwidth comes from our own
//!   sequential `O_DIRECT` writer of 1 MiB blocks and the per-back-end
//!   fraction is absent.

use std::path::Path;
use std::process::Command;

use anyhow::Context;
use rtrec_engine::{Config, Framing, Io, PeriodicTimer, Recorder, Workload, DEFAULT_IO_DEPTH};
use rtrec_sys as sys;
use serde::Serialize;

use crate::producer::{self, RtReport, RtRequest};

/// The record sizes of the study.
pub const SIZES: [u64; 3] = [1 << 10, 16 << 10, 1 << 20];

/// The confirmation phase's step: a rate that fails one of its k
/// full-length probes is lowered to this fraction.
pub const STEP_DOWN: f64 = 0.9;

/// The most step-downs of the confirmation phase (0.9^8 ≈ 0.43 of the
/// coarse candidate).
pub const MAX_STEP_DOWNS: u32 = 8;

/// The default k of the k-of-k confirmation (`--confirmations`).
pub const DEFAULT_CONFIRMATIONS: u32 = 3;

/// The writer keeps up when, at the producer's last record, its backlog is
/// at most this fraction of the ring …
pub const BACKLOG_LIMIT: f64 = 0.5;

/// … and at most this fraction of the payload offered during the probe:
/// the writer stored at least 95 % of it while the producer ran. A larger
/// ring must not let a writer slower than the rate pass a short probe …
pub const BACKLOG_OF_OFFERED: f64 = 0.05;

/// … or at most this many records, whichever is more: the last record is
/// always still queued when the producer stops, and a slow rate offers few.
pub const BACKLOG_RECORDS: u64 = 4;

/// Finished files a probe keeps beside the one being written; older ones
/// are deleted as it records.
pub const KEEP_FILES: u64 = 2;

/// What decides whether a probe holds, besides keeping up (see [`holds`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum HoldRule {
    /// 0 drops, no writer error, the backlog at the end at most half the
    /// ring; lateness reported, not judged (the default).
    #[default]
    Drops,
    /// `drops`, and every release within one period with no missed period.
    Max,
    /// `drops`, and 99 % of the releases within one period.
    P99,
}

/// What the study does.
#[derive(Clone, Debug)]
pub struct Options {
    /// How long a probe that decides the sustained rate records, ns.
    pub probe_ns: u64,
    /// How long a probe of the coarse search records, ns.
    pub coarse_ns: u64,
    /// Geometric bisection steps of the coarse search.
    pub steps: u32,
    /// Full-length probes a rate must hold in a row (k of k).
    pub confirmations: u32,
    /// Record sizes, bytes.
    pub sizes: Vec<u64>,
    /// What decides a probe.
    pub rule: HoldRule,
    /// The producer thread's real-time setup.
    pub rt: RtRequest,
}

/// One recording at one rate.
#[derive(Clone, Debug, Serialize)]
pub struct Probe {
    /// Records per second asked for.
    pub rate_hz: f64,
    /// The period of the schedule, ns.
    pub period_ns: u64,
    /// How long it recorded (the schedule's span), ns.
    pub duration_ns: u64,
    /// `coarse` or `confirm`.
    pub phase: &'static str,
    /// It held by the study's rule ([`holds`]).
    pub held: bool,
    /// Records dropped.
    pub dropped: u64,
    /// The writer's first error, if any.
    pub writer_error: Option<String>,
    /// The ring's size, bytes.
    pub ring_bytes: u64,
    /// Bytes per record.
    pub record_bytes: u64,
    /// Payload bytes the producer offered (records × size).
    pub offered_bytes: u64,
    /// Payload bytes queued but not yet written at the producer's last
    /// record.
    pub backlog_bytes_at_end: u64,
    /// Periods whose release was missed (reported, judged only by
    /// `--hold-rule max`).
    pub missed_periods: u64,
    /// The latest release against the schedule, ns.
    pub max_lateness_ns: u64,
    /// The 99th percentile of the lateness, ns.
    pub p99_lateness_ns: u64,
    /// Payload bytes stored.
    pub bytes: u64,
    /// CPU time of the writer and the flush thread, ns.
    pub cpu_ns: u64,
    /// The producer thread got every part of its real-time setup.
    pub rt_granted: bool,
}

/// True when `p` holds under `rule`: the recorder lost nothing (0 drops,
/// no writer error) and kept up (the backlog at the producer's last record
/// at most [`BACKLOG_LIMIT`] of the ring and [`BACKLOG_OF_OFFERED`] of the
/// payload offered); `max` and `p99` also judge the producer's lateness
/// against one period.
pub fn holds(p: &Probe, rule: HoldRule) -> bool {
    let backlog = p.backlog_bytes_at_end as f64;
    let kept_up = p.dropped == 0
        && p.writer_error.is_none()
        && backlog <= BACKLOG_LIMIT * p.ring_bytes as f64
        && backlog
            <= (BACKLOG_OF_OFFERED * p.offered_bytes as f64)
                .max((BACKLOG_RECORDS * p.record_bytes) as f64);
    kept_up
        && match rule {
            HoldRule::Drops => true,
            HoldRule::Max => p.max_lateness_ns <= p.period_ns && p.missed_periods == 0,
            HoldRule::P99 => p.p99_lateness_ns <= p.period_ns,
        }
}

/// One back-end and record size.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// The write back-end.
    pub io: Io,
    /// Bytes per record.
    pub record_bytes: u64,
    /// The coarse search's candidate, records/s.
    pub coarse_hz: f64,
    /// The highest rate that held k of k full-length probes, records/s
    /// (0: none did).
    pub sustained_hz: f64,
    /// The same in payload bytes/s.
    pub sustained_bytes_per_s: f64,
    /// A rate held k of k (false: `sustained_hz` is 0).
    pub confirmed: bool,
    /// `sustained_bytes_per_s` ÷ the device's bandwidth (fio, 1 MiB
    /// `O_DIRECT` psync).
    pub fraction_of_device: f64,
    /// fio's bandwidth with this back-end's settings and block size
    /// ([`fio_job`]), bytes/s; null without fio or when its job failed.
    pub fio_bytes_per_s: Option<f64>,
    /// `sustained_bytes_per_s` ÷ `fio_bytes_per_s`.
    pub fraction_of_fio: Option<f64>,
    /// The fio job file of that comparison (null without fio).
    pub fio_job: Option<String>,
    /// The longest lateness of the producer at the sustained rate, ns
    /// (reported, not judged by default).
    pub max_lateness_ns: Option<u64>,
    /// Missed periods at the sustained rate, summed over its k probes.
    pub missed_periods: Option<u64>,
    /// CPU seconds (writer + flush thread) per GiB stored, at the
    /// sustained rate.
    pub cpu_s_per_gib: Option<f64>,
    /// The next rate up was not probed: its recording would not fit.
    pub capped: bool,
    /// Every probe, in order.
    pub probes: Vec<Probe>,
}

/// The study's result (`--json`).
#[derive(Clone, Debug, Serialize)]
pub struct ThroughputReport {
    /// `"throughput"`.
    pub study: &'static str,
    /// Seconds each deciding probe recorded.
    pub probe_s: f64,
    /// Seconds each coarse probe recorded.
    pub coarse_s: f64,
    /// Full-length probes a rate had to hold in a row.
    pub confirmations: u32,
    /// What decided a probe.
    pub hold_rule: HoldRule,
    /// The producer's real-time setup, as a probe thread was granted it.
    pub rt: RtReport,
    /// The emulated device's profile (`--device`), `native` without one.
    pub device_profile: String,
    /// The device's sequential write bandwidth, bytes/s.
    pub device_bytes_per_s: f64,
    /// How it was measured: `fio` or `own O_DIRECT writer`.
    pub device_method: &'static str,
    /// One row per back-end and record size.
    pub rows: Vec<Row>,
}

/// Runs the study in `work` (a directory on the file system under test);
/// `device_profile` names it in the report.
///
/// # Errors
/// A recording or the bandwidth measurement failed to start.
pub fn run(work: &Path, device_profile: &str, o: &Options) -> anyhow::Result<ThroughputReport> {
    let fio_ns = o.probe_ns.min(10_000_000_000);
    let (device, method) = device_bandwidth(work, fio_ns)?;
    eprintln!(
        "rtrec bench: the device writes {} sequentially ({method})",
        rtrec_units::format_size_per_s(device as u64)
    );
    let rt = producer::probe(&o.rt);
    eprintln!("rtrec bench: the probes' producer: {}", rt.line());
    let has_fio = method == "fio";
    let mut rows = Vec::new();
    for &size in &o.sizes {
        for (io, _) in Io::ALL {
            let (fio_bps, job) = if has_fio {
                fio_for(work, *io, size, fio_ns)
            } else {
                (None, None)
            };
            let mut prober =
                |bps: f64, ns: u64, phase: &'static str| -> anyhow::Result<Option<Probe>> {
                    // Ctrl-C or SIGTERM ends the study between probes.
                    anyhow::ensure!(!crate::signal::interrupted(), "interrupted");
                    if bps > room_bps(work, size, ns) {
                        return Ok(None);
                    }
                    probe(work, *io, size, bps / size as f64, ns, phase, o).map(Some)
                };
            let room = |ns: u64| room_bps(work, size, ns);
            let mut row = search(*io, size, o, device, &room, &mut prober)?;
            row.fio_bytes_per_s = fio_bps;
            row.fio_job = job;
            row.fraction_of_fio = fio_bps
                .filter(|&f| f > 0.0)
                .map(|f| row.sustained_bytes_per_s / f);
            eprintln!(
                "rtrec bench: {io} {}: {:.0} records/s ({}, {:.2} of the device, {} of fio's {})",
                rtrec_units::format_size(size),
                row.sustained_hz,
                rtrec_units::format_size_per_s(row.sustained_bytes_per_s as u64),
                row.fraction_of_device,
                row.fraction_of_fio
                    .map_or("-".into(), |f| format!("{f:.2}")),
                fio_bps.map_or("-".into(), |b| rtrec_units::format_size_per_s(b as u64)),
            );
            rows.push(row);
        }
    }
    Ok(ThroughputReport {
        study: "throughput",
        probe_s: o.probe_ns as f64 / 1e9,
        coarse_s: o.coarse_ns.min(o.probe_ns) as f64 / 1e9,
        confirmations: o.confirmations,
        hold_rule: o.rule,
        rt,
        device_profile: device_profile.to_string(),
        device_bytes_per_s: device,
        device_method: method,
        rows,
    })
}

/// The highest rate, payload bytes/s, whose recording of `ns` fits in the
/// free space of `work`. With the files reclaimed as the probe goes (see
/// [`reclaim`]), a probe never holds more than [`KEEP_FILES`] + 1 files,
/// whatever its length.
fn room_bps(work: &Path, size: u64, ns: u64) -> f64 {
    let free = std::fs::File::open(work)
        .and_then(|f| sys::available_bytes(&f))
        .unwrap_or(0) as f64;
    let room = (free - (256 << 20) as f64).max(0.0);
    if room >= ((KEEP_FILES + 2) * probe_file_bytes(size)) as f64 {
        f64::INFINITY
    } else {
        room / 1.25 / (ns as f64 / 1e9)
    }
}

/// The search of one back-end and record size (see the module docs):
/// `prober(bps, ns, phase)` records one probe (`None`: it would not fit),
/// `room(ns)` is the highest rate a recording of `ns` fits at.
pub fn search(
    io: Io,
    size: u64,
    o: &Options,
    device: f64,
    room: &dyn Fn(u64) -> f64,
    prober: &mut dyn FnMut(f64, u64, &'static str) -> anyhow::Result<Option<Probe>>,
) -> anyhow::Result<Row> {
    let mut probes: Vec<Probe> = Vec::new();
    // Rates in payload bytes/s; at most one record a microsecond.
    let max_bps = (size as f64 * 1e6).min(device * 4.0);
    let mut capped = false;
    let coarse_ns = o.coarse_ns.min(o.probe_ns);
    let mut try_rate = |bps: f64,
                        ns: u64,
                        phase: &'static str,
                        probes: &mut Vec<Probe>|
     -> anyhow::Result<Option<bool>> {
        let Some(p) = prober(bps, ns, phase)? else {
            capped = true;
            return Ok(None);
        };
        let held = p.held;
        probes.push(p);
        Ok(Some(held))
    };
    // Phase 1: ×4 up, then bisection, with short probes.
    let mut lo: Option<f64> = None;
    let mut r = (1 << 20) as f64;
    while r <= max_bps && try_rate(r, coarse_ns, "coarse", &mut probes)? == Some(true) {
        lo = Some(r);
        r *= 4.0;
    }
    let (mut lo_bps, mut hi_bps) = (lo.unwrap_or((1 << 18) as f64 / 4.0), r);
    for _ in 0..o.steps {
        let mid = (lo_bps * hi_bps).sqrt();
        if try_rate(mid, coarse_ns, "coarse", &mut probes)? == Some(true) {
            lo = Some(mid);
            lo_bps = mid;
        } else {
            hi_bps = mid;
        }
    }
    let coarse_bps = lo.unwrap_or(lo_bps);
    // Phase 2: k of k full-length probes, from the candidate down by 10 %
    // (no higher than a full-length recording fits).
    let room_now = room(o.probe_ns);
    let room_capped = room_now < coarse_bps;
    let mut bps = coarse_bps.min(room_now);
    let mut sustained = None;
    'rates: for _ in 0..=MAX_STEP_DOWNS {
        for _ in 0..o.confirmations.max(1) {
            if try_rate(bps, o.probe_ns, "confirm", &mut probes)? != Some(true) {
                bps *= STEP_DOWN;
                continue 'rates;
            }
        }
        sustained = Some(bps);
        break;
    }
    let at_rate: Vec<&Probe> = sustained
        .map(|l| {
            probes
                .iter()
                .filter(|p| p.phase == "confirm" && (p.rate_hz * size as f64 - l).abs() < 1.0)
                .collect()
        })
        .unwrap_or_default();
    let stored: u64 = at_rate.iter().map(|p| p.bytes).sum();
    let sustained_bps = sustained.unwrap_or(0.0);
    Ok(Row {
        io,
        record_bytes: size,
        coarse_hz: coarse_bps / size as f64,
        sustained_hz: sustained_bps / size as f64,
        sustained_bytes_per_s: sustained_bps,
        confirmed: sustained.is_some(),
        fraction_of_device: if device > 0.0 {
            sustained_bps / device
        } else {
            0.0
        },
        fio_bytes_per_s: None,
        fraction_of_fio: None,
        fio_job: None,
        max_lateness_ns: at_rate.iter().map(|p| p.max_lateness_ns).max(),
        missed_periods: (!at_rate.is_empty())
            .then(|| at_rate.iter().map(|p| p.missed_periods).sum()),
        cpu_s_per_gib: (stored > 0).then(|| {
            at_rate.iter().map(|p| p.cpu_ns).sum::<u64>() as f64
                / 1e9
                / (stored as f64 / (1u64 << 30) as f64)
        }),
        capped: capped || room_capped,
        probes,
    })
}

/// One recording of `ns` at `rate_hz` records of `size` bytes.
fn probe(
    work: &Path,
    io: Io,
    size: u64,
    rate_hz: f64,
    ns: u64,
    phase: &'static str,
    o: &Options,
) -> anyhow::Result<Probe> {
    let dir = work.join(format!("throughput-{io}-{size}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir(&dir).with_context(|| format!("creating '{}'", dir.display()))?;
    let period_ns = ((1e9 / rate_hz) as u64).max(1);
    let records = (ns / period_ns).max(1);
    let mut cfg = Config {
        io,
        max_record: size as usize,
        framing: Framing::auto(size as usize),
        file_size: probe_file_bytes(size),
        prefix: "probe".into(),
        ..Config::default()
    };
    // The ring `rtrec record` would size for this rate (its default stall),
    // so a probe is judged as the recorder runs.
    let ring_bytes = cfg
        .sizes_for(&Workload {
            period_ns: Some(period_ns),
            records: Some(records),
            fixed_size: true,
            stall: None,
        })
        .ring
        .ring_bytes;
    cfg.ring_bytes = ring_bytes;
    cfg.rt.writer_priority = o.rt.writer_priority();
    let mut rec = Recorder::create(&dir, cfg).context("starting a throughput probe")?;
    let live = rec.live();
    let buf = vec![0xa5u8; size as usize];
    let mut timer = PeriodicTimer::new(period_ns);
    // The producer on a thread of its own with the run's real-time setup,
    // raised once the recorder's threads exist (see `crate::producer`).
    let done = std::sync::atomic::AtomicBool::new(false);
    let (rt, backlog_records) = std::thread::scope(|scope| {
        scope.spawn(|| reclaim(&dir, &done));
        let producer = scope.spawn(|| {
            let rt = producer::raise(&o.rt);
            for _ in 0..records {
                timer.wait();
                let _ = rec.record(&buf);
            }
            let l = live.snapshot();
            done.store(true, std::sync::atomic::Ordering::Relaxed);
            (rt, l.records_queued.saturating_sub(l.records_written))
        });
        producer.join()
    })
    .map_err(|_| anyhow::anyhow!("a throughput probe's producer panicked"))?;
    let s = rec.finish().context("ending a throughput probe")?;
    let _ = std::fs::remove_dir_all(&dir);
    let late = timer.lateness().summary();
    let mut p = Probe {
        rate_hz,
        period_ns,
        duration_ns: records * period_ns,
        phase,
        held: false,
        dropped: s.records_dropped,
        writer_error: s.error.or(s.flush.error).map(|f| f.message),
        ring_bytes: ring_bytes as u64,
        record_bytes: size,
        offered_bytes: records * size,
        backlog_bytes_at_end: backlog_records * size,
        missed_periods: timer.missed(),
        max_lateness_ns: late.map_or(0, |l| l.max),
        p99_lateness_ns: late.map_or(0, |l| l.p99),
        bytes: s.bytes_written,
        cpu_ns: s.writer_cpu_ns.unwrap_or(0) + s.flush.cpu_ns,
        rt_granted: rt.granted,
    };
    p.held = holds(&p, o.rule);
    Ok(p)
}

/// The size of a probe's files: 64 MiB, or 64 records when larger.
fn probe_file_bytes(size: u64) -> u64 {
    (64u64 << 20).max(size * 64)
}

/// Deletes a probe's finished files as it records, all but the newest
/// [`KEEP_FILES`] beside the one being written, every 50 ms at nice 10,
/// until `done`; see the module docs.
fn reclaim(dir: &Path, done: &std::sync::atomic::AtomicBool) {
    let _ = sys::set_thread_nice(10);
    while !done.load(std::sync::atomic::Ordering::Relaxed) {
        std::thread::sleep(std::time::Duration::from_millis(50));
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        // Names carry the file index zero-padded, so they sort in order;
        // hidden names are slots still being prepared.
        let mut names: Vec<std::path::PathBuf> = entries
            .filter_map(|e| e.ok())
            .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
            .map(|e| e.path())
            .collect();
        names.sort();
        let finished = names.len().saturating_sub(KEEP_FILES as usize + 1);
        for old in &names[..finished] {
            let _ = std::fs::remove_file(old);
        }
    }
}

/// The sequential write bandwidth of the file system under `work`,
/// bytes/s: fio's 1 MiB `O_DIRECT` psync writes, else our own writer.
fn device_bandwidth(work: &Path, hold_ns: u64) -> anyhow::Result<(f64, &'static str)> {
    let len = fio_len(work)?;
    let path = work.join("bandwidth.dat");
    let r = run_fio(&path, &fio_job(Io::Direct, 1 << 20, len), hold_ns)
        .map(|b| (b, "fio"))
        .or_else(|| {
            let _ = std::fs::remove_file(&path);
            own_writer(&path, len, hold_ns)
                .ok()
                .map(|b| (b, "own O_DIRECT writer"))
        });
    let _ = std::fs::remove_file(&path);
    r.context("measuring the device's sequential write bandwidth")
}

/// How much a bandwidth measurement writes: half the free space, at most
/// 1 GiB, whole MiB.
fn fio_len(work: &Path) -> anyhow::Result<u64> {
    let free = std::fs::File::open(work)
        .and_then(|f| sys::available_bytes(&f))
        .context("reading the free space")?;
    let len = (free / 2).min(1 << 30) / (1 << 20) * (1 << 20);
    anyhow::ensure!(
        len >= 16 << 20,
        "too little free space to measure the device"
    );
    Ok(len)
}

/// fio's bandwidth with `io`'s settings at `size`, bytes/s, and the job.
fn fio_for(work: &Path, io: Io, size: u64, hold_ns: u64) -> (Option<f64>, Option<String>) {
    let Ok(len) = fio_len(work) else {
        return (None, None);
    };
    let path = work.join("bandwidth.dat");
    let job = fio_job(io, size, len);
    let r = run_fio(&path, &job, hold_ns);
    let _ = std::fs::remove_file(&path);
    (r, Some(job))
}

/// The fio job that matches back-end `io` at record size `size` (see the
/// module docs), writing `len` bytes; the file name and time limit are
/// given on fio's command line.
pub fn fio_job(io: Io, size: u64, len: u64) -> String {
    let (engine, direct) = match io {
        Io::Buffered => ("psync", false),
        Io::Direct => ("psync", true),
        Io::Uring => ("io_uring", true),
        Io::UringBuffered => ("io_uring", false),
    };
    let bs = if direct { size.max(4096) } else { size };
    let mut job = format!(
        "[seq]\nrw=write\nioengine={engine}\nbs={bs}\ndirect={}\nsize={len}\n",
        u8::from(direct)
    );
    if engine == "io_uring" {
        job.push_str(&format!("iodepth={DEFAULT_IO_DEPTH}\n"));
    }
    if !direct {
        job.push_str("end_fsync=1\n");
    }
    job
}

/// Runs `job` on `path` for at most `hold_ns` (at least 2 s); its write
/// bandwidth, bytes/s, if fio runs and writes.
fn run_fio(path: &Path, job: &str, hold_ns: u64) -> Option<f64> {
    let file = tempfile::NamedTempFile::new().ok()?;
    std::fs::write(file.path(), job).ok()?;
    let out = Command::new("fio")
        .arg(file.path())
        .arg(format!("--filename={}", path.display()))
        .arg(format!("--runtime={}", (hold_ns / 1_000_000_000).max(2)))
        .arg("--output-format=json")
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    v["jobs"][0]["write"]["bw_bytes"]
        .as_f64()
        .filter(|&b| b > 0.0)
}

/// Our own: 1 MiB `O_DIRECT` writes from the start of a pre-allocated file
/// of `len` bytes, for at most `hold_ns` (and at most once through it),
/// then `fdatasync`.
fn own_writer(path: &Path, len: u64, hold_ns: u64) -> std::io::Result<f64> {
    let f = sys::create_new(path)?;
    sys::fallocate(&f, sys::FallocateMode::ExtendSize, 0, len)?;
    sys::set_direct(&f, true)?;
    let mut buf = sys::AlignedBuf::new(1 << 20, 4096)?;
    buf.fill(0x5a);
    let t0 = sys::monotonic_ns();
    let mut off = 0;
    while off < len && sys::monotonic_ns() - t0 < hold_ns.max(2_000_000_000) {
        sys::pwrite_all(&f, &buf, off)?;
        off += buf.len() as u64;
    }
    sys::fdatasync(&f)?;
    let dt = (sys::monotonic_ns() - t0).max(1);
    Ok(off as f64 / (dt as f64 / 1e9))
}

/// The study's table: one line per back-end and record size.
pub fn render(r: &ThroughputReport) -> String {
    let rule = match r.hold_rule {
        HoldRule::Drops => "0 drops and the writer keeping up (lateness reported, not judged)",
        HoldRule::Max => "0 drops, the writer keeping up and every release within one period",
        HoldRule::P99 => {
            "0 drops, the writer keeping up and 99 % of the releases within one period"
        }
    };
    let mut t = format!(
        "Throughput on {}: the highest rate held {} of {} times for {} with {rule} (coarse search: {} probes)\n\
         producer: {}; device: {} sequential ({})\n\n{:<14} {:>7} | {:>12} {:>11} | {:>9} | {:>11} {:>6} | {:>9} {:>6} | {:>9}\n",
        r.device_profile,
        r.confirmations,
        r.confirmations,
        rtrec_units::format_duration((r.probe_s * 1e9) as u64),
        rtrec_units::format_duration((r.coarse_s * 1e9) as u64),
        r.rt.line(),
        rtrec_units::format_size_per_s(r.device_bytes_per_s as u64),
        r.device_method,
        "back-end",
        "record",
        "records/s",
        "bytes/s",
        "÷ device",
        "fio",
        "÷ fio",
        "late max",
        "missed",
        "CPU s/GiB"
    );
    for row in &r.rows {
        t.push_str(&format!(
            "{:<14} {:>7} | {:>12.0} {:>11} | {:>8.2}{} | {:>11} {:>6} | {:>9} {:>6} | {:>9}\n",
            row.io.name(),
            rtrec_units::format_size(row.record_bytes),
            row.sustained_hz,
            rtrec_units::format_size_per_s(row.sustained_bytes_per_s as u64),
            row.fraction_of_device,
            if row.capped { "+" } else { " " },
            row.fio_bytes_per_s
                .map_or("-".into(), |b| rtrec_units::format_size_per_s(b as u64)),
            row.fraction_of_fio
                .map_or("-".into(), |f| format!("{f:.2}")),
            row.max_lateness_ns
                .map_or("-".into(), rtrec_units::format_duration),
            row.missed_periods.map_or("-".into(), |m| m.to_string()),
            row.cpu_s_per_gib.map_or("-".into(), |c| format!("{c:.2}")),
        ));
    }
    if r.rows.iter().any(|row| row.capped) {
        t.push_str(
            "+: the next rate up was not probed (its recording would not fit in the free space)\n",
        );
    }
    if r.rows.iter().any(|row| !row.confirmed) {
        t.push_str(&format!(
            "0 records/s: no rate held {0} of {0}, down to 0.43 of the coarse candidate\n",
            r.confirmations
        ));
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A probe at 1,000 records/s of 16 KiB into a 16 MiB ring that lost
    /// nothing, was never late and ended with an empty ring.
    fn clean() -> Probe {
        Probe {
            rate_hz: 1000.0,
            period_ns: 1_000_000,
            duration_ns: 5_000_000_000,
            phase: "confirm",
            held: false,
            dropped: 0,
            writer_error: None,
            ring_bytes: 16 << 20,
            record_bytes: 16384,
            offered_bytes: 5000 * 16384,
            backlog_bytes_at_end: 0,
            missed_periods: 0,
            max_lateness_ns: 10_000,
            p99_lateness_ns: 5_000,
            bytes: 5000 * 16384,
            cpu_ns: 1,
            rt_granted: true,
        }
    }

    #[test]
    fn a_late_release_does_not_fail_a_probe_that_lost_nothing() {
        let late = Probe {
            max_lateness_ns: 9_000_000,
            missed_periods: 8,
            ..clean()
        };
        assert!(holds(&clean(), HoldRule::Drops));
        assert!(holds(&late, HoldRule::Drops));
        assert!(!holds(&late, HoldRule::Max));
        assert!(holds(&late, HoldRule::P99));
        assert!(!holds(
            &Probe {
                p99_lateness_ns: 2_000_000,
                ..late
            },
            HoldRule::P99
        ));
    }

    #[test]
    fn a_drop_an_error_or_a_ring_over_half_full_fails_it() {
        assert!(!holds(
            &Probe {
                dropped: 1,
                ..clean()
            },
            HoldRule::Drops
        ));
        let error = Probe {
            writer_error: Some("ENOSPC".into()),
            ..clean()
        };
        assert!(!holds(&error, HoldRule::Drops));
        // 5 % of the 78 MiB offered is 3.9 MiB: within it holds, past it not.
        let small = Probe {
            backlog_bytes_at_end: 250 * 16384,
            ..clean()
        };
        assert!(holds(&small, HoldRule::Drops));
        let behind = Probe {
            backlog_bytes_at_end: 251 * 16384,
            ..clean()
        };
        assert!(!holds(&behind, HoldRule::Drops));
        // A big probe in a small ring: half the ring is the limit.
        let big = Probe {
            offered_bytes: 1 << 40,
            ..clean()
        };
        let half = Probe {
            backlog_bytes_at_end: 8 << 20,
            ..big.clone()
        };
        assert!(holds(&half, HoldRule::Drops));
        let over = Probe {
            backlog_bytes_at_end: (8 << 20) + 16384,
            ..big
        };
        assert!(!holds(&over, HoldRule::Drops));
        // A slow rate: the last records still queued are not falling behind.
        let slow = Probe {
            record_bytes: 1 << 20,
            offered_bytes: 2 << 20,
            ring_bytes: 64 << 20,
            backlog_bytes_at_end: 1 << 20,
            ..clean()
        };
        assert!(holds(&slow, HoldRule::Drops));
        assert!(!holds(
            &Probe {
                backlog_bytes_at_end: 5 << 20,
                ..slow
            },
            HoldRule::Drops
        ));
    }

    /// A device that keeps up with everything at or below `limit` bytes/s
    /// except the probes whose index is in `hiccups` (one late-ring glitch
    /// each); the search's probes in order.
    fn searched(limit: f64, hiccups: &[usize], k: u32) -> Row {
        let o = Options {
            probe_ns: 10_000_000_000,
            coarse_ns: 1_000_000_000,
            steps: 5,
            confirmations: k,
            sizes: vec![1 << 20],
            rule: HoldRule::Drops,
            rt: RtRequest::default(),
        };
        let mut n = 0;
        let mut prober = |bps: f64, ns: u64, phase: &'static str| {
            let i = n;
            n += 1;
            let mut p = Probe {
                rate_hz: bps / (1 << 20) as f64,
                duration_ns: ns,
                phase,
                dropped: u64::from(bps > limit || hiccups.contains(&i)),
                ..clean()
            };
            p.held = holds(&p, o.rule);
            Ok(Some(p))
        };
        search(
            Io::Direct,
            1 << 20,
            &o,
            1e9,
            &|_| f64::INFINITY,
            &mut prober,
        )
        .unwrap()
    }

    #[test]
    fn the_answer_held_k_of_k_and_a_hiccup_only_steps_it_down() {
        let limit = 300.0 * (1 << 20) as f64;
        let row = searched(limit, &[], 3);
        assert!(row.confirmed && row.sustained_bytes_per_s <= limit);
        let confirms: Vec<&Probe> = row.probes.iter().filter(|p| p.phase == "confirm").collect();
        assert_eq!(confirms.len(), 3);
        assert!(confirms.iter().all(|p| p.held));
        // The same search, its second confirmation losing a record: the
        // answer is the next rate down, held 3 of 3.
        let first_confirm = row.probes.len() - 3;
        let hiccup = searched(limit, &[first_confirm + 1], 3);
        assert!(hiccup.confirmed);
        let ratio = hiccup.sustained_bytes_per_s / row.sustained_bytes_per_s;
        assert!((ratio - STEP_DOWN).abs() < 1e-9, "{ratio}");
        assert_eq!(hiccup.missed_periods, Some(0));
    }
}
