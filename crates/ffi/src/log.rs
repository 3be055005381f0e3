//! `rtrec_set_log`: where the library's warnings go (SQLite's
//! `SQLITE_CONFIG_LOG`), and the version of the library
//! (`rtrec_version()`, the `RTREC_VERSION_*` macros).
//!
//! Design choices: one callback for the process, set before recorders are
//! created and called on the thread that runs the call reporting the
//! warning (`rtrec_recorder_finish()` / `abort()` for what happened while
//! recording). Without a callback, warnings are only counted
//! (`rtrec_summary.warnings`): the library never writes to the host's
//! stderr.
#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_int, c_void, CString};
use std::sync::Mutex;

use crate::error::guard;

/// Major version of this header: a new major may break the ABI (before
/// 1.0, a new minor may too: see "Versions" in docs/c-api.md).
pub const RTREC_VERSION_MAJOR: u32 = 0;
/// Minor version of this header.
pub const RTREC_VERSION_MINOR: u32 = 4;
/// Patch version of this header.
pub const RTREC_VERSION_PATCH: u32 = 0;

/// Severity of a message given to the log callback.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum rtrec_log_level {
    /// Something could not be done as asked and the recording went on
    /// without it (a CPU that does not exist, SCHED_FIFO without the
    /// privilege, io_uring refused by the kernel).
    RTREC_LOG_WARNING = 1,
}

/// A log callback: `ctx` as given to `rtrec_set_log()`, the level (an
/// `rtrec_log_level` value) and one sentence, valid during the call only.
pub type rtrec_log_fn =
    Option<unsafe extern "C" fn(ctx: *mut c_void, level: c_int, message: *const c_char)>;

/// The callback and its context (as an address: the context is the
/// caller's, handed back as is).
static LOG: Mutex<
    Option<(
        unsafe extern "C" fn(*mut c_void, c_int, *const c_char),
        usize,
    )>,
> = Mutex::new(None);

/// Sets the function that receives the library's warnings, with `ctx`
/// handed back to it; NULL `fn` removes it. Process-wide; set it before
/// creating recorders. The callback runs on the thread of the call that
/// reports (`rtrec_recorder_finish()` or `abort()` for warnings while
/// recording), must not call back into the library, and may be called
/// from several threads at once when several recorders finish at once.
///
/// Every warning is also counted in `rtrec_summary.warnings`.
///
/// Returns 0.
#[no_mangle]
pub unsafe extern "C" fn rtrec_set_log(log: rtrec_log_fn, ctx: *mut c_void) -> c_int {
    guard(|| {
        let mut l = LOG.lock().unwrap_or_else(|p| p.into_inner());
        *l = log.map(|f| (f, ctx as usize));
        Ok(0)
    })
}

/// Gives `message` to the log callback, if one is set.
pub(crate) fn warn(message: &str) {
    let cb = *LOG.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((f, ctx)) = cb {
        let bytes: Vec<u8> = message.bytes().filter(|&b| b != 0).collect();
        let c = CString::new(bytes).unwrap_or_default();
        // SAFETY: the caller's function, with its own context and a
        // NUL-terminated string that lives through the call.
        unsafe {
            f(
                ctx as *mut c_void,
                rtrec_log_level::RTREC_LOG_WARNING as c_int,
                c.as_ptr(),
            )
        };
    }
}

/// The version of the library that runs, as `MAJOR * 10000 + MINOR * 100 +
/// PATCH` (0.3.0 is 300), to compare with the `RTREC_VERSION_*` macros of
/// the header a program was built with (as `sqlite3_libversion_number()`).
#[no_mangle]
pub extern "C" fn rtrec_version() -> c_int {
    (RTREC_VERSION_MAJOR * 10000 + RTREC_VERSION_MINOR * 100 + RTREC_VERSION_PATCH) as c_int
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_macros_are_the_crate_version() {
        assert_eq!(
            (
                RTREC_VERSION_MAJOR.to_string(),
                RTREC_VERSION_MINOR.to_string(),
                RTREC_VERSION_PATCH.to_string()
            ),
            (
                env!("CARGO_PKG_VERSION_MAJOR").to_string(),
                env!("CARGO_PKG_VERSION_MINOR").to_string(),
                env!("CARGO_PKG_VERSION_PATCH").to_string()
            )
        );
        let (major, minor, patch) = (
            RTREC_VERSION_MAJOR,
            RTREC_VERSION_MINOR,
            RTREC_VERSION_PATCH,
        );
        assert_eq!(rtrec_version() as u32, major * 10000 + minor * 100 + patch);
    }
}
