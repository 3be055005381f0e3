//! Write-back and durability: starting and waiting for write-back of a range
//! (`sync_file_range`), dropping clean cached pages (`posix_fadvise`),
//! committing a file (`fdatasync`, `fsync`) or a whole filesystem (`syncfs`,
//! `sync`).

use std::io;
use std::os::fd::{AsFd, AsRawFd};

use crate::errno::{cvt, cvt_errno};

/// Flags for [`sync_file_range`]; combine with `|`.
pub mod sfr {
    /// `SYNC_FILE_RANGE_WAIT_BEFORE`: wait for writeback already under way.
    pub const WAIT_BEFORE: u32 = libc::SYNC_FILE_RANGE_WAIT_BEFORE;
    /// `SYNC_FILE_RANGE_WRITE`: start writeback of dirty pages in the range.
    pub const WRITE: u32 = libc::SYNC_FILE_RANGE_WRITE;
    /// `SYNC_FILE_RANGE_WAIT_AFTER`: wait until that writeback is done.
    pub const WAIT_AFTER: u32 = libc::SYNC_FILE_RANGE_WAIT_AFTER;
}

/// `sync_file_range(fd, offset, nbytes, flags)`: write back data pages of a
/// range without committing metadata or the journal.
///
/// This is S1's "flush data only" call; it gives no durability guarantee for
/// metadata. See sync_file_range(2). (libc: rustix has no such call.)
///
/// # Errors
/// The errno of `sync_file_range`.
pub fn sync_file_range(fd: impl AsFd, offset: u64, nbytes: u64, flags: u32) -> io::Result<()> {
    // SAFETY: plain syscall on a borrowed, open descriptor.
    cvt(unsafe {
        libc::sync_file_range(
            fd.as_fd().as_raw_fd(),
            offset as libc::off64_t,
            nbytes as libc::off64_t,
            flags,
        )
    })?;
    Ok(())
}

/// `posix_fadvise(fd, offset, len, POSIX_FADV_DONTNEED)`: drop clean cached
/// pages of a range (pages still dirty or under writeback stay).
/// See posix_fadvise(2).
///
/// # Errors
/// The error number `posix_fadvise` returns.
pub fn fadvise_dontneed(fd: impl AsFd, offset: u64, len: u64) -> io::Result<()> {
    // SAFETY: plain syscall on a borrowed, open descriptor.
    cvt_errno(unsafe {
        libc::posix_fadvise(
            fd.as_fd().as_raw_fd(),
            offset as libc::off_t,
            len as libc::off_t,
            libc::POSIX_FADV_DONTNEED,
        )
    })
}

/// `posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL)`: hint sequential reads.
/// See posix_fadvise(2).
///
/// # Errors
/// The error number `posix_fadvise` returns.
pub fn fadvise_sequential(fd: impl AsFd) -> io::Result<()> {
    // SAFETY: plain syscall on a borrowed, open descriptor.
    cvt_errno(unsafe {
        libc::posix_fadvise(fd.as_fd().as_raw_fd(), 0, 0, libc::POSIX_FADV_SEQUENTIAL)
    })
}

/// `fdatasync(fd)`: data and the metadata needed to read it back.
/// See fdatasync(2).
///
/// # Errors
/// The errno of `fdatasync`.
pub fn fdatasync(fd: impl AsFd) -> io::Result<()> {
    rustix::fs::fdatasync(fd)?;
    Ok(())
}

/// `fsync(fd)`: data and all metadata. See fsync(2).
///
/// # Errors
/// The errno of `fsync`.
pub fn fsync(fd: impl AsFd) -> io::Result<()> {
    rustix::fs::fsync(fd)?;
    Ok(())
}

/// `syncfs(fd)`: write back every dirty page and inode of the filesystem
/// holding `fd`, and wait. See syncfs(2).
///
/// # Errors
/// The errno of `syncfs`.
pub fn syncfs(fd: impl AsFd) -> io::Result<()> {
    rustix::fs::syncfs(fd)?;
    Ok(())
}

/// `sync()`: write back every filesystem of the machine. See sync(2).
pub fn sync_all_filesystems() {
    rustix::fs::sync();
}
