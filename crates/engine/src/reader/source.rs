//! Bytes a reader reads: a [`ByteSource`] (a file by positioned reads, or
//! a slice in memory), opened safely ([`open_regular`]), and the one fixed
//! window ([`READ_BUF`]) every walk reads through, so memory does not grow
//! with the file. Knows nothing of frames: [`super::walk`] reads them
//! through this window.

use std::fs::File;
use std::io;
use std::path::Path;

/// Size of the reader's one buffer (1 MiB): the memory a walk uses,
/// whatever the size of the file.
pub const READ_BUF: usize = 1 << 20;

/// Bytes a reader can read at any offset: a file (positioned reads) or a
/// slice in memory.
pub trait ByteSource {
    /// Total length in bytes.
    fn size(&self) -> io::Result<u64>;
    /// Reads up to `buf.len()` bytes at `off`; 0 at the end.
    fn read_at(&self, off: u64, buf: &mut [u8]) -> io::Result<usize>;
}

impl ByteSource for [u8] {
    fn size(&self) -> io::Result<u64> {
        Ok(self.len() as u64)
    }
    fn read_at(&self, off: u64, buf: &mut [u8]) -> io::Result<usize> {
        let start = usize::try_from(off).unwrap_or(usize::MAX).min(self.len());
        let n = buf.len().min(self.len() - start);
        buf[..n].copy_from_slice(&self[start..start + n]);
        Ok(n)
    }
}

impl ByteSource for File {
    fn size(&self) -> io::Result<u64> {
        Ok(self.metadata()?.len())
    }
    fn read_at(&self, off: u64, buf: &mut [u8]) -> io::Result<usize> {
        std::os::unix::fs::FileExt::read_at(self, buf, off)
    }
}

/// Opens `path` for reading only if it is a regular file: a FIFO would
/// block forever and a device or socket is no recording, so each gets one
/// sentence. Opened with `O_NONBLOCK` and checked again after opening, so a
/// file swapped for a FIFO in between cannot hang the reader either.
pub fn open_regular(path: &Path) -> io::Result<File> {
    fn check(m: &std::fs::Metadata) -> io::Result<()> {
        use std::os::unix::fs::FileTypeExt;
        let t = m.file_type();
        let what = if t.is_file() {
            return Ok(());
        } else if t.is_dir() {
            "a directory"
        } else if t.is_fifo() {
            "a FIFO (named pipe)"
        } else if t.is_socket() {
            "a socket"
        } else if t.is_block_device() || t.is_char_device() {
            "a device"
        } else {
            "not a regular file"
        };
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("it is {what}; rtrec reads recordings from regular files only"),
        ))
    }
    check(&std::fs::metadata(path)?)?;
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    check(&f.metadata()?)?;
    Ok(f)
}

/// A fixed window over a [`ByteSource`]: the one buffer of a walk.
pub(super) struct Window<'s, S: ?Sized> {
    src: &'s S,
    size: u64,
    buf: Vec<u8>,
    at: u64,
    len: usize,
}

impl<'s, S: ?Sized + ByteSource> Window<'s, S> {
    /// A window over `src`, holding nothing yet.
    pub(super) fn new(src: &'s S) -> io::Result<Self> {
        Ok(Window {
            src,
            size: src.size()?,
            buf: vec![0; READ_BUF],
            at: 0,
            len: 0,
        })
    }

    /// The bytes from `off` on that the window holds, refilled from `off`
    /// when it holds fewer than `min` (≤ [`READ_BUF`]); fewer only at the
    /// end of the source.
    pub(super) fn peek(&mut self, off: u64, min: usize) -> io::Result<&[u8]> {
        let min = min.min(READ_BUF) as u64;
        let covered = off >= self.at && off <= self.at + self.len as u64;
        let have = if covered {
            self.at + self.len as u64 - off
        } else {
            0
        };
        if !covered || (have < min && off + have < self.size) {
            self.at = off;
            self.len = 0;
            let want = self.size.saturating_sub(off).min(READ_BUF as u64) as usize;
            while self.len < want {
                match self
                    .src
                    .read_at(off + self.len as u64, &mut self.buf[self.len..want])
                {
                    Ok(0) => break,
                    Ok(n) => self.len += n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
        }
        let from = (off - self.at) as usize;
        Ok(&self.buf[from..self.len])
    }

    /// Exactly `n` bytes at `off`, or fewer at the end of the source.
    pub(super) fn get(&mut self, off: u64, n: usize) -> io::Result<&[u8]> {
        let b = self.peek(off, n)?;
        Ok(&b[..n.min(b.len())])
    }

    /// The source's length in bytes, read once when the window was made.
    pub(super) fn size(&self) -> u64 {
        self.size
    }

    /// Bytes up to the last non-zero one in `from..limit`.
    pub(super) fn nonzero_len(&mut self, from: u64, limit: u64) -> io::Result<u64> {
        let (mut pos, mut last) = (from, from);
        while pos < limit {
            let b = self.peek(pos, READ_BUF)?;
            let b = &b[..b.len().min((limit - pos) as usize)];
            if b.is_empty() {
                break;
            }
            if let Some(p) = b.iter().rposition(|&x| x != 0) {
                last = pos + p as u64 + 1;
            }
            pos += b.len() as u64;
        }
        Ok(last - from)
    }
}
