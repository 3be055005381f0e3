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
pub const TRACEFS: &str = "/sys/kernel/tracing";

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
        if !root.join("instances").is_dir() {
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
        self.journal.undo_each(&mut self.ids)
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.undo();
    }
}
