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
//! - A loop recording (header flag `LOOP`, format version 5): every file
//!   after the first opens with a `RETIRED` frame, whose claim (files
//!   `0..next_index` retired, up to sequence `next_seq`) no file present
//!   may contradict (a file claimed as the first kept one starts exactly at
//!   `next_seq`; claims only grow from file to file). A missing run of
//!   LEADING files is retired, not lost, only as far as the recording's
//!   newest claim or the directory's retirement record ([`RetiredRecord`],
//!   for a recording a later loop's budget retired) covers it; beyond
//!   that, and in the middle or at the end, a missing file is missing.
//! - A missing file is a loss, never an absence: the file next to it is
//!   `incomplete` (its recording's first files, files between two present
//!   ones: with the records they held when the neighbours tell; files
//!   after a last file that says "continued": an unknown count after its
//!   last sequence number). A copy made by `rtrec export --framed` (header
//!   flag `COPY`) is a recording of its own, never grouped with its source.
//!
//!
//! The reader in modules, each after those it uses:
//!
//! | module | owns |
//! |---|---|
//! | `source` | bytes at any offset ([`ByteSource`], [`open_regular`]) and the one window ([`READ_BUF`]) a walk reads through |
//! | `walk` | the frame walk: one file's frames in order, each valid on its own and chained ([`FrameWalker`], [`walk_frames`]) |
//! | `report` | what `verify` says of a file ([`FileReport`]) and how a check adds a finding |
//! | `hole` | a crash hole after the durable mark: the evidence of a missing write ([`SECTOR`]) and the frames after it, counted |
//! | `retired` | the directory's retirement record (`.retired`): which files of earlier recordings a loop's budget retired ([`RetiredRecord`]), written durably before they leave |
//! | `shipped` | the directory's shipping ledger (`.shipped`): which closed recordings `rtrec ship` has put in object storage, verified, and its multipart uploads under way ([`ShipLedger`]) |
//! | `raw` | a raw file against its sidecar ([`raw_sidecar`]) |
//! | `file` | one file's check ([`verify_file`], [`verify_source`], [`verify_bytes`]) |
//! | `recording` | which files make a recording ([`group_files`], the one place files are grouped; [`recording_groups`] for verified reports) and its check: its files against each other ([`check_continuity`], [`recording_files`]) |
//!
//! Design choices: the walk reads through one fixed window ([`READ_BUF`])
//! with positioned reads, so memory does not grow with the file or a frame
//! (payloads are checksummed chunk by chunk; only loss, end and trigger
//! payloads, at most [`MAX_MARKER_PAYLOAD`](crate::format::MAX_MARKER_PAYLOAD)
//! bytes, and packed payloads, at most
//! [`MAX_PACKED_PAYLOAD`](crate::format::MAX_PACKED_PAYLOAD), are held);
//! lists in a report (gaps, damaged ranges, notes) stop growing at
//! [`MAX_LISTED`] entries while their totals keep counting. This module
//! only names the parts and re-exports them (`rtrec_engine::reader::…`):
//! no part imports it back.

mod file;
mod hole;
mod raw;
mod recording;
mod report;
mod retired;
mod shipped;
mod source;
mod walk;

pub use file::{verify_bytes, verify_file, verify_source};
pub use hole::SECTOR;
pub use raw::raw_sidecar;
pub use recording::{
    check_continuity, check_continuity_in, group_files, recording_files, recording_groups,
    GroupKey, Scope,
};
pub use report::{ByteRange, CrashHole, FileReport, FileStatus, Gap, Retired, MAX_LISTED};
pub use retired::{RetiredRange, RetiredRecord, RETIRED_RECORD};
pub use shipped::{LedgerEntry, ShipLedger, SHIP_LEDGER};
pub use source::{open_regular, ByteSource, READ_BUF};
pub use walk::{read_header, walk_frames, Frame, FrameWalker, Step, Stop, WalkEnd};
