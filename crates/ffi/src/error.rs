//! Failures at the C boundary: the mapping of engine errors to `-errno`,
//! the thread's last error message ([`rtrec_last_error`]), the panic guard
//! that every exported function runs under (with a panic hook that keeps
//! the host's stderr quiet), and the struct-version rule (a `size_t
//! struct_size` first field that must be one of the published sizes; see
//! `docs/c-api.md`).

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::ffi::{c_char, c_int, CString};
use std::mem::size_of;
use std::panic::{catch_unwind, AssertUnwindSafe};

use libc::{EINVAL, EIO, ENOTRECOVERABLE};

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

    /// An engine error: the errno its type carries ([`rtrec_engine::Error::errno`]),
    /// else `EINVAL` for bad input and `EIO` for the rest, as documented in
    /// `docs/c-api.md`. Nothing is looked up again: the engine keeps the
    /// system's errno in the error.
    pub(crate) fn engine(e: rtrec_engine::Error) -> Fail {
        if matches!(e, rtrec_engine::Error::WriterPanicked) {
            // A bug in rtrec, not a system error: the summary is lost.
            return Fail::new(ENOTRECOVERABLE, e.to_string());
        }
        let errno = e
            .errno()
            .unwrap_or(if e.is_bad_input() { EINVAL } else { EIO });
        Fail::new(errno, e.to_string())
    }

    /// A failure kept in a recording's summary: its errno (e.g. `ENOSPC`
    /// when the disk filled up mid-recording), `EIO` when it has none.
    pub(crate) fn failure(f: &rtrec_engine::Failure) -> Fail {
        Fail::new(f.errno.unwrap_or(EIO), f.message.clone())
    }
}

thread_local! {
    /// The message of the last failure on this thread.
    static LAST_ERROR: RefCell<Option<CString>> = const { RefCell::new(None) };
    /// Set while this thread runs inside an exported function: a panic
    /// here is caught and reported, so the hook prints nothing.
    static IN_CALL: Cell<bool> = const { Cell::new(false) };
}

/// Installs, once, a panic hook that stays silent for panics rtrec catches
/// (inside an exported function, or on one of rtrec's own threads, whose
/// names start with `rtrec-`): their text goes to `rtrec_last_error()` or
/// the recording's failure, never to the host's stderr. Any other panic of
/// the process goes to the hook installed before.
pub(crate) fn install_quiet_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let ours = IN_CALL.with(Cell::get)
                || std::thread::current()
                    .name()
                    .is_some_and(|n| n.starts_with("rtrec-"));
            if !ours {
                previous(info);
            }
        }));
    });
}

/// Marks this thread as inside an exported function until dropped.
struct InCall(bool);

impl InCall {
    fn enter() -> InCall {
        InCall(IN_CALL.with(|c| c.replace(true)))
    }
}

impl Drop for InCall {
    fn drop(&mut self) {
        IN_CALL.with(|c| c.set(self.0));
    }
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
    install_quiet_panic_hook();
    let _in = InCall::enter();
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
    // Two thread-local stores; the hook was installed by the create call
    // that made the handle.
    let _in = InCall::enter();
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(n) => n,
        Err(p) => panicked(&*p),
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

/// Marks a `#[repr(C)]` struct whose first field is `size_t struct_size`
/// and in which every bit pattern is valid (integers and raw pointers
/// only), so that a caller's bytes may be copied into it.
///
/// # Safety
///
/// Implement only for such structs, with `SIZES` ascending, every size at
/// most `size_of::<Self>()` and the last one equal to it.
pub(crate) unsafe trait Extensible: Copy {
    /// The C name, for messages.
    const NAME: &'static str;
    /// `sizeof` of every published version this library accepts, oldest
    /// first; the last is this library's own. A size never changes once
    /// released, and only these are accepted: a garbage `struct_size`
    /// cannot make the library read or write past the caller's struct.
    const SIZES: &'static [usize];
}

/// Reads the caller's `struct_size` and checks that it is one of `T`'s
/// published sizes.
///
/// # Safety
///
/// `p` is non-NULL and points to at least a `size_t`.
unsafe fn caller_size<T: Extensible>(p: *const T) -> Result<usize, Fail> {
    // SAFETY: the first field of every Extensible struct is a size_t, and
    // the caller guarantees `p` points to one.
    let size = unsafe { p.cast::<usize>().read_unaligned() };
    if T::SIZES.contains(&size) {
        return Ok(size);
    }
    let ours = size_of::<T>();
    let why = if size > ours {
        "; a program built against a newer rtrec.h needs a library at least as new (compare RTREC_VERSION_* with rtrec_version())"
    } else {
        ""
    };
    Err(Fail::inval(format!(
        "{}.struct_size is {size}, not a size this library knows ({:?}); set it to sizeof({}){why}",
        T::NAME,
        T::SIZES,
        T::NAME
    )))
}

/// Reads an input struct: `defaults`, overwritten by the caller's first
/// `struct_size` bytes (a published size, at most ours).
///
/// # Safety
///
/// `p` is non-NULL and points to `struct_size` readable bytes.
pub(crate) unsafe fn read_struct<T: Extensible>(p: *const T, defaults: T) -> Result<T, Fail> {
    // SAFETY: forwarded from the caller.
    let size = unsafe { caller_size(p)? };
    let mut out = defaults;
    // SAFETY: `size` is a published size, at most size_of::<T>(); the
    // caller's struct is `size` bytes; the regions do not overlap, and
    // every bit pattern is valid for T (Extensible).
    unsafe {
        std::ptr::copy_nonoverlapping(p.cast::<u8>(), (&mut out as *mut T).cast::<u8>(), size)
    };
    Ok(out)
}

/// Writes `value` into the caller's struct: exactly `struct_size` bytes
/// (a published size, at most ours), never more.
///
/// # Safety
///
/// `p` is non-NULL and points to `struct_size` writable bytes.
pub(crate) unsafe fn write_struct<T: Extensible>(p: *mut T, value: &T) -> Result<(), Fail> {
    // SAFETY: forwarded from the caller.
    let size = unsafe { caller_size(p.cast_const())? };
    // SAFETY: the caller's struct is `size` bytes, `value` at least that
    // (published sizes are at most ours); the regions do not overlap
    // (`value` is ours). `struct_size` is rewritten with its own value.
    unsafe {
        std::ptr::copy_nonoverlapping((value as *const T).cast::<u8>(), p.cast::<u8>(), size);
        p.cast::<usize>().write_unaligned(size);
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
        let cfg = rtrec_engine::ConfigError::EmptyPool;
        assert_eq!(Fail::engine(Error::Config(cfg)).errno, EINVAL);
        let missing = Error::Path {
            message: "the directory '/x' does not exist".into(),
            errno: libc::ENOENT,
        };
        assert_eq!(Fail::engine(missing).errno, libc::ENOENT);
        let nospace = Error::NoSpace {
            dir: "/d".into(),
            need: 2,
            avail: 1,
        };
        assert_eq!(Fail::engine(nospace).errno, libc::ENOSPC);
        let io = Error::Io {
            action: "writing",
            path: "/p".into(),
            source: std::io::Error::from_raw_os_error(libc::EROFS),
        };
        assert_eq!(Fail::engine(io).errno, libc::EROFS);
        assert_eq!(Fail::engine(Error::WriterPanicked).errno, ENOTRECOVERABLE);
        let full = rtrec_engine::Failure::from_io(&std::io::Error::from_raw_os_error(libc::ENOSPC));
        assert_eq!(Fail::failure(&full).errno, libc::ENOSPC);
    }
}
