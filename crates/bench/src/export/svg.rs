//! `--plot`: an SVG with one row per case on a logarithmic µs axis — a
//! line from min to max, markers at p50, p99.9 and max, and the published
//! maximum beside them — because a person would rather look at that than
//! read a table.

use plotters::coord::ranged1d::{SegmentValue, SegmentedCoord};
use plotters::coord::types::RangedCoordi32;
use plotters::prelude::*;

use crate::report::{BenchReport, CaseResult};

use super::chart::{legend, SvgChart};
use super::exporter::Exporter;

/// Draws the per-case latency rows.
pub struct SvgExporter;

const ROW_PX: u32 = 30;
/// Empty rows above the first case, where the legend goes.
const LEGEND_ROWS: i32 = 3;

impl Exporter for SvgExporter {
    fn serialize(&self, report: &BenchReport) -> anyhow::Result<Vec<u8>> {
        Ok(render(report)
            .map_err(|e| anyhow::anyhow!("drawing the plot: {e}"))?
            .into_bytes())
    }
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1e3
}

/// An axis value (µs) as every duration prints: `100 ns`, `10 µs`, `1 ms`.
fn axis_label(v: f64) -> String {
    rtrec_units::format_duration((v * 1e3).round() as u64)
}

/// The chart of `--plot`: a log µs axis across, one segment per row down.
type Rows<'a, 'b> = SvgChart<'a, 'b, Cartesian2d<LogCoord<f64>, SegmentedCoord<RangedCoordi32>>>;

fn render(report: &BenchReport) -> Result<String, Box<dyn std::error::Error>> {
    let cases: Vec<&CaseResult> = report
        .cases
        .iter()
        .filter(|c| c.write_ns.is_some())
        .collect();
    let n = cases.len().max(1) as i32;
    let (lo, hi) = decades(&cases);
    let mut svg = String::new();
    {
        let height = 100 + ROW_PX * (n + LEGEND_ROWS) as u32;
        let root = SVGBackend::with_string(&mut svg, (1100, height)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "rtrec bench: latency of the timed call per case",
                ("sans-serif", 18),
            )
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(200)
            .build_cartesian_2d(
                (lo..hi).log_scale(),
                (0..n + LEGEND_ROWS - 1).into_segmented(),
            )?;
        draw_mesh(&mut chart, &cases)?;
        draw_rows(&mut chart, &cases)?;
        legend(&mut chart, SeriesLabelPosition::UpperRight)?;
        root.present()?;
    }
    Ok(svg)
}

/// The µs axis's range: whole decades around every case's min and max
/// and its published maximum.
fn decades(cases: &[&CaseResult]) -> (f64, f64) {
    let mut lo = f64::MAX;
    let mut hi: f64 = 10.0;
    for c in cases {
        let w = c.write_ns.expect("filtered");
        lo = lo.min(us(w.min.max(1)));
        hi = hi.max(us(w.max));
        if let Some(m) = c.published.as_ref().and_then(|p| p.max_us) {
            hi = hi.max(m as f64);
        }
    }
    if lo == f64::MAX {
        lo = 0.1;
    }
    (
        10f64.powf(lo.log10().floor()),
        10f64.powf(hi.log10().ceil()),
    )
}

/// Row `i`'s segment: the first case at the top.
fn row(cases: &[&CaseResult], i: usize) -> SegmentValue<i32> {
    SegmentValue::CenterOf(cases.len().max(1) as i32 - 1 - i as i32)
}

/// The grid, the case names down the left, the duration labels across.
fn draw_mesh(
    chart: &mut Rows<'_, '_>,
    cases: &[&CaseResult],
) -> Result<(), Box<dyn std::error::Error>> {
    let n = cases.len().max(1) as i32;
    let names: Vec<String> = cases.iter().map(|c| c.name.clone()).collect();
    chart
        .configure_mesh()
        .y_labels((n + LEGEND_ROWS) as usize)
        .y_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) if *i < n => names
                .get((n - 1 - *i) as usize)
                .cloned()
                .unwrap_or_default(),
            _ => String::new(),
        })
        .x_desc("latency (log scale)")
        .x_label_formatter(&|v| axis_label(*v))
        .draw()?;
    Ok(())
}

/// Each case's row: a grey line from min to max, then its markers (p50,
/// p99.9, max, the published max), each series named in the legend.
fn draw_rows(
    chart: &mut Rows<'_, '_>,
    cases: &[&CaseResult],
) -> Result<(), Box<dyn std::error::Error>> {
    let row = |i: usize| row(cases, i);
    let grey = RGBColor(150, 150, 150);
    chart.draw_series(cases.iter().enumerate().map(|(i, c)| {
        let w = c.write_ns.expect("filtered");
        PathElement::new(
            vec![(us(w.min.max(1)), row(i)), (us(w.max), row(i))],
            grey.stroke_width(2),
        )
    }))?;
    chart
        .draw_series(
            cases
                .iter()
                .enumerate()
                .map(|(i, c)| Circle::new((us(c.write_ns.unwrap().p50), row(i)), 4, BLUE.filled())),
        )?
        .label("p50")
        .legend(|(x, y)| Circle::new((x, y), 4, BLUE.filled()));
    chart
        .draw_series(cases.iter().enumerate().map(|(i, c)| {
            TriangleMarker::new((us(c.write_ns.unwrap().p999), row(i)), 6, GREEN.filled())
        }))?
        .label("p99.9")
        .legend(|(x, y)| TriangleMarker::new((x, y), 6, GREEN.filled()));
    chart
        .draw_series(cases.iter().enumerate().map(|(i, c)| {
            Cross::new(
                (us(c.write_ns.unwrap().max), row(i)),
                6,
                BLACK.stroke_width(2),
            )
        }))?
        .label("max (measured here)")
        .legend(|(x, y)| Cross::new((x, y), 6, BLACK.stroke_width(2)));
    chart
        .draw_series(cases.iter().enumerate().filter_map(|(i, c)| {
            let m = c.published.as_ref()?.max_us?;
            Some(Circle::new((m as f64, row(i)), 6, RED.stroke_width(2)))
        }))?
        .label("max published (1 GHz ARM, eMMC)")
        .legend(|(x, y)| Circle::new((x, y), 6, RED.stroke_width(2)));
    Ok(())
}
