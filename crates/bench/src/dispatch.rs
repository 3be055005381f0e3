//! `rtrec bench`'s two stages, as ripgrep's: [`run_with`] first checks
//! everything the user gave (typed errors, exit code 2) and answers what
//! runs nothing (`--list`, `--combine`, `--compare`); then the plan runs
//! with the global lock held (its failures are the environment's, exit
//! code 1): a study that runs alone ([`crate::alone`]) or the cases
//! ([`crate::cases`]).

use std::path::Path;

use anyhow::Context;

use crate::alone;
use crate::args::BenchArgs;
use crate::bgload::Launcher;
use crate::cases;
use crate::error::Error;
use crate::flusher::FlusherControl;
use crate::output::table;
use crate::plan::{Alone, Plan};
use crate::report::{BenchReport, SCHEMA_VERSION};
use crate::s4_fio;
use crate::signal;
use crate::target::Target;

/// Options of a run that are not on the command line.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// How to start background loads (default: `current_exe() __bgload`).
    pub launcher: Option<Launcher>,
}

/// Runs `rtrec bench` and returns the exit code: 0, 1 when a case failed,
/// 130 when interrupted.
///
/// # Errors
/// Bad arguments or `--compare` files are refused before anything runs
/// ([`Error::is_bad_input`]); a failure while setting up, running or
/// restoring the environment is [`Error::Failed`].
pub fn run(args: &BenchArgs) -> Result<i32, Error> {
    run_with(args, &RunOptions::default())
}

/// Reads a `--json` result, checking its schema version.
///
/// # Errors
/// The file cannot be read, is not a report, or has another schema version.
pub fn read_report(path: &Path) -> Result<BenchReport, Error> {
    let bytes = std::fs::read(path).map_err(|source| Error::Read {
        path: path.to_path_buf(),
        source,
    })?;
    read_report_bytes(path, &bytes)
}

/// [`read_report`] of `bytes` already read from `path`.
///
/// # Errors
/// Not a report, or another schema version.
pub fn read_report_bytes(path: &Path, bytes: &[u8]) -> Result<BenchReport, Error> {
    let r: BenchReport = serde_json::from_slice(bytes).map_err(|e| Error::NotAReport {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    if r.schema_version != SCHEMA_VERSION {
        return Err(Error::SchemaVersion {
            path: path.to_path_buf(),
            found: r.schema_version,
            expected: SCHEMA_VERSION,
        });
    }
    Ok(r)
}

/// [`run`] with options.
///
/// # Errors
/// As [`run`].
pub fn run_with(args: &BenchArgs, opts: &RunOptions) -> Result<i32, Error> {
    // Two stages, as ripgrep does: first everything the user gave is
    // checked (typed, exit 2), then the plan runs (its failures are the
    // environment's, exit 1).
    if args.list {
        print!("{}", table::render_list());
        return Ok(0);
    }
    if let Some(files) = &args.combine {
        return alone::combine_throughput(files, args.plot.as_deref());
    }
    if let Some(files) = &args.compare {
        let (old, new) = (read_report(&files[0])?, read_report(&files[1])?);
        print!("{}", table::render_compare(&old, &new));
        return Ok(0);
    }
    let plan = Plan::from_args(args)?;
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if plan.rt.cpu.is_some_and(|c| c >= cpus) {
        return Err(Error::OutOfRange {
            flag: "--cpu",
            requirement: format!("a CPU this process may run on, 0-{}", cpus - 1),
        });
    }
    let fio = if plan.s4_with_fio {
        Some(s4_fio::version().map_err(Error::Unavailable)?)
    } else {
        None
    };
    // Waiting for the global lock can end by a stop signal or a timeout:
    // typed host errors (exit 130 / 1), taken before anything runs.
    let _signals = signal::install()?;
    // What dead rtrec processes left behind goes back first.
    match rtrec_host::restore_stale() {
        Ok(r) => r
            .restored
            .iter()
            .for_each(|l| eprintln!("rtrec bench: put back {l}")),
        Err(e) => eprintln!("rtrec bench: could not check for settings left by earlier runs: {e}"),
    }
    let privileged = rtrec_host::loopfs::privileged().is_ok();
    let mut restored = Vec::new();
    let wait = rtrec_host::Wait {
        timeout: Some(
            args.lock_timeout
                .unwrap_or(rtrec_host::DEFAULT_LOCK_TIMEOUT),
        ),
        ..rtrec_host::Wait::default()
    };
    let flusher = FlusherControl::new(privileged, &wait, &mut restored)?;
    run_plan(args, opts, &plan, fio, flusher, &restored).map_err(Error::Failed)
}

/// The second stage of [`run_with`]: sets up the target, then runs the
/// study that runs alone or every case of `plan` with the global lock
/// held (in `flusher`), then S3 and S4 ([`cases::run_cases`]), puts the
/// machine back and prints the tables.
fn run_plan(
    args: &BenchArgs,
    opts: &RunOptions,
    plan: &Plan,
    fio: Option<String>,
    flusher: FlusherControl,
    restored: &[String],
) -> anyhow::Result<i32> {
    let launcher = launcher(opts)?;
    restored
        .iter()
        .for_each(|l| eprintln!("rtrec bench: put back {l}"));
    let mut warnings = Vec::new();
    let target = Target::prepare(
        args.dir.as_deref(),
        args.image_dir.as_deref(),
        args.device.as_ref(),
        &mut warnings,
    )?;
    match Alone::asked(&args.study) {
        Some(Alone::Throughput) => alone::run_throughput(args, &plan.rt, target, flusher),
        Some(Alone::Cost) => alone::run_cost(args, &plan.rt, target, flusher),
        Some(Alone::Crash) => alone::run_crash(args, target, flusher),
        Some(Alone::Endurance) => alone::run_endurance(args, target, flusher),
        None => cases::run_cases(args, plan, fio, launcher, target, flusher, warnings),
    }
}

/// How to start background loads: the caller's, or this executable.
fn launcher(opts: &RunOptions) -> anyhow::Result<Launcher> {
    match &opts.launcher {
        Some(l) => Ok(l.clone()),
        None => Launcher::current_exe()
            .context("finding the rtrec executable to start background loads"),
    }
}
