//! The terminal tables: results (published beside measured, with ratios),
//! the scenario list of `--list`, and the comparison of `--compare`.
//! Plain text, fixed columns; durations and sizes print through
//! `rtrec-units` (a unit in every cell, as everywhere in rtrec), counts and
//! ratios through [`super::numbers`].

use std::fmt::Write as _;

use rtrec_units::{format_duration, format_mb_per_s, format_size};

use super::numbers::{div, ratio, thousands};
use crate::report::{BenchReport, CaseResult};
use crate::scenario::{self, Flusher, SCENARIOS};

/// A measured latency for a cell; `-` when there is none.
fn latency(ns: Option<u64>) -> String {
    ns.map(format_duration).unwrap_or_else(|| "-".into())
}

/// A published latency (whole µs, as printed in the study); `-` when not
/// published.
fn published(us: Option<u64>) -> String {
    latency(us.map(|us| us.saturating_mul(1000)))
}

/// The protocol lines above the table: how many calls, of what, how often.
pub fn protocol_lines(report: &BenchReport) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    for c in &report.cases {
        let p = &c.protocol;
        let line = format!(
            "{} set{} × {} calls every {}, records of {}, flush every {}, files of {}{}",
            p.sets,
            if p.sets == 1 { "" } else { "s" },
            thousands(p.writes),
            format_duration(p.period_ns),
            format_size(p.record_bytes),
            format_size(p.flush_every_bytes),
            format_size(p.file_bytes),
            if p.paper {
                " (the study's own protocol)"
            } else {
                ""
            }
        );
        if !seen.contains(&line) {
            seen.push(line);
        }
    }
    seen
}

/// The emulated device and its timing error, when there is one.
pub fn device_line(report: &BenchReport) -> Option<String> {
    let e = report.environment.emulator.as_ref()?;
    Some(format!(
        "Emulated device: {}; {}",
        emulator_summary(e),
        e.queue_summary()
    ))
}

/// `emmc (149,330 requests, 20,611 flushes, 1,256 GC pauses); emulator
/// timing error (served − asked): mean …`: the bench's device line and each
/// S3 variant's.
fn emulator_summary(e: &rtrec_emu::EmulatorStats) -> String {
    format!(
        "{} ({} requests, {} flushes, {} GC pauses); emulator timing error (served − asked): {}",
        e.profile,
        thousands(e.requests()),
        thousands(e.flushes),
        thousands(e.gc_pauses),
        e.error_summary()
    )
}

fn published_max_ratio(c: &CaseResult) -> Option<f64> {
    let s = scenario::find(&c.name)?;
    let r = scenario::find(s.reference?)?;
    div(
        s.published?.max_us.map(|v| v as f64),
        r.published?.max_us.map(|v| v as f64),
    )
}

fn measured_max_ratio(report: &BenchReport, c: &CaseResult) -> Option<f64> {
    let r = report.case(scenario::find(&c.name)?.reference?)?;
    div(c.max_ns().map(|v| v as f64), r.max_ns().map(|v| v as f64))
}

fn flusher_text(c: &CaseResult) -> &'static str {
    match (c.flusher.requested, c.flusher.applied) {
        (Flusher::Off, Flusher::Off) => "off",
        (Flusher::Off, Flusher::On) => "ON!",
        _ => "on",
    }
}

/// The results table, one row per case, then one note per case where
/// there is more to say (reader throughput, `record()` latency, errors).
/// Empty when no S1/S2/rtrec case ran (`--study s3` or `s4` alone): their
/// own tables follow, and an empty header would only mislead.
pub fn render_results(report: &BenchReport) -> String {
    let mut out = String::new();
    if report.cases.is_empty() {
        return out;
    }
    let _ = writeln!(
        out,
        "Each row: the set with the largest maximum; latencies of the timed call; set maxima: the smallest and largest maximum of the sets."
    );
    for l in protocol_lines(report) {
        let _ = writeln!(out, "Measured here: {l}.");
    }
    if let Some(l) = device_line(report) {
        let _ = writeln!(out, "{l}.");
    }
    let _ = writeln!(
        out,
        "Published figures come from a 1 GHz dual-core ARM board with eMMC (Linux 4.4): compare ratios and shapes, \
         not absolute times."
    );
    let explained = report.cases.iter().any(|c| c.explain.is_some());
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "{:<24} {:>4} | {:>30} | {:>62} {:>6} {:>9} | {:>27} | {:>17}",
        "", "", "PUBLISHED (ARM, eMMC)", "MEASURED HERE", "", "", "max ÷ reference max", "max ÷"
    );
    let _ = writeln!(
        out,
        "{:<24} {:>4} | {:>9} {:>9} {:>10} | {:>9} {:>9} {:>12} {:>10} {:>18} {:>6} {:>9} | {:<11} {:>7} {:>7} | {:>7} {:>9}{}",
        "case", "fl.", "min", "avg", "max", "min", "avg", "p99.9", "max", "set maxima", "missed", "dirty", "reference", "pub", "here",
        "floor", "pagecache", if explained { " | main cause" } else { "" }
    );
    let mut notes = Vec::new();
    let mut attributions = String::new();
    for c in &report.cases {
        let p = c.published.as_ref();
        let w = c.write_ns;
        let reference = scenario::find(&c.name)
            .and_then(|s| s.reference)
            .unwrap_or("-");
        let _ = writeln!(
            out,
            "{:<24} {:>4} | {:>9} {:>9} {:>10} | {:>9} {:>9} {:>12} {:>10} {:>18} {:>6} {:>9} | {:<11} {:>7} {:>7} | {:>7} {:>9}{}",
            c.name,
            flusher_text(c),
            published(p.and_then(|p| p.min_us)),
            published(p.and_then(|p| p.avg_us)),
            published(p.and_then(|p| p.max_us)),
            latency(w.map(|w| w.min)),
            latency(w.map(|w| w.mean)),
            latency(w.map(|w| w.p999)),
            latency(w.map(|w| w.max)),
            c.set_max_range()
                .filter(|_| c.sets.len() > 1)
                .map_or("-".into(), |(a, b)| format!("{}–{}", format_duration(a), format_duration(b))),
            if w.is_some() { thousands(c.missed_periods) } else { "-".into() },
            if w.is_some() { format_size(c.dirty_peak_bytes) } else { "-".into() },
            reference,
            ratio(published_max_ratio(c)),
            ratio(measured_max_ratio(report, c)),
            ratio(c.max_over_noise_floor),
            ratio(c.max_over_pagecache_floor),
            main_cause(c, explained),
        );
        if let Some(x) = &c.explain {
            let published = scenario::find(&c.name).and_then(crate::explain::published_cause);
            let _ = writeln!(attributions, "{}:", c.name);
            attributions.push_str(&rtrec_trace::table::render(x, published));
        }
        if let Some(r) = &c.reader {
            let published = p
                .and_then(|p| p.reader_throughput_pct)
                .map(|v| format!(" (published {v} %)"))
                .unwrap_or_default();
            notes.push(format!(
                "{}: the reader ran at {} of its throughput alone{} ({} alone)",
                c.name,
                r.during_pct
                    .map(|v| format!("{v:.0} %"))
                    .unwrap_or_else(|| "?".into()),
                published,
                format_mb_per_s(r.alone_bytes_per_s)
            ));
        }
        if let Some(r) = c.record_ns {
            notes.push(format!(
                "{}: record() on the producer took {} at most (p99.9 {}); the row is write() on the writer thread{}",
                c.name,
                format_duration(r.max),
                format_duration(r.p999),
                ring_held(c)
            ));
        }
        if c.records_dropped > 0 {
            notes.push(format!(
                "{}: {} records dropped (ring full), counted",
                c.name,
                thousands(c.records_dropped)
            ));
        }
        if let Some(e) = &c.error {
            notes.push(format!("{}: FAILED: {e}", c.name));
        }
        if c.interrupted {
            notes.push(format!(
                "{}: interrupted; only the sets completed before are shown",
                c.name
            ));
        }
        if let Some(e) = c.sets.iter().find_map(|s| s.error.as_ref()) {
            notes.push(format!("{}: the engine reported an I/O error: {e}", c.name));
        }
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "fl.: kernel flusher during the case (off = FOFF applied, ON! = FOFF asked but not applied); missed: periods \
         whose release was missed; dirty: peak Dirty+Writeback; reference: the case this one's max is divided by."
    );
    for n in notes {
        let _ = writeln!(out, "  {n}");
    }
    if explained {
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "Attribution of the reported set's slow calls (--explain): cause, slow calls whose main cause it is, its \
             share of all slow-call time, its worst time in one call, what the trace says, an example stack."
        );
        out.push_str(&attributions);
    }
    out
}

/// The main-cause column: empty without `--explain`.
fn main_cause(c: &crate::report::CaseResult, explained: bool) -> String {
    if !explained {
        return String::new();
    }
    let cause = match &c.explain {
        Some(x) => match x.main_cause {
            Some(m) => m.name().to_string(),
            None if x.timed_calls == 0 => "no timed syscall".to_string(),
            None => "none slow".to_string(),
        },
        None => "-".to_string(),
    };
    format!(" | {cause}")
}

/// The scenario table of `--list`.
pub fn render_list() -> String {
    use crate::study::Study;
    let mut out = String::new();
    // Grouped by what `--study` selects, in its order.
    let groups: [(&str, &[Study]); 3] = [
        (
            "s1: design cases and a background reader (S1 Tables 1 and 3)",
            &[Study::S1Table1, Study::S1Table3],
        ),
        (
            "s2: fallocate with ftruncate + fsync in the background (S2 Table 1)",
            &[Study::S2],
        ),
        (
            "rtrec: rtrec's own design and the platform floors (no published figure)",
            &[Study::Rtrec, Study::Platform],
        ),
    ];
    for (i, (title, studies)) in groups.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let _ = writeln!(out, "--study {title}");
        let _ = writeln!(
            out,
            "{:<24} {:<8} {:<4} {:<12} {:>8} {:>8} {:>9}  strategies",
            "case", "study", "fl.", "loads", "pub min", "pub avg", "pub max"
        );
        for s in SCENARIOS.iter().filter(|s| studies.contains(&s.study)) {
            let p = s.published;
            let _ = writeln!(
                out,
                "{:<24} {:<8} {:<4} {:<12} {:>8} {:>8} {:>9}  {}",
                s.name,
                s.study.label(),
                match s.flusher {
                    Flusher::On => "on",
                    Flusher::Off => "off",
                },
                s.loads_text(),
                published(p.and_then(|p| p.min_us)),
                published(p.and_then(|p| p.avg_us)),
                published(p.and_then(|p| p.max_us)),
                s.strategies_text()
            );
            let _ = writeln!(out, "{:<24} {}", "", s.description);
        }
    }
    let p = crate::s3::published();
    let _ = writeln!(
        out,
        "\n--study s3: fsync-tester under streaming buffered overwrites (LWN 2009; root)"
    );
    let _ = writeln!(
        out,
        "{:<24} {:<8} {:<10}  published: fsync {}–{} s unpatched, {}–{} s patched; streamer {} → {} MB/s",
        "case", "data=", "window", p.unpatched_fsync_s.0, p.unpatched_fsync_s.1,
        p.patched_fsync_s.0, p.patched_fsync_s.1, p.stream_mb_per_s.0, p.stream_mb_per_s.1
    );
    for v in crate::s3::VARIANTS {
        let window = if v.window_bytes == 0 {
            "-".to_string()
        } else {
            format_size(v.window_bytes)
        };
        let _ = writeln!(out, "{:<24} {:<8} {}", v.name, v.data, window);
    }
    let _ = writeln!(
        out,
        "\n--study s4: BFQ weights per request size, and the recording under interference (root)"
    );
    let scheds: Vec<&str> = crate::s4::SCHEDS.iter().map(|s| s.label).collect();
    let sizes: Vec<String> = crate::s4::SIZES.iter().map(|b| format_size(*b)).collect();
    let _ = writeln!(
        out,
        "{:<24} weights 2:1 (and 1:4:5 under bfq, direct), reads and writes, direct and buffered; schedulers {}; request sizes {}",
        "S4 matrix",
        scheds.join(", "),
        sizes.join(", ")
    );
    let _ = writeln!(
        out,
        "{:<24} published: the 2:1 share holds for small requests and breaks beyond BFQ's budget (35–50 MB); strict_guarantees restores it at a cost in throughput; buffered writes escape the weights",
        ""
    );
    let _ = writeln!(
        out,
        "{:<28} {:<12} {:<9} weight",
        "case", "scheduler", "I/O class"
    );
    for (name, s, class, weight) in crate::s4::ISOLATED {
        let class = class.map_or("-".to_string(), |(k, l)| {
            format!("{}:{l}", ["none", "rt", "be", "idle"][k as usize & 3])
        });
        let weight = weight.map_or("-".to_string(), |w| w.to_string());
        let _ = writeln!(out, "{name:<28} {:<12} {class:<9} {weight}", s.label);
    }
    let _ = writeln!(
        out,
        "\nPublished figures come from a 1 GHz dual-core ARM board with eMMC (S1 Table 1 and 3, S2 Table 1), a 5,400 rpm laptop disk (S3) and the BFQ paper's figures (S4)."
    );
    out
}

/// Per-case ratios NEW ÷ OLD of `--compare`.
pub fn render_compare(old: &BenchReport, new: &BenchReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<24} | {:>9} {:>9} {:>6} | {:>9} {:>9} {:>6} | {:>10} {:>10} {:>6} | {:>13}",
        "case",
        "mean old",
        "new",
        "×",
        "p99.9 old",
        "new",
        "×",
        "max old",
        "new",
        "×",
        "missed old→new"
    );
    for n in &new.cases {
        let Some(o) = old.case(&n.name) else {
            let _ = writeln!(out, "{:<24} | only in the new report", n.name);
            continue;
        };
        let (Some(a), Some(b)) = (o.write_ns, n.write_ns) else {
            let _ = writeln!(out, "{:<24} | no measurement in one of the reports", n.name);
            continue;
        };
        let r = |x: u64, y: u64| ratio(div(Some(y as f64), Some(x as f64)));
        let _ = writeln!(
            out,
            "{:<24} | {:>9} {:>9} {:>6} | {:>9} {:>9} {:>6} | {:>10} {:>10} {:>6} | {:>13}",
            n.name,
            format_duration(a.mean),
            format_duration(b.mean),
            r(a.mean, b.mean),
            format_duration(a.p999),
            format_duration(b.p999),
            r(a.p999, b.p999),
            format_duration(a.max),
            format_duration(b.max),
            r(a.max, b.max),
            format!("{}→{}", o.missed_periods, n.missed_periods)
        );
    }
    for o in &old.cases {
        if new.case(&o.name).is_none() {
            let _ = writeln!(out, "{:<24} | only in the old report", o.name);
        }
    }
    let _ = writeln!(out, "\n×: new ÷ old (below 1: faster now).");
    let where_ = |e: &crate::report::Environment| {
        // Loop device numbers change from run to run; the disk under them does not.
        let sched: Vec<&str> = e
            .io_scheduler
            .split("; ")
            .filter(|s| !s.starts_with("loop"))
            .collect();
        format!(
            "{}, {} {} ({}), {}",
            e.kernel,
            e.target,
            e.filesystem,
            e.mount_options,
            sched.join("; ")
        )
    };
    let (o, n) = (where_(&old.environment), where_(&new.environment));
    if o != n || old.environment.cpu != new.environment.cpu {
        let _ = writeln!(
            out,
            "Note: the reports come from different environments (old: {o}; new: {n})."
        );
    }
    out
}

/// S3's table: fsync latency and the streamer's throughput per variant,
/// the article's figures below.
pub fn render_s3(r: &crate::s3::S3Result) -> String {
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
            c.error
                .as_deref()
                .map(|e| format!("  FAILED: {e}"))
                .unwrap_or_default()
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
pub fn render_s4(r: &crate::s4::S4Result) -> String {
    let mut out = format!(
        "\nS4 BFQ weights on {} ({}), {} s per cell, own load processes\n",
        r.device, r.cgroup_interface, r.cell_s
    );
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
            c.error
                .as_deref()
                .map(|e| format!("  FAILED: {e}"))
                .unwrap_or_default()
        );
    }
    out
}

/// The rows of an S4 matrix, with the BFQ tunables in force.
fn s4_cells(out: &mut String, cells: &[crate::s4::S4Cell]) {
    let _ = writeln!(
        out,
        "{:<12} {:<8} {:<5} {:>8} {:<12} {:<16} {:<16} {:>10}  device bytes per group",
        "scheduler", "mode", "dir", "request", "weights", "share %", "target %", "total"
    );
    let pct = |v: &[f64]| {
        v.iter()
            .map(|p| format!("{p:.0}"))
            .collect::<Vec<_>>()
            .join(":")
    };
    for c in cells {
        let dev = c
            .cgroup_device_bytes
            .iter()
            .map(|b| b.map_or("-".into(), |b| format!("{}MB", b / 1_000_000)))
            .collect::<Vec<_>>()
            .join(":");
        let _ = writeln!(
            out,
            "{:<12} {:<8} {:<5} {:>8} {:<12} {:<16} {:<16} {:>10}  {}{}",
            c.scheduler,
            if c.direct { "direct" } else { "buffered" },
            c.direction,
            rtrec_units::format_size(c.request_bytes),
            c.weights
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(":"),
            pct(&c.share_pct),
            pct(&c.target_pct),
            format_mb_per_s(c.job_bytes_per_s.iter().sum::<f64>()),
            dev,
            c.error
                .as_deref()
                .map(|e| format!("  FAILED: {e}"))
                .unwrap_or_default()
        );
    }
    if let Some(c) = cells.iter().find(|c| !c.bfq_tunables.is_empty()) {
        let _ = writeln!(out, "BFQ tunables in force: {}", c.bfq_tunables.join(" "));
    }
}

/// The writer's longest `write()` against what the recording cases' ring
/// (`--ring`, else the engine's default,
/// [`rtrec_engine::sizing::DEFAULT_RING_BYTES`] at the bench's record
/// sizes) holds in seconds of data at the case's rate: how close a stall
/// came to a drop.
fn ring_held(c: &CaseResult) -> String {
    let ring = c
        .protocol
        .ring_bytes
        .unwrap_or(rtrec_engine::Config::default().ring_bytes as u64);
    let held = rtrec_engine::sizing::ring_seconds(
        ring,
        c.protocol.record_bytes,
        Some(c.protocol.period_ns),
    );
    match (c.max_ns(), held) {
        (Some(max), Some(held)) => format!(
            "; its longest stall {} against a ring of {} that holds {held:.2} s of data",
            format_duration(max),
            format_size(ring),
        ),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::s3::{S3Case, S3Result};

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
