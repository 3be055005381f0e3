//! S4, I/O isolation with BFQ and cgroup weights: weighted jobs
//! (`__bgload job-read|job-write`, each in its own rtrec-made cgroup) on
//! our own loop device, for every request size, direct and buffered, reads
//! and writes, under the schedulers `none`, `mq-deadline`, `bfq` and `bfq`
//! with `strict_guarantees=1`. Reported: each job's throughput share
//! against its weight share, and the device bytes its cgroup was charged
//! (v1 `blkio.bfq.io_service_bytes`, else `blkio.throttle.io_service_bytes`), which shows I/O that escapes
//! the weights (buffered writeback issued by kernel threads).
//!
//! Then the user's question: does a recording stay on time against the
//! heaviest interferers? rtrec's default recording (16 KiB every 5 ms)
//! runs in its own cgroup against two 100 MB writers (one direct, one
//! buffered), plain and with the isolation options — I/O class `rt` for
//! its threads, a BFQ weight for its group (RTREC-ISOLATED-*).
//!
//! With `--with-fio` every cell runs a second time with `fio`'s libaio
//! jobs in the same weighted groups ([`crate::s4_fio`]), right after the
//! own jobs with the same settings; both tables are printed.
//!
//! Design choices: the I/O class is set on the bench's thread before the
//! recorder starts, so its writer and flush threads inherit it (Linux
//! copies a set ioprio to new threads), and reset after — the engine stays
//! free of policy. Every scheduler, tunable and cgroup change goes through
//! the journal of the global lock and is put back before the next cell.

use std::fs;
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use rtrec_engine::{Config, LatencySummary, PeriodicTimer, Recorder};
use rtrec_host::cgroup::{self, Group, Hierarchy};
use rtrec_host::features::{self, Feature};
use rtrec_host::{iosched, Journal};
use rtrec_sys as sys;
use serde::{Deserialize, Serialize};

use crate::bgload::{Launcher, LoadSet, LoadSpec};
use crate::s4_fio;
use crate::scenario::Load;
use crate::signal::interrupted;

/// Request sizes of the study, bytes (1, 4, 16, 35, 50, 100 MB).
pub const SIZES: [u64; 6] = [1 << 20, 4 << 20, 16 << 20, 35 << 20, 50 << 20, 100 << 20];
/// Each job's file.
pub const JOB_FILE_BYTES: u64 = 256 << 20;
/// Default time each cell runs.
pub const DEFAULT_CELL: Duration = Duration::from_secs(3);

/// A scheduler setting of a cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sched {
    /// Label (`bfq-strict`).
    pub label: &'static str,
    /// Scheduler name.
    pub scheduler: &'static str,
    /// BFQ `strict_guarantees`.
    pub strict: bool,
}

/// The schedulers compared.
pub const SCHEDS: [Sched; 4] = [
    Sched {
        label: "none",
        scheduler: "none",
        strict: false,
    },
    Sched {
        label: "mq-deadline",
        scheduler: "mq-deadline",
        strict: false,
    },
    Sched {
        label: "bfq",
        scheduler: "bfq",
        strict: false,
    },
    Sched {
        label: "bfq-strict",
        scheduler: "bfq",
        strict: true,
    },
];

/// One measured cell of the matrix.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct S4Cell {
    /// Scheduler label.
    pub scheduler: String,
    /// BFQ tunables in force (`name=value`), empty for other schedulers.
    pub bfq_tunables: Vec<String>,
    /// `read` or `write`.
    pub direction: String,
    /// O_DIRECT (else buffered).
    pub direct: bool,
    /// Request size, bytes.
    pub request_bytes: u64,
    /// The jobs' BFQ weights.
    pub weights: Vec<u32>,
    /// Each job's throughput, bytes/s.
    pub job_bytes_per_s: Vec<f64>,
    /// Each job's share of the total throughput, %.
    pub share_pct: Vec<f64>,
    /// Each job's weight share, %.
    pub target_pct: Vec<f64>,
    /// Device bytes each job's cgroup was charged (null when unreadable).
    pub cgroup_device_bytes: Vec<Option<u64>>,
    /// Why the cell failed, if it did.
    pub error: Option<String>,
    /// The weights were set on the jobs' groups; false on a kernel without
    /// BFQ's cgroup support, where the groups only count each job's device
    /// bytes (absent in older documents: true).
    #[serde(default = "weights_applied_default")]
    pub weights_applied: bool,
}

fn weights_applied_default() -> bool {
    true
}

/// One recording against the interferers.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct IsolatedCase {
    /// RTREC-ISOLATED-…
    pub name: String,
    /// Scheduler label.
    pub scheduler: String,
    /// I/O class of the recording's threads (`rt:0`), if set.
    pub io_class: Option<String>,
    /// BFQ weight of the recording's cgroup, if set.
    pub io_weight: Option<u32>,
    /// `write()` latency on the writer thread, ns.
    pub write_ns: Option<LatencySummary>,
    /// `record()` latency on the producer, ns.
    pub record_ns: Option<LatencySummary>,
    /// Lateness of the producer against its schedule, ns.
    pub lateness_ns: Option<LatencySummary>,
    /// Missed periods.
    pub missed_periods: u64,
    /// Records dropped (ring full), counted by the engine.
    pub records_dropped: u64,
    /// The interferers' total throughput, bytes/s.
    pub interferers_bytes_per_s: f64,
    /// Why it failed, if it did.
    pub error: Option<String>,
}

/// The whole study.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct S4Result {
    /// Which cgroup interface was used (`cgroup v1 blkio (blkio.bfq.weight)`).
    pub cgroup_interface: String,
    /// The loop device the jobs ran on.
    pub device: String,
    /// Seconds per cell.
    pub cell_s: f64,
    /// The matrix.
    pub cells: Vec<S4Cell>,
    /// The recording under interference.
    pub isolated: Vec<IsolatedCase>,
    /// The same matrix run by fio (`--with-fio`); null without it.
    #[serde(default)]
    pub fio: Option<S4Fio>,
    /// What was not run for lack of a kernel feature, a sentence each
    /// ("bfq, bfq-strict, RTREC-ISOLATED-BFQ*: this kernel has no BFQ
    /// (CONFIG_IOSCHED_BFQ): …"); empty when everything ran.
    #[serde(default)]
    pub skipped: Vec<String>,
}

/// The matrix run by fio's libaio jobs.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct S4Fio {
    /// `fio --version` (`fio-3.33`).
    pub version: String,
    /// How each job joined its group ([`crate::s4_fio::JOIN_METHOD`]).
    pub cgroup_join: String,
    /// The cells, in the order and with the settings of [`S4Result::cells`].
    pub cells: Vec<S4Cell>,
}

/// What a run of S4 needs.
pub struct S4Context<'a> {
    /// Starts load processes.
    pub launcher: &'a Launcher,
    /// The global lock's journal.
    pub journal: &'a Journal,
    /// A directory on the filesystem of `device`.
    pub work: &'a Path,
    /// Our loop device.
    pub device: &'a Path,
    /// Time per cell.
    pub cell: Duration,
    /// Request sizes.
    pub sizes: &'a [u64],
    /// Writes per recording.
    pub writes: u64,
    /// The schedulers to compare (a subset of [`SCHEDS`], in its order).
    pub schedulers: &'a [Sched],
    /// fio's version when `--with-fio` was given (checked before the run).
    pub fio: Option<String>,
}

/// Runs the matrix (each cell with our own jobs and, with `--with-fio`,
/// fio's) and the recording cases ([`ISOLATED`]).
///
/// Design choice: on a kernel without BFQ the study runs what does not need
/// it — the `none` and `mq-deadline` cells, their jobs in groups that count
/// each job's device bytes without a weight, and the recording under those
/// schedulers — and names what it left out in one sentence
/// ([`S4Result::skipped`], printed once), never an errno per cell.
///
/// # Errors
/// No I/O cgroup hierarchy (one sentence, [`Feature::IoCgroup`]).
pub fn run(ctx: &S4Context<'_>) -> anyhow::Result<S4Result> {
    features::detect(Feature::IoCgroup)
        .map_err(|m| anyhow::anyhow!("{}", m.sentence("S4 needs them for its job groups")))?;
    let h = cgroup::detect().map_err(|e| anyhow::anyhow!("S4 needs I/O cgroups: {e}"))?;
    let plan = Plan::new(ctx);
    for line in &plan.skipped {
        eprintln!("rtrec bench: S4: {line}");
    }
    let ctx = &S4Context {
        launcher: ctx.launcher,
        journal: ctx.journal,
        work: ctx.work,
        device: ctx.device,
        cell: ctx.cell,
        sizes: ctx.sizes,
        writes: ctx.writes,
        schedulers: &plan.schedulers,
        fio: ctx.fio.clone(),
    };
    let dev = ctx.device.to_string_lossy().into_owned();
    let mut out = S4Result {
        cgroup_interface: h.version.describe().to_string(),
        device: dev.clone(),
        cell_s: ctx.cell.as_secs_f64(),
        cells: Vec::new(),
        isolated: Vec::new(),
        fio: ctx.fio.clone().map(|version| S4Fio {
            version,
            cgroup_join: crate::s4_fio::JOIN_METHOD.to_string(),
            cells: Vec::new(),
        }),
        skipped: plan.skipped.clone(),
    };
    run_matrix(ctx, &h, &dev, &plan, &mut out);
    run_isolated_cases(ctx, &h, &dev, &plan, &mut out);
    Ok(out)
}

/// What this kernel lets S4 run: the schedulers it offers of those asked
/// for, whether group weights can be set, and a sentence for each part
/// left out.
struct Plan {
    schedulers: Vec<Sched>,
    weights: bool,
    /// `O_DIRECT` on the work directory's file system: the direct cells
    /// and the isolated cases (whose competing writers include a direct
    /// one) need it.
    direct: bool,
    skipped: Vec<String>,
}

impl Plan {
    fn new(ctx: &S4Context<'_>) -> Plan {
        let bfq = features::detect(Feature::Bfq);
        let group = features::detect(Feature::BfqCgroup);
        let mut skipped = Vec::new();
        let asked_bfq: Vec<&str> = ctx
            .schedulers
            .iter()
            .filter(|s| s.scheduler == "bfq")
            .map(|s| s.label)
            .collect();
        if let (Err(m), false) = (&bfq, asked_bfq.is_empty()) {
            skipped.push(m.sentence(&format!(
                "S4 needs it for its {} cells and its RTREC-ISOLATED-BFQ* cases, which did not run",
                asked_bfq.join(" and ")
            )));
        }
        let schedulers = ctx
            .schedulers
            .iter()
            .copied()
            .filter(|s| s.scheduler != "bfq" || bfq.is_ok())
            .collect::<Vec<_>>();
        if let (Ok(()), Err(m), false) = (&bfq, &group, schedulers.is_empty()) {
            skipped.push(m.sentence(
                "S4 needs it for its weights, so its cells ran in unweighted groups \
                 and the RTREC-ISOLATED-BFQ-WEIGHT/-BOTH cases did not run",
            ));
        }
        let direct = features::o_direct(ctx.work);
        if let Err(m) = &direct {
            skipped.push(m.sentence(
                "S4 needs it for its direct cells and its RTREC-ISOLATED* cases \
                 (one of whose writers is direct), which did not run",
            ));
        }
        Plan {
            schedulers,
            weights: group.is_ok(),
            direct: direct.is_ok(),
            skipped,
        }
    }
}

/// One cell of the matrix: scheduler, load, `O_DIRECT`, request size and
/// the groups' weights.
type MatrixCell = (Sched, Load, bool, u64, Vec<u32>);

/// The matrix in run order: for each scheduler, the reader and the writer,
/// direct then buffered, at every request size, in two groups weighted
/// 200:100; then under bfq (when it is compared) the direct ones in three
/// groups weighted 100:400:500.
fn matrix(ctx: &S4Context<'_>) -> Vec<MatrixCell> {
    let mut plan: Vec<MatrixCell> = Vec::new();
    for &s in ctx.schedulers {
        for (load, direct) in [
            (Load::JobRead, true),
            (Load::JobWrite, true),
            (Load::JobRead, false),
            (Load::JobWrite, false),
        ] {
            for &size in ctx.sizes {
                plan.push((s, load, direct, size, vec![200, 100]));
            }
        }
    }
    for (load, direct) in [(Load::JobRead, true), (Load::JobWrite, true)] {
        if !ctx.schedulers.contains(&SCHEDS[2]) {
            break;
        }
        for &size in ctx.sizes {
            plan.push((SCHEDS[2], load, direct, size, vec![100, 400, 500]));
        }
    }
    plan
}

/// Runs every cell of the [`matrix`] until a stop signal, with our own
/// jobs and, with `--with-fio`, fio's; one line each.
fn run_matrix(ctx: &S4Context<'_>, h: &Hierarchy, dev: &str, plan: &Plan, out: &mut S4Result) {
    let weighted = plan.weights;
    for (i, (s, load, direct, size, weights)) in matrix(ctx).into_iter().enumerate() {
        if interrupted() {
            break;
        }
        if direct && !plan.direct {
            // Named in the plan's sentence.
            continue;
        }
        let tools: &[Tool] = if out.fio.is_some() {
            &[Tool::Own, Tool::Fio]
        } else {
            &[Tool::Own]
        };
        for &tool in tools {
            let cell = run_cell(
                ctx,
                h,
                dev,
                tool,
                s,
                load,
                direct,
                size,
                (&weights, weighted),
                i,
            );
            eprintln!(
                "rtrec bench: S4{} {} {} {} {} weights {:?}: shares {:?}%{}",
                if tool == Tool::Fio { " fio" } else { "" },
                s.label,
                if direct { "direct" } else { "buffered" },
                load.name(),
                rtrec_units::format_size(size),
                weights,
                cell.share_pct.iter().map(|p| p.round()).collect::<Vec<_>>(),
                cell.error
                    .as_deref()
                    .map(|e| format!(" FAILED: {e}"))
                    .unwrap_or_default()
            );
            match (tool, out.fio.as_mut()) {
                (Tool::Fio, Some(f)) => f.cells.push(cell),
                _ => out.cells.push(cell),
            }
        }
    }
}

/// Runs the [`ISOLATED`] cases of the compared schedulers until a stop
/// signal, one line each.
fn run_isolated_cases(
    ctx: &S4Context<'_>,
    h: &Hierarchy,
    dev: &str,
    plan: &Plan,
    out: &mut S4Result,
) {
    let weighted = plan.weights;
    for (name, s, class, weight) in ISOLATED {
        // A case about a weight runs only where weights can be set, and
        // every case only where its direct writer can run (the plan's
        // sentences name what was left out).
        if !ctx.schedulers.contains(&s) || (weight.is_some() && !weighted) || !plan.direct {
            continue;
        }
        if interrupted() {
            break;
        }
        let c = run_isolated(ctx, h, (dev, weighted), name, s, class, weight);
        eprintln!(
            "rtrec bench: {name}: write max {}, dropped {}{}",
            c.write_ns
                .map(|w| rtrec_units::format_duration(w.max))
                .unwrap_or_default(),
            c.records_dropped,
            c.error
                .as_deref()
                .map(|e| format!(" FAILED: {e}"))
                .unwrap_or_default()
        );
        out.isolated.push(c);
    }
}

/// Who runs a cell's jobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tool {
    /// Our own load processes (`__bgload job-read|job-write`).
    Own,
    /// fio's libaio jobs ([`crate::s4_fio`]).
    Fio,
}

/// An RTREC-ISOLATED case: name, scheduler, I/O (class, level), weight.
pub type IsoCase = (&'static str, Sched, Option<(u32, u32)>, Option<u32>);

/// The RTREC-ISOLATED cases, in run order: the recording against the
/// heaviest interferers under each scheduler, then under bfq with I/O class
/// `rt:0`, with its group at weight 1000, and with both.
pub const ISOLATED: [IsoCase; 6] = [
    ("RTREC-ISOLATED-NONE", SCHEDS[0], None, None),
    ("RTREC-ISOLATED-MQ-DEADLINE", SCHEDS[1], None, None),
    ("RTREC-ISOLATED-BFQ", SCHEDS[2], None, None),
    ("RTREC-ISOLATED-BFQ-IOCLASS", SCHEDS[2], Some((1, 0)), None),
    ("RTREC-ISOLATED-BFQ-WEIGHT", SCHEDS[2], None, Some(1000)),
    (
        "RTREC-ISOLATED-BFQ-BOTH",
        SCHEDS[2],
        Some((1, 0)),
        Some(1000),
    ),
];

/// Sets the scheduler (and BFQ's strict_guarantees); returns the journal
/// entries to undo and the BFQ tunables in force.
fn apply_sched(
    journal: &Journal,
    dev: &str,
    s: Sched,
) -> anyhow::Result<(Vec<rtrec_host::EntryId>, Vec<String>)> {
    let mut ids = vec![iosched::set_scheduler(journal, dev, s.scheduler)?];
    if s.scheduler == "bfq" {
        ids.push(iosched::set_tunable(
            journal,
            dev,
            "strict_guarantees",
            if s.strict { "1" } else { "0" },
        )?);
    }
    let t = iosched::bfq_tunables(dev)
        .into_iter()
        .map(|(n, v)| format!("{n}={v}"))
        .collect();
    Ok((ids, t))
}

fn undo_all(journal: &Journal, ids: Vec<rtrec_host::EntryId>) -> anyhow::Result<()> {
    for id in ids.into_iter().rev() {
        journal.undo(id)?;
    }
    Ok(())
}

/// The device bytes charged to `group` for device `majmin` (v1
/// `blkio.throttle.io_service_bytes`, line `MAJ:MIN Total N`).
fn device_bytes(group: &Path, majmin: &str) -> Option<u64> {
    [
        "blkio.bfq.io_service_bytes",
        "blkio.throttle.io_service_bytes",
    ]
    .iter()
    .find_map(|f| {
        let text = fs::read_to_string(group.join(f)).ok()?;
        text.lines().find_map(|l| {
            let mut w = l.split_whitespace();
            (w.next()? == majmin && w.next()? == "Total").then(|| w.next()?.parse().ok())?
        })
    })
}

fn majmin(dev: &str) -> String {
    rtrec_host::machine::device_number(dev).unwrap_or_default()
}

/// One weighted group per job, `rtrec-<pid>-TAG-i`, journaled.
struct Groups(Vec<Group>);

impl Groups {
    /// Creates one group per weight; on an error the ones made are removed.
    fn create(
        ctx: &S4Context<'_>,
        h: &Hierarchy,
        (weights, weighted): (&[u32], bool),
        tag: &str,
    ) -> anyhow::Result<Groups> {
        let mut made = Groups(Vec::new());
        for (i, w) in weights.iter().enumerate() {
            let r = Group::create(ctx.journal, h, &format!("{tag}-{i}"))
                .map_err(anyhow::Error::from)
                .and_then(|g| {
                    made.0.push(g);
                    if !weighted {
                        return Ok(());
                    }
                    made.0
                        .last()
                        .expect("pushed")
                        .set_weight(*w)
                        .map_err(Into::into)
                });
            if let Err(e) = r {
                let _ = made.finish(ctx.journal, "");
                return Err(e);
            }
        }
        Ok(made)
    }

    fn paths(&self) -> impl Iterator<Item = &Path> {
        self.0.iter().map(Group::path)
    }

    /// The device bytes each group was charged, then removes them.
    fn finish(self, journal: &Journal, majmin: &str) -> anyhow::Result<Vec<Option<u64>>> {
        let bytes = self.paths().map(|p| device_bytes(p, majmin)).collect();
        let mut first = Ok(());
        for g in self.0 {
            let r = g.remove(journal);
            if first.is_ok() {
                first = r;
            }
        }
        first?;
        Ok(bytes)
    }
}

/// Starts `loads` (one per weight) in their own groups, together.
struct Jobs {
    groups: Groups,
    set: Option<LoadSet>,
    start_file: PathBuf,
}

impl Jobs {
    fn start(
        ctx: &S4Context<'_>,
        h: &Hierarchy,
        specs: Vec<(LoadSpec, u32)>,
        weighted: bool,
        tag: &str,
    ) -> anyhow::Result<Jobs> {
        let start_file = ctx.work.join(format!("start-{tag}"));
        let _ = fs::remove_file(&start_file);
        let weights: Vec<u32> = specs.iter().map(|(_, w)| *w).collect();
        let mut jobs = Jobs {
            groups: Groups::create(ctx, h, (&weights, weighted), tag)?,
            set: None,
            start_file: start_file.clone(),
        };
        let full: Vec<LoadSpec> = specs
            .into_iter()
            .zip(jobs.groups.paths())
            .map(|((spec, _), g)| LoadSpec {
                cgroup: Some(g.to_path_buf()),
                start_file: Some(start_file.clone()),
                ..spec
            })
            .collect();
        jobs.set = Some(LoadSet::start(ctx.launcher, &full)?);
        fs::write(&start_file, b"go").context("starting the jobs")?;
        Ok(jobs)
    }

    /// Stops them; (bytes/s, device bytes) per job.
    fn stop(mut self, journal: &Journal, majmin: &str) -> anyhow::Result<Vec<(f64, Option<u64>)>> {
        let set = self.set.take().expect("started");
        let dead = set_dead(set)?;
        let _ = fs::remove_file(&self.start_file);
        let bytes = self.groups.finish(journal, majmin)?;
        let mut out = Vec::new();
        for (r, b) in dead.iter().zip(bytes) {
            let Some(res) = &r.result else {
                bail!(
                    "the {} job reported nothing: {}",
                    r.load.name(),
                    r.stderr.trim()
                );
            };
            out.push((res.bytes_per_s(), b));
        }
        Ok(out)
    }
}

/// The fio half of a cell: fio's libaio jobs in their own weighted groups,
/// on the own jobs' files; (bytes/s, device bytes) per job.
#[allow(clippy::too_many_arguments)]
fn fio_jobs(
    ctx: &S4Context<'_>,
    h: &Hierarchy,
    majmin: &str,
    write: bool,
    direct: bool,
    size: u64,
    weights: (&[u32], bool),
    tag: &str,
) -> anyhow::Result<Vec<(f64, Option<u64>)>> {
    let groups = Groups::create(ctx, h, weights, tag)?;
    let jobs: Vec<s4_fio::FioJob> = groups
        .paths()
        .enumerate()
        .map(|(i, g)| s4_fio::FioJob {
            name: format!("fio-{i}"),
            file: crate::bgload::job_file_in(&job_dir(ctx, i)),
            file_bytes: JOB_FILE_BYTES,
            write,
            direct,
            request_bytes: size,
            runtime: ctx.cell,
            cgroup: g.to_path_buf(),
        })
        .collect();
    let ran = (|| {
        for (i, j) in jobs.iter().enumerate() {
            fs::create_dir_all(job_dir(ctx, i))?;
            crate::bgload::written_file(&j.file, j.file_bytes)?;
        }
        s4_fio::run(&jobs, ctx.work)
    })();
    let bytes = groups.finish(ctx.journal, majmin)?;
    Ok(ran?.into_iter().zip(bytes).collect())
}

fn job_dir(ctx: &S4Context<'_>, i: usize) -> PathBuf {
    ctx.work.join(format!("job-{i}"))
}

fn set_dead(set: LoadSet) -> anyhow::Result<Vec<crate::bgload::LoadReport>> {
    set.stop()
}

fn job_spec(ctx: &S4Context<'_>, load: Load, direct: bool, size: u64, i: usize) -> LoadSpec {
    LoadSpec {
        file_bytes: JOB_FILE_BYTES,
        request_bytes: size,
        direct,
        ..LoadSpec::new(load, job_dir(ctx, i))
    }
}

#[allow(clippy::too_many_arguments)]
fn run_cell(
    ctx: &S4Context<'_>,
    h: &Hierarchy,
    dev: &str,
    tool: Tool,
    s: Sched,
    load: Load,
    direct: bool,
    size: u64,
    (weights, weighted): (&[u32], bool),
    index: usize,
) -> S4Cell {
    let total: u32 = weights.iter().sum();
    let mut cell = S4Cell {
        scheduler: s.label.to_string(),
        bfq_tunables: Vec::new(),
        direction: if load == Load::JobRead {
            "read"
        } else {
            "write"
        }
        .to_string(),
        direct,
        request_bytes: size,
        weights: weights.to_vec(),
        job_bytes_per_s: Vec::new(),
        share_pct: Vec::new(),
        target_pct: weights
            .iter()
            .map(|w| *w as f64 * 100.0 / total as f64)
            .collect(),
        cgroup_device_bytes: Vec::new(),
        error: None,
        weights_applied: weighted,
    };
    let r = (|| -> anyhow::Result<()> {
        let (ids, tunables) = apply_sched(ctx.journal, dev, s)?;
        cell.bfq_tunables = tunables;
        let measured = match tool {
            Tool::Own => (|| {
                let specs = weights
                    .iter()
                    .enumerate()
                    .map(|(i, w)| (job_spec(ctx, load, direct, size, i), *w))
                    .collect();
                let jobs = Jobs::start(ctx, h, specs, weighted, &format!("s4-{index}"))?;
                sleep(ctx.cell);
                jobs.stop(ctx.journal, &majmin(dev))
            })(),
            Tool::Fio => fio_jobs(
                ctx,
                h,
                &majmin(dev),
                load == Load::JobWrite,
                direct,
                size,
                (weights, weighted),
                &format!("fio-{index}"),
            ),
        };
        undo_all(ctx.journal, ids)?;
        let m = measured?;
        let sum: f64 = m.iter().map(|(b, _)| b).sum();
        cell.job_bytes_per_s = m.iter().map(|(b, _)| *b).collect();
        cell.share_pct = m
            .iter()
            .map(|(b, _)| if sum > 0.0 { b * 100.0 / sum } else { 0.0 })
            .collect();
        cell.cgroup_device_bytes = m.iter().map(|(_, d)| *d).collect();
        Ok(())
    })();
    if let Err(e) = r {
        cell.error = Some(format!("{e:#}"));
    }
    cell
}

fn sleep(d: Duration) {
    let end = Instant::now() + d;
    while Instant::now() < end && !interrupted() {
        thread::sleep(Duration::from_millis(20));
    }
}

fn run_isolated(
    ctx: &S4Context<'_>,
    h: &Hierarchy,
    (dev, weighted): (&str, bool),
    name: &str,
    s: Sched,
    class: Option<(u32, u32)>,
    weight: Option<u32>,
) -> IsolatedCase {
    let mut c = IsolatedCase {
        name: name.to_string(),
        scheduler: s.label.to_string(),
        io_class: class.map(|(k, l)| format!("{}:{l}", ["none", "rt", "be", "idle"][k as usize])),
        io_weight: weight,
        write_ns: None,
        record_ns: None,
        lateness_ns: None,
        missed_periods: 0,
        records_dropped: 0,
        interferers_bytes_per_s: 0.0,
        error: None,
    };
    let r = (|| -> anyhow::Result<()> {
        let (ids, _) = apply_sched(ctx.journal, dev, s)?;
        let measured = (|| -> anyhow::Result<()> {
            let big = 100 << 20;
            let specs = vec![
                (job_spec(ctx, Load::JobWrite, true, big, 0), 100),
                (job_spec(ctx, Load::JobWrite, false, big, 1), 100),
            ];
            // The interferers' equal weights are BFQ's default: nothing to
            // set where the kernel has no BFQ groups.
            let jobs = Jobs::start(
                ctx,
                h,
                specs,
                weighted,
                &format!("iso-{}", name.len() + s.label.len()),
            )?;
            let rec = record_in_group(ctx, h, name, class, weight, &mut c);
            let m = jobs.stop(ctx.journal, &majmin(dev))?;
            c.interferers_bytes_per_s = m.iter().map(|(b, _)| b).sum();
            rec
        })();
        undo_all(ctx.journal, ids)?;
        measured
    })();
    if let Err(e) = r {
        c.error = Some(format!("{e:#}"));
    }
    c
}

fn record_in_group(
    ctx: &S4Context<'_>,
    h: &Hierarchy,
    name: &str,
    class: Option<(u32, u32)>,
    weight: Option<u32>,
    c: &mut IsolatedCase,
) -> anyhow::Result<()> {
    let me = std::process::id();
    let home = cgroup::group_of(h, me).context("finding the bench's own cgroup")?;
    let group = Group::create(ctx.journal, h, &format!("rec-{}", name.len()))?;
    if let Some(w) = weight {
        group.set_weight(w)?;
    }
    group.add_process(me)?;
    let r = (|| -> anyhow::Result<()> {
        if let Some((k, l)) = class {
            sys::set_thread_ioprio(k, l).context("setting the I/O class")?;
        }
        let dir = ctx.work.join(format!("rec-{}", name.to_ascii_lowercase()));
        fs::create_dir_all(&dir)?;
        let cfg = Config {
            flush_every: 2 << 20,
            file_size: 100 << 20,
            keep_write_samples: 0,
            prefix: "iso".into(),
            ..Config::default()
        };
        let started = Recorder::create(&dir, cfg);
        // The writer and flush threads have inherited the class; the
        // producer goes back to none.
        let _ = sys::set_thread_ioprio(0, 0);
        let mut rec = started.context("starting the recording")?;
        let data: Vec<u8> = (0..16384u32).map(|i| (i % 251) as u8).collect();
        let mut timer = PeriodicTimer::new(crate::protocol::PERIOD_NS);
        for _ in 0..ctx.writes {
            timer.wait();
            let _ = rec.record(&data);
            if interrupted() {
                break;
            }
        }
        let sum = rec.finish().context("ending the recording")?;
        c.write_ns = sum.write_latency.summary();
        c.record_ns = sum.record_latency.summary();
        c.lateness_ns = timer.lateness().summary();
        c.missed_periods = timer.missed();
        c.records_dropped = sum.records_dropped;
        let _ = fs::remove_dir_all(&dir);
        Ok(())
    })();
    let _ = sys::set_thread_ioprio(0, 0);
    let back = cgroup::move_to(&home, me);
    let removed = group.remove(ctx.journal);
    r?;
    back?;
    removed?;
    Ok(())
}
