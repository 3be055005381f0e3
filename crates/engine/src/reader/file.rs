//! One file's check: what `verify` says of a file. A framed file is read
//! by its frames ([`verify_source`]): its header first, then every frame
//! through the walk, each against the rules of the reader's module docs
//! (sequence, timestamps, loss, trigger and end frames, the durable mark),
//! then the verdict. A raw file is checked against its sidecar
//! ([`super::raw`]).
//!
//! Design choice: [`verify_source`] is a sequence of named steps —
//! [`identify`] (the header), [`check_valid_len`], the walk
//! ([`FileCheck::walk`]: per frame, the rules of the durable mark first,
//! then those of every file), [`verdict`] — so each rule has one place.

use std::io;
use std::path::Path;

use crate::file::RAW_EXT;
use crate::format::{
    DecodeError, EndPayload, FileHeader, FrameHeader, FrameKind, Interrupted, LossPayload,
    LossReason, PackedInfo, RetiredPayload, TriggerPayload, FLAG_COPY, FLAG_LAYOUT, FLAG_POOLED,
    FLAG_SLOT, FORMAT_VERSION, HEADER_LEN, OLDEST_READ_VERSION,
};
use crate::layout::Layout;

use super::hole::{crash_hole, missing_write, Hole};
use super::raw::verify_raw;
use super::report::{FileReport, FileStatus, MAX_LISTED};
use super::source::{open_regular, ByteSource};
use super::walk::{read_header, Frame, FrameWalker, Step, Stop};

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

/// Verifies one framed file read from `src`, in constant memory.
pub fn verify_source<S: ?Sized + ByteSource>(path: &Path, src: &S) -> io::Result<FileReport> {
    let mut r = FileReport::new(path);
    let Some(header) = identify(&mut r, src)? else {
        return Ok(r);
    };
    check_valid_len(&mut r, &header, src.size()?);
    let mut walker = FrameWalker::new(src, &header)?;
    let mut c = FileCheck::new(&mut r, header);
    c.walk(&mut walker)?;
    let next = c.exp;
    r.next_seq = next;
    verdict(&mut r);
    Ok(r)
}

/// [`verify_source`]'s first step: reads the header into `r`. `None` when
/// there is nothing more to read: the header is damaged, of another format
/// version or not ours (`r` says which), or the file is an unused pool
/// slot. Otherwise the file is unfinished until its frames say more.
fn identify<S: ?Sized + ByteSource>(r: &mut FileReport, src: &S) -> io::Result<Option<FileHeader>> {
    let header = match read_header(src)? {
        Ok(h) => h,
        Err(DecodeError::BadCrc) => {
            r.corrupt(0, "the file header is damaged (checksum mismatch)".into());
            return Ok(None);
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
            return Ok(None);
        }
        Err(e) => {
            r.note(format!("not an rtrec recording ({e} at the start)"));
            return Ok(None);
        }
    };
    r.generation = Some(header.generation);
    r.recording_id = Some(header.recording_id);
    r.index = Some(header.index);
    r.created_wall_ns = Some(header.created_ns);
    r.loop_recording = header.is_loop();
    r.copy = header.flags & FLAG_COPY != 0;
    r.slot = header.flags & FLAG_SLOT != 0;
    if r.slot {
        r.note("an unused pool slot, not a recording".into());
        return Ok(None);
    }
    // Unknown until the end: Corrupt is set as soon as something is found.
    r.status = FileStatus::Unfinished;
    r.valid_len = HEADER_LEN as u64;
    Ok(Some(header))
}

/// [`verify_source`]'s step for the header's valid length (or durable
/// mark): it must lie inside the file of `size` bytes and after the
/// header.
fn check_valid_len(r: &mut FileReport, header: &FileHeader, size: u64) {
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
}

/// What the rules of the durable mark make of one step of the walk.
enum AtMark {
    /// The step is read by the rules of every file.
    Read,
    /// The step is fully judged (a stop below the mark).
    Skip,
    /// A crash hole starts at `.0`; frames of ours resume at `.1`.
    Hole(u64, u64, Hole),
}

/// The per-frame rules of one file (see the module docs).
struct FileCheck<'r> {
    r: &'r mut FileReport,
    header: FileHeader,
    /// The header has a valid length: the file was finished.
    finished: bool,
    /// A pool file: an earlier life's bytes may follow ours.
    pooled: bool,
    /// The durable mark of an unfinished file (format version 4).
    mark: Option<u64>,
    /// The sequence number the next frame must have, once known.
    exp: Option<u64>,
    /// The time of the last record read.
    last_ts: Option<u64>,
    /// Damage was found: records read after it are salvageable.
    damaged: bool,
}

impl<'r> FileCheck<'r> {
    /// The check of the file whose header is `header`, reporting into `r`
    /// (which takes its durable mark).
    fn new(r: &'r mut FileReport, header: FileHeader) -> FileCheck<'r> {
        let mark = header.durable_mark();
        r.durable_mark = mark;
        FileCheck {
            r,
            finished: header.finished_len().is_some(),
            pooled: header.flags & FLAG_POOLED != 0,
            mark,
            header,
            exp: None,
            last_ts: None,
            damaged: false,
        }
    }

    /// Reads every step of `walker` by the rules of the durable mark, then
    /// by those of every file; a crash hole ends the data (the frames after
    /// it are counted apart, [`crash_hole`]).
    fn walk<S: ?Sized + ByteSource>(&mut self, walker: &mut FrameWalker<'_, S>) -> io::Result<()> {
        while let Some(step) = walker.next_step()? {
            match self.at_mark(walker, &step)? {
                AtMark::Read => self.step(step, walker.limit()),
                AtMark::Skip => {}
                AtMark::Hole(start, end, ev) => {
                    return crash_hole(self.r, walker, start, end, ev);
                }
            }
        }
        Ok(())
    }

    /// Rules 4 and 5 with a durable mark: below it every byte is a chained
    /// frame; after it, the first bad region ends the data, and it is a
    /// crash hole when it shows a missing write.
    fn at_mark<S: ?Sized + ByteSource>(
        &mut self,
        walker: &mut FrameWalker<'_, S>,
        step: &Step,
    ) -> io::Result<AtMark> {
        let Some(m) = self.mark else {
            return Ok(AtMark::Read);
        };
        match step {
            Step::Frame(f) if f.off < m && f.end() > m => self.r.damage(
                f.off,
                f.end(),
                format!("the frame here crosses the durable mark {m}, which ends a frame"),
            ),
            Step::Damage { start, end, .. } if *start >= m => {
                let (start, end) = (*start, *end);
                let generation = self.header.generation;
                let pooled = self.pooled;
                if let Some(ev) = missing_write(walker.window(), start, end, generation, pooled)? {
                    return Ok(AtMark::Hole(start, end, ev));
                }
            }
            Step::Stop(at, stop) if *at < m => {
                if *stop != Stop::Eof {
                    self.r.damage(
                        *at,
                        m,
                        format!("no frame where the durable mark {m} says data were made durable"),
                    );
                }
                return Ok(AtMark::Skip);
            }
            _ => {}
        }
        Ok(AtMark::Read)
    }

    /// One step of the walk by the rules of every file; `limit`: where the
    /// walk ends at the latest.
    fn step(&mut self, step: Step, limit: u64) {
        match step {
            Step::Frame(f) => self.frame(&f),
            Step::Damage { start, end, error } => {
                self.damaged = true;
                self.r.damage(
                    start,
                    end,
                    format!("{error}; reading resumed at the next valid frame"),
                );
                // The next frame's place in the sequence is unknown: the
                // damaged bytes held an unknown number of records.
            }
            Step::Stop(at, stop) => self.stop(at, stop, limit),
        }
    }

    /// Where and why the walk stopped at `at`: inside a finished file's
    /// valid length, anything but its end frame is damage; an unfinished
    /// file may end at unwritten bytes or a torn tail.
    fn stop(&mut self, at: u64, stop: Stop, limit: u64) {
        let finished = self.finished;
        match stop {
            Stop::EndFrame => {}
            Stop::Eof if finished => self.r.corrupt(
                at,
                format!(
                    "no end frame inside the recorded valid length {}",
                    self.header.valid_len
                ),
            ),
            Stop::Eof => {}
            Stop::Unwritten if finished => {
                self.r.damage(
                    at,
                    limit,
                    "unwritten or stale bytes inside the recorded valid length".into(),
                );
            }
            Stop::Unwritten => {}
            Stop::Torn(e, _) if finished => {
                self.r
                    .damage(at, limit, format!("{e}, inside the recorded valid length"));
            }
            Stop::Torn(e, tail) if self.pooled => {
                // In a pool file an earlier life's bytes follow ours; a
                // cut frame of ours cannot be told from them, and need
                // not be.
                let _ = (e, tail);
                self.r.note(format!(
                    "this recording's data end at offset {at}; older data of the pool file follow"
                ));
            }
            Stop::Torn(e, tail) => {
                self.r.torn_tail_bytes = tail;
                self.r.note(format!("torn tail of {tail} bytes at offset {at} ({e}); the records before it are intact"));
            }
        }
    }

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
        if h.kind == FrameKind::Layout {
            // Not the file's first frame for the rules below: it comes
            // before the retired claim and the trigger.
            return self.layout(f);
        }
        if off == HEADER_LEN as u64 && self.header.has_layout() {
            self.r.corrupt(
                off,
                "the header says a layout frame comes first; it does not".into(),
            );
        }
        let first = self.r.first_seq.is_none();
        if first {
            self.first_frame(off, h);
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
            FrameKind::Retired => self.retired(f, first),
            FrameKind::Layout => self.layout(f),
        }
    }

    /// The rules of a file's first frame (after its layout frame, if it
    /// has one): where its sequence starts, a trigger first in an event's
    /// file, a loop file's RETIRED claim.
    fn first_frame(&mut self, off: u64, h: &FrameHeader) {
        self.r.first_seq = Some(h.seq);
        self.r.opens_with_trigger = h.kind == FrameKind::Trigger;
        if self.header.index == 0 && h.kind != FrameKind::Trigger {
            // A recording starts at sequence 0.
            self.exp = Some(0);
        }
        let idx = self.header.index;
        if self.header.is_loop() && idx > 0 && h.kind != FrameKind::Retired {
            self.r.corrupt(
                off,
                format!("file {idx} of a loop recording does not open with its RETIRED frame"),
            );
        }
    }

    /// The layout frame: exactly the first frame of a file whose header
    /// says it has one ([`FLAG_LAYOUT`]), its text a layout this rtrec
    /// reads. Whether every file of the recording carries the same one is
    /// the recording's check.
    fn layout(&mut self, f: &Frame) {
        let off = f.off;
        if off != HEADER_LEN as u64 || self.header.flags & FLAG_LAYOUT == 0 {
            return self
                .r
                .corrupt(off, format!("a misplaced layout frame at offset {off}"));
        }
        // One sentence for both ways it can fail (not UTF-8, not a layout).
        let text = std::str::from_utf8(&f.payload)
            .map_err(|_| "not UTF-8".to_string())
            .and_then(|t| Layout::parse_stored(t).map(|_| t));
        match text {
            Ok(t) => self.r.layout = Some(t.to_string()),
            Err(why) => self.r.corrupt(
                off,
                format!("the layout frame at offset {off} holds no layout this rtrec reads: {why}"),
            ),
        }
    }

    /// A loop recording's claim of what was retired before this file: only
    /// as the first frame of a loop file after its first, and consistent
    /// with the file (it cannot claim this file or later ones, and when it
    /// names this file as the first kept, this file starts where it says).
    fn retired(&mut self, f: &Frame, first: bool) {
        let (off, h, idx) = (f.off, &f.header, self.header.index);
        let c = match RetiredPayload::decode(&f.payload) {
            Some(c) if first && idx > 0 && self.header.is_loop() => c,
            Some(_) => {
                return self.r.corrupt(
                    off,
                    format!("a retired frame at offset {off}: only the first frame of a loop recording's file after its first can be one"),
                )
            }
            None => {
                return self
                    .r
                    .corrupt(off, format!("the retired frame at offset {off} is malformed"))
            }
        };
        self.sequence(off, h.seq, "retired");
        let from_start = c.files == 0 || (c.first_index, c.first_seq) == (0, 0);
        let contradicts = c.next_index > idx
            || c.next_seq > h.seq
            || (c.next_index == idx && c.next_seq != h.seq)
            || !from_start;
        if contradicts {
            return self.r.corrupt(
                off,
                format!(
                    "the RETIRED frame says files {}..{} (sequence {}..{}) were retired, which file {idx}, starting at sequence {}, contradicts",
                    c.first_index, c.next_index, c.first_seq, c.next_seq, h.seq
                ),
            );
        }
        self.r.retired_claim = Some(c);
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

/// The verdict on a file whose end frame `rtrec recover` wrote (its
/// `reason`, an [`Interrupted`] line): interrupted and closed, or, while
/// the header still says `OPEN` (recover was itself interrupted between
/// the end frame and the header), unfinished until recover runs again.
fn closed_by_recover(r: &mut FileReport, reason: String) -> FileStatus {
    let Some(i) = Interrupted::parse(&reason) else {
        r.corrupt(
            r.valid_len,
            format!("the end frame of `rtrec recover` is malformed: {reason}"),
        );
        return FileStatus::Corrupt;
    };
    if r.durable_mark.is_some() {
        r.note("`rtrec recover` was interrupted while it closed this file: its end frame is written, its header not yet; run `rtrec recover` again".into());
        return FileStatus::Unfinished;
    }
    let cut = if i.cut_records + i.cut_bytes > 0 {
        format!(
            "; it cut {} record(s) after a crash hole and {} byte(s) after the last intact frame",
            i.cut_records, i.cut_bytes
        )
    } else {
        "; nothing was cut".into()
    };
    r.note(format!(
        "interrupted, closed by recover: every record before sequence {} was durable when it was interrupted{cut}",
        i.durable_seq
    ));
    FileStatus::Interrupted
}

/// [`verify_source`]'s last step: the file's verdict from what the walk
/// found (a file already corrupt stays so).
fn verdict(r: &mut FileReport) {
    if r.lost_records > 0 {
        r.note(format!(
            "{} record(s) were dropped while recording; each loss is stored",
            r.lost_records
        ));
    }
    if r.status == FileStatus::Corrupt {
        return;
    }
    r.status = match &r.stored {
        Some(_) if r.missing_records > 0 => FileStatus::Corrupt,
        Some(e) if e.complete => FileStatus::Complete,
        Some(e) if e.interrupted => closed_by_recover(r, e.reason.clone()),
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
}
