//! `--plot` for `--study throughput`: for each back-end and record size,
//! the rate the recorder held (k of k probes) beside fio's bandwidth with
//! the same back-end and block size, and the device's 1 MiB `O_DIRECT`
//! line, on one SVG.
//!
//! Design choice: one column per row of the study's table, labelled with
//! the back-end, the size and the fraction of fio, so the plot reads like
//! the table; a row without a fio figure shows only its own point.

use plotters::prelude::*;

use crate::throughput::ThroughputReport;

fn mib(b: f64) -> f64 {
    b / f64::from(1 << 20)
}

/// The study's plot as an SVG document.
///
/// # Errors
/// plotters' drawing errors (none expected on an in-memory SVG).
pub fn render(r: &ThroughputReport) -> Result<String, Box<dyn std::error::Error>> {
    let n = r.rows.len().max(1) as f64;
    let top = r
        .rows
        .iter()
        .flat_map(|row| {
            [
                row.sustained_bytes_per_s,
                row.fio_bytes_per_s.unwrap_or(0.0),
            ]
        })
        .chain([r.device_bytes_per_s])
        .map(mib)
        .fold(1.0, f64::max)
        * 1.2;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1000, 600)).into_drawing_area();
        root.fill(&WHITE)?;
        let title = format!(
            "rtrec bench throughput on {}: rate held {} of {} (0 drops) vs fio",
            r.device_profile, r.confirmations, r.confirmations
        );
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(15)
            .x_label_area_size(20)
            .y_label_area_size(60)
            .build_cartesian_2d(-0.5..n - 0.5, 0.0..top)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .y_desc("MiB/s")
            .y_label_formatter(&|v| format!("{v:.0}"))
            .draw()?;
        let device = mib(r.device_bytes_per_s);
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(-0.5, device), (n - 0.5, device)],
                BLACK.mix(0.5).stroke_width(1),
            )))?
            .label(format!(
                "device: {} ({}, 1 MiB O_DIRECT)",
                rtrec_units::format_size_per_s(r.device_bytes_per_s as u64),
                r.device_method
            ))
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], BLACK.mix(0.5)));
        let fio: Vec<(f64, f64)> = r
            .rows
            .iter()
            .enumerate()
            .filter_map(|(i, row)| row.fio_bytes_per_s.map(|b| (i as f64, mib(b))))
            .collect();
        chart
            .draw_series(fio.iter().map(|&p| TriangleMarker::new(p, 7, RED.filled())))?
            .label("fio, same back-end and block size")
            .legend(|(x, y)| TriangleMarker::new((x + 8, y), 5, RED.filled()));
        let blue = RGBColor(31, 119, 180);
        chart
            .draw_series(r.rows.iter().enumerate().map(|(i, row)| {
                Circle::new((i as f64, mib(row.sustained_bytes_per_s)), 6, blue.filled())
            }))?
            .label("recorder: highest rate held, 0 drops")
            .legend(move |(x, y)| Circle::new((x + 8, y), 5, blue.filled()));
        chart.draw_series(r.rows.iter().enumerate().map(|(i, row)| {
            let fraction = row
                .fraction_of_fio
                .map_or(String::new(), |f| format!(" {:.0} %", f * 100.0));
            Text::new(
                format!(
                    "{} {}{fraction}",
                    row.io.name(),
                    rtrec_units::format_size(row.record_bytes)
                ),
                (i as f64 - 0.3, top * 0.04),
                ("sans-serif", 13),
            )
        }))?;
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .draw()?;
        root.present()?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::producer::RtReport;
    use crate::throughput::{HoldRule, Row};
    use rtrec_engine::Io;

    fn row(io: Io, held: f64, fio: Option<f64>) -> Row {
        Row {
            io,
            record_bytes: 1 << 20,
            coarse_hz: held,
            sustained_hz: held,
            sustained_bytes_per_s: held * f64::from(1 << 20),
            confirmed: true,
            fraction_of_device: 0.5,
            fio_bytes_per_s: fio.map(|f| f * f64::from(1 << 20)),
            fraction_of_fio: fio.map(|f| held / f),
            fio_job: None,
            max_lateness_ns: Some(1000),
            missed_periods: Some(0),
            cpu_s_per_gib: None,
            capped: false,
            probes: Vec::new(),
        }
    }

    #[test]
    fn the_plot_labels_every_row_with_its_fraction_of_fio() {
        let r = ThroughputReport {
            study: "throughput",
            probe_s: 5.0,
            coarse_s: 2.0,
            confirmations: 3,
            hold_rule: HoldRule::Drops,
            rt: RtReport::default(),
            device_profile: "emmc".into(),
            device_bytes_per_s: 4e8,
            device_method: "fio",
            rows: vec![
                row(Io::Buffered, 300.0, Some(400.0)),
                row(Io::Direct, 50.0, None),
            ],
        };
        let svg = render(&r).unwrap();
        assert!(svg.starts_with("<svg"));
        for t in [
            "rtrec bench throughput on emmc: rate held 3 of 3",
            "buffered 1 MiB 75 %",
            "fio, same back-end and block size",
        ] {
            assert!(svg.contains(t), "{t}");
        }
    }
}
