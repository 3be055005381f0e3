//! The `O_DIRECT` back-end's gatherer ([`crate::config::Io::Direct`]): an
//! aligned buffer that mirrors the file from the start of its partial last
//! block, so that every direct write covers whole logical blocks.
//!
//! How it writes (design choices, see also `docs/format.md`, "Direct I/O"):
//! - **Write-through**: each frame is copied behind the bytes already in
//!   the buffer and written at once, from the first block that is not yet
//!   final to the frame's end rounded up to the logical block size, the
//!   rest of the last block padded with zeros. A frame is on the device
//!   when its call returns, so "written" keeps its meaning (a kill loses
//!   nothing written), and the writer counts records exactly as with
//!   buffered `write()`. The price: the partial last block is written again
//!   with the next frame (at most one logical block per frame).
//! - **Zeros are the padding** because a reader already ends an unfinished
//!   file's data cleanly at zeros (pre-allocated space), and a finished
//!   file's bytes after `valid_len` are ignored: the file is valid for
//!   `verify` after every write, and the format does not change.
//! - **The buffer** ([`crate::config::Config::io_block`], 1 MiB by default)
//!   is allocated once when the recording is created; when it fills it is
//!   written and starts again at the next file offset, so a frame larger
//!   than the buffer is written in buffer-sized pieces.
//! - **A failed write is rolled back** by forgetting the bytes after the
//!   frame's start (re-reading the block from the file when the frame had
//!   crossed a buffer boundary); the closing frames overwrite them.
//! - **io_uring** ([`crate::config::Io::Uring`]) is the same gatherer with
//!   another transport: the buffer is registered with the ring and the file
//!   is its fixed file, and each write is one `IORING_OP_WRITE_FIXED`
//!   submitted and reaped by the writer (see `rtrec_sys::uring`). One write
//!   is in flight at a time: write-through is what keeps "written" meaning
//!   "on the device" for the record just handed over.

use std::fs::File;
use std::io;

use rtrec_sys as sys;

/// See the module docs.
pub(crate) struct Gather {
    store: Store,
    /// The buffer's length.
    block: usize,
    /// Logical block size of the current file's device.
    lbs: usize,
    /// File offset of `buf[0]` (a multiple of `lbs`).
    base: u64,
    /// Bytes of the file mirrored in `buf` (`base + len` is the writer's
    /// offset).
    len: usize,
    /// `buf[..clean]` is on the device and final (whole blocks).
    clean: usize,
}

/// The buffer and how it reaches the file.
enum Store {
    /// `pwrite()` on the `O_DIRECT` descriptor.
    Pwrite(sys::AlignedBuf),
    /// io_uring: the ring's registered buffer and fixed file.
    Uring(Box<sys::UringWriter>),
}

impl Store {
    fn buf(&mut self) -> &mut [u8] {
        match self {
            Store::Pwrite(b) => b,
            Store::Uring(u) => u.buf(),
        }
    }

    /// Writes `buf[start..end]` at `offset`, retrying short writes.
    fn write(&mut self, f: &File, mut start: usize, end: usize, mut offset: u64) -> io::Result<()> {
        match self {
            Store::Pwrite(b) => sys::pwrite_all(f, &b[start..end], offset),
            Store::Uring(u) => {
                while start < end {
                    match u.write_at(start, end, offset)? {
                        0 => return Err(io::ErrorKind::WriteZero.into()),
                        n => {
                            start += n;
                            offset += n as u64;
                        }
                    }
                }
                Ok(())
            }
        }
    }
}

fn store_len(s: &Store) -> usize {
    match s {
        Store::Pwrite(b) => b.len(),
        Store::Uring(u) => u.len(),
    }
}

/// The buffer's address alignment: the largest logical block size we
/// accept.
const ALIGN: usize = 4096;

impl Gather {
    /// Allocates the buffer (`block` bytes; the recording's creation, not
    /// the data path).
    pub(crate) fn new(block: u64) -> io::Result<Gather> {
        Ok(Gather::with(Store::Pwrite(sys::AlignedBuf::new(
            block as usize,
            ALIGN,
        )?)))
    }

    /// [`Gather::new`] writing through io_uring; fails (with the errno)
    /// when the kernel refuses io_uring.
    pub(crate) fn uring(block: u64) -> io::Result<Gather> {
        let u = sys::UringWriter::new(4, block as usize, ALIGN)?;
        Ok(Gather::with(Store::Uring(Box::new(u))))
    }

    fn with(store: Store) -> Gather {
        Gather {
            block: store_len(&store),
            store,
            lbs: ALIGN,
            base: 0,
            len: 0,
            clean: 0,
        }
    }

    /// Switches `f` to direct I/O and starts mirroring it at `offset` (the
    /// end of its header): the partial block before it is read back.
    pub(crate) fn start(&mut self, f: &File, offset: u64) -> io::Result<()> {
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
        if let Store::Uring(u) = &mut self.store {
            u.set_file(f)?;
        }
        self.reload(f, offset)
    }

    /// Mirrors the file from the block holding `offset` on.
    fn reload(&mut self, f: &File, offset: u64) -> io::Result<()> {
        let lbs = self.lbs as u64;
        self.base = offset / lbs * lbs;
        self.len = (offset - self.base) as usize;
        self.clean = 0;
        if self.len > 0 {
            let buf = self.store.buf();
            let n = sys::pread_full(f, &mut buf[..self.lbs], self.base)?;
            buf[n..self.lbs].fill(0);
        }
        Ok(())
    }

    /// Writes `head` then `body` at the mirrored end (see the module docs).
    pub(crate) fn write(&mut self, f: &File, head: &[u8], body: &[u8]) -> io::Result<()> {
        for mut part in [head, body] {
            while !part.is_empty() {
                let n = part.len().min(self.block - self.len);
                self.store.buf()[self.len..self.len + n].copy_from_slice(&part[..n]);
                self.len += n;
                part = &part[n..];
                if self.len == self.block {
                    self.write_out(f)?;
                    self.base += self.block as u64;
                    (self.len, self.clean) = (0, 0);
                }
            }
        }
        if self.len > self.clean {
            self.write_out(f)?;
        }
        Ok(())
    }

    /// Writes `buf[clean..]` up to the end rounded up to whole blocks, the
    /// padding zeroed; the whole blocks before the end become clean.
    fn write_out(&mut self, f: &File) -> io::Result<()> {
        let end = self.len.div_ceil(self.lbs) * self.lbs;
        self.store.buf()[self.len..end].fill(0);
        self.store
            .write(f, self.clean, end, self.base + self.clean as u64)?;
        self.clean = self.len / self.lbs * self.lbs;
        Ok(())
    }

    /// After a failed write: the file's data end at `offset` again.
    pub(crate) fn rollback(&mut self, f: &File, offset: u64) -> io::Result<()> {
        if offset >= self.base && offset <= self.base + self.len as u64 {
            self.len = (offset - self.base) as usize;
            self.clean = self.clean.min(self.len / self.lbs * self.lbs);
            Ok(())
        } else {
            self.reload(f, offset)
        }
    }

    /// Switches `f` back to buffered I/O (for the header rewrite at close).
    pub(crate) fn stop(&mut self, f: &File) -> io::Result<()> {
        sys::set_direct(f, false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes pieces through a small gatherer (crossing its buffer, rolling
    /// one back) and compares the file with the bytes meant: after every
    /// write the file holds them, then zeros to the block's end.
    #[test]
    fn the_file_holds_exactly_the_gathered_bytes_then_zeros_after_every_write() {
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
        let mut g = Gather::new(8192).unwrap();
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
