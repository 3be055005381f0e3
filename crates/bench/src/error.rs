//! The bench's one error type: everything `rtrec bench` refuses before it
//! runs anything (bad arguments, a file that is not a bench result), each
//! message one sentence that says what to give instead, and one variant,
//! [`Error::Failed`], for a failure while setting up or running the cases
//! (the environment's, not the user's input). The binary maps the first
//! kind to exit code 2 and the second to 1 through [`Error::is_bad_input`].

use std::path::PathBuf;

/// What `rtrec bench` refuses, and — as the one variant that is not the
/// user's input — [`Error::Failed`].
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A `--compare` file that cannot be read.
    #[error("cannot read '{}': {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The system's error.
        source: std::io::Error,
    },
    /// Taking the global lock or installing signal handlers failed: a
    /// timeout, a stop signal while waiting (exit code 130), or the
    /// journal's own error.
    #[error(transparent)]
    Host(#[from] rtrec_host::Error),
    /// Setting up, running a case, exporting or putting the machine back
    /// failed: the environment's failure, with its context chain.
    #[error("{0:#}")]
    Failed(anyhow::Error),
    /// `--cases` names a case that is not in the table.
    #[error("unknown case '{name}': {hint}")]
    UnknownCase {
        /// The name as given.
        name: String,
        /// `did you mean NONE?` or the list of every case.
        hint: String,
    },
    /// `--cases` names a case twice (names match whatever their case).
    #[error("case '{0}' is given twice in --cases; give each case once")]
    DuplicateCase(String),
    /// A numeric option out of range.
    #[error("{flag} must be {requirement}")]
    OutOfRange {
        /// The option, with its dashes.
        flag: &'static str,
        /// What it must be (`at least 1`).
        requirement: String,
    },
    /// A case whose engine configuration the options make invalid.
    #[error("{case}: {reason}")]
    InvalidCase {
        /// The case.
        case: &'static str,
        /// The engine's sentence.
        reason: String,
    },
    /// An option that cannot be used as given or here (`--with-fio`
    /// without `--study s4`, or without fio installed): the sentence.
    #[error("{0}")]
    Unavailable(String),
    /// A `--compare` file that is not an `rtrec bench --json` result.
    #[error("'{}' is not an rtrec bench --json result: {reason}", path.display())]
    NotAReport {
        /// The file.
        path: PathBuf,
        /// What the JSON parser said.
        reason: String,
    },
    /// A `--compare` file of another schema version.
    #[error("'{}' has schema version {found} (this rtrec reads {expected})", path.display())]
    SchemaVersion {
        /// The file.
        path: PathBuf,
        /// Its version.
        found: u32,
        /// The version this build reads and writes.
        expected: u32,
    },
}

impl Error {
    /// True for what the user gave (arguments, files): exit code 2. False
    /// for [`Error::Failed`] and [`Error::Host`].
    pub fn is_bad_input(&self) -> bool {
        !matches!(self, Error::Failed(_) | Error::Host(_))
    }

    /// True when a stop signal ended the wait for the global lock (exit
    /// code 130: nothing was done).
    pub fn is_interrupted(&self) -> bool {
        matches!(self, Error::Host(rtrec_host::Error::Interrupted { .. }))
    }
}
