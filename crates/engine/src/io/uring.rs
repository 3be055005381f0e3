//! The `uring` back-end ([`Io::Uring`]): the `direct` back-end's `O_DIRECT`
//! block writes submitted through io_uring (`rtrec_sys::uring`), several in
//! flight. Its transport, [`Ring`], also serves `uring_buffered`.
//!
//! - **`depth` registered buffers** ([`crate::config::Config::io_depth`])
//!   used in turn, the file registered as the ring's fixed file; each write
//!   is one `IORING_OP_WRITE_FIXED`, submitted without waiting. At most
//!   `depth` writes are in flight.
//! - **The rewrite rule**: bytes of a buffer are never changed while a
//!   write that covers them is in flight — before the gatherer copies a
//!   frame (and its zero padding) into `[p, q)` of a buffer it reaps every
//!   write of that buffer overlapping `[p, q)`, and before it starts
//!   filling a buffer again it reaps all of that buffer's writes. The
//!   partial last block is thus never written twice at the same time: its
//!   rewrite waits for the write before it, so two writes of one block can
//!   never land in the wrong order. Writes of disjoint ranges (frames that
//!   end on a block boundary, a buffer written while the next fills, the
//!   pieces of a large frame, every frame with the page cache's 1-byte
//!   "blocks" of `uring-buffered`) are in flight together.
//! - **Completions are reaped by the writer** (here, when a buffer is
//!   needed, and through [`Backend::poll`]); a short write is resubmitted
//!   for its rest, a failed one (`ENOSPC`, `EIO`, …) is kept with its file
//!   offset ([`Backend::take_error`]) for the writer, which counts and
//!   stores the loss exactly as after a failed `write()`.
//! - **A write the kernel gave up for a transient reason is submitted
//!   again**, the same bytes to the same offset: `-ECANCELED` (io_uring
//!   cancels a write it punted to a worker thread when that thread cannot
//!   be started, which a signal arriving during the start causes: a host
//!   with a 20 µs `SIGALRM` lost whole recordings so), `-EINTR` and
//!   `-EAGAIN`. At most [`RESUBMITS`] times in a row per write, then the
//!   error stands as any other; every resubmission is counted
//!   ([`Backend::resubmitted`], the summary's `io_resubmitted`). The rewrite
//!   rule holds: the slot stays in flight until the write is done.
//! - **[`Backend::completed_to`]**: every byte before it is written; the
//!   writer counts a frame as written (and publishes it to the flusher for
//!   the next durable point) only once its end is before that offset, so a
//!   durability point never covers a write still in flight.

use std::fs::File;
use std::io;

use rtrec_sys as sys;

use super::backend::{Backend, Engine, Refused, Settings};
use super::direct::files_allocated;
use super::gather::{self, Gather, Transport, ALIGN};
use crate::strategy::Io;

/// This back-end's row of [`super::ENGINES`]: `direct`'s rules and the
/// ring's depth; buffered writes when the kernel refuses io_uring.
pub(super) const ENGINE: Engine = Engine {
    io: Io::Uring,
    help: "`direct` with each block write submitted through io_uring (registered \
           buffers, the file as a fixed file), up to `io_depth` (`--io-depth`) writes \
           in flight, their completions reaped by the writer. When the kernel refuses \
           io_uring (e.g. `kernel.io_uring_disabled`), the recording says so in a \
           warning and writes buffered",
    direct: true,
    uring: true,
    rules: &[files_allocated, gather::block_in_range, depth_in_range],
    open,
    fallback: Some(REFUSED),
};

/// What the warning says when the kernel refuses io_uring.
pub(super) const REFUSED: Refused = Refused {
    what: "io_uring",
    hint: uring_hint,
};

/// Why the kernel refused io_uring, in words: `ENOSYS` is a kernel built
/// without it (or a seccomp filter that hides it), `EPERM` the sysctl
/// that forbids it; rtrec-host's `features` module names the same causes.
fn uring_hint(e: &io::Error) -> &'static str {
    match e.raw_os_error() {
        Some(libc::ENOSYS) => "this kernel has no io_uring (CONFIG_IO_URING)",
        Some(libc::EPERM) => "the sysctl kernel.io_uring_disabled forbids it",
        _ => "see the sysctl kernel.io_uring_disabled",
    }
}

/// How many times in a row one write is submitted again after a
/// transient failure (see the module docs) before its error stands: far
/// more than a signal storm causes (a few in a row were seen at one
/// signal every 20 µs), few enough that a kernel that cancels every write
/// fails the recording at once.
pub(super) const RESUBMITS: u32 = 1000;

/// Whether a write's `-errno` is one the kernel gives for a write it gave
/// up on, not for the file or the device: submitting it again may succeed.
fn transient(errno: i32) -> bool {
    matches!(errno, libc::ECANCELED | libc::EINTR | libc::EAGAIN)
}

/// The rule of every io_uring back-end: 1 ..= 64 writes in flight, each
/// from its own registered buffer.
pub(super) fn depth_in_range(s: &Settings) -> Result<(), String> {
    if (1..=64).contains(&s.io_depth) {
        Ok(())
    } else {
        Err(format!(
            "the io_uring queue depth must be between 1 and 64, not {}",
            s.io_depth
        ))
    }
}

/// Sets up the ring and its buffers; fails (with the errno) when the
/// kernel refuses io_uring.
fn open(s: &Settings) -> io::Result<Box<dyn Backend>> {
    let ring = Ring::new(s.io_block, s.io_depth)?;
    Ok(Box::new(Gather::new(ENGINE.io, ring, ENGINE.direct)))
}

/// io_uring's state: the ring, the buffer being filled, the writes in
/// flight.
pub(super) struct Ring {
    u: sys::UringWriter,
    /// The buffer being filled.
    cur: usize,
    /// Writes in flight (capacity `depth`, allocated once).
    slots: Vec<Slot>,
    next_tag: u64,
    /// The first failed write since the last rollback: its file offset and
    /// error.
    error: Option<(u64, io::Error)>,
    /// Writes submitted again after a transient failure, in all.
    resubmitted: u64,
}

/// One write in flight: buffer `buf`, bytes `[start, end)`, at file offset
/// `off`.
#[derive(Clone, Copy)]
struct Slot {
    tag: u64,
    buf: usize,
    start: usize,
    end: usize,
    off: u64,
    /// Transient failures of this write in a row.
    retries: u32,
}

impl Ring {
    /// `depth` buffers of `block` bytes and a ring of that depth (the
    /// recording's creation, not the data path).
    pub(super) fn new(block: u64, depth: u32) -> io::Result<Ring> {
        let u = sys::UringWriter::new(depth, block as usize, ALIGN)?;
        Ok(Ring {
            slots: Vec::with_capacity(u.depth()),
            u,
            cur: 0,
            next_tag: 1,
            error: None,
            resubmitted: 0,
        })
    }

    /// Reaps one completion (waiting when `wait`); returns whether one came.
    fn reap(&mut self, wait: bool) -> io::Result<bool> {
        let Some(done) = self.u.complete(wait)? else {
            return Ok(false);
        };
        let Some(k) = self.slots.iter().position(|s| s.tag == done.tag) else {
            return Ok(true);
        };
        let s = self.slots[k];
        let want = s.end - s.start;
        match done.result {
            r if r < 0 && transient(-r) && s.retries < RESUBMITS => {
                // Given up by the kernel, not failed: the same bytes again.
                self.resubmitted += 1;
                let tag = self.next_tag;
                self.next_tag += 1;
                // SAFETY: the range stays untouched until this tag is reaped
                // (the slot stays in `slots`, see the rewrite rule).
                match unsafe { self.u.submit(s.buf, s.start, s.end, s.off, tag) } {
                    Ok(()) => {
                        self.slots[k] = Slot {
                            tag,
                            retries: s.retries + 1,
                            ..s
                        }
                    }
                    Err(e) => {
                        self.slots.swap_remove(k);
                        self.keep_error(s.off, e);
                    }
                }
            }
            r if r < 0 => {
                self.slots.swap_remove(k);
                self.keep_error(s.off, io::Error::from_raw_os_error(-r));
            }
            0 if want > 0 => {
                self.slots.swap_remove(k);
                self.keep_error(s.off, io::ErrorKind::WriteZero.into());
            }
            r if (r as usize) < want => {
                // Short: the rest goes again, in the same slot.
                let n = r as usize;
                let (start, off, tag) = (s.start + n, s.off + n as u64, self.next_tag);
                self.next_tag += 1;
                // SAFETY: the range stays untouched until this tag is reaped
                // (the slot stays in `slots`, see the rewrite rule).
                match unsafe { self.u.submit(s.buf, start, s.end, off, tag) } {
                    Ok(()) => {
                        self.slots[k] = Slot {
                            tag,
                            start,
                            off,
                            retries: 0,
                            ..s
                        }
                    }
                    Err(e) => {
                        self.slots.swap_remove(k);
                        self.keep_error(off, e);
                    }
                }
            }
            _ => {
                self.slots.swap_remove(k);
            }
        }
        Ok(true)
    }

    fn keep_error(&mut self, off: u64, e: io::Error) {
        match &self.error {
            Some((o, _)) if *o <= off => {}
            _ => self.error = Some((off, e)),
        }
    }

    /// Reaps until no write of buffer `buf` overlaps `[p, q)`.
    fn wait_range(&mut self, buf: usize, p: usize, q: usize) -> io::Result<()> {
        while self
            .slots
            .iter()
            .any(|s| s.buf == buf && s.start < q && p < s.end)
        {
            self.reap(true)?;
        }
        Ok(())
    }
}

impl Transport for Ring {
    fn len(&self) -> usize {
        self.u.len()
    }

    fn buf(&mut self) -> &mut [u8] {
        self.u.buf(self.cur)
    }

    fn set_file(&mut self, f: &File) -> io::Result<()> {
        self.u.set_file(f)
    }

    fn make_room(&mut self, p: usize, q: usize) -> io::Result<()> {
        self.wait_range(self.cur, p, q)
    }

    /// The next buffer in turn, once its writes are reaped.
    fn next_buffer(&mut self) -> io::Result<()> {
        self.cur = (self.cur + 1) % self.u.depth();
        let (cur, block) = (self.cur, self.u.len());
        self.wait_range(cur, 0, block)
    }

    fn write(&mut self, _f: &File, start: usize, end: usize, off: u64) -> io::Result<()> {
        // A reaped write may go again (short, or given up by the kernel)
        // and keep its slot: reap until one is free.
        while self.slots.len() == self.slots.capacity() {
            self.reap(true)?;
        }
        let tag = self.next_tag;
        self.next_tag += 1;
        // SAFETY: the rewrite rule (module docs): these bytes are not
        // changed until the write is reaped (`make_room`, `next_buffer`,
        // `wait_all` wait for its slot first).
        unsafe { self.u.submit(self.cur, start, end, off, tag)? };
        self.slots.push(Slot {
            tag,
            buf: self.cur,
            start,
            end,
            off,
            retries: 0,
        });
        Ok(())
    }

    fn poll(&mut self) -> io::Result<()> {
        while self.reap(false)? {}
        Ok(())
    }

    fn wait_one(&mut self) -> io::Result<()> {
        self.reap(true).map(drop)
    }

    fn wait_all(&mut self) -> io::Result<()> {
        while !self.slots.is_empty() {
            self.reap(true)?;
        }
        Ok(())
    }

    fn in_flight(&self) -> bool {
        !self.slots.is_empty()
    }

    fn oldest_unfinished(&self) -> Option<u64> {
        self.slots
            .iter()
            .map(|s| s.off)
            .chain(self.error.as_ref().map(|e| e.0))
            .min()
    }

    fn take_error(&mut self) -> Option<(u64, io::Error)> {
        self.error.take()
    }

    fn resubmitted(&self) -> u64 {
        self.resubmitted
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_file_holds_exactly_the_gathered_bytes_then_zeros_after_every_write() {
        super::super::gather::tests::check_engine(super::open);
    }
}
