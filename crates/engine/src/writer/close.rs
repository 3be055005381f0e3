//! The writer's close: a file closed at a switch or at the end
//! ([`Writer::close_current`]: the open frame and the writes in flight,
//! the end frame, the sync), and the recording's end ([`Writer::finish`]:
//! the closing loss, the last file, the directory's sync and the durable
//! point, the flusher stopped, the report and its warnings, the raw
//! sidecar).
//!
//! Design choice: as `completion`, an `impl Writer` block of its own
//! file, not a part with a type of its own: closing reads and moves the
//! writer's whole state, and every step of it is the coordinator's
//! policy, now in one file that reads top to bottom as the end does.

use std::fs::File;
use std::sync::atomic::Ordering;

use rtrec_sys as sys;

use crate::config::Framing;
use crate::error::Failure;
use crate::file;
use crate::format::{EndPayload, FrameKind};
use crate::sizing::END_PAYLOAD_MAX;

use super::losses::Losses;
use super::{retire, Step, Writer, WriterReport};

impl Writer {
    /// Closes the current file: the open frame and the writes in flight
    /// first, then the end frame (framed files), then the file itself.
    pub(super) fn close_current(
        &mut self,
        complete: bool,
        continued: bool,
        reason: &str,
        post: (u64, u64),
    ) -> Step {
        self.seal()?;
        self.settle()?;
        if self.cfg.framing.has_frames() {
            let end = EndPayload {
                complete,
                continued,
                interrupted: false,
                records_written: self.report.records_written,
                records_dropped: self.losses.dropped(),
                bytes_written: self.report.bytes_written,
                post_ns: post.0,
                post_records: post.1,
                reason: reason.to_string(),
            };
            let mut bytes = end.encode();
            bytes.truncate(END_PAYLOAD_MAX);
            let seq = self.next_seq;
            self.put(FrameKind::End, seq, sys::monotonic_ns(), &bytes)?;
            // The last file's end frame is in it: what a failure after
            // this point leaves the file saying (`Summary::end_complete`).
            self.report.end_complete = complete && !continued;
        }
        let Some(mut cur) = self.cur.take() else {
            return Err(self.fail(Failure::closed()));
        };
        self.report.file_bytes += cur.offset;
        self.retire.closed(cur.offset, self.next_seq);
        if self.cfg.framing == Framing::Raw {
            self.raw.close_file(&cur.path);
        }
        // No durable mark after the final header (the flusher may be about
        // to write one).
        self.flusher.closing();
        let whole = self
            .files
            .keeps_whole(self.retire.loops(), self.cfg.file_size);
        self.ledger
            .stop(&cur.file)
            .and_then(|()| file::close(&mut cur, self.cfg.framing, whole))
            .map_err(|e| {
                // Its sync (or truncate, or final header) failed: what it
                // held past the last durable point is not known durable.
                self.live.freeze_durable();
                let f = Failure::from_io(&e).context(&format!("closing '{}'", cur.path.display()));
                self.fail(f)
            })?;
        // Synced: durable once its name is too. The flusher publishes that
        // after syncing the directories for the next file, `finish` after
        // syncing the directory itself.
        Ok(())
    }

    /// Ends the recording: stores drops up to `end_seq`, writes the end frame,
    /// truncates, syncs, stops the flusher, writes the raw sidecar.
    ///
    /// After a write failure the records from the failed one to `end_seq`
    /// are stored as one loss frame (reason `writer-failed`) and the end
    /// frame is marked aborted with the failure's sentence, whatever
    /// `complete` says.
    pub(crate) fn finish(mut self, end_seq: u64, complete: bool, reason: &str) -> WriterReport {
        // The writes in flight first: a failure among them is stored below.
        if !self.failed() {
            let _ = self.settle();
        }
        let failed = self.failed();
        if failed {
            self.files.release_reserve();
        }
        self.store_closing_loss(end_seq, failed);
        let (complete, reason) = if failed && self.report.error.is_some() {
            (false, self.failure_reason())
        } else {
            (complete, reason.to_string())
        };
        self.close_last(complete, &reason);
        self.report.cpu_ns = sys::thread_cpu_ns();
        self.report.flush = self.flusher.stop();
        self.report.retired = self.retire.finish();
        if self.report.retired.unclaimed > 0 {
            self.report.warnings.push(format!(
                "{} retired file(s) were kept: the RETIRED claim or the directory's retirement record naming them could not be made durable (a file leaves only after what names it is on the disk)",
                self.report.retired.unclaimed
            ));
        }
        let r = &self.report.retired;
        if r.unshipped_files > 0 {
            // The start said those it retired then, by name; this is the
            // whole recording's count.
            self.report.warnings.push(retire::unshipped_note(r, &[]));
        }
        if let Some(e) = &r.ledger_damaged {
            self.report.warnings.push(format!(
                "{e} (it read at the start); from then the disk budget counted no earlier recording as shipped"
            ));
        }
        let others = &self.report.retired.others;
        if !others.is_empty() {
            // Said where a person looks: the summary's warnings, the C
            // library's log callback.
            self.report.warnings.push(format!(
                "the disk budget (--keep-scope dir) retired {} recording(s) this loop does not own: {}",
                others.len(),
                others.join(", ")
            ));
        }
        self.report.io_resubmitted = self.ledger.resubmitted();
        self.files.finish_pool(&self.cfg, &mut self.report);
        if self.cfg.framing == Framing::Raw {
            self.write_sidecar(complete, &reason);
        }
        self.losses.report_into(&mut self.report);
        self.report.durable_seq = self.live.durable_seq.load(Ordering::Acquire);
        self.report
    }

    /// [`Writer::finish`]'s step for the records up to `end_seq` that were
    /// not written: stored as one loss frame while a file is open (reason
    /// `writer-failed` after a failure), counted as dropped in any case.
    pub(super) fn store_closing_loss(&mut self, end_seq: u64, failed: bool) {
        if self.cur.is_some() {
            if let Some(gap) = Losses::at_end(self.next_seq, end_seq, failed) {
                let _ = self.store_loss(gap, sys::monotonic_ns(), !failed);
            }
        }
        if end_seq > self.next_seq {
            // Could not be stored (no file was left open): still counted.
            self.losses.drop_records(end_seq - self.next_seq);
            self.next_seq = end_seq;
        }
    }

    /// [`Writer::finish`]'s step for the last file: closed with the end
    /// frame, the reserve released, the directory synced (the last file's
    /// name: the flusher may not have got to it), then the durable point
    /// moved to the end.
    pub(super) fn close_last(&mut self, complete: bool, reason: &str) {
        self.report.end_complete = false;
        let closed = if self.cur.is_some() {
            self.close_current(complete, false, reason, (0, 0))
        } else {
            Ok(())
        };
        self.files.release_reserve();
        if closed.is_ok()
            && File::open(self.files.dir())
                .and_then(|d| sys::fsync(&d))
                .is_ok()
        {
            self.live.publish_durable(self.next_seq);
        }
        if let Err(e) = closed {
            // Already kept when it was the first failure.
            self.fail(e);
        }
    }

    /// Raw framing: writes the sidecar with every file's chunk sums.
    pub(super) fn write_sidecar(&mut self, complete: bool, reason: &str) {
        let path = self
            .files
            .dir()
            .join(format!("{}.meta.json", self.files.base()));
        let dropped = self.losses.dropped();
        if let Err(e) =
            self.raw
                .write_sidecar(&path, &self.report, dropped, complete, reason, &self.cfg)
        {
            self.fail(Failure::from_io(&e).context(&format!("writing '{}'", path.display())));
        }
    }
}
