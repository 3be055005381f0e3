//! How each kind of [`Change`] is put back, and which changes concern the
//! same thing: the dispatch from a journal entry to the module that owns its
//! kind. The journal calls [`undo`] and [`key`]; this module imports only the
//! kernel-facing modules below it, never the journal.

use std::fs;
use std::io;
use std::path::Path;

use crate::change::Change;
use crate::error::{io_err, Result};
use crate::{kernfs, loopdev, mounts};

/// What a change is to: two entries with the same key must be undone newest
/// first, and an older one must wait while a newer one cannot be undone.
/// `vm.dirty_ratio` and `vm.dirty_bytes` are one thing (writing one zeroes
/// the other), and so are the two background knobs.
pub(crate) fn key(change: &Change) -> String {
    match change {
        Change::Sysctl { name, .. } => format!("sysctl {}", kernfs::pair_key(name)),
        Change::Scheduler { device, .. } => format!("scheduler {device}"),
        Change::LoopDevice { device, .. } => format!("loop {}", device.display()),
        Change::IoschedTunable { device, name, .. } => format!("iosched {device} {name}"),
        Change::Mount { target: p }
        | Change::RemoveFile { path: p }
        | Change::RemoveDir { path: p }
        | Change::Cgroup { path: p }
        | Change::TraceFile { path: p, .. } => format!("path {}", p.display()),
    }
}

/// Puts the state back. Idempotent, and tolerant of state that is already
/// back (nothing mounted, device detached, file gone).
pub(crate) fn undo(change: &Change) -> Result<()> {
    match change {
        Change::Sysctl { name, old } => kernfs::restore_sysctl(name, old),
        Change::Scheduler { device, old } => kernfs::restore_scheduler(device, old),
        Change::TraceFile { path, old } => kernfs::restore_file(path, old),
        Change::IoschedTunable { device, name, old } => {
            kernfs::restore_iosched_tunable(device, name, old)
        }
        Change::Cgroup { path } => kernfs::remove_cgroup(path),
        // tracefs may be shared by several rtrec processes tracing at once
        // (see `crate::tracefs`): it stays while another one's instance is
        // in it; the last to end unmounts it.
        Change::Mount { target } if target == Path::new(TRACEFS) && rtrec_instances_left() => {
            Ok(())
        }
        Change::Mount { target } => mounts::unmount(target),
        Change::LoopDevice { device, image } => loopdev::detach(device, image),
        Change::RemoveFile { path } => match fs::remove_file(path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => {
                Err(io_err(format_args!("removing {}", path.display()))(e))
            }
            _ => Ok(()),
        },
        Change::RemoveDir { path } => match fs::remove_dir(path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(io_err(format_args!(
                "removing directory {}",
                path.display()
            ))(e)),
            _ => Ok(()),
        },
    }
}

/// Where rtrec mounts tracefs when nothing has (`crate::tracefs::TRACEFS`).
pub(crate) const TRACEFS: &str = "/sys/kernel/tracing";

/// Whether an rtrec instance (`instances/rtrec-*`) is still in tracefs.
fn rtrec_instances_left() -> bool {
    fs::read_dir(Path::new(TRACEFS).join("instances")).is_ok_and(|d| {
        d.flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with("rtrec-"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dirty_ratio_and_dirty_bytes_are_one_thing_to_undo() {
        let change = |name: &str| Change::Sysctl {
            name: name.into(),
            old: "0".into(),
        };
        assert_eq!(
            key(&change("vm.dirty_ratio")),
            key(&change("vm.dirty_bytes"))
        );
        assert_ne!(
            key(&change("vm.dirty_ratio")),
            key(&change("vm.dirty_background_bytes"))
        );
    }
}
