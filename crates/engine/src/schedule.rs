//! The periodic schedule: an absolute-deadline timer
//! (`clock_nanosleep(TIMER_ABSTIME)`) that measures each period's lateness
//! against the planned release time and counts missed periods, as
//! cyclictest does. Service time alone (the published studies' measure) does
//! not tell a real-time user whether a sample was taken late.

use rtrec_sys as sys;

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::stats::{Latency, LiveStats};

/// Releases the caller once per period on an absolute schedule.
///
/// Lateness is the time from a planned release to the moment the caller
/// actually resumes; it includes any overrun of the previous period's work.
/// When the caller resumes a whole period or more late, the releases it
/// missed are counted in [`PeriodicTimer::missed`] and skipped (no burst of
/// catch-up periods, whose samples would carry wrong times).
#[derive(Debug)]
pub struct PeriodicTimer {
    period_ns: u64,
    next_ns: u64,
    lateness: Latency,
    missed: u64,
    periods: u64,
    publish: Option<Arc<LiveStats>>,
}

/// One release of the timer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tick {
    /// Index of this period since the start (missed periods included).
    pub index: u64,
    /// Planned release time, `CLOCK_MONOTONIC` ns.
    pub planned_ns: u64,
    /// How late the caller resumed, ns.
    pub lateness_ns: u64,
    /// Periods skipped just before this one.
    pub missed: u64,
}

impl PeriodicTimer {
    /// A timer whose first release is one period from now.
    ///
    /// # Panics
    ///
    /// When `period_ns` is 0 (the CLI rejects that before).
    pub fn new(period_ns: u64) -> PeriodicTimer {
        assert!(period_ns > 0, "period must be positive");
        PeriodicTimer {
            period_ns,
            next_ns: sys::monotonic_ns() + period_ns,
            lateness: Latency::new(),
            missed: 0,
            periods: 0,
            publish: None,
        }
    }

    /// Also publishes the missed periods and the longest lateness into
    /// `live` ([`LiveStats::missed_periods`], [`LiveStats::max_lateness_ns`])
    /// at each release, for `--status` (two relaxed atomic updates: no
    /// lock, no system call).
    pub fn publish_to(&mut self, live: Arc<LiveStats>) {
        self.publish = Some(live);
    }

    /// Sleeps until the next planned release and returns it. Allocation-free.
    pub fn wait(&mut self) -> Tick {
        sys::sleep_until_monotonic(self.next_ns);
        let now = sys::monotonic_ns();
        let planned = self.next_ns;
        let late = now.saturating_sub(planned);
        let skipped = late / self.period_ns;
        self.lateness.record(late);
        self.missed += skipped;
        let index = self.periods;
        self.periods += 1 + skipped;
        self.next_ns = planned + (1 + skipped) * self.period_ns;
        if let Some(live) = &self.publish {
            if skipped > 0 {
                live.missed_periods.fetch_add(skipped, Ordering::Relaxed);
            }
            live.max_lateness_ns.fetch_max(late, Ordering::Relaxed);
        }
        Tick {
            index: index + skipped,
            planned_ns: planned,
            lateness_ns: late,
            missed: skipped,
        }
    }

    /// Lateness of every release so far.
    pub fn lateness(&self) -> &Latency {
        &self.lateness
    }

    /// Periods missed so far.
    pub fn missed(&self) -> u64 {
        self.missed
    }

    /// The period, ns.
    pub fn period_ns(&self) -> u64 {
        self.period_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stall_of_several_periods_counts_them_as_missed() {
        let mut t = PeriodicTimer::new(1_000_000);
        t.wait();
        // The first release may itself be late on a busy machine: count
        // only what the stall adds.
        let before = t.missed();
        std::thread::sleep(std::time::Duration::from_millis(5));
        let tick = t.wait();
        assert!(tick.missed >= 3, "{tick:?}");
        assert_eq!(t.missed() - before, tick.missed);
        // The next release is on the original grid, in the future.
        let next = t.wait();
        assert_eq!((next.planned_ns - tick.planned_ns) % 1_000_000, 0);
    }
}
