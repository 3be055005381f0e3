//! The recorder configuration: one [`Config`] of the named strategies
//! (`strategy`, re-exported here: [`Alloc`], [`Flush`], [`Mode`],
//! [`Framing`], [`Io`], [`OnFull`], [`OnPoolEmpty`]) with their sizes and
//! options, and [`Config::validate`], which checks them against each other
//! and runs the rules of the chosen back-end's row (`io/`). Every design
//! choice of the published study (S1) is a named strategy, so that the
//! bench composes all its cases from the same engine, and users pick them
//! by name on the command line.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::ConfigError;
use crate::format::{framed_len, packed_len, FLAG_LAYOUT, FLAG_LINES, FLAG_LOOP, MAX_PAYLOAD};
use crate::io;
pub use crate::io::{DEFAULT_IO_BLOCK, DEFAULT_IO_DEPTH};
use crate::sizing::{self, Sizes, Spans, Workload, ENTRY_HEADER_LEN, MIB, RESERVED_BYTES};
pub use crate::strategy::{Alloc, Flush, Framing, Io, KeepScope, Mode, OnFull, OnPoolEmpty};

fn default_io_depth() -> u32 {
    DEFAULT_IO_DEPTH
}

fn is_default_io_depth(d: &u32) -> bool {
    *d == DEFAULT_IO_DEPTH
}

fn default_io_block() -> u64 {
    DEFAULT_IO_BLOCK
}

fn is_default_io_block(b: &u64) -> bool {
    *b == DEFAULT_IO_BLOCK
}

/// The file pool (used when `alloc` is [`Alloc::Pool`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoolConfig {
    /// Files the pool is created with and topped up to.
    pub files: u32,
    /// What to do when no prepared file is ready.
    pub on_empty: OnPoolEmpty,
    /// Top the pool up while recording, on a nice-19, idle-I/O-class thread
    /// (its interference is what `rtrec bench` measures). Off by default:
    /// allocation of other files during a recording is exactly S1's open
    /// problem.
    pub refill_while_recording: bool,
    /// Top the pool up in `finish()`, once the recording is closed (idle).
    pub refill_on_finish: bool,
}

impl Default for PoolConfig {
    fn default() -> Self {
        PoolConfig {
            files: 2,
            on_empty: OnPoolEmpty::Fallocate,
            refill_while_recording: false,
            refill_on_finish: false,
        }
    }
}

/// The flight recorder (fault-triggered recording, S2's use case): records
/// are kept in a bounded pre-trigger window in memory; each trigger writes
/// that window to a new file and then records live data until the
/// post-trigger span has passed. One file per event.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlightConfig {
    /// Keep at most this long a span before a trigger, ns.
    pub pre_ns: u64,
    /// Keep at most this many bytes before a trigger (window storage,
    /// including 24 bytes per record); the smaller bound wins.
    pub pre_bytes: u64,
    /// Record this long after a trigger, ns.
    pub post_ns: u64,
}

impl Default for FlightConfig {
    /// 2 s before, 5 s after a trigger, at most 16 MiB of window.
    fn default() -> Self {
        FlightConfig {
            pre_ns: 2_000_000_000,
            pre_bytes: 16 * MIB,
            post_ns: 5_000_000_000,
        }
    }
}

/// A loop recording's disk budget and a flight recorder's event limit
/// (`rtrec record --keep`, `--keep-files`, `--keep-for`, `--keep-events`;
/// see `docs/unattended.md`, "Disk budget"). 0 in a field: that limit is
/// not set. Several limits may be set: the strictest wins.
///
/// Design choices: the limits are checked at a file switch only, by the
/// writer, which hands the files it retires to a background thread
/// (recycled into the pool when the recording uses one and it is below
/// its target, else deleted); so a file lives at most `keep_for_ns` plus
/// one file's span, and the recording's files take at most the budget
/// plus the file being written.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Retention {
    /// Keep the recording's finished files within this many bytes:
    /// `max(1, keep_bytes / file_size)` files.
    #[serde(default)]
    pub keep_bytes: u64,
    /// Keep at most this many finished files.
    #[serde(default)]
    pub keep_files: u32,
    /// Retire a finished file once its last record is older than this, ns.
    #[serde(default)]
    pub keep_for_ns: u64,
    /// Flight recorder: keep the newest this many event recordings; older
    /// ones are retired when a new event starts. Events are never retired
    /// by the continuous loop.
    #[serde(default)]
    pub keep_events: u32,
    /// Which earlier recordings of the directory the loop's budget covers
    /// ([`KeepScope`]): its own by default; left out of the JSON then, so
    /// the digests of earlier configurations hold.
    #[serde(default, skip_serializing_if = "is_own")]
    pub scope: KeepScope,
    /// A loop in a shipped directory: how far, in bytes, the directory
    /// may exceed the budget to keep earlier recordings `rtrec ship` has
    /// not sent yet (`--unshipped-headroom`). Given (even 0), the directory
    /// counts as shipped although no `.shipped` ledger is there yet.
    /// Beyond it they leave, counted (`retired_unshipped_files`). `None`:
    /// not given, left out of the JSON then, so the digests of earlier
    /// configurations hold (docs/unattended.md, "The budget knows").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unshipped_headroom: Option<u64>,
}

fn is_own(s: &KeepScope) -> bool {
    *s == KeepScope::Own
}

impl Retention {
    /// True when no limit is set (left out of the configuration's JSON,
    /// so the digests of earlier configurations hold).
    pub fn is_off(&self) -> bool {
        *self == Retention::default()
    }

    /// True when the continuous recording is a loop: a size, count or age
    /// limit is set.
    pub fn loops(&self) -> bool {
        self.keep_bytes > 0 || self.keep_files > 0 || self.keep_for_ns > 0
    }

    /// How many finished files a loop keeps with files of `file_size`
    /// bytes (the strictest of `keep_bytes` and `keep_files`, at least 1);
    /// `None` when neither is set (an age limit alone, or no loop).
    pub fn kept_files(&self, file_size: u64) -> Option<u64> {
        let by_size = (self.keep_bytes > 0).then(|| (self.keep_bytes / file_size.max(1)).max(1));
        let by_count = (self.keep_files > 0).then_some(self.keep_files as u64);
        match (by_size, by_count) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// Real-time options (all opt-in).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RtConfig {
    /// SCHED_FIFO priority of the writer thread (ring mode); the caller sets
    /// its own with [`crate::rt`]. `None`: normal scheduling.
    pub writer_priority: Option<i32>,
    /// CPU the writer thread is pinned to.
    pub writer_cpu: Option<usize>,
    /// CPU the flush thread is pinned to.
    pub flusher_cpu: Option<usize>,
}

/// The default durability interval: 1 s. A power cut loses at most about
/// the last second of records (plus the sync's own duration); measured on
/// the S1 workload it costs no visible `write()` latency (see
/// `docs/durability.md`), since the sync runs on the flush thread and the
/// window flush has already written most pages back.
pub const DEFAULT_SYNC_EVERY_NS: u64 = 1_000_000_000;

fn default_sync_every() -> u64 {
    DEFAULT_SYNC_EVERY_NS
}

/// Everything that decides how a recording is written.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Config {
    /// Who calls `write()`.
    pub mode: Mode,
    /// How file space is obtained.
    pub alloc: Alloc,
    /// How data are flushed while recording.
    pub flush: Flush,
    /// Flush granularity in bytes (S1: 2 MB).
    pub flush_every: u64,
    /// The durability interval, ns: the flush thread makes everything
    /// written durable (`fdatasync`) at most this long after it was written,
    /// and publishes the durable point (`durable_seq`). 0: only when a file
    /// is closed. Never on the producer's or the writer's thread. See
    /// [`DEFAULT_SYNC_EVERY_NS`] and `docs/durability.md`.
    #[serde(default = "default_sync_every")]
    pub sync_every_ns: u64,
    /// File layout.
    pub framing: Framing,
    /// Maximum bytes per file (pre-allocation size); a recording that grows
    /// past it continues in the next file.
    pub file_size: u64,
    /// How `file_size` was decided, which says what the recording may do
    /// to a directory's pool (`crate::sizing`'s rules): given (the
    /// default for a configuration built with a size), the open-ended
    /// default (fitted to the free space when the recorder is created), or
    /// a known length's exact need. Set by [`Config::settle`] for a
    /// `file_size` it sizes. Not part of the stored configuration.
    #[serde(skip)]
    pub file_size_basis: sizing::FileSizeBasis,
    /// Largest record accepted by `record()`.
    pub max_record: usize,
    /// Capacity of the producer-to-writer ring in bytes (ring mode).
    pub ring_bytes: usize,
    /// What `record()` does when the ring is full (ring mode).
    #[serde(default)]
    pub on_full: OnFull,
    /// How long the writer thread sleeps when the ring is empty, in µs. The
    /// producer never wakes it (waking is a system call), so this bounds how
    /// late data reach the page cache. With packed framing it is the
    /// shortest sleep: the writer sleeps longer while the ring stays nearly
    /// empty, up to a quarter of `max_latency_ns` and never past its open
    /// frame's due time (issue 34: fewer wakes for small records).
    pub writer_poll_us: u64,
    /// Packed framing: the longest a record waits in the writer's open
    /// frame before the frame is written, ns. Records in an open frame are
    /// queued, not written: a kill or power cut loses up to this span of
    /// records (see `docs/format.md`, "Packed frames"). In ring mode with
    /// frames or raw bytes, the `buffered`, `direct` and `uring` back-ends
    /// hold a frame's partial last block for the next frame at most this
    /// long (`docs/durability.md`, "When the writer falls behind";
    /// `uring-buffered` writes frames exactly and holds nothing).
    #[serde(default = "default_max_latency_ns")]
    pub max_latency_ns: u64,
    /// Nice value of the flush thread (lower priority than the writer).
    pub flusher_nice: i32,
    /// File name prefix.
    pub prefix: String,
    /// Keep up to this many raw `write()` latencies, and as many raw
    /// `record()` latencies (for the bench and `--timeline`).
    pub keep_write_samples: usize,
    /// Real-time options.
    pub rt: RtConfig,
    /// The file pool (with [`Alloc::Pool`]).
    pub pool: PoolConfig,
    /// Flight-recorder mode (ring mode only); `None`: record everything.
    pub flight: Option<FlightConfig>,
    /// The records are lines of text without their newline: the files say
    /// so ([`crate::format::FLAG_LINES`]), so an export can put the line
    /// ends back.
    #[serde(default)]
    pub lines: bool,
    /// Where the writer thread (ring mode) and the flush thread mark their
    /// operations for a tracer (a tracefs instance's `trace_marker`, opened
    /// by the caller); `None`, the default: no marks. Never marked on the
    /// producer's path (inline mode's writer runs there, so it does not
    /// mark). Not part of the stored configuration.
    #[serde(skip)]
    pub trace_marker: Option<TraceMarker>,
    /// The write path's back-end. Left out of the JSON (and so of the
    /// digest) when buffered, so files of earlier versions keep theirs.
    #[serde(default, skip_serializing_if = "Io::is_buffered")]
    pub io: Io,
    /// The back-ends other than buffered: the aligned gathering buffer,
    /// bytes (a power of two, a multiple of the device's logical block
    /// size; default [`DEFAULT_IO_BLOCK`], 1 MiB).
    #[serde(
        default = "default_io_block",
        skip_serializing_if = "is_default_io_block"
    )]
    pub io_block: u64,
    /// The io_uring back-ends: writes in flight and registered buffers of
    /// `io_block` bytes (1 ..= 64; default [`DEFAULT_IO_DEPTH`]).
    #[serde(
        default = "default_io_depth",
        skip_serializing_if = "is_default_io_depth"
    )]
    pub io_depth: u32,
    /// A loop recording's disk budget and the flight recorder's event
    /// limit ([`Retention`]); left out of the JSON when no limit is set.
    #[serde(default, skip_serializing_if = "Retention::is_off")]
    pub retention: Retention,
    /// The records' layout ([`crate::layout`]): its canonical text, stored
    /// as the first frame of every file (format version 6,
    /// [`crate::format::FLAG_LAYOUT`]); readers decode the records by it.
    /// A record of another size is still recorded, and counted
    /// ([`crate::Summary::layout_misfits`]). `None`, the default: no
    /// layout, the files stay as before. Left out of the JSON (and so of
    /// the digest) when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<String>,
}

/// An open `trace_marker` file: [`TraceMarker::mark`] writes one short
/// line to it with one `write()` from a stack buffer, no allocation.
///
/// Design choice: the caller opens the file once (the engine never looks
/// for tracefs) and shares it between the threads that mark; marks are
/// best effort (an error is ignored: tracing must never fail a recording)
/// and cut at [`TraceMarker::MAX_LEN`] bytes. Two configurations compare
/// equal whatever their markers: a marker changes nothing that is
/// recorded.
#[derive(Clone, Debug)]
pub struct TraceMarker(std::sync::Arc<std::fs::File>);

impl TraceMarker {
    /// The longest mark, bytes (longer ones are cut).
    pub const MAX_LEN: usize = 120;

    /// Wraps an open `trace_marker` file.
    pub fn new(file: std::fs::File) -> TraceMarker {
        TraceMarker(std::sync::Arc::new(file))
    }

    /// Writes `args` as one mark (`begin flush sfr 2097152@0`); see
    /// `docs/explain.md` for the words a tracer reads.
    pub fn mark(&self, args: fmt::Arguments<'_>) {
        struct Buf {
            b: [u8; TraceMarker::MAX_LEN],
            n: usize,
        }
        impl fmt::Write for Buf {
            fn write_str(&mut self, s: &str) -> fmt::Result {
                let k = s.len().min(self.b.len() - self.n);
                self.b[self.n..self.n + k].copy_from_slice(&s.as_bytes()[..k]);
                self.n += k;
                Ok(())
            }
        }
        let mut buf = Buf {
            b: [0; TraceMarker::MAX_LEN],
            n: 0,
        };
        let _ = fmt::Write::write_fmt(&mut buf, args);
        let _ = rtrec_sys::write_once(&*self.0, &buf.b[..buf.n]);
    }
}

impl PartialEq for TraceMarker {
    fn eq(&self, _: &TraceMarker) -> bool {
        true
    }
}

impl Eq for TraceMarker {}

/// The default of [`Config::max_latency_ns`]: 50 ms (a 1 kHz source of
/// 64-byte records then fills frames of 50 records: about 3 % overhead).
pub const DEFAULT_MAX_LATENCY_NS: u64 = 50_000_000;

fn default_max_latency_ns() -> u64 {
    DEFAULT_MAX_LATENCY_NS
}

impl Default for Config {
    /// The best design we know: ring + file pool + window flush every 2 MiB.
    fn default() -> Self {
        Config {
            mode: Mode::Ring,
            alloc: Alloc::Pool,
            flush: Flush::Window,
            flush_every: 2 * MIB,
            sync_every_ns: DEFAULT_SYNC_EVERY_NS,
            framing: Framing::Framed,
            file_size: sizing::DEFAULT_FILE_SIZE,
            file_size_basis: sizing::FileSizeBasis::Given,
            max_record: MIB as usize,
            ring_bytes: sizing::DEFAULT_RING_BYTES,
            on_full: OnFull::Drop,
            writer_poll_us: 1000,
            max_latency_ns: DEFAULT_MAX_LATENCY_NS,
            flusher_nice: 10,
            prefix: "rec".into(),
            keep_write_samples: 0,
            rt: RtConfig::default(),
            pool: PoolConfig::default(),
            flight: None,
            lines: false,
            trace_marker: None,
            io: Io::Buffered,
            io_block: DEFAULT_IO_BLOCK,
            io_depth: DEFAULT_IO_DEPTH,
            retention: Retention::default(),
            layout: None,
        }
    }
}

/// The machine's memory, bytes (`MemTotal` of `/proc/meminfo`); `None`
/// when it cannot be read.
fn mem_total() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// Checks a file name prefix: printable ASCII, no `/`, not starting with
/// `.`, so a file can neither leave the directory nor hide in it. The one
/// rule, for [`Config::validate`] and the C API.
///
/// # Errors
///
/// [`ConfigError::BadPrefix`].
pub fn check_prefix(prefix: &str) -> Result<(), ConfigError> {
    if prefix.is_empty()
        || prefix.starts_with('.')
        || prefix.contains(['/', '\0'])
        || !prefix.chars().all(|c| c.is_ascii_graphic())
    {
        return Err(ConfigError::BadPrefix(prefix.escape_debug().to_string()));
    }
    Ok(())
}

/// Checks the writer thread's SCHED_FIFO priority (1–99). The one rule,
/// for [`Config::validate`] and the C API.
///
/// # Errors
///
/// [`ConfigError::BadPriority`].
pub fn check_writer_priority(priority: i32) -> Result<(), ConfigError> {
    if !crate::rt::PRIORITIES.contains(&priority) {
        return Err(ConfigError::BadPriority(priority));
    }
    Ok(())
}

impl From<&Config> for io::Settings {
    /// What the back-ends read of `c`: they take this, not the `Config`,
    /// so that `config` may ask their rows for their rules (`io::check`)
    /// without an import circle.
    fn from(c: &Config) -> io::Settings {
        io::Settings {
            io: c.io,
            mode: c.mode,
            framing: c.framing,
            alloc: c.alloc,
            io_block: c.io_block,
            io_depth: c.io_depth,
        }
    }
}

impl Config {
    /// The flags every file header of this configuration starts with (the
    /// pool adds its own when it hands a file over).
    pub(crate) fn header_flags(&self) -> u32 {
        let lines = if self.lines { FLAG_LINES } else { 0 };
        let looped = if self.retention.loops() { FLAG_LOOP } else { 0 };
        let layout = if self.layout.is_some() {
            FLAG_LAYOUT
        } else {
            0
        };
        lines | looped | layout
    }

    /// The most bytes a record of `len` can take in the file (packed: a
    /// frame of its own; usually it shares one and takes `len` + 1 or 2).
    pub fn stored_len(&self, len: usize) -> u64 {
        match self.framing {
            Framing::Framed => framed_len(len) as u64,
            Framing::Packed => packed_len(len) as u64,
            Framing::Raw => len as u64,
        }
    }

    /// Bytes of each file that records can use (header and the closing
    /// frames are reserved).
    pub fn usable_file_bytes(&self) -> u64 {
        self.usable_bytes_of(self.file_size)
    }

    /// Bytes that records can use in a file of `file_size` bytes (header
    /// and the closing frames are reserved): [`Config::usable_file_bytes`]
    /// for a file of another size than the recording's.
    pub fn usable_bytes_of(&self, file_size: u64) -> u64 {
        match self.framing {
            Framing::Framed | Framing::Packed => file_size.saturating_sub(RESERVED_BYTES),
            Framing::Raw => file_size,
        }
    }

    /// What the sizing rules give for this configuration and `workload`
    /// (see [`crate::sizing`]): file size, ring capacity and, with the
    /// flight recorder, the pre-trigger window. The caller decides which of
    /// its fields to take; `rtrec record` and the C API take each one the
    /// user did not set.
    ///
    /// The auto ring's cap is [`sizing::ring_cap`] of this machine's memory
    /// (`MemTotal` in `/proc/meminfo`).
    pub fn sizes_for(&self, workload: &Workload) -> Sizes {
        let spans = self.flight.as_ref().map(|f| Spans {
            pre_ns: f.pre_ns,
            post_ns: f.post_ns,
        });
        sizing::sizes(
            workload,
            self.max_record,
            self.stored_len(self.max_record),
            spans,
            sizing::ring_cap(mem_total()),
        )
    }

    /// Checks values against each other, then the rules of the chosen
    /// back-end's row (`io/NAME.rs`); no I/O.
    ///
    /// # Errors
    ///
    /// The first rule broken, as a [`ConfigError`] variant.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.flush != Flush::None && self.flush_every == 0 {
            return Err(ConfigError::FlushEveryZero);
        }
        check_prefix(&self.prefix)?;
        if let Some(p) = self.rt.writer_priority {
            check_writer_priority(p)?;
        }
        if self.max_record == 0 {
            return Err(ConfigError::MaxRecordZero);
        }
        if self.max_record as u64 > MAX_PAYLOAD as u64 {
            return Err(ConfigError::RecordTooLarge {
                max: MAX_PAYLOAD as u64,
            });
        }
        if self.stored_len(self.max_record) > self.usable_file_bytes() {
            return Err(ConfigError::RecordOverFile {
                max_record: self.max_record,
                file_size: self.file_size,
            });
        }
        if self.mode == Mode::Ring && self.ring_bytes < ENTRY_HEADER_LEN + self.max_record {
            return Err(ConfigError::RingTooSmall {
                ring_bytes: self.ring_bytes,
                max_record: self.max_record,
            });
        }
        if self.alloc == Alloc::Pool && self.framing == Framing::Raw {
            return Err(ConfigError::RawWithPool);
        }
        if self.alloc == Alloc::Pool && self.pool.files == 0 {
            return Err(ConfigError::EmptyPool);
        }
        if let Some(f) = &self.flight {
            if self.mode != Mode::Ring {
                return Err(ConfigError::FlightNeedsRing);
            }
            if self.framing == Framing::Raw {
                return Err(ConfigError::FlightNeedsFraming);
            }
            if f.pre_bytes < (ENTRY_HEADER_LEN + self.max_record) as u64 {
                return Err(ConfigError::WindowTooSmall(f.pre_bytes));
            }
        }
        self.check_retention()?;
        self.check_layout()?;
        if self.writer_poll_us == 0 || self.writer_poll_us > 1_000_000 {
            return Err(ConfigError::BadPollInterval);
        }
        if self.max_latency_ns == 0 || self.max_latency_ns > 60_000_000_000 {
            return Err(ConfigError::BadMaxLatency);
        }
        io::check(&io::Settings::from(self))?;
        Ok(())
    }

    /// [`Config::validate`]'s rules of [`Retention`]: a loop needs frames
    /// and is not the flight recorder's (events have `keep_events`), which
    /// needs the flight recorder.
    fn check_retention(&self) -> Result<(), ConfigError> {
        let r = &self.retention;
        if r.loops() && self.flight.is_some() {
            return Err(ConfigError::LoopInFlight);
        }
        if r.loops() && !self.framing.has_frames() {
            return Err(ConfigError::LoopNeedsFraming);
        }
        if r.keep_events > 0 && self.flight.is_none() {
            return Err(ConfigError::KeepEventsNeedsFlight);
        }
        if r.unshipped_headroom.is_some() && r.keep_bytes == 0 && r.keep_files == 0 {
            return Err(ConfigError::HeadroomNeedsBudget);
        }
        Ok(())
    }

    /// [`Config::validate`]'s rules of the layout: it parses as stored
    /// ([`Layout::parse_stored`](crate::layout::Layout::parse_stored)), is
    /// already canonical (what the files store is what was checked), and
    /// needs frames to be stored in.
    fn check_layout(&self) -> Result<(), ConfigError> {
        let Some(text) = &self.layout else {
            return Ok(());
        };
        let l = crate::layout::Layout::parse_stored(text).map_err(ConfigError::BadLayout)?;
        if l.canonical() != *text {
            return Err(ConfigError::BadLayout(format!(
                "layout '{text}' is not in its canonical form '{}'",
                l.canonical()
            )));
        }
        if !self.framing.has_frames() {
            return Err(ConfigError::LayoutNeedsFraming);
        }
        Ok(())
    }

    /// The layout's record size, when there is a valid layout.
    pub fn layout_size(&self) -> Option<usize> {
        let text = self.layout.as_deref()?;
        crate::layout::Layout::parse_stored(text)
            .ok()
            .map(|l| l.size())
    }

    /// A 64-bit FNV-1a digest of the configuration's JSON form, stored in
    /// every file header so a reader can tell which settings wrote it.
    /// The form is the pretty-printed one `record --json` writes: one
    /// serialiser of the configuration instead of two (a compact one only
    /// for this took the board's record-only binary past its 1 MB budget,
    /// docs/embedded.md). Nothing compares digests of different rtrec
    /// versions.
    pub fn digest(&self) -> u64 {
        let json = serde_json::to_vec_pretty(self).unwrap_or_default();
        json.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
            (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_that_could_leave_or_hide_from_the_directory_is_refused() {
        for bad in ["../x", "a/b", ".hidden", ""] {
            let c = Config {
                prefix: bad.into(),
                ..Config::default()
            };
            assert!(c.validate().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn direct_io_is_refused_for_files_that_grow_while_recording() {
        for alloc in [Alloc::Append, Alloc::FallocateKeepSize] {
            let c = Config {
                io: Io::Direct,
                alloc,
                ..Config::default()
            };
            assert!(matches!(
                c.validate(),
                Err(ConfigError::BackendRule { io: "direct", .. })
            ));
        }
        let c = Config {
            io: Io::Direct,
            ..Config::default()
        };
        c.validate().unwrap();
        // Buffered stays out of the JSON: digests of earlier files hold.
        assert!(!serde_json::to_string(&Config::default())
            .unwrap()
            .contains("\"io\""));
        assert_ne!(c.digest(), Config::default().digest());
    }

    #[test]
    fn the_back_ends_settings_of_the_default_configuration_are_their_defaults() {
        assert_eq!(
            io::Settings::from(&Config::default()),
            io::Settings::default()
        );
    }

    #[test]
    fn a_record_larger_than_the_file_is_refused() {
        let c = Config {
            file_size: 1 << 20,
            max_record: 2 << 20,
            ..Config::default()
        };
        assert!(matches!(
            c.validate(),
            Err(ConfigError::RecordOverFile { .. })
        ));
    }

    #[test]
    fn the_strictest_limit_wins_and_a_loop_needs_frames_and_no_flight() {
        let r = Retention {
            keep_bytes: 10 << 20,
            keep_files: 3,
            ..Retention::default()
        };
        assert_eq!(r.kept_files(1 << 20), Some(3));
        assert_eq!(r.kept_files(4 << 20), Some(2));
        assert_eq!(r.kept_files(64 << 20), Some(1));
        let age = Retention {
            keep_for_ns: 1,
            ..Retention::default()
        };
        assert_eq!(age.kept_files(1), None);
        assert!(age.loops());
        let mut c = Config {
            retention: r,
            ..Config::default()
        };
        c.validate().unwrap();
        assert_ne!(c.header_flags() & FLAG_LOOP, 0);
        c.framing = Framing::Raw;
        c.alloc = Alloc::Zero;
        assert_eq!(c.validate(), Err(ConfigError::LoopNeedsFraming));
        c.framing = Framing::Framed;
        c.flight = Some(FlightConfig::default());
        assert_eq!(c.validate(), Err(ConfigError::LoopInFlight));
        c.retention = Retention {
            keep_events: 2,
            ..Retention::default()
        };
        c.validate().unwrap();
        c.flight = None;
        assert_eq!(c.validate(), Err(ConfigError::KeepEventsNeedsFlight));
        c.retention = Retention {
            keep_for_ns: 1,
            unshipped_headroom: Some(0),
            ..Retention::default()
        };
        assert_eq!(c.validate(), Err(ConfigError::HeadroomNeedsBudget));
        c.retention.keep_files = 2;
        c.validate().unwrap();
        // No limit: the JSON (and so the digest) is as before.
        assert!(!serde_json::to_string(&Config::default())
            .unwrap()
            .contains("retention"));
    }

    #[test]
    fn the_default_configuration_is_valid_and_digests_differ() {
        let a = Config::default();
        a.validate().unwrap();
        let b = Config {
            flush: Flush::Sfr,
            ..Config::default()
        };
        assert_ne!(a.digest(), b.digest());
    }
}
