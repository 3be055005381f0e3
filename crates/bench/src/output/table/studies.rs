//! S3's and S4's tables: `fsync()` and the streamer's throughput per S3
//! variant with the article's figures below; S4's matrix (each job's
//! share against its weight share), the same matrix run by fio, and the
//! recording under interference.

use std::fmt::Write as _;

use rtrec_units::format_mb_per_s;

use super::cells::emulator_summary;
use crate::s3::S3Result;
use crate::s4::{S4Cell, S4Result};

/// The end of a row that failed: `  FAILED: why`; nothing when it did not.
fn failed(error: Option<&str>) -> String {
    error.map(|e| format!("  FAILED: {e}")).unwrap_or_default()
}

/// Figures of a cell joined as S4 prints them: `200:100`.
fn joined(parts: impl Iterator<Item = String>) -> String {
    parts.collect::<Vec<_>>().join(":")
}

/// S3's table: fsync latency and the streamer's throughput per variant,
/// the article's figures below.
pub fn render_s3(r: &S3Result) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\nS3 fsync under streaming writes\n{:<26} {:>6} {:>10} {:>10} {:>10} {:>12} {:>12}",
        "case", "rounds", "fsync min", "avg", "max", "stream alone", "with tester"
    );
    // 0: the streamer gave no figure (it did not end within its grace, as
    // a writer blocked on a slow device may not, and was killed).
    let mbs = |b: f64| {
        if b > 0.0 {
            format_mb_per_s(b)
        } else {
            "-".to_string()
        }
    };
    for c in &r.cases {
        let f = |g: fn(&rtrec_engine::LatencySummary) -> u64| {
            c.fsync_ns
                .map(|s| rtrec_units::format_duration(g(&s)))
                .unwrap_or("-".into())
        };
        let _ = writeln!(
            out,
            "{:<26} {:>6} {:>10} {:>10} {:>10} {:>12} {:>12}{}",
            c.name,
            c.rounds,
            f(|s| s.min),
            f(|s| s.mean),
            f(|s| s.max),
            mbs(c.stream_alone_bytes_per_s),
            mbs(c.stream_with_tester_bytes_per_s),
            failed(c.error.as_deref())
        );
    }
    for c in &r.cases {
        if let Some(e) = &c.emulator {
            let _ = writeln!(out, "{}: emulated device {}", c.name, emulator_summary(e));
        }
    }
    if r.cases.iter().any(|c| {
        c.error.is_none()
            && (c.stream_alone_bytes_per_s <= 0.0 || c.stream_with_tester_bytes_per_s <= 0.0)
    }) {
        let _ = writeln!(
            out,
            "-: the streamer gave no figure (it did not end within its grace after being asked to stop, and was killed)"
        );
    }
    let p = &r.published;
    let _ = writeln!(
        out,
        "published (2.6.29, 5,400 rpm disk): unpatched fsync {}–{} s, patched {}–{} s; stream {} → {} MB/s",
        p.unpatched_fsync_s.0, p.unpatched_fsync_s.1, p.patched_fsync_s.0, p.patched_fsync_s.1,
        p.stream_mb_per_s.0, p.stream_mb_per_s.1
    );
    out
}

/// S4's tables: each job's share against its weight share per cell, then
/// the recording under interference.
pub fn render_s4(r: &S4Result) -> String {
    let mut out = format!(
        "\nS4 BFQ weights on {} ({}), {} s per cell, own load processes\n",
        r.device, r.cgroup_interface, r.cell_s
    );
    for line in &r.skipped {
        let _ = writeln!(out, "not run: {line}");
    }
    s4_cells(&mut out, &r.cells);
    if let Some(f) = &r.fio {
        let _ = writeln!(
            out,
            "\nS4 the same matrix with {} (libaio, iodepth 1; {})",
            f.version, f.cgroup_join
        );
        s4_cells(&mut out, &f.cells);
    }
    let _ = writeln!(
        out,
        "\nThe recording (16 KiB every 5 ms, rtrec default) against a direct and a buffered 100 MB writer\n{:<28} {:<7} {:<6} {:>10} {:>10} {:>10} {:>7} {:>8} {:>12}",
        "case", "class", "weight", "write max", "record max", "late max", "missed", "dropped", "interferers"
    );
    for c in &r.isolated {
        let m = |l: Option<rtrec_engine::LatencySummary>| {
            l.map(|s| rtrec_units::format_duration(s.max))
                .unwrap_or("-".into())
        };
        let _ = writeln!(
            out,
            "{:<28} {:<7} {:<6} {:>10} {:>10} {:>10} {:>7} {:>8} {:>12}{}",
            c.name,
            c.io_class.as_deref().unwrap_or("-"),
            c.io_weight.map_or("-".into(), |w| w.to_string()),
            m(c.write_ns),
            m(c.record_ns),
            m(c.lateness_ns),
            c.missed_periods,
            c.records_dropped,
            format_mb_per_s(c.interferers_bytes_per_s),
            failed(c.error.as_deref())
        );
    }
    out
}

/// The rows of an S4 matrix, with the BFQ tunables in force.
fn s4_cells(out: &mut String, cells: &[S4Cell]) {
    let _ = writeln!(
        out,
        "{:<12} {:<8} {:<5} {:>8} {:<12} {:<16} {:<16} {:>10}  device bytes per group",
        "scheduler", "mode", "dir", "request", "weights", "share %", "target %", "total"
    );
    let pct = |v: &[f64]| joined(v.iter().map(|p| format!("{p:.0}")));
    for c in cells {
        let dev = joined(
            c.cgroup_device_bytes
                .iter()
                .map(|b| b.map_or("-".into(), |b| format!("{}MB", b / 1_000_000))),
        );
        let _ = writeln!(
            out,
            "{:<12} {:<8} {:<5} {:>8} {:<12} {:<16} {:<16} {:>10}  {}{}",
            c.scheduler,
            if c.direct { "direct" } else { "buffered" },
            c.direction,
            rtrec_units::format_size(c.request_bytes),
            if c.weights_applied {
                joined(c.weights.iter().map(u32::to_string))
            } else {
                "unweighted".to_string()
            },
            pct(&c.share_pct),
            pct(&c.target_pct),
            format_mb_per_s(c.job_bytes_per_s.iter().sum::<f64>()),
            dev,
            failed(c.error.as_deref())
        );
    }
    if let Some(c) = cells.iter().find(|c| !c.bfq_tunables.is_empty()) {
        let _ = writeln!(out, "BFQ tunables in force: {}", c.bfq_tunables.join(" "));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::s3::S3Case;

    #[test]
    fn s3_shows_a_missing_stream_figure_as_a_dash_with_its_reason() {
        let case = |alone: f64| S3Case {
            name: "S3-FSYNC-ORDERED".into(),
            data_mode: "ordered".into(),
            mount_options: String::new(),
            window_bytes: 0,
            rounds: 1,
            fsync_ns: None,
            fsync_samples_ns: Vec::new(),
            stream_alone_bytes_per_s: alone,
            stream_with_tester_bytes_per_s: 21e6,
            error: None,
            emulator: None,
        };
        let r = |alone| S3Result {
            published: crate::s3::published(),
            cases: vec![case(alone)],
        };
        let missing = render_s3(&r(0.0));
        assert!(!missing.contains("0 MB/s "), "{missing}");
        assert!(
            missing.contains("-: the streamer gave no figure"),
            "{missing}"
        );
        let present = render_s3(&r(24e6));
        assert!(present.contains("24 MB/s"), "{present}");
        assert!(!present.contains("gave no figure"), "{present}");
    }
}
