//! What `verify` says of a file: the [`FileReport`] and its parts (the
//! verdict, gaps, damaged ranges, a crash hole), and the few ways a check
//! adds a finding to it, so every check words and bounds them alike.
//!
//! Design choice: lists in a report (gaps, damaged ranges, notes,
//! triggers) stop growing at [`MAX_LISTED`] entries while their totals
//! keep counting, so a report's memory is bounded whatever the file holds.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::format::{EndPayload, RetiredPayload, TriggerPayload};

/// For serde: leave a zero count out.
fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Entries kept in each list of a [`FileReport`]; totals count on.
pub const MAX_LISTED: usize = 64;

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
    /// Interrupted, then closed by `rtrec recover`: an end frame with the
    /// flag [`END_INTERRUPTED`](crate::format::END_INTERRUPTED) ends the
    /// records that were intact, and the file is finished. Clean (`verify`
    /// exit 0): what the crash cut is said in the end frame, and a record
    /// dropped while recording is still a loss.
    Interrupted,
    /// Damaged, misplaced or missing data.
    Corrupt,
    /// The file itself is intact, but files of its recording before it
    /// are missing (the recording's first files, or files between the one
    /// before and this one): the records they held are counted in
    /// `missing_records` when the neighbours tell. Set by the recording's
    /// check. (A missing LAST file leaves the file before it
    /// [`FileStatus::Unfinished`] with [`FileReport::lost_after`].)
    Incomplete,
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

/// Leading files of a loop recording that the loop retired (not lost):
/// what the recording's check concluded from the files present and their
/// [`RetiredPayload`] claims.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Retired {
    /// The first retired file's index (0).
    pub first_index: u32,
    /// The last retired file's index (the file before the first kept).
    pub last_index: u32,
    /// The first retired record's sequence number (0).
    pub first_seq: u64,
    /// The first record not retired (the first kept file's first), when
    /// known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_seq: Option<u64>,
    /// `CLOCK_REALTIME` ns of the latest retirement a surviving claim
    /// states; `None` when no claim survived (the files were retired
    /// before the first kept file was created).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_wall_ns: Option<u64>,
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
    /// Files of its recording missing right before this one (its first
    /// files, or files between the one before and this one).
    #[serde(skip_serializing_if = "is_zero")]
    pub files_missing_before: u32,
    /// The recording continues after this file in files that are
    /// missing: the sequence number they started at. How many records
    /// they held is not known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost_after: Option<u64>,
    /// A copy of a recording's file made by `rtrec export --framed`
    /// (header flag `COPY`): a recording of its own.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub copy: bool,
    /// An unused pool slot (header flag `SLOT`): not part of a recording.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub slot: bool,
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
    /// A file of a loop recording (header flag `LOOP`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub loop_recording: bool,
    /// A loop recording's file after its first: the claim it opens with
    /// (what was retired before it began).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retired_claim: Option<RetiredPayload>,
    /// The first kept file of a loop recording whose leading files were
    /// retired: which (set by the recording's check).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retired: Option<Retired>,
    /// The recording's layout, from the file's layout frame (format
    /// version 6, header flag `LAYOUT`): its canonical text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layout: Option<String>,
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
    /// An empty report on `path`: not an rtrec file until a check says
    /// otherwise.
    pub(super) fn new(path: &Path) -> FileReport {
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
            files_missing_before: 0,
            lost_after: None,
            copy: false,
            slot: false,
            gaps: Vec::new(),
            unstored_drops: 0,
            stored: None,
            opens_with_trigger: false,
            loop_recording: false,
            retired_claim: None,
            retired: None,
            layout: None,
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
        matches!(
            self.status,
            FileStatus::Complete | FileStatus::Interrupted | FileStatus::Raw
        )
    }

    /// Adds a finding.
    pub(super) fn note(&mut self, s: String) {
        if self.notes.len() < MAX_LISTED {
            self.notes.push(s);
        } else {
            self.notes_omitted += 1;
        }
    }

    /// Marks the file incomplete (files of its recording next to it are
    /// missing) with a finding, unless it is corrupt.
    pub(super) fn incomplete(&mut self, s: String) {
        if self.status != FileStatus::Corrupt {
            self.status = FileStatus::Incomplete;
        }
        self.note(s);
    }

    /// Marks the file corrupt at `off` with a finding.
    pub(super) fn corrupt(&mut self, off: u64, s: String) {
        self.corrupt_at.get_or_insert(off);
        self.status = FileStatus::Corrupt;
        self.note(s);
    }

    /// Records `count` missing records from `first_seq`.
    pub(super) fn missing(&mut self, first_seq: u64, count: u64, where_: &str) {
        self.gap(first_seq, count);
        self.note(format!(
            "{count} record(s) from sequence {first_seq} are missing{where_} and no loss frame explains them"
        ));
    }

    /// Counts `count` missing records from `first_seq` and lists the gap,
    /// without a finding (the caller words it).
    pub(super) fn gap(&mut self, first_seq: u64, count: u64) {
        self.missing_records = self.missing_records.saturating_add(count);
        if self.gaps.len() < MAX_LISTED {
            self.gaps.push(Gap { first_seq, count });
        }
    }

    /// Records the damaged byte range `start..end` and marks the file
    /// corrupt there.
    pub(super) fn damage(&mut self, start: u64, end: u64, what: String) {
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
