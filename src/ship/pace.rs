//! The shipper's pacing: the bandwidth limit (`--bwlimit`, a token bucket
//! on the bytes sent) and the backoff between attempts after a failure
//! (exponential, with jitter, bounded).
//!
//! Design choices:
//! - **The bucket is paid before a body goes out**: object_store sends a
//!   part or an object as one buffered body, so the limit holds over a
//!   run of parts (one part's size of burst at most), not within one.
//! - **Jitter from the clock** (the low bits of the monotonic time): a
//!   fleet that lost its network together does not come back together,
//!   and no random-number crate is linked for it.

use std::time::{Duration, Instant};

/// A token bucket on bytes: `rate` bytes a second, a burst of `burst`.
#[derive(Debug)]
pub struct Bucket {
    /// Bytes a second (0: no limit).
    rate: u64,
    /// Bytes it may hold.
    burst: u64,
    /// Bytes it holds (negative: owed).
    tokens: f64,
    /// When `tokens` was last brought up to date.
    at: Instant,
}

impl Bucket {
    /// A bucket of `rate` bytes a second (0: unlimited) holding at most
    /// `burst` bytes, empty: the first body waits its own time too, so a
    /// run of any length averages `rate` (a full bucket would let the
    /// first `burst` bytes go free: 8 MiB over a minute at 1.5 MiB/s is
    /// 9 % over the cap).
    pub fn new(rate: u64, burst: u64) -> Bucket {
        Bucket {
            rate,
            burst,
            tokens: 0.0,
            at: Instant::now(),
        }
    }

    /// How long to wait before sending `bytes` (zero: at once), taking
    /// them from the bucket.
    pub fn take(&mut self, bytes: u64) -> Duration {
        self.take_at(bytes, Instant::now())
    }

    /// [`Bucket::take`] at time `now`.
    fn take_at(&mut self, bytes: u64, now: Instant) -> Duration {
        if self.rate == 0 {
            return Duration::ZERO;
        }
        let elapsed = now.duration_since(self.at).as_secs_f64();
        self.at = now;
        self.tokens = (self.tokens + elapsed * self.rate as f64).min(self.burst as f64);
        self.tokens -= bytes as f64;
        if self.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-self.tokens / self.rate as f64)
        }
    }
}

/// The wait before attempt `attempt` (from 1) after a failure: `base`
/// doubled each time up to `cap`, then between half of it and all of it
/// (jitter).
pub fn backoff(attempt: u32, base: Duration, cap: Duration) -> Duration {
    let full = base
        .saturating_mul(1u32 << attempt.saturating_sub(1).min(16))
        .min(cap);
    let jitter = (rtrec_sys::time::monotonic_ns() % 1000) as f64 / 1000.0;
    full.mul_f64(0.5 + 0.5 * jitter)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unlimited_bucket_never_waits() {
        let mut b = Bucket::new(0, 0);
        assert_eq!(b.take(u64::MAX / 2), Duration::ZERO);
    }

    #[test]
    fn a_bucket_makes_a_sender_wait_for_what_it_owes() {
        let mut b = Bucket::new(1 << 20, 1 << 20);
        let t0 = b.at;
        let mib = 1 << 20;
        assert_eq!(
            b.take_at(mib, t0),
            Duration::from_secs(1),
            "it starts empty"
        );
        assert_eq!(b.take_at(mib, t0), Duration::from_secs(2), "two MiB owed");
        // Half a second later half a MiB came back; the debt is paid by
        // t0 + 2 s, when one more MiB waits its own second.
        let later = t0 + Duration::from_millis(500);
        assert_eq!(b.take_at(0, later), Duration::from_millis(1500));
        let paid = t0 + Duration::from_secs(2);
        assert_eq!(b.take_at(mib, paid), Duration::from_secs(1));
        // Idle for long, it holds one burst at most.
        let idle = t0 + Duration::from_secs(100);
        assert_eq!(b.take_at(mib, idle), Duration::ZERO);
        assert_eq!(b.take_at(mib, idle), Duration::from_secs(1));
    }

    #[test]
    fn backoff_doubles_up_to_its_cap_with_jitter_below_it() {
        let (base, cap) = (Duration::from_secs(1), Duration::from_secs(60));
        for attempt in 1..20 {
            let full = (base * 2u32.pow((attempt - 1).min(16))).min(cap);
            let w = backoff(attempt, base, cap);
            assert!(w >= full / 2 && w <= full, "attempt {attempt}: {w:?}");
        }
    }
}
