//! `rtrec bench --study throughput`: for each write back-end and record
//! size, the highest record rate the recorder keeps up with for
//! `--probe-duration` (default 60 s), as a fraction of the device's
//! sequential write bandwidth measured by fio in the same run (the
//! headline), beside the fraction of fio's job with the same back-end and
//! block size; whether some back-end reaches [`TARGET_OF_DEVICE`] of the
//! device, and for every row what stopped it, measured; `--repeat N` runs
//! the whole study N times and gives each cell's spread.
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
//!   default 5 s) starts at the device's bandwidth and halves the rate
//!   until a probe holds, then bisects that factor of 2 geometrically
//!   `--steps` times (default 5; 3 steps leave 2^(1/8), 9 %). It used to
//!   climb ×4 from 1 MiB/s and bisect a factor of 4 (3 steps: 19 %): on
//!   the host's disk the answers were the grid's points (2.0, 2.14, 2.38
//!   GiB/s), and the grid, not the recorder, decided up to a fifth of the
//!   fraction. Without a device figure it still climbs. The
//!   candidate is then confirmed: it must hold `--confirmations` (k, default
//!   3) full-length probes in a row; on the first that does not, the rate
//!   steps down 10 % ([`STEP_DOWN`]) and the k start again (at most
//!   [`MAX_STEP_DOWNS`] times; a row none of whose rates held k times says
//!   so, `confirmed` false, rate 0). The answer is the highest rate that
//!   held k of k. **Confirmation starts at most at the device's
//!   bandwidth**: no recording keeps up with more for long, and a short
//!   coarse probe above it measures the page cache (on `sd`, 8.75 MiB/s,
//!   buffered 2 s probes held 32 MiB/s, and eight 10 % steps from there
//!   never came down to the device: the row read 0).
//! - **The device's sequential write bandwidth is the best of fio's four
//!   1 MiB sequential jobs** (`device_bandwidth`): one per back-end's
//!   settings (psync buffered with `end_fsync`, psync `O_DIRECT`, io_uring
//!   `O_DIRECT` and buffered at the engine's depth), each ending with the
//!   data on the device. The best, because the question is what the device
//!   can absorb, and which way of writing gets the most out of it differs
//!   by device: queue-depth-1 `O_DIRECT` understates a virtio disk that
//!   serves several requests at once, and the page cache's writeback
//!   overlaps copying and writing. 1 MiB, because a device's sequential
//!   figure is a large-block one. Without fio it is our own sequential
//!   1 MiB `O_DIRECT` writer, and the like-for-like column is empty.
//! - **fio per back-end, like for like** ([`fio_job`]): sequential writes of
//!   the record size (at least 4 KiB for `O_DIRECT`, the engine's block)
//!   with `psync` (buffered: `direct=0`, `end_fsync=1`; direct:
//!   `direct=1`) and `io_uring` at the engine's default depth
//!   ([`rtrec_engine::DEFAULT_IO_DEPTH`]) for `uring` (`direct=1`) and
//!   `uring-buffered` (`direct=0`). At 1 MiB these are the device's jobs,
//!   so one measurement serves both columns. A buffered job writes at most
//!   what the best `O_DIRECT` job wrote in its time ([`buffered_len`]):
//!   fio's `--runtime` does not bound `end_fsync`, and 1 GiB in the page
//!   cache of an 8 MiB/s card is two minutes of flushing.
//! - **Every row says what stopped it, measured** ([`limit_of`]): the
//!   failed probe closest above the answer, with the CPU time of the
//!   producer and writer threads, of the whole process (io_uring's workers
//!   included) and of the machine's cores (`/proc/stat`: busy and steal)
//!   over the probe: the cores at least [`BUSY_SHARE`] busy is `cpu`, the
//!   writer or the producer on a CPU that share of the probe is
//!   `writer-cpu` / `producer-cpu`, else `device` (the writer waited in the
//!   kernel for the I/O to complete while its backlog grew).
//! - **Reproducibility is shown, not assumed**: `--repeat N` runs the
//!   whole study N times under the same lock, fio included, and each
//!   cell's spread is the highest held rate over the lowest; the cell
//!   agrees when that is at most [`AGREE_WITHIN`].
//! - **The producer is a real application**: each probe's producer thread
//!   gets the run's real-time setup ([`crate::producer`], `record --rt`'s:
//!   SCHED_FIFO 80, writer 79, mlockall; `--no-rt` for normal priority),
//!   raised after the recorder exists so its flush thread stays normal.
//! - **A probe is a whole recording** through the engine (ring mode, the
//!   framing and the ring size `rtrec record` would choose for that rate
//!   and record size), in a fresh directory that is deleted after it, so
//!   probes do not fill the file system; a rate whose recording would not
//!   fit in the free space is not probed (the row then says the limit was
//!   the space, `capped`).
//! - **A probe's files are fallocated as it goes** (`--alloc fallocate`),
//!   the state a long recording reaches once its pool's prepared files are
//!   spent (the pool's `on_empty` default): a fresh pool in every probe's
//!   fresh directory zero-filled 2 × 64 MiB before each probe, 16 s on
//!   `sd` (of a 5 s probe) and device time the previous probe's writeback
//!   competed with; the study measures the sustained rate, not the start.
//!   `--alloc pool` measures the other steady state, a logger whose
//!   retention recycles ([`POOL_FILES`]): each back-end and record size
//!   gets a pool in its probe directory, zero-filled once before its first
//!   probe, and the reclaim thread below recycles finished files into it
//!   instead of deleting them (`rtrec pool recycle`'s
//!   [`rtrec_engine::pool::Pool::recycle`]), so every file a probe writes
//!   is written space and a durable point needs no extent conversion. A
//!   probe that found the pool empty says so (`pool_fallbacks`: files it
//!   fell back to `fallocate` for).
//! - **A probe reclaims its own space as it records**, as a logger's
//!   retention job does: a thread at nice 10 deletes finished files, all but
//!   the newest [`KEEP_FILES`], so a 60 s probe at the device's full rate
//!   fits on the bench's 2 GiB file system. Each deletion frees a file's
//!   extents (a journal transaction, like the BGTRUNC load), and every
//!   back-end pays it alike; only when even that does not fit is a rate
//!   left unprobed (`capped`).
//! - **Reports combine** ([`combine`], `--combine A.json,B.json`): one
//!   invocation per device (each holds the machine-wide lock for its whole
//!   run), then one table and one plot of every device.

use std::path::Path;
use std::process::Command;

use anyhow::Context;
use rtrec_engine::pool::Pool;
use rtrec_engine::{
    Alloc, Config, Framing, Io, PeriodicTimer, PoolConfig, Recorder, Workload, DEFAULT_IO_DEPTH,
};
use rtrec_sys as sys;
use serde::{Deserialize, Serialize};

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
/// are deleted (or, with `--alloc pool`, recycled) as it records.
pub const KEEP_FILES: u64 = 2;

/// With `--alloc pool`: the files of a probe directory's pool, zero-filled
/// before its first probe: the [`KEEP_FILES`] + 1 a probe holds, and one
/// ready to take while the oldest is being recycled.
pub const POOL_FILES: u32 = KEEP_FILES as u32 + 2;

/// The study's target: some back-end holds at least this fraction of the
/// device's sequential write bandwidth.
pub const TARGET_OF_DEVICE: f64 = 0.9;

/// Runs of one cell agree when the highest held rate is at most this
/// multiple of the lowest (within 20 %).
pub const AGREE_WITHIN: f64 = 1.2;

/// A share of CPU time that counts as saturated: the machine's cores busy
/// (steal included) or one thread on a CPU for at least this fraction of a
/// failed probe ([`limit_of`]).
pub const BUSY_SHARE: f64 = 0.9;

/// The block size of the device's jobs (see the module docs).
pub const DEVICE_BLOCK: u64 = 1 << 20;

/// `/proc/stat` and `/proc/self/stat` count in USER_HZ ticks, 100 a second
/// on Linux whatever the kernel's own HZ.
const TICK_NS: u64 = 10_000_000;

/// What decides whether a probe holds, besides keeping up (see [`holds`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
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
    /// Runs of the whole study (`--repeat`, at least 1).
    pub repeat: u32,
    /// How a probe's files are allocated: [`Alloc::Fallocate`] (a spent
    /// pool's fallback, the default) or [`Alloc::Pool`] (a pool recycled
    /// into; see the module docs).
    pub alloc: Alloc,
}

/// One recording at one rate.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Probe {
    /// Records per second asked for.
    pub rate_hz: f64,
    /// The period of the schedule, ns.
    pub period_ns: u64,
    /// How long it recorded (the schedule's span), ns.
    pub duration_ns: u64,
    /// `coarse` or `confirm`.
    pub phase: String,
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
    /// The CPU time of the probe's threads and of the machine.
    #[serde(default)]
    pub load: ProbeLoad,
    /// With `--alloc pool`: files the probe fell back to `fallocate` for
    /// because the pool had none ready (0 otherwise).
    #[serde(default)]
    pub pool_fallbacks: u64,
}

/// Where the CPU went during one probe, from the producer's start to the
/// end of the recording (the writer's drain included).
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct ProbeLoad {
    /// The span measured, ns.
    pub wall_ns: u64,
    /// The producer thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`), ns.
    pub producer_cpu_ns: u64,
    /// The writer thread's CPU time alone, ns.
    pub writer_cpu_ns: u64,
    /// The whole process's (every thread, io_uring's workers included;
    /// `/proc/self/stat`), ns.
    pub process_cpu_ns: u64,
    /// The kernel's own threads (kthreadd's children: the loop device's
    /// and the flusher's workers, jbd2, …; `/proc/*/stat`), ns.
    #[serde(default)]
    pub kernel_threads_cpu_ns: u64,
    /// The machine's cores busy in user, system, IRQ and softirq time
    /// (`/proc/stat`), summed over the cores, ns.
    pub machine_busy_ns: u64,
    /// Time the hypervisor ran something else on the cores, ns.
    pub machine_steal_ns: u64,
    /// Every core's time, ns (the span × the cores, in ticks).
    pub machine_total_ns: u64,
}

impl ProbeLoad {
    fn share(ns: u64, of: u64) -> f64 {
        if of == 0 {
            0.0
        } else {
            ns as f64 / of as f64
        }
    }

    /// The writer's CPU time as a share of one core over the span.
    pub fn writer_share(&self) -> f64 {
        Self::share(self.writer_cpu_ns, self.wall_ns)
    }

    /// The producer's CPU time as a share of one core over the span.
    pub fn producer_share(&self) -> f64 {
        Self::share(self.producer_cpu_ns, self.wall_ns)
    }

    /// The machine's cores busy or stolen, a share of all of them.
    pub fn cores_share(&self) -> f64 {
        Self::share(
            self.machine_busy_ns + self.machine_steal_ns,
            self.machine_total_ns,
        )
    }

    /// This process's share of all the cores.
    pub fn process_share(&self) -> f64 {
        Self::share(self.process_cpu_ns, self.machine_total_ns)
    }

    /// The kernel threads' share of all the cores.
    pub fn kernel_threads_share(&self) -> f64 {
        Self::share(self.kernel_threads_cpu_ns, self.machine_total_ns)
    }

    /// The rest of the busy time (other processes, and IRQ time charged to
    /// no thread), a share of all the cores.
    pub fn others_share(&self) -> f64 {
        Self::share(
            self.machine_busy_ns
                .saturating_sub(self.process_cpu_ns + self.kernel_threads_cpu_ns),
            self.machine_total_ns,
        )
    }

    /// Steal, a share of all the cores.
    pub fn steal_share(&self) -> f64 {
        Self::share(self.machine_steal_ns, self.machine_total_ns)
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
        let cpu = rtrec_host::machine::cpu_ticks();
        let field = |i: usize| cpu.get(i).copied().unwrap_or(0);
        let me = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
        // The fields after the command name, which may hold spaces: state
        // is the first, utime the 12th and stime the 13th.
        let after: Vec<&str> = me
            .rsplit_once(')')
            .map_or("", |(_, r)| r)
            .split_whitespace()
            .collect();
        let ticks = |i: usize| {
            after
                .get(i)
                .and_then(|x| x.parse::<u64>().ok())
                .unwrap_or(0)
        };
        CpuSample {
            process_ns: (ticks(11) + ticks(12)) * TICK_NS,
            kernel_threads_ns: kernel_threads_ticks() * TICK_NS,
            busy_ns: (field(0) + field(1) + field(2) + field(5) + field(6)) * TICK_NS,
            steal_ns: field(7) * TICK_NS,
            total_ns: (0..8).map(field).sum::<u64>() * TICK_NS,
        }
    }
}

/// The CPU time of the kernel's threads, ticks: kthreadd (pid 2) and its
/// children, from `/proc/*/stat` (a thread that ends between two samples
/// takes its time with it).
fn kernel_threads_ticks() -> u64 {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    dir.filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter_map(|stat| {
            let (head, rest) = stat.rsplit_once(')')?;
            let pid: u64 = head.split_whitespace().next()?.parse().ok()?;
            let f: Vec<&str> = rest.split_whitespace().collect();
            let ppid: u64 = f.get(1)?.parse().ok()?;
            let ticks = |i: usize| f.get(i).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0);
            (pid == 2 || ppid == 2).then(|| ticks(11) + ticks(12))
        })
        .sum()
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

/// What stopped a row at its rate, measured on a failed probe.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Limit {
    /// `cpu` (the cores saturated), `writer-cpu`, `producer-cpu`, `device`
    /// (the writer waited for the I/O), `space` (the next rate would not
    /// fit) or `ceiling` (no probe failed up to the search's highest rate).
    pub kind: String,
    /// The failed probe's rate, payload bytes/s (0 for `space` and
    /// `ceiling`).
    pub at_bytes_per_s: f64,
    /// One sentence with the figures.
    pub reason: String,
}

/// What stopped a row (see the module docs): the failed probe closest
/// above `sustained_bps`, classified by where its CPU time went.
pub fn limit_of(probes: &[Probe], sustained_bps: f64, capped: bool) -> Limit {
    let failed = probes
        .iter()
        .filter(|p| !p.held && p.rate_hz * p.record_bytes as f64 > sustained_bps)
        .min_by(|a, b| a.rate_hz.total_cmp(&b.rate_hz));
    let Some(p) = failed else {
        return if capped {
            Limit {
                kind: "space".into(),
                at_bytes_per_s: 0.0,
                reason:
                    "the next rate up was not probed: its recording would not fit in the free space"
                        .into(),
            }
        } else {
            Limit {
                kind: "ceiling".into(),
                at_bytes_per_s: 0.0,
                reason: "no probe failed up to the search's highest rate (the device's bandwidth)"
                    .into(),
            }
        };
    };
    let bps = p.rate_hz * p.record_bytes as f64;
    let l = &p.load;
    let pct = |f: f64| format!("{:.0} %", f * 100.0);
    let lost = match &p.writer_error {
        Some(e) => format!("writer error: {e}"),
        None => format!(
            "{} records dropped, {} still queued at the last record",
            p.dropped,
            rtrec_units::format_size(p.backlog_bytes_at_end)
        ),
    };
    let threads = format!(
        "writer on a CPU {}, producer {} of the probe",
        pct(l.writer_share()),
        pct(l.producer_share())
    );
    let cores = format!(
        "the cores {} busy: rtrec {}, kernel threads {}, other processes {}, steal {}",
        pct(l.cores_share()),
        pct(l.process_share()),
        pct(l.kernel_threads_share()),
        pct(l.others_share()),
        pct(l.steal_share()),
    );
    let (kind, what) = if l.wall_ns == 0 {
        ("unmeasured", "no CPU figures in this report".to_string())
    } else if l.cores_share() >= BUSY_SHARE {
        ("cpu", format!("CPU: {cores}; {threads}"))
    } else if l.writer_share() >= BUSY_SHARE {
        (
            "writer-cpu",
            format!("the writer's CPU: {threads}; {cores}"),
        )
    } else if l.producer_share() >= BUSY_SHARE {
        (
            "producer-cpu",
            format!("the producer's CPU: {threads}; {cores}"),
        )
    } else {
        (
            "device",
            format!("the device: {threads}, the writer blocked in the kernel the rest (I/O, writeback throttling, the journal); {cores}"),
        )
    };
    Limit {
        kind: kind.into(),
        at_bytes_per_s: bps,
        reason: format!(
            "at {}: {what}; {lost}",
            rtrec_units::format_size_per_s(bps as u64)
        ),
    }
}

/// One back-end and record size.
#[derive(Clone, Debug, Serialize, Deserialize)]
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
    /// `sustained_bytes_per_s` ÷ the device's sequential write bandwidth
    /// (the run's `device_bytes_per_s`): the headline.
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
    /// What stopped it ([`limit_of`]).
    pub limit: Option<Limit>,
    /// Every probe, in order.
    pub probes: Vec<Probe>,
}

/// One fio job and what it wrote.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FioFigure {
    /// The back-end whose settings it has.
    pub io: Io,
    /// The job file (the file name and time limit are on the command line).
    pub job: String,
    /// Its write bandwidth, bytes/s (null: fio failed).
    pub bytes_per_s: Option<f64>,
}

/// Whether some back-end reached [`TARGET_OF_DEVICE`] at one record size.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Verdict {
    /// Bytes per record.
    pub record_bytes: u64,
    /// The back-end with the highest fraction of the device.
    pub best: Io,
    /// Its fraction.
    pub best_fraction: f64,
    /// `best_fraction` ≥ [`TARGET_OF_DEVICE`].
    pub met: bool,
}

/// One run of the whole study (`--repeat` makes several).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Run {
    /// The device's sequential write bandwidth, bytes/s (the best of
    /// `device_jobs`).
    pub device_bytes_per_s: f64,
    /// How it was measured: `fio` or `own O_DIRECT writer`.
    pub device_method: String,
    /// fio's 1 MiB jobs whose best is the device's figure (empty without
    /// fio).
    pub device_jobs: Vec<FioFigure>,
    /// The 1-minute load average when the run started and ended
    /// (`/proc/loadavg`).
    pub load_avg: [f64; 2],
    /// One per record size.
    pub verdicts: Vec<Verdict>,
    /// One row per back-end and record size.
    pub rows: Vec<Row>,
}

/// One cell (back-end, record size) over the runs.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Spread {
    /// The write back-end.
    pub io: Io,
    /// Bytes per record.
    pub record_bytes: u64,
    /// The held rate of each run, bytes/s.
    pub held_bytes_per_s: Vec<f64>,
    /// The fraction of the device of each run.
    pub fractions_of_device: Vec<f64>,
    /// The highest held rate ÷ the lowest (null when one is 0).
    pub max_over_min: Option<f64>,
    /// `max_over_min` ≤ [`AGREE_WITHIN`].
    pub agree: bool,
}

/// The study's result (`--json`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ThroughputReport {
    /// `"throughput"`.
    pub study: String,
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
    /// How the probes' files were allocated (`--alloc`; absent in reports
    /// from before it, which were all `fallocate`).
    #[serde(default = "fallocate")]
    pub alloc: Alloc,
    /// The CPUs the machine has.
    pub cpus: usize,
    /// Each run of the study, in order.
    pub runs: Vec<Run>,
    /// Each cell over the runs.
    pub spread: Vec<Spread>,
}

impl ThroughputReport {
    /// The device as tables and plots name it: its profile, followed by
    /// `pool` when the probes recorded into a recycled pool, so the two
    /// allocations of one device stay apart in a combined table.
    pub fn label(&self) -> String {
        match self.alloc {
            Alloc::Pool => format!("{} pool", self.device_profile),
            _ => self.device_profile.clone(),
        }
    }
}

/// The allocation of reports written before `--alloc` existed.
fn fallocate() -> Alloc {
    Alloc::Fallocate
}

/// Runs the study in `work` (a directory on the file system under test)
/// `o.repeat` times; `device_profile` names it in the report. After every
/// run, `on_run` gets the report so far (so a late failure or Ctrl-C loses
/// only the run under way).
///
/// # Errors
/// A recording or the bandwidth measurement failed to start.
pub fn run(
    work: &Path,
    device_profile: &str,
    o: &Options,
    on_run: &mut dyn FnMut(&ThroughputReport),
) -> anyhow::Result<ThroughputReport> {
    let rt = producer::probe(&o.rt);
    eprintln!("rtrec bench: the probes' producer: {}", rt.line());
    let mut r = ThroughputReport {
        study: "throughput".into(),
        probe_s: o.probe_ns as f64 / 1e9,
        coarse_s: o.coarse_ns.min(o.probe_ns) as f64 / 1e9,
        confirmations: o.confirmations,
        hold_rule: o.rule,
        rt,
        device_profile: device_profile.to_string(),
        alloc: o.alloc,
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        runs: Vec::new(),
        spread: Vec::new(),
    };
    for i in 0..o.repeat.max(1) {
        if o.repeat > 1 {
            eprintln!("rtrec bench: run {} of {}", i + 1, o.repeat);
        }
        r.runs.push(run_once(work, o)?);
        r.spread = spread(&r.runs);
        on_run(&r);
    }
    Ok(r)
}

/// The 1-minute load average (0 when `/proc/loadavg` cannot be read).
fn load_avg() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0)
}

/// One run of the whole study.
fn run_once(work: &Path, o: &Options) -> anyhow::Result<Run> {
    let load_start = load_avg();
    let fio_ns = o.probe_ns.min(10_000_000_000);
    let (device, method, device_jobs) = device_bandwidth(work, fio_ns)?;
    eprintln!(
        "rtrec bench: the device writes {} sequentially ({method})",
        rtrec_units::format_size_per_s(device as u64)
    );
    let has_fio = method == "fio";
    let mut rows = Vec::new();
    for &size in &o.sizes {
        for (io, _) in Io::ALL {
            let reuse = device_jobs
                .iter()
                .find(|f| size == DEVICE_BLOCK && f.io == *io);
            let (fio_bps, job) = match reuse {
                Some(f) => (f.bytes_per_s, Some(f.job.clone())),
                None if has_fio => fio_for(work, *io, size, fio_ns, device),
                None => (None, None),
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
            let row = search(*io, size, o, device, &room, &mut prober);
            // A pool's directory lives across its probes (see `probe`).
            let _ = std::fs::remove_dir_all(probe_dir(work, *io, size));
            let mut row = row?;
            row.fio_bytes_per_s = fio_bps;
            row.fio_job = job;
            row.fraction_of_fio = fio_bps
                .filter(|&f| f > 0.0)
                .map(|f| row.sustained_bytes_per_s / f);
            eprintln!(
                "rtrec bench: {io} {}: {:.0} records/s ({}, {:.2} of the device, {} of fio's {}); limit: {}",
                rtrec_units::format_size(size),
                row.sustained_hz,
                rtrec_units::format_size_per_s(row.sustained_bytes_per_s as u64),
                row.fraction_of_device,
                row.fraction_of_fio
                    .map_or("-".into(), |f| format!("{f:.2}")),
                fio_bps.map_or("-".into(), |b| rtrec_units::format_size_per_s(b as u64)),
                row.limit.as_ref().map_or("-", |l| l.reason.as_str()),
            );
            rows.push(row);
        }
    }
    Ok(Run {
        device_bytes_per_s: device,
        device_method: method.to_string(),
        device_jobs,
        load_avg: [load_start, load_avg()],
        verdicts: verdicts(&rows),
        rows,
    })
}

/// For each record size, the back-end with the highest fraction of the
/// device and whether it reaches [`TARGET_OF_DEVICE`].
pub fn verdicts(rows: &[Row]) -> Vec<Verdict> {
    let mut sizes: Vec<u64> = rows.iter().map(|r| r.record_bytes).collect();
    sizes.dedup();
    sizes
        .into_iter()
        .filter_map(|size| {
            let best = rows
                .iter()
                .filter(|r| r.record_bytes == size)
                .max_by(|a, b| a.fraction_of_device.total_cmp(&b.fraction_of_device))?;
            Some(Verdict {
                record_bytes: size,
                best: best.io,
                best_fraction: best.fraction_of_device,
                met: best.fraction_of_device >= TARGET_OF_DEVICE,
            })
        })
        .collect()
}

/// Each cell's held rates over `runs` and whether they agree within
/// [`AGREE_WITHIN`].
pub fn spread(runs: &[Run]) -> Vec<Spread> {
    let Some(first) = runs.first() else {
        return Vec::new();
    };
    first
        .rows
        .iter()
        .map(|cell| {
            let same: Vec<&Row> = runs
                .iter()
                .filter_map(|r| {
                    r.rows
                        .iter()
                        .find(|x| x.io == cell.io && x.record_bytes == cell.record_bytes)
                })
                .collect();
            let held: Vec<f64> = same.iter().map(|r| r.sustained_bytes_per_s).collect();
            let (lo, hi) = held.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &h| {
                (lo.min(h), hi.max(h))
            });
            let max_over_min = (lo > 0.0).then(|| hi / lo);
            Spread {
                io: cell.io,
                record_bytes: cell.record_bytes,
                fractions_of_device: same.iter().map(|r| r.fraction_of_device).collect(),
                held_bytes_per_s: held,
                max_over_min,
                agree: max_over_min.is_some_and(|m| m <= AGREE_WITHIN),
            }
        })
        .collect()
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
    // Phase 1, with short probes: the device's bandwidth, then halving
    // until a rate holds (without a device figure: ×4 up from 1 MiB/s
    // until one fails), then bisection between the two.
    let mut lo: Option<f64> = None;
    let (mut lo_bps, mut hi_bps);
    if device > 0.0 {
        let floor = (size as f64).max(device / 1024.0);
        let mut r = device.min(max_bps);
        hi_bps = r;
        while r >= floor {
            if try_rate(r, coarse_ns, "coarse", &mut probes)? == Some(true) {
                lo = Some(r);
                break;
            }
            hi_bps = r;
            r /= 2.0;
        }
        lo_bps = lo.unwrap_or(r);
    } else {
        let mut r = (1 << 20) as f64;
        while r <= max_bps && try_rate(r, coarse_ns, "coarse", &mut probes)? == Some(true) {
            lo = Some(r);
            r *= 4.0;
        }
        (lo_bps, hi_bps) = (lo.unwrap_or((1 << 18) as f64 / 4.0), r);
    }
    // Nothing to bisect when the device's own rate held.
    let steps = if lo_bps >= hi_bps { 0 } else { o.steps };
    for _ in 0..steps {
        let mid = (lo_bps * hi_bps).sqrt();
        if try_rate(mid, coarse_ns, "coarse", &mut probes)? == Some(true) {
            lo = Some(mid);
            lo_bps = mid;
        } else {
            hi_bps = mid;
        }
    }
    let coarse_bps = lo.unwrap_or(lo_bps);
    // Phase 2: k of k full-length probes, from the candidate (at most the
    // device's bandwidth, see the module docs) down by 10 % (no higher
    // than a full-length recording fits).
    let start_bps = if device > 0.0 {
        coarse_bps.min(device)
    } else {
        coarse_bps
    };
    let room_now = room(o.probe_ns);
    let room_capped = room_now < start_bps;
    let mut bps = start_bps.min(room_now);
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
    let capped = capped || room_capped;
    let limit = limit_of(&probes, sustained_bps, capped);
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
        capped,
        limit: Some(limit),
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
    let dir = probe_dir(work, io, size);
    let pool = match o.alloc {
        Alloc::Pool => Some(probe_pool(&dir, probe_file_bytes(size))?),
        _ => {
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir(&dir).with_context(|| format!("creating '{}'", dir.display()))?;
            None
        }
    };
    let period_ns = ((1e9 / rate_hz) as u64).max(1);
    let records = (ns / period_ns).max(1);
    let mut cfg = Config {
        io,
        max_record: size as usize,
        framing: Framing::auto(size as usize),
        file_size: probe_file_bytes(size),
        prefix: "probe".into(),
        // A long recording's steady state (see the module docs): by
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
    let t0 = sys::monotonic_ns();
    let cpu0 = CpuSample::now();
    let (rt, backlog_records, producer_cpu_ns) = std::thread::scope(|scope| {
        scope.spawn(|| reclaim(&dir, &done, pool.as_ref()));
        let producer = scope.spawn(|| {
            let rt = producer::raise(&o.rt);
            let cpu = sys::thread_cpu_ns();
            for _ in 0..records {
                timer.wait();
                let _ = rec.record(&buf);
            }
            let l = live.snapshot();
            let cpu = sys::thread_cpu_ns() - cpu;
            done.store(true, std::sync::atomic::Ordering::Relaxed);
            (rt, l.records_queued.saturating_sub(l.records_written), cpu)
        });
        producer.join()
    })
    .map_err(|_| anyhow::anyhow!("a throughput probe's producer panicked"))?;
    let s = rec.finish().context("ending a throughput probe")?;
    let cpu1 = CpuSample::now();
    let load = ProbeLoad {
        wall_ns: sys::monotonic_ns() - t0,
        producer_cpu_ns,
        writer_cpu_ns: s.writer_cpu_ns.unwrap_or(0),
        process_cpu_ns: cpu1.process_ns.saturating_sub(cpu0.process_ns),
        kernel_threads_cpu_ns: cpu1
            .kernel_threads_ns
            .saturating_sub(cpu0.kernel_threads_ns),
        machine_busy_ns: cpu1.busy_ns.saturating_sub(cpu0.busy_ns),
        machine_steal_ns: cpu1.steal_ns.saturating_sub(cpu0.steal_ns),
        machine_total_ns: cpu1.total_ns.saturating_sub(cpu0.total_ns),
    };
    match &pool {
        // Every file back into the pool for the next probe (the search
        // removes the directory after its last, [`probe_dir`]).
        Some(pool) => {
            for f in recordings(&dir) {
                let _ = pool.recycle(&f, false);
            }
        }
        None => {
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
    let late = timer.lateness().summary();
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
        backlog_bytes_at_end: backlog_records * size,
        missed_periods: timer.missed(),
        max_lateness_ns: late.map_or(0, |l| l.max),
        p99_lateness_ns: late.map_or(0, |l| l.p99),
        bytes: s.bytes_written,
        cpu_ns: s.writer_cpu_ns.unwrap_or(0) + s.flush.cpu_ns,
        rt_granted: rt.granted,
        load,
        pool_fallbacks: s.pool.fallbacks,
    };
    p.held = holds(&p, o.rule);
    Ok(p)
}

/// The size of a probe's files: 64 MiB, or 64 records when larger.
fn probe_file_bytes(size: u64) -> u64 {
    (64u64 << 20).max(size * 64)
}

/// The directory of one back-end's and record size's probes under `work`.
fn probe_dir(work: &Path, io: Io, size: u64) -> std::path::PathBuf {
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
/// module docs.
fn reclaim(dir: &Path, done: &std::sync::atomic::AtomicBool, pool: Option<&Pool>) {
    let _ = sys::set_thread_nice(10);
    while !done.load(std::sync::atomic::Ordering::Relaxed) {
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

/// The sequential write bandwidth of the file system under `work`,
/// bytes/s, how it was measured, and fio's jobs: the best of fio's 1 MiB
/// jobs with each back-end's settings ([`fio_job`]; the `O_DIRECT` ones
/// first, as they bound the buffered ones' length, [`buffered_len`]), else
/// our own sequential `O_DIRECT` writer.
fn device_bandwidth(
    work: &Path,
    hold_ns: u64,
) -> anyhow::Result<(f64, &'static str, Vec<FioFigure>)> {
    let len = fio_len(work)?;
    let path = work.join("bandwidth.dat");
    let mut jobs: Vec<FioFigure> = Vec::new();
    for io in [Io::Direct, Io::Uring, Io::Buffered, Io::UringBuffered] {
        let best = jobs
            .iter()
            .filter_map(|f| f.bytes_per_s)
            .fold(0.0, f64::max);
        let job = fio_job(io, DEVICE_BLOCK, buffered_len(io, len, best, hold_ns));
        let bytes_per_s = run_fio(&path, &job, hold_ns);
        let _ = std::fs::remove_file(&path);
        if jobs.is_empty() && bytes_per_s.is_none() {
            // No fio (or it cannot write here): our own writer.
            let own = own_writer(&path, len, hold_ns);
            let _ = std::fs::remove_file(&path);
            let own = own.context("measuring the device's sequential write bandwidth")?;
            return Ok((own, "own O_DIRECT writer", Vec::new()));
        }
        jobs.push(FioFigure {
            io,
            job,
            bytes_per_s,
        });
    }
    let best = jobs
        .iter()
        .filter_map(|f| f.bytes_per_s)
        .fold(0.0, f64::max);
    Ok((best, "fio", jobs))
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

/// The length of fio's job for `io`: `len`, and for a buffered job at most
/// what the device (`device_bps`, 0: not known yet) writes in the job's
/// time, whole MiB and at least 16 MiB: its `end_fsync` is not bounded by
/// `--runtime`.
pub fn buffered_len(io: Io, len: u64, device_bps: f64, hold_ns: u64) -> u64 {
    let buffered = matches!(io, Io::Buffered | Io::UringBuffered);
    if !buffered || device_bps <= 0.0 {
        return len;
    }
    let secs = (hold_ns / 1_000_000_000).max(2) as f64;
    let fits = (device_bps * secs) as u64 / (1 << 20) * (1 << 20);
    len.min(fits.max(16 << 20))
}

/// fio's bandwidth with `io`'s settings at `size`, bytes/s, and the job;
/// `device_bps` bounds a buffered job's length ([`buffered_len`]).
fn fio_for(
    work: &Path,
    io: Io,
    size: u64,
    hold_ns: u64,
    device_bps: f64,
) -> (Option<f64>, Option<String>) {
    let Ok(len) = fio_len(work) else {
        return (None, None);
    };
    let path = work.join("bandwidth.dat");
    let job = fio_job(io, size, buffered_len(io, len, device_bps, hold_ns));
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

/// The study's tables: for each run one line per back-end and record
/// size, whether the target was met and what stopped each row under it;
/// with several runs, each cell's spread.
pub fn render(r: &ThroughputReport) -> String {
    let rule = match r.hold_rule {
        HoldRule::Drops => "0 drops and the writer keeping up (lateness reported, not judged)",
        HoldRule::Max => "0 drops, the writer keeping up and every release within one period",
        HoldRule::P99 => {
            "0 drops, the writer keeping up and 99 % of the releases within one period"
        }
    };
    let mut t = format!(
        "Throughput on {}: the highest rate held {} of {} times for {} with {rule} (coarse search: {} probes), as a fraction of the device's sequential write bandwidth\n\
         producer: {}; probes' files: {}; {} run(s) on {} CPUs\n",
        r.device_profile,
        r.confirmations,
        r.confirmations,
        rtrec_units::format_duration((r.probe_s * 1e9) as u64),
        rtrec_units::format_duration((r.coarse_s * 1e9) as u64),
        r.rt.line(),
        match r.alloc {
            Alloc::Pool => "a pool zero-filled once and recycled into (--alloc pool)",
            _ => "fallocated as they are opened (--alloc fallocate)",
        },
        r.runs.len(),
        r.cpus,
    );
    for (i, run) in r.runs.iter().enumerate() {
        t.push_str(&render_run(i + 1, run));
    }
    if r.runs.len() > 1 {
        t.push_str(&format!(
            "\nSpread over {} runs (held rate, highest ÷ lowest; agree: within {:.0} %)\n{:<14} {:>7} | {:>23} | {:>11} | {:>8} {:>5}\n",
            r.runs.len(),
            (AGREE_WITHIN - 1.0) * 100.0,
            "back-end",
            "record",
            "held, lowest-highest",
            "÷ device",
            "max÷min",
            "agree"
        ));
        for c in &r.spread {
            t.push_str(&format!(
                "{:<14} {:>7} | {:>23} | {:>11} | {:>8} {:>5}\n",
                c.io.name(),
                rtrec_units::format_size(c.record_bytes),
                range(&c.held_bytes_per_s, |b| rtrec_units::format_size_per_s(
                    b as u64
                )),
                range(&c.fractions_of_device, |f| format!("{f:.2}")),
                c.max_over_min.map_or("-".into(), |m| format!("{m:.2}")),
                if c.agree { "yes" } else { "no" },
            ));
        }
    }
    t
}

/// `lowest-highest` of `v` as `f` prints them (one value alone when they
/// print the same).
pub(crate) fn range(v: &[f64], f: impl Fn(f64) -> String) -> String {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(0.0f64, f64::max);
    if v.is_empty() {
        "-".into()
    } else if f(lo) == f(hi) {
        f(lo)
    } else {
        format!("{}-{}", f(lo), f(hi))
    }
}

/// One run's table, its verdicts and the reasons of the rows under the
/// target.
fn render_run(n: usize, run: &Run) -> String {
    let mut t = format!(
        "\nrun {n}: device {} sequential ({}{}); load average {:.2} at the start, {:.2} at the end\n{:<14} {:>7} | {:>12} {:>11} | {:>9} | {:>11} {:>6} | {:>9} {:>6} | {:>9} | {:<12}\n",
        rtrec_units::format_size_per_s(run.device_bytes_per_s as u64),
        run.device_method,
        if run.device_jobs.is_empty() {
            String::new()
        } else {
            format!(
                ", the best of {} 1 MiB sequential jobs",
                run.device_jobs.len()
            )
        },
        run.load_avg[0],
        run.load_avg[1],
        "back-end",
        "record",
        "records/s",
        "bytes/s",
        "÷ device",
        "fio",
        "÷ fio",
        "late max",
        "missed",
        "CPU s/GiB",
        "limit"
    );
    for row in &run.rows {
        t.push_str(&format!(
            "{:<14} {:>7} | {:>12.0} {:>11} | {:>8.2}{} | {:>11} {:>6} | {:>9} {:>6} | {:>9} | {:<12}\n",
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
            row.limit.as_ref().map_or("-", |l| l.kind.as_str()),
        ));
    }
    if run.rows.iter().any(|row| row.capped) {
        t.push_str(
            "+: the next rate up was not probed (its recording would not fit in the free space)\n",
        );
    }
    if run.rows.iter().any(|row| !row.confirmed) {
        t.push_str("0 records/s: no rate held k of k, down to 0.43 of the coarse candidate\n");
    }
    // With --alloc pool: probes that found the pool empty recorded part of
    // their data into fallocated files, the other allocation.
    for row in &run.rows {
        let (n, files) = row
            .probes
            .iter()
            .filter(|p| p.pool_fallbacks > 0)
            .fold((0, 0), |(n, f), p| (n + 1, f + p.pool_fallbacks));
        if n > 0 {
            t.push_str(&format!(
                "{} {}: {n} probe(s) found the pool empty and fell back to fallocate for {files} file(s)\n",
                row.io.name(),
                rtrec_units::format_size(row.record_bytes),
            ));
        }
    }
    for v in &run.verdicts {
        let size = rtrec_units::format_size(v.record_bytes);
        let target = TARGET_OF_DEVICE * 100.0;
        t.push_str(&if v.met {
            format!(
                "{size} records: {target:.0} % of the device met by {} ({:.2})\n",
                v.best.name(),
                v.best_fraction
            )
        } else {
            format!(
                "{size} records: {target:.0} % of the device NOT met; the best, {}, held {:.2}\n",
                v.best.name(),
                v.best_fraction
            )
        });
    }
    for row in run
        .rows
        .iter()
        .filter(|row| row.fraction_of_device < TARGET_OF_DEVICE)
    {
        if let Some(l) = &row.limit {
            t.push_str(&format!(
                "  {} {} under {:.0} %, stopped by {}: {}\n",
                row.io.name(),
                rtrec_units::format_size(row.record_bytes),
                TARGET_OF_DEVICE * 100.0,
                l.kind,
                l.reason
            ));
        }
    }
    t
}

/// One table of several reports (`--combine`, e.g. one per device): each
/// cell's held rate, fraction of the device and of fio's matching job over
/// its runs, the spread, and what stopped it.
pub fn combine(reports: &[ThroughputReport]) -> String {
    let mut t = format!(
        "{:<13} {:<14} {:>7} | {:>23} | {:>11} | {:>11} | {:>7} {:>5} | {:<12}\n",
        "device", "back-end", "record", "held", "÷ device", "÷ fio", "max÷min", "runs", "limit"
    );
    for r in reports {
        for c in &r.spread {
            let rows: Vec<&Row> = r
                .runs
                .iter()
                .filter_map(|run| {
                    run.rows
                        .iter()
                        .find(|x| x.io == c.io && x.record_bytes == c.record_bytes)
                })
                .collect();
            let fio: Vec<f64> = rows.iter().filter_map(|x| x.fraction_of_fio).collect();
            // Each kind once, in the order the runs met them.
            let mut kinds: Vec<&str> = Vec::new();
            for k in rows
                .iter()
                .filter_map(|x| x.limit.as_ref().map(|l| l.kind.as_str()))
            {
                if !kinds.contains(&k) {
                    kinds.push(k);
                }
            }
            t.push_str(&format!(
                "{:<13} {:<14} {:>7} | {:>23} | {:>11} | {:>11} | {:>7} {:>5} | {:<12}\n",
                r.label(),
                c.io.name(),
                rtrec_units::format_size(c.record_bytes),
                range(&c.held_bytes_per_s, |b| rtrec_units::format_size_per_s(
                    b as u64
                )),
                range(&c.fractions_of_device, |f| format!("{f:.2}")),
                range(&fio, |f| format!("{f:.2}")),
                c.max_over_min.map_or("-".into(), |m| format!("{m:.2}")),
                r.runs.len(),
                kinds.join(","),
            ));
        }
    }
    t.push('\n');
    for r in reports {
        let device = range(
            &r.runs
                .iter()
                .map(|x| x.device_bytes_per_s)
                .collect::<Vec<_>>(),
            |b| rtrec_units::format_size_per_s(b as u64),
        );
        let loads: Vec<f64> = r.runs.iter().flat_map(|x| x.load_avg).collect();
        let mut sizes: Vec<u64> = r
            .runs
            .iter()
            .flat_map(|x| x.verdicts.iter().map(|v| v.record_bytes))
            .collect();
        sizes.sort_unstable();
        sizes.dedup();
        for size in sizes {
            let met = r
                .runs
                .iter()
                .filter(|x| x.verdicts.iter().any(|v| v.record_bytes == size && v.met))
                .count();
            let agree = r
                .spread
                .iter()
                .filter(|c| c.record_bytes == size)
                .all(|c| c.agree);
            t.push_str(&format!(
                "{} {}: device {device}; ≥ {:.0} % by some back-end in {met} of {} runs; every cell within {:.0} % over the runs: {}; load average {}\n",
                r.label(),
                rtrec_units::format_size(size),
                TARGET_OF_DEVICE * 100.0,
                r.runs.len(),
                (AGREE_WITHIN - 1.0) * 100.0,
                if r.runs.len() < 2 {
                    "one run"
                } else if agree {
                    "yes"
                } else {
                    "no"
                },
                range(&loads, |l| format!("{l:.1}")),
            ));
        }
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
            phase: "confirm".into(),
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
            load: ProbeLoad::default(),
            pool_fallbacks: 0,
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
        searched_on(1e9, limit, hiccups, k)
    }

    /// [`searched`] on a device of `device` bytes/s.
    fn searched_on(device: f64, limit: f64, hiccups: &[usize], k: u32) -> Row {
        let o = Options {
            probe_ns: 10_000_000_000,
            coarse_ns: 1_000_000_000,
            steps: 5,
            confirmations: k,
            sizes: vec![1 << 20],
            rule: HoldRule::Drops,
            rt: RtRequest::default(),
            repeat: 1,
            alloc: Alloc::Fallocate,
        };
        let mut n = 0;
        let mut prober = |bps: f64, ns: u64, phase: &'static str| {
            let i = n;
            n += 1;
            let mut p = Probe {
                rate_hz: bps / (1 << 20) as f64,
                duration_ns: ns,
                phase: phase.into(),
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
            device,
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
        // Short probes that hold above the device (the page cache): the
        // confirmation starts at the device's bandwidth.
        let device = 200.0 * (1 << 20) as f64;
        let cached = searched_on(device, limit, &[], 3);
        assert_eq!(cached.sustained_bytes_per_s, device);
        // The coarse search starts at the device and halves until a rate
        // holds: on a device 3 times faster than the writer, 900 and 450
        // fail, 225 holds, then 5 bisection steps of that factor of 2.
        let slow = searched_on(3.0 * limit, limit, &[], 3);
        let coarse: Vec<f64> = slow
            .probes
            .iter()
            .filter(|p| p.phase == "coarse")
            .map(|p| p.rate_hz)
            .collect();
        assert_eq!(coarse.len(), 3 + 5, "{coarse:?}");
        assert_eq!(coarse[0], 3.0 * 300.0);
        assert!(slow.coarse_hz <= 300.0 && slow.coarse_hz > 300.0 / 2f64.powf(1.0 / 32.0) / 1.0001);
    }
    /// A failed probe at 2,000 records/s whose CPU figures are `load`.
    fn failed(load: ProbeLoad) -> Probe {
        Probe {
            rate_hz: 2000.0,
            held: false,
            dropped: 7,
            load,
            ..clean()
        }
    }

    #[test]
    fn the_limit_is_named_from_where_the_cpu_went() {
        let wall = 1_000_000_000;
        let load = |writer: u64, producer: u64, busy: u64| ProbeLoad {
            wall_ns: wall,
            producer_cpu_ns: producer,
            writer_cpu_ns: writer,
            process_cpu_ns: writer + producer,
            kernel_threads_cpu_ns: 0,
            machine_busy_ns: busy,
            machine_steal_ns: 0,
            machine_total_ns: 2 * wall,
        };
        let held = Probe {
            held: true,
            ..clean()
        };
        let kind =
            |l: ProbeLoad| limit_of(&[held.clone(), failed(l)], 1000.0 * 16384.0, false).kind;
        assert_eq!(kind(load(300_000_000, 100_000_000, 1_900_000_000)), "cpu");
        assert_eq!(
            kind(load(950_000_000, 100_000_000, 1_200_000_000)),
            "writer-cpu"
        );
        assert_eq!(
            kind(load(100_000_000, 950_000_000, 1_200_000_000)),
            "producer-cpu"
        );
        let device = limit_of(
            &[
                held.clone(),
                failed(load(200_000_000, 50_000_000, 400_000_000)),
            ],
            1000.0 * 16384.0,
            false,
        );
        assert_eq!(device.kind, "device");
        assert!(
            device.reason.contains("writer on a CPU 20 %"),
            "{}",
            device.reason
        );
        assert!(
            device.reason.contains("7 records dropped"),
            "{}",
            device.reason
        );
        // The failed probe closest above the answer is the one judged.
        let higher = Probe {
            rate_hz: 4000.0,
            ..failed(load(950_000_000, 0, 0))
        };
        let l = limit_of(
            &[higher, failed(load(0, 0, 1_900_000_000))],
            1000.0 * 16384.0,
            false,
        );
        assert_eq!(
            (l.kind.as_str(), l.at_bytes_per_s),
            ("cpu", 2000.0 * 16384.0)
        );
        // Nothing failed above the answer: the space or the search's ceiling.
        assert_eq!(
            limit_of(std::slice::from_ref(&held), 1000.0 * 16384.0, true).kind,
            "space"
        );
        assert_eq!(limit_of(&[held], 1000.0 * 16384.0, false).kind, "ceiling");
    }

    fn run_of(held: &[(Io, f64)], device: f64) -> Run {
        let rows: Vec<Row> = held
            .iter()
            .map(|&(io, bps)| Row {
                sustained_bytes_per_s: bps,
                fraction_of_device: bps / device,
                io,
                ..searched(300.0 * (1 << 20) as f64, &[], 1)
            })
            .collect();
        Run {
            device_bytes_per_s: device,
            device_method: "fio".into(),
            device_jobs: Vec::new(),
            load_avg: [0.0, 0.0],
            verdicts: verdicts(&rows),
            rows,
        }
    }

    #[test]
    fn the_target_and_the_spread_are_judged_per_cell() {
        let a = run_of(&[(Io::Buffered, 95.0), (Io::Direct, 50.0)], 100.0);
        let b = run_of(&[(Io::Buffered, 80.0), (Io::Direct, 55.0)], 100.0);
        assert!(a.verdicts[0].met && a.verdicts[0].best == Io::Buffered);
        assert!(!b.verdicts[0].met);
        let s = spread(&[a, b]);
        assert_eq!(s.len(), 2);
        // 95 ÷ 80 = 1.19: within 20 %; 55 ÷ 50 = 1.1.
        assert!(s.iter().all(|c| c.agree), "{s:?}");
        let c = run_of(&[(Io::Buffered, 70.0), (Io::Direct, 0.0)], 100.0);
        let s = spread(&[
            run_of(&[(Io::Buffered, 95.0), (Io::Direct, 50.0)], 100.0),
            c,
        ]);
        assert!(!s[0].agree && s[0].max_over_min.is_some());
        assert!(!s[1].agree && s[1].max_over_min.is_none());
    }

    #[test]
    fn a_buffered_fio_job_writes_no_more_than_the_device_does_in_its_time() {
        let gib = 1 << 30;
        let ns = 5_000_000_000;
        assert_eq!(buffered_len(Io::Direct, gib, 8e6, ns), gib);
        assert_eq!(buffered_len(Io::Buffered, gib, 0.0, ns), gib);
        // 8 MiB/s for 5 s: 40 MiB; a fast device: the whole length.
        assert_eq!(
            buffered_len(Io::Buffered, gib, 8.0 * (1 << 20) as f64, ns),
            40 << 20
        );
        assert_eq!(buffered_len(Io::UringBuffered, gib, 1e10, ns), gib);
        // Never below 16 MiB.
        assert_eq!(buffered_len(Io::Buffered, gib, 1.0, ns), 16 << 20);
    }
}
