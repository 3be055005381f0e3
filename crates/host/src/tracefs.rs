//! Tracefs switches (`tracing_on`, `events/*/enable`, `set_event`): changed
//! only through a [`Journal`], which records the old content before the new
//! one is written. Machine-wide, so changing them needs the
//! [`GlobalLock`](crate::lock::GlobalLock).

use std::fs;
use std::path::Path;

use crate::change::{Change, EntryId};
use crate::error::{io_err, Result};
use crate::journal::Journal;
use crate::kernfs::write_file;

/// Writes `value` to tracefs file `path` (`/sys/kernel/tracing/tracing_on`,
/// `…/events/jbd2/enable`, `…/set_event`), recording its old content first.
///
/// The old content must be writable back as it reads: an
/// `events/<system>/enable` that reads `X` (some of its events on) is not;
/// record its events' own `enable` files instead.
///
/// # Errors
/// As [`crate::sysctl::set`].
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

/// Where tracefs is mounted, or mounted by [`Instance::create`].
pub const TRACEFS: &str = crate::undo::TRACEFS;

/// A tracefs instance of this process, `instances/rtrec-PID`: its own
/// ring buffer, events, filters and triggers, so tracing through it never
/// disturbs anybody else's (the top-level buffer, `trace-cmd`, `perf`).
///
/// Design choice: the instance and, when tracefs was not mounted, the mount
/// itself are the only global changes, each journaled before it is made
/// ([`Change::Mount`], [`Change::RemoveDir`]; removing an instance directory
/// is how tracefs deletes it, with everything set inside it). What is
/// written inside the instance needs no journal entry of its own: it goes
/// with the directory, also after SIGKILL, when the next rtrec process
/// restores the journal.
#[derive(Debug)]
pub struct Instance {
    journal: Journal,
    dir: std::path::PathBuf,
    ids: Vec<EntryId>,
}

impl Instance {
    /// Mounts tracefs at [`TRACEFS`] if it is not mounted there, and
    /// creates this process's instance `instances/rtrec-PID` (with
    /// `suffix` appended when given, for a second instance).
    ///
    /// # Errors
    /// Not root, no tracefs in this kernel, or the journal cannot be
    /// written; what was done before the failure is undone.
    pub fn create(journal: Journal, suffix: &str) -> Result<Instance> {
        let root = Path::new(TRACEFS);
        let mut inst = Instance {
            journal,
            dir: root
                .join("instances")
                .join(format!("rtrec-{}{suffix}", std::process::id())),
            ids: Vec::new(),
        };
        // Declared after `inst`, so released before a failure's undo takes
        // it again.
        let _mount_lock = mount_lock(&inst.journal)?;
        if root.join("instances").is_dir() {
            let journals = inst.journal.path();
            if mounted_by_another_rtrec(journals.parent().unwrap_or(Path::new("/"))) {
                // Shared: whichever of us ends last unmounts (see
                // `crate::undo`, which keeps the mount while another
                // rtrec instance is in it).
                inst.ids.push(inst.journal.record(Change::Mount {
                    target: root.to_owned(),
                })?);
            }
        } else {
            inst.ids.push(inst.journal.record(Change::Mount {
                target: root.to_owned(),
            })?);
            crate::loopdev::run(
                "mount",
                &[
                    "-t".as_ref(),
                    "tracefs".as_ref(),
                    "nodev".as_ref(),
                    root.as_os_str(),
                ],
            )?;
        }
        inst.ids.push(inst.journal.record(Change::RemoveDir {
            path: inst.dir.clone(),
        })?);
        if let Err(e) = fs::create_dir(&inst.dir) {
            if let Some(id) = inst.ids.pop() {
                let _ = inst.journal.forget(id);
            }
            return Err(io_err(format_args!("creating {}", inst.dir.display()))(e));
        }
        Ok(inst)
    }

    /// The instance directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Writes `value` to the instance's file `rel` (`trace_clock`,
    /// `events/sched/sched_switch/filter`, …). Not journaled: it goes with
    /// the instance.
    ///
    /// # Errors
    /// The kernel refused the value (a bad filter, an event this kernel
    /// lacks).
    pub fn write(&self, rel: &str, value: &str) -> std::io::Result<()> {
        write_file(&self.dir.join(rel), value)
    }

    /// Removes the instance (and unmounts tracefs if this created the
    /// mount). Also done on drop.
    ///
    /// # Errors
    /// The kernel refused to remove it (still open by another process).
    pub fn remove(mut self) -> Result<()> {
        self.undo()
    }

    fn undo(&mut self) -> Result<()> {
        // Switch off first: an instance still tracing refuses rmdir on some
        // kernels.
        let _ = write_file(&self.dir.join("tracing_on"), "0");
        let _ = write_file(&self.dir.join("events/enable"), "0");
        let _mount_lock = mount_lock(&self.journal).ok();
        self.journal.undo_each(&mut self.ids)
    }
}

/// The lock file of the state directory under which an rtrec process
/// joins tracefs (from seeing it mounted to its instance being in it,
/// [`Instance::create`]) and leaves it (removing its instance and, the
/// last one out, unmounting it). Without it, the last one out could
/// find no instance yet and unmount tracefs under one that was joining:
/// that one's `mkdir` failed with "No such file or directory". Not taken
/// when a dead process's journal is restored.
const MOUNT_LOCK: &str = "tracefs.lock";

fn mount_lock(journal: &Journal) -> Result<Option<fs::File>> {
    let journals = journal.path();
    crate::lockfile::lock_file(
        journals.parent().unwrap_or(Path::new("/")),
        MOUNT_LOCK,
        true,
    )
}

/// True when a live rtrec process other than this one has journaled the
/// tracefs mount at [`TRACEFS`]: it mounted tracefs (or shares it), so this
/// process shares the mount too and journals it as well. The mount is then
/// undone by whichever of them ends last; tracefs that was mounted before
/// any rtrec is never journaled, so never unmounted.
fn mounted_by_another_rtrec(state_dir: &Path) -> bool {
    let me = std::process::id();
    let Ok(dir) = fs::read_dir(state_dir) else {
        return false;
    };
    dir.flatten().any(|e| {
        let name = e.file_name();
        let Some((pid, starttime, false)) =
            name.to_str().and_then(crate::journal::parse_journal_file_name)
        else {
            return false;
        };
        pid != me
            && crate::journal::owner_alive(pid, starttime)
            && crate::journal::read_journal(&e.path())
                .ok()
                .flatten()
                .is_some_and(|j| {
                    j.entries.iter().any(|x| {
                        matches!(&x.change, Change::Mount { target } if target == Path::new(TRACEFS))
                    })
                })
    })
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.undo();
    }
}
