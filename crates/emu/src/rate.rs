//! Bandwidth arithmetic: time to move bytes at a rate, and bytes moved in a
//! time. Below both the [`crate::profile`] (a full cache's drain time) and
//! the [`crate::model`] (every request's service time), so neither imports
//! the other for it.

/// Time to move `bytes` at `per_s` bytes per second, ns (0: no limit).
pub(crate) fn transfer_ns(bytes: u64, per_s: u64) -> u64 {
    if per_s == 0 {
        0
    } else {
        (u128::from(bytes) * 1_000_000_000 / u128::from(per_s)) as u64
    }
}

/// Bytes moved in `ns` at `per_s` bytes per second.
pub(crate) fn transfer_bytes(ns: u64, per_s: u64) -> u64 {
    (u128::from(ns) * u128::from(per_s) / 1_000_000_000).min(u128::from(u64::MAX)) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transfer_ns_and_transfer_bytes_are_inverse_and_zero_rate_is_no_limit() {
        // 4 MiB at 2 MiB/s is two seconds, and two seconds move 4 MiB back.
        assert_eq!(transfer_ns(4 << 20, 2 << 20), 2_000_000_000);
        assert_eq!(transfer_bytes(2_000_000_000, 2 << 20), 4 << 20);
        assert_eq!(transfer_ns(u64::MAX, 0), 0);
        assert_eq!(transfer_bytes(u64::MAX, u64::MAX), u64::MAX);
    }
}
