//! `record`'s storage flags — how records are laid out and written to
//! files and made durable: allocation, back-end, flushing, file size and
//! layout, the pool, a loop recording's disk budget — their part of the
//! engine's configuration ([`StorageArgs::apply`]). The file size's rule
//! (given, the pool's, the open-ended default fitted to the free space, a
//! known length's exact need) is the engine's (`rtrec_engine::sizing`), so
//! the C API follows it too.

use clap::Args;
use rtrec_engine::{
    Alloc, Config, Flush, Framing, Io, KeepScope, OnPoolEmpty, PoolConfig, DEFAULT_IO_BLOCK,
    DEFAULT_SYNC_EVERY_NS,
};
use rtrec_units::format_size;
use rtrec_units::value::{Duration, Size};

/// How records are stored.
#[derive(Debug, Args)]
pub struct StorageArgs {
    /// Allocation strategy: how file space is obtained (zero when the framing is raw and --alloc is not given).
    #[arg(
        long,
        value_enum,
        default_value_t = Config::default().alloc,
        default_value_if("raw", "true", "zero"),
        default_value_if("framing", "raw", "zero"),
        value_name = "STRATEGY"
    )]
    pub alloc: Alloc,

    /// Write back-end: how frames reach the file (each value's help below says how it writes; docs/durability.md).
    #[arg(long, value_enum, default_value_t = Config::default().io, value_name = "BACKEND")]
    pub io: Io,

    /// With --io direct, uring or uring-buffered: the gathering buffer (a power of two, 4KiB-64MiB; io_uring registers --io-depth of them).
    #[arg(long, value_parser = rtrec_units::value::size, default_value_t = Size::from_bytes(DEFAULT_IO_BLOCK), value_name = "SIZE")]
    pub io_block: Size,

    /// With --io uring or uring-buffered: writes in flight and registered buffers (1-64).
    #[arg(long, default_value_t = Config::default().io_depth, value_name = "N")]
    pub io_depth: u32,

    /// Flush strategy: how and when written data are pushed to storage (on the flush thread).
    #[arg(long, value_enum, default_value_t = Config::default().flush, value_name = "STRATEGY")]
    pub flush: Flush,

    /// Flush interval.
    #[arg(long, value_parser = rtrec_units::value::size, default_value_t = Size::from_bytes(Config::default().flush_every), value_name = "SIZE")]
    pub flush_every: Size,

    /// Make written records durable (fdatasync on the flush thread) at least this often; 0: only when a file is closed.
    #[arg(long, value_parser = rtrec_units::value::interval_or_zero, default_value_t = Duration::from_ns(DEFAULT_SYNC_EVERY_NS), value_name = "DURATION")]
    pub sync_every: Duration,

    /// Bytes per file [default: a recording of known length (--count, --total, --duration with records of one size): exactly its need, in one file (a pool file when one is ready and large enough; the pool is never resized by it); else the directory's pool's size when a person set it (--file-size, pool prepare) or files of it are ready; else 64MiB, or a quarter of the free space when less (at least 1MiB)]. Giving it sets the pool's size (a pool of another size is resized).
    #[arg(long, value_parser = rtrec_units::value::size, value_name = "SIZE")]
    pub file_size: Option<Size>,

    /// File layout [default: packed when --size is at most 1KiB or with --lines, else framed].
    #[arg(long, value_enum, value_name = "FRAMING")]
    pub framing: Option<Framing>,

    /// The longest data wait in the writer for more to come: with packed framing, a record in an open frame; with --io buffered, direct or uring in ring mode (framed or raw), a frame's partial last block, held for the next frame to write whole (a kill or power cut loses at most this span).
    #[arg(long, value_parser = rtrec_units::value::interval, default_value_t = Duration::from_ns(Config::default().max_latency_ns), value_name = "DURATION")]
    pub max_latency: Duration,

    /// Same as --framing raw: the bytes exactly as given (counters go to a .meta.json sidecar).
    #[arg(long, conflicts_with = "framing")]
    pub raw: bool,

    /// Most files the pool keeps ready (with --alloc pool, the default): after the recording the refill replaces the files it took, up to N.
    #[arg(long, default_value_t = 2, value_name = "N")]
    pub pool_files: u32,

    /// When the pool has no file ready.
    #[arg(long, value_enum, default_value_t = PoolConfig::default().on_empty, value_name = "POLICY")]
    pub on_pool_empty: OnPoolEmpty,

    /// Do not top the pool up after the recording.
    #[arg(long)]
    pub no_refill: bool,

    /// Top the pool up while recording, on a nice-19 idle-I/O thread.
    #[arg(long)]
    pub refill_while_recording: bool,

    /// Loop recording: keep the loop's finished files, and its own earlier loop recordings (see --keep-scope), within SIZE (the newest max(1, SIZE / file size) files' worth); older files, the earlier recordings first, are retired at the start and at each file switch (recycled into the pool, or deleted). Disk use stays within SIZE + one file + the pool's spare files; a SIZE larger than the card is clamped at the start, and one budget is allowed per directory (docs/unattended.md).
    #[arg(long, value_parser = rtrec_units::value::size, value_name = "SIZE")]
    pub keep: Option<Size>,

    /// Loop recording: keep at most N finished files (with --keep or --keep-for, the strictest limit wins).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..), value_name = "N")]
    pub keep_files: Option<u32>,

    /// Loop recording: retire a finished file once its last record is older than DURATION (e.g. 7d; checked at each file switch, so a file lives at most DURATION + one file's span).
    #[arg(long, value_parser = rtrec_units::value::span, value_name = "DURATION")]
    pub keep_for: Option<Duration>,

    /// Loop recording: which earlier recordings of the directory the budget covers. own: the loop's own, earlier loop recordings of the same --prefix (nothing else is ever retired); dir: every closed recording of the directory, each one retired that the loop does not own named at the start and in the summary (docs/unattended.md).
    #[arg(long, value_enum, default_value_t = KeepScope::Own, value_name = "SCOPE")]
    pub keep_scope: KeepScope,

    /// Loop recording in a directory `rtrec ship` sends (its ledger .shipped is there; giving this option makes the directory shipped even before the first send): the directory may exceed the budget by up to SIZE to keep earlier recordings not yet shipped; shipped ones always leave first, and beyond SIZE unshipped ones leave too, each counted (retired_unshipped_files) and named. Default 0: the budget holds and unshipped files over it leave at once, counted. Clamped to the card at the start (docs/unattended.md, "The budget knows").
    #[arg(long, value_parser = rtrec_units::value::size, value_name = "SIZE")]
    pub unshipped_headroom: Option<Size>,
}

impl StorageArgs {
    /// Its part of the engine's configuration. The framing's default
    /// depends on the records, so the source's part (`max_record`,
    /// `lines`) is applied first; `file_size` stays 0 without
    /// `--file-size`, sized when the plan is settled.
    pub fn apply(&self, cfg: &mut Config) {
        // Strategies are typed by the command line (raw framing's default
        // allocation is `zero` there: raw files have no header for the pool).
        cfg.alloc = self.alloc;
        cfg.io = self.io;
        cfg.io_block = self.io_block.bytes();
        cfg.io_depth = self.io_depth;
        cfg.flush = self.flush;
        cfg.flush_every = self.flush_every.bytes();
        // 0 is allowed here: durable points only when a file is closed.
        cfg.sync_every_ns = self.sync_every.ns();
        cfg.file_size = self.file_size.map_or(0, Size::bytes);
        cfg.framing = match (self.raw, self.framing) {
            (true, _) => Framing::Raw,
            (false, Some(f)) => f,
            // Small records are packed unless the user chose (see --framing).
            (false, None) if cfg.lines => Framing::Packed,
            (false, None) => Framing::auto(cfg.max_record),
        };
        cfg.max_latency_ns = self.max_latency.ns();
        cfg.pool.files = self.pool_files;
        cfg.pool.on_empty = self.on_pool_empty;
        cfg.pool.refill_on_finish = !self.no_refill;
        cfg.pool.refill_while_recording = self.refill_while_recording;
        cfg.retention.keep_bytes = self.keep.map_or(0, Size::bytes);
        cfg.retention.keep_files = self.keep_files.unwrap_or(0);
        cfg.retention.keep_for_ns = self.keep_for.map_or(0, Duration::ns);
        cfg.retention.scope = self.keep_scope;
        cfg.retention.unshipped_headroom = self.unshipped_headroom.map(Size::bytes);
    }
}

/// The warning of a recording whose files, at the expected rate, would
/// last less than a second (`rtrec_engine::sizing::MIN_FILE_SPAN_NS`):
/// `cfg` as created (its file size chosen), one record every `period_ns`
/// (`None`: the rate is unknown, no warning), `count` records in all when
/// known (a recording that fits in one file never switches).
pub fn switch_warning(cfg: &Config, period_ns: Option<u64>, count: Option<u64>) -> Option<String> {
    let stored = cfg.stored_len(cfg.max_record);
    let usable = cfg.usable_file_bytes();
    let span = rtrec_engine::sizing::file_span_ns(usable, stored, period_ns)?;
    let per_file = (usable / stored.max(1)).max(1);
    if span >= rtrec_engine::sizing::MIN_FILE_SPAN_NS || count.is_some_and(|n| n <= per_file) {
        return None;
    }
    // A second's records, with the file's header and reserved tail, in
    // whole MiB: a size the command line reads back.
    let period = period_ns.unwrap_or(1);
    let second = rtrec_engine::sizing::MIN_FILE_SPAN_NS.div_ceil(period);
    let overhead = cfg.file_size - usable + rtrec_engine::format::HEADER_LEN as u64;
    let mib = second
        .saturating_mul(stored)
        .saturating_add(overhead)
        .div_ceil(rtrec_engine::MIB);
    Some(format!(
        "files of {} hold {per_file} record(s) of {}: at one every {} the recording switches files every {}, more often than once a second; give a larger --file-size (--file-size {mib}MiB holds a second)",
        format_size(cfg.file_size),
        format_size(cfg.max_record as u64),
        rtrec_units::format_duration(period),
        rtrec_units::format_duration(span)
    ))
}
