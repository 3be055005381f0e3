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

// The modules, lowest first: each imports only modules declared above it
// (`tests/architecture.rs` checks it, tests included), so no two import
// each other. Groups are separated by blank lines, which keeps rustfmt
// from sorting one group into another. The data path runs from the
// producer down (recorder -> ring -> writer_thread -> flight -> writer ->
// io -> file / pool -> flusher); the modules are declared roughly the
// other way, from the disk up, since each layer is built on the one
// below. Where the two orders part: the ring and the reader sit below
// the writer (the ring is shared by the producer and the writer thread;
// the writer's tests read their files back), and `config` sits above
// `io` (it asks each back-end's row for its rules).
//
// Base types: they import no module of the data path.
pub mod crc;
pub mod error;
pub mod layout;
mod strategy;

pub mod format;
pub mod sizing;
pub mod stats;

// Timing of the caller's thread.
pub mod rt;
pub mod schedule;

// The storage back-ends (strategy and error only), then the configuration
// that picks one and runs its row's rules.
mod io;

pub mod config;

// Files: naming and creation, the pool they come from, and the flush
// thread that writes them back.
mod file;
// The name claims of a directory, listed for the writer and recovery.
mod claims;
mod flusher;
pub mod pool;

// Reading files back (file names and format only).
pub mod reader;

// After a crash: what `rtrec recover` repairs, read with the reader, and
// the pool's crash repairs that a recording's start runs too (so below
// the writer).
pub mod recovery;

// The writing side, from the writer up to the producer's handle: the
// ring the producer fills, the writer (one recording's files, through
// `io`), ...
mod ring;
mod writer;

// ... the flight recorder in front of the writer, the writer thread's
// loop over the ring, and the producer's `Recorder`; its `Summary` as a
// versioned document.
mod flight;
mod writer_thread;

pub mod recorder;
pub mod result;

// A recording as every command reads it: one reader of a directory
// (reader, pool, recovery, the name claims).
pub mod recordings;
// Settling a configuration before a recorder is created: the sizing and
// refusals `rtrec record` and the C API share (imports config, sizing,
// error).
pub mod settle;

pub use config::{
    Alloc, Config, FlightConfig, Flush, Framing, Io, KeepScope, Mode, OnFull, OnPoolEmpty,
    PoolConfig, Retention, RtConfig, TraceMarker, DEFAULT_IO_BLOCK, DEFAULT_IO_DEPTH,
    DEFAULT_SYNC_EVERY_NS,
};
pub use error::{ConfigError, Error, Failure, FailureKind};
pub use file::{parse_utc_iso, utc_iso, utc_iso_ns, utc_stamp, utc_stamp_ms, FRAMED_EXT, RAW_EXT};
pub use flight::FlightStats;
pub use flusher::FlushStats;
pub use recorder::{Drops, RecordError, Recorder, Summary};
pub use schedule::{PeriodicTimer, Tick};
pub use sizing::{
    FileSizeBasis, FileSizing, RingSizing, SizeFrom, Sizes, Stall, StallSource, Workload, MIB,
};
pub use stats::{Latency, LatencySummary, LiveSnapshot, LiveStats};
pub use writer::{PoolStats, RetireStats};
