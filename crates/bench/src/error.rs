//! The bench's one error type: everything `rtrec bench` refuses before it
//! runs anything (bad arguments, a file that is not a bench result). Each
//! message is one sentence that says what to give instead; the binary maps
//! this type to exit code 2, as it does every other bad input. Failures
//! while setting up or running a case are not here: they are the
//! environment's, not the user's input.

use std::path::PathBuf;

/// What `rtrec bench` refuses.
#[derive(Debug, thiserror::Error)]
pub enum Error {
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
