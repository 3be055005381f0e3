//! What every check of `rtrec doctor` works on and gives back: the facts
//! gathered once ([`Facts`]), a check's row ([`Spec`]), its judgment
//! ([`Finding`]) and the reported line ([`Check`]). The base of the
//! doctor's modules: it imports none of them (so [`Spec`] is here, not in
//! `checks`, which imports the group modules that declare the rows).

use std::fs;
use std::path::{Path, PathBuf};

use rtrec_host::mounts::MountEntry;
use serde::Serialize;

/// The verdict of one check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Fit for real-time recording.
    Pass,
    /// Works, but latency will be worse or less predictable.
    Warn,
    /// A recording cannot keep its promise here.
    Fail,
    /// The fact could not be read (the reason says why).
    Skip,
}

impl Status {
    /// The word printed in the table.
    pub fn word(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Warn => "WARN",
            Status::Fail => "FAIL",
            Status::Skip => "skip",
        }
    }
}

/// The group a check belongs to, printed as a heading.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Area {
    /// The filesystem under DIR and its mount.
    Filesystem,
    /// The block device under it.
    Device,
    /// The kernel and its settings.
    System,
    /// What an embedded board (or its stand-in) must offer: real hardware,
    /// a steady clock, timers, memory for the ring.
    Board,
}

impl Area {
    /// The heading (and the JSON `area`).
    pub fn name(self) -> &'static str {
        match self {
            Area::Filesystem => "filesystem",
            Area::Device => "device",
            Area::System => "system",
            Area::Board => "board",
        }
    }
}

/// What a check judged, before the table names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// The verdict.
    pub status: Status,
    /// What was found, as the kernel says it.
    pub found: String,
    /// One line: why this verdict.
    pub why: String,
    /// The command that fixes it (warn and fail only).
    pub fix: Option<String>,
}

impl Finding {
    /// Fit: no fix.
    pub fn pass(found: impl Into<String>, why: impl Into<String>) -> Finding {
        Finding::new(Status::Pass, found, why, None)
    }

    /// Works, but worse: with the command that fixes it.
    pub fn warn(
        found: impl Into<String>,
        why: impl Into<String>,
        fix: impl Into<String>,
    ) -> Finding {
        Finding::new(Status::Warn, found, why, Some(fix.into()))
    }

    /// A recording cannot keep its promise: with the command that fixes it.
    pub fn fail(
        found: impl Into<String>,
        why: impl Into<String>,
        fix: impl Into<String>,
    ) -> Finding {
        Finding::new(Status::Fail, found, why, Some(fix.into()))
    }

    /// Not read: the reason, no fix.
    pub fn skip(found: impl Into<String>, why: impl Into<String>) -> Finding {
        Finding::new(Status::Skip, found, why, None)
    }

    fn new(
        status: Status,
        found: impl Into<String>,
        why: impl Into<String>,
        fix: Option<String>,
    ) -> Finding {
        Finding {
            status,
            found: found.into(),
            why: why.into(),
            fix,
        }
    }
}

/// One check's row: its stable id, a title, its group and the one small
/// function that reads its fact and judges it. Each group's module declares
/// a check's row right above its function; the row adds the id and group
/// to what the function finds, so no function can report under another's
/// name.
#[derive(Clone, Copy, Debug)]
pub struct Spec {
    /// Stable name (`mount-noatime`), for scripts and the JSON.
    pub id: &'static str,
    /// What it checks, in a few words.
    pub title: &'static str,
    /// The group it is printed under.
    pub area: Area,
    /// Reads the fact and judges it.
    pub run: fn(&Facts) -> Finding,
}

impl Spec {
    /// The row of the check `id` of group `area`, judged by `run`.
    pub const fn new(
        area: Area,
        id: &'static str,
        title: &'static str,
        run: fn(&Facts) -> Finding,
    ) -> Spec {
        Spec {
            id,
            title,
            area,
            run,
        }
    }
}

/// One check's result, as printed and in `--json`.
#[derive(Clone, Debug, Serialize)]
pub struct Check {
    /// Stable name (`mount-noatime`), for scripts.
    pub id: &'static str,
    /// `filesystem`, `device`, `system` or `board`.
    pub area: &'static str,
    /// The verdict.
    pub status: Status,
    /// What was found, as the kernel says it.
    pub found: String,
    /// One line: why this verdict.
    pub why: String,
    /// The command that fixes it (warn and fail only).
    pub fix: Option<String>,
}

/// The facts gathered once, before the checks run: where, what is planned,
/// and what `--probe` measured. Each check reads what else it needs.
#[derive(Debug)]
pub struct Facts {
    /// The directory asked about (DIR as given).
    pub dir: PathBuf,
    /// The existing directory the checks run on (DIR or its nearest
    /// existing parent).
    pub checked: PathBuf,
    /// The mount holding it (`None`: in no mount of `/proc/self/mounts`).
    pub mount: Option<MountEntry>,
    /// The whole-disk block device under it (`vda`), if any.
    pub device: Option<String>,
    /// The planned recording's size, bytes (`--planned`).
    pub planned_bytes: u64,
    /// The ring a recording at the given rate allocates, bytes (what
    /// `--rt` locks and memory must hold).
    pub ring_bytes: u64,
    /// How the ring was sized, in words (`the default`, `16 KiB every
    /// 5 ms, …`).
    pub ring_basis: String,
    /// The short probe's result with `--probe`: the measured profile, or
    /// why there is none; `None` without `--probe`.
    pub probe: Option<Result<rtrec_emu::Profile, String>>,
}

impl Facts {
    /// Facts of `checked` alone, everything else unknown: for tests.
    #[cfg(test)]
    pub fn of(checked: &Path, mount: Option<MountEntry>) -> Facts {
        Facts {
            dir: checked.to_path_buf(),
            checked: checked.to_path_buf(),
            mount,
            device: None,
            planned_bytes: 1,
            ring_bytes: 16 << 20,
            ring_basis: "the default".into(),
            probe: None,
        }
    }
}

/// A file's contents, trimmed; `None` when it cannot be read.
pub fn read_trim(path: impl AsRef<Path>) -> Option<String> {
    fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}
