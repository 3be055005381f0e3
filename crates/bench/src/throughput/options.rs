//! What the throughput study does: its numbers (the record sizes, the
//! search's steps, what holds, the target), the back-ends it measures and
//! in which order, [`HoldRule`] and [`Options`]. The lowest module of the
//! study: every other one reads these.

use rtrec_engine::{Alloc, Io};
use serde::{Deserialize, Serialize};

use crate::producer::RtRequest;

/// The record sizes of the study.
pub const SIZES: [u64; 3] = [1 << 10, 16 << 10, 1 << 20];

/// The confirmation phase's step: a rate that fails one of its k
/// full-length probes is lowered to this fraction.
pub const STEP_DOWN: f64 = 0.9;

/// The most step-downs of the confirmation phase (0.9^8 ≈ 0.43 of the
/// coarse candidate).
pub const MAX_STEP_DOWNS: u32 = 8;

/// The default k of the k-of-k confirmation (`--confirmations`).
pub const DEFAULT_CONFIRMATIONS: u32 = 3;

/// The writer keeps up when, at the producer's last record, its backlog is
/// at most this fraction of the ring …
pub const BACKLOG_LIMIT: f64 = 0.5;

/// … and at most this fraction of the payload offered during the probe:
/// the writer stored at least 95 % of it while the producer ran. A larger
/// ring must not let a writer slower than the rate pass a short probe …
pub const BACKLOG_OF_OFFERED: f64 = 0.05;

/// … or at most this many records, whichever is more: the last record is
/// always still queued when the producer stops, and a slow rate offers few.
pub const BACKLOG_RECORDS: u64 = 4;

/// Finished files a probe keeps beside the one being written; older ones
/// are deleted (or, with `--alloc pool`, recycled) as it records.
pub const KEEP_FILES: u64 = 2;

/// With `--alloc pool`: the files of a probe directory's pool, zero-filled
/// before its first probe: the [`KEEP_FILES`] + 1 a probe holds, and one
/// ready to take while the oldest is being recycled.
pub const POOL_FILES: u32 = KEEP_FILES as u32 + 2;

/// The study's target: some back-end holds at least this fraction of the
/// device's sequential write bandwidth.
pub const TARGET_OF_DEVICE: f64 = 0.9;

/// Runs of one cell agree when the highest held rate is at most this
/// multiple of the lowest (within 20 %).
pub const AGREE_WITHIN: f64 = 1.2;

/// A share of CPU time that counts as saturated: the machine's cores busy
/// (steal included) or one thread on a CPU for at least this fraction of a
/// failed probe ([`limit_of`](super::limit_of)).
pub const BUSY_SHARE: f64 = 0.9;

/// The block size of the device's jobs (see the module docs).
pub const DEVICE_BLOCK: u64 = 1 << 20;

/// The back-ends the study measures, in the order of its rows (and of its
/// JSON): every one of [`Io::ALL`], in its order.
///
/// Design choice: the list is derived, never written out, so a new
/// back-end is in the study (and in fio's like-for-like jobs, [`Io::ALL`]'s
/// [`Io::is_direct`] and [`Io::is_uring`] decide its job) without an edit
/// here.
pub fn backends() -> impl Iterator<Item = Io> {
    Io::ALL.iter().map(|&(io, _)| io)
}

/// The back-ends of [`backends`] that can write into `work` on this
/// machine, and one sentence per back-end left out (`this kernel has no
/// io_uring (CONFIG_IO_URING): the STUDY study's uring rows need it; …`),
/// from `rtrec_host::features` — the detection the tests and the doctor
/// use. Design choice: a back-end the kernel refuses is left out of the
/// study and named, never run: the engine's own fallback (buffered
/// `write()` where io_uring is refused) would fill its row with another
/// back-end's figures under its name.
pub fn usable_backends(work: &std::path::Path, study: &str) -> (Vec<Io>, Vec<String>) {
    use rtrec_host::features::{detect, o_direct, of_io, Feature};
    let mut usable = Vec::new();
    let mut skipped = Vec::new();
    for io in backends() {
        let missing = of_io(io.name()).iter().find_map(|&f| {
            match f {
                Feature::ODirect => o_direct(work),
                f => detect(f),
            }
            .err()
        });
        match missing {
            None => usable.push(io),
            Some(m) => skipped.push(m.sentence(&format!("the {study} study's {io} rows need it"))),
        }
    }
    (usable, skipped)
}

/// The order of fio's device jobs: the `O_DIRECT` back-ends first
/// ([`Io::is_direct`]), because the best of them bounds the buffered jobs'
/// length (`end_fsync` is not bounded by fio's `--runtime`), then the
/// others; within each, [`backends`]' order (a stable sort).
pub fn device_job_order() -> Vec<Io> {
    let mut ios: Vec<Io> = backends().collect();
    ios.sort_by_key(|io| !io.is_direct());
    ios
}

/// What decides whether a probe holds, besides keeping up (see [`holds`](super::holds)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum HoldRule {
    /// 0 drops, no writer error, the backlog at the end at most half the
    /// ring; lateness reported, not judged (the default).
    #[default]
    Drops,
    /// `drops`, and every release within one period with no missed period.
    Max,
    /// `drops`, and 99 % of the releases within one period.
    P99,
}

/// What the study does.
#[derive(Clone, Debug)]
pub struct Options {
    /// How long a probe that decides the sustained rate records, ns.
    pub probe_ns: u64,
    /// How long a probe of the coarse search records, ns.
    pub coarse_ns: u64,
    /// Geometric bisection steps of the coarse search.
    pub steps: u32,
    /// Full-length probes a rate must hold in a row (k of k).
    pub confirmations: u32,
    /// Record sizes, bytes.
    pub sizes: Vec<u64>,
    /// What decides a probe.
    pub rule: HoldRule,
    /// The producer thread's real-time setup.
    pub rt: RtRequest,
    /// Runs of the whole study (`--repeat`, at least 1).
    pub repeat: u32,
    /// How a probe's files are allocated: [`Alloc::Fallocate`] (a spent
    /// pool's fallback, the default) or [`Alloc::Pool`] (a pool recycled
    /// into; see the module docs).
    pub alloc: Alloc,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_back_end_is_in_the_study_and_in_the_device_jobs() {
        let all: Vec<Io> = Io::ALL.iter().map(|&(io, _)| io).collect();
        let studied: Vec<Io> = backends().collect();
        let jobs = device_job_order();
        for io in &all {
            assert_eq!(
                studied.iter().filter(|x| *x == io).count(),
                1,
                "{io} in the rows"
            );
            assert_eq!(
                jobs.iter().filter(|x| *x == io).count(),
                1,
                "{io} in fio's device jobs"
            );
        }
        assert_eq!((studied.len(), jobs.len()), (all.len(), all.len()));
        // The rows keep `Io::ALL`'s order (the JSON's); the device jobs run
        // every `O_DIRECT` one before any buffered one.
        assert_eq!(studied, all);
        let first_buffered = jobs.iter().position(|io| !io.is_direct());
        assert!(
            jobs.iter()
                .skip(first_buffered.unwrap_or(jobs.len()))
                .all(|io| !io.is_direct()),
            "{jobs:?}"
        );
    }
}
