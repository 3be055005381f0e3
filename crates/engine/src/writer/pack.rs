//! Packed framing's open frame: records of consecutive sequence numbers
//! gathered in one buffer, allocated once ([`PACKED_PAYLOAD`] bytes), and
//! sealed into the payload of one [`FrameKind::Packed`](crate::format::FrameKind::Packed)
//! frame. When a frame is sealed — full, before a frame of another kind,
//! before rotating, after `max_latency_ns` — is the writer's decision
//! (see its module docs); this part only keeps the frame and says whether
//! a record fits and whether the frame is due.

use crate::config::Framing;
use crate::format::{self, PackedInfo, FRAME_HEADER_LEN, PACKED_PAYLOAD};

/// The frame being filled.
pub(super) struct Pack {
    /// [`PackedInfo`] space, then each record behind its LEB128 length.
    buf: Vec<u8>,
    /// Records in it (0: no open frame).
    count: u32,
    /// Their payload bytes.
    bytes: u64,
    /// Sequence number and time of the first record.
    first_seq: u64,
    first_ts: u64,
    /// Time of the last record.
    last_ts: u64,
}

/// A frame taken out of the [`Pack`] to be written: its payload (the
/// buffer, given back with [`Pack::put_back`]) and what it holds.
pub(super) struct Sealed {
    /// The packed payload: [`PackedInfo`], then the records.
    pub(super) buf: Vec<u8>,
    /// Records in it.
    pub(super) records: u64,
    /// Their payload bytes.
    pub(super) bytes: u64,
    /// Sequence number and time of the first record.
    pub(super) first_seq: u64,
    pub(super) first_ts: u64,
}

impl Pack {
    /// No open frame; with packed `framing`, the buffer's whole capacity
    /// is reserved now, so no record allocates.
    pub(super) fn new(framing: Framing) -> Pack {
        let mut pack = Pack {
            buf: Vec::new(),
            count: 0,
            bytes: 0,
            first_seq: 0,
            first_ts: 0,
            last_ts: 0,
        };
        if framing == Framing::Packed {
            pack.buf.reserve_exact(PACKED_PAYLOAD);
        }
        pack
    }

    /// The bytes a record of `len` bytes takes in a packed payload (its
    /// LEB128 length included).
    pub(super) fn record_len(len: usize) -> usize {
        format::leb128_len(len) + len
    }

    /// True while a frame is open.
    pub(super) fn is_open(&self) -> bool {
        self.count > 0
    }

    /// True when a record taking `add` bytes does not fit in the open
    /// frame, or the frame grown by it not in the current file, which
    /// ends at `offset` (`None`: no file) and holds `usable` bytes.
    pub(super) fn overflows(&self, add: usize, offset: Option<u64>, usable: u64) -> bool {
        let framed = (FRAME_HEADER_LEN + self.buf.len() + add) as u64;
        let in_file = offset.is_some_and(|o| o + framed <= usable);
        self.buf.len() + add > PACKED_PAYLOAD || !in_file
    }

    /// Opens a frame whose first record is `seq`, of time `ts_ns`.
    pub(super) fn open(&mut self, seq: u64, ts_ns: u64) {
        self.buf.clear();
        self.buf.extend_from_slice(&[0; PackedInfo::LEN]);
        self.first_seq = seq;
        self.first_ts = ts_ns;
    }

    /// Adds a record of time `ts_ns` to the open frame.
    pub(super) fn add(&mut self, payload: &[u8], ts_ns: u64) {
        // Within the capacity reserved at creation: no allocation.
        format::put_leb128(&mut self.buf, payload.len());
        self.buf.extend_from_slice(payload);
        self.count += 1;
        self.bytes += payload.len() as u64;
        self.last_ts = ts_ns;
    }

    /// True when the open frame's first record has waited `bound` ns at
    /// `now` (`CLOCK_MONOTONIC`).
    pub(super) fn due(&self, now: u64, bound: u64) -> bool {
        self.count > 0 && now.saturating_sub(self.first_ts) >= bound
    }

    /// How long from `now` until the open frame is due after `bound` ns
    /// ([`Pack::due`]); `None` when no frame is open.
    pub(super) fn due_in(&self, now: u64, bound: u64) -> Option<u64> {
        (self.count > 0).then(|| (self.first_ts + bound).saturating_sub(now))
    }

    /// Closes the open frame, if any: its [`PackedInfo`] written in front,
    /// its buffer taken out for the write (no allocation; give it back
    /// with [`Pack::put_back`]). No frame is open after it.
    pub(super) fn take(&mut self) -> Option<Sealed> {
        if self.count == 0 {
            return None;
        }
        let info = PackedInfo {
            count: self.count,
            span_ns: self.last_ts.saturating_sub(self.first_ts),
        };
        self.buf[..PackedInfo::LEN].copy_from_slice(&info.encode());
        let (records, bytes) = (self.count as u64, self.bytes);
        (self.count, self.bytes) = (0, 0);
        Some(Sealed {
            buf: std::mem::take(&mut self.buf),
            records,
            bytes,
            first_seq: self.first_seq,
            first_ts: self.first_ts,
        })
    }

    /// Gives back the buffer [`Pack::take`] lent.
    pub(super) fn put_back(&mut self, buf: Vec<u8>) {
        self.buf = buf;
    }
}
