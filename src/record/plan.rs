//! `rtrec record`'s flags, as groups each with its own apply, and the plan
//! they resolve into (stage one of a recording: no I/O but the machine's
//! memory size).
//!
//! Design choice: one group per concern, each in its own module beside
//! the apply that turns its flags into its part of the plan and of the
//! engine's [`Config`] — [`SourceArgs`] (what is recorded, how much),
//! [`RingArgs`] (who calls `write()`, the ring in front of it),
//! [`StorageArgs`] (files, back-end, flushing, the pool), [`RtArgs`]
//! (real-time settings), [`FlightArgs`] (the flight recorder and its
//! triggers), [`OutputArgs`] (what the recording reports) — so a new flag
//! is a field and a line in one file. `--help` lists them in that order,
//! the source first, as a user reads them; `--dir` stays first, outside
//! the groups: every stage uses it (the pool, the status file's labels,
//! `--device`'s trial replaces it). [`resolve`] only combines the groups,
//! then lets the engine settle the configuration ([`Config::settle`]: the
//! sizes the user did not set and the refusals, the same step the C API
//! takes).

use std::path::PathBuf;

use clap::Args;
use rtrec_engine::rt::RtSetup;
use rtrec_engine::settle::SettleError;
use rtrec_engine::{Config, ConfigError, RingSizing, Workload};

use super::flight::{FlightArgs, TriggerSources};
use super::output::OutputArgs;
use super::realtime::RtArgs;
use super::ring::RingArgs;
use super::source::{SourceArgs, SourcePlan};
use super::storage::StorageArgs;
use crate::device::RecordDeviceArgs;
use crate::error::{Error, Result};
use crate::explain::ExplainArgs;
use crate::isolation::IsolationArgs;

/// `rtrec record`.
#[derive(Debug, Args)]
pub struct RecordArgs {
    /// Directory for the recording files [default: ./rtrec-data, created if missing; a directory you name must exist].
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,

    /// First close what an earlier run left interrupted in the directory, as `rtrec recover DIR` does (one line per recording closed), then record: for a service's start (docs/unattended.md).
    #[arg(long)]
    pub recover_first: bool,

    /// What is recorded and how much.
    #[command(flatten)]
    pub source: SourceArgs,

    /// Who calls `write()`, and the ring in front of it.
    #[command(flatten)]
    pub ring: RingArgs,

    /// How records are stored: files, back-end, flushing, the pool.
    #[command(flatten)]
    pub storage: StorageArgs,

    /// Real-time settings of the caller and the writer.
    #[command(flatten)]
    pub rt: RtArgs,

    /// The flight recorder and its triggers.
    #[command(flatten)]
    pub flight: FlightArgs,

    /// What the recording reports, and where.
    #[command(flatten)]
    pub output: OutputArgs,

    /// `--explain`: the slow calls attributed to kernel causes.
    #[command(flatten)]
    pub explain: ExplainArgs,

    /// With --explain: the baseline, not a recording: the producer's loop runs as it would (same timer, priority, CPU, buffer and trace) but copies each record into a buffer of the ring's size instead of calling record(); nothing is recorded. Its slow stretches are what the platform does to a periodic thread without rtrec's code (docs/endurance.md).
    #[arg(long, requires = "explain", conflicts_with_all = ["stdin", "pre", "post", "mode"])]
    pub explain_baseline: bool,

    /// `--device`: a trial on an emulated device.
    #[command(flatten)]
    pub device: RecordDeviceArgs,

    /// `--io-class`, `--io-weight`: I/O isolation.
    #[command(flatten)]
    pub isolation: IsolationArgs,
}

/// The options after validation (stage one: no I/O).
pub struct Plan {
    /// The recording directory.
    pub dir: PathBuf,
    /// `--dir` was not given: the directory is created if missing.
    pub dir_is_default: bool,
    /// Where records come from, and how many.
    pub source: SourcePlan,
    /// The engine's configuration, settled.
    pub cfg: Config,
    /// `--rt`: the caller's real-time setup.
    pub rt: Option<RtSetup>,
    /// `--require-rt`: a setup that cannot be applied refuses the
    /// recording.
    pub require_rt: bool,
    /// The flight recorder's trigger sources.
    pub triggers: TriggerSources,
    /// What the sizing rules knew about the source.
    pub workload: Workload,
    /// How the ring was sized, for the summary and `--json`.
    pub ring: RingSizing,
}

/// Stage one: the options, already typed and checked value by value by
/// the command line's parsers, checked together and resolved into a plan:
/// each group applies its part, in the order the later ones need (the
/// framing's default needs the records' size; the ring's sizing needs the
/// rate, the stall and the flight recorder), then the engine settles it.
///
/// # Errors
/// One sentence (exit code 2): the first refusal, each group's in turn,
/// then the engine's.
pub fn resolve(a: &RecordArgs) -> Result<Plan> {
    features(a)?;
    let mut cfg = Config::default();
    let source = a.source.apply(&mut cfg)?;
    let ring = a.ring.apply(&mut cfg)?;
    a.storage.apply(&mut cfg);
    a.output.apply(&mut cfg, source.count)?;
    let triggers = a.flight.apply(&mut cfg, a.source.stdin)?;
    let rt = a.rt.apply(&mut cfg)?;
    let workload = source.workload(a.ring.stall(&a.device));
    let ring = cfg.settle(&workload, ring).map_err(|e| refusal(e, &cfg))?;
    let (dir, dir_is_default) = match &a.dir {
        Some(d) => (d.clone(), false),
        None => (PathBuf::from("./rtrec-data"), true),
    };
    Ok(Plan {
        dir,
        dir_is_default,
        source,
        cfg,
        rt,
        require_rt: a.rt.require_rt,
        triggers,
        workload,
        ring,
    })
}

/// The engine's refusal in the command line's words: a record larger
/// than a file names the two flags that fix it; every other refusal is the
/// engine's sentence.
fn refusal(e: SettleError, cfg: &Config) -> Error {
    match e {
        SettleError::Config(ConfigError::RecordOverFile { .. }) => Error::Usage(format!(
            "a record of {} bytes does not fit in a file of {} bytes; raise --file-size or lower --size",
            cfg.max_record, cfg.file_size
        )),
        e => Error::Usage(e.to_string()),
    }
}

/// Refuses, in one sentence and before anything starts, a `record` flag
/// whose cargo feature this build left out: `--explain` without `trace`,
/// `--device` without `emu` (`--stall PROFILE` still sizes the ring for a
/// profile's worst stall).
///
/// # Errors
/// The flag was given and its feature is not built in.
fn features(a: &RecordArgs) -> Result<()> {
    #[cfg(not(feature = "trace"))]
    if a.explain.explain {
        return crate::error::left_out("the tracer that `--explain` needs", "trace");
    }
    #[cfg(not(feature = "emu"))]
    if a.device.device.is_some() {
        return crate::error::left_out("the device emulator that `--device` needs", "emu");
    }
    let _ = a;
    Ok(())
}
