//! The frame walk: the frames of one framed file in order, each checked on
//! its own (magic, generation, kind, length, CRC) and against its link to
//! the frame before it (the chain), read through one fixed window in
//! constant memory, resynchronising at the next valid frame after damage
//! ([`FrameWalker`]); and the same walk over a file held in memory
//! ([`walk_frames`]). What the frames *mean* (sequence, counters) is
//! [`super::file`]'s to judge.
//!
//! Design choice: payloads are checksummed chunk by chunk through the
//! window; only loss, end and trigger payloads, at most
//! [`MAX_MARKER_PAYLOAD`](crate::format::MAX_MARKER_PAYLOAD) bytes, and
//! packed payloads, at most
//! [`MAX_PACKED_PAYLOAD`](crate::format::MAX_PACKED_PAYLOAD), are held.

use std::io;

use crate::format::{
    chain_seed, decode_frame_header, frame_crc_start, DecodeError, FileHeader, FrameHeader,
    FrameKind, PackedInfo, PackedRecords, FRAME_HEADER_LEN, FRAME_MAGIC, HEADER_LEN,
};

use super::source::{ByteSource, Window, READ_BUF};

/// A frame that is valid on its own.
#[derive(Clone, Debug)]
pub struct Frame {
    /// Where it starts.
    pub off: u64,
    /// Its header.
    pub header: FrameHeader,
    /// Its payload for loss, end, trigger and packed frames; empty for
    /// data (read it with [`FrameWalker::copy_payload`]).
    pub payload: Vec<u8>,
    /// False when it does not link to the frame before it (the chain is
    /// broken: reordered, duplicated, deleted around or spliced in), or
    /// when it is where reading resumed after damage.
    pub linked: bool,
}

impl Frame {
    /// The offset just past it.
    pub fn end(&self) -> u64 {
        self.off + FRAME_HEADER_LEN as u64 + self.header.len as u64
    }
}

/// Why a walk stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// Just after the end frame.
    EndFrame,
    /// At the end of the file (or of its valid length).
    Eof,
    /// At zeros (unwritten space) or a frame of an earlier generation, with
    /// no valid frame of ours after it.
    Unwritten,
    /// At bytes that are not a valid frame, with no valid frame of ours
    /// after them: a torn tail of this many non-zero bytes.
    Torn(DecodeError, u64),
}

/// One step of a walk.
#[derive(Clone, Debug)]
pub enum Step {
    /// A frame valid on its own, in file order.
    Frame(Frame),
    /// Bytes `start..end` are not valid frames, and a valid frame of ours
    /// starts at `end`: the walk resumes there.
    Damage {
        /// First damaged byte.
        start: u64,
        /// Where reading resumed.
        end: u64,
        /// What was wrong at `start`.
        error: DecodeError,
    },
    /// The walk ended at this offset.
    Stop(u64, Stop),
}

/// Walks the frames of a framed file in order, in constant memory,
/// resynchronising after damage. Up to `valid_len` when the header has one.
pub struct FrameWalker<'s, S: ?Sized> {
    win: Window<'s, S>,
    generation: u64,
    limit: u64,
    off: u64,
    chain: u32,
    resumed: bool,
    done: bool,
}

/// Reads the header of a framed file.
pub fn read_header<S: ?Sized + ByteSource>(src: &S) -> io::Result<Result<FileHeader, DecodeError>> {
    let mut b = [0u8; HEADER_LEN];
    let mut n = 0;
    while n < HEADER_LEN {
        match src.read_at(n as u64, &mut b[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(FileHeader::decode(&b[..n]))
}

impl<'s, S: ?Sized + ByteSource> FrameWalker<'s, S> {
    /// A walk over `src`, whose header is `header`.
    pub fn new(src: &'s S, header: &FileHeader) -> io::Result<Self> {
        let win = Window::new(src)?;
        let limit = header
            .finished_len()
            .map_or(win.size(), |v| v.min(win.size()));
        Ok(FrameWalker {
            win,
            generation: header.generation,
            limit,
            off: HEADER_LEN as u64,
            chain: chain_seed(header),
            resumed: false,
            done: false,
        })
    }

    /// The next step, `None` after [`Step::Stop`].
    pub fn next_step(&mut self) -> io::Result<Option<Step>> {
        if self.done {
            return Ok(None);
        }
        if self.off >= self.limit {
            self.done = true;
            return Ok(Some(Step::Stop(self.off, Stop::Eof)));
        }
        match read_frame(&mut self.win, self.off, self.limit, self.generation)? {
            Ok(mut f) => {
                f.linked = !self.resumed && f.header.prev == self.chain;
                self.resumed = false;
                self.chain = f.header.crc;
                self.off = f.end();
                if f.header.kind == FrameKind::End {
                    // Nothing after the end frame is read; the caller checks
                    // that it ends where the header says.
                    self.limit = self.off;
                    self.done = true;
                }
                Ok(Some(Step::Frame(f)))
            }
            Err(error) => {
                let start = self.off;
                match next_valid_frame(&mut self.win, start + 1, self.limit, self.generation)? {
                    Some(end) => {
                        self.off = end;
                        self.resumed = true;
                        Ok(Some(Step::Damage { start, end, error }))
                    }
                    None => {
                        self.done = true;
                        let stop = match error {
                            DecodeError::Zero | DecodeError::StaleGeneration => Stop::Unwritten,
                            e => Stop::Torn(e, self.win.nonzero_len(start, self.limit)?),
                        };
                        Ok(Some(Step::Stop(start, stop)))
                    }
                }
            }
        }
    }

    /// Where the walk ends at the latest (the header's valid length, or
    /// the file's size).
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// The walk's window, for a look at bytes the walk passed over (the
    /// evidence of a crash hole, [`super::hole`]).
    pub(super) fn window(&mut self) -> &mut Window<'s, S> {
        &mut self.win
    }

    /// Writes the bytes `off..off+len` of the source to `out`, through the
    /// walker's window (for copying a frame [`Step::Frame`] returned).
    pub fn copy_range(&mut self, off: u64, len: u64, out: &mut dyn io::Write) -> io::Result<()> {
        let mut pos = off;
        while pos < off + len {
            let b = self
                .win
                .get(pos, (off + len - pos).min(READ_BUF as u64) as usize)?;
            if b.is_empty() {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the file became shorter while it was read",
                ));
            }
            out.write_all(b)?;
            pos += b.len() as u64;
        }
        Ok(())
    }

    /// Writes the payload of data frame `f` to `out`.
    pub fn copy_payload(&mut self, f: &Frame, out: &mut dyn io::Write) -> io::Result<()> {
        self.copy_range(f.off + FRAME_HEADER_LEN as u64, f.header.len as u64, out)
    }

    /// Writes the records' bytes of frame `f` to `out`, back to back, each
    /// followed by `end` (e.g. `b"\n"` for a recording made from lines, so
    /// the line ends come back; empty otherwise): the payload of a data
    /// frame, each record of a well-formed packed frame, nothing for other
    /// frames. Returns the records and bytes written (terminators
    /// included).
    pub fn copy_records(
        &mut self,
        f: &Frame,
        end: &[u8],
        out: &mut dyn io::Write,
    ) -> io::Result<(u64, u64)> {
        let term = end.len() as u64;
        match f.header.kind {
            FrameKind::Data => {
                self.copy_payload(f, out)?;
                out.write_all(end)?;
                Ok((1, f.header.len as u64 + term))
            }
            FrameKind::Packed if PackedInfo::decode(&f.payload).is_some() => {
                let (mut n, mut bytes) = (0, 0);
                for r in PackedRecords::new(&f.payload) {
                    out.write_all(r)?;
                    out.write_all(end)?;
                    n += 1;
                    bytes += r.len() as u64 + term;
                }
                Ok((n, bytes))
            }
            _ => Ok((0, 0)),
        }
    }
}

/// How a [`walk_frames`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WalkEnd {
    /// At the end frame.
    EndFrame,
    /// At the end of the bytes, or at zeros / another generation's frames.
    Clean,
    /// At a frame that is not valid, with its error.
    Bad(DecodeError),
    /// At a frame valid on its own that does not link to the one before.
    ChainBroken,
}

/// Walks the chained frames of a framed file held in memory (header
/// included), calling `f` with each frame's offset, header and payload, in
/// order, up to the first frame that is not valid or not chained. Returns
/// the offset where it stopped and why. Stops at `header.valid_len` when it
/// is set. For files on disk, [`FrameWalker`] does the same in constant
/// memory and resynchronises after damage.
pub fn walk_frames(
    bytes: &[u8],
    header: &FileHeader,
    mut f: impl FnMut(u64, &FrameHeader, &[u8]),
) -> (u64, WalkEnd) {
    let limit = header.finished_len().map_or(bytes.len(), |v| {
        usize::try_from(v).unwrap_or(usize::MAX).min(bytes.len())
    });
    let (mut off, mut chain) = (HEADER_LEN, chain_seed(header));
    while off < limit {
        match crate::format::decode_frame(&bytes[off..limit], header.generation) {
            Ok((h, _)) if h.prev != chain => return (off as u64, WalkEnd::ChainBroken),
            Ok((h, payload)) => {
                f(off as u64, &h, payload);
                off += FRAME_HEADER_LEN + h.len as usize;
                chain = h.crc;
                if h.kind == FrameKind::End {
                    return (off as u64, WalkEnd::EndFrame);
                }
            }
            Err(DecodeError::Zero | DecodeError::StaleGeneration) => {
                return (off as u64, WalkEnd::Clean)
            }
            Err(e) => return (off as u64, WalkEnd::Bad(e)),
        }
    }
    (off as u64, WalkEnd::Clean)
}

/// Checks the frame at `off` on its own (not its chain link); it must
/// end by `limit`. Holds the payload only for loss, end and trigger
/// frames.
pub(super) fn read_frame<S: ?Sized + ByteSource>(
    win: &mut Window<'_, S>,
    off: u64,
    limit: u64,
    generation: u64,
) -> io::Result<Result<Frame, DecodeError>> {
    let avail = limit.saturating_sub(off);
    if avail < FRAME_HEADER_LEN as u64 {
        let b = win.get(off, avail as usize)?;
        let zero = b.iter().all(|&x| x == 0);
        return Ok(Err(if zero {
            DecodeError::Zero
        } else {
            DecodeError::Short
        }));
    }
    let mut h = [0u8; FRAME_HEADER_LEN];
    let b = win.get(off, FRAME_HEADER_LEN)?;
    if b.len() < FRAME_HEADER_LEN {
        return Ok(Err(DecodeError::Short));
    }
    h.copy_from_slice(b);
    let header = match decode_frame_header(&h, generation) {
        Ok(fh) => fh,
        Err(e) => return Ok(Err(e)),
    };
    let end = off + FRAME_HEADER_LEN as u64 + header.len as u64;
    if end > limit {
        return Ok(Err(DecodeError::Short));
    }
    let mut crc = frame_crc_start(&h);
    let mut payload = Vec::new();
    let mut pos = off + FRAME_HEADER_LEN as u64;
    while pos < end {
        let chunk = win.get(pos, (end - pos).min(READ_BUF as u64) as usize)?;
        if chunk.is_empty() {
            return Ok(Err(DecodeError::Short));
        }
        crc = crate::crc::crc32c_append(crc, chunk);
        if header.kind != FrameKind::Data {
            payload.extend_from_slice(chunk);
        }
        pos += chunk.len() as u64;
    }
    if crc != header.crc {
        return Ok(Err(DecodeError::BadCrc));
    }
    Ok(Ok(Frame {
        off,
        header,
        payload,
        linked: true,
    }))
}

/// Offset of the first frame of `generation` at or after `from` that is
/// valid on its own and ends by `limit`.
fn next_valid_frame<S: ?Sized + ByteSource>(
    win: &mut Window<'_, S>,
    from: u64,
    limit: u64,
    generation: u64,
) -> io::Result<Option<u64>> {
    let mut pos = from;
    while pos + FRAME_HEADER_LEN as u64 <= limit {
        let b = win.peek(pos, FRAME_HEADER_LEN)?;
        let b = &b[..b.len().min((limit - pos) as usize)];
        if b.len() < FRAME_MAGIC.len() {
            break;
        }
        match b.windows(FRAME_MAGIC.len()).position(|w| w == FRAME_MAGIC) {
            Some(i) => {
                let at = pos + i as u64;
                if read_frame(win, at, limit, generation)?.is_ok() {
                    return Ok(Some(at));
                }
                pos = at + 1;
            }
            None => pos += (b.len() + 1 - FRAME_MAGIC.len()) as u64,
        }
    }
    Ok(None)
}
