//! The writer's completion bookkeeping: how far the back-end's writes
//! have come and what that makes written — reaping completions
//! ([`Writer::reap`], [`Writer::wait_in_flight`]), pacing what the back-end
//! holds in ring mode ([`Writer::hold_tails`], [`Writer::pace`]), counting
//! the frames wholly written and publishing them to the flusher
//! ([`Writer::count_written`]), and rolling a failed write back
//! ([`Writer::async_failed`], [`Writer::roll_back`]).
//!
//! Design choice: unlike the writer's other parts (types of their own
//! that never import the writer), this is an `impl Writer` block of its
//! own file: the bookkeeping moves the writer's own state (the chain, the
//! next sequence number, the report, the live counters), so it stays the
//! coordinator's, and `mod.rs` keeps the order of a frame's steps.

use std::io;
use std::sync::atomic::Ordering;

use rtrec_sys as sys;

use crate::config::Framing;
use crate::error::Failure;

use super::{file_of, Step, Writer};

impl Writer {
    /// Asynchronous back-ends: reaps the completions that came (all, waiting
    /// for them, when `all`), counts the frames now wholly written, and
    /// handles a failed write.
    pub(super) fn reap(&mut self, all: bool) -> Step {
        if !self.ledger.is_async() {
            return Ok(());
        }
        let r = self.ledger.reap(all, file_of(&self.cur));
        self.reaped(r)
    }

    /// After reaping (`r`: how the wait went): counts the frames the
    /// completed offset passed, or handles the first failed write.
    pub(super) fn reaped(&mut self, r: io::Result<()>) -> Step {
        match self.ledger.outcome(r) {
            Ok(done) => {
                self.count_completed(done);
                Ok(())
            }
            Err((off, e)) => Err(self.async_failed(off, Failure::from_io(&e))),
        }
    }

    /// Counts the ledger's frames that end at or before `done`.
    pub(super) fn count_completed(&mut self, done: u64) {
        let now = sys::monotonic_ns();
        while let Some(p) = self.ledger.pop_written(done) {
            let dt = now.saturating_sub(p.t0);
            self.count_written(p.records, p.bytes, dt, p.seq_after, p.end);
        }
        if let Some(done) = self.ledger.advance(done) {
            self.flusher.advance(done);
        }
    }

    /// Asynchronous back-ends: a write at file offset `off` failed with `e`.
    /// Waits for the other writes in flight; the frames before `off` are
    /// written, the rest are rolled back and their records discarded
    /// (stored as the closing loss), as after a failed `write()`.
    pub(super) fn async_failed(&mut self, off: u64, e: Failure) -> Failure {
        let (off, e) = self.ledger.first_failure(off, e);
        self.count_completed(off);
        let mut back = off;
        if let Some(undone) = self.ledger.undo() {
            back = undone.start;
            self.chain = undone.chain;
            self.next_seq = undone.first_seq;
            self.losses.discard(undone.records);
            self.losses.failed_through(undone.last_seq);
        }
        self.roll_back(back, e)
    }

    /// After a failed write: the current file's end goes back to `to`
    /// (when it is before it), the back-end writes there next, and the
    /// failure `e`, naming the file, is kept.
    pub(super) fn roll_back(&mut self, to: u64, e: Failure) -> Failure {
        let mut f = e;
        if let Some(cur) = self.cur.as_mut() {
            f = f.context(&format!("writing '{}'", cur.path.display()));
            if to < cur.offset {
                cur.offset = to;
            }
            let _ = self.ledger.rollback(&cur.file, cur.offset);
        }
        self.fail(f)
    }

    /// Asynchronous back-ends: waits for all writes in flight and counts them
    /// (before a frame that must follow them, and at the end).
    pub(super) fn settle(&mut self) -> Step {
        self.reap(true)
    }

    /// Ring mode: the writer thread calls [`Writer::pace`] after every
    /// frame and when idle, so the back-end may hold a frame's partial
    /// last block for the next frame ([`crate::io::Backend::hold_tail`];
    /// inline mode writes every frame through to its last byte).
    ///
    /// Not with packed framing: a packed frame's records have already
    /// waited up to `max_latency_ns` in the open frame, and a held block
    /// could add as much again to the span a kill or power cut loses.
    pub(crate) fn hold_tails(&mut self) {
        if self.cfg.framing != Framing::Packed {
            self.ledger.hold_tails();
        }
    }

    /// Ring mode, after each frame and when idle, at the time `now`
    /// gives (`CLOCK_MONOTONIC` ns, read only when needed): whether the
    /// writer is `behind` and whether another frame is `waiting` in the
    /// ring. What the back-end holds is written when the writer has caught
    /// up, or when a held partial last block has waited `max_latency_ns`
    /// ([`Ledger::pace`] says when and why), and the frames it ends are
    /// counted.
    pub(crate) fn pace(&mut self, behind: bool, waiting: bool, now: impl FnOnce() -> u64) -> Step {
        if !self
            .ledger
            .pace(behind, waiting, now, self.cfg.max_latency_ns)
        {
            return Ok(());
        }
        let r = self.ledger.flush(file_of(&self.cur));
        self.reaped(r)
    }

    /// Ring mode, nothing to write: waits for a write in flight, if any,
    /// and counts what completed; false (nothing waited) otherwise, so the
    /// writer thread sleeps its poll interval.
    pub(crate) fn wait_in_flight(&mut self) -> Result<bool, Failure> {
        let Some(r) = self.ledger.wait_in_flight() else {
            return Ok(false);
        };
        self.reaped(r)?;
        Ok(true)
    }

    /// Counts records as written by one `write()` that took `dt` ns; every
    /// record before `seq_after` is written, in frames that end at `end`.
    pub(super) fn count_written(
        &mut self,
        records: u64,
        bytes: u64,
        dt: u64,
        seq_after: u64,
        end: u64,
    ) {
        self.report.write_lat.record(dt);
        if self.report.write_samples.len() < self.report.write_samples.capacity() {
            self.report.write_samples.push(dt);
        }
        self.report.records_written += records;
        self.report.bytes_written += bytes;
        // Everything before `seq_after` is now written (packed framing: the
        // open frame was just written whole).
        self.flusher.publish(seq_after, end);
        self.live
            .records_written
            .store(self.report.records_written, Ordering::Relaxed);
        self.live
            .bytes_written
            .store(self.report.bytes_written, Ordering::Relaxed);
        self.live.max_write_ns.fetch_max(dt, Ordering::Relaxed);
    }
}
