//! `--study endurance`: the producer's promise over a long run, stated
//! honestly. One recording of `--writes` records (default 1,000,000) of
//! `--size` bytes (default 1 KiB) every `--period` (default 1 ms) with the
//! real-time setup (`rtrec record --rt`: SCHED_FIFO, `mlockall`, pinned to
//! the last CPU) and `--explain` on; the result is `record()`'s maximum,
//! the count of `record()` calls above [`GOAL_NS`] with their attributed
//! causes and rtrec's own part, and every missed period attributed
//! (docs/endurance.md).
//!
//! Design choice: the study runs `rtrec record` itself (this executable),
//! so that what it measures is exactly what a user's `record --rt
//! --explain` gives, not a second loop that could drift from it; it reads
//! the recording's JSON summary back.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::Context as _;
use rtrec_trace::producer::ProducerExplanation;
use rtrec_units::format_duration;
use serde::{Deserialize, Serialize};

/// The endurance goal for one `record()` call, ns: 20 µs.
pub const GOAL_NS: u64 = 20_000;
/// Records of the full run.
pub const COUNT: u64 = 1_000_000;
/// Its period, ns: 1 kHz.
pub const PERIOD_NS: u64 = 1_000_000;
/// Its record size, bytes.
pub const SIZE: u64 = 1024;

/// What to run.
#[derive(Clone, Debug)]
pub struct Options {
    /// Records (`--writes`).
    pub count: u64,
    /// Period, ns (`--period`).
    pub period_ns: u64,
    /// Record size, bytes (`--size`).
    pub size: u64,
    /// The CPU the producer is pinned to.
    pub cpu: usize,
    /// The `rtrec` executable.
    pub rtrec: PathBuf,
    /// The directory recorded into.
    pub dir: PathBuf,
}

/// The study's result (the `endurance` object of `--json`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Endurance {
    /// The command that ran.
    pub command: String,
    /// Records written.
    pub records_written: u64,
    /// Records dropped.
    pub records_dropped: u64,
    /// `record()`'s maximum by the engine's own clock reads around it, ns.
    pub record_max_ns: u64,
    /// Its 99.9th percentile, ns.
    pub record_p999_ns: u64,
    /// The longest lateness of a wake-up, ns.
    pub lateness_max_ns: u64,
    /// Periods missed (the recorder's count).
    pub missed_periods: u64,
    /// Trace entries the kernel dropped: the attribution is then
    /// incomplete (what it cannot see is counted as unattributed).
    pub lost_events: u64,
    /// The producer's figures, explained (`None`: tracing was refused).
    pub producer: Option<ProducerExplanation>,
}

/// Runs the recording and reads its summary.
///
/// # Errors
/// `rtrec record` could not run, failed, or its JSON was not a summary.
pub fn run(o: &Options) -> anyhow::Result<Endurance> {
    let args: Vec<String> = vec![
        "record".into(),
        "--dir".into(),
        o.dir.display().to_string(),
        "--rt".into(),
        "--cpu".into(),
        o.cpu.to_string(),
        "--period".into(),
        format!("{}ns", o.period_ns),
        "--size".into(),
        format!("{}B", o.size),
        "--count".into(),
        o.count.to_string(),
        "--explain".into(),
        "--quiet".into(),
        "--json".into(),
        "-".into(),
    ];
    let out = std::process::Command::new(&o.rtrec)
        .args(&args)
        .stderr(std::process::Stdio::inherit())
        .output()
        .context("starting rtrec record")?;
    anyhow::ensure!(out.status.success(), "rtrec record failed ({})", out.status);
    let s: serde_json::Value =
        serde_json::from_slice(&out.stdout).context("reading rtrec record's JSON summary")?;
    let n = |v: &serde_json::Value| v.as_u64().unwrap_or(0);
    let explain = &s["explain"];
    Ok(Endurance {
        command: format!("rtrec {}", args.join(" ")),
        records_written: n(&s["records_written"]),
        records_dropped: n(&s["records_dropped"]),
        record_max_ns: n(&s["record_ns"]["max"]),
        record_p999_ns: n(&s["record_ns"]["p999"]),
        lateness_max_ns: n(&s["lateness_ns"]["max"]),
        missed_periods: n(&s["missed_periods"]),
        lost_events: n(&explain["lost_events"]),
        producer: serde_json::from_value(explain["producer"].clone()).ok(),
    })
}

/// The study's table and its verdict against [`GOAL_NS`].
pub fn render(e: &Endurance) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "endurance: {}", e.command);
    let _ = writeln!(
        out,
        "  {} records written, {} dropped; record() max {} (p99.9 {}); lateness max {}; {} missed periods",
        e.records_written,
        e.records_dropped,
        format_duration(e.record_max_ns),
        format_duration(e.record_p999_ns),
        format_duration(e.lateness_max_ns),
        e.missed_periods
    );
    if e.lost_events > 0 {
        let _ = writeln!(
            out,
            "  {} trace entries lost: what the trace missed is unattributed",
            e.lost_events
        );
    }
    let Some(p) = &e.producer else {
        let _ = writeln!(out, "  no attribution (tracing was refused)");
        return out;
    };
    out.push_str(&rtrec_trace::table::render_producer(p));
    let _ = writeln!(out, "  {}", verdict(e, p));
    out
}

/// One sentence: is the goal met, and if not, whose time is it.
fn verdict(e: &Endurance, p: &ProducerExplanation) -> String {
    let goal = format_duration(GOAL_NS);
    if e.record_max_ns <= GOAL_NS {
        return format!(
            "goal met: record() max {} ≤ {goal}",
            format_duration(e.record_max_ns)
        );
    }
    let own = p.slow_records.worst_on_cpu_ns;
    if own <= GOAL_NS {
        format!(
            "record() max {} > {goal}; in every traced call above {} rtrec's own time on the CPU stayed ≤ {goal} (at most {}): the rest is the platform's",
            format_duration(e.record_max_ns),
            format_duration(p.record_threshold_ns),
            format_duration(own)
        )
    } else {
        format!(
            "goal not met: record() max {} > {goal}, and in at least one call rtrec's own time on the CPU was {} > {goal} (steal not subtracted)",
            format_duration(e.record_max_ns),
            format_duration(own)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(record_max_ns: u64, worst_on_cpu_ns: u64) -> Endurance {
        let mut p = ProducerExplanation::default();
        p.slow_records.worst_on_cpu_ns = worst_on_cpu_ns;
        p.record_threshold_ns = GOAL_NS;
        Endurance {
            command: "rtrec record".into(),
            records_written: 10,
            records_dropped: 0,
            record_max_ns,
            record_p999_ns: 1_000,
            lateness_max_ns: 1_000,
            missed_periods: 0,
            lost_events: 0,
            producer: Some(p),
        }
    }

    #[test]
    fn the_verdict_says_whose_time_a_slow_record_was() {
        let v = |r, o| verdict(&result(r, o), &result(r, o).producer.unwrap());
        assert_eq!(v(15_000, 0), "goal met: record() max 15 µs ≤ 20 µs");
        assert!(v(150_000, 12_000)
            .contains("rtrec's own time on the CPU stayed ≤ 20 µs (at most 12 µs)"));
        assert!(v(150_000, 45_000).starts_with("goal not met"));
    }
}
