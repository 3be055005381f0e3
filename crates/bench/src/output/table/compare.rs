//! The comparison of `--compare`: per case, NEW ÷ OLD of the mean, p99.9
//! and max, and a note when the two reports come from different
//! environments.

use std::fmt::Write as _;

use rtrec_units::format_duration;

use crate::output::numbers::{div, ratio};
use crate::report::BenchReport;

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
