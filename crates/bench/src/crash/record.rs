//! One recording of a cell on the emulated device, watched from outside
//! as a power cut would care: the durable points published in `--status`
//! and the moments seen in the directory and the pool, each stamped with
//! the clock the write log uses ([`Recorded`]).

use std::collections::BTreeSet;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::Context;
use rtrec_emu::EmulatorStats;
use rtrec_host::loopfs::{LoopFs, LoopFsOptions};

use super::content::{contents, names, recording_ids};
use super::matrix::{
    synthetic, Cell, Options, Source, FLIGHT, IMAGE_BYTES, JOURNAL_MIB, LOOP, PERIOD,
};
use super::moments::Seen;

/// What recording a cell gave.
pub(super) struct Recorded {
    /// Durable points seen in `--status`: (`CLOCK_MONOTONIC` ns when seen,
    /// `durable_seq`).
    pub(super) published: Vec<(u64, u64)>,
    /// Moments seen from outside ([`moments`](super::moments)).
    pub(super) seen: Seen,
    /// The sequence numbers the finished recording holds as data: what a
    /// durable point promises (a flight recorder keeps only its events).
    pub(super) stored: BTreeSet<u64>,
    /// The emulator's counters and timing error at the end.
    pub(super) emulator: Option<EmulatorStats>,
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
    /// A watch of `dir` and the `--status` file `status`, nothing seen yet.
    fn new(status: PathBuf, dir: PathBuf) -> Watch {
        Watch {
            status,
            dir,
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
        }
    }

    /// Polls every millisecond until `child` ends, and once more after:
    /// its exit status.
    fn until_exit(&mut self, child: &mut Child) -> anyhow::Result<ExitStatus> {
        let exit = loop {
            self.poll();
            if let Some(s) = child.try_wait().context("waiting for rtrec record")? {
                break s;
            }
            std::thread::sleep(Duration::from_millis(1));
        };
        self.poll();
        Ok(exit)
    }

    /// Stamps what changed since the last poll.
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
        // A file a loop retired: unlinked, or renamed into the pool.
        for n in self.names.difference(&names) {
            if n.ends_with(".rtr") {
                self.out.seen.push((now, "name-gone"));
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
pub(super) fn record(
    o: &Options,
    c: &Cell,
    log_dir: Option<&Path>,
    work: &Path,
) -> anyhow::Result<Recorded> {
    Ok(record_on(o, c, log_dir, work, None, o.count)?.0)
}

/// One power-cut cycle's recording ([`super::cycles`]): cell `c` with
/// `count` records on an emulated device whose card starts as
/// `from_image` (a fresh one when `None`), as a service starts: `rtrec
/// recover` on the directory first. Also returns the recording ids the
/// directory held before it recorded (the earlier cycles').
pub(super) fn record_cycle(
    o: &Options,
    c: &Cell,
    log_dir: &Path,
    work: &Path,
    from_image: Option<&Path>,
    count: u64,
) -> anyhow::Result<(Recorded, BTreeSet<u64>)> {
    let (r, before) = record_on(o, c, Some(log_dir), work, Some(from_image), count)?;
    Ok((r, before.unwrap_or_default()))
}

/// [`record`], or with `service` (`Some(from_image)`) a cycle's
/// ([`record_cycle`]).
fn record_on(
    o: &Options,
    c: &Cell,
    log_dir: Option<&Path>,
    work: &Path,
    service: Option<Option<&Path>>,
    count: u64,
) -> anyhow::Result<(Recorded, Option<BTreeSet<u64>>)> {
    let fs = device(o, log_dir, service.flatten())?;
    let dir = fs.path().join("rec");
    let mut before = None;
    if service.is_some() {
        std::fs::create_dir_all(&dir).with_context(|| format!("creating '{}'", dir.display()))?;
        let r = Command::new(&o.rtrec)
            .arg("recover")
            .arg(&dir)
            .stdin(Stdio::null())
            .output()
            .context("running rtrec recover")?;
        anyhow::ensure!(
            r.status.success(),
            "rtrec recover at a cycle's start failed: {}",
            String::from_utf8_lossy(&r.stderr).trim()
        );
        before = Some(recording_ids(&dir));
    } else {
        std::fs::create_dir(&dir).with_context(|| format!("creating '{}'", dir.display()))?;
    }
    let status = work.join("status.json");
    let _ = std::fs::remove_file(&status);
    let mut cmd = command(o, c, count, &dir, &status);
    let mut watch = Watch::new(status, dir.clone());
    watch.poll();
    let mut child = cmd.spawn().context("starting rtrec record")?;
    let feeder = child.stdin.take().map(|pipe| feed(pipe, count));
    let exit = watch.until_exit(&mut child)?;
    if let Some(f) = feeder {
        let _ = f.join();
    }
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut e, &mut err);
    }
    let mut out = watch.out;
    // A loop's finished recording holds only its kept files: every record
    // it took is owed until a claim retires it (each crash state's own
    // claims say which), so the synthetic source's every record is.
    out.stored = if c.looped {
        (0..count).collect()
    } else {
        contents(&dir).seqs
    };
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
    Ok((out, before))
}

/// The emulated device's ext4 image (a copy of `from_image` when given),
/// its write log into `log_dir` when given.
fn device(
    o: &Options,
    log_dir: Option<&Path>,
    from_image: Option<&Path>,
) -> anyhow::Result<LoopFs> {
    let mut emulator = o.emulator.clone();
    if let Some(l) = log_dir {
        emulator.args.push("--write-log".into());
        emulator.args.push(l.into());
    }
    LoopFs::create(&LoopFsOptions {
        size: IMAGE_BYTES,
        journal_mib: JOURNAL_MIB,
        parent: Some(o.parent.clone()),
        emulator: Some(emulator),
        from_image: from_image.map(Path::to_path_buf),
        ..LoopFsOptions::default()
    })
    .context("making the emulated device's ext4 image")
}

/// `rtrec record` of cell `c` (`count` records) into `dir`, its live
/// counters in `status`.
fn command(o: &Options, c: &Cell, count: u64, dir: &Path, status: &Path) -> Command {
    let count = count.to_string();
    let mut cmd = Command::new(&o.rtrec);
    cmd.arg("record")
        .args(c.args)
        .args(["--size", "4KiB", "--count", &count])
        .args(["--quiet", "--dir"])
        .arg(dir)
        .arg("--status")
        .arg(status)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if c.flight {
        cmd.args(FLIGHT);
    }
    if c.looped {
        cmd.args(LOOP);
    }
    if let Some(every) = c.sync {
        cmd.args(["--sync-every", every]);
    }
    match c.source {
        Source::Stdin => cmd.arg("--stdin").stdin(Stdio::piped()),
        Source::Synthetic => cmd.args(["--period", "2ms"]).stdin(Stdio::null()),
    };
    cmd
}

/// Feeds `count` synthetic records into `pipe`, one every period, on a
/// thread of its own (a `--stdin` cell's source).
fn feed(mut pipe: ChildStdin, count: u64) -> JoinHandle<()> {
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
}
