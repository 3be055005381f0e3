//! io_uring for the direct write path: one ring with one registered
//! (aligned) buffer and one registered ("fixed") file, through the
//! `io-uring` crate.
//!
//! Design choices:
//! - **The buffer belongs to the ring's owner** ([`UringWriter`]): it is
//!   registered once (its pages pinned) and lives exactly as long as the
//!   ring, so no write can outlive the memory it reads.
//! - **[`UringWriter::write_at`] submits one write and waits for its
//!   completion** (`io_uring_enter` with `min_complete` 1): one system call
//!   per write instead of `pwrite`'s one, the buffer and the file already
//!   resolved by the kernel. The caller keeps the borrow for the call, so
//!   the interface is safe.
//! - **Refusal is an error, not a panic**: `io_uring_setup` fails with
//!   `EPERM` when `kernel.io_uring_disabled` forbids it (or a seccomp filter
//!   does), `ENOSYS` on kernels without it; the caller falls back.

use std::io;
use std::os::fd::{AsFd, AsRawFd};

use io_uring::{opcode, types, IoUring};

use crate::AlignedBuf;

/// See the module docs.
pub struct UringWriter {
    ring: IoUring,
    buf: AlignedBuf,
    file_registered: bool,
}

impl UringWriter {
    /// `io_uring_setup(depth)` and `IORING_REGISTER_BUFFERS` of a new
    /// zeroed buffer of `len` bytes aligned to `align`.
    ///
    /// # Errors
    /// The errno of `io_uring_setup` (`EPERM`: disabled, `ENOSYS`: not in
    /// this kernel) or of the registration.
    pub fn new(depth: u32, len: usize, align: usize) -> io::Result<UringWriter> {
        let ring = IoUring::new(depth.max(1))?;
        let mut buf = AlignedBuf::new(len, align)?;
        let iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        // SAFETY: the buffer is owned by the returned value together with
        // the ring, and is dropped after it (field order), so it outlives
        // the registration.
        unsafe { ring.submitter().register_buffers(&[iov])? };
        Ok(UringWriter {
            ring,
            buf,
            file_registered: false,
        })
    }

    /// The registered buffer.
    pub fn buf(&mut self) -> &mut [u8] {
        &mut self.buf
    }

    /// The registered buffer's length.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// Always false: an empty buffer cannot be made.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Makes `fd` the ring's fixed file 0 (`IORING_REGISTER_FILES`,
    /// replacing the previous one).
    ///
    /// # Errors
    /// The errno of the registration.
    pub fn set_file(&mut self, fd: impl AsFd) -> io::Result<()> {
        let s = self.ring.submitter();
        if self.file_registered {
            s.unregister_files()?;
            self.file_registered = false;
        }
        s.register_files(&[fd.as_fd().as_raw_fd()])?;
        self.file_registered = true;
        Ok(())
    }

    /// Writes `buf[start..end]` at `offset` of the fixed file
    /// (`IORING_OP_WRITE_FIXED`) and waits for its completion; returns the
    /// bytes written (may be short).
    ///
    /// # Errors
    /// `InvalidInput` for a range outside the buffer or no file set; the
    /// errno of `io_uring_enter`, or the write's own (`ENOSPC`, `EIO`, …).
    pub fn write_at(&mut self, start: usize, end: usize, offset: u64) -> io::Result<usize> {
        if start > end || end > self.buf.len() || !self.file_registered {
            return Err(io::ErrorKind::InvalidInput.into());
        }
        let len = u32::try_from(end - start).map_err(|_| io::ErrorKind::InvalidInput)?;
        let sqe = opcode::WriteFixed::new(types::Fixed(0), self.buf[start..].as_ptr(), len, 0)
            .offset(offset)
            .build()
            .user_data(1);
        // SAFETY: the buffer range is inside the registered buffer, which
        // is not touched until the completion is reaped below.
        unsafe {
            self.ring
                .submission()
                .push(&sqe)
                .map_err(|_| io::Error::other("the io_uring submission queue is full"))?;
        }
        loop {
            match self.ring.submit_and_wait(1) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
            if let Some(cqe) = self.ring.completion().next() {
                let r = cqe.result();
                return if r < 0 {
                    Err(io::Error::from_raw_os_error(-r))
                } else {
                    Ok(r as usize)
                };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fixed_write_lands_in_the_file_or_setup_is_refused_with_an_errno() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let f = std::fs::File::create(&path).unwrap();
        let mut w = match UringWriter::new(4, 8192, 4096) {
            Ok(w) => w,
            Err(e) => {
                // Disabled on this machine: the refusal must carry an errno.
                assert!(e.raw_os_error().is_some(), "{e}");
                return;
            }
        };
        assert!(w.write_at(0, 10, 0).is_err(), "no file set yet");
        w.set_file(&f).unwrap();
        w.buf()[..5].copy_from_slice(b"hello");
        assert_eq!(w.write_at(0, 5, 3).unwrap(), 5);
        assert_eq!(std::fs::read(&path).unwrap(), b"\0\0\0hello");
    }
}
