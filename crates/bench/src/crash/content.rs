//! What a recording directory holds, read from outside the recorder: its
//! names, and what the frames of its `.rtr` files hold ([`Content`]), read
//! with the engine's chained walk.

use std::collections::BTreeSet;
use std::path::Path;

use rtrec_engine::format::{FileHeader, FrameKind, LossPayload, LossReason};
use rtrec_engine::reader::walk_frames;

use super::matrix::synthetic;

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
}

/// What the `.rtr` files of `dir` hold (nothing if it cannot be read).
pub(super) fn contents(dir: &Path) -> Content {
    let mut c = Content::default();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return c;
    };
    for p in entries.flatten().map(|e| e.path()) {
        if p.extension().and_then(|x| x.to_str()) != Some("rtr") {
            continue;
        }
        c.files += 1;
        let Ok(bytes) = std::fs::read(&p) else {
            continue;
        };
        let Ok(header) = FileHeader::decode(&bytes) else {
            continue;
        };
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
            _ => {}
        });
    }
    c
}
