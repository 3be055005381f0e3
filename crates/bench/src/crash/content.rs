//! What a recording directory holds, read from outside the recorder: its
//! names, and what the frames of its `.rtr` files hold ([`Content`]), read
//! with the engine's chained walk.

use std::collections::BTreeSet;
use std::path::Path;

use rtrec_engine::format::{FileHeader, FrameKind, LossPayload, LossReason, RetiredPayload};
use rtrec_engine::reader::walk_frames;

use super::matrix::synthetic;

/// Bytes of the recording files (`.rtr`) in `dir` and the pool's slots
/// (`.rtp` in `dir/.pool`): what a loop's bound counts.
pub(super) fn recording_bytes(dir: &Path) -> u64 {
    let size = |d: &Path, ext: &str| -> u64 {
        std::fs::read_dir(d)
            .map(|r| {
                r.flatten()
                    .filter(|e| e.path().extension().and_then(|x| x.to_str()) == Some(ext))
                    .filter_map(|e| e.metadata().ok())
                    .map(|m| m.len())
                    .sum()
            })
            .unwrap_or(0)
    };
    size(dir, "rtr") + size(&dir.join(".pool"), "rtp")
}

/// Names in `dir` (none if it cannot be read).
pub(super) fn names(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// What the frames of the `.rtr` files in a directory hold, read with the
/// engine's chained walk (what verify and export accept).
#[derive(Default, Debug)]
pub(super) struct Content {
    /// The records whose data frames hold their synthetic bytes.
    pub(super) seqs: BTreeSet<u64>,
    /// Records stored as lost while recording (loss frames of rtrec).
    pub(super) lost: BTreeSet<u64>,
    /// Records a loss frame of `recover` covers where it cut a crash
    /// hole: never a substitute for a durable record.
    pub(super) cut: BTreeSet<u64>,
    /// Data frames whose bytes are not their record's.
    pub(super) wrong: u64,
    /// The `.rtr` files.
    pub(super) files: usize,
    /// The first record no RETIRED claim of a loop covers (the highest
    /// claim's `next_seq`; 0 without one): the records below it were
    /// retired under a claim the directory holds.
    pub(super) claimed_upto: u64,
}

/// The recording ids of the `.rtr` files in `dir` (from their headers).
pub(super) fn recording_ids(dir: &Path) -> BTreeSet<u64> {
    rtr_files(dir)
        .iter()
        .filter_map(|p| std::fs::read(p).ok())
        .filter_map(|b| FileHeader::decode(&b).ok())
        .map(|h| h.recording_id)
        .collect()
}

/// The `.rtr` files in `dir`.
fn rtr_files(dir: &Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().and_then(|x| x.to_str()) == Some("rtr"))
                .collect()
        })
        .unwrap_or_default()
}

/// What the `.rtr` files of `dir` hold (nothing if it cannot be read).
pub(super) fn contents(dir: &Path) -> Content {
    contents_but(dir, &BTreeSet::new())
}

/// What the `.rtr` files of `dir` hold but those of the recordings
/// `skip` (earlier power-cut cycles' recordings, whose sequence numbers
/// the current one's repeat).
pub(super) fn contents_but(dir: &Path, skip: &BTreeSet<u64>) -> Content {
    let mut c = Content::default();
    for p in rtr_files(dir) {
        let Ok(bytes) = std::fs::read(&p) else {
            c.files += 1;
            continue;
        };
        let Ok(header) = FileHeader::decode(&bytes) else {
            c.files += 1;
            continue;
        };
        if skip.contains(&header.recording_id) {
            continue;
        }
        c.files += 1;
        walk_frames(&bytes, &header, |_, h, payload| match h.kind {
            FrameKind::Data => {
                if payload == synthetic(h.seq).as_slice() {
                    c.seqs.insert(h.seq);
                } else {
                    c.wrong += 1;
                }
            }
            FrameKind::Loss => {
                if let Some(l) = LossPayload::decode(payload) {
                    let into = if l.reason == LossReason::CrashHole {
                        &mut c.cut
                    } else {
                        &mut c.lost
                    };
                    into.extend(l.first_seq..l.first_seq + l.count);
                }
            }
            FrameKind::Retired => {
                if let Some(r) = RetiredPayload::decode(payload) {
                    c.claimed_upto = c.claimed_upto.max(r.next_seq);
                }
            }
            _ => {}
        });
    }
    c
}
