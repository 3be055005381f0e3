//! Stage four of a recording: it ends ([`finish`]: `finish()` or `abort()`,
//! and what the report gathers), then what the user sees ([`report`]:
//! `--json`, the summary on the terminal, `--histogram`, the warnings) and
//! the exit code.

use std::path::Path;

use rtrec_engine::{Mode, RingSizing, Summary};
use rtrec_units::format_size;

use super::json::{write_json, Extra};
use super::output::OutputArgs;
use super::plan::Plan;
use super::prepare::Prepared;
use super::ring::ring_line;
use super::run::Ran;
use super::session::{Outcome, Timeline};
use super::source::Total;
use super::summary::print_summary;
use crate::error::Result;

/// Stage four's input: the recording has ended; everything the report
/// shows.
pub struct Finished {
    summary: Summary,
    /// What the recording and the pool hold on disk, its tail given back.
    disk: crate::disk::DiskUse,
    /// What the recording wrote to the device.
    written: crate::disk::Written,
    outcome: Outcome,
    rss: Option<Vec<(u64, u64)>>,
    explained: Option<crate::explain::Explanation>,
    device: Option<crate::device::DeviceReport>,
    /// `--timeline`'s producer-side samples.
    timeline: Timeline,
    /// Kept to the end: the report shows what it applied, and dropping it
    /// removes the cgroup.
    isolation: Option<crate::isolation::Isolation>,
    /// How the ring was sized.
    ring: RingSizing,
    /// `--total` as asked, and the whole records it allowed.
    total: Option<Total>,
    _stop_signals: rtrec_host::signals::StopSignals,
    /// Where and how it was made (`--json`'s `context`).
    context: super::context::Context,
    /// What it cost in CPU (`--json`'s `cost`, the summary's line).
    cost: super::cost::Cost,
    /// The recorder's warnings printed at its start
    /// (`Recorder::start_notes`): in the summary, not printed again.
    said_at_start: Vec<String>,
}

/// Ends the recording (`finish()`, or `abort()` with the reason) and
/// gathers what the report shows: the schedule, the attribution, the
/// emulated device's report; then stops the watchers.
///
/// # Errors
/// The recording could not be ended, or the device's report kept.
pub fn finish(
    mut p: Prepared,
    ran: Ran,
    plan: &Plan,
    trial: Option<&crate::device::Trial>,
) -> Result<Finished> {
    let rss = p.watchers.stop_rss();
    let said_at_start = p.rec.start_notes().to_vec();
    let mut summary = match &ran.outcome {
        Outcome::Done => p.rec.finish()?,
        Outcome::Aborted(reason) | Outcome::Interrupted(reason) => p.rec.abort(reason)?,
    };
    if let Some(t) = &ran.timer {
        summary.attach_schedule(t);
    }
    let cost = ran.clock.cost(&summary, ran.producer_cpu_ns);
    let missed = summary.missed_periods;
    let explained = p.tracing.and_then(|t| t.finish(missed));
    let device = match trial {
        Some(t) => Some(t.keep(&mut summary, plan.workload.period_ns)?),
        None => None,
    };
    p.watchers.stop();
    let disk = crate::disk::finish(&plan.dir, &summary.files, p.writing);
    let written = p.writes.since(&plan.dir, summary.bytes_written);
    let context = super::context::gather(
        &plan.dir,
        plan.rt.as_ref(),
        plan.require_rt,
        &plan.cfg,
        &p.rt_failures,
        &summary.warnings,
    );
    Ok(Finished {
        said_at_start,
        cost,
        context,
        disk,
        written,
        summary,
        outcome: ran.outcome,
        rss,
        explained,
        device,
        timeline: ran.timeline,
        isolation: p.isolation,
        ring: plan.ring,
        total: plan.source.total,
        _stop_signals: p.stop_signals,
    })
}

/// Stage four: `--json`, the summary on the terminal (on stderr when the
/// JSON goes to stdout), `--histogram`, the warnings, and the exit code.
/// `baseline`: `--explain-baseline` (nothing was recorded).
///
/// # Errors
/// The JSON summary cannot be written.
pub fn report(out: &OutputArgs, baseline: bool, f: &Finished) -> Result<i32> {
    let summary = &f.summary;
    if let Some(path) = &out.json {
        let extra = Extra {
            rss: f.rss.as_deref(),
            explained: f.explained.as_ref(),
            isolation: f.isolation.as_ref().map(|i| i.applied()),
            device: f.device.as_ref(),
            timeline: &f.timeline,
            total: f.total,
            ring: (summary.config.mode == Mode::Ring).then_some(&f.ring),
            disk: &f.disk,
            written: &f.written,
            baseline,
            context: &f.context,
            cost: &f.cost,
        };
        write_json(path, summary, &extra)?;
    }
    if let (Some(samples), false) = (&f.rss, out.quiet) {
        for (events, bytes) in samples {
            eprintln!(
                "resident memory after {events} events: {} (sampled after the 10th event and at the end: equal = no growth)",
                format_size(*bytes)
            );
        }
    }
    if !out.quiet {
        print_tables(f, out.json.as_deref() == Some(Path::new("-")));
    }
    if out.histogram {
        let h = summary.write_latency.histogram();
        let text = rtrec_units::histogram::render(
            h.iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_at_value())),
        );
        eprint!("write() latency:\n{text}");
    }
    for w in summary
        .warnings
        .iter()
        .filter(|w| !f.said_at_start.contains(w))
    {
        eprintln!("rtrec: warning: {w}");
    }
    Ok(exit_code(&f.outcome, summary))
}

/// The summary table and the lines after it: the ring, `--total`, the
/// disk, the emulated device, the attribution, the isolation; on stderr
/// when the JSON goes to stdout.
fn print_tables(f: &Finished, json_on_stdout: bool) {
    let summary = &f.summary;
    let say = |text: &str| {
        if json_on_stdout {
            eprint!("{text}");
        } else {
            print!("{text}");
        }
    };
    print_summary(summary, json_on_stdout);
    let stray = crate::signals::STRAY.load(std::sync::atomic::Ordering::Relaxed);
    if stray > 0 {
        eprintln!("rtrec: note: {stray} SIGUSR1/SIGUSR2 signal(s) arrived; this recording has nothing they trigger, so they were counted and ignored");
    }
    if summary.config.mode == Mode::Ring {
        say(&ring_line(&f.ring));
    }
    if let Some(line) = f.total.and_then(|t| t.line()) {
        say(&line);
    }
    say(&f.disk.lines());
    say(&f.written.line());
    // Feature `cost` (Cargo.toml): without it no line, and the line's
    // formatting is not in the binary (the feature is tested first).
    if cfg!(feature = "cost") {
        if let Some(line) = f.cost.line() {
            say(&line);
        }
    }
    if let Some(d) = &f.device {
        say(&d.line());
    }
    if let Some(x) = &f.explained {
        crate::explain::print(x, json_on_stdout);
    }
    if let Some(i) = &f.isolation {
        say(&format!("{}\n", i.line()));
    }
}

/// The sentence for a recording whose writer failed: what failed, what
/// was written, and what the file says. The end frame says aborted when
/// the failure came while recording; when it came after a complete end
/// frame (closing the last file: its final truncate, header or sync,
/// `Summary::end_complete`), the file reads as complete, and what is not
/// known is whether its tail reached the disk.
fn failed_sentence(summary: &Summary) -> String {
    let what = summary
        .error
        .as_ref()
        .map_or("unknown error", |f| f.message.as_str());
    // Said as stored only as far as it was: a card that failed may have
    // taken no loss frame at all.
    let stored = if summary.losses_stored >= summary.records_dropped {
        "stored as a loss".to_string()
    } else if summary.losses_stored == 0 {
        "NOT stored in the recording: counted here only".to_string()
    } else {
        format!(
            "{} of them stored as a loss, the rest counted here only",
            summary.losses_stored
        )
    };
    let counts = format!(
        "{} of {} records were written, {} dropped ({stored})",
        summary.records_written, summary.records_offered, summary.records_dropped
    );
    if summary.end_complete {
        format!(
            "the recording failed at its end: {what}; {counts}; its end frame says complete, but the final sync did not complete: whether its tail is durable is unknown (`rtrec verify` checks what is on the disk)"
        )
    } else {
        format!("the recording failed: {what}; {counts}; the recording is marked aborted")
    }
}

/// The exit code of a recording, with the sentence that explains a
/// failure: 0 done, 1 failed or incomplete, 130 interrupted.
fn exit_code(outcome: &Outcome, summary: &Summary) -> i32 {
    match outcome {
        Outcome::Done if summary.error.is_none() => 0,
        Outcome::Done => {
            eprintln!("rtrec: {}", failed_sentence(summary));
            1
        }
        Outcome::Aborted(reason) => {
            eprintln!("rtrec: {reason}; the recording is marked incomplete");
            1
        }
        Outcome::Interrupted(reason) => {
            eprintln!("rtrec: {reason}; the recording is marked incomplete");
            130
        }
    }
}
