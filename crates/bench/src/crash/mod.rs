//! `--study crash`: every crash a real card can produce, checked against
//! the durability contract (`docs/durability.md`, "Crash states").
//!
//! For each cell of the matrix ([`CELLS`]) it records a short recording on
//! the emulated device with its write log on (`rtrec __emulate
//! --write-log`, [`rtrec_emu::writelog`]), polling `--status` (on a file
//! outside the device), the directory and the pool, and stamping what it
//! sees with the clock the log uses. Then, for its share of the N crash
//! states, it builds the image a power cut at a chosen crash point could
//! leave ([`rtrec_emu::crashimg`]), and checks it:
//! - the ext4 journal is replayed (`e2fsck -E journal_only`), then
//!   `e2fsck -fn` says whether ext4 itself needs repair beyond the summary
//!   counters it recomputes at mount (counted apart from rtrec's damage),
//!   and `e2fsck -fy` repairs it;
//! - the recording directory is read out with `debugfs rdump` (read-only,
//!   no mount, no loop device per state);
//! - `rtrec recover`, `rtrec verify --json` and `rtrec export` run on it;
//! - the contract: every record the finished recording holds below the
//!   durable point published before the crash point is present and
//!   byte-exact (the synthetic payload: sequence number in the first 8
//!   bytes, then `i % 251`); no recording is hidden; no accepted frame
//!   holds wrong bytes; after `recover` no file is corrupt or nameless of
//!   its header, and `export DIR` without flags reads every durable record.
//!
//! One [`Violation`] per broken rule, with its kind, the crash point and
//! the state (its seed and the writes that landed), so it can be rebuilt:
//! the log of a cell with a violation is kept and its directory printed.
//!
//! Design choices:
//! - The matrix varies one axis at a time around a base cell, then crosses
//!   the axes with file switches, where findings lived (the full cross
//!   product would spend a run recording).
//! - Crash points are weighted towards the moments that matter
//!   ([`moments`]): half of the states are drawn from every flush and the
//!   flushes and entries after each moment, the other half fall at any
//!   entry.
//! - Every image mounted or attached goes through the host crate's journal
//!   ([`LoopFs`](rtrec_host::loopfs::LoopFs)); the crash images are only
//!   read by e2fsprogs.
//!
//! The modules, lowest first: `moments` · `matrix` ([`Options`], the
//! cells, the synthetic record) · `content` (what a directory's files
//! hold) · `record` (one cell's recording, watched) · `check` (one crash
//! state against the contract) · `report` (the result) · `cycles` (power
//! cuts in a row, `--crash-cycles`) · `runs` ([`run`]).
//! This file only joins them.

mod check;
mod content;
mod cycles;
mod matrix;
pub mod moments;
mod record;
mod report;
mod runs;

pub use matrix::{selected, synthetic, Cell, Options, Source, CELLS, RECORD_BYTES};
pub use report::{CellResult, CrashReport, LogCost, Violation};
pub use runs::run;
