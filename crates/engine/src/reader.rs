//! Reading recordings back: a streaming walk over the frames of a file in
//! constant memory, and `verify`'s judgement of each file and of a whole
//! recording. Nothing read is trusted: every rule below is checked.
//!
//! Rules (also in `docs/format.md`, "How a reader decides"):
//! - Every frame must be valid on its own (magic, generation, kind, length,
//!   CRC) **and** link to the frame before it (`prev`, the chain): a frame
//!   moved, duplicated, deleted around or spliced in breaks the chain.
//! - A finished file (header `valid_len > 0`) holds valid, chained frames up
//!   to exactly `valid_len`, the last one the end frame.
//! - An unfinished file (crash or kill) ends at zeros (unwritten space) or a
//!   frame of an earlier generation (a recycled file), or at a torn tail:
//!   bad bytes that no valid frame of ours follows.
//! - With a durable mark (format version 4, header flag `OPEN`: `valid_len`
//!   is how far a completed sync made the file durable) every byte from the
//!   header to the mark must be chained frames: damage there is corrupt.
//!   After the mark, the first bad region ends the data; when it shows a
//!   missing write (zeros from where a frame should start to a sector's
//!   end, a whole zero sector, or a frame of another generation) it is a
//!   **crash hole**: the file is unfinished, and the intact frames after
//!   the hole are counted, not read ([`CrashHole`]). Without such evidence
//!   (a flipped byte) it is damage, as below.
//! - After bad bytes that a valid frame of ours *does* follow, the reader
//!   resynchronises at that frame (its own header and CRC check out), reports
//!   the damaged byte range, and counts the records after it as salvageable.
//! - A packed frame holds exactly the records its count says, each behind a
//!   canonical length that stays inside the frame; its records take the
//!   sequence numbers from the frame's on.
//! - Sequence numbers rise by exactly one per data record; a loss frame
//!   accounts for a gap exactly; file 0 starts at sequence 0 (a flight
//!   recorder event's file 0 opens with its trigger frame instead);
//!   data timestamps never go back; the end frame's sequence is the next one
//!   and its counters match the records read.
//! - Files of one recording share a random recording id (never grouped by
//!   name or across directories), have indexes 0, 1, ... without holes or
//!   doubles, and continue each other's sequence numbers and counters.
//!
//! Design choices: the walk reads through one fixed window ([`READ_BUF`])
//! with positioned reads, so memory does not grow with the file or a frame
//! (payloads are checksummed chunk by chunk; only loss, end and trigger
//! payloads, at most [`MAX_MARKER_PAYLOAD`](crate::format::MAX_MARKER_PAYLOAD)
//! bytes, and packed payloads, at most
//! [`MAX_PACKED_PAYLOAD`](crate::format::MAX_PACKED_PAYLOAD), are held);
//! lists in a
//! report (gaps, damaged ranges, notes) stop growing at [`MAX_LISTED`]
//! entries while their totals keep counting.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::file::{FRAMED_EXT, RAW_EXT};
use crate::format::{
    chain_seed, decode_frame_header, frame_crc_start, DecodeError, EndPayload, FileHeader,
    FrameHeader, FrameKind, LossPayload, LossReason, PackedInfo, PackedRecords, RawFileSums,
    TriggerPayload, FLAG_POOLED, FLAG_SLOT, FORMAT_VERSION, FRAME_HEADER_LEN, FRAME_MAGIC,
    HEADER_LEN, OLDEST_READ_VERSION, RAW_CHUNK,
};

/// Size of the reader's one buffer (1 MiB): the memory a walk uses,
/// whatever the size of the file.
pub const READ_BUF: usize = 1 << 20;
/// Entries kept in each list of a [`FileReport`]; totals count on.
pub const MAX_LISTED: usize = 64;
/// The unit a device writes whole or not at all (512 bytes): a write a
/// crash left out leaves at least one whole sector of what was there
/// before (see [`FileReport::crash_hole`]).
pub const SECTOR: u64 = 512;

/// What shows that bytes after the durable mark are a write a crash left
/// out, not damage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Hole {
    /// Zeros where frames should be, from this offset to a sector's end.
    Zeros(u64),
    /// A frame of another generation at this offset (an earlier life of
    /// a recycled file).
    EarlierLife(u64),
}

/// Bytes a reader can read at any offset: a file (positioned reads) or a
/// slice in memory.
pub trait ByteSource {
    /// Total length in bytes.
    fn size(&self) -> io::Result<u64>;
    /// Reads up to `buf.len()` bytes at `off`; 0 at the end.
    fn read_at(&self, off: u64, buf: &mut [u8]) -> io::Result<usize>;
}

impl ByteSource for [u8] {
    fn size(&self) -> io::Result<u64> {
        Ok(self.len() as u64)
    }
    fn read_at(&self, off: u64, buf: &mut [u8]) -> io::Result<usize> {
        let start = usize::try_from(off).unwrap_or(usize::MAX).min(self.len());
        let n = buf.len().min(self.len() - start);
        buf[..n].copy_from_slice(&self[start..start + n]);
        Ok(n)
    }
}

impl ByteSource for File {
    fn size(&self) -> io::Result<u64> {
        Ok(self.metadata()?.len())
    }
    fn read_at(&self, off: u64, buf: &mut [u8]) -> io::Result<usize> {
        std::os::unix::fs::FileExt::read_at(self, buf, off)
    }
}

/// Opens `path` for reading only if it is a regular file: a FIFO would
/// block forever and a device or socket is no recording, so each gets one
/// sentence. Opened with `O_NONBLOCK` and checked again after opening, so a
/// file swapped for a FIFO in between cannot hang the reader either.
pub fn open_regular(path: &Path) -> io::Result<File> {
    fn check(m: &std::fs::Metadata) -> io::Result<()> {
        use std::os::unix::fs::FileTypeExt;
        let t = m.file_type();
        let what = if t.is_file() {
            return Ok(());
        } else if t.is_dir() {
            "a directory"
        } else if t.is_fifo() {
            "a FIFO (named pipe)"
        } else if t.is_socket() {
            "a socket"
        } else if t.is_block_device() || t.is_char_device() {
            "a device"
        } else {
            "not a regular file"
        };
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("it is {what}; rtrec reads recordings from regular files only"),
        ))
    }
    check(&std::fs::metadata(path)?)?;
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    check(&f.metadata()?)?;
    Ok(f)
}

/// A fixed window over a [`ByteSource`].
struct Window<'s, S: ?Sized> {
    src: &'s S,
    size: u64,
    buf: Vec<u8>,
    at: u64,
    len: usize,
}

impl<'s, S: ?Sized + ByteSource> Window<'s, S> {
    fn new(src: &'s S) -> io::Result<Self> {
        Ok(Window {
            src,
            size: src.size()?,
            buf: vec![0; READ_BUF],
            at: 0,
            len: 0,
        })
    }

    /// The bytes from `off` on that the window holds, refilled from `off`
    /// when it holds fewer than `min` (≤ [`READ_BUF`]); fewer only at the
    /// end of the source.
    fn peek(&mut self, off: u64, min: usize) -> io::Result<&[u8]> {
        let min = min.min(READ_BUF) as u64;
        let covered = off >= self.at && off <= self.at + self.len as u64;
        let have = if covered {
            self.at + self.len as u64 - off
        } else {
            0
        };
        if !covered || (have < min && off + have < self.size) {
            self.at = off;
            self.len = 0;
            let want = self.size.saturating_sub(off).min(READ_BUF as u64) as usize;
            while self.len < want {
                match self
                    .src
                    .read_at(off + self.len as u64, &mut self.buf[self.len..want])
                {
                    Ok(0) => break,
                    Ok(n) => self.len += n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
        }
        let from = (off - self.at) as usize;
        Ok(&self.buf[from..self.len])
    }

    /// Exactly `n` bytes at `off`, or fewer at the end of the source.
    fn get(&mut self, off: u64, n: usize) -> io::Result<&[u8]> {
        let b = self.peek(off, n)?;
        Ok(&b[..n.min(b.len())])
    }

    /// Checks the frame at `off` on its own (not its chain link); it must
    /// end by `limit`. Holds the payload only for loss, end and trigger
    /// frames.
    fn frame(
        &mut self,
        off: u64,
        limit: u64,
        generation: u64,
    ) -> io::Result<Result<Frame, DecodeError>> {
        let avail = limit.saturating_sub(off);
        if avail < FRAME_HEADER_LEN as u64 {
            let b = self.get(off, avail as usize)?;
            let zero = b.iter().all(|&x| x == 0);
            return Ok(Err(if zero {
                DecodeError::Zero
            } else {
                DecodeError::Short
            }));
        }
        let mut h = [0u8; FRAME_HEADER_LEN];
        let b = self.get(off, FRAME_HEADER_LEN)?;
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
            let chunk = self.get(pos, (end - pos).min(READ_BUF as u64) as usize)?;
            if chunk.is_empty() {
                return Ok(Err(DecodeError::Short));
            }
            crc = crc32c::crc32c_append(crc, chunk);
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
    fn next_valid_frame(
        &mut self,
        from: u64,
        limit: u64,
        generation: u64,
    ) -> io::Result<Option<u64>> {
        let mut pos = from;
        while pos + FRAME_HEADER_LEN as u64 <= limit {
            let b = self.peek(pos, FRAME_HEADER_LEN)?;
            let b = &b[..b.len().min((limit - pos) as usize)];
            if b.len() < FRAME_MAGIC.len() {
                break;
            }
            match b.windows(FRAME_MAGIC.len()).position(|w| w == FRAME_MAGIC) {
                Some(i) => {
                    let at = pos + i as u64;
                    if self.frame(at, limit, generation)?.is_ok() {
                        return Ok(Some(at));
                    }
                    pos = at + 1;
                }
                None => pos += (b.len() + 1 - FRAME_MAGIC.len()) as u64,
            }
        }
        Ok(None)
    }

    /// Evidence in `from..to` (bytes where frames of ours should be) that a
    /// write is missing there rather than damaged: a whole
    /// [`SECTOR`]-aligned sector of zeros, the zeros from `from` to its
    /// sector's end (a frame never written where it starts), or a frame of
    /// another generation, valid on its own (an earlier life of a recycled
    /// file showing through). A flipped byte leaves none of these, except
    /// in data that were all zeros (`docs/durability.md`).
    fn missing_write(&mut self, from: u64, to: u64, generation: u64) -> io::Result<Option<Hole>> {
        let s = SECTOR;
        // The zeros from `from` to its sector's end, then whole sectors.
        let first_end = (from / s + 1) * s;
        let mut sector = (from, first_end);
        while sector.1 <= to {
            let (a, b) = sector;
            let bytes = self.get(a, (b - a) as usize)?;
            if bytes.len() as u64 == b - a && bytes.iter().all(|&x| x == 0) {
                return Ok(Some(Hole::Zeros(a)));
            }
            sector = (b, b + s);
        }
        // A frame of an earlier life: its own generation in its header.
        let mut pos = from;
        while pos + FRAME_HEADER_LEN as u64 <= to {
            let b = self.peek(pos, FRAME_HEADER_LEN)?;
            let b = &b[..b.len().min((to - pos) as usize)];
            let Some(i) = b.windows(FRAME_MAGIC.len()).position(|w| w == FRAME_MAGIC) else {
                pos += (b.len() + 1).saturating_sub(FRAME_MAGIC.len()).max(1) as u64;
                continue;
            };
            let at = pos + i as u64;
            let gen_bytes = self.get(at + 4, 4)?;
            if gen_bytes.len() == 4 {
                let g = u32::from_le_bytes(gen_bytes.try_into().unwrap_or([0; 4]));
                if g != generation as u32 && self.frame(at, self.size, g as u64)?.is_ok() {
                    return Ok(Some(Hole::EarlierLife(at)));
                }
            }
            pos = at + 1;
        }
        Ok(None)
    }

    /// Bytes up to the last non-zero one in `from..limit`.
    fn nonzero_len(&mut self, from: u64, limit: u64) -> io::Result<u64> {
        let (mut pos, mut last) = (from, from);
        while pos < limit {
            let b = self.peek(pos, READ_BUF)?;
            let b = &b[..b.len().min((limit - pos) as usize)];
            if b.is_empty() {
                break;
            }
            if let Some(p) = b.iter().rposition(|&x| x != 0) {
                last = pos + p as u64 + 1;
            }
            pos += b.len() as u64;
        }
        Ok(last - from)
    }
}

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
        let limit = header.finished_len().map_or(win.size, |v| v.min(win.size));
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
        match self.win.frame(self.off, self.limit, self.generation)? {
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
                match self
                    .win
                    .next_valid_frame(start + 1, self.limit, self.generation)?
                {
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

/// The verdict on one file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FileStatus {
    /// Ended as asked, every frame valid and chained, no unexplained gap,
    /// counters matching.
    Complete,
    /// Ended by the recorder as aborted (the end frame gives the reason).
    Aborted,
    /// No end frame: the recording was interrupted; the valid prefix is
    /// intact (a torn tail may follow it).
    Unfinished,
    /// Damaged, misplaced or missing data.
    Corrupt,
    /// Not an rtrec file (or one of another format version).
    NotRtrec,
    /// A raw recording whose bytes match its sidecar's checksums.
    Raw,
    /// A raw recording without a sidecar (or one without checksums):
    /// nothing to check it against.
    Unverifiable,
}

/// Records missing without a loss frame that explains them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Gap {
    /// First missing sequence number.
    pub first_seq: u64,
    /// How many are missing.
    pub count: u64,
}

/// Bytes of a file that are damaged.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ByteRange {
    /// First damaged byte.
    pub start: u64,
    /// Just past the last one.
    pub end: u64,
    /// What is wrong there.
    pub what: String,
}

/// Where a power cut left out writes after the durable mark of an
/// unfinished file: frames stop at a hole (zeros, or an earlier life's
/// bytes, where frames should be) and may go on after it. The data end at
/// `start`; the intact frames after the hole are counted here, not as the
/// file's records. `rtrec recover` cuts them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct CrashHole {
    /// Where the hole starts: the end of the last intact frame before it
    /// (at or after the durable mark).
    pub start: u64,
    /// Bytes from `start` to the next frame of ours (or to where the walk
    /// ended).
    pub len: u64,
    /// Just past the last byte of ours after the hole (frames, damage or a
    /// torn tail): what `recover` clears.
    pub end: u64,
    /// Intact data records in frames after the hole, not counted.
    pub records_after: u64,
    /// The sequence number after the last record (or stored loss) found
    /// after the hole, when any was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_seq_after: Option<u64>,
}

/// What `verify` found in one file.
#[derive(Clone, Debug, Serialize)]
pub struct FileReport {
    /// The file.
    pub path: PathBuf,
    /// The verdict.
    pub status: FileStatus,
    /// The header's generation, when it could be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generation: Option<u64>,
    /// The recording this file belongs to (header), when it could be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recording_id: Option<u64>,
    /// Position in its recording.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index: Option<u32>,
    /// When the file was created: `CLOCK_REALTIME` ns since the epoch
    /// (header).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_wall_ns: Option<u64>,
    /// Wall-clock time of the first record found, ns since the epoch (by
    /// the header's mapping of the monotonic clock).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_record_wall_ns: Option<u64>,
    /// Wall-clock time of the last record found (of a packed frame: its
    /// last record's), ns since the epoch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_record_wall_ns: Option<u64>,
    /// Frames read that carry records: one per record, or (packed framing)
    /// one per batch.
    pub record_frames: u64,
    /// Data records found intact (before and after any damage).
    pub records: u64,
    /// Of these, the records found after damage: they can be saved
    /// (`rtrec export --salvage`), but the recording around them is broken.
    pub salvageable_records: u64,
    /// Payload bytes of the intact records.
    pub bytes: u64,
    /// Sequence number of the file's first frame.
    pub first_seq: Option<u64>,
    /// The sequence number after the last one accounted for.
    pub next_seq: Option<u64>,
    /// Dropped records stored as loss frames.
    pub lost_records: u64,
    /// Records `rtrec recover` cut after a crash hole (a loss frame of
    /// reason `crash-hole`): the end of what the crash left readable, not
    /// records dropped while recording (not in `lost_records`).
    pub cut_records: u64,
    /// Records missing without a loss frame (in this file, or in missing
    /// files before it).
    pub missing_records: u64,
    /// Where they are missing (the first [`MAX_LISTED`] gaps).
    pub gaps: Vec<Gap>,
    /// Records the end frame counts as dropped that no loss frame stores
    /// (the writer had failed).
    pub unstored_drops: u64,
    /// Counters stored in the end frame.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stored: Option<EndPayload>,
    /// True when the file opens with a flight-recorder trigger frame.
    pub opens_with_trigger: bool,
    /// Flight-recorder triggers in the file.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub triggers: Vec<TriggerPayload>,
    /// End of the last valid frame.
    pub valid_len: u64,
    /// Bytes of all valid frames (what an export copies after the header).
    pub frame_bytes: u64,
    /// Bytes after the valid frames that are neither zeros nor another
    /// generation's frames (a write cut short).
    pub torn_tail_bytes: u64,
    /// Of an unfinished file of format version 4: its durable mark (the
    /// offset up to which a completed sync made its frames durable, from
    /// the header; see [`crate::format::FLAG_OPEN`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub durable_mark: Option<u64>,
    /// A crash hole after the durable mark: the file is unfinished and its
    /// data end there (see [`CrashHole`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub crash_hole: Option<CrashHole>,
    /// The first damaged or misplaced offset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub corrupt_at: Option<u64>,
    /// Damaged byte ranges (the first [`MAX_LISTED`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub damaged: Vec<ByteRange>,
    /// How many damaged ranges there are in all.
    pub damaged_ranges: u64,
    /// Findings, one sentence each (the first [`MAX_LISTED`]).
    pub notes: Vec<String>,
    /// Findings left out of `notes`.
    pub notes_omitted: u64,
}

impl FileReport {
    fn new(path: &Path) -> FileReport {
        FileReport {
            path: path.to_path_buf(),
            status: FileStatus::NotRtrec,
            generation: None,
            recording_id: None,
            index: None,
            created_wall_ns: None,
            first_record_wall_ns: None,
            last_record_wall_ns: None,
            record_frames: 0,
            records: 0,
            salvageable_records: 0,
            bytes: 0,
            first_seq: None,
            next_seq: None,
            lost_records: 0,
            cut_records: 0,
            missing_records: 0,
            gaps: Vec::new(),
            unstored_drops: 0,
            stored: None,
            opens_with_trigger: false,
            triggers: Vec::new(),
            valid_len: 0,
            frame_bytes: 0,
            torn_tail_bytes: 0,
            durable_mark: None,
            crash_hole: None,
            corrupt_at: None,
            damaged: Vec::new(),
            damaged_ranges: 0,
            notes: Vec::new(),
            notes_omitted: 0,
        }
    }

    /// True when the file is complete and clean (`verify` exit 0).
    pub fn is_clean(&self) -> bool {
        matches!(self.status, FileStatus::Complete | FileStatus::Raw)
    }

    /// Adds a finding.
    fn note(&mut self, s: String) {
        if self.notes.len() < MAX_LISTED {
            self.notes.push(s);
        } else {
            self.notes_omitted += 1;
        }
    }

    /// Marks the file corrupt at `off` with a finding.
    fn corrupt(&mut self, off: u64, s: String) {
        self.corrupt_at.get_or_insert(off);
        self.status = FileStatus::Corrupt;
        self.note(s);
    }

    /// Records `count` missing records from `first_seq`.
    fn missing(&mut self, first_seq: u64, count: u64, where_: &str) {
        self.missing_records = self.missing_records.saturating_add(count);
        if self.gaps.len() < MAX_LISTED {
            self.gaps.push(Gap { first_seq, count });
        }
        self.note(format!(
            "{count} record(s) from sequence {first_seq} are missing{where_} and no loss frame explains them"
        ));
    }

    fn damage(&mut self, start: u64, end: u64, what: String) {
        self.damaged_ranges += 1;
        if self.damaged.len() < MAX_LISTED {
            self.damaged.push(ByteRange {
                start,
                end,
                what: what.clone(),
            });
        }
        self.corrupt(start, format!("bytes {start}..{end} are damaged: {what}"));
    }
}

/// The per-frame rules of one file (see the module docs).
struct FileCheck<'r> {
    r: &'r mut FileReport,
    header: FileHeader,
    exp: Option<u64>,
    last_ts: Option<u64>,
    damaged: bool,
}

impl FileCheck<'_> {
    /// Checks that `seq` is the next expected one: a jump ahead is missing
    /// data, a step back a reordered or duplicated frame.
    fn sequence(&mut self, off: u64, seq: u64, what: &str) {
        let exp = *self.exp.get_or_insert(seq);
        if seq > exp {
            self.r.missing(exp, seq - exp, "");
        } else if seq < exp {
            self.r.corrupt(
                off,
                format!("the {what} frame at offset {off} has sequence {seq}, {exp} was expected (out of order or a duplicate)"),
            );
        }
    }

    fn advance(&mut self, off: u64, seq: u64, count: u64) {
        match seq.checked_add(count) {
            Some(n) => self.exp = Some(n),
            None => self.r.corrupt(
                off,
                format!("a sequence number at offset {off} is out of range"),
            ),
        }
    }

    fn frame(&mut self, f: &Frame) {
        let (off, h) = (f.off, &f.header);
        self.r.frame_bytes += f.end() - f.off;
        self.r.valid_len = f.end();
        if !f.linked && !self.damaged {
            self.damaged = true;
            self.r.damage(
                off,
                off,
                "the frame here does not follow the frame before it (frames reordered, duplicated, deleted or spliced in)".into(),
            );
        }
        let first = self.r.first_seq.is_none();
        if first {
            self.r.first_seq = Some(h.seq);
            self.r.opens_with_trigger = h.kind == FrameKind::Trigger;
            if self.header.index == 0 && h.kind != FrameKind::Trigger {
                // A recording starts at sequence 0.
                self.exp = Some(0);
            }
        }
        match h.kind {
            FrameKind::Data => self.records(off, h, 1, 0, h.len as u64),
            FrameKind::Packed => match PackedInfo::decode(&f.payload) {
                Some((info, bytes)) => {
                    self.records(off, h, info.count as u64, info.span_ns, bytes)
                }
                None => self
                    .r
                    .corrupt(off, format!("the packed frame at offset {off} is malformed")),
            },
            FrameKind::Loss => match LossPayload::decode(&f.payload) {
                Some(l) if l.first_seq == h.seq && l.count > 0 => {
                    self.sequence(off, h.seq, "loss");
                    if l.reason == LossReason::CrashHole {
                        // Not dropped while recording: the end of what a
                        // crash left readable.
                        self.r.cut_records = self.r.cut_records.saturating_add(l.count);
                        self.r.note(format!(
                            "{} record(s) from sequence {} were cut by `rtrec recover` after a crash hole",
                            l.count, l.first_seq
                        ));
                    } else {
                        self.r.lost_records = self.r.lost_records.saturating_add(l.count);
                    }
                    self.advance(off, h.seq, l.count);
                }
                _ => self
                    .r
                    .corrupt(off, format!("the loss frame at offset {off} is malformed")),
            },
            FrameKind::Trigger => match TriggerPayload::decode(&f.payload) {
                Some(t) if first && self.header.index == 0 && t.trigger_seq >= h.seq => {
                    self.exp = Some(h.seq);
                    if self.r.triggers.len() < MAX_LISTED {
                        self.r.triggers.push(t);
                    }
                }
                Some(_) => self.r.corrupt(
                    off,
                    format!("a trigger frame at offset {off}: only the first frame of an event's first file can be one"),
                ),
                None => self
                    .r
                    .corrupt(off, format!("the trigger frame at offset {off} is malformed")),
            },
            FrameKind::End => self.end(f),
        }
    }

    /// A data frame (`count` 1) or a packed frame of `count` records and
    /// `bytes` payload bytes, its records `span_ns` apart first to last.
    fn records(&mut self, off: u64, h: &FrameHeader, count: u64, span_ns: u64, bytes: u64) {
        self.sequence(off, h.seq, "data");
        if self.last_ts.is_some_and(|t| h.ts_ns < t) {
            self.r.corrupt(
                off,
                format!("the timestamp of the record at offset {off} goes back in time"),
            );
        }
        let last = h.ts_ns.saturating_add(span_ns);
        self.last_ts = Some(last);
        self.r
            .first_record_wall_ns
            .get_or_insert(self.header.wall_ns(h.ts_ns));
        self.r.last_record_wall_ns = Some(self.header.wall_ns(last));
        self.r.record_frames += 1;
        self.r.records += count;
        if self.damaged {
            self.r.salvageable_records += count;
        }
        self.r.bytes += bytes;
        self.advance(off, h.seq, count);
    }

    fn end(&mut self, f: &Frame) {
        let (off, h) = (f.off, &f.header);
        let Some(e) = EndPayload::decode(&f.payload) else {
            return self
                .r
                .corrupt(off, format!("the end frame at offset {off} is malformed"));
        };
        let exp = *self.exp.get_or_insert(h.seq);
        if h.seq < exp {
            self.r.corrupt(
                off,
                format!(
                    "the end frame says the next sequence is {}, but records up to {} were read",
                    h.seq,
                    exp - 1
                ),
            );
        } else if h.seq > exp {
            if e.complete {
                self.r.missing(exp, h.seq - exp, " before the end frame");
            } else {
                // The writer failed: it counted drops it could not store.
                self.r.unstored_drops = h.seq - exp;
                self.r.note(format!("{} record(s) from sequence {exp} were dropped after the writer failed; the end frame counts them", h.seq - exp));
            }
        }
        if self.last_ts.is_some_and(|t| h.ts_ns < t) {
            self.r.corrupt(
                off,
                format!("the end frame at offset {off} is older than the records before it"),
            );
        }
        if let Some(v) = self.header.finished_len().filter(|&v| f.end() != v) {
            self.r.corrupt(
                off,
                format!(
                    "the end frame ends at offset {}, the header's valid length is {v}",
                    f.end()
                ),
            );
        }
        if e.records_written < self.r.records
            || e.bytes_written < self.r.bytes
            || e.records_dropped < self.r.lost_records
        {
            self.r.corrupt(
                off,
                "the end frame counts fewer records, bytes or drops than this file holds".into(),
            );
        }
        self.exp = Some(h.seq);
        self.r.stored = Some(e);
    }
}

/// Verifies one framed file read from `src`, in constant memory.
pub fn verify_source<S: ?Sized + ByteSource>(path: &Path, src: &S) -> io::Result<FileReport> {
    let mut r = FileReport::new(path);
    let header = match read_header(src)? {
        Ok(h) => h,
        Err(DecodeError::BadCrc) => {
            r.corrupt(0, "the file header is damaged (checksum mismatch)".into());
            return Ok(r);
        }
        Err(DecodeError::Version(v)) => {
            let who = if v < FORMAT_VERSION {
                "an older"
            } else {
                "a newer"
            };
            r.note(format!(
                "written by {who} rtrec: format version {v}, this rtrec reads versions {OLDEST_READ_VERSION} to {FORMAT_VERSION}"
            ));
            return Ok(r);
        }
        Err(e) => {
            r.note(format!("not an rtrec recording ({e} at the start)"));
            return Ok(r);
        }
    };
    r.generation = Some(header.generation);
    r.recording_id = Some(header.recording_id);
    r.index = Some(header.index);
    r.created_wall_ns = Some(header.created_ns);
    if header.flags & FLAG_SLOT != 0 {
        r.note("an unused pool slot, not a recording".into());
        return Ok(r);
    }
    // Unknown until the end: Corrupt is set as soon as something is found.
    r.status = FileStatus::Unfinished;
    r.valid_len = HEADER_LEN as u64;
    let size = src.size()?;
    let what = if header.is_open() {
        "durable mark"
    } else {
        "recorded valid length"
    };
    if header.valid_len > 0 && header.valid_len > size {
        r.corrupt(
            size,
            format!(
                "the file is shorter ({size}) than its {what} {}",
                header.valid_len
            ),
        );
    }
    if header.valid_len > 0 && header.valid_len < HEADER_LEN as u64 {
        r.corrupt(
            0,
            format!(
                "the header's {what} {} is inside the header",
                header.valid_len
            ),
        );
    }
    let pooled = header.flags & FLAG_POOLED != 0;
    let finished = header.finished_len().is_some();
    let mark = header.durable_mark();
    r.durable_mark = mark;
    let mut walker = FrameWalker::new(src, &header)?;
    let mut c = FileCheck {
        r: &mut r,
        header: header.clone(),
        exp: None,
        last_ts: None,
        damaged: false,
    };
    while let Some(step) = walker.next_step()? {
        if let Some(m) = mark {
            // Rules 4 and 5 with a durable mark: below it every byte is a
            // chained frame; after it, the first bad region ends the data,
            // and it is a crash hole when it shows a missing write.
            match &step {
                Step::Frame(f) if f.off < m && f.end() > m => c.r.damage(
                    f.off,
                    f.end(),
                    format!("the frame here crosses the durable mark {m}, which ends a frame"),
                ),
                Step::Damage { start, end, .. } if *start >= m => {
                    let (start, end) = (*start, *end);
                    if let Some(ev) = walker.win.missing_write(start, end, header.generation)? {
                        crash_hole(&mut c, &mut walker, start, end, ev)?;
                        break;
                    }
                }
                Step::Stop(at, stop) if *at < m => {
                    if *stop != Stop::Eof {
                        c.r.damage(
                            *at,
                            m,
                            format!(
                                "no frame where the durable mark {m} says data were made durable"
                            ),
                        );
                    }
                    continue;
                }
                _ => {}
            }
        }
        match step {
            Step::Frame(f) => c.frame(&f),
            Step::Damage { start, end, error } => {
                c.damaged = true;
                c.r.damage(
                    start,
                    end,
                    format!("{error}; reading resumed at the next valid frame"),
                );
                // The next frame's place in the sequence is unknown: the
                // damaged bytes held an unknown number of records.
            }
            Step::Stop(at, stop) => match stop {
                Stop::EndFrame => {}
                Stop::Eof if finished => c.r.corrupt(
                    at,
                    format!(
                        "no end frame inside the recorded valid length {}",
                        header.valid_len
                    ),
                ),
                Stop::Eof => {}
                Stop::Unwritten if finished => {
                    let limit = walker.limit();
                    c.r.damage(
                        at,
                        limit,
                        "unwritten or stale bytes inside the recorded valid length".into(),
                    );
                }
                Stop::Unwritten => {}
                Stop::Torn(e, _) if finished => {
                    let limit = walker.limit();
                    c.r.damage(at, limit, format!("{e}, inside the recorded valid length"));
                }
                Stop::Torn(e, tail) if pooled => {
                    // In a pool file an earlier life's bytes follow ours; a
                    // cut frame of ours cannot be told from them, and need
                    // not be.
                    let _ = (e, tail);
                    c.r.note(format!("this recording's data end at offset {at}; older data of the pool file follow"));
                }
                Stop::Torn(e, tail) => {
                    c.r.torn_tail_bytes = tail;
                    c.r.note(format!("torn tail of {tail} bytes at offset {at} ({e}); the records before it are intact"));
                }
            },
        }
    }
    let next = c.exp;
    r.next_seq = next;
    if r.lost_records > 0 {
        r.note(format!(
            "{} record(s) were dropped while recording; each loss is stored",
            r.lost_records
        ));
    }
    if r.status == FileStatus::Corrupt {
        return Ok(r);
    }
    r.status = match &r.stored {
        Some(_) if r.missing_records > 0 => FileStatus::Corrupt,
        Some(e) if e.complete => FileStatus::Complete,
        Some(e) => {
            let reason = e.reason.clone();
            r.note(format!("the recording was aborted: {reason}"));
            FileStatus::Aborted
        }
        None if r.missing_records > 0 => FileStatus::Corrupt,
        None => {
            r.note("no end frame: the recording was interrupted".into());
            FileStatus::Unfinished
        }
    };
    Ok(r)
}

/// The rest of an unfinished file after a crash hole found at `start`
/// (frames of ours resume at `end`, or the walk ended there), with the
/// evidence `ev`: the frames after it are counted, not read as part of the
/// recording — they lie beyond the point a crash made unreliable.
fn crash_hole<S: ?Sized + ByteSource>(
    c: &mut FileCheck<'_>,
    walker: &mut FrameWalker<'_, S>,
    start: u64,
    end: u64,
    ev: Hole,
) -> io::Result<()> {
    let mut hole = CrashHole {
        start,
        len: end - start,
        end,
        records_after: 0,
        next_seq_after: None,
    };
    let mut next = |n: u64| hole.next_seq_after = Some(hole.next_seq_after.map_or(n, |s| s.max(n)));
    let mut records_after = 0u64;
    let mut reach = end;
    while let Some(step) = walker.next_step()? {
        match step {
            Step::Frame(f) => {
                reach = reach.max(f.end());
                let h = &f.header;
                match h.kind {
                    FrameKind::Data => {
                        records_after += 1;
                        next(h.seq.saturating_add(1));
                    }
                    FrameKind::Packed => {
                        if let Some((info, _)) = PackedInfo::decode(&f.payload) {
                            records_after += info.count as u64;
                            next(h.seq.saturating_add(info.count as u64));
                        }
                    }
                    FrameKind::Loss => {
                        if let Some(l) = LossPayload::decode(&f.payload) {
                            next(l.first_seq.saturating_add(l.count));
                        }
                    }
                    FrameKind::Trigger | FrameKind::End => {}
                }
            }
            Step::Damage { end, .. } => reach = reach.max(end),
            Step::Stop(at, Stop::Torn(_, tail)) => reach = reach.max(at + tail),
            Step::Stop(at, _) => reach = reach.max(at),
        }
    }
    hole.records_after = records_after;
    hole.end = reach;
    let what = match ev {
        Hole::Zeros(at) => format!("zeros at offset {at}"),
        Hole::EarlierLife(at) => format!("a frame of an earlier life of the file at offset {at}"),
    };
    c.r.note(format!(
        "crash hole of {} bytes at offset {start}, after the durable mark ({what}: a write a power cut left out); {records_after} intact record(s) after it are not counted; `rtrec recover` cuts them",
        hole.len
    ));
    c.r.crash_hole = Some(hole);
    Ok(())
}

/// Verifies one framed file held in `bytes`.
pub fn verify_bytes(path: &Path, bytes: &[u8]) -> FileReport {
    match verify_source(path, bytes) {
        Ok(r) => r,
        // Reading a slice cannot fail; say so rather than panic if it did.
        Err(e) => {
            let mut r = FileReport::new(path);
            r.note(format!("cannot be read: {e}"));
            r
        }
    }
}

/// Verifies one file on disk: a framed file by its frames, a raw file
/// against its sidecar.
pub fn verify_file(path: &Path) -> io::Result<FileReport> {
    let f = open_regular(path)?;
    if path.extension().and_then(|e| e.to_str()) == Some(RAW_EXT) {
        return verify_raw(path, &f);
    }
    verify_source(path, &f)
}

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

/// Checks a raw file against the chunk checksums in its sidecar.
fn verify_raw(path: &Path, f: &File) -> io::Result<FileReport> {
    let mut r = FileReport::new(path);
    r.status = FileStatus::Unverifiable;
    let size = f.size()?;
    r.bytes = size;
    let Some(side) = raw_sidecar(path) else {
        r.note(
            "a raw file without a recording's name: no sidecar to check it against (unverifiable)"
                .into(),
        );
        return Ok(r);
    };
    let side_name = side.display().to_string();
    let meta: serde_json::Value = match open_regular(&side).and_then(|s| {
        if s.size()? > MAX_SIDECAR {
            return Err(io::Error::other("it is too large to be a sidecar"));
        }
        serde_json::from_reader(io::BufReader::new(s)).map_err(io::Error::other)
    }) {
        Ok(v) => v,
        Err(e) => {
            r.note(format!("raw recording whose sidecar '{side_name}' cannot be read ({e}): nothing to check it against (unverifiable)"));
            return Ok(r);
        }
    };
    let sums: Option<Vec<RawFileSums>> = (meta.get("chunk_bytes").and_then(|v| v.as_u64())
        == Some(RAW_CHUNK))
    .then(|| meta.get("file_sums").cloned())
    .flatten()
    .and_then(|v| serde_json::from_value(v).ok());
    let Some(sums) = sums else {
        r.note(format!("the sidecar '{side_name}' holds no checksums (written by an older rtrec): unverifiable"));
        return Ok(r);
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let Some(mine) = sums.iter().find(|s| s.name == name) else {
        r.note(format!(
            "the sidecar '{side_name}' does not list this file: unverifiable"
        ));
        return Ok(r);
    };
    r.status = FileStatus::Raw;
    for s in &sums {
        if !path.with_file_name(&s.name).exists() {
            r.corrupt(
                0,
                format!("file '{}' of this raw recording is missing", s.name),
            );
        }
    }
    if size != mine.len {
        r.corrupt(
            size.min(mine.len),
            format!("the file has {size} bytes, its sidecar says {}", mine.len),
        );
    }
    let chunks = mine.len.div_ceil(RAW_CHUNK);
    if mine.chunk_crcs.len() as u64 != chunks {
        r.corrupt(
            0,
            format!("the sidecar '{side_name}' is malformed (chunk count)"),
        );
        return Ok(r);
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
        if !full || crc32c::crc32c(b) != *want {
            r.damage(start, end, "checksum mismatch against the sidecar".into());
        }
    }
    let complete = meta
        .get("complete")
        .and_then(|v| v.as_bool())
        .unwrap_or(false);
    if r.status == FileStatus::Raw && !complete {
        let reason = meta
            .get("reason")
            .and_then(|v| v.as_str())
            .unwrap_or("")
            .to_string();
        r.note(format!("the recording was aborted: {reason}"));
        r.status = FileStatus::Aborted;
    }
    Ok(r)
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

/// Checks the files of each recording against each other. Files belong to
/// one recording when they sit in the same directory and carry the same
/// recording id (names are not trusted). The first file (index 0) must be
/// there, indexes must have no holes and no doubles (a missing file is
/// reported with the sequence range it held), each file must follow a file
/// whose end frame says "continued" and continue its sequence numbers, its
/// end frame's counters must grow by exactly what the file holds, and a
/// recording whose last file says "continued" lost its next file (a kill
/// during rotation leaves exactly this: unfinished).
pub fn check_continuity(reports: &mut [FileReport]) {
    let mut order: Vec<usize> = (0..reports.len())
        .filter(|&i| reports[i].recording_id.is_some() && reports[i].index.is_some())
        .collect();
    let key = |r: &FileReport| {
        (
            r.path.parent().map(Path::to_path_buf),
            r.recording_id,
            r.index,
        )
    };
    order.sort_by_key(|&i| key(&reports[i]));
    let mut start = 0;
    while start < order.len() {
        let (dir, id, _) = key(&reports[order[start]]);
        let mut end = start;
        while end < order.len() && {
            let (d, i, _) = key(&reports[order[end]]);
            d == dir && i == id
        } {
            end += 1;
        }
        check_group(reports, &order[start..end]);
        start = end;
    }
}

/// [`check_continuity`] for the files of one recording, in index order.
fn check_group(reports: &mut [FileReport], group: &[usize]) {
    let first = &mut reports[group[0]];
    let idx0 = first.index.unwrap_or(0);
    if idx0 != 0 {
        let held = match (first.opens_with_trigger, first.first_seq) {
            (false, Some(s)) if s > 0 => {
                first.missing_records = first.missing_records.saturating_add(s);
                format!("; they held sequence 0..{}", s - 1)
            }
            _ => String::new(),
        };
        first.corrupt(
            0,
            format!("the recording's first {idx0} file(s) are missing{held}"),
        );
    } else if !first.opens_with_trigger && first.status != FileStatus::Corrupt {
        // File 0 of a recording: the end frame's counters are absolute.
        if let Some(e) = &first.stored {
            if (e.records_written, e.bytes_written, e.records_dropped)
                != (
                    first.records,
                    first.bytes,
                    first.lost_records + first.unstored_drops,
                )
            {
                first.corrupt(
                    first.valid_len,
                    "the end frame's counters do not match the records, bytes and drops read"
                        .into(),
                );
            }
        }
    }
    for k in 1..group.len() {
        let p = &reports[group[k - 1]];
        let (p_idx, p_next, p_stored) = (p.index.unwrap_or(0), p.next_seq, p.stored.clone());
        let r = &mut reports[group[k]];
        let idx = r.index.unwrap_or(0);
        if idx == p_idx {
            r.corrupt(
                0,
                format!("another file of this recording also claims to be file {idx}"),
            );
            continue;
        }
        if idx != p_idx + 1 {
            let held = match (p_next, r.first_seq) {
                (Some(a), Some(b)) if b > a => {
                    r.missing_records = r.missing_records.saturating_add(b - a);
                    if r.gaps.len() < MAX_LISTED {
                        r.gaps.push(Gap {
                            first_seq: a,
                            count: b - a,
                        });
                    }
                    format!("; they held sequence {a}..{}", b - 1)
                }
                _ => String::new(),
            };
            r.corrupt(
                0,
                format!(
                    "file(s) {} to {} of this recording are missing{held}",
                    p_idx + 1,
                    idx - 1
                ),
            );
            continue;
        }
        let last = k + 1 == group.len();
        if p_stored.is_none() && last && r.records == 0 && r.first_seq.is_none() {
            // A recording opens its next file before it closes the current
            // one (so a full disk leaves room to end the current one): a
            // crash between the two leaves this, an unfinished file
            // followed by an empty one. Interrupted, not damaged.
            r.note(format!(
                "file {idx} was opened for the next records when the recording was interrupted; it holds none"
            ));
            if r.status != FileStatus::Corrupt {
                r.status = FileStatus::Unfinished;
            }
            continue;
        }
        if !p_stored.as_ref().is_some_and(|e| e.continued) {
            r.corrupt(
                0,
                format!("file {idx} follows a file that did not say the recording continues"),
            );
        }
        if let (Some(a), Some(b)) = (p_next, r.first_seq) {
            if b > a {
                r.missing(a, b - a, " between files");
                r.status = FileStatus::Corrupt;
            } else if b < a {
                r.corrupt(
                    0,
                    format!("the file starts at sequence {b}, the file before it ended at {a}"),
                );
            }
        }
        if let (Some(pe), Some(e), false) = (&p_stored, &r.stored, r.status == FileStatus::Corrupt)
        {
            let delta = (
                e.records_written.wrapping_sub(pe.records_written),
                e.bytes_written.wrapping_sub(pe.bytes_written),
                e.records_dropped.wrapping_sub(pe.records_dropped),
            );
            if delta != (r.records, r.bytes, r.lost_records + r.unstored_drops) {
                let at = r.valid_len;
                r.corrupt(at, "the end frame's counters do not grow by the records, bytes and drops of this file".into());
            }
        }
    }
    let last = &mut reports[group[group.len() - 1]];
    if last.stored.as_ref().is_some_and(|e| e.continued) && last.status == FileStatus::Complete {
        last.note("the recording continues in a file that does not exist: it was interrupted while changing files".into());
        last.status = FileStatus::Unfinished;
    }
}
