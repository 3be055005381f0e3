//! rtrec's recorder engine: records periodic data to files so that the
//! producer is never late and nothing is lost silently.
//!
//! **Owns**: the recording — its configuration and sizing, the producer's
//! ring, the writer and flush threads, files and the file pool, the flight
//! recorder, the on-disk format and its reader.
//!
//! **Must not depend on**: `rtrec-host` (a recording never changes
//! machine-wide state), the bench or the binary; it reaches the kernel only
//! through `rtrec-sys`.
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
//! producer ([`recorder`]) → `ring` → `writer_thread` (→ `flight`) →
//! `writer` (→ `io`, the storage back-ends: buffered, `O_DIRECT`, io_uring) → `file` (or one from the [`pool`]) → `flusher`; on disk as
//! [`format`](mod@format) describes; read back by [`reader`]. How big the files, the
//! ring and the flight recorder's window are is decided by [`sizing`];
//! every failure is an [`Error`] or, while recording, a [`Failure`] in the
//! [`Summary`]; [`result`] makes the summary a versioned document
//! (`rtrec record --json`).
//!
//! Only what a library user needs is public: the ring, the writer, its
//! thread, the file and flush steps are crate-private.
//!
//! Every design choice of the published study is a named strategy in
//! [`Config`] ([`Alloc`], [`Flush`], [`Mode`], [`Framing`], [`Io`]) so that
//! the bench composes all its cases from this one engine. A storage
//! back-end ([`Io`]) is one file of `io/` with its row: its help, what it
//! is, its rules and its fallback.
#![deny(missing_docs)]

// The modules in the order of the data path. Each imports only modules
// listed before it (`use crate::` lines), so no two import each other.
//
// Base types: they import nothing above them.
pub mod config;
pub mod error;
pub mod format;
pub mod sizing;
pub mod stats;
mod strategy;
// Timing of the caller's thread.
pub mod rt;
pub mod schedule;
// The data path: ring (transport) -> file, pool -> flusher -> io (the
// storage back-ends) -> writer (one recording's files) -> flight (in front of the writer) -> the writer
// thread's loop -> recorder (the producer's handle).
mod file;
mod flight;
mod flusher;
mod io;
pub mod pool;
pub mod recorder;
pub mod result;
mod ring;
mod writer;
mod writer_thread;
// Independent of the recording side: reads files back (format only, and
// the file name extensions).
pub mod reader;
// After a crash: what `rtrec recover` repairs, read with the reader.
pub mod recovery;

pub use config::{
    Alloc, Config, FlightConfig, Flush, Framing, Io, Mode, OnFull, OnPoolEmpty, PoolConfig,
    RtConfig, TraceMarker, DEFAULT_IO_BLOCK, DEFAULT_IO_DEPTH, DEFAULT_SYNC_EVERY_NS,
};
pub use error::{ConfigError, Error, Failure, FailureKind};
pub use file::{utc_iso, utc_stamp, utc_stamp_ms, FRAMED_EXT, RAW_EXT};
pub use flight::FlightStats;
pub use flusher::FlushStats;
pub use recorder::{Drops, RecordError, Recorder, Summary};
pub use schedule::{PeriodicTimer, Tick};
pub use sizing::{RingSizing, Sizes, Stall, StallSource, Workload, MIB};
pub use stats::{Latency, LatencySummary, LiveSnapshot, LiveStats};
pub use writer::PoolStats;
