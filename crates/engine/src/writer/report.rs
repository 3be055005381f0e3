//! What the writer did: the [`WriterReport`] merged into the recorder's
//! summary, the pool's part of it ([`PoolStats`]), and [`Step`], what
//! each of the writer's steps returns. Below every other part of the
//! writer, so each can fill the report without importing the writer.

use std::path::PathBuf;

use crate::error::Failure;
use crate::flusher::FlushStats;
use crate::stats::Latency;

/// What the writer's steps return: a failure is also kept in the report
/// (the first one wins), typed, for the summary.
pub(crate) type Step = Result<(), Failure>;

/// How the file pool served the recording.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct PoolStats {
    /// Files taken from the pool.
    pub taken: u64,
    /// Files pre-allocated with fallocate because the pool was empty.
    pub fallbacks: u64,
    /// Times the writer waited for a prepared file.
    pub waits: u64,
    /// Total time waited, ns.
    pub wait_ns: u64,
    /// Files prepared when the recording was created. Always 0 since
    /// issue 31: a pool with no file ready gives the first file with
    /// `fallocate` (counted in `fallbacks`) and nothing is zero-filled
    /// before a recording; kept for readers of earlier summaries.
    pub prepared_at_start: u64,
    /// Files prepared by the background refiller while recording.
    pub refilled_while_recording: u64,
    /// Files prepared in `finish()` after the recording was closed.
    pub refilled_on_finish: u64,
}

/// What the writer did; merged into the recorder's summary.
#[derive(Debug, Default)]
pub(crate) struct WriterReport {
    pub(crate) records_written: u64,
    pub(crate) bytes_written: u64,
    pub(crate) file_bytes: u64,
    pub(crate) lost_stored: u64,
    /// Drops as the files count them (every loss frame, and the loss stored
    /// at the end): what the last end frame says.
    pub(crate) dropped: u64,
    /// Records the producer handed over (ring mode) that the writer could
    /// not store: the one whose `write()` failed and those after it.
    pub(crate) discarded: u64,
    /// The durable point at the end (see
    /// [`LiveStats::durable_seq`](crate::stats::LiveStats::durable_seq)).
    pub(crate) durable_seq: u64,
    pub(crate) files: Vec<PathBuf>,
    pub(crate) write_lat: Latency,
    pub(crate) write_samples: Vec<u64>,
    pub(crate) flush: FlushStats,
    /// CPU time of the thread that ran the writer, at the end of the
    /// recording (before the pool is refilled), ns.
    pub(crate) cpu_ns: u64,
    pub(crate) pool: PoolStats,
    /// The files' size and why ([`crate::sizing`]'s rule).
    pub(crate) file_sizing: Option<crate::sizing::FileSizing>,
    pub(crate) error: Option<Failure>,
    pub(crate) warnings: Vec<String>,
}
