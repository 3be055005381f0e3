//! `rtrec doctor [DIR]`: is this machine fit for real-time recording into
//! DIR? Checks of the filesystem and device under DIR and of the system
//! ([`checks`]), each pass / warn / fail / skip with one line of why and
//! the command that fixes it; `--json` for scripts. Exit code 0 when no
//! check fails, 1 otherwise.
//!
//! Design choices:
//! - DIR need not exist: the checks run on its nearest existing parent
//!   (where `rtrec record --dir DIR` would create it), and say so.
//! - Nothing is measured here but the steal time (200 ms of `/proc/stat`):
//!   a device measurement writes about 100 MiB and belongs to
//!   `rtrec device probe`; [`probe_hook`] is where its short form will add
//!   its verdict.

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

/// The hook for a short form of `rtrec device probe`; until it has one, a
/// `skip` that names the command.
fn probe_hook(_dir: &Path) -> Check {
    Check {
        id: "device-probe",
        area: "device",
        status: Status::Skip,
        found: "not measured".into(),
        why: "doctor reads settings only; `rtrec device probe DIR` measures this device (about 100 MiB written), `rtrec bench --dir DIR` its write() latency".into(),
        fix: None,
    }
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
    let planned = rtrec_units::parse_size(&a.planned)
        .map_err(|e| crate::Error::Usage(format!("--planned: {e}")))?;
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
    all.push(probe_hook(&checked));
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
