//! Kernel features hidden by [`HIDE_FEATURES_ENV`]: the calls into them
//! refuse here exactly as a kernel without them refuses, so that rtrec's
//! own handling of the absence — a fallback, a skipped cell, one sentence —
//! runs on a machine that has them. CI uses it to prove, without a second
//! kernel, that every test and study copes with a kernel that lacks
//! io_uring or `O_DIRECT` (`rtrec_host::features` hides the rest: BFQ,
//! cgroups, tracefs, FUSE, which are files, not calls).
//!
//! Design choice: the refusal is the kernel's own errno (`ENOSYS` for
//! `io_uring_setup`, `EINVAL` for `O_DIRECT`), not a special error, so no
//! caller can tell a hidden feature from a missing one, and none needs a
//! test-only branch. The variable is read at each such call, which is
//! never on the recording's hot path (ring setup, opening a file).

/// A comma-separated list of feature ids (`io_uring,o_direct`; `all`)
/// that rtrec treats as missing from the kernel.
pub const HIDE_FEATURES_ENV: &str = "RTREC_HIDE_FEATURES";

/// True when [`HIDE_FEATURES_ENV`] names feature `id` (or says `all`).
pub fn hidden(id: &str) -> bool {
    std::env::var(HIDE_FEATURES_ENV)
        .is_ok_and(|v| v.split(',').map(str::trim).any(|s| s == "all" || s == id))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_feature_is_hidden_only_when_named_or_all_are() {
        let parse = |v: &str, id: &str| v.split(',').map(str::trim).any(|s| s == "all" || s == id);
        assert!(parse("bfq, io_uring", "io_uring"));
        assert!(parse("all", "o_direct"));
        assert!(!parse("io_uring_x", "io_uring"));
        assert!(!parse("", "io_uring"));
    }
}
