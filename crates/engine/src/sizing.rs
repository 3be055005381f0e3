//! How big things are: the byte counts several layers share (the ring's
//! entry header, the reserved tail of a framed file) and the rules that
//! size a recording from its workload, so that `rtrec record` and the C API
//! get the same files, ring and pre-trigger window from the same code.
//!
//! A base module: it imports only [`crate::format`]. The rules work on
//! numbers; [`crate::Config::sizes_for`] feeds them from a configuration.
//!
//! # The rules
//!
//! With `entry = max_record + ENTRY_HEADER_LEN` (one record in the ring or
//! the window) and `stored` the bytes one record of `max_record` takes in a
//! file:
//!
//! - **Ring** (`--ring auto`, the C API's `ring_bytes` 0: [`auto_ring`]):
//!   the data rate times the longest writer stall to absorb times a safety
//!   factor, `(STALL_MARGIN × stall / period + 4) × entry`, at least
//!   [`MIN_AUTO_RING_BYTES`], at most the memory cap ([`ring_cap`]: 1/8 of
//!   the machine's memory, never above [`MAX_AUTO_RING_BYTES`]). The stall
//!   is the storage's worst one when it is known (an emulated device's
//!   profile, a `rtrec device probe` result), else [`DEFAULT_STALL_NS`].
//!   The margin covers stalls that come back to back (a GC pause right
//!   after a flush tail) and the writer catching up after one (it writes
//!   what piled up while new records keep arriving). With the rate
//!   unknown (records from stdin, the C API) the ring is
//!   [`DEFAULT_RING_BYTES`], under the same cap. Never less than four
//!   records.
//! - **File size**, rounded up to a 4 KiB page, header and reserved tail
//!   included:
//!   - flight recorder: one event per file: `(pre + post) / period + 4`
//!     records when the period is known, 1024 records otherwise;
//!   - a known number of fixed-size records: exactly that many, in one file
//!     (as the published study records; the pre-allocation matches what is
//!     written);
//!   - otherwise (an open-ended recording: no count, total or duration,
//!     or records of varying size) the open-ended default,
//!     [`default_file_size`]: 64 MiB ([`DEFAULT_FILE_SIZE`]); on rotating
//!     media (the directory's device says `queue/rotational` 1) with the
//!     rate known, 10 s of data ([`ROTATING_FILE_SPAN_NS`]) when that is
//!     more, up to 256 MiB ([`MAX_ROTATING_FILE_SIZE`]; issue 47: a
//!     switch costs a disk 240–290 ms of seeks and flushes). Then
//!     [`fitted_file_size`]: a quarter of the file system's free space
//!     when that is less ("small card"), rounded down to 1 MiB, never
//!     below 1 MiB ([`MIN_DEFAULT_FILE_SIZE`]: below it the recording
//!     refuses and names `--file-size`).
//!     [`Config::settle`](crate::Config::settle) gives 64 MiB and marks
//!     it [`FileSizeBasis::OpenEnded`] with the period; the writer looks
//!     at the device and fits it to the directory's free space when the
//!     recorder is created, and `rtrec doctor` calls
//!     [`open_ended_file_size`], the rule for an unknown rate.
//! - **The pool's file size** (a directory's `.pool/`, [`crate::pool`]):
//!   set only by an explicit size (`record --file-size`, `rtrec pool
//!   prepare --file-size`, the C API's `file_size`) or by an open-ended
//!   recording's default. A recording of known length (its size from the
//!   workload: [`FileSizeBasis::Known`]) never creates, shrinks or
//!   resizes the pool: it takes the pool's ready files (the unused tail is
//!   given back at the end); a need larger than one pool file takes them
//!   one after another, switching between them as an open-ended recording
//!   does (issue 47: it had `fallocate`d one fresh file of the whole need
//!   beside an idle pool). Design choice: when the ready files hold less
//!   than the need, it takes them and then one file of exactly the rest
//!   ([`records_file_size`]), unless a pool file would last less than
//!   [`MIN_FILE_SPAN_NS`] at the known rate: then (as with no file ready)
//!   it gets one file of its whole need with `fallocate` and leaves the
//!   pool alone.
//!   An open-ended recording without `--file-size` takes the pool's size
//!   when it was set explicitly, or by a default and files of it are
//!   ready; else the pool takes the recording's default. The pool records
//!   where its size came from ([`SizeFrom`]), and `rtrec pool status`
//!   shows it. So a short test recording cannot give later recordings
//!   tiny files (issue 31, finding 1).
//! - **File switches**: a recording whose files at the expected rate
//!   would last less than [`MIN_FILE_SPAN_NS`] (a switch more often than
//!   once a second, [`file_span_ns`]) is warned about once, naming
//!   `--file-size`.
//! - **Pre-trigger window**: what the pre span needs at the known rate,
//!   plus two records (`(pre / period + 2) × entry`); 64 MiB when the rate
//!   is unknown.

use serde::{Deserialize, Serialize};

use crate::format::{FRAME_HEADER_LEN, HEADER_LEN};

/// Bytes of an entry's header in the ring and in the flight recorder's
/// window (`kind u32 | len u32 | seq u64 | ts_ns u64`).
pub const ENTRY_HEADER_LEN: usize = 24;

/// Bytes kept free at the end of every framed file for the closing frames
/// (a loss frame and the end frame with a reason).
pub const RESERVED_BYTES: u64 = 1024;

/// Bytes of an end frame's payload that fit in the reserved tail after a
/// loss frame (`RESERVED_BYTES` minus two frame headers and a loss payload).
pub(crate) const END_PAYLOAD_MAX: usize =
    RESERVED_BYTES as usize - 2 * FRAME_HEADER_LEN - crate::format::LossPayload::LEN;

/// One mebibyte.
pub const MIB: u64 = 1 << 20;

/// File size when the workload does not decide it and the file system
/// has room for it ([`open_ended_file_size`]).
pub const DEFAULT_FILE_SIZE: u64 = 64 * MIB;

/// The smallest file the open-ended default gives (on a small card): 1
/// MiB. Below it the recording refuses and names `--file-size`.
pub const MIN_DEFAULT_FILE_SIZE: u64 = MIB;

/// The open-ended default takes at most this share of the free space:
/// a quarter, so the file being written, the one the next switch takes and
/// the pool's spare fit with room left.
pub const DEFAULT_FILE_SHARE: u64 = 4;

/// The shortest a file should last at the expected rate: 1 s. Shorter,
/// the recording switches files more often than once a second (each
/// switch renames, writes a header and syncs a directory), and says so.
pub const MIN_FILE_SPAN_NS: u64 = 1_000_000_000;

/// On rotating media the open-ended default holds at least this much
/// data at the known rate: 10 s ([`default_file_size`]). A file switch
/// there costs seeks and cache flushes (240–290 ms of a 5400 rpm disk's
/// time, `docs/bench.md`, "`hdd-5400`: what a durable point and a file
/// switch cost"), so a switch every 10 s leaves the disk 97 % of its time
/// for the data, where 64 MiB files at 20 MiB/s took 7–9 % of it.
pub const ROTATING_FILE_SPAN_NS: u64 = 10_000_000_000;

/// The largest file [`default_file_size`] gives: 256 MiB, the size the
/// budget of `docs/bench.md` measured to keep a 20 MiB/s disk at 0.90
/// with a durable point every second. Past it, a file's retention and
/// recovery granularity grows and the switches' share is small anyway.
pub const MAX_ROTATING_FILE_SIZE: u64 = 256 * MIB;

/// The ring when the record rate is unknown (and [`crate::Config`]'s
/// default): 16 MiB, a second of data at 16 MB/s.
pub const DEFAULT_RING_BYTES: usize = 16 * MIB as usize;

/// The smallest ring the auto rule gives at a known rate: 1 MiB, so that a
/// slow source does not get a ring of a few records that one scheduling
/// hiccup of the writer fills.
pub const MIN_AUTO_RING_BYTES: usize = MIB as usize;

/// The largest ring the auto rule gives, whatever the memory: 256 MiB.
pub const MAX_AUTO_RING_BYTES: u64 = 256 * MIB;

/// The writer stall the auto ring absorbs when neither a device profile
/// nor a probe says: 500 ms, above the worst stall of every shipped
/// profile (`sd`: 251 ms; `hdd-5400`'s and `emmc`'s are shorter) and of the
/// ext4 stalls the published studies report on SD and eMMC.
pub const DEFAULT_STALL_NS: u64 = 500_000_000;

/// How many times the stall the ring holds (see the module docs).
pub const STALL_MARGIN: u64 = 4;

/// Pre-trigger window when the record rate is unknown.
pub const DEFAULT_PRE_BYTES: u64 = 64 * MIB;

/// Records per event file when the record rate is unknown.
const EVENT_RECORDS_UNKNOWN_RATE: u64 = 1024;

/// Files are sized in whole pages.
const PAGE: u64 = 4096;

/// What the recording will see, as far as the caller knows it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Workload {
    /// One record every this many ns, when the rate is known (a periodic
    /// source); `None` or 0: unknown.
    pub period_ns: Option<u64>,
    /// Records in the whole recording, when known.
    pub records: Option<u64>,
    /// Every record is exactly `max_record` bytes (not merely at most).
    pub fixed_size: bool,
    /// The longest writer stall the storage is known for; `None`:
    /// [`DEFAULT_STALL_NS`].
    pub stall: Option<Stall>,
}

/// Where the stall a ring is sized for comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StallSource {
    /// Nothing known: [`DEFAULT_STALL_NS`].
    Default,
    /// An emulated device's profile (`record --device`).
    Device,
    /// A device profile measured by `rtrec device probe`.
    Probe,
    /// Given as a duration by the user.
    Given,
}

/// A writer stall the ring must absorb.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stall {
    /// Its length, ns.
    pub ns: u64,
    /// Where the figure comes from.
    pub source: StallSource,
}

impl Stall {
    /// The documented conservative default.
    pub const DEFAULT: Stall = Stall {
        ns: DEFAULT_STALL_NS,
        source: StallSource::Default,
    };
}

impl Workload {
    /// Nothing known: the defaults.
    pub const UNKNOWN: Workload = Workload {
        period_ns: None,
        records: None,
        fixed_size: false,
        stall: None,
    };

    fn period(&self) -> Option<u64> {
        self.period_ns.filter(|&p| p > 0)
    }
}

/// Where a file size comes from: what a pool's description (`pool.json`)
/// stores and `rtrec pool status` shows, and what a recording's summary
/// says of its files.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SizeFrom {
    /// Given explicitly: `record --file-size`, the C API's `file_size`.
    #[serde(rename = "--file-size")]
    FileSize,
    /// The open-ended default, [`DEFAULT_FILE_SIZE`].
    #[serde(rename = "default")]
    Default,
    /// `rtrec pool prepare --file-size`.
    #[serde(rename = "pool prepare")]
    PoolPrepare,
    /// The open-ended default on rotating media: 10 s of data at the
    /// known rate ([`default_file_size`]).
    #[serde(rename = "rotating media")]
    Rotating,
    /// The open-ended default fitted to a small file system: a quarter of
    /// its free space ([`open_ended_file_size`]).
    #[serde(rename = "small card")]
    SmallCard,
    /// A recording's own size from its known length (never a pool's).
    #[serde(rename = "known length")]
    KnownLength,
}

impl SizeFrom {
    /// The name `pool status` and `--json` use (`"--file-size"`,
    /// `"default"`, `"pool prepare"`, `"small card"`, `"known length"`).
    pub fn name(self) -> &'static str {
        match self {
            SizeFrom::FileSize => "--file-size",
            SizeFrom::Default => "default",
            SizeFrom::PoolPrepare => "pool prepare",
            SizeFrom::Rotating => "rotating media",
            SizeFrom::SmallCard => "small card",
            SizeFrom::KnownLength => "known length",
        }
    }

    /// Chosen by a person (`--file-size`, `pool prepare`), not by a rule.
    pub fn is_explicit(self) -> bool {
        matches!(self, SizeFrom::FileSize | SizeFrom::PoolPrepare)
    }
}

/// How a configuration's `file_size` was settled: what the recording may
/// do to a directory's pool (see the module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FileSizeBasis {
    /// Set by the caller (`--file-size`, the C API's `file_size`, a
    /// [`crate::Config`] built with one): the pool takes it.
    #[default]
    Given,
    /// The open-ended default: chosen from the device and the rate
    /// ([`default_file_size`]) and fitted to the free space
    /// ([`fitted_file_size`]) when the recorder is created; a pool whose
    /// size was given keeps its own.
    OpenEnded {
        /// One record every this many ns when the rate is known: on
        /// rotating media the files hold at least 10 s of it.
        period_ns: Option<u64>,
    },
    /// Exactly what a recording of known length (or one flight-recorder
    /// event) needs: never creates, shrinks or resizes a pool.
    Known {
        /// One record every this many ns when the rate is known (what
        /// the need was sized at): how long a pool's file would last
        /// ([`file_span_ns`]), which decides whether a pool short of the
        /// need is worth its switches (`docs/durability.md`).
        period_ns: Option<u64>,
    },
}

/// The file size a recording got and why: what `record`'s summary and
/// `--json` (`file_sizing`) report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileSizing {
    /// Bytes per file.
    pub file_size: u64,
    /// Where it comes from; `None` only for the pool of an older rtrec,
    /// which did not record it.
    pub from: Option<SizeFrom>,
    /// `true`: the directory's pool decided it (`from` is the pool's).
    pub pool: bool,
    /// The open-ended default: the file system's free space it was fitted
    /// to, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub free_bytes: Option<u64>,
}

/// Too little free space for the smallest open-ended default file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NoRoomForDefault {
    /// The file system's free space, bytes.
    pub free_bytes: u64,
}

/// The open-ended default file size on a file system with `free_bytes`
/// free: `min(64 MiB, free / 4)` rounded down to 1 MiB, from
/// [`SizeFrom::Default`] when it is the full 64 MiB, else
/// [`SizeFrom::SmallCard`]. `record` (through the writer) and `doctor`
/// call it.
///
/// # Errors
/// A quarter of the free space is less than [`MIN_DEFAULT_FILE_SIZE`].
pub fn open_ended_file_size(free_bytes: u64) -> Result<FileSizing, NoRoomForDefault> {
    fitted_file_size(free_bytes, DEFAULT_FILE_SIZE, SizeFrom::Default)
}

/// The open-ended default of a recording on a device whose seeks cost
/// (`rotating`: its queue says rotational), writing `bytes_per_s` when
/// the rate is known: [`ROTATING_FILE_SPAN_NS`] of data rounded up to 1
/// MiB, at least [`DEFAULT_FILE_SIZE`] and at most
/// [`MAX_ROTATING_FILE_SIZE`], from [`SizeFrom::Rotating`]; else
/// [`DEFAULT_FILE_SIZE`] from [`SizeFrom::Default`]. Design choice: the
/// rule needs the rate, so a recording of unknown rate (stdin, the C API)
/// and any recording on flash keep the 64 MiB default, and only a
/// recording fast enough to switch more often than every 10 s changes
/// (above 6.4 MiB/s). Either is then fitted to the free space
/// ([`fitted_file_size`]).
pub fn default_file_size(rotating: bool, bytes_per_s: Option<u64>) -> (u64, SizeFrom) {
    match bytes_per_s {
        Some(rate) if rotating => {
            let span = (rate as u128 * ROTATING_FILE_SPAN_NS as u128 / 1_000_000_000) as u64;
            let size = span.div_ceil(MIB).saturating_mul(MIB);
            if size > DEFAULT_FILE_SIZE {
                (size.min(MAX_ROTATING_FILE_SIZE), SizeFrom::Rotating)
            } else {
                (DEFAULT_FILE_SIZE, SizeFrom::Default)
            }
        }
        _ => (DEFAULT_FILE_SIZE, SizeFrom::Default),
    }
}

/// `want` (a default of [`default_file_size`], from `from`) fitted to a
/// file system with `free_bytes` free: `min(want, free / 4)` rounded down
/// to 1 MiB, from `from` when it is all of `want`, else
/// [`SizeFrom::SmallCard`].
///
/// # Errors
/// A quarter of the free space is less than [`MIN_DEFAULT_FILE_SIZE`].
pub fn fitted_file_size(
    free_bytes: u64,
    want: u64,
    from: SizeFrom,
) -> Result<FileSizing, NoRoomForDefault> {
    let quarter = free_bytes / DEFAULT_FILE_SHARE / MIB * MIB;
    let (file_size, from) = if quarter >= want {
        (want, from)
    } else if quarter >= MIN_DEFAULT_FILE_SIZE {
        (quarter, SizeFrom::SmallCard)
    } else {
        return Err(NoRoomForDefault { free_bytes });
    };
    Ok(FileSizing {
        file_size,
        from: Some(from),
        pool: false,
        free_bytes: Some(free_bytes),
    })
}

/// What a loop's directory may take beyond its files, in the bound of
/// [`fit_budget`]: the name claim, the locks, `pool.json` (a block each)
/// and the file system's extent blocks, with room to spare.
pub const BUDGET_METADATA_BYTES: u64 = 64 << 10;

/// What [`fit_budget`] decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BudgetFit {
    /// The budget's bound fits the room.
    Fits,
    /// The budget's bound does not fit: at most this many finished files
    /// do.
    Clamped(u64),
    /// Not even one finished file, the file being written and the pool's
    /// spares fit.
    TooSmall,
}

/// A loop's budget on its card: the bound of `docs/unattended.md`,
/// `(kept + 1 + spares) × file_size + BUDGET_METADATA_BYTES`, against
/// `room`, what the loop may have of its file system (its free space, plus
/// what the budget may retire, plus the pool's ready files). `kept`: the
/// finished files the budget keeps; `spares`: the pool's target (0
/// without a pool). A budget larger than the card is clamped to the kept
/// count that fits, at least 1 (issue 42, finding 5: the default `--keep
/// 1GiB` filled an 8 MiB card and aborted the recording); below that the
/// loop refuses.
pub fn fit_budget(kept: u64, file_size: u64, spares: u64, room: u64) -> BudgetFit {
    let files = room.saturating_sub(BUDGET_METADATA_BYTES) / file_size.max(1);
    let most = files.saturating_sub(1 + spares);
    if most == 0 {
        BudgetFit::TooSmall
    } else if kept > most {
        BudgetFit::Clamped(most)
    } else {
        BudgetFit::Fits
    }
}

/// How long one file lasts at the expected rate: the records of `stored`
/// bytes (each as stored in a file) that fit in `usable` bytes, one every
/// `period_ns`. `None` when the rate is unknown (no period, or 0).
pub fn file_span_ns(usable: u64, stored: u64, period_ns: Option<u64>) -> Option<u64> {
    let p = period_ns.filter(|&p| p > 0)?;
    Some((usable / stored.max(1)).max(1).saturating_mul(p))
}

/// The file that holds exactly `records` records of `stored` bytes each
/// (as stored in a file): header, records and the reserved tail, rounded
/// up to a 4 KiB page. A recording of known length gets one of its whole
/// need; beside a pool with too few files ready, one of what the pool's
/// files leave over.
pub fn records_file_size(records: u64, stored: u64) -> u64 {
    records
        .saturating_mul(stored)
        .saturating_add(HEADER_LEN as u64 + RESERVED_BYTES)
        .div_ceil(PAGE)
        .saturating_mul(PAGE)
}

/// What the rules give (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sizes {
    /// Bytes per file.
    pub file_size: u64,
    /// How `file_size` was decided: the workload's exact need
    /// ([`FileSizeBasis::Known`]) or the open-ended default.
    pub file_size_basis: FileSizeBasis,
    /// The ring and how it was sized.
    pub ring: RingSizing,
    /// Flight recorder's pre-trigger window, bytes.
    pub pre_bytes: u64,
}

/// The flight recorder's spans, ns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spans {
    /// Kept before a trigger.
    pub pre_ns: u64,
    /// Recorded after a trigger.
    pub post_ns: u64,
}

/// Applies the rules: `max_record` is the largest record, `stored` the
/// bytes it takes in a file, `flight` the spans when the flight recorder is
/// used, `ring_cap` the most the auto ring may take ([`ring_cap`]).
pub fn sizes(
    w: &Workload,
    max_record: usize,
    stored: u64,
    flight: Option<Spans>,
    ring_cap: u64,
) -> Sizes {
    let entry = (max_record as u64).saturating_add(ENTRY_HEADER_LEN as u64);
    let file_of = |records: u64| records_file_size(records, stored);
    let known = FileSizeBasis::Known {
        period_ns: w.period(),
    };
    let (file_size, file_size_basis) = match (flight, w.records) {
        (Some(s), _) => (
            file_of(match w.period() {
                Some(p) => s.pre_ns.saturating_add(s.post_ns) / p + 4,
                None => EVENT_RECORDS_UNKNOWN_RATE,
            }),
            known,
        ),
        (None, Some(n)) if w.fixed_size => (file_of(n), known),
        _ => (
            DEFAULT_FILE_SIZE,
            FileSizeBasis::OpenEnded {
                period_ns: w.period(),
            },
        ),
    };
    let pre_bytes = match (flight, w.period()) {
        (Some(s), Some(p)) => (s.pre_ns / p + 2).saturating_mul(entry),
        _ => DEFAULT_PRE_BYTES,
    };
    Sizes {
        file_size,
        file_size_basis,
        ring: auto_ring(w, max_record, ring_cap),
        pre_bytes,
    }
}

/// How the ring was sized: what `record`'s summary and `--json` report.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct RingSizing {
    /// The ring's capacity, bytes.
    pub ring_bytes: usize,
    /// `true`: sized by [`auto_ring`]; `false`: a size the user gave.
    pub auto: bool,
    /// What the rule asks for, before the cap, bytes.
    pub needed_bytes: u64,
    /// The memory cap of the auto rule, bytes.
    pub cap_bytes: u64,
    /// The stall it is sized for, ns.
    pub stall_ns: u64,
    /// Where that stall comes from.
    pub stall_source: StallSource,
    /// The safety factor ([`STALL_MARGIN`]).
    pub margin: u64,
    /// The data rate, bytes per second of ring entries (record and entry
    /// header); absent when the rate is unknown.
    pub rate_bytes_per_s: Option<u64>,
    /// The longest writer stall the ring absorbs at that rate, seconds:
    /// the data it holds (whole records); absent when the rate is unknown.
    pub covers_stall_s: Option<f64>,
}

impl RingSizing {
    /// `true` when the cap made the ring smaller than the rule asked.
    pub fn capped(&self) -> bool {
        (self.ring_bytes as u64) < self.needed_bytes
    }

    /// The same report for a ring of `ring_bytes` the user chose.
    pub fn fixed(self, ring_bytes: usize, max_record: usize, period_ns: Option<u64>) -> RingSizing {
        RingSizing {
            ring_bytes,
            auto: false,
            covers_stall_s: ring_seconds(ring_bytes as u64, max_record as u64, period_ns),
            ..self
        }
    }
}

fn entry_len(max_record: usize) -> u64 {
    (max_record as u64).saturating_add(ENTRY_HEADER_LEN as u64)
}

/// The memory cap of the auto ring: 1/8 of `mem_total` (the machine's
/// memory, bytes; `None` when unknown), at most [`MAX_AUTO_RING_BYTES`].
/// On a 512 MiB board: 64 MiB.
pub fn ring_cap(mem_total: Option<u64>) -> u64 {
    mem_total.map_or(MAX_AUTO_RING_BYTES, |m| (m / 8).min(MAX_AUTO_RING_BYTES))
}

/// The auto rule (see the module docs): the ring that absorbs the
/// workload's stall (or [`DEFAULT_STALL_NS`]) `STALL_MARGIN` times at its
/// rate, `(STALL_MARGIN × stall / period + 4) × entry` bytes, at least
/// [`MIN_AUTO_RING_BYTES`]; [`DEFAULT_RING_BYTES`] when the rate is
/// unknown; then at most `cap` bytes, and never less than four records.
pub fn auto_ring(w: &Workload, max_record: usize, cap: u64) -> RingSizing {
    let entry = entry_len(max_record);
    let stall = w.stall.unwrap_or(Stall::DEFAULT);
    let four = entry.saturating_mul(4);
    let needed = match w.period() {
        Some(p) => STALL_MARGIN
            .saturating_mul(stall.ns)
            .div_ceil(p)
            .saturating_add(4)
            .saturating_mul(entry)
            .max(MIN_AUTO_RING_BYTES as u64),
        None => DEFAULT_RING_BYTES as u64,
    }
    .max(four);
    let ring_bytes = usize::try_from(needed.min(cap.max(four))).unwrap_or(usize::MAX);
    RingSizing {
        ring_bytes,
        auto: true,
        needed_bytes: needed,
        cap_bytes: cap,
        stall_ns: stall.ns,
        stall_source: stall.source,
        margin: STALL_MARGIN,
        rate_bytes_per_s: w
            .period()
            .map(|p| (entry as u128 * 1_000_000_000 / p as u128) as u64),
        covers_stall_s: ring_seconds(ring_bytes as u64, max_record as u64, w.period()),
    }
}

/// What a ring of `ring_bytes` holds in seconds of data when one record of
/// `max_record` bytes arrives every `period_ns`: the whole entries it
/// takes, one period each. `None` when the rate is unknown (no period, or
/// 0).
pub fn ring_seconds(ring_bytes: u64, max_record: u64, period_ns: Option<u64>) -> Option<f64> {
    let entry = max_record.saturating_add(ENTRY_HEADER_LEN as u64);
    let p = period_ns.filter(|&p| p > 0)?;
    Some((ring_bytes / entry) as f64 * p as f64 / 1e9)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CAP: u64 = MAX_AUTO_RING_BYTES;

    #[test]
    fn a_known_count_of_fixed_records_fits_one_file_exactly() {
        let w = Workload {
            records: Some(1000),
            fixed_size: true,
            ..Workload::UNKNOWN
        };
        let s = sizes(&w, 100, 132, None, CAP);
        assert_eq!(s.file_size % PAGE, 0);
        assert!(s.file_size >= 1000 * 132 + HEADER_LEN as u64 + RESERVED_BYTES);
        assert!(s.file_size < 1000 * 132 + HEADER_LEN as u64 + RESERVED_BYTES + PAGE);
    }

    #[test]
    fn records_of_varying_size_or_an_unknown_count_get_the_default_file() {
        let w = Workload {
            records: Some(10),
            ..Workload::UNKNOWN
        };
        assert_eq!(sizes(&w, 100, 132, None, CAP).file_size, DEFAULT_FILE_SIZE);
        assert_eq!(
            sizes(&Workload::UNKNOWN, 100, 132, None, CAP).file_size,
            DEFAULT_FILE_SIZE
        );
    }

    #[test]
    fn the_open_ended_default_is_a_quarter_of_the_free_space_up_to_64_mib() {
        let big = open_ended_file_size(100 << 30).unwrap();
        assert_eq!(
            (big.file_size, big.from),
            (DEFAULT_FILE_SIZE, Some(SizeFrom::Default))
        );
        assert_eq!(
            open_ended_file_size(256 * MIB).unwrap().from,
            Some(SizeFrom::Default)
        );
        // The 8 MiB card of issue 31: 5.86 MiB free, a quarter is 1.46 MiB.
        let small = open_ended_file_size(6_146_048).unwrap();
        assert_eq!(
            (small.file_size, small.from),
            (MIB, Some(SizeFrom::SmallCard))
        );
        assert_eq!(small.free_bytes, Some(6_146_048));
        assert_eq!(open_ended_file_size(255 * MIB).unwrap().file_size, 63 * MIB);
        assert_eq!(open_ended_file_size(4 * MIB).unwrap().file_size, MIB);
        assert_eq!(
            open_ended_file_size(4 * MIB - 1),
            Err(NoRoomForDefault {
                free_bytes: 4 * MIB - 1
            })
        );
    }

    #[test]
    fn rotating_media_get_ten_seconds_of_data_a_file_between_64_and_256_mib() {
        // Flash, or a rate that is not known: the 64 MiB default.
        assert_eq!(
            default_file_size(false, Some(20 * MIB)),
            (DEFAULT_FILE_SIZE, SizeFrom::Default)
        );
        assert_eq!(
            default_file_size(true, None),
            (DEFAULT_FILE_SIZE, SizeFrom::Default)
        );
        // Slower than 6.4 MiB/s: 64 MiB last 10 s already.
        assert_eq!(
            default_file_size(true, Some(6 * MIB)),
            (DEFAULT_FILE_SIZE, SizeFrom::Default)
        );
        // The hdd-5400 profile's rate: 10 s of it, rounded up to 1 MiB.
        assert_eq!(
            default_file_size(true, Some(20 * MIB + 1)),
            (201 * MIB, SizeFrom::Rotating)
        );
        assert_eq!(
            default_file_size(true, Some(1 << 30)),
            (MAX_ROTATING_FILE_SIZE, SizeFrom::Rotating)
        );
        assert_eq!(
            default_file_size(true, Some(u64::MAX)).0,
            MAX_ROTATING_FILE_SIZE
        );
        // Fitted to the free space as the 64 MiB default is.
        let fit = fitted_file_size(1 << 30, 200 * MIB, SizeFrom::Rotating).unwrap();
        assert_eq!(
            (fit.file_size, fit.from),
            (200 * MIB, Some(SizeFrom::Rotating))
        );
        let fit = fitted_file_size(400 * MIB, 200 * MIB, SizeFrom::Rotating).unwrap();
        assert_eq!(
            (fit.file_size, fit.from),
            (100 * MIB, Some(SizeFrom::SmallCard))
        );
    }

    #[test]
    fn only_an_exact_need_is_a_known_length() {
        let exact = Workload {
            records: Some(1),
            fixed_size: true,
            ..Workload::UNKNOWN
        };
        assert_eq!(
            sizes(&exact, 16 << 10, 16 << 10, None, CAP).file_size_basis,
            FileSizeBasis::Known { period_ns: None }
        );
        let lines = Workload {
            fixed_size: false,
            ..exact
        };
        assert_eq!(
            sizes(&lines, 100, 132, None, CAP).file_size_basis,
            FileSizeBasis::OpenEnded { period_ns: None }
        );
    }

    #[test]
    fn a_budget_larger_than_the_card_is_clamped_to_what_fits() {
        // The 8 MiB card of finding 5: 5.86 MiB free, files of 1 MiB, a
        // pool of 2: 5 files' room, 1 written, 2 spare, so 2 kept.
        let room = 6_146_048;
        assert_eq!(fit_budget(1024, MIB, 2, room), BudgetFit::Clamped(2));
        assert_eq!(fit_budget(2, MIB, 2, room), BudgetFit::Fits);
        assert_eq!(fit_budget(1, MIB, 0, room), BudgetFit::Fits);
        // Room for the file being written and the spares, none kept.
        assert_eq!(fit_budget(1, MIB, 2, 3 * MIB), BudgetFit::TooSmall);
        assert_eq!(
            fit_budget(1, MIB, 1, 3 * MIB + BUDGET_METADATA_BYTES),
            BudgetFit::Fits
        );
        assert_eq!(fit_budget(1, 0, 0, 0), BudgetFit::TooSmall);
    }

    #[test]
    fn a_file_lasts_its_records_times_the_period() {
        // Finding 1's 20 KiB files of one 16 KiB record at 1 ms: 1 ms each.
        assert_eq!(
            file_span_ns(19 << 10, 16 << 10, Some(1_000_000)),
            Some(1_000_000)
        );
        assert_eq!(
            file_span_ns(64 * MIB, 16 << 10, Some(5_000_000)),
            Some(4096 * 5_000_000)
        );
        assert_eq!(file_span_ns(64 * MIB, 16 << 10, None), None);
        assert_eq!(file_span_ns(64 * MIB, 16 << 10, Some(0)), None);
    }

    #[test]
    fn size_origins_have_the_names_pool_status_shows() {
        for (from, name) in [
            (SizeFrom::FileSize, "\"--file-size\""),
            (SizeFrom::Default, "\"default\""),
            (SizeFrom::PoolPrepare, "\"pool prepare\""),
            (SizeFrom::SmallCard, "\"small card\""),
            (SizeFrom::Rotating, "\"rotating media\""),
        ] {
            assert_eq!(serde_json::to_string(&from).unwrap(), name);
            assert_eq!(format!("\"{}\"", from.name()), name);
        }
    }

    #[test]
    fn an_unknown_rate_gets_the_default_ring_or_four_records() {
        let ring = |max| sizes(&Workload::UNKNOWN, max, max as u64, None, CAP).ring;
        assert_eq!(ring(100).ring_bytes, DEFAULT_RING_BYTES);
        assert_eq!(ring(100).covers_stall_s, None);
        let big = 8 << 20;
        assert_eq!(ring(big).ring_bytes, 4 * (big + ENTRY_HEADER_LEN));
    }

    #[test]
    fn the_flight_window_follows_the_rate_and_one_event_fills_one_file() {
        let w = Workload {
            period_ns: Some(1_000_000),
            ..Workload::UNKNOWN
        };
        let spans = Spans {
            pre_ns: 50_000_000,
            post_ns: 20_000_000,
        };
        let s = sizes(&w, 100, 132, Some(spans), CAP);
        assert_eq!(s.pre_bytes, 52 * 124);
        assert!(s.file_size >= 74 * 132);
        let unknown = sizes(&Workload::UNKNOWN, 100, 132, Some(spans), CAP);
        assert_eq!(unknown.pre_bytes, DEFAULT_PRE_BYTES);
    }

    #[test]
    fn the_auto_ring_is_rate_times_stall_times_margin_within_the_cap() {
        // Video on `sd`: 64 KiB records at 4 MB/s (one every 16 ms), the
        // profile's 251 ms stall: 4 × 251 / 16 = 62.75, so 63 + 4 records.
        let entry = 64 * 1024 + ENTRY_HEADER_LEN;
        let w = Workload {
            period_ns: Some(16_000_000),
            stall: Some(Stall {
                ns: 251_000_000,
                source: StallSource::Device,
            }),
            ..Workload::UNKNOWN
        };
        let r = auto_ring(&w, 64 * 1024, CAP);
        assert_eq!(r.ring_bytes, 67 * entry);
        assert!(r.auto && !r.capped());
        assert_eq!(r.stall_source, StallSource::Device);
        assert_eq!(r.rate_bytes_per_s, Some(entry as u64 * 1000 / 16));
        // It holds the margin times the stall, and at most one record more.
        let held = r.covers_stall_s.unwrap();
        assert!((4.0 * 0.251..4.0 * 0.251 + 0.016 * 5.0).contains(&held));
        // A cap below the need wins, and says so.
        let capped = auto_ring(&w, 64 * 1024, MIB);
        assert_eq!(capped.ring_bytes, MIB as usize);
        assert_eq!(capped.needed_bytes, r.ring_bytes as u64);
        assert!(capped.capped());
        // Nothing known about the storage: the default stall.
        let unknown = auto_ring(&Workload { stall: None, ..w }, 64 * 1024, CAP);
        assert_eq!(unknown.stall_ns, DEFAULT_STALL_NS);
        assert_eq!(unknown.stall_source, StallSource::Default);
        assert!(unknown.ring_bytes > r.ring_bytes);
    }

    #[test]
    fn a_slow_source_gets_the_floor_and_a_huge_record_four_entries() {
        let w = Workload {
            period_ns: Some(1_000_000_000),
            ..Workload::UNKNOWN
        };
        assert_eq!(auto_ring(&w, 100, CAP).ring_bytes, MIN_AUTO_RING_BYTES);
        // The cap never forbids the four records a ring needs.
        let big = 8 << 20;
        assert_eq!(
            auto_ring(&w, big, MIB).ring_bytes,
            4 * (big + ENTRY_HEADER_LEN)
        );
    }

    #[test]
    fn the_cap_is_an_eighth_of_memory_up_to_256_mib() {
        assert_eq!(ring_cap(Some(512 * MIB)), 64 * MIB);
        assert_eq!(ring_cap(Some(64 * 1024 * MIB)), MAX_AUTO_RING_BYTES);
        assert_eq!(ring_cap(None), MAX_AUTO_RING_BYTES);
    }

    #[test]
    fn a_fixed_ring_reports_what_it_covers_at_the_rate() {
        let w = Workload {
            period_ns: Some(10_000_000),
            ..Workload::UNKNOWN
        };
        let entry = 1000 - ENTRY_HEADER_LEN;
        let f = auto_ring(&w, entry, CAP).fixed(100_000, entry, w.period_ns);
        assert!(!f.auto);
        assert_eq!(f.ring_bytes, 100_000);
        assert_eq!(f.covers_stall_s, Some(1.0));
    }

    #[test]
    fn the_ring_holds_one_period_per_whole_entry_and_nothing_known_without_a_rate() {
        // 16 MiB of 16 KiB records (+ 24 B headers): 1022 entries of 5 ms.
        let held = ring_seconds(16 * MIB, 16 << 10, Some(5_000_000));
        assert_eq!(held, Some(1022.0 * 5e6 / 1e9));
        assert_eq!(ring_seconds(16 * MIB, 16 << 10, None), None);
        assert_eq!(ring_seconds(16 * MIB, 16 << 10, Some(0)), None);
    }

    #[test]
    fn a_zero_period_counts_as_unknown_instead_of_dividing_by_zero() {
        let w = Workload {
            period_ns: Some(0),
            ..Workload::UNKNOWN
        };
        let spans = Spans {
            pre_ns: 1,
            post_ns: 1,
        };
        assert_eq!(
            sizes(&w, 1, 1, Some(spans), CAP).pre_bytes,
            DEFAULT_PRE_BYTES
        );
    }
}
