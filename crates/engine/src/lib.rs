//! rtrec's recorder engine: records periodic data to files so that the
//! producer is never late and nothing is lost silently.
//!
//! # Real-time contract
//!
//! In ring mode (the default) [`Recorder::record`] copies the record into a
//! pre-allocated, pre-faulted lock-free ring and returns: **no allocation, no
//! lock, no system call, no waiting** once [`Recorder::create`] has returned.
//! A full ring drops the newest record, counts it and stores the loss in the
//! file. Everything that can block — `write()`, allocation, flushing,
//! closing — happens on the writer and flush threads. Tests hold this
//! contract (`tests/realtime.rs`: a counting allocator and a seccomp filter
//! that kills the process on any system call).
//!
//! # Data path
//!
//! producer ([`recorder`]) → [`ring`] → [`writer`] → [`file`] → [`flusher`];
//! on disk as [`format`] describes; read back by [`reader`].
//!
//! Every design choice of the published study is a named strategy in
//! [`Config`] ([`Alloc`], [`Flush`], [`Mode`], [`Framing`]) so that the bench
//! composes all its cases from this one engine.
#![deny(missing_docs)]

pub mod config;
pub mod file;
pub mod flight;
pub(crate) mod flusher;
pub mod format;
pub mod pool;
pub mod reader;
pub mod recorder;
pub mod ring;
pub mod rt;
pub mod schedule;
pub mod stats;
pub mod writer;

use std::io;
use std::path::{Path, PathBuf};

pub use config::{
    Alloc, Config, FlightConfig, Flush, Framing, Mode, OnPoolEmpty, PoolConfig, RtConfig, MIB,
};
pub use flusher::FlushStats;
pub use recorder::{Drops, RecordError, Recorder, Summary};
pub use schedule::{PeriodicTimer, Tick};
pub use stats::{Latency, LatencySummary};
pub use writer::LiveStats;

/// Errors of the engine, each one sentence for the user.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The request cannot work as given (bad configuration, directory,
    /// existing file); the text says what to change.
    #[error("{0}")]
    Usage(String),
    /// The pre-allocation does not fit on the filesystem.
    #[error("not enough space in '{}': a file of {need} bytes is needed, {avail} bytes are available", dir.display())]
    NoSpace {
        /// Directory of the recording.
        dir: PathBuf,
        /// Bytes needed.
        need: u64,
        /// Bytes available.
        avail: u64,
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
    /// The writer thread stopped unexpectedly.
    #[error("{0}")]
    Writer(String),
}

impl Error {
    pub(crate) fn io(action: &'static str, path: &Path, source: io::Error) -> Error {
        Error::Io {
            action,
            path: path.to_path_buf(),
            source,
        }
    }
}
