//! Crash holes: after the durable mark of an unfinished file, the evidence
//! that bad bytes are a write a power cut left out rather than damage
//! ([`missing_write`]), and the count of the intact frames after such a
//! hole, which are not read as part of the recording ([`crash_hole`]).
//! `docs/durability.md` says why a flipped byte leaves no such evidence.

use std::io;

use crate::format::{FrameKind, LossPayload, PackedInfo, FRAME_HEADER_LEN, FRAME_MAGIC};

use super::report::{CrashHole, FileReport};
use super::source::{ByteSource, Window};
use super::walk::{read_frame, FrameWalker, Step, Stop};

/// The unit a device writes whole or not at all (512 bytes): a write a
/// crash left out leaves at least one whole sector of what was there
/// before (see [`FileReport::crash_hole`]).
pub const SECTOR: u64 = 512;

/// What shows that bytes after the durable mark are a write a crash left
/// out, not damage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Hole {
    /// Zeros where frames should be, from this offset to a sector's end.
    Zeros(u64),
    /// A frame header of another generation at this offset (an earlier
    /// life of a recycled file).
    EarlierLife(u64),
}

/// Evidence in `from..to` (bytes where frames of ours should be) that a
/// write is missing there rather than damaged: a whole
/// [`SECTOR`]-aligned sector of zeros, the zeros from `from` to its
/// sector's end (a frame never written where it starts), or a frame of
/// another generation, valid on its own (an earlier life of a recycled
/// file showing through). In a pool file (`pooled`) whose range shows
/// none of these, such a frame anywhere after it in the file is the
/// evidence. A flipped byte leaves none of these, except in data that
/// were all zeros (`docs/durability.md`).
///
/// Design choice (issue 44, a recycled file's old frames): the device
/// writes whole sectors or none, so after the durable mark a power cut
/// can leave any mix of this life's sectors and the earlier life's under
/// them. A frame of ours whose payload lost a sector then fails its CRC
/// over bytes of the earlier life, and the earlier frames in the same
/// range are torn the same way, so none of them is valid on its own:
/// the crash-state study's `loop-direct` cell read 2 of 30 such states
/// as damage. Beyond the range, where this life wrote nothing, the
/// earlier life's frames stand whole, as zeros stand in a fresh file's
/// unwritten space: one of them, valid on its own with its own generation
/// and CRC, proves the file had an earlier life, and then bad bytes after
/// the durable mark are its sectors showing through. The frame must be
/// whole: a header alone is not enough, since a flipped bit in our own
/// frame's generation field forges one (`tests/reader_props.rs` found
/// that). Only after the durable mark: below it, damage stays damage.
/// No format step is needed for it: a salt in each frame's CRC would
/// still fail on a frame some of whose sectors are old, and telling
/// every sector's life apart would take a tag in each.
pub(super) fn missing_write<S: ?Sized + ByteSource>(
    win: &mut Window<'_, S>,
    from: u64,
    to: u64,
    generation: u64,
    pooled: bool,
) -> io::Result<Option<Hole>> {
    let s = SECTOR;
    // The zeros from `from` to its sector's end, then whole sectors.
    let first_end = (from / s + 1) * s;
    let mut sector = (from, first_end);
    while sector.1 <= to {
        let (a, b) = sector;
        let bytes = win.get(a, (b - a) as usize)?;
        if bytes.len() as u64 == b - a && bytes.iter().all(|&x| x == 0) {
            return Ok(Some(Hole::Zeros(a)));
        }
        sector = (b, b + s);
    }
    if let Some(at) = earlier_life(win, from, to, generation)? {
        return Ok(Some(Hole::EarlierLife(at)));
    }
    if pooled {
        let size = win.size();
        if let Some(at) = earlier_life(win, to, size, generation)? {
            return Ok(Some(Hole::EarlierLife(at)));
        }
    }
    Ok(None)
}

/// The offset of the first frame header of another generation than
/// `generation` in `from..to` (one that decodes with its own generation:
/// an earlier life of a recycled file), if any.
fn earlier_life<S: ?Sized + ByteSource>(
    win: &mut Window<'_, S>,
    from: u64,
    to: u64,
    generation: u64,
) -> io::Result<Option<u64>> {
    let mut pos = from;
    while pos + FRAME_HEADER_LEN as u64 <= to {
        let b = win.peek(pos, FRAME_HEADER_LEN)?;
        let b = &b[..b.len().min((to - pos) as usize)];
        if b.len() < FRAME_HEADER_LEN {
            break;
        }
        let Some(i) = b.windows(FRAME_MAGIC.len()).position(|w| w == FRAME_MAGIC) else {
            pos += (b.len() + 1).saturating_sub(FRAME_MAGIC.len()).max(1) as u64;
            continue;
        };
        let at = pos + i as u64;
        if at + FRAME_HEADER_LEN as u64 > to {
            break;
        }
        let gen_bytes = win.get(at + 4, 4)?;
        if let Ok(g) = <[u8; 4]>::try_from(gen_bytes) {
            let g = u32::from_le_bytes(g);
            let size = win.size();
            if g != generation as u32 && read_frame(win, at, size, u64::from(g))?.is_ok() {
                return Ok(Some(at));
            }
        }
        pos = at + 1;
    }
    Ok(None)
}

/// The rest of an unfinished file after a crash hole found at `start`
/// (frames of ours resume at `end`, or the walk ended there), with the
/// evidence `ev`: the frames after it are counted, not read as part of the
/// recording — they lie beyond the point a crash made unreliable. The
/// hole goes into `r` with a finding.
pub(super) fn crash_hole<S: ?Sized + ByteSource>(
    r: &mut FileReport,
    walker: &mut FrameWalker<'_, S>,
    start: u64,
    end: u64,
    ev: Hole,
) -> io::Result<()> {
    let mut after = After {
        records: 0,
        next_seq: None,
        reach: end,
    };
    while let Some(step) = walker.next_step()? {
        after.step(&step);
    }
    let hole = CrashHole {
        start,
        len: end - start,
        end: after.reach,
        records_after: after.records,
        next_seq_after: after.next_seq,
    };
    let what = match ev {
        Hole::Zeros(at) => format!("zeros at offset {at}"),
        Hole::EarlierLife(at) => {
            format!("a frame header of an earlier life of the file at offset {at}")
        }
    };
    r.note(format!(
        "crash hole of {} bytes at offset {start}, after the durable mark ({what}: a write a power cut left out); {} intact record(s) after it are not counted; `rtrec recover` cuts them",
        hole.len, hole.records_after
    ));
    r.crash_hole = Some(hole);
    Ok(())
}

/// What the walk finds after a crash hole: counted, not read.
struct After {
    /// Intact data records.
    records: u64,
    /// The sequence number after the last record (or stored loss) found.
    next_seq: Option<u64>,
    /// Just past the last byte of ours (frames, damage or a torn tail).
    reach: u64,
}

impl After {
    /// Counts one step of the walk after the hole.
    fn step(&mut self, step: &Step) {
        match step {
            Step::Frame(f) => {
                self.reach = self.reach.max(f.end());
                let h = &f.header;
                match h.kind {
                    FrameKind::Data => {
                        self.records += 1;
                        self.next(h.seq.saturating_add(1));
                    }
                    FrameKind::Packed => {
                        if let Some((info, _)) = PackedInfo::decode(&f.payload) {
                            self.records += info.count as u64;
                            self.next(h.seq.saturating_add(info.count as u64));
                        }
                    }
                    FrameKind::Loss => {
                        if let Some(l) = LossPayload::decode(&f.payload) {
                            self.next(l.first_seq.saturating_add(l.count));
                        }
                    }
                    FrameKind::Trigger
                    | FrameKind::End
                    | FrameKind::Retired
                    | FrameKind::Layout => {}
                }
            }
            Step::Damage { end, .. } => self.reach = self.reach.max(*end),
            Step::Stop(at, Stop::Torn(_, tail)) => self.reach = self.reach.max(at + tail),
            Step::Stop(at, _) => self.reach = self.reach.max(*at),
        }
    }

    /// A record or loss after the hole ends before sequence `n`.
    fn next(&mut self, n: u64) {
        self.next_seq = Some(self.next_seq.map_or(n, |s| s.max(n)));
    }
}
