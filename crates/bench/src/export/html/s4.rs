//! S4's section: the share-against-request-size plot (the one `--plot`
//! draws beside the latency plot), the matrix with the published finding
//! beside each cell, and the recording under interference.
//!
//! Design choices:
//! - The share plot is the one hand-drawn exception: it is the drawing
//!   `--plot` writes beside the latency plot ([`crate::export::s4_plot`],
//!   through its exporter), inlined, so the two can never disagree.
//! - S4's published figures are findings, not numbers, so each cell gets
//!   the finding that applies to it ([`s4_published`]).

use std::fmt::Write as _;

use rtrec_engine::LatencySummary;
use rtrec_units::format_mb_per_s;

use crate::export::exporter::Exporter;
use crate::export::s4_plot::S4PlotExporter;
use crate::report::BenchReport;
use crate::s4::{IsolatedCase, S4Cell, S4Result};

use super::markup::{dur, esc, failed_cell};

/// What the BFQ study published for a 2:1 cell like `c` (docs/studies.md,
/// S4's findings): the share holds for small requests and breaks down past
/// BFQ's budget (about 35–50 MB); `strict_guarantees` restores it at a
/// cost in throughput; buffered writes escape the weights. Schedulers
/// without weights promise no share.
pub fn s4_published(c: &S4Cell) -> &'static str {
    let mb = c.request_bytes >> 20;
    match c.scheduler.as_str() {
        "bfq" | "bfq-strict" if !c.direct && c.direction == "write" => {
            "escapes the weights (writeback by kernel threads)"
        }
        "bfq-strict" => "holds, at a cost in throughput",
        "bfq" if mb < 35 => "holds",
        "bfq" if mb <= 50 => "breaks down around here (BFQ's budget)",
        "bfq" => "breaks down (past BFQ's budget)",
        _ => "no weights",
    }
}

/// S4: the share-against-request-size plot (the one `--plot` draws beside
/// the latency plot), the matrix with the published finding beside each
/// cell, and the recording under interference.
pub fn s4_section(r: &BenchReport, s4: &S4Result) -> String {
    let mut b = format!(
        "<h2>S4: BFQ weights and I/O isolation</h2><p>Device {} ({}), {} s per cell. Published (the BFQ study, Linux 5.10, eMMC): the 2:1 share holds for small requests and breaks down once requests exceed BFQ's budget (around 35–50 MB); <code>strict_guarantees</code> restores it at a cost in throughput; buffered writes escape the weights, because writeback is issued by kernel threads.</p>",
        esc(&s4.device),
        esc(&s4.cgroup_interface),
        s4.cell_s
    );
    b.push_str(&share_plot(r));
    b.push_str(&matrix(&s4.cells));
    if !s4.isolated.is_empty() {
        b.push_str(&isolated(&s4.isolated));
    }
    b
}

/// The share plot `--plot` writes, inlined with its caption (or why it
/// could not be drawn).
fn share_plot(r: &BenchReport) -> String {
    match S4PlotExporter.serialize(r) {
        Ok(svg) => {
            let svg =
                String::from_utf8_lossy(&svg).replacen("<svg ", r#"<svg class="plot s4share" "#, 1);
            svg + r#"<p class="cap">The heavier job's share of the throughput against the request size, one line per scheduler (2:1 cells); red: its weight share, the target.</p>"#
        }
        Err(e) => format!(r#"<p class="fail">{}</p>"#, esc(&format!("{e:#}"))),
    }
}

/// Figures of a cell joined as S4 prints them: `200:100`.
fn joined(v: Vec<String>) -> String {
    v.join(":")
}

/// The matrix: one row per cell, the published finding beside it, then
/// the BFQ tunables in force.
fn matrix(cells: &[S4Cell]) -> String {
    let mut b = String::from(
        r#"<table><tr><th class="l">scheduler</th><th class="l">mode</th><th class="l">dir</th><th>request</th><th>weights</th><th>share %</th><th>target %</th><th class="l">published</th><th>total</th><th>device bytes per group</th></tr>"#,
    );
    for c in cells {
        let _ = write!(
            b,
            r#"<tr><td class="l">{}</td><td class="l">{}</td><td class="l">{}</td><td>{}</td><td>{}</td>"#,
            esc(&c.scheduler),
            if c.direct { "direct" } else { "buffered" },
            esc(&c.direction),
            rtrec_units::format_size(c.request_bytes),
            joined(c.weights.iter().map(u32::to_string).collect())
        );
        let pct = |v: &[f64]| joined(v.iter().map(|p| format!("{p:.0}")).collect());
        let cells = failed_cell(c.error.as_deref(), 5).unwrap_or_else(|| {
            format!(
                r#"<td>{}</td><td>{}</td><td class="l">{}</td><td>{}</td><td>{}</td>"#,
                pct(&c.share_pct),
                pct(&c.target_pct),
                s4_published(c),
                format_mb_per_s(c.job_bytes_per_s.iter().sum()),
                joined(
                    c.cgroup_device_bytes
                        .iter()
                        .map(|b| b.map_or("–".into(), |b| format!("{} MB", b / 1_000_000)))
                        .collect()
                )
            )
        });
        let _ = write!(b, "{cells}</tr>");
    }
    b.push_str("</table>");
    if let Some(c) = cells.iter().find(|c| !c.bfq_tunables.is_empty()) {
        let _ = write!(
            b,
            r#"<p class="cap">BFQ tunables in force: {}</p>"#,
            esc(&c.bfq_tunables.join(" "))
        );
    }
    b
}

/// The recording against a direct and a buffered writer, one row per
/// case.
fn isolated(cases: &[IsolatedCase]) -> String {
    let mut b = String::from(
        r#"<h3>The recording (16 KiB every 5 ms) against a direct and a buffered 100 MB writer</h3><table><tr><th class="l">case</th><th class="l">scheduler</th><th>class</th><th>weight</th><th>write max</th><th>record max</th><th>late max</th><th>missed</th><th>dropped</th><th>interferers</th></tr>"#,
    );
    for c in cases {
        let m = |l: Option<LatencySummary>| l.map_or("–".into(), |s| dur(s.max));
        let _ = write!(
            b,
            r#"<tr><td class="l">{}</td><td class="l">{}</td><td>{}</td><td>{}</td>"#,
            esc(&c.name),
            esc(&c.scheduler),
            esc(c.io_class.as_deref().unwrap_or("–")),
            c.io_weight.map_or("–".into(), |w| w.to_string())
        );
        let cells = failed_cell(c.error.as_deref(), 6).unwrap_or_else(|| {
            format!(
                "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
                m(c.write_ns),
                m(c.record_ns),
                m(c.lateness_ns),
                c.missed_periods,
                c.records_dropped,
                format_mb_per_s(c.interferers_bytes_per_s)
            )
        });
        let _ = write!(b, "{cells}</tr>");
    }
    b.push_str("</table>");
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(sched: &str, direct: bool, dir: &str, mb: u64) -> S4Cell {
        S4Cell {
            scheduler: sched.into(),
            bfq_tunables: vec![],
            direction: dir.into(),
            direct,
            request_bytes: mb << 20,
            weights: vec![200, 100],
            job_bytes_per_s: vec![],
            share_pct: vec![],
            target_pct: vec![],
            cgroup_device_bytes: vec![],
            error: None,
            weights_applied: true,
        }
    }

    #[test]
    fn each_s4_cell_gets_the_published_finding_that_applies_to_it() {
        assert_eq!(s4_published(&cell("bfq", true, "read", 4)), "holds");
        assert!(s4_published(&cell("bfq", true, "read", 35)).contains("around here"));
        assert!(s4_published(&cell("bfq", true, "write", 100)).starts_with("breaks down"));
        assert!(s4_published(&cell("bfq-strict", true, "read", 100)).starts_with("holds"));
        assert!(s4_published(&cell("bfq", false, "write", 1)).starts_with("escapes"));
        assert_eq!(
            s4_published(&cell("mq-deadline", true, "read", 1)),
            "no weights"
        );
    }
}
