//! The on-disk format: one file header, then frames: one per record, or
//! (packed framing) one per batch of small records. This module owns the byte layout (encoding and decoding of single items);
//! [`crate::reader`] walks whole files.
//!
//! All integers are little-endian. The layout is documented for users in
//! `docs/format.md`; change both together and bump [`FORMAT_VERSION`].
//!
//! ```text
//! file header (72 bytes, at offset 0)
//!   0  magic        8  b"RTREC\0\r\n"
//!   8  version      2  FORMAT_VERSION
//!  10  header_len   2  72
//!  12  flags        4  FLAG_POOLED | FLAG_SLOT | FLAG_LINES | FLAG_OPEN | FLAG_LOOP
//!                         | FLAG_COPY | FLAG_LAYOUT
//!  16  generation   8  changes every time the file is (re)used
//!  24  created_ns   8  CLOCK_REALTIME at creation
//!  32  created_mono 8  CLOCK_MONOTONIC at creation (frame timestamps use it)
//!  40  config       8  digest of the recorder configuration
//!  48  valid_len    8  end of the last frame once the file is finished; while
//!                         recording (FLAG_OPEN) the durable mark; 0 before
//!  56  recording_id 8  random, shared by every file of one recording
//!  64  index        4  position of this file in its recording (0, 1, ...)
//!  68  crc          4  CRC32C of bytes 0..68
//!
//! frame header (40 bytes) followed by `len` payload bytes
//!   0  magic        4  b"RFRM"
//!   4  gen          4  low 32 bits of the file's generation
//!   8  kind         2  1 data, 2 loss, 3 end, 4 trigger, 5 packed, 6 retired, 7 layout
//!  10  flags        2  reserved, 0
//!  12  len          4  payload length
//!  16  seq          8  record sequence number (data; packed: the first one), next sequence (others)
//!  24  ts_ns        8  CLOCK_MONOTONIC when record() was called (packed: of the first record)
//!  32  prev         4  CRC of the previous frame of this file ([`chain_seed`] for the first)
//!  36  crc          4  CRC32C of frame bytes 0..36 then the payload
//! ```
//!
//! Design choices: the generation in every frame makes stale frames left in a
//! recycled file (an earlier life) recognisable as "not ours" rather than as
//! corruption; the CRC covers the header so a torn header is caught; 40 bytes
//! keeps payloads 8-byte aligned when the previous payload is (and 72 header
//! bytes keep the first one aligned).
//!
//! Chaining (as PostgreSQL's `xl_prev`): each frame stores the CRC of the
//! frame before it, and its own CRC covers that field. A frame that is valid
//! on its own but reordered, duplicated, deleted around, or spliced in from
//! another file or recording breaks the chain. The link is stored rather
//! than folded into the CRC seed so a reader can still check a frame on its
//! own after damage (resynchronisation) and see exactly where the chain
//! breaks. The first frame links to [`chain_seed`] of the header (recording
//! id, generation, index), so a frame moved between files breaks it too.
//!
//! Packed frames (format version 3, [`FrameKind::Packed`]): one frame holds
//! records of consecutive sequence numbers, each behind a LEB128 length
//! (1 byte below 128 bytes, 2 below 16 KiB), after a 12-byte
//! [`PackedInfo`] (record count, span from the first record's time to the
//! last's). One frame header and one CRC serve the whole batch, so a
//! 64-byte record costs 65 bytes plus its share of 52 bytes per frame
//! instead of 104. Design choice on timestamps: a packed frame keeps the
//! first record's time (frame header) and the last one's (span), not each
//! record's; a reader places the records between them evenly (exact for a
//! periodic source). A per-record delta (2 bytes of LEB128 µs at a 1 ms
//! period, 3 bytes at 20 ms) would take 3–5 % of a 64-byte record on top of
//! its length byte, which the 5 % overhead budget of small records cannot
//! afford; a source that needs exact per-record times puts them in its
//! records or uses per-record frames.

use std::fmt;

/// Bytes that open every rtrec file.
pub const FILE_MAGIC: [u8; 8] = *b"RTREC\0\r\n";
/// Bytes that open every frame.
pub const FRAME_MAGIC: [u8; 4] = *b"RFRM";
/// The newest format version, read and written. Version 6 added the
/// layout frame ([`FLAG_LAYOUT`], [`FrameKind::Layout`]) and is written
/// ONLY for the files of a recording that has a layout (`rtrec record
/// --layout`): an older rtrec refuses such a file in one sentence (a newer
/// format version) instead of reading its records without their layout,
/// and keeps reading every other recording. Version 5 added loop
/// recordings ([`FLAG_LOOP`], [`FrameKind::Retired`]) and is written ONLY
/// for them: every other recording is still written as
/// [`PLAIN_FORMAT_VERSION`] (4), so older readers keep reading it
/// ([`FileHeader::version`]). Version 4 added the durable mark
/// ([`FLAG_OPEN`]: while recording, `valid_len` is the offset the last
/// completed sync made durable); version 3 added packed frames and the
/// trigger's wall-clock time. Version 3 files are still read (as version 4
/// files without a mark: the layout is the same). Older versions (1: no
/// recording id, no frame chain; 2: no packed frames) are not read: their
/// files get one sentence naming both versions.
pub const FORMAT_VERSION: u16 = 6;
/// The version a recording that is neither a loop recording nor has a
/// layout is written with (see [`FORMAT_VERSION`]).
pub const PLAIN_FORMAT_VERSION: u16 = 4;
/// The version a loop recording without a layout is written with
/// ([`FLAG_LOOP`]).
pub const LOOP_FORMAT_VERSION: u16 = 5;
/// The oldest format version this rtrec reads ([`FORMAT_VERSION`] up to
/// here).
pub const OLDEST_READ_VERSION: u16 = 3;
/// Size of the file header.
pub const HEADER_LEN: usize = 72;
/// Size of a frame header.
pub const FRAME_HEADER_LEN: usize = 40;
/// The largest payload a frame may carry (1 GiB); a longer length field is
/// treated as damage.
pub const MAX_PAYLOAD: u32 = 1 << 30;
/// The largest payload of a loss, end or trigger frame; a longer one is
/// treated as damage (the writer's end frame is under 1 KiB), so a reader
/// holds at most this much of a payload in memory.
pub const MAX_MARKER_PAYLOAD: u32 = 4096;

/// The largest payload of a packed frame a reader accepts (64 KiB); a longer
/// length field is treated as damage. The writer seals its frames at
/// [`PACKED_PAYLOAD`].
pub const MAX_PACKED_PAYLOAD: u32 = 64 << 10;
/// The payload size at which the writer seals a packed frame (16 KiB): its
/// 52 bytes of framing are then under 0.4 % of the frame, and a frame is a
/// few pages, written in one `writev()`.
pub const PACKED_PAYLOAD: usize = 16 << 10;

/// Header flag: a recording in a pool file. It is never truncated; its data
/// end at `valid_len` (or, if unfinished, at the first frame that is not of
/// this generation).
pub const FLAG_POOLED: u32 = 1;
/// Header flag: an unused pool slot, not a recording.
pub const FLAG_SLOT: u32 = 2;
/// Header flag: the records are lines of text, stored without their
/// newline (`rtrec record --stdin --lines`); `rtrec export` (raw by default) writes
/// each one back followed by `\n`. Readers that do not know it lose
/// nothing: the records are the same.
pub const FLAG_LINES: u32 = 4;
/// Header flag (format version 4): the file is being recorded (or was, when
/// a crash came), and `valid_len` is its **durable mark**, not its end —
/// every byte from the header to `valid_len` is chained frames that a
/// completed `fdatasync` made durable (PostgreSQL's `minRecoveryPoint` in
/// `pg_control` is the model). The writer rewrites the header with it after
/// each durability sync; the final header clears it. Damage below the mark
/// is corruption; after it, a crash may have left a hole (see
/// [`crate::reader`]).
pub const FLAG_OPEN: u32 = 8;
/// Header flag (format version 5): a file of a loop recording (`rtrec
/// record --keep …`), whose oldest finished files are retired (recycled
/// into the pool or deleted) while it records. Every file of it carries
/// the flag, and every file after its first opens with a
/// [`FrameKind::Retired`] frame; a reader treats a missing run of leading
/// files as retired, not lost (see [`crate::reader`]).
pub const FLAG_LOOP: u32 = 16;
/// Header flag: a copy of one file of a recording made by `rtrec export
/// --framed` (its frames, chained to the source's id and index, are the
/// source's). A reader never groups a copy with the files of its source,
/// even in the same directory: a copy is a recording of its own, one file
/// taken out on purpose, so the files before and after it are not
/// missing. Readers that do not know the flag read the file as before
/// (flags are not validated), and see a second file claiming the same
/// place.
pub const FLAG_COPY: u32 = 32;
/// Header flag (format version 6): the file opens with a
/// [`FrameKind::Layout`] frame, the recording's layout (`rtrec record
/// --layout`: its fields' names and types, [`crate::layout`]). Every file
/// of such a recording carries it, so a missing first file, or a loop's
/// retired ones, do not take the layout with them.
pub const FLAG_LAYOUT: u32 = 64;

/// The file header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileHeader {
    /// [`FLAG_POOLED`], [`FLAG_SLOT`], [`FLAG_LINES`], [`FLAG_OPEN`],
    /// [`FLAG_LOOP`], [`FLAG_COPY`], [`FLAG_LAYOUT`].
    pub flags: u32,
    /// Changes each time the file is (re)used; frames carry its low 32 bits.
    pub generation: u64,
    /// `CLOCK_REALTIME` at creation, ns since the Unix epoch.
    pub created_ns: u64,
    /// `CLOCK_MONOTONIC` at creation, ns (frame timestamps use this clock).
    pub created_mono_ns: u64,
    /// Digest of the recorder configuration that wrote the file.
    pub config_digest: u64,
    /// Offset just past the last frame once the file is finished. While
    /// recording: with [`FLAG_OPEN`], the durable mark (see there); 0
    /// before the first mark (and in version 3 files, always 0 until the
    /// end).
    pub valid_len: u64,
    /// Random, shared by every file of one recording (each flight-recorder
    /// event is a recording of its own); 0 in an unused pool slot.
    pub recording_id: u64,
    /// Position of this file within its recording.
    pub index: u32,
}

/// Why bytes could not be decoded as a header or frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// Fewer bytes than the fixed part needs.
    Short,
    /// All bytes of the fixed part are zero: unwritten (pre-allocated) space.
    Zero,
    /// The magic bytes are wrong.
    BadMagic,
    /// Unknown format version.
    Version(u16),
    /// The frame belongs to another generation of a recycled file.
    StaleGeneration,
    /// Unknown frame kind.
    BadKind(u16),
    /// The length field is beyond [`MAX_PAYLOAD`] or the remaining bytes.
    BadLength,
    /// The checksum does not match.
    BadCrc,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            DecodeError::Short => "truncated",
            DecodeError::Zero => "unwritten space",
            DecodeError::BadMagic => "bad magic",
            DecodeError::Version(_) => "unknown format version",
            DecodeError::StaleGeneration => "frame of an earlier generation",
            DecodeError::BadKind(_) => "unknown frame kind",
            DecodeError::BadLength => "impossible length",
            DecodeError::BadCrc => "checksum mismatch",
        };
        f.write_str(s)
    }
}

fn u16_at(b: &[u8], o: usize) -> u16 {
    u16::from_le_bytes([b[o], b[o + 1]])
}
fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(b[o..o + 4].try_into().unwrap())
}
fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().unwrap())
}

impl FileHeader {
    /// Encodes the header into exactly [`HEADER_LEN`] bytes.
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[0..8].copy_from_slice(&FILE_MAGIC);
        b[8..10].copy_from_slice(&self.version().to_le_bytes());
        b[10..12].copy_from_slice(&(HEADER_LEN as u16).to_le_bytes());
        b[12..16].copy_from_slice(&self.flags.to_le_bytes());
        b[16..24].copy_from_slice(&self.generation.to_le_bytes());
        b[24..32].copy_from_slice(&self.created_ns.to_le_bytes());
        b[32..40].copy_from_slice(&self.created_mono_ns.to_le_bytes());
        b[40..48].copy_from_slice(&self.config_digest.to_le_bytes());
        b[48..56].copy_from_slice(&self.valid_len.to_le_bytes());
        b[56..64].copy_from_slice(&self.recording_id.to_le_bytes());
        b[64..68].copy_from_slice(&self.index.to_le_bytes());
        let crc = crate::crc::crc32c(&b[0..68]);
        b[68..72].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Decodes a header from the first [`HEADER_LEN`] bytes of `b`.
    pub fn decode(b: &[u8]) -> Result<FileHeader, DecodeError> {
        if b.len() < HEADER_LEN {
            return Err(DecodeError::Short);
        }
        if b[..HEADER_LEN].iter().all(|&x| x == 0) {
            return Err(DecodeError::Zero);
        }
        if b[0..8] != FILE_MAGIC {
            return Err(DecodeError::BadMagic);
        }
        let v = u16_at(b, 8);
        if !(OLDEST_READ_VERSION..=FORMAT_VERSION).contains(&v)
            || u16_at(b, 10) as usize != HEADER_LEN
        {
            return Err(DecodeError::Version(v));
        }
        if crate::crc::crc32c(&b[0..68]) != u32_at(b, 68) {
            return Err(DecodeError::BadCrc);
        }
        Ok(FileHeader {
            flags: u32_at(b, 12),
            generation: u64_at(b, 16),
            created_ns: u64_at(b, 24),
            created_mono_ns: u64_at(b, 32),
            config_digest: u64_at(b, 40),
            valid_len: u64_at(b, 48),
            recording_id: u64_at(b, 56),
            index: u32_at(b, 64),
        })
    }
}

impl FileHeader {
    /// The format version this header is written with: the oldest that
    /// reads it. [`FORMAT_VERSION`] (6) for a file that carries a layout
    /// ([`FLAG_LAYOUT`]), [`LOOP_FORMAT_VERSION`] (5) for a file of a loop
    /// recording ([`FLAG_LOOP`]), else [`PLAIN_FORMAT_VERSION`] (4).
    pub fn version(&self) -> u16 {
        if self.flags & FLAG_LAYOUT != 0 {
            FORMAT_VERSION
        } else if self.flags & FLAG_LOOP != 0 {
            LOOP_FORMAT_VERSION
        } else {
            PLAIN_FORMAT_VERSION
        }
    }

    /// True for a file that opens with the recording's layout
    /// ([`FLAG_LAYOUT`]).
    pub fn has_layout(&self) -> bool {
        self.flags & FLAG_LAYOUT != 0
    }

    /// True for a file of a loop recording ([`FLAG_LOOP`]).
    pub fn is_loop(&self) -> bool {
        self.flags & FLAG_LOOP != 0
    }

    /// True while the file is being recorded, or was when a crash came
    /// ([`FLAG_OPEN`]): `valid_len` is then the durable mark.
    pub fn is_open(&self) -> bool {
        self.flags & FLAG_OPEN != 0
    }

    /// The end of the frames of a finished file (its `valid_len`), `None`
    /// while it is recording or after a crash (no end recorded).
    pub fn finished_len(&self) -> Option<u64> {
        (!self.is_open() && self.valid_len > 0).then_some(self.valid_len)
    }

    /// Of a file being recorded, or interrupted ([`FLAG_OPEN`]): the offset
    /// up to which its frames were made durable, its mark (the end of the
    /// header before the first sync). `None` for a finished file and for
    /// an unfinished file of version 3, which has no mark.
    pub fn durable_mark(&self) -> Option<u64> {
        self.is_open()
            .then_some(self.valid_len.max(HEADER_LEN as u64))
    }

    /// The header with the durable mark at `mark` ([`FLAG_OPEN`] set,
    /// `valid_len` = `mark`).
    pub fn with_mark(&self, mark: u64) -> FileHeader {
        FileHeader {
            flags: self.flags | FLAG_OPEN,
            valid_len: mark,
            ..self.clone()
        }
    }

    /// The wall-clock time (`CLOCK_REALTIME`, ns since the epoch) of
    /// `CLOCK_MONOTONIC` time `mono_ns`, by the header's mapping
    /// (`created_ns` was read next to `created_mono_ns`). A clock step after
    /// the file was created is not seen: times within one file stay
    /// monotonic and comparable.
    pub fn wall_ns(&self, mono_ns: u64) -> u64 {
        let t = self.created_ns as i128 + mono_ns as i128 - self.created_mono_ns as i128;
        t.clamp(0, u64::MAX as i128) as u64
    }
}

/// The link the first frame of a file stores as `prev`: a CRC32C of the
/// header's recording id, generation and index (fields that never change
/// while the file is written, unlike `valid_len`).
pub fn chain_seed(h: &FileHeader) -> u32 {
    let mut b = [0u8; 20];
    b[0..8].copy_from_slice(&h.recording_id.to_le_bytes());
    b[8..16].copy_from_slice(&h.generation.to_le_bytes());
    b[16..20].copy_from_slice(&h.index.to_le_bytes());
    crate::crc::crc32c(&b)
}

/// A new random recording id. Design choice: the standard library's
/// randomly keyed hasher (seeded from the OS once per process, with a
/// per-instance counter) mixed with both clocks and the process id, so no
/// extra dependency and no file to open; never 0.
pub fn new_recording_id() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(rtrec_sys::realtime_ns());
    h.write_u64(rtrec_sys::monotonic_ns());
    h.write_u32(std::process::id());
    h.finish().max(1)
}

/// What a frame carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FrameKind {
    /// One record as given to `record()`.
    Data = 1,
    /// Records that were dropped; payload is a [`LossPayload`].
    Loss = 2,
    /// End of the file; payload is an [`EndPayload`].
    End = 3,
    /// A flight-recorder trigger; payload is a [`TriggerPayload`].
    Trigger = 4,
    /// Several records of consecutive sequence numbers (packed framing):
    /// a [`PackedInfo`], then each record behind its LEB128 length.
    Packed = 5,
    /// What a loop recording retired before this file began (format
    /// version 5): the first frame of every file of a loop recording after
    /// its first; payload is a [`RetiredPayload`], `seq` the file's first
    /// sequence number.
    Retired = 6,
    /// The recording's layout (format version 6): the first frame of
    /// every file whose header has [`FLAG_LAYOUT`]; payload is the
    /// layout's canonical text, UTF-8
    /// ([`Layout::canonical`](crate::layout::Layout::canonical)), `seq`
    /// the file's first sequence number. Design choice: a frame, not a
    /// header field or a sidecar, so the layout is checksummed and chained
    /// like everything else, travels with each file (a copy, a shipped
    /// object) and needs no change to the 72-byte header.
    Layout = 7,
}

impl FrameKind {
    fn from_u16(v: u16) -> Option<FrameKind> {
        match v {
            1 => Some(FrameKind::Data),
            2 => Some(FrameKind::Loss),
            3 => Some(FrameKind::End),
            4 => Some(FrameKind::Trigger),
            5 => Some(FrameKind::Packed),
            6 => Some(FrameKind::Retired),
            7 => Some(FrameKind::Layout),
            _ => None,
        }
    }
}

/// A decoded frame header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameHeader {
    /// What the frame carries.
    pub kind: FrameKind,
    /// Payload length in bytes.
    pub len: u32,
    /// Sequence number (see the module docs).
    pub seq: u64,
    /// `CLOCK_MONOTONIC` ns.
    pub ts_ns: u64,
    /// The stored link: CRC of the previous frame of the file, or
    /// [`chain_seed`] for the first.
    pub prev: u32,
    /// This frame's own CRC (what the next frame links to).
    pub crc: u32,
}

/// Encodes a frame header for `payload` into `out` (exactly
/// [`FRAME_HEADER_LEN`] bytes), linked to `prev` (the previous frame's CRC,
/// or [`chain_seed`] for a file's first frame). Returns the frame's CRC, the
/// next frame's `prev`. Allocation-free: used on the write path.
pub fn encode_frame_header(
    out: &mut [u8; FRAME_HEADER_LEN],
    generation: u64,
    kind: FrameKind,
    seq: u64,
    ts_ns: u64,
    prev: u32,
    payload: &[u8],
) -> u32 {
    out[0..4].copy_from_slice(&FRAME_MAGIC);
    out[4..8].copy_from_slice(&(generation as u32).to_le_bytes());
    out[8..10].copy_from_slice(&(kind as u16).to_le_bytes());
    out[10..12].copy_from_slice(&0u16.to_le_bytes());
    out[12..16].copy_from_slice(&(payload.len() as u32).to_le_bytes());
    out[16..24].copy_from_slice(&seq.to_le_bytes());
    out[24..32].copy_from_slice(&ts_ns.to_le_bytes());
    out[32..36].copy_from_slice(&prev.to_le_bytes());
    let crc = crate::crc::crc32c_append(crate::crc::crc32c(&out[0..36]), payload);
    out[36..40].copy_from_slice(&crc.to_le_bytes());
    crc
}

/// Decodes the fixed part of a frame header for a file of `generation`,
/// without its payload: checks the magic, generation, kind and length
/// (at most [`MAX_PAYLOAD`], [`MAX_MARKER_PAYLOAD`] for all but data). The
/// caller checks the CRC: start with [`frame_crc_start`], append the
/// payload, compare with the returned header's `crc`.
pub fn decode_frame_header(
    h: &[u8; FRAME_HEADER_LEN],
    generation: u64,
) -> Result<FrameHeader, DecodeError> {
    if h.iter().all(|&x| x == 0) {
        return Err(DecodeError::Zero);
    }
    if h[0..4] != FRAME_MAGIC {
        return Err(DecodeError::BadMagic);
    }
    if u32_at(h, 4) != generation as u32 {
        return Err(DecodeError::StaleGeneration);
    }
    let kind_raw = u16_at(h, 8);
    let kind = FrameKind::from_u16(kind_raw).ok_or(DecodeError::BadKind(kind_raw))?;
    let len = u32_at(h, 12);
    let max = match kind {
        FrameKind::Data => MAX_PAYLOAD,
        FrameKind::Packed => MAX_PACKED_PAYLOAD,
        _ => MAX_MARKER_PAYLOAD,
    };
    if len > max || u16_at(h, 10) != 0 {
        return Err(DecodeError::BadLength);
    }
    Ok(FrameHeader {
        kind,
        len,
        seq: u64_at(h, 16),
        ts_ns: u64_at(h, 24),
        prev: u32_at(h, 32),
        crc: u32_at(h, 36),
    })
}

/// The CRC of a frame header's covered bytes (0..36), to which the payload
/// is appended with [`crate::crc::crc32c_append`].
pub fn frame_crc_start(h: &[u8; FRAME_HEADER_LEN]) -> u32 {
    crate::crc::crc32c(&h[0..36])
}

/// Decodes the frame at the start of `b` (header and payload must both be
/// in `b`) for a file of `generation`. Returns the header and the payload.
/// It checks the frame on its own; the chain (`prev`) is the reader's.
pub fn decode_frame(b: &[u8], generation: u64) -> Result<(FrameHeader, &[u8]), DecodeError> {
    let Some(h) = b.get(..FRAME_HEADER_LEN) else {
        if b.iter().all(|&x| x == 0) {
            return Err(DecodeError::Zero);
        }
        return Err(DecodeError::Short);
    };
    let h: &[u8; FRAME_HEADER_LEN] = h.try_into().map_err(|_| DecodeError::Short)?;
    let fh = decode_frame_header(h, generation)?;
    let end = FRAME_HEADER_LEN + fh.len as usize;
    let payload = b.get(FRAME_HEADER_LEN..end).ok_or(DecodeError::Short)?;
    if crate::crc::crc32c_append(frame_crc_start(h), payload) != fh.crc {
        return Err(DecodeError::BadCrc);
    }
    Ok((fh, payload))
}

/// Payload of a [`FrameKind::Loss`] frame: `count` records starting at
/// sequence `first_seq` were dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct LossPayload {
    /// First dropped sequence number.
    pub first_seq: u64,
    /// How many consecutive sequence numbers were dropped.
    pub count: u64,
    /// Why: see [`LossReason`].
    pub reason: LossReason,
}

/// Why records were dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LossReason {
    /// The ring between producer and writer was full (drop-newest).
    RingFull = 1,
    /// The record was larger than the configured maximum.
    TooLarge = 2,
    /// The writer had failed (I/O error) and could not store it.
    WriterFailed = 3,
    /// Overwritten in the flight recorder's pre-trigger window.
    Overwritten = 4,
    /// Cut by `rtrec recover`: the records after a crash hole (writes after
    /// the durable mark that a power cut left out), which the recording
    /// cannot vouch for (format version 4).
    CrashHole = 5,
}

impl LossPayload {
    /// Encoded length.
    pub const LEN: usize = 20;
    /// Encodes into 20 bytes.
    pub fn encode(&self) -> [u8; Self::LEN] {
        let mut b = [0u8; Self::LEN];
        b[0..8].copy_from_slice(&self.first_seq.to_le_bytes());
        b[8..16].copy_from_slice(&self.count.to_le_bytes());
        b[16..20].copy_from_slice(&(self.reason as u32).to_le_bytes());
        b
    }
    /// Decodes; `None` when malformed.
    pub fn decode(b: &[u8]) -> Option<LossPayload> {
        if b.len() != Self::LEN {
            return None;
        }
        let reason = match u32_at(b, 16) {
            1 => LossReason::RingFull,
            2 => LossReason::TooLarge,
            3 => LossReason::WriterFailed,
            4 => LossReason::Overwritten,
            5 => LossReason::CrashHole,
            _ => return None,
        };
        Some(LossPayload {
            first_seq: u64_at(b, 0),
            count: u64_at(b, 8),
            reason,
        })
    }
}

/// End-frame flag (bit 2 of the payload's flags; 1 is complete, 2
/// continued): "closed by recover". `rtrec recover` wrote this end frame
/// after the recording was interrupted (a kill, a crash, a power cut): the
/// counters are the recording's totals over all its files as found, and
/// the reason is the [`Interrupted`] line. Format version 4 is kept: the
/// layout is unchanged, and a reader that does not know the flag sees an
/// end frame that is neither complete nor continued, i.e. an aborted
/// recording with that reason (docs/format.md).
pub const END_INTERRUPTED: u32 = 4;

/// What an end frame of `rtrec recover` ([`END_INTERRUPTED`]) says beyond
/// the counters, kept in its reason as one line of text,
/// `interrupted, closed by recover: durable_seq=N cut_records=R cut_bytes=B`.
///
/// Design choice: text in the reason rather than binary fields after the
/// 48 fixed bytes, because a reader that does not know the flag shows the
/// reason as the recording's abort reason: it then prints this line, not
/// 24 bytes of binary read as UTF-8, and no format version is needed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Interrupted {
    /// Every record before this sequence number was durable when the
    /// recording was interrupted (the durable mark of its last file): the
    /// recorder's `durable_seq`, as `--status` publishes it.
    pub durable_seq: u64,
    /// Records recover cut after a crash hole: the sequence numbers its
    /// loss frame of reason [`LossReason::CrashHole`] covers.
    pub cut_records: u64,
    /// Bytes after the last intact frame that recover cut: a crash hole
    /// and what followed it, and a torn tail.
    pub cut_bytes: u64,
}

impl Interrupted {
    /// The words before the numbers.
    pub const PREFIX: &'static str = "interrupted, closed by recover: ";

    /// The reason line of an end frame of `rtrec recover`.
    pub fn reason(&self) -> String {
        format!(
            "{}durable_seq={} cut_records={} cut_bytes={}",
            Self::PREFIX,
            self.durable_seq,
            self.cut_records,
            self.cut_bytes
        )
    }

    /// Parses [`Interrupted::reason`]'s line; `None` when it is not one.
    pub fn parse(reason: &str) -> Option<Interrupted> {
        let mut it = reason.strip_prefix(Self::PREFIX)?.split(' ');
        let mut field = |name: &str| -> Option<u64> {
            it.next()?
                .strip_prefix(name)?
                .strip_prefix('=')?
                .parse()
                .ok()
        };
        let v = Interrupted {
            durable_seq: field("durable_seq")?,
            cut_records: field("cut_records")?,
            cut_bytes: field("cut_bytes")?,
        };
        it.next().is_none().then_some(v)
    }
}

/// Payload of the [`FrameKind::End`] frame that closes a file.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct EndPayload {
    /// True when the recording ended as asked; false when it was aborted.
    pub complete: bool,
    /// True when the recording continues in the next file (rotation).
    pub continued: bool,
    /// True when `rtrec recover` wrote this end frame after the recording
    /// was interrupted ([`END_INTERRUPTED`]); `reason` then carries the
    /// numbers of [`Interrupted`].
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    /// Records written to this recording so far (all files).
    pub records_written: u64,
    /// Records dropped in this recording so far (all files).
    pub records_dropped: u64,
    /// Payload bytes written so far (all files).
    pub bytes_written: u64,
    /// Flight recorder: span of post-trigger data captured in this event, ns
    /// (0 otherwise).
    pub post_ns: u64,
    /// Flight recorder: post-trigger records captured in this event.
    pub post_records: u64,
    /// Why the recording was aborted (empty when complete).
    pub reason: String,
}

impl EndPayload {
    /// Length of the fixed part.
    pub const FIXED_LEN: usize = 48;
    /// Encodes (48 fixed bytes, then the UTF-8 reason).
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(Self::FIXED_LEN + self.reason.len());
        let flags = (self.complete as u32)
            | ((self.continued as u32) << 1)
            | if self.interrupted { END_INTERRUPTED } else { 0 };
        b.extend_from_slice(&flags.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&self.records_written.to_le_bytes());
        b.extend_from_slice(&self.records_dropped.to_le_bytes());
        b.extend_from_slice(&self.bytes_written.to_le_bytes());
        b.extend_from_slice(&self.post_ns.to_le_bytes());
        b.extend_from_slice(&self.post_records.to_le_bytes());
        b.extend_from_slice(self.reason.as_bytes());
        b
    }
    /// Decodes; `None` when malformed.
    pub fn decode(b: &[u8]) -> Option<EndPayload> {
        if b.len() < Self::FIXED_LEN {
            return None;
        }
        let flags = u32_at(b, 0);
        Some(EndPayload {
            complete: flags & 1 != 0,
            continued: flags & 2 != 0,
            interrupted: flags & END_INTERRUPTED != 0,
            records_written: u64_at(b, 8),
            records_dropped: u64_at(b, 16),
            bytes_written: u64_at(b, 24),
            post_ns: u64_at(b, 32),
            post_records: u64_at(b, 40),
            reason: String::from_utf8_lossy(&b[Self::FIXED_LEN..]).into_owned(),
        })
    }
}

/// Payload of a [`FrameKind::Retired`] frame: cumulatively, what the loop
/// recording had retired before the file that opens with it began. Files
/// `first_index..next_index` (sequence numbers `first_seq..next_seq`) were
/// retired. Design choice: cumulative, not the latest step, so the newest
/// surviving frame alone says everything and a lost file loses no claim.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct RetiredPayload {
    /// Index of the first retired file (0: a loop retires from the start).
    pub first_index: u32,
    /// Index of the oldest file not retired.
    pub next_index: u32,
    /// Sequence number of the first retired record.
    pub first_seq: u64,
    /// Sequence number of the first record not retired (the first of file
    /// `next_index`).
    pub next_seq: u64,
    /// Files retired (`next_index - first_index`).
    pub files: u64,
    /// Bytes of the retired files (header and frames).
    pub bytes: u64,
    /// `CLOCK_REALTIME` ns of the latest retirement (0: none yet).
    pub last_wall_ns: u64,
}

impl RetiredPayload {
    /// Encoded length.
    pub const LEN: usize = 48;
    /// Encodes into 48 bytes.
    pub fn encode(&self) -> [u8; Self::LEN] {
        let mut b = [0u8; Self::LEN];
        b[0..4].copy_from_slice(&self.first_index.to_le_bytes());
        b[4..8].copy_from_slice(&self.next_index.to_le_bytes());
        b[8..16].copy_from_slice(&self.first_seq.to_le_bytes());
        b[16..24].copy_from_slice(&self.next_seq.to_le_bytes());
        b[24..32].copy_from_slice(&self.files.to_le_bytes());
        b[32..40].copy_from_slice(&self.bytes.to_le_bytes());
        b[40..48].copy_from_slice(&self.last_wall_ns.to_le_bytes());
        b
    }
    /// Decodes; `None` when malformed (a wrong length, or fields that
    /// contradict each other: indexes or sequence numbers going back, a
    /// file count other than the indexes' difference).
    pub fn decode(b: &[u8]) -> Option<RetiredPayload> {
        if b.len() != Self::LEN {
            return None;
        }
        let p = RetiredPayload {
            first_index: u32_at(b, 0),
            next_index: u32_at(b, 4),
            first_seq: u64_at(b, 8),
            next_seq: u64_at(b, 16),
            files: u64_at(b, 24),
            bytes: u64_at(b, 32),
            last_wall_ns: u64_at(b, 40),
        };
        let ok = p.first_index <= p.next_index
            && p.first_seq <= p.next_seq
            && p.files == (p.next_index - p.first_index) as u64;
        ok.then_some(p)
    }
}

/// Payload of a [`FrameKind::Trigger`] frame (flight recorder).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TriggerPayload {
    /// `CLOCK_MONOTONIC` ns of the trigger.
    pub trigger_ns: u64,
    /// `CLOCK_REALTIME` ns of the trigger (since the Unix epoch), read by
    /// the writer when it served the trigger and moved back by the time
    /// the trigger waited in the ring.
    pub trigger_wall_ns: u64,
    /// Sequence number of the first record after the trigger.
    pub trigger_seq: u64,
    /// Span of pre-trigger data actually captured, ns.
    pub pre_ns: u64,
    /// Pre-trigger records actually captured.
    pub pre_records: u64,
}

impl TriggerPayload {
    /// Encoded length.
    pub const LEN: usize = 40;
    /// Encodes into 40 bytes.
    pub fn encode(&self) -> [u8; Self::LEN] {
        let mut b = [0u8; Self::LEN];
        b[0..8].copy_from_slice(&self.trigger_ns.to_le_bytes());
        b[8..16].copy_from_slice(&self.trigger_seq.to_le_bytes());
        b[16..24].copy_from_slice(&self.pre_ns.to_le_bytes());
        b[24..32].copy_from_slice(&self.pre_records.to_le_bytes());
        b[32..40].copy_from_slice(&self.trigger_wall_ns.to_le_bytes());
        b
    }
    /// Decodes; `None` when malformed.
    pub fn decode(b: &[u8]) -> Option<TriggerPayload> {
        if b.len() != Self::LEN {
            return None;
        }
        Some(TriggerPayload {
            trigger_ns: u64_at(b, 0),
            trigger_seq: u64_at(b, 8),
            pre_ns: u64_at(b, 16),
            pre_records: u64_at(b, 24),
            trigger_wall_ns: u64_at(b, 32),
        })
    }
}

/// The fixed start of a [`FrameKind::Packed`] payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PackedInfo {
    /// Records in the frame (at least 1).
    pub count: u32,
    /// `CLOCK_MONOTONIC` ns from the first record (the frame's `ts_ns`) to
    /// the last.
    pub span_ns: u64,
}

impl PackedInfo {
    /// Encoded length.
    pub const LEN: usize = 12;

    /// Encodes into 12 bytes.
    pub fn encode(&self) -> [u8; Self::LEN] {
        let mut b = [0u8; Self::LEN];
        b[0..4].copy_from_slice(&self.count.to_le_bytes());
        b[4..12].copy_from_slice(&self.span_ns.to_le_bytes());
        b
    }

    /// Checks a whole packed payload: at least one record, exactly `count`
    /// records with canonical (shortest) LEB128 lengths that end exactly at
    /// the payload's end. Returns the info and the records' payload bytes.
    pub fn decode(b: &[u8]) -> Option<(PackedInfo, u64)> {
        if b.len() < Self::LEN {
            return None;
        }
        let info = PackedInfo {
            count: u32_at(b, 0),
            span_ns: u64_at(b, 4),
        };
        if info.count == 0 {
            return None;
        }
        let (mut n, mut bytes) = (0u32, 0u64);
        let mut it = PackedRecords {
            rest: &b[Self::LEN..],
        };
        while !it.rest.is_empty() {
            bytes += it.next()?.len() as u64;
            n += 1;
        }
        (n == info.count).then_some((info, bytes))
    }
}

/// Bytes of the LEB128 length prefix of a `len`-byte record.
pub const fn leb128_len(len: usize) -> usize {
    let mut n = 1;
    let mut v = len >> 7;
    while v > 0 {
        n += 1;
        v >>= 7;
    }
    n
}

/// Appends `v` as unsigned LEB128 (7 bits a byte, low first, high bit set
/// on all but the last byte).
pub fn put_leb128(out: &mut Vec<u8>, mut v: usize) {
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// The records of a packed payload after its [`PackedInfo`], in order;
/// `None` at a malformed length (stops the walk: check with
/// [`PackedInfo::decode`] first).
#[derive(Clone, Debug)]
pub struct PackedRecords<'a> {
    rest: &'a [u8],
}

impl<'a> PackedRecords<'a> {
    /// The records of `payload` (a whole packed payload, info included).
    pub fn new(payload: &'a [u8]) -> PackedRecords<'a> {
        PackedRecords {
            rest: payload.get(PackedInfo::LEN..).unwrap_or(&[]),
        }
    }
}

impl<'a> Iterator for PackedRecords<'a> {
    type Item = &'a [u8];
    fn next(&mut self) -> Option<&'a [u8]> {
        let (mut len, mut shift, mut i) = (0usize, 0u32, 0usize);
        loop {
            let b = *self.rest.get(i)?;
            i += 1;
            // Lengths fit in 4 bytes (MAX_PACKED_PAYLOAD); more is damage.
            if shift > 21 {
                return None;
            }
            len |= ((b & 0x7f) as usize) << shift;
            shift += 7;
            if b & 0x80 == 0 {
                // Canonical only: a last byte of 0 after others is padding.
                if b == 0 && i > 1 {
                    return None;
                }
                break;
            }
        }
        let rec = self.rest.get(i..i + len)?;
        self.rest = &self.rest[i + len..];
        Some(rec)
    }
}

/// Bytes a record of `len` payload bytes takes in a framed file.
pub const fn framed_len(len: usize) -> usize {
    FRAME_HEADER_LEN + len
}

/// True when a record of `len` bytes goes into a packed frame (packed
/// framing): it fits a frame's [`PACKED_PAYLOAD`] on its own. A larger
/// record gets a data frame of its own, where 40 bytes are under 0.25 %.
pub const fn packable(len: usize) -> bool {
    PackedInfo::LEN + leb128_len(len) + len <= PACKED_PAYLOAD
}

/// The most bytes a record of `len` payload bytes can take in a packed
/// file: a packed frame of its own (or a data frame when it is too large
/// to pack).
pub const fn packed_len(len: usize) -> usize {
    if packable(len) {
        FRAME_HEADER_LEN + PackedInfo::LEN + leb128_len(len) + len
    } else {
        framed_len(len)
    }
}

/// Bytes per checksummed chunk of a raw file (1 MiB); the last chunk of a
/// file may be shorter.
pub const RAW_CHUNK: u64 = 1 << 20;

/// What a raw recording's sidecar stores about one of its files so that
/// `verify` can check it: its length and the CRC32C of each [`RAW_CHUNK`].
/// (Fields in the order of their names, as the sidecar has always had
/// them.)
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RawFileSums {
    /// CRC32C of each chunk, in order.
    pub chunk_crcs: Vec<u32>,
    /// Bytes written to it.
    pub len: u64,
    /// The file's name (no directory).
    pub name: String,
}

/// Checksums a raw file's bytes chunk by chunk as they are written (or
/// read back). Design choice: the writer sums what it wrote rather than
/// reading the files again at the end, so finishing stays quick and the
/// sums are of the bytes given; the vector grows by one `u32` per MiB on the
/// writer thread, never in `record()`.
#[derive(Debug, Default)]
pub struct RawSummer {
    sums: RawFileSums,
    in_chunk: u64,
    crc: u32,
}

impl RawSummer {
    /// Adds the next bytes of the current file.
    pub fn update(&mut self, mut b: &[u8]) {
        while !b.is_empty() {
            let n = ((RAW_CHUNK - self.in_chunk) as usize).min(b.len());
            self.crc = crate::crc::crc32c_append(self.crc, &b[..n]);
            self.in_chunk += n as u64;
            self.sums.len += n as u64;
            b = &b[n..];
            if self.in_chunk == RAW_CHUNK {
                self.sums.chunk_crcs.push(self.crc);
                (self.in_chunk, self.crc) = (0, 0);
            }
        }
    }

    /// Ends the current file, named `name`, and returns its sums; the next
    /// bytes start a new file.
    pub fn finish_file(&mut self, name: String) -> RawFileSums {
        if self.in_chunk > 0 {
            self.sums.chunk_crcs.push(self.crc);
        }
        let mut s = std::mem::take(self);
        s.sums.name = name;
        s.sums
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips_and_detects_a_flipped_bit() {
        let h = FileHeader {
            flags: FLAG_POOLED,
            generation: 7,
            created_ns: 1,
            created_mono_ns: 2,
            config_digest: 3,
            valid_len: 4,
            recording_id: 6,
            index: 5,
        };
        let mut b = h.encode();
        assert_eq!(FileHeader::decode(&b).unwrap(), h);
        b[20] ^= 1;
        assert_eq!(FileHeader::decode(&b), Err(DecodeError::BadCrc));
    }

    #[test]
    fn frame_round_trips_and_a_stale_generation_is_not_ours() {
        let mut h = [0u8; FRAME_HEADER_LEN];
        let crc = encode_frame_header(&mut h, 0x1_0000_0009, FrameKind::Data, 42, 99, 7, b"hello");
        let mut b = h.to_vec();
        b.extend_from_slice(b"hello");
        let (fh, p) = decode_frame(&b, 0x1_0000_0009).unwrap();
        assert_eq!(
            (fh.kind, fh.seq, fh.ts_ns, fh.prev, fh.crc, p),
            (FrameKind::Data, 42, 99, 7, crc, &b"hello"[..])
        );
        assert_eq!(
            decode_frame(&b, 8).unwrap_err(),
            DecodeError::StaleGeneration
        );
        b[FRAME_HEADER_LEN] ^= 0x20;
        assert_eq!(
            decode_frame(&b, 0x1_0000_0009).unwrap_err(),
            DecodeError::BadCrc
        );
    }

    #[test]
    fn raw_sums_split_at_chunk_boundaries_however_the_bytes_arrive() {
        let data: Vec<u8> = (0..(2 * RAW_CHUNK + 5)).map(|i| (i % 251) as u8).collect();
        let mut a = RawSummer::default();
        a.update(&data);
        let mut b = RawSummer::default();
        for piece in data.chunks(4093) {
            b.update(piece);
        }
        let (a, b) = (a.finish_file("x".into()), b.finish_file("x".into()));
        assert_eq!(a, b);
        assert_eq!(a.len, data.len() as u64);
        assert_eq!(a.chunk_crcs.len(), 3);
        assert_eq!(
            a.chunk_crcs[2],
            crate::crc::crc32c(&data[2 * RAW_CHUNK as usize..])
        );
    }

    #[test]
    fn packed_payloads_round_trip_and_refuse_wrong_counts_and_padded_lengths() {
        let recs: [&[u8]; 3] = [b"", &[7u8; 127], &[9u8; 300]];
        let mut p = PackedInfo {
            count: 3,
            span_ns: 77,
        }
        .encode()
        .to_vec();
        for r in recs {
            put_leb128(&mut p, r.len());
            p.extend_from_slice(r);
        }
        assert_eq!(p.len(), 12 + 1 + 1 + 127 + 2 + 300);
        let (info, bytes) = PackedInfo::decode(&p).unwrap();
        assert_eq!((info.count, info.span_ns, bytes), (3, 77, 427));
        assert!(PackedRecords::new(&p).eq(recs.iter().copied()));
        let mut wrong = p.clone();
        wrong[0] = 4;
        assert_eq!(PackedInfo::decode(&wrong), None);
        assert_eq!(PackedInfo::decode(&p[..p.len() - 1]), None);
        // 0x80 0x00 is a padded 0: not canonical.
        let mut padded = PackedInfo {
            count: 1,
            span_ns: 0,
        }
        .encode()
        .to_vec();
        padded.extend_from_slice(&[0x80, 0x00]);
        assert_eq!(PackedInfo::decode(&padded), None);
        assert_eq!(
            (leb128_len(127), leb128_len(128), leb128_len(16383)),
            (1, 2, 2)
        );
    }

    #[test]
    fn payloads_round_trip() {
        let l = LossPayload {
            first_seq: 3,
            count: 9,
            reason: LossReason::RingFull,
        };
        assert_eq!(LossPayload::decode(&l.encode()), Some(l));
        let e = EndPayload {
            complete: false,
            continued: true,
            interrupted: false,
            records_written: 1,
            records_dropped: 2,
            bytes_written: 3,
            post_ns: 4,
            post_records: 5,
            reason: "stdin closed".into(),
        };
        assert_eq!(EndPayload::decode(&e.encode()), Some(e));
        let i = Interrupted {
            durable_seq: 7,
            cut_records: 2,
            cut_bytes: 4096,
        };
        let closed = EndPayload {
            interrupted: true,
            reason: i.reason(),
            ..EndPayload::decode(&EndPayload::default().encode()).unwrap()
        };
        let back = EndPayload::decode(&closed.encode()).unwrap();
        assert!(back.interrupted && !back.complete && !back.continued);
        assert_eq!(Interrupted::parse(&back.reason), Some(i));
        assert_eq!(
            Interrupted::parse("interrupted, closed by recover: durable_seq=1"),
            None
        );
        let t = TriggerPayload {
            trigger_ns: 1,
            trigger_seq: 2,
            pre_ns: 3,
            pre_records: 4,
            trigger_wall_ns: 5,
        };
        assert_eq!(TriggerPayload::decode(&t.encode()), Some(t));
        let r = RetiredPayload {
            first_index: 0,
            next_index: 3,
            first_seq: 0,
            next_seq: 300,
            files: 3,
            bytes: 3 << 20,
            last_wall_ns: 9,
        };
        assert_eq!(RetiredPayload::decode(&r.encode()), Some(r));
        let lying = RetiredPayload { files: 2, ..r };
        assert_eq!(RetiredPayload::decode(&lying.encode()), None);
    }

    #[test]
    fn only_a_loop_recording_is_written_as_version_5() {
        let h = FileHeader {
            flags: 0,
            generation: 1,
            created_ns: 1,
            created_mono_ns: 1,
            config_digest: 1,
            valid_len: 0,
            recording_id: 1,
            index: 0,
        };
        assert_eq!(u16_at(&h.encode(), 8), 4);
        let l = FileHeader {
            flags: FLAG_LOOP,
            ..h
        };
        assert_eq!(u16_at(&l.encode(), 8), 5);
        assert_eq!(FileHeader::decode(&l.encode()).unwrap(), l);
    }
}
