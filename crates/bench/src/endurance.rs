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
//!
//! Design choice: with `--endurance-baseline` it first runs the same
//! command with `--explain-baseline` (the producer's loop copying each
//! record into a buffer of its own instead of calling `record()`), and
//! sets the baseline's slow stretches beside the real run's. On a virtual
//! machine the host's exits take time from a running vCPU that the guest
//! sees as neither steal nor an interrupt; the baseline measures how much
//! of that the platform gives a loop without rtrec's code, so the real
//! run's excess over it is what rtrec's own code can be blamed for. The
//! verdict stays the strict one ([`judge`]): the baseline explains, it
//! never turns "not met" into "met".

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::Context as _;
use rtrec_trace::producer::{ProducerExplanation, StealMethod, UNATTRIBUTED};
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
    /// Run the baseline first (`--endurance-baseline`).
    pub baseline: bool,
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
    /// How steal in the slow `record()` stretches was measured (`None`:
    /// tracing was refused).
    pub steal_method: Option<StealMethod>,
    /// rtrec's own part of the slowest traced `record()` stretch (on the
    /// CPU less steal, IRQ and faults), ns.
    pub own_max_ns: Option<u64>,
    /// Traced `record()` stretches whose own part is above [`GOAL_NS`].
    pub own_over_goal: Option<u64>,
    /// Hypervisor steal in the run, all CPUs (`/proc/stat`), ns.
    pub steal_ns: u64,
    /// Whether the goal is met ([`judge`]).
    pub goal_met: bool,
    /// The verdict, one sentence.
    pub verdict: String,
    /// The baseline run (`--endurance-baseline`): the same loop without
    /// `record()`, its stretches judged the same way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<Box<Endurance>>,
}

/// Runs the recording (after the baseline, if asked) and reads its
/// summary.
///
/// # Errors
/// `rtrec record` could not run, failed, or its JSON was not a summary.
pub fn run(o: &Options) -> anyhow::Result<Endurance> {
    let baseline = if o.baseline {
        Some(Box::new(run_one(o, true)?))
    } else {
        None
    };
    let mut e = run_one(o, false)?;
    e.baseline = baseline;
    Ok(e)
}

/// One `rtrec record --rt --explain` (with `--explain-baseline` when
/// `baseline`), judged.
fn run_one(o: &Options, baseline: bool) -> anyhow::Result<Endurance> {
    let mut args: Vec<String> = vec![
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
        // The run's own file fills half the bench's file system: a
        // second one prepared after it would not fit, and is not needed.
        "--no-refill".into(),
        "--quiet".into(),
        "--json".into(),
        "-".into(),
    ];
    if baseline {
        args.push("--explain-baseline".into());
    }
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
    let producer: Option<ProducerExplanation> =
        serde_json::from_value(explain["producer"].clone()).ok();
    let mut e = Endurance {
        command: format!("rtrec {}", args.join(" ")),
        records_written: n(&s["records_written"]),
        records_dropped: n(&s["records_dropped"]),
        record_max_ns: n(&s["record_ns"]["max"]),
        record_p999_ns: n(&s["record_ns"]["p999"]),
        lateness_max_ns: n(&s["lateness_ns"]["max"]),
        missed_periods: n(&s["missed_periods"]),
        lost_events: n(&explain["lost_events"]),
        steal_method: producer.as_ref().map(|p| p.steal_method),
        own_max_ns: producer.as_ref().map(|p| p.slow_records.worst_own_ns),
        own_over_goal: producer.as_ref().map(|p| p.slow_records.own_over_threshold),
        steal_ns: n(&explain["steal_ns"]),
        producer,
        goal_met: false,
        verdict: String::new(),
        baseline: None,
    };
    (e.goal_met, e.verdict) = match &e.producer {
        Some(p) => judge(&e, p),
        None => (false, "no attribution (tracing was refused)".into()),
    };
    Ok(e)
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
    if e.steal_ns > 0 {
        let _ = writeln!(
            out,
            "  hypervisor steal in the run (all CPUs, /proc/stat): {}",
            format_duration(e.steal_ns)
        );
    }
    let _ = writeln!(out, "  {}", verdict(e, p));
    if let Some(b) = &e.baseline {
        let _ = writeln!(out, "  {}", beside_baseline(p, b));
    }
    out
}

/// One line: the baseline's slow stretches beside the real run's.
fn beside_baseline(p: &ProducerExplanation, b: &Endurance) -> String {
    let Some(bp) = &b.producer else {
        return "baseline: no attribution (tracing was refused)".into();
    };
    let goal = format_duration(GOAL_NS);
    let (real, base) = (&p.slow_records, &bp.slow_records);
    format!(
        "baseline (the same loop without record(), {} periods): own part max {}, {} of {} slow stretches above {goal}; this run: max {}, {}; rtrec's excess over the baseline: {} stretches",
        bp.wakeups,
        format_duration(base.worst_own_ns),
        base.own_over_threshold,
        base.total,
        format_duration(real.worst_own_ns),
        real.own_over_threshold,
        real.own_over_threshold as i64 - base.own_over_threshold as i64
    )
}

/// The judgement against [`GOAL_NS`], and the one sentence that says it.
///
/// Met when `record()`'s maximum is at most the goal, or when every
/// traced `record()` stretch above the goal has rtrec's own part (on the
/// CPU less measured steal, IRQ and faults) at most the goal, with steal
/// measured at ns resolution ([`StealMethod::SchedRuntime`]), no trace
/// entry lost and every missed period attributed. With the coarse
/// `/proc/stat` counter the own part keeps the steal, so it can only be
/// met by the first rule.
pub fn judge(e: &Endurance, p: &ProducerExplanation) -> (bool, String) {
    let goal = format_duration(GOAL_NS);
    let unattributed = p
        .missed_periods
        .causes
        .get(UNATTRIBUTED)
        .copied()
        .unwrap_or(0);
    let missed = if e.missed_periods == 0 {
        "no missed period".to_string()
    } else if unattributed == 0 {
        format!(
            "every one of {} missed periods attributed",
            e.missed_periods
        )
    } else {
        format!(
            "{unattributed} of {} missed periods unattributed",
            e.missed_periods
        )
    };
    if e.record_max_ns <= GOAL_NS {
        return (
            unattributed == 0,
            format!(
                "record() max {} ≤ {goal}; {missed}",
                format_duration(e.record_max_ns)
            ),
        );
    }
    let s = &p.slow_records;
    let own = format!(
        "rtrec's own part max {}, {} of {} slow stretches above {goal}",
        format_duration(s.worst_own_ns),
        s.own_over_threshold,
        s.total
    );
    let met = p.steal_method == StealMethod::SchedRuntime
        && p.record_threshold_ns <= GOAL_NS
        && s.own_over_threshold == 0
        && s.worst_own_ns <= GOAL_NS
        && e.lost_events == 0
        && unattributed == 0;
    let why = if p.steal_method != StealMethod::SchedRuntime {
        "; steal not measured at ns resolution (no paravirt steal accounting), so it cannot be judged met"
    } else if e.lost_events > 0 {
        "; the trace lost entries"
    } else {
        ""
    };
    (
        met,
        format!(
            "record() max {} > {goal}; {own}; {missed}{why}",
            format_duration(e.record_max_ns)
        ),
    )
}

/// One line: `goal met: …` or `goal not met: …`.
fn verdict(e: &Endurance, p: &ProducerExplanation) -> String {
    let (met, why) = judge(e, p);
    format!("goal {}: {why}", if met { "met" } else { "not met" })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(record_max_ns: u64, own_ns: u64, method: StealMethod) -> Endurance {
        let mut p = ProducerExplanation::default();
        p.slow_records.total = 3;
        p.slow_records.worst_own_ns = own_ns;
        p.slow_records.own_over_threshold = u64::from(own_ns > GOAL_NS);
        p.record_threshold_ns = GOAL_NS;
        p.steal_method = method;
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
            steal_method: Some(method),
            own_max_ns: Some(own_ns),
            own_over_goal: Some(0),
            steal_ns: 0,
            goal_met: false,
            verdict: String::new(),
            baseline: None,
        }
    }

    #[test]
    fn the_verdict_judges_rtrecs_own_part_when_steal_is_measured() {
        let v = |r, o, m| {
            let e = result(r, o, m);
            verdict(&e, e.producer.as_ref().unwrap())
        };
        let ns = StealMethod::SchedRuntime;
        assert_eq!(
            v(15_000, 0, ns),
            "goal met: record() max 15 µs ≤ 20 µs; no missed period"
        );
        assert!(v(150_000, 12_000, ns).starts_with(
            "goal met: record() max 150 µs > 20 µs; rtrec's own part max 12 µs, 0 of 3 slow stretches above 20 µs"
        ));
        assert!(v(150_000, 45_000, ns).starts_with("goal not met"));
        assert!(v(150_000, 12_000, StealMethod::ProcStat).starts_with("goal not met"));
    }

    #[test]
    fn an_unattributed_missed_period_fails_the_goal() {
        let mut e = result(15_000, 0, StealMethod::SchedRuntime);
        e.missed_periods = 4;
        let p = e.producer.as_mut().unwrap();
        p.missed_periods.total = 4;
        p.missed_periods.causes.insert(UNATTRIBUTED.into(), 1);
        p.missed_periods.causes.insert("steal".into(), 3);
        let (met, why) = judge(&e, e.producer.as_ref().unwrap());
        assert!(!met);
        assert!(why.ends_with("1 of 4 missed periods unattributed"), "{why}");
    }

    #[test]
    fn the_baseline_is_set_beside_the_run_and_leaves_the_verdict_alone() {
        let mut e = result(150_000, 45_000, StealMethod::SchedRuntime);
        e.producer.as_mut().unwrap().slow_records.own_over_threshold = 7;
        let mut b = result(0, 30_000, StealMethod::SchedRuntime);
        let bp = b.producer.as_mut().unwrap();
        bp.wakeups = 1000;
        bp.slow_records.total = 9;
        bp.slow_records.own_over_threshold = 5;
        e.baseline = Some(Box::new(b));
        let text = render(&e);
        assert!(text.contains("goal not met"), "{text}");
        assert!(
            text.contains("baseline (the same loop without record(), 1000 periods): own part max 30 µs, 5 of 9 slow stretches above 20 µs; this run: max 45 µs, 7; rtrec's excess over the baseline: 2 stretches"),
            "{text}"
        );
    }
}
