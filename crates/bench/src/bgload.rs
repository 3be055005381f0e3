//! Background loads: separate processes that work on other files of the
//! filesystem under test while a set is measured. The bench starts them
//! with [`spawn`] (by default `rtrec __bgload KIND …`, the hidden
//! subcommand whose entry point is [`bgload_main`]), waits until each says
//! it is ready, and stops them after the set with SIGTERM, then SIGKILL.
//!
//! The loads, as the studies describe them (see `docs/bench.md`):
//! - `trunc` (S1 BGTRUNC): from a 100 MB file, `ftruncate()` 256 KiB off
//!   every period; when it is empty, `fallocate()` it back to 100 MB. Its
//!   file is whole when it says it is ready, and stays so until the start
//!   file (below) exists, if one is given.
//! - `falloc` (the other half of S1 BGALL): every period, `fallocate()`
//!   100 MB into a fresh file and remove the previous one.
//! - `read` (S1 Table 3): read another 100 MB file sequentially in 2 MiB
//!   records, as fast as it goes, dropping its cached pages
//!   (`posix_fadvise(DONTNEED)`) before each pass so reads reach the device;
//!   reports the bytes read and the time taken.
//! - `trunc-sync` (S2): as `trunc`, with an `fsync()` after each
//!   `ftruncate()`.
//! - `stream` (S3): buffered overwrites of a large file in request-size
//!   writes as fast as they go, wrapping at the file size (the article's
//!   `dd`); with `--window-bytes`, every window is started with
//!   `sync_file_range(WRITE)` and the one before waited for, as rtrec's
//!   `sfr` flush bounds a recording's dirty data.
//! - `job-read`, `job-write` (S4): sequential reads or overwrites of a
//!   prepared file in request-size calls, `--direct` (O_DIRECT) or
//!   buffered, as fast as they go. With `--cgroup` the load moves itself
//!   into that (journaled, rtrec-made) group before it is ready; with
//!   `--start-file` it waits for that file after it is ready, so that jobs
//!   prepared one after another start together.
//!
//! Under `--explain` a load gets `--trace-marker PATH` (the bench's
//! tracefs instance's `trace_marker`) and marks each operation there,
//! `begin bgload trunc ftruncate to N` before it and `end …` after it,
//! outside any call the bench times, so the attribution can name the
//! operation in progress during a slow call.
//!
//! A load never outlives the bench: it asks the kernel for SIGKILL when its
//! parent dies (`prctl(PR_SET_PDEATHSIG)`), checks that the parent did not
//! die before that, runs in its own process group (so a Ctrl-C on the
//! terminal reaches only the bench, which then stops it in order), and
//! removes its files when it ends.

use std::ffi::OsString;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use clap::Parser;
use rtrec_engine::{PeriodicTimer, TraceMarker};
use rtrec_host::signals::{self, Repeat, StopSignals};
use rtrec_sys as sys;
use serde::{Deserialize, Serialize};

use crate::protocol::{FILE_BYTES, PERIOD_NS};
use crate::scenario::Load;

/// The line a load prints once it is set up and about to start.
pub const READY_LINE: &str = "rtrec-bgload: ready";
/// The prefix of the line with a load's result (JSON), printed as it ends.
pub const RESULT_PREFIX: &str = "rtrec-bgload: result ";
/// How long a load may take to set up (the reader writes 100 MB first).
pub const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a load has to end after SIGTERM before it gets SIGKILL.
pub const STOP_GRACE: Duration = Duration::from_secs(5);

/// Bytes cut off per `ftruncate()` (S1: 256 KB).
pub const TRUNC_BYTES: u64 = 256 << 10;
/// Bytes per `read()` of the reader (S1: 2 MB records).
pub const READ_BYTES: u64 = 2 << 20;

/// The command line of `rtrec __bgload`.
#[derive(Debug, Parser)]
#[command(
    name = "rtrec __bgload",
    about = "A background load of rtrec bench (internal; started and stopped by the bench)"
)]
struct LoadArgs {
    /// trunc, falloc, read or trunc-sync.
    kind: String,
    /// Directory for the load's files (on the filesystem under test).
    #[arg(long)]
    dir: PathBuf,
    /// Period of the load, ns.
    #[arg(long, default_value_t = PERIOD_NS)]
    period_ns: u64,
    /// Size of the load's file, bytes.
    #[arg(long, default_value_t = FILE_BYTES)]
    file_bytes: u64,
    /// Bytes cut off per ftruncate().
    #[arg(long, default_value_t = TRUNC_BYTES)]
    trunc_bytes: u64,
    /// Bytes per read().
    #[arg(long, default_value_t = READ_BYTES)]
    read_bytes: u64,
    /// Pid of the bench; the load exits at once if its parent is another.
    #[arg(long)]
    parent: Option<u32>,
    /// Bytes per read()/write() of stream and job loads.
    #[arg(long, default_value_t = 1 << 20)]
    request_bytes: u64,
    /// Jobs: O_DIRECT instead of buffered I/O.
    #[arg(long)]
    direct: bool,
    /// Stream: bound dirty data with sync_file_range() every this many bytes (0: unbounded).
    #[arg(long, default_value_t = 0)]
    window_bytes: u64,
    /// Move this process into this cgroup (its directory) before it is ready.
    #[arg(long)]
    cgroup: Option<PathBuf>,
    /// After ready, wait until this file exists before starting.
    #[arg(long)]
    start_file: Option<PathBuf>,
    /// Mark each operation in this `trace_marker` file (best effort).
    #[arg(long)]
    trace_marker: Option<PathBuf>,
}

/// The load's marks (see the module docs); none without `--trace-marker`
/// or when it cannot be opened (tracing never fails a load).
struct Marks(Option<TraceMarker>);

impl Marks {
    fn open(a: &LoadArgs) -> Marks {
        Marks(
            a.trace_marker
                .as_ref()
                .and_then(|p| OpenOptions::new().write(true).open(p).ok())
                .map(TraceMarker::new),
        )
    }

    /// Runs `op`, marked `begin bgload KIND WHAT` / `end bgload KIND WHAT`.
    fn around<T>(&self, kind: &str, what: std::fmt::Arguments<'_>, op: impl FnOnce() -> T) -> T {
        let Some(m) = &self.0 else { return op() };
        m.mark(format_args!("begin bgload {kind} {what}"));
        let r = op();
        m.mark(format_args!("end bgload {kind} {what}"));
        r
    }
}

/// What a load reports when it ends.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoadResult {
    /// Operations done (truncations, allocations, reads).
    pub ops: u64,
    /// Bytes read (reader only).
    pub bytes_read: u64,
    /// Time from ready to stop, ns.
    pub elapsed_ns: u64,
    /// Times the truncated file was refilled.
    pub refills: u64,
    /// Bytes written (stream and job-write).
    #[serde(default)]
    pub bytes_written: u64,
}

impl LoadResult {
    /// Bytes read and written per second (0 when it ran for no time).
    pub fn bytes_per_s(&self) -> f64 {
        if self.elapsed_ns == 0 {
            return 0.0;
        }
        (self.bytes_read + self.bytes_written) as f64 * 1e9 / self.elapsed_ns as f64
    }

    /// Read throughput, bytes per second (reader only).
    pub fn read_bytes_per_s(&self) -> Option<f64> {
        (self.bytes_read > 0 && self.elapsed_ns > 0)
            .then(|| self.bytes_read as f64 * 1e9 / self.elapsed_ns as f64)
    }
}

/// True once SIGTERM or SIGINT asked the load to end.
fn stopping() -> bool {
    signals::caught().is_some()
}

/// Entry point of `rtrec __bgload KIND --dir DIR …`: runs one load until
/// SIGTERM or SIGINT, then removes its files, prints its result line and
/// returns the exit code (0, 1 on an error while running, 2 for a bad
/// command line, checked before anything is changed).
///
/// `args` are the words after `__bgload` (a leading `__bgload` is skipped).
pub fn bgload_main(args: &[String]) -> i32 {
    let args = match args.first() {
        Some(a) if a == "__bgload" => &args[1..],
        _ => args,
    };
    let parsed = match LoadArgs::try_parse_from(
        std::iter::once("rtrec __bgload".to_string()).chain(args.iter().cloned()),
    ) {
        Ok(a) => a,
        Err(e) => {
            let _ = e.print();
            return 2;
        }
    };
    let load = match validate(&parsed) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("rtrec __bgload: {e}");
            return 2;
        }
    };
    if let Err(e) = sys::die_with_parent() {
        eprintln!("rtrec __bgload: asking to end with the bench: {e}");
        return 1;
    }
    if let Some(p) = parsed.parent {
        if sys::parent_pid() != p {
            eprintln!("rtrec __bgload: the bench (pid {p}) is gone; not starting");
            return 1;
        }
    }
    // Held until the load returns; SIGTERM or SIGINT then makes it stop.
    let _stop = match StopSignals::install(Repeat::Records) {
        Ok(guard) => guard,
        Err(e) => {
            eprintln!("rtrec __bgload: {e}");
            return 1;
        }
    };
    match run_load(load, &parsed) {
        Ok(result) => {
            println!(
                "{RESULT_PREFIX}{}",
                serde_json::to_string(&result).unwrap_or_default()
            );
            0
        }
        Err(e) => {
            eprintln!("rtrec __bgload {}: {e:#}", parsed.kind);
            1
        }
    }
}

fn ready() {
    println!("{READY_LINE}");
}

/// Checks the command line; no side effects.
fn validate(a: &LoadArgs) -> anyhow::Result<Load> {
    let load = Load::from_name(&a.kind).ok_or_else(|| {
        let names: Vec<&str> = Load::ALL.iter().map(|(_, n)| *n).collect();
        anyhow!(
            "unknown load '{}' (expected one of: {})",
            a.kind,
            names.join(", ")
        )
    })?;
    if a.period_ns == 0
        || a.file_bytes == 0
        || a.trunc_bytes == 0
        || a.read_bytes == 0
        || a.request_bytes == 0
    {
        bail!("period and sizes must be more than 0");
    }
    Ok(load)
}

fn run_load(load: Load, a: &LoadArgs) -> anyhow::Result<LoadResult> {
    fs::create_dir_all(&a.dir).with_context(|| format!("creating '{}'", a.dir.display()))?;
    match load {
        Load::Trunc => truncate_loop(a, false),
        Load::TruncSync => truncate_loop(a, true),
        Load::Falloc => fallocate_loop(a),
        Load::Read => read_loop(a),
        Load::Stream => stream_loop(a),
        Load::JobRead => job_loop(a, false),
        Load::JobWrite => job_loop(a, true),
    }
}

/// Joins `--cgroup`, says ready, then waits for `--start-file`.
fn ready_to_start(a: &LoadArgs) -> anyhow::Result<()> {
    if let Some(g) = &a.cgroup {
        rtrec_host::cgroup::move_to(g, std::process::id())
            .with_context(|| format!("joining cgroup '{}'", g.display()))?;
    }
    ready();
    if let Some(f) = &a.start_file {
        while !f.exists() {
            if stopping() {
                return Ok(());
            }
            thread::sleep(Duration::from_millis(1));
        }
    }
    Ok(())
}

/// Creates (or empties) `path` for reading and writing: the file a load or
/// the S3 tester overwrites.
pub(crate) fn create_truncated(path: &Path) -> anyhow::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .with_context(|| format!("creating '{}'", path.display()))
}

fn stream_loop(a: &LoadArgs) -> anyhow::Result<LoadResult> {
    let path = a.dir.join("stream.dat");
    let f = create_truncated(&path)?;
    let chunk: Vec<u8> = (0..a.request_bytes).map(|i| (i % 251) as u8).collect();
    let mut r = LoadResult::default();
    ready_to_start(a)?;
    let start = Instant::now();
    let (mut off, mut window_start) = (0u64, 0u64);
    let result = (|| -> anyhow::Result<()> {
        while !stopping() {
            sys::pwrite_all(&f, &chunk, off).context("writing")?;
            off += chunk.len() as u64;
            r.bytes_written += chunk.len() as u64;
            r.ops += 1;
            if a.window_bytes > 0 && off - window_start >= a.window_bytes {
                // rtrec's sfr strategy: start this window, wait for the last.
                sys::sync_file_range(&f, window_start, off - window_start, sys::sfr::WRITE)
                    .context("sync_file_range")?;
                if window_start > 0 {
                    let prev = window_start.saturating_sub(a.window_bytes);
                    sys::sync_file_range(
                        &f,
                        prev,
                        window_start - prev,
                        sys::sfr::WAIT_BEFORE | sys::sfr::WRITE | sys::sfr::WAIT_AFTER,
                    )
                    .context("sync_file_range")?;
                }
                window_start = off;
            }
            if off + chunk.len() as u64 > a.file_bytes {
                off = 0;
                window_start = 0;
            }
        }
        Ok(())
    })();
    r.elapsed_ns = start.elapsed().as_nanos() as u64;
    drop(f);
    let _ = fs::remove_file(&path);
    result.map(|()| r)
}

/// The job's file: `file_bytes` of written data (never unwritten extents,
/// which a direct read would answer without the device), kept between
/// runs and rewritten when its size is wrong.
fn job_file(a: &LoadArgs) -> anyhow::Result<PathBuf> {
    let path = job_file_in(&a.dir);
    written_file(&path, a.file_bytes)?;
    Ok(path)
}

/// The file of a job load whose directory is `dir` (S4's fio jobs use the
/// same files).
pub(crate) fn job_file_in(dir: &Path) -> PathBuf {
    dir.join("job.dat")
}

fn job_loop(a: &LoadArgs, write: bool) -> anyhow::Result<LoadResult> {
    let path = job_file(a)?;
    let f = if a.direct {
        sys::open_rw_direct_io(&path)
    } else {
        OpenOptions::new().read(true).write(true).open(&path)
    }
    .with_context(|| format!("opening '{}'", path.display()))?;
    let request = a.request_bytes.min(a.file_bytes) as usize;
    // Aligned for O_DIRECT (4 KiB covers every logical block size in use),
    // filled with the same pattern as the streamer's chunks.
    let mut buf = sys::AlignedBuf::new(request, 4096)
        .with_context(|| format!("a buffer of {request} bytes for the job's requests"))?;
    buf.iter_mut()
        .enumerate()
        .for_each(|(i, b)| *b = (i % 251) as u8);
    let mut r = LoadResult::default();
    ready_to_start(a)?;
    let start = Instant::now();
    let mut off = 0u64;
    let result = (|| -> anyhow::Result<()> {
        while !stopping() {
            if off == 0 && !write && !a.direct {
                // Buffered reads must reach the device: drop the cache first.
                sys::fadvise_dontneed(&f, 0, 0).context("dropping the cache")?;
            }
            if write {
                sys::pwrite_all(&f, &buf, off).context("writing")?;
                r.bytes_written += request as u64;
            } else {
                let n =
                    std::os::unix::fs::FileExt::read_at(&f, &mut buf, off).context("reading")?;
                r.bytes_read += n as u64;
            }
            r.ops += 1;
            off += request as u64;
            if off + request as u64 > a.file_bytes {
                off = 0;
            }
        }
        Ok(())
    })();
    r.elapsed_ns = start.elapsed().as_nanos() as u64;
    result.map(|()| r)
}

/// Creates (or replaces) `path` and allocates `len` bytes.
fn fresh_allocated(path: &Path, len: u64) -> anyhow::Result<File> {
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .with_context(|| format!("creating '{}'", path.display()))?;
    sys::fallocate(&f, sys::FallocateMode::ExtendSize, 0, len)
        .with_context(|| format!("allocating {len} bytes for '{}'", path.display()))?;
    Ok(f)
}

fn truncate_loop(a: &LoadArgs, sync: bool) -> anyhow::Result<LoadResult> {
    let path = a
        .dir
        .join(if sync { "trunc-sync.dat" } else { "trunc.dat" });
    let f = fresh_allocated(&path, a.file_bytes)?;
    sys::fsync(&f).context("fsync of the file to truncate")?;
    let mut size = a.file_bytes;
    let mut r = LoadResult::default();
    let marks = Marks::open(a);
    ready_to_start(a)?;
    let start = Instant::now();
    let mut timer = PeriodicTimer::new(a.period_ns);
    let result = (|| -> anyhow::Result<()> {
        while !stopping() {
            timer.wait();
            let sync_name = if sync { "+fsync" } else { "" };
            if size == 0 {
                marks.around(
                    &a.kind,
                    format_args!("fallocate{sync_name} to {}", a.file_bytes),
                    || {
                        sys::fallocate(&f, sys::FallocateMode::ExtendSize, 0, a.file_bytes)
                            .context("refilling")?;
                        if sync {
                            sys::fsync(&f).context("fsync")?;
                        }
                        anyhow::Ok(())
                    },
                )?;
                size = a.file_bytes;
                r.refills += 1;
            } else {
                size -= a.trunc_bytes.min(size);
                marks.around(
                    &a.kind,
                    format_args!("ftruncate{sync_name} to {size}"),
                    || {
                        sys::ftruncate(&f, size).context("ftruncate")?;
                        if sync {
                            sys::fsync(&f).context("fsync")?;
                        }
                        anyhow::Ok(())
                    },
                )?;
            }
            r.ops += 1;
        }
        Ok(())
    })();
    r.elapsed_ns = start.elapsed().as_nanos() as u64;
    drop(f);
    let _ = fs::remove_file(&path);
    result.map(|()| r)
}

fn fallocate_loop(a: &LoadArgs) -> anyhow::Result<LoadResult> {
    let mut r = LoadResult::default();
    let mut previous: Option<PathBuf> = None;
    let marks = Marks::open(a);
    ready();
    let start = Instant::now();
    let mut timer = PeriodicTimer::new(a.period_ns);
    let result = (|| -> anyhow::Result<()> {
        while !stopping() {
            timer.wait();
            let name = format!("falloc-{}.dat", r.ops % 2);
            let path = a.dir.join(&name);
            marks.around(&a.kind, format_args!("create+fallocate {name}"), || {
                fresh_allocated(&path, a.file_bytes).map(drop)
            })?;
            if let Some(old) = previous.replace(path) {
                marks.around(&a.kind, format_args!("unlink the other"), || {
                    fs::remove_file(&old).with_context(|| format!("removing '{}'", old.display()))
                })?;
            }
            r.ops += 1;
        }
        Ok(())
    })();
    r.elapsed_ns = start.elapsed().as_nanos() as u64;
    if let Some(p) = previous {
        let _ = fs::remove_file(p);
    }
    result.map(|()| r)
}

/// The reader's file: kept between runs of the load (writing 100 MB per
/// set would be a load of its own), rewritten when its size is wrong.
fn reader_file(a: &LoadArgs) -> anyhow::Result<PathBuf> {
    let path = a.dir.join("read.dat");
    written_file(&path, a.file_bytes)?;
    Ok(path)
}

/// Makes `path` hold `len` bytes of written data: kept when its size is
/// already `len`, else (re)written.
pub(crate) fn written_file(path: &Path, len: u64) -> anyhow::Result<()> {
    if fs::metadata(path).is_ok_and(|m| m.len() == len) {
        return Ok(());
    }
    reader_file_at(path, len)
}

/// Writes `len` bytes of data to `path`, replacing it atomically.
fn reader_file_at(path: &Path, len: u64) -> anyhow::Result<()> {
    let chunk: Vec<u8> = (0..(1u32 << 20)).map(|i| (i % 251) as u8).collect();
    sys::replace_atomic(path, 0o644, |f| {
        let mut off = 0;
        while off < len {
            if stopping() {
                return Err(std::io::Error::other("stopped"));
            }
            let n = (len - off).min(chunk.len() as u64) as usize;
            sys::pwrite_all(&*f, &chunk[..n], off)?;
            off += n as u64;
        }
        Ok(())
    })
    .with_context(|| format!("writing the file to read, '{}'", path.display()))
}

fn read_loop(a: &LoadArgs) -> anyhow::Result<LoadResult> {
    let path = reader_file(a)?;
    let mut buf = vec![0u8; a.read_bytes as usize];
    let mut r = LoadResult::default();
    let marks = Marks::open(a);
    ready();
    let start = Instant::now();
    'passes: while !stopping() {
        let mut f = File::open(&path).with_context(|| format!("opening '{}'", path.display()))?;
        // Clean pages only: the file was synced when it was written.
        sys::fadvise_dontneed(&f, 0, 0).context("dropping the cache of the file to read")?;
        let _ = sys::fadvise_sequential(&f);
        loop {
            if stopping() {
                break 'passes;
            }
            let n = match marks.around(&a.kind, format_args!("read {}", a.read_bytes), || {
                f.read(&mut buf)
            }) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e).context("reading"),
            };
            r.bytes_read += n as u64;
            r.ops += 1;
        }
    }
    r.elapsed_ns = start.elapsed().as_nanos() as u64;
    Ok(r)
}

/// How to start a load process.
#[derive(Clone, Debug)]
pub struct Launcher {
    program: PathBuf,
    prefix: Vec<OsString>,
    env_var: Option<String>,
}

impl Launcher {
    /// `current_exe() __bgload KIND …`: the rtrec binary running the bench.
    ///
    /// # Errors
    /// The path of the running executable cannot be found.
    pub fn current_exe() -> io::Result<Launcher> {
        Ok(Launcher {
            program: std::env::current_exe()?,
            prefix: vec!["__bgload".into()],
            env_var: None,
        })
    }

    /// `PROGRAM PREFIX…` with the load's words in environment variable
    /// `env_var`, separated by `\x1f`: for test binaries, whose own
    /// command line cannot carry them (see `tests/bgload.rs`).
    pub fn via_env(program: PathBuf, prefix: Vec<OsString>, env_var: &str) -> Launcher {
        Launcher {
            program,
            prefix,
            env_var: Some(env_var.to_string()),
        }
    }

    fn command(&self, words: &[String]) -> Command {
        let mut c = Command::new(&self.program);
        c.args(&self.prefix);
        match &self.env_var {
            Some(var) => {
                c.env(var, words.join("\x1f"));
            }
            None => {
                c.args(words);
            }
        }
        c
    }
}

/// The words of a load in the environment variable of
/// [`Launcher::via_env`], if it is set.
pub fn words_from_env(var: &str) -> Option<Vec<String>> {
    std::env::var(var)
        .ok()
        .map(|v| v.split('\x1f').map(str::to_string).collect())
}

/// One load to start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadSpec {
    /// Which load.
    pub load: Load,
    /// Its directory (created by the load).
    pub dir: PathBuf,
    /// Its period, ns.
    pub period_ns: u64,
    /// Its file size, bytes.
    pub file_bytes: u64,
    /// Bytes per call of stream and job loads.
    pub request_bytes: u64,
    /// Jobs: O_DIRECT.
    pub direct: bool,
    /// Stream: the sync_file_range() window, bytes (0: none).
    pub window_bytes: u64,
    /// The cgroup the load joins before it is ready.
    pub cgroup: Option<PathBuf>,
    /// The file whose existence starts the load.
    pub start_file: Option<PathBuf>,
    /// Where the load marks its operations (`--explain`: the tracefs
    /// instance's `trace_marker`).
    pub trace_marker: Option<PathBuf>,
}

impl LoadSpec {
    /// The study's load: 5 ms period, 100 MB files.
    pub fn new(load: Load, dir: PathBuf) -> LoadSpec {
        LoadSpec {
            load,
            dir,
            period_ns: PERIOD_NS,
            file_bytes: FILE_BYTES,
            request_bytes: 1 << 20,
            direct: false,
            window_bytes: 0,
            cgroup: None,
            start_file: None,
            trace_marker: None,
        }
    }

    /// The words after `__bgload`.
    pub fn words(&self) -> Vec<String> {
        let mut w = vec![
            self.load.name().to_string(),
            "--dir".into(),
            self.dir.to_string_lossy().into_owned(),
            "--period-ns".into(),
            self.period_ns.to_string(),
            "--file-bytes".into(),
            self.file_bytes.to_string(),
            "--parent".into(),
            std::process::id().to_string(),
            "--request-bytes".into(),
            self.request_bytes.to_string(),
            "--window-bytes".into(),
            self.window_bytes.to_string(),
        ];
        if self.direct {
            w.push("--direct".into());
        }
        if let Some(g) = &self.cgroup {
            w.push("--cgroup".into());
            w.push(g.to_string_lossy().into_owned());
        }
        if let Some(f) = &self.start_file {
            w.push("--start-file".into());
            w.push(f.to_string_lossy().into_owned());
        }
        if let Some(f) = &self.trace_marker {
            w.push("--trace-marker".into());
            w.push(f.to_string_lossy().into_owned());
        }
        w
    }
}

/// A running load. Dropping it kills it (SIGKILL) and waits for it, so a
/// panic or an early return never leaves one behind; [`LoadProcess::stop`]
/// ends it in order and collects its result.
#[derive(Debug)]
pub struct LoadProcess {
    load: Load,
    child: Option<Child>,
    lines: Receiver<String>,
    stdout: Option<JoinHandle<()>>,
    stderr: Option<JoinHandle<String>>,
}

/// How a load ended.
#[derive(Clone, Debug)]
pub struct LoadReport {
    /// Which load.
    pub load: Load,
    /// Its result line, when it printed one.
    pub result: Option<LoadResult>,
    /// True when it ended on SIGTERM; false when it needed SIGKILL.
    pub clean: bool,
    /// Its exit status.
    pub status: ExitStatus,
    /// What it printed on stderr.
    pub stderr: String,
}

/// Starts a load and waits until it is ready.
///
/// # Errors
/// It could not be started, or it ended or took longer than
/// [`READY_TIMEOUT`] before saying it was ready (the error has its stderr).
pub fn spawn(launcher: &Launcher, spec: &LoadSpec) -> anyhow::Result<LoadProcess> {
    let mut cmd = launcher.command(&spec.words());
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = cmd.spawn().with_context(|| {
        format!(
            "starting the {} load ({})",
            spec.load.name(),
            launcher.program.display()
        )
    })?;
    let out = child.stdout.take().expect("piped");
    let err = child.stderr.take().expect("piped");
    let (tx, lines) = mpsc::channel();
    let stdout = thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let stderr = thread::spawn(move || {
        let mut s = String::new();
        let _ = BufReader::new(err).read_to_string(&mut s);
        s
    });
    let mut p = LoadProcess {
        load: spec.load,
        child: Some(child),
        lines,
        stdout: Some(stdout),
        stderr: Some(stderr),
    };
    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        match p
            .lines
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        {
            // A test harness may print on the same line before it.
            Ok(line) if line.ends_with(READY_LINE) => return Ok(p),
            Ok(_) => {}
            Err(RecvTimeoutError::Timeout) => {
                let report = p.kill_and_collect()?;
                bail!(
                    "the {} load was not ready after {:?}: {}",
                    spec.load.name(),
                    READY_TIMEOUT,
                    report.stderr.trim()
                );
            }
            Err(RecvTimeoutError::Disconnected) => {
                let report = p.kill_and_collect()?;
                bail!(
                    "the {} load ended before it was ready ({}): {}",
                    spec.load.name(),
                    report.status,
                    report.stderr.trim()
                );
            }
        }
    }
}

impl LoadProcess {
    /// Which load this is.
    pub fn load(&self) -> Load {
        self.load
    }

    /// Its process id.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// True while the process runs.
    pub fn running(&mut self) -> bool {
        matches!(self.child.as_mut().map(|c| c.try_wait()), Some(Ok(None)))
    }

    /// Ends the load: SIGTERM, up to [`STOP_GRACE`] to finish, then
    /// SIGKILL; returns how it ended and its result.
    ///
    /// # Errors
    /// Waiting for it failed.
    pub fn stop(mut self) -> anyhow::Result<LoadReport> {
        let Some(child) = self.child.as_mut() else {
            bail!("the load was already stopped")
        };
        let pid = child.id();
        let mut clean = true;
        if child.try_wait()?.is_none() {
            // Our own child, not yet reaped: its pid cannot have been reused.
            let _ = sys::terminate(pid);
            let deadline = Instant::now() + STOP_GRACE;
            while child.try_wait()?.is_none() {
                if Instant::now() >= deadline {
                    clean = false;
                    let _ = child.kill();
                    break;
                }
                thread::sleep(Duration::from_millis(5));
            }
        }
        let mut report = self.collect()?;
        report.clean = clean;
        Ok(report)
    }

    fn kill_and_collect(&mut self) -> anyhow::Result<LoadReport> {
        if let Some(c) = self.child.as_mut() {
            let _ = c.kill();
        }
        let mut r = self.collect()?;
        r.clean = false;
        Ok(r)
    }

    fn collect(&mut self) -> anyhow::Result<LoadReport> {
        let mut child = self
            .child
            .take()
            .ok_or_else(|| anyhow!("the load was already stopped"))?;
        let status = child.wait()?;
        if let Some(t) = self.stdout.take() {
            let _ = t.join();
        }
        let stderr = self
            .stderr
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default();
        let result = self
            .lines
            .try_iter()
            .filter_map(|l| {
                l.split_once(RESULT_PREFIX)
                    .and_then(|(_, j)| serde_json::from_str(j).ok())
            })
            .last();
        Ok(LoadReport {
            load: self.load,
            result,
            clean: true,
            status,
            stderr,
        })
    }
}

impl Drop for LoadProcess {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The loads of one set, started together and stopped together.
#[derive(Debug, Default)]
pub struct LoadSet {
    running: Vec<LoadProcess>,
}

impl LoadSet {
    /// Starts every load of `specs` in order; on an error the ones already
    /// started are killed.
    ///
    /// # Errors
    /// As [`spawn`].
    pub fn start(launcher: &Launcher, specs: &[LoadSpec]) -> anyhow::Result<LoadSet> {
        let mut set = LoadSet::default();
        for s in specs {
            set.running.push(spawn(launcher, s)?);
        }
        Ok(set)
    }

    /// The process ids of the running loads.
    pub fn pids(&self) -> Vec<i32> {
        self.running
            .iter()
            .filter_map(|p| p.pid())
            .map(|p| p as i32)
            .collect()
    }

    /// Names of loads that died while they should be running.
    pub fn dead(&mut self) -> Vec<&'static str> {
        self.running
            .iter_mut()
            .filter_map(|p| (!p.running()).then(|| p.load().name()))
            .collect()
    }

    /// Stops every load (see [`LoadProcess::stop`]).
    ///
    /// # Errors
    /// Waiting for one failed (the others are still stopped).
    pub fn stop(self) -> anyhow::Result<Vec<LoadReport>> {
        let mut reports = Vec::new();
        let mut first_err = None;
        for p in self.running {
            match p.stop() {
                Ok(r) => reports.push(r),
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(reports),
        }
    }
}
