//! The disk a pooled recording holds, and its unused tail given back; and
//! what a recording wrote to the device ([`Writes`]).
//!
//! A pooled file keeps its whole size when it is closed (ready for
//! `rtrec pool recycle`), so a short recording holds a whole pool file: 64
//! MiB for a few KiB. The rule: when the recording ends and no other
//! recording in the directory is writing, the unused tail of each of its
//! files (past the header's valid length) is given back with `ftruncate`;
//! while another one is writing it is kept, because truncating a large file
//! can stall the file system's journal under a running recorder, and the
//! summary says how to give it back later. The rule itself is the
//! engine's ([`rtrec_engine::pool::give_back_tails`]): the C library's
//! `rtrec_recorder_finish()` follows it too.
//!
//! "Writing" is a shared `flock` on `.pool/writers`
//! ([`rtrec_engine::pool::WritersLock`]), held by every pooled recorder
//! (of this command line, another one, or an application through the C
//! library) from its creation to its end; the command line holds one more
//! until its recording's tails are dealt with, and asks for it
//! exclusively without waiting: it gets it only when no other recording
//! holds it.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use rtrec_engine::pool::WritersLock;
use rtrec_units::format_size;
use serde::Serialize;

/// What the recording's files hold on disk, after [`finish`].
pub struct DiskUse {
    /// Bytes the recording's files hold on disk (`st_blocks` × 512).
    pub held_bytes: u64,
    /// The unused tail given back.
    pub given_back_bytes: u64,
    /// The unused tail kept (another recording was writing), with the
    /// files and their valid lengths.
    pub kept: Vec<(PathBuf, u64, u64)>,
    /// Bytes the pool's ready files hold on disk, and how many.
    pub pool: Option<(u64, u32)>,
    /// The recording directory, which the hints name (`rtrec pool trim
    /// DIR`: the command's default directory may not be this one).
    pub dir: PathBuf,
}

/// [`DiskUse`] as `--json`'s `disk` object (`docs/record-schema.md`). The
/// fields are in the order of their names, as the `serde_json::Value` this
/// was built as before wrote them, so the text is the same.
#[derive(Serialize)]
pub struct DiskJson<'a> {
    /// [`DiskUse::given_back_bytes`].
    given_back_bytes: u64,
    /// [`DiskUse::held_bytes`].
    held_bytes: u64,
    /// [`DiskUse::kept`], one object each.
    kept: Vec<KeptJson<'a>>,
    /// [`DiskUse::pool`]; `null` without a pool.
    pool: Option<PoolJson>,
}

/// A kept tail in [`DiskJson`].
#[derive(Serialize)]
struct KeptJson<'a> {
    /// The file.
    file: &'a Path,
    /// Its unused tail, bytes.
    tail_bytes: u64,
    /// Its valid length, bytes.
    valid_len: u64,
}

/// The pool in [`DiskJson`].
#[derive(Serialize)]
struct PoolJson {
    /// Bytes its ready files hold on disk.
    disk_bytes: u64,
    /// How many ready files.
    ready_files: u32,
}

/// Gives back the unused tails of `files` when `writing` says no other
/// recording is writing ([`rtrec_engine::pool::give_back_tails`], the
/// C library's rule too), and measures what the recording and the pool
/// hold.
pub fn finish(dir: &Path, files: &[PathBuf], writing: Option<WritersLock>) -> DiskUse {
    let tails = rtrec_engine::pool::give_back_tails(writing, files);
    let held_bytes = files
        .iter()
        .map(|p| std::fs::metadata(p).map_or(0, |m| m.blocks() * 512))
        .sum();
    let pool = match rtrec_engine::pool::Pool::open(dir) {
        Ok(Some(pool)) => pool.status().ok().map(|st| (st.disk_bytes, st.ready_files)),
        _ => None,
    };
    DiskUse {
        held_bytes,
        given_back_bytes: tails.given_back_bytes,
        kept: tails.kept,
        pool,
        dir: dir.to_path_buf(),
    }
}

impl DiskUse {
    /// The `--json` object: the same figures as [`DiskUse::lines`], in
    /// bytes (`docs/record-schema.md`, `disk`).
    pub fn json(&self) -> DiskJson<'_> {
        DiskJson {
            given_back_bytes: self.given_back_bytes,
            held_bytes: self.held_bytes,
            kept: self
                .kept
                .iter()
                .map(|(file, valid_len, tail_bytes)| KeptJson {
                    file,
                    tail_bytes: *tail_bytes,
                    valid_len: *valid_len,
                })
                .collect(),
            pool: self.pool.map(|(disk_bytes, ready_files)| PoolJson {
                disk_bytes,
                ready_files,
            }),
        }
    }

    /// The summary's lines.
    pub fn lines(&self) -> String {
        let mut out = format!("disk: the recording holds {}", format_size(self.held_bytes));
        if self.given_back_bytes > 0 {
            out += &format!(
                " ({} of unused tail given back: no other recording was writing here)",
                format_size(self.given_back_bytes)
            );
        }
        if let Some((bytes, files)) = self.pool {
            out += &format!(
                "; the pool holds {} in {files} ready file(s) (`rtrec pool trim {}` gives it back)",
                format_size(bytes),
                rtrec_units::shell_word(&self.dir.display().to_string())
            );
        }
        out += "\n";
        for (path, valid, tail) in &self.kept {
            out += &format!(
                "disk: {} of unused tail kept in '{}' while another recording writes here; give it back when none is: truncate -s {valid} '{}'\n",
                format_size(*tail),
                path.display(),
                path.display()
            );
        }
        out
    }
}

/// The write counters at the start of a recording ([`Writes::start`]):
/// the block device's sectors written and this process's `write_bytes`.
///
/// Design choice: the device's count is the one that wears a card, so it
/// is the write amplification's numerator when it can be read; it counts
/// every writer of the device (metadata and journal included, other
/// programs too), so on a busy device it is an upper bound. The
/// process's count (what this process dirtied or wrote directly) is
/// reported beside it, and is the numerator when the device is unknown
/// (tmpfs, overlay). Neither counts what the kernel writes back after the
/// recording ended (a journal commit of the last metadata changes, within
/// the commit interval).
pub struct Writes {
    device: Option<u64>,
    process: Option<u64>,
}

/// What a recording wrote ([`Writes::since`]): `record --json`'s
/// `device_bytes_written`, `process_write_bytes`, `write_amplification`.
#[derive(Clone, Copy, Debug)]
pub struct Written {
    /// Bytes written to the directory's block device over the recording.
    pub device_bytes: Option<u64>,
    /// Bytes this process sent to storage over the recording.
    pub process_bytes: Option<u64>,
    /// The device's bytes (else the process's) per byte of payload;
    /// `None` without payload.
    pub amplification: Option<f64>,
}

impl Writes {
    /// The counters now, for a recording in `dir`.
    pub fn start(dir: &Path) -> Writes {
        Writes {
            device: rtrec_host::machine::device_bytes_written(dir),
            process: rtrec_host::machine::process_write_bytes(),
        }
    }

    /// What was written since [`Writes::start`], per `payload_bytes` of
    /// records.
    pub fn since(&self, dir: &Path, payload_bytes: u64) -> Written {
        let device = self
            .device
            .zip(rtrec_host::machine::device_bytes_written(dir))
            .map(|(a, b)| b.saturating_sub(a));
        let process = self
            .process
            .zip(rtrec_host::machine::process_write_bytes())
            .map(|(a, b)| b.saturating_sub(a));
        Written {
            device_bytes: device,
            process_bytes: process,
            amplification: device
                .or(process)
                .filter(|_| payload_bytes > 0)
                .map(|w| w as f64 / payload_bytes as f64),
        }
    }
}

impl Written {
    /// The summary's line.
    pub fn line(&self) -> String {
        let mut out = match self.device_bytes {
            Some(d) => format!("writes: {} to the device", format_size(d)),
            None => "writes: the device's count is unknown here".to_string(),
        };
        if let Some(p) = self.process_bytes {
            out += &format!(" ({} by this process)", format_size(p));
        }
        if let Some(a) = self.amplification {
            out += &format!(", {a:.1}× the payload");
        }
        out + "\n"
    }
}
