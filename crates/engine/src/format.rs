//! The on-disk format: one file header, then one frame per record. This
//! module owns the byte layout (encoding and decoding of single items);
//! [`crate::reader`] walks whole files.
//!
//! All integers are little-endian. The layout is documented for users in
//! `docs/format.md`; change both together and bump [`FORMAT_VERSION`].
//!
//! ```text
//! file header (64 bytes, at offset 0)
//!   0  magic        8  b"RTREC\0\r\n"
//!   8  version      2  FORMAT_VERSION
//!  10  header_len   2  64
//!  12  flags        4  FLAG_POOLED | FLAG_SLOT
//!  16  generation   8  changes every time the file is (re)used
//!  24  created_ns   8  CLOCK_REALTIME at creation
//!  32  created_mono 8  CLOCK_MONOTONIC at creation (frame timestamps use it)
//!  40  config       8  digest of the recorder configuration
//!  48  valid_len    8  end of the last frame once the file is finished, 0 before
//!  56  index        4  position of this file in its recording (0, 1, ...)
//!  60  crc          4  CRC32C of bytes 0..60
//!
//! frame header (40 bytes) followed by `len` payload bytes
//!   0  magic        4  b"RFRM"
//!   4  gen          4  low 32 bits of the file's generation
//!   8  kind         2  1 data, 2 loss, 3 end, 4 trigger
//!  10  flags        2  reserved, 0
//!  12  len          4  payload length
//!  16  seq          8  record sequence number (data), next sequence (others)
//!  24  ts_ns        8  CLOCK_MONOTONIC when record() was called
//!  32  crc          4  CRC32C of frame bytes 0..32 then the payload
//!  36  reserved     4  0
//! ```
//!
//! Design choices: the generation in every frame makes stale frames left in a
//! recycled file (an earlier life) recognisable as "not ours" rather than as
//! corruption; the CRC covers the header so a torn header is caught; 40 bytes
//! keeps payloads 8-byte aligned when the previous payload is.

use std::fmt;

/// Bytes that open every rtrec file.
pub const FILE_MAGIC: [u8; 8] = *b"RTREC\0\r\n";
/// Bytes that open every frame.
pub const FRAME_MAGIC: [u8; 4] = *b"RFRM";
/// Current format version.
pub const FORMAT_VERSION: u16 = 1;
/// Size of the file header.
pub const HEADER_LEN: usize = 64;
/// Size of a frame header.
pub const FRAME_HEADER_LEN: usize = 40;
/// The largest payload a frame may carry (1 GiB); a longer length field is
/// treated as damage.
pub const MAX_PAYLOAD: u32 = 1 << 30;

/// Header flag: a recording in a pool file. It is never truncated; its data
/// end at `valid_len` (or, if unfinished, at the first frame that is not of
/// this generation).
pub const FLAG_POOLED: u32 = 1;
/// Header flag: an unused pool slot, not a recording.
pub const FLAG_SLOT: u32 = 2;

/// The file header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileHeader {
    /// [`FLAG_POOLED`], [`FLAG_SLOT`].
    pub flags: u32,
    /// Changes each time the file is (re)used; frames carry its low 32 bits.
    pub generation: u64,
    /// `CLOCK_REALTIME` at creation, ns since the Unix epoch.
    pub created_ns: u64,
    /// `CLOCK_MONOTONIC` at creation, ns (frame timestamps use this clock).
    pub created_mono_ns: u64,
    /// Digest of the recorder configuration that wrote the file.
    pub config_digest: u64,
    /// Offset just past the last frame once the file is finished; 0 while
    /// recording (or after a crash).
    pub valid_len: u64,
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
    /// Reserved bytes are not zero (they are outside the checksum, so they
    /// are checked for zero instead).
    Reserved,
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
            DecodeError::Reserved => "reserved bytes set",
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
        b[8..10].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
        b[10..12].copy_from_slice(&(HEADER_LEN as u16).to_le_bytes());
        b[12..16].copy_from_slice(&self.flags.to_le_bytes());
        b[16..24].copy_from_slice(&self.generation.to_le_bytes());
        b[24..32].copy_from_slice(&self.created_ns.to_le_bytes());
        b[32..40].copy_from_slice(&self.created_mono_ns.to_le_bytes());
        b[40..48].copy_from_slice(&self.config_digest.to_le_bytes());
        b[48..56].copy_from_slice(&self.valid_len.to_le_bytes());
        b[56..60].copy_from_slice(&self.index.to_le_bytes());
        let crc = crc32c::crc32c(&b[0..60]);
        b[60..64].copy_from_slice(&crc.to_le_bytes());
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
        if v != FORMAT_VERSION || u16_at(b, 10) as usize != HEADER_LEN {
            return Err(DecodeError::Version(v));
        }
        if crc32c::crc32c(&b[0..60]) != u32_at(b, 60) {
            return Err(DecodeError::BadCrc);
        }
        Ok(FileHeader {
            flags: u32_at(b, 12),
            generation: u64_at(b, 16),
            created_ns: u64_at(b, 24),
            created_mono_ns: u64_at(b, 32),
            config_digest: u64_at(b, 40),
            valid_len: u64_at(b, 48),
            index: u32_at(b, 56),
        })
    }
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
}

impl FrameKind {
    fn from_u16(v: u16) -> Option<FrameKind> {
        match v {
            1 => Some(FrameKind::Data),
            2 => Some(FrameKind::Loss),
            3 => Some(FrameKind::End),
            4 => Some(FrameKind::Trigger),
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
}

/// Encodes a frame header for `payload` into `out` (exactly
/// [`FRAME_HEADER_LEN`] bytes). Allocation-free: used on the write path.
pub fn encode_frame_header(
    out: &mut [u8; FRAME_HEADER_LEN],
    generation: u64,
    kind: FrameKind,
    seq: u64,
    ts_ns: u64,
    payload: &[u8],
) {
    out[0..4].copy_from_slice(&FRAME_MAGIC);
    out[4..8].copy_from_slice(&(generation as u32).to_le_bytes());
    out[8..10].copy_from_slice(&(kind as u16).to_le_bytes());
    out[10..12].copy_from_slice(&0u16.to_le_bytes());
    out[12..16].copy_from_slice(&(payload.len() as u32).to_le_bytes());
    out[16..24].copy_from_slice(&seq.to_le_bytes());
    out[24..32].copy_from_slice(&ts_ns.to_le_bytes());
    let crc = crc32c::crc32c_append(crc32c::crc32c(&out[0..32]), payload);
    out[32..36].copy_from_slice(&crc.to_le_bytes());
    out[36..40].copy_from_slice(&0u32.to_le_bytes());
}

/// Decodes the frame at the start of `b` (header and payload must both be
/// in `b`) for a file of `generation`. Returns the header and the payload.
pub fn decode_frame(b: &[u8], generation: u64) -> Result<(FrameHeader, &[u8]), DecodeError> {
    if b.len() < FRAME_HEADER_LEN {
        if b.iter().all(|&x| x == 0) {
            return Err(DecodeError::Zero);
        }
        return Err(DecodeError::Short);
    }
    let h = &b[..FRAME_HEADER_LEN];
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
    if len > MAX_PAYLOAD {
        return Err(DecodeError::BadLength);
    }
    let end = FRAME_HEADER_LEN + len as usize;
    if b.len() < end {
        return Err(DecodeError::Short);
    }
    let payload = &b[FRAME_HEADER_LEN..end];
    let crc = crc32c::crc32c_append(crc32c::crc32c(&h[0..32]), payload);
    if crc != u32_at(h, 32) {
        return Err(DecodeError::BadCrc);
    }
    if u32_at(h, 36) != 0 {
        return Err(DecodeError::Reserved);
    }
    Ok((
        FrameHeader {
            kind,
            len,
            seq: u64_at(h, 16),
            ts_ns: u64_at(h, 24),
        },
        payload,
    ))
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
            _ => return None,
        };
        Some(LossPayload {
            first_seq: u64_at(b, 0),
            count: u64_at(b, 8),
            reason,
        })
    }
}

/// Payload of the [`FrameKind::End`] frame that closes a file.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct EndPayload {
    /// True when the recording ended as asked; false when it was aborted.
    pub complete: bool,
    /// True when the recording continues in the next file (rotation).
    pub continued: bool,
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
        let flags = (self.complete as u32) | ((self.continued as u32) << 1);
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
            records_written: u64_at(b, 8),
            records_dropped: u64_at(b, 16),
            bytes_written: u64_at(b, 24),
            post_ns: u64_at(b, 32),
            post_records: u64_at(b, 40),
            reason: String::from_utf8_lossy(&b[Self::FIXED_LEN..]).into_owned(),
        })
    }
}

/// Payload of a [`FrameKind::Trigger`] frame (flight recorder).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TriggerPayload {
    /// `CLOCK_MONOTONIC` ns of the trigger.
    pub trigger_ns: u64,
    /// Sequence number of the first record after the trigger.
    pub trigger_seq: u64,
    /// Span of pre-trigger data actually captured, ns.
    pub pre_ns: u64,
    /// Pre-trigger records actually captured.
    pub pre_records: u64,
}

impl TriggerPayload {
    /// Encoded length.
    pub const LEN: usize = 32;
    /// Encodes into 32 bytes.
    pub fn encode(&self) -> [u8; Self::LEN] {
        let mut b = [0u8; Self::LEN];
        b[0..8].copy_from_slice(&self.trigger_ns.to_le_bytes());
        b[8..16].copy_from_slice(&self.trigger_seq.to_le_bytes());
        b[16..24].copy_from_slice(&self.pre_ns.to_le_bytes());
        b[24..32].copy_from_slice(&self.pre_records.to_le_bytes());
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
        })
    }
}

/// Bytes a record of `len` payload bytes takes in a framed file.
pub const fn framed_len(len: usize) -> usize {
    FRAME_HEADER_LEN + len
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
        encode_frame_header(&mut h, 0x1_0000_0009, FrameKind::Data, 42, 99, b"hello");
        let mut b = h.to_vec();
        b.extend_from_slice(b"hello");
        let (fh, p) = decode_frame(&b, 0x1_0000_0009).unwrap();
        assert_eq!(
            (fh.kind, fh.seq, fh.ts_ns, p),
            (FrameKind::Data, 42, 99, &b"hello"[..])
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
            records_written: 1,
            records_dropped: 2,
            bytes_written: 3,
            post_ns: 4,
            post_records: 5,
            reason: "stdin closed".into(),
        };
        assert_eq!(EndPayload::decode(&e.encode()), Some(e));
        let t = TriggerPayload {
            trigger_ns: 1,
            trigger_seq: 2,
            pre_ns: 3,
            pre_records: 4,
        };
        assert_eq!(TriggerPayload::decode(&t.encode()), Some(t));
    }
}
