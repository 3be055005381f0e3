//! The emulated device's write log: every write and every flush the device
//! completed, in completion order, with the emulator's clock — so that the
//! states a power cut can leave on a device with a volatile write cache can
//! be rebuilt afterwards ([`crate::crashimg`]).
//!
//! **The model** (also `docs/durability.md`, "Crash states"). A write
//! *completed* when the device answered it; a flush completed when the
//! device answered it. The device serves one command at a time
//! ([`crate::queue`]), so the log's order is the device's order and a flush
//! covers exactly the writes logged before it:
//! - **durable**: a write completed before a completed flush;
//! - **may vanish**: everything else — the writes completed after the last
//!   flush may land in any subset, whatever their order;
//! - **torn**: a write may land in part, in its first atomic units (512
//!   bytes or 4 KiB: an option of the image builder), never a unit in part.
//!
//! Writes still in flight at a crash point are not in the log yet and are
//! taken as lost (a real device may hold some of them; nothing in a flush
//! promise depends on them).
//!
//! **The files**, in a directory of their own (`--write-log DIR` of
//! `rtrec __emulate`):
//! - `base.img`: a sparse copy of the image when serving started (the
//!   state every crash state is built on);
//! - `writes.data`: the written bytes, back to back, append only;
//! - `writes.idx`: one [`ENTRY_BYTES`]-byte little-endian entry per
//!   completed command: kind (0 write, 1 flush), completion time
//!   (`CLOCK_MONOTONIC` ns, the clock `rtrec_sys::time::monotonic_ns` reads
//!   in every process), image offset, length, offset in `writes.data`.
//!
//! Design choices:
//! - Off by default and free when off: [`crate::fs::EmuFs`] holds an
//!   `Option` and copies a write's bytes only when it is `Some` (one
//!   branch per request).
//! - The bytes are copied at arrival (the FUSE buffer is gone by
//!   completion) and appended at completion, on the device thread, before
//!   the reply: nothing the kernel learns of can be missing from the log.
//! - Buffered appends, written out when the log is dropped (the emulator
//!   ends when its mount is undone): the log is read only after that, and
//!   a flush per entry would add this machine's disk to the model's delays.
//! - The cost when on: the appends run on the device thread after a
//!   command's served delay is measured, so the timing error hardly moves
//!   (one run of 3,000 4 KiB records at 2 ms on `emmc`: mean 53 → 65 µs,
//!   max 3.2 → 3.5 ms; the crash study's base cell, 1,500 records, off →
//!   on: mean 31.3 → 30.9 µs, max 116 → 92 µs, within the noise), but a
//!   slow disk under the log delays the next
//!   command unseen by it (that run's longest recorder `write()`: 16 →
//!   273 ms, on a machine loaded by parallel builds). A log is for
//!   checking crash states, not for measuring latency.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Bytes of one index entry.
pub const ENTRY_BYTES: usize = 40;
/// The base image's name in a log directory.
pub const BASE: &str = "base.img";
/// The data file's name.
pub const DATA: &str = "writes.data";
/// The index's name.
pub const INDEX: &str = "writes.idx";

/// What a logged command did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum What {
    /// `len` bytes written at image offset `offset`; they are at `data` in
    /// `writes.data`.
    Write {
        /// Offset in the image.
        offset: u64,
        /// Bytes written.
        len: u64,
        /// Offset of the bytes in `writes.data`.
        data: u64,
    },
    /// A cache flush.
    Flush,
}

/// One completed command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// When the device completed it (`CLOCK_MONOTONIC` ns).
    pub time_ns: u64,
    /// What it did.
    pub what: What,
}

impl Entry {
    fn encode(&self) -> [u8; ENTRY_BYTES] {
        let (kind, offset, len, data) = match self.what {
            What::Write { offset, len, data } => (0u64, offset, len, data),
            What::Flush => (1, 0, 0, 0),
        };
        let mut b = [0u8; ENTRY_BYTES];
        for (i, v) in [kind, self.time_ns, offset, len, data].iter().enumerate() {
            b[i * 8..i * 8 + 8].copy_from_slice(&v.to_le_bytes());
        }
        b
    }

    fn decode(b: &[u8]) -> Option<Entry> {
        let v = |i: usize| u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
        let what = match v(0) {
            0 => What::Write {
                offset: v(2),
                len: v(3),
                data: v(4),
            },
            1 => What::Flush,
            _ => return None,
        };
        Some(Entry {
            time_ns: v(1),
            what,
        })
    }
}

/// The log being written (on the device thread).
pub struct WriteLog {
    data: BufWriter<File>,
    index: BufWriter<File>,
    data_len: u64,
}

fn open_new(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
}

impl WriteLog {
    /// Starts a log in `dir` (created if missing), copying `image` as it is
    /// now to `dir/base.img` (sparse).
    ///
    /// # Errors
    /// Creating the directory or a file, or copying the image.
    pub fn create(dir: &Path, image: &File) -> std::io::Result<WriteLog> {
        std::fs::create_dir_all(dir)?;
        let base = open_new(&dir.join(BASE))?;
        copy_sparse(image, &base)?;
        Ok(WriteLog {
            data: BufWriter::with_capacity(1 << 20, open_new(&dir.join(DATA))?),
            index: BufWriter::with_capacity(1 << 16, open_new(&dir.join(INDEX))?),
            data_len: 0,
        })
    }

    /// Logs a completed write of `bytes` at `offset`.
    pub fn write(&mut self, offset: u64, bytes: &[u8]) {
        let e = Entry {
            time_ns: rtrec_sys::time::monotonic_ns(),
            what: What::Write {
                offset,
                len: bytes.len() as u64,
                data: self.data_len,
            },
        };
        // An append that fails leaves a log that says so when read (its
        // index points past the data): nothing to do here, on the device
        // thread, but go on serving.
        let _ = self.data.write_all(bytes);
        self.data_len += bytes.len() as u64;
        let _ = self.index.write_all(&e.encode());
    }

    /// Logs a completed flush.
    pub fn flush(&mut self) {
        let e = Entry {
            time_ns: rtrec_sys::time::monotonic_ns(),
            what: What::Flush,
        };
        let _ = self.index.write_all(&e.encode());
    }
}

impl Drop for WriteLog {
    fn drop(&mut self) {
        let _ = self.data.flush();
        let _ = self.index.flush();
    }
}

/// A log read back: its entries and where its bytes are.
#[derive(Debug)]
pub struct Log {
    /// The directory.
    pub dir: PathBuf,
    /// Every completed command, in completion order.
    pub entries: Vec<Entry>,
    data: File,
}

impl Log {
    /// Reads the log in `dir`.
    ///
    /// # Errors
    /// A file is missing or unreadable, or the index is damaged (an entry
    /// of an unknown kind, or one whose bytes are not in the data file).
    pub fn open(dir: &Path) -> std::io::Result<Log> {
        let mut raw = Vec::new();
        File::open(dir.join(INDEX))?.read_to_end(&mut raw)?;
        let data = File::open(dir.join(DATA))?;
        let data_len = data.metadata()?.len();
        let bad = |why: &str| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{}: {why}", dir.join(INDEX).display()),
            )
        };
        let mut entries = Vec::with_capacity(raw.len() / ENTRY_BYTES);
        for chunk in raw.chunks(ENTRY_BYTES) {
            if chunk.len() < ENTRY_BYTES {
                return Err(bad("ends inside an entry"));
            }
            let e = Entry::decode(chunk).ok_or_else(|| bad("an entry of unknown kind"))?;
            if let What::Write { len, data, .. } = e.what {
                if data + len > data_len {
                    return Err(bad("an entry points past the data file"));
                }
            }
            entries.push(e);
        }
        Ok(Log {
            dir: dir.to_path_buf(),
            entries,
            data,
        })
    }

    /// The base image (the image when logging started).
    pub fn base(&self) -> PathBuf {
        self.dir.join(BASE)
    }

    /// The first `len` bytes of write `data` (its offset in the data file).
    ///
    /// # Errors
    /// Reading the data file.
    pub fn bytes(&self, data: u64, len: u64) -> std::io::Result<Vec<u8>> {
        let mut b = vec![0u8; len as usize];
        self.data.read_exact_at(&mut b, data)?;
        Ok(b)
    }

    /// Indices of the flushes, in order.
    pub fn flushes(&self) -> Vec<usize> {
        (0..self.entries.len())
            .filter(|&i| self.entries[i].what == What::Flush)
            .collect()
    }
}

/// Copies `src` to `dst` from its start, leaving holes where `src` has
/// them (`SEEK_DATA`/`SEEK_HOLE`), and gives `dst` the length of `src`.
///
/// # Errors
/// Reading, seeking or writing.
pub fn copy_sparse(src: &File, dst: &File) -> std::io::Result<()> {
    let len = src.metadata()?.len();
    dst.set_len(0)?;
    dst.set_len(len)?;
    let mut at = 0u64;
    let mut buf = vec![0u8; 1 << 20];
    while at < len {
        let Some(data) = rtrec_sys::seek_data(src, at)? else {
            // No data after `at`.
            break;
        };
        let hole = rtrec_sys::seek_hole(src, data)?;
        let (mut from, to) = (data, hole.min(len));
        while from < to {
            let n = ((to - from) as usize).min(buf.len());
            src.read_exact_at(&mut buf[..n], from)?;
            dst.write_all_at(&buf[..n], from)?;
            from += n as u64;
        }
        at = to;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_reads_back_what_was_logged_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let image = tempfile::tempfile().unwrap();
        image.set_len(1 << 20).unwrap();
        image.write_all_at(b"base", 8192).unwrap();
        {
            let mut log = WriteLog::create(dir.path(), &image).unwrap();
            log.write(4096, b"abc");
            log.flush();
            log.write(0, b"defg");
        }
        let log = Log::open(dir.path()).unwrap();
        let kinds: Vec<_> = log.entries.iter().map(|e| e.what).collect();
        assert_eq!(
            kinds,
            [
                What::Write {
                    offset: 4096,
                    len: 3,
                    data: 0
                },
                What::Flush,
                What::Write {
                    offset: 0,
                    len: 4,
                    data: 3
                },
            ]
        );
        assert!(log.entries.windows(2).all(|w| w[0].time_ns <= w[1].time_ns));
        assert_eq!(log.bytes(3, 4).unwrap(), b"defg");
        assert_eq!(log.flushes(), [1]);
        let base = std::fs::read(log.base()).unwrap();
        assert_eq!(base.len(), 1 << 20);
        assert_eq!(&base[8192..8196], b"base");
    }

    #[test]
    fn a_damaged_index_is_refused_in_a_sentence() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(INDEX), [0u8; 41]).unwrap();
        std::fs::write(dir.path().join(DATA), b"").unwrap();
        let e = Log::open(dir.path()).unwrap_err().to_string();
        assert!(e.contains("ends inside an entry"), "{e}");
    }
}
