//! What runs and how it is timed: one case is a number of sets; each set
//! starts the case's background loads, runs the timed loop on the
//! absolute-deadline timer (`rtrec_engine::PeriodicTimer`) while a sampler
//! thread watches Dirty + Writeback memory, then stops the loads and
//! removes the set's files. The set with the largest maximum is reported,
//! as S1 did.
//!
//! The timed loops:
//! - recording cases: `Recorder::record()` once per period, the engine
//!   configured by [`Scenario::config`]; the engine times every `write()`
//!   (`Summary.write_samples`), and in ring mode `record()` too;
//! - `FALLOCATE*`: one `fallocate()` of the file size per period into a
//!   fresh file (created before the deadline, removed after the call);
//! - `NOISE-FLOOR`: a memcpy of the record size per period; its loaded
//!   variants (`NOISE-FLOOR-BGALL`…) the same under a case's loads, with
//!   `--explain` traced as a producer whose work is that memcpy. They do
//!   not measure the reader's throughput alone first (10 s a case that
//!   only the reader cases' note uses);
//! - `PAGECACHE-FLOOR`: a `write()` of the record size per period into a
//!   file on a tmpfs mounted for the set (journaled, put back), rewound to
//!   its start at the file size; without root, a private directory in
//!   `/dev/shm` (also tmpfs) with a warning.

use std::fs::{self, File};
use std::hint::black_box;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::Duration;

use anyhow::{bail, Context as _};
use base64::Engine as _;
use hdrhistogram::serialization::{Serializer, V2Serializer};
use indicatif::ProgressBar;
use rtrec_engine::{Latency, Mode, PeriodicTimer, Recorder};
use rtrec_sys as sys;

use crate::bgload::{self, Launcher, LoadReport, LoadSet, LoadSpec};
use crate::flusher::FlusherControl;
use crate::output::{progress, Warning};
use crate::producer::{self, RtReport, RtRequest};
use crate::protocol::Protocol;
use crate::report::{CaseResult, ReaderResult, SetResult};
use crate::scenario::{Load, Scenario, Timed};
use crate::signal::interrupted;

/// How often the sampler reads Dirty + Writeback (and moves the bar).
pub const SAMPLE_EVERY: Duration = Duration::from_millis(50);

/// Longest time the reader's throughput alone is measured.
pub const READER_ALONE_MAX: Duration = Duration::from_secs(20);
/// Shortest time the reader's throughput alone is measured.
pub const READER_ALONE_MIN: Duration = Duration::from_secs(2);

/// What a case needs from the run.
pub struct Context<'a> {
    /// The directory to work in (on the filesystem under test).
    pub work: &'a Path,
    /// How to start background loads.
    pub launcher: &'a Launcher,
    /// FON / FOFF.
    pub flusher: &'a mut FlusherControl,
    /// Warnings found while running.
    pub warnings: &'a mut Vec<Warning>,
    /// `--explain`: the tracing session, when it could start.
    pub tracer: Option<&'a mut rtrec_trace::Tracer>,
    /// The timed thread's real-time setup.
    pub rt: &'a RtRequest,
}

/// Everything one set measured, before it is summarised.
struct Outcome {
    write: Latency,
    samples: Vec<u64>,
    record: Option<Latency>,
    lateness: Latency,
    missed: u64,
    flush_cpu_ns: Option<u64>,
    writer_cpu_ns: Option<u64>,
    dropped: u64,
    error: Option<String>,
    duration_ns: u64,
    interrupted: bool,
    explain: Option<rtrec_trace::Explanation>,
    rt: Option<RtReport>,
}

impl Outcome {
    fn new(calls: u64) -> Outcome {
        Outcome {
            write: Latency::new(),
            samples: Vec::with_capacity(calls as usize),
            record: None,
            lateness: Latency::new(),
            missed: 0,
            flush_cpu_ns: None,
            writer_cpu_ns: None,
            dropped: 0,
            error: None,
            duration_ns: 0,
            interrupted: false,
            explain: None,
            rt: None,
        }
    }

    fn max(&self) -> u64 {
        self.write.summary().map(|s| s.max).unwrap_or(0)
    }
}

/// Runs one case under `protocol`. Never fails: an error ends the case
/// and is stored in [`CaseResult::error`].
pub fn run_case(s: &Scenario, protocol: &Protocol, ctx: &mut Context<'_>) -> CaseResult {
    let applied = match ctx.flusher.set(s.flusher) {
        Ok(a) => a,
        Err(e) => {
            let mut r = CaseResult::new(s, protocol, s.flusher);
            r.error = Some(format!("{e:#}"));
            return r;
        }
    };
    let mut result = CaseResult::new(s, protocol, applied);
    let case_dir = ctx.work.join(s.name);
    let bar = progress::case_bar(s.name, protocol.sets as u64 * protocol.writes);
    let mut best: Option<(u32, Outcome)> = None;
    let mut reader_alone = None;
    let r = (|| -> anyhow::Result<()> {
        fs::create_dir_all(&case_dir)
            .with_context(|| format!("creating '{}'", case_dir.display()))?;
        if s.loads.contains(&Load::Read) && !s.is_loaded_floor() {
            bar.set_message("reader alone");
            let alone = Duration::from_nanos(protocol.writes * protocol.period_ns)
                .clamp(READER_ALONE_MIN, READER_ALONE_MAX);
            reader_alone = Some(reader_throughput_alone(
                ctx.launcher,
                &load_spec(Load::Read, &case_dir, protocol),
                alone,
            )?);
        }
        for i in 0..protocol.sets {
            if interrupted() {
                result.interrupted = true;
                break;
            }
            bar.set_message(format!("set {}/{}", i + 1, protocol.sets));
            let (outcome, set) = run_set(s, protocol, ctx, &case_dir, i, &bar)?;
            if outcome.interrupted {
                result.interrupted = true;
                break;
            }
            result.sets.push(set);
            if best.as_ref().is_none_or(|(_, b)| outcome.max() > b.max()) {
                best = Some((i, outcome));
            }
        }
        Ok(())
    })();
    bar.finish_and_clear();
    let _ = fs::remove_dir_all(&case_dir);
    if let Err(e) = r {
        result.error = Some(format!("{e:#}"));
    }
    if let Some((i, o)) = best {
        let set = &result.sets[i as usize];
        result.reported_set = Some(i);
        result.write_ns = set.write_ns;
        result.record_ns = set.record_ns;
        result.lateness_ns = set.lateness_ns;
        result.missed_periods = set.missed_periods;
        result.flush_cpu_s = set.flush_cpu_s;
        result.writer_cpu_s = set.writer_cpu_s;
        result.dirty_peak_bytes = set.dirty_peak_bytes;
        result.records_dropped = set.records_dropped;
        if let Some(alone) = reader_alone {
            let during = set.reader_bytes_per_s;
            result.reader = Some(ReaderResult {
                alone_bytes_per_s: alone,
                during_bytes_per_s: during,
                during_pct: during.filter(|_| alone > 0.0).map(|d| d / alone * 100.0),
            });
        }
        result.write_histogram_v2_base64 = histogram_base64(&o.write);
        result.write_samples_ns = o.samples;
        result.explain = o.explain;
        result.rt = o.rt;
    }
    result
}

fn load_spec(load: Load, case_dir: &Path, protocol: &Protocol) -> LoadSpec {
    LoadSpec {
        file_bytes: protocol.file_bytes,
        ..LoadSpec::new(load, case_dir.join(format!("load-{}", load.name())))
    }
}

/// Runs the reader alone for `d` and returns its throughput, bytes/s.
fn reader_throughput_alone(
    launcher: &Launcher,
    spec: &LoadSpec,
    d: Duration,
) -> anyhow::Result<f64> {
    let p = bgload::spawn(launcher, spec)?;
    let end = std::time::Instant::now() + d;
    while std::time::Instant::now() < end && !interrupted() {
        thread::sleep(SAMPLE_EVERY);
    }
    let r = p.stop()?;
    r.result
        .and_then(|r| r.read_bytes_per_s())
        .ok_or_else(|| anyhow::anyhow!("the reader reported no throughput: {}", r.stderr.trim()))
}

/// `syncfs()` of the filesystem holding `dir`: every set starts with no
/// dirty data of ours (S2: "all dirty pages were flushed at the beginning
/// of each test").
fn syncfs(dir: &Path) -> std::io::Result<()> {
    sys::syncfs(File::open(dir)?)
}

/// One set of case `s`: the loads started, the timed loop on a thread of
/// its own ([`timed`]), then the loads stopped and judged
/// ([`loads_result`]) and the set summarised.
fn run_set(
    s: &Scenario,
    protocol: &Protocol,
    ctx: &mut Context<'_>,
    case_dir: &Path,
    index: u32,
    bar: &ProgressBar,
) -> anyhow::Result<(Outcome, SetResult)> {
    let set_dir = case_dir.join(format!("set-{index}"));
    fs::create_dir(&set_dir).with_context(|| format!("creating '{}'", set_dir.display()))?;
    syncfs(ctx.work).context("syncing the filesystem before the set")?;
    let specs: Vec<LoadSpec> = s
        .loads
        .iter()
        .map(|&l| LoadSpec {
            trace_marker: ctx.tracer.as_deref().map(|t| t.marker_path()),
            ..load_spec(l, case_dir, protocol)
        })
        .collect();
    let mut loads = LoadSet::start(ctx.launcher, &specs)?;
    let counter = Arc::new(AtomicU64::new(0));
    let sampler = Sampler::start(counter.clone(), bar.clone(), index as u64 * protocol.writes);
    let load_pids: Vec<i32> = loads.pids();
    let mut trace = ctx.tracer.as_deref_mut().map(|t| SetTrace {
        tracer: t,
        loads: load_pids,
        dir: set_dir.clone(),
        name: format!("{}-set{index}", s.name),
        started: false,
        failed: None,
    });
    let measured = timed(
        s,
        protocol,
        &set_dir,
        &counter,
        trace.as_mut(),
        ctx.warnings,
        ctx.rt,
    );
    let explained = trace.map(SetTrace::finish);
    let dirty_peak_bytes = sampler.stop();
    let dead = loads.dead();
    let reports = loads.stop()?;
    let _ = fs::remove_dir_all(&set_dir);
    let mut o = measured?;
    match explained {
        Some(Ok(x)) => o.explain = x,
        Some(Err(e)) => ctx.warnings.push(Warning::Explain {
            case: s.name.to_string(),
            reason: e,
        }),
        None => {}
    }
    let reader_bytes_per_s = loads_result(s, &reports, &dead, ctx.warnings)?;
    let set = SetResult {
        index,
        write_ns: o.write.summary(),
        record_ns: o.record.as_ref().and_then(Latency::summary),
        lateness_ns: o.lateness.summary(),
        missed_periods: o.missed,
        flush_cpu_s: o.flush_cpu_ns.map(|ns| ns as f64 / 1e9),
        writer_cpu_s: o.writer_cpu_ns.map(|ns| ns as f64 / 1e9),
        dirty_peak_bytes,
        records_dropped: o.dropped,
        reader_bytes_per_s,
        duration_s: o.duration_ns as f64 / 1e9,
        error: o.error.clone(),
    };
    Ok((o, set))
}

/// The timed loop of case `s` on a thread of its own, raised to the run's
/// real-time setup `rt` after its untimed setup (see `producer`); the
/// loads and the sampler were started by the calling thread and stay
/// normal.
fn timed(
    s: &Scenario,
    protocol: &Protocol,
    set_dir: &Path,
    counter: &AtomicU64,
    mut trace: Option<&mut SetTrace<'_>>,
    warnings: &mut Vec<Warning>,
    rt: &RtRequest,
) -> anyhow::Result<Outcome> {
    thread::scope(|scope| {
        let timed = thread::Builder::new()
            .name("rtrec-timed".into())
            .spawn_scoped(scope, || match s.timed {
                Timed::Write(_) => record_loop(s, protocol, set_dir, counter, trace, rt),
                Timed::Fallocate => {
                    if let Some(t) = trace.as_mut() {
                        t.start(vec![sys::gettid()]);
                    }
                    fallocate_loop(protocol, set_dir, counter, rt)
                }
                Timed::Memcpy => {
                    // No timed system call: with --explain the producer's
                    // slow stretches (the memcpy) are what gets attributed.
                    if let Some(t) = trace.as_mut() {
                        t.start(vec![sys::gettid()]);
                    }
                    memcpy_loop(protocol, counter, rt)
                }
                Timed::PageCache => pagecache_loop(protocol, counter, trace, warnings, rt),
            })
            .context("starting the timed thread")?;
        timed
            .join()
            .unwrap_or_else(|_| Err(anyhow::anyhow!("the timed thread panicked")))
    })
}

/// The loads of a set, stopped: a load that died during the set fails it;
/// one that had to be killed is a warning. The background reader's
/// throughput, when it ran.
fn loads_result(
    s: &Scenario,
    reports: &[LoadReport],
    dead: &[&'static str],
    warnings: &mut Vec<Warning>,
) -> anyhow::Result<Option<f64>> {
    if let Some(r) = reports.iter().find(|r| dead.contains(&r.load.name())) {
        bail!(
            "the {} load stopped during the set ({}): {}",
            r.load.name(),
            r.status,
            r.stderr.trim()
        );
    }
    for r in reports.iter().filter(|r| !r.clean) {
        warnings.push(Warning::LoadKilled {
            case: s.name.to_string(),
            load: r.load.name(),
        });
    }
    Ok(reports
        .iter()
        .find(|r| r.load == Load::Read)
        .and_then(|r| r.result.as_ref())
        .and_then(|r| r.read_bytes_per_s()))
}

/// A record of `len` bytes with a recognisable pattern.
fn record_bytes(len: u64) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

/// The tracing of one set: started once the timed threads exist.
struct SetTrace<'a> {
    tracer: &'a mut rtrec_trace::Tracer,
    loads: Vec<i32>,
    dir: std::path::PathBuf,
    name: String,
    started: bool,
    failed: Option<String>,
}

impl SetTrace<'_> {
    fn start(&mut self, timed: Vec<i32>) {
        match self.tracer.start(timed, &self.loads, &self.dir) {
            Ok(()) => self.started = true,
            Err(e) => self.failed = Some(format!("starting the trace: {e}")),
        }
    }

    /// The explanation (none for a loop with no timed system call).
    fn finish(self) -> Result<Option<rtrec_trace::Explanation>, String> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        if !self.started {
            return Ok(None);
        }
        self.tracer
            .stop(&self.name)
            .map(Some)
            .map_err(|e| format!("reading the trace: {e}"))
    }
}

fn record_loop(
    s: &Scenario,
    protocol: &Protocol,
    dir: &Path,
    counter: &AtomicU64,
    trace: Option<&mut SetTrace<'_>>,
    rt: &RtRequest,
) -> anyhow::Result<Outcome> {
    let mut cfg = s.config(protocol).expect("a recording case");
    cfg.rt.writer_priority = rt.writer_priority();
    cfg.trace_marker = trace
        .as_ref()
        .and_then(|t| crate::explain::marker(t.tracer));
    let ring = cfg.mode == Mode::Ring;
    let mut o = Outcome::new(protocol.writes);
    let data = record_bytes(protocol.record_bytes);
    // `--cpu N` stays the timed thread's: the writer and flush threads
    // created next inherit a mask without it (see `producer`).
    let kept = producer::keep_cpu(rt);
    let mut rec = Recorder::create(dir, cfg).context("starting the recording")?;
    if let Some(t) = trace {
        // Ring mode: write() runs on the engine's writer thread.
        let writer = rtrec_trace::threads_named("rtrec-writer");
        t.start(if ring && !writer.is_empty() {
            writer
        } else {
            vec![sys::gettid()]
        });
    }
    // The writer and flush threads exist: raising now leaves the flush
    // thread at normal priority (see `producer`).
    o.rt = Some(producer::raise_kept(rt, kept));
    let start = sys::monotonic_ns();
    let mut timer = PeriodicTimer::new(protocol.period_ns);
    for i in 0..protocol.writes {
        timer.wait();
        // A drop is counted by the engine and reported below.
        let _ = rec.record(&data);
        counter.store(i + 1, Ordering::Relaxed);
        if interrupted() {
            o.interrupted = true;
            break;
        }
    }
    o.duration_ns = sys::monotonic_ns() - start;
    let summary = if o.interrupted {
        rec.abort("interrupted")
    } else {
        rec.finish()
    }
    .context("ending the recording")?;
    o.lateness = timer.lateness().clone();
    o.missed = timer.missed();
    o.write = summary.write_latency;
    o.samples = summary.write_samples;
    o.record = ring.then_some(summary.record_latency);
    o.flush_cpu_ns = Some(summary.flush.cpu_ns);
    o.writer_cpu_ns = summary.writer_cpu_ns;
    o.dropped = summary.records_dropped;
    o.error = summary.error.or(summary.flush.error).map(|f| f.message);
    Ok(o)
}

/// The periodic loop of the cases that time one call themselves: `step`
/// waits for `timer` (doing any untimed work before or after) and returns
/// the time of its call, ns.
fn periodic_loop(
    protocol: &Protocol,
    counter: &AtomicU64,
    rt: &RtRequest,
    mut step: impl FnMut(u64, &mut PeriodicTimer) -> anyhow::Result<u64>,
) -> anyhow::Result<Outcome> {
    let mut o = Outcome::new(protocol.writes);
    o.rt = Some(producer::raise(rt));
    let start = sys::monotonic_ns();
    let mut timer = PeriodicTimer::new(protocol.period_ns);
    for i in 0..protocol.writes {
        let dt = step(i, &mut timer)?;
        o.write.record(dt);
        o.samples.push(dt);
        counter.store(i + 1, Ordering::Relaxed);
        if interrupted() {
            o.interrupted = true;
            break;
        }
    }
    o.duration_ns = sys::monotonic_ns() - start;
    o.lateness = timer.lateness().clone();
    o.missed = timer.missed();
    Ok(o)
}

fn fallocate_loop(
    protocol: &Protocol,
    dir: &Path,
    counter: &AtomicU64,
    rt: &RtRequest,
) -> anyhow::Result<Outcome> {
    periodic_loop(protocol, counter, rt, |i, timer| {
        let path = dir.join(format!("fallocate-{}.dat", i % 2));
        let f = sys::create_new(&path).with_context(|| format!("creating '{}'", path.display()))?;
        timer.wait();
        let t0 = sys::monotonic_ns();
        let r = sys::fallocate(&f, sys::FallocateMode::ExtendSize, 0, protocol.file_bytes);
        let dt = sys::monotonic_ns() - t0;
        r.with_context(|| format!("fallocate() of {} bytes", protocol.file_bytes))?;
        drop(f);
        fs::remove_file(&path).with_context(|| format!("removing '{}'", path.display()))?;
        Ok(dt)
    })
}

fn memcpy_loop(
    protocol: &Protocol,
    counter: &AtomicU64,
    rt: &RtRequest,
) -> anyhow::Result<Outcome> {
    let src = record_bytes(protocol.record_bytes);
    let mut dst = vec![0u8; src.len()];
    periodic_loop(protocol, counter, rt, |_, timer| {
        timer.wait();
        let t0 = sys::monotonic_ns();
        dst.copy_from_slice(black_box(&src));
        black_box(&mut dst);
        Ok(sys::monotonic_ns() - t0)
    })
}

/// Where PAGECACHE-FLOOR writes: our own tmpfs, else (not root) a private
/// directory in `/dev/shm`.
enum PageCacheDir {
    Own(rtrec_host::tmpfs::TmpFs),
    Shm(tempfile::TempDir),
}

impl PageCacheDir {
    fn path(&self) -> &Path {
        match self {
            PageCacheDir::Own(t) => t.path(),
            PageCacheDir::Shm(d) => d.path(),
        }
    }
}

fn pagecache_loop(
    protocol: &Protocol,
    counter: &AtomicU64,
    trace: Option<&mut SetTrace<'_>>,
    warnings: &mut Vec<Warning>,
    rt: &RtRequest,
) -> anyhow::Result<Outcome> {
    let dir = match rtrec_host::tmpfs::TmpFs::create(protocol.file_bytes + (1 << 20)) {
        Ok(t) => PageCacheDir::Own(t),
        Err(e) => {
            warnings.push(Warning::NoTmpfs(e.to_string()));
            PageCacheDir::Shm(
                tempfile::Builder::new()
                    .prefix("rtrec-pagecache-")
                    .tempdir_in("/dev/shm")
                    .context("making a directory in /dev/shm")?,
            )
        }
    };
    let path = dir.path().join("pagecache.dat");
    let f = sys::create_new(&path).with_context(|| format!("creating '{}'", path.display()))?;
    let data = record_bytes(protocol.record_bytes);
    if let Some(t) = trace {
        t.start(vec![sys::gettid()]);
    }
    let mut at = 0;
    let o = periodic_loop(protocol, counter, rt, |_, timer| {
        if at + protocol.record_bytes > protocol.file_bytes {
            sys::seek_to(&f, 0).context("rewinding the page-cache file")?;
            at = 0;
        }
        timer.wait();
        let t0 = sys::monotonic_ns();
        let r = sys::write_once(&f, &data);
        let dt = sys::monotonic_ns() - t0;
        at += r.context("write() to tmpfs")? as u64;
        Ok(dt)
    })?;
    drop(f);
    if let PageCacheDir::Own(t) = dir {
        t.remove().context("unmounting the case's tmpfs")?;
    }
    Ok(o)
}

/// The HdrHistogram V2 encoding of `l`, base64.
pub fn histogram_base64(l: &Latency) -> Option<String> {
    let mut bytes = Vec::new();
    V2Serializer::new()
        .serialize(l.histogram(), &mut bytes)
        .ok()?;
    Some(base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// Samples Dirty + Writeback every [`SAMPLE_EVERY`] and moves the bar,
/// off the timing thread.
struct Sampler {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<u64>,
}

impl Sampler {
    fn start(counter: Arc<AtomicU64>, bar: ProgressBar, base: u64) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let handle = thread::spawn(move || {
            let mut peak = 0;
            loop {
                peak = peak.max(sys::dirty_writeback_bytes().unwrap_or(0));
                bar.set_position(base + counter.load(Ordering::Relaxed));
                if s.load(Ordering::Relaxed) {
                    return peak;
                }
                thread::sleep(SAMPLE_EVERY);
            }
        });
        Sampler { stop, handle }
    }

    /// Stops it and returns the peak, bytes.
    fn stop(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().unwrap_or(0)
    }
}
