//! Which recordings of a directory are alive: the name claims
//! (`.BASE-name.lock`, see `crate::file::NameClaim`) whose `flock` a
//! recorder holds. A claim whose lock can be taken is dead (its owner is
//! gone, however it died); it stays locked by recover while recover works,
//! so no recorder can take its name meanwhile, and is removed at the end.
//!
//! Design choice: "owner gone" is the claim missing or its lock free, not
//! a process id written in it: a pid can be reused after a reboot (the
//! case recover exists for), a lock cannot outlive its holder.

use std::fs::File;
use std::io;
use std::path::PathBuf;

use rtrec_sys as sys;

use crate::file::{belongs_to, claimed_base};

/// The claims of one directory, as found.
pub(super) struct Claims {
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
    pub(super) fn take(dir: &sys::Dir) -> io::Result<Claims> {
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
    pub(super) fn is_live(&self, name: &str) -> bool {
        self.live.iter().any(|b| belongs_to(name, b))
    }

    /// Removes the dead claims (still locked, so no recorder took one),
    /// then syncs the directory; returns their paths.
    ///
    /// # Errors
    /// Removing a claim or syncing the directory.
    pub(super) fn remove_dead(self, dir: &sys::Dir) -> io::Result<Vec<PathBuf>> {
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
