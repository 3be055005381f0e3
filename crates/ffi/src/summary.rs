//! `rtrec_summary`: what a recording did, filled by
//! `rtrec_recorder_finish()` / `rtrec_recorder_abort()`, and
//! `rtrec_summary_attach_timer()`, which adds the schedule's lateness.
#![allow(non_camel_case_types)]

use std::ffi::c_int;
use std::mem::{offset_of, size_of};

use rtrec_engine::{LatencySummary, Summary};

use crate::error::{guard, write_struct, Extensible, Fail, WriteSize};
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
/// The library fills `min(struct_size, its own size)` bytes, zeroes the
/// rest, and sets `struct_size` to the number of bytes it filled.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
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
    /// Number of files written.
    pub files: u64,
    /// Wall time from creation to the end of the recording, ns.
    pub duration_ns: u64,
    /// Periods whose release was missed (from `rtrec_summary_attach_timer()`;
    /// 0 without a timer).
    pub missed_periods: u64,
    /// Latency of each record's `write()` call, ns.
    pub write_ns: rtrec_latency,
    /// Latency of `rtrec_recorder_record()` on the recording thread, ns.
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
}

// SAFETY: repr(C), `size_t struct_size` first, integers only.
unsafe impl Extensible for rtrec_summary {
    const NAME: &'static str = "rtrec_summary";
    const SIZE_VER0: usize = offset_of!(rtrec_summary, lateness_ns) + size_of::<rtrec_latency>();
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
            files: s.files.len() as u64,
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
        // SAFETY: non-NULL; a handle from rtrec_timer_create by contract.
        let t = unsafe { &(*timer).timer };
        // SAFETY: non-NULL; the caller's summary is `struct_size` bytes and
        // was filled by finish/abort, so its first SIZE_VER0 bytes are ours.
        unsafe {
            let size = summary.cast::<usize>().read_unaligned();
            if size < rtrec_summary::SIZE_VER0 {
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

/// Writes `s` into the caller's summary (NULL: nothing to do).
///
/// # Safety
///
/// `out` is NULL or points to a caller's `rtrec_summary` of `struct_size`
/// bytes.
pub(crate) unsafe fn write_summary(out: *mut rtrec_summary, s: &Summary) -> Result<(), Fail> {
    if out.is_null() {
        return Ok(());
    }
    // SAFETY: forwarded from the caller.
    unsafe { write_struct(out, &rtrec_summary::from(s), WriteSize::Filled) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_version_of_the_summary_is_free_of_padding() {
        assert_eq!(rtrec_summary::SIZE_VER0, 280);
        assert_eq!(
            size_of::<rtrec_summary>(),
            offset_of!(rtrec_summary, durable_seq) + size_of::<u64>()
        );
        assert_eq!(size_of::<rtrec_summary>(), rtrec_summary::SIZE_VER0 + 80);
    }

    /// A caller compiled before the pool and flight fields.
    #[test]
    fn an_older_callers_summary_gets_only_its_fields() {
        #[repr(C)]
        struct Older {
            s: rtrec_summary,
        }
        let mut o = Older {
            s: rtrec_summary {
                struct_size: rtrec_summary::SIZE_VER0,
                pool_taken: 99,
                ..Default::default()
            },
        };
        let value = rtrec_summary {
            records_written: 5,
            pool_taken: 3,
            ..rtrec_summary::default()
        };
        // SAFETY: the struct is larger than struct_size.
        unsafe { write_struct(&mut o.s, &value, WriteSize::Filled) }.unwrap();
        assert_eq!(
            (o.s.records_written, o.s.pool_taken, o.s.struct_size),
            (5, 99, rtrec_summary::SIZE_VER0)
        );
    }

    #[test]
    fn a_latency_without_samples_is_all_zero() {
        assert_eq!(rtrec_latency::from(None), rtrec_latency::default());
    }

    /// A caller built against a newer header: our struct plus 16 bytes.
    #[repr(C)]
    struct Newer {
        s: rtrec_summary,
        extra: [u64; 2],
    }

    #[test]
    fn a_newer_callers_summary_is_filled_and_told_how_much() {
        let mut n = Newer {
            s: rtrec_summary::default(),
            extra: [9, 9],
        };
        n.s.struct_size = size_of::<Newer>();
        let value = rtrec_summary {
            records_written: 5,
            ..rtrec_summary::default()
        };
        // SAFETY: the struct is struct_size bytes long.
        unsafe { write_struct(&mut n.s, &value, WriteSize::Filled) }.unwrap();
        assert_eq!(
            (n.s.records_written, n.s.struct_size, n.extra),
            (5, size_of::<rtrec_summary>(), [0, 0])
        );
    }

    #[test]
    fn a_summary_without_struct_size_is_einval_and_untouched() {
        let mut s = rtrec_summary::default();
        let value = rtrec_summary {
            records_written: 5,
            ..rtrec_summary::default()
        };
        // SAFETY: a valid struct.
        let f = unsafe { write_struct(&mut s, &value, WriteSize::Filled) }.unwrap_err();
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
