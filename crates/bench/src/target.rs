//! Where the cases write: by default our own ext4 (an image file formatted
//! with a 128 MB journal and loop-mounted `noatime,lazytime,delalloc,
//! nodiscard`, data=ordered, as S1's recording partition), else `--dir` on
//! an existing filesystem, else (not root) a temporary directory. Also
//! gathers what the environment is — mount options, device stack, I/O
//! schedulers, journal size, read by `rtrec_host::machine` — and says
//! which of S1's conditions a target does not meet.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::Context;
use rtrec_emu::{DeviceArg, EmulatorStats};
use rtrec_host::emufs::EmulatorCommand;
use rtrec_host::loopdev;
use rtrec_host::loopfs::{self, LoopFs, LoopFsOptions};
use rtrec_host::machine::{self, block_device_of, journal_bytes};
use rtrec_host::mounts::{mount_of, read_mounts, MountEntry};

use crate::output::Warning;
use crate::report::Environment;

/// The emulator command serving `device`'s profile, run by this program;
/// `None` for `native`.
///
/// # Errors
/// The running executable cannot be found.
pub fn emulator(device: &DeviceArg) -> anyhow::Result<Option<EmulatorCommand>> {
    Ok(device
        .emulator_args()
        .map(EmulatorCommand::of_this_program)
        .transpose()?)
}

/// The filesystem under test, removed (unmounted, detached, deleted) when
/// dropped.
#[derive(Debug)]
pub struct Target {
    /// `loop-ext4`, `dir` or `temp-dir`.
    pub kind: &'static str,
    /// The directory the bench works in (created by us, removed after).
    pub work: PathBuf,
    // Declared before `loopfs` so the work directory goes first.
    cleanup: WorkDir,
    loopfs: Option<LoopFs>,
}

#[derive(Debug)]
struct WorkDir(Option<PathBuf>);

impl Drop for WorkDir {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = fs::remove_dir_all(&p);
        }
    }
}

/// Makes a fresh private directory `parent/rtrec-bench-<pid>-<n>`.
fn make_work_dir(parent: &Path) -> anyhow::Result<PathBuf> {
    for n in 0.. {
        let p = parent.join(format!("rtrec-bench-{}-{n}", std::process::id()));
        match fs::create_dir(&p) {
            Ok(()) => return Ok(p),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e).with_context(|| format!("creating '{}'", p.display())),
        }
    }
    unreachable!()
}

impl Target {
    /// Prepares the target. `dir`: `--dir`; `image_dir`: `--image-dir`.
    /// Warnings about unmet conditions are appended to `warnings`.
    ///
    /// # Errors
    /// The directory cannot be used, or making the image failed.
    pub fn prepare(
        dir: Option<&Path>,
        image_dir: Option<&Path>,
        device: Option<&DeviceArg>,
        warnings: &mut Vec<Warning>,
    ) -> anyhow::Result<Target> {
        let emulator = match device {
            Some(d) => emulator(d)?,
            None => None,
        };
        if let Some(d) = dir {
            let d = d
                .canonicalize()
                .with_context(|| format!("the directory '{}' cannot be used", d.display()))?;
            anyhow::ensure!(d.is_dir(), "'{}' is not a directory", d.display());
            if let Err(reason) = loopfs::privileged() {
                warnings.push(Warning::NotRoot {
                    reason,
                    fallback: false,
                });
            }
            let work = make_work_dir(&d)?;
            warnings.extend(conditions(&work));
            return Ok(Target {
                kind: "dir",
                work: work.clone(),
                cleanup: WorkDir(Some(work)),
                loopfs: None,
            });
        }
        match loopfs::privileged() {
            Ok(()) => {
                let opts = LoopFsOptions {
                    size: loopfs::WORK_IMAGE_SIZE,
                    parent: image_dir.map(Path::to_path_buf),
                    emulator,
                    ..LoopFsOptions::default()
                };
                let fs = LoopFs::create(&opts).context(
                    "making the ext4 image to run on (use --dir to run on an existing filesystem)",
                )?;
                if let Err(e) = loopdev::set_direct_io(fs.device()) {
                    warnings.push(Warning::LoopDirectIo(e.to_string()));
                }
                // An emulated disk is rotational to the kernel, as the real
                // one: the recorder sizes its files by it.
                if let Some(d) = device.filter(|d| !d.profile.is_native()) {
                    loopdev::set_rotational(fs.device(), d.profile.rotating())
                        .context("telling the kernel whether the emulated device seeks")?;
                }
                let work = make_work_dir(fs.path())?;
                warnings.extend(conditions(&work));
                Ok(Target {
                    kind: "loop-ext4",
                    work: work.clone(),
                    cleanup: WorkDir(Some(work)),
                    loopfs: Some(fs),
                })
            }
            Err(reason) if emulator.is_some() => {
                anyhow::bail!(
                    "an emulated device (--device) needs root and a loop device: {reason}"
                )
            }
            Err(reason) => {
                warnings.push(Warning::NotRoot {
                    reason,
                    fallback: true,
                });
                let parent = image_dir
                    .map(Path::to_path_buf)
                    .unwrap_or_else(std::env::temp_dir);
                let work = make_work_dir(&parent)?;
                warnings.extend(conditions(&work));
                Ok(Target {
                    kind: "temp-dir",
                    work: work.clone(),
                    cleanup: WorkDir(Some(work)),
                    loopfs: None,
                })
            }
        }
    }

    /// What the emulated device reports so far (its timing error), if the
    /// image is on one; `None` too when its stats cannot be read.
    pub fn emulator_stats(&self) -> Option<EmulatorStats> {
        let path = self.loopfs.as_ref()?.emulator_stats()?;
        rtrec_emu::read_stats(path).ok()
    }

    /// The loop device of our own image, if that is the target.
    pub fn loop_device(&self) -> Option<&Path> {
        self.loopfs.as_ref().map(|f| f.device())
    }

    /// Removes everything now, reporting failures (dropping only prints).
    ///
    /// # Errors
    /// The image could not be unmounted, detached or deleted; what is left
    /// stays in the journal for the next rtrec run or `rtrec tune --restore`.
    pub fn remove(mut self) -> anyhow::Result<()> {
        if let Some(p) = self.cleanup.0.take() {
            let _ = fs::remove_dir_all(p);
        }
        if let Some(fs) = self.loopfs.take() {
            fs.remove().context("removing the ext4 image")?;
        }
        Ok(())
    }
}

/// S1's conditions checked against a mount: one warning per condition not
/// met (`journal_bytes` when known).
pub fn unmet_conditions(m: &MountEntry, journal_bytes: Option<u64>) -> Vec<Warning> {
    let opts: Vec<&str> = m.options.split(',').collect();
    let has = |o: &str| opts.contains(&o);
    let mut w = Vec::new();
    let mut unmet = |what: &'static str, found: String| w.push(Warning::Condition { what, found });
    if m.fstype != "ext4" {
        unmet("filesystem ext4", m.fstype.clone());
    }
    if !has("noatime") {
        let atime = opts
            .iter()
            .find(|o| o.ends_with("atime"))
            .map_or("relatime (the default)", |o| *o);
        unmet("mount option noatime", atime.to_string());
    }
    if !has("lazytime") {
        unmet("mount option lazytime", "no lazytime".into());
    }
    if m.fstype == "ext4" {
        if has("nodelalloc") {
            unmet("mount option delalloc", "nodelalloc".into());
        }
        if has("discard") {
            unmet("mount option nodiscard", "discard".into());
        }
        if let Some(mode) = opts.iter().find_map(|o| o.strip_prefix("data=")) {
            if mode != "ordered" {
                unmet("journal mode data=ordered", format!("data={mode}"));
            }
        }
        match journal_bytes {
            Some(b) if b != 128 << 20 => unmet("a 128 MB journal", format!("{} MiB", b >> 20)),
            _ => {}
        }
    }
    w
}

fn conditions(path: &Path) -> Vec<Warning> {
    let mounts = read_mounts().unwrap_or_default();
    match mount_of(path, &mounts) {
        Some(m) => unmet_conditions(&m, journal_bytes(&m)),
        None => vec![Warning::Condition {
            what: "a known mount",
            found: "not in /proc/self/mounts".into(),
        }],
    }
}

fn scheduler(dev: &str) -> String {
    rtrec_host::iosched::read_scheduler(dev).unwrap_or_else(|_| "?".into())
}

/// Reads what the bench runs on. `vm_dirty` are the values found at
/// start.
pub fn environment(
    target: &Target,
    device: Option<&DeviceArg>,
    vm_dirty: crate::report::VmDirty,
    flusher_control: bool,
) -> Environment {
    let mounts = read_mounts().unwrap_or_default();
    let m = mount_of(&target.work, &mounts).unwrap_or_default();
    let cpu = machine::cpu_model().unwrap_or_else(|| "?".into());
    let memory_bytes = machine::meminfo_bytes("MemTotal").unwrap_or(0);
    let (device_text, io_scheduler) = match block_device_of(&target.work) {
        Some(dev) if dev.starts_with("loop") => {
            let backing = loopdev::backing_file(&Path::new("/dev").join(&dev))
                .map(|b| b.display().to_string())
                .unwrap_or_default();
            let dio = machine::loop_direct_io(&dev).unwrap_or(false);
            let under = block_device_of(Path::new(&backing));
            let desc = format!(
                "{dev} (image {backing}{}, direct I/O {})",
                under
                    .as_ref()
                    .map(|u| format!(" on {u}"))
                    .unwrap_or_default(),
                if dio { "on" } else { "off" }
            );
            let mut sched = format!("{dev}: {}", scheduler(&dev));
            if let Some(u) = under {
                sched.push_str(&format!("; {u}: {}", scheduler(&u)));
            }
            (desc, sched)
        }
        Some(dev) => (
            format!("{dev} ({})", m.source),
            format!("{dev}: {}", scheduler(&dev)),
        ),
        None => (m.source.clone(), "?".into()),
    };
    Environment {
        kernel: machine::kernel_release().unwrap_or_default(),
        cpu,
        cpus: std::thread::available_parallelism()
            .map(|n| n.get() as u32)
            .unwrap_or(1),
        memory_bytes,
        target: target.kind.to_string(),
        path: target.work.display().to_string(),
        filesystem: m.fstype.clone(),
        device: device_text,
        mount_options: m.options.clone(),
        io_scheduler,
        journal_bytes: journal_bytes(&m),
        device_profile: device.map_or_else(|| "native".to_string(), |d| d.profile.name.clone()),
        emulator: target.emulator_stats(),
        vm_dirty,
        flusher_control,
        rtrec_version: env!("CARGO_PKG_VERSION").to_string(),
        command_line: std::env::args().collect(),
        started_unix_s: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
        // Filled by the run, which knows what it asks for.
        rt: crate::producer::RtReport::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtrec_host::mounts::parse_mounts;

    const MOUNTS: &str = "/dev/vda / ext4 rw,relatime,discard 0 0\n\
        tmpfs /tmp tmpfs rw 0 0\n\
        /dev/loop0 /tmp/rtrec-loopfs-1-0/mnt ext4 rw,noatime,lazytime,data=ordered 0 0\n\
        /dev/loop1 /tmp/a\\040b ext4 rw,noatime,lazytime,data=writeback,nodelalloc 0 0\n";

    #[test]
    fn our_own_mount_meets_every_condition_and_others_are_named() {
        let m = parse_mounts(MOUNTS);
        assert!(unmet_conditions(&m[2], Some(128 << 20)).is_empty());
        let root: Vec<String> = unmet_conditions(&m[0], Some(64 << 20))
            .iter()
            .map(|w| w.to_string())
            .collect();
        assert_eq!(root.len(), 4, "{root:?}");
        assert!(root.iter().any(|w| w.contains("noatime")));
        assert!(root.iter().any(|w| w.contains("nodiscard")));
        assert!(root
            .iter()
            .any(|w| w.contains("128 MB journal") && w.contains("64 MiB")));
        let other: Vec<String> = unmet_conditions(&m[3], None)
            .iter()
            .map(|w| w.to_string())
            .collect();
        assert!(other.iter().any(|w| w.contains("data=writeback")));
        assert!(other.iter().any(|w| w.contains("nodelalloc")));
        let tmp = unmet_conditions(&m[1], None);
        assert!(tmp
            .iter()
            .any(|w| w.to_string().contains("filesystem ext4")));
    }
}
