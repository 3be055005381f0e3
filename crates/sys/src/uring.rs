//! io_uring for the writer's gathered block writes: one ring, `depth`
//! registered (aligned) buffers and one registered ("fixed") file, through
//! the `io-uring` crate.
//!
//! Design choices:
//! - **The buffers belong to the ring's owner** ([`UringWriter`]): they are
//!   registered once (their pages pinned) and live exactly as long as the
//!   ring; dropping the writer first waits for every write still in flight,
//!   so no write can outlive the memory it reads.
//! - **Submission and completion are separate calls**:
//!   [`UringWriter::submit`] queues one `IORING_OP_WRITE_FIXED` and enters
//!   the kernel without waiting; [`UringWriter::complete`] reaps one
//!   completion (waiting for it, or not). Up to `depth` writes are in
//!   flight; the caller (the writer's gatherer, `rtrec_engine`'s `io`
//!   module) decides what may be in flight together. Because the kernel
//!   reads a buffer while its write is in flight, `submit` is `unsafe`: the
//!   caller promises not to change those bytes until their completion is
//!   reaped.
//! - **A signal is not a failure**: `io_uring_enter` and
//!   `io_uring_register` return `EINTR` when a signal arrives during the
//!   call (a host with a 20 µs `SIGALRM` makes that common, and file
//!   (un)registration waits for the ring's references to drop); each call
//!   here is made again then (`retry`), so `EINTR` never reaches the
//!   caller. A write's own completion may still say `-ECANCELED` or
//!   `-EINTR`: resubmitting it is the caller's choice.
//! - **Refusal is an error, not a panic**: `io_uring_setup` fails with
//!   `EPERM` when `kernel.io_uring_disabled` forbids it (or a seccomp filter
//!   does), `ENOSYS` on kernels without it; the caller falls back.

use std::io;
use std::os::fd::{AsFd, AsRawFd};

use io_uring::{opcode, types, IoUring};

use crate::direct::AlignedBuf;

/// `f()` again while it fails with `EINTR` (see the module docs).
fn retry<T>(mut f: impl FnMut() -> io::Result<T>) -> io::Result<T> {
    loop {
        match f() {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            r => return r,
        }
    }
}

/// One reaped completion: the tag given to [`UringWriter::submit`] and the
/// write's result (bytes written, or `-errno`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Done {
    /// The submission's tag.
    pub tag: u64,
    /// Bytes written (may be short), or `-errno` (`-ENOSPC`, `-EIO`, …).
    pub result: i32,
}

/// See the module docs.
pub struct UringWriter {
    ring: IoUring,
    bufs: Vec<AlignedBuf>,
    in_flight: usize,
    file_registered: bool,
}

impl UringWriter {
    /// `io_uring_setup(depth)` and `IORING_REGISTER_BUFFERS` of `depth` new
    /// zeroed buffers of `len` bytes aligned to `align`.
    ///
    /// # Errors
    /// The errno of `io_uring_setup` (`EPERM`: disabled, `ENOSYS`: not in
    /// this kernel) or of the registration.
    pub fn new(depth: u32, len: usize, align: usize) -> io::Result<UringWriter> {
        if crate::hidden::hidden("io_uring") {
            return Err(io::Error::from_raw_os_error(libc::ENOSYS));
        }
        let depth = depth.max(1);
        let ring = IoUring::new(depth)?;
        let mut bufs = Vec::with_capacity(depth as usize);
        for _ in 0..depth {
            bufs.push(AlignedBuf::new(len, align)?);
        }
        let iovs: Vec<libc::iovec> = bufs
            .iter_mut()
            .map(|b| libc::iovec {
                iov_base: b.as_mut_ptr().cast(),
                iov_len: b.len(),
            })
            .collect();
        // SAFETY: the buffers are owned by the returned value together with
        // the ring, and are dropped after it (field order) and after every
        // write in flight is reaped (Drop), so they outlive the
        // registration.
        retry(|| unsafe { ring.submitter().register_buffers(&iovs) })?;
        Ok(UringWriter {
            ring,
            bufs,
            in_flight: 0,
            file_registered: false,
        })
    }

    /// Registered buffer `i` (`i < depth`). Bytes of a write in flight must
    /// not be changed (see [`UringWriter::submit`]).
    pub fn buf(&mut self, i: usize) -> &mut [u8] {
        &mut self.bufs[i]
    }

    /// The number of buffers, which is also the most writes in flight.
    pub fn depth(&self) -> usize {
        self.bufs.len()
    }

    /// Each buffer's length.
    pub fn len(&self) -> usize {
        self.bufs[0].len()
    }

    /// Always false: an empty buffer cannot be made.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Writes submitted and not reaped yet.
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Makes `fd` the ring's fixed file 0 (`IORING_REGISTER_FILES`,
    /// replacing the previous one). Call it with no write in flight.
    ///
    /// # Errors
    /// `InvalidInput` with writes in flight; the errno of the registration.
    pub fn set_file(&mut self, fd: impl AsFd) -> io::Result<()> {
        if self.in_flight > 0 {
            return Err(io::ErrorKind::InvalidInput.into());
        }
        let s = self.ring.submitter();
        if self.file_registered {
            retry(|| s.unregister_files())?;
            self.file_registered = false;
        }
        let fd = fd.as_fd().as_raw_fd();
        retry(|| s.register_files(&[fd]))?;
        self.file_registered = true;
        Ok(())
    }

    /// Queues a write of `buf(i)[start..end]` at `offset` of the fixed file
    /// (`IORING_OP_WRITE_FIXED`, tagged `tag`) and enters the kernel
    /// without waiting.
    ///
    /// # Errors
    /// `InvalidInput` for a range outside the buffer, no file set, or
    /// `depth` writes already in flight; the errno of `io_uring_enter`.
    ///
    /// # Safety
    /// `buf(i)[start..end]` must not be changed until the completion
    /// tagged `tag` is returned by [`UringWriter::complete`].
    pub unsafe fn submit(
        &mut self,
        i: usize,
        start: usize,
        end: usize,
        offset: u64,
        tag: u64,
    ) -> io::Result<()> {
        if i >= self.bufs.len()
            || start > end
            || end > self.len()
            || !self.file_registered
            || self.in_flight >= self.bufs.len()
        {
            return Err(io::ErrorKind::InvalidInput.into());
        }
        let len = u32::try_from(end - start).map_err(|_| io::ErrorKind::InvalidInput)?;
        let sqe = opcode::WriteFixed::new(
            types::Fixed(0),
            self.bufs[i][start..].as_ptr(),
            len,
            i as u16,
        )
        .offset(offset)
        .build()
        .user_data(tag);
        // SAFETY: the range is inside registered buffer `i`, which the
        // caller leaves alone until the completion is reaped.
        unsafe {
            self.ring
                .submission()
                .push(&sqe)
                .map_err(|_| io::Error::other("the io_uring submission queue is full"))?;
        }
        self.in_flight += 1;
        retry(|| self.ring.submit()).map(drop)
    }

    /// Reaps one completion: `None` when no write is in flight, or when
    /// none has completed and `wait` is false.
    ///
    /// # Errors
    /// The errno of `io_uring_enter` (the write's own error is in
    /// [`Done::result`]).
    pub fn complete(&mut self, wait: bool) -> io::Result<Option<Done>> {
        while self.in_flight > 0 {
            if let Some(cqe) = self.ring.completion().next() {
                self.in_flight -= 1;
                return Ok(Some(Done {
                    tag: cqe.user_data(),
                    result: cqe.result(),
                }));
            }
            if !wait {
                return Ok(None);
            }
            retry(|| self.ring.submit_and_wait(1))?;
        }
        Ok(None)
    }
}

impl Drop for UringWriter {
    fn drop(&mut self) {
        // The kernel may still read the buffers: wait for every write.
        while let Ok(Some(_)) = self.complete(true) {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_in_flight_together_land_in_the_file_or_setup_is_refused_with_an_errno() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let f = std::fs::File::create(&path).unwrap();
        let mut w = match UringWriter::new(2, 8192, 4096) {
            Ok(w) => w,
            Err(e) => {
                // Disabled on this machine: the refusal must carry an errno.
                assert!(e.raw_os_error().is_some(), "{e}");
                return;
            }
        };
        // SAFETY: the buffers are not touched until the completions below.
        unsafe {
            assert!(w.submit(0, 0, 10, 0, 1).is_err(), "no file set yet");
            w.set_file(&f).unwrap();
            w.buf(0)[..5].copy_from_slice(b"hello");
            w.buf(1)[..5].copy_from_slice(b"world");
            w.submit(0, 0, 5, 3, 7).unwrap();
            w.submit(1, 0, 5, 8, 8).unwrap();
            assert!(w.submit(1, 0, 5, 8, 9).is_err(), "depth exceeded");
        }
        let mut tags = vec![];
        while let Some(d) = w.complete(true).unwrap() {
            assert_eq!(d.result, 5);
            tags.push(d.tag);
        }
        tags.sort();
        assert_eq!(tags, [7, 8]);
        assert_eq!(std::fs::read(&path).unwrap(), b"\0\0\0helloworld");
    }
}
