//! The one errno-to-`Result` helper every wrapper goes through. A module of
//! its own, below the wrappers, so that none of them imports the crate root
//! (which re-exports them all) back.

use std::io;

/// Turns a C return value into `io::Result`: `-1` means "look at errno".
///
/// # Errors
/// The calling thread's errno when `ret` is `-1`.
pub fn cvt<T: PartialEq + From<i8>>(ret: T) -> io::Result<T> {
    if ret == T::from(-1) {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// Like [`cvt`], but for calls (`posix_fadvise` style) that return the error
/// number instead of setting errno.
pub(crate) fn cvt_errno(ret: libc::c_int) -> io::Result<()> {
    if ret == 0 {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(ret))
    }
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
}
