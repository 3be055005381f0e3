//! `--html` and `rtrec report`: one self-contained HTML file — inline CSS
//! and inline SVG, no script, no font, no network — that shows a bench
//! result the way a person would rather look at it: the environment, the
//! table with the published figure beside the measured one, box plots per
//! case in the style of S1's Fig. 4 (measured and published), log-scale
//! latency histograms, latency over time with flushes and background loads
//! marked, the spread across sets and, with `--explain`, the attribution
//! tables; then S3's and S4's sections when the result has them
//! ([`s3_section`], [`s4_section`]). [`render_summary`] does the same for
//! `rtrec record --json`, read as its type
//! (`rtrec_engine::result::RecordResult`).
//!
//! Design choices:
//! - SVG is written by hand rather than through a plotting crate: the
//!   shapes are few (lines, rectangles, text), and each element carries a
//!   class (`box`, `bar`, `point`, `whisker`) that the browser test counts.
//!   The one exception is S4's share plot: it is the drawing `--plot`
//!   writes beside the latency plot ([`super::s4_plot`], through its
//!   exporter), inlined, so the two can never disagree.
//! - S3's published figures are a range for the whole study (ext3
//!   `data=ordered` on 2.6.29, without and with the fix), so every variant's
//!   box is drawn against the unpatched range and both are rows of the
//!   table; S4's are findings, not numbers, so each cell gets the finding
//!   that applies to it ([`s4_published`]).
//! - Quartiles come from the reported set's raw samples when the report
//!   has them; otherwise the box spans p50..p99 of the summary, and the
//!   caption says so.
//! - Latency over time is downsampled to at most [`MAX_POINTS`] points by
//!   keeping the largest sample of each run of calls, so spikes are never
//!   averaged away.
//! - Flush marks are computed, not traced: the engine starts write-back
//!   every `flush_every_bytes`, i.e. every `flush_every / record` calls; the
//!   caption says so. A background load runs for the whole set, so it is a
//!   band across the whole plot.

use std::fmt::Write as _;

use rtrec_engine::result::RecordResult;
use rtrec_engine::LatencySummary;
use rtrec_trace::Explanation;
use rtrec_units::format_mb_per_s;

use crate::report::{BenchReport, CaseResult, PublishedFigure};

use super::exporter::Exporter;
use super::s4_plot::S4PlotExporter;

/// Writes [`BenchReport`] as one self-contained HTML page.
pub struct HtmlExporter;

impl Exporter for HtmlExporter {
    fn serialize(&self, report: &BenchReport) -> anyhow::Result<Vec<u8>> {
        Ok(render(report).into_bytes())
    }
}

/// Most points drawn in one latency-over-time plot.
pub const MAX_POINTS: usize = 1500;

const CSS: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222}\
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ccc}\
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ddd;padding:3px 8px;text-align:right}\
th{background:#f4f4f4}td.l,th.l{text-align:left}.warn{color:#a60}.fail{color:#b00}\
svg{display:block;margin:.5em 0;background:#fff}svg text{font:11px sans-serif;fill:#333}\
.box{fill:#9ecae1;stroke:#3182bd}.pub{stroke:#d62728;fill:none;stroke-width:2}.whisker{stroke:#555}\
.median{stroke:#08306b;stroke-width:2}.bar{fill:#6baed6}.point{fill:#3182bd}.flush{stroke:#aaa;stroke-dasharray:2 3}\
.load{fill:#fdd0a2;opacity:.5}.grid{stroke:#eee}.max{stroke:#000;stroke-width:2}pre{background:#f8f8f8;padding:.5em;overflow:auto}\
.cap{color:#555;font-size:12px}";

/// Escapes `s` for HTML text and attributes.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn dur(ns: u64) -> String {
    rtrec_units::format_duration(ns)
}

/// A logarithmic axis from `lo` to `hi` ns (whole decades) over `px` pixels
/// starting at `left`.
struct LogAxis {
    lo: f64,
    hi: f64,
    left: f64,
    px: f64,
}

impl LogAxis {
    fn new(min_ns: u64, max_ns: u64, left: f64, px: f64) -> LogAxis {
        let lo = (min_ns.max(1) as f64).log10().floor();
        let hi = (max_ns.max(10) as f64).log10().ceil().max(lo + 1.0);
        LogAxis { lo, hi, left, px }
    }

    fn x(&self, ns: u64) -> f64 {
        let v = (ns.max(1) as f64).log10().clamp(self.lo, self.hi);
        self.left + (v - self.lo) / (self.hi - self.lo) * self.px
    }

    /// Grid lines and labels at every decade, from `top` to `bottom`.
    fn draw(&self, svg: &mut String, top: f64, bottom: f64) {
        let mut d = self.lo;
        while d <= self.hi + 1e-9 {
            let ns = 10f64.powf(d).round() as u64;
            let x = self.x(ns);
            let _ = write!(
                svg,
                r#"<line class="grid" x1="{x:.1}" y1="{top}" x2="{x:.1}" y2="{bottom}"/><text x="{x:.1}" y="{}" text-anchor="middle">{}</text>"#,
                bottom + 14.0,
                dur(ns)
            );
            d += 1.0;
        }
    }
}

/// Quantile `q` of sorted `v`.
fn quantile(v: &[u64], q: f64) -> u64 {
    v[((v.len() - 1) as f64 * q).round() as usize]
}

/// One row of a box plot: whisker low, box low, median, box high, whisker
/// high, whether they come from raw samples, and the published figure.
pub struct BoxRow {
    /// The label.
    pub name: String,
    /// The five numbers, ns.
    pub five: [u64; 5],
    /// True when the box is quartiles of raw samples (else p50..p99).
    pub raw: bool,
    /// The published figure, if any.
    pub published: Option<PublishedFigure>,
}

impl BoxRow {
    /// From a latency summary: the box spans p50..p99.
    pub fn of_summary(name: &str, w: &LatencySummary) -> BoxRow {
        BoxRow {
            name: name.to_string(),
            five: [w.min, w.p50, w.p50, w.p99, w.max],
            raw: false,
            published: None,
        }
    }

    /// From a summary and its raw samples: quartiles of the samples when
    /// there are any, else p50..p99 of the summary.
    pub fn of_samples(name: &str, w: &LatencySummary, samples: &[u64]) -> BoxRow {
        let mut row = BoxRow::of_summary(name, w);
        if !samples.is_empty() {
            let mut v = samples.to_vec();
            v.sort_unstable();
            row.five = [
                v[0],
                quantile(&v, 0.25),
                quantile(&v, 0.5),
                quantile(&v, 0.75),
                v[v.len() - 1],
            ];
            row.raw = true;
        }
        row
    }

    /// From a measured case: quartiles of the raw samples when it has them.
    pub fn of_case(c: &CaseResult) -> Option<BoxRow> {
        let mut row = BoxRow::of_samples(&c.name, &c.write_ns?, &c.write_samples_ns);
        row.published = c.published.clone();
        Some(row)
    }
}

/// Where S1's and S2's published figures were measured.
const S1_SOURCE: &str = "1 GHz ARM, eMMC";

/// S1 Fig. 4: one row per case, the measured box (whiskers min to max) and
/// under it the published min–max with a tick at its average.
pub fn box_plot(rows: &[BoxRow]) -> String {
    box_plot_against(rows, S1_SOURCE)
}

/// [`box_plot`] with the published figures' `source` (where they were
/// measured) in the legend and caption.
pub fn box_plot_against(rows: &[BoxRow], source: &str) -> String {
    let row = 34.0;
    let (left, px) = (230.0, 800.0);
    let mut lo = u64::MAX;
    let mut hi = 10;
    for r in rows {
        lo = lo.min(r.five[0]);
        hi = hi.max(r.five[4]);
        if let Some(p) = &r.published {
            lo = lo.min(p.min_us.map_or(u64::MAX, |m| m * 1000));
            hi = hi.max(p.max_us.unwrap_or(0) * 1000);
        }
    }
    let axis = LogAxis::new(lo, hi, left, px);
    let h = 30.0 + row * rows.len() as f64 + 48.0;
    let mut s = format!(
        r#"<svg class="plot boxplot" width="1060" height="{h}" viewBox="0 0 1060 {h}" xmlns="http://www.w3.org/2000/svg">"#
    );
    axis.draw(&mut s, 10.0, h - 48.0);
    // One convention for the whole plot, named alike in the legend, the
    // caption and every tooltip: quartiles only when every row has them.
    let raw_all = rows.iter().all(|r| r.raw);
    let (box_name, q1, mid, q3) = if raw_all {
        ("first to third quartile", "q1", "median", "q3")
    } else {
        ("p50 to p99", "p50", "p50", "p99")
    };
    let _ = write!(
        s,
        r#"<rect class="box" x="{left}" y="{0}" width="14" height="10"/><text x="{1}" y="{2}">measured here: box {box_name}, whiskers min to max</text>"#,
        h - 14.0,
        left + 20.0,
        h - 5.0,
    );
    // The published entry only when a published range is drawn.
    let published_drawn = rows.iter().any(|r| {
        r.published
            .as_ref()
            .is_some_and(|p| p.min_us.is_some() && p.max_us.is_some())
    });
    if published_drawn {
        let _ = write!(
            s,
            r#"<line class="pub" x1="{0}" y1="{1}" x2="{2}" y2="{1}"/><text x="{3}" y="{4}">published ({5}), tick at the average</text>"#,
            left + 360.0,
            h - 9.0,
            left + 380.0,
            left + 386.0,
            h - 5.0,
            esc(source)
        );
    }
    for (i, c) in rows.iter().enumerate() {
        let y = 20.0 + row * i as f64;
        let [a, b, m, d, e] = c.five;
        // The median line is drawn only for quartile boxes (p50 is the
        // box's left edge otherwise).
        let median = if raw_all {
            format!(" {mid} {}", dur(m))
        } else {
            String::new()
        };
        let _ = write!(
            s,
            r#"<text x="{}" y="{}" text-anchor="end">{}</text><line class="whisker" x1="{:.1}" y1="{y}" x2="{:.1}" y2="{y}"/><rect class="box" x="{:.1}" y="{}" width="{:.1}" height="12"><title>{}: min {}, {q1} {}{median}, {q3} {}, max {}</title></rect><line class="median" x1="{:.1}" y1="{}" x2="{:.1}" y2="{}"/>"#,
            left - 8.0,
            y + 4.0,
            esc(&c.name),
            axis.x(a),
            axis.x(e),
            axis.x(b),
            y - 6.0,
            (axis.x(d) - axis.x(b)).max(1.5),
            esc(&c.name),
            dur(a),
            dur(b),
            dur(d),
            dur(e),
            axis.x(m),
            y - 6.0,
            axis.x(m),
            y + 6.0
        );
        if let Some(p) = &c.published {
            if let (Some(pmin), Some(pmax)) = (p.min_us, p.max_us) {
                let py = y + 11.0;
                let _ = write!(
                    s,
                    r#"<line class="pub" x1="{:.1}" y1="{py}" x2="{:.1}" y2="{py}"><title>published ({}): min {} µs, max {} µs</title></line>"#,
                    axis.x(pmin * 1000),
                    axis.x(pmax * 1000),
                    esc(&p.source),
                    pmin,
                    pmax
                );
                if let Some(avg) = p.avg_us {
                    let x = axis.x(avg * 1000);
                    let _ = write!(
                        s,
                        r#"<line class="pub" x1="{x:.1}" y1="{}" x2="{x:.1}" y2="{}"/>"#,
                        py - 4.0,
                        py + 4.0
                    );
                }
            }
        }
    }
    s.push_str("</svg>");
    let _ = write!(
        s,
        r#"<p class="cap">Blue: measured, box from {box_name}{}; whiskers min to max.{}</p>"#,
        if raw_all {
            " of the reported calls, line at the median"
        } else {
            " (the summary holds no raw samples), line at p50"
        },
        if published_drawn {
            format!(
                " Red: published min to max, tick at the average ({}).",
                esc(source)
            )
        } else {
            String::new()
        }
    );
    s
}

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
    let (left, px, h) = (60.0, 980.0, 180.0);
    let axis = LogAxis::new(
        *v.iter().min().unwrap_or(&1),
        *v.iter().max().unwrap_or(&10),
        0.0,
        h - 20.0,
    );
    let y = |ns: u64| h - axis.x(ns);
    let span = if period_ns == 0 {
        format!("{} calls", v.len())
    } else {
        dur(v.len() as u64 * period_ns)
    };
    let x = |i: usize| left + i as f64 / v.len().max(1) as f64 * px;
    let mut s = format!(
        r#"<svg class="plot timeline" width="1060" height="{}" xmlns="http://www.w3.org/2000/svg">"#,
        h + 30.0
    );
    if let Some(names) = &load {
        let _ = write!(
            s,
            r#"<rect class="load" x="{left}" y="20" width="{px}" height="{}"><title>background load: {}</title></rect>"#,
            h - 20.0,
            esc(names)
        );
    }
    let flushes = flush_calls.filter(|&n| v.len() / n <= 400);
    if let Some(n) = flushes {
        for i in (n..v.len()).step_by(n) {
            let _ = write!(
                s,
                r#"<line class="flush" x1="{0:.1}" y1="20" x2="{0:.1}" y2="{h}"/>"#,
                x(i)
            );
        }
    }
    let mut d = axis.lo;
    while d <= axis.hi + 1e-9 {
        let ns = 10f64.powf(d).round() as u64;
        let _ = write!(
            s,
            r#"<line class="grid" x1="{left}" y1="{0:.1}" x2="{1}" y2="{0:.1}"/><text x="{2}" y="{3:.1}" text-anchor="end">{4}</text>"#,
            y(ns),
            left + px,
            left - 4.0,
            y(ns) + 4.0,
            dur(ns)
        );
        d += 1.0;
    }
    let step = v.len().div_ceil(MAX_POINTS).max(1);
    for (k, chunk) in v.chunks(step).enumerate() {
        let (j, &m) = chunk
            .iter()
            .enumerate()
            .max_by_key(|(_, &m)| m)
            .expect("non-empty chunk");
        let _ = write!(
            s,
            r#"<circle class="point" cx="{:.1}" cy="{:.1}" r="1.6"/>"#,
            x(k * step + j),
            y(m)
        );
    }
    // The time axis: 0, four ticks between, and the span at the end.
    let _ = write!(
        s,
        r#"<text x="{left}" y="{}">0</text><text x="{}" y="{}" text-anchor="end">{span}</text>"#,
        h + 16.0,
        left + px,
        h + 16.0
    );
    for k in 1..5 {
        let i = v.len() * k / 5;
        let label = if period_ns == 0 {
            format!("{i}")
        } else {
            dur(i as u64 * period_ns)
        };
        let _ = write!(
            s,
            r#"<line class="grid" x1="{0:.1}" y1="20" x2="{0:.1}" y2="{h}"/><text class="xtick" x="{0:.1}" y="{1}" text-anchor="middle">{label}</text>"#,
            x(i),
            h + 16.0
        );
    }
    s.push_str("</svg>");
    let _ = write!(
        s,
        r#"<p class="cap">Each dot: {}, in call order over {span}.{}{}</p>"#,
        if step > 1 {
            format!("the slowest of {step} calls (there are more than {MAX_POINTS})")
        } else {
            "one call".to_string()
        },
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

/// The box plot of `r`'s measured cases as a standalone SVG file (its
/// style inside), for documents and slides.
pub fn box_plot_svg(r: &BenchReport) -> String {
    let rows: Vec<BoxRow> = r.cases.iter().filter_map(BoxRow::of_case).collect();
    let plot = box_plot(&rows);
    // The plot without its caption, its style inside, white behind it.
    let svg_end = plot
        .find("</svg>")
        .map_or(plot.len(), |i| i + "</svg>".len());
    let svg = &plot[..svg_end];
    let open_end = svg.find('>').map_or(0, |i| i + 1);
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n{}<style>svg{{background:#fff}}text{{font:11px sans-serif;fill:#333}}.box{{fill:#9ecae1;stroke:#3182bd}}.pub{{stroke:#d62728;fill:none;stroke-width:2}}.whisker{{stroke:#555}}.median{{stroke:#08306b;stroke-width:2}}.grid{{stroke:#eee}}</style><rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>{}\n",
        &svg[..open_end],
        &svg[open_end..]
    )
}

fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{CSS}</style></head><body>\n{body}\n</body></html>\n",
        esc(title)
    )
}

fn us_opt(v: Option<u64>) -> String {
    v.map_or("–".into(), |u| dur(u * 1000))
}

/// The whole page for a bench report.
pub fn render(r: &BenchReport) -> String {
    let e = &r.environment;
    let mut b = String::new();
    let _ = write!(
        b,
        "<h1>rtrec bench</h1><p>{} cases{}.</p>",
        r.cases.len(),
        if r.interrupted {
            ", interrupted"
        } else if r.complete {
            ""
        } else {
            ", incomplete"
        }
    );
    b.push_str("<h2>Environment</h2><table>");
    for (k, v) in [
        ("kernel", e.kernel.clone()),
        ("CPU", format!("{} ({} online)", e.cpu, e.cpus)),
        ("memory", rtrec_units::format_size(e.memory_bytes)),
        ("target", format!("{} {}", e.target, e.path)),
        (
            "filesystem",
            format!("{} ({})", e.filesystem, e.mount_options),
        ),
        ("device", e.device.clone()),
        ("I/O scheduler", e.io_scheduler.clone()),
        (
            "journal",
            e.journal_bytes.map_or("?".into(), rtrec_units::format_size),
        ),
        ("timed thread", e.rt.line()),
        ("rtrec", e.rtrec_version.clone()),
        ("command", e.command_line.join(" ")),
    ] {
        let _ = write!(
            b,
            r#"<tr><th class="l">{k}</th><td class="l">{}</td></tr>"#,
            esc(&v)
        );
    }
    b.push_str("</table>");
    for w in &r.warnings {
        let _ = write!(b, r#"<p class="warn">warning: {}</p>"#, esc(w));
    }
    if let Some(l) = crate::output::table::rt_line(r) {
        let _ = write!(b, "<p>{}.</p>", esc(&l));
    }
    b.push_str("<h2>Results</h2><table><tr><th class=\"l\">case</th><th>published min</th><th>avg</th><th>max</th><th>measured min</th><th>mean</th><th>p50</th><th>p99.9</th><th>max</th><th>set maxima</th><th>missed</th></tr>");
    for c in &r.cases {
        let p = c.published.as_ref();
        let _ = write!(
            b,
            r#"<tr><td class="l">{}</td><td>{}</td><td>{}</td><td>{}</td>"#,
            esc(&c.name),
            us_opt(p.and_then(|p| p.min_us)),
            us_opt(p.and_then(|p| p.avg_us)),
            us_opt(p.and_then(|p| p.max_us))
        );
        match (&c.error, c.write_ns) {
            (Some(err), _) => {
                let _ = write!(
                    b,
                    r#"<td class="l fail" colspan="7">failed: {}</td>"#,
                    esc(err)
                );
            }
            (None, None) => b.push_str(r#"<td class="l" colspan="7">no measurement</td>"#),
            (None, Some(w)) => {
                let range = c
                    .set_max_range()
                    .map_or("–".into(), |(a, z)| format!("{} – {}", dur(a), dur(z)));
                let _ = write!(b, "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{range}</td><td>{}</td>",
                    dur(w.min), dur(w.mean), dur(w.p50), dur(w.p999), dur(w.max), c.missed_periods);
            }
        }
        b.push_str("</tr>");
    }
    b.push_str("</table>");
    let measured: Vec<&CaseResult> = r.cases.iter().filter(|c| c.write_ns.is_some()).collect();
    if !measured.is_empty() {
        b.push_str("<h2>Box plots per case (S1 Fig. 4)</h2>");
        let rows: Vec<BoxRow> = measured.iter().filter_map(|c| BoxRow::of_case(c)).collect();
        b.push_str(&box_plot(&rows));
    }
    for c in &measured {
        let _ = write!(b, "<h2>{}</h2><p>{}</p>", esc(&c.name), esc(&c.description));
        if !c.write_samples_ns.is_empty() {
            b.push_str("<h3>Latency over time</h3>");
            b.push_str(&timeline(c));
            b.push_str("<h3>Histogram</h3>");
            b.push_str(&histogram(&c.write_samples_ns));
        }
        if c.sets.len() > 1 {
            b.push_str("<h3>Spread across sets</h3>");
            b.push_str(&spread(c));
        }
        if let Some(x) = &c.explain {
            let _ = write!(
                b,
                "<h3>Attribution of slow calls</h3><pre>{}</pre>",
                esc(&rtrec_trace::table::render(x, None))
            );
        }
    }
    if let Some(s3) = &r.s3 {
        b.push_str(&s3_section(s3));
    }
    if let Some(s4) = &r.s4 {
        b.push_str(&s4_section(r, s4));
    }
    page("rtrec bench report", &b)
}

/// A cell of a table: `FAILED: why` across `span` columns when there is
/// an error, else nothing.
fn failed_cell(error: Option<&str>, span: usize) -> Option<String> {
    error.map(|e| {
        format!(
            r#"<td class="l fail" colspan="{span}">failed: {}</td>"#,
            esc(e)
        )
    })
}

/// S3: the table (measured per variant, the article's figures below it),
/// a box plot of `fsync()` per variant against the article's range, and
/// `fsync()` over the tester's rounds per variant.
pub fn s3_section(r: &crate::s3::S3Result) -> String {
    let p = &r.published;
    let mut b = String::from("<h2>S3: fsync() under streaming writes (LWN 2009)</h2>");
    b.push_str(r#"<table><tr><th class="l">case</th><th class="l">mount</th><th>window</th><th>rounds</th><th>fsync min</th><th>avg</th><th>max</th><th>stream alone</th><th>with tester</th></tr>"#);
    for c in &r.cases {
        let window = match c.window_bytes {
            0 => "none".to_string(),
            w => rtrec_units::format_size(w),
        };
        let _ = write!(
            b,
            r#"<tr><td class="l">{}</td><td class="l">data={} ({})</td><td>{window}</td><td>{}</td>"#,
            esc(&c.name),
            esc(&c.data_mode),
            esc(&c.mount_options),
            c.rounds
        );
        let f =
            |g: fn(&LatencySummary) -> u64| c.fsync_ns.as_ref().map_or("–".into(), |s| dur(g(s)));
        let cells = failed_cell(c.error.as_deref(), 5).unwrap_or_else(|| {
            format!(
                "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
                f(|s| s.min),
                f(|s| s.mean),
                f(|s| s.max),
                format_mb_per_s(c.stream_alone_bytes_per_s),
                format_mb_per_s(c.stream_with_tester_bytes_per_s)
            )
        });
        let _ = write!(b, "{cells}</tr>");
    }
    for (what, (lo, hi), mb) in [
        (
            "published, 2.6.29 unpatched",
            p.unpatched_fsync_s,
            p.stream_mb_per_s.0,
        ),
        (
            "published, 2.6.29 patched",
            p.patched_fsync_s,
            p.stream_mb_per_s.1,
        ),
    ] {
        let _ = write!(
            b,
            r#"<tr><td class="l">{what}</td><td class="l">ext3 data=ordered, 5,400 rpm disk</td><td>none</td><td>–</td><td>{lo} s</td><td>–</td><td>{hi} s</td><td colspan="2">{mb} MB/s</td></tr>"#
        );
    }
    b.push_str("</table>");
    let measured: Vec<&crate::s3::S3Case> =
        r.cases.iter().filter(|c| c.fsync_ns.is_some()).collect();
    if measured.is_empty() {
        return b;
    }
    let unpatched = PublishedFigure {
        source: "LWN 2009, unpatched".into(),
        min_us: Some((p.unpatched_fsync_s.0 * 1e6) as u64),
        avg_us: None,
        max_us: Some((p.unpatched_fsync_s.1 * 1e6) as u64),
        reader_throughput_pct: None,
    };
    let rows: Vec<BoxRow> = measured
        .iter()
        .filter_map(|c| {
            let mut row = BoxRow::of_samples(&c.name, c.fsync_ns.as_ref()?, &c.fsync_samples_ns);
            row.published = Some(unpatched.clone());
            Some(row)
        })
        .collect();
    b.push_str("<h3>fsync() per variant</h3>");
    b.push_str(&box_plot_against(
        &rows,
        "2.6.29 without the fix, 5,400 rpm disk",
    ));
    for c in measured.iter().filter(|c| !c.fsync_samples_ns.is_empty()) {
        let _ = write!(b, "<h3>{}: fsync() over the rounds</h3>", esc(&c.name));
        b.push_str(&timeline_of(
            &c.fsync_samples_ns,
            0,
            None,
            Some("streaming buffered overwrites".into()),
        ));
    }
    b
}

/// What the BFQ study published for a 2:1 cell like `c` (docs/studies.md,
/// S4's findings): the share holds for small requests and breaks down past
/// BFQ's budget (about 35–50 MB); `strict_guarantees` restores it at a
/// cost in throughput; buffered writes escape the weights. Schedulers
/// without weights promise no share.
pub fn s4_published(c: &crate::s4::S4Cell) -> &'static str {
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
pub fn s4_section(r: &BenchReport, s4: &crate::s4::S4Result) -> String {
    let mut b = format!(
        "<h2>S4: BFQ weights and I/O isolation</h2><p>Device {} ({}), {} s per cell. Published (the BFQ study, Linux 5.10, eMMC): the 2:1 share holds for small requests and breaks down once requests exceed BFQ's budget (around 35–50 MB); <code>strict_guarantees</code> restores it at a cost in throughput; buffered writes escape the weights, because writeback is issued by kernel threads.</p>",
        esc(&s4.device),
        esc(&s4.cgroup_interface),
        s4.cell_s
    );
    match S4PlotExporter.serialize(r) {
        Ok(svg) => {
            let svg =
                String::from_utf8_lossy(&svg).replacen("<svg ", r#"<svg class="plot s4share" "#, 1);
            b.push_str(&svg);
            b.push_str(r#"<p class="cap">The heavier job's share of the throughput against the request size, one line per scheduler (2:1 cells); red: its weight share, the target.</p>"#);
        }
        Err(e) => {
            let _ = write!(b, r#"<p class="fail">{}</p>"#, esc(&format!("{e:#}")));
        }
    }
    let joined = |v: Vec<String>| v.join(":");
    b.push_str(r#"<table><tr><th class="l">scheduler</th><th class="l">mode</th><th class="l">dir</th><th>request</th><th>weights</th><th>share %</th><th>target %</th><th class="l">published</th><th>total</th><th>device bytes per group</th></tr>"#);
    for c in &s4.cells {
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
    if let Some(c) = s4.cells.iter().find(|c| !c.bfq_tunables.is_empty()) {
        let _ = write!(
            b,
            r#"<p class="cap">BFQ tunables in force: {}</p>"#,
            esc(&c.bfq_tunables.join(" "))
        );
    }
    if s4.isolated.is_empty() {
        return b;
    }
    b.push_str(r#"<h3>The recording (16 KiB every 5 ms) against a direct and a buffered 100 MB writer</h3><table><tr><th class="l">case</th><th class="l">scheduler</th><th>class</th><th>weight</th><th>write max</th><th>record max</th><th>late max</th><th>missed</th><th>dropped</th><th>interferers</th></tr>"#);
    for c in &s4.isolated {
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

/// The summary table of a recording: readable names, values with units.
fn summary_rows(r: &RecordResult) -> Vec<(&'static str, String)> {
    use rtrec_units::format_size;
    let s = &r.summary;
    let c = &s.config;
    let mut rows = vec![
        (
            "result",
            match (&s.error, &s.abort_reason, s.complete) {
                (Some(f), _, _) => format!("failed: {}", f.message),
                (None, Some(why), _) => format!("incomplete: {why}"),
                (None, None, true) => "complete".into(),
                (None, None, false) => "incomplete (records dropped)".into(),
            },
        ),
        ("records offered", s.records_offered.to_string()),
        ("records queued", s.records_queued.to_string()),
        ("records written", s.records_written.to_string()),
        ("records dropped", s.records_dropped.to_string()),
        (
            "records durable (as data or as a stored loss)",
            s.durable_seq.to_string(),
        ),
        ("payload written", format_size(s.bytes_written)),
        ("file bytes (with frames)", format_size(s.file_bytes)),
        ("files", s.files.len().to_string()),
        ("duration", dur(s.duration_ns)),
        ("missed periods", s.missed_periods.to_string()),
        (
            "strategies",
            format!(
                "mode {}, alloc {}, flush {} every {}, io {}, {}",
                c.mode,
                c.alloc,
                c.flush,
                format_size(c.flush_every),
                c.io,
                c.framing
            ),
        ),
        ("ring", format_size(c.ring_bytes as u64)),
        ("file size", format_size(c.file_size)),
        (
            "flush thread",
            format!(
                "{} flushes, {} syncs, {} CPU",
                s.flush.flushes,
                s.flush.syncs,
                dur(s.flush.cpu_ns)
            ),
        ),
    ];
    if let (Some(asked), Some(records)) = (r.total_bytes, r.total_records) {
        rows.push((
            "--total",
            format!(
                "{} asked: {records} whole records (rounded down)",
                format_size(asked)
            ),
        ));
    }
    if let Some(cpu) = s.writer_cpu_ns {
        rows.push(("writer thread CPU", dur(cpu)));
    }
    if s.ring_waits > 0 {
        rows.push((
            "waits for room in the ring",
            format!(
                "{} ({} in all, longest {})",
                s.ring_waits,
                dur(s.ring_wait_ns),
                dur(s.ring_wait_max_ns)
            ),
        ));
    }
    for w in &s.warnings {
        rows.push(("warning", w.clone()));
    }
    rows
}

/// The page for an `rtrec record --json` result: its summary with units, a
/// box row per latency it holds and, with `record --timeline`, lateness,
/// `record()` and `write()` over time (`timeline_lateness_ns`,
/// `timeline_record_ns`, `timeline_write_ns`) and the `write()` histogram;
/// with `--explain`, the attribution table.
pub fn render_summary(r: &RecordResult) -> String {
    let mut b = String::from("<h1>rtrec record</h1><h2>Summary</h2><table>");
    for (name, value) in summary_rows(r) {
        let _ = write!(
            b,
            r#"<tr><th class="l">{}</th><td class="l">{}</td></tr>"#,
            esc(name),
            esc(&value)
        );
    }
    b.push_str("</table>");
    let s = &r.summary;
    let lat: Vec<(&str, LatencySummary)> = [
        ("write()", s.write_ns),
        ("record()", s.record_ns),
        ("lateness", s.lateness_ns),
    ]
    .into_iter()
    .filter_map(|(name, l)| Some((name, l?)))
    .collect();
    if !lat.is_empty() {
        b.push_str("<h2>Latencies</h2><table><tr><th class=\"l\">what</th><th>count</th><th>min</th><th>mean</th><th>p50</th><th>p99</th><th>p99.9</th><th>max</th></tr>");
        for (k, s) in &lat {
            let _ = write!(
                b,
                r#"<tr><td class="l">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>"#,
                esc(k),
                s.count,
                dur(s.min),
                dur(s.mean),
                dur(s.p50),
                dur(s.p99),
                dur(s.p999),
                dur(s.max)
            );
        }
        b.push_str("</table>");
        // Quartiles of the raw samples when --timeline kept them all.
        let samples = |k: &str| match k {
            "write()" => &r.timeline_write_ns,
            "record()" => &r.timeline_record_ns,
            _ => &r.timeline_lateness_ns,
        };
        let rows: Vec<BoxRow> = lat
            .iter()
            .map(|(k, s)| BoxRow::of_samples(k, s, samples(k)))
            .collect();
        b.push_str(&box_plot(&rows));
    }
    // Over time: the producer's figures (lateness, record()) beside the
    // writer's (write()). The axis counts calls: the summary does not
    // carry the period.
    for (title, v) in [
        ("Lateness of each period's release", &r.timeline_lateness_ns),
        ("record() on the producer's thread", &r.timeline_record_ns),
        ("write() on the writer's thread", &r.timeline_write_ns),
    ] {
        if !v.is_empty() {
            let _ = write!(b, "<h2>{} over time</h2>", esc(title));
            b.push_str(&timeline_of(v, 0, None, None));
        }
    }
    if !r.timeline_write_ns.is_empty() {
        b.push_str("<h2>write() latency histogram</h2>");
        b.push_str(&histogram(&r.timeline_write_ns));
    }
    // The attribution is rtrec-trace's type; a section it cannot read is
    // left out rather than drawn wrong.
    let explained = r.explain.clone().map(serde_json::from_value::<Explanation>);
    if let Some(Ok(x)) = explained {
        let _ = write!(
            b,
            "<h2>Attribution of slow write() calls</h2><pre>{}</pre>",
            esc(&rtrec_trace::table::render(&x, None))
        );
    }
    page("rtrec record report", &b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::s4::S4Cell;

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
