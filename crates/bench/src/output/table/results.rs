//! The results table of S1's, S2's and rtrec's own cases: the protocol
//! lines above it, one row per case with the published figures beside the
//! measured ones and their ratios, then one note per case where there is
//! more to say, and with `--explain` the attribution of the slow calls.

use std::fmt::Write as _;

use rtrec_units::{format_duration, format_mb_per_s, format_size};

use super::cells::{emulator_summary, latency, published, published_us};
use crate::output::numbers::{div, ratio, thousands};
use crate::report::{BenchReport, CaseResult};
use crate::scenario::{self, Flusher};

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

/// What the published studies say of their program's scheduling, beside
/// ours (`docs/studies.md`).
pub const PUBLISHED_SCHEDULING: &str = "S1 does not state its measuring program's scheduling; \
     S2 says only that a high-priority thread wrote and a lower-priority one flushed";

/// `Every case's timed thread: SCHED_FIFO 80 (writer 79), mlockall, any
/// CPU: granted`, or one clause per case when they differ; `None` for a
/// report written before the setup was recorded.
pub fn rt_line(report: &BenchReport) -> Option<String> {
    let lines: Vec<(&str, String)> = report
        .cases
        .iter()
        .filter_map(|c| c.rt.as_ref().map(|r| (c.name.as_str(), r.line())))
        .collect();
    let first = &lines.first()?.1;
    if lines.iter().all(|(_, l)| l == first) {
        return Some(format!(
            "Every case's timed thread (S1's and S2's too): {first} ({PUBLISHED_SCHEDULING})"
        ));
    }
    let each: Vec<String> = lines.iter().map(|(n, l)| format!("{n}: {l}")).collect();
    Some(format!(
        "Timed threads: {} ({PUBLISHED_SCHEDULING})",
        each.join("; ")
    ))
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
    preamble(&mut out, report);
    let explained = report.cases.iter().any(|c| c.explain.is_some());
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "{:<24} {:>4} | {:>30} | {:>62} {:>6} {:>9} | {:>27} | {:>27}",
        "", "", "PUBLISHED (ARM, eMMC)", "MEASURED HERE", "", "", "max ÷ reference max", "max ÷"
    );
    row(
        &mut out,
        [
            "case",
            "fl.",
            "min",
            "avg",
            "max",
            "min",
            "avg",
            "p99.9",
            "max",
            "set maxima",
            "missed",
            "dirty",
            "reference",
            "pub",
            "here",
            "floor",
            "pagecache",
            "same load",
        ],
        if explained { " | main cause" } else { "" },
    );
    let mut notes = Vec::new();
    let mut attributions = String::new();
    for c in &report.cases {
        let cells = case_cells(report, c);
        row(
            &mut out,
            cells.each_ref().map(String::as_str),
            &main_cause(c, explained),
        );
        if let Some(x) = &c.explain {
            let published = scenario::find(&c.name).and_then(crate::explain::published_cause);
            let _ = writeln!(attributions, "{}:", c.name);
            if c.timed_call == "memcpy" {
                let _ = writeln!(attributions, "  {MEMCPY_PRODUCER}");
            }
            attributions.push_str(&rtrec_trace::table::render(x, published));
        }
        notes.extend(case_notes(c));
    }
    footer(&mut out, &notes, explained.then_some(&attributions));
    out
}

/// How to read a noise floor's producer lines under `--explain`: the
/// tracer names the work between two wake-ups `record()` and its on-CPU
/// time "rtrec's own", but a floor runs no rtrec code.
const MEMCPY_PRODUCER: &str =
    "a floor: its \"record()\" below is the memcpy, so \"rtrec's own\" is the \
     time the platform took to copy one record on the CPU (no rtrec code runs)";

/// Under the table: what the columns mean, the cases' notes and, with
/// `--explain`, the attribution of each case's slow calls.
fn footer(out: &mut String, notes: &[String], attributions: Option<&String>) {
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "fl.: kernel flusher during the case (off = FOFF applied, ON! = FOFF asked but not applied); missed: periods \
         whose release was missed; dirty: peak Dirty+Writeback; reference: the case this one's max is divided by; max ÷ \
         same load: this case's max ÷ that of the noise floor run in this run under the same background loads."
    );
    for n in notes {
        let _ = writeln!(out, "  {n}");
    }
    if let Some(attributions) = attributions {
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "Attribution of the reported set's slow calls (--explain): cause, slow calls whose main cause it is, its \
             share of all slow-call time, its worst time in one call, what the trace says, an example stack."
        );
        out.push_str(attributions);
    }
}

/// What the rows mean and where they were measured: the protocol, the
/// emulated device, the timed thread's setup, and where the published
/// figures come from.
fn preamble(out: &mut String, report: &BenchReport) {
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
    if let Some(l) = rt_line(report) {
        let _ = writeln!(out, "{l}.");
    }
    let _ = writeln!(
        out,
        "Published figures come from a 1 GHz dual-core ARM board with eMMC (Linux 4.4): compare ratios and shapes, \
         not absolute times."
    );
}

/// One line of the table in its fixed columns, the heads' as every
/// case's; `tail` is the main-cause column (empty without `--explain`).
fn row(out: &mut String, c: [&str; 18], tail: &str) {
    let _ = writeln!(
        out,
        "{:<24} {:>4} | {:>9} {:>9} {:>10} | {:>9} {:>9} {:>12} {:>10} {:>18} {:>6} {:>9} | {:<11} {:>7} {:>7} | {:>7} {:>9} {:>9}{}",
        c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8], c[9], c[10], c[11], c[12], c[13], c[14],
        c[15], c[16], c[17], tail
    );
}

/// A case's cells, in the order of the heads.
fn case_cells(report: &BenchReport, c: &CaseResult) -> [String; 18] {
    let [pmin, pavg, pmax] = published_us(c.published.as_ref()).map(published);
    let w = c.write_ns;
    let measured = |v: String| if w.is_some() { v } else { "-".into() };
    [
        c.name.clone(),
        flusher_text(c).into(),
        pmin,
        pavg,
        pmax,
        latency(w.map(|w| w.min)),
        latency(w.map(|w| w.mean)),
        latency(w.map(|w| w.p999)),
        latency(w.map(|w| w.max)),
        c.set_max_range()
            .filter(|_| c.sets.len() > 1)
            .map_or("-".into(), |(a, b)| {
                format!("{}–{}", format_duration(a), format_duration(b))
            }),
        measured(thousands(c.missed_periods)),
        measured(format_size(c.dirty_peak_bytes)),
        scenario::find(&c.name)
            .and_then(|s| s.reference)
            .unwrap_or("-")
            .into(),
        ratio(published_max_ratio(c)),
        ratio(measured_max_ratio(report, c)),
        ratio(c.max_over_noise_floor),
        ratio(c.max_over_pagecache_floor),
        ratio(c.max_over_same_load_floor),
    ]
}

/// The notes under the table for a case: the reader's throughput,
/// `record()` on the producer, drops, failures and interruptions.
fn case_notes(c: &CaseResult) -> Vec<String> {
    let mut notes = Vec::new();
    if let Some(r) = &c.reader {
        let published = c
            .published
            .as_ref()
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
        notes.extend(record_floor_note(c, r));
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
    notes
}

/// `record()` against the memcpy floors of the same run, max and p99:
/// `RTREC-BGALL: record() max 2.9× / p99 1.1× its same-load floor
/// NOISE-FLOOR-BGALL's; 4.1× / 1.3× the quiet NOISE-FLOOR's`. A loaded case
/// whose floor did not run says so; `None` when no floor ran at all.
fn record_floor_note(c: &CaseResult, r: rtrec_engine::LatencySummary) -> Option<String> {
    let f = c.record_over_floor?;
    let pair = |m: Option<f64>, p: Option<f64>| format!("{}× / p99 {}×", ratio(m), ratio(p));
    let quiet = f
        .max_over_noise_floor
        .map(|_| {
            format!(
                "{} the quiet NOISE-FLOOR's",
                pair(f.max_over_noise_floor, f.p99_over_noise_floor)
            )
        })
        .unwrap_or_else(|| "NOISE-FLOOR did not run".into());
    let same = match (&c.same_load_floor, c.loads.is_empty()) {
        (Some(name), _) => format!(
            "{} its same-load floor {name}'s; ",
            pair(f.max_over_same_load_floor, f.p99_over_same_load_floor)
        ),
        (None, false) => "no same-load floor ran; ".into(),
        (None, true) => String::new(),
    };
    if c.same_load_floor.is_none() && f.max_over_noise_floor.is_none() {
        return None;
    }
    Some(format!(
        "{}: record() max {} (p99 {}) against memcpy in this run: max {same}{quiet}",
        c.name,
        format_duration(r.max),
        format_duration(r.p99),
    ))
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

/// The main-cause column: empty without `--explain`.
fn main_cause(c: &CaseResult, explained: bool) -> String {
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
