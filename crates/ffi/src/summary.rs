//! `rtrec_summary`: what a recording did, filled by
//! `rtrec_recorder_finish()` / `rtrec_recorder_abort()`, and
//! `rtrec_summary_attach_timer()`, which adds the schedule's lateness.
#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_int};
use std::mem::{offset_of, size_of};

use rtrec_engine::{LatencySummary, Summary};

use crate::error::{guard, write_struct, Extensible, Fail};
use crate::timer::rtrec_timer;

/// A latency distribution, all values in ns. `count` is 0 (and every other
/// field 0) when nothing was measured.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct rtrec_latency {
    /// Number of samples.
    pub count: u64,
    /// Smallest, exact.
    pub min: u64,
    /// Arithmetic mean, exact.
    pub mean: u64,
    /// Median (3 significant digits).
    pub p50: u64,
    /// 99th percentile (3 significant digits).
    pub p99: u64,
    /// 99.9th percentile (3 significant digits).
    pub p999: u64,
    /// Largest, exact.
    pub max: u64,
}

impl From<Option<LatencySummary>> for rtrec_latency {
    fn from(l: Option<LatencySummary>) -> rtrec_latency {
        l.map_or_else(rtrec_latency::default, |l| rtrec_latency {
            count: l.count,
            min: l.min,
            mean: l.mean,
            p50: l.p50,
            p99: l.p99,
            p999: l.p999,
            max: l.max,
        })
    }
}

/// What a recording did.
///
/// Set `struct_size` to `sizeof(rtrec_summary)` before passing it:
///
/// ```c
/// rtrec_summary s = { .struct_size = sizeof s };
/// int r = rtrec_recorder_finish(rec, &s);
/// ```
///
/// `struct_size` must be one of the published sizes (see "Struct
/// versions" in the header); the library writes exactly that many bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct rtrec_summary {
    /// `sizeof(rtrec_summary)` as the caller was compiled; on return, the
    /// bytes the library filled.
    pub struct_size: usize,
    /// 1 when the recording ended with `rtrec_recorder_finish()`, no write
    /// failed and nothing was dropped; 0 otherwise (aborted, a write
    /// failed, or records were dropped: see `records_dropped`).
    pub complete: c_int,
    /// 1 when a write failed while recording (records after it were
    /// dropped and counted; `rtrec_last_error()` has the message).
    pub write_failed: c_int,
    /// `rtrec_recorder_record()` calls.
    pub records_offered: u64,
    /// Records stored in files.
    pub records_written: u64,
    /// Records dropped, all reasons (each one is stored as a loss).
    pub records_dropped: u64,
    /// Dropped because the ring was full (`-ENOBUFS`).
    pub dropped_ring_full: u64,
    /// Dropped because they were larger than `max_record` (`-EMSGSIZE`).
    pub dropped_too_large: u64,
    /// Dropped after a write had failed (`-EIO`).
    pub dropped_writer_failed: u64,
    /// Dropped records whose loss is stored in a file.
    pub losses_stored: u64,
    /// Payload bytes stored.
    pub bytes_written: u64,
    /// File bytes including headers and frames.
    pub file_bytes: u64,
    /// Number of files written, those a loop recording (or `keep_events`)
    /// retired while recording included, as `file_bytes` counts their
    /// bytes: `files - retired_files` of them are still there, named by
    /// `file_names`.
    pub files: u64,
    /// Wall time from creation to the end of the recording, ns.
    pub duration_ns: u64,
    /// Periods whose release was missed (from `rtrec_summary_attach_timer()`;
    /// 0 without a timer).
    pub missed_periods: u64,
    /// Latency of each record's `write()` call, ns.
    pub write_ns: rtrec_latency,
    /// Latency of `rtrec_recorder_record()` on the recording thread, ns:
    /// from a clock read at its entry (before the handle lookup) to one
    /// before its return, the histogram update included (docs/summary.md,
    /// "What `record()` costs its caller").
    pub record_ns: rtrec_latency,
    /// Lateness of each timer release against the schedule, ns (from
    /// `rtrec_summary_attach_timer()`; count 0 without a timer).
    pub lateness_ns: rtrec_latency,
    /// Files taken from the pool (`RTREC_ALLOC_POOL`).
    pub pool_taken: u64,
    /// Files pre-allocated with `fallocate()` because the pool had none
    /// ready (`RTREC_POOL_EMPTY_FALLOCATE`).
    pub pool_fallbacks: u64,
    /// Times the writer thread waited for a prepared file
    /// (`RTREC_POOL_EMPTY_WAIT`).
    pub pool_waits: u64,
    /// Total time the writer thread waited for prepared files, ns.
    pub pool_wait_ns: u64,
    /// `rtrec_recorder_trigger()` calls that were accepted (also without
    /// the flight recorder, where they do nothing else).
    pub triggers: u64,
    /// Flight recorder: events saved (one file or more each). 0 without
    /// the flight recorder.
    pub flight_events: u64,
    /// Flight recorder: records that left the pre-trigger window without
    /// being saved in any event (drop-oldest; not counted as drops).
    pub flight_overwritten_records: u64,
    /// Flight recorder: events ended early by the next trigger.
    pub flight_events_cut_short: u64,
    /// Records accepted by `rtrec_recorder_record()`: copied into the ring
    /// (ring mode) or written (direct mode).
    pub records_queued: u64,
    /// Every record with a smaller sequence number is on storage, or its
    /// loss is: what survives a power cut (see docs/durability.md).
    pub durable_seq: u64,
    /// 1 when the library filled this summary. `rtrec_recorder_finish()`
    /// and `abort()` zero it (with this field 0) when the writer thread
    /// died and there is nothing to report (`-ENOTRECOVERABLE`).
    pub filled: u32,
    /// Warnings while recording: settings that could not be applied (a CPU
    /// that does not exist, SCHED_FIFO without the privilege), the
    /// io_uring fallback, a resized pool. Each one also went to the log
    /// callback (`rtrec_set_log()`), if one is set.
    pub warnings: u32,
    /// The recording's files, in order, as one buffer of NUL-terminated
    /// paths followed by an empty string (a double NUL at the end);
    /// `file_names_len` bytes in all. Allocated with `malloc()`: the caller
    /// frees it with `free()`. NULL when the recording has no file (or the
    /// allocation failed).
    pub file_names: *mut c_char,
    /// Bytes of `file_names`, both NULs at the end included; 0 when it is
    /// NULL.
    pub file_names_len: usize,
    /// Of `files`, those retired while recording (a loop recording's
    /// budget, `keep_*`, or the flight recorder's `keep_events`): recycled
    /// into the pool or deleted, so not in `file_names`. Version 4.
    pub retired_files: u64,
    /// Bytes of those files (header and frames), part of `file_bytes`.
    pub retired_bytes: u64,
    /// Files of the directory's earlier, closed recordings that this
    /// recording retired to keep the directory within its budget (not
    /// counted in `files`).
    pub retired_earlier_files: u64,
    /// Bytes those files took on disk.
    pub retired_earlier_bytes: u64,
    /// Flight-recorder events retired whole by `keep_events`.
    pub retired_events: u64,
    /// io_uring writes the kernel gave up for a transient reason
    /// (`-ECANCELED`, `-EINTR`, `-EAGAIN`: signals arriving while its
    /// worker thread started) and the library submitted again; each was
    /// written in the end, or its failure is the recording's error.
    pub io_resubmitted: u64,
    /// Records whose size was not the stored layout's (version 5,
    /// library 0.4; `rtrec_config.layout`): recorded as they came, and
    /// counted here. 0 without a layout.
    pub layout_misfits: u64,
}

impl Default for rtrec_summary {
    fn default() -> rtrec_summary {
        // SAFETY: integers and a raw pointer: all-zero is valid (NULL).
        unsafe { std::mem::zeroed() }
    }
}

// The summary is handed between threads only by value, and its pointer is
// the caller's to free.
// SAFETY: the pointer is an owned malloc'd buffer, never shared.
unsafe impl Send for rtrec_summary {}

/// Size of the first version of the summary (through `lateness_ns`).
const SUMMARY_SIZE_VER0: usize =
    offset_of!(rtrec_summary, lateness_ns) + size_of::<rtrec_latency>();
/// Size of version 1 (pool and flight counters).
const SUMMARY_SIZE_VER1: usize =
    offset_of!(rtrec_summary, flight_events_cut_short) + size_of::<u64>();
/// Size of version 2 (`records_queued`, `durable_seq`).
const SUMMARY_SIZE_VER2: usize = offset_of!(rtrec_summary, durable_seq) + size_of::<u64>();
/// Size of version 3 (`filled`, `warnings`, `file_names`).
const SUMMARY_SIZE_VER3: usize = offset_of!(rtrec_summary, file_names_len) + size_of::<usize>();
/// Size of version 4 (the retired counts, `io_resubmitted`).
const SUMMARY_SIZE_VER4: usize = offset_of!(rtrec_summary, io_resubmitted) + size_of::<u64>();

// SAFETY: repr(C), `size_t struct_size` first, integers and one raw
// pointer; sizes ascending, the last ours.
unsafe impl Extensible for rtrec_summary {
    const NAME: &'static str = "rtrec_summary";
    /// Versions 0..5: 280, 344, 360, 384, 432 and 440 bytes on LP64. A
    /// program compiled against an older one gets its fields only (the
    /// fields are unchanged; they were only appended to).
    const SIZES: &'static [usize] = &[
        SUMMARY_SIZE_VER0,
        SUMMARY_SIZE_VER1,
        SUMMARY_SIZE_VER2,
        SUMMARY_SIZE_VER3,
        SUMMARY_SIZE_VER4,
        size_of::<rtrec_summary>(),
    ];
}

impl From<&Summary> for rtrec_summary {
    fn from(s: &Summary) -> rtrec_summary {
        rtrec_summary {
            struct_size: size_of::<rtrec_summary>(),
            complete: s.complete as c_int,
            write_failed: s.error.is_some() as c_int,
            records_offered: s.records_offered,
            records_written: s.records_written,
            records_dropped: s.records_dropped,
            dropped_ring_full: s.drops.ring_full,
            dropped_too_large: s.drops.too_large,
            dropped_writer_failed: s.drops.writer_failed,
            losses_stored: s.losses_stored,
            bytes_written: s.bytes_written,
            file_bytes: s.file_bytes,
            files: s.files.len() as u64 + s.retired_files,
            duration_ns: s.duration_ns,
            missed_periods: s.missed_periods,
            write_ns: s.write_ns.into(),
            record_ns: s.record_ns.into(),
            lateness_ns: s.lateness_ns.into(),
            pool_taken: s.pool.taken,
            pool_fallbacks: s.pool.fallbacks,
            pool_waits: s.pool.waits,
            pool_wait_ns: s.pool.wait_ns,
            triggers: s.triggers,
            flight_events: s.flight.as_ref().map_or(0, |f| f.events),
            flight_overwritten_records: s.flight.as_ref().map_or(0, |f| f.overwritten_records),
            records_queued: s.records_queued,
            durable_seq: s.durable_seq,
            flight_events_cut_short: s.flight.as_ref().map_or(0, |f| f.events_cut_short),
            filled: 1,
            warnings: s.warnings.len().min(u32::MAX as usize) as u32,
            file_names: std::ptr::null_mut(),
            file_names_len: 0,
            retired_files: s.retired_files,
            retired_bytes: s.retired_bytes,
            retired_earlier_files: s.retired_earlier_files,
            retired_earlier_bytes: s.retired_earlier_bytes,
            retired_events: s.retired_events,
            io_resubmitted: s.io_resubmitted,
            layout_misfits: s.layout_misfits,
        }
    }
}

/// Adds a periodic timer's schedule to a filled summary: sets
/// `missed_periods` and `lateness_ns` from everything `timer` measured.
/// Call it after `rtrec_recorder_finish()` or `rtrec_recorder_abort()`
/// with the timer that paced the recording; the timer stays yours.
///
/// Returns 0, or `-EINVAL` (`summary` or `timer` is NULL, or
/// `summary->struct_size` is too small).
#[no_mangle]
pub unsafe extern "C" fn rtrec_summary_attach_timer(
    summary: *mut rtrec_summary,
    timer: *const rtrec_timer,
) -> c_int {
    guard(|| {
        if summary.is_null() || timer.is_null() {
            return Err(Fail::inval(
                "rtrec_summary_attach_timer: summary and timer must not be NULL",
            ));
        }
        // SAFETY: a handle is looked up, never dereferenced.
        let Some(t) = (unsafe { crate::timer::TIMERS.get(timer as usize) }) else {
            return Err(Fail::new(
                libc::EBADF,
                "rtrec_summary_attach_timer: timer is not a live timer (destroyed, or never created)",
            ));
        };
        let t = &t.timer;
        // SAFETY: non-NULL; the caller's summary is `struct_size` bytes.
        unsafe {
            let size = summary.cast::<usize>().read_unaligned();
            if !rtrec_summary::SIZES.contains(&size) {
                return Err(Fail::inval(format!(
                    "rtrec_summary.struct_size is {size}; set it to sizeof(rtrec_summary) before the call"
                )));
            }
            std::ptr::addr_of_mut!((*summary).missed_periods).write_unaligned(t.missed());
            std::ptr::addr_of_mut!((*summary).lateness_ns)
                .write_unaligned(t.lateness().summary().into());
        }
        Ok(0)
    })
}

/// Writes `s` into the caller's summary (NULL: nothing to do), with the
/// file names in a `malloc()`ed buffer when the caller's version has that
/// field.
///
/// # Safety
///
/// `out` is NULL or points to a caller's `rtrec_summary` of `struct_size`
/// bytes.
pub(crate) unsafe fn write_summary(out: *mut rtrec_summary, s: &Summary) -> Result<(), Fail> {
    if out.is_null() {
        return Ok(());
    }
    let mut value = rtrec_summary::from(s);
    // SAFETY: non-NULL, at least a size_t (caller's contract).
    let size = unsafe { out.cast::<usize>().read_unaligned() };
    if size >= SUMMARY_SIZE_VER3 && !s.files.is_empty() {
        (value.file_names, value.file_names_len) = names_buffer(&s.files);
    }
    // SAFETY: forwarded from the caller.
    let r = unsafe { write_struct(out, &value) };
    if r.is_err() && !value.file_names.is_null() {
        // SAFETY: malloc'd just above and not handed out.
        unsafe { libc::free(value.file_names.cast()) };
    }
    r
}

/// Zeroes the caller's summary (its `filled` 0): the writer died and there
/// is nothing to report. A summary of a size this library does not know is
/// left alone.
///
/// # Safety
///
/// As [`write_summary`].
pub(crate) unsafe fn write_unfilled(out: *mut rtrec_summary) {
    if !out.is_null() {
        // SAFETY: forwarded from the caller.
        let _ = unsafe { write_struct(out, &rtrec_summary::default()) };
    }
}

/// The paths as NUL-terminated strings followed by an empty one, in a
/// `malloc()`ed buffer the caller frees; `(NULL, 0)` if malloc fails.
fn names_buffer(files: &[std::path::PathBuf]) -> (*mut c_char, usize) {
    use std::os::unix::ffi::OsStrExt;
    let mut bytes = Vec::new();
    for f in files {
        bytes.extend(f.as_os_str().as_bytes().iter().filter(|&&b| b != 0));
        bytes.push(0);
    }
    bytes.push(0);
    // SAFETY: malloc has no preconditions.
    let p = unsafe { libc::malloc(bytes.len()) }.cast::<u8>();
    if p.is_null() {
        return (std::ptr::null_mut(), 0);
    }
    // SAFETY: `p` has bytes.len() bytes, not overlapping `bytes`.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), p, bytes.len()) };
    (p.cast(), bytes.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_version_of_the_summary_is_free_of_padding() {
        assert_eq!(
            rtrec_summary::SIZES,
            &[280, 344, 360, 384, 432, 440],
            "published sizes never change"
        );
        assert_eq!(
            size_of::<rtrec_summary>(),
            offset_of!(rtrec_summary, layout_misfits) + size_of::<u64>()
        );
    }

    /// A caller compiled before the pool and flight fields.
    #[test]
    fn an_older_callers_summary_gets_only_its_fields() {
        let mut o = rtrec_summary {
            struct_size: SUMMARY_SIZE_VER0,
            pool_taken: 99,
            ..Default::default()
        };
        let value = rtrec_summary {
            records_written: 5,
            pool_taken: 3,
            ..rtrec_summary::default()
        };
        // SAFETY: the struct is larger than struct_size.
        unsafe { write_struct(&mut o, &value) }.unwrap();
        assert_eq!(
            (o.records_written, o.pool_taken, o.struct_size),
            (5, 99, SUMMARY_SIZE_VER0)
        );
    }

    #[test]
    fn a_latency_without_samples_is_all_zero() {
        assert_eq!(rtrec_latency::from(None), rtrec_latency::default());
    }

    #[test]
    fn a_garbage_struct_size_is_einval_and_nothing_is_written() {
        for size in [2000usize, 281, 385, usize::MAX] {
            let mut s = rtrec_summary {
                struct_size: size,
                ..Default::default()
            };
            let value = rtrec_summary {
                records_written: 5,
                ..rtrec_summary::default()
            };
            // SAFETY: the size is refused before any byte is written.
            let f = unsafe { write_struct(&mut s, &value) }.unwrap_err();
            assert_eq!((f.errno, s.records_written), (libc::EINVAL, 0), "{size}");
        }
    }

    #[test]
    fn a_summary_without_struct_size_is_einval_and_untouched() {
        let mut s = rtrec_summary::default();
        let value = rtrec_summary {
            records_written: 5,
            ..rtrec_summary::default()
        };
        // SAFETY: a valid struct.
        let f = unsafe { write_struct(&mut s, &value) }.unwrap_err();
        assert_eq!((f.errno, s.records_written), (libc::EINVAL, 0));
        assert!(f.msg.contains("sizeof(rtrec_summary)"), "{}", f.msg);
    }

    // Here, not in the timer's tests: the summary imports the timer, so a
    // test there that imported the summary back would close a circle.
    #[test]
    fn a_timer_paces_and_its_lateness_reaches_the_summary() {
        use crate::timer::{rtrec_timer_create, rtrec_timer_destroy, rtrec_timer_wait};

        let mut t = std::ptr::null_mut();
        // SAFETY: valid out pointer.
        assert_eq!(unsafe { rtrec_timer_create(200_000, &mut t) }, 0);
        let mut late = u64::MAX;
        for _ in 0..5 {
            // SAFETY: a live timer and a valid out pointer.
            assert_eq!(unsafe { rtrec_timer_wait(t, &mut late) }, 0);
        }
        assert!(late < u64::MAX);
        let mut s = rtrec_summary {
            struct_size: std::mem::size_of::<rtrec_summary>(),
            ..Default::default()
        };
        // SAFETY: a sized summary and a live timer.
        assert_eq!(unsafe { rtrec_summary_attach_timer(&mut s, t) }, 0);
        assert_eq!(s.lateness_ns.count, 5);
        // SAFETY: a live timer, not used again.
        unsafe { rtrec_timer_destroy(t) };
    }
}
