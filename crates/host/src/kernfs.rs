//! The kernel's files for its knobs — `/proc/sys` for sysctls,
//! `/sys/block/DEV/queue/scheduler`, tracefs — as paths checked not to leave
//! their interface, written as `echo VALUE > FILE` does, and written back to
//! undo a change. Knows nothing of the journal: [`crate::undo`] calls the
//! `restore_*` functions, and [`crate::sysctl`], [`crate::iosched`] and
//! [`crate::tracefs`] build their journaled changes on the rest.

use std::fs::OpenOptions;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::error::{io_err, Error, Result};

/// Sysctls of which the kernel keeps one in force: (ratio, bytes).
pub(crate) const PAIRS: [(&str, &str); 2] = [
    ("vm.dirty_ratio", "vm.dirty_bytes"),
    ("vm.dirty_background_ratio", "vm.dirty_background_bytes"),
];

/// The file of sysctl `name` (`vm.dirty_ratio` → `/proc/sys/vm/dirty_ratio`);
/// `None` for a name that would leave `/proc/sys`.
pub(crate) fn sysctl_path(name: &str) -> Option<PathBuf> {
    let valid = name.split('.').all(|part| {
        !part.is_empty()
            && part
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    });
    valid.then(|| Path::new("/proc/sys").join(name.replace('.', "/")))
}

/// The error for a sysctl name that [`sysctl_path`] refuses.
pub(crate) fn invalid_sysctl(name: &str) -> Error {
    Error::InvalidName {
        kind: "sysctl",
        name: name.to_string(),
    }
}

/// The name that stands for both sysctls of a ratio/bytes pair (the ratio),
/// or `name` itself.
pub(crate) fn pair_key(name: &str) -> &str {
    PAIRS
        .iter()
        .find(|(r, b)| name == *r || name == *b)
        .map_or(name, |(ratio, _)| ratio)
}

/// `vda` from `vda` or `/dev/vda`; an error for names that would leave
/// `/sys/block`.
pub(crate) fn device_name(device: &str) -> Result<&str> {
    let name = device.strip_prefix("/dev/").unwrap_or(device);
    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
        return Err(Error::InvalidName {
            kind: "block device",
            name: device.to_string(),
        });
    }
    Ok(name)
}

/// `/sys/block/NAME/queue/scheduler`.
pub(crate) fn scheduler_path(name: &str) -> PathBuf {
    Path::new("/sys/block").join(name).join("queue/scheduler")
}

/// `/sys/block/NAME/queue/iosched/TUNABLE`; an error for a tunable name
/// that would leave that directory.
pub(crate) fn iosched_tunable_path(name: &str, tunable: &str) -> Result<PathBuf> {
    let valid = !tunable.is_empty()
        && tunable
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if !valid {
        return Err(Error::InvalidName {
            kind: "I/O scheduler tunable",
            name: tunable.to_string(),
        });
    }
    Ok(Path::new("/sys/block")
        .join(device_name(name)?)
        .join("queue/iosched")
        .join(tunable))
}

/// Writes `value` to a kernel file as `echo VALUE > FILE` does (truncating;
/// never creating it).
pub(crate) fn write_file(path: &Path, value: &str) -> io::Result<()> {
    OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(path)?
        .write_all(value.as_bytes())
}

/// Writes `value` back to `path` to undo a change. A file that is gone
/// (sysctl of an unloaded module, removed device, unmounted tracefs) has
/// nothing left to put back.
fn write_back(path: &Path, value: &str) -> Result<()> {
    match write_file(path, value) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(io_err(format_args!(
            "writing {value:?} to {}",
            path.display()
        ))(e)),
        _ => Ok(()),
    }
}

/// Undoes [`Change::Sysctl`](crate::change::Change::Sysctl).
pub(crate) fn restore_sysctl(name: &str, old: &str) -> Result<()> {
    write_back(&sysctl_path(name).ok_or_else(|| invalid_sysctl(name))?, old)
}

/// Undoes [`Change::Scheduler`](crate::change::Change::Scheduler).
pub(crate) fn restore_scheduler(device: &str, old: &str) -> Result<()> {
    write_back(&scheduler_path(device_name(device)?), old)
}

/// Undoes [`Change::IoschedTunable`](crate::change::Change::IoschedTunable).
pub(crate) fn restore_iosched_tunable(device: &str, name: &str, old: &str) -> Result<()> {
    write_back(&iosched_tunable_path(device, name)?, old)
}

/// Undoes [`Change::Cgroup`](crate::change::Change::Cgroup): moves every
/// process still in the cgroup to its parent (a cgroup with members cannot
/// be removed), then removes the directory. A cgroup already gone is fine.
pub(crate) fn remove_cgroup(path: &Path) -> Result<()> {
    let procs = match std::fs::read_to_string(path.join("cgroup.procs")) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => {
            return Err(io_err(format_args!(
                "reading {}/cgroup.procs",
                path.display()
            ))(e))
        }
    };
    if let Some(parent) = path.parent() {
        for pid in procs.split_whitespace() {
            // A process that ended meanwhile (ESRCH) has left by itself.
            match write_file(&parent.join("cgroup.procs"), pid) {
                Err(e) if e.raw_os_error() != Some(3) => {
                    return Err(io_err(format_args!(
                        "moving process {pid} out of {}",
                        path.display()
                    ))(e))
                }
                _ => {}
            }
        }
    }
    match std::fs::remove_dir(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(io_err(format_args!(
            "removing cgroup {}",
            path.display()
        ))(e)),
        _ => Ok(()),
    }
}

/// Undoes [`Change::TraceFile`](crate::change::Change::TraceFile).
pub(crate) fn restore_file(path: &Path, old: &str) -> Result<()> {
    write_back(path, old)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sysctl_names_map_to_proc_sys_and_cannot_escape_it() {
        assert_eq!(
            sysctl_path("vm.dirty_ratio").unwrap(),
            Path::new("/proc/sys/vm/dirty_ratio")
        );
        for bad in [
            "",
            "vm..x",
            "../etc/passwd",
            "vm/dirty_ratio",
            ".vm",
            "vm. x",
        ] {
            assert_eq!(sysctl_path(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn device_names_accept_dev_prefix_and_reject_paths() {
        assert_eq!(device_name("/dev/vda").unwrap(), "vda");
        assert_eq!(device_name("loop3").unwrap(), "loop3");
        for bad in ["", "..", "/dev/../x", "a/b"] {
            assert!(device_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_ratio_stands_for_both_sysctls_of_a_pair() {
        assert_eq!(pair_key("vm.dirty_bytes"), "vm.dirty_ratio");
        assert_eq!(
            pair_key("vm.dirty_background_bytes"),
            "vm.dirty_background_ratio"
        );
        assert_eq!(pair_key("vm.swappiness"), "vm.swappiness");
    }
}
