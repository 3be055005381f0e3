//! The floor of one cell, measured in the same run: fio's usr + sys CPU
//! for the like-for-like job ([`fio_cpu`]), and memcpy and CRC32C of the
//! same bytes in record-size pieces ([`memcpy_cpu`], [`crc32c_cpu`]),
//! each timed with the thread's CPU clock, the best of
//! [`FLOOR_PASSES`].

use std::path::Path;

use rtrec_engine::Io;
use rtrec_sys as sys;

use super::options::{FIO_MAX_NS, FLOOR_PASSES};
use crate::throughput::{fio_job, fio_json};

/// fio's block size for a cell: the mean bytes of the recorder's writes
/// (`bytes_per_write`), rounded up to 4 KiB for an `O_DIRECT` back-end and
/// to 512 B for a buffered one; the record size when the writes were not
/// counted.
pub(super) fn fio_block(io: Io, record_bytes: u64, bytes_per_write: u64) -> u64 {
    let bs = if bytes_per_write == 0 {
        record_bytes
    } else {
        bytes_per_write
    };
    let unit = if io.is_direct() { 4096 } else { 512 };
    bs.div_ceil(unit) * unit
}

/// fio's like-for-like job for `io` at block size `bs`, writing `bytes`
/// into `work`: its job and its usr + sys CPU per byte written, ns
/// (`jobs[0].usr_cpu` and `sys_cpu` are percent of `job_runtime`, ms);
/// `None` without fio or when it wrote nothing.
pub(super) fn fio_cpu(work: &Path, io: Io, bs: u64, bytes: u64) -> (String, Option<f64>) {
    // Whole blocks, at least one.
    let len = (bytes / bs).max(1) * bs;
    let job = fio_job(io, bs, len);
    let path = work.join("cost-fio.dat");
    let v = fio_json(&path, &job, FIO_MAX_NS);
    let _ = std::fs::remove_file(&path);
    (job, v.as_ref().and_then(cpu_per_byte))
}

/// From fio's JSON: the first job's usr + sys CPU, ns, per byte written.
fn cpu_per_byte(v: &serde_json::Value) -> Option<f64> {
    let j = &v["jobs"][0];
    let percent = j["usr_cpu"].as_f64()? + j["sys_cpu"].as_f64()?;
    let runtime_ms = j["job_runtime"].as_f64()?;
    let written = j["write"]["io_bytes"].as_f64().filter(|&b| b > 0.0)?;
    Some(percent / 100.0 * runtime_ms * 1e6 / written)
}

/// CPU ns to copy `bytes` in `size`-byte pieces into a buffer of
/// `ring_bytes` (wrapping at its end, as a ring does): the best of
/// [`FLOOR_PASSES`].
pub(super) fn memcpy_cpu(size: u64, bytes: u64, ring_bytes: usize) -> u64 {
    let src = vec![0xa5u8; size as usize];
    let mut ring = vec![0u8; ring_bytes.max(size as usize)];
    let pieces = (bytes / size).max(1);
    best_of(|| {
        let mut at = 0;
        for _ in 0..pieces {
            if at + src.len() > ring.len() {
                at = 0;
            }
            ring[at..at + src.len()].copy_from_slice(std::hint::black_box(&src));
            at += src.len();
        }
        std::hint::black_box(&ring);
    })
}

/// CPU ns to compute the CRC32C (the engine's `crc32c` crate) of `bytes`
/// in `size`-byte pieces: the best of [`FLOOR_PASSES`].
pub(super) fn crc32c_cpu(size: u64, bytes: u64) -> u64 {
    let src = vec![0xa5u8; size as usize];
    let pieces = (bytes / size).max(1);
    best_of(|| {
        let mut sum = 0u32;
        for _ in 0..pieces {
            sum ^= crc32c::crc32c(std::hint::black_box(&src));
        }
        std::hint::black_box(sum);
    })
}

/// The least thread CPU time, ns, of [`FLOOR_PASSES`] runs of `f` (at
/// least 1).
fn best_of(mut f: impl FnMut()) -> u64 {
    (0..FLOOR_PASSES)
        .map(|_| {
            let t0 = sys::thread_cpu_ns();
            f();
            sys::thread_cpu_ns() - t0
        })
        .min()
        .unwrap_or(0)
        .max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fios_block_is_the_recorders_mean_write_in_whole_units() {
        assert_eq!(fio_block(Io::Buffered, 64, 4200), 4608);
        assert_eq!(fio_block(Io::Direct, 64, 4200), 8192);
        assert_eq!(fio_block(Io::Direct, 1 << 20, 0), 1 << 20);
        assert_eq!(fio_block(Io::Buffered, 64, 0), 512);
    }

    #[test]
    fn fios_cpu_is_its_percent_of_the_jobs_runtime() {
        let v = serde_json::json!({"jobs": [{
            "usr_cpu": 10.0, "sys_cpu": 40.0, "job_runtime": 2000,
            "write": {"io_bytes": 1_000_000_000u64}
        }]});
        // Half of 2 s over 1e9 bytes: 1 ns a byte.
        assert_eq!(cpu_per_byte(&v), Some(1.0));
        assert_eq!(cpu_per_byte(&serde_json::json!({})), None);
    }

    #[test]
    fn the_memcpy_and_crc_floors_take_time() {
        assert!(memcpy_cpu(64, 1 << 20, 4096) > 0);
        assert!(crc32c_cpu(64, 1 << 20) > 0);
    }
}
