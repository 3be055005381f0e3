//! A raw file's check: its bytes against the chunk checksums its sidecar
//! (`BASE.meta.json`) lists. A raw file has no frames, so the sidecar is
//! all there is to check it against; without one it is unverifiable.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use crate::format::{RawFileSums, RAW_CHUNK};

use super::report::{FileReport, FileStatus};
use super::source::{open_regular, ByteSource, Window};

/// The sidecar of raw file `BASE-NNNN.raw`: `BASE.meta.json` beside it.
pub fn raw_sidecar(path: &Path) -> Option<PathBuf> {
    let stem = path.file_stem()?.to_str()?;
    let (base, n) = stem.rsplit_once('-')?;
    (n.len() == 4 && n.bytes().all(|b| b.is_ascii_digit()))
        .then(|| path.with_file_name(format!("{base}.meta.json")))
}

/// The largest sidecar read (16 MiB: 4 bytes per MiB of recording, so it
/// covers recordings of terabytes).
const MAX_SIDECAR: u64 = 16 << 20;

/// Checks a raw file against the chunk checksums in its sidecar, in steps:
/// the sidecar ([`Sidecar::read`]), this file's sums in it
/// ([`Sidecar::sums_of`]), the recording's other files, the length, each
/// chunk ([`check_chunks`]), then whether the recording was aborted.
pub(super) fn verify_raw(path: &Path, f: &File) -> io::Result<FileReport> {
    let mut r = FileReport::new(path);
    r.status = FileStatus::Unverifiable;
    let size = f.size()?;
    r.bytes = size;
    let Some(side) = Sidecar::read(path, &mut r) else {
        return Ok(r);
    };
    let Some(mine) = side.sums_of(path, &mut r) else {
        return Ok(r);
    };
    r.status = FileStatus::Raw;
    side.check_files(path, &mut r);
    if size != mine.len {
        r.corrupt(
            size.min(mine.len),
            format!("the file has {size} bytes, its sidecar says {}", mine.len),
        );
    }
    if check_chunks(f, mine, size, &side.name, &mut r)? {
        side.aborted(&mut r);
    }
    Ok(r)
}

/// A raw recording's sidecar, read and holding checksums.
struct Sidecar {
    /// Its path, as findings name it.
    name: String,
    /// What the sidecar says of the recording.
    meta: SidecarFile,
    /// The chunk sums of each file of the recording.
    sums: Vec<RawFileSums>,
}

/// The fields of a sidecar that `verify` reads (the writer's
/// `writer::raw` stores more). Design choice: read into this struct, not
/// into a `serde_json::Value` that is then searched, so the record-only
/// binary carries no JSON reader for untyped documents
/// (docs/embedded.md). A field of the wrong type makes the sidecar
/// unreadable, which leaves the file unverifiable as a missing field does.
#[derive(serde::Deserialize)]
struct SidecarFile {
    /// The chunk the sums are of ([`RAW_CHUNK`]); absent before sums.
    #[serde(default)]
    chunk_bytes: Option<u64>,
    /// Each file's sums; absent before sums.
    #[serde(default)]
    file_sums: Option<Vec<RawFileSums>>,
    /// Whether the recording ended cleanly.
    #[serde(default)]
    complete: bool,
    /// Why it did not.
    #[serde(default)]
    reason: String,
}

impl Sidecar {
    /// The sidecar of raw file `path`; `None`, with a finding in `r`, when
    /// there is none, it cannot be read, or it holds no checksums (the
    /// file stays unverifiable).
    fn read(path: &Path, r: &mut FileReport) -> Option<Sidecar> {
        let Some(side) = raw_sidecar(path) else {
            r.note(
                "a raw file without a recording's name: no sidecar to check it against (unverifiable)"
                    .into(),
            );
            return None;
        };
        let name = side.display().to_string();
        let mut meta: SidecarFile = match open_regular(&side).and_then(|s| {
            if s.size()? > MAX_SIDECAR {
                return Err(io::Error::other("it is too large to be a sidecar"));
            }
            // Read whole, then parsed from the bytes: the one JSON reader
            // (`from_slice`) the record-only binary carries (docs/embedded.md).
            let mut bytes = Vec::new();
            io::Read::read_to_end(&mut io::Read::take(s, MAX_SIDECAR), &mut bytes)?;
            serde_json::from_slice(&bytes).map_err(io::Error::other)
        }) {
            Ok(v) => v,
            Err(e) => {
                r.note(format!("raw recording whose sidecar '{name}' cannot be read ({e}): nothing to check it against (unverifiable)"));
                return None;
            }
        };
        let sums = meta
            .file_sums
            .take()
            .filter(|_| meta.chunk_bytes == Some(RAW_CHUNK));
        let Some(sums) = sums else {
            r.note(format!(
                "the sidecar '{name}' holds no checksums (written by an older rtrec): unverifiable"
            ));
            return None;
        };
        Some(Sidecar { name, meta, sums })
    }

    /// The sums of file `path`; `None`, with a finding in `r`, when the
    /// sidecar does not list it.
    fn sums_of(&self, path: &Path, r: &mut FileReport) -> Option<&RawFileSums> {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mine = self.sums.iter().find(|s| s.name == name);
        if mine.is_none() {
            r.note(format!(
                "the sidecar '{}' does not list this file: unverifiable",
                self.name
            ));
        }
        mine
    }

    /// Every file the sidecar lists must be beside `path`.
    fn check_files(&self, path: &Path, r: &mut FileReport) {
        for s in &self.sums {
            if !path.with_file_name(&s.name).exists() {
                r.corrupt(
                    0,
                    format!("file '{}' of this raw recording is missing", s.name),
                );
            }
        }
    }

    /// A recording the sidecar does not call complete was aborted, with
    /// its reason (when nothing else is wrong with the file).
    fn aborted(&self, r: &mut FileReport) {
        if r.status == FileStatus::Raw && !self.meta.complete {
            r.note(format!("the recording was aborted: {}", self.meta.reason));
            r.status = FileStatus::Aborted;
        }
    }
}

/// Checks each chunk of `f` (`size` bytes) against `mine`, the sums the
/// sidecar `side_name` lists for it; a mismatch is damage. False when the
/// sidecar is malformed (the wrong number of sums): nothing was checked.
fn check_chunks(
    f: &File,
    mine: &RawFileSums,
    size: u64,
    side_name: &str,
    r: &mut FileReport,
) -> io::Result<bool> {
    let chunks = mine.len.div_ceil(RAW_CHUNK);
    if mine.chunk_crcs.len() as u64 != chunks {
        r.corrupt(
            0,
            format!("the sidecar '{side_name}' is malformed (chunk count)"),
        );
        return Ok(false);
    }
    let mut win = Window::new(f)?;
    for (i, want) in mine.chunk_crcs.iter().enumerate() {
        let start = i as u64 * RAW_CHUNK;
        let end = (start + RAW_CHUNK).min(mine.len).min(size);
        if start >= end {
            break;
        }
        let b = win.get(start, (end - start) as usize)?;
        let full = b.len() as u64 == (start + RAW_CHUNK).min(mine.len) - start;
        if !full || crate::crc::crc32c(b) != *want {
            r.damage(start, end, "checksum mismatch against the sidecar".into());
        }
    }
    Ok(true)
}
