//! `--plot` for `--study throughput` (and `--combine`): for every device,
//! back-end and record size, the rate the recorder held (k of k probes) as
//! a fraction of the device's sequential write bandwidth, one point per
//! run, beside fio's job with the same back-end and block size on the same
//! scale, with the device (1.0) and the study's target
//! ([`TARGET_OF_DEVICE`]) as lines, on one SVG.
//!
//! Design choice: the vertical axis is the fraction of the device, not
//! bytes/s, so a 1 GiB/s disk and an 8 MiB/s card share one plot and the
//! target is one line; each column is one cell of the study's table,
//! labelled with its back-end and size, grouped and named by device (with
//! its bandwidth). Every run is drawn, so the spread of `--repeat` is seen.

use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use super::chart::{legend, reference_line, SvgChart};
use crate::throughput::{range, Row, ThroughputReport, TARGET_OF_DEVICE};

/// The plot's chart: columns across (one per cell), the fraction of the
/// device up.
type Columns<'a, 'b> = SvgChart<'a, 'b, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// One column: the report (device) it belongs to, and the cell's row in
/// that report's first run.
type Column<'r> = (usize, &'r Row);

/// The reports' plot as an SVG document.
///
/// # Errors
/// plotters' drawing errors (none expected on an in-memory SVG).
pub fn render(reports: &[ThroughputReport]) -> Result<String, Box<dyn std::error::Error>> {
    let columns = columns(reports);
    let n = columns.len().max(1) as f64;
    let top = columns
        .iter()
        .flat_map(|&column| runs_of(reports, column))
        .flat_map(|(f, fio)| [f, fio.unwrap_or(0.0)])
        .fold(1.0, f64::max)
        * 1.55;
    let mut svg = String::new();
    {
        let width = (160 + 95 * columns.len()).max(800) as u32;
        let root = SVGBackend::with_string(&mut svg, (width, 600)).into_drawing_area();
        root.fill(&WHITE)?;
        let k = reports.first().map_or(0, |r| r.confirmations);
        let title = format!(
            "rtrec bench throughput: rate held {k} of {k} (0 drops) ÷ the device's sequential write bandwidth"
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
            .y_desc("fraction of the device")
            .y_label_formatter(&|v| format!("{v:.1}"))
            .draw()?;
        let across = (-0.5, n - 0.5);
        reference_line(
            &mut chart,
            across,
            1.0,
            (BLACK.mix(0.5), 1),
            "device: the best of fio's 1 MiB sequential jobs",
        )?;
        reference_line(
            &mut chart,
            across,
            TARGET_OF_DEVICE,
            (RGBColor(230, 130, 20), 1),
            format!("target: {:.0} % of the device", TARGET_OF_DEVICE * 100.0),
        )?;
        draw_points(&mut chart, reports, &columns)?;
        draw_labels(&mut chart, reports, &columns, top)?;
        legend(&mut chart, SeriesLabelPosition::UpperRight)?;
        root.present()?;
    }
    Ok(svg)
}

/// One column per cell of each report (its first run's rows, in order).
fn columns(reports: &[ThroughputReport]) -> Vec<Column<'_>> {
    reports
        .iter()
        .enumerate()
        .flat_map(|(d, r)| {
            r.runs
                .first()
                .into_iter()
                .flat_map(move |run| run.rows.iter().map(move |row| (d, row)))
        })
        .collect()
}

/// The column's cell in each run of its report: the recorder's fraction
/// of the device, and fio's when it ran.
fn runs_of(reports: &[ThroughputReport], (d, cell): Column<'_>) -> Vec<(f64, Option<f64>)> {
    reports[d]
        .runs
        .iter()
        .filter_map(|run| {
            let row = run
                .rows
                .iter()
                .find(|x| x.io == cell.io && x.record_bytes == cell.record_bytes)?;
            let fio = row
                .fio_bytes_per_s
                .filter(|_| run.device_bytes_per_s > 0.0)
                .map(|b| b / run.device_bytes_per_s);
            Some((row.fraction_of_device, fio))
        })
        .collect()
}

/// Every run's points: fio's (a red triangle, right of the column's
/// centre) and the recorder's (a blue dot, left of it).
fn draw_points(
    chart: &mut Columns<'_, '_>,
    reports: &[ThroughputReport],
    columns: &[Column<'_>],
) -> Result<(), Box<dyn std::error::Error>> {
    let fio = points(reports, columns, 0.15, |(_, fio)| fio);
    chart
        .draw_series(fio.iter().map(|&p| TriangleMarker::new(p, 6, RED.filled())))?
        .label("fio, same back-end and block size (each run)")
        .legend(|(x, y)| TriangleMarker::new((x + 8, y), 5, RED.filled()));
    let blue = RGBColor(31, 119, 180);
    let held = points(reports, columns, -0.1, |(f, _)| Some(f));
    chart
        .draw_series(held.iter().map(|&p| Circle::new(p, 5, blue.filled())))?
        .label("recorder: highest rate held, 0 drops (each run)")
        .legend(move |(x, y)| Circle::new((x + 8, y), 5, blue.filled()));
    Ok(())
}

/// One point per run of each column, `dx` off the column's centre, at the
/// height `y` picks from the run's (recorder, fio) fractions (none: no point).
fn points(
    reports: &[ThroughputReport],
    columns: &[Column<'_>],
    dx: f64,
    y: impl Fn((f64, Option<f64>)) -> Option<f64> + Copy,
) -> Vec<(f64, f64)> {
    columns
        .iter()
        .enumerate()
        .flat_map(|(i, &column)| {
            runs_of(reports, column)
                .into_iter()
                .filter_map(move |run| y(run).map(|f| (i as f64 + dx, f)))
        })
        .collect()
}

/// Column labels, and each device's name and bandwidth over its group,
/// with a separator before every group but the first. The back-end over
/// the record size, two lines, so long names fit.
fn draw_labels(
    chart: &mut Columns<'_, '_>,
    reports: &[ThroughputReport],
    columns: &[Column<'_>],
    top: f64,
) -> Result<(), Box<dyn std::error::Error>> {
    chart.draw_series(columns.iter().enumerate().flat_map(|(i, &(_, row))| {
        [
            (row.io.name().to_string(), top * 0.06),
            (rtrec_units::format_size(row.record_bytes), top * 0.03),
        ]
        .into_iter()
        .map(move |(text, y)| Text::new(text, (i as f64 - 0.4, y), ("sans-serif", 11)))
    }))?;
    let mut first = 0usize;
    for (d, r) in reports.iter().enumerate() {
        let len = columns.iter().filter(|&&(x, _)| x == d).count();
        let devices: Vec<f64> = r.runs.iter().map(|x| x.device_bytes_per_s).collect();
        let bw = range(&devices, |b| rtrec_units::format_size_per_s(b as u64));
        chart.draw_series(std::iter::once(Text::new(
            format!("{}: {bw}, {} run(s)", r.label(), r.runs.len()),
            (first as f64 - 0.45, top * 0.72),
            ("sans-serif", 13),
        )))?;
        if first > 0 {
            let x = first as f64 - 0.5;
            chart.draw_series(std::iter::once(PathElement::new(
                vec![(x, 0.0), (x, top)],
                BLACK.mix(0.3).stroke_width(1),
            )))?;
        }
        first += len;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::producer::RtReport;
    use crate::throughput::{HoldRule, Run};
    use rtrec_engine::Io;

    fn row(io: Io, held: f64, fio: Option<f64>, device: f64) -> Row {
        Row {
            io,
            record_bytes: 1 << 20,
            coarse_hz: held,
            sustained_hz: held,
            sustained_bytes_per_s: held * f64::from(1 << 20),
            confirmed: true,
            fraction_of_device: held * f64::from(1 << 20) / device,
            fio_bytes_per_s: fio.map(|f| f * f64::from(1 << 20)),
            fraction_of_fio: fio.map(|f| held / f),
            fio_job: None,
            file_bytes: None,
            max_lateness_ns: Some(1000),
            missed_periods: Some(0),
            cpu_s_per_gib: None,
            capped: false,
            limit: None,
            probes: Vec::new(),
        }
    }

    fn report(device: &str, bps: f64, rows: Vec<Row>) -> ThroughputReport {
        let run = Run {
            device_bytes_per_s: bps,
            device_method: "fio".into(),
            device_jobs: Vec::new(),
            load_avg: [1.0, 1.0],
            verdicts: crate::throughput::verdicts(&rows),
            rows,
        };
        ThroughputReport {
            study: "throughput".into(),
            probe_s: 5.0,
            coarse_s: 2.0,
            confirmations: 3,
            hold_rule: HoldRule::Drops,
            rt: RtReport::default(),
            device_profile: device.into(),
            alloc: rtrec_engine::Alloc::Fallocate,
            cpus: 2,
            skipped: Vec::new(),
            spread: crate::throughput::spread(std::slice::from_ref(&run)),
            runs: vec![run],
        }
    }

    #[test]
    fn the_plot_names_every_device_and_cell() {
        let emmc = 40.0 * f64::from(1 << 20);
        let sd = 8.0 * f64::from(1 << 20);
        let r = [
            report(
                "emmc",
                emmc,
                vec![
                    row(Io::Buffered, 38.0, Some(40.0), emmc),
                    row(Io::Direct, 20.0, None, emmc),
                ],
            ),
            report("sd", sd, vec![row(Io::Uring, 7.5, Some(8.0), sd)]),
        ];
        let svg = render(&r).unwrap();
        assert!(svg.starts_with("<svg"));
        for t in [
            "rate held 3 of 3 (0 drops)",
            "emmc: 40 MiB/s, 1 run(s)",
            "sd: 8 MiB/s, 1 run(s)",
            "\nbuffered\n",
            "\ndirect\n",
            "\nuring\n",
            "\n1 MiB\n",
            "target: 90 % of the device",
        ] {
            assert!(svg.contains(t), "{t}");
        }
    }
}
