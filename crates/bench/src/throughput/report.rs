//! The study's result as data, the schema of its `--json`: one
//! [`Probe`] per recording (with its [`ProbeLoad`]), one [`Row`] per
//! back-end and record size (with its [`Limit`]), one [`Run`] per
//! `--repeat`, each cell's [`Spread`] over the runs, and the whole
//! [`ThroughputReport`]. Every field is documented, the unit in its name.

use rtrec_engine::{Alloc, Io};
use serde::{Deserialize, Serialize};

use super::options::HoldRule;
use crate::producer::RtReport;

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
    /// It held by the study's rule ([`holds`](super::holds)).
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
    /// ([`fio_job`](super::fio_job)), bytes/s; null without fio or when its job failed.
    pub fio_bytes_per_s: Option<f64>,
    /// `sustained_bytes_per_s` ÷ `fio_bytes_per_s`.
    pub fraction_of_fio: Option<f64>,
    /// The fio job file of that comparison (null without fio).
    pub fio_job: Option<String>,
    /// The size of the probes' files, bytes (the engine's open-ended
    /// default at the device's rate on the probes' device: on rotating
    /// media 10 s of data); null in a report from before issue 47, whose
    /// files were 64 MiB (or 64 records).
    #[serde(default)]
    pub file_bytes: Option<u64>,
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
    /// What stopped it ([`limit_of`](super::limit_of)).
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

/// Whether some back-end reached [`TARGET_OF_DEVICE`](super::TARGET_OF_DEVICE) at one record size.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Verdict {
    /// Bytes per record.
    pub record_bytes: u64,
    /// The back-end with the highest fraction of the device.
    pub best: Io,
    /// Its fraction.
    pub best_fraction: f64,
    /// `best_fraction` ≥ [`TARGET_OF_DEVICE`](super::TARGET_OF_DEVICE).
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

impl Run {
    /// The row of back-end `io` at `record_bytes`, if this run has one.
    pub fn row(&self, io: Io, record_bytes: u64) -> Option<&Row> {
        self.rows
            .iter()
            .find(|x| x.io == io && x.record_bytes == record_bytes)
    }
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
    /// `max_over_min` ≤ [`AGREE_WITHIN`](super::AGREE_WITHIN).
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
    /// One sentence per back-end left out because this machine lacks a
    /// kernel feature it needs (`this kernel has no io_uring …`); absent
    /// when every back-end ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<String>,
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
