//! A distribution beyond its box: the histogram of every call (log-spaced
//! bins, counts on a log scale, so the rare slow calls show beside the
//! many fast ones) and the spread of a case's sets (p50 to max, a dot at
//! p99.9).

use std::fmt::Write as _;

use rtrec_engine::LatencySummary;

use crate::report::CaseResult;

use super::axis::LogAxis;
use super::markup::dur;

/// A histogram of `samples` in 10 log-spaced bins per decade, counts on a
/// log scale.
pub fn histogram(samples: &[u64]) -> String {
    let (min, max) = (
        *samples.iter().min().unwrap_or(&1),
        *samples.iter().max().unwrap_or(&10),
    );
    let (left, px, h) = (60.0, 460.0, 150.0);
    let axis = LogAxis::new(min, max, left, px);
    let bins_n = ((axis.hi - axis.lo) * 10.0).round() as usize;
    let mut bins = vec![0u64; bins_n.max(1)];
    for &v in samples {
        let i = (((v.max(1) as f64).log10() - axis.lo) * 10.0).floor() as usize;
        let last = bins.len() - 1;
        bins[i.min(last)] += 1;
    }
    let top = bins.iter().copied().max().unwrap_or(1).max(1) as f64;
    let mut s = format!(
        r#"<svg class="plot histogram" width="540" height="{}" xmlns="http://www.w3.org/2000/svg">"#,
        h + 30.0
    );
    axis.draw(&mut s, 5.0, h);
    // The count axis: a tick at 1 and every decade up to the tallest bar.
    let y_of = |n: f64| h - (n + 1.0).log10() / (top + 1.0).log10() * (h - 10.0);
    let mut tick = 1.0;
    while tick <= top {
        let y = y_of(tick);
        let _ = write!(
            s,
            r#"<line class="grid" x1="{left}" y1="{y:.1}" x2="{}" y2="{y:.1}"/><text class="ytick" x="{}" y="{:.1}" text-anchor="end">{tick}</text>"#,
            left + px,
            left - 4.0,
            y + 4.0
        );
        tick *= 10.0;
    }
    let bw = px / bins.len() as f64;
    for (i, &n) in bins.iter().enumerate().filter(|(_, n)| **n > 0) {
        let bh = ((n as f64 + 1.0).log10() / (top + 1.0).log10() * (h - 10.0)).max(1.0);
        let _ = write!(
            s,
            r#"<rect class="bar" x="{:.1}" y="{:.1}" width="{:.1}" height="{bh:.1}"><title>{n} calls</title></rect>"#,
            left + bw * i as f64,
            h - bh,
            (bw - 1.0).max(1.0)
        );
    }
    let _ = write!(
        s,
        r#"<text x="{}" y="12" text-anchor="end">calls (log scale)</text></svg>"#,
        left + px
    );
    s
}

/// The per-set maxima and p99.9 of one case on a log axis.
pub fn spread(c: &CaseResult) -> String {
    let sets: Vec<LatencySummary> = c.sets.iter().filter_map(|s| s.write_ns).collect();
    let lo = sets.iter().map(|w| w.p50).min().unwrap_or(1);
    let hi = sets.iter().map(|w| w.max).max().unwrap_or(10);
    let axis = LogAxis::new(lo, hi, 60.0, 460.0);
    let h = 20.0 + 16.0 * sets.len() as f64;
    let mut s = format!(
        r#"<svg class="plot spread" width="540" height="{}" xmlns="http://www.w3.org/2000/svg">"#,
        h + 30.0
    );
    axis.draw(&mut s, 5.0, h);
    for (i, w) in sets.iter().enumerate() {
        let y = 16.0 + 16.0 * i as f64;
        let _ = write!(
            s,
            r#"<text x="56" y="{}" text-anchor="end">set {}</text><line class="whisker" x1="{:.1}" y1="{y}" x2="{:.1}" y2="{y}"/><circle class="point" cx="{:.1}" cy="{y}" r="3"/><line class="max" x1="{2:.1}" y1="{}" x2="{2:.1}" y2="{}"><title>set {1}: p50 {} p99.9 {} max {}</title></line>"#,
            y + 4.0,
            i + 1,
            axis.x(w.max),
            axis.x(w.p50),
            axis.x(w.p999),
            y - 5.0,
            y + 5.0,
            dur(w.p50),
            dur(w.p999),
            dur(w.max)
        );
    }
    s.push_str(
        "</svg><p class=\"cap\">Per set: line from p50 to max, dot at p99.9, bar at the max.</p>",
    );
    s
}
