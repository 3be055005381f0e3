//! `--html` and `rtrec report`: one self-contained HTML file — inline CSS
//! and inline SVG, no script, no font, no network — that shows a bench
//! result the way a person would rather look at it: the environment, the
//! table with the published figure beside the measured one, box plots per
//! case in the style of S1's Fig. 4 (measured and published), log-scale
//! latency histograms, latency over time with flushes and background loads
//! marked, the spread across sets and, with `--explain`, the attribution
//! tables; then S3's and S4's sections when the result has them
//! ([`s3_section`], [`s4_section`]). [`render_summary`] does the same for
//! `rtrec record --json`, read as its type
//! (`rtrec_engine::result::RecordResult`).
//!
//! One module per part of the page, each below this one, which only joins
//! them: `markup` (the shell, escaping, shared cells) and `axis` (the log
//! axis) under the plots `box_plot`, `distribution` (histogram, spread)
//! and `timeline`; the sections `cases` (the environment, results and each
//! case), `s3` and `s4`; and `recording` (the page of a recording). Each
//! module's doc names its own design choices.
//!
//! Design choice: SVG is written by hand rather than through a plotting
//! crate: the shapes are few (lines, rectangles, text), and each element
//! carries a class (`box`, `bar`, `point`, `whisker`) that the browser test
//! counts. The one exception is S4's share plot (see [`s4_section`]).

mod axis;
mod box_plot;
mod cases;
mod distribution;
mod markup;
mod recording;
mod s3;
mod s4;
mod timeline;

use crate::report::BenchReport;

use super::exporter::Exporter;

pub use box_plot::{box_plot, box_plot_against, box_plot_svg, BoxRow};
pub use distribution::{histogram, spread};
pub use markup::esc;
pub use recording::render_summary;
pub use s3::s3_section;
pub use s4::{s4_published, s4_section};
pub use timeline::{timeline, timeline_of, MAX_POINTS};

/// Writes [`BenchReport`] as one self-contained HTML page.
pub struct HtmlExporter;

impl Exporter for HtmlExporter {
    fn serialize(&self, report: &BenchReport) -> anyhow::Result<Vec<u8>> {
        Ok(render(report).into_bytes())
    }
}

/// The whole page for a bench report.
pub fn render(r: &BenchReport) -> String {
    let mut b = cases::heading(r);
    b.push_str(&cases::environment(r));
    b.push_str(&cases::results(r));
    b.push_str(&cases::plots(r));
    if let Some(s3) = &r.s3 {
        b.push_str(&s3_section(s3));
    }
    if let Some(s4) = &r.s4 {
        b.push_str(&s4_section(r, s4));
    }
    markup::page("rtrec bench report", &b)
}
