//! What the writer did: the [`WriterReport`] merged into the recorder's
//! summary, the pool's part of it ([`PoolStats`]), what the loop retired
//! ([`RetireStats`]), and [`Step`], what
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

/// What the loop and the event limit retired, for the summary.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RetireStats {
    /// Files retired (loop files and event files).
    pub files: u64,
    /// Bytes of those files (header and frames).
    pub bytes: u64,
    /// The loop: the sequence number after the last retired record (the
    /// records below it were retired); 0 when none was.
    pub seq_to: u64,
    /// Flight-recorder events retired whole.
    pub events: u64,
    /// Of the retired files, those recycled into the pool.
    pub recycled: u64,
    /// Of the retired files, those deleted.
    pub deleted: u64,
    /// Of the deleted, those the retire thread had not reached by the
    /// next file switch, deleted by the writer so that the directory
    /// stays within its bound (a thread starved of CPU or I/O).
    pub late: u64,
    /// Retired files left on disk because the RETIRED claim covering
    /// them could not be made durable (an I/O error syncing it): nothing
    /// leaves before the record of why is durable.
    #[serde(default)]
    pub unclaimed: u64,
    /// Files of the directory's earlier recordings a loop retired to keep
    /// the directory within its budget (not in `files`; recycled or
    /// deleted like the loop's own).
    pub earlier_files: u64,
    /// Bytes those files took on disk.
    pub earlier_bytes: u64,
    /// Empty recordings the loop owned (no record, no loss: restarts
    /// whose source ended at once), removed when it started.
    #[serde(default)]
    pub empty_recordings: u64,
    /// The recordings retired (whole or in part) that the loop does not
    /// own, by name: only with `--keep-scope dir` ([`crate::KeepScope`]).
    #[serde(default)]
    pub others: Vec<String>,
    /// A shipped directory: of `earlier_files`, those of recordings the
    /// shipping ledger did not say were shipped (retired beyond the
    /// unshipped headroom, or by the age limit; docs/unattended.md, "The
    /// budget knows").
    #[serde(default)]
    pub unshipped_files: u64,
    /// Bytes those files took on disk.
    #[serde(default)]
    pub unshipped_bytes: u64,
    /// Why the shipping ledger could not be read while recording (it read
    /// at the start), the first time: nothing counted as shipped from
    /// then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ledger_damaged: Option<String>,
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
    /// What the loop and the event limit retired.
    pub(crate) retired: RetireStats,
    /// Writes the back-end submitted again after a transient failure
    /// (io_uring under signals: [`crate::io`]'s `uring` module).
    pub(crate) io_resubmitted: u64,
    pub(crate) error: Option<Failure>,
    /// The last file's end frame was written and says the recording is
    /// complete: a failure in `error` then came after it (the final
    /// truncate, header or sync of `file::close`).
    pub(crate) end_complete: bool,
    pub(crate) warnings: Vec<String>,
}
