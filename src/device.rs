//! `rtrec device probe DIR`: measures the storage under DIR into a device
//! profile (the measuring is `rtrec_emu::probe`'s), prints it, and writes
//! it with `-o` for `rtrec bench --device FILE` to replay on any machine.
//! And `rtrec record --device PROFILE`: a recording trial on an emulated
//! device ([`Trial`]).

use std::path::{Path, PathBuf};

use rtrec_bench::target::IMAGE_BYTES;
use rtrec_bench::DeviceArg;
use rtrec_engine::sizing::{ring_for_stall, ENTRY_HEADER_LEN};
use rtrec_engine::{Summary, Workload};
use rtrec_host::loopfs::{self, LoopFs, LoopFsOptions};
use rtrec_units::{format_duration, format_size};

use crate::cli::{DeviceAction, DeviceArgs};
use crate::{usage, Context, Result};

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
        .map_err(|e| crate::Error::Usage(e.to_string()))?;
    match output {
        Some(path) => {
            std::fs::write(path, &json).context(format!("writing '{}'", path.display()))?
        }
        None => print!("{json}"),
    }
    Ok(0)
}

/// `rtrec record --device`: the flag, flattened into the record arguments.
#[derive(Debug, clap::Args)]
pub struct RecordDeviceArgs {
    /// Record onto an emulated device (emmc, sd, hdd-5400, native, or a profile file) in a temporary
    /// ext4 image; the files are copied to --dir after, the image is removed. Needs root. The ring
    /// is sized for the profile's worst stall (see docs/devices.md).
    #[arg(long, value_name = "PROFILE", value_parser = parse_device)]
    pub device: Option<DeviceArg>,
}

fn parse_device(s: &str) -> std::result::Result<DeviceArg, String> {
    DeviceArg::parse(s)
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
        if let Err(reason) = loopfs::privileged() {
            return usage(format!(
                "--device needs root and a loop device to build the emulated device: {reason}"
            ));
        }
        let emulator = device
            .emulator()
            .map_err(|e| crate::Error::Usage(format!("{e:#}")))?;
        let opts = LoopFsOptions {
            size: IMAGE_BYTES,
            emulator,
            ..LoopFsOptions::default()
        };
        let fs = LoopFs::create(&opts)?;
        // As the bench: the loop device reads its file with direct I/O, so
        // every request reaches the emulator (a warning when refused).
        if let Err(e) = rtrec_host::loopdev::set_direct_io(fs.device()) {
            eprintln!("rtrec: warning: direct I/O on the loop device: {e}");
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
        Ok(Some(Trial {
            profile: device.profile.clone(),
            fs,
            dir,
            keep: keep.to_path_buf(),
        }))
    }

    /// The recording directory inside the emulated device.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The ring the profile asks for at this rate (one record of
    /// `max_record` every `period_ns`, when known): the engine's rule
    /// [`rtrec_engine::sizing::ring_for_stall`] with the profile's
    /// [`worst_stall_ns`](rtrec_emu::Profile::worst_stall_ns).
    pub fn ring_bytes(&self, w: &Workload, max_record: usize, default: usize) -> usize {
        ring_for_stall(w, max_record, self.profile.worst_stall_ns()).max(default)
    }

    /// Copies the recording's files (not the pool) to the keep directory,
    /// points the summary's file list there, and adds the device line: the
    /// writer's longest `write()` against what the ring holds, in seconds
    /// of data.
    ///
    /// # Errors
    /// The keep directory cannot be made, or a copy failed.
    pub fn keep(&self, summary: &mut Summary, period_ns: Option<u64>) -> Result<String> {
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
        Ok(self.stall_line(summary, period_ns))
    }

    /// `device emmc: writer's longest write() 102 ms; the ring holds 16 MiB,
    /// 4.9 s of data at this rate`.
    fn stall_line(&self, s: &Summary, period_ns: Option<u64>) -> String {
        let longest = s.write_ns.as_ref().map_or(0, |l| l.max);
        let entry = (s.config.max_record + ENTRY_HEADER_LEN) as u64;
        let held = match period_ns.filter(|&p| p > 0) {
            Some(p) => format!(
                ", {:.2} s of data at this rate",
                (s.config.ring_bytes as u64 / entry) as f64 * p as f64 / 1e9
            ),
            None => String::new(),
        };
        format!(
            "device {}: writer's longest write() {}; the ring holds {}{held}; worst stall of the profile {}\n",
            self.profile.name,
            format_duration(longest),
            format_size(s.config.ring_bytes as u64),
            format_duration(self.profile.worst_stall_ns()),
        )
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
