//! What the plotters drawings (`--plot`'s latency rows, S4's shares, the
//! throughput study) share: the legend box, a legend entry that is a short
//! line, and a horizontal reference line with its entry (the device, a
//! target). One definition each, so the three plots cannot drift apart in
//! how they mark the same kind of thing.

use std::error::Error;

use plotters::coord::CoordTranslate;
use plotters::prelude::*;

/// A chart drawn into an in-memory SVG, as every `--plot` is.
pub type SvgChart<'a, 'b, CT> = ChartContext<'a, SVGBackend<'b>, CT>;

/// The legend box: in the corner `at`, white at 90 % behind it, a black
/// border.
///
/// # Errors
/// plotters' drawing errors (none expected on an in-memory SVG).
pub fn legend<'a, 'b: 'a, CT: CoordTranslate>(
    chart: &mut SvgChart<'a, 'b, CT>,
    at: SeriesLabelPosition,
) -> Result<(), Box<dyn Error>> {
    chart
        .configure_series_labels()
        .position(at)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}

/// The legend entry of a line series: a 16 px stroke of `color`.
pub fn line_key(color: impl Color) -> impl Fn((i32, i32)) -> PathElement<(i32, i32)> {
    let color = color.to_rgba();
    move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color)
}

/// A horizontal line at `y` across `x` (from, to), `width` px of `color`,
/// named `label` in the legend.
///
/// # Errors
/// plotters' drawing errors (none expected on an in-memory SVG).
pub fn reference_line<CT: CoordTranslate<From = (f64, f64)>>(
    chart: &mut SvgChart<'_, '_, CT>,
    x: (f64, f64),
    y: f64,
    (color, width): (impl Color, u32),
    label: impl Into<String>,
) -> Result<(), Box<dyn Error>> {
    let color = color.to_rgba();
    chart
        .draw_series(std::iter::once(PathElement::new(
            vec![(x.0, y), (x.1, y)],
            color.stroke_width(width),
        )))?
        .label(label)
        .legend(line_key(color));
    Ok(())
}
