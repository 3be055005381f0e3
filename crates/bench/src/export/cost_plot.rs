//! `--plot` for `--study cost`: for every back-end and record size, the
//! recorder's CPU per MiB over the floor's (the study's ratio), one point
//! per run, with the floor (1.0) across the plot and each record size's
//! goal as a line over that size's columns, on one SVG.
//!
//! Design choice: the vertical axis is the ratio, not ns/MiB, so the
//! sizes, whose costs differ by orders of magnitude, share one scale, and
//! each goal is one line; the columns are the table's cells, grouped by
//! record size as the goals are.

use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use super::chart::{legend, reference_line, SvgChart};
use crate::cost::{Cell, CostReport};

/// The report's plot as an SVG document.
///
/// # Errors
/// plotters' drawing errors (none expected on an in-memory SVG).
pub fn render(r: &CostReport) -> Result<String, Box<dyn std::error::Error>> {
    let columns: Vec<&Cell> = r
        .runs
        .first()
        .map_or(Vec::new(), |x| x.cells.iter().collect());
    let n = columns.len().max(1) as f64;
    let top = r
        .runs
        .iter()
        .flat_map(|x| x.cells.iter())
        .flat_map(|c| [c.ratio, c.goal])
        .fold(1.0, f64::max)
        * 1.3;
    let mut svg = String::new();
    {
        let width = (160 + 70 * columns.len()).max(800) as u32;
        let root = SVGBackend::with_string(&mut svg, (width, 600)).into_drawing_area();
        root.fill(&WHITE)?;
        let title = format!(
            "rtrec bench cost on {}: the recorder's CPU per MiB ÷ the floor's (fio + memcpy + CRC32C)",
            r.device_profile
        );
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 17))
            .margin(15)
            .x_label_area_size(20)
            .y_label_area_size(60)
            .build_cartesian_2d(-0.5..n - 0.5, 0.0..top)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .y_desc("CPU per MiB ÷ the floor's")
            .y_label_formatter(&|v| format!("{v:.1}"))
            .draw()?;
        reference_line(
            &mut chart,
            (-0.5, n - 0.5),
            1.0,
            (BLACK.mix(0.5), 1),
            "the floor",
        )?;
        for (size, from, to) in groups(&columns) {
            let goal = crate::cost::goal(size);
            reference_line(
                &mut chart,
                (from as f64 - 0.45, to as f64 - 0.55),
                goal,
                (RGBColor(230, 130, 20), 2),
                format!("goal at {}: {goal}x", rtrec_units::format_size(size)),
            )?;
        }
        draw_points(&mut chart, r, &columns, top)?;
        legend(&mut chart, SeriesLabelPosition::UpperRight)?;
        root.present()?;
    }
    Ok(svg)
}

/// Every run's ratio of each column (a blue dot), and the columns'
/// labels: the back-end over the record size.
fn draw_points(
    chart: &mut SvgChart<'_, '_, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    r: &CostReport,
    columns: &[&Cell],
    top: f64,
) -> Result<(), Box<dyn std::error::Error>> {
    let blue = RGBColor(31, 119, 180);
    let points: Vec<(f64, f64)> = columns
        .iter()
        .enumerate()
        .flat_map(|(i, c)| {
            r.runs.iter().filter_map(move |x| {
                x.cells
                    .iter()
                    .find(|y| y.io == c.io && y.record_bytes == c.record_bytes)
                    .map(|y| (i as f64, y.ratio))
            })
        })
        .collect();
    chart
        .draw_series(points.iter().map(|&p| Circle::new(p, 5, blue.filled())))?
        .label("recorder: total CPU per MiB ÷ the floor's (each run)")
        .legend(move |(x, y)| Circle::new((x + 8, y), 5, blue.filled()));
    chart.draw_series(columns.iter().enumerate().flat_map(|(i, c)| {
        [
            (c.io.name().to_string(), top * 0.06),
            (rtrec_units::format_size(c.record_bytes), top * 0.03),
        ]
        .into_iter()
        .map(move |(text, y)| Text::new(text, (i as f64 - 0.4, y), ("sans-serif", 11)))
    }))?;
    Ok(())
}

/// The columns' record sizes as runs of neighbours: (size, first column,
/// one past the last).
fn groups(columns: &[&Cell]) -> Vec<(u64, usize, usize)> {
    let mut out: Vec<(u64, usize, usize)> = Vec::new();
    for (i, c) in columns.iter().enumerate() {
        match out.last_mut() {
            Some(g) if g.0 == c.record_bytes => g.2 = i + 1,
            _ => out.push((c.record_bytes, i, i + 1)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::Run;
    use rtrec_engine::Io;

    fn cell(io: Io, record_bytes: u64, ratio: f64) -> Cell {
        Cell::for_test(io, record_bytes, ratio, 1.0)
    }

    #[test]
    fn the_plot_names_every_cell_and_each_sizes_goal() {
        let run = Run {
            device_bytes_per_s: None,
            rate_bytes_per_s: 1.0,
            cells: vec![
                cell(Io::Buffered, 64, 5.0),
                cell(Io::Direct, 64, 2.0),
                cell(Io::Uring, 1 << 20, 1.2),
            ],
        };
        assert_eq!(
            groups(&run.cells.iter().collect::<Vec<_>>()),
            [(64, 0, 2), (1 << 20, 2, 3)]
        );
        let r = CostReport {
            study: "cost".into(),
            device_profile: "native".into(),
            bytes_per_cell: 1 << 20,
            rt: Default::default(),
            cpus: 2,
            skipped: Vec::new(),
            spread: crate::cost::spread(std::slice::from_ref(&run)),
            runs: vec![run],
        };
        let svg = render(&r).unwrap();
        for t in [
            "goal at 64 B: 4x",
            "goal at 1 MiB: 1.5x",
            "\nbuffered\n",
            "\nuring\n",
        ] {
            assert!(svg.contains(t), "{t}");
        }
    }
}
