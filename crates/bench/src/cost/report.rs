//! The cost study's result, which is its `--json` schema
//! (docs/bench-schema.md): [`CostReport`], one [`Run`] per `--repeat`,
//! one [`Cell`] per back-end and record size with its [`Floor`], and each
//! cell's [`Spread`] over the runs. Units are in the field names.

use rtrec_engine::Io;
use serde::{Deserialize, Serialize};

use crate::producer::RtReport;

/// The whole study.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CostReport {
    /// Always `"cost"`.
    pub study: String,
    /// The target's device profile (`native` without `--device`).
    pub device_profile: String,
    /// Payload each cell records (and fio, memcpy and CRC32C process),
    /// bytes.
    pub bytes_per_cell: u64,
    /// The producer's real-time setup, as asked and granted.
    pub rt: RtReport,
    /// CPUs of the machine.
    pub cpus: usize,
    /// One sentence per back-end left out because this machine lacks a
    /// kernel feature it needs (`this kernel has no io_uring …`); absent
    /// when every back-end ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<String>,
    /// One per `--repeat`.
    pub runs: Vec<Run>,
    /// Each cell's spread over the runs, in the cells' order.
    pub spread: Vec<Spread>,
}

/// One run of the study.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Run {
    /// The device's sequential write bandwidth, bytes/s (fio's 1 MiB job
    /// of the first `O_DIRECT` back-end); null without fio.
    pub device_bytes_per_s: Option<f64>,
    /// The rate every cell recorded at, payload bytes/s.
    pub rate_bytes_per_s: f64,
    /// One per back-end and record size: sizes outer, back-ends inner.
    pub cells: Vec<Cell>,
}

/// One back-end at one record size: the recorder's CPU per MiB of payload
/// recorded, per thread and in all, beside the floor.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Cell {
    /// The write back-end.
    pub io: Io,
    /// Bytes per record.
    pub record_bytes: u64,
    /// `packed` or `framed` ([`rtrec_engine::Framing::auto`]).
    pub framing: String,
    /// Payload bytes stored.
    pub recorded_bytes: u64,
    /// Records dropped (a cell at a comfortable rate drops none).
    pub dropped: u64,
    /// The recording's wall time, ns.
    pub wall_ns: u64,
    /// `write()` calls (or io_uring writes) of the writer.
    pub writes: u64,
    /// File bytes per write, the mean; fio's block size comes from it.
    pub bytes_per_write: u64,
    /// The producer's CPU over its bursts, ns per MiB recorded.
    pub producer_ns_per_mib: f64,
    /// The writer thread's CPU, ns per MiB.
    pub writer_ns_per_mib: f64,
    /// The flush thread's CPU, ns per MiB.
    pub flusher_ns_per_mib: f64,
    /// The process's CPU from the recorder's creation (done) to after it
    /// finished (every thread, io_uring's workers included), ns per MiB:
    /// the numerator of [`ratio`](Self::ratio).
    pub total_ns_per_mib: f64,
    /// The process's CPU to create the recorder (files, ring, threads),
    /// ns: once per recording, not per byte, so outside the total.
    pub setup_cpu_ns: u64,
    /// The floor of the same bytes.
    pub floor: Floor,
    /// `total_ns_per_mib / floor.ns_per_mib`: the headline.
    pub ratio: f64,
    /// `total_ns_per_mib / floor.hot_ns_per_mib`: the ratio over the floor
    /// before issue 47 (published for one release); null in results from
    /// before it.
    #[serde(default)]
    pub ratio_hot: Option<f64>,
    /// The goal for the record size ([`goal`](super::goal)).
    pub goal: f64,
    /// `ratio <= goal`.
    pub met: bool,
    /// The machine's steal time over the recording, a fraction of its CPU
    /// time (a VM's host took it).
    pub steal_share: f64,
}

/// What the same bytes cost at the least: fio's like-for-like job, a
/// memcpy into a ring-sized buffer and a CRC32C, each per MiB.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Floor {
    /// fio's whole process CPU (every thread, io_uring's workers
    /// included), less the same job writing one block, ns per MiB written:
    /// the least of its runs (`fio_passes_ns_per_mib`); null without fio.
    pub fio_ns_per_mib: Option<f64>,
    /// What fio itself reports (`usr_cpu` + `sys_cpu`: its job thread
    /// only), ns per MiB written, the least over its runs; beside the
    /// floor, not in it; null without fio (and in results from before it
    /// was recorded).
    pub fio_reported_ns_per_mib: Option<f64>,
    /// fio's whole-process figure of each of its passes, ns per MiB;
    /// `fio_ns_per_mib` is the least (empty without fio, and in results
    /// from before the passes).
    #[serde(default)]
    pub fio_passes_ns_per_mib: Vec<f64>,
    /// fio's job (file name and time limit on its command line).
    pub fio_job: Option<String>,
    /// memcpy in record-size pieces into a ring whose lines another core
    /// read a lap ago, ns per MiB (best of the passes; the fair floor,
    /// issue 47).
    pub memcpy_ns_per_mib: f64,
    /// CRC32C in record-size pieces of bytes another core wrote, ns per
    /// MiB (best of the passes; the fair floor).
    pub crc32c_ns_per_mib: f64,
    /// The sum of the three, ns per MiB: the floor the ratio is over.
    pub ns_per_mib: f64,
    /// memcpy as the floor measured it before issue 47: one thread,
    /// its cache hot, ns per MiB; null in results from before it.
    #[serde(default)]
    pub memcpy_hot_ns_per_mib: Option<f64>,
    /// CRC32C as the floor measured it before issue 47: of a source the
    /// same thread had just read, ns per MiB; null in results from before
    /// it.
    #[serde(default)]
    pub crc32c_hot_ns_per_mib: Option<f64>,
    /// fio + the hot memcpy + the hot CRC32C: the floor before issue 47,
    /// published beside the fair one for one release so that the change
    /// is visible; null in results from before it.
    #[serde(default)]
    pub hot_ns_per_mib: Option<f64>,
}

/// One cell over the runs.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Spread {
    /// The write back-end.
    pub io: Io,
    /// Bytes per record.
    pub record_bytes: u64,
    /// The cell's ratio in each run.
    pub ratios: Vec<f64>,
    /// Highest ratio over lowest; null with one run.
    pub max_over_min: Option<f64>,
    /// `max_over_min` at most [`AGREE_WITHIN`](super::AGREE_WITHIN) (or
    /// one run).
    pub agree: bool,
    /// Highest `total_ns_per_mib` over lowest (the recorder's side of
    /// the ratio); null with one run (and in results from before it).
    #[serde(default)]
    pub total_max_over_min: Option<f64>,
    /// Highest `floor.ns_per_mib` over lowest (the floor's side); null
    /// with one run (and in results from before it).
    #[serde(default)]
    pub floor_max_over_min: Option<f64>,
    /// Why a cell did not agree: which side of the ratio moved, the
    /// recorder's total or the floor, and by how much, and the steal time
    /// when a run had 2 % or more; null when the runs agree.
    pub reason: Option<String>,
}

#[cfg(test)]
impl Cell {
    /// A cell for tests: `io` at `record_bytes`, the recorder's total
    /// `total` ns per MiB (each thread 1) over a floor of `floor` (all
    /// fio's), no steal.
    pub(crate) fn for_test(io: Io, record_bytes: u64, total: f64, floor: f64) -> Cell {
        let ratio = total / floor;
        Cell {
            io,
            record_bytes,
            framing: "framed".into(),
            recorded_bytes: 1 << 20,
            dropped: 0,
            wall_ns: 1,
            writes: 1,
            bytes_per_write: 1 << 20,
            producer_ns_per_mib: 1.0,
            writer_ns_per_mib: 1.0,
            flusher_ns_per_mib: 1.0,
            total_ns_per_mib: total,
            setup_cpu_ns: 0,
            floor: Floor {
                fio_ns_per_mib: Some(floor),
                fio_reported_ns_per_mib: None,
                fio_passes_ns_per_mib: vec![floor],
                fio_job: None,
                memcpy_ns_per_mib: 0.0,
                crc32c_ns_per_mib: 0.0,
                ns_per_mib: floor,
                memcpy_hot_ns_per_mib: None,
                crc32c_hot_ns_per_mib: None,
                hot_ns_per_mib: None,
            },
            ratio,
            ratio_hot: None,
            goal: super::options::goal(record_bytes),
            met: ratio <= super::options::goal(record_bytes),
            steal_share: 0.0,
        }
    }
}
