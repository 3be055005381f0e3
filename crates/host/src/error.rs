//! The one error type of this crate, [`Error`], and its [`Result`].

use std::fmt;
use std::io;
use std::path::PathBuf;

use crate::change::{Change, EntryId};

/// Every error of this crate: the journal, the global lock, and the modules
/// that change state through them.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The kernel lacks a feature this needs (or `RTREC_HIDE_FEATURES`
    /// hides it): one sentence naming it and how to get it (a
    /// `features::Missing`, as text: this module stays below `features`).
    #[error("{0}")]
    Missing(String),
    /// A file-system or kernel-interface call failed; `what` says on what.
    #[error("{what}: {source}")]
    Io {
        /// What was being done ("writing /proc/sys/vm/dirty_ratio").
        what: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// A journal file could not be serialized or parsed.
    #[error("journal {path}: {source}", path = path.display())]
    Json {
        /// The journal file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: serde_json::Error,
    },
    /// The state directory belongs to another user or others may write to
    /// it, so its journals cannot be trusted (they name files to delete and
    /// values to write, as root).
    #[error("refusing to use state directory {dir}: {reason}", dir = dir.display())]
    UnsafeStateDir {
        /// The directory.
        dir: PathBuf,
        /// Why ("owned by uid 1000", "writable by others (mode 1777)").
        reason: String,
    },
    /// A change to machine-wide state was recorded without holding the
    /// [`GlobalLock`](crate::lock::GlobalLock) of the journal's directory.
    #[error("changing {change} needs the global lock: hold a GlobalLock (of {dir}) while changing it", dir = dir.display())]
    GlobalLockNotHeld {
        /// The change that was refused.
        change: Change,
        /// The journal directory whose lock is needed.
        dir: PathBuf,
    },
    /// This thread already holds the
    /// [`GlobalLock`](crate::lock::GlobalLock); taking it again would wait
    /// forever.
    #[error("this thread already holds the global lock of {dir}; acquiring it again would deadlock", dir = .0.display())]
    WouldDeadlock(PathBuf),
    /// Waiting for the [`GlobalLock`](crate::lock::GlobalLock) took longer
    /// than allowed.
    #[error("gave up after {}s waiting for rtrec's global lock, held by {holder}; let it finish, stop it, or raise --lock-timeout", waited.as_secs())]
    LockTimeout {
        /// How long it waited.
        waited: std::time::Duration,
        /// Who holds it ("pid 1234 (rtrec bench)").
        holder: String,
    },
    /// A stop signal ended the wait for the
    /// [`GlobalLock`](crate::lock::GlobalLock).
    #[error("interrupted by {signal} while waiting for rtrec's global lock, held by {holder}")]
    Interrupted {
        /// The signal's name ("SIGTERM").
        signal: &'static str,
        /// Who holds the lock.
        holder: String,
    },
    /// No entry with this id is in the journal (already undone?).
    #[error("journal entry {0} not found (already undone?)")]
    NoSuchEntry(EntryId),
    /// A name that would leave its kernel interface (`/`, `..`, empty).
    #[error("invalid {kind} name {name:?}")]
    InvalidName {
        /// What kind of name ("sysctl", "block device").
        kind: &'static str,
        /// The name given.
        name: String,
    },
    /// A signal handler could not be installed.
    #[error("installing the handler of signal {signal}: {source}")]
    Signal {
        /// The signal number.
        signal: i32,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// An external command (`mkfs.ext4`, `mount`, `losetup`) failed.
    #[error("`{command}` failed ({status}): {stderr}")]
    Command {
        /// The command line.
        command: String,
        /// Its exit status.
        status: std::process::ExitStatus,
        /// What it printed on stderr.
        stderr: String,
    },
    /// Some changes could not be put back; one line per change. Their
    /// entries stay in the journal, so a later restore retries them.
    #[error("could not put back {} change(s): {}", .0.len(), .0.join("; "))]
    Undo(Vec<String>),
}

/// `Result` of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Returns a closure wrapping an `io::Error` with what was being done.
pub(crate) fn io_err(what: impl fmt::Display) -> impl FnOnce(io::Error) -> Error {
    move |source| Error::Io {
        what: what.to_string(),
        source,
    }
}
