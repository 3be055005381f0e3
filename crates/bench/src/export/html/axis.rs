//! The logarithmic axis of every hand-written plot (box plots, histograms,
//! latency over time, the spread across sets): whole decades, a grid line
//! and a duration label at each.

use std::fmt::Write as _;

use super::markup::dur;

/// A logarithmic axis from `lo` to `hi` ns (whole decades, as powers of
/// 10) over `px` pixels starting at `left`.
pub struct LogAxis {
    /// The first decade's power of 10.
    pub lo: f64,
    /// The last decade's power of 10.
    pub hi: f64,
    left: f64,
    px: f64,
}

impl LogAxis {
    /// The whole decades around `min_ns`..`max_ns` (at least one).
    pub fn new(min_ns: u64, max_ns: u64, left: f64, px: f64) -> LogAxis {
        let lo = (min_ns.max(1) as f64).log10().floor();
        let hi = (max_ns.max(10) as f64).log10().ceil().max(lo + 1.0);
        LogAxis { lo, hi, left, px }
    }

    /// Where `ns` falls, pixels from the origin (clamped to the axis).
    pub fn x(&self, ns: u64) -> f64 {
        let v = (ns.max(1) as f64).log10().clamp(self.lo, self.hi);
        self.left + (v - self.lo) / (self.hi - self.lo) * self.px
    }

    /// Every decade of the axis, ns.
    fn decades(&self) -> impl Iterator<Item = u64> + '_ {
        std::iter::successors(Some(self.lo), |d| Some(d + 1.0))
            .take_while(|d| *d <= self.hi + 1e-9)
            .map(|d| 10f64.powf(d).round() as u64)
    }

    /// Across: a vertical grid line at every decade from `top` to
    /// `bottom`, its label under it.
    pub fn draw(&self, svg: &mut String, top: f64, bottom: f64) {
        for ns in self.decades() {
            let x = self.x(ns);
            let _ = write!(
                svg,
                r#"<line class="grid" x1="{x:.1}" y1="{top}" x2="{x:.1}" y2="{bottom}"/><text x="{x:.1}" y="{}" text-anchor="middle">{}</text>"#,
                bottom + 14.0,
                dur(ns)
            );
        }
    }

    /// Up, from `bottom`: a horizontal grid line at every decade from
    /// `left` to `right`, its label left of it.
    pub fn draw_up(&self, svg: &mut String, bottom: f64, left: f64, right: f64) {
        for ns in self.decades() {
            let y = bottom - self.x(ns);
            let _ = write!(
                svg,
                r#"<line class="grid" x1="{left}" y1="{y:.1}" x2="{right}" y2="{y:.1}"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"#,
                left - 4.0,
                y + 4.0,
                dur(ns)
            );
        }
    }
}
