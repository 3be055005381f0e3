//! Failures at the C boundary: the mapping of engine errors to `-errno`,
//! the thread's last error message ([`rtrec_last_error`]), the panic guard
//! that every exported function runs under, and the extensible-struct rule
//! (a `size_t struct_size` first field; see `docs/c-api.md`).

use std::any::Any;
use std::cell::RefCell;
use std::ffi::{c_char, c_int, CString};
use std::mem::size_of;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use libc::{E2BIG, EINVAL, EIO, ENOSPC, ENOTDIR, ENOTRECOVERABLE};

/// A failed call: the errno to return (positive) and the sentence for
/// [`rtrec_last_error`].
#[derive(Debug)]
pub(crate) struct Fail {
    pub(crate) errno: c_int,
    pub(crate) msg: String,
}

impl Fail {
    pub(crate) fn new(errno: c_int, msg: impl Into<String>) -> Fail {
        Fail {
            errno,
            msg: msg.into(),
        }
    }

    /// `-EINVAL` with a message.
    pub(crate) fn inval(msg: impl Into<String>) -> Fail {
        Fail::new(EINVAL, msg)
    }

    /// An engine error; its errno as documented in `docs/c-api.md`.
    pub(crate) fn engine(e: rtrec_engine::Error) -> Fail {
        use rtrec_engine::Error;
        let errno = match &e {
            Error::Usage(_) => EINVAL,
            Error::NoSpace { .. } => ENOSPC,
            Error::Io { source, .. } => source.raw_os_error().unwrap_or(EIO),
            Error::Writer(_) => EIO,
        };
        Fail::new(errno, e.to_string())
    }

    /// An engine error from creating a recording in `dir`. The engine
    /// reports a missing or unusable directory as a usage error (no errno);
    /// C callers expect `-ENOENT` / `-ENOTDIR` / `-EACCES`, so the directory
    /// is looked at again to pick the errno. The message stays the engine's.
    pub(crate) fn engine_in_dir(e: rtrec_engine::Error, dir: &Path) -> Fail {
        let mut f = Fail::engine(e);
        if f.errno == EINVAL {
            if let Some(errno) = dir_errno(dir) {
                f.errno = errno;
            }
        }
        f
    }
}

/// Why `dir` cannot hold a recording, as an errno; `None` when it looks
/// usable.
fn dir_errno(dir: &Path) -> Option<c_int> {
    match std::fs::metadata(dir) {
        Err(e) => e.raw_os_error(),
        Ok(m) if !m.is_dir() => Some(ENOTDIR),
        Ok(_) => rtrec_sys::access_writable_dir(dir).err()?.raw_os_error(),
    }
}

thread_local! {
    /// The message of the last failure on this thread.
    static LAST_ERROR: RefCell<Option<CString>> = const { RefCell::new(None) };
}

/// Stores `msg` as this thread's last error (NUL bytes are dropped).
pub(crate) fn set_last_error(msg: &str) {
    let bytes: Vec<u8> = msg.bytes().filter(|&b| b != 0).collect();
    let c = CString::new(bytes).unwrap_or_default();
    LAST_ERROR.with(|l| *l.borrow_mut() = Some(c));
}

/// The message of the last failed `rtrec_*` call on this thread, one
/// sentence (e.g. "the directory '/x' does not exist").
///
/// Never NULL: "" when no call has failed on this thread yet. The string is
/// owned by the library and stays valid until the next failing `rtrec_*`
/// call on this thread; copy it to keep it. Successful calls leave it
/// unchanged, and `rtrec_recorder_record()` never sets it (it must not
/// allocate): its return value is the whole answer.
#[no_mangle]
pub extern "C" fn rtrec_last_error() -> *const c_char {
    catch_unwind(|| {
        LAST_ERROR.with(|l| match &*l.borrow() {
            // The CString stays in the thread-local until the next failure
            // replaces it, so the pointer outlives this borrow.
            Some(c) => c.as_ptr(),
            None => c"".as_ptr(),
        })
    })
    .unwrap_or(c"".as_ptr())
}

/// The text of a panic payload.
fn panic_text(p: &(dyn Any + Send)) -> &str {
    p.downcast_ref::<&str>()
        .copied()
        .or_else(|| p.downcast_ref::<String>().map(|s| s.as_str()))
        .unwrap_or("?")
}

/// Runs the body of an exported function: `Ok(n)` returns `n`, `Err` stores
/// the message and returns `-errno`, a panic stores its text and returns
/// `-ENOTRECOVERABLE`. No panic crosses into C.
pub(crate) fn guard(body: impl FnOnce() -> Result<c_int, Fail>) -> c_int {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(n)) => n,
        Ok(Err(f)) => {
            set_last_error(&f.msg);
            -f.errno
        }
        Err(p) => panicked(&*p),
    }
}

/// [`guard`] for the real-time path: the body returns the final value and
/// nothing is stored unless it panics (which is a bug in rtrec).
/// `catch_unwind` costs nothing while no panic happens.
#[inline]
pub(crate) fn guard_rt(body: impl FnOnce() -> c_int) -> c_int {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(n) => n,
        Err(p) => panicked(&*p),
    }
}

/// [`guard`] for functions that return nothing (`*_destroy`).
pub(crate) fn guard_void(body: impl FnOnce()) {
    if let Err(p) = catch_unwind(AssertUnwindSafe(body)) {
        panicked(&*p);
    }
}

#[cold]
fn panicked(p: &(dyn Any + Send)) -> c_int {
    let msg = format!(
        "internal error in rtrec (please report it): {}",
        panic_text(p)
    );
    // Setting the message allocates; a panic inside it must not escape.
    let _ = catch_unwind(AssertUnwindSafe(|| set_last_error(&msg)));
    -ENOTRECOVERABLE
}

/// Largest `struct_size` accepted: the kernel's limit for extensible
/// structs (one page), so a garbage size is refused before it is used.
pub(crate) const MAX_STRUCT_SIZE: usize = 4096;

/// Marks a `#[repr(C)]` struct whose first field is `size_t struct_size`
/// and in which every bit pattern is valid (integers and raw pointers
/// only), so that a caller's bytes may be copied into it.
///
/// # Safety
///
/// Implement only for such structs.
pub(crate) unsafe trait Extensible: Copy {
    /// The C name, for messages.
    const NAME: &'static str;
    /// Size of the first published version: the smallest `struct_size`
    /// accepted. It never changes once released.
    const SIZE_VER0: usize;
}

/// Reads the caller's `struct_size` and checks it against `T`'s bounds.
///
/// # Safety
///
/// `p` is non-NULL and points to at least a `size_t`.
unsafe fn caller_size<T: Extensible>(p: *const T) -> Result<usize, Fail> {
    // SAFETY: the first field of every Extensible struct is a size_t, and
    // the caller guarantees `p` points to one.
    let size = unsafe { p.cast::<usize>().read_unaligned() };
    if size < T::SIZE_VER0 {
        return Err(Fail::inval(format!(
            "{}.struct_size is {size}; set it to sizeof({}) before the call",
            T::NAME,
            T::NAME
        )));
    }
    if size > MAX_STRUCT_SIZE {
        return Err(Fail::new(
            E2BIG,
            format!(
                "{}.struct_size is {size}, more than {MAX_STRUCT_SIZE}; set it to sizeof({})",
                T::NAME,
                T::NAME
            ),
        ));
    }
    Ok(size)
}

/// Reads an input struct: `defaults`, overwritten by the caller's first
/// `struct_size` bytes. A caller built against a newer header (larger
/// struct) is accepted only when the fields this library does not know are
/// all zero, as Linux does for `openat2()` and `clone3()`.
///
/// # Safety
///
/// `p` is non-NULL and points to `struct_size` readable bytes.
pub(crate) unsafe fn read_struct<T: Extensible>(p: *const T, defaults: T) -> Result<T, Fail> {
    // SAFETY: forwarded from the caller.
    let size = unsafe { caller_size(p)? };
    let ours = size_of::<T>();
    let bytes = p.cast::<u8>();
    if size > ours {
        // SAFETY: the caller's struct is `size` bytes long.
        let tail = unsafe { std::slice::from_raw_parts(bytes.add(ours), size - ours) };
        if let Some(i) = tail.iter().position(|&b| b != 0) {
            return Err(Fail::new(
                E2BIG,
                format!(
                    "{} sets a field at byte {} that this library does not know (the library is older than the header); leave it 0 or use a newer library",
                    T::NAME,
                    ours + i
                ),
            ));
        }
    }
    let mut out = defaults;
    // SAFETY: both regions are at least min(size, ours) bytes, do not
    // overlap, and every bit pattern is valid for T (Extensible).
    unsafe {
        std::ptr::copy_nonoverlapping(bytes, (&mut out as *mut T).cast::<u8>(), size.min(ours))
    };
    Ok(out)
}

/// How a struct is written back to the caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WriteSize {
    /// `struct_size` stays the caller's (`rtrec_config_init`, so that
    /// `rtrec_recorder_create` later checks the fields it does not know).
    KeepCallers,
    /// `struct_size` becomes the number of bytes the library filled (an
    /// output such as `rtrec_summary`), so a caller built against a newer
    /// header can tell which fields an older library left out.
    Filled,
}

/// Writes `value` into the caller's struct: `min(struct_size, ours)`
/// bytes, zeros after that up to the caller's `struct_size`.
///
/// # Safety
///
/// `p` is non-NULL and points to `struct_size` writable bytes.
pub(crate) unsafe fn write_struct<T: Extensible>(
    p: *mut T,
    value: &T,
    how: WriteSize,
) -> Result<(), Fail> {
    // SAFETY: forwarded from the caller.
    let size = unsafe { caller_size(p.cast_const())? };
    let ours = size_of::<T>();
    let n = size.min(ours);
    let bytes = p.cast::<u8>();
    // SAFETY: the caller's struct is `size` bytes, `value` is `ours`; the
    // regions do not overlap (`value` is ours).
    unsafe {
        std::ptr::copy_nonoverlapping((value as *const T).cast::<u8>(), bytes, n);
        if size > ours {
            std::ptr::write_bytes(bytes.add(ours), 0, size - ours);
        }
        let written = if how == WriteSize::Filled { n } else { size };
        p.cast::<usize>().write_unaligned(written);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    fn last() -> String {
        // SAFETY: rtrec_last_error never returns NULL.
        unsafe { CStr::from_ptr(rtrec_last_error()) }
            .to_string_lossy()
            .into_owned()
    }

    #[test]
    fn a_panic_inside_an_exported_function_returns_enotrecoverable_with_its_text() {
        let r = guard(|| panic!("boom in a test"));
        assert_eq!(r, -ENOTRECOVERABLE);
        assert!(last().contains("boom in a test"), "{}", last());
        assert_eq!(guard_rt(|| panic!("rt boom")), -ENOTRECOVERABLE);
        guard_void(|| panic!("void boom"));
        assert!(last().contains("void boom"));
    }

    #[test]
    fn a_failure_stores_its_sentence_and_a_success_leaves_it() {
        assert_eq!(guard(|| Err(Fail::inval("first failure"))), -EINVAL);
        assert_eq!(guard(|| Ok(7)), 7);
        assert_eq!(last(), "first failure");
    }

    #[test]
    fn the_last_error_is_empty_on_a_thread_without_failures() {
        std::thread::spawn(|| assert_eq!(last(), ""))
            .join()
            .unwrap();
    }

    #[test]
    fn engine_errors_map_to_their_errno() {
        use rtrec_engine::Error;
        assert_eq!(Fail::engine(Error::Usage("x".into())).errno, EINVAL);
        let nospace = Error::NoSpace {
            dir: "/d".into(),
            need: 2,
            avail: 1,
        };
        assert_eq!(Fail::engine(nospace).errno, ENOSPC);
        let io = Error::Io {
            action: "writing",
            path: "/p".into(),
            source: std::io::Error::from_raw_os_error(libc::EROFS),
        };
        assert_eq!(Fail::engine(io).errno, libc::EROFS);
        assert_eq!(Fail::engine(Error::Writer("w".into())).errno, EIO);
    }
}
