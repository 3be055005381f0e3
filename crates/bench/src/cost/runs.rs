//! The cost study's runs: [`run`] runs the whole study `--repeat` times,
//! each run measuring the device once (the rate every cell records at),
//! then every record size with every back-end ([`backends`]): the
//! recording, then its floor; and keeps the report up to date after each.

use std::path::Path;

use anyhow::Context;
use rtrec_engine::{Framing, Io};

use super::floor::{crc32c_cpu, fair_cpu, fio_block, fio_cpu, memcpy_cpu};
use super::options::{goal, Options, MAX_RATE, RATE_OF_DEVICE};
use super::record::{record, Recorded};
use super::report::{Cell, CostReport, Floor, Run};
use super::spread::spread;
use crate::producer;
use crate::throughput::{device_job_order, fio_for, usable_backends, DEVICE_BLOCK};

/// Bytes in a MiB, for the per-MiB figures.
const MIB: f64 = (1u64 << 20) as f64;

/// Runs the study in `work` (a directory on the file system under test)
/// `o.repeat` times; `device_profile` names it in the report. After every
/// run, `on_run` gets the report so far.
///
/// # Errors
/// A recording failed to start or end, or the file system has no room for
/// a cell's volume.
pub fn run(
    work: &Path,
    device_profile: &str,
    o: &Options,
    on_run: &mut dyn FnMut(&CostReport),
) -> anyhow::Result<CostReport> {
    let rt = producer::probe(&o.rt);
    eprintln!("rtrec bench: the cost study's producer: {}", rt.line());
    let mut r = CostReport {
        study: "cost".into(),
        device_profile: device_profile.to_string(),
        bytes_per_cell: o.bytes,
        rt,
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        skipped: usable_backends(work, "cost").1,
        runs: Vec::new(),
        spread: Vec::new(),
    };
    for s in &r.skipped {
        eprintln!("rtrec bench: {s}");
    }
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

/// One run of the whole study.
fn run_once(work: &Path, o: &Options) -> anyhow::Result<Run> {
    ensure_room(work, o.bytes)?;
    let io = device_job_order()[0];
    let (device, _) = fio_for(work, io, DEVICE_BLOCK, 2_000_000_000, 0.0);
    let rate = device.map_or(MAX_RATE, |d| (d * RATE_OF_DEVICE).min(MAX_RATE));
    eprintln!(
        "rtrec bench: the device writes {} ({io}, fio); every cell records at {}",
        device.map_or("?".into(), |d| rtrec_units::format_size_per_s(d as u64)),
        rtrec_units::format_size_per_s(rate as u64)
    );
    let mut cells = Vec::new();
    for &size in &o.sizes {
        for io in usable_backends(work, "cost").0 {
            anyhow::ensure!(!crate::signal::interrupted(), "interrupted");
            let c = cell(work, io, size, rate, o)?;
            eprintln!(
                "rtrec bench: {io} {}: {:.0} ns/MiB, floor {:.0} ns/MiB, ratio {:.2} (goal {})",
                rtrec_units::format_size(size),
                c.total_ns_per_mib,
                c.floor.ns_per_mib,
                c.ratio,
                c.goal
            );
            cells.push(c);
        }
    }
    Ok(Run {
        device_bytes_per_s: device,
        rate_bytes_per_s: rate,
        cells,
    })
}

/// The file system under `work` holds a cell's recording and fio's file
/// beside it (the recording is deleted before fio runs; 25 % and 256 MiB
/// to spare).
fn ensure_room(work: &Path, bytes: u64) -> anyhow::Result<()> {
    let free = std::fs::File::open(work)
        .and_then(|f| rtrec_sys::available_bytes(&f))
        .context("reading the free space")?;
    anyhow::ensure!(
        bytes / 4 * 5 + (256 << 20) <= free,
        "--cost-bytes {} does not fit on the file system under test ({} free)",
        rtrec_units::format_size(bytes),
        rtrec_units::format_size(free)
    );
    Ok(())
}

/// One cell: the recording in a fresh directory (removed after it), then
/// its floor.
fn cell(work: &Path, io: Io, size: u64, rate: f64, o: &Options) -> anyhow::Result<Cell> {
    let dir = work.join(format!("cost-{io}-{size}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir(&dir).with_context(|| format!("creating '{}'", dir.display()))?;
    let r = record(&dir, io, size, o.bytes, rate, &o.rt);
    let _ = std::fs::remove_dir_all(&dir);
    let r = r?;
    let floor = floor(work, io, size, o.bytes, &r);
    Ok(judge(io, size, &r, floor))
}

/// The floor of a cell whose recording was `r`: fio's job at the
/// recorder's mean write, memcpy and CRC32C of the same volume as the
/// recorder's two threads do them (`fair_cpu`), and, beside it for one
/// release, the hot floor of before (issue 47).
fn floor(work: &Path, io: Io, size: u64, bytes: u64, r: &Recorded) -> Floor {
    let bytes_per_write = r.file_bytes / r.writes.max(1);
    let bs = fio_block(io, size, bytes_per_write);
    let fio_run = fio_cpu(work, io, bs, bytes);
    let per_mib = |ns: u64| ns as f64 / (bytes / size * size).max(1) as f64 * MIB;
    let (memcpy, crc) = fair_cpu(size, bytes, r.ring_bytes);
    let (memcpy, crc) = (per_mib(memcpy), per_mib(crc));
    let memcpy_hot = per_mib(memcpy_cpu(size, bytes, r.ring_bytes));
    let crc_hot = per_mib(crc32c_cpu(size, bytes));
    let fio = fio_run.per_byte.map(|b| b * MIB);
    Floor {
        fio_ns_per_mib: fio,
        fio_reported_ns_per_mib: fio_run.reported_per_byte.map(|b| b * MIB),
        fio_passes_ns_per_mib: fio_run.passes_per_byte.iter().map(|b| b * MIB).collect(),
        fio_job: Some(fio_run.job),
        memcpy_ns_per_mib: memcpy,
        crc32c_ns_per_mib: crc,
        ns_per_mib: fio.unwrap_or(0.0) + memcpy + crc,
        memcpy_hot_ns_per_mib: Some(memcpy_hot),
        crc32c_hot_ns_per_mib: Some(crc_hot),
        hot_ns_per_mib: Some(fio.unwrap_or(0.0) + memcpy_hot + crc_hot),
    }
}

/// The cell of back-end `io` at `size` from its recording and floor.
fn judge(io: Io, size: u64, r: &Recorded, floor: Floor) -> Cell {
    let per_mib = |ns: u64| ns as f64 / r.bytes.max(1) as f64 * MIB;
    let total = per_mib(r.process_cpu_ns);
    let ratio = total / floor.ns_per_mib.max(f64::MIN_POSITIVE);
    let ratio_hot = floor
        .hot_ns_per_mib
        .map(|h| total / h.max(f64::MIN_POSITIVE));
    let goal = goal(size);
    Cell {
        io,
        record_bytes: size,
        framing: match Framing::auto(size as usize) {
            Framing::Packed => "packed",
            Framing::Framed => "framed",
            Framing::Raw => "raw",
        }
        .into(),
        recorded_bytes: r.bytes,
        dropped: r.dropped,
        wall_ns: r.wall_ns,
        writes: r.writes,
        bytes_per_write: r.file_bytes / r.writes.max(1),
        producer_ns_per_mib: per_mib(r.producer_cpu_ns),
        writer_ns_per_mib: per_mib(r.writer_cpu_ns),
        flusher_ns_per_mib: per_mib(r.flusher_cpu_ns),
        total_ns_per_mib: total,
        setup_cpu_ns: r.setup_cpu_ns,
        floor,
        ratio,
        ratio_hot,
        goal,
        met: ratio <= goal,
        steal_share: r.steal_share,
    }
}
