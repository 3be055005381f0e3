//! `rtrec_timer`: the periodic, absolute-deadline timer
//! ([`rtrec_engine::PeriodicTimer`]) that paces a recording and measures
//! each release's lateness and the periods missed.
#![allow(non_camel_case_types)]

use std::ffi::c_int;

use rtrec_engine::PeriodicTimer;

use crate::error::{guard, Fail};
use crate::handle::{Kind, Table};

/// A periodic timer (opaque). One thread uses it at a time. The pointer is
/// a handle, not an address (see `handle.rs`): a destroyed timer's handle
/// gives `-EBADF`.
pub struct rtrec_timer {
    pub(crate) timer: PeriodicTimer,
}

/// The live timers.
pub(crate) static TIMERS: Table<rtrec_timer> = Table::new(Kind::Timer);

/// The longest period accepted, ns: one day. Deadlines are kept in `u64`
/// ns of `CLOCK_MONOTONIC` and slept on with a `timespec`; a longer period
/// brings them toward the wrap, and no recording paces itself in days.
pub const RTREC_TIMER_MAX_PERIOD_NS: u64 = 86_400_000_000_000;

// A timer may be created on one thread and used on another.
const _: fn() = || {
    fn send<T: Send>() {}
    send::<rtrec_timer>();
};

/// Creates a timer whose first release is one period from now, on
/// `CLOCK_MONOTONIC`, and stores it in `*out`. Free it with
/// `rtrec_timer_destroy()`.
///
/// Returns 0, or `-EINVAL` (`out` is NULL, or `period_ns` is 0 or more
/// than `RTREC_TIMER_MAX_PERIOD_NS`, one day), `-EMFILE` (65,536 timers
/// live).
#[no_mangle]
pub unsafe extern "C" fn rtrec_timer_create(period_ns: u64, out: *mut *mut rtrec_timer) -> c_int {
    guard(|| {
        if out.is_null() {
            return Err(Fail::inval("rtrec_timer_create: out is NULL"));
        }
        if period_ns == 0 {
            return Err(Fail::inval(
                "rtrec_timer_create: the period must be more than 0 ns",
            ));
        }
        if period_ns > RTREC_TIMER_MAX_PERIOD_NS {
            return Err(Fail::inval(format!(
                "rtrec_timer_create: a period of {period_ns} ns is more than one day ({RTREC_TIMER_MAX_PERIOD_NS} ns), the longest this timer keeps without its deadline overflowing"
            )));
        }
        let t = Box::new(rtrec_timer {
            timer: PeriodicTimer::new(period_ns),
        });
        let h = TIMERS.insert(t).ok_or_else(|| {
            Fail::new(
                libc::EMFILE,
                "rtrec_timer_create: 65536 timers are live already",
            )
        })?;
        // SAFETY: `out` is non-NULL and writable by the caller's contract.
        unsafe { out.write(h as *mut rtrec_timer) };
        Ok(0)
    })
}

/// Sleeps until the timer's next planned release
/// (`clock_nanosleep(TIMER_ABSTIME)`) and stores in `*lateness_ns_out`
/// (when not NULL) how late the caller resumed, in ns. When it resumes one
/// or more whole periods late, those releases are counted as missed and
/// skipped: the schedule stays on its grid, with no burst of catch-up
/// releases. Allocation-free.
///
/// Returns 0, or `-EINVAL` (`timer` is NULL), `-EBADF` (`timer` was
/// destroyed, or is not a timer).
#[no_mangle]
pub unsafe extern "C" fn rtrec_timer_wait(
    timer: *mut rtrec_timer,
    lateness_ns_out: *mut u64,
) -> c_int {
    guard(|| {
        if timer.is_null() {
            return Err(Fail::inval("rtrec_timer_wait: timer is NULL"));
        }
        // SAFETY: looked up, never dereferenced; one thread at a time per
        // handle (caller's contract).
        let Some(t) = (unsafe { TIMERS.get(timer as usize) }) else {
            return Err(Fail::new(
                libc::EBADF,
                "rtrec_timer_wait: timer is not a live timer (destroyed, or never created)",
            ));
        };
        let tick = t.timer.wait();
        if !lateness_ns_out.is_null() {
            // SAFETY: non-NULL and writable by the caller's contract.
            unsafe { lateness_ns_out.write(tick.lateness_ns) };
        }
        Ok(0)
    })
}

/// Frees a timer; its handle is dead from now on.
///
/// Returns 0 (NULL is ignored, as `free(NULL)`), or `-EBADF` (`timer` was
/// destroyed already, or is not a timer; nothing happens).
#[no_mangle]
pub unsafe extern "C" fn rtrec_timer_destroy(timer: *mut rtrec_timer) -> c_int {
    guard(|| {
        if timer.is_null() {
            return Ok(0);
        }
        match TIMERS.remove(timer as usize) {
            Some(t) => {
                drop(t);
                Ok(0)
            }
            None => Err(Fail::new(
                libc::EBADF,
                "rtrec_timer_destroy: timer is not a live timer (destroyed already, or never created)",
            )),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zero_period_or_null_pointers_are_einval() {
        let mut t = std::ptr::null_mut();
        // SAFETY: valid or NULL pointers, which the functions check.
        unsafe {
            assert_eq!(rtrec_timer_create(0, &mut t), -libc::EINVAL);
            assert!(t.is_null());
            assert_eq!(
                rtrec_timer_create(1000, std::ptr::null_mut()),
                -libc::EINVAL
            );
            assert_eq!(
                rtrec_timer_wait(std::ptr::null_mut(), std::ptr::null_mut()),
                -libc::EINVAL
            );
            assert_eq!(rtrec_timer_destroy(std::ptr::null_mut()), 0);
        }
    }

    #[test]
    fn an_overflowing_period_is_einval_and_a_destroyed_timer_is_ebadf() {
        let mut t = std::ptr::null_mut();
        // SAFETY: valid out pointers; handles are looked up, never followed.
        unsafe {
            assert_eq!(rtrec_timer_create(u64::MAX, &mut t), -libc::EINVAL);
            assert!(t.is_null());
            assert_eq!(rtrec_timer_create(1_000_000, &mut t), 0);
            assert_eq!(rtrec_timer_destroy(t), 0);
            assert_eq!(rtrec_timer_wait(t, std::ptr::null_mut()), -libc::EBADF);
            assert_eq!(rtrec_timer_destroy(t), -libc::EBADF);
        }
    }
}
