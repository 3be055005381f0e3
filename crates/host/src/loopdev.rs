//! Loop devices: the one place rtrec runs `losetup` — switching a device to
//! direct I/O, and detaching it (the undo of
//! [`Change::LoopDevice`](crate::change::Change::LoopDevice)) — and the
//! backing file of a device. Also runs the other external commands of loop
//! filesystems. Knows nothing of the journal.

use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::error::{io_err, Error, Result};

/// Runs `program args…` with no input, turning a failure into
/// [`Error::Command`] (with what it printed on stderr).
pub(crate) fn run(program: &str, args: &[&OsStr]) -> Result<()> {
    let output = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(io_err(format_args!("running {program}")))?;
    if output.status.success() {
        return Ok(());
    }
    let mut command = program.to_string();
    for arg in args {
        command.push(' ');
        command.push_str(&arg.to_string_lossy());
    }
    Err(Error::Command {
        command,
        status: output.status,
        stderr: String::from_utf8_lossy(&output.stderr).trim().to_string(),
    })
}

/// The backing file of loop device `device` (`/dev/loopN`), from
/// `/sys/block/loopN/loop/backing_file`; `None` when it is detached.
pub fn backing_file(device: &Path) -> Option<PathBuf> {
    let name = device.file_name()?;
    let path = Path::new("/sys/block").join(name).join("loop/backing_file");
    let text = fs::read_to_string(path).ok()?;
    let text = text.trim_end_matches('\n');
    Some(PathBuf::from(
        text.strip_suffix(" (deleted)").unwrap_or(text),
    ))
}

/// `losetup --direct-io=on DEV`: the loop device reads and writes its image
/// with O_DIRECT, so I/O reaches the disk under it instead of stopping in
/// the page cache of the image file (which would hide device latency and
/// cache everything twice). Lasts as long as the device; nothing to undo.
///
/// # Errors
/// [`Error::Command`] when `losetup` fails (an old kernel, a filesystem
/// without O_DIRECT under the image).
pub fn set_direct_io(device: &Path) -> Result<()> {
    run("losetup", &["--direct-io=on".as_ref(), device.as_os_str()])
}

/// Sets the loop device's `queue/rotational`: an emulated device tells the
/// kernel what it emulates (a disk that seeks, or flash), as the real one
/// would; the recorder sizes its files by it (`rtrec_engine::sizing`). A
/// loop device is given its backing device's value at each attach, so
/// this lasts as long as the device and leaves nothing to undo.
///
/// # Errors
/// [`Error::Io`] when the attribute cannot be written.
pub fn set_rotational(device: &Path, rotational: bool) -> Result<()> {
    let name = device
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let path = format!("/sys/block/{name}/queue/rotational");
    std::fs::write(&path, if rotational { "1" } else { "0" })
        .map_err(crate::error::io_err(format_args!("writing {path}")))
}

/// Detaches `device` if it is still backed by `image` (the undo of a loop
/// device); a detached device, or one now serving another file, is left
/// alone.
pub(crate) fn detach(device: &Path, image: &Path) -> Result<()> {
    if backing_file(device).as_deref() != Some(image) {
        return Ok(());
    }
    match run("losetup", &["-d".as_ref(), device.as_os_str()]) {
        // It may have been auto-cleared between the check and the call.
        Err(_) if backing_file(device).as_deref() != Some(image) => Ok(()),
        result => result,
    }
}
