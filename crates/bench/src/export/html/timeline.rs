//! Latency over time: each call in call order on a log axis, with
//! flushes and background loads marked.
//!
//! Design choices:
//! - Downsampled to at most [`MAX_POINTS`] points by keeping the largest
//!   sample of each run of calls, so spikes are never averaged away.
//! - Flush marks are computed, not traced: the engine starts write-back
//!   every `flush_every_bytes`, i.e. every `flush_every / record` calls; the
//!   caption says so. A background load runs for the whole set, so it is a
//!   band across the whole plot.

use std::fmt::Write as _;

use crate::report::CaseResult;

use super::axis::LogAxis;
use super::markup::{dur, esc};

/// Most points drawn in one latency-over-time plot.
pub const MAX_POINTS: usize = 1500;

/// Where the time axis starts, px.
const LEFT: f64 = 60.0;
/// The time axis's length, px.
const PX: f64 = 980.0;
/// The latency axis's bottom, px from the top.
const H: f64 = 180.0;

/// Latency of each call over the set's time, with flushes and background
/// loads marked.
pub fn timeline(c: &CaseResult) -> String {
    let loads = (!c.loads.is_empty()).then(|| {
        c.loads
            .iter()
            .map(|l| {
                serde_json::to_value(l)
                    .ok()
                    .and_then(|v| v.as_str().map(String::from))
                    .unwrap_or_default()
            })
            .collect::<Vec<_>>()
            .join(", ")
    });
    let calls_per_flush =
        (c.protocol.flush_every_bytes / c.protocol.record_bytes.max(1)).max(1) as usize;
    let flush = c.strategies.is_some().then_some(calls_per_flush);
    timeline_of(&c.write_samples_ns, c.protocol.period_ns, flush, loads)
}

/// Latency of each call in call order: `period_ns` apart (0: unknown, the
/// axis counts calls), a flush start marked every `flush_calls` calls, and
/// `load` (a background load over the whole span) as a band.
pub fn timeline_of(
    v: &[u64],
    period_ns: u64,
    flush_calls: Option<usize>,
    load: Option<String>,
) -> String {
    let frame = Frame::new(v, period_ns);
    let mut s = format!(
        r#"<svg class="plot timeline" width="1060" height="{}" xmlns="http://www.w3.org/2000/svg">"#,
        H + 30.0
    );
    if let Some(names) = &load {
        let _ = write!(
            s,
            r#"<rect class="load" x="{LEFT}" y="20" width="{PX}" height="{}"><title>background load: {}</title></rect>"#,
            H - 20.0,
            esc(names)
        );
    }
    let flushes = flush_calls.filter(|&n| v.len() / n <= 400);
    if let Some(n) = flushes {
        for i in (n..v.len()).step_by(n) {
            let _ = write!(
                s,
                r#"<line class="flush" x1="{0:.1}" y1="20" x2="{0:.1}" y2="{H}"/>"#,
                frame.x(i)
            );
        }
    }
    frame.axis.draw_up(&mut s, H, LEFT, LEFT + PX);
    let step = frame.points(&mut s);
    frame.time_axis(&mut s);
    s.push_str("</svg>");
    let _ = write!(
        s,
        r#"<p class="cap">Each dot: {}, in call order over {}.{}{}</p>"#,
        if step > 1 {
            format!("the slowest of {step} calls (there are more than {MAX_POINTS})")
        } else {
            "one call".to_string()
        },
        frame.span(),
        flushes.map_or(String::new(), |n| format!(
            " Dashed: a flush starts (every {n} calls: --flush-every ÷ record size)."
        )),
        if load.is_some() {
            " Orange band: the background load runs the whole set."
        } else {
            ""
        }
    );
    s
}

/// The plot's frame: where call `i` and a latency fall, and how a point
/// in time is named.
struct Frame<'a> {
    /// The latencies, in call order.
    v: &'a [u64],
    /// The calls' period (0: unknown, the time axis counts calls).
    period_ns: u64,
    /// The latency axis, up from [`H`].
    axis: LogAxis,
}

impl Frame<'_> {
    fn new(v: &[u64], period_ns: u64) -> Frame<'_> {
        let axis = LogAxis::new(
            *v.iter().min().unwrap_or(&1),
            *v.iter().max().unwrap_or(&10),
            0.0,
            H - 20.0,
        );
        Frame { v, period_ns, axis }
    }

    /// Call `i`'s position across.
    fn x(&self, i: usize) -> f64 {
        LEFT + i as f64 / self.v.len().max(1) as f64 * PX
    }

    /// A latency's position up.
    fn y(&self, ns: u64) -> f64 {
        H - self.axis.x(ns)
    }

    /// The whole span: its time, or its number of calls.
    fn span(&self) -> String {
        if self.period_ns == 0 {
            format!("{} calls", self.v.len())
        } else {
            dur(self.v.len() as u64 * self.period_ns)
        }
    }

    /// The dots: the slowest call of each run of calls, at most
    /// [`MAX_POINTS`]; the run's length.
    fn points(&self, s: &mut String) -> usize {
        let step = self.v.len().div_ceil(MAX_POINTS).max(1);
        for (k, chunk) in self.v.chunks(step).enumerate() {
            let (j, &m) = chunk
                .iter()
                .enumerate()
                .max_by_key(|(_, &m)| m)
                .expect("non-empty chunk");
            let _ = write!(
                s,
                r#"<circle class="point" cx="{:.1}" cy="{:.1}" r="1.6"/>"#,
                self.x(k * step + j),
                self.y(m)
            );
        }
        step
    }

    /// The time axis: 0, four ticks between, and the span at the end.
    fn time_axis(&self, s: &mut String) {
        let _ = write!(
            s,
            r#"<text x="{LEFT}" y="{}">0</text><text x="{}" y="{}" text-anchor="end">{}</text>"#,
            H + 16.0,
            LEFT + PX,
            H + 16.0,
            self.span()
        );
        for k in 1..5 {
            let i = self.v.len() * k / 5;
            let label = if self.period_ns == 0 {
                format!("{i}")
            } else {
                dur(i as u64 * self.period_ns)
            };
            let _ = write!(
                s,
                r#"<line class="grid" x1="{0:.1}" y1="20" x2="{0:.1}" y2="{H}"/><text class="xtick" x="{0:.1}" y="{1}" text-anchor="middle">{label}</text>"#,
                self.x(i),
                H + 16.0
            );
        }
    }
}
