//! The kernel flusher per case (S1's FON / FOFF). FOFF applies
//! `vm.dirty_ratio=100`, `vm.dirty_background_ratio=100` and
//! `vm.dirty_expire_centisecs=300000` through `rtrec_host::sysctl`, which
//! journals each old value before it writes the new one; FON puts back the
//! values found at start. The machine-wide [`GlobalLock`] is held for the
//! whole run, and dropping this control (also while a panic unwinds) puts
//! every value back before the lock is released. After SIGKILL the next
//! rtrec run (or `rtrec tune --restore`) does it from the journal.

use anyhow::Context;
use rtrec_host::sysctl::{self, DirtySettings};
use rtrec_host::{EntryId, GlobalLock, Wait};

use crate::report::VmDirty;
use crate::scenario::Flusher;

/// Switches the flusher between cases; see the module docs.
#[derive(Debug)]
pub struct FlusherControl {
    lock: Option<GlobalLock>,
    found: Option<DirtySettings>,
    applied: Vec<EntryId>,
}

impl FlusherControl {
    /// Takes the global lock when `privileged` (waiting for another rtrec
    /// that holds it as `wait` says, after naming it) and reads the values
    /// in force.
    /// `restored` gets what acquiring the lock put back for dead owners.
    ///
    /// # Errors
    /// The lock or the sysctls cannot be read.
    pub fn new(
        privileged: bool,
        wait: &Wait,
        restored: &mut Vec<String>,
    ) -> rtrec_host::Result<FlusherControl> {
        let lock = if privileged {
            let lock = match GlobalLock::try_acquire()? {
                Some(l) => l,
                None => {
                    let dir = rtrec_host::state_dir();
                    eprintln!(
                        "rtrec bench: {} is changing kernel settings; waiting for it to finish",
                        GlobalLock::holder_in(&dir)
                    );
                    GlobalLock::acquire_with(&dir, wait)?
                }
            };
            restored.extend(lock.restored().restored.iter().cloned());
            Some(lock)
        } else {
            None
        };
        let found = DirtySettings::read().ok();
        Ok(FlusherControl {
            lock,
            found,
            applied: Vec::new(),
        })
    }

    /// True when FOFF can be applied.
    pub fn can_switch(&self) -> bool {
        self.lock.is_some()
    }

    /// The journal of the global lock, when it is held (root): the one
    /// every machine-wide change of the run is recorded in.
    pub fn journal(&self) -> Option<&rtrec_host::Journal> {
        self.lock.as_ref().map(GlobalLock::journal)
    }

    /// The values found at start.
    pub fn found(&self) -> VmDirty {
        self.found.map(VmDirty::from).unwrap_or_default()
    }

    /// Puts the flusher in the state `want`; returns the state in force
    /// (FON when FOFF cannot be applied).
    ///
    /// # Errors
    /// A sysctl could not be written or put back.
    pub fn set(&mut self, want: Flusher) -> anyhow::Result<Flusher> {
        match (want, &self.lock) {
            (Flusher::Off, Some(lock)) => {
                if self.applied.is_empty() {
                    self.applied = sysctl::apply_flusher_off(lock.journal())
                        .context("turning the kernel flusher off")?;
                }
                Ok(Flusher::Off)
            }
            _ => {
                self.restore()?;
                Ok(Flusher::On)
            }
        }
    }

    fn restore(&mut self) -> anyhow::Result<()> {
        if let Some(lock) = &self.lock {
            while let Some(id) = self.applied.pop() {
                lock.journal().undo(id).context("putting vm.dirty_* back")?;
            }
        }
        Ok(())
    }

    /// The values now, when they differ from those found at start.
    pub fn changed(&self) -> Option<(VmDirty, VmDirty)> {
        let now = DirtySettings::read().ok()?;
        let found = self.found?;
        (now != found).then(|| (VmDirty::from(found), VmDirty::from(now)))
    }

    /// Puts every value back and releases the lock.
    ///
    /// # Errors
    /// A value could not be put back (it stays in the journal for the next
    /// rtrec run or `rtrec tune --restore`).
    pub fn finish(mut self) -> anyhow::Result<()> {
        self.restore()?;
        if let Some(lock) = self.lock.take() {
            lock.journal()
                .undo_all()
                .context("putting kernel settings back")?;
        }
        Ok(())
    }
}
