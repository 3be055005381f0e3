//! `--study crash`: every crash a real card can produce, checked against
//! the durability contract (`docs/durability.md`, "Crash states").
//!
//! For each variant ([`VARIANTS`]) it records a short recording on the
//! emulated device with its write log on (`rtrec __emulate --write-log`,
//! [`rtrec_emu::writelog`]), polling `--status` (on a file outside the
//! device) and stamping each published durable point with the clock the log
//! uses. Then, for its share of the N crash states, it builds the image a
//! power cut at a chosen crash point could leave ([`rtrec_emu::crashimg`]),
//! and checks it:
//! - the ext4 journal is replayed (`e2fsck -E journal_only`), then
//!   `e2fsck -fn` says whether ext4 itself needs repair beyond the summary
//!   counters it recomputes at mount (counted apart from rtrec's damage),
//!   and `e2fsck -fy` repairs it;
//! - the recording directory is read out with `debugfs rdump` (read-only,
//!   no mount, no loop device per state);
//! - `rtrec recover`, `rtrec verify --json` and `rtrec export` run on it;
//! - the contract: every record below the durable point published before
//!   the crash point is present and byte-exact (the synthetic payload:
//!   sequence number in the first 8 bytes, then `i % 251`); no recording is
//!   hidden; no accepted frame holds wrong bytes; after `recover` no file is
//!   corrupt or nameless of its header, and `export DIR` without flags
//!   reads every durable record.
//!
//! One [`Violation`] per broken rule, with the crash point and the state
//! (its seed and the writes that landed), so it can be rebuilt: the log of
//! a variant with a violation is kept and its directory printed.
//!
//! Design choices:
//! - Crash points are weighted towards the moments that matter: half of
//!   them fall just before a flush completes (every write since the one
//!   before it unflushed), and those flushes are chosen with triple weight
//!   when a durable point was published in their interval or they lie in
//!   the first or last tenth of the log (pool slot taken, file created,
//!   header rewrite, end frame, unmount); the other half fall at any entry.
//! - Every image mounted or attached goes through the host crate's journal
//!   ([`LoopFs`]); the crash images are only read by e2fsprogs.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use rtrec_emu::crashimg::{CrashState, SplitMix};
use rtrec_emu::writelog::{Log, What};
use rtrec_engine::format::{FileHeader, FrameKind, LossPayload};
use rtrec_engine::reader::walk_frames;
use rtrec_host::emufs::EmulatorCommand;
use rtrec_host::loopfs::{LoopFs, LoopFsOptions};
use serde::Serialize;

/// Bytes per record in every variant.
pub const RECORD_BYTES: usize = 4096;
/// Size of each variant's ext4 image (sparse): 512 MiB, the smallest
/// that `mkfs.ext4` formats with 4 KiB blocks, as a card's file system is.
const IMAGE_BYTES: u64 = 512 << 20;
/// Its journal, MiB.
const JOURNAL_MIB: u32 = 16;

/// One recording the states are drawn from.
#[derive(Clone, Copy, Debug)]
pub struct Variant {
    /// Its name in lines and the report.
    pub name: &'static str,
    /// `rtrec record` arguments beside the common ones.
    pub args: &'static [&'static str],
    /// Records come from stdin (fed by the study at the period).
    pub stdin: bool,
}

/// The variants, in run order. The first four run by default (and in CI):
/// the default pool, appended files, records from stdin, and pool files of
/// 1 MiB (a file switch about every half second). The others widen the
/// matrix (`--crash-variants all`): zero-filled files, the direct and
/// io_uring back-ends, inline mode, and no periodic sync.
pub const VARIANTS: [Variant; 9] = [
    variant("pool", &["--alloc", "pool"], false),
    variant("append", &["--alloc", "append"], false),
    variant("stdin", &["--alloc", "pool"], true),
    variant(
        "pool-1MiB",
        &["--alloc", "pool", "--file-size", "1MiB"],
        false,
    ),
    variant("zero", &["--alloc", "zero", "--file-size", "1MiB"], false),
    variant(
        "pool-direct",
        &["--alloc", "pool", "--file-size", "1MiB", "--io", "direct"],
        false,
    ),
    variant(
        "zero-uring",
        &["--alloc", "zero", "--file-size", "1MiB", "--io", "uring"],
        false,
    ),
    variant(
        "pool-inline",
        &["--alloc", "pool", "--file-size", "1MiB", "--mode", "inline"],
        false,
    ),
    variant(
        "pool-sync-0",
        &[
            "--alloc",
            "pool",
            "--file-size",
            "1MiB",
            "--sync-every",
            "0",
        ],
        false,
    ),
];

/// How many of [`VARIANTS`] run by default.
pub const DEFAULT_VARIANTS: usize = 4;

const fn variant(name: &'static str, args: &'static [&'static str], stdin: bool) -> Variant {
    Variant { name, args, stdin }
}

/// The period of every variant.
const PERIOD: Duration = Duration::from_millis(2);

/// How to run the study.
#[derive(Clone, Debug)]
pub struct Options {
    /// Crash states in all, shared evenly by the variants.
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
    /// Only these variants (by name; empty: the first
    /// [`DEFAULT_VARIANTS`]; `all`: every one).
    pub only: Vec<String>,
}

/// One broken rule in one crash state.
#[derive(Clone, Debug, Serialize)]
pub struct Violation {
    /// The variant.
    pub variant: String,
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
    /// What broke, in one sentence.
    pub what: String,
    /// Where the variant's log was kept to rebuild the state.
    pub log: String,
}

/// What one variant gave.
#[derive(Clone, Debug, Default, Serialize)]
pub struct VariantResult {
    /// Its name.
    pub name: String,
    /// Crash states checked.
    pub states: u64,
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
    /// The first ten states ext4 needed repair in: seed, state and the
    /// first problem `e2fsck -fn` named.
    pub fs_repairs: Vec<String>,
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
    /// Per variant.
    pub variants: Vec<VariantResult>,
    /// The seed of the run.
    pub seed: u64,
    /// Atomic unit of torn writes, bytes.
    pub atomic_bytes: u64,
}

/// Runs the study; prints one line per variant and per violation on
/// stderr.
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
    let variants = selected(&o.only);
    let n = variants.len().max(1) as u64;
    for (k, v) in variants.iter().enumerate() {
        if crate::signal::interrupted() {
            break;
        }
        let share = o.states / n + u64::from((k as u64) < o.states % n);
        let r = run_variant(o, v, share, &mut report.violations)?;
        eprintln!(
            "rtrec bench: crash {}: {} states, {} with ext4 repaired, {} violations ({} writes, {} flushes, {} durable points)",
            r.name, r.states, r.fs_repaired, r.violations, r.log_writes, r.log_flushes, r.durable_points
        );
        report.states_checked += r.states;
        report.fs_repaired += r.fs_repaired;
        report.variants.push(r);
    }
    Ok(report)
}

/// The variants `names` selects: none named, the first
/// [`DEFAULT_VARIANTS`]; `all`, every one; else those named.
pub fn selected(names: &[String]) -> Vec<&'static Variant> {
    VARIANTS
        .iter()
        .enumerate()
        .filter(|(i, v)| match names {
            [] => *i < DEFAULT_VARIANTS,
            [all] if all == "all" => true,
            names => names.iter().any(|n| n == v.name),
        })
        .map(|(_, v)| v)
        .collect()
}

/// A durable point seen in `--status`: (`CLOCK_MONOTONIC` ns when seen,
/// `durable_seq`).
type Published = Vec<(u64, u64)>;

fn run_variant(
    o: &Options,
    v: &Variant,
    states: u64,
    violations: &mut Vec<Violation>,
) -> anyhow::Result<VariantResult> {
    use anyhow::Context;
    let work = tempfile::Builder::new()
        .prefix(&format!("rtrec-crash-{}-", v.name))
        .tempdir_in(&o.parent)
        .with_context(|| format!("creating a directory in '{}'", o.parent.display()))?;
    let log_dir = work.path().join("log");
    let published = record(o, v, &log_dir, work.path())?;
    let log = Log::open(&log_dir).context("reading the write log")?;
    let mut r = VariantResult {
        name: v.name.to_string(),
        log_writes: log
            .entries
            .iter()
            .filter(|e| matches!(e.what, What::Write { .. }))
            .count() as u64,
        log_flushes: log.flushes().len() as u64,
        durable_points: published.len() as u64,
        ..VariantResult::default()
    };
    let points = weighted_points(&log, &published);
    let mut rng = SplitMix::new(o.seed ^ fnv(v.name));
    let found = violations.len();
    for _ in 0..states {
        if crate::signal::interrupted() {
            break;
        }
        let seed = rng.next_u64();
        let mut pick = SplitMix::new(seed);
        let point = if pick.below(2) == 0 && !points.is_empty() {
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
        let c = check(o, &image, work.path(), durable)?;
        r.states += 1;
        if let Some(what) = c.fs_repaired {
            r.fs_repaired += 1;
            if r.fs_repairs.len() < 10 {
                r.fs_repairs
                    .push(format!("seed {seed}, {}: {what}", state.describe()));
            }
        }
        let t0 = log.entries.first().map_or(0, |e| e.time_ns);
        for what in c.broken {
            let x = Violation {
                variant: v.name.to_string(),
                seed,
                point,
                at_ms: at.saturating_sub(t0).min(u64::MAX / 2) as f64 / 1e6,
                durable_seq: durable,
                state: state.describe(),
                what,
                log: log_dir.display().to_string(),
            };
            eprintln!(
                "rtrec bench: crash VIOLATION {} seed {} point {} ({:.1} ms, durable_seq {}): {} [{}]",
                x.variant, x.seed, x.point, x.at_ms, x.durable_seq, x.what, x.state
            );
            violations.push(x);
        }
    }
    r.violations = (violations.len() - found) as u64;
    let _ = std::fs::remove_file(work.path().join("state.img"));
    if r.violations > 0 {
        let kept = work.keep();
        eprintln!(
            "rtrec bench: crash {}: the write log is kept in {} to rebuild the states",
            v.name,
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

/// Crash points just before each flush completes, a flush whose interval
/// saw a durable point published, or that lies in the first or last tenth
/// of the log, three times.
fn weighted_points(log: &Log, published: &Published) -> Vec<usize> {
    let flushes = log.flushes();
    let n = log.entries.len();
    let mut points = Vec::new();
    let mut from = 0u64;
    for &f in &flushes {
        let t = log.entries[f].time_ns;
        let busy = published.iter().any(|(p, _)| *p >= from && *p < t);
        let edge = f < n / 10 || f > n - n / 10;
        let weight = if busy || edge { 3 } else { 1 };
        points.extend(std::iter::repeat_n(f, weight));
        from = t;
    }
    points
}

/// Records variant `v` on an emulated device logging into `log_dir`;
/// returns the durable points published. The image is removed (unmounted
/// through the emulator, which then ends and closes its log) before it
/// returns.
fn record(o: &Options, v: &Variant, log_dir: &Path, work: &Path) -> anyhow::Result<Published> {
    use anyhow::Context;
    let mut emulator = o.emulator.clone();
    emulator.args.push("--write-log".into());
    emulator.args.push(log_dir.into());
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
    let count = o.count.to_string();
    let mut cmd = Command::new(&o.rtrec);
    cmd.arg("record")
        .args(v.args)
        .args(["--size", "4KiB", "--count", &count])
        .args(["--quiet", "--dir"])
        .arg(&dir)
        .arg("--status")
        .arg(&status)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if !v.args.contains(&"--sync-every") {
        cmd.args(["--sync-every", "200ms"]);
    }
    if v.stdin {
        cmd.arg("--stdin").stdin(Stdio::piped());
    } else {
        cmd.args(["--period", "2ms"]).stdin(Stdio::null());
    }
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
    let mut published = Published::new();
    let mut last = 0u64;
    let mut seen = |published: &mut Published| {
        let durable = std::fs::read(&status)
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .and_then(|s| s["durable_seq"].as_u64());
        if let Some(d) = durable.filter(|&d| d > last) {
            published.push((rtrec_sys::time::monotonic_ns(), d));
            last = d;
        }
    };
    let exit = loop {
        seen(&mut published);
        if let Some(s) = child.try_wait().context("waiting for rtrec record")? {
            break s;
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    seen(&mut published);
    if let Some(f) = feeder {
        let _ = f.join();
    }
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut e, &mut err);
    }
    fs.remove()
        .context("removing the emulated device's image")?;
    anyhow::ensure!(
        exit.success(),
        "rtrec record ({}) failed ({exit}): {}",
        v.name,
        err.trim()
    );
    Ok(published)
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
    broken: Vec<String>,
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

/// Checks the crash image `image` against the contract, with `durable`
/// the durable point published before its crash point.
fn check(o: &Options, image: &Path, work: &Path, durable: u64) -> anyhow::Result<Checked> {
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
        broken.push(format!(
            "e2fsck left ext4 damaged (exit {code}): {}",
            first_line(&fsck.stdout)
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
            broken.push(format!("recover failed: {}", first_line(&r.stderr)));
        }
        contents(&dir)
    } else {
        Content::default()
    };
    if durable > 0 && c.files == 0 {
        broken.push(format!(
            "hidden recording: {durable} records were durable, no .rtr file is there"
        ));
    }
    if c.wrong > 0 {
        broken.push(format!("{} accepted records hold wrong bytes", c.wrong));
    }
    let missing: Vec<u64> = (0..durable)
        .filter(|q| !c.seqs.contains(q) && !c.lost.contains(q))
        .collect();
    if !missing.is_empty() {
        broken.push(format!(
            "{} records below the durable point missing (first {})",
            missing.len(),
            missing[0]
        ));
    }
    if c.files > 0 {
        verify_and_export(o, &c, &dir, work, durable, &mut broken)?;
    }
    let _ = std::fs::remove_dir_all(&out);
    Ok(Checked {
        fs_repaired,
        broken,
    })
}

/// After `recover`: no file corrupt or without its header, and `export
/// DIR` without flags reads every durable record, byte-exact.
fn verify_and_export(
    o: &Options,
    c: &Content,
    dir: &Path,
    work: &Path,
    durable: u64,
    broken: &mut Vec<String>,
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
                    broken.push(format!("verify after recover: {name} is {status}"));
                }
            }
        }
        Err(_) => broken.push(format!(
            "verify gave no report (exit {:?}): {}",
            v.status.code(),
            first_line(&v.stderr)
        )),
    }
    let out = work.join("export.bin");
    let _ = std::fs::remove_file(&out);
    let e = run_out(
        Command::new(&o.rtrec)
            .arg("export")
            .arg(dir)
            .arg("-o")
            .arg(&out),
    )?;
    if durable == 0 {
        // Nothing was promised.
    } else if !e.status.success() {
        broken.push(format!(
            "export DIR refused (exit {:?}): {}",
            e.status.code(),
            first_line(&e.stderr)
        ));
    } else {
        let bytes = std::fs::read(&out).unwrap_or_default();
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
            broken.push(format!("export wrote {wrong} records with wrong bytes"));
        }
        // A record stored as a loss is counted, not exported.
        let missing = (0..durable)
            .filter(|q| !seen.contains(q) && !c.lost.contains(q))
            .count();
        if missing > 0 {
            broken.push(format!("export misses {missing} durable records"));
        }
    }
    let _ = std::fs::remove_file(&out);
    Ok(())
}

/// What the frames of the `.rtr` files in a directory hold, read with the
/// engine's chained walk (what verify and export accept).
#[derive(Default, Debug)]
struct Content {
    seqs: std::collections::BTreeSet<u64>,
    lost: std::collections::BTreeSet<u64>,
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
                    c.lost.extend(l.first_seq..l.first_seq + l.count);
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
    fn each_variant_draws_its_own_states_from_one_seed() {
        let names: std::collections::BTreeSet<u64> = VARIANTS.iter().map(|v| fnv(v.name)).collect();
        assert_eq!(names.len(), VARIANTS.len());
    }
}
