//! `rtrec_timer`: the periodic, absolute-deadline timer
//! ([`rtrec_engine::PeriodicTimer`]) that paces a recording and measures
//! each release's lateness and the periods missed.
#![allow(non_camel_case_types)]

use std::ffi::c_int;

use rtrec_engine::PeriodicTimer;

use crate::error::{guard, guard_void, Fail};

/// A periodic timer (opaque). One thread uses it at a time.
pub struct rtrec_timer {
    pub(crate) timer: PeriodicTimer,
}

// A timer may be created on one thread and used on another.
const _: fn() = || {
    fn send<T: Send>() {}
    send::<rtrec_timer>();
};

/// Creates a timer whose first release is one period from now, on
/// `CLOCK_MONOTONIC`, and stores it in `*out`. Free it with
/// `rtrec_timer_destroy()`.
///
/// Returns 0, or `-EINVAL` (`out` is NULL or `period_ns` is 0).
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
        let t = Box::new(rtrec_timer {
            timer: PeriodicTimer::new(period_ns),
        });
        // SAFETY: `out` is non-NULL and writable by the caller's contract.
        unsafe { out.write(Box::into_raw(t)) };
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
/// Returns 0, or `-EINVAL` (`timer` is NULL).
#[no_mangle]
pub unsafe extern "C" fn rtrec_timer_wait(
    timer: *mut rtrec_timer,
    lateness_ns_out: *mut u64,
) -> c_int {
    guard(|| {
        // SAFETY: NULL or a handle from rtrec_timer_create, used by one
        // thread at a time (caller's contract).
        let Some(t) = (unsafe { timer.as_mut() }) else {
            return Err(Fail::inval("rtrec_timer_wait: timer is NULL"));
        };
        let tick = t.timer.wait();
        if !lateness_ns_out.is_null() {
            // SAFETY: non-NULL and writable by the caller's contract.
            unsafe { lateness_ns_out.write(tick.lateness_ns) };
        }
        Ok(0)
    })
}

/// Frees a timer. NULL is ignored.
#[no_mangle]
pub unsafe extern "C" fn rtrec_timer_destroy(timer: *mut rtrec_timer) {
    guard_void(|| {
        if !timer.is_null() {
            // SAFETY: a handle from rtrec_timer_create, not used again.
            drop(unsafe { Box::from_raw(timer) });
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
            rtrec_timer_destroy(std::ptr::null_mut());
        }
    }
}
