//! Scratch ext4 file systems on loop devices, for benchmarks and tests: an
//! image file in a private directory, formatted and loop-mounted the way the
//! study mounts its recording partition, and removed again without a trace —
//! on drop, during a panic, and (through the [`state`](crate::state)
//! journal) after the owner was killed.
//!
//! Also the privilege probe every crate's tests use to skip, with a reason,
//! on machines where they cannot run: [`privileged`], [`require_privileged`].
//!
//! Mounting goes through the `mount -o loop` command: it attaches the loop
//! device *and* marks it auto-clear in one step, so the kernel detaches it at
//! the last unmount, whatever happens to us in between. Unmounting uses
//! `libc::umount2` directly, whose errno tells "not mounted" from "busy"
//! without parsing the messages of `umount(8)`; detaching uses `losetup -d`.

use std::ffi::{CString, OsStr};
use std::fs::{self, DirBuilder, OpenOptions};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::Duration;

use crate::state::{io_err, Change, Error, Journal, Result};

/// Default size of the image: 1 GiB (sparse, so it costs only what is
/// written).
pub const DEFAULT_SIZE: u64 = 1 << 30;

/// Default ext4 journal size, as in the study (128 MB journal).
pub const DEFAULT_JOURNAL_MIB: u32 = 128;

/// Default mount options: the study's recording partition (S1).
pub const DEFAULT_MOUNT_OPTIONS: &str = "noatime,lazytime,delalloc,nodiscard,data=ordered";

/// Set to `1` (as CI does) to make [`require_privileged`] fail a test
/// instead of skipping it.
pub const REQUIRE_PRIVILEGED_ENV: &str = "RTREC_REQUIRE_PRIVILEGED";

/// How to make a [`LoopFs`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoopFsOptions {
    /// Size of the image file in bytes (default [`DEFAULT_SIZE`]).
    pub size: u64,
    /// Size of the ext4 journal in MiB (default [`DEFAULT_JOURNAL_MIB`]).
    pub journal_mib: u32,
    /// Options for `mount -o loop,…` (default [`DEFAULT_MOUNT_OPTIONS`]).
    pub mount_options: String,
    /// Directory in which to make the private directory holding image and
    /// mount point (default [`std::env::temp_dir`]). Its file system is the
    /// one under the loop device.
    pub parent: Option<PathBuf>,
}

impl Default for LoopFsOptions {
    fn default() -> Self {
        LoopFsOptions {
            size: DEFAULT_SIZE,
            journal_mib: DEFAULT_JOURNAL_MIB,
            mount_options: DEFAULT_MOUNT_OPTIONS.to_string(),
            parent: None,
        }
    }
}

/// A loop-mounted ext4 image, unmounted, detached and deleted when dropped.
///
/// Layout: `<parent>/rtrec-loopfs-<pid>-<n>/` (mode 0700) holds `image.ext4`
/// and the mount point `mnt/`. Each step is recorded in the journal before
/// it is taken.
#[derive(Debug)]
pub struct LoopFs {
    journal: Journal,
    mount_point: PathBuf,
    image: PathBuf,
    /// Known once mounted.
    device: Option<PathBuf>,
}

static NEXT_DIR: AtomicU64 = AtomicU64::new(0);

impl LoopFs {
    /// Creates, formats and mounts an image, journaling in this process's
    /// journal of [`state_dir`](crate::state::state_dir).
    ///
    /// # Errors
    /// A step failed (I/O, or [`Error::Command`] from `mkfs.ext4` or
    /// `mount`); what was done before it is undone.
    pub fn create(opts: &LoopFsOptions) -> Result<LoopFs> {
        LoopFs::create_with(Journal::open()?, opts)
    }

    /// Like [`create`](LoopFs::create), recording in `journal`, which the
    /// `LoopFs` keeps (and whose entries it undoes on drop).
    ///
    /// # Errors
    /// As [`create`](LoopFs::create).
    pub fn create_with(journal: Journal, opts: &LoopFsOptions) -> Result<LoopFs> {
        let parent = opts.parent.clone().unwrap_or_else(std::env::temp_dir);
        // /proc/mounts shows the resolved path of the mount point.
        let parent = parent
            .canonicalize()
            .map_err(io_err(format_args!("resolving {}", parent.display())))?;
        let dir = loop {
            let dir = parent.join(format!(
                "rtrec-loopfs-{}-{}",
                std::process::id(),
                NEXT_DIR.fetch_add(1, Ordering::Relaxed)
            ));
            let id = journal.record(Change::RemoveDir { path: dir.clone() })?;
            match DirBuilder::new().mode(0o700).create(&dir) {
                Ok(()) => break dir,
                Err(e) => {
                    // Not ours: it must not be removed.
                    journal.forget(id)?;
                    if e.kind() != io::ErrorKind::AlreadyExists {
                        return Err(io_err(format_args!("creating {}", dir.display()))(e));
                    }
                }
            }
        };
        // From here on, returning an error drops `fs`, which undoes the
        // steps taken so far.
        let mut fs = LoopFs {
            journal,
            mount_point: dir.join("mnt"),
            image: dir.join("image.ext4"),
            device: None,
        };

        fs.journal.record(Change::RemoveFile {
            path: fs.image.clone(),
        })?;
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&fs.image)
            .and_then(|f| f.set_len(opts.size))
            .map_err(io_err(format_args!("creating {}", fs.image.display())))?;
        // Default features. lazy_itable_init=0: otherwise the kernel's
        // ext4lazyinit thread zeroes the inode tables in the background after
        // mounting, i.e. during the first measurement.
        run(
            "mkfs.ext4",
            &[
                "-F".as_ref(),
                "-q".as_ref(),
                "-J".as_ref(),
                format!("size={}", opts.journal_mib).as_ref(),
                "-E".as_ref(),
                "nodiscard,lazy_itable_init=0".as_ref(),
                fs.image.as_os_str(),
            ],
        )?;

        fs.journal.record(Change::RemoveDir {
            path: fs.mount_point.clone(),
        })?;
        DirBuilder::new()
            .mode(0o700)
            .create(&fs.mount_point)
            .map_err(io_err(format_args!(
                "creating {}",
                fs.mount_point.display()
            )))?;

        fs.journal.record(Change::Mount {
            target: fs.mount_point.clone(),
        })?;
        run(
            "mount",
            &[
                "-t".as_ref(),
                "ext4".as_ref(),
                "-o".as_ref(),
                format!("loop,{}", opts.mount_options).as_ref(),
                fs.image.as_os_str(),
                fs.mount_point.as_os_str(),
            ],
        )?;
        // Only now is the device known. Until it is recorded, the Mount entry
        // covers it: `mount -o loop` made it auto-clear, so unmounting frees
        // it. Being newer, this entry is undone before the unmount; on a
        // device still in use `losetup -d` only marks it auto-clear (again),
        // and the unmount then detaches it.
        let device = mount_entry(&fs.mount_point)
            .map_err(io_err("reading /proc/self/mounts"))?
            .map(|(source, _)| source)
            .filter(|source| source.starts_with("/dev/loop"))
            .map(PathBuf::from)
            .ok_or_else(|| Error::Io {
                what: format!("finding the loop device of {}", fs.mount_point.display()),
                source: io::Error::new(io::ErrorKind::NotFound, "not in /proc/self/mounts"),
            })?;
        fs.journal.record(Change::LoopDevice {
            device: device.clone(),
            image: fs.image.clone(),
        })?;
        fs.device = Some(device);
        Ok(fs)
    }

    /// The mount point: where to put files.
    pub fn path(&self) -> &Path {
        &self.mount_point
    }

    /// The loop device (`/dev/loopN`).
    pub fn device(&self) -> &Path {
        self.device.as_deref().expect("set by create")
    }

    /// The image file behind the loop device.
    pub fn image(&self) -> &Path {
        &self.image
    }

    /// The mount options in effect, as `/proc/self/mounts` shows them
    /// (`rw,lazytime,noatime,data=ordered`; the kernel omits defaults).
    ///
    /// # Errors
    /// `NotFound` if it is not mounted; the error of reading
    /// `/proc/self/mounts`.
    pub fn mount_options(&self) -> io::Result<String> {
        mount_entry(&self.mount_point)?
            .map(|(_, options)| options)
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "not mounted"))
    }

    /// Unmounts, detaches and deletes now, reporting failures (which
    /// dropping only prints).
    ///
    /// # Errors
    /// [`Error::Undo`] listing what could not be removed; it stays in the
    /// journal for a later restore.
    pub fn remove(self) -> Result<()> {
        self.journal.undo_all()
        // Drop then finds nothing left to undo.
    }
}

impl Drop for LoopFs {
    fn drop(&mut self) {
        if let Err(e) = self.journal.undo_all() {
            eprintln!("rtrec: {e}");
        }
    }
}

/// Source and options of the last mount on `mount_point` in
/// `/proc/self/mounts`.
fn mount_entry(mount_point: &Path) -> io::Result<Option<(String, String)>> {
    let mounts = fs::read_to_string("/proc/self/mounts")?;
    Ok(mounts.lines().rev().find_map(|line| {
        let mut fields = line.split(' ');
        let source = fields.next()?;
        let target = fields.next()?;
        let options = fields.nth(1)?;
        (Path::new(OsStr::from_bytes(&unescape(target))) == mount_point).then(|| {
            (
                String::from_utf8_lossy(&unescape(source)).into_owned(),
                options.to_string(),
            )
        })
    }))
}

/// Undoes the octal escapes (`\040` for a space) of `/proc/self/mounts`.
fn unescape(field: &str) -> Vec<u8> {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|b| (b'0'..=b'7').contains(b)));
        match (bytes[i], octal) {
            (b'\\', Some(d)) => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    out
}

/// Runs `program args…`, turning a failure into [`Error::Command`].
fn run(program: &str, args: &[&OsStr]) -> Result<()> {
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

/// Undoes [`Change::Mount`]: unmounts `target`. Nothing mounted there is
/// fine. A busy file system is retried for about half a second, then
/// detached lazily (`MNT_DETACH`: gone from the tree at once, freed — with its
/// loop device — when its last user closes it).
pub(crate) fn unmount(target: &Path) -> Result<()> {
    let what = || format!("unmounting {}", target.display());
    let c_target = CString::new(target.as_os_str().as_bytes()).map_err(|e| Error::Io {
        what: what(),
        source: io::Error::new(io::ErrorKind::InvalidInput, e),
    })?;
    let umount2 = |flags| {
        // SAFETY: `c_target` is a valid NUL-terminated path that outlives the
        // call; umount2 does not keep the pointer.
        if unsafe { libc::umount2(c_target.as_ptr(), flags) } == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    };
    let mut delay = Duration::from_millis(20);
    for _ in 0..5 {
        match umount2(0) {
            Ok(()) => return Ok(()),
            Err(e) => match e.raw_os_error() {
                // Not a mount point (never mounted, or already unmounted).
                Some(libc::EINVAL) | Some(libc::ENOENT) => return Ok(()),
                Some(libc::EBUSY) | Some(libc::EINTR) => {
                    thread::sleep(delay);
                    delay *= 2;
                }
                _ => return Err(io_err(what())(e)),
            },
        }
    }
    match umount2(libc::MNT_DETACH) {
        Ok(()) => {
            eprintln!(
                "rtrec: {} was busy; detached it lazily (it goes away when its last user closes it)",
                target.display()
            );
            Ok(())
        }
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Ok(()),
        Err(e) => Err(io_err(what())(e)),
    }
}

/// The backing file of loop device `device`, `None` when it is detached.
fn backing_file(device: &Path) -> Option<PathBuf> {
    let name = device.file_name()?;
    let path = Path::new("/sys/block").join(name).join("loop/backing_file");
    let text = fs::read_to_string(path).ok()?;
    let text = text.trim_end_matches('\n');
    Some(PathBuf::from(
        text.strip_suffix(" (deleted)").unwrap_or(text),
    ))
}

/// Undoes [`Change::LoopDevice`]: detaches `device` if it is still backed by
/// `image`; a detached device, or one now serving another file, is left
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

/// Whether this process can make a [`LoopFs`]: root, `/dev/loop-control`,
/// and `mkfs.ext4`, `mount` and `losetup` on `PATH`.
///
/// # Errors
/// The first missing requirement, as a reason to print.
pub fn privileged() -> Result<(), String> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let euid = unsafe { libc::geteuid() };
    if euid != 0 {
        return Err(format!("not root (euid {euid})"));
    }
    if !Path::new("/dev/loop-control").exists() {
        return Err("no /dev/loop-control (is the loop module loaded?)".to_string());
    }
    for tool in ["mkfs.ext4", "mount", "losetup"] {
        let on_path = std::env::var_os("PATH").is_some_and(|path| {
            std::env::split_paths(&path).any(|dir| {
                fs::metadata(dir.join(tool))
                    .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            })
        });
        if !on_path {
            return Err(format!("{tool} is not on PATH"));
        }
    }
    Ok(())
}

/// For tests that need root and a loop device (or change sysctls): true when
/// [`privileged`]; otherwise prints `skipped <test>: <reason>` on stderr and
/// returns false, so the test can return early.
///
/// ```no_run
/// #[test]
/// fn flusher_off_is_put_back() {
///     if !rtrec_sys::loopfs::require_privileged("flusher_off_is_put_back") {
///         return;
///     }
///     // ...
/// }
/// ```
///
/// # Panics
/// When not privileged and `RTREC_REQUIRE_PRIVILEGED=1` (as in CI), so that
/// a skip cannot pass for a success.
pub fn require_privileged(test: &str) -> bool {
    match privileged() {
        Ok(()) => true,
        Err(reason) if std::env::var_os(REQUIRE_PRIVILEGED_ENV).is_some_and(|v| v == "1") => {
            panic!(
                "{test} needs root and a loop device, and {REQUIRE_PRIVILEGED_ENV}=1 \
                 forbids skipping it: {reason}"
            )
        }
        Err(reason) => {
            eprintln!("skipped {test}: {reason}");
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mount_table_escapes_are_undone() {
        assert_eq!(unescape(r"/tmp/a\040b\134c"), b"/tmp/a b\\c");
        assert_eq!(unescape(r"/x\0"), b"/x\\0");
        assert_eq!(unescape("/plain"), b"/plain");
    }
}
