//! Sysctls under `/proc/sys`: read, and changed only through a [`Journal`],
//! which records the old value before the new one is written.
//!
//! They are machine-wide, so changing them needs the
//! [`GlobalLock`](crate::lock::GlobalLock); its journal puts them back when
//! it is dropped:
//!
//! ```no_run
//! # fn main() -> rtrec_host::Result<()> {
//! use rtrec_host::{lock::GlobalLock, sysctl};
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

use std::fs;
use std::io;

use serde::Serialize;

use crate::change::{Change, EntryId};
use crate::error::{io_err, Result};
use crate::journal::Journal;
use crate::kernfs::{invalid_sysctl, sysctl_path, write_file, PAIRS};

/// The "kernel flusher off" settings of the study (S1, design 3): write-back
/// starts only at 100 % dirty memory or after 3,000 s, so that only rtrec's
/// own `sync_file_range()` flushes the recording.
pub const FLUSHER_OFF: [(&str, &str); 3] = [
    ("vm.dirty_ratio", "100"),
    ("vm.dirty_background_ratio", "100"),
    ("vm.dirty_expire_centisecs", "300000"),
];

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

/// Sets sysctl `name` to `value`, recording in `journal` first what puts it
/// back.
///
/// # Errors
/// [`Error::GlobalLockNotHeld`](crate::Error::GlobalLockNotHeld) unless this process holds the
/// [`GlobalLock`](crate::lock::GlobalLock) of the journal's directory;
/// [`Error::InvalidName`](crate::Error::InvalidName); I/O errors reading or writing the sysctl (then
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

impl std::fmt::Display for DirtySettings {
    /// One line: `ratio 20%, background ratio 10%, bytes 0, background
    /// bytes 0, expire 3000 cs, writeback 500 cs`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ratio {}%, background ratio {}%, bytes {}, background bytes {}, expire {} cs, writeback {} cs",
            self.dirty_ratio,
            self.dirty_background_ratio,
            self.dirty_bytes,
            self.dirty_background_bytes,
            self.dirty_expire_centisecs,
            self.dirty_writeback_centisecs
        )
    }
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
