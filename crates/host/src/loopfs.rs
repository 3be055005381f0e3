//! Scratch ext4 file systems on loop devices, for benchmarks and tests: an
//! image file in a private directory, formatted and loop-mounted the way the
//! study mounts its recording partition, and removed again without a trace —
//! on drop, during a panic, and (through the [`journal`](crate::journal))
//! after the owner was killed.
//!
//! Also the privilege probe every crate's tests use to skip, with a reason,
//! on machines where they cannot run: [`privileged`], [`require_privileged`].
//!
//! Mounting goes through the `mount -o loop` command: it attaches the loop
//! device *and* marks it auto-clear in one step, so the kernel detaches it at
//! the last unmount, whatever happens to us in between. Unmounting is
//! [`crate::mounts`]'s, detaching (`losetup -d`) [`crate::loopdev`]'s.

use std::fs::{DirBuilder, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::allowlist::{LOOPFS_DIR_PREFIX, LOOPFS_IMAGE, LOOPFS_MOUNT};
use crate::change::Change;
use crate::emufs::{self, Emulator, EmulatorCommand};
use crate::error::{io_err, Error, Result};
use crate::journal::Journal;
use crate::loopdev::run;
use crate::mounts::{mount_at, MOUNTS_FILE};
use crate::tools;
pub use crate::tools::REQUIRE_PRIVILEGED_ENV;

/// Default size of the image: 1 GiB (sparse, so it costs only what is
/// written).
pub const DEFAULT_SIZE: u64 = 1 << 30;

/// Size of the image a bench run or a `record --device` trial works in:
/// 2 GiB (sparse), room for the longest case and a default recording.
pub const WORK_IMAGE_SIZE: u64 = 2 << 30;

/// Default ext4 journal size, as in the study (128 MB journal).
pub const DEFAULT_JOURNAL_MIB: u32 = 128;

/// Default mount options: the study's recording partition (S1).
pub const DEFAULT_MOUNT_OPTIONS: &str = "noatime,lazytime,delalloc,nodiscard,data=ordered";

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
    /// Format XFS (with reflinks) instead of ext4; `journal_mib` is then
    /// ignored and `mount_options` must be XFS's. Tests use it as the file
    /// system under an ext4 image, to snapshot that image atomically with
    /// `cp --reflink=always` (a power cut, frozen).
    pub xfs: bool,
    /// Serve the image through this emulated device (see
    /// [`crate::emufs`]) instead of straight from the disk under `parent`.
    pub emulator: Option<EmulatorCommand>,
    /// Start from a sparse copy of this ext4 image (`size` and
    /// `journal_mib` are then its own) instead of formatting a new one:
    /// the crash study's power-cut cycles mount each cut's crash image as
    /// the next cycle's card.
    pub from_image: Option<PathBuf>,
}

impl Default for LoopFsOptions {
    fn default() -> Self {
        LoopFsOptions {
            size: DEFAULT_SIZE,
            journal_mib: DEFAULT_JOURNAL_MIB,
            mount_options: DEFAULT_MOUNT_OPTIONS.to_string(),
            xfs: false,
            parent: None,
            emulator: None,
            from_image: None,
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
    /// The emulated device under the image, if any. After `journal`, so it
    /// is dropped (waited for) after the journal's undo ended it.
    emulator: Option<Emulator>,
}

static NEXT_DIR: AtomicU64 = AtomicU64::new(0);

/// Makes a new private directory (mode 0700) `rtrec-loopfs-<pid>-<n>` in
/// `parent`, journaled for removal; a name taken already (not ours: never
/// removed) is skipped.
fn private_dir(journal: &Journal, parent: &Path) -> Result<PathBuf> {
    loop {
        let dir = parent.join(format!(
            "{LOOPFS_DIR_PREFIX}{}-{}",
            std::process::id(),
            NEXT_DIR.fetch_add(1, Ordering::Relaxed)
        ));
        let id = journal.record(Change::RemoveDir { path: dir.clone() })?;
        match DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) => {
                // Not ours: it must not be removed.
                journal.forget(id)?;
                if e.kind() != io::ErrorKind::AlreadyExists {
                    return Err(io_err(format_args!("creating {}", dir.display()))(e));
                }
            }
        }
    }
}

impl LoopFs {
    /// Creates, formats and mounts an image, journaling in this process's
    /// journal of [`state_dir`](crate::journal::state_dir).
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
        let dir = private_dir(&journal, &parent)?;
        // From here on, returning an error drops `fs`, which undoes the
        // steps taken so far.
        let mut fs = LoopFs {
            journal,
            mount_point: dir.join(LOOPFS_MOUNT),
            image: dir.join(LOOPFS_IMAGE),
            device: None,
            emulator: None,
        };
        fs.make_image(opts)?;
        // With an emulated device, the loop device sits on the image as the
        // emulator serves it.
        let mut loop_image = fs.image.clone();
        if let Some(cmd) = &opts.emulator {
            let (emulator, served) = emufs::start(&fs.journal, &dir, &fs.image, cmd)?;
            fs.emulator = Some(emulator);
            loop_image = served;
        }
        fs.mount(&loop_image, opts)?;
        fs.record_device(loop_image)?;
        Ok(fs)
    }

    /// Creates the image file (sparse, `opts.size` bytes) and formats it,
    /// or copies `opts.from_image` (sparse).
    fn make_image(&self, opts: &LoopFsOptions) -> Result<()> {
        self.journal.record(Change::RemoveFile {
            path: self.image.clone(),
        })?;
        if let Some(from) = &opts.from_image {
            return run(
                "cp",
                &[
                    "--sparse=always".as_ref(),
                    from.as_os_str(),
                    self.image.as_os_str(),
                ],
            );
        }
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&self.image)
            .and_then(|f| f.set_len(opts.size))
            .map_err(io_err(format_args!("creating {}", self.image.display())))?;
        // Default features. lazy_itable_init=0: otherwise the kernel's
        // ext4lazyinit thread zeroes the inode tables in the background after
        // mounting, i.e. during the first measurement.
        if opts.xfs {
            run(
                "mkfs.xfs",
                &[
                    "-f".as_ref(),
                    "-q".as_ref(),
                    "-m".as_ref(),
                    "reflink=1".as_ref(),
                    self.image.as_os_str(),
                ],
            )
        } else {
            run(
                "mkfs.ext4",
                &[
                    "-F".as_ref(),
                    "-q".as_ref(),
                    "-J".as_ref(),
                    format!("size={}", opts.journal_mib).as_ref(),
                    "-E".as_ref(),
                    "nodiscard,lazy_itable_init=0".as_ref(),
                    self.image.as_os_str(),
                ],
            )
        }
    }

    /// Makes the mount point and mounts `loop_image` on it (`mount -o
    /// loop`, which attaches an auto-clear loop device).
    fn mount(&self, loop_image: &Path, opts: &LoopFsOptions) -> Result<()> {
        self.journal.record(Change::RemoveDir {
            path: self.mount_point.clone(),
        })?;
        DirBuilder::new()
            .mode(0o700)
            .create(&self.mount_point)
            .map_err(io_err(format_args!(
                "creating {}",
                self.mount_point.display()
            )))?;

        self.journal.record(Change::Mount {
            target: self.mount_point.clone(),
        })?;
        run(
            "mount",
            &[
                "-t".as_ref(),
                if opts.xfs { "xfs" } else { "ext4" }.as_ref(),
                "-o".as_ref(),
                format!("loop,{}", opts.mount_options).as_ref(),
                loop_image.as_os_str(),
                self.mount_point.as_os_str(),
            ],
        )
    }

    /// Finds the loop device the mount attached and journals it.
    fn record_device(&mut self, loop_image: PathBuf) -> Result<()> {
        // Only now is the device known. Until it is recorded, the Mount entry
        // covers it: `mount -o loop` made it auto-clear, so unmounting frees
        // it. Being newer, this entry is undone before the unmount; on a
        // device still in use `losetup -d` only marks it auto-clear (again),
        // and the unmount then detaches it.
        let device = mount_at(&self.mount_point)
            .map_err(io_err(format_args!("reading {MOUNTS_FILE}")))?
            .map(|m| m.source)
            .filter(|source| source.starts_with("/dev/loop"))
            .map(PathBuf::from)
            .ok_or_else(|| Error::Io {
                what: format!("finding the loop device of {}", self.mount_point.display()),
                source: io::Error::new(io::ErrorKind::NotFound, "not in /proc/self/mounts"),
            })?;
        self.journal.record(Change::LoopDevice {
            device: device.clone(),
            image: loop_image,
        })?;
        self.device = Some(device);
        Ok(())
    }

    /// The mount point: where to put files.
    pub fn path(&self) -> &Path {
        &self.mount_point
    }

    /// The loop device (`/dev/loopN`).
    pub fn device(&self) -> &Path {
        self.device.as_deref().expect("set by create")
    }

    /// The image file (on the disk; with an emulated device the loop
    /// device reads it through the emulator).
    pub fn image(&self) -> &Path {
        &self.image
    }

    /// The emulated device's stats file, if the image is served by one.
    pub fn emulator_stats(&self) -> Option<&Path> {
        self.emulator.as_ref().map(Emulator::stats_path)
    }

    /// The mount options in effect, as `/proc/self/mounts` shows them
    /// (`rw,lazytime,noatime,data=ordered`; the kernel omits defaults).
    ///
    /// # Errors
    /// `NotFound` if it is not mounted; the error of reading
    /// `/proc/self/mounts`.
    pub fn mount_options(&self) -> io::Result<String> {
        mount_at(&self.mount_point)?
            .map(|m| m.options)
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

/// Whether this process can make a [`LoopFs`]: root, `/dev/loop-control`,
/// and `mkfs.ext4`, `mount` and `losetup` on `PATH`.
///
/// # Errors
/// The first missing requirement, as a reason to print.
pub fn privileged() -> Result<(), String> {
    let euid = rtrec_sys::effective_uid();
    if euid != 0 {
        return Err(format!("not root (euid {euid})"));
    }
    if !Path::new("/dev/loop-control").exists() {
        return Err("no /dev/loop-control (is the loop module loaded?)".to_string());
    }
    if let Some(tool) = tools::first_missing(&[tools::MKFS_EXT4, tools::MOUNT, tools::LOSETUP]) {
        return Err(tool.missing_reason());
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
///     if !rtrec_host::loopfs::require_privileged("flusher_off_is_put_back") {
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
