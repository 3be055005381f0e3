//! One probe of the throughput study: a whole recording through the
//! engine at one rate, in a directory of its own ([`probe_dir`]) whose
//! finished files are reclaimed as it records, with the CPU time of its
//! threads and of the machine measured over it ([`ProbeLoad`]); and
//! whether a rate's recording fits in the free space ([`room_bps`]).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Context;
use rtrec_engine::pool::Pool;
use rtrec_engine::sizing;
use rtrec_engine::{
    Alloc, Config, Framing, Io, PeriodicTimer, PoolConfig, Recorder, Summary, Workload,
};
use rtrec_host::procstat::{self, Task, TICK_NS};
use rtrec_sys as sys;

use super::judge::holds;
use super::options::{Options, KEEP_FILES, POOL_FILES};
use super::report::{Probe, ProbeLoad};
use crate::producer::{self, RtReport, RtRequest};

/// The highest rate, payload bytes/s, whose recording of `ns` fits in the
/// free space of `work`. With the files reclaimed as the probe goes (see
/// [`reclaim`]), a probe never holds more than [`KEEP_FILES`] + 1 files,
/// whatever its length.
pub(super) fn room_bps(work: &Path, size: Sizes, ns: u64) -> f64 {
    let free = std::fs::File::open(work)
        .and_then(|f| sys::available_bytes(&f))
        .unwrap_or(0) as f64;
    let room = (free - (256 << 20) as f64).max(0.0);
    if room >= ((KEEP_FILES + 2) * size.file) as f64 {
        f64::INFINITY
    } else {
        room / 1.25 / (ns as f64 / 1e9)
    }
}

/// One recording of `ns` at `rate_hz` records of `size` bytes: its
/// directory made ready ([`prepare_dir`]), the engine configured as
/// `rtrec record` would be ([`probe_config`]), the recording
/// ([`record`]), its files handed back ([`release_dir`]), and the probe
/// judged ([`holds`]).
pub(super) fn probe(
    work: &Path,
    io: Io,
    sizes: Sizes,
    rate_hz: f64,
    ns: u64,
    phase: &'static str,
    o: &Options,
) -> anyhow::Result<Probe> {
    let size = sizes.record;
    let dir = probe_dir(work, io, size);
    let pool = prepare_dir(&dir, sizes.file, o.alloc)?;
    let period_ns = ((1e9 / rate_hz) as u64).max(1);
    let records = (ns / period_ns).max(1);
    let cfg = probe_config(io, sizes, period_ns, records, o);
    let ring_bytes = cfg.ring_bytes;
    let r = record(&dir, cfg, pool.as_ref(), period_ns, records, size, &o.rt)?;
    release_dir(&dir, pool.as_ref());
    let s = r.summary;
    let late = r.timer.lateness().summary();
    let mut p = Probe {
        rate_hz,
        period_ns,
        duration_ns: records * period_ns,
        phase: phase.into(),
        held: false,
        dropped: s.records_dropped,
        writer_error: s.error.or(s.flush.error).map(|f| f.message),
        ring_bytes: ring_bytes as u64,
        record_bytes: size,
        offered_bytes: records * size,
        backlog_bytes_at_end: r.backlog_records * size,
        missed_periods: r.timer.missed(),
        max_lateness_ns: late.map_or(0, |l| l.max),
        p99_lateness_ns: late.map_or(0, |l| l.p99),
        bytes: s.bytes_written,
        cpu_ns: s.writer_cpu_ns.unwrap_or(0) + s.flush.cpu_ns,
        rt_granted: r.rt.granted,
        load: r.load,
        pool_fallbacks: s.pool.fallbacks,
    };
    p.held = holds(&p, o.rule, o.probe_ns);
    Ok(p)
}

/// A probe's directory made ready: with `--alloc pool` its pool
/// ([`probe_pool`], kept across the probes of one back-end and record
/// size), else a fresh empty directory.
fn prepare_dir(dir: &Path, file_bytes: u64, alloc: Alloc) -> anyhow::Result<Option<Pool>> {
    Ok(match alloc {
        Alloc::Pool => Some(probe_pool(dir, file_bytes)?),
        _ => {
            let _ = std::fs::remove_dir_all(dir);
            std::fs::create_dir(dir).with_context(|| format!("creating '{}'", dir.display()))?;
            None
        }
    })
}

/// The engine's configuration of one probe: ring mode, the framing and
/// the files of `size`-byte records, the study's allocation, and the ring
/// `rtrec record` would size for `records` every `period_ns`.
fn probe_config(io: Io, sizes: Sizes, period_ns: u64, records: u64, o: &Options) -> Config {
    let size = sizes.record;
    let mut cfg = Config {
        io,
        max_record: size as usize,
        framing: Framing::auto(size as usize),
        file_size: sizes.file,
        prefix: "probe".into(),
        // A long recording's steady state (see the study's docs): by
        // default no pool zero-filled before every probe; with `--alloc
        // pool` one prepared before the first and recycled into.
        alloc: o.alloc,
        pool: PoolConfig {
            files: POOL_FILES,
            ..PoolConfig::default()
        },
        ..Config::default()
    };
    // The ring `rtrec record` would size for this rate (its default stall),
    // so a probe is judged as the recorder runs.
    cfg.ring_bytes = record_ring(&cfg, period_ns, records);
    cfg.rt.writer_priority = o.rt.writer_priority();
    cfg
}

/// The ring `rtrec record` sizes for `cfg`'s records, `records` of them
/// one every `period_ns`, with its default stall; the throughput and cost
/// studies record with it.
pub(crate) fn record_ring(cfg: &Config, period_ns: u64, records: u64) -> usize {
    cfg.sizes_for(&Workload {
        period_ns: Some(period_ns),
        records: Some(records),
        fixed_size: true,
        stall: None,
    })
    .ring
    .ring_bytes
}

/// What one probe's recording gave: the engine's summary, the producer's
/// schedule (its lateness and missed periods), what its real-time setup
/// was granted, the records still queued at its last record, and where the
/// CPU went.
struct Recorded {
    summary: Summary,
    timer: PeriodicTimer,
    rt: RtReport,
    backlog_records: u64,
    load: ProbeLoad,
}

/// Records `records` of `size` bytes every `period_ns` into `dir` with
/// `cfg`: the producer on a thread of its own with the run's real-time
/// setup `rt`, raised once the recorder's threads exist (see
/// [`crate::producer`]), and [`reclaim`] beside it until the producer is
/// done.
fn record(
    dir: &Path,
    cfg: Config,
    pool: Option<&Pool>,
    period_ns: u64,
    records: u64,
    size: u64,
    rt: &RtRequest,
) -> anyhow::Result<Recorded> {
    let mut rec = Recorder::create(dir, cfg).context("starting a throughput probe")?;
    let live = rec.live();
    let buf = vec![0xa5u8; size as usize];
    let mut timer = PeriodicTimer::new(period_ns);
    let done = AtomicBool::new(false);
    let t0 = sys::monotonic_ns();
    let cpu0 = CpuSample::now();
    let (rt, backlog_records, producer_cpu_ns) = std::thread::scope(|scope| {
        scope.spawn(|| reclaim(dir, &done, pool));
        let producer = scope.spawn(|| {
            let rt = producer::raise(rt);
            let cpu = sys::thread_cpu_ns();
            for _ in 0..records {
                timer.wait();
                let _ = rec.record(&buf);
            }
            let l = live.snapshot();
            let cpu = sys::thread_cpu_ns() - cpu;
            done.store(true, Ordering::Relaxed);
            (rt, l.records_queued.saturating_sub(l.records_written), cpu)
        });
        producer.join()
    })
    .map_err(|_| anyhow::anyhow!("a throughput probe's producer panicked"))?;
    let summary = rec.finish().context("ending a throughput probe")?;
    let writer_cpu_ns = summary.writer_cpu_ns.unwrap_or(0);
    Ok(Recorded {
        load: cpu0.load_since(t0, producer_cpu_ns, writer_cpu_ns),
        summary,
        timer,
        rt,
        backlog_records,
    })
}

/// Hands a probe's files back: with a pool, every file recycled into it
/// for the next probe (the search removes the directory after its last,
/// [`probe_dir`]); else the directory removed.
fn release_dir(dir: &Path, pool: Option<&Pool>) {
    match pool {
        Some(pool) => {
            for f in recordings(dir) {
                let _ = pool.recycle(&f, false);
            }
        }
        None => {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// A probe's record size and the size of its files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Sizes {
    /// Bytes per record.
    pub record: u64,
    /// Bytes per file ([`study_file_bytes`]).
    pub file: u64,
}

/// The size of the throughput study's files for records of `size` bytes
/// in `work`, whose device writes `device_bps`: what an open-ended
/// recording at the device's full rate gets there (the engine's rule,
/// [`sizing::default_file_size`]: on rotating media 10 s of data, up to
/// 256 MiB; else 64 MiB), and at least 64 records. Design choice: one size
/// per run, from the device figure rather than each probe's rate, so a
/// pool prepared before the first probe serves every probe of a search
/// (a size per rate would resize, and zero-fill, the pool at every
/// probe); the probes near the answer, which decide it, run close to that
/// rate anyway. Before issue 47 every device got 64 MiB files, and on
/// `hdd-5400` their switches took 7–9 % of the disk's time.
pub(super) fn study_file_bytes(work: &Path, size: u64, device_bps: f64) -> u64 {
    let rotating = std::fs::File::open(work)
        .ok()
        .and_then(sys::blockdev::rotational)
        .unwrap_or(false);
    let (file, _) = sizing::default_file_size(rotating, Some(device_bps.max(0.0) as u64));
    file.max(probe_file_bytes(size))
}

/// The size of a probe's files on flash (and of the cost study's): 64
/// MiB, or 64 records when larger.
pub(crate) fn probe_file_bytes(size: u64) -> u64 {
    (64u64 << 20).max(size * 64)
}

/// The directory of one back-end's and record size's probes under `work`.
pub(super) fn probe_dir(work: &Path, io: Io, size: u64) -> std::path::PathBuf {
    work.join(format!("throughput-{io}-{size}"))
}

/// With `--alloc pool`: the pool of a probe directory, created and
/// zero-filled to [`POOL_FILES`] before the directory's first probe and
/// topped up (after a probe that fell back to `fallocate`, its files are
/// recycled too, so nothing is missing) before the others. Recordings an
/// interrupted probe left behind are removed first.
fn probe_pool(dir: &Path, file_bytes: u64) -> anyhow::Result<Pool> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating '{}'", dir.display()))?;
    for f in recordings(dir) {
        let _ = std::fs::remove_file(f);
    }
    let pool = Pool::open_or_create(dir, file_bytes, POOL_FILES)
        .context("creating a throughput probe's pool")?;
    pool.prepare(|_, _| {})
        .context("zero-filling a throughput probe's pool")?;
    Ok(pool)
}

/// The recordings in a probe directory, oldest first: names carry the
/// file index zero-padded, so they sort in order; hidden names are slots
/// being taken and the pool's own directory.
fn recordings(dir: &Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<std::path::PathBuf> = entries
        .filter_map(|e| e.ok())
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| e.path())
        .collect();
    names.sort();
    names
}

/// Reclaims a probe's finished files as it records, all but the newest
/// [`KEEP_FILES`] beside the one being written, every 50 ms at nice 10,
/// until `done`: deleted, or recycled into `pool` (a file not yet finished
/// is refused by the pool and tried again at the next round); see the
/// study's docs.
fn reclaim(dir: &Path, done: &AtomicBool, pool: Option<&Pool>) {
    let _ = sys::set_thread_nice(10);
    while !done.load(Ordering::Relaxed) {
        std::thread::sleep(std::time::Duration::from_millis(50));
        let names = recordings(dir);
        let finished = names.len().saturating_sub(KEEP_FILES as usize + 1);
        for old in &names[..finished] {
            match pool {
                Some(pool) => {
                    let _ = pool.recycle(old, false);
                }
                None => {
                    let _ = std::fs::remove_file(old);
                }
            }
        }
    }
}

/// CPU counters at one instant, ns: this process and the machine.
#[derive(Clone, Copy, Debug, Default)]
struct CpuSample {
    process_ns: u64,
    kernel_threads_ns: u64,
    busy_ns: u64,
    steal_ns: u64,
    total_ns: u64,
}

impl CpuSample {
    /// Reads `/proc/stat`'s `cpu` line (user nice system idle iowait irq
    /// softirq steal; guest time is inside user) and `/proc/self/stat`'s
    /// utime and stime; a file that cannot be read counts 0.
    fn now() -> Self {
        let cpu = procstat::stat().unwrap_or_default().all;
        let me = procstat::task_stat(Task::This).unwrap_or_default();
        CpuSample {
            process_ns: (me.utime().unwrap_or(0) + me.stime().unwrap_or(0)) * TICK_NS,
            kernel_threads_ns: kernel_threads_ticks() * TICK_NS,
            busy_ns: cpu.busy() * TICK_NS,
            steal_ns: cpu.steal * TICK_NS,
            total_ns: cpu.total() * TICK_NS,
        }
    }

    /// The probe's [`ProbeLoad`] from this sample, taken at `t0`, to now:
    /// the producer's and the writer's CPU time as their threads measured
    /// it, the process's and the machine's against a sample taken now.
    fn load_since(&self, t0: u64, producer_cpu_ns: u64, writer_cpu_ns: u64) -> ProbeLoad {
        let now = CpuSample::now();
        ProbeLoad {
            wall_ns: sys::monotonic_ns() - t0,
            producer_cpu_ns,
            writer_cpu_ns,
            process_cpu_ns: now.process_ns.saturating_sub(self.process_ns),
            kernel_threads_cpu_ns: now.kernel_threads_ns.saturating_sub(self.kernel_threads_ns),
            machine_busy_ns: now.busy_ns.saturating_sub(self.busy_ns),
            machine_steal_ns: now.steal_ns.saturating_sub(self.steal_ns),
            machine_total_ns: now.total_ns.saturating_sub(self.total_ns),
        }
    }
}

/// The CPU time of the kernel's threads, ticks: kthreadd (pid 2) and its
/// children, from `/proc/*/stat` (a thread that ends between two samples
/// takes its time with it).
fn kernel_threads_ticks() -> u64 {
    procstat::every_process_stat()
        .iter()
        .filter_map(|t| {
            let (pid, ppid) = (t.pid()?, t.ppid()?);
            let ticks = t.utime().unwrap_or(0) + t.stime().unwrap_or(0);
            (pid == 2 || ppid == 2).then_some(ticks)
        })
        .sum()
}
