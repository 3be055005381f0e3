//! I/O cgroups: which hierarchy controls block I/O on this machine (cgroup
//! v1 `blkio` or cgroup v2 with the `io` controller), and rtrec's own
//! groups in it — created, given a BFQ weight, joined by processes and
//! removed, all through a [`Journal`] ([`Change::Cgroup`]), whose undo moves
//! any process still inside back to the parent before removing the group.
//!
//! The weight file is BFQ's: `blkio.bfq.weight` on v1, `io.bfq.weight` on
//! v2. Design choice: never `io.weight` — on v2 that is iocost's weight, a
//! different controller with different semantics; what the studies measure
//! is BFQ's proportional share. A weight only acts on a device whose
//! scheduler is `bfq`.
//!
//! Design choice: groups are made right below the hierarchy's root and
//! named `rtrec-<pid>-<label>`, so that the restore allowlist can accept
//! exactly these and nothing else. On v2, a child only has `io.bfq.weight`
//! when the root's `cgroup.subtree_control` enables `io`; rtrec does not
//! enable it (that would change every group on the machine) and says so.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::allowlist::CGROUP_PREFIX;
use crate::change::{Change, EntryId};
use crate::error::{io_err, Error, Result};
use crate::journal::Journal;
use crate::kernfs::write_file;
use crate::mounts::{read_mounts, MountEntry};

/// Which cgroup interface controls block I/O.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    /// cgroup v1, the `blkio` controller.
    V1Blkio,
    /// cgroup v2 with the `io` controller.
    V2,
}

impl Version {
    /// The BFQ weight file of a child group.
    pub fn weight_file(self) -> &'static str {
        match self {
            Version::V1Blkio => "blkio.bfq.weight",
            Version::V2 => "io.bfq.weight",
        }
    }

    /// How reports name it (`cgroup v1 blkio.bfq.weight`).
    pub fn describe(self) -> &'static str {
        match self {
            Version::V1Blkio => "cgroup v1 blkio (blkio.bfq.weight)",
            Version::V2 => "cgroup v2 io (io.bfq.weight)",
        }
    }
}

/// The I/O hierarchy found on the machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hierarchy {
    /// v1 `blkio` or v2.
    pub version: Version,
    /// Its mount point (the root group).
    pub root: PathBuf,
}

/// Picks the I/O hierarchy from mount entries and, for v2, the root's
/// `cgroup.controllers` text. v1 `blkio` wins when mounted: on a hybrid
/// system the `io` controller cannot be on both, and a v1 mount means v1
/// has it.
pub fn pick(
    mounts: &[MountEntry],
    v2_controllers: impl Fn(&Path) -> Option<String>,
) -> Option<Hierarchy> {
    if let Some(m) = mounts
        .iter()
        .find(|m| m.fstype == "cgroup" && m.options.split(',').any(|o| o == "blkio"))
    {
        return Some(Hierarchy {
            version: Version::V1Blkio,
            root: m.target.clone(),
        });
    }
    mounts
        .iter()
        .filter(|m| m.fstype == "cgroup2")
        .find(|m| {
            v2_controllers(&m.target).is_some_and(|c| c.split_whitespace().any(|w| w == "io"))
        })
        .map(|m| Hierarchy {
            version: Version::V2,
            root: m.target.clone(),
        })
}

/// The I/O hierarchy of this machine, or why there is none (one sentence).
///
/// # Errors
/// No `blkio` v1 mount and no v2 mount with the `io` controller.
pub fn detect() -> std::result::Result<Hierarchy, String> {
    let mounts = read_mounts().map_err(|e| format!("reading the mount table: {e}"))?;
    pick(&mounts, |root| {
        fs::read_to_string(root.join("cgroup.controllers")).ok()
    })
    .ok_or_else(|| {
        "no cgroup v1 blkio mount and no cgroup v2 mount with the io controller".to_string()
    })
}

/// One of rtrec's own groups, removed by [`Group::remove`] (or, if this
/// process dies first, by the next rtrec from the journal).
#[derive(Debug)]
pub struct Group {
    path: PathBuf,
    version: Version,
    id: EntryId,
}

impl Group {
    /// Creates `ROOT/rtrec-<pid>-<label>`, recording it in `journal` first.
    ///
    /// # Errors
    /// `InvalidName` for a label that is not plain (letters, digits, `-`);
    /// the error of `mkdir`.
    pub fn create(journal: &Journal, h: &Hierarchy, label: &str) -> Result<Group> {
        if label.is_empty()
            || !label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        {
            return Err(Error::InvalidName {
                kind: "cgroup label",
                name: label.to_string(),
            });
        }
        let path = h
            .root
            .join(format!("{CGROUP_PREFIX}{}-{label}", std::process::id()));
        let id = journal.record(Change::Cgroup { path: path.clone() })?;
        if let Err(e) = fs::create_dir(&path) {
            let _ = journal.forget(id);
            return Err(io_err(format_args!("creating cgroup {}", path.display()))(
                e,
            ));
        }
        Ok(Group {
            path,
            version: h.version,
            id,
        })
    }

    /// Its directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Sets its BFQ weight (1..=1000; BFQ's default is 100).
    ///
    /// # Errors
    /// The weight file is missing (BFQ's cgroup support not built, or on
    /// v2 the `io` controller not enabled for children) or refused the value.
    pub fn set_weight(&self, weight: u32) -> Result<()> {
        let file = self.path.join(self.version.weight_file());
        write_file(&file, &weight.to_string()).map_err(|e| {
            if e.kind() == io::ErrorKind::NotFound {
                Error::Io {
                    what: format!(
                        "{} is missing (BFQ cgroup support off, or the io controller not enabled for child groups)",
                        file.display()
                    ),
                    source: e,
                }
            } else {
                io_err(format_args!("setting {} to {weight}", file.display()))(e)
            }
        })
    }

    /// Moves process `pid` (all its threads) into the group.
    ///
    /// # Errors
    /// The kernel refused (no such process, not permitted).
    pub fn add_process(&self, pid: u32) -> Result<()> {
        write_file(&self.path.join("cgroup.procs"), &pid.to_string()).map_err(io_err(format_args!(
            "moving process {pid} into {}",
            self.path.display()
        )))
    }

    /// Moves every process out (to the parent) and removes the group.
    ///
    /// # Errors
    /// As the undo of [`Change::Cgroup`]; the entry then stays in the
    /// journal for the next rtrec run or `rtrec tune --restore`.
    pub fn remove(self, journal: &Journal) -> Result<()> {
        journal.undo(self.id)
    }
}

/// The group of `pid` in hierarchy `h`, as a path (from
/// `/proc/PID/cgroup`), so a process moved into a group can be moved back.
///
/// # Errors
/// `/proc/PID/cgroup` unreadable or without a line for the hierarchy.
pub fn group_of(h: &Hierarchy, pid: u32) -> io::Result<PathBuf> {
    let text = fs::read_to_string(format!("/proc/{pid}/cgroup"))?;
    let rel = text
        .lines()
        .filter_map(|l| {
            let mut f = l.splitn(3, ':');
            Some((f.next()?, f.next()?, f.next()?))
        })
        .find(|(_, ctl, _)| match h.version {
            Version::V1Blkio => ctl.split(',').any(|c| c == "blkio"),
            Version::V2 => ctl.is_empty(),
        })
        .map(|(_, _, p)| p.trim_start_matches('/').to_string())
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no line for the I/O cgroup"))?;
    Ok(h.root.join(rel))
}

/// Moves `pid` into the group at `path` (e.g. back where [`group_of`] found it).
///
/// # Errors
/// The kernel refused.
pub fn move_to(path: &Path, pid: u32) -> Result<()> {
    write_file(&path.join("cgroup.procs"), &pid.to_string()).map_err(io_err(format_args!(
        "moving process {pid} into {}",
        path.display()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(fstype: &str, target: &str, options: &str) -> MountEntry {
        MountEntry {
            source: "cgroup".into(),
            target: target.into(),
            fstype: fstype.into(),
            options: options.into(),
        }
    }

    #[test]
    fn v1_blkio_is_picked_when_mounted_and_v2_needs_the_io_controller() {
        let hybrid = [
            m("cgroup", "/sys/fs/cgroup/cpu", "rw,cpu"),
            m("cgroup", "/sys/fs/cgroup/blkio", "rw,relatime,blkio"),
            m("cgroup2", "/sys/fs/cgroup/unified", "rw"),
        ];
        let h = pick(&hybrid, |_| Some(String::new())).unwrap();
        assert_eq!(h.version, Version::V1Blkio);
        assert_eq!(h.root, Path::new("/sys/fs/cgroup/blkio"));
        assert_eq!(h.version.weight_file(), "blkio.bfq.weight");
        let v2 = [m("cgroup2", "/sys/fs/cgroup", "rw")];
        assert_eq!(pick(&v2, |_| Some("cpu memory".into())), None);
        let h = pick(&v2, |_| Some("cpuset cpu io memory pids".into())).unwrap();
        assert_eq!(h.version, Version::V2);
        assert_eq!(h.version.weight_file(), "io.bfq.weight");
    }
}
