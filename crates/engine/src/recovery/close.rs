//! Closing the last file of an interrupted recording: after its crash hole
//! is cut ([`super::hole`]), an end frame with the flag
//! [`END_INTERRUPTED`](crate::format::END_INTERRUPTED) is appended at the
//! end of its last intact frame (never below its durable mark), then the
//! header says the file is finished, and the unused pre-allocation after
//! the end frame is given back.
//!
//! The steps, in the order of the writer's own close (`crate::file`): the
//! end frame, `fdatasync`, the header (flag `OPEN` cleared, `valid_len` at
//! the end frame's end), `fsync`, then `ftruncate` and `fsync`. Each step
//! leaves a state the next run finishes: an end frame under a header that
//! still says `OPEN` is read as "recover was interrupted" and only the
//! header is written again; a finished file whose tail was not given back
//! gets it given back.

use std::fs::File;
use std::io;
use std::path::PathBuf;

use rtrec_sys as sys;

use crate::format::{
    encode_frame_header, EndPayload, FileHeader, FrameKind, Interrupted, RetiredPayload,
    FLAG_LAYOUT, FLAG_LOOP, FLAG_OPEN, FLAG_POOLED, FRAME_HEADER_LEN, HEADER_LEN,
};
use crate::reader::{read_header, verify_file, FileReport, FileStatus};

use super::hole::{cut_crash_hole, tail_at, Cut, Tail};

/// What the files before the closed one said: the end frame counters of
/// the file before it (absolute: they count the whole recording so far).
#[derive(Clone, Debug, Default)]
pub(super) struct Before {
    pub(super) records: u64,
    pub(super) bytes: u64,
    pub(super) dropped: u64,
    /// The sequence number after the last record of the file before.
    pub(super) next_seq: u64,
    /// A loop recording: the file before's RETIRED claim (what was
    /// retired before it began; none for the recording's first file).
    pub(super) claim: Option<RetiredPayload>,
    /// The file before's layout (format version 6), if it had one.
    pub(super) layout: Option<String>,
}

/// One file `rtrec recover` closed, or finished closing.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Closed {
    /// The file (the recording's last).
    pub path: PathBuf,
    /// Its recording's id.
    pub recording_id: u64,
    /// The end frame's numbers (durable sequence, what was cut).
    pub interrupted: Interrupted,
    /// Records of the whole recording, as the end frame counts them.
    pub records: u64,
    /// The crash hole cut first, if there was one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hole: Option<Cut>,
    /// Bytes of unused pre-allocation given back (truncated).
    pub given_back_bytes: u64,
    /// Bytes of unused tail kept, because another recording writes in the
    /// directory (a later `rtrec recover` gives them back).
    pub kept_tail_bytes: u64,
    /// True when an earlier recover had written the end frame and was
    /// interrupted: only its last steps were done now.
    pub resumed: bool,
}

/// The error of a file that is not as its report says.
fn changed() -> io::Error {
    io::Error::other("the file changed since it was verified; it was left as it is")
}

/// Closes the unfinished file `r` reports, the last of its recording,
/// after the files `before` counts: cuts its crash hole, appends the end
/// frame, finishes the header, and gives back its unused tail when
/// `give_back`.
///
/// # Errors
/// Reading or writing the file; a file that changed since `r` was made, or
/// of format version 3 (no durable mark), is refused and left alone.
pub(super) fn close_file(r: &FileReport, before: Before, give_back: bool) -> io::Result<Closed> {
    // The durable mark as the crash left it (a cut moves it past its loss
    // frame).
    let durable_seq = {
        let f = sys::open_rw_nofollow(&r.path)?;
        let header = read_header(&f)?.map_err(|_| changed())?;
        tail_at(&f, &header, r.valid_len)?
            .ok_or_else(changed)?
            .durable_seq
            .unwrap_or(before.next_seq)
    };
    let (hole, fresh);
    let r = match cut_crash_hole(r)? {
        Some(c) => {
            hole = Some(c);
            fresh = verify_file(&r.path)?;
            &fresh
        }
        None => {
            hole = None;
            r
        }
    };
    if r.status != FileStatus::Unfinished || r.crash_hole.is_some() || r.stored.is_some() {
        return Err(changed());
    }
    let f = sys::open_rw_nofollow(&r.path)?;
    let header = read_header(&f)?.map_err(|_| changed())?;
    let at = r.valid_len;
    let mark = header.durable_mark().ok_or_else(|| {
        io::Error::other(
            "an unfinished file of format version 3 has no durable mark; it was left as it is",
        )
    })?;
    if at < mark || Some(header.generation) != r.generation {
        return Err(changed());
    }
    let tail = tail_at(&f, &header, at)?.ok_or_else(changed)?;
    let size = sys::file_info(&f)?.size;
    let interrupted = Interrupted {
        durable_seq,
        // The sequence numbers the cut's loss frame covers (as `verify`'s
        // `cut_records`), else the intact records it cut.
        cut_records: hole
            .as_ref()
            .map_or(0, |c| c.loss.map_or(c.records_cut, |(_, n)| n)),
        cut_bytes: hole.as_ref().map_or(0, |c| c.bytes_cut) + r.torn_tail_bytes,
    };
    let end = EndPayload {
        interrupted: true,
        records_written: before.records + r.records,
        records_dropped: before.dropped + r.lost_records + r.unstored_drops,
        bytes_written: before.bytes + r.bytes,
        reason: interrupted.reason(),
        ..EndPayload::default()
    };
    let seq = r.next_seq.unwrap_or(before.next_seq);
    let header = lost_layout_forgotten(header, r, at, &before.layout);
    let (tail, at) = layout_if_missing(&f, &header, r, (tail, at), seq, &before.layout)?;
    let (tail, at) = claim_if_missing(&f, &header, r, tail, at, seq, before.claim)?;
    let end_at = append_end(&f, &header, &tail, at, seq, &end)?;
    let (given_back_bytes, kept_tail_bytes) = finish(&f, &header, end_at, size, give_back)?;
    Ok(Closed {
        path: r.path.clone(),
        recording_id: header.recording_id,
        interrupted,
        records: end.records_written,
        hole,
        given_back_bytes,
        kept_tail_bytes,
        resumed: false,
    })
}

/// The last file present of a recording says it continues in a file that
/// is not there: a power cut kept the end frame the writer wrote at a
/// switch and lost the next file's name. The flusher syncs a file's
/// directory before any durable point inside it, so the lost file held
/// nothing durable, and every record of this one is (the writer syncs a
/// file before its end frame). Its end frame is rewritten in place as
/// recover's: not continued, INTERRUPTED, the durable point at the file's
/// end, nothing cut; then the header, and the tail given back when
/// `give_back`, as [`close_file`].
///
/// # Errors
/// Reading or writing the file; a file that changed since `r` was made is
/// refused.
pub(super) fn close_continued(r: &FileReport, give_back: bool) -> io::Result<Closed> {
    let e = r
        .stored
        .as_ref()
        .filter(|e| e.continued && !e.interrupted)
        .ok_or_else(changed)?;
    let f = sys::open_rw_nofollow(&r.path)?;
    let header = read_header(&f)?.map_err(|_| changed())?;
    // The header may still say `OPEN`: the cut came before the writer's
    // finishing write too. The frames up to the end frame were verified
    // intact and chained, so that end frame is the writer's; `finish`
    // clears the flag after the new one.
    if Some(header.generation) != r.generation {
        return Err(changed());
    }
    let old_len = (FRAME_HEADER_LEN + e.encode().len()) as u64;
    let at = r
        .valid_len
        .checked_sub(old_len)
        .filter(|&a| a >= HEADER_LEN as u64)
        .ok_or_else(changed)?;
    let tail = tail_at(&f, &header, at)?.ok_or_else(changed)?;
    let seq = r.next_seq.unwrap_or(0);
    let interrupted = Interrupted {
        durable_seq: seq,
        cut_records: 0,
        cut_bytes: 0,
    };
    let end = EndPayload {
        interrupted: true,
        records_written: e.records_written,
        records_dropped: e.records_dropped,
        bytes_written: e.bytes_written,
        reason: interrupted.reason(),
        ..EndPayload::default()
    };
    let end_at = append_end(&f, &header, &tail, at, seq, &end)?;
    let size = sys::file_info(&f)?.size;
    let (given_back_bytes, kept_tail_bytes) = finish(&f, &header, end_at, size, give_back)?;
    Ok(Closed {
        path: r.path.clone(),
        recording_id: header.recording_id,
        interrupted,
        records: end.records_written,
        hole: None,
        given_back_bytes,
        kept_tail_bytes,
        resumed: false,
    })
}

/// A loop recording's file after the first opens with its RETIRED frame
/// (the reader requires it); the writer writes it just after the file was
/// named, so a kill or power cut between the two leaves a file with
/// nothing after its header. Recover then writes the claim the writer
/// was about to write: the file before's, unchanged, since files are
/// handed over for retiring only after the claim that names them is
/// written (`crate::writer`), so none was retired since. Returns the tail
/// and offset the end frame follows.
fn claim_if_missing(
    f: &File,
    header: &FileHeader,
    r: &FileReport,
    tail: Tail,
    at: u64,
    seq: u64,
    before: Option<RetiredPayload>,
) -> io::Result<(Tail, u64)> {
    // Nothing in the file but, with a layout, its layout frame.
    let missing = header.flags & FLAG_LOOP != 0
        && header.index > 0
        && r.retired_claim.is_none()
        && !r.opens_with_trigger
        && r.first_seq.is_none();
    if !missing {
        return Ok((tail, at));
    }
    append_frame(
        f,
        header,
        &tail,
        at,
        FrameKind::Retired,
        seq,
        &before.unwrap_or_default().encode(),
    )
}

/// A file whose header says it opens with the recording's layout
/// (format version 6) and that was interrupted before its layout frame
/// was written gets it first, from the file before (`layout`), so the
/// closed file reads as its recording's. The recording's first file has
/// no file before it ([`lost_layout_forgotten`]).
fn layout_if_missing(
    f: &File,
    header: &FileHeader,
    r: &FileReport,
    (tail, at): (Tail, u64),
    seq: u64,
    layout: &Option<String>,
) -> io::Result<(Tail, u64)> {
    match layout {
        Some(text) if header.has_layout() && r.layout.is_none() && at == HEADER_LEN as u64 => {
            append_frame(
                f,
                header,
                &tail,
                at,
                FrameKind::Layout,
                seq,
                text.as_bytes(),
            )
        }
        _ => Ok((tail, at)),
    }
}

/// The recording's first file, interrupted before its layout frame was on
/// storage (a power cut before its first sync: the frame is the file's
/// first, so none of its records was durable either), cannot get its
/// layout back: no file before it holds it. It holds nothing to decode,
/// so it is closed as a file without a layout (flag `LAYOUT` cleared; the
/// header's version follows the flags) rather than left claiming a layout
/// it does not hold, which `verify` calls corrupt after `recover`.
fn lost_layout_forgotten(
    header: FileHeader,
    r: &FileReport,
    at: u64,
    before: &Option<String>,
) -> FileHeader {
    if header.has_layout() && r.layout.is_none() && at == HEADER_LEN as u64 && before.is_none() {
        FileHeader {
            flags: header.flags & !FLAG_LAYOUT,
            ..header
        }
    } else {
        header
    }
}

/// Writes one frame of `kind` (next sequence `seq`, `payload`) at `at`,
/// linked to `tail`; returns the tail after it and where it ends.
fn append_frame(
    f: &File,
    header: &FileHeader,
    tail: &Tail,
    at: u64,
    kind: FrameKind,
    seq: u64,
    payload: &[u8],
) -> io::Result<(Tail, u64)> {
    let mut head = [0u8; FRAME_HEADER_LEN];
    let crc = encode_frame_header(
        &mut head,
        header.generation,
        kind,
        seq,
        tail.last_ts,
        tail.chain,
        payload,
    );
    let mut frame = head.to_vec();
    frame.extend_from_slice(payload);
    sys::pwrite_all(f, &frame, at)?;
    let end = at + frame.len() as u64;
    Ok((
        Tail {
            chain: crc,
            ..*tail
        },
        end,
    ))
}

/// Writes the end frame `end` (next sequence `seq`) at `at`, linked to
/// `tail`; returns where it ends.
fn append_end(
    f: &File,
    header: &FileHeader,
    tail: &Tail,
    at: u64,
    seq: u64,
    end: &EndPayload,
) -> io::Result<u64> {
    append_frame(f, header, tail, at, FrameKind::End, seq, &end.encode()).map(|(_, e)| e)
}

/// The last steps of a close, in the writer's order: `fdatasync`, the
/// header finished at `end` (when it still says `OPEN`), `fsync`; then the
/// tail after `end` of a `size`-byte file given back when `give_back`.
/// Returns the bytes given back and kept. (The writer's second sync is an
/// `fdatasync`, [`crate::file::close`]; recovery runs once per file, off
/// any recording, and keeps `fsync`.)
fn finish(
    f: &File,
    header: &FileHeader,
    end: u64,
    size: u64,
    give_back: bool,
) -> io::Result<(u64, u64)> {
    if header.is_open() || header.valid_len != end {
        sys::fdatasync(f)?;
        let done = FileHeader {
            flags: header.flags & !FLAG_OPEN,
            valid_len: end,
            ..header.clone()
        };
        sys::pwrite_all(f, &done.encode(), 0)?;
        sys::fsync(f)?;
    }
    let tail = size.saturating_sub(end);
    if tail == 0 {
        return Ok((0, 0));
    }
    if !give_back {
        return Ok((0, tail));
    }
    sys::ftruncate(f, end)?;
    sys::fsync(f)?;
    Ok((tail, 0))
}

/// A file before the last of its recording whose end frame the writer
/// wrote but whose header still says `OPEN`: a kill or power cut between
/// the two steps of the writer's close at a switch. Its header is
/// finished (flag `OPEN` cleared, `valid_len` at the end frame's end);
/// then, as the writer's close, the unused tail of a file not from the
/// pool is given back when `give_back` (a pool file keeps its size).
/// True when it was finished.
///
/// # Errors
/// Reading or writing the file; a file that changed since `r` was made is
/// refused.
pub(super) fn finish_header(r: &FileReport, give_back: bool) -> io::Result<bool> {
    if r.durable_mark.is_none() || r.stored.is_none() {
        return Ok(false);
    }
    let f = sys::open_rw_nofollow(&r.path)?;
    let header = read_header(&f)?.map_err(|_| changed())?;
    if !header.is_open() {
        return Ok(false);
    }
    if Some(header.generation) != r.generation || r.valid_len < HEADER_LEN as u64 {
        return Err(changed());
    }
    let size = sys::file_info(&f)?.size;
    let own = header.flags & FLAG_POOLED == 0;
    finish(&f, &header, r.valid_len, size, give_back && own)?;
    Ok(true)
}

/// Finishes what an interrupted recover left of file `r`: its end frame of
/// recover is there, but the header still says `OPEN`, or the file still
/// has its unused tail. `Ok(None)` when there is nothing to finish.
///
/// # Errors
/// Reading or writing the file; a file that changed since `r` was made is
/// refused.
pub(super) fn finish_file(r: &FileReport, give_back: bool) -> io::Result<Option<Closed>> {
    let Some(e) = r.stored.as_ref().filter(|e| e.interrupted) else {
        return Ok(None);
    };
    let Some(interrupted) = Interrupted::parse(&e.reason) else {
        return Ok(None);
    };
    let f = sys::open_rw_nofollow(&r.path)?;
    let header = read_header(&f)?.map_err(|_| changed())?;
    let size = sys::file_info(&f)?.size;
    let end = r.valid_len;
    if Some(header.generation) != r.generation || end < HEADER_LEN as u64 {
        return Err(changed());
    }
    let open = header.is_open();
    if !open && (size <= end || !give_back) {
        return Ok(None);
    }
    let (given_back_bytes, kept_tail_bytes) = finish(&f, &header, end, size, give_back)?;
    Ok(Some(Closed {
        path: r.path.clone(),
        recording_id: header.recording_id,
        interrupted,
        records: e.records_written,
        hole: None,
        given_back_bytes,
        kept_tail_bytes,
        resumed: open,
    }))
}
