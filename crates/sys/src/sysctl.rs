//! The kernel knobs rtrec turns — sysctls under `/proc/sys`, the I/O
//! scheduler of a block device, tracefs files — read, and changed only
//! through a [`Journal`], which records the old value before the new one is
//! written.
//!
//! All of them are machine-wide, so changing them needs the
//! [`GlobalLock`](crate::state::GlobalLock); its journal puts them back
//! when it is dropped:
//!
//! ```no_run
//! # fn main() -> rtrec_sys::state::Result<()> {
//! use rtrec_sys::{state::GlobalLock, sysctl};
//! let lock = GlobalLock::acquire()?;
//! sysctl::apply_flusher_off(lock.journal())?;
//! assert_eq!(sysctl::read("vm.dirty_ratio").unwrap(), "100");
//! drop(lock); // vm.dirty_* as they were, then the lock released
//! # Ok(()) }
//! ```
//!
//! `vm.dirty_ratio` and `vm.dirty_bytes` are two views of one limit: the
//! kernel zeroes one when the other is written (likewise
//! `vm.dirty_background_ratio` and `vm.dirty_background_bytes`). A change to
//! either therefore records whichever of the two was in force — the `*_bytes`
//! value when it was not 0, else the `*_ratio` value — so that putting it
//! back restores exactly the mode and value found.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::state::{io_err, Change, EntryId, Error, Journal, Result};

/// The "kernel flusher off" settings of the study (S1, design 3): write-back
/// starts only at 100 % dirty memory or after 3,000 s, so that only rtrec's
/// own `sync_file_range()` flushes the recording.
pub const FLUSHER_OFF: [(&str, &str); 3] = [
    ("vm.dirty_ratio", "100"),
    ("vm.dirty_background_ratio", "100"),
    ("vm.dirty_expire_centisecs", "300000"),
];

/// Sysctls of which the kernel keeps one in force: (ratio, bytes).
const PAIRS: [(&str, &str); 2] = [
    ("vm.dirty_ratio", "vm.dirty_bytes"),
    ("vm.dirty_background_ratio", "vm.dirty_background_bytes"),
];

/// The file of sysctl `name` (`vm.dirty_ratio` → `/proc/sys/vm/dirty_ratio`);
/// `None` for a name that would leave `/proc/sys`.
fn sysctl_path(name: &str) -> Option<PathBuf> {
    let valid = name.split('.').all(|part| {
        !part.is_empty()
            && part
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    });
    valid.then(|| Path::new("/proc/sys").join(name.replace('.', "/")))
}

fn invalid_sysctl(name: &str) -> Error {
    Error::InvalidName {
        kind: "sysctl",
        name: name.to_string(),
    }
}

/// Reads sysctl `name` (dotted, like `vm.dirty_ratio`), without the trailing
/// newline.
///
/// # Errors
/// `InvalidInput` for a malformed name; the error of reading
/// `/proc/sys/...` (`NotFound` for an unknown sysctl).
pub fn read(name: &str) -> io::Result<String> {
    let path = sysctl_path(name)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, invalid_sysctl(name)))?;
    Ok(fs::read_to_string(path)?.trim().to_string())
}

/// The sysctl whose value must be recorded to undo a write to `name`, and
/// that value (see the module doc on the ratio/bytes pairs).
fn value_in_force(name: &str) -> Result<(String, String)> {
    let read = |name: &str| read(name).map_err(io_err(format_args!("reading {name}")));
    if let Some((ratio, bytes)) = PAIRS.iter().find(|(r, b)| name == *r || name == *b) {
        let bytes_value = read(bytes)?;
        if bytes_value != "0" {
            return Ok((bytes.to_string(), bytes_value));
        }
        return Ok((ratio.to_string(), read(ratio)?));
    }
    Ok((name.to_string(), read(name)?))
}

/// The name that stands for both sysctls of a ratio/bytes pair (the ratio),
/// or `name` itself.
pub(crate) fn pair_key(name: &str) -> &str {
    PAIRS
        .iter()
        .find(|(r, b)| name == *r || name == *b)
        .map_or(name, |(ratio, _)| ratio)
}

/// Sets sysctl `name` to `value`, recording in `journal` first what puts it
/// back.
///
/// # Errors
/// [`Error::GlobalLockNotHeld`] unless this process holds the
/// [`GlobalLock`](crate::state::GlobalLock) of the journal's directory;
/// [`Error::InvalidName`]; I/O errors reading or writing the sysctl (then
/// nothing stays recorded).
pub fn set(journal: &Journal, name: &str, value: &str) -> Result<EntryId> {
    let path = sysctl_path(name).ok_or_else(|| invalid_sysctl(name))?;
    let (recorded, old) = value_in_force(name)?;
    let id = journal.record(Change::Sysctl {
        name: recorded,
        old,
    })?;
    if let Err(e) = write_file(&path, value) {
        // A failed write changed nothing.
        let _ = journal.forget(id);
        return Err(io_err(format_args!("setting {name} = {value}"))(e));
    }
    Ok(id)
}

/// Sets each sysctl of [`FLUSHER_OFF`], recording the old values.
///
/// # Errors
/// As [`set`]. The settings applied before the failing one stay recorded,
/// and are undone with the journal.
pub fn apply_flusher_off(journal: &Journal) -> Result<Vec<EntryId>> {
    FLUSHER_OFF
        .iter()
        .map(|(name, value)| set(journal, name, value))
        .collect()
}

/// The kernel's write-back settings (`vm.dirty_*`), as found.
///
/// Of `dirty_ratio`/`dirty_bytes` one is 0 (the kernel keeps the other in
/// force); likewise for the two background settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct DirtySettings {
    /// `vm.dirty_ratio`: % of available memory at which writers start
    /// write-back themselves (0 when `dirty_bytes` is in force).
    pub dirty_ratio: u64,
    /// `vm.dirty_background_ratio`: % at which the flusher threads start
    /// (0 when `dirty_background_bytes` is in force).
    pub dirty_background_ratio: u64,
    /// `vm.dirty_expire_centisecs`: age at which dirty data is written back.
    pub dirty_expire_centisecs: u64,
    /// `vm.dirty_writeback_centisecs`: interval of the flusher threads.
    pub dirty_writeback_centisecs: u64,
    /// `vm.dirty_bytes`: as `dirty_ratio`, in bytes (0 when not in force).
    pub dirty_bytes: u64,
    /// `vm.dirty_background_bytes`: as `dirty_background_ratio`, in bytes
    /// (0 when not in force).
    pub dirty_background_bytes: u64,
}

impl DirtySettings {
    /// Reads the current settings.
    ///
    /// # Errors
    /// A sysctl cannot be read or is not a number.
    pub fn read() -> io::Result<DirtySettings> {
        let number = |name: &str| -> io::Result<u64> {
            read(name)?
                .parse()
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("{name}: {e}")))
        };
        Ok(DirtySettings {
            dirty_ratio: number("vm.dirty_ratio")?,
            dirty_background_ratio: number("vm.dirty_background_ratio")?,
            dirty_expire_centisecs: number("vm.dirty_expire_centisecs")?,
            dirty_writeback_centisecs: number("vm.dirty_writeback_centisecs")?,
            dirty_bytes: number("vm.dirty_bytes")?,
            dirty_background_bytes: number("vm.dirty_background_bytes")?,
        })
    }

    /// Makes these the kernel's settings, recording the old ones: of each
    /// ratio/bytes pair, writes the bytes value when it is not 0, else the
    /// ratio (so that reading back gives exactly `self`).
    ///
    /// # Errors
    /// As [`set`].
    pub fn apply(&self, journal: &Journal) -> Result<Vec<EntryId>> {
        let pick = |ratio_name, ratio: u64, bytes_name, bytes: u64| {
            if bytes != 0 {
                (bytes_name, bytes)
            } else {
                (ratio_name, ratio)
            }
        };
        [
            pick(
                "vm.dirty_ratio",
                self.dirty_ratio,
                "vm.dirty_bytes",
                self.dirty_bytes,
            ),
            pick(
                "vm.dirty_background_ratio",
                self.dirty_background_ratio,
                "vm.dirty_background_bytes",
                self.dirty_background_bytes,
            ),
            ("vm.dirty_expire_centisecs", self.dirty_expire_centisecs),
            (
                "vm.dirty_writeback_centisecs",
                self.dirty_writeback_centisecs,
            ),
        ]
        .iter()
        .map(|(name, value)| set(journal, name, &value.to_string()))
        .collect()
    }
}

/// Writes `value` to a kernel file as `echo VALUE > FILE` does (truncating;
/// never creating it).
fn write_file(path: &Path, value: &str) -> io::Result<()> {
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

/// Undoes [`Change::Sysctl`].
pub(crate) fn restore_sysctl(name: &str, old: &str) -> Result<()> {
    write_back(&sysctl_path(name).ok_or_else(|| invalid_sysctl(name))?, old)
}

/// Undoes [`Change::Scheduler`].
pub(crate) fn restore_scheduler(device: &str, old: &str) -> Result<()> {
    write_back(&scheduler_path(device_name(device)?), old)
}

/// Undoes [`Change::TraceFile`].
pub(crate) fn restore_file(path: &Path, old: &str) -> Result<()> {
    write_back(path, old)
}

/// `vda` from `vda` or `/dev/vda`; an error for names that would leave
/// `/sys/block`.
fn device_name(device: &str) -> Result<&str> {
    let name = device.strip_prefix("/dev/").unwrap_or(device);
    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
        return Err(Error::InvalidName {
            kind: "block device",
            name: device.to_string(),
        });
    }
    Ok(name)
}

fn scheduler_path(name: &str) -> PathBuf {
    Path::new("/sys/block").join(name).join("queue/scheduler")
}

/// The I/O scheduler in use on block device `device` (`vda` or `/dev/vda`;
/// a whole disk, not a partition): the bracketed name in
/// `/sys/block/DEV/queue/scheduler`, e.g. `mq-deadline`, or `none`.
///
/// # Errors
/// `InvalidInput` for a malformed name; the error of reading the file.
pub fn read_scheduler(device: &str) -> io::Result<String> {
    let name = device_name(device).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let text = fs::read_to_string(scheduler_path(name))?;
    let in_use = match (text.find('['), text.find(']')) {
        (Some(open), Some(close)) if open < close => &text[open + 1..close],
        // A queue without a choice of scheduler shows just "none".
        _ => text.trim(),
    };
    Ok(in_use.to_string())
}

/// Sets the I/O scheduler of `device` to `scheduler`, recording the old one.
///
/// # Errors
/// As [`set`]; `EINVAL` from the kernel for a scheduler it does not offer.
pub fn set_scheduler(journal: &Journal, device: &str, scheduler: &str) -> Result<EntryId> {
    let name = device_name(device)?;
    let old = read_scheduler(name)
        .map_err(io_err(format_args!("reading the I/O scheduler of {name}")))?;
    let id = journal.record(Change::Scheduler {
        device: name.to_string(),
        old,
    })?;
    if let Err(e) = write_file(&scheduler_path(name), scheduler) {
        let _ = journal.forget(id);
        return Err(io_err(format_args!(
            "setting the I/O scheduler of {name} to {scheduler}"
        ))(e));
    }
    Ok(id)
}

/// Writes `value` to tracefs file `path` (`/sys/kernel/tracing/tracing_on`,
/// `…/events/jbd2/enable`, `…/set_event`), recording its old content first.
///
/// The old content must be writable back as it reads: an
/// `events/<system>/enable` that reads `X` (some of its events on) is not;
/// record its events' own `enable` files instead.
///
/// # Errors
/// As [`set`].
pub fn set_trace_file(journal: &Journal, path: &Path, value: &str) -> Result<EntryId> {
    let old = fs::read_to_string(path)
        .map_err(io_err(format_args!("reading {}", path.display())))?
        .trim_end()
        .to_string();
    let id = journal.record(Change::TraceFile {
        path: path.to_owned(),
        old,
    })?;
    if let Err(e) = write_file(path, value) {
        let _ = journal.forget(id);
        return Err(io_err(format_args!(
            "writing {value:?} to {}",
            path.display()
        ))(e));
    }
    Ok(id)
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
