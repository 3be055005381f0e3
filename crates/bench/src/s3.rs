//! S3, the ext3 fsync-latency study (LWN 2009): a tester writes 1 MB,
//! times `fsync()`, sleeps 1 s and repeats, while a background process
//! streams buffered overwrites of a large file (the article's `dd`).
//! Reported: fsync min / avg / max and the streamer's throughput alone and
//! with the tester, beside the published figures.
//!
//! Variants, each on its own freshly made ext4 image (so the mount options
//! are ours): `data=ordered` (the default), `data=journal`, and
//! `data=ordered` with the streamer bounded by rtrec's flush window
//! (`sync_file_range()` every window, the last one waited for) — whether
//! bounding dirty data fixes fsync latency on a modern kernel.
//!
//! With `--device PROFILE` every variant's image sits on the emulated
//! device (`hdd-5400` is S3's laptop disk), and each case keeps the
//! emulator's counters and timing error.
//!
//! Design choice: the tester runs in the bench process (its samples are
//! the measurement, no process boundary to cross); the streamer is a
//! `__bgload stream` process, so it competes as another application would.

use std::fs;
use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use anyhow::Context;
use rtrec_engine::{Latency, LatencySummary, PeriodicTimer};
use rtrec_host::emufs::EmulatorCommand;
use rtrec_host::loopfs::{LoopFs, LoopFsOptions};
use rtrec_sys as sys;
use serde::{Deserialize, Serialize};

use crate::bgload::{self, Launcher, LoadSpec};
use crate::scenario::Load;
use crate::signal::interrupted;

/// Bytes the tester writes before each `fsync()` (the article: 1 MB).
pub const TESTER_BYTES: u64 = 1 << 20;
/// The tester's period (write, fsync, sleep 1 s).
pub const TESTER_PERIOD: Duration = Duration::from_secs(1);
/// Rounds by default and with `--paper` (the article's runs are ~30 s).
pub const DEFAULT_ROUNDS: u32 = 30;
/// The streamer's file.
pub const STREAM_FILE_BYTES: u64 = 2 << 30;
/// The streamer's window when bounded (rtrec's 2 MB flush interval).
pub const WINDOW_BYTES: u64 = 2 << 20;

/// One variant of the study.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Variant {
    /// Case name.
    pub name: &'static str,
    /// ext4 `data=` mode.
    pub data: &'static str,
    /// The streamer's sync_file_range() window, bytes (0: unbounded).
    pub window_bytes: u64,
}

/// The variants, in run order.
pub const VARIANTS: [Variant; 3] = [
    Variant {
        name: "S3-FSYNC-ORDERED",
        data: "ordered",
        window_bytes: 0,
    },
    Variant {
        name: "S3-FSYNC-JOURNAL",
        data: "journal",
        window_bytes: 0,
    },
    Variant {
        name: "S3-FSYNC-ORDERED-WINDOW",
        data: "ordered",
        window_bytes: WINDOW_BYTES,
    },
];

/// The published figures (LWN 2009, 5,400 rpm laptop disk, 2.6.29).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct S3Published {
    /// Unpatched kernel: fsync min, max, s.
    pub unpatched_fsync_s: (f64, f64),
    /// Patched kernel (fsync I/O issued as synchronous): fsync min, max, s.
    pub patched_fsync_s: (f64, f64),
    /// Streamer throughput, unpatched → patched, MB/s.
    pub stream_mb_per_s: (f64, f64),
}

/// The article's numbers.
pub fn published() -> S3Published {
    S3Published {
        unpatched_fsync_s: (2.4, 6.3),
        patched_fsync_s: (0.29, 1.8),
        stream_mb_per_s: (24.0, 21.0),
    }
}

/// One variant's measurement.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct S3Case {
    /// Case name.
    pub name: String,
    /// ext4 `data=` mode.
    pub data_mode: String,
    /// Mount options in force, as `/proc/mounts` shows them.
    pub mount_options: String,
    /// The streamer's window, bytes (0: unbounded).
    pub window_bytes: u64,
    /// Rounds the tester ran.
    pub rounds: u32,
    /// `fsync()` latency of the tester, ns.
    pub fsync_ns: Option<LatencySummary>,
    /// Every fsync latency, ns, in order.
    pub fsync_samples_ns: Vec<u64>,
    /// The streamer's throughput alone, bytes/s.
    pub stream_alone_bytes_per_s: f64,
    /// The streamer's throughput while the tester ran, bytes/s.
    pub stream_with_tester_bytes_per_s: f64,
    /// Why the case did not complete, if it did not.
    pub error: Option<String>,
    /// The emulated device's counters and timing error for this variant's
    /// image (`--device`; absent without one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub emulator: Option<rtrec_emu::EmulatorStats>,
}

/// The whole study.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct S3Result {
    /// The article's figures.
    pub published: S3Published,
    /// One entry per variant.
    pub cases: Vec<S3Case>,
}

/// Runs every variant with `rounds` tester rounds (`image_dir`:
/// `--image-dir`; `emulator`: the emulated device each image sits on).
pub fn run(
    launcher: &Launcher,
    rounds: u32,
    image_dir: Option<&Path>,
    emulator: Option<&EmulatorCommand>,
) -> S3Result {
    let mut cases = Vec::new();
    for v in VARIANTS {
        if interrupted() {
            break;
        }
        eprintln!("rtrec bench: {} ({rounds} rounds)", v.name);
        let mut c = S3Case {
            name: v.name.to_string(),
            data_mode: v.data.to_string(),
            mount_options: String::new(),
            window_bytes: v.window_bytes,
            rounds: 0,
            fsync_ns: None,
            fsync_samples_ns: Vec::new(),
            stream_alone_bytes_per_s: 0.0,
            stream_with_tester_bytes_per_s: 0.0,
            error: None,
            emulator: None,
        };
        if let Err(e) = run_variant(launcher, v, rounds, image_dir, emulator, &mut c) {
            c.error = Some(format!("{e:#}"));
        }
        cases.push(c);
    }
    S3Result {
        published: published(),
        cases,
    }
}

fn run_variant(
    launcher: &Launcher,
    v: Variant,
    rounds: u32,
    image_dir: Option<&Path>,
    emulator: Option<&EmulatorCommand>,
    c: &mut S3Case,
) -> anyhow::Result<()> {
    let opts = LoopFsOptions {
        size: 4 << 30,
        parent: image_dir.map(Path::to_path_buf),
        mount_options: mount_options(v.data),
        emulator: emulator.cloned(),
        ..LoopFsOptions::default()
    };
    let fs = LoopFs::create(&opts).with_context(|| format!("making the data={} image", v.data))?;
    let _ = rtrec_host::loopdev::set_direct_io(fs.device());
    c.mount_options = fs.mount_options().unwrap_or_default();
    let spec = LoadSpec {
        file_bytes: STREAM_FILE_BYTES,
        window_bytes: v.window_bytes,
        request_bytes: 1 << 20,
        ..LoadSpec::new(Load::Stream, fs.path().join("stream"))
    };
    // Alone: as long as the tester will run, at most 10 s.
    let alone = TESTER_PERIOD * rounds.clamp(1, 10);
    let p = bgload::spawn(launcher, &spec)?;
    sleep_unless_interrupted(alone);
    let r = p.stop()?;
    c.stream_alone_bytes_per_s = r.result.map_or(0.0, |r| r.bytes_per_s());
    sys::syncfs(fs::File::open(fs.path())?).context("syncing between phases")?;

    let p = bgload::spawn(launcher, &spec)?;
    let measured = tester(fs.path(), rounds);
    let r = p.stop()?;
    c.stream_with_tester_bytes_per_s = r.result.map_or(0.0, |r| r.bytes_per_s());
    let (lat, samples) = measured?;
    c.rounds = samples.len() as u32;
    c.fsync_ns = lat.summary();
    c.fsync_samples_ns = samples;
    c.emulator = fs
        .emulator_stats()
        .and_then(|p| rtrec_emu::read_stats(p).ok());
    fs.remove().context("removing the image")?;
    Ok(())
}

/// The study's mount options with `data=MODE`; `data=journal` cannot be
/// combined with `delalloc`, which ext4 then refuses, so it is left out.
pub fn mount_options(data: &str) -> String {
    let mut o: Vec<String> = LoopFsOptions::default()
        .mount_options
        .split(',')
        .filter(|o| !o.starts_with("data="))
        .filter(|o| data != "journal" || *o != "delalloc")
        .map(str::to_string)
        .collect();
    o.push(format!("data={data}"));
    o.join(",")
}

fn sleep_unless_interrupted(d: Duration) {
    let end = Instant::now() + d;
    while Instant::now() < end && !interrupted() {
        thread::sleep(Duration::from_millis(50));
    }
}

/// The fsync-tester: write 1 MB at the start of its file, time `fsync()`,
/// wait for the next second.
fn tester(dir: &Path, rounds: u32) -> anyhow::Result<(Latency, Vec<u64>)> {
    let path = dir.join("fsync-tester.dat");
    let f = bgload::create_truncated(&path)?;
    let buf = vec![0x5a_u8; TESTER_BYTES as usize];
    let mut lat = Latency::new();
    let mut samples = Vec::with_capacity(rounds as usize);
    let mut timer = PeriodicTimer::new(TESTER_PERIOD.as_nanos() as u64);
    for _ in 0..rounds {
        timer.wait();
        if interrupted() {
            break;
        }
        sys::pwrite_all(&f, &buf, 0).context("the tester's write")?;
        let t0 = sys::monotonic_ns();
        sys::fsync(&f).context("the tester's fsync")?;
        let dt = sys::monotonic_ns() - t0;
        lat.record(dt);
        samples.push(dt);
    }
    drop(f);
    let _ = fs::remove_file(&path);
    Ok((lat, samples))
}
