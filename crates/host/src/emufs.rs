//! The emulated device under a [`LoopFs`](crate::loopfs::LoopFs): starting
//! the emulator process (`rtrec __emulate`, from the `rtrec-emu` crate)
//! whose FUSE mount serves the image through a device model, and the
//! journal entries that take it down again.
//!
//! The FUSE mount is a journaled [`Change::Mount`] like the ext4 mount
//! above it. Undone newest first, the ext4 mount goes (flushing through the
//! still-running emulator), then the loop device, then the FUSE mount —
//! whose unmount ends the emulator. So after Ctrl-C, a panic or a SIGKILL
//! of the owner, `rtrec tune --restore` or the next run leaves no FUSE
//! mount, loop device or image.
//!
//! Design choices:
//! - The emulator runs in its own process group: a Ctrl-C on the terminal
//!   reaches only its owner, which then takes the stack down in order.
//! - It is not killed with its owner (no `PR_SET_PDEATHSIG`): after a
//!   SIGKILL of the owner it keeps serving until the restore unmounts its
//!   file system, so ext4 above it is unmounted cleanly, not over a dead
//!   device.

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::allowlist::{LOOPFS_EMU_MOUNT, LOOPFS_EMU_STATS};
use crate::change::Change;
use crate::error::{Error, Result};
use crate::journal::Journal;
use crate::mounts::mount_at;

/// How long the emulator may take to mount.
pub const START_TIMEOUT: Duration = Duration::from_secs(10);
/// How long it may take to end after its file system was unmounted.
pub const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// How to start the emulator: `PROGRAM ARGS… --image I --mount M --stats S`
/// (the last three appended here).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmulatorCommand {
    /// The program (normally the rtrec binary).
    pub program: PathBuf,
    /// Its first arguments (`__emulate --profile emmc`).
    pub args: Vec<OsString>,
}

/// Environment variable naming the program to run as the emulator
/// (`PROGRAM __emulate …`; default: the running rtrec binary). For test
/// binaries, which are not rtrec.
pub const EMULATOR_ENV: &str = "RTREC_EMULATOR";

impl EmulatorCommand {
    /// The emulator as this program runs it: [`EMULATOR_ENV`] when set,
    /// else the running executable, with `args` first
    /// (`rtrec_emu::DeviceArg::emulator_args`).
    ///
    /// # Errors
    /// The running executable cannot be found.
    pub fn of_this_program(args: Vec<OsString>) -> Result<EmulatorCommand> {
        let program = match std::env::var_os(EMULATOR_ENV) {
            Some(p) => PathBuf::from(p),
            None => std::env::current_exe()
                .map_err(crate::error::io_err("finding the rtrec executable"))?,
        };
        Ok(EmulatorCommand { program, args })
    }
}

/// A running emulator; dropping it waits for the process to end (it ends
/// when its mount is undone) and kills it after [`STOP_TIMEOUT`].
#[derive(Debug)]
pub struct Emulator {
    child: Child,
    stats: PathBuf,
}

impl Emulator {
    /// Its stats file (JSON, rewritten while it serves; see
    /// `rtrec_emu::EmulatorStats`).
    pub fn stats_path(&self) -> &Path {
        &self.stats
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        let deadline = Instant::now() + STOP_TIMEOUT;
        while Instant::now() < deadline {
            if !matches!(self.child.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn failed(what: String, why: &str) -> Error {
    Error::Io {
        what,
        source: io::Error::other(why.to_string()),
    }
}

/// Starts the emulator serving `image` on `dir/dev` and waits until it is
/// mounted; returns it and the path of the image as served. Every step is
/// recorded in `journal` before it is taken.
///
/// # Errors
/// Creating the mount point, starting the process, or the process ended
/// (or did not mount within [`START_TIMEOUT`]).
pub(crate) fn start(
    journal: &Journal,
    dir: &Path,
    image: &Path,
    cmd: &EmulatorCommand,
) -> Result<(Emulator, PathBuf)> {
    crate::features::detect(crate::features::Feature::Fuse)
        .map_err(|m| crate::Error::Missing(m.to_string()))?;
    let dev = dir.join(LOOPFS_EMU_MOUNT);
    let stats = dir.join(LOOPFS_EMU_STATS);
    journal.record(Change::RemoveDir { path: dev.clone() })?;
    std::fs::create_dir(&dev).map_err(crate::error::io_err(format_args!(
        "creating {}",
        dev.display()
    )))?;
    journal.record(Change::RemoveFile {
        path: stats.clone(),
    })?;
    journal.record(Change::Mount {
        target: dev.clone(),
    })?;
    let what = || format!("starting the emulated device ({})", cmd.program.display());
    let mut command = Command::new(&cmd.program);
    command
        .args(&cmd.args)
        .arg("--image")
        .arg(image)
        .arg("--mount")
        .arg(&dev)
        .arg("--stats")
        .arg(&stats)
        .stdin(Stdio::null());
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let child = command.spawn().map_err(crate::error::io_err(what()))?;
    let mut emulator = Emulator {
        child,
        stats: stats.clone(),
    };
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        let mounted = mount_at(&dev)
            .map_err(crate::error::io_err(format_args!(
                "reading the mount table"
            )))?
            .is_some_and(|m| m.fstype.starts_with("fuse"));
        if mounted && stats.exists() {
            break;
        }
        if let Ok(Some(status)) = emulator.child.try_wait() {
            return Err(failed(
                what(),
                &format!("it ended ({status}) before mounting"),
            ));
        }
        if Instant::now() > deadline {
            let _ = emulator.child.kill();
            return Err(failed(what(), "it did not mount within 10 s"));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    // The emulator serves the image under its own name.
    let name = image.file_name().unwrap_or_default();
    Ok((emulator, dev.join(name)))
}
