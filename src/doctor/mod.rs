//! `rtrec doctor [DIR]`: is this machine fit for real-time recording into
//! DIR? Checks of the filesystem and device under DIR, of the system and
//! of the board ([`checks::all`], one function each), each pass / warn /
//! fail / skip with one line of why and the command that fixes it;
//! `--json` for scripts. Exit code 0 when no check fails, 1 otherwise.
//!
//! Modules, lowest first: [`verdict`] (the facts, a finding, a reported
//! check, a check's row) · `filesystem`, `device`, `system`, `board` (the
//! checks of each group, each with its row) · [`checks`] (the groups
//! joined into the table) · this one (gathering the facts,
//! rendering).
//!
//! Design choices:
//! - DIR need not exist: the checks run on its nearest existing parent
//!   (where `rtrec record --dir DIR` would create it), and say so.
//! - Nothing is measured by default but the steal time (200 ms of
//!   `/proc/stat`): a full device measurement writes about 100 MiB and
//!   belongs to `rtrec device probe`. `--probe` runs its short form
//!   ([`rtrec_emu::probe::Extent::SHORT`], about 16 MiB) in DIR itself,
//!   before the checks; the `device-probe` check judges its flush latency
//!   and the ring is sized for its worst stall.
//! - The ring the memory checks hold against is the engine's sizing rule
//!   ([`rtrec_engine::Config::sizes_for`]: the auto ring,
//!   [`rtrec_engine::sizing::auto_ring`], for a probed stall or the default
//!   one) for the rate of `--rate SIZE/PERIOD`, as `rtrec record` would
//!   size it.

mod board;
pub mod checks;
mod device;
mod filesystem;
mod system;
pub mod verdict;

use std::path::{Path, PathBuf};

use rtrec_engine::{Config, Stall, StallSource, Workload};
use rtrec_units::{format_duration, format_size};
use serde::Serialize;

use crate::cli::DoctorArgs;
use crate::error::{usage, Context};
use verdict::{Check, Facts, Status};

/// The `--json` document.
#[derive(Debug, Serialize)]
pub struct Report {
    /// The directory asked about.
    pub dir: PathBuf,
    /// The existing directory the checks ran on (DIR or its nearest parent).
    pub checked: PathBuf,
    /// The planned recording's size, bytes (`--planned`).
    pub planned_bytes: u64,
    /// Every check, in the table's order: filesystem, device, system,
    /// board.
    pub checks: Vec<Check>,
    /// How many of each verdict.
    pub counts: Counts,
}

/// Verdict counts.
#[derive(Debug, Default, Serialize)]
pub struct Counts {
    /// `pass`.
    pub pass: usize,
    /// `warn`.
    pub warn: usize,
    /// `fail`.
    pub fail: usize,
    /// `skip`.
    pub skip: usize,
}

fn nearest_existing(dir: &Path) -> Option<PathBuf> {
    let abs = if dir.is_absolute() {
        dir.to_path_buf()
    } else {
        std::env::current_dir().ok()?.join(dir)
    };
    abs.ancestors()
        .find(|a| a.is_dir())
        .and_then(|a| a.canonicalize().ok())
}

/// `--rate SIZE/PERIOD`: one record of SIZE every PERIOD (`16KiB/5ms`,
/// `4MiB/s`), as `rtrec record --size SIZE --period PERIOD`.
///
/// # Errors
/// One sentence: no `/`, or a size or duration the units grammar refuses.
pub fn parse_rate(s: &str) -> std::result::Result<(u64, u64), String> {
    let (size, period) = s
        .split_once('/')
        .ok_or_else(|| format!("'{s}' is not SIZE/PERIOD (e.g. 16KiB/5ms, 4MiB/s)"))?;
    // The same parsers as record's --size and --period.
    let size = rtrec_units::value::record_size(size).map_err(|e| e.to_string())?;
    // `4MiB/s`: a unit alone means one of it.
    let period = if period.starts_with(|c: char| c.is_ascii_digit()) {
        period.to_string()
    } else {
        format!("1{period}")
    };
    let period = rtrec_units::value::interval(&period).map_err(|e| e.to_string())?;
    Ok((size.bytes(), period.ns()))
}

/// The ring `rtrec record` would allocate at `rate` (record size,
/// period), ridden out for `stall_ns` when the device's worst stall is
/// known; with how it was sized, in words.
pub fn ring_for(rate: Option<(u64, u64)>, stall_ns: Option<u64>) -> (u64, String) {
    let Some((size, period)) = rate else {
        let ring = Config::default()
            .sizes_for(&Workload::UNKNOWN)
            .ring
            .ring_bytes;
        return (ring as u64, "the default; --rate sizes it for yours".into());
    };
    let cfg = Config {
        max_record: usize::try_from(size).unwrap_or(usize::MAX),
        ..Config::default()
    };
    // The auto ring of `rtrec record` (rtrec_engine::sizing::auto_ring).
    let w = Workload {
        period_ns: Some(period),
        fixed_size: true,
        stall: stall_ns.map(|ns| Stall {
            ns,
            source: StallSource::Probe,
        }),
        ..Workload::UNKNOWN
    };
    let ring = cfg.sizes_for(&w).ring.ring_bytes as u64;
    let rate_words = format!("{} every {}", format_size(size), format_duration(period));
    match stall_ns {
        Some(stall) => (
            ring,
            format!(
                "{rate_words}, for the probed worst stall of {}",
                format_duration(stall)
            ),
        ),
        None => (
            ring,
            format!(
                "{rate_words}, for the default stall of {}",
                format_duration(rtrec_engine::sizing::DEFAULT_STALL_NS)
            ),
        ),
    }
}

/// Gathers the facts for `a` (and runs the probe with `--probe`).
pub fn facts(a: &DoctorArgs) -> crate::error::Result<Facts> {
    let planned = a.planned.bytes();
    let rate = a
        .rate
        .as_deref()
        .map(parse_rate)
        .transpose()
        .map_err(|e| crate::error::Error::Usage(format!("--rate: {e}")))?;
    let Some(checked) = nearest_existing(&a.dir) else {
        return usage(format!(
            "'{}' has no existing parent directory",
            a.dir.display()
        ));
    };
    let mounts = rtrec_host::mounts::read_mounts().context("reading /proc/self/mounts")?;
    let probe = a.probe.then(|| device::run_probe(&a.dir));
    let stall = probe
        .as_ref()
        .and_then(|p| p.as_ref().ok())
        .map(rtrec_emu::Profile::worst_stall_ns);
    let (ring_bytes, ring_basis) = ring_for(rate, stall);
    Ok(Facts {
        dir: a.dir.clone(),
        mount: rtrec_host::mounts::mount_of(&checked, &mounts),
        device: rtrec_host::machine::block_device_of(&checked),
        checked,
        planned_bytes: planned,
        ring_bytes,
        ring_basis,
        probe,
    })
}

/// Runs every check for `a`.
pub fn collect(a: &DoctorArgs) -> crate::error::Result<Report> {
    let facts = facts(a)?;
    let all = checks::run_all(&facts);
    let mut counts = Counts::default();
    for c in &all {
        *match c.status {
            Status::Pass => &mut counts.pass,
            Status::Warn => &mut counts.warn,
            Status::Fail => &mut counts.fail,
            Status::Skip => &mut counts.skip,
        } += 1;
    }
    Ok(Report {
        dir: facts.dir,
        checked: facts.checked,
        planned_bytes: facts.planned_bytes,
        checks: all,
        counts,
    })
}

/// The report as the terminal shows it.
pub fn render(r: &Report) -> String {
    let mut s = format!(
        "rtrec doctor: {}{} for a recording of {}\n\n",
        r.checked.display(),
        if r.checked != r.dir && r.checked != r.dir.canonicalize().unwrap_or_default() {
            format!(" (nearest existing parent of '{}')", r.dir.display())
        } else {
            String::new()
        },
        rtrec_units::format_size(r.planned_bytes)
    );
    let width = r.checks.iter().map(|c| c.id.len()).max().unwrap_or(0);
    let mut area = "";
    for c in &r.checks {
        if c.area != area {
            area = c.area;
            s.push_str(&format!("{area}\n"));
        }
        s.push_str(&format!(
            "  {:<4}  {:<width$}  {}: {}\n",
            c.status.word(),
            c.id,
            c.found,
            c.why
        ));
        if let Some(fix) = &c.fix {
            s.push_str(&format!("        {:<width$}  fix: {fix}\n", ""));
        }
    }
    let n = &r.counts;
    s.push_str(&format!(
        "\n{} pass, {} warn, {} fail, {} skip\n",
        n.pass, n.warn, n.fail, n.skip
    ));
    s
}

/// The table of checks as `--list` prints it: id, group, title.
pub fn list() -> String {
    let width = checks::all().map(|s| s.id.len()).max().unwrap_or(0);
    checks::all()
        .map(|s| format!("{:<width$}  {:<10}  {}\n", s.id, s.area.name(), s.title))
        .collect()
}

/// Runs `rtrec doctor`.
pub fn run(a: &DoctorArgs) -> crate::error::Result<i32> {
    if a.list {
        print!("{}", list());
        return Ok(0);
    }
    let r = collect(a)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        print!("{}", render(&r));
    }
    Ok(if r.counts.fail > 0 { 1 } else { 0 })
}
