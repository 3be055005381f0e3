//! `--plot` for S4: the heavier job's share of the throughput against the
//! request size, one line per scheduler, its weight share drawn as the
//! target line — one panel each for direct reads, direct writes, buffered
//! reads and buffered writes (the 2:1 cells; the 1:4:5 cells have three
//! shares and are in the table and JSON).
//!
//! Design choice: written beside the latency plot as `<FILE>-s4.svg` (the
//! latency plot keeps its one meaning), through the same [`Exporter`]
//! trait, so it is rewritten after every case like every export.

use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;

use super::chart::{legend, line_key, reference_line};
use super::exporter::Exporter;
use crate::report::BenchReport;
use crate::s4::{S4Cell, SCHEDS};

/// Draws S4's throughput shares.
pub struct S4PlotExporter;

/// Where the S4 plot of `--plot FILE` goes: `FILE` without its extension,
/// then `-s4.svg`.
pub fn path_beside(plot: &Path) -> PathBuf {
    let stem = plot.file_stem().unwrap_or_default().to_string_lossy();
    plot.with_file_name(format!("{stem}-s4.svg"))
}

impl Exporter for S4PlotExporter {
    fn serialize(&self, report: &BenchReport) -> anyhow::Result<Vec<u8>> {
        let cells: &[S4Cell] = report.s4.as_ref().map_or(&[], |s| &s.cells);
        Ok(render(cells)
            .map_err(|e| anyhow::anyhow!("drawing the S4 plot: {e}"))?
            .into_bytes())
    }
}

const COLORS: [RGBColor; 4] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
];

fn mib(b: u64) -> f64 {
    b as f64 / f64::from(1 << 20)
}

/// The four panels: which cells each shows, and its title.
const PANELS: [(bool, &str, &str); 4] = [
    (true, "read", "direct reads"),
    (true, "write", "direct writes"),
    (false, "read", "buffered reads"),
    (false, "write", "buffered writes"),
];

fn render(cells: &[S4Cell]) -> Result<String, Box<dyn std::error::Error>> {
    let two: Vec<&S4Cell> = cells
        .iter()
        .filter(|c| c.weights.len() == 2 && c.error.is_none() && c.share_pct.len() == 2)
        .collect();
    let sizes = request_range(&two);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1100, 800)).into_drawing_area();
        root.fill(&WHITE)?;
        let root = root.titled(
            "rtrec bench S4: the heavier job's share of the throughput (weights 2:1)",
            ("sans-serif", 18),
        )?;
        let panels = root.split_evenly((2, 2));
        for (area, (direct, dir, title)) in panels.iter().zip(PANELS) {
            let mine: Vec<&S4Cell> = two
                .iter()
                .copied()
                .filter(|c| c.direct == direct && c.direction == dir)
                .collect();
            panel(area, title, &mine, sizes)?;
        }
        root.present()?;
    }
    Ok(svg)
}

/// The request sizes' range, MiB, shared by the four panels (a made-up
/// one around what there is when there is no range).
fn request_range(two: &[&S4Cell]) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::MAX, 1.0f64);
    for c in two {
        lo = lo.min(mib(c.request_bytes));
        hi = hi.max(mib(c.request_bytes));
    }
    if lo == f64::MAX || lo >= hi {
        lo = lo.min(hi) / 2.0;
        hi *= 2.0;
    }
    (lo, hi)
}

/// One panel: the target line, then the share against the request size,
/// one line per scheduler.
fn panel(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    title: &str,
    mine: &[&S4Cell],
    (lo, hi): (f64, f64),
) -> Result<(), Box<dyn std::error::Error>> {
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 15))
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(45)
        .build_cartesian_2d((lo..hi).log_scale(), 0.0..100.0)?;
    chart
        .configure_mesh()
        .x_labels(6)
        .x_label_formatter(&|v| format!("{v:.0}"))
        .y_label_formatter(&|v| format!("{v:.0}"))
        .x_desc("request size, MiB (log scale)")
        .y_desc("share, %")
        .draw()?;
    if let Some(target) = mine.first().map(|c| c.target_pct[0]) {
        reference_line(
            &mut chart,
            (lo, hi),
            target,
            (RED, 2),
            format!("weight share {target:.0} % (target)"),
        )?;
    }
    for (s, color) in SCHEDS.iter().zip(COLORS) {
        let mut pts: Vec<(f64, f64)> = mine
            .iter()
            .filter(|c| c.scheduler == s.label)
            .map(|c| (mib(c.request_bytes), c.share_pct[0]))
            .collect();
        if pts.is_empty() {
            continue;
        }
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        chart
            .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))?
            .label(s.label)
            .legend(line_key(color));
        chart.draw_series(pts.into_iter().map(|p| Circle::new(p, 3, color.filled())))?;
    }
    legend(&mut chart, SeriesLabelPosition::LowerLeft)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(sched: &str, direct: bool, dir: &str, mib: u64, share: f64) -> S4Cell {
        S4Cell {
            scheduler: sched.into(),
            bfq_tunables: vec![],
            direction: dir.into(),
            direct,
            request_bytes: mib << 20,
            weights: vec![200, 100],
            job_bytes_per_s: vec![share, 100.0 - share],
            share_pct: vec![share, 100.0 - share],
            target_pct: vec![66.7, 33.3],
            cgroup_device_bytes: vec![None, None],
            error: None,
            weights_applied: true,
        }
    }

    #[test]
    fn the_s4_plot_names_every_scheduler_panel_and_the_target() {
        let cells: Vec<S4Cell> = SCHEDS
            .iter()
            .flat_map(|s| {
                [1, 35, 100].into_iter().flat_map(move |m| {
                    [
                        cell(s.label, true, "read", m, 60.0),
                        cell(s.label, false, "write", m, 50.0),
                    ]
                })
            })
            .collect();
        let svg = render(&cells).unwrap();
        assert!(svg.starts_with("<svg"));
        for s in SCHEDS {
            assert!(
                svg.contains(&format!("\n{}\n</text>", s.label)),
                "{}",
                s.label
            );
        }
        for t in [
            "direct reads",
            "buffered writes",
            "weight share 67 % (target)",
        ] {
            assert!(svg.contains(t), "{t}");
        }
        // No S4 run yet: still a valid, empty plot.
        assert!(render(&[]).unwrap().starts_with("<svg"));
        assert_eq!(
            path_beside(Path::new("out/bench.svg")),
            Path::new("out/bench-s4.svg")
        );
    }
}
