//! `rtrec bench`'s command line: [`BenchArgs`], every flag with its help,
//! and the parsers of its values. Parsing only checks each value; what the
//! values mean together is [`Plan::from_args`](crate::Plan::from_args)'s.
//!
//! Design choice: what `bench` shares with `rtrec record` is defined once,
//! below both: the value grammar and `--ring` (`rtrec_units::value`),
//! `--device`'s parser and its list of profiles
//! ([`DeviceArg::parse`], [`DeviceArg::choices`]), the SCHED_FIFO default
//! and range of `--priority` ([`rtrec_engine::rt::DEFAULT_PRIORITY`],
//! [`rtrec_engine::rt::PRIORITIES`]) and the `--explain` flags
//! ([`rtrec_trace::ExplainArgs`]). What only looks alike stays the
//! bench's own: its `--period` and spans are at most an hour, its `--size`
//! at most half a file ([`Plan::from_args`](crate::Plan::from_args)), and
//! its real-time setup is on unless `--no-rt` where `record`'s is off
//! unless `--rt`.

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use rtrec_emu::DeviceArg;

use crate::throughput::HoldRule;

/// The options of `rtrec bench`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct BenchArgs {
    /// Print the table of cases (strategies, loads, published figures) and exit.
    #[arg(long)]
    pub list: bool,

    /// Run these studies: s1, s2, s3, s4, rtrec, backends, comma-separated (default s1,s2,rtrec; backends: rtrec's --io direct and --io uring cases beside rtrec's; s3 and s4 need root); or `throughput` alone (each write back-end's highest sustained rate for 1KiB, 16KiB and 1MiB records against the device's bandwidth; --size picks one size); or `cost` alone (each write back-end's CPU per MiB recorded for 64B, 1KiB, 16KiB and 1MiB records beside the floor of fio, memcpy and CRC32C of the same bytes; --size picks one size); or `endurance` alone (one long record --rt --explain: --writes records, default 1,000,000, of --size, default 1KiB, every --period, default 1ms; every slow record() and missed period attributed).
    #[arg(long, value_delimiter = ',', value_name = "S1,S2")]
    pub study: Vec<String>,

    /// S3: fsync-tester rounds per variant (default 30, as published).
    #[arg(long, value_name = "N")]
    pub rounds: Option<u32>,

    /// S4: how long each cell of the matrix runs (default 3s).
    #[arg(long, value_name = "DURATION", value_parser = parse_span)]
    pub cell: Option<Duration>,

    /// S4: request sizes, comma-separated (default 1MB,4MB,16MB,35MB,50MB,100MB).
    #[arg(long, value_delimiter = ',', value_name = "SIZE", value_parser = parse_size)]
    pub request_sizes: Vec<u64>,

    /// S4: schedulers to compare, comma-separated (default none,mq-deadline,bfq,bfq-strict; the RTREC-ISOLATED cases of the ones left out are skipped).
    #[arg(long, value_delimiter = ',', value_name = "NAME")]
    pub schedulers: Vec<String>,

    /// S4: run every cell a second time with fio's libaio jobs in the same weighted groups and print both tables (needs fio).
    #[arg(long)]
    pub with_fio: bool,

    /// Run only these cases, in this order, comma-separated (names as in --list, in any letter case).
    #[arg(long, value_delimiter = ',', value_name = "A,B")]
    pub cases: Vec<String>,

    /// The studies' full protocol: 5 sets of 10,000 writes per case (S2's cases: 1 × 8,000), about 1.5 hours.
    #[arg(long)]
    pub paper: bool,

    /// Sets per case (default 2; the reported set is the one with the largest maximum).
    #[arg(long, value_name = "N")]
    pub sets: Option<u32>,

    /// Timed calls per set (default 2,000).
    #[arg(long, value_name = "N")]
    pub writes: Option<u64>,

    /// Period of the timed calls (default 5ms).
    #[arg(long, value_name = "DURATION", value_parser = parse_period)]
    pub period: Option<Duration>,

    /// Bytes per write (default 16KiB).
    #[arg(long, value_name = "SIZE", value_parser = parse_record_size)]
    pub size: Option<u64>,

    /// The ring of the recording cases in ring mode (RTREC…): `auto`, sized as `rtrec record --ring auto` sizes it for --period, --size and --device's worst stall, or a size (default: the engine's 16 MiB); with it, the largest record is --size, as with `rtrec record --size`.
    #[arg(long, value_name = "auto|SIZE", value_parser = rtrec_units::value::ring)]
    pub ring: Option<rtrec_units::value::Ring>,

    /// Run on this existing directory instead of our own ext4 image (warns about each of the study's conditions it does not meet).
    #[arg(long, value_name = "PATH")]
    pub dir: Option<PathBuf>,

    /// Where to put the ext4 image (default: the system's temporary directory).
    #[arg(long, value_name = "PATH", conflicts_with = "dir")]
    pub image_dir: Option<PathBuf>,

    /// Put the ext4 image on an emulated device: a shipped profile or a profile file (the help names them, [`DeviceArg::choices`], as `rtrec record --device`'s does).
    #[arg(
        long,
        value_name = "PROFILE",
        conflicts_with = "dir",
        value_parser = DeviceArg::parse,
        help = format!("Put the ext4 image on an emulated device: {} (e.g. from `rtrec device probe`); docs/devices.md", DeviceArg::choices())
    )]
    pub device: Option<DeviceArg>,

    /// Write the results as JSON to FILE, again after every case (schema: docs/bench-schema.md); `-` is stdout, at the end.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Draw the latency of every case as an SVG to FILE; `-` is stdout, at the end (with --study s4 also the throughput shares, to FILE-s4.svg; with --study throughput the rate held per back-end against fio's; with --study cost the ratio to the floor per back-end and size).
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,

    /// Write a self-contained HTML report (box plots, histograms, latency over time) to FILE; `-` is stdout.
    #[arg(long, value_name = "FILE.html")]
    pub html: Option<PathBuf>,

    /// Write one CSV row per case to FILE (units in the column names); `-` is stdout.
    #[arg(long, value_name = "FILE.csv")]
    pub export_csv: Option<PathBuf>,

    /// Print a text histogram of every case's reported set after the table (log bins, cyclictest-style).
    #[arg(long)]
    pub histogram: bool,

    /// Write a Markdown table of the cases to FILE; `-` is stdout.
    #[arg(long, value_name = "FILE.md")]
    pub export_markdown: Option<PathBuf>,

    /// Give up waiting for another rtrec that holds the global lock (it names the holder) after this long (default 5m).
    #[arg(long, value_name = "DURATION", value_parser = parse_lock_timeout)]
    pub lock_timeout: Option<Duration>,

    /// With --study throughput: how long a probe that decides the sustained rate records (default 60s).
    #[arg(long, alias = "hold", value_name = "DURATION", value_parser = parse_span, requires = "study")]
    pub probe_duration: Option<Duration>,

    /// With --study throughput: how long each probe of the coarse search records (default 5s, at most --probe-duration).
    #[arg(long, value_name = "DURATION", value_parser = parse_span, requires = "study")]
    pub coarse_duration: Option<Duration>,

    /// With --study throughput: bisection steps of the coarse search after the first failing rate (default 5).
    #[arg(long, value_name = "N", requires = "study")]
    pub steps: Option<u32>,

    /// With --study throughput: drops (a rate holds with 0 drops, no writer error and the ring at most half full at the end; the default), max (also every release within one period) or p99 (also 99 % of them).
    #[arg(long, value_enum, default_value_t = HoldRule::Drops, value_name = "RULE", requires = "study")]
    pub hold_rule: HoldRule,

    /// With --study throughput: how the probes' files are allocated: fallocate (the default: a long recording once its pool is spent, unwritten extents converted at every durable point) or pool (a pool zero-filled once per back-end and record size, finished files recycled into it as a retention job would: written space).
    #[arg(long, value_name = "STRATEGY", value_parser = parse_study_alloc, requires = "study")]
    pub alloc: Option<rtrec_engine::Alloc>,

    /// With --study throughput or cost: run the whole study N times (fio included) and give each cell's spread, highest held rate (or cost ratio) over lowest (default 1).
    #[arg(long, value_name = "N", requires = "study")]
    pub repeat: Option<u32>,

    /// With --study cost: payload each back-end and record size records, and fio, memcpy and CRC32C process for its floor (default 256MiB).
    #[arg(long, value_name = "SIZE", value_parser = parse_size, requires = "study")]
    pub cost_bytes: Option<u64>,

    /// Combine --study throughput --json results (e.g. one per --device) into one table and, with --plot, one plot of every device; runs nothing.
    #[arg(long, value_delimiter = ',', value_name = "A.json,B.json", conflicts_with_all = ["list", "compare", "json", "study"])]
    pub combine: Option<Vec<PathBuf>>,

    /// With --study throughput: full-length probes a rate must hold in a row to be the answer (default 3).
    #[arg(long, value_name = "K", requires = "study")]
    pub confirmations: Option<u32>,

    /// With --study crash: crash states to check in all, shared by the cells of the matrix (default 200; 10000 for release qualification).
    #[arg(long, value_name = "N", requires = "study")]
    pub crash_states: Option<u64>,

    /// With --study crash: records per recording (default 1500: 3 s at 2ms).
    #[arg(long, value_name = "N", requires = "study")]
    pub crash_count: Option<u64>,

    /// With --study crash: a torn write keeps whole units of this size, 512B or 4KiB (default 512B).
    #[arg(long, value_name = "SIZE", value_parser = parse_record_size, requires = "study")]
    pub crash_atomic: Option<u64>,

    /// With --study crash: the seed of every draw (default: from the clock; printed, so a run can be repeated).
    #[arg(long, value_name = "N", requires = "study")]
    pub crash_seed: Option<u64>,

    /// With --study crash: only these cells of the matrix, comma-separated (default all: default, direct, uring, zero, append, stdin, flight, sync-default, sync-0, switch, switch-refill, switch-zero-uring, switch-append-stdin, switch-direct-sync-0, flight-append, loop, loop-direct, loop-uring).
    #[arg(
        long,
        visible_alias = "crash-variants",
        value_delimiter = ',',
        value_name = "NAME",
        requires = "study"
    )]
    pub crash_cells: Vec<String>,

    /// With --study crash: instead of the matrix, N power cuts of one budgeted loop recording in a row, service-style: each cycle mounts the last cut's crash image as its card, runs `rtrec recover` on its directory, records (the loop cells' back-ends in turn, a random length), and is cut at a random point of its write log (half of them around its moments: retirements included); every cut is checked as a crash state is (issue 44: a year of power cuts compressed; the release check runs 1000).
    #[arg(long, value_name = "N", requires = "study")]
    pub crash_cycles: Option<u64>,

    /// With --study crash: do not record the first cell a second time with the write log off (its cost on the emulator's timing error is then not reported).
    #[arg(long, requires = "study")]
    pub crash_no_log_cost: bool,

    /// With --study endurance: first run the same loop without record() (`record --explain-baseline`) for as many periods, and set its slow stretches beside the run's: what the platform alone does to the producer (docs/endurance.md).
    #[arg(long)]
    pub endurance_baseline: bool,

    /// Run the timed threads at normal priority, without mlockall (default: as `record --rt`, SCHED_FIFO --priority and mlockall, when permitted).
    #[arg(long)]
    pub no_rt: bool,

    /// SCHED_FIFO priority of every timed thread (default [`rtrec_engine::rt::DEFAULT_PRIORITY`], as `record --rt --priority`; the writer thread gets one below).
    #[arg(
        long,
        value_name = "1-99",
        conflicts_with = "no_rt",
        help = format!("SCHED_FIFO priority of every timed thread (default {}, as `record --rt --priority`; the writer thread gets one below)", rtrec_engine::rt::DEFAULT_PRIORITY)
    )]
    pub priority: Option<i32>,

    /// Pin every timed thread to this CPU (the writer and flush threads and the loads stay unpinned).
    #[arg(long, value_name = "CPU", conflicts_with = "no_rt")]
    pub cpu: Option<usize>,

    /// Print per-case ratios NEW ÷ OLD of two --json results and exit.
    #[arg(long, num_args = 2, value_names = ["OLD.json", "NEW.json"], conflicts_with_all = ["list", "paper", "dir", "json"])]
    pub compare: Option<Vec<PathBuf>>,

    /// `--explain`, `--explain-threshold`, `--explain-raw`.
    #[command(flatten)]
    pub explain: rtrec_trace::ExplainArgs,
}

/// At most this long: a period or a run of the bench (1 hour).
const MAX_BENCH_NS: u64 = 3_600_000_000_000;

/// `d`, or a sentence when it is over `max_ns` (`range` in words).
fn at_most(
    s: &str,
    d: rtrec_units::value::Duration,
    max_ns: u64,
    range: &str,
) -> Result<Duration, String> {
    if d.ns() > max_ns {
        return Err(format!("'{s}' is out of range ({range})"));
    }
    Ok(d.into())
}

/// `--period`: an interval (`rtrec_units::value::interval`) of at most 1 hour.
fn parse_period(s: &str) -> Result<Duration, String> {
    let d = rtrec_units::value::interval(s).map_err(|e| e.to_string())?;
    at_most(s, d, MAX_BENCH_NS, "1ns to 1h")
}

/// `--cell`, `--probe-duration`, `--coarse-duration`: a span
/// (`rtrec_units::value::span`) of at most 1 hour.
fn parse_span(s: &str) -> Result<Duration, String> {
    let d = rtrec_units::value::span(s).map_err(|e| e.to_string())?;
    at_most(s, d, MAX_BENCH_NS, "1ns to 1h")
}

/// `--lock-timeout`: from 0 (do not wait) to 1 day.
pub fn parse_lock_timeout(s: &str) -> Result<Duration, String> {
    let d = rtrec_units::value::span_or_zero(s).map_err(|e| e.to_string())?;
    at_most(s, d, 24 * MAX_BENCH_NS, "0s to 24h")
}

/// `--size`: one record (`rtrec_units::value::record_size`, at least one byte;
/// the upper bound depends on the file size and is checked by
/// [`Plan::from_args`](crate::Plan::from_args)).
fn parse_record_size(s: &str) -> Result<u64, rtrec_units::Error> {
    rtrec_units::value::record_size(s).map(rtrec_units::value::Size::bytes)
}

/// `--request-sizes`: sizes (`rtrec_units::value::size`, at least one byte).
fn parse_size(s: &str) -> Result<u64, rtrec_units::Error> {
    rtrec_units::value::size(s).map(rtrec_units::value::Size::bytes)
}

/// `bench --alloc`: the two allocations the throughput study models.
fn parse_study_alloc(s: &str) -> Result<rtrec_engine::Alloc, String> {
    match s {
        "fallocate" => Ok(rtrec_engine::Alloc::Fallocate),
        "pool" => Ok(rtrec_engine::Alloc::Pool),
        _ => Err(format!(
            "'{s}' is not an allocation the throughput study models: fallocate or pool"
        )),
    }
}

/// `rtrec bench`'s arguments alone, to parse them without the rest of
/// the command line.
#[derive(Parser)]
struct ArgsOnly {
    #[command(flatten)]
    bench: BenchArgs,
}

impl BenchArgs {
    /// Parses `words` (without a program name) as `rtrec bench` would.
    ///
    /// # Errors
    /// The clap error for a bad command line.
    pub fn try_from_words<I, S>(words: I) -> Result<BenchArgs, clap::Error>
    where
        I: IntoIterator<Item = S>,
        S: Into<std::ffi::OsString> + Clone,
    {
        let all = std::iter::once(std::ffi::OsString::from("bench"))
            .chain(words.into_iter().map(Into::into));
        ArgsOnly::try_parse_from(all).map(|a| a.bench)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn every_flag_is_documented_and_the_definition_is_consistent() {
        let cmd = ArgsOnly::command();
        cmd.clone().debug_assert();
        for a in cmd.get_arguments().filter(|a| a.get_id() != "help") {
            assert!(a.get_help().is_some(), "--{} has no help", a.get_id());
        }
    }

    #[test]
    fn sizes_and_durations_follow_the_one_grammar() {
        let err = |w: [&str; 2]| BenchArgs::try_from_words(w).unwrap_err().to_string();
        assert!(err(["--period", "5"]).contains("'5' needs a unit: did you mean 5ms?"));
        assert!(err(["--period", "0ms"]).contains("'0ms' is zero: give a duration of at least 1ns"));
        assert!(err(["--period", "2h"]).contains("'2h' is out of range (1ns to 1h)"));
        assert!(err(["--cell", "3"]).contains("'3' needs a unit: did you mean 3s?"));
        assert!(err(["--size", "16K"]).contains("'16K' is ambiguous"));
        assert!(err(["--size", "0B"]).contains("'0B' is zero"));
        let a = BenchArgs::try_from_words(["--size", "2MB"]).unwrap();
        assert_eq!(a.size, Some(2_000_000));
    }

    #[test]
    fn the_device_help_names_every_shipped_profile() {
        let cmd = ArgsOnly::command();
        let device = cmd
            .get_arguments()
            .find(|a| a.get_id() == "device")
            .unwrap();
        let help = device.get_help().unwrap().to_string();
        for (name, _) in rtrec_emu::profile::BUILTIN {
            assert!(help.contains(name), "{help}");
        }
    }
}
