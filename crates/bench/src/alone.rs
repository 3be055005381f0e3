//! The studies that run alone, instead of the cases (`--study throughput`,
//! `cost`, `crash` or `endurance` by itself, see [`Alone`](crate::plan::Alone)),
//! each on the prepared target with the global lock held, the machine put
//! back on every path; and `--combine`, which runs nothing.

use std::path::Path;

use anyhow::Context;
use rtrec_emu::DeviceArg;

use crate::args::BenchArgs;
use crate::error::Error;
use crate::export;
use crate::flusher::FlusherControl;
use crate::producer;
use crate::report::SCHEMA_VERSION;
use crate::target::{self, Target};
use crate::{cost, crash, endurance, throughput};

/// `--study throughput` on the prepared `target`, with the global lock
/// held (in `flusher`); the machine is put back on every path.
pub(crate) fn run_throughput(
    args: &BenchArgs,
    rt: &producer::RtRequest,
    target: Target,
    flusher: FlusherControl,
) -> anyhow::Result<i32> {
    let opts = throughput_options(args, rt);
    run_reported(
        args,
        target,
        flusher,
        |work, profile, on_run| throughput::run(work, profile, &opts, on_run),
        throughput::render,
        |r| export::throughput_plot::render(std::slice::from_ref(r)),
        "throughput",
    )
}

/// `--study cost` on the prepared `target`, with the global lock held (in
/// `flusher`); the machine is put back on every path.
pub(crate) fn run_cost(
    args: &BenchArgs,
    rt: &producer::RtRequest,
    target: Target,
    flusher: FlusherControl,
) -> anyhow::Result<i32> {
    let opts = cost::Options {
        bytes: args.cost_bytes.unwrap_or(cost::DEFAULT_BYTES),
        sizes: args.size.map_or_else(|| cost::SIZES.to_vec(), |s| vec![s]),
        rt: rt.clone(),
        repeat: args.repeat.unwrap_or(1),
    };
    run_reported(
        args,
        target,
        flusher,
        |work, profile, on_run| cost::run(work, profile, &opts, on_run),
        cost::render,
        export::cost_plot::render,
        "cost",
    )
}

/// A study of `--repeat` runs on `target` (`run` gets its work directory,
/// the device profile's name and what to call after each run: the JSON
/// written again, not to stdout, which gets it once), then the machine
/// put back (`flusher`, `target`) on every path, the table (`render`),
/// `--json` and `--plot` (`plot`, the `what` plot).
fn run_reported<R: serde::Serialize>(
    args: &BenchArgs,
    target: Target,
    flusher: FlusherControl,
    run: impl FnOnce(&Path, &str, &mut dyn FnMut(&R)) -> anyhow::Result<R>,
    render: impl Fn(&R) -> String,
    plot: impl Fn(&R) -> Result<String, Box<dyn std::error::Error>>,
    what: &str,
) -> anyhow::Result<i32> {
    let profile = args
        .device
        .as_ref()
        .map_or_else(|| "native".to_string(), |d| d.profile.name.clone());
    let mut on_run = |partial: &R| {
        if let Some(p) = args
            .json
            .as_ref()
            .filter(|p| p.as_os_str() != export::STDOUT)
        {
            if let Err(e) = write_json(p, partial) {
                eprintln!("rtrec bench: {e:#}");
            }
        }
    };
    let r = run(&target.work, &profile, &mut on_run);
    let released = flusher.finish();
    let removed = target.remove();
    let r = r?;
    print_table(args, &render(&r));
    if let Some(p) = &args.json {
        write_json(p, &r)?;
    }
    if let Some(p) = &args.plot {
        let svg = plot(&r).map_err(|e| anyhow::anyhow!("drawing the {what} plot: {e}"))?;
        export::write_target(p, svg.as_bytes())
            .with_context(|| format!("writing '{}'", p.display()))?;
    }
    released?;
    removed?;
    Ok(0)
}

/// The throughput study's options from the command line, each with its
/// default.
fn throughput_options(args: &BenchArgs, rt: &producer::RtRequest) -> throughput::Options {
    throughput::Options {
        probe_ns: args
            .probe_duration
            .map_or(60_000_000_000, |d| d.as_nanos() as u64),
        coarse_ns: args
            .coarse_duration
            .map_or(5_000_000_000, |d| d.as_nanos() as u64),
        steps: args.steps.unwrap_or(5),
        sizes: match args.size {
            Some(s) => vec![s],
            None => throughput::SIZES.to_vec(),
        },
        rule: args.hold_rule,
        confirmations: args
            .confirmations
            .unwrap_or(throughput::DEFAULT_CONFIRMATIONS),
        rt: rt.clone(),
        repeat: args.repeat.unwrap_or(1),
        alloc: args.alloc.unwrap_or(rtrec_engine::Alloc::Fallocate),
    }
}

/// A study's table: on stdout, or with `--json -` (the JSON is stdout's)
/// on stderr.
fn print_table(args: &BenchArgs, table: &str) {
    match &args.json {
        Some(p) if p.as_os_str() == export::STDOUT => eprint!("{table}"),
        _ => print!("{table}"),
    }
}

/// `--combine`: the throughput reports in `files` as one table on stdout
/// and, with `plot`, one SVG of every device.
pub(crate) fn combine_throughput(
    files: &[std::path::PathBuf],
    plot: Option<&Path>,
) -> Result<i32, Error> {
    let mut reports = Vec::new();
    for f in files {
        let bytes = std::fs::read(f).map_err(|source| Error::Read {
            path: f.clone(),
            source,
        })?;
        let r: throughput::ThroughputReport =
            serde_json::from_slice(&bytes).map_err(|e| Error::NotAReport {
                path: f.clone(),
                reason: format!("not a --study throughput result of this version ({e})"),
            })?;
        reports.push(r);
    }
    print!("{}", throughput::combine(&reports));
    if let Some(p) = plot {
        let svg = export::throughput_plot::render(&reports)
            .map_err(|e| Error::Unavailable(format!("drawing the throughput plot: {e}")))?;
        export::write_target(p, svg.as_bytes())
            .map_err(|e| Error::Unavailable(format!("writing '{}': {e:#}", p.display())))?;
    }
    Ok(0)
}

/// A study's result as pretty JSON to `p` (`-`: stdout).
fn write_json(p: &Path, r: &impl serde::Serialize) -> anyhow::Result<()> {
    let mut text = serde_json::to_string_pretty(r)?;
    text.push('\n');
    export::write_target(p, text.as_bytes()).with_context(|| format!("writing '{}'", p.display()))
}

/// `--study endurance` with the global lock held (in `flusher`): one
/// `rtrec record --rt --explain` in the target's directory.
pub(crate) fn run_endurance(
    args: &BenchArgs,
    target: Target,
    flusher: FlusherControl,
) -> anyhow::Result<i32> {
    let opts = endurance::Options {
        count: args.writes.unwrap_or(endurance::COUNT),
        period_ns: args
            .period
            .map_or(endurance::PERIOD_NS, |d| d.as_nanos() as u64),
        size: args.size.unwrap_or(endurance::SIZE),
        cpu: std::thread::available_parallelism().map_or(0, |n| n.get() - 1),
        rtrec: std::env::current_exe().context("finding the rtrec executable")?,
        dir: target.work.clone(),
        baseline: args.endurance_baseline,
    };
    let r = endurance::run(&opts);
    let released = flusher.finish();
    let removed = target.remove();
    let r = r?;
    print_table(args, &endurance::render(&r));
    if let Some(p) = &args.json {
        write_json(
            p,
            &serde_json::json!({ "schema_version": SCHEMA_VERSION, "endurance": r }),
        )?;
    }
    released?;
    removed?;
    Ok(0)
}

/// `--study crash` with the global lock held (in `flusher`); its own
/// images are made and removed by [`crash::run`], `target` only gives the
/// environment. Exit code 1 when a violation was found.
pub(crate) fn run_crash(
    args: &BenchArgs,
    target: Target,
    flusher: FlusherControl,
) -> anyhow::Result<i32> {
    let device = match &args.device {
        Some(d) => d.clone(),
        None => DeviceArg::parse("emmc").map_err(|e| anyhow::anyhow!("{e}"))?,
    };
    let emulator = target::emulator(&device)?.ok_or_else(|| {
        anyhow::anyhow!(
            "the crash study needs an emulated device; --device native emulates nothing"
        )
    })?;
    let seed = args.crash_seed.unwrap_or_else(rtrec_sys::time::realtime_ns);
    let opts = crash::Options {
        states: args.crash_states.unwrap_or(200),
        count: args.crash_count.unwrap_or(1500),
        atomic: args.crash_atomic.unwrap_or(512),
        seed,
        emulator,
        rtrec: std::env::current_exe().context("finding the rtrec executable")?,
        parent: args.image_dir.clone().unwrap_or_else(std::env::temp_dir),
        only: args.crash_cells.clone(),
        log_cost: !args.crash_no_log_cost && args.crash_cycles.is_none(),
        cycles: args.crash_cycles.unwrap_or(0),
    };
    if opts.cycles > 0 {
        eprintln!(
            "rtrec bench: crash study: {} power-cut cycles of a loop recording on the emulated {} (seed {seed}, torn writes in units of {} bytes)",
            opts.cycles, device.profile.name, opts.atomic
        );
    } else {
        eprintln!(
            "rtrec bench: crash study: {} states over {} cells on the emulated {} (seed {seed}, torn writes in units of {} bytes)",
            opts.states,
            crash::selected(&opts.only).len(),
            device.profile.name,
            opts.atomic
        );
    }
    let environment = target::environment(
        &target,
        Some(&device),
        flusher.found(),
        flusher.can_switch(),
    );
    let r = crash::run(&opts);
    let released = flusher.finish();
    let removed = target.remove();
    let r = r?;
    eprintln!(
        "rtrec bench: crash: {} states checked, {} with ext4 repaired, {} violations",
        r.states_checked,
        r.fs_repaired,
        r.violations.len()
    );
    if let Some(p) = &args.json {
        let v = serde_json::json!({
            "schema_version": SCHEMA_VERSION,
            "environment": environment,
            "crash": r,
        });
        write_json(p, &v)?;
    }
    released?;
    removed?;
    Ok(if r.violations.is_empty() { 0 } else { 1 })
}
