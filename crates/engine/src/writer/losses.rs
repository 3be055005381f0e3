//! Losses: the records a recording does not hold, and how each is
//! accounted for. A gap in the sequence numbers handed to the writer (the
//! ring was full) is stored as a loss frame before the next record; after
//! a failed write, the records from the failed one on are dropped and
//! stored as one loss frame (reason `writer-failed`) when the file or the
//! recording closes. Which loss frame to write, and the counts the report
//! and the end frames carry, are here; writing the frame is the writer's.
//!
//! Three counts, because the summary tells them apart: `dropped`, every
//! record the files count as dropped (what the last end frame says);
//! `lost_stored`, those stored as losses (in loss frames, or a raw
//! recording's sidecar); `discarded`, records the producer handed over
//! (ring mode) that the writer could not store.

use crate::format::{LossPayload, LossReason};

use super::report::WriterReport;

/// The drop accounting of one writer (see the module docs).
#[derive(Debug, Default)]
pub(super) struct Losses {
    /// Records the files count as dropped.
    dropped: u64,
    /// Of these, the records stored as losses.
    lost_stored: u64,
    /// Records handed over that the writer could not store.
    discarded: u64,
    /// The last data record whose write failed, if one did.
    failed_seq: Option<u64>,
}

impl Losses {
    /// The loss frame that must come before record `seq` when the records
    /// from `next_seq` on did not come (the ring was full).
    pub(super) fn gap(next_seq: u64, seq: u64) -> Option<LossPayload> {
        (seq > next_seq).then(|| LossPayload {
            first_seq: next_seq,
            count: seq - next_seq,
            reason: LossReason::RingFull,
        })
    }

    /// The loss that closes a recording ended at `end_seq` whose next
    /// record to store is `next_seq`: the records after a failure
    /// (`failed`), or those the ring dropped at the end.
    pub(super) fn at_end(next_seq: u64, end_seq: u64, failed: bool) -> Option<LossPayload> {
        (end_seq > next_seq).then(|| LossPayload {
            first_seq: next_seq,
            count: end_seq - next_seq,
            reason: if failed {
                LossReason::WriterFailed
            } else {
                LossReason::RingFull
            },
        })
    }

    /// Flight recorder: the loss that closes an event after a failed
    /// write, from `next_seq` to the failed record.
    pub(super) fn unstored(&self, next_seq: u64) -> Option<LossPayload> {
        let seq = self.failed_seq.filter(|&s| s >= next_seq)?;
        Some(LossPayload {
            first_seq: next_seq,
            count: seq + 1 - next_seq,
            reason: LossReason::WriterFailed,
        })
    }

    /// The write of data record `seq` failed.
    pub(super) fn failed_at(&mut self, seq: u64) {
        self.failed_seq = Some(seq);
    }

    /// The writes of records up to `seq` failed (it may be below a record
    /// already known to have failed).
    pub(super) fn failed_through(&mut self, seq: u64) {
        self.failed_seq = Some(self.failed_seq.map_or(seq, |s| s.max(seq)));
    }

    /// True when a data record's write failed.
    pub(super) fn record_failed(&self) -> bool {
        self.failed_seq.is_some()
    }

    /// Flight recorder: the failed event is closed; the next one starts
    /// without a failure.
    pub(super) fn clear_failure(&mut self) {
        self.failed_seq = None;
    }

    /// `count` records are dropped (stored or not).
    pub(super) fn drop_records(&mut self, count: u64) {
        self.dropped += count;
    }

    /// `count` dropped records are stored as a loss.
    pub(super) fn stored(&mut self, count: u64) {
        self.lost_stored += count;
    }

    /// `records` records handed over are not stored.
    pub(super) fn discard(&mut self, records: u64) {
        self.discarded += records;
    }

    /// `records` records counted by [`Losses::discard`] are the caller's
    /// to count after all.
    pub(super) fn undiscard(&mut self, records: u64) {
        self.discarded = self.discarded.saturating_sub(records);
    }

    /// Records the files count as dropped so far (an end frame's count).
    pub(super) fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Puts the counts into the writer's final report.
    pub(super) fn report_into(&self, report: &mut WriterReport) {
        report.dropped = self.dropped;
        report.lost_stored = self.lost_stored;
        report.discarded = self.discarded;
    }
}
