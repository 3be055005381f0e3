//! S3's section: the table (measured per variant, the article's figures
//! below it), a box plot of `fsync()` per variant against the article's
//! range, and `fsync()` over the tester's rounds per variant.
//!
//! Design choice: S3's published figures are a range for the whole study
//! (ext3 `data=ordered` on 2.6.29, without and with the fix), so every
//! variant's box is drawn against the unpatched range and both are rows of
//! the table.

use std::fmt::Write as _;

use rtrec_engine::LatencySummary;
use rtrec_units::format_mb_per_s;

use crate::report::PublishedFigure;
use crate::s3::{S3Case, S3Published, S3Result};

use super::box_plot::{box_plot_against, BoxRow};
use super::markup::{dur, esc, failed_cell};
use super::timeline::timeline_of;

/// S3: the table (measured per variant, the article's figures below it),
/// a box plot of `fsync()` per variant against the article's range, and
/// `fsync()` over the tester's rounds per variant.
pub fn s3_section(r: &S3Result) -> String {
    let mut b = String::from("<h2>S3: fsync() under streaming writes (LWN 2009)</h2>");
    b.push_str(r#"<table><tr><th class="l">case</th><th class="l">mount</th><th>window</th><th>rounds</th><th>fsync min</th><th>avg</th><th>max</th><th>stream alone</th><th>with tester</th></tr>"#);
    for c in &r.cases {
        b.push_str(&variant_row(c));
    }
    published_rows(&mut b, &r.published);
    b.push_str("</table>");
    b.push_str(&plots(r));
    b
}

/// A variant's row: its mount and window, then its figures or why it
/// failed.
fn variant_row(c: &S3Case) -> String {
    let window = match c.window_bytes {
        0 => "none".to_string(),
        w => rtrec_units::format_size(w),
    };
    let mut b = format!(
        r#"<tr><td class="l">{}</td><td class="l">data={} ({})</td><td>{window}</td><td>{}</td>"#,
        esc(&c.name),
        esc(&c.data_mode),
        esc(&c.mount_options),
        c.rounds
    );
    let f = |g: fn(&LatencySummary) -> u64| c.fsync_ns.as_ref().map_or("–".into(), |s| dur(g(s)));
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
    b
}

/// The article's two rows: 2.6.29 without and with the fix.
fn published_rows(b: &mut String, p: &S3Published) {
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
}

/// The measured variants' box plot against the unpatched range, then each
/// one's `fsync()` over the rounds; nothing when none was measured.
fn plots(r: &S3Result) -> String {
    let p = &r.published;
    let measured: Vec<&S3Case> = r.cases.iter().filter(|c| c.fsync_ns.is_some()).collect();
    if measured.is_empty() {
        return String::new();
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
    let mut b = String::from("<h3>fsync() per variant</h3>");
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
