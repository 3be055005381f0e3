//! `rtrec doctor [DIR]`: is this machine fit for real-time recording into
//! DIR? Checks of the filesystem and device under DIR and of the system
//! ([`checks`]), each pass / warn / fail / skip with one line of why and
//! the command that fixes it; `--json` for scripts. Exit code 0 when no
//! check fails, 1 otherwise.
//!
//! Design choices:
//! - DIR need not exist: the checks run on its nearest existing parent
//!   (where `rtrec record --dir DIR` would create it), and say so.
//! - Nothing is measured by default but the steal time (200 ms of
//!   `/proc/stat`): a full device measurement writes about 100 MiB and
//!   belongs to `rtrec device probe`. `--probe` runs its short form
//!   ([`rtrec_emu::probe::Extent::SHORT`], about 16 MiB) in DIR itself and
//!   judges the flush latency ([`probe_check`]); without it the check is a
//!   `skip` naming both commands.

pub mod checks;

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::cli::DoctorArgs;
use crate::{usage, Context};
use checks::{Check, Status};

/// The `--json` document.
#[derive(Debug, Serialize)]
pub struct Report {
    /// The directory asked about.
    pub dir: PathBuf,
    /// The existing directory the checks ran on (DIR or its nearest parent).
    pub checked: PathBuf,
    /// The planned recording's size, bytes (`--planned`).
    pub planned_bytes: u64,
    /// Every check, filesystem first, then device, then system.
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

/// A flush (4 KiB write + `fdatasync`) p99 above this is a warning: etcd's
/// published bound for its write-ahead log, the nearest published figure
/// for "a log that must be durable soon" (docs/devices.md, DEVICES.md S24).
pub const FLUSH_P99_WARN_NS: u64 = 10_000_000;

/// Without `--probe`: a `skip` that names the commands that measure.
fn probe_skipped() -> Check {
    Check {
        id: "device-probe",
        area: "device",
        status: Status::Skip,
        found: "not measured".into(),
        why: "doctor reads settings only; `rtrec doctor --probe` measures briefly (16 MiB), `rtrec device probe DIR` in full (about 100 MiB), `rtrec bench --dir DIR` its write() latency".into(),
        fix: None,
    }
}

/// With `--probe`: a short probe of the device under `dir` (which must
/// exist: the probe writes only inside it), judged by its flush p99.
pub fn probe_check(dir: &Path) -> Check {
    let mut c = probe_skipped();
    if !dir.is_dir() {
        c.why = format!(
            "'{}' does not exist; the probe writes only inside DIR",
            dir.display()
        );
        return c;
    }
    let quiet = !std::io::IsTerminal::is_terminal(&std::io::stderr());
    let short = rtrec_emu::probe::Extent::SHORT;
    let result = rtrec_emu::probe::probe_extent(dir, "doctor", short, |step| {
        if !quiet {
            eprintln!("rtrec doctor: probe {step}");
        }
    });
    let r = match result {
        Ok(r) => r,
        Err(e) => {
            c.status = Status::Warn;
            c.found = "probe failed".into();
            c.why = format!("the short probe in '{}' failed: {e}", dir.display());
            return c;
        }
    };
    // The probe's figures, checked by the same parser as any profile.
    let p = match rtrec_emu::Profile::from_file(r.profile, "measured by the probe") {
        Ok(p) => p,
        Err(e) => {
            c.status = Status::Warn;
            c.found = "probe failed".into();
            c.why = e.to_string();
            return c;
        }
    };
    let flush_p99 = p.flush_tail_ns.max(p.flush_ns);
    c.found = format!(
        "write {}/s, read {}/s; flush {} median, {} p99 (above a 4 KiB write); 4 KiB write {}",
        rtrec_units::format_size(p.write_bytes_per_s),
        rtrec_units::format_size(p.read_bytes_per_s),
        rtrec_units::format_duration(p.flush_ns),
        rtrec_units::format_duration(flush_p99),
        rtrec_units::format_duration(p.write_latency_ns)
    );
    if flush_p99 > FLUSH_P99_WARN_NS {
        c.status = Status::Warn;
        c.why = format!(
            "a flush p99 above {} (etcd's bound for its log): every jbd2 commit and fsync waits this long; the ring must ride out such stalls",
            rtrec_units::format_duration(FLUSH_P99_WARN_NS)
        );
        c.fix = Some(format!(
            "rtrec device probe {} -o board.json && rtrec bench --device board.json",
            dir.display()
        ));
    } else {
        c.status = Status::Pass;
        c.why = format!(
            "flush p99 within {} (short probe: 16 MiB; `rtrec device probe` measures GC stalls over 64 MiB)",
            rtrec_units::format_duration(FLUSH_P99_WARN_NS)
        );
    }
    c
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

/// Runs every check for `a`.
pub fn collect(a: &DoctorArgs) -> crate::Result<Report> {
    let planned = a.planned.bytes();
    let Some(checked) = nearest_existing(&a.dir) else {
        return usage(format!(
            "'{}' has no existing parent directory",
            a.dir.display()
        ));
    };
    let mounts = rtrec_host::mounts::read_mounts().context("reading /proc/self/mounts")?;
    let m = rtrec_host::mounts::mount_of(&checked, &mounts);
    let dev = rtrec_bench::target::block_device_of(&checked);
    let mut all = checks::filesystem(&checked, m.as_ref(), planned);
    all.extend(checks::device(dev.as_deref()));
    all.push(if a.probe {
        probe_check(&a.dir)
    } else {
        probe_skipped()
    });
    // What `rtrec record --rt` locks by default: the 16 MiB ring.
    all.extend(checks::system(16 << 20));
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
        dir: a.dir.clone(),
        checked,
        planned_bytes: planned,
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

/// Runs `rtrec doctor`.
pub fn run(a: &DoctorArgs) -> crate::Result<i32> {
    let r = collect(a)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        print!("{}", render(&r));
    }
    Ok(if r.counts.fail > 0 { 1 } else { 0 })
}
