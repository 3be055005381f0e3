//! The gatherer shared by the `direct`, `uring` and `uring_buffered`
//! back-ends: aligned buffers that mirror the file from the start of its
//! partial last block, so that every `O_DIRECT` write covers whole logical
//! blocks. The transport under it (`pwrite()` or io_uring) is a
//! [`Transport`]; [`Gather`] over any transport is a [`Backend`].
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
//! - **Through the page cache** (`uring_buffered`) the "logical block" is
//!   the file system's block (`st_blksize`, [`write_unit`]), as for
//!   `direct`: the page cache would take any length, but a write that
//!   ends inside a block it does not hold makes the kernel read that block
//!   first when it is written space — a recycled pool's file, whose pages
//!   were dropped after its last life. Measured (issue 34): 4,000 records
//!   of 1 KiB into such a pool with the page cache dropped read the device
//!   269 times, once per frame, when frames were written exactly (one-byte
//!   blocks, before 2026-11-28). Whole blocks with zero padding are never
//!   read; the price is `direct`'s: the partial last block rewritten with
//!   the next frame, unless held (below).
//!
//! - **Coalescing when behind** ([`Backend::coalesce`], issue 23): while
//!   the writer is behind (its ring filled past [`super::BEHIND_PERCENT`])
//!   frames are only copied, and the buffer is written when it is full —
//!   one write of [`crate::config::Config::io_block`] bytes (1 MiB by
//!   default) in place of one per frame — or when the writer asks
//!   ([`Backend::flush`]: it has caught up, a frame other than data
//!   follows, the file closes, its ledger of frames in flight is full).
//!   With io_uring the next buffer fills while the full ones are in flight,
//!   up to `io_depth` of them. A frame gathered and not yet written is not
//!   *written*: [`Backend::completed_to`] stays at the end of the last
//!   write, so the writer counts it, and a durable point covers it, only
//!   once its write has completed (`docs/durability.md`).
//!
//! - **The partial last block is held for the next frame** ([`Backend::hold_tail`],
//!   ring mode): written through, a frame's whole blocks go at once and
//!   the block it ends inside waits for the next frame, which writes it
//!   whole, or for [`Backend::flush`], which the writer calls when no
//!   frame has come for `max_latency_ns` (50 ms by default, the bound
//!   packed framing already puts on a record's wait; `Writer::pace`). So a
//!   writer that is behind, or whose frames come less than that apart,
//!   writes each block once and in file order. Before 2026-11-27 the tail
//!   went out with every frame: a 1 MiB record (a frame of 1 MiB plus its
//!   header, ending a few hundred bytes into a block) cost two requests,
//!   the second rewriting the first's last block at once; with io_uring
//!   each frame also waited for the tail's write in flight before it could
//!   copy into that block. Holding it only while a frame already waited
//!   was not enough: a writer with any slack catches up after each frame
//!   and writes the tail alone again. A held tail is not written, so it is
//!   not counted either
//!   ([`Backend::completed_to`] stays at the last whole block): a kill or
//!   power cut may lose the last frame's final block for up to that bound,
//!   as it may lose a packed frame's records.
//!
//! With io_uring (the `uring` module) writes are in flight; the rules for
//! what may be in flight together are that module's.

use std::fs::File;
use std::io;
use std::os::unix::fs::MetadataExt;

use rtrec_sys as sys;

use super::backend::{Backend, Settings};
use crate::strategy::Io;

/// The buffers' address alignment: the largest logical block size we
/// accept.
pub(super) const ALIGN: usize = 4096;

/// How the gatherer's buffers reach the file: `pwrite()` (the call is the
/// completion) or io_uring (writes in flight, reaped later). The provided
/// methods are those of one buffer written synchronously.
pub(super) trait Transport: Send {
    /// Each buffer's length.
    fn len(&self) -> usize;
    /// The buffer being filled.
    fn buf(&mut self) -> &mut [u8];
    /// Starts writing to `f` (no write in flight).
    fn set_file(&mut self, _f: &File) -> io::Result<()> {
        Ok(())
    }
    /// Waits until bytes `[p, q)` of the current buffer may change.
    fn make_room(&mut self, _p: usize, _q: usize) -> io::Result<()> {
        Ok(())
    }
    /// Moves on to the next buffer, once nothing in flight reads it.
    fn next_buffer(&mut self) -> io::Result<()> {
        Ok(())
    }
    /// Writes (or submits) the current buffer's `[start, end)` at file
    /// offset `off`.
    fn write(&mut self, f: &File, start: usize, end: usize, off: u64) -> io::Result<()>;
    /// See [`Backend::poll`].
    fn poll(&mut self) -> io::Result<()> {
        Ok(())
    }
    /// See [`Backend::wait_one`].
    fn wait_one(&mut self) -> io::Result<()> {
        Ok(())
    }
    /// See [`Backend::wait_all`].
    fn wait_all(&mut self) -> io::Result<()> {
        Ok(())
    }
    /// See [`Backend::in_flight`].
    fn in_flight(&self) -> bool {
        false
    }
    /// The lowest file offset of a write in flight or failed, if any.
    fn oldest_unfinished(&self) -> Option<u64> {
        None
    }
    /// See [`Backend::take_error`].
    fn take_error(&mut self) -> Option<(u64, io::Error)> {
        None
    }
    /// See [`Backend::resubmitted`].
    fn resubmitted(&self) -> u64 {
        0
    }
}

/// The unit every `O_DIRECT` write covers whole: the device's logical
/// block (`lbs`, what `O_DIRECT` requires), raised to the file system's
/// block (`st_blksize`, 4 KiB on ext4, XFS and btrfs) up to [`ALIGN`].
///
/// Design choice: a write that covers only part of a file system block is
/// legal with a 512-byte logical block but costs more than it saves. ext4
/// serializes such "unaligned" direct writes against every other one in
/// flight (io_uring's depth is lost), zeroes the rest of the block when it
/// is unwritten (pre-allocated) space, and a device or a loop device over a
/// file with 4 KiB pages reads the block back to merge it. On the emulated
/// 5,400 rpm disk every 1 MiB frame written at a 512-byte offset cost a
/// read and a seek: 62 ms where a 4 KiB-aligned MiB took 45 ms, and
/// `direct` held 0.58 of the disk. The price: up to 4 KiB of padding per
/// write in place of 512 bytes, rewritten by the next frame.
pub(super) fn write_unit(lbs: usize, blksize: u64) -> usize {
    let fs = usize::try_from(blksize)
        .ok()
        .filter(|b| b.is_power_of_two())
        .unwrap_or(lbs);
    lbs.max(fs.min(ALIGN))
}

/// The rule of every gathering back-end (`direct`, `uring`,
/// `uring-buffered`): the buffer (`io_block`) is a power of two between
/// 4 KiB and 64 MiB, so it holds whole logical blocks and a few writes of
/// it stay within reason.
pub(super) fn block_in_range(s: &Settings) -> Result<(), String> {
    if s.io_block.is_power_of_two() && (4096..=64 << 20).contains(&s.io_block) {
        Ok(())
    } else {
        Err(format!(
            "the direct I/O block must be a power of two between 4 KiB and 64 MiB, not {} bytes",
            s.io_block
        ))
    }
}

/// See the module docs.
pub(super) struct Gather<T> {
    t: T,
    /// The back-end's name.
    io: Io,
    /// Each buffer's length.
    block: usize,
    /// Logical block size of the current file's device (1 for the page
    /// cache).
    lbs: usize,
    /// `O_DIRECT` on the file (false: through the page cache).
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
    /// Every byte of the file before this offset is written or submitted
    /// (the mirrored end at the last write).
    written: u64,
    /// Behind: frames are gathered and written a buffer at a time (see the
    /// module docs).
    coalesce: bool,
    /// Ring mode: a frame's partial last block waits for the next frame or
    /// the flush (see the module docs).
    hold: bool,
}

impl<T: Transport> Gather<T> {
    /// A gatherer over `t`, `O_DIRECT` on each file when `direct`.
    pub(super) fn new(io: Io, t: T, direct: bool) -> Gather<T> {
        Gather {
            block: t.len(),
            t,
            io,
            lbs: ALIGN,
            direct,
            base: 0,
            len: 0,
            clean: 0,
            written: 0,
            coalesce: false,
            hold: false,
        }
    }

    /// The file offset of the mirrored end: where the next frame goes.
    fn end(&self) -> u64 {
        self.base + self.len as u64
    }

    /// Mirrors the file from the block holding `offset` on (no write in
    /// flight).
    fn reload(&mut self, f: &File, offset: u64) -> io::Result<()> {
        let lbs = self.lbs as u64;
        self.base = offset / lbs * lbs;
        self.len = (offset - self.base) as usize;
        self.clean = 0;
        self.written = offset;
        if self.len > 0 {
            let (lbs, base) = (self.lbs, self.base);
            let buf = self.t.buf();
            let n = sys::pread_full(f, &mut buf[..lbs], base)?;
            buf[n..lbs].fill(0);
        }
        Ok(())
    }

    /// Moves on to the next buffer, mirroring the file from the current
    /// one's end.
    fn next_buffer(&mut self) -> io::Result<()> {
        self.t.next_buffer()?;
        self.base += self.block as u64;
        (self.len, self.clean) = (0, 0);
        Ok(())
    }

    /// Writes `buf[clean..]` up to the end rounded up to whole blocks, the
    /// padding zeroed; the whole blocks before the end become clean.
    fn write_out(&mut self, f: &File) -> io::Result<()> {
        let end = self.len.div_ceil(self.lbs) * self.lbs;
        let (len, clean, off) = (self.len, self.clean, self.base + self.clean as u64);
        self.t.make_room(len, end)?;
        self.t.buf()[len..end].fill(0);
        self.t.write(f, clean, end, off)?;
        self.clean = self.len / self.lbs * self.lbs;
        self.written = self.end();
        Ok(())
    }

    /// Writes `buf[clean..]` up to its last whole block, if that is past
    /// `clean`: the partial block after it is held (see the module docs).
    fn write_whole(&mut self, f: &File) -> io::Result<()> {
        let whole = self.len / self.lbs * self.lbs;
        if whole > self.clean {
            let (clean, off) = (self.clean, self.base + self.clean as u64);
            self.t.write(f, clean, whole, off)?;
            self.clean = whole;
            self.written = self.base + whole as u64;
        }
        Ok(())
    }
}

impl<T: Transport> Backend for Gather<T> {
    fn io(&self) -> Io {
        self.io
    }

    /// Always: even with `pwrite()`, a frame gathered while coalescing is
    /// written later.
    fn is_async(&self) -> bool {
        true
    }

    fn bypasses_page_cache(&self) -> bool {
        self.direct
    }

    /// Switches `f` to direct I/O (unless writing through the page cache)
    /// and starts mirroring it at `offset`: the partial block before it is
    /// read back.
    fn start(&mut self, f: &File, offset: u64) -> io::Result<()> {
        self.t.wait_all()?;
        if self.direct {
            let lbs = sys::logical_block_size(f)? as usize;
            if lbs > ALIGN || self.block % lbs != 0 {
                return Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    format!("the device's logical block size ({lbs} bytes) is larger than rtrec's direct I/O supports ({ALIGN} bytes)"),
                ));
            }
            let unit = write_unit(lbs, f.metadata()?.blksize());
            // A buffer (`--io-block`) that is not a whole number of units
            // keeps the logical block.
            self.lbs = if self.block % unit == 0 { unit } else { lbs };
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
            // Through the page cache any offset and length would do, but a
            // write that ends inside a block the cache does not hold makes
            // the kernel read it first when it is written space (a
            // recycled pool's file): whole file-system blocks, as `direct`
            // writes them, are never read (module docs).
            let unit = write_unit(1, f.metadata()?.blksize());
            self.lbs = if self.block % unit == 0 { unit } else { 1 };
        }
        self.t.set_file(f)?;
        self.reload(f, offset)
    }

    fn write(&mut self, f: &File, head: &[u8], body: &[u8]) -> io::Result<()> {
        for mut part in [head, body] {
            while !part.is_empty() {
                let n = part.len().min(self.block - self.len);
                let (p, q) = (self.len, self.len + n);
                self.t.make_room(p, q.div_ceil(self.lbs) * self.lbs)?;
                self.t.buf()[p..q].copy_from_slice(&part[..n]);
                self.len = q;
                part = &part[n..];
                if self.len == self.block {
                    self.write_out(f)?;
                    self.next_buffer()?;
                }
            }
        }
        if !self.coalesce && self.len > self.clean {
            if self.hold {
                self.write_whole(f)?;
            } else {
                self.write_out(f)?;
            }
        }
        Ok(())
    }

    fn coalesce(&mut self, on: bool) {
        self.coalesce = on;
    }

    fn hold_tail(&mut self, on: bool) {
        self.hold = on;
    }

    fn unwritten_from(&self) -> Option<u64> {
        (self.end() > self.written).then_some(self.written)
    }

    fn flush(&mut self, f: &File) -> io::Result<()> {
        if self.unwritten_from().is_some() {
            self.write_out(f)?;
        }
        Ok(())
    }

    fn poll(&mut self) -> io::Result<()> {
        self.t.poll()
    }

    fn wait_one(&mut self) -> io::Result<()> {
        self.t.wait_one()
    }

    fn wait_all(&mut self) -> io::Result<()> {
        self.t.wait_all()
    }

    fn in_flight(&self) -> bool {
        self.t.in_flight()
    }

    fn completed_to(&self) -> u64 {
        let w = self.written;
        self.t.oldest_unfinished().map_or(w, |o| o.min(w))
    }

    fn take_error(&mut self) -> Option<(u64, io::Error)> {
        self.t.take_error()
    }

    fn resubmitted(&self) -> u64 {
        self.t.resubmitted()
    }

    fn rollback(&mut self, f: &File, offset: u64) -> io::Result<()> {
        let waited = self.t.wait_all();
        let _ = self.t.take_error();
        waited?;
        if offset >= self.base && offset <= self.base + self.len as u64 {
            self.len = (offset - self.base) as usize;
            self.clean = self.clean.min(self.len / self.lbs * self.lbs);
            self.written = self.written.min(offset);
            Ok(())
        } else {
            self.reload(f, offset)
        }
    }

    fn stop(&mut self, f: &File) -> io::Result<()> {
        self.t.wait_all()?;
        if self.direct {
            sys::set_direct(f, false)?;
        }
        Ok(())
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::io::backend::Settings;

    /// Opens a back-end with small buffers (8 KiB, 2 of them for io_uring)
    /// and runs [`check_gatherer`] on it; a kernel that refuses io_uring
    /// (an errno) leaves nothing to check here: the writer falls back
    /// (`io::tests`).
    pub(in crate::io) fn check_engine(open: fn(&Settings) -> io::Result<Box<dyn Backend>>) {
        let cfg = Settings {
            io_block: 8192,
            io_depth: 2,
            ..Settings::default()
        };
        match open(&cfg) {
            Ok(g) => check_gatherer(g),
            Err(e) => assert!(e.raw_os_error().is_some(), "{e}"),
        }
    }

    /// A transport that writes nothing and counts each write's size.
    struct Counting {
        buf: Vec<u8>,
        writes: Vec<usize>,
    }

    impl Counting {
        /// A 4 KiB buffer, no write yet.
        fn new() -> Counting {
            Counting {
                buf: vec![0; 4096],
                writes: Vec::new(),
            }
        }
    }

    impl Transport for Counting {
        fn len(&self) -> usize {
            self.buf.len()
        }

        fn buf(&mut self) -> &mut [u8] {
            &mut self.buf
        }

        fn write(&mut self, _f: &File, start: usize, end: usize, _off: u64) -> io::Result<()> {
            self.writes.push(end - start);
            Ok(())
        }
    }

    #[test]
    fn a_behind_writer_gets_buffer_sized_writes_and_a_caught_up_one_a_write_per_frame() {
        let f = tempfile::tempfile().unwrap();
        let t = Counting::new();
        // 1-byte blocks (through the page cache with a buffer that is not
        // a whole number of file-system blocks): sizes exactly the frames'.
        let mut g = Gather::new(Io::UringBuffered, t, false);
        g.start(&f, 0).unwrap();
        g.lbs = 1;
        let (head, body) = ([1u8; 40], [2u8; 60]);
        // Caught up: each 100-byte frame is written through at once.
        for _ in 0..4 {
            g.write(&f, &head, &body).unwrap();
        }
        assert_eq!(g.completed_to(), 400);
        // Behind: frames are gathered; the full buffer goes in one write,
        // the rest waits, and is not counted as written.
        g.coalesce(true);
        for _ in 0..50 {
            g.write(&f, &head, &body).unwrap();
        }
        assert_eq!(g.completed_to(), 4096);
        // Caught up again: what was gathered is written at once, then one
        // write per frame.
        g.coalesce(false);
        g.flush(&f).unwrap();
        assert_eq!(g.completed_to(), 5400);
        g.flush(&f).unwrap();
        g.write(&f, &head, &body).unwrap();
        assert_eq!(g.completed_to(), 5500);
        assert_eq!(g.t.writes, [100, 100, 100, 100, 3696, 1304, 100]);
    }

    #[test]
    fn direct_writes_cover_whole_file_system_blocks_up_to_the_alignment() {
        // ext4 on a 512-byte device: 4 KiB.
        assert_eq!(write_unit(512, 4096), 4096);
        // A 4 KiB device under a file system of 1 KiB blocks: the device's.
        assert_eq!(write_unit(4096, 1024), 4096);
        // 64 KiB file system blocks: no more than the buffers' alignment.
        assert_eq!(write_unit(512, 65536), ALIGN);
        // No usable st_blksize: the logical block.
        assert_eq!(write_unit(512, 0), 512);
        assert_eq!(write_unit(512, 3000), 512);
    }

    /// Frames of a buffer plus a header (a 1 MiB record's shape), on a
    /// device of 512-byte blocks: written through with every tail, each
    /// costs two requests; holding the tail while a frame waits costs one,
    /// and the flush writes the tail when none follows. A held tail is not
    /// counted as written.
    #[test]
    fn a_held_tail_waits_for_the_next_frame_or_the_flush() {
        let f = tempfile::tempfile().unwrap();
        let (head, body) = ([1u8; 40], [2u8; 4096]);
        let mut writes = Vec::new();
        for hold in [false, true] {
            let t = Counting::new();
            let mut g = Gather::new(Io::Direct, t, false);
            g.start(&f, 0).unwrap();
            // As `O_DIRECT` on a device of 512-byte logical blocks.
            g.lbs = 512;
            g.hold_tail(hold);
            for i in 1..=3u64 {
                g.write(&f, &head, &body).unwrap();
                let end = 4136 * i;
                let want = if hold { end / 512 * 512 } else { end };
                assert_eq!(g.completed_to(), want, "hold {hold}, frame {i}");
            }
            g.flush(&f).unwrap();
            assert_eq!(g.completed_to(), 3 * 4136, "hold {hold}");
            writes.push(g.t.writes);
        }
        assert_eq!(writes[0], [4096, 512, 4096, 512, 4096, 512]);
        assert_eq!(writes[1], [4096, 4096, 4096, 512]);

        // Small frames: the whole blocks go at once, the partial one waits;
        // a flush writes it, and the next frame writes that block again.
        let t = Counting::new();
        let mut g = Gather::new(Io::Direct, t, false);
        g.start(&f, 0).unwrap();
        g.lbs = 512;
        g.hold_tail(true);
        let body = [2u8; 1000];
        g.write(&f, &head, &body).unwrap();
        assert_eq!(g.completed_to(), 1024);
        g.write(&f, &head, &body).unwrap();
        assert_eq!(g.completed_to(), 2048);
        g.flush(&f).unwrap();
        assert_eq!(g.completed_to(), 2080);
        g.write(&f, &head, &body).unwrap();
        assert_eq!(g.completed_to(), 3072);
        assert_eq!(g.t.writes, [1024, 1024, 512, 1024]);
    }

    /// Writes pieces through a small back-end (crossing its buffer, rolling
    /// one back) and compares the file with the bytes meant: once the
    /// writes in flight are reaped, the file holds them, then zeros to the
    /// block's end.
    fn check_gatherer(mut g: Box<dyn Backend>) {
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
        let lbs = if g.bypasses_page_cache() {
            sys::logical_block_size(&f).unwrap() as usize
        } else {
            1
        };
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
