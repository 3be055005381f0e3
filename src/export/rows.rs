//! The records of a verified recording one at a time, with their sequence
//! numbers and times, and every gap between them with its reason: what
//! the table exports (CSV, JSON lines, MCAP) are written from.
//!
//! Design choices:
//! - **A gap is an item, never an absence.** A loss frame gives its first
//!   sequence number, count and reason (`ring_full`, `too_large`,
//!   `writer_failed`, `overwritten`, `crash_hole`); sequence numbers that
//!   jump without a loss frame are `missing` (a missing file, a hole), and
//!   so are the records a recording's missing first files held (from
//!   sequence 0) and those after its last file when that file says the
//!   recording continues (an unknown count: no file tells it); the
//!   records a loop retired before its first kept file are `retired`; the
//!   records between two flight-recorder windows are `not_saved`.
//! - **Times**: every data frame stores its record's `CLOCK_MONOTONIC`
//!   time. A packed frame stores its first record's time and the span to
//!   its last, so those two are exact and the records between are
//!   interpolated evenly, and marked so (`exact` false): for periodic data
//!   within a period, never presented as measured. Wall time is the file
//!   header's mapping of the monotonic clock ([`FileHeader::wall_ns`]).

use rtrec_engine::format::{FrameKind, LossPayload, LossReason, PackedInfo, PackedRecords};
use rtrec_engine::reader::{FrameWalker, Step};

use super::part::Part;

/// One thing in the exported stream.
#[derive(Debug)]
pub enum Item<'a> {
    /// A record.
    Record {
        /// Its sequence number.
        seq: u64,
        /// `CLOCK_MONOTONIC` ns.
        mono_ns: u64,
        /// `CLOCK_REALTIME` ns since the epoch (the header's mapping).
        wall_ns: u64,
        /// False for a packed record between the first and the last of its
        /// frame: its time is interpolated.
        exact: bool,
        /// Its bytes.
        data: &'a [u8],
    },
    /// Records that are not in the stream.
    Gap {
        /// The first missing sequence number.
        first_seq: u64,
        /// How many (`None`: not known — the recording continues in files
        /// that are missing after its last one present).
        count: Option<u64>,
        /// Why (see the module docs).
        reason: &'static str,
    },
}

/// The name of a stored loss's reason in the exports.
pub fn reason_name(r: LossReason) -> &'static str {
    match r {
        LossReason::RingFull => "ring_full",
        LossReason::TooLarge => "too_large",
        LossReason::WriterFailed => "writer_failed",
        LossReason::Overwritten => "overwritten",
        LossReason::CrashHole => "crash_hole",
    }
}

/// What the walk saw, for the summary.
#[derive(Clone, Copy, Debug, Default)]
pub struct Walked {
    /// Records given to the sink.
    pub records: u64,
    /// Gaps given to the sink.
    pub gaps: u64,
    /// Records in those gaps.
    pub missing: u64,
}

/// The walk's state: the sequence number expected next.
struct Cursor<'s> {
    expected: Option<u64>,
    walked: Walked,
    sink: &'s mut dyn FnMut(Item) -> crate::error::Result<()>,
}

impl Cursor<'_> {
    fn gap(
        &mut self,
        first_seq: u64,
        count: u64,
        reason: &'static str,
    ) -> crate::error::Result<()> {
        if count == 0 {
            return Ok(());
        }
        self.walked.gaps += 1;
        self.walked.missing += count;
        (self.sink)(Item::Gap {
            first_seq,
            count: Some(count),
            reason,
        })
    }

    /// Sequence numbers skipped before `seq` without a trace.
    fn up_to(&mut self, seq: u64, reason: &'static str) -> crate::error::Result<()> {
        match self.expected {
            Some(e) if seq > e => self.gap(e, seq - e, reason),
            _ => Ok(()),
        }
    }

    fn record(
        &mut self,
        seq: u64,
        mono_ns: u64,
        wall_ns: u64,
        exact: bool,
        data: &[u8],
    ) -> crate::error::Result<()> {
        self.up_to(seq, "missing")?;
        self.expected = Some(seq + 1);
        self.walked.records += 1;
        (self.sink)(Item::Record {
            seq,
            mono_ns,
            wall_ns,
            exact,
            data,
        })
    }
}

/// Gives every record and gap of `parts` (verified, in index order) to
/// `sink`, up to each file's valid end.
pub fn walk(
    parts: &[Part],
    sink: &mut dyn FnMut(Item) -> crate::error::Result<()>,
) -> crate::error::Result<Walked> {
    let mut c = Cursor {
        expected: None,
        walked: Walked::default(),
        sink,
    };
    let first = &parts[0];
    if first.header.is_loop() && first.header.index > 0 {
        if let Some(s) = first.report.first_seq {
            c.gap(0, s, "retired")?;
        }
    } else if first.report.files_missing_before > 0 && !first.report.opens_with_trigger {
        // The recording's first files are missing: from sequence 0.
        c.expected = Some(0);
    }
    let mut buf = Vec::new();
    for p in parts {
        if p.report.opens_with_trigger {
            if let Some(s) = p.report.first_seq {
                c.up_to(s, "not_saved")?;
                c.expected = c.expected.max(Some(s));
            }
        }
        walk_part(p, &mut c, &mut buf)?;
    }
    if let Some(at) = parts[parts.len() - 1].report.lost_after {
        c.walked.gaps += 1;
        (c.sink)(Item::Gap {
            first_seq: at,
            count: None,
            reason: "missing",
        })?;
    }
    Ok(c.walked)
}

fn walk_part(p: &Part, c: &mut Cursor, buf: &mut Vec<u8>) -> crate::error::Result<()> {
    let mut walker = FrameWalker::new(&p.src, &p.header)?;
    while let Some(step) = walker.next_step()? {
        let Step::Frame(f) = step else { continue };
        if f.end() > p.report.valid_len {
            break;
        }
        let (seq, ts) = (f.header.seq, f.header.ts_ns);
        match f.header.kind {
            FrameKind::Data => {
                buf.clear();
                walker.copy_payload(&f, buf)?;
                c.record(seq, ts, p.header.wall_ns(ts), true, buf)?;
            }
            FrameKind::Packed => {
                let Some((info, _)) = PackedInfo::decode(&f.payload) else {
                    continue;
                };
                let last = u64::from(info.count.max(1) - 1);
                for (i, r) in PackedRecords::new(&f.payload).enumerate() {
                    let i = i as u64;
                    let t = ts + interpolate(info.span_ns, i, last);
                    let exact = i == 0 || i == last;
                    c.record(seq + i, t, p.header.wall_ns(t), exact, r)?;
                }
            }
            FrameKind::Loss => {
                let Some(l) = LossPayload::decode(&f.payload) else {
                    continue;
                };
                c.up_to(l.first_seq, "missing")?;
                c.gap(l.first_seq, l.count, reason_name(l.reason))?;
                c.expected = c.expected.max(Some(l.first_seq + l.count));
            }
            _ => {}
        }
    }
    Ok(())
}

/// `span × i / last` without overflow (`last` 0: 0).
fn interpolate(span_ns: u64, i: u64, last: u64) -> u64 {
    if last == 0 {
        0
    } else {
        (u128::from(span_ns) * u128::from(i) / u128::from(last)) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interpolation_is_exact_at_both_ends_and_even_between() {
        assert_eq!(interpolate(1000, 0, 4), 0);
        assert_eq!(interpolate(1000, 2, 4), 500);
        assert_eq!(interpolate(1000, 4, 4), 1000);
        assert_eq!(interpolate(u64::MAX, 3, 3), u64::MAX);
        assert_eq!(interpolate(7, 0, 0), 0);
    }
}
