//! The attribution table as text: cause — slow calls — share of slow-call
//! time — worst — detail and example stack.

use std::fmt::Write as _;

use rtrec_units::format_duration;

use crate::attribute::Explanation;
use crate::producer::{Kind, ProducerExplanation, StealMethod};

/// The table of `x`, indented by two spaces, with `published` (the
/// study's cause, if it names one) on its own line.
pub fn render(x: &Explanation, published: Option<&str>) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "  {} timed calls, median {}, {} slower than {} ({} in all){}{}",
        x.timed_calls,
        format_duration(x.median_ns),
        x.slow_calls,
        format_duration(x.threshold_ns),
        format_duration(x.slow_total_ns),
        if x.lost_events > 0 {
            format!(
                "; {} trace entries lost (attribution incomplete)",
                x.lost_events
            )
        } else {
            String::new()
        },
        if x.steal_ns > 0 {
            format!("; hypervisor steal {}", format_duration(x.steal_ns))
        } else {
            String::new()
        },
    );
    if !x.missing_tracepoints.is_empty() {
        let _ = writeln!(
            out,
            "  this kernel lacks {} tracepoint(s) the attribution uses, so what they would show is not attributed: {}",
            x.missing_tracepoints.len(),
            x.missing_tracepoints.join(", ")
        );
    }
    if let Some(p) = published {
        let _ = writeln!(out, "  published cause: {p}");
    }
    if let Some(p) = &x.producer {
        out.push_str(&render_producer(p));
    }
    if x.causes.is_empty() {
        return out;
    }
    let _ = writeln!(
        out,
        "  {:<28} {:>6} {:>7} {:>9}  example",
        "cause", "calls", "share", "worst"
    );
    for r in &x.causes {
        let _ = writeln!(
            out,
            "  {:<28} {:>6} {:>6.1}% {:>9}  {}",
            r.name,
            r.calls,
            r.share_pct,
            format_duration(r.worst_ns),
            r.detail.as_deref().unwrap_or("")
        );
        if !r.stack.is_empty() {
            let _ = writeln!(out, "  {:<28} {}", "", r.stack.join(" < "));
        }
    }
    out
}

/// The producer's lines: the count of each figure by cause, then the worst
/// of each kind with its split.
pub fn render_producer(p: &ProducerExplanation) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "  producer (tid {}): {} wake-ups, period {}; late above {}, record() above {}",
        p.tid,
        p.wakeups,
        format_duration(p.period_ns),
        format_duration(p.late_threshold_ns),
        format_duration(p.record_threshold_ns),
    );
    let _ = writeln!(out, "  {}", p.missed_periods.line("missed periods"));
    let _ = writeln!(out, "  {}", p.late_wakeups.line("late wake-ups"));
    let _ = writeln!(out, "  {}", p.slow_records.line("slow record() calls"));
    if p.slow_records.total > 0 {
        let _ = writeln!(out, "  {}", own_line(p));
    }
    let _ = writeln!(out, "  {}", p.steal_method.describe());
    for kind in [Kind::Missed, Kind::Late, Kind::SlowRecord] {
        if let Some(i) = p.worst.iter().find(|i| i.kind == kind) {
            let parts: Vec<String> = i
                .parts
                .iter()
                .map(|q| format!("{} {}", q.name, format_duration(q.ns)))
                .collect();
            let _ = writeln!(
                out,
                "  worst {}: {} on CPU {}: {}",
                match kind {
                    Kind::Missed => "missed period",
                    Kind::Late => "late wake-up",
                    Kind::SlowRecord => "record()",
                },
                format_duration(i.duration_ns),
                i.cpu,
                parts.join(", ")
            );
        }
    }
    out
}

/// rtrec's own part of the slow `record()` stretches, in one line:
/// `rtrec's own part of a slow record() (on CPU − steal − IRQ − faults):
/// max 12 µs, 0 of 31 above 20 µs; slowest 2.9 ms, steal 2.7 ms`.
pub fn own_line(p: &ProducerExplanation) -> String {
    let s = &p.slow_records;
    let what = match p.steal_method {
        StealMethod::SchedRuntime => "on CPU − steal − IRQ − faults",
        StealMethod::ProcStat => "on CPU − IRQ, steal not subtracted",
    };
    format!(
        "rtrec's own part of a slow record() ({what}): max {}, {} of {} above {}; slowest {}, steal credited {}",
        format_duration(s.worst_own_ns),
        s.own_over_threshold,
        s.total,
        format_duration(p.record_threshold_ns),
        format_duration(s.worst_ns),
        format_duration(s.steal_ns),
    )
}
