//! What a restore obeys in a journal it did not write itself: only the
//! changes rtrec could have made. A journal is a file; whoever could write
//! it (a wrong `RTREC_STATE_DIR`, a bug, a tampered file) must not turn
//! `rtrec tune --restore`, run as root, into "write this file, delete that
//! one, unmount this, set that sysctl".
//!
//! [`Allowlist::rtrec`] accepts, per kind of [`Change`]:
//!
//! | kind | accepted |
//! |---|---|
//! | `sysctl` | `vm.dirty_*` only (the flusher settings) |
//! | `scheduler` | a block device name (the file is always `/sys/block/DEV/queue/scheduler`) |
//! | `trace_file` | a file under a mount of type `tracefs` |
//! | `mount` | a loop mount on `…/rtrec-loopfs-*/mnt`, a tmpfs on `…/rtrec-tmpfs-*`, tracefs on `/sys/kernel/tracing`, or nothing mounted there |
//! | `loop_device` | `/dev/loopN` backed by `…/rtrec-loopfs-*/image.ext4` |
//! | `remove_file` | `…/rtrec-loopfs-*/image.ext4` |
//! | `remove_dir` | `…/rtrec-loopfs-*` and its `mnt`, `…/rtrec-tmpfs-*`, the tracefs instance `/sys/kernel/tracing/instances/rtrec-*` |
//! | `iosched_tunable` | a block device name and a plain tunable name (the file is always `/sys/block/DEV/queue/iosched/NAME`) |
//! | `cgroup` | a directory named `rtrec-*` directly below the root of a cgroup v1 `blkio` or cgroup v2 mount |
//!
//! Every path must be absolute, with no `.` or `..` component, so that the
//! names checked are the names acted on.
//!
//! Design choices: the journal of this very process is not checked (its
//! entries come from its own memory, never from the file); the only
//! cgroups rtrec makes are its own `rtrec-*` groups right below an I/O
//! hierarchy's root ([`crate::cgroup`]), so no other is accepted. A refused entry is reported and dropped
//! from its journal: it can never be undone, and keeping it would repeat
//! the refusal forever. Tests that journal files of their own under a
//! private directory widen the list with [`Allowlist::with_root`]; the
//! binary never does.

use std::path::{Component, Path, PathBuf};

use crate::change::Change;
use crate::kernfs::{device_name, iosched_tunable_path, sysctl_path};
use crate::mounts::{mount_at, mount_of, read_mounts};

/// The prefix of the private directories of loop filesystems
/// ([`crate::loopfs`]).
pub(crate) const LOOPFS_DIR_PREFIX: &str = "rtrec-loopfs-";
/// The prefix of the tmpfs mount points ([`crate::tmpfs`]).
pub(crate) const TMPFS_DIR_PREFIX: &str = "rtrec-tmpfs-";
/// The prefix of the cgroups rtrec makes ([`crate::cgroup`]).
pub(crate) const CGROUP_PREFIX: &str = "rtrec-";
/// The image file in such a directory.
pub(crate) const LOOPFS_IMAGE: &str = "image.ext4";
/// The mount point in such a directory.
pub(crate) const LOOPFS_MOUNT: &str = "mnt";
/// Where an emulated device (`crate::emufs`) mounts its FUSE filesystem,
/// inside a loopfs directory; the image it serves is
/// `LOOPFS_EMU_MOUNT/LOOPFS_IMAGE`.
pub(crate) const LOOPFS_EMU_MOUNT: &str = "dev";
/// The emulated device's statistics file, inside a loopfs directory.
pub(crate) const LOOPFS_EMU_STATS: &str = "emulator-stats.json";

/// What a restore accepts from another process's journal (see the module
/// doc).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Allowlist {
    roots: Vec<PathBuf>,
}

impl Allowlist {
    /// The changes rtrec makes, and nothing else.
    pub fn rtrec() -> Allowlist {
        Allowlist::default()
    }

    /// Also accepts trace files to write back and files and directories to
    /// remove under `root` (for tests that journal files of their own).
    #[must_use]
    pub fn with_root(mut self, root: impl Into<PathBuf>) -> Allowlist {
        self.roots.push(root.into());
        self
    }

    /// `Ok` when `change` is one rtrec could have made; otherwise why not,
    /// as the end of a sentence ("not a vm.dirty_* sysctl").
    ///
    /// # Errors
    /// The reason the change is refused.
    pub fn check(&self, change: &Change) -> Result<(), String> {
        match change {
            Change::Sysctl { name, .. } => {
                if name.starts_with("vm.dirty_") && sysctl_path(name).is_some() {
                    Ok(())
                } else {
                    Err("rtrec changes only the vm.dirty_* sysctls".into())
                }
            }
            Change::Scheduler { device, .. } => device_name(device)
                .map(|_| ())
                .map_err(|_| "not a block device name".into()),
            Change::TraceFile { path, .. } => self.check_trace_file(path),
            Change::RemoveFile { path } => self.check_remove_file(path),
            Change::RemoveDir { path } => self.check_remove_dir(path),
            Change::Mount { target } => check_mount(target),
            Change::IoschedTunable { device, name, .. } => iosched_tunable_path(device, name)
                .map(|_| ())
                .map_err(|e| e.to_string()),
            Change::Cgroup { path } => self.check_cgroup(path),
            Change::LoopDevice { device, image } => check_loop_device(device, image),
        }
    }

    /// `trace_file`: a file under a mount of type `tracefs`.
    fn check_trace_file(&self, path: &Path) -> Result<(), String> {
        plain(path)?;
        if self.under_root(path) {
            return Ok(());
        }
        let mounts = read_mounts().map_err(|e| format!("reading the mount table: {e}"))?;
        match mount_of(path, &mounts) {
            Some(m) if m.fstype == "tracefs" => Ok(()),
            _ => Err("not a file under the tracefs mount".into()),
        }
    }

    /// `remove_file`: the image (or the emulator's statistics) of a loopfs
    /// directory.
    fn check_remove_file(&self, path: &Path) -> Result<(), String> {
        plain(path)?;
        if self.under_root(path)
            || is_loopfs_child(path, LOOPFS_IMAGE)
            || is_loopfs_child(path, LOOPFS_EMU_STATS)
        {
            Ok(())
        } else {
            Err(format!(
                "rtrec removes only the {LOOPFS_IMAGE} and {LOOPFS_EMU_STATS} of its own {LOOPFS_DIR_PREFIX}* directories"
            ))
        }
    }

    /// `remove_dir`: a loopfs directory and its mount points, a tmpfs
    /// mount point, a tracefs instance of rtrec's.
    fn check_remove_dir(&self, path: &Path) -> Result<(), String> {
        plain(path)?;
        if self.under_root(path)
            || is_loopfs_dir(path)
            || is_loopfs_child(path, LOOPFS_MOUNT)
            || is_loopfs_child(path, LOOPFS_EMU_MOUNT)
            || has_prefix(path, TMPFS_DIR_PREFIX)
            || is_trace_instance(path)
        {
            Ok(())
        } else {
            Err(format!(
                "rtrec removes only its own {LOOPFS_DIR_PREFIX}* directories"
            ))
        }
    }

    /// `cgroup`: an `rtrec-*` group right below the root of an I/O
    /// hierarchy.
    fn check_cgroup(&self, path: &Path) -> Result<(), String> {
        plain(path)?;
        let named = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with(CGROUP_PREFIX));
        let root = path.parent().ok_or("not below a cgroup mount")?;
        let mounted = mount_at(root).map_err(|e| format!("reading the mount table: {e}"))?;
        let io_root = mounted.is_some_and(|m| {
            m.fstype == "cgroup2"
                || (m.fstype == "cgroup" && m.options.split(',').any(|o| o == "blkio"))
        });
        if named && (io_root || self.under_root(path)) {
            Ok(())
        } else {
            Err(format!(
                "rtrec removes only its own {}* cgroups right below a blkio or cgroup2 mount",
                CGROUP_PREFIX
            ))
        }
    }

    fn under_root(&self, path: &Path) -> bool {
        self.roots.iter().any(|r| path.starts_with(r) && path != r)
    }
}

/// `mount`: what is mounted at `target` now is one of rtrec's mounts, or
/// nothing is.
fn check_mount(target: &Path) -> Result<(), String> {
    plain(target)?;
    let mounted = mount_at(target).map_err(|e| format!("reading the mount table: {e}"))?;
    match mounted {
        // Nothing mounted there: the undo has nothing to do.
        None => Ok(()),
        Some(m) if m.source.starts_with("/dev/loop") && is_loopfs_child(target, LOOPFS_MOUNT) => {
            Ok(())
        }
        // The emulated device's FUSE mount (`rtrec __emulate`).
        Some(m)
            if m.fstype.starts_with("fuse")
                && m.source.starts_with("rtrec-emu-")
                && is_loopfs_child(target, LOOPFS_EMU_MOUNT) =>
        {
            Ok(())
        }
        Some(m) if m.fstype == "tmpfs" && has_prefix(target, TMPFS_DIR_PREFIX) => Ok(()),
        Some(m) if m.fstype == "tracefs" && target == Path::new(crate::tracefs::TRACEFS) => Ok(()),
        Some(m) => Err(format!(
            "'{}' ({}) is not a loop mount rtrec made",
            m.source, m.fstype
        )),
    }
}

/// `loop_device`: a `/dev/loopN` backed by a loopfs image (or the image an
/// emulated device serves).
fn check_loop_device(device: &Path, image: &Path) -> Result<(), String> {
    plain(image)?;
    let loop_name = device
        .to_str()
        .and_then(|d| d.strip_prefix("/dev/loop"))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    if !loop_name {
        Err("not a /dev/loopN device".into())
    } else if is_loopfs_child(image, LOOPFS_IMAGE) || is_emulated_image(image) {
        Ok(())
    } else {
        Err(format!(
            "its image is not the {LOOPFS_IMAGE} of an {LOOPFS_DIR_PREFIX}* directory"
        ))
    }
}

/// An absolute path with only normal components.
fn plain(path: &Path) -> Result<(), String> {
    let normal = path
        .components()
        .skip(1)
        .all(|c| matches!(c, Component::Normal(_)));
    if path.is_absolute() && normal {
        Ok(())
    } else {
        Err(format!(
            "'{}' is not an absolute path without . or ..",
            path.display()
        ))
    }
}

fn is_loopfs_dir(path: &Path) -> bool {
    has_prefix(path, LOOPFS_DIR_PREFIX)
}

fn has_prefix(path: &Path, prefix: &str) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with(prefix))
}

/// `/sys/kernel/tracing/instances/rtrec-*` ([`crate::tracefs::Instance`]).
fn is_trace_instance(path: &Path) -> bool {
    has_prefix(path, "rtrec-")
        && path.parent() == Some(&Path::new(crate::tracefs::TRACEFS).join("instances"))
}

fn is_loopfs_child(path: &Path, name: &str) -> bool {
    path.file_name().is_some_and(|n| n == name) && path.parent().is_some_and(is_loopfs_dir)
}

/// The image as an emulated device serves it: `rtrec-loopfs-*/dev/image.ext4`.
fn is_emulated_image(path: &Path) -> bool {
    path.file_name().is_some_and(|n| n == LOOPFS_IMAGE)
        && path
            .parent()
            .is_some_and(|d| is_loopfs_child(d, LOOPFS_EMU_MOUNT))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(c: Change) -> String {
        Allowlist::rtrec().check(&c).unwrap_err()
    }

    #[test]
    fn only_what_rtrec_changes_is_accepted() {
        let ok = |c: Change| Allowlist::rtrec().check(&c).unwrap();
        ok(Change::Sysctl {
            name: "vm.dirty_ratio".into(),
            old: "20".into(),
        });
        ok(Change::Scheduler {
            device: "vda".into(),
            old: "none".into(),
        });
        ok(Change::RemoveFile {
            path: "/tmp/rtrec-loopfs-1-0/image.ext4".into(),
        });
        ok(Change::RemoveDir {
            path: "/tmp/rtrec-loopfs-1-0/mnt".into(),
        });
        ok(Change::RemoveDir {
            path: "/tmp/rtrec-tmpfs-1-0".into(),
        });
        ok(Change::RemoveDir {
            path: "/sys/kernel/tracing/instances/rtrec-1".into(),
        });
        ok(Change::IoschedTunable {
            device: "loop0".into(),
            name: "slice_idle".into(),
            old: "8".into(),
        });
        ok(Change::LoopDevice {
            device: "/dev/loop7".into(),
            image: "/tmp/rtrec-loopfs-1-0/image.ext4".into(),
        });
        // An emulated device's own entries (crate::emufs).
        ok(Change::RemoveDir {
            path: "/tmp/rtrec-loopfs-1-0/dev".into(),
        });
        ok(Change::RemoveFile {
            path: "/tmp/rtrec-loopfs-1-0/emulator-stats.json".into(),
        });
        ok(Change::LoopDevice {
            device: "/dev/loop7".into(),
            image: "/tmp/rtrec-loopfs-1-0/dev/image.ext4".into(),
        });
    }

    #[test]
    fn anything_else_is_refused_with_a_reason() {
        assert!(refused(Change::Sysctl {
            name: "kernel.core_pattern".into(),
            old: "|/bin/sh".into()
        })
        .contains("vm.dirty_*"));
        assert!(refused(Change::RemoveFile {
            path: "/etc/shadow".into()
        })
        .contains("image.ext4"));
        refused(Change::RemoveFile {
            path: "/tmp/rtrec-loopfs-1/../../etc/image.ext4".into(),
        });
        refused(Change::RemoveDir {
            path: "/home".into(),
        });
        refused(Change::TraceFile {
            path: "/etc/passwd".into(),
            old: String::new(),
        });
        refused(Change::LoopDevice {
            device: "/dev/sda".into(),
            image: "/tmp/rtrec-loopfs-1/image.ext4".into(),
        });
        refused(Change::Cgroup {
            path: "/sys/fs/cgroup/blkio/system.slice".into(),
        });
        refused(Change::Cgroup {
            path: "/etc/rtrec-x".into(),
        });
        refused(Change::IoschedTunable {
            device: "vda".into(),
            name: "../../../etc".into(),
            old: String::new(),
        });
        // The root file system is mounted, and is no loop mount of ours.
        refused(Change::Mount { target: "/".into() });
    }

    #[test]
    fn a_root_widens_the_list_for_files_below_it_only() {
        let list = Allowlist::rtrec().with_root("/tmp/t");
        list.check(&Change::RemoveFile {
            path: "/tmp/t/a".into(),
        })
        .unwrap();
        assert!(list
            .check(&Change::RemoveDir {
                path: "/tmp/t".into()
            })
            .is_err());
    }
}
