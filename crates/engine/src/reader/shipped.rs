//! The directory's shipping ledger (`DIR/.shipped`): which closed
//! recordings `rtrec ship` has put in object storage (their files, each
//! verified by size and CRC32C, and the manifest written last), and the
//! multipart uploads it has under way (the upload's id and each part the
//! server acknowledged), so that a shipper killed or power-cut mid-upload
//! resumes with at most one part sent again, and a loop's disk budget
//! knows which earlier recordings may leave first (issue 46).
//!
//! Design choices:
//! - **The same kind of record as `.retired`** ([`super::RetiredRecord`]):
//!   text lines, the last the CRC32C of all before it, replaced whole
//!   (temporary file, `fsync`, rename, directory `fsync`:
//!   [`rtrec_sys::replace_atomic_in`]); after a power cut the name holds
//!   the old ledger or the new one, never a mix. A ledger that does not
//!   decode says why and counts nothing as shipped: the worst it can do
//!   is send a recording again (the bucket's copy is then found equal by
//!   its checksums and not re-sent), never let one leave unshipped.
//! - **Shipped means the manifest is there.** A recording counts as
//!   shipped only once its [`LedgerEntry::Recording`] line is durable,
//!   written after the manifest object, which the shipper writes after
//!   every file of the recording; a [`LedgerEntry::File`] line alone
//!   (files sent, manifest not yet) does not let the loop retire it first.
//! - **Names last on their line**: a file name or object key may hold
//!   spaces; every other field is a number or a token without one.
//! - **Small**: entries of a recording no file of which is left in the
//!   directory go ([`ShipLedger::retain`]), as `.retired` does.
//!
//! Layout (`rtrec-shipped-1`):
//!
//! ```text
//! rtrec-shipped-1
//! file 1f3a9c0b7d2e4f60 0 1048576 0a1b2c3d 1765065600123456789 rec-20261207-0000.rtr
//! recording 1f3a9c0b7d2e4f60 1765065600923456789 dev1/2026-12-07/1f3a9c0b7d2e4f60/manifest.json
//! upload 2~abcd 1048576 8388608 0a1b2c3d rec-20261207-0001.rtr
//! part 2~abcd 1 "9b2cf535f27731c974343645a3985328"
//! crc32c 0a1b2c3d
//! ```
//!
//! - `file ID INDEX SIZE CRC32C WALL_NS NAME`: file `NAME` (index
//!   `INDEX` of recording `ID`), `SIZE` bytes with the CRC32C `CRC32C`, is
//!   in the bucket and was verified there at `WALL_NS` (ns since the
//!   epoch).
//! - `recording ID WALL_NS KEY`: recording `ID`'s manifest is the object
//!   `KEY`: the recording is shipped.
//! - `upload UPLOAD_ID SIZE PART_SIZE CRC32C NAME`: a multipart upload of
//!   file `NAME` (`SIZE` bytes, CRC32C `CRC32C` when it began) is under
//!   way with the server's id `UPLOAD_ID`, in parts of `PART_SIZE` bytes
//!   (the last shorter).
//! - `part UPLOAD_ID NUMBER CONTENT_ID`: part `NUMBER` (from 1) of that
//!   upload was acknowledged with `CONTENT_ID` (its ETag).

use std::io::{self, Write};
use std::path::Path;

use super::retired::{seal, unseal};

/// The ledger's name in the recording directory (hidden: never a
/// recording file).
pub const SHIP_LEDGER: &str = ".shipped";

/// The first line of a ledger this rtrec writes and reads.
const FORMAT_LINE: &str = "rtrec-shipped-1";

/// One line of the ledger (see the module docs for each).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LedgerEntry {
    /// A recording file in the bucket, verified.
    File {
        /// The recording's id (its files' header).
        recording_id: u64,
        /// The file's index in its recording.
        index: u32,
        /// Its size in bytes when it was sent.
        size: u64,
        /// The CRC32C of all its bytes.
        crc32c: u32,
        /// When it was verified in the bucket (CLOCK_REALTIME ns).
        wall_ns: u64,
        /// Its name in the directory.
        name: String,
    },
    /// A recording whose manifest is in the bucket: shipped.
    Recording {
        /// The recording's id.
        recording_id: u64,
        /// When its manifest was written (CLOCK_REALTIME ns).
        wall_ns: u64,
        /// The manifest's object key.
        key: String,
    },
    /// A multipart upload under way.
    Upload {
        /// The server's id of the upload.
        upload_id: String,
        /// The file's size when the upload began.
        size: u64,
        /// The size of every part but the last.
        part_size: u64,
        /// The file's CRC32C when the upload began.
        crc32c: u32,
        /// The file's name in the directory.
        name: String,
    },
    /// A part of an upload the server acknowledged.
    Part {
        /// The upload it belongs to.
        upload_id: String,
        /// Its number, from 1.
        number: u32,
        /// What the server answered for it (its ETag).
        content_id: String,
    },
}

impl LedgerEntry {
    /// The entry's line, without its newline.
    fn line(&self) -> String {
        match self {
            LedgerEntry::File {
                recording_id,
                index,
                size,
                crc32c,
                wall_ns,
                name,
            } => format!("file {recording_id:016x} {index} {size} {crc32c:08x} {wall_ns} {name}"),
            LedgerEntry::Recording {
                recording_id,
                wall_ns,
                key,
            } => format!("recording {recording_id:016x} {wall_ns} {key}"),
            LedgerEntry::Upload {
                upload_id,
                size,
                part_size,
                crc32c,
                name,
            } => format!("upload {upload_id} {size} {part_size} {crc32c:08x} {name}"),
            LedgerEntry::Part {
                upload_id,
                number,
                content_id,
            } => format!("part {upload_id} {number} {content_id}"),
        }
    }

    /// The entry of `line`, or `None` when it does not decode.
    fn parse(line: &str) -> Option<LedgerEntry> {
        let (kind, rest) = line.split_once(' ')?;
        // Splits off `n` space-separated fields; the rest of the line
        // (which may hold spaces) is the last.
        let fields = |n: usize| -> Option<Vec<&str>> {
            let v: Vec<&str> = rest.splitn(n, ' ').collect();
            (v.len() == n && v.iter().all(|f| !f.is_empty())).then_some(v)
        };
        let hex64 = |s: &str| u64::from_str_radix(s, 16).ok();
        let hex32 = |s: &str| u32::from_str_radix(s, 16).ok();
        Some(match kind {
            "file" => {
                let f = fields(6)?;
                LedgerEntry::File {
                    recording_id: hex64(f[0])?,
                    index: f[1].parse().ok()?,
                    size: f[2].parse().ok()?,
                    crc32c: hex32(f[3])?,
                    wall_ns: f[4].parse().ok()?,
                    name: f[5].to_string(),
                }
            }
            "recording" => {
                let f = fields(3)?;
                LedgerEntry::Recording {
                    recording_id: hex64(f[0])?,
                    wall_ns: f[1].parse().ok()?,
                    key: f[2].to_string(),
                }
            }
            "upload" => {
                let f = fields(5)?;
                LedgerEntry::Upload {
                    upload_id: f[0].to_string(),
                    size: f[1].parse().ok()?,
                    part_size: f[2].parse().ok()?,
                    crc32c: hex32(f[3])?,
                    name: f[4].to_string(),
                }
            }
            "part" => {
                let f = fields(3)?;
                if f[2].contains(' ') {
                    return None;
                }
                LedgerEntry::Part {
                    upload_id: f[0].to_string(),
                    number: f[1].parse().ok().filter(|&n| n >= 1)?,
                    content_id: f[2].to_string(),
                }
            }
            _ => return None,
        })
    }
}

/// The directory's shipping ledger (see the module docs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ShipLedger {
    /// The entries, in the order written.
    pub entries: Vec<LedgerEntry>,
}

impl ShipLedger {
    /// The ledger of `dir`: none there is an empty ledger (nothing
    /// shipped).
    ///
    /// # Errors
    /// One sentence: the ledger cannot be read, or does not decode.
    pub fn read(dir: &Path) -> Result<ShipLedger, String> {
        let path = dir.join(SHIP_LEDGER);
        match std::fs::read(&path) {
            Ok(b) => ShipLedger::decode(&b)
                .map_err(|e| format!("the shipping ledger '{}' {e}", path.display())),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(ShipLedger::default()),
            Err(e) => Err(format!(
                "the shipping ledger '{}' cannot be read: {e}",
                path.display()
            )),
        }
    }

    /// Writes the ledger as `DIR/.shipped`, durably and atomically (see
    /// the module docs).
    ///
    /// # Errors
    /// A step of the replacement (the old ledger is then left as it was).
    pub fn write(&self, dir: &rtrec_sys::Dir) -> io::Result<()> {
        let bytes = self.encode();
        rtrec_sys::replace_atomic_in(dir, SHIP_LEDGER, 0o644, |f| f.write_all(&bytes))
    }

    /// Whether recording `id` is shipped (its manifest is in the bucket).
    pub fn recording_shipped(&self, id: u64) -> bool {
        self.entries.iter().any(
            |e| matches!(e, LedgerEntry::Recording { recording_id, .. } if *recording_id == id),
        )
    }

    /// The verified copy of file `name` in the bucket, as `(size,
    /// crc32c)`, if one is recorded (the latest).
    pub fn file_shipped(&self, name: &str) -> Option<(u64, u32)> {
        self.entries.iter().rev().find_map(|e| match e {
            LedgerEntry::File {
                name: n,
                size,
                crc32c,
                ..
            } if n == name => Some((*size, *crc32c)),
            _ => None,
        })
    }

    /// The multipart upload of file `name` under way, if any: its
    /// `Upload` entry and the parts acknowledged, by number.
    pub fn upload_of(&self, name: &str) -> Option<(&LedgerEntry, Vec<(u32, &str)>)> {
        let up = self
            .entries
            .iter()
            .rev()
            .find(|e| matches!(e, LedgerEntry::Upload { name: n, .. } if n == name))?;
        let LedgerEntry::Upload { upload_id, .. } = up else {
            return None;
        };
        let mut parts: Vec<(u32, &str)> = self
            .entries
            .iter()
            .filter_map(|e| match e {
                LedgerEntry::Part {
                    upload_id: u,
                    number,
                    content_id,
                } if u == upload_id => Some((*number, content_id.as_str())),
                _ => None,
            })
            .collect();
        parts.sort_by_key(|p| p.0);
        parts.dedup_by_key(|p| p.0);
        Some((up, parts))
    }

    /// Drops upload `upload_id` and its parts (completed or aborted).
    pub fn end_upload(&mut self, upload_id: &str) {
        self.entries.retain(|e| match e {
            LedgerEntry::Upload { upload_id: u, .. } | LedgerEntry::Part { upload_id: u, .. } => {
                u != upload_id
            }
            _ => true,
        });
    }

    /// Keeps only the `File` and `Recording` entries of recordings `keep`
    /// says are still present, and the uploads of files `keep_file` says
    /// are. Returns whether any entry went.
    pub fn retain(
        &mut self,
        mut keep: impl FnMut(u64) -> bool,
        mut keep_file: impl FnMut(&str) -> bool,
    ) -> bool {
        let n = self.entries.len();
        let gone: Vec<String> = self
            .entries
            .iter()
            .filter_map(|e| match e {
                LedgerEntry::Upload {
                    upload_id, name, ..
                } if !keep_file(name) => Some(upload_id.clone()),
                _ => None,
            })
            .collect();
        self.entries.retain(|e| match e {
            LedgerEntry::File { recording_id, .. }
            | LedgerEntry::Recording { recording_id, .. } => keep(*recording_id),
            LedgerEntry::Upload { upload_id, .. } | LedgerEntry::Part { upload_id, .. } => {
                !gone.contains(upload_id)
            }
        });
        self.entries.len() != n
    }

    /// The ledger's bytes (see the module docs).
    pub fn encode(&self) -> Vec<u8> {
        let mut s = format!("{FORMAT_LINE}\n");
        for e in &self.entries {
            s.push_str(&e.line());
            s.push('\n');
        }
        seal(s)
    }

    /// Reads a ledger's bytes.
    ///
    /// # Errors
    /// The words that complete "the shipping ledger '…' ": what does not
    /// check out.
    pub fn decode(b: &[u8]) -> Result<ShipLedger, String> {
        let lines = unseal(b, FORMAT_LINE)?;
        let mut ledger = ShipLedger::default();
        for l in lines {
            match LedgerEntry::parse(l) {
                Some(e) => ledger.entries.push(e),
                None => return Err(format!("has a malformed line '{l}'")),
            }
        }
        Ok(ledger)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> ShipLedger {
        ShipLedger {
            entries: vec![
                LedgerEntry::File {
                    recording_id: 7,
                    index: 0,
                    size: 4096,
                    crc32c: 0xdead_beef,
                    wall_ns: 11,
                    name: "my rec-0000.rtr".into(),
                },
                LedgerEntry::Recording {
                    recording_id: 7,
                    wall_ns: 12,
                    key: "dev 1/2026-12-07/0000000000000007/manifest.json".into(),
                },
                LedgerEntry::Upload {
                    upload_id: "2~abc".into(),
                    size: 20 << 20,
                    part_size: 8 << 20,
                    crc32c: 1,
                    name: "rec-0001.rtr".into(),
                },
                LedgerEntry::Part {
                    upload_id: "2~abc".into(),
                    number: 2,
                    content_id: "\"e2\"".into(),
                },
                LedgerEntry::Part {
                    upload_id: "2~abc".into(),
                    number: 1,
                    content_id: "\"e1\"".into(),
                },
            ],
        }
    }

    #[test]
    fn a_ledger_reads_back_and_answers_what_is_shipped() {
        let l = sample();
        assert_eq!(ShipLedger::decode(&l.encode()), Ok(l.clone()));
        assert!(l.recording_shipped(7) && !l.recording_shipped(8));
        assert_eq!(l.file_shipped("my rec-0000.rtr"), Some((4096, 0xdead_beef)));
        assert_eq!(l.file_shipped("rec-0001.rtr"), None);
        let (_, parts) = l.upload_of("rec-0001.rtr").unwrap();
        assert_eq!(parts, vec![(1, "\"e1\""), (2, "\"e2\"")]);
        let mut m = l.clone();
        m.end_upload("2~abc");
        assert!(m.upload_of("rec-0001.rtr").is_none());
        assert_eq!(m.entries.len(), 2);
        let mut r = l;
        assert!(r.retain(|id| id != 7, |_| true));
        assert_eq!(r.entries.len(), 3);
        assert!(r.retain(|_| true, |f| f != "rec-0001.rtr"));
        assert!(r.entries.is_empty());
    }

    #[test]
    fn a_damaged_ledger_says_why_and_ships_nothing() {
        let mut b = sample().encode();
        let at = b.iter().position(|&c| c == b'4').unwrap();
        b[at] = b'5';
        assert_eq!(
            ShipLedger::decode(&b),
            Err("is damaged (its CRC does not match)".into())
        );
        assert!(ShipLedger::decode(b"").is_err());
        assert!(ShipLedger::decode(b"rtrec-shipped-1\n").is_err());
        let body = "rtrec-shipped-1\npart u 0 x\n";
        let bad = format!("{body}crc32c {:08x}\n", crate::crc::crc32c(body.as_bytes()));
        assert_eq!(
            ShipLedger::decode(bad.as_bytes()),
            Err("has a malformed line 'part u 0 x'".into())
        );
    }

    #[test]
    fn the_ledger_is_replaced_whole_in_its_directory() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(ShipLedger::read(d.path()), Ok(ShipLedger::default()));
        let dir = rtrec_sys::Dir::open_nofollow(d.path()).unwrap();
        sample().write(&dir).unwrap();
        assert_eq!(ShipLedger::read(d.path()), Ok(sample()));
        assert!(!d.path().join(".shipped.tmp").exists());
    }
}
