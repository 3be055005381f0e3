//! Files on rtrec's data path: creating them without following symlinks,
//! reserving their blocks (`fallocate`), writing with exactly one call per
//! attempt, renaming without replacing, asking the filesystem how much room
//! it has, and the advisory lock that serializes rtrec processes (`flock`).

use std::fs::File;
use std::io;
use std::os::fd::AsFd;
use std::path::Path;

use rustix::fs::{FlockOperation, CWD};

use crate::dir::Dir;

/// How `fallocate` should treat the file size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FallocateMode {
    /// `mode = 0`: allocate and extend the file size to `offset + len`.
    ExtendSize,
    /// `FALLOC_FL_KEEP_SIZE`: allocate blocks but leave the size unchanged.
    KeepSize,
}

/// `fallocate(fd, mode, offset, len)`: reserve blocks for a byte range.
///
/// Fails with `ENOSPC` before anything is written when the filesystem cannot
/// hold the range, which is how rtrec finds "too little space" before the
/// first record. See fallocate(2).
///
/// # Errors
/// The errno of `fallocate`.
pub fn fallocate(fd: impl AsFd, mode: FallocateMode, offset: u64, len: u64) -> io::Result<()> {
    crate::testing::FALLOCATE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let flags = match mode {
        FallocateMode::ExtendSize => rustix::fs::FallocateFlags::empty(),
        FallocateMode::KeepSize => rustix::fs::FallocateFlags::KEEP_SIZE,
    };
    rustix::fs::fallocate(fd, flags, offset, len)?;
    Ok(())
}

/// `ftruncate(fd, len)`. See ftruncate(2).
///
/// # Errors
/// The errno of `ftruncate`.
pub fn ftruncate(fd: impl AsFd, len: u64) -> io::Result<()> {
    crate::testing::FTRUNCATE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    rustix::fs::ftruncate(fd, len)?;
    Ok(())
}

/// `write(fd, buf, len)` once, returning how much was written (may be short).
/// Unlike `std::io::Write::write` it is one syscall with no retry, so the
/// caller can time exactly one call. See write(2).
///
/// # Errors
/// The errno of `write` (`EINTR` included: it is not retried).
pub fn write_once(fd: impl AsFd, buf: &[u8]) -> io::Result<usize> {
    Ok(rustix::io::write(fd, buf)?)
}

/// `writev(fd, iov, 2)` once with two buffers (a frame header and its
/// payload), returning how much was written (may be short). See writev(2).
///
/// # Errors
/// The errno of `writev` (`EINTR` included: it is not retried).
pub fn writev2_once(fd: impl AsFd, a: &[u8], b: &[u8]) -> io::Result<usize> {
    Ok(rustix::io::writev(
        fd,
        &[io::IoSlice::new(a), io::IoSlice::new(b)],
    )?)
}

/// `writev(fd, iov, 3)` once with three buffers (a held partial block, a
/// frame header and its payload), returning how much was written (may be
/// short). See writev(2).
///
/// # Errors
/// The errno of `writev` (`EINTR` included: it is not retried).
pub fn writev3_once(fd: impl AsFd, a: &[u8], b: &[u8], c: &[u8]) -> io::Result<usize> {
    Ok(rustix::io::writev(
        fd,
        &[
            io::IoSlice::new(a),
            io::IoSlice::new(b),
            io::IoSlice::new(c),
        ],
    )?)
}

/// `pwrite(fd, buf, len, offset)` until all of `buf` is written, retrying
/// on `EINTR`. See pwrite(2).
///
/// # Errors
/// The errno of `pwrite`; `WriteZero` if it wrote nothing.
pub fn pwrite_all(fd: impl AsFd, mut buf: &[u8], mut offset: u64) -> io::Result<()> {
    let fd = fd.as_fd();
    while !buf.is_empty() {
        match rustix::io::pwrite(fd, buf, offset) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => {
                buf = &buf[n..];
                offset += n as u64;
            }
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// `lseek(fd, offset, SEEK_SET)`. See lseek(2).
///
/// # Errors
/// The errno of `lseek`.
pub fn seek_to(fd: impl AsFd, offset: u64) -> io::Result<()> {
    rustix::fs::seek(fd, rustix::fs::SeekFrom::Start(offset))?;
    Ok(())
}

/// `lseek(fd, offset, SEEK_DATA)`: where the next data at or after
/// `offset` starts; `None` when there is none (`ENXIO`). See lseek(2).
///
/// # Errors
/// The errno of `lseek` but `ENXIO`.
pub fn seek_data(fd: impl AsFd, offset: u64) -> io::Result<Option<u64>> {
    match rustix::fs::seek(fd, rustix::fs::SeekFrom::Data(offset)) {
        Ok(at) => Ok(Some(at)),
        Err(rustix::io::Errno::NXIO) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// `lseek(fd, offset, SEEK_HOLE)`: where the next hole at or after
/// `offset` starts (the end of the file counts as one). See lseek(2).
///
/// # Errors
/// The errno of `lseek`.
pub fn seek_hole(fd: impl AsFd, offset: u64) -> io::Result<u64> {
    Ok(rustix::fs::seek(fd, rustix::fs::SeekFrom::Hole(offset))?)
}

/// `openat(dir, name, O_RDWR|O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC, 0644)`
/// relative to the directory of `path` (opened with `O_NOFOLLOW`, see
/// [`Dir`]): create a new file, refusing to follow a symlink or to reuse an
/// existing name. See open(2).
///
/// # Errors
/// `AlreadyExists` for an existing name (a symlink included); the errno of
/// `open` otherwise.
pub fn create_new(path: &Path) -> io::Result<File> {
    let (dir, name) = Dir::of_file(path)?;
    dir.create_excl(name, 0o644)
}

/// `openat(dir, name, O_RDWR|O_NOFOLLOW|O_CLOEXEC)` relative to the
/// directory of `path`: open an existing regular file for reading and
/// writing without following a symlink (see [`Dir::open_existing_nofollow`]).
///
/// # Errors
/// `ELOOP` for a symlink, `InvalidInput` for anything but a regular file;
/// the errno of `open` otherwise.
pub fn open_rw_nofollow(path: &Path) -> io::Result<File> {
    let (dir, name) = Dir::of_file(path)?;
    dir.open_existing_nofollow(name, true)
}

/// `open(path, O_RDWR|O_DIRECT|O_CLOEXEC)`: an existing file for direct
/// I/O, bypassing the page cache (buffers, offsets and lengths must then be
/// aligned to the logical block size). See open(2).
///
/// # Errors
/// `EINVAL` where the filesystem does not support `O_DIRECT`; the errno of
/// `open` otherwise.
pub fn open_rw_direct_io(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    if crate::hidden::hidden("o_direct") {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
}

/// `renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE)`: rename
/// without ever replacing an existing file, with
/// [`Dir::rename_noreplace`]'s fallback where the file system lacks the
/// flag. See rename(2).
///
/// # Errors
/// `AlreadyExists` when `to` exists; the errno of `renameat2` otherwise.
pub fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    crate::dir::rename_noreplace_at(CWD, from, CWD, to)
}

/// `access(path, W_OK|X_OK)`: whether this process may create files in the
/// directory `path` (write and search permission), by its real ids.
/// See access(2).
///
/// # Errors
/// `EACCES`, `EROFS`, `ENOENT`… from `access`.
pub fn access_writable_dir(path: &Path) -> io::Result<()> {
    use rustix::fs::Access;
    rustix::fs::access(path, Access::WRITE_OK | Access::EXEC_OK)?;
    Ok(())
}

/// `flock(fd, LOCK_EX)`, or `flock(fd, LOCK_EX|LOCK_NB)` when `blocking` is
/// false: an exclusive advisory lock on the open file, released when the last
/// descriptor of that open file is closed — also when the process dies,
/// however it dies. Retries on `EINTR`. See flock(2).
///
/// Returns `false` when `blocking` is false and another open file holds it.
///
/// # Errors
/// The errno of `flock` (other than `EWOULDBLOCK`).
pub fn lock_exclusive(fd: impl AsFd, blocking: bool) -> io::Result<bool> {
    let op = if blocking {
        FlockOperation::LockExclusive
    } else {
        FlockOperation::NonBlockingLockExclusive
    };
    let fd = fd.as_fd();
    loop {
        match rustix::fs::flock(fd, op) {
            Ok(()) => return Ok(true),
            Err(rustix::io::Errno::INTR) => continue,
            Err(rustix::io::Errno::WOULDBLOCK) if !blocking => return Ok(false),
            Err(e) => return Err(e.into()),
        }
    }
}

/// `flock(fd, LOCK_SH)`: a shared advisory lock, waiting while an
/// exclusive one is held; released as [`lock_exclusive`]'s. Retries on
/// `EINTR`. See flock(2).
///
/// # Errors
/// The errno of `flock`.
pub fn lock_shared(fd: impl AsFd) -> io::Result<()> {
    loop {
        match rustix::fs::flock(fd.as_fd(), FlockOperation::LockShared) {
            Ok(()) => return Ok(()),
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// `fstatvfs(fd)`: bytes available to an unprivileged writer on the
/// filesystem holding `fd` (`f_bavail * f_frsize`). See statvfs(3).
///
/// Design choice: a file system that reports no capacity at all
/// (`f_blocks` 0: FUSE file systems without a `statfs`, as FAT through
/// FUSE) has an unknown free space, answered as `u64::MAX`: nothing is
/// refused for a size it cannot know, and a full disk is then found by the
/// writes' own `ENOSPC`, as on any file system.
///
/// # Errors
/// The errno of `fstatvfs`.
pub fn available_bytes(fd: impl AsFd) -> io::Result<u64> {
    let st = rustix::fs::fstatvfs(fd)?;
    if st.f_blocks == 0 {
        return Ok(u64::MAX);
    }
    Ok(st.f_bavail * st.f_frsize)
}

/// `fstatfs(fd).f_type`: the filesystem magic (e.g. `0xEF53` for ext4).
/// See statfs(2).
///
/// # Errors
/// The errno of `fstatfs`.
pub fn fs_magic(fd: impl AsFd) -> io::Result<i64> {
    #[allow(clippy::unnecessary_cast)] // its width differs per architecture
    Ok(rustix::fs::fstatfs(fd)?.f_type as i64)
}

/// The ext2/3/4 superblock magic reported by `statfs`.
pub const EXT4_SUPER_MAGIC: i64 = 0xEF53;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fallocate_extends_and_keep_size_does_not() {
        let dir = tempfile::tempdir().unwrap();
        let f = create_new(&dir.path().join("a")).unwrap();
        fallocate(&f, FallocateMode::KeepSize, 0, 1 << 20).unwrap();
        assert_eq!(f.metadata().unwrap().len(), 0);
        fallocate(&f, FallocateMode::ExtendSize, 0, 1 << 20).unwrap();
        assert_eq!(f.metadata().unwrap().len(), 1 << 20);
    }

    #[test]
    fn create_new_refuses_a_symlink_and_an_existing_file() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        std::fs::write(&target, b"x").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(create_new(&link).is_err());
        assert_eq!(
            create_new(&target).unwrap_err().kind(),
            io::ErrorKind::AlreadyExists
        );
    }

    #[test]
    fn rename_noreplace_keeps_an_existing_target() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::write(&a, b"a").unwrap();
        std::fs::write(&b, b"b").unwrap();
        assert!(rename_noreplace(&a, &b).is_err());
        assert_eq!(std::fs::read(&b).unwrap(), b"b");
    }

    #[test]
    fn a_second_open_file_cannot_take_a_held_lock() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock");
        let a = create_new(&path).unwrap();
        let b = open_rw_nofollow(&path).unwrap();
        assert!(lock_exclusive(&a, false).unwrap());
        assert!(!lock_exclusive(&b, false).unwrap());
        drop(a);
        assert!(lock_exclusive(&b, false).unwrap());
    }

    #[test]
    fn writev2_once_writes_both_buffers_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v");
        let f = create_new(&path).unwrap();
        assert_eq!(writev2_once(&f, b"head", b"body").unwrap(), 8);
        assert_eq!(std::fs::read(&path).unwrap(), b"headbody");
    }
}
