//! The gatherer of the direct and io_uring back-ends
//! ([`crate::config::Io::Direct`], [`crate::config::Io::Uring`],
//! [`crate::config::Io::UringBuffered`]): aligned buffers that mirror the
//! file from the start of its partial last block, so that every direct
//! write covers whole logical blocks.
//!
//! How it writes (design choices, see also `docs/format.md`, "Direct I/O"):
//! - **Write-through**: each frame is copied behind the bytes already in
//!   the buffer and written at once, from the first block that is not yet
//!   final to the frame's end rounded up to the logical block size, the
//!   rest of the last block padded with zeros. With `pwrite()` a frame is
//!   on the device when its call returns, so "written" keeps its meaning (a
//!   kill loses nothing written). The price: the partial last block is
//!   written again with the next frame (at most one logical block per
//!   frame).
//! - **Zeros are the padding** because a reader already ends an unfinished
//!   file's data cleanly at zeros (pre-allocated space), and a finished
//!   file's bytes after `valid_len` are ignored: the file is valid for
//!   `verify` after every write, and the format does not change.
//! - **The buffer** ([`crate::config::Config::io_block`], 1 MiB by default)
//!   is allocated once when the recording is created; when it fills it is
//!   written and the next buffer starts at the next file offset, so a frame
//!   larger than the buffer is written in buffer-sized pieces.
//! - **A failed write is rolled back** by forgetting the bytes after the
//!   frame's start (re-reading the block from the file when the frame had
//!   crossed a buffer boundary); the closing frames overwrite them.
//!
//! io_uring (`rtrec_sys::uring`) is the same gatherer with another
//! transport and writes in flight:
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
//!   "blocks" of [`crate::config::Io::UringBuffered`]) are in flight
//!   together.
//! - **Completions are reaped by the writer** (here, when a buffer is
//!   needed, and through [`Gather::poll`]); a short write is resubmitted
//!   for its rest, a failed one (`ENOSPC`, `EIO`, …) is kept with its file
//!   offset ([`Gather::take_error`]) for the writer, which counts and
//!   stores the loss exactly as after a failed `write()`.
//! - **[`Gather::completed_to`]**: every byte before it is written; the
//!   writer counts a frame as written (and publishes it to the flusher for
//!   the next durable point) only once its end is before that offset, so a
//!   durability point never covers a write still in flight.

use std::fs::File;
use std::io;

use rtrec_sys as sys;

/// See the module docs.
pub(crate) struct Gather {
    store: Store,
    /// Each buffer's length.
    block: usize,
    /// Logical block size of the current file's device (1 for the page
    /// cache).
    lbs: usize,
    /// `O_DIRECT` on the file (false: io_uring over the page cache).
    direct: bool,
    /// File offset of the current buffer's first byte (a multiple of
    /// `lbs`).
    base: u64,
    /// Bytes of the file mirrored in the current buffer (`base + len` is
    /// the writer's offset).
    len: usize,
    /// The current buffer's `[..clean]` is submitted and final (whole
    /// blocks).
    clean: usize,
}

/// The buffers and how they reach the file.
enum Store {
    /// `pwrite()` on the `O_DIRECT` descriptor; the call is the completion.
    Pwrite(sys::AlignedBuf),
    /// io_uring: the ring's registered buffers and fixed file.
    Uring(Box<Ring>),
}

/// io_uring's state: the ring, the buffer being filled, the writes in
/// flight.
struct Ring {
    u: sys::UringWriter,
    /// The buffer being filled.
    cur: usize,
    /// Writes in flight (capacity `depth`, allocated once).
    slots: Vec<Slot>,
    next_tag: u64,
    /// The first failed write since the last rollback: its file offset and
    /// error.
    error: Option<(u64, io::Error)>,
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
}

impl Ring {
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

    /// Reaps every write in flight.
    fn wait_all(&mut self) -> io::Result<()> {
        while !self.slots.is_empty() {
            self.reap(true)?;
        }
        Ok(())
    }
}

/// The buffers' address alignment: the largest logical block size we
/// accept.
const ALIGN: usize = 4096;

impl Gather {
    /// Allocates the buffer (`block` bytes; the recording's creation, not
    /// the data path).
    pub(crate) fn new(block: u64) -> io::Result<Gather> {
        Ok(Gather::with(
            Store::Pwrite(sys::AlignedBuf::new(block as usize, ALIGN)?),
            true,
        ))
    }

    /// [`Gather::new`] writing through io_uring with `depth` buffers and
    /// writes in flight, `O_DIRECT` or (`direct` false) through the page
    /// cache; fails (with the errno) when the kernel refuses io_uring.
    pub(crate) fn uring(block: u64, depth: u32, direct: bool) -> io::Result<Gather> {
        let u = sys::UringWriter::new(depth, block as usize, ALIGN)?;
        let ring = Ring {
            slots: Vec::with_capacity(u.depth()),
            u,
            cur: 0,
            next_tag: 1,
            error: None,
        };
        Ok(Gather::with(Store::Uring(Box::new(ring)), direct))
    }

    fn with(store: Store, direct: bool) -> Gather {
        let block = match &store {
            Store::Pwrite(b) => b.len(),
            Store::Uring(r) => r.u.len(),
        };
        Gather {
            block,
            store,
            lbs: ALIGN,
            direct,
            base: 0,
            len: 0,
            clean: 0,
        }
    }

    /// True when writes complete after the call that submits them
    /// (io_uring): the writer then counts frames through
    /// [`Gather::completed_to`].
    pub(crate) fn is_async(&self) -> bool {
        matches!(self.store, Store::Uring(_))
    }

    /// The current buffer.
    fn buf(&mut self) -> &mut [u8] {
        match &mut self.store {
            Store::Pwrite(b) => b,
            Store::Uring(r) => r.u.buf(r.cur),
        }
    }

    /// Switches `f` to direct I/O (unless writing through the page cache)
    /// and starts mirroring it at `offset` (the end of its header): the
    /// partial block before it is read back.
    pub(crate) fn start(&mut self, f: &File, offset: u64) -> io::Result<()> {
        self.wait_all()?;
        if self.direct {
            let lbs = sys::logical_block_size(f)? as usize;
            if lbs > ALIGN || self.block % lbs != 0 {
                return Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    format!("the device's logical block size ({lbs} bytes) is larger than rtrec's direct I/O supports ({ALIGN} bytes)"),
                ));
            }
            self.lbs = lbs;
            sys::set_direct(f, true).map_err(|e| {
                if e.raw_os_error() == Some(libc::EINVAL) {
                    io::Error::new(
                        io::ErrorKind::Unsupported,
                        "this file system does not support direct I/O (O_DIRECT); use --io buffered",
                    )
                } else {
                    e
                }
            })?;
        } else {
            // The page cache takes any offset and length: no padding, no
            // rewrite.
            self.lbs = 1;
        }
        if let Store::Uring(r) = &mut self.store {
            r.u.set_file(f)?;
        }
        self.reload(f, offset)
    }

    /// Mirrors the file from the block holding `offset` on (no write in
    /// flight).
    fn reload(&mut self, f: &File, offset: u64) -> io::Result<()> {
        let lbs = self.lbs as u64;
        self.base = offset / lbs * lbs;
        self.len = (offset - self.base) as usize;
        self.clean = 0;
        if self.len > 0 {
            let (lbs, base) = (self.lbs, self.base);
            let buf = self.buf();
            let n = sys::pread_full(f, &mut buf[..lbs], base)?;
            buf[n..lbs].fill(0);
        }
        Ok(())
    }

    /// Waits until bytes `[p, q)` of the current buffer may change.
    fn make_room(&mut self, p: usize, q: usize) -> io::Result<()> {
        match &mut self.store {
            Store::Pwrite(_) => Ok(()),
            Store::Uring(r) => r.wait_range(r.cur, p, q),
        }
    }

    /// Writes `head` then `body` at the mirrored end (see the module docs).
    pub(crate) fn write(&mut self, f: &File, head: &[u8], body: &[u8]) -> io::Result<()> {
        for mut part in [head, body] {
            while !part.is_empty() {
                let n = part.len().min(self.block - self.len);
                let (p, q) = (self.len, self.len + n);
                self.make_room(p, q.div_ceil(self.lbs) * self.lbs)?;
                self.buf()[p..q].copy_from_slice(&part[..n]);
                self.len = q;
                part = &part[n..];
                if self.len == self.block {
                    self.write_out(f)?;
                    self.next_buffer()?;
                }
            }
        }
        if self.len > self.clean {
            self.write_out(f)?;
        }
        Ok(())
    }

    /// Moves on to the next buffer (io_uring: in turn, once its writes are
    /// reaped), mirroring the file from the current one's end.
    fn next_buffer(&mut self) -> io::Result<()> {
        if let Store::Uring(r) = &mut self.store {
            r.cur = (r.cur + 1) % r.u.depth();
            let (cur, block) = (r.cur, self.block);
            r.wait_range(cur, 0, block)?;
        }
        self.base += self.block as u64;
        (self.len, self.clean) = (0, 0);
        Ok(())
    }

    /// Writes `buf[clean..]` up to the end rounded up to whole blocks, the
    /// padding zeroed; the whole blocks before the end become clean.
    fn write_out(&mut self, f: &File) -> io::Result<()> {
        let end = self.len.div_ceil(self.lbs) * self.lbs;
        let (len, clean, off) = (self.len, self.clean, self.base + self.clean as u64);
        self.make_room(len, end)?;
        self.buf()[len..end].fill(0);
        match &mut self.store {
            Store::Pwrite(b) => sys::pwrite_all(f, &b[clean..end], off)?,
            Store::Uring(r) => {
                if r.slots.len() == r.slots.capacity() {
                    r.reap(true)?;
                }
                let tag = r.next_tag;
                r.next_tag += 1;
                // SAFETY: the rewrite rule (module docs): these bytes are
                // not changed until the write is reaped (`make_room`,
                // `next_buffer`, `wait_all` wait for its slot first).
                unsafe { r.u.submit(r.cur, clean, end, off, tag)? };
                r.slots.push(Slot {
                    tag,
                    buf: r.cur,
                    start: clean,
                    end,
                    off,
                });
            }
        }
        self.clean = self.len / self.lbs * self.lbs;
        Ok(())
    }

    /// Reaps the completions that have come, without waiting.
    pub(crate) fn poll(&mut self) -> io::Result<()> {
        if let Store::Uring(r) = &mut self.store {
            while r.reap(false)? {}
        }
        Ok(())
    }

    /// Waits for every write in flight.
    pub(crate) fn wait_all(&mut self) -> io::Result<()> {
        match &mut self.store {
            Store::Pwrite(_) => Ok(()),
            Store::Uring(r) => r.wait_all(),
        }
    }

    /// Waits for one completion when writes are in flight.
    pub(crate) fn wait_one(&mut self) -> io::Result<()> {
        if let Store::Uring(r) = &mut self.store {
            r.reap(true)?;
        }
        Ok(())
    }

    /// True while writes are in flight.
    pub(crate) fn in_flight(&self) -> bool {
        matches!(&self.store, Store::Uring(r) if !r.slots.is_empty())
    }

    /// Every byte of the file before this offset is written; later ones
    /// may still be in flight, or failed (see [`Gather::take_error`]).
    pub(crate) fn completed_to(&self) -> u64 {
        let end = self.base + self.len as u64;
        match &self.store {
            Store::Pwrite(_) => end,
            Store::Uring(r) => r
                .slots
                .iter()
                .map(|s| s.off)
                .chain(r.error.as_ref().map(|e| e.0))
                .fold(end, u64::min),
        }
    }

    /// The first failed write since the last rollback: its file offset and
    /// error.
    pub(crate) fn take_error(&mut self) -> Option<(u64, io::Error)> {
        match &mut self.store {
            Store::Pwrite(_) => None,
            Store::Uring(r) => r.error.take(),
        }
    }

    /// After a failed write: waits for the writes in flight (their errors
    /// are forgotten), then the file's data end at `offset` again.
    pub(crate) fn rollback(&mut self, f: &File, offset: u64) -> io::Result<()> {
        let waited = self.wait_all();
        let _ = self.take_error();
        waited?;
        if offset >= self.base && offset <= self.base + self.len as u64 {
            self.len = (offset - self.base) as usize;
            self.clean = self.clean.min(self.len / self.lbs * self.lbs);
            Ok(())
        } else {
            self.reload(f, offset)
        }
    }

    /// Waits for the writes in flight and switches `f` back to buffered
    /// I/O (for the header rewrite at close).
    pub(crate) fn stop(&mut self, f: &File) -> io::Result<()> {
        self.wait_all()?;
        if self.direct {
            sys::set_direct(f, false)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes pieces through a small gatherer (crossing its buffer, rolling
    /// one back) and compares the file with the bytes meant: once the
    /// writes in flight are reaped, the file holds them, then zeros to the
    /// block's end. With `pwrite()`, and with io_uring (2 buffers, direct
    /// and through the page cache) when the kernel allows it.
    #[test]
    fn the_file_holds_exactly_the_gathered_bytes_then_zeros_after_every_write() {
        check_gatherer(Gather::new(8192).unwrap());
        for direct in [true, false] {
            match Gather::uring(8192, 2, direct) {
                Ok(g) => check_gatherer(g),
                Err(e) => assert!(e.raw_os_error().is_some(), "{e}"),
            }
        }
    }

    fn check_gatherer(mut g: Gather) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let f = File::options()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .unwrap();
        sys::fallocate(&f, sys::FallocateMode::ExtendSize, 0, 1 << 20).unwrap();
        sys::pwrite_all(&f, &[7u8; 72], 0).unwrap();
        g.start(&f, 72).unwrap();
        let lbs = g.lbs;
        let mut want = vec![7u8; 72];
        let mut x = 0u8;
        for (i, n) in [5usize, 600, 4000, 9000, 1, 17000, 333]
            .into_iter()
            .enumerate()
        {
            let head: Vec<u8> = (0..n.min(40))
                .map(|_| {
                    x = x.wrapping_add(1);
                    x
                })
                .collect();
            let body: Vec<u8> = (0..n)
                .map(|_| {
                    x = x.wrapping_add(3);
                    x
                })
                .collect();
            if i == 3 {
                // A failed frame: written, then forgotten.
                let at = want.len() as u64;
                g.write(&f, &head, &body).unwrap();
                g.rollback(&f, at).unwrap();
                continue;
            }
            g.write(&f, &head, &body).unwrap();
            g.wait_all().unwrap();
            assert!(g.take_error().is_none());
            assert_eq!(
                g.completed_to(),
                (want.len() + head.len() + body.len()) as u64
            );
            want.extend_from_slice(&head);
            want.extend_from_slice(&body);
            let end = want.len().div_ceil(lbs) * lbs;
            // Read through another (buffered) descriptor.
            let got = &std::fs::read(&path).unwrap()[..end];
            assert_eq!(&got[..want.len()], &want[..], "write {i}");
            assert!(got[want.len()..].iter().all(|&b| b == 0), "write {i}");
        }
        g.stop(&f).unwrap();
    }
}
