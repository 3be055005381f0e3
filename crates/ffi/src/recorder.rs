//! `rtrec_recorder`: the recorder handle. Create it, record from one
//! thread, then finish or abort it (which frees it). Handles come from a
//! table (`handle.rs`): a finished or destroyed handle gives `-EBADF`,
//! never a touch of freed memory.
#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_int, c_void, CStr, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use libc::{EBADF, ECHILD, EINVAL, EIO, EMSGSIZE, ENOBUFS};
use rtrec_engine::pool::WritersLock;
use rtrec_engine::{Alloc, Config, RecordError, Recorder, Summary};

use crate::config::rtrec_config;
use crate::error::{guard, guard_rt, Fail};
use crate::handle::{Kind, Table};
use crate::summary::{rtrec_summary, write_summary, write_unfilled};

/// A recording in progress (opaque). One thread records; any thread may
/// finish, abort or destroy it once recording has stopped. The pointer is
/// a handle, not an address: after finish, abort or destroy every call
/// with it returns `-EBADF`.
pub struct rtrec_recorder {
    rec: Recorder,
    /// The fork generation it was created in (`fork.rs`).
    generation: u64,
    /// A pooled recording's own shared lock on `.pool/writers`, held until
    /// its files' unused tails are dealt with ([`give_back`]).
    writing: Option<WritersLock>,
}

/// The live recorders.
static RECORDERS: Table<rtrec_recorder> = Table::new(Kind::Recorder);

/// `-EBADF` with a sentence naming `call`.
fn dead(call: &str) -> Fail {
    Fail::new(
        EBADF,
        format!("{call}: rec is not a live recorder (finished, aborted or destroyed already, or never created)"),
    )
}

// "Any thread may finish it": the handle must be movable between threads.
const _: fn() = || {
    fn send<T: Send>() {}
    send::<rtrec_recorder>();
};

/// Starts a recording in directory `dir` and stores its handle in `*out`.
///
/// `dir` must exist; its name is taken as bytes (it need not be UTF-8).
/// `cfg` is a config filled by `rtrec_config_init()` and then changed, or
/// NULL for the defaults. Everything that can fail or block happens here:
/// the first file is created and pre-allocated, or taken from the pool
/// (with `RTREC_ALLOC_POOL`, the default; when the pool has no file ready,
/// one is prepared now), so too little space is found now, not while
/// recording; and the writer and flush threads start. The flight recorder
/// creates no file here (each trigger takes one) but allocates its
/// pre-trigger window.
/// On failure no file is left in `dir`, `*out` is not written, and
/// `rtrec_last_error()` says what to change. Any number of recorders, in
/// this process or others, may record into one directory at once: each
/// claims a name of its own (`.N` suffixes) and they share its pool.
///
/// Returns 0, or
/// - `-EINVAL`: `dir` or `out` is NULL, `cfg->struct_size` is not a size
///   this library publishes, a field of `cfg` is out of range, the fields
///   do not fit together, or the ring is larger than the machine's memory
///   (or than `RLIMIT_MEMLOCK` leaves, when the process locks its memory);
/// - `-ENOMEM`: the ring could not be allocated;
/// - `-EMFILE`: 65,536 recorders are live already;
/// - `-ENOENT`, `-ENOTDIR`, `-EACCES`, `-EROFS`: `dir` is missing, not a
///   directory, or not writable;
/// - `-ENOSPC`: the pre-allocation does not fit;
/// - `-EPERM`, `-ELOOP`: `dir/.pool` (or a file in it) belongs to another
///   user, or `.pool` is a symlink (with the pool, the default);
/// - another `-errno`: a system call failed.
#[no_mangle]
pub unsafe extern "C" fn rtrec_recorder_create(
    dir: *const c_char,
    cfg: *const rtrec_config,
    out: *mut *mut rtrec_recorder,
) -> c_int {
    guard(|| {
        if dir.is_null() || out.is_null() {
            return Err(Fail::inval(
                "rtrec_recorder_create: dir and out must not be NULL",
            ));
        }
        // SAFETY: non-NULL and NUL-terminated by the caller's contract.
        let dir = Path::new(OsStr::from_bytes(unsafe { CStr::from_ptr(dir) }.to_bytes()));
        let cfg = if cfg.is_null() {
            Config::default()
        } else {
            // SAFETY: non-NULL; the caller's struct is `struct_size` bytes.
            unsafe { rtrec_config::read(cfg)? }
        };
        let generation = crate::fork::generation_at_create();
        let rec = Recorder::create(dir, cfg).map_err(Fail::engine)?;
        // A pooled recording says it is writing here, as `rtrec record`
        // does (the recorder has made the pool by now): see give_back.
        let writing = (rec.config().alloc == Alloc::Pool)
            .then(|| WritersLock::take(dir))
            .flatten();
        let h = RECORDERS
            .insert(Box::new(rtrec_recorder {
                rec,
                generation,
                writing,
            }))
            .ok_or_else(|| {
                Fail::new(
                    libc::EMFILE,
                    "rtrec_recorder_create: 65536 recorders are live already",
                )
            })?;
        // SAFETY: `out` is non-NULL and writable by the caller's contract.
        unsafe { out.write(h as *mut rtrec_recorder) };
        Ok(0)
    })
}

/// Records `len` bytes from `data` (`data` may be NULL when `len` is 0).
///
/// Real-time: in ring mode (the default) this copies the record into a
/// pre-allocated ring and returns at once. It allocates nothing, takes no
/// lock, makes no system call and never waits, and it does not set
/// `rtrec_last_error()`. A record that cannot be stored is dropped,
/// counted in the summary and stored in the file as a loss: never silently.
/// In direct mode it calls `write()` itself.
///
/// Call it from one thread at a time, and not while another thread
/// finishes, aborts or destroys the same recorder: that misuse is not
/// detected as it happens (it would cost this call an atomic
/// read-modify-write); two recording threads usually leave an entry in the
/// ring that the writer recognizes, and the recording then fails (finish
/// returns `-EIO`) rather than hanging (docs/c-api.md, "Threads").
///
/// Returns 0 (stored), or
/// - `-ENOBUFS`: the ring is full (the writer is behind); dropped and
///   counted;
/// - `-EMSGSIZE`: `len` is larger than `max_record`; dropped and counted;
/// - `-EIO`: a write failed earlier; dropped and counted (finish to learn
///   why);
/// - `-EINVAL`: `rec` is NULL, or `data` is NULL while `len` is not 0;
///   nothing is counted;
/// - `-EBADF`: `rec` was finished, aborted or destroyed, or is not a
///   recorder; nothing happens;
/// - `-ECHILD`: `rec` was created in the parent of this process, before a
///   `fork()`: the child has no writer thread, so nothing is recorded or
///   counted (create a new recorder in the child). Detected by one atomic
///   load, no system call.
#[no_mangle]
pub unsafe extern "C" fn rtrec_recorder_record(
    rec: *mut rtrec_recorder,
    data: *const c_void,
    len: usize,
) -> c_int {
    // The call's measured time (`record_ns`) starts here, before the
    // panic guard and the handle lookup: what the caller pays.
    let entry_ns = rtrec_sys::monotonic_ns();
    guard_rt(|| {
        if rec.is_null() {
            return -EINVAL;
        }
        // SAFETY: looked up, never dereferenced; one thread per handle
        // (caller's contract).
        let Some(r) = (unsafe { RECORDERS.get(rec as usize) }) else {
            return -EBADF;
        };
        if crate::fork::forked_since(r.generation) {
            return -ECHILD;
        }
        let bytes: &[u8] = if len == 0 {
            &[]
        } else if data.is_null() {
            return -EINVAL;
        } else {
            // SAFETY: non-NULL and `len` readable bytes by the caller's
            // contract.
            unsafe { std::slice::from_raw_parts(data.cast::<u8>(), len) }
        };
        match r.rec.record_since(entry_ns, bytes) {
            Ok(()) => 0,
            Err(RecordError::RingFull) => -ENOBUFS,
            Err(RecordError::TooLarge) => -EMSGSIZE,
            Err(RecordError::WriterFailed) => -EIO,
        }
    })
}

/// Flight recorder: saves the pre-trigger window to a new event file and
/// records the next `flight_post_ns` into it (one file per event; a
/// trigger during an event ends that event early and starts the next).
///
/// Real-time, like `rtrec_recorder_record()`: it allocates nothing, takes
/// no lock, makes no system call, never waits and does not set
/// `rtrec_last_error()`. When the ring has no room for the trigger right
/// now it is kept and pushed before the next record: a trigger is never
/// lost. Call it from the thread that records.
///
/// Every call with a live `rec` is counted in `rtrec_summary.triggers`.
/// Without the flight recorder (`flight_enabled` 0) a trigger does nothing
/// else.
///
/// Returns 0 (accepted), or
/// - `-EIO`: a write failed earlier; no event is saved (finish to learn
///   why);
/// - `-EINVAL`: `rec` is NULL; nothing is counted;
/// - `-EBADF`: `rec` is not a live recorder; nothing happens;
/// - `-ECHILD`: `rec` was created in the parent of this process (see
///   `rtrec_recorder_record()`); nothing is counted.
#[no_mangle]
pub unsafe extern "C" fn rtrec_recorder_trigger(rec: *mut rtrec_recorder) -> c_int {
    guard_rt(|| {
        if rec.is_null() {
            return -EINVAL;
        }
        // SAFETY: as in rtrec_recorder_record.
        let Some(r) = (unsafe { RECORDERS.get(rec as usize) }) else {
            return -EBADF;
        };
        if crate::fork::forked_since(r.generation) {
            return -ECHILD;
        }
        match r.rec.trigger() {
            Ok(()) => 0,
            Err(_) => -EIO,
        }
    })
}

/// The recorder of a handle just removed from the table, or, when it was
/// created before a `fork()` of this process (`fork.rs`), `-ECHILD`: its
/// threads are in the parent, so it is forgotten, not ended. Ending it
/// would wait for a writer thread that does not exist here or (direct
/// mode) write into the parent's files; dropping it would do the same.
/// Forgetting leaves the parent's files untouched and keeps its memory
/// and descriptors (close-on-exec) until the child execs or exits.
fn parents_or_own(call: &str, r: Box<rtrec_recorder>) -> Result<rtrec_recorder, Fail> {
    if crate::fork::forked_since(r.generation) {
        std::mem::forget(r);
        return Err(Fail::new(ECHILD, crate::fork::message(call)));
    }
    Ok(*r)
}

/// Gives back the unused tails of the recording's pooled files as
/// `rtrec record` does ([`rtrec_engine::pool::give_back_tails`]): when no
/// other recording writes in the directory, each file is truncated to its
/// valid length; otherwise the tail is kept and a warning names it.
///
/// Design choice: always, with no field of `rtrec_config` to turn it off,
/// as no option of `rtrec record` does: a zero-filled config does what
/// the command line does (docs/c-api.md, `rtrec_recorder_finish`).
fn give_back(writing: Option<WritersLock>, s: &mut Summary) {
    let tails = rtrec_engine::pool::give_back_tails(writing, &s.files);
    for (path, valid, tail) in tails.kept {
        s.warnings.push(format!(
            "{tail} bytes of unused tail kept in '{}' while another recording writes here; give it back when none is: truncate -s {valid} '{}'",
            path.display(),
            path.display()
        ));
    }
}

/// Ends the recording and frees the handle, in any case; `-EBADF` when
/// `rec` is not live (nothing happens then). Warnings go to the log
/// callback.
///
/// # Safety
///
/// `out` is NULL or a caller's summary of `struct_size` bytes.
unsafe fn end(
    call: &str,
    rec: *mut rtrec_recorder,
    abort_reason: Option<String>,
    out: *mut rtrec_summary,
) -> Result<c_int, Fail> {
    if rec.is_null() {
        return Err(Fail::inval(format!("{call}: rec is NULL")));
    }
    // Of two threads ending one handle, one gets it, the other -EBADF.
    let r = parents_or_own(
        call,
        RECORDERS.remove(rec as usize).ok_or_else(|| dead(call))?,
    )?;
    let s = match abort_reason {
        None => r.rec.finish(),
        Some(reason) => r.rec.abort(&reason),
    };
    let mut s = match s {
        Ok(s) => s,
        Err(e) => {
            // SAFETY: see the function's contract.
            unsafe { write_unfilled(out) };
            return Err(Fail::engine(e));
        }
    };
    give_back(r.writing, &mut s);
    for w in &s.warnings {
        crate::log::warn(w);
    }
    // SAFETY: see the function's contract.
    unsafe { write_summary(out, &s)? };
    match &s.error {
        Some(f) => Err(Fail::failure(f)),
        None => Ok(0),
    }
}

/// Ends the recording as asked: waits for the writer to store every
/// record, stores remaining losses and the end frame, truncates unused
/// space, fsyncs, and frees `rec`, which must not be used again, whatever
/// the result. Blocks; call it from any thread once recording has stopped.
/// When `out` is not NULL (its `struct_size` set), the summary goes there.
///
/// Whether `*out` was filled is unambiguous: it was (its `filled` is 1)
/// when this returns 0 or the errno of a failure while recording, and it
/// was not for `-ENOTRECOVERABLE` (zeroed, `filled` 0), `-EINVAL` and
/// `-EBADF` (untouched). With struct version 3, `out->file_names` lists
/// the files (free it with `free()`). Warnings (a CPU that could not be
/// pinned, the io_uring fallback) go to the log callback
/// (`rtrec_set_log()`) and are counted in `out->warnings`.
///
/// Returns 0, or
/// - the errno of the first failure while recording (`-ENOSPC` when the
///   disk filled up, `-EIO` when the failure has no errno; `*out` is
///   filled and says what was stored; `rtrec_last_error()` has the error);
/// - `-ENOTRECOVERABLE`: the writer thread died (a bug in rtrec; `*out`
///   is zeroed, `filled` 0);
/// - `-EINVAL`: `rec` is NULL (nothing happens), or `out->struct_size` is
///   not a size this library publishes (the recording is still finished
///   and freed; `*out` is untouched);
/// - `-EBADF`: `rec` was finished, aborted or destroyed already, or is
///   not a recorder (nothing happens);
/// - `-ECHILD`: `rec` was created in the parent of this process, before a
///   `fork()`: the child only forgets the handle (later calls with it are
///   `-EBADF`), writes, truncates and closes none of the parent's files
///   and frees nothing (the copy's memory and close-on-exec descriptors
///   go at exec or exit); `*out` is untouched. The parent's recording
///   goes on.
#[no_mangle]
pub unsafe extern "C" fn rtrec_recorder_finish(
    rec: *mut rtrec_recorder,
    out: *mut rtrec_summary,
) -> c_int {
    // SAFETY: a valid `out` by the caller's contract.
    guard(|| unsafe { end("rtrec_recorder_finish", rec, None, out) })
}

/// Ends the recording as aborted: like `rtrec_recorder_finish()`, but the
/// files say the recording was aborted, with `reason` (NULL: "aborted by
/// the application"; invalid UTF-8 is replaced), and `rtrec verify`
/// reports them as such. Frees `rec` whatever the result.
///
/// Returns as `rtrec_recorder_finish()` does.
#[no_mangle]
pub unsafe extern "C" fn rtrec_recorder_abort(
    rec: *mut rtrec_recorder,
    reason: *const c_char,
    out: *mut rtrec_summary,
) -> c_int {
    guard(|| {
        let reason = if reason.is_null() {
            "aborted by the application".to_string()
        } else {
            // SAFETY: non-NULL and NUL-terminated by the caller's contract.
            unsafe { CStr::from_ptr(reason) }
                .to_string_lossy()
                .into_owned()
        };
        // SAFETY: as in rtrec_recorder_finish.
        unsafe { end("rtrec_recorder_abort", rec, Some(reason), out) }
    })
}

/// Frees a recorder that was neither finished nor aborted, aborting the
/// recording ("destroyed without rtrec_recorder_finish()"); for error
/// paths. Blocks like `rtrec_recorder_abort()`.
///
/// Returns 0 (NULL is ignored, as `free(NULL)`), or `-EBADF`: `rec` was
/// finished, aborted or destroyed already (`rtrec_recorder_finish()` and
/// `abort()` free the handle), or is not a recorder; nothing happens; or
/// `-ECHILD`: `rec` was created in the parent of this process, and is only
/// forgotten (as `rtrec_recorder_finish()` says).
#[no_mangle]
pub unsafe extern "C" fn rtrec_recorder_destroy(rec: *mut rtrec_recorder) -> c_int {
    guard(|| {
        if rec.is_null() {
            return Ok(0);
        }
        let call = "rtrec_recorder_destroy";
        let r = parents_or_own(
            call,
            RECORDERS.remove(rec as usize).ok_or_else(|| dead(call))?,
        )?;
        if let Ok(mut s) = r.rec.abort("destroyed without rtrec_recorder_finish()") {
            give_back(r.writing, &mut s);
            for w in &s.warnings {
                crate::log::warn(w);
            }
        }
        Ok(0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::rtrec_config_init;
    use crate::error::rtrec_last_error;
    use std::ffi::CString;
    use std::mem::size_of;
    use std::ptr::{null, null_mut};

    fn last() -> String {
        // SAFETY: rtrec_last_error never returns NULL.
        unsafe { CStr::from_ptr(rtrec_last_error()) }
            .to_string_lossy()
            .into_owned()
    }

    fn small_config() -> rtrec_config {
        // SAFETY: all-zero is a valid rtrec_config (integers, NULL pointer).
        let mut c: rtrec_config = unsafe { std::mem::zeroed() };
        c.struct_size = size_of::<rtrec_config>();
        // SAFETY: a sized struct.
        assert_eq!(unsafe { rtrec_config_init(&mut c) }, 0);
        (c.file_size, c.max_record, c.ring_bytes) = (1 << 20, 1024, 1 << 16);
        c
    }

    fn create(dir: &Path, cfg: &rtrec_config) -> *mut rtrec_recorder {
        let d = CString::new(dir.as_os_str().as_bytes()).unwrap();
        let mut rec = null_mut();
        // SAFETY: valid pointers.
        let r = unsafe { rtrec_recorder_create(d.as_ptr(), cfg, &mut rec) };
        assert_eq!(r, 0, "{}", last());
        rec
    }

    #[test]
    fn record_of_an_oversized_record_returns_emsgsize_and_counts_a_drop() {
        let dir = tempfile::tempdir().unwrap();
        let rec = create(dir.path(), &small_config());
        let big = vec![7u8; 1025];
        let mut s = rtrec_summary {
            struct_size: size_of::<rtrec_summary>(),
            ..Default::default()
        };
        // SAFETY: a live handle, valid buffers; finish frees the handle.
        unsafe {
            assert_eq!(
                rtrec_recorder_record(rec, big.as_ptr().cast(), big.len()),
                -EMSGSIZE
            );
            assert_eq!(rtrec_recorder_record(rec, big.as_ptr().cast(), 1024), 0);
            assert_eq!(rtrec_recorder_record(rec, null(), 0), 0);
            assert_eq!(rtrec_recorder_finish(rec, &mut s), 0, "{}", last());
        }
        assert_eq!((s.records_offered, s.records_written), (3, 2));
        assert_eq!(
            (s.records_dropped, s.dropped_too_large, s.losses_stored),
            (1, 1, 1)
        );
        // Finished as asked, but a record was dropped: not complete.
        assert_eq!((s.complete, s.write_failed, s.files), (0, 0, 1));
        assert_eq!((s.records_queued, s.durable_seq), (2, 3));
        assert_eq!(s.record_ns.count, 3);
    }

    fn summary() -> rtrec_summary {
        rtrec_summary {
            struct_size: size_of::<rtrec_summary>(),
            ..Default::default()
        }
    }

    #[test]
    fn triggers_save_one_event_file_each_and_reach_the_summary() {
        use rtrec_engine::format::{decode_frame, FileHeader, FrameKind, HEADER_LEN};
        use rtrec_engine::reader::{verify_file, FileStatus};
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = small_config();
        (
            cfg.flight_enabled,
            cfg.flight_pre_ns,
            cfg.flight_pre_bytes,
            cfg.flight_post_ns,
        ) = (1, 1_000_000_000, 8 * (1024 + 24), 1_000_000_000);
        cfg.pool_files = 3;
        let rec = create(dir.path(), &cfg);
        let buf = [5u8; 1024];
        let mut s = summary();
        // SAFETY: a live handle and valid buffers; finish frees the handle.
        unsafe {
            for i in 0..60 {
                if i % 20 == 10 {
                    assert_eq!(rtrec_recorder_trigger(rec), 0);
                }
                assert_eq!(
                    rtrec_recorder_record(rec, buf.as_ptr().cast(), buf.len()),
                    0
                );
            }
            assert_eq!(rtrec_recorder_finish(rec, &mut s), 0, "{}", last());
        }
        assert_eq!((s.triggers, s.flight_events, s.files), (3, 3, 3));
        // The post span (1 s) never ends: each trigger cuts the event
        // before it short, but the last one, which finish closes.
        assert_eq!(s.flight_events_cut_short, 2);
        // Records 0..2 leave the 8-record window before the first trigger.
        assert_eq!(s.flight_overwritten_records, 2);
        // A fresh directory has no file ready and creating the recorder
        // prepares none (nothing is zero-filled before a recording has
        // written anything: `sizing`'s rule), so each file fell back to
        // fallocate, counted.
        assert_eq!((s.pool_taken, s.pool_fallbacks, s.pool_waits), (0, 3, 0));
        let files = rtrec_engine::reader::recording_files(dir.path()).unwrap();
        assert_eq!(files.len(), 3);
        for f in &files {
            let r = verify_file(f).unwrap();
            assert_eq!(r.status, FileStatus::Complete, "{:?}", r.notes);
            assert_eq!(r.triggers.len(), 1);
            let bytes = std::fs::read(f).unwrap();
            let h = FileHeader::decode(&bytes).unwrap();
            let (fh, _) = decode_frame(&bytes[HEADER_LEN..], h.generation).unwrap();
            assert_eq!(fh.kind, FrameKind::Trigger);
        }
    }

    #[test]
    fn a_trigger_without_the_flight_recorder_is_counted_and_does_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let rec = create(dir.path(), &small_config());
        let mut s = summary();
        // SAFETY: a live handle; finish frees it.
        unsafe {
            assert_eq!(rtrec_recorder_record(rec, b"x".as_ptr().cast(), 1), 0);
            assert_eq!(rtrec_recorder_trigger(rec), 0);
            assert_eq!(rtrec_recorder_trigger(null_mut()), -EINVAL);
            assert_eq!(rtrec_recorder_finish(rec, &mut s), 0, "{}", last());
        }
        assert_eq!((s.triggers, s.flight_events, s.files), (1, 0, 1));
        // The one file: fallocated, counted (no pool file was ready).
        assert_eq!(
            (s.records_written, s.pool_taken, s.pool_fallbacks),
            (1, 0, 1)
        );
    }

    #[test]
    fn null_handles_and_pointers_return_einval() {
        let dir = tempfile::tempdir().unwrap();
        let d = CString::new(dir.path().as_os_str().as_bytes()).unwrap();
        let mut rec = null_mut();
        let mut s = rtrec_summary {
            struct_size: size_of::<rtrec_summary>(),
            ..Default::default()
        };
        // SAFETY: NULL where the functions check for it, valid otherwise.
        unsafe {
            assert_eq!(
                rtrec_recorder_record(null_mut(), b"x".as_ptr().cast(), 1),
                -EINVAL
            );
            assert_eq!(rtrec_recorder_finish(null_mut(), &mut s), -EINVAL);
            assert_eq!(
                rtrec_recorder_abort(null_mut(), null(), null_mut()),
                -EINVAL
            );
            assert_eq!(rtrec_recorder_destroy(null_mut()), 0);
            assert_eq!(rtrec_recorder_create(null(), null(), &mut rec), -EINVAL);
            assert_eq!(
                rtrec_recorder_create(d.as_ptr(), null(), null_mut()),
                -EINVAL
            );
            assert_eq!(rtrec_config_init(null_mut()), -EINVAL);
            assert_eq!(
                crate::summary::rtrec_summary_attach_timer(&mut s, null()),
                -EINVAL
            );
        }
        assert!(rec.is_null());
        assert_eq!(s.records_offered, 0);
        // A live recorder given a NULL buffer with a length counts nothing.
        let rec = create(dir.path(), &small_config());
        // SAFETY: a live handle; finish frees it.
        unsafe {
            assert_eq!(rtrec_recorder_record(rec, null(), 4), -EINVAL);
            assert_eq!(rtrec_recorder_finish(rec, &mut s), 0);
        }
        assert_eq!((s.records_offered, s.records_dropped), (0, 0));
    }

    #[test]
    fn a_missing_directory_is_enoent_with_a_sentence() {
        let dir = tempfile::tempdir().unwrap();
        let missing = CString::new(dir.path().join("nope").as_os_str().as_bytes()).unwrap();
        let mut rec = null_mut();
        assert_eq!(
            // SAFETY: valid pointers; cfg NULL means the defaults.
            unsafe { rtrec_recorder_create(missing.as_ptr(), null(), &mut rec) },
            -libc::ENOENT
        );
        assert!(rec.is_null());
        assert!(last().contains("does not exist"), "{}", last());
    }

    #[test]
    fn a_config_whose_fields_do_not_fit_together_is_einval_and_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = small_config();
        cfg.ring_bytes = 16; // cannot hold one record
        let d = CString::new(dir.path().as_os_str().as_bytes()).unwrap();
        let mut rec = null_mut();
        assert_eq!(
            // SAFETY: valid pointers.
            unsafe { rtrec_recorder_create(d.as_ptr(), &cfg, &mut rec) },
            -EINVAL
        );
        assert!(last().contains("ring"), "{}", last());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn abort_and_destroy_store_an_aborted_recording() {
        use rtrec_engine::reader::{recording_files, verify_file, FileStatus};
        for destroy in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let rec = create(dir.path(), &small_config());
            // SAFETY: a live handle; abort/destroy free it.
            unsafe {
                assert_eq!(rtrec_recorder_record(rec, b"x".as_ptr().cast(), 1), 0);
                if destroy {
                    assert_eq!(rtrec_recorder_destroy(rec), 0);
                } else {
                    let mut s = rtrec_summary {
                        struct_size: size_of::<rtrec_summary>(),
                        ..Default::default()
                    };
                    assert_eq!(
                        rtrec_recorder_abort(rec, c"operator stop".as_ptr(), &mut s),
                        0
                    );
                    assert_eq!((s.complete, s.records_written), (0, 1));
                }
            }
            let files = recording_files(dir.path()).unwrap();
            let r = verify_file(&files[0]).unwrap();
            assert_eq!(r.status, FileStatus::Aborted, "{:?}", r.notes);
            let why = if destroy {
                "destroyed without"
            } else {
                "operator stop"
            };
            assert!(r.notes.iter().any(|n| n.contains(why)), "{:?}", r.notes);
        }
    }

    /// Each file's size on disk and the valid length its header records.
    fn sizes(dir: &Path) -> Vec<(u64, u64)> {
        use rtrec_engine::format::{FileHeader, HEADER_LEN};
        rtrec_engine::reader::recording_files(dir)
            .unwrap()
            .iter()
            .map(|f| {
                let bytes = std::fs::read(f).unwrap();
                let h = FileHeader::decode(&bytes[..HEADER_LEN]).unwrap();
                (bytes.len() as u64, h.finished_len().unwrap())
            })
            .collect()
    }

    /// A zero-filled config (struct_size set) in a directory whose pool
    /// holds 4 MiB files (room for a default 1 MiB record).
    fn pooled_default(dir: &Path) -> rtrec_config {
        let d = CString::new(dir.as_os_str().as_bytes()).unwrap();
        // SAFETY: a valid path.
        let prepared = unsafe { crate::pool::rtrec_pool_prepare(d.as_ptr(), 4 << 20, 2) };
        assert_eq!(prepared, 2);
        // SAFETY: all-zero is a valid rtrec_config (integers, NULL pointer).
        let mut c: rtrec_config = unsafe { std::mem::zeroed() };
        c.struct_size = size_of::<rtrec_config>();
        c
    }

    #[test]
    fn finish_gives_back_a_pool_files_unused_tail_as_the_command_line_does() {
        let dir = tempfile::tempdir().unwrap();
        let rec = create(dir.path(), &pooled_default(dir.path()));
        let mut s = summary();
        // SAFETY: a live handle; finish frees it.
        unsafe {
            for _ in 0..10 {
                assert_eq!(
                    rtrec_recorder_record(rec, [3u8; 100].as_ptr().cast(), 100),
                    0
                );
            }
            assert_eq!(rtrec_recorder_finish(rec, &mut s), 0, "{}", last());
        }
        assert_eq!((s.pool_taken, s.files, s.warnings), (1, 1, 0));
        let got = sizes(dir.path());
        assert_eq!(got.len(), 1);
        let (len, valid) = got[0];
        assert_eq!(len, valid, "the file keeps its pre-allocated size");
        assert!(len < 1 << 20, "{len}");
    }

    #[test]
    fn a_tail_is_kept_with_a_warning_while_another_recording_writes_there() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = pooled_default(dir.path());
        let (a, b) = (create(dir.path(), &cfg), create(dir.path(), &cfg));
        let (mut sa, mut sb) = (summary(), summary());
        // SAFETY: live handles; finish frees them.
        unsafe {
            assert_eq!(rtrec_recorder_record(a, b"a".as_ptr().cast(), 1), 0);
            assert_eq!(rtrec_recorder_record(b, b"b".as_ptr().cast(), 1), 0);
            assert_eq!(rtrec_recorder_finish(a, &mut sa), 0, "{}", last());
            assert_eq!(rtrec_recorder_finish(b, &mut sb), 0, "{}", last());
        }
        // `a` ended while `b` wrote: kept and said; `b` ended alone.
        assert_eq!((sa.warnings, sb.warnings), (1, 0));
        let mut got = sizes(dir.path());
        got.sort();
        assert_eq!(
            got.iter().filter(|(len, valid)| len == valid).count(),
            1,
            "{got:?}"
        );
        assert_eq!(
            got.iter().filter(|(len, _)| *len == 4 << 20).count(),
            1,
            "{got:?}"
        );
        // Once both finished, recover gives the kept tail back (issue 42,
        // finding 12: it reported given_back 0), and a second run finds
        // nothing more.
        let d = CString::new(dir.path().as_os_str().as_bytes()).unwrap();
        let kept: u64 = got.iter().map(|(len, valid)| len - valid).sum();
        assert!(kept > 0);
        let mut rep = crate::recover::rtrec_recover_report {
            struct_size: size_of::<crate::recover::rtrec_recover_report>(),
            ..Default::default()
        };
        // SAFETY: valid pointers.
        let r = unsafe { crate::recover::rtrec_dir_recover(d.as_ptr(), &mut rep) };
        assert_eq!(r, 0, "{}", last());
        assert_eq!((rep.bytes_given_back, rep.closed), (kept, 0));
        let got = sizes(dir.path());
        assert!(got.iter().all(|(len, valid)| len == valid), "{got:?}");
        for f in rtrec_engine::reader::recording_files(dir.path()).unwrap() {
            assert!(rtrec_engine::reader::verify_file(&f).unwrap().is_clean());
        }
        // SAFETY: valid pointers.
        let r = unsafe { crate::recover::rtrec_dir_recover(d.as_ptr(), &mut rep) };
        assert_eq!(r, 0);
        assert_eq!(rep.bytes_given_back, 0);
    }

    /// A loop recording: `files` counts every file written, the retired
    /// ones too, as `file_bytes` counts their bytes; the retired ones are
    /// in `retired_files` / `retired_bytes` and not in `file_names`
    /// (issue 42, finding 12: `files` counted the kept ones only while
    /// `file_bytes` counted all, and C had no retired fields).
    #[test]
    fn a_loop_counts_its_retired_files_in_files_and_in_the_retired_fields() {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = small_config();
        cfg.alloc = crate::config::rtrec_alloc::RTREC_ALLOC_FALLOCATE as _;
        // The whole run fits in the ring: no drop.
        (cfg.file_size, cfg.keep_files, cfg.ring_bytes) = (256 << 10, 2, 4 << 20);
        let rec = create(dir.path(), &cfg);
        let buf = [9u8; 1024];
        let mut s = summary();
        // SAFETY: a live handle and a valid buffer; finish frees it.
        unsafe {
            for _ in 0..2000 {
                assert_eq!(
                    rtrec_recorder_record(rec, buf.as_ptr().cast(), buf.len()),
                    0
                );
            }
            assert_eq!(rtrec_recorder_finish(rec, &mut s), 0, "{}", last());
        }
        let on_disk = rtrec_engine::reader::recording_files(dir.path()).unwrap();
        let names = {
            // SAFETY: a NUL-separated list ending with an empty string.
            let bytes =
                unsafe { std::slice::from_raw_parts(s.file_names.cast::<u8>(), s.file_names_len) };
            bytes.split(|&b| b == 0).filter(|n| !n.is_empty()).count() as u64
        };
        // SAFETY: malloc'd by the library for the caller.
        unsafe { libc::free(s.file_names.cast()) };
        assert!(s.retired_files > 0, "the loop retired nothing: {s:?}");
        assert_eq!(s.files, names + s.retired_files, "{s:?}");
        assert_eq!(names, on_disk.len() as u64);
        let kept_bytes: u64 = on_disk
            .iter()
            .map(|f| std::fs::metadata(f).unwrap().len())
            .sum();
        assert_eq!(s.file_bytes, kept_bytes + s.retired_bytes, "{s:?}");
        assert_eq!((s.retired_earlier_files, s.io_resubmitted), (0, 0));
    }

    #[test]
    fn finish_without_a_summary_still_closes_the_files() {
        let dir = tempfile::tempdir().unwrap();
        let rec = create(dir.path(), &small_config());
        // SAFETY: a live handle; finish frees it.
        assert_eq!(unsafe { rtrec_recorder_finish(rec, null_mut()) }, 0);
        let files = rtrec_engine::reader::recording_files(dir.path()).unwrap();
        assert!(rtrec_engine::reader::verify_file(&files[0])
            .unwrap()
            .is_clean());
    }

    #[test]
    fn finish_with_a_bad_summary_size_still_finishes_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let rec = create(dir.path(), &small_config());
        let mut s = rtrec_summary::default(); // struct_size 0
                                              // SAFETY: a live handle; finish frees it.
        assert_eq!(unsafe { rtrec_recorder_finish(rec, &mut s) }, -EINVAL);
        let files = rtrec_engine::reader::recording_files(dir.path()).unwrap();
        assert!(rtrec_engine::reader::verify_file(&files[0])
            .unwrap()
            .is_clean());
    }
}
