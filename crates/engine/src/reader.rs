//! Reading recordings back: walking the frames of a file, and `verify`'s
//! judgement of each file and of a whole recording.
//!
//! Rules (also in `docs/format.md`):
//! - A finished file records its valid length in the header; every byte up
//!   to it must be valid frames, ending with the end frame.
//! - An unfinished file (crash or kill while recording) ends at the first
//!   frame that is not valid. If that bad region is followed by a valid
//!   frame anywhere later, data in the middle are damaged: **corrupt**.
//!   Otherwise the bad region is a **torn tail** (a write cut short) and the
//!   records before it are intact.
//! - Zeros (unwritten pre-allocated space) and frames of an earlier
//!   generation (a recycled file) mark the end of this file's data.
//! - Sequence numbers must run on without gaps; a gap is fine only when a
//!   loss frame covers it exactly.

use std::io;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::file::{FRAMED_EXT, RAW_EXT};
use crate::format::{
    decode_frame, DecodeError, EndPayload, FileHeader, FrameHeader, FrameKind, LossPayload,
    TriggerPayload, FLAG_POOLED, FLAG_SLOT, FRAME_HEADER_LEN, FRAME_MAGIC, HEADER_LEN,
};

/// The verdict on one file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FileStatus {
    /// Ended as asked, every frame valid, no unexplained gap.
    Complete,
    /// Ended by the recorder as aborted (the end frame gives the reason).
    Aborted,
    /// No end frame: the recording was interrupted; the valid prefix is
    /// intact (a torn tail may follow it).
    Unfinished,
    /// Damaged or missing data inside the valid prefix.
    Corrupt,
    /// Not an rtrec file.
    NotRtrec,
    /// A raw recording (no frames to check); the sidecar gives the counters.
    Raw,
}

/// Records missing without a loss frame that explains them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Gap {
    /// First missing sequence number.
    pub first_seq: u64,
    /// How many are missing.
    pub count: u64,
}

/// What `verify` found in one file.
#[derive(Clone, Debug, Serialize)]
pub struct FileReport {
    /// The file.
    pub path: PathBuf,
    /// The verdict.
    pub status: FileStatus,
    /// The header, when it could be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generation: Option<u64>,
    /// Position in its recording.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index: Option<u32>,
    /// Data records found intact.
    pub records: u64,
    /// Their payload bytes.
    pub bytes: u64,
    /// First data or loss sequence number in the file.
    pub first_seq: Option<u64>,
    /// The sequence number after the last one accounted for.
    pub next_seq: Option<u64>,
    /// Dropped records stored as loss frames.
    pub lost_records: u64,
    /// Gaps no loss frame explains (missing data).
    pub gaps: Vec<Gap>,
    /// Counters stored in the end frame.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stored: Option<EndPayload>,
    /// Flight-recorder triggers in the file.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub triggers: Vec<TriggerPayload>,
    /// End of the valid frames.
    pub valid_len: u64,
    /// Bytes after the valid frames that are neither zeros nor another
    /// generation's frames (a write cut short).
    pub torn_tail_bytes: u64,
    /// Where the data are damaged, and how.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub corrupt_at: Option<u64>,
    /// Human-readable findings, one sentence each.
    pub notes: Vec<String>,
}

impl FileReport {
    fn new(path: &Path) -> FileReport {
        FileReport {
            path: path.to_path_buf(),
            status: FileStatus::NotRtrec,
            generation: None,
            index: None,
            records: 0,
            bytes: 0,
            first_seq: None,
            next_seq: None,
            lost_records: 0,
            gaps: Vec::new(),
            stored: None,
            triggers: Vec::new(),
            valid_len: 0,
            torn_tail_bytes: 0,
            corrupt_at: None,
            notes: Vec::new(),
        }
    }

    /// True when the file is complete and clean (`verify` exit 0).
    pub fn is_clean(&self) -> bool {
        matches!(self.status, FileStatus::Complete | FileStatus::Raw)
    }
}

/// How a walk over the frames ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WalkEnd {
    /// At the end frame.
    EndFrame,
    /// At the end of the bytes, or at zeros / another generation's frames.
    Clean,
    /// At a frame that is not valid, with its error.
    Bad(DecodeError),
}

/// Walks the frames of a framed file's bytes (header included), calling `f`
/// for each valid frame in order. Returns the offset where the walk stopped
/// and why. Stops at `header.valid_len` when it is set.
pub fn walk_frames(
    bytes: &[u8],
    header: &FileHeader,
    mut f: impl FnMut(u64, &FrameHeader, &[u8]),
) -> (u64, WalkEnd) {
    let limit = if header.valid_len > 0 {
        (header.valid_len as usize).min(bytes.len())
    } else {
        bytes.len()
    };
    let mut off = HEADER_LEN;
    while off < limit {
        match decode_frame(&bytes[off..limit], header.generation) {
            Ok((h, payload)) => {
                f(off as u64, &h, payload);
                off += FRAME_HEADER_LEN + h.len as usize;
                if h.kind == FrameKind::End {
                    return (off as u64, WalkEnd::EndFrame);
                }
            }
            Err(DecodeError::Zero) | Err(DecodeError::StaleGeneration) => {
                return (off as u64, WalkEnd::Clean)
            }
            Err(e) => return (off as u64, WalkEnd::Bad(e)),
        }
    }
    (off as u64, WalkEnd::Clean)
}

/// Offset of the first valid frame of `generation` at or after `from`.
fn next_valid_frame(bytes: &[u8], from: usize, generation: u64) -> Option<usize> {
    let mut i = from;
    while i + FRAME_HEADER_LEN <= bytes.len() {
        let rel = bytes[i..].windows(4).position(|w| w == FRAME_MAGIC)?;
        let at = i + rel;
        if decode_frame(&bytes[at..], generation).is_ok() {
            return Some(at);
        }
        i = at + 1;
    }
    None
}

/// Verifies one framed file held in `bytes`.
pub fn verify_bytes(path: &Path, bytes: &[u8]) -> FileReport {
    let mut r = FileReport::new(path);
    let header = match FileHeader::decode(bytes) {
        Ok(h) => h,
        Err(DecodeError::BadCrc) => {
            r.status = FileStatus::Corrupt;
            r.corrupt_at = Some(0);
            r.notes
                .push("the file header is damaged (checksum mismatch)".into());
            return r;
        }
        Err(e) => {
            r.notes
                .push(format!("not an rtrec recording ({e} at the start)"));
            return r;
        }
    };
    r.generation = Some(header.generation);
    r.index = Some(header.index);
    if header.flags & FLAG_SLOT != 0 {
        r.notes.push("an unused pool slot, not a recording".into());
        return r;
    }
    let pooled = header.flags & FLAG_POOLED != 0;
    let mut expected: Option<u64> = None;
    let mut seq_problem: Option<(u64, String)> = None;
    let (stop, why) = walk_frames(bytes, &header, |off, h, payload| {
        // Only data and loss frames carry the record sequence.
        let exp = match h.kind {
            FrameKind::Data | FrameKind::Loss => {
                r.first_seq.get_or_insert(h.seq);
                *expected.get_or_insert(h.seq)
            }
            _ => expected.unwrap_or(h.seq),
        };
        match h.kind {
            FrameKind::Data => {
                if h.seq > exp {
                    r.gaps.push(Gap {
                        first_seq: exp,
                        count: h.seq - exp,
                    });
                } else if h.seq < exp && seq_problem.is_none() {
                    seq_problem = Some((
                        off,
                        format!("record {} appears again or out of order", h.seq),
                    ));
                }
                r.records += 1;
                r.bytes += payload.len() as u64;
                match h.seq.max(exp).checked_add(1) {
                    Some(n) => expected = Some(n),
                    None => {
                        seq_problem
                            .get_or_insert((off, "a sequence number is out of range".into()));
                    }
                }
            }
            FrameKind::Loss => match LossPayload::decode(payload) {
                Some(l) => {
                    if l.first_seq > exp {
                        r.gaps.push(Gap {
                            first_seq: exp,
                            count: l.first_seq - exp,
                        });
                    }
                    match (
                        l.first_seq.checked_add(l.count),
                        r.lost_records.checked_add(l.count),
                    ) {
                        (Some(end), Some(lost)) => {
                            r.lost_records = lost;
                            expected = Some(end.max(exp));
                        }
                        _ => {
                            seq_problem.get_or_insert((
                                off,
                                "a loss frame's count is out of range".into(),
                            ));
                        }
                    }
                }
                None => {
                    seq_problem.get_or_insert((off, "a loss frame is malformed".into()));
                }
            },
            FrameKind::End => r.stored = EndPayload::decode(payload),
            FrameKind::Trigger => {
                if let Some(t) = TriggerPayload::decode(payload) {
                    r.triggers.push(t);
                }
            }
        }
    });
    r.next_seq = expected;
    r.valid_len = stop;
    let stop = stop as usize;
    match why {
        WalkEnd::EndFrame => {}
        WalkEnd::Clean | WalkEnd::Bad(_) if header.valid_len > 0 => {
            let what = match why {
                WalkEnd::Bad(e) => e.to_string(),
                _ => "no end frame".into(),
            };
            r.corrupt_at = Some(stop as u64);
            r.notes.push(format!(
                "damaged inside the recorded valid length {} at offset {stop}: {what}",
                header.valid_len
            ));
        }
        WalkEnd::Clean | WalkEnd::Bad(_) => {
            if let Some(at) = next_valid_frame(bytes, stop + 1, header.generation) {
                r.corrupt_at = Some(stop as u64);
                r.notes.push(format!(
                    "data missing or damaged at offset {stop}: a valid frame follows at offset {at}"
                ));
            } else if let (WalkEnd::Bad(_), true) = (why, pooled) {
                // In a pool file an earlier life's bytes follow ours; a cut
                // frame of ours cannot be told from them, and need not be.
                r.notes.push(format!("this recording's data end at offset {stop}; older data of the pool file follow"));
            } else if let WalkEnd::Bad(e) = why {
                let tail = &bytes[stop..];
                let nonzero = tail.iter().rposition(|&b| b != 0).map_or(0, |p| p + 1);
                r.torn_tail_bytes = nonzero as u64;
                r.notes.push(format!("torn tail of {nonzero} bytes at offset {stop} ({e}); the records before it are intact"));
            }
        }
    }
    if header.valid_len > 0 && header.valid_len as usize > bytes.len() {
        r.corrupt_at.get_or_insert(bytes.len() as u64);
        r.notes.push(format!(
            "the file is shorter ({}) than its recorded valid length {}",
            bytes.len(),
            header.valid_len
        ));
    }
    if let Some((off, msg)) = seq_problem {
        r.corrupt_at.get_or_insert(off);
        r.notes.push(msg);
    }
    for g in &r.gaps {
        r.notes.push(format!(
            "{} record(s) from sequence {} are missing and no loss frame explains them",
            g.count, g.first_seq
        ));
    }
    if r.lost_records > 0 {
        r.notes.push(format!(
            "{} record(s) were dropped while recording; each loss is stored",
            r.lost_records
        ));
    }
    r.status = if r.corrupt_at.is_some() || !r.gaps.is_empty() {
        FileStatus::Corrupt
    } else {
        match &r.stored {
            Some(e) if e.complete => FileStatus::Complete,
            Some(e) => {
                r.notes
                    .push(format!("the recording was aborted: {}", e.reason));
                FileStatus::Aborted
            }
            None => {
                r.notes
                    .push("no end frame: the recording was interrupted".into());
                FileStatus::Unfinished
            }
        }
    };
    r
}

/// Verifies one file on disk.
pub fn verify_file(path: &Path) -> io::Result<FileReport> {
    if path.extension().and_then(|e| e.to_str()) == Some(RAW_EXT) {
        let mut r = FileReport::new(path);
        r.status = FileStatus::Raw;
        r.bytes = std::fs::metadata(path)?.len();
        r.notes.push(
            "raw recording: no frames to check; counters are in the .meta.json sidecar".into(),
        );
        return Ok(r);
    }
    let bytes = std::fs::read(path)?;
    Ok(verify_bytes(path, &bytes))
}

/// The recording files in `dir` (`*.rtr`, `*.raw`), sorted by name; hidden
/// files (preparations in progress) are skipped.
pub fn recording_files(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let p = e?.path();
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let ext = p.extension().and_then(|e| e.to_str()).unwrap_or("");
        if !name.starts_with('.') && (ext == FRAMED_EXT || ext == RAW_EXT) && p.is_file() {
            v.push(p);
        }
    }
    v.sort();
    Ok(v)
}

/// Checks the files of each recording (same name before `-NNNN.rtr`)
/// against each other: the first file (index 0) must be there, indexes must
/// have no holes, each file must continue the previous one's sequence
/// numbers, and a recording whose last file says "continued" lost its next
/// file (a kill during rotation leaves exactly this: unfinished). Reports are
/// expected in name order, as [`recording_files`] gives them.
pub fn check_continuity(reports: &mut [FileReport]) {
    fn split(p: &Path) -> Option<(String, u32)> {
        let stem = p.file_stem()?.to_str()?;
        let (b, n) = stem.rsplit_once('-')?;
        if n.len() != 4 {
            return None;
        }
        Some((b.to_string(), n.parse().ok()?))
    }
    let keys: Vec<Option<(String, u32)>> = reports.iter().map(|r| split(&r.path)).collect();
    let mut i = 0;
    while i < reports.len() {
        let Some((base, _)) = keys[i].clone() else {
            i += 1;
            continue;
        };
        let mut j = i;
        while j < reports.len() && keys[j].as_ref().is_some_and(|(b, _)| *b == base) {
            j += 1;
        }
        let group = &mut reports[i..j];
        let idx: Vec<u32> = keys[i..j]
            .iter()
            .map(|k| k.as_ref().map_or(0, |k| k.1))
            .collect();
        if idx[0] != 0 {
            let r = &mut group[0];
            r.notes.push(format!(
                "the recording's first {} file(s) are missing",
                idx[0]
            ));
            r.status = FileStatus::Corrupt;
        }
        for k in 1..group.len() {
            let (prev_end, prev_continued) = (
                group[k - 1].next_seq,
                group[k - 1].stored.as_ref().is_some_and(|e| e.continued),
            );
            let r = &mut group[k];
            if idx[k] != idx[k - 1] + 1 {
                r.notes.push(format!(
                    "file(s) {} to {} of this recording are missing",
                    idx[k - 1] + 1,
                    idx[k] - 1
                ));
                r.status = FileStatus::Corrupt;
            } else if let (true, Some(prev_end), Some(first)) =
                (prev_continued, prev_end, r.first_seq)
            {
                if first > prev_end {
                    r.gaps.push(Gap {
                        first_seq: prev_end,
                        count: first - prev_end,
                    });
                    r.notes.push(format!(
                        "{} record(s) from sequence {prev_end} are missing between files",
                        first - prev_end
                    ));
                    r.status = FileStatus::Corrupt;
                }
            }
        }
        let last = &mut group[group.len() - 1];
        if last.stored.as_ref().is_some_and(|e| e.continued) && last.status == FileStatus::Complete
        {
            last.notes.push("the recording continues in a file that does not exist: it was interrupted while changing files".into());
            last.status = FileStatus::Unfinished;
        }
        i = j;
    }
}
