//! The cells every terminal table shares: a measured latency, a published
//! figure (whole µs) and the emulated device's one-line summary.

use rtrec_units::format_duration;

use crate::output::numbers::thousands;
use crate::report::PublishedFigure;

/// A measured latency for a cell; `-` when there is none.
pub fn latency(ns: Option<u64>) -> String {
    ns.map(format_duration).unwrap_or_else(|| "-".into())
}

/// A published latency (whole µs, as printed in the study); `-` when not
/// published.
pub fn published(us: Option<u64>) -> String {
    latency(us.map(|us| us.saturating_mul(1000)))
}

/// A case's published figure as every table and export lists it: min,
/// average, max, whole µs (`None` where the study gives none, or for a
/// case without a published figure).
pub fn published_us(p: Option<&PublishedFigure>) -> [Option<u64>; 3] {
    p.map_or([None; 3], |p| [p.min_us, p.avg_us, p.max_us])
}

/// `emmc (149,330 requests, 20,611 flushes, 1,256 GC pauses); emulator
/// timing error (served − asked): mean …`: the bench's device line and each
/// S3 variant's.
pub fn emulator_summary(e: &rtrec_emu::EmulatorStats) -> String {
    format!(
        "{} ({} requests, {} flushes, {} GC pauses); emulator timing error (served − asked): {}",
        e.profile,
        thousands(e.requests()),
        thousands(e.flushes),
        thousands(e.gc_pauses),
        e.error_summary()
    )
}
