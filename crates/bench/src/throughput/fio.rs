//! fio in the throughput study: the device's sequential write bandwidth
//! (the best of fio's 1 MiB jobs, one per back-end's settings, else our
//! own `O_DIRECT` writer) and each back-end's like-for-like job at a
//! record size ([`fio_job`]).
//!
//! Design choice: a back-end's job is derived from the back-end, never
//! from a table of them: its `ioengine` is `io_uring` when
//! [`Io::is_uring`], else `psync`, and `direct` is [`Io::is_direct`] (a
//! buffered job also ends with `end_fsync`). So a new back-end gets its job
//! and its place among the device's jobs
//! ([`device_job_order`]) from what it says of
//! itself.

use std::path::Path;
use std::process::Command;

use anyhow::Context;
use rtrec_engine::{Io, DEFAULT_IO_DEPTH};
use rtrec_sys as sys;

use super::options::{device_job_order, DEVICE_BLOCK};
use super::report::FioFigure;

/// The sequential write bandwidth of the file system under `work`,
/// bytes/s, how it was measured, and fio's jobs: the best of fio's 1 MiB
/// jobs with each back-end's settings ([`fio_job`]; the `O_DIRECT` ones
/// first, as they bound the buffered ones' length, [`buffered_len`]), else
/// our own sequential `O_DIRECT` writer.
pub(super) fn device_bandwidth(
    work: &Path,
    hold_ns: u64,
) -> anyhow::Result<(f64, &'static str, Vec<FioFigure>)> {
    let len = fio_len(work)?;
    let path = work.join("bandwidth.dat");
    let mut jobs: Vec<FioFigure> = Vec::new();
    for io in device_job_order() {
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
    if io.is_direct() || device_bps <= 0.0 {
        return len;
    }
    let secs = (hold_ns / 1_000_000_000).max(2) as f64;
    let fits = (device_bps * secs) as u64 / (1 << 20) * (1 << 20);
    len.min(fits.max(16 << 20))
}

/// fio's bandwidth with `io`'s settings at `size`, bytes/s, and the job;
/// `device_bps` bounds a buffered job's length ([`buffered_len`]).
pub(crate) fn fio_for(
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
/// study's docs and this module's), writing `len` bytes; the file name and time limit are
/// given on fio's command line.
pub fn fio_job(io: Io, size: u64, len: u64) -> String {
    let engine = if io.is_uring() { "io_uring" } else { "psync" };
    let direct = io.is_direct();
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
    let v = fio_json(path, job, hold_ns)?;
    v["jobs"][0]["write"]["bw_bytes"]
        .as_f64()
        .filter(|&b| b > 0.0)
}

/// Runs `job` on `path` for at most `hold_ns` (at least 2 s): fio's
/// `--output-format=json` document, if fio runs and succeeds. The one
/// place fio is started for the throughput and cost studies.
pub(crate) fn fio_json(path: &Path, job: &str, hold_ns: u64) -> Option<serde_json::Value> {
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
    serde_json::from_slice(&out.stdout).ok()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_back_end_has_a_fio_job_that_matches_its_settings() {
        for &(io, name) in Io::ALL {
            let job = fio_job(io, 1024, 16 << 20);
            let has = |line: &str| job.lines().any(|l| l == line);
            let engine = if io.is_uring() { "io_uring" } else { "psync" };
            assert!(has(&format!("ioengine={engine}")), "{name}: {job}");
            assert!(
                has(&format!("direct={}", u8::from(io.is_direct()))),
                "{name}: {job}"
            );
            // O_DIRECT writes whole blocks of the engine's 4 KiB; a
            // buffered job ends with the data on the device.
            let bs = if io.is_direct() { 4096 } else { 1024 };
            assert!(has(&format!("bs={bs}")), "{name}: {job}");
            assert_eq!(has("end_fsync=1"), !io.is_direct(), "{name}: {job}");
            assert_eq!(
                has(&format!("iodepth={DEFAULT_IO_DEPTH}")),
                io.is_uring(),
                "{name}: {job}"
            );
        }
    }
}
