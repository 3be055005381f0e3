//! The command line, as data: one definition per flag with its help text.
//!
//! Design choices:
//! - A command whose flags come in groups defines them beside the code
//!   that applies them, and this module flattens them: `record`'s groups
//!   (`crate::record`, one module per group), `--explain`
//!   (`crate::explain`), `--io-class` (`crate::isolation`), `--device`
//!   (`crate::device`), `rtrec trigger`'s argument (`crate::trigger`).
//!   The other commands' flags are here.
//! - Strategy flags are typed with the engine's own enums (`clap::ValueEnum`
//!   from the engine's `clap` feature), and their defaults are read from
//!   `Config::default()`: `--help` lists every value with the variant's
//!   documentation and shows `[default: …]`, and neither can drift from the
//!   engine.
//! - Sizes and durations are typed ([`Size`], [`Duration`](rtrec_units::value::Duration)) and parsed by
//!   `rtrec-units`' one parser per kind of value (`value_parser =
//!   rtrec_units::value::record_size`, `span`, …), the same for every command: a
//!   bare number suggests the unit that fits the flag, and zero gets one
//!   sentence everywhere. Their defaults are the engine's constants (or
//!   named constants beside their flags), shown by `--help` through the
//!   values' exact
//!   `Display`.
//! - Every clap error is printed as one line `rtrec: …` and exit code 2
//!   ([`parse`]), as every other bad input is; a bad value reads
//!   `--flag: <the parser's sentence>`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use rtrec_engine::sizing::DEFAULT_FILE_SIZE;
use rtrec_units::value::Size;

/// `doctor --planned`'s default.
pub const DEFAULT_PLANNED: Size = Size::from_bytes(100 << 20);

/// Parses the command line; on a bad command line prints one line
/// (`rtrec: ` and clap's message with its hints, without the usage block)
/// and exits with code 2. `--help` and `--version` print and exit 0.
pub fn parse() -> Cli {
    match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => e.exit(),
        // Bare `rtrec` (or `rtrec pool`): the whole help with its command
        // list on stderr, exit 2 — not the one-line form of a mistake.
        Err(e) if e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            e.exit()
        }
        Err(e) => {
            eprintln!("rtrec: {}", one_line(&e));
            std::process::exit(2);
        }
    }
}

/// Clap's message on one line: without the `error: ` prefix, the usage
/// block and the pointer to `--help`. A value its parser refused reads
/// `--flag: <the parser's sentence>` (the sentence quotes the value).
fn one_line(e: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if let (ErrorKind::ValueValidation, Some(ContextValue::String(arg)), Some(why)) = (
        e.kind(),
        e.get(ContextKind::InvalidArg),
        std::error::Error::source(e),
    ) {
        let flag = arg.split_whitespace().next().unwrap_or(arg);
        return format!("{flag}: {why}");
    }
    let text = e.render().to_string();
    let parts: Vec<&str> = text
        .lines()
        .map(str::trim)
        .take_while(|l| !l.starts_with("Usage:"))
        .filter(|l| !l.is_empty() && !l.starts_with("For more information"))
        .collect();
    let joined = parts.join(" ");
    joined
        .strip_prefix("error: ")
        .unwrap_or(&joined)
        .to_string()
}

/// The examples at the end of each command's `--help` (2 to 4 each; a test
/// checks every command has them).
const EXAMPLES_VERIFY: &str = "Exit status: 0 every file clean, 1 not clean (a gap, damage, a torn \
     tail or an unfinished file: the report says which), 2 a usage or I/O error.\n\nExamples:\n  rtrec verify ./rtrec-data\n  rtrec verify --json rec-0001.rtr | jq .files";
const EXAMPLES_TUNE: &str = "Examples:\n  rtrec tune status\n  rtrec tune --restore";
const EXAMPLES_POOL: &str = "Examples:\n  rtrec pool prepare --files 2 --file-size 128MiB\n  rtrec pool status --json\n  rtrec pool recycle --all";
const EXAMPLES_EVENTS: &str =
    "Examples:\n  rtrec events ./rtrec-data\n  rtrec events --json ./rtrec-data";
#[cfg(feature = "tables")]
const EXAMPLES_LS: &str = "Examples:\n  rtrec ls\n  rtrec ls /mnt/data/rec --json | jq '.recordings[] | select(.lost > 0)'";
#[cfg(feature = "tables")]
const EXAMPLES_INFO: &str = "Examples:\n  rtrec info ./rtrec-data\n  rtrec info ./rtrec-data/rec-0000.rtr\n  rtrec info /mnt/data/rec --recording 3f2a --json | jq .durable";
const EXAMPLES_EXPORT: &str = "Examples:\n  rtrec export ./run1 -o - | cmp - input.bin\n  rtrec export --salvage --framed broken.rtr -o saved.rtr\n  rtrec export ./rtrec-data --from +60s --to +70s -o minute.csv.gz\n  rtrec export ./rtrec-data --recording 3f2a9c0e --format mcap --layout t:u32,x:f32,y:f32 -o run.mcap";
const EXAMPLES_DOCTOR: &str = "Examples:\n  rtrec doctor\n  rtrec doctor /mnt/data --planned 4GiB\n  rtrec doctor --json | jq '.checks[] | select(.status != \"pass\")'";
#[cfg(feature = "report")]
const EXAMPLES_REPORT: &str = "Examples:\n  rtrec bench --json result.json && rtrec report result.json -o report.html\n  rtrec record --total 10MiB --json summary.json && rtrec report summary.json -o summary.html\n  rtrec report result.json --box-plot -o boxplot.svg";
#[cfg(feature = "ship")]
const EXAMPLES_FETCH: &str = "Examples:\n  rtrec ls s3://fleet/recordings                      # what every device shipped there\n  rtrec fetch s3://fleet/recordings/plant-3/2026-12-07/5c2b4613d1412984 ./got --endpoint https://s3.example.net\n  rtrec verify ./got";
#[cfg(feature = "ship")]
const EXAMPLES_SHIP: &str = "Examples:\n  AWS_ACCESS_KEY_ID=… AWS_SECRET_ACCESS_KEY=… rtrec ship rtrec-data --to s3://fleet/recordings --endpoint https://s3.example.net\n  rtrec ship /var/lib/rtrec/plant --to s3://fleet/rec --watch --bwlimit 2MiB --after-ship delete";
#[cfg(feature = "bench")]
const EXAMPLES_BENCH: &str = "Examples:\n  rtrec bench --cases NONE,ALL --html report.html\n  rtrec bench --paper --json paper.json --export-markdown paper.md\n  rtrec bench --compare old.json new.json";
#[cfg(feature = "completions")]
const EXAMPLES_COMPLETIONS: &str = "Examples:\n  rtrec completions bash > /etc/bash_completion.d/rtrec\n  rtrec completions zsh > ~/.zfunc/_rtrec";
#[cfg(feature = "man")]
const EXAMPLES_MAN: &str = "Examples:\n  rtrec man | man -l -\n  rtrec man record > rtrec-record.1";
const EXAMPLES_PREPARE: &str = "Examples:\n  rtrec pool prepare\n  rtrec pool prepare --dir /mnt/data/rec --files 3 --file-size 256MiB";
const EXAMPLES_POOL_STATUS: &str =
    "Examples:\n  rtrec pool status\n  rtrec pool status --dir /mnt/data/rec --json";
const EXAMPLES_RECYCLE: &str =
    "Examples:\n  rtrec pool recycle --all\n  rtrec pool recycle ./rtrec-data/rec-0003.rtr";
const EXAMPLES_TRIGGER: &str =
    "Examples:\n  rtrec trigger ./rtrec-data\n  rtrec trigger /mnt/data/flight";
const EXAMPLES_RECOVER: &str = "Examples:\n  rtrec recover ./rtrec-data\n  rtrec recover /mnt/data/rec && rtrec verify /mnt/data/rec";
const EXAMPLES_DEVICE: &str = "Examples:\n  rtrec device probe /mnt/data -o board.json\n  rtrec bench --device board.json --cases NONE,ALL";
const EXAMPLES_TRIM: &str =
    "Examples:\n  rtrec pool trim --keep 1\n  rtrec pool trim --dir /mnt/data/rec --keep 0";
const EXAMPLES_REMOVE: &str =
    "Examples:\n  rtrec pool remove\n  rtrec pool remove --dir /mnt/data/rec";
const EXAMPLES_TUNE_STATUS: &str =
    "Examples:\n  rtrec tune status\n  rtrec tune status --json | jq .journal.owners";

/// Record periodic data to files with bounded write() latency and no silent
/// loss; verify recordings; measure how far a platform's write() latency is
/// from the page-cache minimum.
#[derive(Debug, Parser)]
#[command(
    name = "rtrec",
    version,
    about,
    max_term_width = 100,
    arg_required_else_help = true
)]
pub struct Cli {
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// The durability contract, as `rtrec record --help` states it (the long
/// form is docs/durability.md).
macro_rules! durability {
    () => {
        "\
Durability: a record is queued when record() accepted it, written when write() returned,\n\
durable when synced to storage. If the process dies, every written record survives (in\n\
inline mode: every record stored without error; in ring mode: what the writer had written,\n\
not what was still queued). After a power cut, every record before the last durable point\n\
(durable_seq) survives; --sync-every bounds how far behind the durable point can be. A\n\
write error (full disk, EIO) ends the recording: the lost records are stored as a loss,\n\
the file is marked aborted, and the exit code is 1. After a crash, `rtrec recover DIR` (or\n\
--recover-first) closes each interrupted recording at its last intact frame (never below\n\
its durable point) and gives its unused space back. See docs/durability.md."
    };
}

/// `rtrec record --help` ends with the durability contract, then examples.
const RECORD_AFTER_HELP: &str = concat!(
    durability!(),
    "\n\n",
    "Examples:\n  rtrec record --period 5ms --size 16KiB --total 100MiB\n  rtrec record --duration 10s --rt --cpu 1\n  some-sensor | rtrec record --stdin --lines --dir logs\n  rtrec record --pre 2s --post 5s --trigger-on SIGUSR1"
);

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Record a synthetic periodic source (the S1 workload by default) or records from stdin.
    #[command(after_help = RECORD_AFTER_HELP)]
    Record(Box<crate::record::RecordArgs>),
    /// Close the recordings a crash, kill or power cut interrupted (whose recorder is gone), so they verify clean.
    #[command(after_help = EXAMPLES_RECOVER)]
    Recover(RecoverArgs),
    /// Check recordings: records, sequence gaps, stored losses, torn or corrupt tails.
    #[command(after_help = EXAMPLES_VERIFY)]
    Verify(VerifyArgs),
    /// Show, or put back, the global settings rtrec changes (sysctls, mounts, schedulers).
    #[command(after_help = EXAMPLES_TUNE)]
    Tune(TuneArgs),
    /// Manage the file pool of a recording directory (files prepared while idle).
    #[command(after_help = EXAMPLES_POOL)]
    Pool(PoolArgs),
    /// List flight-recorder events: trigger time, pre/post spans, files, records, losses.
    #[command(after_help = EXAMPLES_EVENTS)]
    Events(EventsArgs),
    /// List the recordings of a directory: id, start, duration, records, losses, state, files, size.
    #[cfg(feature = "tables")]
    #[command(after_help = EXAMPLES_LS)]
    Ls(crate::ls::LsArgs),
    /// One recording's facts on one screen: id, state, files, records, losses, time span, rate, record sizes, budget, durable point.
    #[cfg(feature = "tables")]
    #[command(after_help = EXAMPLES_INFO)]
    Info(InfoArgs),
    /// Send the closed recordings of a directory to S3-compatible object storage, exactly once and verified (docs/ship.md).
    #[cfg(feature = "ship")]
    #[command(after_help = EXAMPLES_SHIP)]
    Ship(Box<crate::ship::ShipArgs>),
    /// Download one shipped recording from S3-compatible object storage into a directory, each file checked against its manifest (docs/ship.md, "The fleet side").
    #[cfg(feature = "ship")]
    #[command(after_help = EXAMPLES_FETCH)]
    Fetch(crate::ship::fleet::FetchArgs),
    /// Write the records of a recording (a directory or its files, in sequence order) to one file: raw bytes, frames, CSV or JSON lines with times and gaps.
    #[command(after_help = EXAMPLES_EXPORT)]
    Export(ExportArgs),
    /// Check whether this machine and DIR's filesystem and device are fit for real-time recording.
    #[command(after_help = EXAMPLES_DOCTOR)]
    Doctor(DoctorArgs),
    /// Draw a bench result or a recording summary (their --json) as one self-contained HTML page.
    #[cfg(feature = "report")]
    #[command(after_help = EXAMPLES_REPORT)]
    Report(ReportArgs),
    /// Trigger the flight recorder running in a directory (as SIGUSR1 does).
    #[command(after_help = EXAMPLES_TRIGGER)]
    Trigger(crate::trigger::TriggerArgs),
    /// Reproduce the published studies on this machine, published figure beside measured.
    #[cfg(feature = "bench")]
    #[command(after_help = EXAMPLES_BENCH)]
    Bench(Box<rtrec_bench::BenchArgs>),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) on stdout.
    #[cfg(feature = "completions")]
    #[command(after_help = EXAMPLES_COMPLETIONS)]
    Completions {
        /// The shell.
        #[arg(value_enum, value_name = "SHELL")]
        shell: clap_complete::Shell,
    },
    /// Print the man page of rtrec, or of one command, as roff on stdout.
    #[cfg(feature = "man")]
    #[command(after_help = EXAMPLES_MAN)]
    Man {
        /// The command whose page to print (record, bench, …); none: rtrec's own page.
        #[arg(value_name = "COMMAND")]
        command: Option<String>,
    },
    /// Measure the storage under a directory into a device profile for `--device`.
    #[command(after_help = EXAMPLES_DEVICE)]
    Device(crate::device::DeviceArgs),
    /// A background load of the bench (run by `rtrec bench` itself).
    #[cfg(feature = "bench")]
    #[command(name = "__bgload", hide = true)]
    BgLoad {
        /// The load's arguments.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// An emulated storage device (run by `rtrec bench --device` itself).
    #[cfg(feature = "emu")]
    #[command(name = "__emulate", hide = true)]
    Emulate {
        /// The emulator's arguments.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// A command this build left out (see [`left_out`]), or an unknown one.
    #[cfg(commands_left_out)]
    #[command(external_subcommand)]
    LeftOut(Vec<String>),
}

/// A command that a build without some cargo features left out (`bench`,
/// `report`, `__bgload`, `__emulate`, `completions`, `man`, `ls`, `info`, `ship`, `fetch`): one sentence
/// naming the feature, exit code 2. Any other name is an unknown
/// subcommand, in clap's words.
///
/// # Errors
/// Always: the sentence.
#[cfg(commands_left_out)]
pub fn left_out(args: &[String]) -> crate::error::Result<i32> {
    use crate::error::left_out;
    match args.first().map_or("", String::as_str) {
        "bench" | "__bgload" => left_out("the bench", "bench"),
        "report" => left_out("the HTML report", "report"),
        "__emulate" => left_out("the device emulator", "emu"),
        "completions" => left_out("the shell completion generator", "completions"),
        "man" => left_out("the man page generator", "man"),
        "ls" => left_out("`rtrec ls`", "tables"),
        "info" => left_out("`rtrec info`", "tables"),
        "ship" => left_out("`rtrec ship`", "ship"),
        "fetch" => left_out("`rtrec fetch`", "ship"),
        other => crate::error::usage(format!(
            "unrecognized subcommand '{other}' (`rtrec --help` lists the commands)"
        )),
    }
}

/// `rtrec pool`.
#[derive(Debug, Args)]
pub struct PoolArgs {
    /// What to do.
    #[command(subcommand)]
    pub action: PoolAction,
}

/// The recording directory of a `pool` action: a plain argument, as
/// `verify`, `doctor` and `recover` take it, or `--dir` (the spelling
/// `record` uses); `./rtrec-data` when neither is given.
#[derive(Debug, Args)]
pub struct PoolDir {
    /// Recording directory (the pool lives in DIR/.pool) [default: ./rtrec-data].
    #[arg(value_name = "DIR", conflicts_with = "dir_flag")]
    dir: Option<PathBuf>,
    /// The same as DIR.
    #[arg(long = "dir", id = "dir_flag", value_name = "DIR")]
    dir_flag: Option<PathBuf>,
}

impl PoolDir {
    /// The directory given, or `./rtrec-data`.
    pub fn path(&self) -> PathBuf {
        self.dir
            .clone()
            .or_else(|| self.dir_flag.clone())
            .unwrap_or_else(|| PathBuf::from("./rtrec-data"))
    }
}

/// `rtrec pool` actions.
#[derive(Debug, Subcommand)]
pub enum PoolAction {
    /// Create the pool if needed and top it up: allocate and zero-fill files now, while idle.
    #[command(after_help = EXAMPLES_PREPARE)]
    Prepare {
        /// The recording directory.
        #[command(flatten)]
        dir: PoolDir,
        /// Files to keep ready (becomes the pool's target).
        #[arg(long, default_value_t = 2, value_name = "N")]
        files: u32,
        /// Bytes per file; a pool of another size is resized (its idle files are removed first).
        #[arg(long, value_parser = rtrec_units::value::size, default_value_t = Size::from_bytes(DEFAULT_FILE_SIZE), value_name = "SIZE")]
        file_size: Size,
    },
    /// Show the pool: file size, target, every ready file with its bytes on disk, preparations in progress.
    #[command(after_help = EXAMPLES_POOL_STATUS)]
    Status {
        /// The recording directory.
        #[command(flatten)]
        dir: PoolDir,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Give back disk: keep at most N ready files and make N the target.
    #[command(after_help = EXAMPLES_TRIM)]
    Trim {
        /// The recording directory.
        #[command(flatten)]
        dir: PoolDir,
        /// Ready files to keep (0 empties the pool; its target becomes at least 1). [default: 0,
        /// every ready file given back]
        #[arg(long, value_name = "N", default_value_t = 0, hide_default_value = true)]
        keep: u32,
    },
    /// Remove the pool: every ready file, its description and DIR/.pool.
    #[command(after_help = EXAMPLES_REMOVE)]
    Remove {
        /// The recording directory.
        #[command(flatten)]
        dir: PoolDir,
    },
    /// Give finished recordings back to the pool (their data are given up).
    #[command(after_help = EXAMPLES_RECYCLE)]
    Recycle {
        /// Recording directory.
        #[arg(long, default_value = "./rtrec-data", value_name = "DIR")]
        dir: PathBuf,
        /// Recording files to recycle.
        #[arg(value_name = "FILE", required_unless_present = "all")]
        files: Vec<PathBuf>,
        /// Recycle every finished pool-sized recording in DIR.
        #[arg(long)]
        all: bool,
        /// Also recycle unfinished recordings (they may be recording right now).
        #[arg(long)]
        force: bool,
    },
}

/// `rtrec export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The recording: its directory (all its files) or some of its files,
    /// in any order; they are put in sequence order by their headers.
    #[arg(value_name = "FILE|DIR", required = true)]
    pub inputs: Vec<PathBuf>,
    /// Output file, written whole under a temporary name and renamed into
    /// place (an existing one is refused unless --force); `-` writes to
    /// stdout. Without --format its extension names the format (.csv,
    /// .jsonl, .mcap, .rtr framed, .raw or .bin raw; others raw), and a
    /// further .gz or .zst compresses raw and table exports.
    #[arg(short, long, value_name = "OUT")]
    pub output: PathBuf,
    /// Replace OUT if it exists (it is replaced only once the export is
    /// whole and durable).
    #[arg(long)]
    pub force: bool,
    /// What to write [default: by OUT's extension, else raw].
    #[arg(long, value_enum, value_name = "FORMAT", conflicts_with_all = ["raw", "framed"])]
    pub format: Option<ExportFormat>,
    /// Same as `--format raw`.
    #[arg(long, conflicts_with = "framed")]
    pub raw: bool,
    /// Same as `--format framed`.
    #[arg(long)]
    pub framed: bool,
    // The table-only flags' long help is the full build's (feature
    // `tables`): the record-only build refuses them in one sentence, and
    // its 1 MB budget on a board has no room for help it cannot act on.
    #[cfg_attr(
        feature = "tables",
        doc = "With --format csv, jsonl or mcap: how each record's bytes are written [default: \
               text for a recording of lines, else hex (csv, jsonl) or base64 (mcap, which \
               takes text or base64)]; the bytes even of a recording that stores a layout."
    )]
    #[cfg_attr(not(feature = "tables"), doc = "Tables only (feature `tables`).")]
    #[arg(long, value_enum, value_name = "ENCODING", conflicts_with = "layout")]
    pub payload: Option<PayloadEncoding>,
    #[cfg_attr(
        feature = "tables",
        doc = "With --format csv, jsonl, mcap or numpy: decode each record into named, typed columns \
               (MCAP: JSON messages Foxglove can plot), e.g. `t:u32,x:f32,y:f32` (little-endian; \
               `>` first for big-endian; types u8 i8 u16 i16 u32 i32 u64 i64 f16 f32 f64 bool, sN (text of N bytes) and padN; \
               an array as `acc:f32[3]`, columns acc_0, acc_1, …), or \
               Python struct notation such as `<Iff` (columns f0, f1, …). Every record must be \
               the layout's size [default: the layout the recording stores (`record --layout`); \
               `none`, or --payload, for the records' bytes]."
    )]
    #[cfg_attr(not(feature = "tables"), doc = "Tables only (feature `tables`).")]
    #[arg(long, value_name = "LAYOUT")]
    pub layout: Option<String>,
    #[cfg_attr(
        feature = "tables",
        doc = "With --format mcap: the records' topic (the gaps are on TOPIC/gaps) \
               [default: /rtrec/records, the same for every recording, so a saved Foxglove \
               layout fits the next one]."
    )]
    #[cfg_attr(not(feature = "tables"), doc = "MCAP only (feature `tables`).")]
    #[arg(long, value_name = "TOPIC")]
    pub topic: Option<String>,
    #[cfg_attr(
        feature = "tables",
        doc = "With --format mcap: how its chunks are compressed [default: zstd]."
    )]
    #[cfg_attr(not(feature = "tables"), doc = "MCAP only (feature `tables`).")]
    #[arg(long, value_enum, value_name = "HOW")]
    pub mcap_compression: Option<McapCompression>,
    #[cfg_attr(
        feature = "tables",
        doc = "The first record to export, inclusive: a sequence number (1200), a UTC time (2026-12-06T23:46:54.5Z, as the tables write it) or a time after the recording's first record (+10s); gaps inside the range stay rows."
    )]
    #[cfg_attr(not(feature = "tables"), doc = "Tables only (feature `tables`).")]
    #[arg(long, value_name = "SEQ|TIME", value_parser = bound)]
    pub from: Option<Bound>,
    #[cfg_attr(
        feature = "tables",
        doc = "The last record to export, inclusive: a sequence number, a UTC time or +DURATION after the first record, as --from."
    )]
    #[cfg_attr(not(feature = "tables"), doc = "Tables only (feature `tables`).")]
    #[arg(long, value_name = "SEQ|TIME", value_parser = bound)]
    pub to: Option<Bound>,
    #[cfg_attr(
        feature = "tables",
        doc = "Export one record in N: those whose sequence numbers are N apart from the first one exported (gaps stay rows)."
    )]
    #[cfg_attr(not(feature = "tables"), doc = "Tables only (feature `tables`).")]
    #[arg(long, value_name = "N")]
    pub every: Option<u64>,
    /// Which recording of a directory that holds several: its id (as
    /// `rtrec ls` shows it, or a unique prefix) or the name of one of its
    /// files (default: the newest, with the others listed).
    #[arg(long, value_name = "ID|FILE")]
    pub recording: Option<String>,
    #[cfg_attr(
        feature = "tables",
        doc = "With --format csv or jsonl: every recording of the inputs (oldest first, framed copies left out) in one table, with a first column `recording` (its id); each recording's gaps are rows."
    )]
    #[cfg_attr(not(feature = "tables"), doc = "Tables only (feature `tables`).")]
    #[arg(long, conflicts_with = "recording")]
    pub all: bool,
    /// Export the records that can be saved from a corrupt file (exit code
    /// stays 1: the input is corrupt).
    #[arg(long)]
    pub salvage: bool,
    /// Exit 0 even when records are missing from the exported stream
    /// (dropped, lost without a trace, or in a missing file of the
    /// recording); they are still reported.
    #[arg(long)]
    pub allow_gaps: bool,
}

/// One end of `--from`/`--to`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    /// A sequence number.
    Seq(u64),
    /// A wall time, ns since the epoch.
    Wall(u64),
    /// A time after the recording's first record, ns.
    After(u64),
}

/// Parses a bound of `export --from`/`--to`: digits are a sequence
/// number, RFC 3339 UTC a wall time, `+DURATION` a time after the
/// recording's first record (`crate::export::range` applies them).
///
/// # Errors
/// One sentence quoting `s`.
pub fn bound(s: &str) -> Result<Bound, String> {
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        return s
            .parse()
            .map(Bound::Seq)
            .map_err(|_| format!("'{s}' is too large for a sequence number"));
    }
    if let Some(d) = s.strip_prefix('+') {
        return rtrec_units::parse_duration(d)
            .map(Bound::After)
            .map_err(|e| format!("'{s}': {e}"));
    }
    rtrec_engine::parse_utc_iso(s).map(Bound::Wall).ok_or_else(|| {
        format!(
            "'{s}' is neither a sequence number (1200), a UTC time (2026-12-06T23:46:54.5Z) nor a time after the first record (+10s)"
        )
    })
}

/// `rtrec export --format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    /// The records' bytes back to back (a recording of lines gets its
    /// newlines back).
    Raw,
    /// An rtrec file (header and frames up to the valid end; `rtrec
    /// verify` accepts it); one input file only.
    Framed,
    #[cfg_attr(
        feature = "tables",
        doc = "A CSV table: a row per record (seq, wall_time, mono_ns, exact, len, payload or the \
               layout's columns) and a row per gap with its reason."
    )]
    #[cfg_attr(not(feature = "tables"), doc = "Tables only (feature `tables`).")]
    Csv,
    #[cfg_attr(
        feature = "tables",
        doc = "JSON lines: an object per record and per gap, with the CSV's keys."
    )]
    #[cfg_attr(not(feature = "tables"), doc = "Tables only (feature `tables`).")]
    Jsonl,
    #[cfg_attr(
        feature = "tables",
        doc = "MCAP for Foxglove and MCAP's tools: a JSON message per record on --topic (the \
               fields with --layout, else the bytes in base64 or the text) and per gap on \
               TOPIC/gaps, zstd chunks; binary, so -o - only into a pipe."
    )]
    #[cfg_attr(not(feature = "tables"), doc = "Tables only (feature `tables`).")]
    Mcap,
    #[cfg_attr(
        feature = "tables",
        doc = "For NumPy: a JSON header line, then a fixed-width binary row per record and per \
               gap (a 32-byte stamp: seq, wall_ns, mono_ns, len, flags, reason; then the \
               record's bytes) that np.frombuffer reads with the header's dtype; binary, so -o - \
               only into a pipe (docs/export.md)."
    )]
    #[cfg_attr(not(feature = "tables"), doc = "Tables only (feature `tables`).")]
    Numpy,
    #[cfg_attr(
        feature = "tables",
        doc = "Apache Parquet for pandas, polars, DuckDB and Arrow: the CSV's columns with \
               Parquet's types (the --layout fields typed, wall_time a UTC timestamp), a row per \
               record and per gap (its record columns null), Snappy pages; binary, so -o - only \
               into a pipe."
    )]
    #[cfg_attr(not(feature = "tables"), doc = "Tables only (feature `tables`).")]
    Parquet,
    #[cfg_attr(
        feature = "arrow",
        doc = "Apache Arrow IPC, the file format (.arrow, Feather v2) for pyarrow and polars: \
               the Parquet export's columns with Arrow's own types, uncompressed, for a reader \
               to map; binary, so -o - only into a pipe."
    )]
    #[cfg_attr(not(feature = "arrow"), doc = "Arrow only (feature `arrow`).")]
    Arrow,
    #[cfg_attr(
        feature = "arrow",
        doc = "Apache Arrow IPC, the stream format (.arrows): --format arrow's table read as it \
               arrives (pyarrow.ipc.open_stream, polars.read_ipc_stream, the Python package's \
               to_arrow()); binary, so -o - only into a pipe."
    )]
    #[cfg_attr(not(feature = "arrow"), doc = "Arrow only (feature `arrow`).")]
    #[value(name = "arrow-stream")]
    ArrowStream,
}

/// `rtrec export --mcap-compression`: MCAP's chunk compressions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum McapCompression {
    /// Zstandard (the default): the smallest, and what `mcap compress` writes.
    Zstd,
    /// LZ4: faster to write and read, larger.
    Lz4,
    /// Uncompressed chunks.
    #[value(name = "none")]
    Uncompressed,
}

/// `rtrec export --payload`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum PayloadEncoding {
    /// Lower-case hex.
    Hex,
    /// Standard base64 with padding.
    Base64,
    /// The bytes as UTF-8 text (a record that is not is refused).
    Text,
}

/// `rtrec info`.
#[cfg(feature = "tables")]
#[derive(Debug, clap::Args)]
pub struct InfoArgs {
    /// A recording file, or a recording directory (its newest recording
    /// unless --recording picks another).
    #[arg(value_name = "RECORDING|DIR")]
    pub path: PathBuf,
    /// Print JSON (one object with `schema_version`,
    /// docs/recordings-schema.md) instead of the text.
    #[arg(long)]
    pub json: bool,
    /// Which recording of a directory: its id (as `rtrec ls` shows it, or
    /// a unique prefix) or one of its files' names.
    #[arg(long, value_name = "ID|FILE")]
    pub recording: Option<String>,
}

/// `rtrec recover`.
#[derive(Debug, Args)]
pub struct RecoverArgs {
    /// Recording directory (its pool is DIR/.pool).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
}

/// `rtrec verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Files or directories of recordings.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,

    /// Print the report as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// `rtrec events`.
#[derive(Debug, Args)]
pub struct EventsArgs {
    /// Recording directories (or event files).
    #[arg(required = true, value_name = "DIR")]
    pub paths: Vec<PathBuf>,

    /// Print the events as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// `rtrec report`.
#[cfg(feature = "report")]
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A `rtrec bench --json` result or a `rtrec record --json` summary; `-` reads stdin.
    #[arg(value_name = "RESULT.json")]
    pub input: PathBuf,

    /// The HTML file to write (replaced atomically); `-` writes to stdout.
    #[arg(short, long, value_name = "OUT.html")]
    pub output: PathBuf,

    /// Write only the box plot of a bench result, as a standalone SVG (for documents and slides).
    #[arg(long)]
    pub box_plot: bool,
}

/// `rtrec doctor`.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// The recording directory to check (it need not exist yet: its nearest existing parent is checked).
    #[arg(default_value = "./rtrec-data", value_name = "DIR")]
    pub dir: PathBuf,

    /// Size of the recording planned, checked against the free space.
    #[arg(long, value_parser = rtrec_units::value::size, default_value_t = DEFAULT_PLANNED, value_name = "SIZE")]
    pub planned: Size,

    /// The planned rate, one record of SIZE every PERIOD (16KiB/5ms, 4MiB/s): the ring is sized for it as rtrec record would, and checked against the available memory and RLIMIT_MEMLOCK [default: the default ring].
    #[arg(long, value_name = "SIZE/PERIOD")]
    pub rate: Option<String>,

    /// Print the checks as JSON on stdout.
    #[arg(long)]
    pub json: bool,

    /// List the checks (id, group, what each checks) and exit; docs/doctor.md says what each reads.
    #[arg(long)]
    pub list: bool,

    /// Also measure the device under DIR with a short `rtrec device probe` (about 16 MiB written to a scratch file in DIR, removed after; DIR must exist).
    #[arg(long)]
    pub probe: bool,
}

/// `rtrec tune`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct TuneArgs {
    /// What to show (without: `status`).
    #[command(subcommand)]
    pub action: Option<TuneAction>,

    /// Put back every change left by rtrec processes that are no longer running.
    #[arg(long)]
    pub restore: bool,

    /// With --restore: also undo the changes of rtrec processes still running.
    #[arg(long, requires = "restore")]
    pub force: bool,
}

/// `rtrec tune` actions.
#[derive(Debug, Subcommand)]
pub enum TuneAction {
    /// The journal in words: what rtrec has changed, by whom, since when; who holds the global lock; the vm.dirty_* settings.
    #[command(after_help = EXAMPLES_TUNE_STATUS)]
    Status {
        /// Print JSON on stdout.
        #[arg(long)]
        json: bool,
    },
}

/// `rtrec completions SHELL`: the completion script, generated from the
/// one definition of the command line.
#[cfg(feature = "completions")]
pub fn completions(shell: clap_complete::Shell) -> crate::error::Result<i32> {
    let mut out = std::io::stdout().lock();
    clap_complete::generate(shell, &mut completable(), "rtrec", &mut out);
    Ok(0)
}

/// The command line as completion offers it: without the hidden commands
/// (`__bgload`, `__emulate`: rtrec's own helpers, run by the bench and the
/// device emulator, never typed), which clap_complete would list. Clap has
/// no way to drop a subcommand, so the root is built again with the
/// visible ones.
#[cfg(feature = "completions")]
fn completable() -> clap::Command {
    use clap::CommandFactory;
    let root = Cli::command();
    let visible: Vec<clap::Command> = root
        .get_subcommands()
        .filter(|c| !c.is_hide_set())
        .cloned()
        .collect();
    clap::Command::new("rtrec")
        .version(env!("CARGO_PKG_VERSION"))
        .about(root.get_about().cloned().unwrap_or_default())
        .subcommands(visible)
}

/// A man page whose header names rtrec and its version (`.TH rtrec-recover
/// 1 "" "rtrec 0.1.0"`): clap_mangen would write the command's own name and
/// version, and a subcommand has none (`"recover "`).
#[cfg(feature = "man")]
fn man_page(cmd: clap::Command) -> clap_mangen::Man {
    clap_mangen::Man::new(cmd).source(format!("rtrec {}", env!("CARGO_PKG_VERSION")))
}

/// `rtrec man [COMMAND]`: the man page (roff) of rtrec or of one command,
/// generated from the one definition of the command line.
#[cfg(feature = "man")]
pub fn man(command: Option<&str>) -> crate::error::Result<i32> {
    use clap::CommandFactory;
    let root = Cli::command();
    let cmd = match command {
        None => root,
        Some(name) => match root.find_subcommand(name).filter(|c| !c.is_hide_set()) {
            Some(c) => c.clone().display_name(format!("rtrec-{name}")),
            None => {
                return crate::error::usage(format!(
                    "no command '{name}' (rtrec --help lists them)"
                ))
            }
        },
    };
    let mut out = Vec::new();
    man_page(cmd).render(&mut out)?;
    std::io::Write::write_all(&mut std::io::stdout().lock(), &out)?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::RecordArgs;
    use clap::{CommandFactory, ValueEnum};
    use rtrec_engine::{
        Alloc, Config, Flush, Framing, Io, Mode, OnFull, OnPoolEmpty, DEFAULT_IO_BLOCK,
        DEFAULT_SYNC_EVERY_NS,
    };

    /// Every command and subcommand, depth first, with its path.
    fn commands() -> Vec<(String, clap::Command)> {
        fn walk(prefix: String, c: &clap::Command, out: &mut Vec<(String, clap::Command)>) {
            out.push((prefix.clone(), c.clone()));
            for sub in c.get_subcommands() {
                walk(format!("{prefix} {}", sub.get_name()), sub, out);
            }
        }
        let mut out = Vec::new();
        walk("rtrec".into(), &Cli::command(), &mut out);
        out
    }

    #[test]
    fn the_command_line_definition_is_consistent_and_every_flag_is_documented() {
        Cli::command().debug_assert();
        for (path, cmd) in commands() {
            for arg in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
                assert!(
                    arg.get_help().is_some(),
                    "{path} {:?} has no help",
                    arg.get_id()
                );
            }
        }
    }

    #[test]
    fn every_enum_valued_flag_lists_all_its_values_and_its_default() {
        let mut checked = 0;
        for (path, mut cmd) in commands() {
            let help = cmd.render_long_help().to_string();
            for arg in cmd
                .get_arguments()
                .filter(|a| a.get_action().takes_values())
            {
                let values = arg.get_possible_values();
                if values.is_empty() {
                    continue;
                }
                let id = arg.get_id();
                let default = arg.get_default_values();
                if default.is_empty() && arg.is_required_set() {
                    // A required value (the shell of `completions`) has none.
                    continue;
                }
                if default.is_empty() || arg.is_hide_default_value_set() {
                    // A default that depends on other flags is told in words.
                    assert!(
                        arg.get_help()
                            .is_some_and(|h| h.to_string().contains("[default: ")),
                        "{path} {id:?} has no default and does not say it"
                    );
                    checked += 1;
                    continue;
                }
                assert_eq!(default.len(), 1, "{path} {id:?} has no single default");
                let default = default[0].to_string_lossy();
                assert!(
                    help.contains(&format!("[default: {default}]")),
                    "{path} {id:?}: [default: {default}] not in --help"
                );
                for v in values.iter().filter(|v| !v.is_hide_set()) {
                    assert!(
                        help.contains(&format!("- {}", v.get_name())),
                        "{path} {id:?}: value {} not in --help",
                        v.get_name()
                    );
                    assert!(
                        v.get_help().is_some(),
                        "{path} {id:?}: {} has no help",
                        v.get_name()
                    );
                }
                checked += 1;
            }
        }
        // bench --study takes a list of names (s1,s2,s3,s4,rtrec or
        // throughput), checked by the bench itself with a suggestion.
        assert_eq!(
            checked,
            12 + 2 * usize::from(cfg!(feature = "ship")),
            "--mode, --alloc, --io, --flush, --framing, --on-pool-empty, --on-full, --keep-scope, bench --hold-rule, export --format, export --payload, export --mcap-compression, ship --after-ship, ship --convert"
        );
    }

    #[test]
    fn every_command_ends_its_help_with_two_to_four_examples() {
        for (path, mut cmd) in commands() {
            if cmd.is_hide_set() || path == "rtrec" || cmd.get_name() == "help" {
                continue;
            }
            let help = cmd.render_long_help().to_string();
            let (_, examples) = help
                .rsplit_once("Examples:\n")
                .unwrap_or_else(|| panic!("{path}: no examples in --help"));
            let lines: Vec<&str> = examples.lines().filter(|l| !l.is_empty()).collect();
            assert!((2..=4).contains(&lines.len()), "{path}: {lines:?}");
            for l in lines {
                assert!(l.contains("rtrec "), "{path}: {l}");
            }
        }
    }

    #[test]
    fn pool_actions_take_the_directory_as_a_plain_argument_or_as_dir() {
        let dir_of = |args: &[&str]| match Cli::try_parse_from(args).unwrap().command {
            Command::Pool(p) => match p.action {
                PoolAction::Status { dir, .. } | PoolAction::Remove { dir } => dir.path(),
                other => panic!("{other:?}"),
            },
            _ => unreachable!(),
        };
        let d = PathBuf::from("/data/rec");
        assert_eq!(dir_of(&["rtrec", "pool", "status", "/data/rec"]), d);
        assert_eq!(
            dir_of(&["rtrec", "pool", "status", "--dir", "/data/rec"]),
            d
        );
        assert_eq!(dir_of(&["rtrec", "pool", "remove", "/data/rec"]), d);
        assert_eq!(
            dir_of(&["rtrec", "pool", "status"]),
            PathBuf::from("./rtrec-data")
        );
        assert!(Cli::try_parse_from(["rtrec", "pool", "status", "/a", "--dir", "/b"]).is_err());
    }

    #[test]
    fn no_help_shows_rustdoc_syntax() {
        // Doc comments serve rustdoc and --help alike; a link that rustdoc
        // resolves ("[`Io::Direct`]", "[text](url)") is noise in a terminal.
        for (path, mut cmd) in commands() {
            for help in [
                cmd.render_help().to_string(),
                cmd.render_long_help().to_string(),
            ] {
                for (i, line) in help.lines().enumerate() {
                    for mark in ["[`", "`]", "](", "crate::"] {
                        assert!(
                            !line.contains(mark),
                            "{path} --help line {}: {mark:?} in {line:?}",
                            i + 1
                        );
                    }
                }
            }
        }
    }

    /// The commands `rtrec --help` lists (hidden ones left out).
    #[cfg(any(feature = "completions", feature = "man"))]
    fn visible_commands() -> Vec<String> {
        Cli::command()
            .get_subcommands()
            .filter(|c| !c.is_hide_set())
            .map(|c| c.get_name().to_string())
            .collect()
    }

    #[cfg(feature = "completions")]
    #[test]
    fn completions_are_generated_for_every_command() {
        let mut bash = Vec::new();
        clap_complete::generate(
            clap_complete::Shell::Bash,
            &mut completable(),
            "rtrec",
            &mut bash,
        );
        let bash = String::from_utf8(bash).unwrap();
        for sub in visible_commands()
            .iter()
            .map(String::as_str)
            .chain(["--duration"])
        {
            assert!(bash.contains(sub), "{sub} not completed");
        }
        // The hidden helpers are never offered.
        for hidden in ["__bgload", "__emulate"] {
            assert!(!bash.contains(hidden), "{hidden} offered");
        }
    }

    #[cfg(feature = "man")]
    #[test]
    fn man_pages_are_generated_for_every_command() {
        let mut roff = Vec::new();
        man_page(Cli::command()).render(&mut roff).unwrap();
        let roff = String::from_utf8(roff).unwrap();
        assert!(roff.contains(".TH rtrec"), "{roff}");
        let source = format!("\"rtrec {}\"", env!("CARGO_PKG_VERSION"));
        for sub in visible_commands() {
            let mut page = Vec::new();
            let cmd = Cli::command().find_subcommand(&sub).unwrap().clone();
            man_page(cmd).render(&mut page).unwrap();
            let th = String::from_utf8(page).unwrap();
            let th = th
                .lines()
                .find(|l| l.starts_with(".TH "))
                .unwrap()
                .to_string();
            assert!(th.trim_end().ends_with(&source), "{sub}: {th}");
        }
        for sub in visible_commands() {
            assert!(roff.contains(&sub), "{sub} not in the man page");
        }
    }

    #[test]
    fn command_line_names_are_the_engines_names() {
        fn same<T: ValueEnum + std::fmt::Display>() {
            for v in T::value_variants() {
                let name = v.to_possible_value().unwrap().get_name().to_string();
                assert_eq!(name, v.to_string());
            }
        }
        same::<Alloc>();
        same::<Flush>();
        same::<Mode>();
        same::<Framing>();
        same::<Io>();
        same::<OnPoolEmpty>();
        same::<OnFull>();
    }

    #[test]
    fn stdin_blocks_when_the_ring_is_full_and_the_synthetic_source_drops() {
        assert_eq!(record(&[]).ring.on_full, OnFull::Drop);
        assert_eq!(record(&["--stdin"]).ring.on_full, OnFull::Block);
        assert_eq!(
            record(&["--stdin", "--on-full", "drop"]).ring.on_full,
            OnFull::Drop
        );
        assert_eq!(record(&["--on-full", "block"]).ring.on_full, OnFull::Block);
    }

    #[test]
    fn the_defaults_are_the_engines_and_help_shows_them_as_they_parse_back() {
        let a = record(&[]).storage;
        assert_eq!(a.sync_every.ns(), DEFAULT_SYNC_EVERY_NS);
        assert_eq!(a.max_latency.ns(), Config::default().max_latency_ns);
        assert_eq!(a.io_block.bytes(), DEFAULT_IO_BLOCK);
        assert_eq!(a.flush_every.bytes(), Config::default().flush_every);
        let help = Cli::command()
            .find_subcommand_mut("record")
            .unwrap()
            .render_long_help()
            .to_string();
        for shown in [
            "[default: 5ms]",
            "[default: 16KiB; with --layout, its size]",
            "[default: 2MiB]",
            "[default: 1s]",
            "[default: 50ms]",
            "[default: 1MiB]",
        ] {
            assert!(help.contains(shown), "{shown} not in record --help");
        }
    }

    #[test]
    fn record_help_lists_every_back_end_with_its_help() {
        // The --io flag's own sentence names no back-end: each value's help,
        // from the back-end, is what --help shows. A back-end missing from
        // it, or shown without its help, fails here.
        let help = Cli::command()
            .find_subcommand_mut("record")
            .unwrap()
            .render_long_help()
            .to_string();
        let flat = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
        let help = flat(&help);
        for (io, _) in Io::ALL {
            let value = io.to_possible_value().expect("every back-end is a value");
            let text = value
                .get_help()
                .unwrap_or_else(|| panic!("--io {}: no help", value.get_name()));
            let shown = flat(&format!("- {}: {text}", value.get_name()));
            assert!(help.contains(&shown), "record --help lacks {shown:?}");
        }
    }

    /// Every size and duration flag of every command, with the parse error
    /// of `words` (or `None` when they parse).
    fn refused(words: &[&str]) -> Option<String> {
        let all = std::iter::once("rtrec").chain(words.iter().copied());
        Cli::try_parse_from(all).err().map(|e| one_line(&e))
    }

    #[test]
    fn a_zero_size_gets_the_same_sentence_from_every_command() {
        let expected = "--size: '0B' is zero: give a size of at least 1B";
        assert_eq!(refused(&["record", "--size", "0B"]).unwrap(), expected);
        assert_eq!(refused(&["bench", "--size", "0B"]).unwrap(), expected);
        assert_eq!(
            refused(&["pool", "prepare", "--file-size", "0"]).unwrap(),
            "--file-size: '0' is zero: give a size of at least 1B"
        );
        assert_eq!(
            refused(&["doctor", "--planned", "0KiB"]).unwrap(),
            "--planned: '0KiB' is zero: give a size of at least 1B"
        );
    }

    #[test]
    fn a_bare_number_suggests_the_unit_that_fits_the_flag() {
        let err = |w: &[&str]| refused(w).unwrap();
        assert_eq!(
            err(&["record", "--size", "300"]),
            "--size: '300' needs a unit: did you mean 300B or 300KiB?"
        );
        assert_eq!(
            err(&["record", "--duration", "10"]),
            "--duration: '10' needs a unit: did you mean 10s?"
        );
        assert_eq!(
            err(&["record", "--period", "5"]),
            "--period: '5' needs a unit: did you mean 5ms?"
        );
        assert_eq!(
            err(&["bench", "--size", "300"]),
            "--size: '300' needs a unit: did you mean 300B or 300KiB?"
        );
        assert_eq!(
            err(&["record", "--file-size", "64"]),
            "--file-size: '64' needs a unit: did you mean 64MiB?"
        );
        assert!(refused(&["record", "--sync-every", "0"]).is_none());
    }

    fn record(words: &[&str]) -> RecordArgs {
        let all = ["rtrec", "record"].iter().chain(words);
        match Cli::try_parse_from(all).unwrap().command {
            Command::Record(a) => *a,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn raw_framing_defaults_to_zero_allocation_unless_alloc_is_given() {
        assert_eq!(record(&[]).storage.alloc, Alloc::Pool);
        assert_eq!(record(&["--raw"]).storage.alloc, Alloc::Zero);
        assert_eq!(record(&["--framing", "raw"]).storage.alloc, Alloc::Zero);
        assert_eq!(
            record(&["--raw", "--alloc", "append"]).storage.alloc,
            Alloc::Append
        );
    }

    #[test]
    fn a_bad_value_is_one_line_with_the_choices() {
        let e = Cli::try_parse_from(["rtrec", "record", "--flush", "bogus"]).unwrap_err();
        assert_eq!(
            one_line(&e),
            "invalid value 'bogus' for '--flush <STRATEGY>' \
             [possible values: none, fdatasync, fsync, sfr, window]"
        );
    }
}
