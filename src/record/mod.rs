//! `rtrec record`: resolve the options into a recorder configuration, run a
//! synthetic periodic source (or read records from stdin), show progress on
//! a terminal, and print the summary.
//!
//! In stages, each in a module of its own: [`plan::resolve`] (the flag
//! groups checked together into a [`plan::Plan`], no I/O) →
//! [`prepare::prepare`] (directory, signals, recorder, watchers) →
//! [`run::run_source`] (the records) → [`finish::finish`] (the summary
//! and what it gathers) → [`finish::report`] (`--json`, the terminal, the
//! exit code). [`run()`] puts `--device`'s emulated device around the last
//! four.
//!
//! The modules, lowest first (none imports this driver):
//! - the flag groups, each beside its apply: [`source`], [`ring`],
//!   [`storage`], [`realtime`], [`flight`], [`output`]; [`plan`] flattens
//!   them into [`RecordArgs`] and combines their applies;
//! - the recording loop: [`session`] (the one way a source reaches the
//!   recorder, trigger intake), the sources [`synthetic`] and [`stdin`],
//!   and [`assembler`] (stdin cut into records);
//! - around it: [`watch`] (progress, `--status`, memory samples),
//!   [`json`] (`--json`), [`summary`] (the table), and the stages
//!   [`prepare`], [`run`](mod@run), [`finish`].

mod assembler;
mod context;
mod cost;
mod finish;
mod flight;
mod json;
mod output;
mod plan;
mod prepare;
mod realtime;
mod ring;
mod run;
mod session;
mod source;
mod stdin;
mod storage;
mod summary;
mod synthetic;
mod watch;

pub use plan::RecordArgs;

/// Runs `rtrec record`; with `--device`, in the recording directory of an
/// emulated device's trial (see [`crate::device::Trial`]).
///
/// # Errors
/// Bad input (exit code 2), or a recording that could not start or end.
pub fn run(a: &RecordArgs) -> crate::error::Result<i32> {
    let mut plan = plan::resolve(a)?;
    let quiet = a.output.quiet;
    let Some(trial) = crate::device::Trial::start(&a.device, &plan.dir, quiet)? else {
        return record(a, plan, None);
    };
    plan.dir = trial.dir().to_path_buf();
    plan.dir_is_default = false;
    let result = record(a, plan, Some(&trial));
    trial.finish(result)
}

/// One recording, in stages: [`prepare::prepare`] (the directory, signals,
/// the recorder and what watches it), [`run::run_source`] (the records),
/// [`finish::finish`] (the summary and what it gathers),
/// [`finish::report`] (what the user sees, and the exit code).
fn record(
    a: &RecordArgs,
    plan: plan::Plan,
    trial: Option<&crate::device::Trial>,
) -> crate::error::Result<i32> {
    let mut prepared = prepare::prepare(a, &plan)?;
    let ran = run::run_source(a, &plan, &mut prepared);
    let finished = finish::finish(prepared, ran, &plan, trial)?;
    finish::report(&a.output, a.explain_baseline, &finished)
}
