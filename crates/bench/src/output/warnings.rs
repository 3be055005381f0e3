//! Warnings: each one sentence saying what differs from the study's
//! conditions and what to do about it.

use std::fmt;

use crate::report::VmDirty;

/// A condition of the run that differs from the study's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Warning {
    /// Not root: no image of our own (when `fallback`), no FOFF.
    NotRoot {
        /// Why (from the privilege probe).
        reason: String,
        /// True when the bench fell back to a temporary directory.
        fallback: bool,
    },
    /// The filesystem does not meet one of S1's conditions.
    Condition {
        /// The condition (`mount option noatime`).
        what: &'static str,
        /// What was found instead.
        found: String,
    },
    /// The loop device could not be switched to direct I/O.
    LoopDirectIo(String),
    /// PAGECACHE-FLOOR could not mount its own tmpfs (not root) and wrote
    /// to `/dev/shm` instead.
    NoTmpfs(String),
    /// A background load had to be killed.
    LoadKilled {
        /// The case.
        case: String,
        /// The load.
        load: &'static str,
    },
    /// The `vm.dirty_*` values changed under the bench.
    DirtySettingsChanged {
        /// At start.
        found: VmDirty,
        /// Now.
        now: VmDirty,
    },
    /// `--explain` could not trace or read a set.
    Explain {
        /// The case.
        case: String,
        /// What failed.
        reason: String,
    },
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::NotRoot { reason, fallback: true } => write!(
                f,
                "not privileged ({reason}): running in a temporary directory instead of our own ext4 image, and the FOFF \
                 cases run with the kernel flusher on; run as root for the study's conditions"
            ),
            Warning::NotRoot { reason, fallback: false } => write!(
                f,
                "not privileged ({reason}): the FOFF cases run with the kernel flusher on (vm.dirty_* cannot be changed); \
                 run as root to apply them"
            ),
            Warning::Condition { what, found } => write!(
                f,
                "this filesystem does not meet S1's condition '{what}' (found: {found}); run as root without --dir to use \
                 an ext4 image made to the study's settings"
            ),
            Warning::LoopDirectIo(e) => write!(
                f,
                "could not switch the loop device to direct I/O ({e}): its I/O stops in the page cache of the image \
                 file, hiding the device; put the image on a filesystem that supports O_DIRECT with --image-dir"
            ),
            Warning::NoTmpfs(e) => write!(
                f,
                "PAGECACHE-FLOOR could not mount a tmpfs of its own ({e}) and wrote to /dev/shm, a tmpfs shared with \
                 others; run as root for a tmpfs of its own"
            ),
            Warning::LoadKilled { case, load } => write!(
                f,
                "the {load} load of {case} did not stop on SIGTERM and was killed; its files went with the case directory"
            ),
            Warning::DirtySettingsChanged { found, now } => write!(
                f,
                "vm.dirty_* changed during the run by someone else (found {found:?}, now {now:?}); the FON cases may \
                 have run with different settings; rerun on an otherwise idle machine"
            ),
            Warning::Explain { case, reason } => write!(
                f,
                "--explain could not attribute {case} ({reason}); its figures stand, without causes"
            ),
        }
    }
}
