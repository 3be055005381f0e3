//! The directory's retirement record (`DIR/.retired`): which files of
//! EARLIER recordings a loop's disk budget retired, by recording id and
//! file index range. A loop recording's own retirements are claimed in
//! its own files (each file after the first opens with its RETIRED
//! frame); the files of a recording that ended before the loop started
//! have no such place: the loop that retires them writes this record, and
//! makes it durable, before the first of them is unlinked or recycled.
//! The reader counts a recording's missing leading files as retired only
//! when a RETIRED frame of the recording or this record covers them.
//!
//! Design choices:
//! - **A sidecar, not a frame**: at a loop's start the earlier files
//!   leave before its first file exists (their room is the first file's),
//!   so no file of the new recording could hold the record; and the
//!   recording files' layout (versions 4 and 5) is left as it is, so an
//!   older rtrec still reads every file (it ignores the hidden record).
//! - **Crash-safe by replacement**: the whole record is written to
//!   `.retired.tmp`, `fsync`ed, renamed over `.retired` and the directory
//!   `fsync`ed ([`rtrec_sys::replace_atomic_in`], PostgreSQL's
//!   `durable_rename()`): after a power cut the name holds the old record
//!   or the new one, never a mix.
//! - **Checked as a recording is**: text lines (read by hand or by any
//!   language), the last one the CRC32C of all before it; a record that
//!   does not decode covers nothing, and the reader says why.
//! - **Small**: a recording's ranges merge into one while they touch, and
//!   an entry goes when no file of its recording is left in the directory
//!   ([`RetiredRecord::retain`], done by the loop when it starts, after a
//!   directory `fsync` that makes those deletions durable first).
//!
//! Layout (`rtrec-retired-1`):
//!
//! ```text
//! rtrec-retired-1
//! 1f3a9c0b7d2e4f60 0 5 1765065600123456789
//! crc32c 0a1b2c3d
//! ```
//!
//! One line per range: the recording id (16 hex digits), the first
//! retired file index, the index after the last, the wall-clock time of
//! the latest retirement (ns since the epoch); then `crc32c` and the
//! CRC32C (8 hex digits) of every byte before that line.

use std::io::{self, Write};
use std::path::Path;

/// The record's name in the recording directory (hidden: never a
/// recording file).
pub const RETIRED_RECORD: &str = ".retired";

/// The first line of a record this rtrec writes and reads.
const FORMAT_LINE: &str = "rtrec-retired-1";

/// Files `first_index..next_index` of recording `recording_id`, retired
/// by a loop's disk budget, the latest at `wall_ns`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetiredRange {
    /// The recording's id (its files' header).
    pub recording_id: u64,
    /// The first retired file index.
    pub first_index: u32,
    /// The index after the last retired file.
    pub next_index: u32,
    /// When the latest of them was retired (CLOCK_REALTIME ns).
    pub wall_ns: u64,
}

/// The directory's retirement record (see the module docs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RetiredRecord {
    /// The ranges, in the order first retired.
    pub ranges: Vec<RetiredRange>,
}

impl RetiredRecord {
    /// The record of `dir`: none there is an empty record.
    ///
    /// # Errors
    /// One sentence: the record cannot be read, or does not decode.
    pub fn read(dir: &Path) -> Result<RetiredRecord, String> {
        let path = dir.join(RETIRED_RECORD);
        match std::fs::read(&path) {
            Ok(b) => RetiredRecord::decode(&b)
                .map_err(|e| format!("the retirement record '{}' {e}", path.display())),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(RetiredRecord::default()),
            Err(e) => Err(format!(
                "the retirement record '{}' cannot be read: {e}",
                path.display()
            )),
        }
    }

    /// Writes the record as `DIR/.retired`, durably and atomically (see
    /// the module docs).
    ///
    /// # Errors
    /// A step of the replacement (the old record is then left as it was).
    pub fn write(&self, dir: &rtrec_sys::Dir) -> io::Result<()> {
        let bytes = self.encode();
        rtrec_sys::replace_atomic_in(dir, RETIRED_RECORD, 0o644, |f| f.write_all(&bytes))
    }

    /// Adds `r`, merged into a range of its recording that it touches.
    pub fn add(&mut self, r: RetiredRange) {
        for m in self
            .ranges
            .iter_mut()
            .filter(|m| m.recording_id == r.recording_id)
        {
            if r.first_index <= m.next_index && m.first_index <= r.next_index {
                m.first_index = m.first_index.min(r.first_index);
                m.next_index = m.next_index.max(r.next_index);
                m.wall_ns = m.wall_ns.max(r.wall_ns);
                return;
            }
        }
        self.ranges.push(r);
    }

    /// Keeps only the ranges of recordings `keep` says are still present.
    /// Returns whether any range went.
    pub fn retain(&mut self, mut keep: impl FnMut(u64) -> bool) -> bool {
        let n = self.ranges.len();
        self.ranges.retain(|r| keep(r.recording_id));
        self.ranges.len() != n
    }

    /// How far the retired files of recording `id` reach from file
    /// `from`: the index after the last file of an unbroken run of ranges
    /// starting at or before `from` (`from` itself when none does), and
    /// the latest retirement's time among them (0: none).
    pub fn reach(&self, id: u64, from: u32) -> (u32, u64) {
        let mut upto = from;
        let mut wall = 0;
        loop {
            let next = self
                .ranges
                .iter()
                .filter(|r| r.recording_id == id && r.first_index <= upto && r.next_index > upto)
                .max_by_key(|r| r.next_index);
            match next {
                Some(r) => {
                    upto = r.next_index;
                    wall = wall.max(r.wall_ns);
                }
                None => return (upto, wall),
            }
        }
    }

    /// Whether file `index` of recording `id` is in a range.
    pub fn covers(&self, id: u64, index: u32) -> bool {
        self.ranges
            .iter()
            .any(|r| r.recording_id == id && (r.first_index..r.next_index).contains(&index))
    }

    /// The record's bytes (see the module docs).
    pub fn encode(&self) -> Vec<u8> {
        let mut s = format!("{FORMAT_LINE}\n");
        for r in &self.ranges {
            s.push_str(&format!(
                "{:016x} {} {} {}\n",
                r.recording_id, r.first_index, r.next_index, r.wall_ns
            ));
        }
        seal(s)
    }

    /// Reads a record's bytes.
    ///
    /// # Errors
    /// The words that complete "the retirement record '…' ": what does
    /// not check out.
    pub fn decode(b: &[u8]) -> Result<RetiredRecord, String> {
        let lines = unseal(b, FORMAT_LINE)?;
        let mut rec = RetiredRecord::default();
        for l in lines {
            let w: Vec<&str> = l.split(' ').collect();
            let r = match w[..] {
                [id, a, b, t] => (|| {
                    Some(RetiredRange {
                        recording_id: u64::from_str_radix(id, 16).ok()?,
                        first_index: a.parse().ok()?,
                        next_index: b.parse().ok()?,
                        wall_ns: t.parse().ok()?,
                    })
                })(),
                _ => None,
            };
            match r {
                Some(r) if r.first_index < r.next_index => rec.ranges.push(r),
                _ => return Err(format!("has a malformed line '{l}'")),
            }
        }
        Ok(rec)
    }
}

/// `body` (its format line and entries, each line ending in a newline)
/// sealed with its last line: `crc32c` and the CRC32C of every byte
/// before it. The directory's small records (`.retired`, `.shipped`)
/// share this checked text form.
pub(super) fn seal(mut body: String) -> Vec<u8> {
    let crc = crate::crc::crc32c(body.as_bytes());
    body.push_str(&format!("crc32c {crc:08x}\n"));
    body.into_bytes()
}

/// The entry lines of a record [`seal`] wrote, after its format line
/// `format_line`.
///
/// # Errors
/// The words that complete "the record '…' ": not text, no CRC line, a
/// CRC that does not match, another format.
pub(super) fn unseal<'a>(b: &'a [u8], format_line: &str) -> Result<std::str::Lines<'a>, String> {
    let text = std::str::from_utf8(b).map_err(|_| "is not text".to_string())?;
    let body_end = text
        .trim_end_matches('\n')
        .rfind('\n')
        .map(|i| i + 1)
        .ok_or("has no CRC line")?;
    let (body, last) = text.split_at(body_end);
    let crc = last
        .trim_end()
        .strip_prefix("crc32c ")
        .and_then(|h| u32::from_str_radix(h, 16).ok())
        .ok_or("has no CRC line")?;
    if crate::crc::crc32c(body.as_bytes()) != crc {
        return Err("is damaged (its CRC does not match)".into());
    }
    let mut lines = body.lines();
    if lines.next() != Some(format_line) {
        return Err(format!("is not of the format {format_line}"));
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(id: u64, a: u32, b: u32) -> RetiredRange {
        RetiredRange {
            recording_id: id,
            first_index: a,
            next_index: b,
            wall_ns: u64::from(b),
        }
    }

    #[test]
    fn a_record_reads_back_and_touching_ranges_merge() {
        let mut r = RetiredRecord::default();
        r.add(range(7, 0, 1));
        r.add(range(7, 1, 2));
        r.add(range(9, 3, 4));
        assert_eq!(r.ranges, vec![range(7, 0, 2), range(9, 3, 4)]);
        assert_eq!(RetiredRecord::decode(&r.encode()), Ok(r.clone()));
        assert_eq!(r.reach(7, 0), (2, 2));
        // A run that does not start at or before `from` reaches nothing.
        assert_eq!(r.reach(9, 0), (0, 0));
        assert!(r.covers(9, 3) && !r.covers(9, 4) && !r.covers(8, 0));
        assert!(r.retain(|id| id == 9));
        assert_eq!(r.ranges, vec![range(9, 3, 4)]);
    }

    #[test]
    fn a_damaged_record_says_why_and_covers_nothing() {
        let mut r = RetiredRecord::default();
        r.add(range(7, 0, 5));
        let mut b = r.encode();
        let at = b.iter().position(|&c| c == b'5').unwrap();
        b[at] = b'6';
        assert_eq!(
            RetiredRecord::decode(&b),
            Err("is damaged (its CRC does not match)".into())
        );
        assert!(RetiredRecord::decode(b"").is_err());
        assert!(RetiredRecord::decode(b"rtrec-retired-1\n").is_err());
    }

    #[test]
    fn the_record_is_replaced_whole_in_its_directory() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(RetiredRecord::read(d.path()), Ok(RetiredRecord::default()));
        let mut r = RetiredRecord::default();
        r.add(range(1, 0, 3));
        let dir = rtrec_sys::Dir::open_nofollow(d.path()).unwrap();
        r.write(&dir).unwrap();
        assert_eq!(RetiredRecord::read(d.path()), Ok(r));
        assert!(!d.path().join(".retired.tmp").exists());
    }
}
