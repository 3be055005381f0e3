//! Exports of the results, each behind one small trait: `--json` (the
//! schema of [`crate::report`]), `--plot` (an SVG of the latency
//! distribution of every case), `--html` (a self-contained page with box
//! plots, histograms and latency over time), `--export-csv` and
//! `--export-markdown` (one row per case, as hyperfine exports). Every export is written again after every
//! case, atomically (temporary file, then rename), so a late failure loses
//! nothing. A target `-` is standard output, written once, at the end.
//!
//! The [`Exporter`] trait sits in a module of its own, below this one and
//! every format, so a format (or the HTML page embedding another format's
//! plot) never imports this module back. The plotters drawings
//! (`svg`, `s4_plot`, `throughput_plot`, `cost_plot`) draw their legend box and
//! reference lines through `chart`, one definition each.

mod chart;
pub mod cost_plot;
mod csv;
mod exporter;
pub mod html;
mod json;
pub mod s4_plot;
mod svg;
pub mod throughput_plot;

use std::path::{Path, PathBuf};

use anyhow::Context;

pub use csv::{CsvExporter, MarkdownExporter, CSV_HEADER};
pub use exporter::Exporter;
pub use html::HtmlExporter;
pub use json::JsonExporter;
pub use svg::SvgExporter;

use crate::report::BenchReport;

/// The exports asked for, with their files.
#[derive(Default)]
pub struct Exports {
    targets: Vec<(Box<dyn Exporter>, PathBuf)>,
}

/// The target that means standard output.
pub const STDOUT: &str = "-";

impl Exports {
    /// Whether an export goes to standard output (so tables must not).
    pub fn uses_stdout(&self) -> bool {
        self.targets.iter().any(|(_, p)| p.as_os_str() == STDOUT)
    }

    /// Adds an export to `path`.
    pub fn add(&mut self, exporter: Box<dyn Exporter>, path: PathBuf) {
        self.targets.push((exporter, path));
    }

    /// Writes every export.
    ///
    /// # Errors
    /// One could not be rendered or written (the others still are).
    pub fn write_all(&self, report: &BenchReport) -> anyhow::Result<()> {
        let mut first = None;
        for (e, path) in &self.targets {
            // Stdout cannot be replaced: only the final report goes there.
            if path.as_os_str() == STDOUT && !(report.complete || report.interrupted) {
                continue;
            }
            let r = e
                .serialize(report)
                .and_then(|bytes| write_target(path, &bytes));
            if let Err(err) = r {
                first.get_or_insert(err.context(format!("writing '{}'", path.display())));
            }
        }
        first.map_or(Ok(()), Err)
    }
}

/// Writes `bytes` to an export target: standard output for [`STDOUT`],
/// else the file, replaced atomically (a temporary file renamed over the name). The one place
/// a bench result reaches its target, for every format and study.
///
/// # Errors
/// Standard output or the file could not be written.
pub fn write_target(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    if path.as_os_str() == STDOUT {
        std::io::Write::write_all(&mut std::io::stdout().lock(), bytes).context("writing to stdout")
    } else {
        write_atomic(path, bytes)
    }
}

/// Replaces `path` with `bytes` durably and atomically (see
/// [`rtrec_sys::replace_atomic`]): a reader, or a crash, sees the previous
/// export or the new one, never half of one.
fn write_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    rtrec_sys::write_atomic(path, bytes, 0o644)
        .with_context(|| format!("replacing '{}'", path.display()))
}
