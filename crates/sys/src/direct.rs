//! Direct I/O (`O_DIRECT`): switching a descriptor to it, the device's
//! logical block size every direct transfer must be a multiple of, and a
//! buffer aligned for it.
//!
//! Design choices:
//! - **`fcntl(F_SETFL)` on the open descriptor**, not a second `open()`: the
//!   file keeps one descriptor (the flush thread's and the writer's), and a
//!   header rewrite at close switches it back to buffered first.
//! - **The block size comes from sysfs** (`/sys/dev/block/MAJ:MIN/queue/
//!   logical_block_size`, or the parent disk's for a partition, read by
//!   [`crate::blockdev::queue_attribute`]) for the
//!   file system's device; where there is none (a virtual device), 4096,
//!   which every common device divides.

use std::alloc::{self, Layout};
use std::io;
use std::os::fd::AsFd;

/// Block size assumed when the device publishes none (see the module docs).
pub const FALLBACK_LOGICAL_BLOCK: u32 = 4096;

/// `fcntl(fd, F_SETFL, flags | O_DIRECT)` (or without it when `on` is
/// false). See open(2), "O_DIRECT".
///
/// # Errors
/// The errno of `fcntl`: `EINVAL` when the file system does not support
/// direct I/O.
pub fn set_direct(fd: impl AsFd, on: bool) -> io::Result<()> {
    use rustix::fs::OFlags;
    if on && crate::hidden::hidden("o_direct") {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    let fd = fd.as_fd();
    let flags = rustix::fs::fcntl_getfl(fd)?;
    let flags = if on {
        flags | OFlags::DIRECT
    } else {
        flags - OFlags::DIRECT
    };
    Ok(rustix::fs::fcntl_setfl(fd, flags)?)
}

/// The logical block size of the device holding the file `fd` (`fstat`,
/// then sysfs; see the module docs): direct transfers' offsets, lengths and
/// buffer addresses must be multiples of it.
///
/// # Errors
/// The errno of `fstat`.
pub fn logical_block_size(fd: impl AsFd) -> io::Result<u32> {
    let st = rustix::fs::fstat(fd)?;
    let size = crate::blockdev::queue_attribute(st.st_dev as u64, "logical_block_size", |s| {
        s.trim()
            .parse::<u32>()
            .ok()
            .filter(|n| n.is_power_of_two() && *n >= 512)
    });
    if let Some(n) = size {
        return Ok(n);
    }
    Ok(FALLBACK_LOGICAL_BLOCK)
}

/// A zeroed byte buffer whose address is aligned to `align` (a power of
/// two), for direct I/O; allocated once.
pub struct AlignedBuf {
    ptr: std::ptr::NonNull<u8>,
    layout: Layout,
}

// SAFETY: the buffer is owned memory like a Vec<u8>.
unsafe impl Send for AlignedBuf {}

impl AlignedBuf {
    /// `len` zeroed bytes at an address aligned to `align`.
    ///
    /// # Errors
    /// `InvalidInput` when `align` is not a power of two or `len` is 0.
    pub fn new(len: usize, align: usize) -> io::Result<AlignedBuf> {
        let layout = Layout::from_size_align(len, align)
            .ok()
            .filter(|l| l.size() > 0)
            .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { alloc::alloc_zeroed(layout) };
        let ptr = std::ptr::NonNull::new(ptr).unwrap_or_else(|| alloc::handle_alloc_error(layout));
        Ok(AlignedBuf { ptr, layout })
    }

    /// Its length in bytes.
    pub fn len(&self) -> usize {
        self.layout.size()
    }

    /// Always false: an empty buffer cannot be made.
    pub fn is_empty(&self) -> bool {
        false
    }
}

impl std::ops::Deref for AlignedBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: `ptr` holds `layout.size()` initialised bytes we own.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.layout.size()) }
    }
}

impl std::ops::DerefMut for AlignedBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `deref`, and `&mut self` makes it exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.layout.size()) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

/// `pread(fd, buf, len, offset)` until `buf` is full or the file ends;
/// returns the bytes read (the rest of `buf` is left as it was). See
/// pread(2).
///
/// # Errors
/// The errno of `pread`.
pub fn pread_full(fd: impl AsFd, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    let fd = fd.as_fd();
    let mut done = 0;
    while done < buf.len() {
        match rustix::io::pread(fd, &mut buf[done..], offset + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_aligned_buffer_is_aligned_and_zeroed() {
        let b = AlignedBuf::new(8192, 4096).unwrap();
        assert_eq!(b.as_ptr() as usize % 4096, 0);
        assert!(b.iter().all(|&x| x == 0));
        assert!(AlignedBuf::new(10, 3).is_err());
    }

    #[test]
    fn the_block_size_is_a_power_of_two_of_at_least_512() {
        let f = std::fs::File::open("/").unwrap();
        let n = logical_block_size(&f).unwrap();
        assert!(n.is_power_of_two() && n >= 512, "{n}");
    }
}
