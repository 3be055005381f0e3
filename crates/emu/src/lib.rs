//! Emulated storage: reproduce an eMMC, an SD card or a laptop disk on any
//! machine, or replay a board's measured storage.
//!
//! **Owns**: device profiles as data ([`profile`]) and the `--device`
//! argument that names one ([`DeviceArg`]), the device model that
//! turns a request into a service time ([`model`]), the emulator's timing
//! error ([`timing`]), the FUSE file that serves an image through the model
//! ([`fs`]), measuring a real device into a profile ([`probe`]), and the
//! emulator process's entry point ([`emulate_main`], run
//! as the hidden `rtrec __emulate`).
//!
//! **Must not depend on**: the engine or the bench (they use it), nor
//! `rtrec-host`: mounting the emulator, the loop device and the ext4 above
//! it are journaled global changes, and those belong to
//! `rtrec_host::emufs`, which starts this process and puts everything back.
//!
//! The stack, bottom up: the image file on this machine's disk; this
//! crate's FUSE mount exposing it under its own name, every request served
//! through the [`model::DeviceModel`]; a loop device on that file; ext4 on
//! the loop device. ext4's block requests and jbd2's cache flushes thus
//! reach the model as writes and `fsync`s.
//!
//! Design choice: a separate process (like the bench's background loads),
//! so that the emulator's real-time thread, its memory and its failure are
//! its own, and so it outlives a killed bench until the journal's restore
//! unmounts ext4 through it cleanly and then unmounts it.
#![deny(missing_docs)]

pub mod device_arg;
pub mod ext4;
pub mod fs;
pub mod limits;
pub mod model;
pub mod probe;
pub mod profile;
pub mod queue;
mod rate;
pub mod timing;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clap::Parser;
use fuser::MountOption;

pub use device_arg::DeviceArg;
pub use profile::{Profile, ProfileError};
pub use timing::EmulatorStats;

/// SCHED_FIFO priority of the emulator's serving thread: above the bench's
/// and the recorder's threads, so a device delay is not stretched by them
/// (a real device does not compete for the CPU).
pub const EMULATOR_PRIORITY: i32 = 70;

/// How often the stats file is rewritten.
pub const STATS_INTERVAL: Duration = Duration::from_millis(200);

/// The command line of `rtrec __emulate`.
#[derive(Debug, Parser)]
#[command(
    name = "rtrec __emulate",
    about = "An emulated storage device (internal; started by rtrec bench and rtrec record --device)"
)]
pub struct EmulateArgs {
    /// Profile name or file.
    #[arg(long)]
    pub profile: String,
    /// The real image file to serve.
    #[arg(long)]
    pub image: PathBuf,
    /// Where to mount (an empty directory).
    #[arg(long)]
    pub mount: PathBuf,
    /// Where to write the stats (JSON, rewritten while serving).
    #[arg(long)]
    pub stats: PathBuf,
}

/// Rewrites the stats in place through `file`, opened once at start.
///
/// Design choice: never a new file (no temporary and rename), so that
/// once the owner's journal removed the stats file — which a restore after
/// a SIGKILL does while this process may still be ending — a late write
/// cannot bring it back and leave the owner's directory non-empty. A
/// reader may see a write half done; [`read_stats`] retries.
fn write_stats(file: &std::fs::File, timing: &Mutex<Timing>) {
    use std::os::unix::fs::FileExt;
    let s = timing.lock().unwrap_or_else(|p| p.into_inner()).snapshot();
    let json = serde_json::to_vec(&s).expect("plain data");
    // Not fsynced: the stats are read by the live bench, not kept.
    if file.write_all_at(&json, 0).is_ok() {
        let _ = file.set_len(json.len() as u64);
    }
}

use timing::Timing;

/// Reads an emulator's stats file.
///
/// # Errors
/// The file cannot be read or parsed.
pub fn read_stats(path: &Path) -> std::io::Result<EmulatorStats> {
    let mut last = None;
    // The emulator rewrites the file in place: a read may catch a write
    // half done, and the next one will not.
    for _ in 0..5 {
        let text = std::fs::read_to_string(path)?;
        match serde_json::from_str(&text) {
            Ok(s) => return Ok(s),
            Err(e) => last = Some(e),
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        last.expect("set in the loop"),
    ))
}

/// Serves `args.image` at `args.mount` until it is unmounted.
///
/// # Errors
/// One sentence: the profile, the image or the mount.
pub fn serve(args: &EmulateArgs) -> Result<(), String> {
    let profile = Profile::load(&args.profile).map_err(|e| e.to_string())?;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&args.image)
        .map_err(|e| format!("opening {}: {e}", args.image.display()))?;
    let timing = Arc::new(Mutex::new(Timing::new(&profile.name)));
    let stats = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&args.stats)
        .map_err(|e| format!("creating {}: {e}", args.stats.display()))?;
    let stats = Arc::new(stats);
    write_stats(&stats, &timing);
    // Started before the priority is raised, so it stays an ordinary thread.
    let writer = {
        let (timing, stats) = (Arc::clone(&timing), Arc::clone(&stats));
        std::thread::spawn(move || loop {
            std::thread::sleep(STATS_INTERVAL);
            write_stats(&stats, &timing);
        })
    };
    drop(writer);
    if let Err(e) = rtrec_sys::set_fifo_priority(EMULATOR_PRIORITY) {
        eprintln!("rtrec __emulate: warning: no real-time priority ({e}); its delays may be late");
    }
    let fs = fs::EmuFs::new(
        file,
        // Served under its own name, so its owner knows the path.
        args.image
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .ok_or_else(|| format!("{} names no file", args.image.display()))?,
        model::DeviceModel::new(profile.clone()),
        Arc::clone(&timing),
    );
    let options = [
        MountOption::FSName(format!("rtrec-emu-{}", profile.name)),
        MountOption::Subtype("rtrec-emu".into()),
        MountOption::RW,
        MountOption::NoAtime,
    ];
    let result = fuser::mount2(fs, &args.mount, &options).map_err(|e| {
        format!(
            "serving the emulated device at {}: {e}",
            args.mount.display()
        )
    });
    write_stats(&stats, &timing);
    result
}

/// Entry point of `rtrec __emulate ARGS…`; returns the exit code.
pub fn emulate_main(args: &[String]) -> i32 {
    let words = std::iter::once("rtrec __emulate".to_string()).chain(args.iter().cloned());
    let args = match EmulateArgs::try_parse_from(words) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("rtrec __emulate: {e}");
            return 2;
        }
    };
    match serve(&args) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("rtrec __emulate: {e}");
            1
        }
    }
}
