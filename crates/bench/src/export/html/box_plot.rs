//! Box plots in the style of S1's Fig. 4: one row per case (or variant,
//! or latency of a recording), the measured box with whiskers from min to
//! max and under it the published min–max with a tick at its average.
//!
//! Design choice: quartiles come from the reported set's raw samples when
//! the report has them; otherwise the box spans p50..p99 of the summary,
//! and the legend, the caption and every tooltip say so. One convention
//! holds for the whole plot ([`Convention`]): quartiles only when every
//! row has them.

use std::fmt::Write as _;

use rtrec_engine::LatencySummary;

use crate::report::{BenchReport, CaseResult, PublishedFigure};

use super::axis::LogAxis;
use super::markup::{dur, esc};

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

/// Pixels per row.
const ROW: f64 = 34.0;
/// Where the axis starts (the names are right-aligned before it).
const LEFT: f64 = 230.0;

/// S1 Fig. 4: one row per case, the measured box (whiskers min to max) and
/// under it the published min–max with a tick at its average.
pub fn box_plot(rows: &[BoxRow]) -> String {
    box_plot_against(rows, S1_SOURCE)
}

/// The plot's one convention, named alike in the legend, the caption and
/// every tooltip: quartiles only when every row has them, else p50..p99.
struct Convention {
    /// Every row's box is quartiles of raw samples.
    raw: bool,
    /// What the box spans, in words.
    box_name: &'static str,
    /// The tooltip's names of the box's left edge, middle and right edge.
    q1: &'static str,
    mid: &'static str,
    q3: &'static str,
}

impl Convention {
    fn of(rows: &[BoxRow]) -> Convention {
        if rows.iter().all(|r| r.raw) {
            Convention {
                raw: true,
                box_name: "first to third quartile",
                q1: "q1",
                mid: "median",
                q3: "q3",
            }
        } else {
            Convention {
                raw: false,
                box_name: "p50 to p99",
                q1: "p50",
                mid: "p50",
                q3: "p99",
            }
        }
    }
}

/// [`box_plot`] with the published figures' `source` (where they were
/// measured) in the legend and caption.
pub fn box_plot_against(rows: &[BoxRow], source: &str) -> String {
    let (lo, hi) = extent(rows);
    let axis = LogAxis::new(lo, hi, LEFT, 800.0);
    let h = 30.0 + ROW * rows.len() as f64 + 48.0;
    let mut s = format!(
        r#"<svg class="plot boxplot" width="1060" height="{h}" viewBox="0 0 1060 {h}" xmlns="http://www.w3.org/2000/svg">"#
    );
    axis.draw(&mut s, 10.0, h - 48.0);
    let names = Convention::of(rows);
    // The published entry only when a published range is drawn.
    let published_drawn = rows.iter().any(|r| {
        r.published
            .as_ref()
            .is_some_and(|p| p.min_us.is_some() && p.max_us.is_some())
    });
    let source = published_drawn.then_some(source);
    legend(&mut s, h, &names, source);
    for (i, c) in rows.iter().enumerate() {
        let y = 20.0 + ROW * i as f64;
        measured(&mut s, &axis, c, y, &names);
        if let Some(p) = &c.published {
            published(&mut s, &axis, p, y + 11.0);
        }
    }
    s.push_str("</svg>");
    caption(&mut s, &names, source);
    s
}

/// The smallest and largest figure of the rows, measured or published, ns.
fn extent(rows: &[BoxRow]) -> (u64, u64) {
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
    (lo, hi)
}

/// The legend under the plot (at `h`, its height): the measured box and,
/// when a published range is drawn, the published line with its `source`.
fn legend(s: &mut String, h: f64, names: &Convention, source: Option<&str>) {
    let _ = write!(
        s,
        r#"<rect class="box" x="{LEFT}" y="{0}" width="14" height="10"/><text x="{1}" y="{2}">measured here: box {3}, whiskers min to max</text>"#,
        h - 14.0,
        LEFT + 20.0,
        h - 5.0,
        names.box_name,
    );
    if let Some(source) = source {
        let _ = write!(
            s,
            r#"<line class="pub" x1="{0}" y1="{1}" x2="{2}" y2="{1}"/><text x="{3}" y="{4}">published ({5}), tick at the average</text>"#,
            LEFT + 360.0,
            h - 9.0,
            LEFT + 380.0,
            LEFT + 386.0,
            h - 5.0,
            esc(source)
        );
    }
}

/// One row's name, whiskers, box (its five numbers in the tooltip) and
/// middle line, centred on `y`.
fn measured(s: &mut String, axis: &LogAxis, c: &BoxRow, y: f64, names: &Convention) {
    let [a, b, m, d, e] = c.five;
    let Convention { q1, mid, q3, .. } = names;
    // The median is named only for quartile boxes (p50 is the box's
    // left edge otherwise).
    let median = if names.raw {
        format!(" {mid} {}", dur(m))
    } else {
        String::new()
    };
    let _ = write!(
        s,
        r#"<text x="{}" y="{}" text-anchor="end">{}</text><line class="whisker" x1="{:.1}" y1="{y}" x2="{:.1}" y2="{y}"/><rect class="box" x="{:.1}" y="{}" width="{:.1}" height="12"><title>{}: min {}, {q1} {}{median}, {q3} {}, max {}</title></rect><line class="median" x1="{:.1}" y1="{}" x2="{:.1}" y2="{}"/>"#,
        LEFT - 8.0,
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
}

/// The published min–max at `py` (when both are published), with a tick
/// at the average.
fn published(s: &mut String, axis: &LogAxis, p: &PublishedFigure, py: f64) {
    let (Some(pmin), Some(pmax)) = (p.min_us, p.max_us) else {
        return;
    };
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

/// The caption under the plot: the convention in words, and the
/// published figures' `source` when they are drawn.
fn caption(s: &mut String, names: &Convention, source: Option<&str>) {
    let _ = write!(
        s,
        r#"<p class="cap">Blue: measured, box from {}{}; whiskers min to max.{}</p>"#,
        names.box_name,
        if names.raw {
            " of the reported calls, line at the median"
        } else {
            " (the summary holds no raw samples), line at p50"
        },
        source.map_or(String::new(), |source| format!(
            " Red: published min to max, tick at the average ({}).",
            esc(source)
        ))
    );
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
