//! `--study crash`: every crash a real card can produce, checked against
//! the durability contract (`docs/durability.md`, "Crash states").
//!
//! For each cell of the matrix ([`CELLS`]) it records a short recording on
//! the emulated device with its write log on (`rtrec __emulate
//! --write-log`, [`rtrec_emu::writelog`]), polling `--status` (on a file
//! outside the device), the directory and the pool, and stamping what it
//! sees with the clock the log uses. Then, for its share of the N crash
//! states, it builds the image a power cut at a chosen crash point could
//! leave ([`rtrec_emu::crashimg`]), and checks it:
//! - the ext4 journal is replayed (`e2fsck -E journal_only`), then
//!   `e2fsck -fn` says whether ext4 itself needs repair beyond the summary
//!   counters it recomputes at mount (counted apart from rtrec's damage),
//!   and `e2fsck -fy` repairs it;
//! - the recording directory is read out with `debugfs rdump` (read-only,
//!   no mount, no loop device per state);
//! - `rtrec recover`, `rtrec verify --json` and `rtrec export` run on it;
//! - the contract: every record the finished recording holds below the
//!   durable point published before the crash point is present and
//!   byte-exact (the synthetic payload: sequence number in the first 8
//!   bytes, then `i % 251`); no recording is hidden; no accepted frame
//!   holds wrong bytes; after `recover` no file is corrupt or nameless of
//!   its header, and `export DIR` without flags reads every durable record.
//!
//! One [`Violation`] per broken rule, with its kind, the crash point and
//! the state (its seed and the writes that landed), so it can be rebuilt:
//! the log of a cell with a violation is kept and its directory printed.
//!
//! Design choices:
//! - The matrix varies one axis at a time around a base cell, then crosses
//!   the axes with file switches, where findings lived (the full cross
//!   product would spend a run recording).
//! - Crash points are weighted towards the moments that matter
//!   ([`moments`]): half of the states are drawn from every flush and the
//!   flushes and entries after each moment, the other half fall at any
//!   entry.
//! - Every image mounted or attached goes through the host crate's journal
//!   ([`LoopFs`]); the crash images are only read by e2fsprogs.

use std::collections::BTreeSet;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use rtrec_emu::crashimg::{CrashState, SplitMix};
use rtrec_emu::writelog::{Log, What};
use rtrec_emu::EmulatorStats;
use rtrec_engine::format::{FileHeader, FrameKind, LossPayload, LossReason};
use rtrec_engine::reader::walk_frames;
use rtrec_host::emufs::EmulatorCommand;
use rtrec_host::loopfs::{LoopFs, LoopFsOptions};
use serde::Serialize;

pub mod moments;
use moments::Seen;

/// Bytes per record in every cell.
pub const RECORD_BYTES: usize = 4096;
/// Size of each cell's ext4 image (sparse): 512 MiB, the smallest
/// that `mkfs.ext4` formats with 4 KiB blocks, as a card's file system is.
const IMAGE_BYTES: u64 = 512 << 20;
/// Its journal, MiB.
const JOURNAL_MIB: u32 = 16;

/// Where records come from in a cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// `rtrec record`'s synthetic source, every 2 ms.
    Synthetic,
    /// `--stdin`, fed by the study every 2 ms.
    Stdin,
}

/// One cell of the matrix: a recording the states are drawn from.
#[derive(Clone, Copy, Debug)]
pub struct Cell {
    /// Its name in lines, `--crash-cells` and the report.
    pub name: &'static str,
    /// What it varies from the base cell `default`, in a few words.
    pub varies: &'static str,
    /// `rtrec record` arguments beside the common ones.
    pub args: &'static [&'static str],
    /// Where records come from.
    pub source: Source,
    /// `--sync-every`, or `None` for rtrec's own default (1 s).
    pub sync: Option<&'static str>,
    /// A flight recorder (the arguments in `FLIGHT` added): each event is a
    /// recording of its own.
    pub flight: bool,
}

/// The flight recorder's arguments: an event every 700 ms, 200 ms before
/// it and 300 ms after (about four event files in a 3 s recording).
const FLIGHT: [&str; 6] = [
    "--pre",
    "200ms",
    "--post",
    "300ms",
    "--trigger-every",
    "700ms",
];

/// The matrix, in run order: the base cell (buffered ring, pool,
/// synthetic records, `--sync-every 200ms`), each axis of the issue varied
/// one at a time around it, then combinations where the moments meet: file
/// switches (1 MiB files) with each allocation mode and back-end, the
/// pool refilled while recording, a flight recorder on appended files,
/// and no periodic sync across file switches.
#[rustfmt::skip]
pub const CELLS: [Cell; 15] = [
    cell("default", "the base: buffered ring, pool, synthetic, --sync-every 200ms", &[], Source::Synthetic),
    cell("direct", "back-end --io direct", &["--io", "direct"], Source::Synthetic),
    cell("uring", "back-end --io uring", &["--io", "uring"], Source::Synthetic),
    cell("zero", "allocation --alloc zero", &["--alloc", "zero"], Source::Synthetic),
    cell("append", "allocation --alloc append", &["--alloc", "append"], Source::Synthetic),
    cell("stdin", "source --stdin", &[], Source::Stdin),
    Cell { flight: true, ..cell("flight", "source: the flight recorder (an event file every 700 ms)", &[], Source::Synthetic) },
    Cell { sync: None, ..cell("sync-default", "--sync-every left at rtrec's default (1 s)", &[], Source::Synthetic) },
    Cell { sync: Some("0"), ..cell("sync-0", "--sync-every 0 (durable only at a file's close)", &[], Source::Synthetic) },
    cell("switch", "1 MiB files: a file switch about every half second", &["--file-size", "1MiB"], Source::Synthetic),
    cell("switch-refill", "1 MiB files, the pool refilled while recording", &["--file-size", "1MiB", "--refill-while-recording"], Source::Synthetic),
    cell("switch-zero-uring", "1 MiB zero-filled files, --io uring", &["--alloc", "zero", "--file-size", "1MiB", "--io", "uring"], Source::Synthetic),
    cell("switch-append-stdin", "1 MiB appended files, --stdin", &["--alloc", "append", "--file-size", "1MiB"], Source::Stdin),
    Cell { sync: Some("0"), ..cell("switch-direct-sync-0", "1 MiB files, --io direct, --sync-every 0", &["--file-size", "1MiB", "--io", "direct"], Source::Synthetic) },
    Cell { flight: true, ..cell("flight-append", "the flight recorder on appended files", &["--alloc", "append"], Source::Synthetic) },
];

const fn cell(
    name: &'static str,
    varies: &'static str,
    args: &'static [&'static str],
    source: Source,
) -> Cell {
    Cell {
        name,
        varies,
        args,
        source,
        sync: Some("200ms"),
        flight: false,
    }
}

/// The period of every cell.
const PERIOD: Duration = Duration::from_millis(2);

/// How to run the study.
#[derive(Clone, Debug)]
pub struct Options {
    /// Crash states in all, shared evenly by the cells.
    pub states: u64,
    /// Records per recording.
    pub count: u64,
    /// Atomic unit of a torn write, bytes (512 or 4096).
    pub atomic: u64,
    /// Seed of every draw (printed, so a run can be repeated).
    pub seed: u64,
    /// The emulator (the write log's arguments are added here).
    pub emulator: EmulatorCommand,
    /// The rtrec binary.
    pub rtrec: PathBuf,
    /// Where images, logs and crash images go (a directory on this
    /// machine's disk).
    pub parent: PathBuf,
    /// Only these cells (by name; empty: every one).
    pub only: Vec<String>,
    /// Also record the first cell once with the write log off, to report
    /// the log's cost on the emulator's timing error.
    pub log_cost: bool,
}

/// One broken rule in one crash state.
#[derive(Clone, Debug, Serialize)]
pub struct Violation {
    /// The cell.
    pub cell: String,
    /// The crash state's seed.
    pub seed: u64,
    /// The crash point (log entries completed).
    pub point: usize,
    /// Milliseconds from the log's first entry to the crash point.
    pub at_ms: f64,
    /// The durable point published before the crash point.
    pub durable_seq: u64,
    /// The state: the last flush, the writes that landed, a torn one.
    pub state: String,
    /// Its kind, for counting: `missing`, `hidden`, `wrong-bytes`,
    /// `fs-damaged`, `recover-failed`, `corrupt-after-recover`,
    /// `no-verify-report`, `export-refused`, `export-refused-crash-hole`
    /// (export refused only for the loss frame `recover` put where it cut
    /// a crash hole), `export-wrong-bytes`, `export-misses`.
    pub kind: &'static str,
    /// What broke, in one sentence.
    pub what: String,
    /// Where the cell's log was kept to rebuild the state.
    pub log: String,
}

/// What one cell gave.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CellResult {
    /// Its name.
    pub name: String,
    /// Crash states checked.
    pub states: u64,
    /// Of them, drawn from the weighted points (flushes and moments).
    pub states_weighted: u64,
    /// States in which `e2fsck -fy` repaired ext4 (after journal replay).
    pub fs_repaired: u64,
    /// Violations found.
    pub violations: u64,
    /// Writes in its log.
    pub log_writes: u64,
    /// Flushes in its log.
    pub log_flushes: u64,
    /// Durable points published (distinct values seen in `--status`).
    pub durable_points: u64,
    /// Records the finished recording holds (the reference of "present").
    pub records_stored: u64,
    /// The moments found, by kind ([`moments`]).
    pub moments: std::collections::BTreeMap<String, u64>,
    /// The emulator's counters and timing error while it recorded, the
    /// write log on.
    pub emulator: Option<EmulatorStats>,
    /// The first ten states ext4 needed repair in: seed, state and the
    /// first problem `e2fsck -fn` named.
    pub fs_repairs: Vec<String>,
}

/// The write log's cost: the first cell recorded with the log off, then
/// on (the emulator's timing error of each).
#[derive(Clone, Debug, Default, Serialize)]
pub struct LogCost {
    /// The cell recorded twice.
    pub cell: String,
    /// Log off.
    pub off: Option<EmulatorStats>,
    /// Log on.
    pub on: Option<EmulatorStats>,
}

/// The study's result (`crash` in `--json`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct CrashReport {
    /// Crash states checked in all.
    pub states_checked: u64,
    /// States in which ext4 itself needed repair.
    pub fs_repaired: u64,
    /// Every violation, one object each.
    pub violations: Vec<Violation>,
    /// Per cell of the matrix.
    pub cells: Vec<CellResult>,
    /// The write log's cost on the emulator's timing error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_cost: Option<LogCost>,
    /// The seed of the run.
    pub seed: u64,
    /// Atomic unit of torn writes, bytes.
    pub atomic_bytes: u64,
    /// Wall time of the study, seconds (recordings and checks; not the
    /// wait for the global lock before it).
    pub wall_s: f64,
}

/// Runs the study; prints one line per cell and per violation on stderr.
///
/// # Errors
/// Setting up an image, recording, or reading a log failed (the
/// environment's failure, not a violation).
pub fn run(o: &Options) -> anyhow::Result<CrashReport> {
    let mut report = CrashReport {
        seed: o.seed,
        atomic_bytes: o.atomic,
        ..CrashReport::default()
    };
    let started = std::time::Instant::now();
    let cells = selected(&o.only);
    if o.log_cost {
        if let Some(c) = cells.first() {
            report.log_cost = Some(log_cost(o, c)?);
        }
    }
    let n = cells.len().max(1) as u64;
    for (k, c) in cells.iter().enumerate() {
        if crate::signal::interrupted() {
            break;
        }
        let share = o.states / n + u64::from((k as u64) < o.states % n);
        let r = run_cell(o, c, share, &mut report.violations)?;
        eprintln!(
            "rtrec bench: crash {}: {} states, {} with ext4 repaired, {} violations ({} writes, {} flushes, {} durable points; moments {:?})",
            r.name, r.states, r.fs_repaired, r.violations, r.log_writes, r.log_flushes, r.durable_points, r.moments
        );
        report.states_checked += r.states;
        report.fs_repaired += r.fs_repaired;
        report.cells.push(r);
    }
    report.wall_s = started.elapsed().as_secs_f64();
    Ok(report)
}

/// The cells `names` selects: none named or `all`, every one; else those
/// named.
pub fn selected(names: &[String]) -> Vec<&'static Cell> {
    CELLS
        .iter()
        .filter(|c| match names {
            [] => true,
            [all] if all == "all" => true,
            names => names.iter().any(|n| n == c.name),
        })
        .collect()
}

/// Records `c` once with the write log off and once with it on.
fn log_cost(o: &Options, c: &Cell) -> anyhow::Result<LogCost> {
    let work = tempfile::Builder::new()
        .prefix("rtrec-crash-cost-")
        .tempdir_in(&o.parent)?;
    let off = record(o, c, None, work.path())?.emulator;
    let on = record(o, c, Some(&work.path().join("log")), work.path())?.emulator;
    let e = |s: &Option<EmulatorStats>| s.as_ref().map_or("?".into(), EmulatorStats::error_summary);
    eprintln!(
        "rtrec bench: crash: the write log's cost ({}): emulator timing error off {}; on {}",
        c.name,
        e(&off),
        e(&on)
    );
    Ok(LogCost {
        cell: c.name.to_string(),
        off,
        on,
    })
}

fn run_cell(
    o: &Options,
    c: &Cell,
    states: u64,
    violations: &mut Vec<Violation>,
) -> anyhow::Result<CellResult> {
    use anyhow::Context;
    let work = tempfile::Builder::new()
        .prefix(&format!("rtrec-crash-{}-", c.name))
        .tempdir_in(&o.parent)
        .with_context(|| format!("creating a directory in '{}'", o.parent.display()))?;
    let log_dir = work.path().join("log");
    let rec = record(o, c, Some(&log_dir), work.path())?;
    let log = Log::open(&log_dir).context("reading the write log")?;
    let mut found = moments::in_log(&log).context("reading the write log")?;
    found.extend(moments::placed(&log, &rec.seen));
    let published: Vec<(u64, u64)> = rec.published;
    let mut r = CellResult {
        name: c.name.to_string(),
        log_writes: log
            .entries
            .iter()
            .filter(|e| matches!(e.what, What::Write { .. }))
            .count() as u64,
        log_flushes: log.flushes().len() as u64,
        durable_points: published.len() as u64,
        records_stored: rec.stored.len() as u64,
        moments: moments::counts(&found),
        emulator: rec.emulator,
        ..CellResult::default()
    };
    let points = moments::weighted_points(&log, &found);
    let mut rng = SplitMix::new(o.seed ^ fnv(c.name));
    let before = violations.len();
    for _ in 0..states {
        if crate::signal::interrupted() {
            break;
        }
        let seed = rng.next_u64();
        let mut pick = SplitMix::new(seed);
        let weighted = pick.below(2) == 0 && !points.is_empty();
        let point = if weighted {
            points[pick.below(points.len() as u64) as usize]
        } else {
            pick.below(log.entries.len() as u64 + 1) as usize
        };
        let state = CrashState::random(&log, point, seed, o.atomic);
        let at = log.entries.get(point).map_or(u64::MAX, |e| e.time_ns);
        let durable = published
            .iter()
            .filter(|(t, _)| *t < at)
            .map(|(_, d)| *d)
            .max()
            .unwrap_or(0);
        let image = work.path().join("state.img");
        state
            .build(&log, &image)
            .context("building a crash image")?;
        let promised: BTreeSet<u64> = rec.stored.range(..durable).copied().collect();
        let checked = check(o, &image, work.path(), &promised, c.flight)?;
        r.states += 1;
        r.states_weighted += u64::from(weighted);
        if let Some(what) = checked.fs_repaired {
            r.fs_repaired += 1;
            if r.fs_repairs.len() < 10 {
                r.fs_repairs
                    .push(format!("seed {seed}, {}: {what}", state.describe()));
            }
        }
        let t0 = log.entries.first().map_or(0, |e| e.time_ns);
        for (kind, what) in checked.broken {
            let x = Violation {
                cell: c.name.to_string(),
                seed,
                point,
                at_ms: at.saturating_sub(t0).min(u64::MAX / 2) as f64 / 1e6,
                durable_seq: durable,
                state: state.describe(),
                kind,
                what,
                log: log_dir.display().to_string(),
            };
            eprintln!(
                "rtrec bench: crash VIOLATION {} seed {} point {} ({:.1} ms, durable_seq {}): {}: {} [{}]",
                x.cell, x.seed, x.point, x.at_ms, x.durable_seq, x.kind, x.what, x.state
            );
            violations.push(x);
        }
    }
    r.violations = (violations.len() - before) as u64;
    let _ = std::fs::remove_file(work.path().join("state.img"));
    if r.violations > 0 {
        let kept = work.keep();
        eprintln!(
            "rtrec bench: crash {}: the write log is kept in {} to rebuild the states",
            c.name,
            kept.display()
        );
    }
    Ok(r)
}

/// FNV-1a of a name: each variant draws its own states from one seed.
fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// What recording a cell gave.
struct Recorded {
    /// Durable points seen in `--status`: (`CLOCK_MONOTONIC` ns when seen,
    /// `durable_seq`).
    published: Vec<(u64, u64)>,
    /// Moments seen from outside ([`moments`]).
    seen: Seen,
    /// The sequence numbers the finished recording holds as data: what a
    /// durable point promises (a flight recorder keeps only its events).
    stored: BTreeSet<u64>,
    /// The emulator's counters and timing error at the end.
    emulator: Option<EmulatorStats>,
}

/// Names in `dir` (none if it cannot be read).
fn names(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Polls what a power cut cares about: the durable point and event count
/// in `--status`, the names in the recording directory and the pool's
/// slots; each change is stamped with `CLOCK_MONOTONIC`.
struct Watch {
    status: PathBuf,
    dir: PathBuf,
    out: Recorded,
    durable: u64,
    events: u64,
    names: BTreeSet<String>,
    slots: usize,
}

impl Watch {
    fn poll(&mut self) {
        let now = rtrec_sys::time::monotonic_ns();
        let status = std::fs::read(&self.status)
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok());
        if let Some(s) = status {
            if let Some(d) = s["durable_seq"].as_u64().filter(|&d| d > self.durable) {
                self.out.published.push((now, d));
                self.out.seen.push((now, "published"));
                self.durable = d;
            }
            if let Some(e) = s["events"].as_u64().filter(|&e| e > self.events) {
                self.out.seen.push((now, "event"));
                self.events = e;
            }
        }
        let names = names(&self.dir);
        for n in names.difference(&self.names) {
            if n.ends_with(".rtr") {
                self.out.seen.push((now, "name"));
            } else if n.starts_with('.') && n != ".pool" {
                self.out.seen.push((now, "hidden-name"));
            }
        }
        self.names = names;
        let slots = names_in_pool(&self.dir);
        if slots != self.slots {
            self.out.seen.push((now, "pool"));
            self.slots = slots;
        }
    }
}

/// Slots in the directory's pool.
fn names_in_pool(dir: &Path) -> usize {
    names(&dir.join(".pool"))
        .iter()
        .filter(|n| n.ends_with(".rtp"))
        .count()
}

/// Records cell `c` on an emulated device, its write log into `log_dir`
/// when given. The image is removed (unmounted through the emulator, which
/// then ends and closes its log) before it returns.
fn record(o: &Options, c: &Cell, log_dir: Option<&Path>, work: &Path) -> anyhow::Result<Recorded> {
    use anyhow::Context;
    let mut emulator = o.emulator.clone();
    if let Some(l) = log_dir {
        emulator.args.push("--write-log".into());
        emulator.args.push(l.into());
    }
    let fs = LoopFs::create(&LoopFsOptions {
        size: IMAGE_BYTES,
        journal_mib: JOURNAL_MIB,
        parent: Some(o.parent.clone()),
        emulator: Some(emulator),
        ..LoopFsOptions::default()
    })
    .context("making the emulated device's ext4 image")?;
    let dir = fs.path().join("rec");
    std::fs::create_dir(&dir).with_context(|| format!("creating '{}'", dir.display()))?;
    let status = work.join("status.json");
    let _ = std::fs::remove_file(&status);
    let count = o.count.to_string();
    let mut cmd = Command::new(&o.rtrec);
    cmd.arg("record")
        .args(c.args)
        .args(["--size", "4KiB", "--count", &count])
        .args(["--quiet", "--dir"])
        .arg(&dir)
        .arg("--status")
        .arg(&status)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if c.flight {
        cmd.args(FLIGHT);
    }
    if let Some(every) = c.sync {
        cmd.args(["--sync-every", every]);
    }
    match c.source {
        Source::Stdin => cmd.arg("--stdin").stdin(Stdio::piped()),
        Source::Synthetic => cmd.args(["--period", "2ms"]).stdin(Stdio::null()),
    };
    let mut watch = Watch {
        status,
        dir: dir.clone(),
        out: Recorded {
            published: Vec::new(),
            seen: Seen::new(),
            stored: BTreeSet::new(),
            emulator: None,
        },
        durable: 0,
        events: 0,
        names: BTreeSet::new(),
        slots: 0,
    };
    watch.poll();
    let mut child = cmd.spawn().context("starting rtrec record")?;
    let feeder = child.stdin.take().map(|mut pipe| {
        let count = o.count;
        std::thread::spawn(move || {
            let mut next = rtrec_sys::time::monotonic_ns();
            for seq in 0..count {
                next += PERIOD.as_nanos() as u64;
                rtrec_sys::time::sleep_until_monotonic(next);
                if pipe.write_all(&synthetic(seq)).is_err() {
                    return;
                }
            }
        })
    });
    let exit = loop {
        watch.poll();
        if let Some(s) = child.try_wait().context("waiting for rtrec record")? {
            break s;
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    watch.poll();
    if let Some(f) = feeder {
        let _ = f.join();
    }
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut e, &mut err);
    }
    let mut out = watch.out;
    out.stored = contents(&dir).seqs;
    // The emulator rewrites its stats every 200 ms: wait for the last.
    std::thread::sleep(Duration::from_millis(250));
    out.emulator = fs
        .emulator_stats()
        .and_then(|p| rtrec_emu::read_stats(p).ok());
    fs.remove()
        .context("removing the emulated device's image")?;
    anyhow::ensure!(
        exit.success(),
        "rtrec record ({}) failed ({exit}): {}",
        c.name,
        err.trim()
    );
    Ok(out)
}

/// The synthetic record `seq`: its sequence number, then `i % 251`.
pub fn synthetic(seq: u64) -> Vec<u8> {
    let mut b: Vec<u8> = (0..RECORD_BYTES).map(|i| (i % 251) as u8).collect();
    b[..8].copy_from_slice(&seq.to_le_bytes());
    b
}

/// What one crash state showed.
struct Checked {
    /// What `e2fsck` repaired first, if anything.
    fs_repaired: Option<String>,
    broken: Vec<(&'static str, String)>,
}

fn run_out(cmd: &mut Command) -> anyhow::Result<std::process::Output> {
    use anyhow::Context;
    cmd.stdin(Stdio::null())
        .output()
        .with_context(|| format!("running {cmd:?}"))
}

fn first_line(b: &[u8]) -> String {
    String::from_utf8_lossy(b)
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
        .to_string()
}

/// Whether `e2fsck -fn`'s output asks to repair anything but the free
/// block and inode counts (the superblock's and the groups' summaries,
/// which ext4 does not keep current on storage and recomputes at mount).
fn fs_damage(fsck_n: &str) -> Option<String> {
    let mut summary = false;
    let mut before = "";
    for line in fsck_n.lines() {
        if line.starts_with("Free blocks count wrong")
            || line.starts_with("Free inodes count wrong")
        {
            summary = true;
        } else if line.ends_with("? no") {
            if !summary {
                let what = if line.len() > "Fix? no".len() {
                    line
                } else {
                    before
                };
                return Some(what.trim().to_string());
            }
            summary = false;
        }
        if !line.trim().is_empty() {
            before = line;
        }
    }
    None
}

/// Checks the crash image `image` against the contract, with `promised`
/// the records the finished recording holds below the durable point
/// published before its crash point.
fn check(
    o: &Options,
    image: &Path,
    work: &Path,
    promised: &BTreeSet<u64>,
    events: bool,
) -> anyhow::Result<Checked> {
    let mut broken = Vec::new();
    // The journal replay a mount would do, then a read-only full check:
    // what it would still repair, beyond the summary counters the kernel
    // recomputes at every mount, is ext4's own damage; then the repair.
    run_out(
        Command::new("e2fsck")
            .args(["-E", "journal_only", "-y"])
            .arg(image),
    )?;
    let look = run_out(Command::new("e2fsck").args(["-f", "-n"]).arg(image))?;
    let fs_repaired = fs_damage(&String::from_utf8_lossy(&look.stdout));
    let fsck = run_out(Command::new("e2fsck").args(["-f", "-y"]).arg(image))?;
    let code = fsck.status.code().unwrap_or(8);
    if code >= 4 {
        broken.push((
            "fs-damaged",
            format!(
                "e2fsck left ext4 damaged (exit {code}): {}",
                first_line(&fsck.stdout)
            ),
        ));
    }
    let out = work.join("out");
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir(&out)?;
    run_out(
        Command::new("debugfs")
            .arg("-R")
            .arg(format!("rdump /rec {}", out.display()))
            .arg(image),
    )?;
    let dir = out.join("rec");
    let c = if dir.is_dir() {
        let r = run_out(Command::new(&o.rtrec).arg("recover").arg(&dir))?;
        if !r.status.success() {
            broken.push((
                "recover-failed",
                format!("recover failed: {}", first_line(&r.stderr)),
            ));
        }
        contents(&dir)
    } else {
        Content::default()
    };
    if !promised.is_empty() && c.files == 0 {
        broken.push((
            "hidden",
            format!(
                "hidden recording: {} records were durable, no .rtr file is there",
                promised.len()
            ),
        ));
    }
    if c.wrong > 0 {
        broken.push((
            "wrong-bytes",
            format!("{} accepted records hold wrong bytes", c.wrong),
        ));
    }
    let missing: Vec<u64> = promised
        .iter()
        .copied()
        .filter(|q| !c.seqs.contains(q) && !c.lost.contains(q))
        .collect();
    if !missing.is_empty() {
        broken.push((
            "missing",
            format!(
                "{} records below the durable point missing (first {}; {} of them in a crash-hole loss)",
                missing.len(),
                missing[0],
                missing.iter().filter(|q| c.cut.contains(q)).count()
            ),
        ));
    }
    if c.files > 0 {
        verify_and_export(o, &c, &dir, work, promised, events, &mut broken)?;
    }
    let _ = std::fs::remove_dir_all(&out);
    Ok(Checked {
        fs_repaired,
        broken,
    })
}

/// After `recover`: no file corrupt or without its header, and `export
/// DIR` without flags (each event's files, with `events`) reads every
/// durable record, byte-exact.
fn verify_and_export(
    o: &Options,
    c: &Content,
    dir: &Path,
    work: &Path,
    promised: &BTreeSet<u64>,
    events: bool,
    broken: &mut Vec<(&'static str, String)>,
) -> anyhow::Result<()> {
    let v = run_out(Command::new(&o.rtrec).args(["verify", "--json"]).arg(dir))?;
    match serde_json::from_slice::<serde_json::Value>(&v.stdout) {
        Ok(report) => {
            for f in report["files"].as_array().into_iter().flatten() {
                let status = f["status"].as_str().unwrap_or("?");
                if status == "corrupt" || status == "not_rtrec" {
                    let name = f["path"].as_str().or(f["file"].as_str()).unwrap_or("?");
                    let name = Path::new(name)
                        .file_name()
                        .map_or_else(|| name.to_string(), |n| n.to_string_lossy().into_owned());
                    broken.push((
                        "corrupt-after-recover",
                        format!("verify after recover: {name} is {status}"),
                    ));
                }
            }
        }
        Err(_) => broken.push((
            "no-verify-report",
            format!(
                "verify gave no report (exit {:?}): {}",
                v.status.code(),
                first_line(&v.stderr)
            ),
        )),
    }
    // One recording: `export DIR`; a flight recorder's events are
    // recordings of their own, exported one by one (`export DIR` asks
    // for one recording at a time).
    let targets = if events {
        event_groups(dir)
    } else {
        vec![vec![dir.to_path_buf()]]
    };
    let out = work.join("export.bin");
    let mut bytes = Vec::new();
    let mut refused = None;
    for t in &targets {
        let _ = std::fs::remove_file(&out);
        let e = run_out(
            Command::new(&o.rtrec)
                .arg("export")
                .args(t)
                .arg("-o")
                .arg(&out),
        )?;
        if e.status.success() {
            bytes.extend(std::fs::read(&out).unwrap_or_default());
        } else if refused.is_none() {
            // Refused only for the losses, and every loss there is one
            // recover made at a crash hole.
            let why = String::from_utf8_lossy(&e.stderr);
            let kind = if !c.cut.is_empty()
                && c.lost.is_empty()
                && why.contains("stored as losses, 0 missing without a trace")
            {
                "export-refused-crash-hole"
            } else {
                "export-refused"
            };
            refused = Some((
                kind,
                format!(
                    "export {} refused (exit {:?}): {}",
                    if events { "of an event" } else { "DIR" },
                    e.status.code(),
                    first_line(&e.stderr)
                ),
            ));
        }
    }
    if promised.is_empty() {
        // Nothing was promised.
    } else if let Some(r) = refused {
        broken.push(r);
    } else {
        let mut seen = std::collections::BTreeSet::new();
        let mut wrong = 0u64;
        for r in bytes.chunks(RECORD_BYTES) {
            let seq = r
                .get(..8)
                .map_or(u64::MAX, |b| u64::from_le_bytes(b.try_into().expect("8")));
            if r == synthetic(seq).as_slice() {
                seen.insert(seq);
            } else {
                wrong += 1;
            }
        }
        if wrong > 0 {
            broken.push((
                "export-wrong-bytes",
                format!("export wrote {wrong} records with wrong bytes"),
            ));
        }
        // A record stored as a loss is counted, not exported.
        let missing = promised
            .iter()
            .filter(|q| !seen.contains(q) && !c.lost.contains(q))
            .count();
        if missing > 0 {
            broken.push((
                "export-misses",
                format!("export misses {missing} durable records"),
            ));
        }
    }
    let _ = std::fs::remove_file(&out);
    Ok(())
}

/// The `.rtr` files of `dir` grouped by event (the name without its
/// `-NNNN.rtr` file index), in name order.
fn event_groups(dir: &Path) -> Vec<Vec<PathBuf>> {
    let mut groups = std::collections::BTreeMap::<String, Vec<PathBuf>>::new();
    for n in names(dir).into_iter().filter(|n| n.ends_with(".rtr")) {
        let key = n
            .rsplit_once('-')
            .map_or(n.as_str(), |(k, _)| k)
            .to_string();
        groups.entry(key).or_default().push(dir.join(&n));
    }
    groups.into_values().collect()
}

/// What the frames of the `.rtr` files in a directory hold, read with the
/// engine's chained walk (what verify and export accept).
#[derive(Default, Debug)]
struct Content {
    seqs: BTreeSet<u64>,
    /// Records stored as lost while recording (loss frames of rtrec).
    lost: BTreeSet<u64>,
    /// Records a loss frame of `recover` covers where it cut a crash
    /// hole: never a substitute for a durable record.
    cut: BTreeSet<u64>,
    wrong: u64,
    files: usize,
}

fn contents(dir: &Path) -> Content {
    let mut c = Content::default();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return c;
    };
    for p in entries.flatten().map(|e| e.path()) {
        if p.extension().and_then(|x| x.to_str()) != Some("rtr") {
            continue;
        }
        c.files += 1;
        let Ok(bytes) = std::fs::read(&p) else {
            continue;
        };
        let Ok(header) = FileHeader::decode(&bytes) else {
            continue;
        };
        walk_frames(&bytes, &header, |_, h, payload| match h.kind {
            FrameKind::Data => {
                if payload == synthetic(h.seq).as_slice() {
                    c.seqs.insert(h.seq);
                } else {
                    c.wrong += 1;
                }
            }
            FrameKind::Loss => {
                if let Some(l) = LossPayload::decode(payload) {
                    let into = if l.reason == LossReason::CrashHole {
                        &mut c.cut
                    } else {
                        &mut c.lost
                    };
                    into.extend(l.first_seq..l.first_seq + l.count);
                }
            }
            _ => {}
        });
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_synthetic_record_is_the_one_rtrec_record_writes() {
        let r = synthetic(0x0102);
        assert_eq!(r.len(), RECORD_BYTES);
        assert_eq!(&r[..8], &0x0102u64.to_le_bytes());
        assert_eq!(r[8], 8);
        assert_eq!(r[251], 0);
        assert_eq!(r[4095], (4095 % 251) as u8);
    }

    #[test]
    fn only_repairs_beyond_the_summary_counters_count_as_ext4_damage() {
        let counters = "Pass 5: Checking group summary information\nFree blocks count wrong (227225, counted=225198).\nFix? no\n\nFree inodes count wrong (65525, counted=65521).\nFix? no\n";
        assert_eq!(fs_damage(counters), None);
        let orphan = format!("{counters}Inode 12 was part of the orphaned inode list.  FIXED.\nEntry 'x' in / (2) has deleted/unused inode 13.  Clear? no\n");
        assert_eq!(
            fs_damage(&orphan).as_deref(),
            Some("Entry 'x' in / (2) has deleted/unused inode 13.  Clear? no")
        );
    }

    #[test]
    fn each_cell_draws_its_own_states_from_one_seed() {
        let names: BTreeSet<u64> = CELLS.iter().map(|c| fnv(c.name)).collect();
        assert_eq!(names.len(), CELLS.len());
    }

    #[test]
    fn cells_are_picked_by_name_and_all_of_them_by_default() {
        assert_eq!(selected(&[]).len(), CELLS.len());
        assert_eq!(selected(&["all".into()]).len(), CELLS.len());
        let some = selected(&["flight".into(), "sync-0".into()]);
        let names: Vec<&str> = some.iter().map(|c| c.name).collect();
        assert_eq!(names, ["flight", "sync-0"]);
    }
}
