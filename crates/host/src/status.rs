//! What the journal holds right now, read without changing anything: every
//! owner's pending changes (what is changed, by whom, since when) and who
//! holds the global lock. `rtrec tune status` prints it and `rtrec doctor`
//! warns about it.
//!
//! Design choice: reading takes no lock and undoes nothing, so it can run
//! beside a recording; whether the global lock is held is asked with a
//! non-blocking `flock`, released at once.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use serde::Serialize;

use crate::error::{io_err, Result};
use crate::journal::{
    boot_id, existing_dir, owner_alive, parse_journal_file_name, read_journal, state_dir,
};
use crate::lockfile::{held_by_process, lock_file, lock_holder, GLOBAL_LOCK};

/// The journal directory's content.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct JournalStatus {
    /// The journal directory.
    pub dir: PathBuf,
    /// One entry per process with changes not yet put back, oldest first.
    pub owners: Vec<OwnerStatus>,
    /// Who holds the global lock, in words ("pid 1234 (rtrec bench)"), or
    /// `None` when it is free.
    pub lock_holder: Option<String>,
}

/// The pending changes of one rtrec process.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct OwnerStatus {
    /// Its process id.
    pub pid: u32,
    /// True while it runs (it will put its changes back itself); false when
    /// it died and `rtrec tune --restore` (or the next rtrec) will.
    pub alive: bool,
    /// Its command line while it runs (empty once it died).
    pub command: String,
    /// When its journal was last written, seconds since the Unix epoch.
    pub since_unix_s: u64,
    /// What undoing each change does, oldest first ("vm.dirty_ratio = 20").
    pub changes: Vec<String>,
}

impl JournalStatus {
    /// True when no change is pending and the lock is free.
    pub fn is_clear(&self) -> bool {
        self.owners.is_empty() && self.lock_holder.is_none()
    }
}

/// Reads the journal of [`state_dir`].
///
/// # Errors
/// The directory belongs to another user or cannot be listed.
pub fn journal_status() -> Result<JournalStatus> {
    journal_status_in(&state_dir())
}

/// [`journal_status`] in `dir`.
///
/// # Errors
/// As [`journal_status`].
pub fn journal_status_in(dir: &Path) -> Result<JournalStatus> {
    let mut status = JournalStatus {
        dir: dir.to_path_buf(),
        ..JournalStatus::default()
    };
    let Some(dir) = existing_dir(dir)? else {
        return Ok(status);
    };
    status.lock_holder = if held_by_process(&dir) {
        Some(format!("pid {} (this process)", std::process::id()))
    } else {
        match lock_file(&dir, GLOBAL_LOCK, false)? {
            Some(_free) => None,
            None => Some(lock_holder(&dir)),
        }
    };
    let list = fs::read_dir(&dir).map_err(io_err(format_args!("listing {}", dir.display())))?;
    for e in list.filter_map(|e| e.ok()) {
        let Some(name) = e.file_name().into_string().ok() else {
            continue;
        };
        let Some((pid, starttime, false)) = parse_journal_file_name(&name) else {
            continue;
        };
        let Ok(Some(file)) = read_journal(&e.path()) else {
            continue;
        };
        let same_boot = file.boot_id.is_empty() || file.boot_id == boot_id();
        let alive = same_boot && owner_alive(pid, starttime);
        let command = if alive {
            fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| {
                    c.split(|&b| b == 0)
                        .filter(|w| !w.is_empty())
                        .map(|w| String::from_utf8_lossy(w).into_owned())
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .unwrap_or_default()
        } else {
            String::new()
        };
        let since_unix_s = e
            .metadata()
            .ok()
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_secs());
        status.owners.push(OwnerStatus {
            pid,
            alive,
            command,
            since_unix_s,
            changes: file.entries.iter().map(|e| e.change.to_string()).collect(),
        });
    }
    status.owners.sort_by_key(|o| (o.since_unix_s, o.pid));
    Ok(status)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::change::Change;
    use crate::journal::Journal;

    #[test]
    fn status_lists_a_live_owners_pending_change_and_a_free_lock() {
        let dir = tempfile::tempdir().unwrap();
        let empty = journal_status_in(dir.path()).unwrap();
        assert!(empty.is_clear(), "{empty:?}");
        let j = Journal::open_in(dir.path()).unwrap();
        let file = dir.path().join("made-by-test");
        j.record(Change::RemoveFile { path: file.clone() }).unwrap();
        let s = journal_status_in(dir.path()).unwrap();
        assert_eq!(s.lock_holder, None);
        assert_eq!(s.owners.len(), 1, "{s:?}");
        let o = &s.owners[0];
        assert_eq!(o.pid, std::process::id());
        assert!(o.alive);
        assert!(o.since_unix_s > 0);
        assert_eq!(o.changes.len(), 1);
        assert!(o.changes[0].contains("made-by-test"), "{:?}", o.changes);
        j.undo_all().unwrap();
        assert!(journal_status_in(dir.path()).unwrap().owners.is_empty());
    }
}
