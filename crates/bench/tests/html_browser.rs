//! The HTML report drawn by a real browser: headless Chromium loads a
//! report of made-up measurements (S1 cases, and S3 and S4 sections with
//! their plots), a screenshot is taken, and a probe
//! script appended to a copy of the page checks that every plot is drawn
//! (each SVG has a size and non-empty shapes of the kinds it should) and
//! that no script error occurred. A control page without plots shows the
//! screenshot check bites: its PNG is much smaller.
//!
//! The recording's report (`rtrec report` of a `record --json --timeline`
//! result) is drawn the same way: its summary in readable names with
//! units, one box convention, axes with values, and lateness, `record()`
//! and `write()` over time.
//!
//! `RTREC_KEEP_SCREENSHOT=DIR` keeps the page and the screenshot in DIR.
//!
//! Needs Debian's `chromium` (`.ci/run` installs it). Without it the test
//! skips with the reason, and fails when `RTREC_REQUIRE_PRIVILEGED=1` (CI).

use std::path::Path;
use std::process::Command;

use rtrec_bench::export::{Exporter, HtmlExporter};
use rtrec_bench::protocol::{Overrides, Protocol};
use rtrec_bench::report::{BenchReport, CaseResult, Environment, SetResult, SCHEMA_VERSION};
use rtrec_bench::s3::{S3Case, S3Result};
use rtrec_bench::s4::{IsolatedCase, S4Cell, S4Result, SCHEDS, SIZES};
use rtrec_bench::scenario::{find, Flusher};
use rtrec_engine::LatencySummary;

fn summary(v: &[u64]) -> LatencySummary {
    let mut s = v.to_vec();
    s.sort_unstable();
    let q = |f: f64| s[((s.len() - 1) as f64 * f) as usize];
    LatencySummary {
        count: s.len() as u64,
        min: s[0],
        mean: s.iter().sum::<u64>() / s.len() as u64,
        p50: q(0.5),
        p99: q(0.99),
        p999: q(0.999),
        max: s[s.len() - 1],
    }
}

/// A report of three cases with deterministic, spiky samples.
fn made_up_report() -> BenchReport {
    let mut cases = Vec::new();
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for name in ["NONE", "ALL", "WPRE-SDATA-FON-BGALL"] {
        let s = find(name).unwrap();
        let p = Protocol::for_study(s.study, &Overrides::default());
        let mut c = CaseResult::new(s, &p, Flusher::On);
        for set in 0..3u32 {
            let samples: Vec<u64> = (0..2000)
                .map(|i| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let base = 8_000 + x % 6_000;
                    if i % 257 == 0 {
                        base * 40
                    } else {
                        base
                    }
                })
                .collect();
            let w = summary(&samples);
            c.sets.push(SetResult {
                index: set,
                write_ns: Some(w),
                record_ns: None,
                lateness_ns: None,
                missed_periods: 0,
                flush_cpu_s: None,
                writer_cpu_s: None,
                dirty_peak_bytes: 0,
                records_dropped: 0,
                reader_bytes_per_s: None,
                duration_s: 10.0,
                error: None,
            });
            c.write_ns = Some(w);
            c.write_samples_ns = samples;
            c.reported_set = Some(set);
        }
        cases.push(c);
    }
    BenchReport {
        schema_version: SCHEMA_VERSION,
        environment: Environment {
            kernel: "6.1.0".into(),
            cpu: "test <cpu> & co".into(),
            ..Environment::default()
        },
        warnings: vec!["a made-up report".into()],
        complete: true,
        interrupted: false,
        cases,
        s3: Some(made_up_s3()),
        s4: Some(made_up_s4()),
    }
}

/// S3's three variants, 30 rounds of fsync each, one spike per variant.
fn made_up_s3() -> S3Result {
    let cases = rtrec_bench::s3::VARIANTS
        .iter()
        .enumerate()
        .map(|(k, v)| {
            let samples: Vec<u64> = (0..30u64)
                .map(|i| {
                    (20 + 7 * i % 13) * 1_000_000 * (k as u64 + 1) * if i == 17 { 20 } else { 1 }
                })
                .collect();
            S3Case {
                name: v.name.into(),
                data_mode: v.data.into(),
                mount_options: "rw,relatime".into(),
                window_bytes: v.window_bytes,
                rounds: 30,
                fsync_ns: Some(summary(&samples)),
                fsync_samples_ns: samples,
                stream_alone_bytes_per_s: 120e6,
                stream_with_tester_bytes_per_s: 110e6,
                error: None,
                emulator: None,
            }
        })
        .collect();
    S3Result {
        published: rtrec_bench::s3::published(),
        cases,
    }
}

/// S4's 2:1 matrix (every scheduler, size and I/O kind; the share falls
/// with the request size under plain BFQ) and one recording case.
fn made_up_s4() -> S4Result {
    let mut cells = Vec::new();
    for s in SCHEDS {
        for (i, &size) in SIZES.iter().enumerate() {
            for (direct, dir) in [
                (true, "read"),
                (true, "write"),
                (false, "read"),
                (false, "write"),
            ] {
                let share = match s.label {
                    "bfq" => 66.0 - 3.0 * i as f64,
                    "bfq-strict" => 65.0,
                    _ => 50.0,
                };
                cells.push(S4Cell {
                    scheduler: s.label.into(),
                    bfq_tunables: vec!["slice_idle=8".into()],
                    direction: dir.into(),
                    direct,
                    request_bytes: size,
                    weights: vec![200, 100],
                    job_bytes_per_s: vec![share * 1e6, (100.0 - share) * 1e6],
                    share_pct: vec![share, 100.0 - share],
                    target_pct: vec![66.7, 33.3],
                    cgroup_device_bytes: vec![Some(300_000_000), None],
                    error: None,
                    weights_applied: true,
                });
            }
        }
    }
    let w = summary(&[20_000, 30_000, 4_000_000]);
    S4Result {
        cgroup_interface: "cgroup v2 (io.bfq.weight)".into(),
        device: "/dev/loop9".into(),
        cell_s: 3.0,
        cells,
        isolated: vec![IsolatedCase {
            name: "RTREC-ISOLATED-BFQ-RT".into(),
            scheduler: "bfq".into(),
            io_class: Some("rt:0".into()),
            io_weight: Some(1000),
            write_ns: Some(w),
            record_ns: Some(w),
            lateness_ns: Some(w),
            missed_periods: 0,
            records_dropped: 0,
            interferers_bytes_per_s: 90e6,
            error: None,
        }],
        fio: None,
        skipped: Vec::new(),
    }
}

/// Appended to a copy of the report: counts what the browser drew and
/// writes the result where `--dump-dom` shows it.
const PROBE: &str = r#"<script>
window.__errors = [];
window.addEventListener('error', e => window.__errors.push(String(e.message)));
window.addEventListener('load', () => {
  const plots = [...document.querySelectorAll('svg.plot')].map(svg => {
    const r = svg.getBoundingClientRect();
    const drawn = [...svg.querySelectorAll('rect,line,circle')]
      .filter(el => { const b = el.getBBox(); return b.width > 0 || b.height > 0; }).length;
    return { kind: svg.getAttribute('class'), w: Math.round(r.width), h: Math.round(r.height), drawn };
  });
  const out = document.createElement('pre');
  out.id = 'probe';
  out.textContent = 'PRO' + 'BE:' + JSON.stringify({ plots, errors: window.__errors }) + ':EN' + 'D';
  document.body.appendChild(out);
});
</script>"#;

fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser"].into_iter().find(|c| {
        Command::new(c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

fn headless(browser: &str, extra: &[&str], page: &Path) -> std::process::Output {
    Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--hide-scrollbars",
            "--virtual-time-budget=3000",
        ])
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs")
}

#[test]
fn the_report_is_drawn_by_headless_chromium_without_script_errors() {
    let Some(browser) = chromium() else {
        // Neither name answered: the one rule for a missing program.
        if rtrec_host::tools::require(
            "the_report_is_drawn_by_headless_chromium_without_script_errors",
            &[rtrec_host::tools::CHROMIUM],
        ) {
            panic!("chromium is on PATH but `chromium --version` fails");
        }
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let html = String::from_utf8(HtmlExporter.serialize(&made_up_report()).unwrap()).unwrap();
    // Self-contained: no script, no external reference.
    assert!(!html.contains("<script"), "the report has no script");
    assert!(!html.contains("http://") || !html.contains("src=\"http"));
    assert!(!html.contains("https://"), "no network reference");
    assert!(
        html.contains("test &lt;cpu&gt; &amp; co"),
        "text is escaped"
    );

    let report = dir.path().join("report.html");
    std::fs::write(&report, &html).unwrap();
    let v = probe(browser, dir.path(), &html);
    assert_eq!(v["errors"].as_array().unwrap().len(), 0, "{v}");
    let plots = v["plots"].as_array().unwrap();
    let count = |kind: &str| {
        plots
            .iter()
            .filter(|p| p["kind"].as_str().unwrap().ends_with(kind))
            .count()
    };
    // S1's box plot and S3's; per case a timeline, a histogram and the
    // spread; per S3 variant fsync over the rounds; S4's share plot.
    assert_eq!(count("boxplot"), 2, "{v}");
    assert_eq!(count("timeline"), 3 + 3, "{v}");
    assert_eq!(count("histogram"), 3, "{v}");
    assert_eq!(count("spread"), 3, "{v}");
    assert_eq!(count("s4share"), 1, "{v}");
    for t in [
        "S3: fsync()",
        "published, 2.6.29 unpatched",
        "S4: BFQ weights",
        "breaks down (past BFQ&#39;s budget)",
        "RTREC-ISOLATED-BFQ-RT",
    ] {
        assert!(
            html.contains(t) || html.contains(&t.replace("&#39;", "'")),
            "{t}"
        );
    }
    for p in plots {
        assert!(p["w"].as_u64().unwrap() > 100, "{p}");
        assert!(p["h"].as_u64().unwrap() > 20, "{p}");
        assert!(p["drawn"].as_u64().unwrap() >= 6, "an empty plot: {p}");
    }

    let shot = dir.path().join("report.png");
    let out = headless(
        browser,
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1200,6000",
        ],
        &report,
    );
    assert!(shot.exists(), "{}", String::from_utf8_lossy(&out.stderr));
    let png = std::fs::read(&shot).unwrap();
    // For a look by a person: RTREC_KEEP_SCREENSHOT=DIR keeps page and PNG.
    if let Some(keep) = std::env::var_os("RTREC_KEEP_SCREENSHOT") {
        let keep = Path::new(&keep);
        std::fs::write(keep.join("report.png"), &png).unwrap();
        std::fs::write(keep.join("report.html"), &html).unwrap();
    }
    assert_eq!(&png[1..4], b"PNG");
    // The control: the same window of an empty page compresses to far less.
    let blank = dir.path().join("blank.html");
    std::fs::write(&blank, "<!DOCTYPE html><html><body></body></html>").unwrap();
    let blank_shot = dir.path().join("blank.png");
    headless(
        browser,
        &[
            &format!("--screenshot={}", blank_shot.display()),
            "--window-size=1200,6000",
        ],
        &blank,
    );
    let blank_len = std::fs::metadata(&blank_shot).unwrap().len();
    eprintln!(
        "screenshot: {} bytes (blank page: {blank_len} bytes), {} plots drawn",
        png.len(),
        plots.len()
    );
    assert!(
        png.len() as u64 > 5 * blank_len,
        "the screenshot is nearly blank: {} vs {blank_len} bytes",
        png.len()
    );
}

/// A recording's result: 3,000 periods with a slow start of the writer
/// every 500 calls, and the producer's figures beside it.
fn made_up_recording() -> rtrec_engine::result::RecordResult {
    use rtrec_engine::{Config, Latency, Summary};
    let n = 3000u64;
    let write: Vec<u64> = (0..n)
        .map(|i| {
            if i % 500 == 7 {
                3_000_000
            } else {
                12_000 + i % 37 * 100
            }
        })
        .collect();
    let record: Vec<u64> = (0..n).map(|i| 1_500 + i % 11 * 90).collect();
    let late: Vec<u64> = (0..n)
        .map(|i| {
            if i % 700 == 3 {
                2_000_000
            } else {
                60_000 + i % 13 * 1_000
            }
        })
        .collect();
    let hist = |v: &[u64]| {
        let mut l = Latency::new();
        v.iter().for_each(|&x| l.record(x));
        l
    };
    let summary = Summary {
        file_sizing: None,
        config: Config::default(),
        complete: true,
        abort_reason: None,
        records_offered: n,
        records_queued: n,
        records_written: n,
        records_dropped: 0,
        durable_seq: n,
        drops: Default::default(),
        layout_misfits: 0,
        losses_stored: 0,
        bytes_written: n << 14,
        file_bytes: (n << 14) + n * 32,
        files: vec!["rec-0001.rtr".into()],
        missed_periods: 0,
        write_ns: hist(&write).summary(),
        record_ns: hist(&record).summary(),
        lateness_ns: hist(&late).summary(),
        flush: Default::default(),
        writer_cpu_ns: Some(40_000_000),
        pool: Default::default(),
        retired_files: 0,
        retired_bytes: 0,
        retired_seq_to: 0,
        retired_events: 0,
        retired_earlier_files: 0,
        retired_earlier_bytes: 0,
        retired_late_files: 0,
        retired_unclaimed: 0,
        retired_unshipped_files: 0,
        retired_unshipped_bytes: 0,
        retired_empty_recordings: 0,
        retired_other_recordings: Vec::new(),
        io_resubmitted: 0,
        flight: None,
        triggers: 0,
        ring_waits: 0,
        ring_wait_ns: 0,
        ring_wait_max_ns: 0,
        duration_ns: 3_072_137_215,
        error: None,
        end_complete: true,
        warnings: vec![],
        write_samples: write,
        record_samples: vec![],
        write_latency: Latency::new(),
        record_latency: Latency::new(),
    };
    let mut r = rtrec_engine::result::RecordResult::new(summary);
    r.timeline_record_ns = record;
    r.timeline_lateness_ns = late;
    r
}

/// Loads `html` with the probe appended; the probe's findings.
fn probe(browser: &str, dir: &Path, html: &str) -> serde_json::Value {
    let probed = dir.join("probed.html");
    std::fs::write(&probed, html.replace("</body>", &format!("{PROBE}</body>"))).unwrap();
    let dom = headless(browser, &["--dump-dom"], &probed);
    let text = String::from_utf8_lossy(&dom.stdout);
    let json = text
        .split("PROBE:")
        .nth(1)
        .and_then(|t| t.split(":END").next())
        .unwrap_or_else(|| panic!("no probe result: {}", String::from_utf8_lossy(&dom.stderr)));
    serde_json::from_str(json).unwrap()
}

#[test]
fn the_recording_report_reads_as_a_person_would_and_is_drawn_by_chromium() {
    let name = "the_recording_report_reads_as_a_person_would_and_is_drawn_by_chromium";
    let Some(browser) = chromium() else {
        if rtrec_host::tools::require(name, &[rtrec_host::tools::CHROMIUM]) {
            panic!("chromium is on PATH but `chromium --version` fails");
        }
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let html = rtrec_bench::export::html::render_summary(&made_up_recording());
    // Readable names and values with units, not the JSON's fields.
    for t in [
        "<th class=\"l\">duration</th><td class=\"l\">3.07 s</td>",
        "<th class=\"l\">payload written</th><td class=\"l\">46.9 MiB</td>",
        "Lateness of each period&#39;s release over time",
        "record() on the producer&#39;s thread over time",
        "write() on the writer&#39;s thread over time",
    ] {
        assert!(
            html.contains(t) || html.contains(&t.replace("&#39;", "'")),
            "{t} missing"
        );
    }
    for raw in ["duration_ns", "bytes_written", "3072137215"] {
        assert!(!html.contains(raw), "a raw field or value: {raw}");
    }
    // Nothing red is drawn, so the legend names nothing red.
    assert!(!html.contains("class=\"pub\""), "a published mark");
    assert!(!html.contains("published"), "a published legend entry");
    // One box convention, named alike in the legend, caption and tooltips:
    // the quartiles of the samples.
    assert!(html.contains("box first to third quartile"));
    assert!(html.contains("box from first to third quartile of the reported calls"));
    assert_eq!(html.matches(", q1 ").count(), 3, "one tooltip per row");
    assert!(!html.contains("p50 to p99"));
    // Values on every axis: the histogram's counts, the timelines' calls.
    assert!(
        html.matches("class=\"ytick\"").count() >= 3,
        "histogram counts"
    );
    assert_eq!(html.matches("class=\"xtick\"").count(), 3 * 4, "time ticks");

    let v = probe(browser, dir.path(), &html);
    assert_eq!(v["errors"].as_array().unwrap().len(), 0, "{v}");
    let plots = v["plots"].as_array().unwrap();
    let kinds: Vec<&str> = plots.iter().map(|p| p["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "plot boxplot",
            "plot timeline",
            "plot timeline",
            "plot timeline",
            "plot histogram"
        ],
        "{v}"
    );
    for p in plots {
        assert!(p["w"].as_u64().unwrap() > 100, "{p}");
        assert!(p["drawn"].as_u64().unwrap() >= 6, "an empty plot: {p}");
    }
    let page = dir.path().join("recording.html");
    std::fs::write(&page, &html).unwrap();
    let shot = dir.path().join("recording.png");
    headless(
        browser,
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1200,2400",
        ],
        &page,
    );
    let png = std::fs::read(&shot).unwrap();
    assert_eq!(&png[1..4], b"PNG");
    if let Some(keep) = std::env::var_os("RTREC_KEEP_SCREENSHOT") {
        let keep = Path::new(&keep);
        std::fs::write(keep.join("recording.png"), &png).unwrap();
        std::fs::write(keep.join("recording.html"), &html).unwrap();
    }
}
