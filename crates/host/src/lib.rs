//! The state of the machine that rtrec changes and always puts back —
//! `vm.dirty_*` sysctls, I/O schedulers and their tunables, rtrec's own I/O
//! cgroups, tracefs switches, loop-mounted ext4 images — through a persisted journal; the mount table; and the process's
//! signal handling.
//!
//! **Owns**: the journal of global changes and its global lock, restoring
//! what dead rtrec processes left, the kernel knobs changed through it, loop
//! filesystems, the one `/proc/self/mounts` parser ([`mounts`]), the one
//! place `losetup` runs ([`loopdev`]), the one signal-handling module
//! ([`signals`]), and the read-only probes of the machine ([`machine`])
//! that `doctor` and the bench share.
//!
//! **Must not depend on**: the engine (a recording never changes global
//! state), or `libc` (every system call goes through `rtrec-sys`). Used by
//! the bench and the binary, never by the engine or the C library.
//!
//! Modules, lowest first; each imports only modules above it in this list,
//! so no two import each other:
//!
//! | module | owns |
//! |---|---|
//! | [`change`] | what a journal entry says: a [`Change`] and its [`EntryId`] |
//! | [`error`] | the crate's one [`Error`] |
//! | [`tools`] | external programs, their Debian packages, the rule for a test whose program is missing |
//! | `kernfs` | paths and writes of `/proc/sys`, `/sys/block`, tracefs files |
//! | [`mounts`] | the mount table, unmounting |
//! | [`procstat`] | `/proc/stat` and `/proc/<pid>/stat`: the one reader of each, their fields named |
//! | [`machine`] | facts of the machine, read only: block device of a path, journal size, CPU, clocks, memory, user-mode emulation |
//! | [`loopdev`] | `losetup`, backing files of loop devices |
//! | `undo` | how each kind of change is put back (dispatch) |
//! | `lockfile` | `flock`ed lock files; which locks this process holds |
//! | [`journal`] | the persisted journal of one process, [`Journal`], [`Restorer`] |
//! | [`tracefs`] | tracefs switches and instances, changed through a journal |
//! | [`allowlist`] | which journal entries of other processes a restore obeys |
//! | [`restore`] | putting back what dead owners left |
//! | [`signals`] | SIGINT/SIGTERM/SIGHUP as a flag; counting signals |
//! | [`lock`] | the machine-wide [`GlobalLock`]: waiting for it (interruptible, with a timeout) |
//! | [`sysctl`], [`iosched`] | kernel knobs changed through a journal |
//! | [`emufs`] | the emulated device under a loop-mounted image (its process and FUSE mount) |
//! | [`tmpfs`] | a tmpfs of our own, mounted and put back through the journal |
//! | [`cgroup`] | the I/O cgroup hierarchy (v1 `blkio` or v2) and rtrec's own groups in it |
//! | [`features`] | the kernel features studies, flags and tests depend on: one detection each, the sentence for its absence, the rule for a test that needs one |
//! | [`loopfs`] | loop-mounted ext4 images |
//! | [`status`] | what the journal holds and who holds the lock, read-only |
//! | `testing` | test support behind the `testing` feature: a process holding the global lock |
//!
//! Design choice: the undo of each kind of change is one `match` in `undo`,
//! below the journal, and the journaled setters (`sysctl::set`, …) sit above
//! it. The journal thus undoes any change without knowing sysctls or loop
//! devices, and the modules that know them record through the journal
//! without the journal importing them back.
#![deny(missing_docs)]

pub mod allowlist;
pub mod cgroup;
pub mod change;
pub mod emufs;
pub mod error;
pub mod features;
pub mod iosched;
pub mod journal;
mod kernfs;
pub mod lock;
mod lockfile;
pub mod loopdev;
pub mod loopfs;
pub mod machine;
pub mod mounts;
pub mod procstat;
pub mod restore;
pub mod signals;
pub mod status;
pub mod sysctl;
pub mod testing;
pub mod tmpfs;
pub mod tools;
pub mod tracefs;
mod undo;

pub use allowlist::Allowlist;
pub use change::{Change, EntryId};
pub use error::{Error, Result};
pub use journal::{state_dir, Journal, Restorer, DEFAULT_STATE_DIR, STATE_DIR_ENV};
pub use lock::{GlobalLock, Wait, DEFAULT_LOCK_TIMEOUT};
pub use restore::{
    restore_all_forced, restore_all_forced_in, restore_all_forced_in_with, restore_stale,
    restore_stale_in, restore_stale_in_with, RestoreReport,
};
pub use status::{journal_status, journal_status_in, JournalStatus, OwnerStatus};
