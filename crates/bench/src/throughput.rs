//! `rtrec bench --study throughput`: for each write back-end and record
//! size, the highest record rate sustained for `--probe-duration` (default
//! 60 s) with no drop and every period released within one period of its
//! time; beside it the device's sequential write bandwidth measured on the
//! same file system in the same run, and CPU seconds (writer + flush
//! thread) per GiB stored.
//!
//! Design choices:
//! - **The hold rule is the issue's**: a probe holds with 0 drops, no
//!   error, the maximum lateness of the producer's releases at most one
//!   period and no missed period ([`HoldRule::Max`], the default).
//!   [`HoldRule::P99`] (`--hold-rule p99`) judges the 99th percentile
//!   instead, for shared or virtual machines where single wake-ups are late
//!   by milliseconds whatever the back-end does; the table names the rule.
//! - **Two phases keep the runtime sane**: a coarse search with short
//!   probes (`--coarse-duration`, default 5 s) raises the rate ×4 from
//!   1 MiB/s until a probe fails, then bisects the interval geometrically
//!   `--steps` times (default 5); then each candidate is confirmed for the
//!   full probe duration, stepping down by 10 % ([`STEP_DOWN`]) until a
//!   full-length probe holds (at most [`MAX_STEP_DOWNS`] times; a row none
//!   of whose full-length probes held says so, `confirmed` false, rate 0).
//!   The sustained rate is always one a full-length probe held. With a
//!   coarse duration of at least the probe duration there is one phase.
//! - **A probe is a whole recording** through the engine (ring mode, the
//!   pool, the framing `rtrec record` would choose), in a fresh directory
//!   that is deleted after it, so probes do not fill the file system; a
//!   rate whose recording would not fit in the free space is not probed
//!   (the row then says the limit was the space, `capped`).
//! - **The producer runs at SCHED_FIFO priority [`PRODUCER_PRIORITY`]** on
//!   a thread of its own, as a periodic application that cares about its
//!   schedule would: the question is what the back-end sustains, and a
//!   producer at normal priority on a busy machine is late by milliseconds
//!   whatever the back-end does. When the priority is refused (no
//!   `CAP_SYS_NICE`), the probe runs at normal priority and the report says
//!   so (`producer`).
//! - **A probe reclaims its own space as it records**, as a logger's
//!   retention job does: a thread at nice 10 deletes finished files, all but
//!   the newest [`KEEP_FILES`], so a 60 s probe at the device's full rate
//!   fits on the bench's 2 GiB file system. Each deletion frees a file's
//!   extents (a journal transaction, like the BGTRUNC load), and every
//!   back-end pays it alike; only when even that does not fit is a rate
//!   left unprobed (`capped`).
//! - **The device's bandwidth** comes from `fio` (sequential 1 MiB direct
//!   writes) when it is installed, else from our own sequential `O_DIRECT`
//!   writer of 1 MiB blocks into a pre-allocated file; both on the same
//!   file system, so the fraction compares like with like.

use std::path::Path;
use std::process::Command;

use anyhow::Context;
use rtrec_engine::{Config, Framing, Io, PeriodicTimer, Recorder};
use rtrec_sys as sys;
use serde::Serialize;

/// The record sizes of the study.
pub const SIZES: [u64; 3] = [1 << 10, 16 << 10, 1 << 20];

/// The confirmation phase's step: each failed full-length probe lowers the
/// rate to this fraction.
pub const STEP_DOWN: f64 = 0.9;

/// The most step-downs of the confirmation phase (0.9^8 ≈ 0.43 of the
/// coarse candidate).
pub const MAX_STEP_DOWNS: u32 = 8;

/// The SCHED_FIFO priority of a probe's producer thread: a middle
/// priority, below the kernel's threaded interrupts (50 on PREEMPT_RT), so
/// it never starves the I/O completions it waits for.
pub const PRODUCER_PRIORITY: i32 = 40;

/// Finished files a probe keeps beside the one being written; older ones
/// are deleted as it records.
pub const KEEP_FILES: u64 = 2;

/// How a probe's lateness is judged.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum HoldRule {
    /// Every release within one period (maximum lateness ≤ period, no
    /// missed period): the rule, the default.
    #[default]
    Max,
    /// 99 % of the releases within one period.
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
    /// Record sizes, bytes.
    pub sizes: Vec<u64>,
    /// How lateness is judged.
    pub rule: HoldRule,
}

/// One recording at one rate.
#[derive(Clone, Debug, Serialize)]
pub struct Probe {
    /// Records per second asked for.
    pub rate_hz: f64,
    /// How long it recorded (the schedule's span), ns.
    pub duration_ns: u64,
    /// `coarse` or `confirm`.
    pub phase: &'static str,
    /// It held by the study's rule.
    pub held: bool,
    /// Records dropped.
    pub dropped: u64,
    /// Periods whose release was missed.
    pub missed_periods: u64,
    /// The latest release against the schedule, ns.
    pub max_lateness_ns: u64,
    /// The 99th percentile of the lateness, ns.
    pub p99_lateness_ns: u64,
    /// Payload bytes stored.
    pub bytes: u64,
    /// CPU time of the writer and the flush thread, ns.
    pub cpu_ns: u64,
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
    /// The highest rate a full-length probe held, records/s (0: none did).
    pub sustained_hz: f64,
    /// The same in payload bytes/s.
    pub sustained_bytes_per_s: f64,
    /// A full-length probe held (false: `sustained_hz` is 0).
    pub confirmed: bool,
    /// `sustained_bytes_per_s` ÷ the device's bandwidth.
    pub fraction_of_device: f64,
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
    /// How lateness was judged.
    pub hold_rule: HoldRule,
    /// The producer's scheduling: `SCHED_FIFO 40`, or `normal` and why.
    pub producer: String,
    /// The device's sequential write bandwidth, bytes/s.
    pub device_bytes_per_s: f64,
    /// How it was measured: `fio` or `own O_DIRECT writer`.
    pub device_method: &'static str,
    /// One row per back-end and record size.
    pub rows: Vec<Row>,
}

/// Runs the study in `work` (a directory on the file system under test).
///
/// # Errors
/// A recording or the bandwidth measurement failed to start.
pub fn run(work: &Path, o: &Options) -> anyhow::Result<ThroughputReport> {
    let (device, method) = device_bandwidth(work, o.probe_ns.min(10_000_000_000))?;
    eprintln!(
        "rtrec bench: the device writes {} sequentially ({method})",
        rtrec_units::format_size_per_s(device as u64)
    );
    let producer = producer_scheduling();
    eprintln!("rtrec bench: the probes' producer runs at {producer}");
    let mut rows = Vec::new();
    for &size in &o.sizes {
        for (io, _) in Io::ALL {
            let row = search(work, *io, size, o, device)?;
            eprintln!(
                "rtrec bench: {io} {}: {:.0} records/s ({}, {:.2} of the device)",
                rtrec_units::format_size(size),
                row.sustained_hz,
                rtrec_units::format_size_per_s(row.sustained_bytes_per_s as u64),
                row.fraction_of_device
            );
            rows.push(row);
        }
    }
    Ok(ThroughputReport {
        study: "throughput",
        probe_s: o.probe_ns as f64 / 1e9,
        coarse_s: o.coarse_ns.min(o.probe_ns) as f64 / 1e9,
        hold_rule: o.rule,
        producer,
        device_bytes_per_s: device,
        device_method: method,
        rows,
    })
}

/// The two-phase search of one back-end and record size (see the module
/// docs).
fn search(work: &Path, io: Io, size: u64, o: &Options, device: f64) -> anyhow::Result<Row> {
    let mut probes: Vec<Probe> = Vec::new();
    // The highest rate whose recording of `ns` fits in the free space.
    // With the files reclaimed as the probe goes (see `probe`), a probe
    // never holds more than `KEEP_FILES` + 1 files, whatever its length.
    let fit_bps = |ns: u64| {
        let free = std::fs::File::open(work)
            .and_then(|f| sys::available_bytes(&f))
            .unwrap_or(0) as f64;
        let room = (free - (256 << 20) as f64).max(0.0);
        if room >= ((KEEP_FILES + 2) * probe_file_bytes(size)) as f64 {
            f64::INFINITY
        } else {
            room / 1.25 / (ns as f64 / 1e9)
        }
    };
    let fits = |bps: f64, ns: u64| bps <= fit_bps(ns);
    // Rates in payload bytes/s; at most one record a microsecond.
    let max_bps = (size as f64 * 1e6).min(device * 4.0);
    let mut capped = false;
    let coarse_ns = o.coarse_ns.min(o.probe_ns);
    let one_phase = coarse_ns >= o.probe_ns;
    // One probe at `bps` for `ns`: `None` when its recording would not fit.
    let mut try_rate = |bps: f64,
                        ns: u64,
                        phase: &'static str,
                        probes: &mut Vec<Probe>|
     -> anyhow::Result<Option<bool>> {
        if !fits(bps, ns) {
            capped = true;
            return Ok(None);
        }
        let p = probe(work, io, size, bps / size as f64, ns, phase, o.rule)?;
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
    // Phase 2: full-length probes from the candidate down by 10 %.
    let mut sustained = if one_phase { lo } else { None };
    let mut room_capped = false;
    if !one_phase {
        // A full-length recording must fit too: start no higher than that.
        let room = fit_bps(o.probe_ns);
        room_capped = room < coarse_bps;
        let mut bps = coarse_bps.min(room);
        for _ in 0..=MAX_STEP_DOWNS {
            if try_rate(bps, o.probe_ns, "confirm", &mut probes)? == Some(true) {
                sustained = Some(bps);
                break;
            }
            bps *= STEP_DOWN;
        }
    }
    let best = sustained.and_then(|l| {
        probes.iter().rev().find(|p| {
            p.held
                && (one_phase || p.phase == "confirm")
                && (p.rate_hz * size as f64 - l).abs() < 1.0
        })
    });
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
        cpu_s_per_gib: best
            .filter(|p| p.bytes > 0)
            .map(|p| p.cpu_ns as f64 / 1e9 / (p.bytes as f64 / (1u64 << 30) as f64)),
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
    rule: HoldRule,
) -> anyhow::Result<Probe> {
    let dir = work.join(format!("throughput-{io}-{size}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir(&dir).with_context(|| format!("creating '{}'", dir.display()))?;
    let period_ns = ((1e9 / rate_hz) as u64).max(1);
    let records = (ns / period_ns).max(1);
    let cfg = Config {
        io,
        max_record: size as usize,
        framing: Framing::auto(size as usize),
        file_size: probe_file_bytes(size),
        ring_bytes: (16usize << 20).max(size as usize * 16),
        prefix: "probe".into(),
        ..Config::default()
    };
    let mut rec = Recorder::create(&dir, cfg).context("starting a throughput probe")?;
    let buf = vec![0xa5u8; size as usize];
    let mut timer = PeriodicTimer::new(period_ns);
    // The producer on a thread of its own at real-time priority (see the
    // module docs); a refusal leaves it at normal priority, which
    // `producer_scheduling` has already reported.
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| reclaim(&dir, &done));
        scope.spawn(|| {
            let _ = sys::set_fifo_priority(PRODUCER_PRIORITY);
            for _ in 0..records {
                timer.wait();
                let _ = rec.record(&buf);
            }
            done.store(true, std::sync::atomic::Ordering::Relaxed);
        });
    });
    let s = rec.finish().context("ending a throughput probe")?;
    let _ = std::fs::remove_dir_all(&dir);
    let late = timer.lateness().summary();
    let max_lateness_ns = late.map_or(0, |l| l.max);
    let p99_lateness_ns = late.map_or(0, |l| l.p99);
    let missed_periods = timer.missed();
    let on_time = match rule {
        HoldRule::Max => max_lateness_ns <= period_ns && missed_periods == 0,
        HoldRule::P99 => p99_lateness_ns <= period_ns,
    };
    Ok(Probe {
        rate_hz,
        duration_ns: records * period_ns,
        phase,
        held: s.records_dropped == 0 && s.error.is_none() && on_time,
        dropped: s.records_dropped,
        missed_periods,
        max_lateness_ns,
        p99_lateness_ns,
        bytes: s.bytes_written,
        cpu_ns: s.writer_cpu_ns.unwrap_or(0) + s.flush.cpu_ns,
    })
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

/// Whether a probe's producer can run at [`PRODUCER_PRIORITY`], tried on a
/// short-lived thread: `SCHED_FIFO 40`, or `normal (why)`.
fn producer_scheduling() -> String {
    let tried = std::thread::spawn(|| sys::set_fifo_priority(PRODUCER_PRIORITY)).join();
    match tried {
        Ok(Ok(())) => format!("SCHED_FIFO {PRODUCER_PRIORITY}"),
        Ok(Err(e)) => format!("normal priority (SCHED_FIFO refused: {e})"),
        Err(_) => "normal priority".into(),
    }
}

/// The sequential write bandwidth of the file system under `work`, bytes/s.
fn device_bandwidth(work: &Path, hold_ns: u64) -> anyhow::Result<(f64, &'static str)> {
    let free = std::fs::File::open(work)
        .and_then(|f| sys::available_bytes(&f))
        .context("reading the free space")?;
    let len = (free / 2).min(1 << 30) / (1 << 20) * (1 << 20);
    anyhow::ensure!(
        len >= 16 << 20,
        "too little free space to measure the device"
    );
    let path = work.join("bandwidth.dat");
    let r = fio(&path, len).map(|b| (b, "fio")).or_else(|| {
        own_writer(&path, len, hold_ns)
            .ok()
            .map(|b| (b, "own O_DIRECT writer"))
    });
    let _ = std::fs::remove_file(&path);
    r.context("measuring the device's sequential write bandwidth")
}

/// `fio`'s sequential direct write bandwidth, if `fio` runs.
fn fio(path: &Path, len: u64) -> Option<f64> {
    let out = Command::new("fio")
        .args([
            "--name=seq",
            "--rw=write",
            "--bs=1M",
            "--direct=1",
            "--ioengine=psync",
        ])
        .arg(format!("--size={len}"))
        .arg(format!("--filename={}", path.display()))
        .arg("--output-format=json")
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    v["jobs"][0]["write"]["bw_bytes"].as_f64()
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
        HoldRule::Max => "every release within one period",
        HoldRule::P99 => "99 % of the releases within one period",
    };
    let mut t = format!(
        "Throughput: the highest rate held for {} with 0 drops and {rule} (coarse search: {} probes)\n\
         producer: {}; device: {} sequential ({})\n\n{:<14} {:>7} | {:>12} {:>11} | {:>9} | {:>10}\n",
        rtrec_units::format_duration((r.probe_s * 1e9) as u64),
        rtrec_units::format_duration((r.coarse_s * 1e9) as u64),
        r.producer,
        rtrec_units::format_size_per_s(r.device_bytes_per_s as u64),
        r.device_method,
        "back-end",
        "record",
        "records/s",
        "bytes/s",
        "÷ device",
        "CPU s/GiB"
    );
    for row in &r.rows {
        t.push_str(&format!(
            "{:<14} {:>7} | {:>12.0} {:>11} | {:>8.2}{} | {:>10}\n",
            row.io.name(),
            rtrec_units::format_size(row.record_bytes),
            row.sustained_hz,
            rtrec_units::format_size_per_s(row.sustained_bytes_per_s as u64),
            row.fraction_of_device,
            if row.capped { "+" } else { " " },
            row.cpu_s_per_gib.map_or("-".into(), |c| format!("{c:.2}")),
        ));
    }
    if r.rows.iter().any(|row| row.capped) {
        t.push_str(
            "+: the next rate up was not probed (its recording would not fit in the free space)\n",
        );
    }
    if r.rows.iter().any(|row| !row.confirmed) {
        t.push_str(
            "0 records/s: no full-length probe held, down to 0.43 of the coarse candidate\n",
        );
    }
    t
}
