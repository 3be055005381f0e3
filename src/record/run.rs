//! Stage three of a recording: the source hands records to the recorder
//! through a [`Session`] until it ends, the count is reached, or a signal
//! stops it; triggers from outside reach a flight recorder meanwhile.

use rtrec_engine::{Mode, PeriodicTimer};

use super::assembler::Cut;
use super::cost::{cpu_ns, CostClock};
use super::plan::{Plan, RecordArgs};
use super::prepare::Prepared;
use super::session::{Baseline, Outcome, Session, Timeline, Trace, Triggers};
use super::source::Source;
use super::stdin::stdin_source;
use super::synthetic::synthetic;
use crate::signals;

/// Stage three's result: how the source ended, and its schedule.
pub struct Ran {
    /// How the source ended.
    pub outcome: Outcome,
    /// The synthetic source's timer (lateness, missed periods).
    pub timer: Option<PeriodicTimer>,
    /// `--timeline`'s producer-side samples.
    pub timeline: Timeline,
    /// The process's CPU clock when the source started.
    pub clock: CostClock,
    /// The producer's loop's CPU time, ns (its thread's clock).
    pub producer_cpu_ns: u64,
}

/// Stage three (see the module docs).
pub fn run_source(a: &RecordArgs, plan: &Plan, p: &mut Prepared) -> Ran {
    let live = p.rec.live();
    let _listener = listen(plan);
    let mut session = Session {
        baseline: a
            .explain_baseline
            .then(|| Baseline::new(plan.cfg.ring_bytes)),
        rec: &mut p.rec,
        triggers: Triggers::new(plan.triggers.every_ns),
        offered: 0,
        trace: Trace::new(a.output.trace_written, plan.cfg.mode == Mode::Ring),
        writer_failed: false,
        live: live.clone(),
        timeline: match plan.cfg.keep_write_samples {
            0 => Timeline::default(),
            n => Timeline::with_capacity(n),
        },
    };
    let (size, count) = (plan.source.size, plan.source.count);
    let clock = CostClock::start();
    let producer_cpu0 = cpu_ns(rtrec_sys::thread_cpu_ns);
    let (outcome, timer) = match plan.source.source {
        Source::Synthetic { period_ns } => {
            let mut t = PeriodicTimer::new(period_ns);
            t.publish_to(live);
            let outcome = synthetic(&mut session, &mut t, size, count);
            (outcome, Some(t))
        }
        Source::StdinFixed => (stdin_source(&mut session, Cut::Fixed { size }, count), None),
        Source::StdinLines => {
            let max = plan.cfg.max_record;
            (stdin_source(&mut session, Cut::Lines { max }, count), None)
        }
    };
    let producer_cpu_ns = cpu_ns(rtrec_sys::thread_cpu_ns).saturating_sub(producer_cpu0);
    if session.baseline.is_some() && !a.output.quiet {
        eprintln!(
            "rtrec: --explain-baseline: {} records copied by the producer's loop without record(); nothing was recorded",
            session.offered
        );
    }
    Ran {
        outcome,
        timer,
        timeline: session.timeline,
        clock,
        producer_cpu_ns,
    }
}

/// Triggers from outside the process reach a flight recorder through its
/// socket in the directory (`rtrec trigger DIR`); listening while the
/// returned listener lives. A socket that cannot be bound is a warning.
fn listen(plan: &Plan) -> Option<crate::trigger::Listener> {
    plan.cfg.flight.as_ref()?;
    match crate::trigger::Listener::bind(&plan.dir, &signals::TRIGGERS) {
        Ok(l) => Some(l),
        Err(why) => {
            eprintln!("rtrec: warning: {why}; `rtrec trigger` will not reach this recorder");
            None
        }
    }
}
