//! The binary's one error type, and the exit code each kind maps to.
//!
//! Every command returns [`Result`]; `main` prints the error once
//! (`rtrec: …`) and exits with [`Error::exit_code`]. The kind decides the
//! code, never the text and never a downcast: the library crates' errors
//! come in typed (`rtrec_engine::Error`, `rtrec_bench::Error`,
//! `rtrec_host::Error`) and say themselves whether they are bad input.

use std::fmt::Display;
use std::io;

/// What a command can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// What the user asked for cannot work as given: exit code 2. The text
    /// is one sentence that says what to change.
    #[error("{0}")]
    Usage(String),
    /// The engine refused or failed (bad input → 2, otherwise 1).
    #[error(transparent)]
    Engine(#[from] rtrec_engine::Error),
    /// The bench refused or failed (bad input → 2, otherwise 1).
    #[cfg(feature = "rtrec-bench")]
    #[error(transparent)]
    Bench(#[from] rtrec_bench::Error),
    /// Changing or restoring machine-wide state failed: exit code 1.
    #[error(transparent)]
    Host(#[from] rtrec_host::Error),
    /// A command ran and failed for a reason it says in one sentence
    /// (`rtrec ship`: the store could not be reached): exit code 1.
    #[cfg(feature = "ship")]
    #[error("{0}")]
    Failed(String),
    /// A file or stream operation failed: exit code 1 (a broken pipe on
    /// stdout ends the command quietly with 0, as `head` expects).
    #[error("{context}: {source}")]
    Io {
        /// What was being done ("writing 'summary.json'").
        context: String,
        /// The system's error.
        source: io::Error,
    },
}

/// The result of a command: its exit code, or the error.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// The process exit code for this error: 130 when a stop signal ended a
    /// wait, 2 for bad input, 1 otherwise.
    pub fn exit_code(&self) -> i32 {
        // A stop signal while waiting for the global lock: nothing was done,
        // and 130 says how it ended.
        let interrupted = match self {
            Error::Host(e) => matches!(e, rtrec_host::Error::Interrupted { .. }),
            #[cfg(feature = "rtrec-bench")]
            Error::Bench(e) => e.is_interrupted(),
            _ => false,
        };
        if interrupted {
            return 130;
        }
        let bad_input = match self {
            Error::Usage(_) => true,
            Error::Engine(e) => e.is_bad_input(),
            #[cfg(feature = "rtrec-bench")]
            Error::Bench(e) => e.is_bad_input(),
            Error::Host(_) | Error::Io { .. } => false,
            #[cfg(feature = "ship")]
            Error::Failed(_) => false,
        };
        if bad_input {
            2
        } else {
            1
        }
    }

    /// True when stdout was closed by its reader (`rtrec … | head`): not a
    /// failure of ours.
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, Error::Io { source, .. } if source.kind() == io::ErrorKind::BrokenPipe)
    }
}

impl From<io::Error> for Error {
    fn from(source: io::Error) -> Error {
        Error::Io {
            context: "writing output".into(),
            source,
        }
    }
}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Error {
        Error::Io {
            context: "encoding JSON".into(),
            source: io::Error::other(e),
        }
    }
}

/// Adds what was being done to an I/O error, as `anyhow::Context` does.
pub trait Context<T> {
    /// Wraps the error with `what` ("creating 'rtrec-data'").
    fn context(self, what: impl Display) -> Result<T>;
}

impl<T> Context<T> for io::Result<T> {
    fn context(self, what: impl Display) -> Result<T> {
        self.map_err(|source| Error::Io {
            context: what.to_string(),
            source,
        })
    }
}

/// Shorthand for a usage error (exit code 2).
pub fn usage<T>(msg: impl Into<String>) -> Result<T> {
    Err(Error::Usage(msg.into()))
}

/// What a build without some cargo features refuses (the record-only
/// build: `cargo build --no-default-features`): one sentence saying that
/// this rtrec was built without `what`, and which `feature` brings it;
/// exit code 2.
#[cfg(any(test, commands_left_out))]
pub fn left_out<T>(what: &str, feature: &str) -> Result<T> {
    usage(format!(
        "this rtrec was built without {what} (cargo feature `{feature}`); \
         a build with the default features has it (docs/embedded.md)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_maps_to_its_exit_code() {
        assert_eq!(Error::Usage("x".into()).exit_code(), 2);
        let missing = rtrec_engine::Error::Usage("no".into());
        assert_eq!(Error::from(missing).exit_code(), 2);
        assert_eq!(
            Error::from(rtrec_engine::Error::WriterPanicked).exit_code(),
            1
        );
        assert_eq!(Error::from(io::Error::other("disk")).exit_code(), 1);
    }

    #[cfg(feature = "rtrec-bench")]
    #[test]
    fn the_bench_errors_map_to_their_exit_codes() {
        let refused = rtrec_bench::Error::DuplicateCase("ALL".into());
        assert_eq!(Error::from(refused).exit_code(), 2);
        let failed = rtrec_bench::Error::Failed(anyhow::anyhow!("mount failed"));
        assert_eq!(Error::from(failed).exit_code(), 1);
    }

    #[test]
    fn a_left_out_feature_is_one_sentence_naming_it_with_exit_code_2() {
        let e = left_out::<()>("the bench", "bench").unwrap_err();
        assert_eq!(e.exit_code(), 2);
        let text = e.to_string();
        assert!(text.starts_with("this rtrec was built without the bench (cargo feature `bench`)"));
        assert!(!text.contains('\n'), "{text}");
    }

    #[test]
    fn a_broken_pipe_is_recognised_and_context_is_printed_first() {
        let e = Error::from(io::Error::from(io::ErrorKind::BrokenPipe));
        assert!(e.is_broken_pipe());
        let r: io::Result<()> = Err(io::Error::other("full"));
        let e = r.context("writing 'x.json'").unwrap_err();
        assert_eq!(e.to_string(), "writing 'x.json': full");
        assert!(!e.is_broken_pipe());
    }
}
