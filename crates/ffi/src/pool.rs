//! The file pool of a recording directory ([`rtrec_engine::pool`]):
//! prepare it while nothing records (`rtrec_pool_prepare`), look at it
//! (`rtrec_pool_status`). Recordings with `RTREC_ALLOC_POOL` take their
//! files from it.
#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_int, CStr, OsStr};
use std::mem::{offset_of, size_of};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use libc::{EEXIST, ENOENT};
use rtrec_engine::pool::Pool;
use rtrec_engine::SizeFrom;

use crate::error::{guard, write_struct, Extensible, Fail};

/// Smallest pool file accepted, as `rtrec pool prepare` has it.
const MIN_FILE_SIZE: u64 = 64 * 1024;

/// The state of a directory's file pool, filled by `rtrec_pool_status()`.
/// (Not named `rtrec_pool_status`: in C a typedef and a function cannot
/// share a name.)
///
/// Set `struct_size` to `sizeof(rtrec_pool_state)` before passing it:
///
/// ```c
/// rtrec_pool_state st = { .struct_size = sizeof st };
/// int r = rtrec_pool_status(dir, &st);
/// ```
///
/// `struct_size` must be one of the published sizes (40 bytes on LP64,
/// version 0); the library then writes exactly `struct_size` bytes and
/// leaves `struct_size` as it was, as for every struct ("Struct versions"
/// in the header). Any other size is `-EINVAL` and nothing is written.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct rtrec_pool_state {
    /// `sizeof(rtrec_pool_state)` as the caller was compiled; unchanged
    /// on return (the library wrote exactly that many bytes).
    pub struct_size: usize,
    /// Bytes per pool file (the file size of every recording that takes
    /// its files from this pool).
    pub file_size: u64,
    /// Files the pool is topped up to.
    pub target_files: u64,
    /// Files ready now.
    pub ready_files: u64,
    /// Preparations in progress, or interrupted (hidden temporary files).
    pub preparing_files: u64,
}

// SAFETY: repr(C), `size_t struct_size` first, integers only.
unsafe impl Extensible for rtrec_pool_state {
    const NAME: &'static str = "rtrec_pool_state";
    /// Version 0 only (40 bytes on LP64).
    const SIZES: &'static [usize] =
        &[offset_of!(rtrec_pool_state, preparing_files) + size_of::<u64>()];
}

/// The directory argument as a path; `-EINVAL` for NULL.
///
/// # Safety
///
/// `dir` is NULL or a NUL-terminated string that outlives the result.
pub(crate) unsafe fn dir_arg<'a>(dir: *const c_char, func: &str) -> Result<&'a Path, Fail> {
    if dir.is_null() {
        return Err(Fail::inval(format!("{func}: dir is NULL")));
    }
    // SAFETY: non-NULL and NUL-terminated by the caller's contract.
    let bytes = unsafe { CStr::from_ptr(dir) }.to_bytes();
    Ok(Path::new(OsStr::from_bytes(bytes)))
}

/// Opens the pool of recording directory `dir`, creating it with
/// `file_size` bytes per file and a target of `files` files if there is
/// none, and tops it up to its target: each missing file is allocated,
/// zero-filled and synced, so that a recording later takes it without
/// allocating anything. Slow and I/O-heavy: call it while nothing records
/// (e.g. at start-up, before `rtrec_recorder_create()`). It is safe to call
/// again; it prepares only what is missing. `dir` must exist; the pool
/// lives in its hidden subdirectory `.pool/`.
///
/// Returns the number of files prepared by this call (0 when the pool was
/// full already), or
/// - `-EINVAL`: `dir` is NULL, `files` is 0 or above `INT_MAX`, or
///   `file_size` is below 64 KiB;
/// - `-EEXIST`: `dir` has a pool that holds files, with another file size
///   or target (such a pool keeps the ones it was created with;
///   `rtrec_last_error()` gives them): use those, or remove `dir/.pool`;
/// - `-ENOENT`, `-ENOTDIR`, `-EACCES`, `-EROFS`: `dir` is missing, not a
///   directory, or not writable;
/// - `-ENOSPC`: a file does not fit;
/// - `-EPERM`, `-ELOOP`: `dir/.pool` (or a file in it) belongs to another
///   user, or `.pool` is a symlink (rtrec uses only a pool of its own);
/// - another `-errno`: a system call failed.
///
/// Files prepared before a failure stay ready.
#[no_mangle]
pub unsafe extern "C" fn rtrec_pool_prepare(
    dir: *const c_char,
    file_size: u64,
    files: u32,
) -> c_int {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let dir = unsafe { dir_arg(dir, "rtrec_pool_prepare")? };
        if files == 0 || files > c_int::MAX as u32 {
            return Err(Fail::inval(format!(
                "rtrec_pool_prepare: files is {files}; use 1 .. {}",
                c_int::MAX
            )));
        }
        if file_size < MIN_FILE_SIZE {
            return Err(Fail::inval(format!(
                "rtrec_pool_prepare: file_size is {file_size}; pool files must be at least {MIN_FILE_SIZE} bytes (64 KiB)"
            )));
        }
        let pool = Pool::open_or_create_from(dir, file_size, files, SizeFrom::PoolPrepare)
            .map_err(Fail::engine)?;
        if (pool.file_size(), pool.target_files()) != (file_size, files) {
            return Err(Fail::new(
                EEXIST,
                format!(
                    "'{}' has a pool of {} files of {} bytes already, not {files} of {file_size}; use those values, or remove '{}' to start a new pool",
                    dir.display(),
                    pool.target_files(),
                    pool.file_size(),
                    pool.dir().display()
                ),
            ));
        }
        let n = pool.prepare(|_, _| {}).map_err(Fail::engine)?;
        // At most `files`, which is at most INT_MAX.
        Ok(n as c_int)
    })
}

/// Fills `*out` with the state of the file pool of recording directory
/// `dir`: its file size and target, and how many files are ready or being
/// prepared. Reads the directory only; changes nothing.
///
/// Returns 0, or
/// - `-EINVAL`: `dir` or `out` is NULL, or `out->struct_size` is not a
///   size this library publishes;
/// - `-EPERM`, `-ELOOP`: `dir/.pool` belongs to another user, or is a
///   symlink (rtrec uses only a pool directory of its own);
/// - `-ENOENT`: `dir` has no pool (or does not exist; the message says
///   which);
/// - `-ENOTDIR`, `-EACCES`: `dir` is not a directory, or not readable;
/// - another `-errno`: a system call failed.
#[no_mangle]
pub unsafe extern "C" fn rtrec_pool_status(
    dir: *const c_char,
    out: *mut rtrec_pool_state,
) -> c_int {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let dir = unsafe { dir_arg(dir, "rtrec_pool_status")? };
        if out.is_null() {
            return Err(Fail::inval("rtrec_pool_status: out is NULL"));
        }
        let Some(pool) = Pool::open(dir).map_err(Fail::engine)? else {
            return Err(match std::fs::metadata(dir) {
                Err(e) => Fail::new(
                    e.raw_os_error().unwrap_or(ENOENT),
                    format!("cannot use the directory '{}': {e}", dir.display()),
                ),
                Ok(_) => Fail::new(
                    ENOENT,
                    format!(
                        "'{}' has no pool; create one with rtrec_pool_prepare()",
                        dir.display()
                    ),
                ),
            });
        };
        let st = pool.status().map_err(Fail::engine)?;
        let value = rtrec_pool_state {
            struct_size: size_of::<rtrec_pool_state>(),
            file_size: st.file_size,
            target_files: st.target_files.into(),
            ready_files: st.ready_files.into(),
            preparing_files: st.preparing_files.into(),
        };
        // SAFETY: non-NULL; the caller's struct is `struct_size` bytes.
        unsafe { write_struct(out, &value)? };
        Ok(0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use libc::EINVAL;
    use std::ffi::CString;
    use std::ptr::{null, null_mut};

    fn c_path(p: &Path) -> CString {
        CString::new(p.as_os_str().as_bytes()).unwrap()
    }

    fn status(dir: &CString) -> Result<rtrec_pool_state, c_int> {
        let mut st = rtrec_pool_state {
            struct_size: size_of::<rtrec_pool_state>(),
            ..Default::default()
        };
        // SAFETY: valid pointers.
        match unsafe { rtrec_pool_status(dir.as_ptr(), &mut st) } {
            0 => Ok(st),
            r => Err(r),
        }
    }

    #[test]
    fn prepare_creates_and_tops_up_and_status_counts_the_files() {
        let tmp = tempfile::tempdir().unwrap();
        let d = c_path(tmp.path());
        assert_eq!(status(&d), Err(-ENOENT));
        // SAFETY: a valid path.
        unsafe {
            assert_eq!(rtrec_pool_prepare(d.as_ptr(), 1 << 20, 3), 3);
            assert_eq!(rtrec_pool_prepare(d.as_ptr(), 1 << 20, 3), 0);
        }
        let st = status(&d).unwrap();
        assert_eq!(
            st,
            rtrec_pool_state {
                struct_size: size_of::<rtrec_pool_state>(),
                file_size: 1 << 20,
                target_files: 3,
                ready_files: 3,
                preparing_files: 0,
            }
        );
        // One taken by a recording, then topped up again.
        let pool = Pool::open(tmp.path()).unwrap().unwrap();
        std::fs::remove_file(&pool.ready().unwrap()[0]).unwrap();
        assert_eq!(status(&d).unwrap().ready_files, 2);
        // SAFETY: a valid path.
        assert_eq!(unsafe { rtrec_pool_prepare(d.as_ptr(), 1 << 20, 3) }, 1);
    }

    #[test]
    fn a_pool_of_another_shape_is_eexist_and_left_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let d = c_path(tmp.path());
        // SAFETY: a valid path.
        unsafe {
            assert_eq!(rtrec_pool_prepare(d.as_ptr(), 1 << 20, 1), 1);
            assert_eq!(rtrec_pool_prepare(d.as_ptr(), 2 << 20, 1), -EEXIST);
            assert_eq!(rtrec_pool_prepare(d.as_ptr(), 1 << 20, 2), -EEXIST);
        }
        // SAFETY: rtrec_last_error never returns NULL.
        let msg = unsafe { CStr::from_ptr(crate::error::rtrec_last_error()) }
            .to_string_lossy()
            .into_owned();
        assert!(msg.contains("1 files of 1048576 bytes"), "{msg}");
        let st = status(&d).unwrap();
        assert_eq!(
            (st.file_size, st.target_files, st.ready_files),
            (1 << 20, 1, 1)
        );
    }

    #[test]
    fn bad_arguments_and_directories_are_refused_with_their_errno() {
        let tmp = tempfile::tempdir().unwrap();
        let d = c_path(tmp.path());
        let missing = c_path(&tmp.path().join("nope"));
        let file = tmp.path().join("f");
        std::fs::write(&file, b"x").unwrap();
        let file = c_path(&file);
        // SAFETY: valid paths, or NULL where it is checked.
        unsafe {
            assert_eq!(rtrec_pool_prepare(null(), 1 << 20, 1), -EINVAL);
            assert_eq!(rtrec_pool_prepare(d.as_ptr(), 1 << 20, 0), -EINVAL);
            assert_eq!(rtrec_pool_prepare(d.as_ptr(), 1 << 20, u32::MAX), -EINVAL);
            assert_eq!(rtrec_pool_prepare(d.as_ptr(), 4096, 1), -EINVAL);
            assert_eq!(rtrec_pool_prepare(missing.as_ptr(), 1 << 20, 1), -ENOENT);
            assert_eq!(
                rtrec_pool_prepare(file.as_ptr(), 1 << 20, 1),
                -libc::ENOTDIR
            );
            assert_eq!(rtrec_pool_status(d.as_ptr(), null_mut()), -EINVAL);
            let mut st = rtrec_pool_state::default();
            assert_eq!(rtrec_pool_status(null(), &mut st), -EINVAL);
        }
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 1);
        assert_eq!(status(&missing), Err(-ENOENT));
        assert_eq!(status(&file), Err(-libc::ENOTDIR));
        // A pool exists, but the caller's struct_size is unset.
        // SAFETY: a valid path.
        assert_eq!(unsafe { rtrec_pool_prepare(d.as_ptr(), 1 << 20, 1) }, 1);
        let mut st = rtrec_pool_state::default();
        // SAFETY: valid pointers.
        assert_eq!(unsafe { rtrec_pool_status(d.as_ptr(), &mut st) }, -EINVAL);
        assert_eq!(st.file_size, 0);
    }

    /// The struct rule as documented: a published size gets exactly that
    /// many bytes written (nothing past it, `struct_size` unchanged); any
    /// other size is `-EINVAL` and nothing is written (issue 42, finding
    /// 12: the doc promised `min(struct_size, …)` and zeroing).
    #[test]
    fn status_writes_exactly_struct_size_bytes_or_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let d = c_path(tmp.path());
        // SAFETY: a valid path.
        assert_eq!(unsafe { rtrec_pool_prepare(d.as_ptr(), 1 << 20, 1) }, 1);
        let size = size_of::<rtrec_pool_state>();
        for (given, want) in [
            (size, 0),
            (size + 8, -libc::EINVAL),
            (size - 8, -libc::EINVAL),
        ] {
            // A larger, aligned buffer, filled with a pattern, struct_size
            // first.
            #[repr(C, align(8))]
            struct Buf([u8; 56]);
            assert!(size + 16 <= 56);
            let mut b = Buf([0xa5; 56]);
            b.0[..8].copy_from_slice(&given.to_ne_bytes());
            // SAFETY: the buffer is larger than every size tried, aligned.
            let r = unsafe { rtrec_pool_status(d.as_ptr(), (&mut b as *mut Buf).cast()) };
            let buf = &b.0[..];
            assert_eq!(r, want, "struct_size {given}");
            assert_eq!(&buf[..8], &given.to_ne_bytes(), "struct_size kept");
            let written_to = if r == 0 { given } else { 8 };
            assert!(
                buf[written_to..].iter().all(|&b| b == 0xa5),
                "struct_size {given}: {buf:?}"
            );
            if r == 0 {
                let file_size = u64::from_ne_bytes(buf[8..16].try_into().unwrap());
                assert_eq!(file_size, 1 << 20);
            }
        }
    }

    /// A `.pool` that is a symlink (to a real pool directory of this
    /// user) is `-ELOOP` from every function that takes the pool, as
    /// documented; a `.pool` that is a plain file is `-ENOTDIR` (issue 42,
    /// finding 12: the symlink was `-ENOTDIR` too).
    #[test]
    fn a_symlinked_pool_is_eloop_and_a_file_in_its_place_enotdir() {
        let tmp = tempfile::tempdir().unwrap();
        let real = tmp.path().join("real");
        let linked = tmp.path().join("linked");
        let plain = tmp.path().join("plain");
        for d in [&real, &linked, &plain] {
            std::fs::create_dir(d).unwrap();
        }
        // SAFETY: a valid path.
        let prepared = unsafe { rtrec_pool_prepare(c_path(&real).as_ptr(), 1 << 20, 1) };
        assert_eq!(prepared, 1);
        std::os::unix::fs::symlink(real.join(".pool"), linked.join(".pool")).unwrap();
        std::fs::write(plain.join(".pool"), b"x").unwrap();
        for (d, errno) in [(&linked, libc::ELOOP), (&plain, libc::ENOTDIR)] {
            let c = c_path(d);
            assert_eq!(status(&c), Err(-errno), "{}", d.display());
            // SAFETY: a valid path.
            let prepared = unsafe { rtrec_pool_prepare(c.as_ptr(), 1 << 20, 1) };
            assert_eq!(prepared, -errno);
            let mut cfg: crate::config::rtrec_config =
                // SAFETY: all-zero is a valid config (integers, NULL).
                unsafe { std::mem::zeroed() };
            cfg.struct_size = size_of::<crate::config::rtrec_config>();
            // By its C symbol, as a C program calls it: this module stays
            // below `recorder` (docs/architecture.md).
            unsafe extern "C" {
                fn rtrec_recorder_create(
                    dir: *const libc::c_char,
                    cfg: *const crate::config::rtrec_config,
                    out: *mut *mut std::ffi::c_void,
                ) -> libc::c_int;
            }
            let mut rec: *mut std::ffi::c_void = null_mut();
            assert_eq!(
                // SAFETY: valid pointers; the pool is the default.
                unsafe { rtrec_recorder_create(c.as_ptr(), &cfg, &mut rec) },
                -errno,
                "{}",
                d.display()
            );
            assert!(rec.is_null());
        }
    }

    #[test]
    fn the_status_struct_is_free_of_padding() {
        assert_eq!(rtrec_pool_state::SIZES[0], size_of::<rtrec_pool_state>());
        assert_eq!(size_of::<rtrec_pool_state>(), 40);
    }
}
