//! Putting back what rtrec processes that died left in their journals
//! ([`restore_stale`], run by the next rtrec and `rtrec tune --restore`), or,
//! forced, what live ones hold ([`restore_all_forced`]); and the
//! [`RestoreReport`] that says what was done. Nothing in this crate but
//! [`crate::lock`] imports it.

use std::collections::HashSet;
use std::fmt;
use std::fs;
use std::path::Path;

use serde::Serialize;

use crate::allowlist::Allowlist;
use crate::change::Change;
use crate::error::{io_err, Result};
use crate::journal::{
    boot_id, current_owner, existing_dir, owner_alive, parse_journal_file_name, persist,
    read_journal, state_dir, JournalFile,
};
use crate::lockfile::{held_by_process, lock_file, lock_holder, GLOBAL_LOCK, RESTORE_LOCK};
use crate::undo;

/// What a restore put back, what it left for later, and what failed: one
/// human-readable line each, for the CLI to print.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RestoreReport {
    /// Changes put back ("vm.dirty_ratio = 20 (left by pid 1234)").
    pub restored: Vec<String>,
    /// Changes left in their journal for a later restore, with the reason
    /// (the global lock is held by a live rtrec, or a newer change to the same
    /// thing could not be undone).
    pub waiting: Vec<String>,
    /// Changes that could not be put back, with the error; their entries stay
    /// in the journal.
    pub failed: Vec<String>,
}

impl RestoreReport {
    /// True when there was nothing to restore.
    pub fn is_empty(&self) -> bool {
        self.restored.is_empty() && self.waiting.is_empty() && self.failed.is_empty()
    }

    pub(crate) fn merge(&mut self, other: RestoreReport) {
        self.restored.extend(other.restored);
        self.waiting.extend(other.waiting);
        self.failed.extend(other.failed);
    }
}

impl fmt::Display for RestoreReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (label, lines) in [
            ("restored", &self.restored),
            ("waiting", &self.waiting),
            ("failed", &self.failed),
        ] {
            for line in lines {
                writeln!(f, "{label}: {line}")?;
            }
        }
        Ok(())
    }
}

/// Which journals a restore undoes, and which of their entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// Dead owners, global kinds only; the caller holds the global lock.
    StaleGlobal,
    /// Dead owners, every kind; global kinds only if the lock can be had.
    Stale,
    /// Every owner but this process, every kind, lock or not.
    Forced,
}

/// Undoes the changes left by rtrec processes that died, newest first per
/// process, in [`state_dir`], and deletes their journals.
///
/// Mounts, loop devices and files are undone at once. Sysctls, schedulers
/// and tracefs files only if the [`GlobalLock`](crate::lock::GlobalLock) is free (it is taken for the
/// time of the restore) or held by this process; otherwise they are listed
/// in [`RestoreReport::waiting`] and stay in the journal, and whoever next
/// acquires the lock puts them back.
///
/// # Errors
/// The directory belongs to another user, or a lock file cannot be opened.
/// Failures of single undos are reported in [`RestoreReport::failed`].
pub fn restore_stale() -> Result<RestoreReport> {
    restore_stale_in(&state_dir())
}

/// [`restore_stale`] in `dir`.
///
/// # Errors
/// As [`restore_stale`].
pub fn restore_stale_in(dir: &Path) -> Result<RestoreReport> {
    restore_stale_in_with(dir, &Allowlist::rtrec())
}

/// [`restore_stale_in`] obeying only the entries `allow` accepts (the
/// others are reported in [`RestoreReport::failed`] and dropped).
///
/// # Errors
/// As [`restore_stale`].
pub fn restore_stale_in_with(dir: &Path, allow: &Allowlist) -> Result<RestoreReport> {
    match existing_dir(dir)? {
        Some(dir) => restore(&dir, Scope::Stale, allow),
        None => Ok(RestoreReport::default()),
    }
}

/// Like [`restore_stale`], but also undoes the changes of rtrec processes
/// that are still running (`rtrec tune --restore --force`), without waiting
/// for the global lock.
///
/// Dangerous: a running recorder or benchmark loses its settings and its
/// mounts under its feet (a busy mount is detached lazily), and when it ends
/// it may write values back over values set since. Meant for a hung or
/// stopped rtrec that cannot be killed cleanly.
///
/// # Errors
/// As [`restore_stale`].
pub fn restore_all_forced() -> Result<RestoreReport> {
    restore_all_forced_in(&state_dir())
}

/// [`restore_all_forced`] in `dir`.
///
/// # Errors
/// As [`restore_stale`].
pub fn restore_all_forced_in(dir: &Path) -> Result<RestoreReport> {
    restore_all_forced_in_with(dir, &Allowlist::rtrec())
}

/// [`restore_all_forced_in`] obeying only the entries `allow` accepts.
///
/// # Errors
/// As [`restore_stale`].
pub fn restore_all_forced_in_with(dir: &Path, allow: &Allowlist) -> Result<RestoreReport> {
    match existing_dir(dir)? {
        Some(dir) => restore(&dir, Scope::Forced, allow),
        None => Ok(RestoreReport::default()),
    }
}

pub(crate) fn restore(dir: &Path, scope: Scope, allow: &Allowlist) -> Result<RestoreReport> {
    // For Stale, take the global lock only for this restore, if it is free.
    let mut _global = None;
    let global_allowed = match scope {
        Scope::StaleGlobal | Scope::Forced => true,
        Scope::Stale if held_by_process(dir) => true,
        Scope::Stale => {
            _global = lock_file(dir, GLOBAL_LOCK, false)?;
            _global.is_some()
        }
    };
    let _restoring = lock_file(dir, RESTORE_LOCK, true)?;
    let own = current_owner()?;
    let boot = boot_id();
    let mut report = RestoreReport::default();
    let entries = fs::read_dir(dir).map_err(io_err(format_args!("listing {}", dir.display())))?;
    let mut files: Vec<_> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let (pid, starttime, tmp) = parse_journal_file_name(&name)?;
            Some((e.path(), pid, starttime, tmp))
        })
        .collect();
    // Newest owners first, as within one owner newest changes first.
    files.sort_by_key(|&(_, _, starttime, _)| std::cmp::Reverse(starttime));
    for (path, pid, starttime, tmp) in files {
        if tmp {
            // A write the owner did not finish; its previous journal is
            // still in place.
            if !owner_alive(pid, starttime) {
                let _ = fs::remove_file(&path);
            }
            continue;
        }
        // This process's own journal is undone through its handles.
        if (pid, starttime) == own {
            continue;
        }
        let file = match read_journal(&path) {
            Ok(Some(file)) => file,
            // Gone since the directory was listed: someone else restored it.
            Ok(None) => continue,
            Err(e) => {
                report.failed.push(format!("{e}; left in place"));
                continue;
            }
        };
        let same_boot = file.boot_id.is_empty() || file.boot_id == boot;
        if same_boot && owner_alive(pid, starttime) && scope != Scope::Forced {
            continue;
        }
        report.merge(restore_file(
            &path,
            file,
            !same_boot,
            scope,
            global_allowed,
            dir,
            allow,
        ));
    }
    Ok(report)
}

/// Undoes one dead (or, forced, live) owner's journal, newest first, and
/// rewrites its file with what is left, or deletes it. A journal from an
/// earlier boot (`rebooted`; when the directory is not a tmpfs) only has
/// files left to remove: the reboot reset everything else.
fn restore_file(
    path: &Path,
    mut file: JournalFile,
    rebooted: bool,
    scope: Scope,
    global_allowed: bool,
    dir: &Path,
    allow: &Allowlist,
) -> RestoreReport {
    let mut report = RestoreReport::default();
    let pid = file.pid;
    let count = file.entries.len();
    let mut blocked = HashSet::new();
    let mut kept = Vec::new();
    for entry in std::mem::take(&mut file.entries).into_iter().rev() {
        let change = &entry.change;
        let key = undo::key(change);
        let file_kind = matches!(change, Change::RemoveFile { .. } | Change::RemoveDir { .. });
        if scope == Scope::StaleGlobal && !change.is_global() {
            // Not this restore's business; restore_stale does it.
        } else if let Err(reason) = allow.check(change) {
            // Never obeyed, so never kept: see crate::allowlist.
            report.failed.push(format!(
                "refused {change} (left by pid {pid}): {reason}; the entry was dropped"
            ));
            continue;
        } else if rebooted && !file_kind {
            report.restored.push(format!(
                "{change} (left by pid {pid} before the last reboot, which reset it)"
            ));
            continue;
        } else if blocked.contains(&key) {
            report.waiting.push(format!(
                "{change} (left by pid {pid}): waits until a newer change to it is put back"
            ));
        } else if change.is_global() && !global_allowed {
            report.waiting.push(format!(
                "{change} (left by pid {pid}): waits for the global lock, held by {}",
                lock_holder(dir)
            ));
            blocked.insert(key);
        } else {
            match undo::undo(change) {
                Ok(()) => {
                    report
                        .restored
                        .push(format!("{change} (left by pid {pid})"));
                    continue;
                }
                Err(e) => {
                    report
                        .failed
                        .push(format!("{change} (left by pid {pid}): {e}"));
                    blocked.insert(key);
                }
            }
        }
        kept.push(entry);
    }
    if kept.len() != count {
        kept.reverse();
        file.entries = kept;
        if let Err(e) = persist(path, &file) {
            report.failed.push(e.to_string());
        }
    }
    report
}
