//! `rtrec device probe DIR`: measures the storage under DIR into a device
//! profile (the measuring is `rtrec_emu::probe`'s), prints it, and writes
//! it with `-o` for `rtrec bench --device FILE` to replay on any machine.
//! And `rtrec record --device PROFILE`: a recording trial on an emulated
//! device ([`Trial`]).
//!
//! Both commands' flags are defined here ([`DeviceArgs`],
//! [`RecordDeviceArgs`]) and assembled by `cli`, as `explain` and
//! `isolation` define theirs: `record` uses this module and `cli` flattens
//! `record`'s flags, so nothing here may import `cli`.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use rtrec_engine::sizing::ring_seconds;
use rtrec_engine::Summary;
#[cfg(feature = "emu")]
use rtrec_host::emufs::EmulatorCommand;
use rtrec_host::loopfs::LoopFs;
#[cfg(feature = "emu")]
use rtrec_host::loopfs::{self, LoopFsOptions, WORK_IMAGE_SIZE};
use rtrec_units::{format_duration, format_size};

use crate::error::{usage, Context, Result};

/// The examples at the end of `rtrec device probe --help`.
const EXAMPLES_DEVICE_PROBE: &str = "Examples:\n  rtrec device probe /mnt/data\n  rtrec device probe /mnt/data --name emmc -o emmc.json";

/// `rtrec device`.
#[derive(Debug, Args)]
pub struct DeviceArgs {
    /// What to do.
    #[command(subcommand)]
    pub action: DeviceAction,
}

/// `rtrec device` actions.
#[derive(Debug, Subcommand)]
pub enum DeviceAction {
    /// Measure bandwidth, request and flush latency and GC stalls of the device under DIR (writes about 100 MiB inside DIR, removed after).
    #[command(after_help = EXAMPLES_DEVICE_PROBE)]
    Probe {
        /// A directory on the device to measure.
        #[arg(value_name = "DIR")]
        dir: PathBuf,
        /// Write the profile here (JSON; `rtrec bench --device FILE` replays it).
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
        /// The profile's name.
        #[arg(long, default_value = "board")]
        name: String,
    },
}

/// `rtrec record --device`: the flag, flattened into the record arguments
/// (the trial itself is [`Trial`]).
#[derive(Debug, Args)]
pub struct RecordDeviceArgs {
    // The profiles are listed from the shipped ones (`DeviceArg::choices`),
    // as `rtrec bench --device` lists them: one list for both commands.
    // No final period: clap strips it only from doc comments.
    #[arg(
        long,
        value_name = "PROFILE",
        value_parser = rtrec_emu::DeviceArg::parse,
        help = format!("Record onto an emulated device ({}) in a temporary ext4 image; the files are copied to --dir after, the image is removed. Needs root. The ring is sized for the profile's worst stall (see docs/devices.md)", rtrec_emu::DeviceArg::choices())
    )]
    pub device: Option<rtrec_emu::DeviceArg>,
}

/// Runs `rtrec device`.
pub fn run(args: &DeviceArgs) -> Result<i32> {
    let DeviceAction::Probe { dir, output, name } = &args.action;
    if !dir.is_dir() {
        return usage(format!("'{}' is not a directory", dir.display()));
    }
    let mib = rtrec_emu::probe::bytes_written() >> 20;
    eprintln!(
        "rtrec device probe: writes {mib} MiB and issues about 200 flushes inside {} \
         (removed after): a few seconds on an SSD, about a minute on an SD card",
        dir.display()
    );
    let result = rtrec_emu::probe::probe(dir, name, |step| eprintln!("rtrec device probe: {step}"))
        .context(format!("probing the device under '{}'", dir.display()))?;
    for l in &result.lines {
        eprintln!("rtrec device probe: {l}");
    }
    // What it wrote must load as a profile, or it is not written.
    let json = serde_json::to_string_pretty(&result.profile).expect("plain data") + "\n";
    rtrec_emu::Profile::from_json(&json, "measured")
        .map_err(|e| crate::error::Error::Usage(e.to_string()))?;
    match output {
        Some(path) => {
            std::fs::write(path, &json).context(format!("writing '{}'", path.display()))?
        }
        None => print!("{json}"),
    }
    Ok(0)
}

/// The emulated device of a `record --device` trial, as the summary
/// reports it (the `device` field of `record --json`, docs/summary.md).
#[derive(Debug, Clone, serde::Serialize)]
pub struct DeviceReport {
    /// The profile's name (`emmc`, or the `name` in a profile file).
    pub profile: String,
    /// The whole profile as it was served.
    pub profile_file: rtrec_emu::profile::ProfileFile,
    /// The profile's worst stall, ns ([`rtrec_emu::Profile::worst_stall_ns`]).
    pub worst_stall_ns: u64,
    /// The writer's longest `write()`, ns.
    pub writer_longest_write_ns: u64,
    /// The ring's size, bytes.
    pub ring_bytes: u64,
    /// The ring's capacity in seconds of data at the recording's rate
    /// (absent when the rate is not known: records from stdin).
    pub ring_seconds: Option<f64>,
    /// The emulator's counters and timing error (served − asked), as of
    /// its last stats update (every 200 ms); absent when they could not
    /// be read.
    pub emulator: Option<rtrec_emu::EmulatorStats>,
}

impl DeviceReport {
    /// `device emmc: writer's longest write() 18.5 ms; the ring holds
    /// 16 MiB, 5.11 s of data at this rate; worst stall of the profile
    /// 117 ms; emulator timing error (served − asked): mean …`, one line.
    pub fn line(&self) -> String {
        let held = self.ring_seconds.map_or(String::new(), |s| {
            format!(", {s:.2} s of data at this rate")
        });
        let error = self.emulator.as_ref().map_or(String::new(), |e| {
            format!(
                "; emulator timing error (served − asked): {}",
                e.error_summary()
            )
        });
        format!(
            "device {}: writer's longest write() {}; the ring holds {}{held}; worst stall of the profile {}{error}\n",
            self.profile,
            format_duration(self.writer_longest_write_ns),
            format_size(self.ring_bytes),
            format_duration(self.worst_stall_ns),
        )
    }
}

/// A recording trial on an emulated device: a temporary ext4 image on the
/// emulator (the bench's stack, `rtrec_host::loopfs` with
/// `rtrec_host::emufs`), the recording directory inside it, and where the
/// files go after.
///
/// Design choice: the files are copied out before the image is removed, so
/// a trial leaves a recording `verify` and `export` can read, and nothing
/// mounted. Every step of the stack is journaled by `LoopFs`: a Ctrl-C ends
/// the recording as usual and the stack comes down after it; after a
/// SIGKILL the next rtrec run (or `rtrec tune --restore`) takes it down.
#[derive(Debug)]
pub struct Trial {
    profile: rtrec_emu::Profile,
    fs: LoopFs,
    dir: PathBuf,
    keep: PathBuf,
}

impl Trial {
    /// Builds the stack for `args.device`; `None` without `--device`.
    /// `keep` is where the files are copied after the recording.
    ///
    /// # Errors
    /// Not root, no loop device, or a step of the stack failed (what was
    /// done is undone).
    pub fn start(args: &RecordDeviceArgs, keep: &Path, quiet: bool) -> Result<Option<Trial>> {
        let Some(device) = &args.device else {
            return Ok(None);
        };
        // Design choice: without the emulator (feature `emu`, the
        // record-only build) the stack is not compiled in, the refusal of
        // `record`'s plan (`features`) said so already, and the loop file
        // system, the emulator's process and the copy are not in the board
        // binary (docs/embedded.md, "Under 1 MB, position-independent").
        #[cfg(not(feature = "emu"))]
        {
            let _ = (device, keep, quiet);
            crate::error::left_out("the device emulator that `--device` needs", "emu")
        }
        #[cfg(feature = "emu")]
        Self::build(device, keep, quiet).map(Some)
    }

    /// Builds the stack for `device` (what [`Trial::start`] does with
    /// `--device`).
    ///
    /// # Errors
    /// As [`Trial::start`].
    #[cfg(feature = "emu")]
    fn build(device: &rtrec_emu::DeviceArg, keep: &Path, quiet: bool) -> Result<Trial> {
        if let Err(reason) = loopfs::privileged() {
            return usage(format!(
                "--device needs root and a loop device to build the emulated device: {reason}"
            ));
        }
        let emulator = device
            .emulator_args()
            .map(EmulatorCommand::of_this_program)
            .transpose()?;
        let opts = LoopFsOptions {
            size: WORK_IMAGE_SIZE,
            emulator,
            ..LoopFsOptions::default()
        };
        let fs = LoopFs::create(&opts)?;
        // As the bench: the loop device reads its file with direct I/O, so
        // every request reaches the emulator (a warning when refused).
        if let Err(e) = rtrec_host::loopdev::set_direct_io(fs.device()) {
            eprintln!("rtrec: warning: direct I/O on the loop device: {e}");
        }
        // A disk that seeks is rotational to the kernel, as the real one
        // (the recorder sizes its files by it: `rtrec_engine::sizing`).
        if !device.profile.is_native() {
            rtrec_host::loopdev::set_rotational(fs.device(), device.profile.rotating())?;
        }
        let dir = fs.path().join("recording");
        std::fs::create_dir(&dir).context(format!("creating '{}'", dir.display()))?;
        if !quiet {
            eprintln!(
                "rtrec record: recording onto an emulated {} device (a temporary image); \
                 the files are copied to '{}' after",
                device.profile.name,
                keep.display()
            );
        }
        Ok(Trial {
            profile: device.profile.clone(),
            fs,
            dir,
            keep: keep.to_path_buf(),
        })
    }

    /// The recording directory inside the emulated device.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Copies the recording's files (not the pool) to the keep directory,
    /// points the summary's file list there, and reports the device: the
    /// writer's longest `write()` against what the ring holds, in seconds
    /// of data, and the emulator's timing error.
    ///
    /// # Errors
    /// The keep directory cannot be made, or a copy failed.
    pub fn keep(&self, summary: &mut Summary, period_ns: Option<u64>) -> Result<DeviceReport> {
        std::fs::create_dir_all(&self.keep)
            .context(format!("creating '{}'", self.keep.display()))?;
        let entries =
            std::fs::read_dir(&self.dir).context(format!("reading '{}'", self.dir.display()))?;
        for e in entries {
            let e = e.context(format!("reading '{}'", self.dir.display()))?;
            if !e.file_type().is_ok_and(|t| t.is_file()) {
                continue; // the pool, a trigger socket
            }
            let to = self.keep.join(e.file_name());
            std::fs::copy(e.path(), &to).context(format!(
                "copying '{}' to '{}'",
                e.path().display(),
                to.display()
            ))?;
        }
        for f in &mut summary.files {
            if let Some(name) = f.file_name() {
                *f = self.keep.join(name);
            }
        }
        // The emulator rewrites its stats every STATS_INTERVAL: wait one,
        // so they include the recording's last requests.
        std::thread::sleep(rtrec_emu::STATS_INTERVAL + std::time::Duration::from_millis(50));
        Ok(DeviceReport {
            profile: self.profile.name.clone(),
            profile_file: self.profile.file.clone(),
            worst_stall_ns: self.profile.worst_stall_ns(),
            writer_longest_write_ns: summary.write_ns.as_ref().map_or(0, |l| l.max),
            ring_bytes: summary.config.ring_bytes as u64,
            ring_seconds: ring_seconds(
                summary.config.ring_bytes as u64,
                summary.config.max_record as u64,
                period_ns,
            ),
            emulator: self
                .fs
                .emulator_stats()
                .and_then(|p| rtrec_emu::read_stats(p).ok()),
        })
    }

    /// Takes the stack down (unmount, detach, end the emulator, delete the
    /// image) and passes `result` on; a failed teardown is the error (what
    /// is left stays journaled for `rtrec tune --restore`).
    pub fn finish(self, result: Result<i32>) -> Result<i32> {
        let down = self.fs.remove();
        let code = result?;
        down?;
        Ok(code)
    }
}
