//! The asynchronous ledger: the storage back-end the writer's frames go
//! through, and the bookkeeping of the frames submitted to it that are not
//! yet written. Once the writer is made, every call to the back-end is
//! made here; the writer asks the ledger, never the back-end.
//!
//! With an asynchronous back-end ([`Backend::is_async`]: io_uring's writes
//! complete later, and the gathering back-ends coalesce frames while the
//! writer is behind) a data frame's writes may complete after it is put:
//! it waits in the ledger ([`Pending`], at most [`LEDGER`] entries,
//! allocated once) until the back-end's completed offset passes its end,
//! and only then does the writer count it as written ([`Ledger::pop_written`])
//! and publish it to the flusher ([`Ledger::advance`]). After a failed
//! write, the frames from the one it hit on are undone ([`Ledger::undo`])
//! and the writer rolls them back.
//!
//! Also here, since both are the back-end's unwritten bytes: when the
//! back-end coalesces (while the writer is behind) and how long a held
//! partial last block may wait ([`Ledger::pace`]).
//!
//! Design choice: the ledger keeps no counters of its own and knows
//! nothing of the report, the flusher or the file: it hands the writer
//! each frame that completed, and the writer counts it, so a frame is
//! counted in one place whether its back-end is synchronous or not.

use std::collections::VecDeque;
use std::fs::File;
use std::io;

use rtrec_sys as sys;

#[cfg(test)]
use crate::config::Io;
use crate::error::Failure;
use crate::io::Backend;

/// Asynchronous back-ends: the most data frames whose writes may be in
/// flight (the writer waits for the oldest when the ledger is full).
const LEDGER: usize = 256;

/// Asynchronous back-ends: a data frame submitted and not yet counted as
/// written.
#[derive(Clone, Copy, Debug)]
pub(super) struct Pending {
    /// File offsets of the frame's first byte and of its end.
    pub(super) start: u64,
    pub(super) end: u64,
    /// The chain value before it (restored when it fails).
    pub(super) chain: u32,
    /// Its first sequence number, and the next one after it.
    pub(super) first_seq: u64,
    pub(super) seq_after: u64,
    /// Records and payload bytes in it.
    pub(super) records: u64,
    pub(super) bytes: u64,
    /// When it was submitted (`CLOCK_MONOTONIC`, ns).
    pub(super) t0: u64,
}

/// The last frame put: what its ledger entry starts with.
#[derive(Clone, Copy, Debug, Default)]
struct Put {
    /// Its start offset.
    start: u64,
    /// The chain before it.
    chain: u32,
    /// Its first sequence number.
    first_seq: u64,
    /// When it was submitted (`CLOCK_MONOTONIC`, ns).
    t0: u64,
}

/// The frames a failed write undid, taken out of the ledger: the writer
/// goes back to the first one's start and chain, and counts their records
/// as discarded.
#[derive(Clone, Copy, Debug)]
pub(super) struct Undone {
    /// The first frame's start offset.
    pub(super) start: u64,
    /// The chain value before the first frame.
    pub(super) chain: u32,
    /// The first frame's first sequence number.
    pub(super) first_seq: u64,
    /// The last sequence number in them.
    pub(super) last_seq: u64,
    /// Records in them.
    pub(super) records: u64,
}

/// The back-end and the frames in flight on it (see the module docs).
pub(super) struct Ledger {
    /// The storage back-end every frame goes through (see [`crate::io`]),
    /// chosen once when the writer is created.
    io: Box<dyn Backend>,
    /// Asynchronous back-ends: data frames submitted, not yet counted.
    pending: VecDeque<Pending>,
    /// The last frame put (see [`Ledger::begin`]).
    last_put: Put,
    /// The completed offset last given to the flusher.
    advanced: u64,
    /// Ring mode, the writer behind: the back-end coalesces frames (see
    /// [`Ledger::pace`]).
    coalescing: bool,
    /// Ring mode, caught up: the back-end holds unwritten bytes from this
    /// file offset since this time (`CLOCK_MONOTONIC` ns; see
    /// [`Ledger::pace`]).
    held: Option<(u64, u64)>,
}

impl Ledger {
    /// The ledger of back-end `io`, with room for [`LEDGER`] frames when
    /// `io` is asynchronous now.
    pub(super) fn new(io: Box<dyn Backend>) -> Ledger {
        Ledger {
            pending: VecDeque::with_capacity(if io.is_async() { LEDGER } else { 0 }),
            io,
            last_put: Put::default(),
            advanced: 0,
            coalescing: false,
            held: None,
        }
    }

    /// The back-end's name (tests ask whether the kernel allowed the one
    /// they asked for).
    #[cfg(test)]
    pub(super) fn io(&self) -> Io {
        self.io.io()
    }

    /// Writes the back-end submitted again after a transient failure
    /// ([`Backend::resubmitted`]).
    pub(super) fn resubmitted(&self) -> u64 {
        self.io.resubmitted()
    }

    /// True when the back-end's writes may complete later (io_uring; the
    /// gathering back-ends, while coalescing).
    pub(super) fn is_async(&self) -> bool {
        self.io.is_async()
    }

    /// True when written data leave no dirty page to write back.
    pub(super) fn bypasses_page_cache(&self) -> bool {
        self.io.bypasses_page_cache()
    }

    /// Starts writing `f` at `offset` (see [`Backend::start`]).
    pub(super) fn start(&mut self, f: &File, offset: u64) -> io::Result<()> {
        self.io.start(f, offset)
    }

    /// Writes (or submits) `head` then `body` at the end of `f`.
    pub(super) fn write(&mut self, f: &File, head: &[u8], body: &[u8]) -> io::Result<()> {
        self.io.write(f, head, body)
    }

    /// Waits for the writes in flight and leaves `f` buffered, to be
    /// closed.
    pub(super) fn stop(&mut self, f: &File) -> io::Result<()> {
        self.io.stop(f)
    }

    /// After a failed write: the next write goes to `offset` of `f` again.
    pub(super) fn rollback(&mut self, f: &File, offset: u64) -> io::Result<()> {
        self.io.rollback(f, offset)
    }

    /// Ring mode: lets the back-end hold a frame's partial last block
    /// ([`Backend::hold_tail`]).
    pub(super) fn hold_tails(&mut self) {
        self.io.hold_tail(true);
    }

    /// Waits for every write in flight.
    pub(super) fn wait_all(&mut self) -> io::Result<()> {
        self.io.wait_all()
    }

    /// True when [`LEDGER`] frames wait: the oldest must complete before
    /// another data frame is submitted.
    pub(super) fn is_full(&self) -> bool {
        self.pending.len() == LEDGER
    }

    /// Writes what is gathered in `f` (see [`Ledger::flush`]), then waits
    /// for one completion.
    pub(super) fn wait_oldest(&mut self, f: Option<&File>) -> io::Result<()> {
        self.flush(f).and_then(|()| self.io.wait_one())
    }

    /// Reaps the completions that came, without waiting; when `all`, writes
    /// what is gathered in `f` and waits for every write in flight.
    pub(super) fn reap(&mut self, all: bool, f: Option<&File>) -> io::Result<()> {
        if all {
            self.flush(f).and_then(|()| self.io.wait_all())
        } else {
            self.io.poll()
        }
    }

    /// Ring mode, nothing to write: waits for one write in flight, if
    /// any (`None`: nothing waited).
    pub(super) fn wait_in_flight(&mut self) -> Option<io::Result<()>> {
        self.io.in_flight().then(|| self.io.wait_one())
    }

    /// A frame whose first sequence number is `first_seq` is about to be
    /// written at `start`, after chain value `chain`: kept for its ledger
    /// entry, submitted now. Returns the offset from which the back-end
    /// holds unwritten bytes, for [`Ledger::restamp_put`].
    pub(super) fn begin(&mut self, start: u64, chain: u32, first_seq: u64) -> Option<u64> {
        self.last_put = Put {
            start,
            chain,
            first_seq,
            t0: sys::monotonic_ns(),
        };
        self.io.unwritten_from()
    }

    /// The frame [`Ledger::begin`] announced is written or submitted:
    /// frames whose last bytes the back-end held from `held` on were
    /// written with it (see [`Ledger::restamp`]).
    pub(super) fn restamp_put(&mut self, held: Option<u64>) {
        self.restamp(held, self.last_put.t0);
    }

    /// Queues the data frame [`Ledger::begin`] announced, which ends at
    /// `end` (`None`: no file, where it started) and holds `records`
    /// records of `bytes` bytes, every one before `seq_after`.
    pub(super) fn queue(&mut self, end: Option<u64>, seq_after: u64, records: u64, bytes: u64) {
        let Put {
            start,
            chain,
            first_seq,
            t0,
        } = self.last_put;
        self.pending.push_back(Pending {
            start,
            end: end.unwrap_or(start),
            chain,
            first_seq,
            seq_after,
            records,
            bytes,
            t0,
        });
    }

    /// A frame of another kind than data must follow every write before
    /// it: writes what is gathered in `f`, waits for all writes, and
    /// returns the first that failed.
    pub(super) fn through(&mut self, f: Option<&File>) -> Result<(), Failure> {
        self.flush(f)?;
        self.io.wait_all()?;
        match self.io.take_error() {
            Some((_, e)) => Err(e.into()),
            None => Ok(()),
        }
    }

    /// Writes what the back-end has gathered in `f` and not yet written,
    /// if any (nothing without a file).
    pub(super) fn flush(&mut self, f: Option<&File>) -> io::Result<()> {
        let (from, t) = (self.io.unwritten_from(), sys::monotonic_ns());
        match f {
            Some(f) => self.io.flush(f)?,
            None => return Ok(()),
        }
        self.restamp(from, t);
        Ok(())
    }

    /// The frames in the ledger whose last bytes were held or gathered
    /// (unwritten from file offset `from` when the call that started at
    /// `t` began) and have now been written or submitted: their `write()`
    /// time starts at `t`.
    ///
    /// Design choice: a frame's `write()` latency is that of the write
    /// that ends it, from its submission, as for a frame written at once;
    /// the wait before it (for the next frame, at most `max_latency_ns`,
    /// or for a buffer to fill while behind) is not the storage's time,
    /// and counted in it the `write()` figure of a `direct` recording
    /// would grow by the record period. When the frame is *written* still
    /// follows the completion (the counters, the durable point).
    fn restamp(&mut self, from: Option<u64>, t: u64) {
        let Some(from) = from else { return };
        let sent = self.io.unwritten_from().unwrap_or(u64::MAX);
        for p in self.pending.iter_mut().rev() {
            if p.end <= from {
                break;
            }
            if p.end <= sent {
                p.t0 = t;
            }
        }
    }

    /// After reaping (`r`: how the wait went): how far the file is now
    /// written, or the first failed write (its offset and error).
    pub(super) fn outcome(&mut self, r: io::Result<()>) -> Result<u64, (u64, io::Error)> {
        let err = match r {
            Err(e) => Some((self.io.completed_to(), e)),
            Ok(()) => self.io.take_error(),
        };
        match err {
            Some(failed) => Err(failed),
            None => Ok(self.io.completed_to()),
        }
    }

    /// The oldest frame, taken out of the ledger, when it ends at or
    /// before `done`: wholly written, for the writer to count.
    pub(super) fn pop_written(&mut self, done: u64) -> Option<Pending> {
        let p = self.pending.front().copied().filter(|p| p.end <= done)?;
        self.pending.pop_front();
        Some(p)
    }

    /// `done`, when it is further than the completed offset last given to
    /// the flusher (which it becomes).
    pub(super) fn advance(&mut self, done: u64) -> Option<u64> {
        (done > self.advanced).then(|| {
            self.advanced = done;
            done
        })
    }

    /// A write at file offset `off` failed with `e`: waits for the other
    /// writes in flight and returns the first failure (an earlier write's,
    /// when one failed too) and the offset before which every byte is
    /// written (frames gathered and not yet written, while coalescing, are
    /// not written either).
    pub(super) fn first_failure(&mut self, off: u64, e: Failure) -> (u64, Failure) {
        let (mut off, mut e) = (off, e);
        let _ = self.io.wait_all();
        if let Some((o, earlier)) = self.io.take_error().filter(|(o, _)| *o < off) {
            (off, e) = (o, Failure::from_io(&earlier));
        }
        (off.min(self.io.completed_to()), e)
    }

    /// Takes every frame out of the ledger after a failed write (the
    /// frames that completed were counted first): `None` when there was
    /// none.
    pub(super) fn undo(&mut self) -> Option<Undone> {
        let first = self.pending.front().copied()?;
        let mut undone = Undone {
            start: first.start,
            chain: first.chain,
            first_seq: first.first_seq,
            last_seq: first.first_seq,
            records: 0,
        };
        for p in self.pending.drain(..) {
            undone.records += p.records;
            undone.last_seq = undone.last_seq.max(p.seq_after.saturating_sub(1));
        }
        Some(undone)
    }

    /// Ring mode, after each frame and when idle, at the time `now`
    /// gives (`CLOCK_MONOTONIC` ns, read only when needed): whether the
    /// writer is `behind` (see [`crate::io::coalesce_next`]) and whether
    /// another frame is `waiting` in the ring. While behind, the back-end
    /// coalesces frames into larger writes; once it has caught up, what is
    /// gathered is written at once and each frame is written through
    /// again.
    ///
    /// Caught up, a partial last block held back ([`Ledger::hold_tails`])
    /// is written once it has waited `bound` (`max_latency_ns`) with no
    /// frame coming to write it whole: the bound packed framing puts on a
    /// record's wait, so a kill or power cut loses no more of the last
    /// frame than of a packed frame's records. Frames that come closer
    /// together than that are written block by block, each block once.
    ///
    /// True when what the back-end holds is to be written now
    /// ([`Ledger::flush`]).
    pub(super) fn pace(
        &mut self,
        behind: bool,
        waiting: bool,
        now: impl FnOnce() -> u64,
        bound: u64,
    ) -> bool {
        if behind != self.coalescing {
            self.coalescing = behind;
            self.io.coalesce(behind);
            if !behind {
                self.held = None;
                return true;
            }
        }
        if behind || waiting {
            return false;
        }
        let Some(from) = self.io.unwritten_from() else {
            self.held = None;
            return false;
        };
        // Since when the first unwritten byte is held: a new offset means
        // the bytes held before it were written meanwhile. The clock is
        // read only here (issue 34: not once per entry).
        let now = now();
        let since = match self.held {
            Some((at, t)) if at == from => t,
            _ => {
                self.held = Some((from, now));
                now
            }
        };
        if now.saturating_sub(since) < bound {
            return false;
        }
        self.held = None;
        true
    }
}
