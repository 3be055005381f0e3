//! Cutting the crash hole of an unfinished file (format version 4, see
//! [`crate::reader::CrashHole`]), never below its durable mark: the first
//! step of closing an interrupted file ([`super::close`]).
//!
//! Design choice (PostgreSQL's recovery ends the WAL at the first record
//! that does not check out after `minRecoveryPoint`, and zero-fills what
//! follows): the file is cut at the end of its last intact frame before
//! the hole. A loss frame (reason [`LossReason::CrashHole`]) there covers
//! the sequence numbers the cut records had, when frames after the hole
//! tell them; the bytes of ours after it are overwritten with zeros (the
//! clean end of an unfinished file's data, also in a pool file, whose
//! earlier life follows); then `fdatasync`, the header with the durable
//! mark moved past the loss frame, `fsync`. The file is then unfinished
//! without a hole, and [`super::close`] ends it (its end frame carries the
//! recording's totals over all its files). A file damaged below its mark
//! (or after it with no sign of a missing write) is corrupt and left
//! alone: `rtrec export --salvage` reads its intact frames.

use std::fs::File;
use std::io;
use std::path::PathBuf;

use rtrec_sys as sys;

use crate::format::{
    chain_seed, encode_frame_header, FileHeader, FrameKind, LossPayload, LossReason, PackedInfo,
    FRAME_HEADER_LEN, HEADER_LEN,
};
use crate::reader::{read_header, FileReport, FileStatus, FrameWalker, Step};

/// What cutting a crash hole did to one file.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Cut {
    /// The file.
    pub path: PathBuf,
    /// Where its data now end before the loss frame: the end of the last
    /// intact frame before the hole (never below the durable mark).
    pub at: u64,
    /// Bytes cleared after the loss frame (the hole and the frames after
    /// it).
    pub bytes_cut: u64,
    /// Intact records after the hole that were cut.
    pub records_cut: u64,
    /// The sequence numbers the loss frame covers (first, count), when the
    /// frames after the hole told them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loss: Option<(u64, u64)>,
}

/// Cuts the crash hole of the file `r` reports, if it has one and is
/// otherwise unfinished and intact (see the module docs). `Ok(None)` when
/// there is nothing to cut.
///
/// # Errors
/// Reading or writing the file; a file that changed since `r` was made
/// (its header or frames no longer match the report) is refused and left
/// alone.
pub fn cut_crash_hole(r: &FileReport) -> io::Result<Option<Cut>> {
    let (Some(hole), FileStatus::Unfinished) = (r.crash_hole, r.status) else {
        return Ok(None);
    };
    let changed = || io::Error::other("the file changed since it was verified; nothing was cut");
    let f = sys::open_rw_nofollow(&r.path)?;
    let header = read_header(&f)?.map_err(|_| changed())?;
    let mark = header.durable_mark().ok_or_else(changed)?;
    let at = hole.start;
    if at < mark || at != r.valid_len || Some(header.generation) != r.generation {
        return Err(changed());
    }
    let Tail { chain, last_ts, .. } = tail_at(&f, &header, at)?.ok_or_else(changed)?;
    let loss = match (r.next_seq, hole.next_seq_after) {
        (Some(first), Some(after)) if after > first => Some((first, after - first)),
        _ => None,
    };
    let mut end = at;
    if let Some((first_seq, count)) = loss {
        let payload = LossPayload {
            first_seq,
            count,
            reason: LossReason::CrashHole,
        }
        .encode();
        let mut head = [0u8; FRAME_HEADER_LEN];
        encode_frame_header(
            &mut head,
            header.generation,
            FrameKind::Loss,
            first_seq,
            last_ts,
            chain,
            &payload,
        );
        let mut frame = head.to_vec();
        frame.extend_from_slice(&payload);
        sys::pwrite_all(&f, &frame, at)?;
        end += frame.len() as u64;
    }
    let clear_to = hole.end.max(end);
    zero(&f, end, clear_to)?;
    // As the writer's close: the frames first, then the header that
    // points to them, then everything.
    sys::fdatasync(&f)?;
    sys::pwrite_all(&f, &header.with_mark(end).encode(), 0)?;
    sys::fsync(&f)?;
    Ok(Some(Cut {
        path: r.path.clone(),
        at,
        bytes_cut: clear_to - end,
        records_cut: hole.records_after,
        loss,
    }))
}

/// What a frame appended at offset `at` of a file follows.
#[derive(Clone, Copy)]
pub(super) struct Tail {
    /// The chain link it needs: the CRC of the intact frame that ends at
    /// `at`, or the header's seed at the first frame.
    pub(super) chain: u32,
    /// The time of the last record before it (of a packed frame, its last
    /// record's), or the file's creation.
    pub(super) last_ts: u64,
    /// The sequence number after the frames that end at or below the
    /// durable mark (every record before it was durable); `None` when no
    /// frame does.
    pub(super) durable_seq: Option<u64>,
}

/// The [`Tail`] at `at` (the end of an intact frame, or the end of the
/// header); `None` when no intact, chained frame ends there.
pub(super) fn tail_at(f: &File, header: &FileHeader, at: u64) -> io::Result<Option<Tail>> {
    let mark = header.durable_mark().unwrap_or(HEADER_LEN as u64);
    let mut tail = Tail {
        chain: chain_seed(header),
        last_ts: header.created_mono_ns,
        durable_seq: None,
    };
    if at == HEADER_LEN as u64 {
        return Ok(Some(tail));
    }
    let mut w = FrameWalker::new(f, header)?;
    while let Some(step) = w.next_step()? {
        let Step::Frame(fr) = step else { break };
        if fr.off >= at || !fr.linked {
            break;
        }
        let h = &fr.header;
        let (next, span) = match h.kind {
            FrameKind::Data => (h.seq + 1, 0),
            FrameKind::Packed => PackedInfo::decode(&fr.payload)
                .map_or((h.seq, 0), |(i, _)| (h.seq + i.count as u64, i.span_ns)),
            FrameKind::Loss => (
                LossPayload::decode(&fr.payload).map_or(h.seq, |l| l.first_seq + l.count),
                0,
            ),
            FrameKind::Trigger | FrameKind::End | FrameKind::Retired | FrameKind::Layout => {
                (h.seq, 0)
            }
        };
        tail.last_ts = tail.last_ts.max(h.ts_ns.saturating_add(span));
        if fr.end() <= mark {
            tail.durable_seq = Some(next);
        }
        if fr.end() == at {
            tail.chain = h.crc;
            return Ok(Some(tail));
        }
    }
    Ok(None)
}

/// Overwrites `from..to` of `f` with zeros.
fn zero(f: &File, from: u64, to: u64) -> io::Result<()> {
    let zeros = vec![0u8; (to.saturating_sub(from)).min(1 << 20) as usize];
    let mut pos = from;
    while pos < to {
        let n = (to - pos).min(zeros.len() as u64) as usize;
        sys::pwrite_all(f, &zeros[..n], pos)?;
        pos += n as u64;
    }
    Ok(())
}
