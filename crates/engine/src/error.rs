//! The engine's one error type ([`Error`]), the configuration's reasons for
//! refusing ([`ConfigError`]), and the typed record of a failure that
//! happened while recording ([`Failure`]), which the summary carries.
//!
//! A base module: it imports nothing from the rest of the engine, so every
//! layer can return these types.
//!
//! Design choice: an error that stops a call ([`Error`]) and a failure that
//! happens on the writer or flush thread while the producer keeps recording
//! ([`Failure`]) are different types. The second cannot be returned to
//! anybody when it happens; it is kept, with its errno, and reported in the
//! summary, so a caller can tell "no space left" from any other I/O error
//! without parsing text.

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Errors of the engine, each one sentence for the user.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The request cannot work as given (directory, existing file, pool);
    /// the text says what to change.
    #[error("{0}")]
    Usage(String),
    /// A path the recording needs cannot be used as given: the directory
    /// is missing or not a directory, creating files there is not
    /// permitted, a name is taken. Bad input, with the errno that says why.
    #[error("{message}")]
    Path {
        /// One sentence for the user.
        message: String,
        /// `ENOENT`, `ENOTDIR`, `EACCES`, `EROFS`, `EEXIST`, ...
        errno: i32,
    },
    /// The configuration's values do not work together.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The pre-allocation does not fit on the filesystem.
    #[error("not enough space in '{}': a file of {} is needed, {} free; a smaller --file-size (the C API's file_size) may fit", dir.display(), rtrec_units::format_size(*need), rtrec_units::format_size(*avail))]
    NoSpace {
        /// Directory of the recording.
        dir: PathBuf,
        /// Bytes needed.
        need: u64,
        /// Bytes available.
        avail: u64,
    },
    /// An open-ended recording's default file size
    /// ([`crate::sizing::open_ended_file_size`]) does not fit: a quarter
    /// of the free space is less than the 1 MiB minimum.
    #[error("'{}' has {} free: an open-ended recording's files default to a quarter of the free space and at least {}; give --file-size (the C API's file_size) with a size that fits, or free some space", dir.display(), rtrec_units::format_size(*free_bytes), rtrec_units::format_size(*min_file_bytes))]
    NoRoomForDefault {
        /// Directory of the recording.
        dir: PathBuf,
        /// Its file system's free space, bytes.
        free_bytes: u64,
        /// The smallest default file, bytes.
        min_file_bytes: u64,
    },
    /// A system call failed.
    #[error("{action} '{}': {source}", path.display())]
    Io {
        /// What we were doing ("pre-allocating").
        action: &'static str,
        /// On what.
        path: PathBuf,
        /// The system's error.
        source: io::Error,
    },
    /// The writer thread panicked (a bug in rtrec); nothing was summarised.
    #[error("the writer thread panicked")]
    WriterPanicked,
    /// `finish()` or `abort()` was called on a recording already ended.
    #[error("the recording was already finished")]
    AlreadyFinished,
}

impl Error {
    /// A [`Error::Path`] from the system's error about it.
    pub(crate) fn path(message: String, e: &io::Error) -> Error {
        Error::Path {
            message,
            errno: e.raw_os_error().unwrap_or(libc::EINVAL),
        }
    }

    pub(crate) fn io(action: &'static str, path: &Path, source: io::Error) -> Error {
        Error::Io {
            action,
            path: path.to_path_buf(),
            source,
        }
    }

    /// True when what the caller asked for cannot work (usage,
    /// configuration, too little space): nothing was recorded, and asking
    /// differently will help. False for system and internal failures.
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            Error::Usage(_)
                | Error::Path { .. }
                | Error::Config(_)
                | Error::NoSpace { .. }
                | Error::NoRoomForDefault { .. }
        )
    }

    /// The errno that describes this error, when one does: the system's
    /// for [`Error::Io`] and [`Error::Path`], `ENOSPC` for
    /// [`Error::NoSpace`]. `None` for usage,
    /// configuration and internal errors (a C caller maps those itself).
    pub fn errno(&self) -> Option<i32> {
        match self {
            Error::NoSpace { .. } | Error::NoRoomForDefault { .. } => Some(libc::ENOSPC),
            Error::Path { errno, .. } => Some(*errno),
            Error::Io { source, .. } => source.raw_os_error(),
            _ => None,
        }
    }
}

/// Why a configuration cannot work: one variant per rule of
/// [`crate::Config::validate`], each one sentence that says what to change.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A flush strategy other than none with `flush_every` 0.
    #[error("the flush interval must be more than 0 bytes")]
    FlushEveryZero,
    /// The prefix could leave or hide from the directory.
    #[error("the file name prefix '{0}' must be printable ASCII without '/' and must not start with '.'")]
    BadPrefix(String),
    /// A SCHED_FIFO priority outside 1-99.
    #[error("the writer's SCHED_FIFO priority {0} is outside 1-99")]
    BadPriority(i32),
    /// `max_record` is 0.
    #[error("the maximum record size must be more than 0 bytes")]
    MaxRecordZero,
    /// `max_record` is above what a frame can carry.
    #[error("records larger than {max} bytes are not supported")]
    RecordTooLarge {
        /// The largest payload a frame carries.
        max: u64,
    },
    /// One record does not fit in one file.
    #[error("a record of {max_record} bytes does not fit in a file of {file_size} bytes; raise the file size or lower the record size")]
    RecordOverFile {
        /// The configured maximum record size.
        max_record: usize,
        /// The configured file size.
        file_size: u64,
    },
    /// The ring cannot hold one record.
    #[error("the ring ({ring_bytes} bytes) must hold at least one record of {max_record} bytes")]
    RingTooSmall {
        /// The configured ring capacity.
        ring_bytes: usize,
        /// The configured maximum record size.
        max_record: usize,
    },
    /// Raw files with the pool.
    #[error("raw files cannot use the file pool (they have no header to record their valid length); use the zero allocation strategy")]
    RawWithPool,
    /// A pool of 0 files.
    #[error("the pool needs at least 1 file")]
    EmptyPool,
    /// The flight recorder in inline mode.
    #[error("the flight recorder needs the ring mode (records wait in memory for a trigger)")]
    FlightNeedsRing,
    /// The flight recorder with raw files.
    #[error("the flight recorder needs framed files (each event file stores its trigger)")]
    FlightNeedsFraming,
    /// The pre-trigger window cannot hold one record.
    #[error("the pre-trigger window ({0} bytes) must hold at least one record")]
    WindowTooSmall(u64),
    /// A writer poll interval outside 1 µs .. 1 s.
    #[error("the writer poll interval must be between 1 µs and 1 s")]
    BadPollInterval,
    /// A rule of the chosen back-end (`Config::io`) is broken: an
    /// `O_DIRECT` back-end with files that grow while recording, a
    /// gathering buffer (`io_block`) or an io_uring depth (`io_depth`) out
    /// of range. The rule and its sentence are the back-end's, beside it in
    /// `io/` (its row's `rules`), so a new back-end brings its own.
    #[error("{reason}")]
    BackendRule {
        /// The back-end, as `--io` names it.
        io: &'static str,
        /// The rule's sentence: what to change.
        reason: String,
    },
    /// A loop recording (`keep_bytes`, `keep_files`, `keep_for_ns`) with
    /// raw files: a raw file has no header to say it belongs to a loop.
    #[error("a loop recording (--keep, --keep-files, --keep-for) needs framed or packed files (raw files cannot say what was retired)")]
    LoopNeedsFraming,
    /// A continuous loop's limits with the flight recorder, whose event
    /// recordings have their own (`keep_events`).
    #[error("the flight recorder's event files are kept by --keep-events, not by --keep, --keep-files or --keep-for")]
    LoopInFlight,
    /// `keep_events` without the flight recorder.
    #[error("--keep-events keeps flight-recorder events: it needs the flight recorder")]
    KeepEventsNeedsFlight,
    /// `unshipped_headroom` without a size or count budget: there is no
    /// budget for it to exceed.
    #[error("--unshipped-headroom lets a loop's disk budget be exceeded to keep unshipped recordings: it needs --keep or --keep-files")]
    HeadroomNeedsBudget,
    /// A layout that does not parse (the sentence says why).
    #[error("{0}")]
    BadLayout(String),
    /// A layout with raw files, which have no frame to store it in.
    #[error(
        "a layout is stored in the recording's frames: it needs framed or packed files, not raw"
    )]
    LayoutNeedsFraming,
    /// A packed frame's maximum latency outside 1 ns .. 60 s.
    #[error("the maximum latency of a packed frame must be more than 0 and at most 60 s")]
    BadMaxLatency,
}

/// What kind of failure stopped writing (or flushing) during a recording.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FailureKind {
    /// The filesystem is full or the quota is used up (`ENOSPC`, `EDQUOT`).
    NoSpace,
    /// Any other system error; `errno` says which.
    Io,
    /// The writer had no open file (an earlier failure closed it).
    Closed,
}

/// A failure on the writer or flush thread, kept typed for the summary:
/// its kind, the errno when the system gave one, and the sentence.
///
/// Serialized in the JSON summary as `{"kind": "no-space", "errno": 28,
/// "message": "..."}` (see `docs/summary.md`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{message}")]
pub struct Failure {
    /// What kind of failure.
    pub kind: FailureKind,
    /// The system's errno, when the failure came from a system call.
    pub errno: Option<i32>,
    /// One sentence for the user, with what was being done.
    pub message: String,
}

impl Failure {
    /// A failure of a system call; the kind follows from the errno.
    pub fn from_io(e: &io::Error) -> Failure {
        let errno = e.raw_os_error();
        let kind = match errno {
            Some(libc::ENOSPC | libc::EDQUOT) => FailureKind::NoSpace,
            _ => FailureKind::Io,
        };
        Failure {
            kind,
            errno,
            message: e.to_string(),
        }
    }

    /// An engine error met while recording (e.g. preparing the next file),
    /// keeping its errno.
    pub fn from_error(e: &Error) -> Failure {
        let kind = match e {
            Error::NoSpace { .. } => FailureKind::NoSpace,
            Error::Io { source, .. } => Failure::from_io(source).kind,
            _ => FailureKind::Io,
        };
        Failure {
            kind,
            errno: e.errno(),
            message: e.to_string(),
        }
    }

    /// The writer has no open file.
    pub(crate) fn closed() -> Failure {
        Failure {
            kind: FailureKind::Closed,
            errno: None,
            message: "the recording is closed".into(),
        }
    }

    /// The same failure with `context` ("closing the recording") in front.
    pub(crate) fn context(mut self, context: &str) -> Failure {
        self.message = format!("{context}: {}", self.message);
        self
    }
}

impl From<io::Error> for Failure {
    fn from(e: io::Error) -> Failure {
        Failure::from_io(&e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_filesystem_is_a_no_space_failure_with_its_errno() {
        let f = Failure::from_io(&io::Error::from_raw_os_error(libc::ENOSPC));
        assert_eq!(
            (f.kind, f.errno),
            (FailureKind::NoSpace, Some(libc::ENOSPC))
        );
        let e = Error::io(
            "preparing",
            Path::new("/d/x"),
            io::Error::from_raw_os_error(libc::EDQUOT),
        );
        let f = Failure::from_error(&e);
        assert_eq!(
            (f.kind, f.errno),
            (FailureKind::NoSpace, Some(libc::EDQUOT))
        );
        assert!(f.message.starts_with("preparing '/d/x'"), "{}", f.message);
    }

    #[test]
    fn a_failure_serializes_as_kind_errno_and_message() {
        let f = Failure::from_io(&io::Error::from_raw_os_error(libc::EIO));
        let v = serde_json::to_value(&f).unwrap();
        assert_eq!(v["kind"], "io");
        assert_eq!(v["errno"], libc::EIO);
        assert!(v["message"].is_string());
    }

    #[test]
    fn only_usage_configuration_and_space_errors_are_bad_input() {
        assert!(Error::Config(ConfigError::EmptyPool).is_bad_input());
        assert!(!Error::WriterPanicked.is_bad_input());
        assert_eq!(Error::AlreadyFinished.errno(), None);
    }
}
