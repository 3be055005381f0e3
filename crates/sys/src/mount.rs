//! Mounts and devices: unmounting (`umount2`) and splitting a device number
//! into major and minor.

use std::io;
use std::path::Path;

use rustix::mount::UnmountFlags;

/// `umount2(target, 0)`, or `umount2(target, MNT_DETACH)` when `lazy`: a
/// lazy unmount takes the filesystem out of the tree at once and frees it
/// when its last user closes it. See umount2(2).
///
/// # Errors
/// The errno of `umount2`: `EINVAL` when `target` is not a mount point,
/// `EBUSY` when it is in use; see [`errno_of`].
pub fn unmount(target: &Path, lazy: bool) -> io::Result<()> {
    let flags = if lazy {
        UnmountFlags::DETACH
    } else {
        UnmountFlags::empty()
    };
    rustix::mount::unmount(target, flags)?;
    Ok(())
}

/// An error number, to compare what a wrapper returned with
/// (`Errno::BUSY`, `Errno::INVAL`, …).
pub use rustix::io::Errno;

/// The error number of an error a wrapper returned; `None` for an error
/// that did not come from the kernel.
pub fn errno_of(e: &io::Error) -> Option<Errno> {
    Errno::from_io_error(e)
}

/// The major and minor numbers of device number `dev` (`st_dev`, `st_rdev`).
/// See makedev(3).
pub fn major_minor(dev: u64) -> (u32, u32) {
    (rustix::fs::major(dev), rustix::fs::minor(dev))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unmounting_a_plain_directory_says_not_a_mount_point() {
        let dir = tempfile::tempdir().unwrap();
        let e = unmount(dir.path(), false).unwrap_err();
        // EINVAL as root, EPERM otherwise.
        assert!(matches!(
            errno_of(&e),
            Some(Errno::INVAL) | Some(Errno::PERM)
        ));
    }

    #[test]
    fn device_numbers_split_as_the_kernel_packs_them() {
        assert_eq!(major_minor(libc::makedev(7, 3)), (7, 3));
        assert_eq!(major_minor(libc::makedev(259, 1 << 12)), (259, 1 << 12));
    }
}
