//! Thin, safe wrappers for the system calls on rtrec's data path and its
//! real-time helpers: allocation (`fallocate`), flushing (`sync_file_range`,
//! `fdatasync`, `posix_fadvise`), clocks and sleeps, scheduling and memory
//! locking. Each wrapper's doc opens with the C form it wraps; every raw call
//! goes through [`cvt`], the single errno-to-`Result` helper.
//!
//! Design choice: we call `libc` directly rather than `rustix` because
//! `sync_file_range`, `sched_setscheduler` and `CLOCK_THREAD_CPUTIME_ID`
//! reads are not all covered there, and one style for all of them keeps the
//! errno handling in one place.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// How many times this process called [`fallocate`] and [`ftruncate`] (all
/// of rtrec's allocation and truncation goes through them; tests use the
/// counts to prove that a pooled recording does neither).
pub mod counters {
    use std::sync::atomic::AtomicU64;
    /// Calls of [`super::fallocate`].
    pub static FALLOCATE: AtomicU64 = AtomicU64::new(0);
    /// Calls of [`super::ftruncate`].
    pub static FTRUNCATE: AtomicU64 = AtomicU64::new(0);
}

/// Turns a C return value into `io::Result`: `-1` means "look at errno".
pub fn cvt<T: PartialEq + From<i8>>(ret: T) -> io::Result<T> {
    if ret == T::from(-1) {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// Like [`cvt`], but for calls (posix_fadvise, posix_fallocate style) that
/// return the error number instead of setting errno.
fn cvt_errno(ret: libc::c_int) -> io::Result<()> {
    if ret == 0 {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(ret))
    }
}

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
pub fn fallocate(fd: impl AsFd, mode: FallocateMode, offset: u64, len: u64) -> io::Result<()> {
    counters::FALLOCATE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let flags = match mode {
        FallocateMode::ExtendSize => 0,
        FallocateMode::KeepSize => libc::FALLOC_FL_KEEP_SIZE,
    };
    // SAFETY: plain syscall on a borrowed, open descriptor.
    cvt(unsafe {
        libc::fallocate(
            fd.as_fd().as_raw_fd(),
            flags,
            offset as libc::off_t,
            len as libc::off_t,
        )
    })?;
    Ok(())
}

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
/// metadata. See sync_file_range(2).
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
pub fn fadvise_sequential(fd: impl AsFd) -> io::Result<()> {
    // SAFETY: plain syscall on a borrowed, open descriptor.
    cvt_errno(unsafe {
        libc::posix_fadvise(fd.as_fd().as_raw_fd(), 0, 0, libc::POSIX_FADV_SEQUENTIAL)
    })
}

/// `fdatasync(fd)`: data and the metadata needed to read it back.
/// See fdatasync(2).
pub fn fdatasync(fd: impl AsFd) -> io::Result<()> {
    // SAFETY: plain syscall on a borrowed, open descriptor.
    cvt(unsafe { libc::fdatasync(fd.as_fd().as_raw_fd()) })?;
    Ok(())
}

/// `fsync(fd)`: data and all metadata. See fsync(2).
pub fn fsync(fd: impl AsFd) -> io::Result<()> {
    // SAFETY: plain syscall on a borrowed, open descriptor.
    cvt(unsafe { libc::fsync(fd.as_fd().as_raw_fd()) })?;
    Ok(())
}

/// `ftruncate(fd, len)`. See ftruncate(2).
pub fn ftruncate(fd: impl AsFd, len: u64) -> io::Result<()> {
    counters::FTRUNCATE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    // SAFETY: plain syscall on a borrowed, open descriptor.
    cvt(unsafe { libc::ftruncate(fd.as_fd().as_raw_fd(), len as libc::off_t) })?;
    Ok(())
}

/// `write(fd, buf, len)` once, returning how much was written (may be short).
/// Unlike `std::io::Write::write` it is one syscall with no retry, so the
/// caller can time exactly one call. See write(2).
pub fn write_once(fd: impl AsFd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: buf is a valid readable slice for its length.
    let n = cvt(unsafe { libc::write(fd.as_fd().as_raw_fd(), buf.as_ptr().cast(), buf.len()) })?;
    Ok(n as usize)
}

/// `writev(fd, iov, 2)` once with two buffers (a frame header and its
/// payload), returning how much was written (may be short). See writev(2).
pub fn writev2_once(fd: impl AsFd, a: &[u8], b: &[u8]) -> io::Result<usize> {
    let iov = [
        libc::iovec {
            iov_base: a.as_ptr() as *mut _,
            iov_len: a.len(),
        },
        libc::iovec {
            iov_base: b.as_ptr() as *mut _,
            iov_len: b.len(),
        },
    ];
    // SAFETY: both iovecs point at valid readable slices that outlive the call.
    let n = cvt(unsafe { libc::writev(fd.as_fd().as_raw_fd(), iov.as_ptr(), 2) })?;
    Ok(n as usize)
}

/// `pwrite(fd, buf, len, offset)` until all of `buf` is written.
/// See pwrite(2).
pub fn pwrite_all(fd: impl AsFd, mut buf: &[u8], mut offset: u64) -> io::Result<()> {
    let raw = fd.as_fd().as_raw_fd();
    while !buf.is_empty() {
        // SAFETY: buf is a valid readable slice for its length.
        let r = unsafe { libc::pwrite(raw, buf.as_ptr().cast(), buf.len(), offset as libc::off_t) };
        match cvt(r) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => {
                buf = &buf[n as usize..];
                offset += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// `lseek(fd, offset, SEEK_SET)`. See lseek(2).
pub fn seek_to(fd: impl AsFd, offset: u64) -> io::Result<()> {
    // SAFETY: plain syscall on a borrowed, open descriptor.
    cvt(unsafe {
        libc::lseek(
            fd.as_fd().as_raw_fd(),
            offset as libc::off_t,
            libc::SEEK_SET,
        )
    })?;
    Ok(())
}

/// `open(path, O_WRONLY|O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC, 0644)`: create a
/// new file, refusing to follow a symlink or to reuse an existing name.
/// See open(2).
pub fn create_new(path: &Path) -> io::Result<File> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .mode(0o644)
        .open(path)
}

/// `open(path, O_RDWR|O_NOFOLLOW|O_CLOEXEC)`: open an existing regular file
/// for reading and writing without following a symlink. See open(2).
pub fn open_rw_nofollow(path: &Path) -> io::Result<File> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
}

/// `renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE)`: rename
/// without ever replacing an existing file. See rename(2).
pub fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    let f = CString::new(from.as_os_str().as_bytes()).map_err(|_| io::ErrorKind::InvalidInput)?;
    let t = CString::new(to.as_os_str().as_bytes()).map_err(|_| io::ErrorKind::InvalidInput)?;
    // SAFETY: both are valid NUL-terminated strings.
    cvt(unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            f.as_ptr(),
            libc::AT_FDCWD,
            t.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    })?;
    Ok(())
}

/// `fstatvfs(fd)`: bytes available to an unprivileged writer on the
/// filesystem holding `fd` (`f_bavail * f_frsize`). See statvfs(3).
pub fn available_bytes(fd: impl AsFd) -> io::Result<u64> {
    // SAFETY: statvfs is plain data; zeroed is a valid initial value.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: st is a valid out-pointer.
    cvt(unsafe { libc::fstatvfs(fd.as_fd().as_raw_fd(), &mut st) })?;
    Ok(st.f_bavail as u64 * st.f_frsize as u64)
}

/// `fstatfs(fd).f_type`: the filesystem magic (e.g. `0xEF53` for ext4).
/// See statfs(2).
pub fn fs_magic(fd: impl AsFd) -> io::Result<i64> {
    // SAFETY: statfs is plain data; zeroed is a valid initial value.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: st is a valid out-pointer.
    cvt(unsafe { libc::fstatfs(fd.as_fd().as_raw_fd(), &mut st) })?;
    Ok(st.f_type as i64)
}

/// The ext2/3/4 superblock magic reported by `statfs`.
pub const EXT4_SUPER_MAGIC: i64 = 0xEF53;

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out-pointer; these clocks always exist on Linux,
    // so the call cannot fail. On x86_64 and aarch64 CLOCK_MONOTONIC and
    // CLOCK_REALTIME are answered by the vDSO without entering the kernel.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// `clock_gettime(CLOCK_MONOTONIC)` in nanoseconds. Served by the vDSO (no
/// system call) on the architectures rtrec targets. See clock_gettime(2).
#[inline]
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// `clock_gettime(CLOCK_REALTIME)` in nanoseconds since the Unix epoch.
pub fn realtime_ns() -> u64 {
    clock_ns(libc::CLOCK_REALTIME)
}

/// `clock_gettime(CLOCK_THREAD_CPUTIME_ID)`: CPU time of the calling thread.
pub fn thread_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, deadline)`: sleep until
/// an absolute monotonic time (no drift from relative sleeps), retrying on
/// `EINTR`. See clock_nanosleep(2).
pub fn sleep_until_monotonic(deadline_ns: u64) {
    let ts = libc::timespec {
        tv_sec: (deadline_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (deadline_ns % 1_000_000_000) as libc::c_long,
    };
    loop {
        // SAFETY: ts is a valid timespec; the remaining-time pointer may be
        // null with TIMER_ABSTIME.
        let r = unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            )
        };
        if r != libc::EINTR {
            return;
        }
    }
}

/// `gettid()`: the calling thread's kernel id.
pub fn gettid() -> i32 {
    // SAFETY: gettid cannot fail.
    unsafe { libc::gettid() }
}

/// `mlockall(MCL_CURRENT | MCL_FUTURE)`: keep every page of the process
/// resident so no page fault stalls the real-time path. See mlockall(2).
pub fn lock_all_memory() -> io::Result<()> {
    // SAFETY: plain syscall.
    cvt(unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) })?;
    Ok(())
}

/// `sched_setscheduler(0, SCHED_FIFO, {priority})` for the calling thread.
/// Needs `CAP_SYS_NICE` (or an RLIMIT_RTPRIO). See sched_setscheduler(2).
pub fn set_fifo_priority(priority: i32) -> io::Result<()> {
    let p = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: p is a valid sched_param; pid 0 is the calling thread.
    cvt(unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) })?;
    Ok(())
}

/// `setpriority(PRIO_PROCESS, gettid(), nice)`: the nice value of the calling
/// thread only (Linux applies it per thread). See setpriority(2).
pub fn set_thread_nice(nice: i32) -> io::Result<()> {
    // SAFETY: plain syscall on our own thread id.
    cvt(unsafe { libc::setpriority(libc::PRIO_PROCESS, gettid() as libc::id_t, nice) })?;
    Ok(())
}

/// `sched_setaffinity(0, {cpu})`: pin the calling thread to one CPU.
/// See sched_setaffinity(2).
pub fn pin_to_cpu(cpu: usize) -> io::Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(io::ErrorKind::InvalidInput.into());
    }
    // SAFETY: cpu_set_t is plain data; CPU_SET is in range (checked above).
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        cvt(libc::sched_setaffinity(
            0,
            std::mem::size_of::<libc::cpu_set_t>(),
            &set,
        ))?;
    }
    Ok(())
}

/// `ioprio_set(IOPRIO_WHO_PROCESS, gettid(), class << 13 | level)` for the
/// calling thread: class 1 = real-time, 2 = best-effort, 3 = idle; level 0
/// (highest) to 7. Honoured by BFQ. See ioprio_set(2).
pub fn set_thread_ioprio(class: u32, level: u32) -> io::Result<()> {
    let prio = ((class & 0x7) << 13) | (level & 0x7);
    // SAFETY: plain syscall with integer arguments.
    cvt(unsafe {
        libc::syscall(
            libc::SYS_ioprio_set,
            1 as libc::c_long,
            gettid() as libc::c_long,
            prio as libc::c_long,
        )
    })?;
    Ok(())
}

/// Resident set size of this process in bytes, from `/proc/self/statm`.
pub fn resident_bytes() -> io::Result<u64> {
    let s = std::fs::read_to_string("/proc/self/statm")?;
    let pages: u64 = s
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .ok_or(io::ErrorKind::InvalidData)?;
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64;
    Ok(pages * page)
}

/// Dirty + Writeback memory in bytes, from `/proc/meminfo`.
pub fn dirty_writeback_bytes() -> io::Result<u64> {
    let s = std::fs::read_to_string("/proc/meminfo")?;
    let mut total = 0;
    for line in s.lines() {
        let mut it = line.split_whitespace();
        if let (Some(k), Some(v)) = (it.next(), it.next()) {
            if k == "Dirty:" || k == "Writeback:" {
                total += v.parse::<u64>().unwrap_or(0) * 1024;
            }
        }
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cvt_maps_minus_one_to_the_errno() {
        // SAFETY: closing an invalid fd only sets errno.
        let r = cvt(unsafe { libc::close(-1) });
        assert_eq!(r.unwrap_err().raw_os_error(), Some(libc::EBADF));
    }

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
    fn monotonic_clock_moves_forward() {
        let a = monotonic_ns();
        sleep_until_monotonic(a + 1_000_000);
        assert!(monotonic_ns() >= a + 1_000_000);
    }
}
