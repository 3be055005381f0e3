//! Measuring a real device into a profile (`rtrec device probe DIR`): the
//! same fields the emulator serves, measured through the file system under
//! DIR, in one scratch file inside DIR that is removed afterwards (nothing
//! is written outside DIR).
//!
//! What is measured, in order (each step's figures feed the next):
//! 1. **Write bandwidth**: [`Extent::seq_bytes`] in 1 MiB writes, then `fdatasync`;
//!    bytes over the whole time.
//! 2. **Read bandwidth**: the same file read back in 1 MiB reads after its
//!    cached pages were dropped (`posix_fadvise(DONTNEED)`).
//! 3. **Request latency**: [`Extent::small`] 4 KiB writes at scattered
//!    offsets, each pushed to the device with `sync_file_range(WRITE |
//!    WAIT_AFTER)` — a device write *without* a cache flush; the median, less
//!    the transfer time at the measured bandwidth, is the write latency.
//!    4 KiB reads of dropped pages give the read latency the same way.
//! 4. **Flush cost**: the same 4 KiB writes followed by `fdatasync` (which
//!    flushes the device cache); the median less the median of step 3 is
//!    `flush`, the 99th percentile less it is `flush_tail`, applied to every
//!    100th flush.
//! 5. **GC stalls**: a long sequential write ([`Extent::gc_bytes`]) in 1 MiB
//!    writes, each followed by `fdatasync`; a step longer than 3× the median
//!    is a stall. `gc_every` is the bytes written per stall, `gc_pause` the
//!    median stall's excess over the median step.
//!
//! Design choice: medians, not means, so one outlier from a noisy machine
//! does not become the device's typical cost; the tails go to the tail
//! fields, where they belong. `seek` is not measured (0): it matters only
//! for disks, whose profile says so by hand.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::profile::ProfileFile;

/// How much a probe measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extent {
    /// Bytes of the sequential write and read.
    pub seq_bytes: u64,
    /// Bytes of the GC-stall write.
    pub gc_bytes: u64,
    /// 4 KiB writes per latency step, and 4 KiB reads for the read latency.
    pub small: usize,
}

impl Extent {
    /// `rtrec device probe`: 32 MiB sequential, 64 MiB for GC stalls,
    /// 100 small requests per step (about 100 MiB written).
    pub const FULL: Extent = Extent {
        seq_bytes: 32 << 20,
        gc_bytes: 64 << 20,
        small: 100,
    };
    /// `rtrec doctor --probe`: 8 MiB, 8 MiB and 40 (about 16 MiB written;
    /// a GC stall every more than 8 MiB goes unseen).
    pub const SHORT: Extent = Extent {
        seq_bytes: 8 << 20,
        gc_bytes: 8 << 20,
        small: 40,
    };

    /// Bytes the probe writes in all, for the time estimate.
    pub fn bytes_written(&self) -> u64 {
        self.seq_bytes + self.gc_bytes + 2 * (self.small * SMALL) as u64
    }
}

const MIB: usize = 1 << 20;
const SMALL: usize = 4096;

/// What the probe measured, beside the profile it makes.
#[derive(Debug, Clone)]
pub struct ProbeResult {
    /// The profile, ready to write.
    pub profile: ProfileFile,
    /// Free-text lines: each measurement with its raw figures.
    pub lines: Vec<String>,
}

fn median(v: &mut [u64]) -> u64 {
    v.sort_unstable();
    v[v.len() / 2]
}

fn p99(v: &mut [u64]) -> u64 {
    v.sort_unstable();
    v[(v.len() * 99 / 100).min(v.len() - 1)]
}

/// A duration for the profile file: the units grammar's own printing,
/// which parses back.
fn us(ns: u64) -> String {
    rtrec_units::format_duration(ns)
}

/// Bytes [`probe`] writes in all, for the time estimate.
pub fn bytes_written() -> u64 {
    Extent::FULL.bytes_written()
}

/// The scratch file's offsets for the scattered 4 KiB requests.
fn scattered(i: usize, seq_bytes: u64) -> u64 {
    // A stride coprime with the file's 4 KiB slots, so requests are neither
    // sequential nor repeated.
    ((i as u64 * 2_654_435_761) % (seq_bytes / SMALL as u64)) * SMALL as u64
}

/// The scratch file in DIR, removed when dropped.
struct Scratch {
    path: PathBuf,
    file: File,
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Probes the device under `dir` in full ([`Extent::FULL`]); `progress`
/// gets one line per step.
///
/// # Errors
/// The scratch file cannot be made, written or read.
pub fn probe(dir: &Path, name: &str, progress: impl FnMut(&str)) -> io::Result<ProbeResult> {
    probe_extent(dir, name, Extent::FULL, progress)
}

/// Probes the device under `dir`, measuring as much as `extent` says: the
/// five steps of the module's docs, one method each of `Steps`.
///
/// # Errors
/// The scratch file cannot be made, written or read.
pub fn probe_extent(
    dir: &Path,
    name: &str,
    extent: Extent,
    mut progress: impl FnMut(&str),
) -> io::Result<ProbeResult> {
    let path = dir.join(format!(".rtrec-probe-{}", std::process::id()));
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)?;
    let s = Scratch { path, file };
    let mut steps = Steps {
        f: &s.file,
        extent,
        buf: vec![0xa5u8; MIB],
        lines: Vec::new(),
    };
    progress("1/5 sequential write");
    let write_bw = steps.sequential_write()?;
    progress("2/5 sequential read");
    let read_bw = steps.sequential_read()?;
    progress("3/5 4 KiB request latency");
    let (write_med, write_latency, read_latency) = steps.request_latency(write_bw, read_bw)?;
    progress("4/5 flush latency");
    let (flush, flush_tail) = steps.flush_latency(write_med)?;
    progress("5/5 garbage-collection stalls (long sequential write)");
    let (gc_every, gc_pause) = steps.gc_stalls()?;
    let lines = steps.lines;
    drop(s);

    let profile = ProfileFile {
        name: name.to_string(),
        description: format!("measured by rtrec device probe under {}", dir.display()),
        calibration: lines.join("; "),
        queues: 1,
        read_latency: us(read_latency),
        write_latency: us(write_latency),
        read_bandwidth: format!("{read_bw}B"),
        write_bandwidth: format!("{write_bw}B"),
        seek: "0ns".into(),
        flush: us(flush),
        flush_tail: us(flush_tail),
        flush_tail_every: if flush_tail > flush { 100 } else { 0 },
        gc_every: format!("{gc_every}B"),
        gc_pause: us(gc_pause),
        // The probe measures flushes as they come (their cost already
        // holds whatever the device's cache had to drain), not a cache.
        cache: "0B".into(),
        cache_bandwidth: "0B".into(),
        // Commands as the kernel sends them; synchronous I/O first, as the
        // board's I/O scheduler did when the probe measured it.
        max_request: "0B".into(),
        order: "sync-first".into(),
    };
    Ok(ProbeResult { profile, lines })
}

/// The time to transfer `bytes` at `bw` bytes per second, ns.
fn transfer_ns(bytes: usize, bw: u64) -> u64 {
    (bytes as u64 * 1_000_000_000) / bw.max(1)
}

/// The probe's steps over the scratch file, in order (each step's figures
/// feed the next), each adding its calibration line.
struct Steps<'a> {
    /// The scratch file.
    f: &'a File,
    /// How much to measure.
    extent: Extent,
    /// 1 MiB of a fixed pattern, the data every write takes.
    buf: Vec<u8>,
    /// The calibration lines so far.
    lines: Vec<String>,
}

impl Steps<'_> {
    /// The offset of the `i`th scattered 4 KiB request.
    fn scattered(&self, i: usize) -> u64 {
        scattered(i, self.extent.seq_bytes)
    }

    /// Step 1: the write bandwidth, bytes per second.
    fn sequential_write(&mut self) -> io::Result<u64> {
        let seq_bytes = self.extent.seq_bytes;
        let t = Instant::now();
        for i in 0..(seq_bytes as usize / MIB) {
            self.f.write_all_at(&self.buf, (i * MIB) as u64)?;
        }
        rtrec_sys::fdatasync(self.f)?;
        let write_bw = (seq_bytes as f64 / t.elapsed().as_secs_f64()) as u64;
        self.lines.push(format!(
            "sequential write: {} in {} ({})",
            rtrec_units::format_size(seq_bytes),
            rtrec_units::format_duration(t.elapsed().as_nanos() as u64),
            rtrec_units::format_size_per_s(write_bw)
        ));
        Ok(write_bw)
    }

    /// Step 2: the read bandwidth of the dropped pages, bytes per second.
    fn sequential_read(&mut self) -> io::Result<u64> {
        let seq_bytes = self.extent.seq_bytes;
        rtrec_sys::fadvise_dontneed(self.f, 0, 0)?;
        let mut rbuf = vec![0u8; MIB];
        let t = Instant::now();
        for i in 0..(seq_bytes as usize / MIB) {
            self.f.read_exact_at(&mut rbuf, (i * MIB) as u64)?;
        }
        let read_bw = (seq_bytes as f64 / t.elapsed().as_secs_f64()) as u64;
        self.lines.push(format!(
            "sequential read: {}",
            rtrec_units::format_size_per_s(read_bw)
        ));
        Ok(read_bw)
    }

    /// Step 3: 4 KiB writes pushed to the device without a flush, then
    /// 4 KiB reads of dropped pages. The writes' median, and the write and
    /// read latencies (each median less the transfer time at the measured
    /// bandwidth), ns.
    fn request_latency(&mut self, write_bw: u64, read_bw: u64) -> io::Result<(u64, u64, u64)> {
        let small = self.extent.small;
        let mut plain = Vec::with_capacity(small);
        for i in 0..small {
            let off = self.scattered(i);
            let t = Instant::now();
            self.f.write_all_at(&self.buf[..SMALL], off)?;
            rtrec_sys::sync_file_range(
                self.f,
                off,
                SMALL as u64,
                rtrec_sys::sfr::WRITE | rtrec_sys::sfr::WAIT_AFTER,
            )?;
            plain.push(t.elapsed().as_nanos() as u64);
        }
        let write_med = median(&mut plain);
        rtrec_sys::fadvise_dontneed(self.f, 0, 0)?;
        let mut reads = Vec::with_capacity(small);
        let mut sbuf = vec![0u8; SMALL];
        for i in 0..small {
            let t = Instant::now();
            self.f.read_exact_at(&mut sbuf, self.scattered(i + small))?;
            reads.push(t.elapsed().as_nanos() as u64);
        }
        let read_med = median(&mut reads);
        self.lines.push(format!(
            "4 KiB write without flush: median {}; 4 KiB read: median {}",
            rtrec_units::format_duration(write_med),
            rtrec_units::format_duration(read_med)
        ));
        Ok((
            write_med,
            write_med.saturating_sub(transfer_ns(SMALL, write_bw)),
            read_med.saturating_sub(transfer_ns(SMALL, read_bw)),
        ))
    }

    /// Step 4: 4 KiB writes each followed by `fdatasync`. The flush cost
    /// (their median less `write_med`, the median without a flush) and its
    /// tail (the 99th percentile less it), ns.
    fn flush_latency(&mut self, write_med: u64) -> io::Result<(u64, u64)> {
        let small = self.extent.small;
        let mut synced = Vec::with_capacity(small);
        for i in 0..small {
            let t = Instant::now();
            self.f
                .write_all_at(&self.buf[..SMALL], self.scattered(i + 7))?;
            rtrec_sys::fdatasync(self.f)?;
            synced.push(t.elapsed().as_nanos() as u64);
        }
        let flush = median(&mut synced).saturating_sub(write_med);
        let flush_tail = p99(&mut synced).saturating_sub(write_med).max(flush);
        self.lines.push(format!(
            "4 KiB write + fdatasync: median {}, p99 {}, max {}",
            rtrec_units::format_duration(median(&mut synced)),
            rtrec_units::format_duration(p99(&mut synced)),
            rtrec_units::format_duration(*synced.last().unwrap_or(&0))
        ));
        Ok((flush, flush_tail))
    }

    /// Step 5: a long sequential write in 1 MiB writes, each followed by
    /// `fdatasync`, after the first step's data. The bytes written per
    /// stall (0: none) and the median stall's excess over the median step,
    /// ns.
    fn gc_stalls(&mut self) -> io::Result<(u64, u64)> {
        let (base, gc_bytes) = (self.extent.seq_bytes, self.extent.gc_bytes);
        let mut steps = Vec::with_capacity(gc_bytes as usize / MIB);
        for i in 0..(gc_bytes as usize / MIB) {
            let t = Instant::now();
            self.f.write_all_at(&self.buf, base + (i * MIB) as u64)?;
            rtrec_sys::fdatasync(self.f)?;
            steps.push(t.elapsed().as_nanos() as u64);
        }
        let step_med = median(&mut steps.clone());
        let mut stalls: Vec<u64> = steps
            .iter()
            .filter(|&&s| s > 3 * step_med)
            .map(|s| s - step_med)
            .collect();
        let (gc_every, gc_pause) = if stalls.is_empty() {
            (0, 0)
        } else {
            (gc_bytes / stalls.len() as u64, median(&mut stalls))
        };
        self.lines.push(format!(
            "1 MiB write + fdatasync over {}: median {}, {} stalls over 3× the median",
            rtrec_units::format_size(gc_bytes),
            rtrec_units::format_duration(step_med),
            stalls.len()
        ));
        Ok((gc_every, gc_pause))
    }
}
