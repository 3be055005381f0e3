//! After a crash, a kill or a power cut: `rtrec_dir_recover()` closes the
//! interrupted recordings of a directory, as `rtrec recover DIR` does
//! ([`rtrec_engine::recovery::recover_dir`]), and `rtrec_recover_report`
//! says what it did.
#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_int};
use std::mem::{offset_of, size_of};

use rtrec_engine::recovery::recover_dir;

use crate::error::{guard, write_struct, Extensible, Fail};
use crate::pool::dir_arg;

/// What `rtrec_dir_recover()` did, filled when its `out` is not NULL.
///
/// Set `struct_size` to `sizeof(rtrec_recover_report)` before passing it:
///
/// ```c
/// rtrec_recover_report rep = { .struct_size = sizeof rep };
/// int r = rtrec_dir_recover(dir, &rep);
/// ```
///
/// The library fills `struct_size` bytes (a published size) and sets
/// `struct_size` to the number of bytes it filled.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct rtrec_recover_report {
    /// `sizeof(rtrec_recover_report)` as the caller was compiled; on
    /// return, the bytes the library filled.
    pub struct_size: usize,
    /// Interrupted recordings closed: each now ends with an end frame
    /// "interrupted, closed by recover" and verifies clean (also those
    /// whose closing an earlier, interrupted call began).
    pub closed: u64,
    /// Records cut after crash holes (covered by `crash-hole` loss frames).
    pub records_cut: u64,
    /// Bytes cut after the last intact frame of the closed files.
    pub bytes_cut: u64,
    /// Bytes of unused pre-allocation given back (truncated): of the
    /// recordings closed, and of finished files whose recording kept its
    /// tail because another recording was writing when it ended (given
    /// back when none is).
    pub bytes_given_back: u64,
    /// Files of recordings that are being recorded now (their recorder
    /// holds their name claim locked): left alone.
    pub live_files: u64,
    /// Interrupted files left alone: corrupt, or not closable
    /// (`rtrec recover DIR` names each with the reason).
    pub left_alone: u64,
    /// Files moved back from the pool (a recording a crash left there).
    pub moved: u64,
    /// Name claims of dead recorders removed.
    pub claims_removed: u64,
}

// SAFETY: repr(C), `size_t struct_size` first, integers only.
unsafe impl Extensible for rtrec_recover_report {
    const NAME: &'static str = "rtrec_recover_report";
    /// Version 0 only (72 bytes on LP64).
    const SIZES: &'static [usize] =
        &[offset_of!(rtrec_recover_report, claims_removed) + size_of::<u64>()];
}

/// Closes every interrupted recording of recording directory `dir` whose
/// recorder is gone, as `rtrec recover DIR` does: each is cut at its last
/// intact frame (never below its durable mark), ended by an end frame
/// "interrupted, closed by recover" with its totals, the last durable
/// sequence number and what was cut, and its unused pre-allocation is
/// given back; recordings a crash left in the pool are moved back, and the
/// name claims of dead recorders removed. A recording whose recorder is
/// alive (in any process: it holds its name claim locked) is left alone,
/// so it is safe to call beside running recorders. Calling it again
/// changes nothing; a call that is itself interrupted leaves what the next
/// call finishes. Call it at start-up, before `rtrec_recorder_create()`.
///
/// `out` may be NULL; otherwise its `struct_size` must be set, and it is
/// filled with what was done.
///
/// Finished files whose unused tail their recording kept (it ended while
/// another recording wrote in `dir`) get it back now, when no recording
/// writes in `dir`.
///
/// Returns 0, or
/// - `-EINVAL`: `dir` is NULL, or `out->struct_size` is not a published
///   size;
/// - `-ENOENT`, `-ENOTDIR`, `-EACCES`: `dir` is missing, not a directory,
///   or not readable;
/// - `-EPERM`, `-ELOOP`, `-ENOTDIR`: `dir/.pool` belongs to another user,
///   is a symlink, or is not a directory (rtrec uses only a pool
///   directory of its own);
/// - another `-errno`: a system call failed (`rtrec_last_error()` says
///   which). A file that cannot be closed is not an error: it is counted
///   in `left_alone`.
#[no_mangle]
pub unsafe extern "C" fn rtrec_dir_recover(
    dir: *const c_char,
    out: *mut rtrec_recover_report,
) -> c_int {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let dir = unsafe { dir_arg(dir, "rtrec_dir_recover")? };
        if !out.is_null() {
            // Checked before anything is changed.
            // SAFETY: non-NULL; the caller's struct is `struct_size` bytes.
            unsafe { write_struct(out, &rtrec_recover_report::default())? };
        }
        let rec = recover_dir(dir).map_err(Fail::engine)?;
        let closed = &rec.closed;
        let sum = |f: fn(&rtrec_engine::recovery::Closed) -> u64| closed.iter().map(f).sum();
        let moved = rec.moved_from_pool.len();
        let value = rtrec_recover_report {
            struct_size: size_of::<rtrec_recover_report>(),
            closed: closed.len() as u64,
            records_cut: sum(|c| c.interrupted.cut_records),
            bytes_cut: sum(|c| c.interrupted.cut_bytes),
            bytes_given_back: sum(|c| c.given_back_bytes)
                + rec.tails_given_back.iter().map(|t| t.1).sum::<u64>(),
            live_files: rec.live.len() as u64,
            left_alone: rec.left_alone.len() as u64,
            moved: moved as u64,
            claims_removed: rec.claims_removed.len() as u64,
        };
        if !out.is_null() {
            // SAFETY: non-NULL; the caller's struct is `struct_size` bytes.
            unsafe { write_struct(out, &value)? };
        }
        Ok(0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    use std::ptr::{null, null_mut};

    #[test]
    fn bad_arguments_are_einval_and_an_empty_directory_has_nothing_to_recover() {
        let tmp = tempfile::tempdir().unwrap();
        let d = CString::new(tmp.path().as_os_str().as_bytes()).unwrap();
        let mut rep = rtrec_recover_report::default();
        // SAFETY: valid pointers, or NULL where it is checked.
        unsafe {
            assert_eq!(rtrec_dir_recover(null(), null_mut()), -libc::EINVAL);
            assert_eq!(rtrec_dir_recover(d.as_ptr(), &mut rep), -libc::EINVAL);
            assert_eq!(rtrec_dir_recover(d.as_ptr(), null_mut()), 0);
            rep.struct_size = size_of::<rtrec_recover_report>();
            assert_eq!(rtrec_dir_recover(d.as_ptr(), &mut rep), 0);
        }
        assert_eq!(
            rep,
            rtrec_recover_report {
                struct_size: size_of::<rtrec_recover_report>(),
                ..Default::default()
            }
        );
        let missing = CString::new(tmp.path().join("nope").as_os_str().as_bytes()).unwrap();
        assert_eq!(
            // SAFETY: a valid path.
            unsafe { rtrec_dir_recover(missing.as_ptr(), null_mut()) },
            -libc::ENOENT
        );
    }

    /// The errors the documentation lists for a `.pool` that is not this
    /// user's own directory (issue 42, finding 12: the list lacked them).
    #[test]
    fn a_pool_of_another_user_a_symlink_or_a_file_is_eperm_eloop_or_enotdir() {
        let tmp = tempfile::tempdir().unwrap();
        let c = |p: &std::path::Path| CString::new(p.as_os_str().as_bytes()).unwrap();
        let real = tmp.path().join("real");
        std::fs::create_dir_all(real.join(".pool")).unwrap();
        let mut cases = Vec::new();
        let linked = tmp.path().join("linked");
        std::fs::create_dir(&linked).unwrap();
        std::os::unix::fs::symlink(real.join(".pool"), linked.join(".pool")).unwrap();
        cases.push((linked, libc::ELOOP));
        let plain = tmp.path().join("plain");
        std::fs::create_dir(&plain).unwrap();
        std::fs::write(plain.join(".pool"), b"x").unwrap();
        cases.push((plain, libc::ENOTDIR));
        // Another user's pool: only root can make one.
        let theirs = tmp.path().join("theirs");
        std::fs::create_dir_all(theirs.join(".pool")).unwrap();
        if std::os::unix::fs::chown(theirs.join(".pool"), Some(4242), Some(4242)).is_ok() {
            cases.push((theirs, libc::EPERM));
        } else {
            eprintln!("skipped the -EPERM case: chown needs root");
        }
        for (d, errno) in cases {
            // SAFETY: a valid path; out NULL.
            let r = unsafe { rtrec_dir_recover(c(&d).as_ptr(), null_mut()) };
            assert_eq!(r, -errno, "{}", d.display());
        }
    }

    #[test]
    fn the_report_struct_is_free_of_padding() {
        assert_eq!(
            rtrec_recover_report::SIZES[0],
            size_of::<rtrec_recover_report>()
        );
        assert_eq!(size_of::<rtrec_recover_report>(), 72);
    }
}
