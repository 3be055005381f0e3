//! `rtrec_config`: the C mirror of [`rtrec_engine::Config`], its strategy
//! enums, and the conversion to the engine's configuration.
//!
//! Enum fields are plain `int`s holding one of the `RTREC_*` values, so
//! that a value this library does not know is an `-EINVAL`, not undefined
//! behaviour. The values are ABI: they are never renumbered, new ones are
//! appended.
//!
//! Zero means default: every field's zero value asks for the library's
//! default, so `rtrec_config c = { .struct_size = sizeof c };` is a
//! complete configuration (struct version 6; before it, `writer_cpu` 0
//! pinned to CPU 0 and `alloc` 0 was append).
#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_int, CStr};
#[cfg(test)]
use std::mem::offset_of;
use std::mem::size_of;

use rtrec_engine::config::{check_prefix, check_writer_priority};
use rtrec_engine::settle::SettleError;
use rtrec_engine::{
    Alloc, Config, FlightConfig, Flush, Framing, Io, Mode, OnFull, OnPoolEmpty, PoolConfig,
    Retention, RtConfig, Workload, DEFAULT_IO_BLOCK, DEFAULT_IO_DEPTH,
};

use crate::error::{guard, read_struct, write_struct, Extensible, Fail};

/// Who calls `write()` (`rtrec_config.mode`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum rtrec_mode {
    /// The recording thread copies each record into a pre-allocated
    /// lock-free ring and a writer thread calls `write()`;
    /// `rtrec_recorder_record()` never blocks. The default.
    RTREC_MODE_RING = 0,
    /// The recording thread calls `write()` itself (the engine's inline
    /// mode). `RTREC_MODE_DIRECT`, its first name, is kept as an alias.
    RTREC_MODE_INLINE = 1,
}

/// How file space is obtained (`rtrec_config.alloc`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum rtrec_alloc {
    /// The library's default: `RTREC_ALLOC_POOL` (raw framing: zero).
    RTREC_ALLOC_DEFAULT = 0,
    /// Empty file, every write appends (allocation happens inside `write()`).
    RTREC_ALLOC_APPEND = 1,
    /// `fallocate()` the whole file first; truncated at the end.
    RTREC_ALLOC_FALLOCATE = 2,
    /// `fallocate(FALLOC_FL_KEEP_SIZE)`: blocks reserved, the size grows
    /// with every write.
    RTREC_ALLOC_FALLOCATE_KEEP_SIZE = 3,
    /// Pre-allocate and write zeros once before recording, so nothing is
    /// allocated or converted while recording.
    RTREC_ALLOC_ZERO = 4,
    /// Take files from a pool prepared while idle (zero-filled, or recycled
    /// from finished recordings): nothing is allocated when a recording
    /// starts, nothing truncated when it ends. Framed files only. The
    /// default.
    RTREC_ALLOC_POOL = 5,
}

/// How written data are pushed to storage, always from a background thread
/// (`rtrec_config.flush`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum rtrec_flush {
    /// The library's default: `RTREC_FLUSH_WINDOW`.
    RTREC_FLUSH_DEFAULT = 0,
    /// Never flush while recording; the kernel decides.
    RTREC_FLUSH_NONE = 1,
    /// `fdatasync()` every `flush_every` bytes.
    RTREC_FLUSH_FDATASYNC = 2,
    /// `fsync()` every `flush_every` bytes.
    RTREC_FLUSH_FSYNC = 3,
    /// `sync_file_range(WRITE)` on each new `flush_every` bytes.
    RTREC_FLUSH_SFR = 4,
    /// Bounded trailing window of `sync_file_range()` and
    /// `posix_fadvise(DONTNEED)`: dirty and cached memory stay bounded. The
    /// default.
    RTREC_FLUSH_WINDOW = 5,
}

/// `rtrec_config.pin`: pin the writer thread to `writer_cpu`.
pub const RTREC_PIN_WRITER: u32 = 1;
/// `rtrec_config.pin`: pin the flush thread to `flusher_cpu`.
pub const RTREC_PIN_FLUSHER: u32 = 2;
/// `rtrec_config.sync_every_ns`: make records durable only when a file is
/// closed (no periodic `fdatasync`).
pub const RTREC_SYNC_ON_CLOSE: u64 = u64::MAX;

/// How records are laid out in the file (`rtrec_config.framing`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum rtrec_framing {
    /// A header plus one CRC-checked frame per record; losses and the end
    /// are stored in the file (`rtrec verify` checks it). The default.
    RTREC_FRAMING_FRAMED = 0,
    /// The bytes exactly as given; counters go to a `.meta.json` sidecar.
    RTREC_FRAMING_RAW = 1,
    /// A header plus frames that each carry many small records (a 1- or
    /// 2-byte length each, one CRC per frame): 65 bytes on disk for a
    /// 64-byte record instead of 104. A frame is written when full (16 KiB)
    /// and at the latest `max_latency_ns` after its first record; records
    /// waiting in it are lost by a kill or power cut.
    RTREC_FRAMING_PACKED = 2,
}

/// What the writer does when it needs a file and the pool has none ready
/// (`rtrec_config.pool_on_empty`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum rtrec_pool_empty {
    /// Pre-allocate a new file with `fallocate()` on the writer thread,
    /// counted in `rtrec_summary.pool_fallbacks`. The default.
    RTREC_POOL_EMPTY_FALLOCATE = 0,
    /// Wait on the writer thread (never the recording thread) until a
    /// prepared file appears (a background refiller is started if none
    /// runs); the ring absorbs the wait or counts drops. Counted in
    /// `rtrec_summary.pool_waits` and `pool_wait_ns`.
    RTREC_POOL_EMPTY_WAIT = 1,
}

/// What `rtrec_recorder_record()` does when the ring is full
/// (`rtrec_config.on_full`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum rtrec_on_full {
    /// Drop the record, count it and store the loss in the file; the call
    /// never waits. The default: real-time safe.
    RTREC_ON_FULL_DROP = 0,
    /// Wait until the writer thread has made room (spinning briefly, then
    /// sleeping in short steps); counted in the summary's `ring_waits`. For
    /// a producer that can wait (reading a pipe or a file), never for a
    /// real-time thread: waiting makes system calls.
    RTREC_ON_FULL_BLOCK = 1,
}

/// How the writer gets data to the file (`rtrec_config.io`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum rtrec_io {
    /// `write()` into the page cache; the flush thread writes back. The
    /// default.
    RTREC_IO_BUFFERED = 0,
    /// `O_DIRECT` writes of whole aligned blocks (`io_block`); needs
    /// `RTREC_ALLOC_POOL`, `RTREC_ALLOC_ZERO` or `RTREC_ALLOC_FALLOCATE`.
    RTREC_IO_DIRECT = 1,
    /// `RTREC_IO_DIRECT` submitted through io_uring with up to `io_depth`
    /// writes in flight. Falls back to buffered writes (with a warning)
    /// when the kernel refuses io_uring.
    RTREC_IO_URING = 2,
    /// io_uring over the page cache (no `O_DIRECT`, any allocation mode).
    RTREC_IO_URING_BUFFERED = 3,
}

/// Each C value with the engine's, in documentation order. A test checks
/// that every engine strategy has one: a new engine strategy needs a line
/// here and a new enum value above.
const MODES: &[(rtrec_mode, Mode)] = &[
    (rtrec_mode::RTREC_MODE_RING, Mode::Ring),
    (rtrec_mode::RTREC_MODE_INLINE, Mode::Inline),
];
const ALLOCS: &[(rtrec_alloc, Alloc)] = &[
    (rtrec_alloc::RTREC_ALLOC_APPEND, Alloc::Append),
    (rtrec_alloc::RTREC_ALLOC_FALLOCATE, Alloc::Fallocate),
    (
        rtrec_alloc::RTREC_ALLOC_FALLOCATE_KEEP_SIZE,
        Alloc::FallocateKeepSize,
    ),
    (rtrec_alloc::RTREC_ALLOC_ZERO, Alloc::Zero),
    (rtrec_alloc::RTREC_ALLOC_POOL, Alloc::Pool),
];
const FLUSHES: &[(rtrec_flush, Flush)] = &[
    (rtrec_flush::RTREC_FLUSH_NONE, Flush::None),
    (rtrec_flush::RTREC_FLUSH_FDATASYNC, Flush::Fdatasync),
    (rtrec_flush::RTREC_FLUSH_FSYNC, Flush::Fsync),
    (rtrec_flush::RTREC_FLUSH_SFR, Flush::Sfr),
    (rtrec_flush::RTREC_FLUSH_WINDOW, Flush::Window),
];
const FRAMINGS: &[(rtrec_framing, Framing)] = &[
    (rtrec_framing::RTREC_FRAMING_FRAMED, Framing::Framed),
    (rtrec_framing::RTREC_FRAMING_RAW, Framing::Raw),
    (rtrec_framing::RTREC_FRAMING_PACKED, Framing::Packed),
];
const ON_FULLS: &[(rtrec_on_full, OnFull)] = &[
    (rtrec_on_full::RTREC_ON_FULL_DROP, OnFull::Drop),
    (rtrec_on_full::RTREC_ON_FULL_BLOCK, OnFull::Block),
];
/// The back-ends: one line per value of [`Io::ALL`], in its order, each
/// `RTREC_IO_` and the back-end's name (a test holds all three, and the
/// header's enum, to it).
const IOS: &[(rtrec_io, Io)] = &[
    (rtrec_io::RTREC_IO_BUFFERED, Io::Buffered),
    (rtrec_io::RTREC_IO_DIRECT, Io::Direct),
    (rtrec_io::RTREC_IO_URING, Io::Uring),
    (rtrec_io::RTREC_IO_URING_BUFFERED, Io::UringBuffered),
];
const POOL_EMPTIES: &[(rtrec_pool_empty, OnPoolEmpty)] = &[
    (
        rtrec_pool_empty::RTREC_POOL_EMPTY_FALLOCATE,
        OnPoolEmpty::Fallocate,
    ),
    (rtrec_pool_empty::RTREC_POOL_EMPTY_WAIT, OnPoolEmpty::Wait),
];

/// The engine value of C value `v` of field `field`.
fn from_c<C: Copy + Into<c_int>, E: Copy>(
    table: &[(C, E)],
    v: c_int,
    field: &str,
) -> Result<E, Fail> {
    table.iter().find(|(c, _)| (*c).into() == v).map(|(_, e)| *e).ok_or_else(|| {
        Fail::inval(format!("rtrec_config.{field} is {v}, which is not one of the RTREC_* values of this library"))
    })
}

/// The C value of engine value `e`.
fn to_c<C: Copy + Into<c_int>, E: Copy + PartialEq + std::fmt::Display>(
    table: &[(C, E)],
    e: E,
) -> Result<c_int, Fail> {
    table
        .iter()
        .find(|(_, x)| *x == e)
        .map(|(c, _)| (*c).into())
        .ok_or_else(|| {
            Fail::new(
                libc::ENOTSUP,
                format!("the engine strategy '{e}' has no C value in this library"),
            )
        })
}

macro_rules! into_c_int {
    ($($t:ty),+) => {$(
        impl From<$t> for c_int {
            fn from(v: $t) -> c_int {
                v as c_int
            }
        }
    )+};
}
into_c_int!(
    rtrec_mode,
    rtrec_alloc,
    rtrec_flush,
    rtrec_framing,
    rtrec_pool_empty,
    rtrec_on_full,
    rtrec_io
);

/// How a recording is written: the C mirror of the engine's configuration.
///
/// Zero means default: set `struct_size` and what you need, leave the rest
/// 0 (`rtrec_config_init()` writes the defaults out explicitly, for
/// display):
///
/// ```c
/// rtrec_config cfg = { .struct_size = sizeof cfg, .max_record = 4096 };
/// ```
///
/// The struct only grows at its end; see "Struct versions" in
/// `docs/c-api.md`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct rtrec_config {
    /// `sizeof(rtrec_config)` as the caller was compiled: set it before
    /// any call. The library reads and writes only this many bytes.
    pub struct_size: usize,
    /// Who calls `write()`: an `rtrec_mode` value.
    pub mode: c_int,
    /// How file space is obtained: an `rtrec_alloc` value. 0:
    /// `RTREC_ALLOC_DEFAULT`.
    pub alloc: c_int,
    /// How data are flushed while recording: an `rtrec_flush` value. 0:
    /// `RTREC_FLUSH_DEFAULT`.
    pub flush: c_int,
    /// File layout: an `rtrec_framing` value.
    pub framing: c_int,
    /// Flush granularity in bytes. 0: the default, 2 MiB.
    pub flush_every: u64,
    /// Maximum bytes per file (the pre-allocation size); a recording that
    /// grows past it continues in the next file. 0 (the default): sized by
    /// the engine's rules, as `rtrec record` sizes it (64 MiB; in flight
    /// mode, one event of 1024 records).
    pub file_size: u64,
    /// Largest record `rtrec_recorder_record()` accepts, in bytes. 0: the
    /// default, 1 MiB.
    pub max_record: usize,
    /// Capacity of the ring between the recording thread and the writer
    /// thread, in bytes (ring mode). 0 (the default): auto, the rule of
    /// `rtrec record --ring auto` (`rtrec_engine::sizing::auto_ring`); this
    /// API is not told the data rate, so the rule gives its size for an
    /// unknown rate (16 MiB, and at least 4 records of `max_record`). Give
    /// a size for a known rate and stall: rate × stall × 4 absorbs it.
    pub ring_bytes: usize,
    /// How long the writer thread sleeps when the ring is empty, in
    /// microseconds (1 .. 1,000,000). 0: the default, 1000.
    pub writer_poll_us: u64,
    /// SCHED_FIFO priority of the writer thread (1..99); 0: normal
    /// scheduling.
    pub writer_priority: c_int,
    /// CPU the writer thread is pinned to, used only when `pin` has
    /// `RTREC_PIN_WRITER` (so 0, the default, is "not pinned"; a non-zero
    /// CPU without the flag is `-EINVAL`).
    pub writer_cpu: c_int,
    /// CPU the flush thread is pinned to, used only when `pin` has
    /// `RTREC_PIN_FLUSHER` (likewise).
    pub flusher_cpu: c_int,
    /// Nice value of the flush thread (-20 .. 19). 0: the default, 10 (nice
    /// 0 itself is not offered; 1 or -1 are).
    pub flusher_nice: c_int,
    /// File name prefix; NULL: "rec". Copied by `rtrec_recorder_create()`.
    /// A recording's files are `PREFIX-YYYYmmddTHHMMSS.mmmZ[.N]-NNNN.rtr`:
    /// the UTC time the recording started, to the millisecond (fixed
    /// width, so names sort by time); `.N` only when another recording of
    /// the directory has that name already or claims it in the same
    /// millisecond (N the next free number from 1); then the file's number
    /// from 0000 (four digits, more after 9999). With
    /// `RTREC_FRAMING_RAW` the files end in `.raw`, and the sidecar is the
    /// name up to `[.N]` followed by `.meta.json`. Flight-recorder events
    /// are `PREFIX-YYYYmmddTHHMMSS.mmmZ[.N]-evNNNNN-NNNN.rtr`, NNNNN the
    /// event's number from 00000. `rtrec_summary.file_names` lists the
    /// names a recording made.
    pub prefix: *const c_char,
    /// Files the pool of the recording directory is created with and
    /// topped up to (`RTREC_ALLOC_POOL`). 0: the default, 2. An existing
    /// pool keeps its own count and file size.
    pub pool_files: u32,
    /// What to do when the pool has no file ready: an `rtrec_pool_empty`
    /// value. Default `RTREC_POOL_EMPTY_FALLOCATE`.
    pub pool_on_empty: c_int,
    /// 1: top the pool up while recording, on a nice-19, idle-I/O-class
    /// thread; 0 (the default): not while recording.
    pub pool_refill_while_recording: c_int,
    /// 1: top the pool up in `rtrec_recorder_finish()` / `abort()`, once
    /// the recording is closed; 0 (the default): no.
    pub pool_refill_on_finish: c_int,
    /// 1: flight recorder (ring mode, framed files): records wait in a
    /// bounded pre-trigger window in memory and only
    /// `rtrec_recorder_trigger()` writes them, one file per event; 0 (the
    /// default): record everything. The `flight_*` fields below are used
    /// only when this is 1.
    pub flight_enabled: c_int,
    /// Reserved: must be 0 (it keeps the struct free of hidden padding).
    pub reserved0: u32,
    /// Flight recorder: keep at most this long a span before a trigger, ns.
    /// 0: the default, 2 s.
    pub flight_pre_ns: u64,
    /// Flight recorder: keep at most this many bytes before a trigger
    /// (window storage, including 24 bytes per record; it must hold one
    /// record of `max_record` bytes); the smaller bound wins. Allocated
    /// once by `rtrec_recorder_create()`. 0: sized by the engine's rules
    /// (64 MiB, as `rtrec record` sizes it when the rate is unknown).
    pub flight_pre_bytes: u64,
    /// Flight recorder: record this long after a trigger, ns. 0: the
    /// default, 5 s.
    pub flight_post_ns: u64,
    /// `RTREC_FRAMING_PACKED`: the longest a record waits in an open frame
    /// before the frame is written, ns (at most 60 s). 0 (the default): 50
    /// ms. In ring mode with `RTREC_IO_BUFFERED`, `RTREC_IO_DIRECT` or
    /// `RTREC_IO_URING` (framed or raw) also the longest a frame's partial
    /// last block waits for the next frame to write it whole.
    pub max_latency_ns: u64,
    /// When the ring is full (ring mode): an `rtrec_on_full` value.
    /// Default `RTREC_ON_FULL_DROP`.
    pub on_full: c_int,
    /// Reserved: must be 0 (it keeps the struct free of hidden padding).
    pub reserved1: u32,
    /// The durability interval, ns: the flush thread makes written records
    /// durable (`fdatasync`) at least this often and publishes the durable
    /// point (`rtrec_summary.durable_seq`). 0: the default, 1 s;
    /// `RTREC_SYNC_ON_CLOSE`: only when a file is closed.
    pub sync_every_ns: u64,
    /// The write back-end: an `rtrec_io` value. 0: the default,
    /// `RTREC_IO_BUFFERED`.
    pub io: c_int,
    /// `RTREC_IO_URING`, `RTREC_IO_URING_BUFFERED`: writes in flight, each
    /// from its own registered buffer of `io_block` bytes (1 ..= 64). 0:
    /// the default, 4.
    pub io_depth: u32,
    /// The back-ends other than buffered: the gathering buffer, bytes (a
    /// power of two, 4 KiB ..= 64 MiB, a multiple of the device's logical
    /// block size). 0: the default, 1 MiB.
    pub io_block: u64,
    /// Which threads are pinned to a CPU: `RTREC_PIN_WRITER` (to
    /// `writer_cpu`) and `RTREC_PIN_FLUSHER` (to `flusher_cpu`), or'ed. 0:
    /// none, the default.
    pub pin: u32,
    /// Reserved: must be 0.
    pub reserved2: u32,
    /// Loop recording (struct version 7): keep the loop's finished files,
    /// and its own earlier loop recordings (the same `prefix`), within
    /// this many bytes (the newest `max(1, keep_bytes / file_size)` files'
    /// worth); older ones are retired at the start and at a file switch
    /// (recycled into the pool or deleted, on a background thread).
    /// Nothing else in the directory is ever retired; empty earlier
    /// recordings of the loop are removed at its start; a budget larger
    /// than the card is clamped (a warning); a second recorder with a
    /// budget in the same directory gets -EBUSY. 0: no limit. Disk use
    /// stays within the budget + one file + the pool's spare files
    /// (docs/unattended.md, "Disk budget").
    pub keep_bytes: u64,
    /// Loop recording: retire a finished file once its last record is
    /// older than this, ns. 0: no limit.
    pub keep_for_ns: u64,
    /// Loop recording: keep at most this many finished files. 0: no
    /// limit. With `keep_bytes` or `keep_for_ns`, the strictest wins.
    pub keep_files: u32,
    /// Flight recorder: keep the newest this many event recordings (older
    /// ones are retired when a new event starts). 0: all.
    pub keep_events: u32,
    /// The records' layout (struct version 8, library 0.4), a C string in
    /// `rtrec export --layout`'s grammar (`"t:u32,x:f32,y:f32"`, or
    /// Python struct notation `"<Iff"`; docs/export.md): stored with the
    /// recording, so that `rtrec export`, `rtrec info` and the Python
    /// package decode its records without being told again
    /// (docs/format.md, "The layout frame"). A record of another size is
    /// still recorded, and counted. NULL: none (the files stay as a
    /// recording without a layout). Read once, when the recorder is
    /// created; `rtrec_layout_size()` checks a spec first.
    pub layout: *const c_char,
}

// SAFETY: repr(C), `size_t struct_size` first, only integers and a raw
// pointer (every bit pattern valid); one published size, ours.
unsafe impl Extensible for rtrec_config {
    const NAME: &'static str = "rtrec_config";
    /// Version 6 (184 bytes on LP64), where zero means default, and
    /// version 7 (ours). Versions
    /// 0..5 (88 .. 176 bytes) gave some zeros another meaning (`alloc` 0
    /// append, `writer_cpu` 0 CPU 0) and are refused: rebuild against this
    /// header.
    ///
    /// Version 7 (208 bytes) added the retention fields (`keep_bytes` ..
    /// `keep_events`); a version 6 caller gets none (0: no limit).
    /// Version 8 (216 bytes, library 0.4) added `layout`; an older caller
    /// gets none.
    const SIZES: &'static [usize] = &[184, 208, size_of::<rtrec_config>()];
}

/// A C flag (`0` or `1`) as a bool; `-EINVAL` for any other value (kept
/// free for a later meaning).
fn flag_from_c(v: c_int, field: &str) -> Result<bool, Fail> {
    match v {
        0 => Ok(false),
        1 => Ok(true),
        v => Err(Fail::inval(format!(
            "rtrec_config.{field} is {v}; use 1 or 0"
        ))),
    }
}

/// The CPU of a thread whose pin flag is `pinned`; `-EINVAL` for a
/// negative CPU, or a CPU set without its flag (a caller that meant to pin).
fn cpu_from_c(v: c_int, pinned: bool, field: &str, flag: &str) -> Result<Option<usize>, Fail> {
    match (pinned, v) {
        (false, 0) => Ok(None),
        (false, v) => Err(Fail::inval(format!(
            "rtrec_config.{field} is {v} but pin lacks {flag}; set both to pin the thread, or leave {field} 0"
        ))),
        (true, v) if v >= 0 => Ok(Some(v as usize)),
        (true, v) => Err(Fail::inval(format!(
            "rtrec_config.{field} is {v}; use a CPU number (0 or more)"
        ))),
    }
}

/// `v`, or `default` when `v` is 0.
fn or_default<T: PartialEq + Default>(v: T, default: T) -> T {
    if v == T::default() {
        default
    } else {
        v
    }
}

/// A refusal of [`Config::settle`] in the C API's words: the ring's fit
/// in memory names `rtrec_config.ring_bytes`; a rule between fields is
/// the engine's sentence.
fn settle_fail(e: SettleError) -> Fail {
    match e {
        SettleError::RingOverMemory {
            ring_bytes,
            memory_bytes,
        } => Fail::inval(format!(
            "rtrec_config.ring_bytes is {ring_bytes} bytes, more than this machine's memory ({memory_bytes} bytes); use a smaller ring"
        )),
        SettleError::RingOverAddressSpace {
            ring_bytes,
            limit_bytes,
            bits,
        } => Fail::inval(format!(
            "rtrec_config.ring_bytes is {ring_bytes} bytes, more than one allocation of this {bits}-bit process can hold ({limit_bytes} bytes); use a smaller ring"
        )),
        SettleError::RingOverLockedMemory {
            ring_bytes,
            left_bytes,
        } => Fail::inval(format!(
            "rtrec_config.ring_bytes is {ring_bytes} bytes, but this process locks its memory (mlockall) and RLIMIT_MEMLOCK leaves {left_bytes} bytes; use a smaller ring or raise the limit"
        )),
        SettleError::Config(e) => Fail::inval(e.to_string()),
    }
}

impl rtrec_config {
    /// The C form of an engine configuration (`struct_size` is ours).
    pub(crate) fn from_engine(c: &Config) -> Result<rtrec_config, Fail> {
        Ok(rtrec_config {
            struct_size: size_of::<rtrec_config>(),
            mode: to_c(MODES, c.mode)?,
            alloc: to_c(ALLOCS, c.alloc)?,
            flush: to_c(FLUSHES, c.flush)?,
            framing: to_c(FRAMINGS, c.framing)?,
            flush_every: c.flush_every,
            file_size: c.file_size,
            max_record: c.max_record,
            ring_bytes: c.ring_bytes,
            writer_poll_us: c.writer_poll_us,
            writer_priority: c.rt.writer_priority.unwrap_or(0),
            writer_cpu: c.rt.writer_cpu.map_or(0, |c| c as c_int),
            flusher_cpu: c.rt.flusher_cpu.map_or(0, |c| c as c_int),
            flusher_nice: c.flusher_nice,
            prefix: std::ptr::null(),
            pool_files: c.pool.files,
            pool_on_empty: to_c(POOL_EMPTIES, c.pool.on_empty)?,
            pool_refill_while_recording: c.pool.refill_while_recording as c_int,
            pool_refill_on_finish: c.pool.refill_on_finish as c_int,
            flight_enabled: c.flight.is_some() as c_int,
            reserved0: 0,
            // The engine has no flight defaults: 0 until the caller sets
            // them.
            flight_pre_ns: c.flight.as_ref().map_or(0, |f| f.pre_ns),
            flight_pre_bytes: c.flight.as_ref().map_or(0, |f| f.pre_bytes),
            flight_post_ns: c.flight.as_ref().map_or(0, |f| f.post_ns),
            max_latency_ns: c.max_latency_ns,
            on_full: to_c(ON_FULLS, c.on_full)?,
            reserved1: 0,
            sync_every_ns: if c.sync_every_ns == 0 {
                RTREC_SYNC_ON_CLOSE
            } else {
                c.sync_every_ns
            },
            io: to_c(IOS, c.io)?,
            io_depth: c.io_depth,
            io_block: c.io_block,
            pin: c.rt.writer_cpu.map_or(0, |_| RTREC_PIN_WRITER)
                | c.rt.flusher_cpu.map_or(0, |_| RTREC_PIN_FLUSHER),
            reserved2: 0,
            keep_bytes: c.retention.keep_bytes,
            keep_for_ns: c.retention.keep_for_ns,
            keep_files: c.retention.keep_files,
            keep_events: c.retention.keep_events,
            // A pointer the caller owns: the defaults have none.
            layout: std::ptr::null(),
        })
    }

    /// What `rtrec_config_init()` writes: the engine's defaults, with the
    /// sized fields (`file_size`, `ring_bytes`, `flight_pre_bytes`) 0, so
    /// that the engine sizes them from the rest when the recorder is
    /// created.
    fn defaults() -> Result<rtrec_config, Fail> {
        let mut d = rtrec_config::from_engine(&Config::default())?;
        (d.file_size, d.ring_bytes, d.flight_pre_bytes) = (0, 0, 0);
        Ok(d)
    }

    /// The engine configuration, in two named steps: [`Self::converted`]
    /// (each C field checked and turned into the engine's; fields the C
    /// struct does not carry keep the engine's defaults), then the engine's
    /// [`Config::settle`], the step `rtrec record` takes too: the sizes
    /// left 0, the rules between fields and the ring's fit in memory, its
    /// refusals worded here ([`settle_fail`]).
    ///
    /// # Safety
    ///
    /// `prefix` is NULL or a valid C string.
    pub(crate) unsafe fn engine_config(&self) -> Result<Config, Fail> {
        // SAFETY: forwarded from the caller.
        let mut cfg = unsafe { self.converted() }?;
        // 0 asks for the engine's sizing, with an unknown workload (the C
        // API is not told the rate or the count).
        let ring = (cfg.ring_bytes != 0).then_some(cfg.ring_bytes);
        cfg.settle(&Workload::UNKNOWN, ring).map_err(settle_fail)?;
        Ok(cfg)
    }

    /// Step one of [`Self::engine_config`]: every field checked on its own
    /// (an `-EINVAL` names the first bad one, in the order of the checks
    /// below) and converted; 0 is the engine's default, and the sized
    /// fields (`file_size`, `ring_bytes`, `flight_pre_bytes`) stay 0 for
    /// the settling step.
    ///
    /// # Safety
    ///
    /// `prefix` is NULL or a valid C string.
    unsafe fn converted(&self) -> Result<Config, Fail> {
        let d = Config::default();
        let writer_priority = self.writer_priority()?;
        // SAFETY: forwarded from the caller.
        let prefix = unsafe { self.prefix() }?;
        // SAFETY: forwarded from the caller.
        let layout = unsafe { self.layout() }?;
        self.check_reserved_and_pin()?;
        let pool = self.pool()?;
        let flight = self.flight()?;
        Ok(Config {
            mode: from_c(MODES, self.mode, "mode")?,
            alloc: match self.alloc {
                0 => d.alloc,
                v => from_c(ALLOCS, v, "alloc")?,
            },
            flush: match self.flush {
                0 => d.flush,
                v => from_c(FLUSHES, v, "flush")?,
            },
            flush_every: or_default(self.flush_every, d.flush_every),
            sync_every_ns: match self.sync_every_ns {
                0 => d.sync_every_ns,
                RTREC_SYNC_ON_CLOSE => 0,
                v => v,
            },
            framing: from_c(FRAMINGS, self.framing, "framing")?,
            file_size: self.file_size,
            max_record: or_default(self.max_record, d.max_record),
            ring_bytes: self.ring_bytes,
            writer_poll_us: or_default(self.writer_poll_us, d.writer_poll_us),
            max_latency_ns: or_default(self.max_latency_ns, d.max_latency_ns),
            flusher_nice: or_default(self.flusher_nice, d.flusher_nice),
            prefix,
            rt: self.rt(writer_priority)?,
            pool,
            flight,
            on_full: from_c(ON_FULLS, self.on_full, "on_full")?,
            io: from_c(IOS, self.io, "io")?,
            io_depth: match self.io_depth {
                0 => DEFAULT_IO_DEPTH,
                n => n,
            },
            io_block: match self.io_block {
                0 => DEFAULT_IO_BLOCK,
                n => n,
            },
            retention: Retention {
                keep_bytes: self.keep_bytes,
                keep_files: self.keep_files,
                keep_for_ns: self.keep_for_ns,
                keep_events: self.keep_events,
                // The C API has no wider scope: a C recorder's budget
                // covers its own loop recordings only.
                ..Retention::default()
            },
            layout,
            ..d
        })
    }

    /// `layout`: NULL is none; else a spec that parses, stored in its
    /// canonical form (what the files carry is what was checked).
    ///
    /// # Safety
    ///
    /// `layout` is NULL or a valid C string.
    unsafe fn layout(&self) -> Result<Option<String>, Fail> {
        if self.layout.is_null() {
            return Ok(None);
        }
        // SAFETY: non-NULL, and a C string by the caller's contract.
        let spec = unsafe { CStr::from_ptr(self.layout) };
        layout_of(spec).map(|l| Some(l.canonical()))
    }

    /// `writer_priority`: 0 is none, else SCHED_FIFO 1-99.
    fn writer_priority(&self) -> Result<Option<i32>, Fail> {
        match self.writer_priority {
            0 => Ok(None),
            p => check_writer_priority(p).map(|()| Some(p)).map_err(|e| {
                Fail::inval(format!("rtrec_config.writer_priority: {e}; or 0 for none"))
            }),
        }
    }

    /// `prefix`: NULL is the engine's default; else UTF-8 that stays in
    /// the directory.
    ///
    /// # Safety
    ///
    /// `prefix` is NULL or a valid C string.
    unsafe fn prefix(&self) -> Result<String, Fail> {
        if self.prefix.is_null() {
            return Ok(Config::default().prefix);
        }
        // SAFETY: non-NULL, and a C string by the caller's contract.
        let p = unsafe { CStr::from_ptr(self.prefix) };
        let p = p
            .to_str()
            .map_err(|_| Fail::inval("rtrec_config.prefix is not valid UTF-8"))?;
        check_prefix(p).map_err(|e| Fail::inval(format!("rtrec_config.prefix: {e}")))?;
        Ok(p.to_string())
    }

    /// The reserved fields are 0 and `pin` has only the known flags (both
    /// kept free for a later meaning).
    fn check_reserved_and_pin(&self) -> Result<(), Fail> {
        for (name, v) in [
            ("reserved0", self.reserved0),
            ("reserved1", self.reserved1),
            ("reserved2", self.reserved2),
        ] {
            if v != 0 {
                return Err(Fail::inval(format!(
                    "rtrec_config.{name} is {v}; reserved fields must be 0"
                )));
            }
        }
        let known = RTREC_PIN_WRITER | RTREC_PIN_FLUSHER;
        if self.pin & !known != 0 {
            return Err(Fail::inval(format!(
                "rtrec_config.pin is {:#x}; use RTREC_PIN_WRITER and RTREC_PIN_FLUSHER only",
                self.pin
            )));
        }
        Ok(())
    }

    /// The `pool_*` fields.
    fn pool(&self) -> Result<PoolConfig, Fail> {
        Ok(PoolConfig {
            files: or_default(self.pool_files, Config::default().pool.files),
            on_empty: from_c(POOL_EMPTIES, self.pool_on_empty, "pool_on_empty")?,
            refill_while_recording: flag_from_c(
                self.pool_refill_while_recording,
                "pool_refill_while_recording",
            )?,
            refill_on_finish: flag_from_c(self.pool_refill_on_finish, "pool_refill_on_finish")?,
        })
    }

    /// The `flight_*` fields when `flight_enabled` is 1 (a window of 0
    /// bytes is sized when the configuration is settled).
    fn flight(&self) -> Result<Option<FlightConfig>, Fail> {
        let fd = FlightConfig::default();
        Ok(
            flag_from_c(self.flight_enabled, "flight_enabled")?.then_some(FlightConfig {
                pre_ns: or_default(self.flight_pre_ns, fd.pre_ns),
                pre_bytes: self.flight_pre_bytes,
                post_ns: or_default(self.flight_post_ns, fd.post_ns),
            }),
        )
    }

    /// The writer's priority (checked by [`Self::writer_priority`]) and
    /// the CPUs of the threads `pin` pins.
    fn rt(&self, writer_priority: Option<i32>) -> Result<RtConfig, Fail> {
        Ok(RtConfig {
            writer_priority,
            writer_cpu: cpu_from_c(
                self.writer_cpu,
                self.pin & RTREC_PIN_WRITER != 0,
                "writer_cpu",
                "RTREC_PIN_WRITER",
            )?,
            flusher_cpu: cpu_from_c(
                self.flusher_cpu,
                self.pin & RTREC_PIN_FLUSHER != 0,
                "flusher_cpu",
                "RTREC_PIN_FLUSHER",
            )?,
        })
    }

    /// Reads the caller's struct (see [`read_struct`]) and converts it.
    ///
    /// # Safety
    ///
    /// `p` is non-NULL and points to a caller's `rtrec_config`.
    pub(crate) unsafe fn read(p: *const rtrec_config) -> Result<Config, Fail> {
        let defaults = rtrec_config::defaults()?;
        // SAFETY: forwarded from the caller.
        unsafe { read_struct(p, defaults)?.engine_config() }
    }
}

/// `spec` parsed by the engine's layout grammar, or `-EINVAL` with its
/// sentence (prefixed by the field's name).
fn layout_of(spec: &CStr) -> Result<rtrec_engine::layout::Layout, Fail> {
    let spec = spec
        .to_str()
        .map_err(|_| Fail::inval("rtrec_config.layout is not valid UTF-8"))?;
    rtrec_engine::layout::Layout::parse(spec)
        .map_err(|e| Fail::inval(format!("rtrec_config.layout: {e}")))
}

/// The size in bytes of a record of layout `spec` (`rtrec_config.layout`'s
/// grammar), so that a program can check a layout, and size its records
/// by it, before it creates a recorder (library 0.4).
///
/// Returns the size (at least 1), or `-EINVAL` (`spec` is NULL, not
/// UTF-8, or not a layout: `rtrec_last_error()` says why).
///
/// # Safety
///
/// `spec` is NULL or a valid C string.
#[no_mangle]
pub unsafe extern "C" fn rtrec_layout_size(spec: *const c_char) -> c_int {
    guard(|| {
        if spec.is_null() {
            return Err(Fail::inval("layout spec is NULL"));
        }
        // SAFETY: non-NULL, and a C string by the caller's contract.
        let l = layout_of(unsafe { CStr::from_ptr(spec) })?;
        c_int::try_from(l.size())
            .map_err(|_| Fail::inval("the layout's record is larger than 2 GiB"))
    })
}

/// Fills `*cfg` with the engine's defaults: ring mode, the default
/// allocation and flush strategies, framed records, file size and ring 0
/// (sized by the engine's rules when the recorder is created: 64 MiB files
/// and the auto ring, 16 MiB for an unknown rate and records up to 1 MiB), records up to 1 MiB, a 1 ms writer poll, no real-time settings,
/// prefix NULL ("rec"), a pool of 2 files that falls back to `fallocate()`
/// and is not refilled by the recorder, no flight recorder (the `flight_*`
/// spans 0, the defaults 2 s and 5 s; a window of 0 bytes is sized by the
/// engine).
///
/// A zero-filled config with `struct_size` set means the same; this
/// function writes the defaults out for a program that shows them.
/// `cfg->struct_size` must be set to `sizeof(rtrec_config)` first; exactly
/// that many bytes are written.
///
/// Returns 0, or `-EINVAL` (`cfg` is NULL or `struct_size` is not a size
/// this library publishes).
#[no_mangle]
pub unsafe extern "C" fn rtrec_config_init(cfg: *mut rtrec_config) -> c_int {
    guard(|| {
        if cfg.is_null() {
            return Err(Fail::inval("rtrec_config_init: cfg is NULL"));
        }
        let d = rtrec_config::defaults()?;
        // SAFETY: non-NULL; the caller's struct is `struct_size` bytes.
        unsafe { write_struct(cfg, &d)? };
        Ok(0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn init() -> rtrec_config {
        // SAFETY: all-zero is a valid rtrec_config (integers, NULL pointer).
        let mut c: rtrec_config = unsafe { std::mem::zeroed() };
        c.struct_size = size_of::<rtrec_config>();
        // SAFETY: a valid, sized struct.
        assert_eq!(unsafe { rtrec_config_init(&mut c) }, 0);
        c
    }

    #[test]
    fn every_engine_strategy_has_a_c_value() {
        for (v, n) in Mode::ALL {
            assert!(
                to_c(MODES, *v).is_ok(),
                "mode {n} needs an RTREC_MODE_ value"
            );
        }
        for (v, n) in Alloc::ALL {
            assert!(
                to_c(ALLOCS, *v).is_ok(),
                "alloc {n} needs an RTREC_ALLOC_ value"
            );
        }
        for (v, n) in Flush::ALL {
            assert!(
                to_c(FLUSHES, *v).is_ok(),
                "flush {n} needs an RTREC_FLUSH_ value"
            );
        }
        for (v, n) in Framing::ALL {
            assert!(
                to_c(FRAMINGS, *v).is_ok(),
                "framing {n} needs an RTREC_FRAMING_ value"
            );
        }
        for (v, n) in OnFull::ALL {
            assert!(
                to_c(ON_FULLS, *v).is_ok(),
                "ring-full policy {n} needs an RTREC_ON_FULL_ value"
            );
        }
        for (v, n) in Io::ALL {
            assert!(
                to_c(IOS, *v).is_ok(),
                "back-end {n} needs an RTREC_IO_ value"
            );
        }
        for (v, n) in OnPoolEmpty::ALL {
            assert!(
                to_c(POOL_EMPTIES, *v).is_ok(),
                "pool-empty policy {n} needs an RTREC_POOL_EMPTY_ value"
            );
        }
    }

    /// A new back-end without its C value, a value paired with the wrong
    /// back-end, or a header whose `rtrec_io` differs from the table fails
    /// here.
    #[test]
    fn every_back_end_has_exactly_one_c_value_named_after_it() {
        let engines: Vec<Io> = IOS.iter().map(|(_, io)| *io).collect();
        let all: Vec<Io> = Io::ALL.iter().map(|(io, _)| *io).collect();
        assert_eq!(engines, all, "IOS: one line per Io::ALL value, in order");
        let names: Vec<String> = IOS.iter().map(|(c, _)| format!("{c:?}")).collect();
        for ((c, io), name) in IOS.iter().zip(&names) {
            let want = format!("RTREC_IO_{}", io.name().to_uppercase().replace('-', "_"));
            assert_eq!(*name, want, "{io}");
            let same = IOS.iter().filter(|(d, _)| d == c).count();
            assert_eq!(same, 1, "{name} is one back-end's");
        }
        let header = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../include/rtrec.h"),
        )
        .unwrap();
        let start = header.find("typedef enum rtrec_io {").expect("rtrec_io");
        let body = &header[start..start + header[start..].find('}').unwrap()];
        // The enumerators (`RTREC_IO_X = n,`), not the docs that name them.
        let in_header: Vec<&str> = body
            .lines()
            .filter_map(|l| l.trim().split_once(" = "))
            .map(|(name, _)| name)
            .collect();
        assert_eq!(in_header, names, "include/rtrec.h's rtrec_io");
    }

    #[test]
    fn the_struct_is_free_of_padding_and_refuses_every_other_size() {
        // Version 6: the size of version 5 (176) plus `pin` and
        // `reserved2`; version 7: the retention fields. No tail padding.
        assert_eq!(offset_of!(rtrec_config, reserved2) + size_of::<u32>(), 184);
        assert_eq!(
            offset_of!(rtrec_config, keep_events) + size_of::<u32>(),
            208
        );
        // Version 8: `layout`.
        assert_eq!(size_of::<rtrec_config>(), 216);
        assert_eq!(
            offset_of!(rtrec_config, layout) + size_of::<*const c_char>(),
            size_of::<rtrec_config>()
        );
        for size in [
            0,
            8,
            88,
            89,
            136,
            176,
            183,
            185,
            207,
            209,
            215,
            217,
            2000,
            usize::MAX,
        ] {
            let mut c = init();
            c.struct_size = size;
            assert_eq!(
                // SAFETY: a valid struct; the size is refused before use.
                unsafe { rtrec_config_init(&mut c) },
                -libc::EINVAL,
                "{size}"
            );
            // SAFETY: as above.
            let f = unsafe { rtrec_config::read(&c) }.unwrap_err();
            assert_eq!(f.errno, libc::EINVAL, "{size}");
            assert!(f.msg.contains("sizeof(rtrec_config)"), "{}", f.msg);
        }
    }

    #[test]
    fn a_version_6_caller_gets_no_retention_and_a_version_7_one_its_limits() {
        let mut c = init();
        c.keep_bytes = 8 << 20;
        c.keep_files = 3;
        // SAFETY: prefix is NULL.
        let e = unsafe { c.engine_config() }.unwrap();
        assert_eq!(
            (e.retention.keep_bytes, e.retention.keep_files),
            (8 << 20, 3)
        );
        // A version 6 struct: the library reads its 184 bytes only.
        c.struct_size = 184;
        // SAFETY: a valid struct of (at least) 184 bytes.
        let old = unsafe { rtrec_config::read(&c) }.unwrap();
        assert!(old.retention.is_off(), "{:?}", old.retention);
    }

    #[test]
    fn a_zero_filled_config_is_the_defaults() {
        // SAFETY: all-zero is a valid rtrec_config.
        let mut z: rtrec_config = unsafe { std::mem::zeroed() };
        z.struct_size = size_of::<rtrec_config>();
        // SAFETY: prefix is NULL.
        let from_zero = unsafe { z.engine_config() }.unwrap();
        // SAFETY: prefix is NULL.
        let from_init = unsafe { init().engine_config() }.unwrap();
        assert_eq!(from_zero, from_init);
        let mut d = Config::default();
        let sizes = d.sizes_for(&Workload::UNKNOWN);
        (d.file_size, d.ring_bytes) = (sizes.file_size, sizes.ring.ring_bytes);
        d.file_size_basis = sizes.file_size_basis;
        assert_eq!(from_zero, d);
        assert_eq!(from_zero.rt, RtConfig::default(), "nothing pinned");
        // Only max_record and writer_poll_us set (the issue's case).
        z.max_record = 4096;
        z.writer_poll_us = 500;
        // SAFETY: prefix is NULL.
        let e = unsafe { z.engine_config() }.unwrap();
        assert_eq!((e.rt.writer_cpu, e.rt.flusher_cpu), (None, None));
        assert_eq!((e.alloc, e.flush), (Alloc::Pool, Flush::Window));
    }

    #[test]
    fn pinning_needs_its_flag_and_cpu_0_is_a_cpu() {
        let mut c = init();
        c.writer_cpu = 3;
        // SAFETY: prefix is NULL.
        let f = unsafe { c.engine_config() }.unwrap_err();
        assert!(f.msg.contains("RTREC_PIN_WRITER"), "{}", f.msg);
        (c.writer_cpu, c.pin) = (0, RTREC_PIN_WRITER | RTREC_PIN_FLUSHER);
        // SAFETY: prefix is NULL.
        let e = unsafe { c.engine_config() }.unwrap();
        assert_eq!((e.rt.writer_cpu, e.rt.flusher_cpu), (Some(0), Some(0)));
        c.pin = 4;
        assert_eq!(
            // SAFETY: prefix is NULL.
            unsafe { c.engine_config() }.unwrap_err().errno,
            libc::EINVAL
        );
    }

    #[test]
    fn sync_on_close_and_the_back_end_fields_reach_the_engine() {
        let mut c = init();
        c.sync_every_ns = RTREC_SYNC_ON_CLOSE;
        (c.io, c.io_depth, c.io_block) = (rtrec_io::RTREC_IO_URING as c_int, 8, 1 << 16);
        // SAFETY: prefix is NULL.
        let e = unsafe { c.engine_config() }.unwrap();
        assert_eq!(e.sync_every_ns, 0);
        assert_eq!((e.io, e.io_depth, e.io_block), (Io::Uring, 8, 1 << 16));
        // One past the last value is no back-end, however many there are.
        let unknown = IOS.len() as c_int;
        for (io, depth) in [(unknown, 4), (rtrec_io::RTREC_IO_URING as c_int, 65)] {
            (c.io, c.io_depth) = (io, depth);
            // SAFETY: prefix is NULL.
            let e = unsafe { c.engine_config() }.unwrap_err();
            assert_eq!(e.errno, libc::EINVAL, "{io} {depth}");
        }
    }

    #[test]
    fn a_ring_larger_than_memory_is_einval_with_a_sentence() {
        for ring in [1usize << 40, usize::MAX] {
            let mut c = init();
            c.ring_bytes = ring;
            // SAFETY: prefix is NULL.
            let f = unsafe { c.engine_config() }.unwrap_err();
            assert_eq!(f.errno, libc::EINVAL, "{}", f.msg);
            assert!(f.msg.contains("memory"), "{}", f.msg);
        }
    }

    #[test]
    fn the_pool_and_flight_fields_reach_the_engine() {
        let mut c = init();
        (
            c.pool_files,
            c.pool_on_empty,
            c.pool_refill_while_recording,
            c.pool_refill_on_finish,
        ) = (5, rtrec_pool_empty::RTREC_POOL_EMPTY_WAIT as c_int, 1, 1);
        (
            c.flight_enabled,
            c.flight_pre_ns,
            c.flight_pre_bytes,
            c.flight_post_ns,
        ) = (1, 50_000_000, 1 << 21, 20_000_000);
        // SAFETY: prefix is NULL.
        let e = unsafe { c.engine_config() }.unwrap();
        assert_eq!(
            e.pool,
            PoolConfig {
                files: 5,
                on_empty: OnPoolEmpty::Wait,
                refill_while_recording: true,
                refill_on_finish: true
            }
        );
        assert_eq!(
            e.flight,
            Some(FlightConfig {
                pre_ns: 50_000_000,
                pre_bytes: 1 << 21,
                post_ns: 20_000_000
            })
        );
        // And back: from_engine is the inverse.
        let back = rtrec_config::from_engine(&e).unwrap();
        assert_eq!(
            (back.pool_files, back.pool_on_empty, back.flight_enabled),
            (5, 1, 1)
        );
        assert_eq!(
            (
                back.flight_pre_ns,
                back.flight_pre_bytes,
                back.flight_post_ns
            ),
            (50_000_000, 1 << 21, 20_000_000)
        );
        // Disabled: the spans are ignored.
        c.flight_enabled = 0;
        // SAFETY: prefix is NULL.
        assert_eq!(unsafe { c.engine_config() }.unwrap().flight, None);
    }

    #[test]
    fn bad_pool_and_flight_fields_are_einval_with_the_field_name() {
        type Case = (fn(&mut rtrec_config), &'static str);
        let cases: [Case; 5] = [
            (|c| c.pool_on_empty = 2, "rtrec_config.pool_on_empty is 2"),
            (
                |c| c.pool_refill_while_recording = 2,
                "rtrec_config.pool_refill_while_recording is 2",
            ),
            (
                |c| c.pool_refill_on_finish = -1,
                "rtrec_config.pool_refill_on_finish is -1",
            ),
            (|c| c.flight_enabled = 7, "rtrec_config.flight_enabled is 7"),
            (
                // Enabled with a window that cannot hold one record.
                |c| (c.flight_enabled, c.flight_pre_bytes) = (1, 1),
                "pre-trigger window",
            ),
        ];
        for (set, msg) in cases {
            let mut c = init();
            set(&mut c);
            // SAFETY: prefix is NULL.
            let f = unsafe { c.engine_config() }.unwrap_err();
            assert_eq!(f.errno, libc::EINVAL, "{}", f.msg);
            assert!(f.msg.contains(msg), "{}", f.msg);
        }
        let mut c = init();
        c.reserved0 = 1;
        assert_eq!(
            // SAFETY: prefix is NULL.
            unsafe { c.engine_config() }.unwrap_err().errno,
            libc::EINVAL
        );
    }

    #[test]
    fn config_init_gives_the_engine_defaults_back() {
        let c = init();
        assert_eq!(c.struct_size, size_of::<rtrec_config>());
        // SAFETY: prefix is NULL.
        // The engine's defaults, with the file size marked as the
        // open-ended default (a C recording runs until finish, so its
        // default size may set a directory's pool: `sizing`'s rule).
        let open_ended = Config {
            file_size_basis: rtrec_engine::FileSizeBasis::OpenEnded { period_ns: None },
            ..Config::default()
        };
        // SAFETY: prefix is NULL.
        assert_eq!(unsafe { c.engine_config() }.unwrap(), open_ended);
        assert_eq!(
            (c.writer_priority, c.writer_cpu, c.flusher_cpu, c.pin),
            (0, 0, 0, 0)
        );
    }

    #[test]
    fn every_c_field_reaches_the_engine() {
        let mut c = init();
        c.mode = rtrec_mode::RTREC_MODE_INLINE as c_int;
        c.alloc = rtrec_alloc::RTREC_ALLOC_FALLOCATE_KEEP_SIZE as c_int;
        c.flush = rtrec_flush::RTREC_FLUSH_SFR as c_int;
        c.framing = rtrec_framing::RTREC_FRAMING_RAW as c_int;
        (
            c.flush_every,
            c.file_size,
            c.max_record,
            c.ring_bytes,
            c.writer_poll_us,
        ) = (4096, 1 << 22, 512, 1 << 20, 50);
        (
            c.writer_priority,
            c.writer_cpu,
            c.flusher_cpu,
            c.flusher_nice,
        ) = (20, 1, 2, 5);
        c.pin = RTREC_PIN_WRITER | RTREC_PIN_FLUSHER;
        c.prefix = c"cam".as_ptr();
        // SAFETY: prefix is a C string literal.
        let e = unsafe { c.engine_config() }.unwrap();
        assert_eq!(
            (e.mode, e.alloc, e.flush, e.framing),
            (
                Mode::Inline,
                Alloc::FallocateKeepSize,
                Flush::Sfr,
                Framing::Raw
            )
        );
        assert_eq!(
            (
                e.flush_every,
                e.file_size,
                e.max_record,
                e.ring_bytes,
                e.writer_poll_us
            ),
            (4096, 1 << 22, 512, 1 << 20, 50)
        );
        assert_eq!(
            e.rt,
            RtConfig {
                writer_priority: Some(20),
                writer_cpu: Some(1),
                flusher_cpu: Some(2)
            }
        );
        assert_eq!((e.flusher_nice, e.prefix.as_str()), (5, "cam"));
    }

    #[test]
    fn an_unknown_enum_value_is_einval_with_the_field_name() {
        let mut c = init();
        c.alloc = 99;
        // SAFETY: prefix is NULL.
        let f = unsafe { c.engine_config() }.unwrap_err();
        assert_eq!(f.errno, libc::EINVAL);
        assert!(f.msg.contains("rtrec_config.alloc is 99"), "{}", f.msg);
    }

    #[test]
    fn a_prefix_that_leaves_the_directory_is_refused() {
        let mut c = init();
        c.prefix = c"../x".as_ptr();
        // SAFETY: prefix is a C string literal.
        let f = unsafe { c.engine_config() }.unwrap_err();
        assert_eq!(f.errno, libc::EINVAL);
        assert!(f.msg.starts_with("rtrec_config.prefix: "), "{}", f.msg);
    }

    #[test]
    fn a_priority_outside_1_to_99_is_einval_with_the_field_name() {
        let mut c = init();
        c.writer_priority = 100;
        // SAFETY: prefix is NULL.
        let f = unsafe { c.engine_config() }.unwrap_err();
        assert_eq!(f.errno, libc::EINVAL);
        assert!(
            f.msg.starts_with("rtrec_config.writer_priority: ") && f.msg.contains("100"),
            "{}",
            f.msg
        );
    }
}
