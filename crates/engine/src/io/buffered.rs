//! The `buffered` back-end ([`Io::Buffered`]): each frame is one
//! `writev()` of its header and payload (one `write()` when there is no
//! header: raw framing) into the page cache at the file's position, retried
//! only for short writes and `EINTR`. The call is the completion; the flush
//! thread writes the dirty pages back.
//!
//! **Ring mode holds a frame's partial last block for the next frame**
//! ([`Backend::hold_tail`], as the gathering back-ends do): a write ends at
//! a file-system block boundary (the unit of `write_unit` in the `gather`
//! module: `st_blksize`, 4 KiB on ext4, XFS and btrfs), the bytes after it
//! wait in a block-sized buffer and go out at the front of the next frame's
//! `writev()`, or alone once no frame has come for `max_latency_ns`
//! (`Writer::pace`), before a frame that is not data, and at close.
//!
//! Design choice, measured: a write that ends inside a block the page cache
//! does not hold makes the kernel *read* that block before it copies, when
//! the block is written space (a pool's zero-filled or recycled file); over
//! unwritten space (`fallocate`) or past the end of the file it zeroes the
//! page instead. A recycled pool file's pages were dropped after its last
//! life (the flush window's `POSIX_FADV_DONTNEED`), so every frame cost a
//! synchronous read: on the emulated 5,400 rpm disk one seek per 1 MiB
//! frame, and `bench --study throughput --alloc pool` held 0.59 of the disk
//! where `fallocate` held 0.81 (`docs/bench.md`). Writing whole blocks,
//! each partial block is first touched by a write that covers it from its
//! start, which needs no read. The price is the gatherer's: the last
//! frame's final block reaches the page cache up to `max_latency_ns` later,
//! and it is not counted as written before (so a kill loses at most that
//! block of a frame not yet counted), and a copy of under one block per
//! frame. Inline mode (S1's measurement) writes every frame through, as
//! before.
//!
//! **Packed frames are padded to the block's end in the same `writev()`**
//! (ring mode): a packed frame's records already waited up to
//! `max_latency_ns` in the open frame, so holding its last block for
//! another bound would double what a kill may lose. Instead the frame's
//! write carries zeros from its end to the end of its last block (never
//! past the file's length at the start: past the end of a file the page
//! cache zeroes and reads nothing), so that write covers every block it
//! touches from its start or to its end and none is read first; the
//! position is then set back to the frame's end (an `lseek`), where the
//! next frame overwrites the zeros in a page the cache now holds. Before
//! (2026-11-27), 4,000 records of 1 KiB into a recycled pool with the
//! page cache dropped read the device 268 times, once per sealed 16 KiB
//! frame; after, 2 (`tests/pool_reads.rs`). The zeros are what a reader
//! already takes for the end of the data; the price is up to one block of
//! zeros copied per frame and a system call.

use std::fs::File;
use std::io;
use std::os::unix::fs::MetadataExt;

use rtrec_sys as sys;

use super::backend::{Backend, Engine, Settings};
use super::gather::{write_unit, ALIGN};
use crate::strategy::{Framing, Io, Mode};

/// This back-end's row of [`super::ENGINES`]: no rule of its own (any
/// allocation mode; `io_block` and `io_depth` are not read), no fallback
/// (it is the fallback).
pub(super) const ENGINE: Engine = Engine {
    io: Io::Buffered,
    help: "`write()`/`writev()` into the page cache; the flusher writes back",
    direct: false,
    uring: false,
    rules: &[],
    open,
    fallback: None,
};

/// See the module docs.
struct Buffered {
    /// The file position: every byte before it is written; the held block
    /// (if any) starts here.
    pos: u64,
    /// The writer holds partial last blocks ([`Backend::hold_tail`]).
    hold: bool,
    /// Ring mode with frames the writer may hold: the writer then counts
    /// frames through [`Backend::completed_to`] (see [`Backend::is_async`]).
    holds: bool,
    /// Writes end on multiples of this (the file system's block).
    unit: usize,
    /// The held bytes (`tail[..held]`), at file offset `pos`.
    tail: Box<[u8]>,
    /// Ring mode, packed framing: each frame's write is padded with zeros
    /// to its last block's end (module docs).
    pad: bool,
    /// The file's length when it was started: no padding past it.
    file_len: u64,
    /// A block of zeros, the padding (empty without `pad`): allocated with
    /// the back-end, as a static it would take 4 KiB of every binary.
    zeros: Box<[u8]>,
    /// How many bytes are held.
    held: usize,
}

/// Makes the back-end; the held block's buffer is allocated here (the
/// recording's creation, not the data path).
fn open(s: &Settings) -> io::Result<Box<dyn Backend>> {
    let pad = s.mode == Mode::Ring && s.framing == Framing::Packed;
    Ok(Box::new(Buffered {
        pos: 0,
        hold: false,
        holds: s.mode == Mode::Ring && s.framing != Framing::Packed,
        unit: ALIGN,
        tail: vec![0u8; ALIGN].into_boxed_slice(),
        held: 0,
        pad,
        file_len: 0,
        zeros: vec![0u8; if pad { ALIGN } else { 0 }].into_boxed_slice(),
    }))
}

impl Buffered {
    /// The zeros a write ending at `end` carries (module docs): to the end
    /// of its block with packed frames, within the file's length.
    fn padding(&self, end: u64) -> usize {
        let unit = self.unit as u64;
        if !self.pad || end % unit == 0 {
            return 0;
        }
        let to = (end.div_ceil(unit) * unit).min(self.file_len);
        to.saturating_sub(end) as usize
    }

    /// Writes the first `n` bytes of held block, `head` and `body` (in that
    /// order) at the file position, then `pad` zeros, retrying short writes
    /// and `EINTR`. Padding comes only with packed frames, which are never
    /// held, so the parts are still three.
    fn write_prefix(
        &mut self,
        f: &File,
        head: &[u8],
        body: &[u8],
        n: usize,
        pad: usize,
    ) -> io::Result<()> {
        let r = if pad == 0 {
            write_parts(f, [&self.tail[..self.held], head, body], n)
        } else {
            debug_assert_eq!(self.held, 0, "a packed frame is never held");
            write_parts(f, [head, body, &self.zeros[..pad]], n + pad)
        };
        r.map_err(|(e, done)| {
            // The bytes written stay written; the writer rolls back.
            self.pos += done.min(n) as u64;
            self.held = 0;
            e
        })
    }
}

/// Writes the first `n` bytes of `parts`, one after the other, at the file
/// position, retrying short writes and `EINTR`; on an error, with the
/// bytes written before it.
fn write_parts(f: &File, parts: [&[u8]; 3], n: usize) -> Result<(), (io::Error, usize)> {
    let mut done = 0;
    while done < n {
        let [a, b, c] = window(parts, done, n);
        let r = if a.is_empty() && b.is_empty() {
            sys::write_once(f, c)
        } else if a.is_empty() {
            sys::writev2_once(f, b, c)
        } else {
            sys::writev3_once(f, a, b, c)
        };
        match r {
            Ok(0) => return Err((io::ErrorKind::WriteZero.into(), done)),
            Ok(k) => done += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err((e, done)),
        }
    }
    Ok(())
}

/// `parts` seen as one run of bytes, cut to `[from, to)`, as three slices.
fn window(parts: [&[u8]; 3], from: usize, to: usize) -> [&[u8]; 3] {
    let mut at = 0;
    parts.map(|p| {
        let (s, e) = (at, at + p.len());
        at = e;
        let (a, b) = (from.clamp(s, e), to.clamp(s, e));
        &p[a - s..b - s]
    })
}

impl Backend for Buffered {
    fn io(&self) -> Io {
        Io::Buffered
    }

    /// In ring mode with held blocks: a frame whose last block is held is
    /// written later, so the writer counts frames by
    /// [`Backend::completed_to`] and flushes before frames that are not
    /// data. Every write is still complete when its call returns.
    fn is_async(&self) -> bool {
        self.holds
    }

    fn bypasses_page_cache(&self) -> bool {
        false
    }

    fn start(&mut self, f: &File, offset: u64) -> io::Result<()> {
        // The file was just created or taken with its position after the
        // header.
        self.pos = offset;
        self.held = 0;
        let meta = f.metadata()?;
        self.unit = write_unit(1, meta.blksize());
        self.file_len = meta.len();
        Ok(())
    }

    fn write(&mut self, f: &File, head: &[u8], body: &[u8]) -> io::Result<()> {
        let old = self.held;
        let total = old + head.len() + body.len();
        let end = self.pos + total as u64;
        let unit = self.unit as u64;
        let cut = if self.hold { end / unit * unit } else { end };
        // How much of this frame the write takes; the rest (under one
        // block) is held. Held bytes start on a block boundary (`pos` is
        // the last cut), so a write that reaches the next boundary takes
        // all of them: what is held after it comes from this frame alone.
        let mut taken = 0;
        if cut > self.pos {
            let n = (cut - self.pos) as usize;
            let pad = self.padding(cut);
            self.write_prefix(f, head, body, n, pad)?;
            if pad > 0 {
                sys::seek_to(f, cut)?;
            }
            (self.pos, self.held, taken) = (cut, 0, n - old);
        }
        let [_, h, b] = window([&[], head, body], taken, total - old);
        for part in [h, b] {
            self.tail[self.held..self.held + part.len()].copy_from_slice(part);
            self.held += part.len();
        }
        Ok(())
    }

    fn hold_tail(&mut self, on: bool) {
        self.hold = on && self.holds;
    }

    fn unwritten_from(&self) -> Option<u64> {
        (self.held > 0).then_some(self.pos)
    }

    /// Writes the held bytes as they are (no padding: the page cache takes
    /// any length, and the next frame continues in a page it now holds).
    fn flush(&mut self, f: &File) -> io::Result<()> {
        if self.held > 0 {
            let n = self.held;
            self.write_prefix(f, &[], &[], n, 0)?;
            self.pos += n as u64;
            self.held = 0;
        }
        Ok(())
    }

    fn completed_to(&self) -> u64 {
        self.pos
    }

    /// Forgets the held bytes and moves the file position back to
    /// `offset` (a partial frame there is overwritten by the closing
    /// frames, or cut off at close).
    fn rollback(&mut self, f: &File, offset: u64) -> io::Result<()> {
        self.held = 0;
        self.pos = offset;
        sys::seek_to(f, offset)
    }

    /// Writes what is still held (the writer flushes before it closes a
    /// file; this keeps a held block from being dropped if it did not).
    fn stop(&mut self, f: &File) -> io::Result<()> {
        self.flush(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ring mode, frames of many sizes (under a block, across several,
    /// empty): after each, every byte before `completed_to` is in the file
    /// as given, `completed_to` is on a block boundary (or still at the
    /// header's end) and less than a block is held; a flush writes the
    /// rest exactly. Inline mode writes every frame through.
    #[test]
    fn held_writes_end_on_blocks_and_the_file_gets_every_byte() {
        for mode in [Mode::Ring, Mode::Inline] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("f");
            let f = File::options()
                .read(true)
                .write(true)
                .create(true)
                .truncate(true)
                .open(&path)
                .unwrap();
            let cfg = Settings {
                mode,
                framing: Framing::Framed,
                ..Settings::default()
            };
            let mut b = open(&cfg).unwrap();
            assert_eq!(b.is_async(), mode == Mode::Ring);
            let at = 100u64;
            sys::pwrite_all(&f, &[0xee; 100], 0).unwrap();
            sys::seek_to(&f, at).unwrap();
            b.start(&f, at).unwrap();
            b.hold_tail(true);
            let unit = write_unit(1, f.metadata().unwrap().blksize()) as u64;
            let mut want = vec![0xeeu8; at as usize];
            for (i, n) in [10, 5000, 3, 4093, 8192, 1, 0, 20000, 4096, 7]
                .into_iter()
                .enumerate()
            {
                let head = [i as u8 + 1; 24];
                let body = vec![(i * 7) as u8; n];
                b.write(&f, &head, &body).unwrap();
                want.extend_from_slice(&head);
                want.extend_from_slice(&body);
                let done = b.completed_to();
                let end = want.len() as u64;
                if mode == Mode::Ring {
                    assert!(
                        done == at || done % unit == 0,
                        "frame {i}: written to {done}"
                    );
                    assert!(end - done < unit, "frame {i}: {} held", end - done);
                    assert_eq!(b.unwritten_from(), (done < end).then_some(done));
                } else {
                    assert_eq!(done, end, "inline: written through");
                }
                let got = std::fs::read(&path).unwrap();
                assert_eq!(&got[..done as usize], &want[..done as usize], "frame {i}");
            }
            b.flush(&f).unwrap();
            assert_eq!(b.completed_to(), want.len() as u64);
            assert_eq!(b.unwritten_from(), None);
            assert_eq!(std::fs::read(&path).unwrap(), want);
        }
    }

    /// Ring mode, packed frames over a file of written space (a recycled
    /// pool's): each frame's write reaches its block's end with zeros
    /// (never past the file's length), the position stays at the frame's
    /// end, and the next frame overwrites the zeros: the file holds every
    /// frame as given.
    #[test]
    fn packed_frames_are_padded_to_their_blocks_end_and_overwritten_by_the_next() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let len = 64 * 1024u64;
        std::fs::write(&path, vec![0xeeu8; len as usize]).unwrap();
        let f = File::options().read(true).write(true).open(&path).unwrap();
        let cfg = Settings {
            mode: Mode::Ring,
            framing: Framing::Packed,
            ..Settings::default()
        };
        let mut b = open(&cfg).unwrap();
        let at = 100u64;
        sys::seek_to(&f, at).unwrap();
        b.start(&f, at).unwrap();
        b.hold_tail(true);
        let unit = write_unit(1, f.metadata().unwrap().blksize());
        let mut want = vec![0xeeu8; at as usize];
        for (i, n) in [10, 5000, 3, 4072, 8192, 1, 20000].into_iter().enumerate() {
            let head = [i as u8 + 1; 24];
            let body = vec![(i * 7) as u8 | 1; n];
            b.write(&f, &head, &body).unwrap();
            want.extend_from_slice(&head);
            want.extend_from_slice(&body);
            let end = want.len();
            assert_eq!(b.completed_to(), end as u64, "frame {i}: written through");
            assert_eq!(b.unwritten_from(), None);
            let got = std::fs::read(&path).unwrap();
            assert_eq!(got.len() as u64, len, "frame {i}: the file did not grow");
            assert_eq!(&got[..end], &want[..], "frame {i}");
            let block_end = end.div_ceil(unit) * unit;
            assert!(
                got[end..block_end].iter().all(|&x| x == 0),
                "frame {i}: its block is padded with zeros"
            );
            assert!(got[block_end..].iter().all(|&x| x == 0xee), "frame {i}");
        }
        // The last frame ends 4 bytes before the file's end: the zeros stop
        // there, and the file does not grow.
        let last = len as usize - want.len() - 24 - 4;
        b.write(&f, &[9; 24], &vec![9; last]).unwrap();
        let got = std::fs::read(&path).unwrap();
        assert_eq!(got.len() as u64, len);
        assert_eq!(&got[got.len() - 4..], &[0, 0, 0, 0]);
    }

    #[test]
    fn a_window_cuts_three_parts_as_one_run() {
        let (a, b, c) = (&b"abc"[..], &b"de"[..], &b"fghij"[..]);
        let w = |f, t| window([a, b, c], f, t).map(|s| String::from_utf8_lossy(s).into_owned());
        assert_eq!(w(0, 10), ["abc", "de", "fghij"]);
        assert_eq!(w(2, 6), ["c", "de", "f"]);
        assert_eq!(w(4, 10), ["", "e", "fghij"]);
        assert_eq!(w(6, 6), ["", "", ""]);
    }
}
