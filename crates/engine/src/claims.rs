//! The name claims of a directory (`.BASE-name.lock`, see
//! `crate::file::NameClaim`), listed in one place for the two that read
//! them: a loop's disk budget (`writer::earlier`), for which any claim
//! means a recording not yet closed ([`claimed_bases`]), and recovery,
//! which tells the live ones from the dead ([`Claims`]). Which recordings
//! are alive: those whose claim's `flock` a recorder holds. A claim whose
//! lock can be taken is dead (its owner is gone, however it died); it
//! stays locked by recover while recover works, so no recorder can take
//! its name meanwhile, and is removed at the end.
//!
//! Design choices:
//! - "Owner gone" is the claim missing or its lock free, not a process id
//!   written in it: a pid can be reused after a reboot (the case recover
//!   exists for), a lock cannot outlive its holder.
//! - A module of its own below both `writer` and `recovery`, so neither
//!   lists claims itself and neither imports the other for it.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use rtrec_sys as sys;

use crate::file::{belongs_to, claimed_base};

/// The base of every claim in `dir`, live or dead (a recording that has
/// not been closed, by its recorder or by recover); none when `dir`
/// cannot be listed.
pub(crate) fn claimed_bases(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            e.file_name()
                .to_str()
                .and_then(claimed_base)
                .map(String::from)
        })
        .collect()
}

/// The claims of one directory, as found.
pub(crate) struct Claims {
    /// Bases whose claim a live recorder holds.
    live: Vec<String>,
    /// Dead claims: their names and the open, locked files.
    dead: Vec<(String, File)>,
}

impl Claims {
    /// Looks at every claim in `dir`, locking the dead ones.
    ///
    /// # Errors
    /// Listing the directory; a claim that cannot be opened or locked for
    /// another reason than a holder (it is then counted live, never
    /// removed: the error is not returned).
    pub(crate) fn take(dir: &sys::Dir) -> io::Result<Claims> {
        let mut c = Claims {
            live: Vec::new(),
            dead: Vec::new(),
        };
        for name in dir.names()? {
            let Some(name) = name.to_str() else { continue };
            let Some(base) = claimed_base(name) else {
                continue;
            };
            let dead = dir.open_existing_nofollow(name, false).ok().filter(|f| {
                sys::lock_exclusive(f, false).unwrap_or(false)
                    // Removed by its owner at its end, after we opened it.
                    && sys::file_info(f).is_ok_and(|i| i.nlink > 0)
            });
            match dead {
                Some(f) => c.dead.push((name.to_string(), f)),
                None if dir.stat(name).is_ok() => c.live.push(base.to_string()),
                None => {}
            }
        }
        Ok(c)
    }

    /// Whether the file named `name` belongs to a live recording.
    pub(crate) fn is_live(&self, name: &str) -> bool {
        self.live.iter().any(|b| belongs_to(name, b))
    }

    /// Removes the dead claims (still locked, so no recorder took one),
    /// then syncs the directory; returns their paths.
    ///
    /// # Errors
    /// Removing a claim or syncing the directory.
    pub(crate) fn remove_dead(self, dir: &sys::Dir) -> io::Result<Vec<PathBuf>> {
        let mut removed = Vec::new();
        for (name, lock) in self.dead {
            dir.remove_file(&name)?;
            drop(lock);
            removed.push(dir.join(&name));
        }
        if !removed.is_empty() {
            dir.sync()?;
        }
        Ok(removed)
    }
}
