//! Where and how a recording was made, for `record --json`'s `context`
//! section: the command line and rtrec's version (as hyperfine's export
//! keeps the command), the host (kernel, CPU, cores, memory, as fio's JSON
//! does), the target (the directory's file system, device and mount
//! options) and the real-time setup asked for, granted, and what failed.
//! The effective options themselves are the summary's `config` (and
//! `ring`, `period_ns`, …): this section does not repeat them.
//!
//! Design choice: every fact is read once at the end of the recording,
//! from `/proc` and the mount table, never from a cache of the doctor's;
//! what cannot be read is `null`, never a guess.

use std::path::{Path, PathBuf};

use rtrec_engine::rt::RtSetup;
use serde::Serialize;

/// The `context` section.
#[derive(Debug, Serialize)]
pub struct Context {
    /// rtrec's version.
    pub rtrec_version: &'static str,
    /// The command line, as given.
    pub command_line: Vec<String>,
    /// The machine.
    pub host: Host,
    /// Where the recording went.
    pub target: Target,
    /// The real-time setup.
    pub realtime: Realtime,
}

/// The machine's facts.
#[derive(Debug, Serialize)]
pub struct Host {
    /// `uname -n`.
    pub hostname: Option<String>,
    /// Kernel release (`uname -r`).
    pub kernel: Option<String>,
    /// Kernel version string (`uname -v`: the build, `PREEMPT_RT`, …).
    pub kernel_version: Option<String>,
    /// The architecture rtrec was built for.
    pub arch: &'static str,
    /// The CPU's model name (`/proc/cpuinfo`).
    pub cpu_model: Option<String>,
    /// CPUs this process may run on.
    pub cpus: usize,
    /// Physical memory, bytes.
    pub memory_bytes: u64,
}

/// The recording directory's storage.
#[derive(Debug, Serialize)]
pub struct Target {
    /// The directory, absolute.
    pub dir: PathBuf,
    /// Its file system type.
    pub filesystem: Option<String>,
    /// The mounted device (or source).
    pub device: Option<String>,
    /// Where that file system is mounted.
    pub mount_point: Option<PathBuf>,
    /// Its mount options.
    pub mount_options: Option<String>,
}

/// The real-time setup.
#[derive(Debug, Serialize)]
pub struct Realtime {
    /// `--rt` was given.
    pub requested: bool,
    /// `--require-rt`: a failure would have refused the recording.
    pub required: bool,
    /// The producer's memory lock, priority and CPU asked for.
    pub lock_memory: bool,
    /// The producer's SCHED_FIFO priority asked for.
    pub priority: Option<i32>,
    /// The producer's CPU asked for.
    pub cpu: Option<usize>,
    /// The writer's SCHED_FIFO priority asked for.
    pub writer_priority: Option<i32>,
    /// The writer's CPU asked for.
    pub writer_cpu: Option<usize>,
    /// Everything asked for was applied.
    pub granted: bool,
    /// What could not be applied, one sentence each (the producer's, then
    /// the writer thread's).
    pub failures: Vec<String>,
}

/// The facts of this recording (`warnings`: the summary's, whose writer
/// thread's scheduling failures are counted here).
pub fn gather(
    dir: &Path,
    rt: Option<&RtSetup>,
    required: bool,
    cfg: &rtrec_engine::Config,
    producer_failures: &[String],
    warnings: &[String],
) -> Context {
    let mut failures = producer_failures.to_vec();
    failures.extend(
        warnings
            .iter()
            .filter(|w| w.starts_with(rtrec_engine::rt::WRITER_SCHEDULING_FAILED))
            .cloned(),
    );
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let mount = rtrec_host::mounts::read_mounts()
        .ok()
        .and_then(|m| rtrec_host::mounts::mount_of(&dir, &m));
    Context {
        rtrec_version: env!("CARGO_PKG_VERSION"),
        command_line: std::env::args().collect(),
        host: Host {
            hostname: proc_line("/proc/sys/kernel/hostname"),
            kernel: proc_line("/proc/sys/kernel/osrelease"),
            kernel_version: proc_line("/proc/sys/kernel/version"),
            arch: std::env::consts::ARCH,
            cpu_model: cpu_model(),
            cpus: std::thread::available_parallelism().map_or(0, |n| n.get()),
            memory_bytes: rtrec_sys::physical_memory(),
        },
        target: Target {
            filesystem: mount.as_ref().map(|m| m.fstype.clone()),
            device: mount.as_ref().map(|m| m.source.clone()),
            mount_point: mount.as_ref().map(|m| m.target.clone()),
            mount_options: mount.map(|m| m.options),
            dir,
        },
        realtime: Realtime {
            requested: rt.is_some(),
            required,
            lock_memory: rt.is_some_and(|r| r.lock_memory),
            priority: rt.and_then(|r| r.priority),
            cpu: rt.and_then(|r| r.cpu),
            writer_priority: cfg.rt.writer_priority,
            writer_cpu: cfg.rt.writer_cpu,
            granted: failures.is_empty(),
            failures,
        },
    }
}

/// The first line of a `/proc` file, trimmed.
fn proc_line(path: &str) -> Option<String> {
    let s = std::fs::read_to_string(path).ok()?;
    Some(s.lines().next()?.trim().to_string()).filter(|l| !l.is_empty())
}

/// `model name` (x86), else `Model` or `Hardware` (ARM boards), else the
/// first `CPU part` of `/proc/cpuinfo`.
fn cpu_model() -> Option<String> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    ["model name", "Model", "Hardware", "CPU part"]
        .iter()
        .find_map(|key| {
            info.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                (k.trim() == *key && !v.trim().is_empty()).then(|| v.trim().to_string())
            })
        })
}
