//! The crash study's result, `crash` in `--json`: each broken rule a
//! [`Violation`], each cell's [`CellResult`], the write log's [`LogCost`],
//! and the whole [`CrashReport`].

use rtrec_emu::EmulatorStats;
use serde::Serialize;

/// One broken rule in one crash state.
#[derive(Clone, Debug, Serialize)]
pub struct Violation {
    /// The cell.
    pub cell: String,
    /// The crash state's seed.
    pub seed: u64,
    /// The crash point (log entries completed).
    pub point: usize,
    /// Milliseconds from the log's first entry to the crash point.
    pub at_ms: f64,
    /// The durable point published before the crash point.
    pub durable_seq: u64,
    /// The state: the last flush, the writes that landed, a torn one.
    pub state: String,
    /// Its kind, for counting: `missing`, `hidden`, `wrong-bytes`,
    /// `fs-damaged`, `recover-failed`, `corrupt-after-recover`,
    /// `no-verify-report`, `export-refused`, `export-refused-crash-hole`
    /// (export refused only for the loss frame `recover` put where it cut
    /// a crash hole), `export-wrong-bytes`, `export-misses`.
    pub kind: &'static str,
    /// What broke, in one sentence.
    pub what: String,
    /// Where the cell's log was kept to rebuild the state.
    pub log: String,
}

/// What one cell gave.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CellResult {
    /// Its name.
    pub name: String,
    /// Crash states checked.
    pub states: u64,
    /// Of them, drawn from the weighted points (flushes and moments).
    pub states_weighted: u64,
    /// States in which `e2fsck -fy` repaired ext4 (after journal replay).
    pub fs_repaired: u64,
    /// Violations found.
    pub violations: u64,
    /// Writes in its log.
    pub log_writes: u64,
    /// Flushes in its log.
    pub log_flushes: u64,
    /// Durable points published (distinct values seen in `--status`).
    pub durable_points: u64,
    /// Records the finished recording holds (the reference of "present").
    pub records_stored: u64,
    /// Records owed over the states checked (below the durable point at
    /// the crash point and not retired under a claim the state holds),
    /// each checked present and byte-exact: what a cell's states vouched
    /// for (0 in results from before it).
    #[serde(default)]
    pub records_owed: u64,
    /// The moments found, by kind ([`moments`](super::moments)).
    pub moments: std::collections::BTreeMap<String, u64>,
    /// The emulator's counters and timing error while it recorded, the
    /// write log on.
    pub emulator: Option<EmulatorStats>,
    /// The first ten states ext4 needed repair in: seed, state and the
    /// first problem `e2fsck -fn` named.
    pub fs_repairs: Vec<String>,
}

/// The write log's cost: the first cell recorded with the log off, then
/// on (the emulator's timing error of each).
#[derive(Clone, Debug, Default, Serialize)]
pub struct LogCost {
    /// The cell recorded twice.
    pub cell: String,
    /// Log off.
    pub off: Option<EmulatorStats>,
    /// Log on.
    pub on: Option<EmulatorStats>,
}

/// The study's result (`crash` in `--json`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct CrashReport {
    /// Crash states checked in all.
    pub states_checked: u64,
    /// States in which ext4 itself needed repair.
    pub fs_repaired: u64,
    /// Every violation, one object each.
    pub violations: Vec<Violation>,
    /// Per cell of the matrix.
    pub cells: Vec<CellResult>,
    /// The write log's cost on the emulator's timing error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_cost: Option<LogCost>,
    /// The seed of the run.
    pub seed: u64,
    /// Atomic unit of torn writes, bytes.
    pub atomic_bytes: u64,
    /// Wall time of the study, seconds (recordings and checks; not the
    /// wait for the global lock before it).
    pub wall_s: f64,
}
