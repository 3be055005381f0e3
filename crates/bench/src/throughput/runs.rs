//! The throughput study's runs: [`run`] runs the whole study `--repeat`
//! times, each run measuring the device's bandwidth and then searching
//! every record size with every back-end ([`backends`]), and keeps the
//! report up to date after each.

use std::path::Path;

use super::fio::{device_bandwidth, fio_for};
use super::judge::{spread, verdicts};
use super::options::{usable_backends, Options, DEVICE_BLOCK};
use super::probe::{probe, probe_dir, room_bps, study_file_bytes, Sizes};
use super::report::{Probe, Run, ThroughputReport};
use super::search::search;
use crate::producer;

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
        skipped: usable_backends(work, "throughput").1,
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
        for io in usable_backends(work, "throughput").0 {
            let reuse = device_jobs
                .iter()
                .find(|f| size == DEVICE_BLOCK && f.io == io);
            let (fio_bps, job) = match reuse {
                Some(f) => (f.bytes_per_s, Some(f.job.clone())),
                None if has_fio => fio_for(work, io, size, fio_ns, device),
                None => (None, None),
            };
            let sizes = Sizes {
                record: size,
                file: study_file_bytes(work, size, device),
            };
            let mut prober =
                |bps: f64, ns: u64, phase: &'static str| -> anyhow::Result<Option<Probe>> {
                    // Ctrl-C or SIGTERM ends the study between probes.
                    anyhow::ensure!(!crate::signal::interrupted(), "interrupted");
                    if bps > room_bps(work, sizes, ns) {
                        return Ok(None);
                    }
                    probe(work, io, sizes, bps / size as f64, ns, phase, o).map(Some)
                };
            let room = |ns: u64| room_bps(work, sizes, ns);
            let row = search(io, size, o, device, &room, &mut prober);
            // A pool's directory lives across its probes (see `probe`).
            let _ = std::fs::remove_dir_all(probe_dir(work, io, size));
            let mut row = row?;
            row.fio_bytes_per_s = fio_bps;
            row.fio_job = job;
            row.file_bytes = Some(sizes.file);
            row.fraction_of_fio = fio_bps
                .filter(|&f| f > 0.0)
                .map(|f| row.sustained_bytes_per_s / f);
            eprintln!(
                "rtrec bench: {io} {} (files of {}): {:.0} records/s ({}, {:.2} of the device, {} of fio's {}); limit: {}",
                rtrec_units::format_size(size),
                rtrec_units::format_size(sizes.file),
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
