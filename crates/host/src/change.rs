//! What the journal stores: one [`Change`] to machine state, described by
//! how to put it back, and the [`EntryId`] of its entry. Plain data; how a
//! change is undone is the business of the private `undo` module.
//!
//! The serialized form (`{"kind":"sysctl","name":…,"old":…}`) is the journal
//! file format: variants and fields keep their names, so that a journal left
//! by an older rtrec still restores.

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// One change to machine state, described by how to put it back.
///
/// Its `Display` says what undoing it does ("vm.dirty_ratio = 20",
/// "unmount /tmp/x/mnt"); [`RestoreReport`](crate::restore::RestoreReport) lines are built from it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Change {
    /// A sysctl (`name` like `vm.dirty_ratio`, file `/proc/sys/vm/dirty_ratio`)
    /// to set back to `old`.
    Sysctl {
        /// Dotted name.
        name: String,
        /// Value to write back.
        old: String,
    },
    /// The I/O scheduler of a block device (`device` like `vda`) to set back
    /// to `old` (the bracketed name in `/sys/block/DEV/queue/scheduler`).
    Scheduler {
        /// Block device name, without `/dev/`.
        device: String,
        /// Scheduler to write back.
        old: String,
    },
    /// A file system mounted on `target`, to unmount.
    Mount {
        /// The mount point.
        target: PathBuf,
    },
    /// A loop device to detach, if it is still backed by `image` (a loop
    /// device freed by its owner may since serve someone else's image).
    LoopDevice {
        /// `/dev/loopN`.
        device: PathBuf,
        /// Its backing file.
        image: PathBuf,
    },
    /// A file rtrec created, to delete.
    RemoveFile {
        /// The file.
        path: PathBuf,
    },
    /// An (empty) directory rtrec created, to delete. Never removed
    /// recursively: a failed unmount must not turn into deleting the
    /// contents of the mounted file system.
    RemoveDir {
        /// The directory.
        path: PathBuf,
    },
    /// A tracefs file (`tracing_on`, `events/*/enable`, `set_event`, …) whose
    /// `old` content is written back, as `echo OLD > FILE` would.
    TraceFile {
        /// The file.
        path: PathBuf,
        /// Content to write back.
        old: String,
    },
    /// A tunable of a block device's I/O scheduler
    /// (`/sys/block/DEV/queue/iosched/NAME`, e.g. BFQ's `slice_idle`) to set
    /// back to `old`. Gone with its scheduler: when the scheduler has since
    /// changed, there is nothing left to put back.
    IoschedTunable {
        /// Block device name, without `/dev/`.
        device: String,
        /// Tunable name (a file name under `queue/iosched/`).
        name: String,
        /// Value to write back.
        old: String,
    },
    /// A cgroup rtrec created (cgroup v1 `blkio` or v2), to remove: any
    /// process still in it is moved to its parent first, then the directory
    /// is removed. Covers the processes rtrec moved into it.
    Cgroup {
        /// The cgroup's directory.
        path: PathBuf,
    },
}

/// The JSON object of any [`Change`]: its `kind` and the union of the
/// variants' fields, each optional.
///
/// Design choice: `Change` is read through this one flat struct instead of
/// serde's derive for an internally tagged enum, which buffers each entry
/// and has one visitor per variant: the same file format (a field the
/// kind does not have is ignored, as the derive does; a missing one is
/// the same `missing field` error), 10 KB less of the board's record-only
/// binary, which reads journals (docs/embedded.md, "Under 1 MB,
/// position-independent").
#[derive(Deserialize)]
struct Stored {
    kind: String,
    name: Option<String>,
    old: Option<String>,
    device: Option<String>,
    target: Option<PathBuf>,
    image: Option<PathBuf>,
    path: Option<PathBuf>,
}

/// The `kind` of each variant, as stored.
const KINDS: &[&str] = &[
    "sysctl",
    "scheduler",
    "mount",
    "loop_device",
    "remove_file",
    "remove_dir",
    "trace_file",
    "iosched_tunable",
    "cgroup",
];

impl<'de> Deserialize<'de> for Change {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Change, D::Error> {
        use serde::de::Error;
        let s = Stored::deserialize(d)?;
        fn need<T, E: Error>(v: Option<T>, field: &'static str) -> Result<T, E> {
            v.ok_or_else(|| E::missing_field(field))
        }
        Ok(match s.kind.as_str() {
            "sysctl" => Change::Sysctl {
                name: need(s.name, "name")?,
                old: need(s.old, "old")?,
            },
            "scheduler" => Change::Scheduler {
                device: need(s.device, "device")?,
                old: need(s.old, "old")?,
            },
            "mount" => Change::Mount {
                target: need(s.target, "target")?,
            },
            "loop_device" => Change::LoopDevice {
                device: need(s.device, "device")?.into(),
                image: need(s.image, "image")?,
            },
            "remove_file" => Change::RemoveFile {
                path: need(s.path, "path")?,
            },
            "remove_dir" => Change::RemoveDir {
                path: need(s.path, "path")?,
            },
            "trace_file" => Change::TraceFile {
                path: need(s.path, "path")?,
                old: need(s.old, "old")?,
            },
            "iosched_tunable" => Change::IoschedTunable {
                device: need(s.device, "device")?,
                name: need(s.name, "name")?,
                old: need(s.old, "old")?,
            },
            "cgroup" => Change::Cgroup {
                path: need(s.path, "path")?,
            },
            other => return Err(D::Error::unknown_variant(other, KINDS)),
        })
    }
}

impl Change {
    /// Whether this change is to state shared by the whole machine (sysctl,
    /// scheduler, tracefs), which is changed and restored only under the
    /// [`GlobalLock`](crate::lock::GlobalLock).
    pub fn is_global(&self) -> bool {
        matches!(
            self,
            Change::Sysctl { .. }
                | Change::Scheduler { .. }
                | Change::TraceFile { .. }
                | Change::IoschedTunable { .. }
        )
    }
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Change::Sysctl { name, old } => write!(f, "{name} = {old}"),
            Change::Scheduler { device, old } => write!(f, "I/O scheduler of {device} = {old}"),
            Change::TraceFile { path, old } => write!(f, "{} = {old:?}", path.display()),
            Change::Mount { target } => write!(f, "unmount {}", target.display()),
            Change::LoopDevice { device, image } => {
                write!(f, "detach {} ({})", device.display(), image.display())
            }
            Change::RemoveFile { path } => write!(f, "remove file {}", path.display()),
            Change::RemoveDir { path } => write!(f, "remove directory {}", path.display()),
            Change::IoschedTunable { device, name, old } => {
                write!(f, "I/O scheduler tunable {name} of {device} = {old}")
            }
            Change::Cgroup { path } => write!(f, "remove cgroup {}", path.display()),
        }
    }
}

/// Identifies one entry of a process's journal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct EntryId(pub u64);

impl fmt::Display for EntryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_are_stored_tagged_by_kind() {
        let json = serde_json::to_string(&Change::Sysctl {
            name: "vm.dirty_ratio".into(),
            old: "20".into(),
        })
        .unwrap();
        assert_eq!(
            json,
            r#"{"kind":"sysctl","name":"vm.dirty_ratio","old":"20"}"#
        );
    }

    /// One change of each kind, with distinct values in every field.
    fn every_kind() -> Vec<Change> {
        let p = |s: &str| PathBuf::from(s);
        vec![
            Change::Sysctl {
                name: "vm.dirty_ratio".into(),
                old: "20".into(),
            },
            Change::Scheduler {
                device: "vda".into(),
                old: "mq-deadline".into(),
            },
            Change::Mount { target: p("/m") },
            Change::LoopDevice {
                device: p("/dev/loop3"),
                image: p("/tmp/i.ext4"),
            },
            Change::RemoveFile { path: p("/tmp/f") },
            Change::RemoveDir { path: p("/tmp/d") },
            Change::TraceFile {
                path: p("/sys/kernel/tracing/tracing_on"),
                old: "1".into(),
            },
            Change::IoschedTunable {
                device: "vdb".into(),
                name: "slice_idle".into(),
                old: "8".into(),
            },
            Change::Cgroup {
                path: p("/sys/fs/cgroup/rtrec-1"),
            },
        ]
    }

    #[test]
    fn every_kind_reads_back_as_written() {
        let all = every_kind();
        assert_eq!(all.len(), KINDS.len());
        for (c, kind) in all.iter().zip(KINDS) {
            let json = serde_json::to_string(c).unwrap();
            assert!(json.contains(&format!(r#""kind":"{kind}""#)), "{json}");
            let back: Change = serde_json::from_str(&json).unwrap();
            assert_eq!(&back, c);
        }
    }

    #[test]
    fn a_missing_field_or_an_unknown_kind_is_named() {
        let e = serde_json::from_str::<Change>(r#"{"kind":"sysctl","name":"vm.x"}"#).unwrap_err();
        assert!(e.to_string().contains("missing field `old`"), "{e}");
        let e = serde_json::from_str::<Change>(r#"{"kind":"reboot"}"#).unwrap_err();
        assert!(e.to_string().contains("unknown variant `reboot`"), "{e}");
        let e = serde_json::from_str::<Change>(r#"{"name":"vm.x","old":"1"}"#).unwrap_err();
        assert!(e.to_string().contains("missing field `kind`"), "{e}");
    }

    #[test]
    fn a_field_of_another_kind_is_ignored() {
        let c: Change =
            serde_json::from_str(r#"{"kind":"mount","target":"/m","old":"x"}"#).unwrap();
        assert_eq!(
            c,
            Change::Mount {
                target: "/m".into()
            }
        );
    }
}
