//! `record`'s output flags — what the recording shows and writes besides
//! its files: the live status file, the `--json` summary and its
//! timeline, the terminal's progress and summary, the histogram — and
//! their part of the engine's configuration ([`OutputArgs::apply`]).

use std::path::{Path, PathBuf};

use clap::Args;
use rtrec_engine::Config;

use crate::error::{usage, Result};

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
    ///
    /// # Errors
    /// A `--status` or `--json` file that could not be written: refused
    /// before anything is recorded (see [`check_writable`]).
    pub fn apply(&self, cfg: &mut Config, count: Option<u64>) -> Result<()> {
        if let Some(p) = &self.status {
            check_writable("--status", p)?;
        }
        if let Some(p) = self.json.as_deref().filter(|p| *p != Path::new("-")) {
            check_writable("--json", p)?;
        }
        if self.timeline {
            cfg.keep_write_samples = count.map_or(TIMELINE_MAX, |c| c.min(TIMELINE_MAX)) as usize;
        }
        Ok(())
    }
}

/// Refuses an output file that the recording could not write at its end
/// (or, for `--status`, while it runs): its directory missing, not a
/// directory or not writable, or the name a directory. Design choice:
/// checked before the recording starts, by creating and removing a hidden
/// probe file beside it, so a typo costs one sentence, not the summary of
/// a recording that already ran (the files are replaced atomically in
/// that directory, so it is the directory that must take a new file).
fn check_writable(flag: &str, path: &Path) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let shown = path.display();
    if path.is_dir() {
        return usage(format!(
            "{flag}: '{shown}' is a directory; give a file name"
        ));
    }
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return usage(format!("{flag}: '{}' is not a directory", dir.display())),
        Err(e) => {
            return usage(format!(
                "{flag}: cannot write '{shown}': its directory '{}': {e}",
                dir.display()
            ))
        }
    }
    let probe = dir.join(format!(".rtrec-probe-{}", std::process::id()));
    match rtrec_sys::create_new(&probe) {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(e) => usage(format!(
            "{flag}: cannot write '{shown}' in '{}': {e}",
            dir.display()
        )),
    }
}
