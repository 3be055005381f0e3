//! What the cost study does: its record sizes, each size's goal, how much
//! and how fast a cell records, and [`Options`]. The lowest module of the
//! study: every other one reads these.

use crate::producer::RtRequest;

/// The record sizes of the study: 64 B (packed framing), 1 KiB, 16 KiB
/// and 1 MiB.
pub const SIZES: [u64; 4] = [64, 1 << 10, 16 << 10, 1 << 20];

/// The goal at 1 MiB records: the recorder's CPU per MiB at most this
/// multiple of the floor's.
pub const GOAL_1MIB: f64 = 1.5;

/// The goal at 16 KiB records.
pub const GOAL_16KIB: f64 = 2.0;

/// The goal at 64 B records (packed framing) and, as a choice of ours, at
/// 1 KiB: issue 34 names no goal for 1 KiB, which is packed too
/// ([`rtrec_engine::Framing::auto`]), so it gets the packed goal, not an
/// interpolation between two framings.
pub const GOAL_PACKED: f64 = 4.0;

/// The goal of a record size: [`GOAL_1MIB`] from 1 MiB up,
/// [`GOAL_16KIB`] from 16 KiB, else [`GOAL_PACKED`].
pub fn goal(record_bytes: u64) -> f64 {
    if record_bytes >= 1 << 20 {
        GOAL_1MIB
    } else if record_bytes >= 16 << 10 {
        GOAL_16KIB
    } else {
        GOAL_PACKED
    }
}

/// Payload a cell records by default (`--cost-bytes`), and what fio and
/// the memcpy and CRC32C floors process: 256 MiB.
pub const DEFAULT_BYTES: u64 = 256 << 20;

/// A cell records at this fraction of the device's sequential write
/// bandwidth (one fio 1 MiB job per run) …
pub const RATE_OF_DEVICE: f64 = 0.25;

/// … and at most this rate, bytes/s (64 MiB/s: a million 64 B records a
/// second), so the producer and the writer are never the bottleneck and
/// the cost measured is the cost of a rate the recorder holds.
pub const MAX_RATE: f64 = (64u64 << 20) as f64;

/// The producer records in bursts at least this far apart, ns (1 ms),
/// and reads its thread's CPU clock before and after each burst, not per
/// record; a 1 MiB record at a slower rate is a burst of one.
pub const BURST_NS: u64 = 1_000_000;

/// The memcpy and CRC32C floors are the best of this many passes.
pub const FLOOR_PASSES: u32 = 3;

/// fio's like-for-like job runs at most this long, ns (it stops at the
/// cell's volume first on any device that holds [`MAX_RATE`] for 10 s).
pub const FIO_MAX_NS: u64 = 10_000_000_000;

/// The runs of one cell agree when the highest ratio is at most this
/// multiple of the lowest (within 20 %).
pub const AGREE_WITHIN: f64 = 1.2;

/// What the study does.
#[derive(Clone, Debug)]
pub struct Options {
    /// Payload each cell records, bytes (`--cost-bytes`).
    pub bytes: u64,
    /// Record sizes, bytes.
    pub sizes: Vec<u64>,
    /// The producer thread's real-time setup.
    pub rt: RtRequest,
    /// Runs of the whole study (`--repeat`, at least 1).
    pub repeat: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_size_of_the_study_has_the_issues_goal() {
        let goals: Vec<f64> = SIZES.iter().map(|&s| goal(s)).collect();
        assert_eq!(goals, [GOAL_PACKED, GOAL_PACKED, GOAL_16KIB, GOAL_1MIB]);
        assert_eq!((GOAL_PACKED, GOAL_16KIB, GOAL_1MIB), (4.0, 2.0, 1.5));
    }
}
