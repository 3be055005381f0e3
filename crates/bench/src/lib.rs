//! `rtrec bench`: the published studies (S1, S2; see `docs/studies.md`) run on
//! the user's own machine, the published figure beside the measured one.
//!
//! **Must not depend on**: the binary. It records through the engine, reaches
//! the kernel through `rtrec-sys` and changes machine-wide state only through
//! `rtrec-host`'s journal.
//!
//! This crate owns:
//! - [`scenario`]: the cases as one table of data — every recording case a
//!   composition of the engine's strategies ([`rtrec_engine::Config`]);
//! - [`study`]: the published studies and their own protocols, below both
//!   [`scenario`] and [`protocol`];
//! - [`protocol`]: how many sets of how many calls, the period and sizes;
//! - [`benchmark`]: what runs and how it is timed;
//! - [`producer`]: the timed thread's real-time setup (`record --rt`'s,
//!   unless `--no-rt`) and what was granted;
//! - [`bgload`]: the background loads, as separate processes
//!   (`rtrec __bgload`, entry point [`bgload_main`]);
//! - [`target`]: the filesystem under test (our own loop-mounted ext4 by
//!   default) and the environment;
//! - [`flusher`]: FON / FOFF through the journaled sysctl helpers;
//! - [`s3`], [`s4`]: the fsync-tester and BFQ-weight studies; [`s4_fio`]:
//!   S4's matrix run by fio (`--with-fio`); [`export::s4_plot`]: S4's throughput
//!   shares as an SVG;
//! - [`report`]: the result schema (`--json`); [`export`]: JSON and SVG;
//!   [`output`]: tables, progress bars and warnings;
//! - [`crash`]: `--study crash`, crash states of the emulated device's write
//!   log checked against the durability contract;
//! - [`throughput`]: `--study throughput`, each write back-end's sustained
//!   rate as a fraction of the device's bandwidth, what stopped it, the
//!   spread over `--repeat` runs, and `--combine` of several devices;
//! - [`endurance`]: `--study endurance`, one long `record --rt --explain`
//!   with every slow `record()` and missed period attributed;
//! - [`Error`]: what the bench refuses before it runs (exit code 2), and
//!   [`Error::Failed`] for what fails while it runs (exit code 1).
//!
//! Sizes and durations on its command line and in its tables follow
//! rtrec's one grammar (`rtrec-units`): `16KiB`, `5ms`.
//!
//! Global state the bench changes — `vm.dirty_*`, a mount, a loop device —
//! is journaled before it is changed and put back on every exit path,
//! including Ctrl-C and panics; after SIGKILL the next rtrec run does it.
#![deny(missing_docs)]

pub mod benchmark;
pub mod bgload;
pub mod crash;
pub mod endurance;
mod error;
pub mod explain;
pub mod export;
pub mod flusher;
pub mod output;
pub mod producer;
pub mod protocol;
pub mod report;
pub mod s3;
pub mod s4;
pub mod s4_fio;
pub mod scenario;
pub mod signal;
pub mod study;
pub mod target;
pub mod throughput;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;

pub use bgload::{bgload_main, Launcher};
pub use error::Error;

use crate::benchmark::Context as RunContext;
use crate::export::{
    CsvExporter, Exporter, Exports, HtmlExporter, JsonExporter, MarkdownExporter, SvgExporter,
};
use crate::flusher::FlusherControl;
use crate::output::table;
use crate::protocol::{Overrides, Protocol};
use crate::report::{BenchReport, SCHEMA_VERSION};
use crate::scenario::{Scenario, SCENARIOS};
use crate::study::Study;
use crate::target::Target;
pub use rtrec_emu::DeviceArg;

/// The options of `rtrec bench`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct BenchArgs {
    /// Print the table of cases (strategies, loads, published figures) and exit.
    #[arg(long)]
    pub list: bool,

    /// Run these studies: s1, s2, s3, s4, rtrec, comma-separated (default s1,s2,rtrec; s3 and s4 need root); or `throughput` alone (each write back-end's highest sustained rate for 1KiB, 16KiB and 1MiB records against the device's bandwidth; --size picks one size); or `endurance` alone (one long record --rt --explain: --writes records, default 1,000,000, of --size, default 1KiB, every --period, default 1ms; every slow record() and missed period attributed).
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

    /// Put the ext4 image on an emulated device: emmc, sd, hdd-5400, native, or a profile file (e.g. from `rtrec device probe`); docs/devices.md.
    #[arg(long, value_name = "PROFILE", conflicts_with = "dir", value_parser = parse_device)]
    pub device: Option<DeviceArg>,

    /// Write the results as JSON to FILE, again after every case (schema: docs/bench-schema.md); `-` is stdout, at the end.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Draw the latency of every case as an SVG to FILE; `-` is stdout, at the end (with --study s4 also the throughput shares, to FILE-s4.svg; with --study throughput the rate held per back-end against fio's).
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
    #[arg(long, value_enum, default_value_t = throughput::HoldRule::Drops, value_name = "RULE", requires = "study")]
    pub hold_rule: throughput::HoldRule,

    /// With --study throughput: how the probes' files are allocated: fallocate (the default: a long recording once its pool is spent, unwritten extents converted at every durable point) or pool (a pool zero-filled once per back-end and record size, finished files recycled into it as a retention job would: written space).
    #[arg(long, value_name = "STRATEGY", value_parser = parse_study_alloc, requires = "study")]
    pub alloc: Option<rtrec_engine::Alloc>,

    /// With --study throughput: run the whole study N times (fio included) and give each cell's spread, highest held rate over lowest (default 1).
    #[arg(long, value_name = "N", requires = "study")]
    pub repeat: Option<u32>,

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

    /// With --study crash: only these cells of the matrix, comma-separated (default all: default, direct, uring, zero, append, stdin, flight, sync-default, sync-0, switch, switch-refill, switch-zero-uring, switch-append-stdin, switch-direct-sync-0, flight-append).
    #[arg(
        long,
        visible_alias = "crash-variants",
        value_delimiter = ',',
        value_name = "NAME",
        requires = "study"
    )]
    pub crash_cells: Vec<String>,

    /// With --study crash: do not record the first cell a second time with the write log off (its cost on the emulator's timing error is then not reported).
    #[arg(long, requires = "study")]
    pub crash_no_log_cost: bool,

    /// With --study endurance: first run the same loop without record() (`record --explain-baseline`) for as many periods, and set its slow stretches beside the run's: what the platform alone does to the producer (docs/endurance.md).
    #[arg(long)]
    pub endurance_baseline: bool,

    /// Run the timed threads at normal priority, without mlockall (default: as `record --rt`, SCHED_FIFO --priority and mlockall, when permitted).
    #[arg(long)]
    pub no_rt: bool,

    /// SCHED_FIFO priority of every timed thread (default 80, as `record --rt --priority`; the writer thread gets one below).
    #[arg(long, value_name = "1-99", conflicts_with = "no_rt")]
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

/// `--device`: a shipped profile's name or a profile file, loaded and
/// checked now (a bad profile is a usage error).
fn parse_device(s: &str) -> Result<DeviceArg, String> {
    DeviceArg::parse(s)
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
/// [`Plan::from_args`]).
fn parse_record_size(s: &str) -> Result<u64, rtrec_units::Error> {
    rtrec_units::value::record_size(s).map(rtrec_units::value::Size::bytes)
}

/// `--request-sizes`: sizes (`rtrec_units::value::size`, at least one byte).
fn parse_size(s: &str) -> Result<u64, rtrec_units::Error> {
    rtrec_units::value::size(s).map(rtrec_units::value::Size::bytes)
}

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

/// The resolved plan: which cases, each with its protocol. Built without
/// any I/O.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The cases in run order.
    pub cases: Vec<(&'static Scenario, Protocol)>,
    /// Run S3.
    pub s3: bool,
    /// Run S4.
    pub s4: bool,
    /// S4's schedulers (`--schedulers`, default all of [`s4::SCHEDS`]).
    pub s4_schedulers: Vec<s4::Sched>,
    /// S4 also with fio (`--with-fio`).
    pub s4_with_fio: bool,
    /// The timed threads' real-time setup (`--no-rt`, `--priority`, `--cpu`).
    pub rt: producer::RtRequest,
}

/// The studies `--study` names, checked: (cases' studies, S3, S4).
/// True when `--study throughput` was given (it runs alone).
fn throughput_asked(names: &[String]) -> bool {
    names.len() == 1 && names[0].eq_ignore_ascii_case("throughput")
}

/// True when `--study endurance` was given (it runs alone).
fn endurance_asked(names: &[String]) -> bool {
    names.len() == 1 && names[0].eq_ignore_ascii_case("endurance")
}

/// True when `--study crash` was given (it runs alone).
fn crash_asked(names: &[String]) -> bool {
    names.len() == 1 && names[0].eq_ignore_ascii_case("crash")
}

fn select_studies(names: &[String]) -> Result<(Vec<Study>, bool, bool), Error> {
    if names.is_empty() {
        return Ok((Vec::new(), false, false));
    }
    let (mut studies, mut s3, mut s4) = (Vec::new(), false, false);
    for n in names {
        match n.to_ascii_lowercase().as_str() {
            "s1" => studies.extend([Study::S1Table1, Study::S1Table3]),
            "s2" => studies.push(Study::S2),
            "rtrec" => studies.extend([Study::Rtrec, Study::Platform]),
            "s3" => s3 = true,
            "s4" => s4 = true,
            // Runs alone, instead of the cases (see `throughput_asked`).
            "throughput" | "crash" | "endurance" if names.len() == 1 => {}
            "throughput" | "crash" | "endurance" => {
                return Err(Error::UnknownCase {
                    name: n.clone(),
                    hint: format!("the {n} study runs alone: give --study {n} by itself"),
                })
            }
            _ => {
                return Err(Error::UnknownCase {
                    name: n.clone(),
                    hint: "expected one of s1, s2, s3, s4, rtrec, throughput, crash".into(),
                })
            }
        }
    }
    Ok((studies, s3, s4))
}

impl Plan {
    /// Validates the arguments.
    ///
    /// # Errors
    /// [`Error`]: one sentence naming the bad value.
    pub fn from_args(a: &BenchArgs) -> Result<Plan, Error> {
        let (studies, s3, s4) = select_studies(&a.study)?;
        let mut selected = select_cases(&a.cases)?;
        if !a.study.is_empty() {
            selected.retain(|s| studies.contains(&s.study));
        }
        let at_least_1 = |flag| Error::OutOfRange {
            flag,
            requirement: "at least 1".into(),
        };
        if a.sets == Some(0) {
            return Err(at_least_1("--sets"));
        }
        if a.writes == Some(0) {
            return Err(at_least_1("--writes"));
        }
        if a.confirmations == Some(0) {
            return Err(at_least_1("--confirmations"));
        }
        if a.crash_states == Some(0) {
            return Err(at_least_1("--crash-states"));
        }
        if a.crash_count == Some(0) {
            return Err(at_least_1("--crash-count"));
        }
        if a.crash_atomic.is_some_and(|u| u != 512 && u != 4096) {
            return Err(Error::OutOfRange {
                flag: "--crash-atomic",
                requirement: "512B or 4KiB".into(),
            });
        }
        if let Some(v) = a
            .crash_cells
            .iter()
            .find(|v| v.as_str() != "all" && !crash::CELLS.iter().any(|x| x.name == v.as_str()))
        {
            return Err(Error::UnknownCase {
                name: v.clone(),
                hint: format!(
                    "expected all or some of {}",
                    crash::CELLS.map(|x| x.name).join(", ")
                ),
            });
        }
        if a.size.is_some_and(|s| s > protocol::FILE_BYTES / 2) {
            return Err(Error::OutOfRange {
                flag: "--size",
                requirement: format!(
                    "at most {} (half a file)",
                    rtrec_units::format_size(protocol::FILE_BYTES / 2)
                ),
            });
        }
        let o = Overrides {
            paper: a.paper,
            sets: a.sets,
            writes: a.writes,
            period_ns: a.period.map(|d| d.as_nanos() as u64),
            record_bytes: a.size,
            ring: a.ring,
            stall: a.device.as_ref().map(|d| rtrec_engine::Stall {
                ns: d.profile.worst_stall_ns(),
                source: rtrec_engine::StallSource::Device,
            }),
        };
        let cases = selected
            .into_iter()
            .map(|s| (s, Protocol::for_study(s.study, &o)))
            .collect::<Vec<_>>();
        for (s, p) in &cases {
            if let Some(cfg) = s.config(p) {
                cfg.validate().map_err(|e| Error::InvalidCase {
                    case: s.name,
                    reason: e.to_string(),
                })?;
            }
        }
        if let Some(p) = cases
            .iter()
            .find_map(|(_, p)| p.ring_bytes.is_some().then_some(p))
        {
            let ring = p.ring_bytes.unwrap_or_default();
            let secs = rtrec_engine::sizing::ring_seconds(ring, p.record_bytes, Some(p.period_ns));
            eprintln!(
                "rtrec bench: --ring {}: the recording cases' ring holds {:.2} s of {} every {} ms",
                rtrec_units::format_size(ring),
                secs.unwrap_or(0.0),
                rtrec_units::format_size(p.record_bytes),
                p.period_ns as f64 / 1e6
            );
        }
        if a.with_fio && !s4 {
            return Err(Error::Unavailable(
                "--with-fio runs S4's matrix with fio: give it with --study s4".into(),
            ));
        }
        let s4_schedulers = select_schedulers(&a.schedulers)?;
        let priority = a.priority.unwrap_or(producer::DEFAULT_PRIORITY);
        if !(1..=99).contains(&priority) {
            return Err(Error::OutOfRange {
                flag: "--priority",
                requirement: "within SCHED_FIFO's range 1-99".into(),
            });
        }
        Ok(Plan {
            cases,
            s3,
            s4,
            s4_schedulers,
            s4_with_fio: a.with_fio,
            rt: producer::RtRequest {
                enabled: !a.no_rt,
                priority,
                cpu: a.cpu,
            },
        })
    }

    /// Expected time of the timed loops, ns.
    pub fn loop_ns(&self) -> u64 {
        self.cases.iter().map(|(_, p)| p.loop_ns()).sum()
    }
}

/// `--schedulers`: S4's schedulers by label, in [`s4::SCHEDS`]'s order
/// (every one when none is given).
fn select_schedulers(names: &[String]) -> Result<Vec<s4::Sched>, Error> {
    for n in names {
        if !s4::SCHEDS.iter().any(|s| s.label.eq_ignore_ascii_case(n)) {
            return Err(Error::Unavailable(format!(
                "unknown scheduler '{n}': --schedulers takes none, mq-deadline, bfq, bfq-strict"
            )));
        }
    }
    Ok(s4::SCHEDS
        .into_iter()
        .filter(|s| names.is_empty() || names.iter().any(|n| s.label.eq_ignore_ascii_case(n)))
        .collect())
}

/// The cases of `--cases` in the order given, each name matched whatever
/// its letter case; every case in table order when none is given.
///
/// Design choice: a name given twice is refused rather than run twice, since
/// a second run of the same case on a warmer cache is not what anybody
/// means; an unknown name gets the closest name (Jaro-Winkler, as clap
/// suggests flags) or, when none is close, the list.
fn select_cases(names: &[String]) -> Result<Vec<&'static Scenario>, Error> {
    if names.is_empty() {
        return Ok(SCENARIOS.iter().collect());
    }
    let mut out: Vec<&'static Scenario> = Vec::with_capacity(names.len());
    for name in names {
        let Some(s) = SCENARIOS.iter().find(|s| s.name.eq_ignore_ascii_case(name)) else {
            return Err(unknown_case(name));
        };
        if out.iter().any(|o| o.name == s.name) {
            return Err(Error::DuplicateCase(s.name.to_string()));
        }
        out.push(s);
    }
    Ok(out)
}

fn unknown_case(name: &str) -> Error {
    let upper = name.to_ascii_uppercase();
    let closest = SCENARIOS
        .iter()
        .map(|s| (strsim::jaro_winkler(&upper, s.name), s.name))
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .filter(|(score, _)| *score > 0.8);
    let hint = match closest {
        Some((_, n)) => format!("did you mean {n}? (rtrec bench --list shows every case)"),
        None => {
            let names: Vec<&str> = SCENARIOS.iter().map(|s| s.name).collect();
            format!("expected one of {}", names.join(", "))
        }
    };
    Error::UnknownCase {
        name: name.to_string(),
        hint,
    }
}

/// Options of a run that are not on the command line.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// How to start background loads (default: `current_exe() __bgload`).
    pub launcher: Option<Launcher>,
}

/// Runs `rtrec bench` and returns the exit code: 0, 1 when a case failed,
/// 130 when interrupted.
///
/// # Errors
/// Bad arguments or `--compare` files are refused before anything runs
/// ([`Error::is_bad_input`]); a failure while setting up, running or
/// restoring the environment is [`Error::Failed`].
pub fn run(args: &BenchArgs) -> Result<i32, Error> {
    run_with(args, &RunOptions::default())
}

/// Reads a `--json` result, checking its schema version.
///
/// # Errors
/// The file cannot be read, is not a report, or has another schema version.
pub fn read_report(path: &std::path::Path) -> Result<BenchReport, Error> {
    let bytes = std::fs::read(path).map_err(|source| Error::Read {
        path: path.to_path_buf(),
        source,
    })?;
    read_report_bytes(path, &bytes)
}

/// [`read_report`] of `bytes` already read from `path`.
///
/// # Errors
/// Not a report, or another schema version.
pub fn read_report_bytes(path: &std::path::Path, bytes: &[u8]) -> Result<BenchReport, Error> {
    let r: BenchReport = serde_json::from_slice(bytes).map_err(|e| Error::NotAReport {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    if r.schema_version != SCHEMA_VERSION {
        return Err(Error::SchemaVersion {
            path: path.to_path_buf(),
            found: r.schema_version,
            expected: SCHEMA_VERSION,
        });
    }
    Ok(r)
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

/// `--study throughput` on the prepared `target`, with the global lock
/// held (in `flusher`); the machine is put back on every path.
fn run_throughput(
    args: &BenchArgs,
    rt: &producer::RtRequest,
    target: Target,
    flusher: FlusherControl,
) -> anyhow::Result<i32> {
    let opts = throughput::Options {
        probe_ns: args
            .probe_duration
            .map_or(60_000_000_000, |d| d.as_nanos() as u64),
        coarse_ns: args
            .coarse_duration
            .map_or(5_000_000_000, |d| d.as_nanos() as u64),
        steps: args.steps.unwrap_or(5),
        sizes: match args.size {
            Some(s) => vec![s],
            None => throughput::SIZES.to_vec(),
        },
        rule: args.hold_rule,
        confirmations: args
            .confirmations
            .unwrap_or(throughput::DEFAULT_CONFIRMATIONS),
        rt: rt.clone(),
        repeat: args.repeat.unwrap_or(1),
        alloc: args.alloc.unwrap_or(rtrec_engine::Alloc::Fallocate),
    };
    let profile = args
        .device
        .as_ref()
        .map_or_else(|| "native".to_string(), |d| d.profile.name.clone());
    // The JSON again after every run (not to stdout, which gets it once).
    let mut on_run = |partial: &throughput::ThroughputReport| {
        if let Some(p) = args
            .json
            .as_ref()
            .filter(|p| p.as_os_str() != export::STDOUT)
        {
            if let Err(e) = write_json(p, partial) {
                eprintln!("rtrec bench: {e:#}");
            }
        }
    };
    let r = throughput::run(&target.work, &profile, &opts, &mut on_run);
    let released = flusher.finish();
    let removed = target.remove();
    let r = r?;
    // With `--json -` the JSON is stdout's; the table goes to stderr.
    let table = throughput::render(&r);
    match &args.json {
        Some(p) => {
            if p.as_os_str() == export::STDOUT {
                eprint!("{table}");
            } else {
                print!("{table}");
            }
            let mut text = serde_json::to_string_pretty(&r)?;
            text.push('\n');
            export::write_target(p, text.as_bytes())
                .with_context(|| format!("writing '{}'", p.display()))?;
        }
        None => print!("{table}"),
    }
    if let Some(p) = &args.plot {
        let svg = export::throughput_plot::render(std::slice::from_ref(&r))
            .map_err(|e| anyhow::anyhow!("drawing the throughput plot: {e}"))?;
        export::write_target(p, svg.as_bytes())
            .with_context(|| format!("writing '{}'", p.display()))?;
    }
    released?;
    removed?;
    Ok(0)
}

/// `--combine`: the throughput reports in `files` as one table on stdout
/// and, with `plot`, one SVG of every device.
fn combine_throughput(
    files: &[std::path::PathBuf],
    plot: Option<&std::path::Path>,
) -> Result<i32, Error> {
    let mut reports = Vec::new();
    for f in files {
        let bytes = std::fs::read(f).map_err(|source| Error::Read {
            path: f.clone(),
            source,
        })?;
        let r: throughput::ThroughputReport =
            serde_json::from_slice(&bytes).map_err(|e| Error::NotAReport {
                path: f.clone(),
                reason: format!("not a --study throughput result of this version ({e})"),
            })?;
        reports.push(r);
    }
    print!("{}", throughput::combine(&reports));
    if let Some(p) = plot {
        let svg = export::throughput_plot::render(&reports)
            .map_err(|e| Error::Unavailable(format!("drawing the throughput plot: {e}")))?;
        export::write_target(p, svg.as_bytes())
            .map_err(|e| Error::Unavailable(format!("writing '{}': {e:#}", p.display())))?;
    }
    Ok(0)
}

/// A study's result as pretty JSON to `p` (`-`: stdout).
fn write_json(p: &std::path::Path, r: &impl serde::Serialize) -> anyhow::Result<()> {
    let mut text = serde_json::to_string_pretty(r)?;
    text.push('\n');
    export::write_target(p, text.as_bytes()).with_context(|| format!("writing '{}'", p.display()))
}

/// `--study endurance` with the global lock held (in `flusher`): one
/// `rtrec record --rt --explain` in the target's directory.
fn run_endurance(args: &BenchArgs, target: Target, flusher: FlusherControl) -> anyhow::Result<i32> {
    let opts = endurance::Options {
        count: args.writes.unwrap_or(endurance::COUNT),
        period_ns: args
            .period
            .map_or(endurance::PERIOD_NS, |d| d.as_nanos() as u64),
        size: args.size.unwrap_or(endurance::SIZE),
        cpu: std::thread::available_parallelism().map_or(0, |n| n.get() - 1),
        rtrec: std::env::current_exe().context("finding the rtrec executable")?,
        dir: target.work.clone(),
        baseline: args.endurance_baseline,
    };
    let r = endurance::run(&opts);
    let released = flusher.finish();
    let removed = target.remove();
    let r = r?;
    let table = endurance::render(&r);
    match &args.json {
        Some(p) if p.as_os_str() == export::STDOUT => eprint!("{table}"),
        _ => print!("{table}"),
    }
    if let Some(p) = &args.json {
        write_json(
            p,
            &serde_json::json!({ "schema_version": SCHEMA_VERSION, "endurance": r }),
        )?;
    }
    released?;
    removed?;
    Ok(0)
}

/// `--study crash` with the global lock held (in `flusher`); its own
/// images are made and removed by [`crash::run`], `target` only gives the
/// environment. Exit code 1 when a violation was found.
fn run_crash(args: &BenchArgs, target: Target, flusher: FlusherControl) -> anyhow::Result<i32> {
    let device = match &args.device {
        Some(d) => d.clone(),
        None => DeviceArg::parse("emmc").map_err(|e| anyhow::anyhow!("{e}"))?,
    };
    let emulator = target::emulator(&device)?.ok_or_else(|| {
        anyhow::anyhow!(
            "the crash study needs an emulated device; --device native emulates nothing"
        )
    })?;
    let seed = args.crash_seed.unwrap_or_else(rtrec_sys::time::realtime_ns);
    let opts = crash::Options {
        states: args.crash_states.unwrap_or(200),
        count: args.crash_count.unwrap_or(1500),
        atomic: args.crash_atomic.unwrap_or(512),
        seed,
        emulator,
        rtrec: std::env::current_exe().context("finding the rtrec executable")?,
        parent: args.image_dir.clone().unwrap_or_else(std::env::temp_dir),
        only: args.crash_cells.clone(),
        log_cost: !args.crash_no_log_cost,
    };
    eprintln!(
        "rtrec bench: crash study: {} states over {} cells on the emulated {} (seed {seed}, torn writes in units of {} bytes)",
        opts.states,
        crash::selected(&opts.only).len(),
        device.profile.name,
        opts.atomic
    );
    let environment = target::environment(
        &target,
        Some(&device),
        flusher.found(),
        flusher.can_switch(),
    );
    let r = crash::run(&opts);
    let released = flusher.finish();
    let removed = target.remove();
    let r = r?;
    eprintln!(
        "rtrec bench: crash: {} states checked, {} with ext4 repaired, {} violations",
        r.states_checked,
        r.fs_repaired,
        r.violations.len()
    );
    if let Some(p) = &args.json {
        let v = serde_json::json!({
            "schema_version": SCHEMA_VERSION,
            "environment": environment,
            "crash": r,
        });
        write_json(p, &v)?;
    }
    released?;
    removed?;
    Ok(if r.violations.is_empty() { 0 } else { 1 })
}

/// [`run`] with options.
///
/// # Errors
/// As [`run`].
pub fn run_with(args: &BenchArgs, opts: &RunOptions) -> Result<i32, Error> {
    // Two stages, as ripgrep does: first everything the user gave is
    // checked (typed, exit 2), then the plan runs (its failures are the
    // environment's, exit 1).
    if args.list {
        print!("{}", table::render_list());
        return Ok(0);
    }
    if let Some(files) = &args.combine {
        return combine_throughput(files, args.plot.as_deref());
    }
    if let Some(files) = &args.compare {
        let (old, new) = (read_report(&files[0])?, read_report(&files[1])?);
        print!("{}", table::render_compare(&old, &new));
        return Ok(0);
    }
    let plan = Plan::from_args(args)?;
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if plan.rt.cpu.is_some_and(|c| c >= cpus) {
        return Err(Error::OutOfRange {
            flag: "--cpu",
            requirement: format!("a CPU this process may run on, 0-{}", cpus - 1),
        });
    }
    let fio = if plan.s4_with_fio {
        Some(s4_fio::version().map_err(Error::Unavailable)?)
    } else {
        None
    };
    // Waiting for the global lock can end by a stop signal or a timeout:
    // typed host errors (exit 130 / 1), taken before anything runs.
    let _signals = signal::install()?;
    // What dead rtrec processes left behind goes back first.
    match rtrec_host::restore_stale() {
        Ok(r) => r
            .restored
            .iter()
            .for_each(|l| eprintln!("rtrec bench: put back {l}")),
        Err(e) => eprintln!("rtrec bench: could not check for settings left by earlier runs: {e}"),
    }
    let privileged = rtrec_host::loopfs::privileged().is_ok();
    let mut restored = Vec::new();
    let wait = rtrec_host::Wait {
        timeout: Some(
            args.lock_timeout
                .unwrap_or(rtrec_host::DEFAULT_LOCK_TIMEOUT),
        ),
        ..rtrec_host::Wait::default()
    };
    let flusher = FlusherControl::new(privileged, &wait, &mut restored)?;
    run_plan(args, opts, &plan, fio, flusher, &restored).map_err(Error::Failed)
}

/// The second stage of [`run_with`]: sets up the target, runs every case
/// of `plan` with the global lock held (in `flusher`), then S3 and S4,
/// puts the machine back and prints the tables. Each step is one function
/// below; every step that adds results exports them again, so a late
/// failure loses nothing.
fn run_plan(
    args: &BenchArgs,
    opts: &RunOptions,
    plan: &Plan,
    fio: Option<String>,
    flusher: FlusherControl,
    restored: &[String],
) -> anyhow::Result<i32> {
    let launcher = launcher(opts)?;
    restored
        .iter()
        .for_each(|l| eprintln!("rtrec bench: put back {l}"));
    let mut warnings = Vec::new();
    let target = Target::prepare(
        args.dir.as_deref(),
        args.image_dir.as_deref(),
        args.device.as_ref(),
        &mut warnings,
    )?;
    if throughput_asked(&args.study) {
        return run_throughput(args, &plan.rt, target, flusher);
    }
    if crash_asked(&args.study) {
        return run_crash(args, target, flusher);
    }
    if endurance_asked(&args.study) {
        return run_endurance(args, target, flusher);
    }
    let mut report = empty_report(args, &target, &flusher);
    report.environment.rt = producer::probe(&plan.rt);
    let mut run = Run {
        rt: plan.rt.clone(),
        report,
        exports: exports(args, plan),
        tracer: tracer(args),
        launcher,
        target,
        flusher,
        warnings,
        failed: false,
    };
    run.announce(plan);
    run.cases(plan);
    if plan.s3 && !signal::interrupted() {
        run.s3(args)?;
    }
    if plan.s4 && !signal::interrupted() {
        run.s4(args, plan, fio);
    }
    run.finish(args, plan)
}

/// How to start background loads: the caller's, or this executable.
fn launcher(opts: &RunOptions) -> anyhow::Result<Launcher> {
    match &opts.launcher {
        Some(l) => Ok(l.clone()),
        None => Launcher::current_exe()
            .context("finding the rtrec executable to start background loads"),
    }
}

/// `--explain`: a tracing session, or `None` (with the reason printed)
/// when tracefs cannot give one; the cases then run untraced.
fn tracer(args: &BenchArgs) -> Option<rtrec_trace::Tracer> {
    args.explain.tracer().unwrap_or_else(|sentence| {
        eprintln!("rtrec bench: {sentence}");
        None
    })
}

/// The exports asked for on the command line (S4's share plot beside
/// `--plot` when S4 runs).
fn exports(args: &BenchArgs, plan: &Plan) -> Exports {
    let mut exports = Exports::default();
    if let Some(p) = &args.json {
        exports.add(Box::new(JsonExporter) as Box<dyn Exporter>, p.clone());
    }
    if let Some(p) = &args.plot {
        exports.add(Box::new(SvgExporter), p.clone());
        if plan.s4 && p.as_os_str() != export::STDOUT {
            let beside = export::s4_plot::path_beside(p);
            eprintln!(
                "rtrec bench: the S4 throughput shares are drawn to {}",
                beside.display()
            );
            exports.add(Box::new(export::s4_plot::S4PlotExporter), beside);
        }
    }
    if let Some(p) = &args.html {
        exports.add(Box::new(HtmlExporter), p.clone());
    }
    if let Some(p) = &args.export_csv {
        exports.add(Box::new(CsvExporter), p.clone());
    }
    if let Some(p) = &args.export_markdown {
        exports.add(Box::new(MarkdownExporter), p.clone());
    }
    exports
}

/// The report before any case: the environment, nothing measured yet.
fn empty_report(args: &BenchArgs, target: &Target, flusher: &FlusherControl) -> BenchReport {
    BenchReport {
        schema_version: SCHEMA_VERSION,
        environment: target::environment(
            target,
            args.device.as_ref(),
            flusher.found(),
            flusher.can_switch(),
        ),
        warnings: Vec::new(),
        complete: false,
        interrupted: false,
        cases: Vec::new(),
        s3: None,
        s4: None,
    }
}

/// A run in progress: what it holds from setup to teardown, and the report
/// it fills.
struct Run {
    launcher: Launcher,
    rt: producer::RtRequest,
    target: Target,
    flusher: FlusherControl,
    tracer: Option<rtrec_trace::Tracer>,
    warnings: Vec<output::Warning>,
    exports: Exports,
    report: BenchReport,
    /// A case or S4 failed (exit code 1).
    failed: bool,
}

impl Run {
    /// The one line before the cases: how many, where, and how long.
    fn announce(&self, plan: &Plan) {
        let env = &self.report.environment;
        eprintln!(
            "rtrec bench: {} cases on {} ({}, {}, {}); timed loops take about {} (plus setup)",
            plan.cases.len(),
            env.path,
            env.filesystem,
            env.mount_options,
            env.device,
            rtrec_units::format_duration(plan.loop_ns())
        );
        eprintln!("rtrec bench: every timed thread: {}", env.rt.line());
        for w in &self.warnings {
            eprintln!("rtrec bench: warning: {w}");
        }
    }

    /// Runs every case of the plan until a stop signal, one log line and
    /// one export after each.
    fn cases(&mut self, plan: &Plan) {
        for (i, (s, p)) in plan.cases.iter().enumerate() {
            if signal::interrupted() {
                break;
            }
            let warned = self.warnings.len();
            let mut ctx = RunContext {
                work: &self.target.work,
                launcher: &self.launcher,
                flusher: &mut self.flusher,
                warnings: &mut self.warnings,
                tracer: self.tracer.as_mut(),
                rt: &self.rt,
            };
            let r = benchmark::run_case(s, p, &mut ctx);
            for w in &self.warnings[warned..] {
                eprintln!("rtrec bench: warning: {w}");
            }
            // What is left, from the plan: the timed loops of the cases to come.
            let left_ns: u64 = plan.cases[i + 1..].iter().map(|(_, p)| p.loop_ns()).sum();
            let left = if left_ns > 0 {
                format!(
                    "; about {} of timed loops left",
                    rtrec_units::format_duration(left_ns)
                )
            } else {
                String::new()
            };
            eprintln!(
                "rtrec bench: [{}/{}] {}{left}",
                i + 1,
                plan.cases.len(),
                case_line(&r)
            );
            self.failed |= r.error.is_some();
            self.report.cases.push(r);
            self.report.environment.emulator = self.target.emulator_stats();
            self.report.fill_floor_ratios();
            self.report.warnings = self.warnings.iter().map(ToString::to_string).collect();
            self.export();
        }
    }

    /// S3 (fsync-tester beside a streaming writer, on images of its own;
    /// needs root), then an export.
    fn s3(&mut self, args: &BenchArgs) -> anyhow::Result<()> {
        if self.flusher.can_switch() {
            let rounds = args.rounds.unwrap_or(s3::DEFAULT_ROUNDS);
            let emulator = match &args.device {
                Some(d) => target::emulator(d)?,
                None => None,
            };
            self.report.s3 = Some(s3::run(
                &self.launcher,
                rounds,
                args.image_dir.as_deref(),
                emulator.as_ref(),
            ));
        } else {
            eprintln!("rtrec bench: S3 needs root (its own ext4 images); skipped");
        }
        self.export();
        Ok(())
    }

    /// S4 (BFQ weights on our own loop device; needs root and no `--dir`),
    /// then an export.
    fn s4(&mut self, args: &BenchArgs, plan: &Plan, fio: Option<String>) {
        match (self.flusher.journal(), self.target.loop_device()) {
            (Some(journal), Some(device)) => {
                let sizes = if args.request_sizes.is_empty() {
                    s4::SIZES.to_vec()
                } else {
                    args.request_sizes.clone()
                };
                let ctx = s4::S4Context {
                    launcher: &self.launcher,
                    journal,
                    work: &self.target.work,
                    device,
                    cell: args.cell.unwrap_or(s4::DEFAULT_CELL),
                    sizes: &sizes,
                    writes: args.writes.unwrap_or(protocol::DEFAULT_WRITES),
                    schedulers: &plan.s4_schedulers,
                    fio,
                };
                match s4::run(&ctx) {
                    Ok(r) => self.report.s4 = Some(r),
                    Err(e) => {
                        self.failed = true;
                        eprintln!("rtrec bench: S4: {e:#}");
                    }
                }
            }
            _ => {
                eprintln!("rtrec bench: S4 needs root and our own ext4 image (not --dir); skipped")
            }
        }
        self.export();
    }

    /// Writes every export of the report so far; a failure is printed, the
    /// run goes on.
    fn export(&self) {
        if let Err(e) = self.exports.write_all(&self.report) {
            eprintln!("rtrec bench: {e:#}");
        }
    }

    /// Puts the machine back (dirty settings, tracefs instance, target),
    /// exports the final report, prints the tables and returns the exit
    /// code: 130 interrupted, 1 a case failed, 0 otherwise.
    fn finish(self, args: &BenchArgs, plan: &Plan) -> anyhow::Result<i32> {
        let Run {
            target,
            mut flusher,
            tracer,
            mut warnings,
            exports,
            mut report,
            failed,
            ..
        } = self;
        report.interrupted = signal::interrupted();
        report.complete = !report.interrupted && report.cases.len() == plan.cases.len();
        // FON: the values found at start, which must now be in force again.
        let restored = flusher.set(scenario::Flusher::On).map(|_| ());
        if let Some((found, now)) = flusher.changed() {
            warnings.push(output::Warning::DirtySettingsChanged { found, now });
        }
        let restored = restored.and(flusher.finish());
        if let Err(e) = tracer.map_or(Ok(()), |t| t.session.remove()) {
            eprintln!("rtrec bench: removing the tracefs instance: {e}");
        }
        let removed = target.remove();
        report.warnings = warnings.iter().map(ToString::to_string).collect();
        let exported = exports.write_all(&report);
        // With `--json -` the JSON is stdout's; the table goes to stderr.
        let text = render(args, &report, &warnings);
        if exports.uses_stdout() {
            eprint!("{text}");
        } else {
            print!("{text}");
        }
        restored?;
        removed?;
        exported?;
        Ok(if report.interrupted {
            130
        } else if failed {
            1
        } else {
            0
        })
    }
}

/// The tables at the end: the cases, S3, S4, `--histogram`'s histograms
/// and the warnings.
fn render(args: &BenchArgs, report: &BenchReport, warnings: &[output::Warning]) -> String {
    let mut text = table::render_results(report);
    if let Some(r) = &report.s3 {
        text.push_str(&table::render_s3(r));
    }
    if let Some(r) = &report.s4 {
        text.push_str(&table::render_s4(r));
    }
    if args.histogram {
        for c in report
            .cases
            .iter()
            .filter(|c| !c.write_samples_ns.is_empty())
        {
            text.push_str(&format!(
                "\n{}: latency of the timed call, reported set\n",
                c.name
            ));
            text.push_str(&output::histogram::of_samples(&c.write_samples_ns));
        }
    }
    if !warnings.is_empty() {
        text.push('\n');
        for w in warnings {
            text.push_str(&format!("warning: {w}\n"));
        }
    }
    text
}

/// One line for the log after each case.
fn case_line(c: &report::CaseResult) -> String {
    match (&c.error, c.write_ns) {
        (Some(e), _) => format!("{}: FAILED: {e}", c.name),
        (None, Some(w)) => format!(
            "{}: {} sets, max {}, p99.9 {}, mean {}, missed {}",
            c.name,
            c.sets.len(),
            rtrec_units::format_duration(w.max),
            rtrec_units::format_duration(w.p999),
            rtrec_units::format_duration(w.mean),
            c.missed_periods
        ),
        (None, None) => format!(
            "{}: no measurement{}",
            c.name,
            if c.interrupted { " (interrupted)" } else { "" }
        ),
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
    fn the_command_line_parses_cases_durations_sizes_and_compare() {
        let a = BenchArgs::try_from_words([
            "--cases", "NONE,ALL", "--period", "2ms", "--size", "4KiB", "--writes", "10",
        ])
        .unwrap();
        assert_eq!(a.cases, ["NONE", "ALL"]);
        assert_eq!(a.period, Some(Duration::from_millis(2)));
        assert_eq!(a.size, Some(4096));
        let plan = Plan::from_args(&a).unwrap();
        assert_eq!(plan.cases.len(), 2);
        assert_eq!(plan.cases[0].1.period_ns, 2_000_000);
        assert_eq!(plan.loop_ns(), 2 * 2 * 10 * 2_000_000);
        let c = BenchArgs::try_from_words(["--compare", "a.json", "b.json"]).unwrap();
        assert_eq!(c.compare.unwrap().len(), 2);
        assert!(BenchArgs::try_from_words(["--compare", "a.json"]).is_err());
        assert!(BenchArgs::try_from_words(["--dir", "/x", "--image-dir", "/y"]).is_err());
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

    fn plan(words: &[&str]) -> Result<Plan, Error> {
        Plan::from_args(&BenchArgs::try_from_words(words).unwrap())
    }

    #[test]
    fn studies_select_cases_and_the_s3_s4_runs() {
        let p = plan(&["--study", "s2,S4"]).unwrap();
        assert!(p.cases.iter().all(|(s, _)| s.study == Study::S2));
        assert!(!p.cases.is_empty());
        assert!(p.s4 && !p.s3);
        let p = plan(&["--study", "s3"]).unwrap();
        assert!(p.cases.is_empty() && p.s3);
        let d = plan(&[]).unwrap();
        assert!(!d.s3 && !d.s4 && d.cases.len() == SCENARIOS.len());
        let e = plan(&["--study", "s5"]).unwrap_err().to_string();
        assert!(e.contains("expected one of s1, s2, s3, s4, rtrec"), "{e}");
    }

    #[test]
    fn with_fio_needs_s4_and_schedulers_keep_the_tables_order() {
        let e = plan(&["--with-fio"]).unwrap_err().to_string();
        assert!(e.contains("give it with --study s4"), "{e}");
        let p = plan(&["--study", "s4", "--with-fio"]).unwrap();
        assert!(p.s4_with_fio && p.s4_schedulers == s4::SCHEDS);
        let p = plan(&["--study", "s4", "--schedulers", "BFQ-strict,none"]).unwrap();
        assert_eq!(p.s4_schedulers, [s4::SCHEDS[0], s4::SCHEDS[3]]);
        let e = plan(&["--study", "s4", "--schedulers", "cfq"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown scheduler 'cfq'"), "{e}");
    }

    #[test]
    fn cases_run_in_the_order_given_whatever_their_letter_case() {
        let p = plan(&["--cases", "all,Noise-Floor,NONE"]).unwrap();
        let names: Vec<&str> = p.cases.iter().map(|(s, _)| s.name).collect();
        assert_eq!(names, ["ALL", "NOISE-FLOOR", "NONE"]);
    }

    #[test]
    fn bad_values_are_refused_before_anything_runs() {
        let e = plan(&["--cases", "NONE,BOGUS"]).unwrap_err().to_string();
        assert!(
            e.starts_with(
                "unknown case 'BOGUS': expected one of NOISE-FLOOR, PAGECACHE-FLOOR, NONE,"
            ),
            "{e}"
        );
        let e = plan(&["--cases", "NONE,WPRE-SDATA-FON-BGAL"]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown case 'WPRE-SDATA-FON-BGAL': did you mean WPRE-SDATA-FON-BGALL? (rtrec bench --list shows every case)"
        );
        let e = plan(&["--cases", "NONE,none"]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "case 'NONE' is given twice in --cases; give each case once"
        );
        let e = plan(&["--sets", "0"]).unwrap_err();
        assert_eq!(e.to_string(), "--sets must be at least 1");
        let e = plan(&["--size", "1GiB"]).unwrap_err();
        assert_eq!(e.to_string(), "--size must be at most 50 MiB (half a file)");
        let all = Plan::from_args(&BenchArgs::default()).unwrap();
        assert_eq!(all.cases.len(), SCENARIOS.len());
    }
}
