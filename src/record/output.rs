//! `record`'s output flags — what the recording shows and writes besides
//! its files: the live status file, the `--json` summary and its
//! timeline, the terminal's progress and summary, the histogram — and
//! their part of the engine's configuration ([`OutputArgs::apply`]).

use std::path::PathBuf;

use clap::Args;
use rtrec_engine::Config;

/// What the recording reports, and where.
#[derive(Debug, Args)]
pub struct OutputArgs {
    /// Keep FILE up to date (atomically replaced about every 20ms) with the live counters: queued, written, durable, drops by cause, missed periods, ring fill, longest write() and lateness. A FILE ending in .prom gets the Prometheus text format (node_exporter's textfile collector, docs/status.md), any other one JSON line.
    #[arg(long, value_name = "FILE")]
    pub status: Option<PathBuf>,

    /// Write the summary as JSON to FILE ('-' for stdout).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// No progress display and no summary table.
    #[arg(long, short)]
    pub quiet: bool,

    /// Print a text histogram of the write() latency after the summary (log bins, cyclictest-style).
    #[arg(long)]
    pub histogram: bool,

    /// Add each write()'s latency in call order to the --json summary (timeline_write_ns; at most 1,000,000), for `rtrec report`.
    #[arg(long, requires = "json")]
    pub timeline: bool,

    /// Print "written SEQ" on stdout after each record stored, "queued SEQ" in ring mode (tests use it).
    #[arg(long, hide = true)]
    pub trace_written: bool,
}

/// `--timeline`'s most samples.
const TIMELINE_MAX: u64 = 1_000_000;

impl OutputArgs {
    /// Its part of the engine's configuration: with `--timeline`, room for
    /// each `write()`'s latency, allocated before recording (`count`: the
    /// records to offer, when known).
    pub fn apply(&self, cfg: &mut Config, count: Option<u64>) {
        if self.timeline {
            cfg.keep_write_samples = count.map_or(TIMELINE_MAX, |c| c.min(TIMELINE_MAX)) as usize;
        }
    }
}
