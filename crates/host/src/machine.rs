//! Facts of the machine, read and never changed: the block device under a
//! path, the size of an ext4 journal, what the CPU, its clocks and the
//! memory are, how much memory this process may lock, whether it runs
//! under a user-mode emulator or in a virtual machine, and what the kernel
//! says of a block device's write cache and of an MMC card's type.
//! `rtrec doctor` judges them and the bench records them beside its
//! figures; both read them here, so a recorder that never benchmarks still
//! has them.
//!
//! Design choices:
//! - Every function reads `/proc`, `/sys` or (for the journal) the output
//!   of `dumpe2fs`, and answers `None` when the fact cannot be read: a
//!   caller says "unknown", never guesses.
//! - The parsers of kernel text are separate pure functions, tested on
//!   sample text.
//! - Nothing here goes through the journal: nothing is changed.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::mounts::MountEntry;

/// The first line of a file, trimmed; `None` when it cannot be read.
fn first_line(path: impl AsRef<Path>) -> Option<String> {
    fs::read_to_string(path)
        .ok()
        .map(|s| s.lines().next().unwrap_or("").trim().to_string())
}

/// The whole-disk block device name holding `path` (`loop0`, `vda`), from
/// `/sys/dev/block/MAJ:MIN`; `None` on tmpfs, network or overlay
/// filesystems.
pub fn block_device_of(path: &Path) -> Option<String> {
    let sys = fs::canonicalize(rtrec_sys::blockdev::sysfs_dir(
        fs::metadata(path).ok()?.dev(),
    ))
    .ok()?;
    let disk = if sys.join("partition").exists() {
        sys.parent()?.to_path_buf()
    } else {
        sys
    };
    Some(disk.file_name()?.to_string_lossy().into_owned())
}

/// Bytes written so far to the block device holding `path` (its partition
/// when it is one): the sectors written of `/sys/dev/block/MAJ:MIN/stat`
/// (its 7th field, 512-byte sectors whatever the device's block size),
/// counted by the kernel for every writer of the device. `None` on
/// tmpfs, network or overlay file systems.
pub fn device_bytes_written(path: &Path) -> Option<u64> {
    sectors_written(&device_stat(path)?).map(|s| s * 512)
}

/// The `stat` text of the block device holding `path`
/// (`/sys/dev/block/MAJ:MIN/stat`).
fn device_stat(path: &Path) -> Option<String> {
    let dev = fs::metadata(path).ok()?.dev();
    fs::read_to_string(rtrec_sys::blockdev::sysfs_dir(dev).join("stat")).ok()
}

/// Read requests completed so far by the block device holding `path`:
/// the first field of `/sys/dev/block/MAJ:MIN/stat`, counted by the
/// kernel for every reader of the device (a read the page cache had to
/// make before a partial write included). `None` where
/// [`device_bytes_written`] is.
pub fn device_reads(path: &Path) -> Option<u64> {
    device_stat(path)?.split_whitespace().next()?.parse().ok()
}

/// The sectors written of a block device's `stat` text (its 7th field).
fn sectors_written(stat: &str) -> Option<u64> {
    stat.split_whitespace().nth(6)?.parse().ok()
}

/// The device number of block device `name` (`vda`, `/dev/vda`) as
/// `MAJ:MIN`, from `/sys/block/NAME/dev`; `None` when it cannot be read.
pub fn device_number(name: &str) -> Option<String> {
    let name = name.trim_start_matches("/dev/");
    fs::read_to_string(format!("/sys/block/{name}/dev"))
        .ok()
        .map(|s| s.trim().to_string())
}

/// Bytes this process (all its threads, and those that ended) caused to
/// be sent to storage: `write_bytes` of `/proc/self/io`, counted when
/// pages are dirtied or written directly. `None` without task I/O
/// accounting.
pub fn process_write_bytes() -> Option<u64> {
    io_write_bytes(&fs::read_to_string("/proc/self/io").ok()?)
}

/// `write_bytes` of `/proc/PID/io` text.
fn io_write_bytes(io: &str) -> Option<u64> {
    io.lines()
        .find_map(|l| l.strip_prefix("write_bytes:"))?
        .trim()
        .parse()
        .ok()
}

/// Whether loop device `dev` (`loop0`) reads its file with direct I/O
/// (`/sys/block/DEV/loop/dio`); `None` when it cannot be read.
pub fn loop_direct_io(dev: &str) -> Option<bool> {
    first_line(format!("/sys/block/{dev}/loop/dio")).map(|d| d == "1")
}

/// The journal size of an ext4 mount from `dumpe2fs -h` (root, ext4 on a
/// block device); `None` when it cannot be read.
pub fn journal_bytes(m: &MountEntry) -> Option<u64> {
    if m.fstype != "ext4" || !m.source.starts_with("/dev/") {
        return None;
    }
    let out = Command::new("dumpe2fs")
        .arg("-h")
        .arg(&m.source)
        .stderr(Stdio::null())
        .output()
        .ok()?;
    dumpe2fs_journal_bytes(&String::from_utf8_lossy(&out.stdout))
}

/// The journal size in `dumpe2fs -h` text: `Total journal size:` (or
/// `Journal size:` of older e2fsprogs), `64M`, `1024k`.
pub fn dumpe2fs_journal_bytes(text: &str) -> Option<u64> {
    let v = text
        .lines()
        .find_map(|l| {
            l.strip_prefix("Total journal size:")
                .or_else(|| l.strip_prefix("Journal size:"))
        })?
        .trim();
    let (num, unit) = v.split_at(v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len()));
    let n: u64 = num.parse().ok()?;
    Some(match unit.trim() {
        "k" | "K" => n << 10,
        "M" => n << 20,
        "G" => n << 30,
        _ => n,
    })
}

/// `/proc/fs/jbd2/DEV-8/info` of an ext4 mount: the kernel's view of its
/// journal, readable where the device node is not (e.g. a VM that refuses
/// raw reads of its root disk). `None`: no journal is loaded for it.
pub fn jbd2_info(m: &MountEntry) -> Option<String> {
    let dev = m.source.strip_prefix("/dev/")?;
    fs::read_to_string(format!("/proc/fs/jbd2/{dev}-8/info")).ok()
}

/// The journal's size from jbd2's "each up to N blocks": the kernel caps a
/// transaction at a quarter of the journal, so the journal is about 4 × N
/// blocks (an estimate; callers say "about").
pub fn jbd2_journal_bytes(m: &MountEntry) -> Option<u64> {
    let blocks = jbd2_max_transaction_blocks(&jbd2_info(m)?)?;
    let block = fs::metadata(&m.target).ok()?.blksize();
    Some(blocks * 4 * block)
}

/// The N of jbd2's "N transactions (…), each up to N blocks" line.
pub fn jbd2_max_transaction_blocks(info: &str) -> Option<u64> {
    info.split("each up to ")
        .nth(1)?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The running kernel's release (`/proc/sys/kernel/osrelease`).
pub fn kernel_release() -> Option<String> {
    first_line("/proc/sys/kernel/osrelease")
}

/// The architecture the kernel was built for (`/proc/sys/kernel/arch`,
/// Linux 6.1 and later): unlike `uname -m`, a user-mode emulator does not
/// answer it for its guest, so it names the real machine.
pub fn kernel_arch() -> Option<String> {
    first_line("/proc/sys/kernel/arch").filter(|a| !a.is_empty())
}

/// The first CPU's model name from `/proc/cpuinfo`.
pub fn cpu_model() -> Option<String> {
    cpuinfo_field(&fs::read_to_string("/proc/cpuinfo").ok()?, "model name")
}

/// The first CPU's flags from `/proc/cpuinfo` (x86's `flags`, ARM's
/// `Features`); empty when it cannot be read.
pub fn cpu_flags() -> Vec<String> {
    let text = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    cpuinfo_field(&text, "flags")
        .or_else(|| cpuinfo_field(&text, "Features"))
        .map(|f| f.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

/// The value of the first `KEY : value` line of `/proc/cpuinfo` text.
pub fn cpuinfo_field(cpuinfo: &str, key: &str) -> Option<String> {
    cpuinfo.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == key).then(|| v.trim().to_string())
    })
}

/// The clock source the kernel's timekeeping reads
/// (`/sys/devices/system/clocksource/clocksource0/current_clocksource`:
/// `tsc`, `arch_sys_counter`, `hpet`, `kvm-clock`).
pub fn clocksource() -> Option<String> {
    first_line("/sys/devices/system/clocksource/clocksource0/current_clocksource")
}

/// A field of `/proc/meminfo`, bytes (`MemTotal`, `MemAvailable`).
pub fn meminfo_bytes(key: &str) -> Option<u64> {
    parse_meminfo(&fs::read_to_string("/proc/meminfo").ok()?, key)
}

/// A field of `/proc/meminfo` text, bytes (the kernel writes kB, which
/// are KiB).
pub fn parse_meminfo(meminfo: &str, key: &str) -> Option<u64> {
    meminfo.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        if k != key {
            return None;
        }
        let kib: u64 = v.split_whitespace().next()?.parse().ok()?;
        Some(kib * 1024)
    })
}

/// Whether a kernel built for `kernel` runs programs built for `program`
/// natively (Rust's `std::env::consts::ARCH` names; the kernel's
/// `x86_64`, `aarch64`, `armv7l`, …): the same architecture, or its
/// 32-bit compatibility mode (`x86` on `x86_64`, `arm` on `aarch64`).
pub fn runs_natively(kernel: &str, program: &str) -> bool {
    let kernel = match kernel {
        k if k.starts_with("armv") || k == "arm" => "arm",
        "i386" | "i486" | "i586" | "i686" => "x86",
        "arm64" => "aarch64",
        "ppc64le" => "powerpc64",
        k => k,
    };
    kernel == program
        || matches!(
            (kernel, program),
            ("x86_64", "x86") | ("aarch64", "arm") | ("powerpc64", "powerpc")
        )
}

/// Evidence that this process runs under a user-mode emulator (qemu-user),
/// in words; `None` when none is found. Three signs, any one suffices:
/// the kernel was built for an architecture that cannot run this program
/// natively ([`kernel_arch`], [`runs_natively`]); this process's name is
/// the emulator's (`/proc/self/comm` starts with `qemu-`, which qemu does
/// not hide); or `binfmt_misc` hands programs of this architecture to a
/// `qemu-ARCH` interpreter.
pub fn user_emulation() -> Option<String> {
    let arch = std::env::consts::ARCH;
    if let Some(k) = kernel_arch().filter(|k| !runs_natively(k, arch)) {
        return Some(format!("an {arch} program on an {k} kernel"));
    }
    if let Some(comm) = first_line("/proc/self/comm").filter(|c| c.starts_with("qemu-")) {
        return Some(format!("the process is {comm}"));
    }
    let qemu_arch = match arch {
        "x86" => "i386",
        a => a,
    };
    let entry = format!("/proc/sys/fs/binfmt_misc/qemu-{qemu_arch}");
    let text = fs::read_to_string(&entry).ok()?;
    text.lines()
        .next()
        .is_some_and(|l| l.trim() == "enabled")
        .then(|| format!("{entry} is enabled"))
}

/// The block device `dev`'s write cache as its kernel driver reports it:
/// `queue/write_cache` (`write back`: a volatile cache the kernel flushes;
/// `write through`: none, the kernel sends no flush) and `queue/fua`
/// (`true`: writes can bypass the cache with Forced Unit Access). `None`
/// for a file that cannot be read.
pub fn write_cache(dev: &str) -> (Option<String>, Option<bool>) {
    let q = format!("/sys/block/{dev}/queue");
    (
        first_line(format!("{q}/write_cache")).filter(|m| !m.is_empty()),
        first_line(format!("{q}/fua")).map(|f| f == "1"),
    )
}

/// The MMC core's type of card behind `mmcblkN` (`device/type`: `SD` or
/// `MMC`, the latter an eMMC or, rarely, a removable MMC card).
pub fn mmc_type(dev: &str) -> Option<String> {
    first_line(format!("/sys/block/{dev}/device/type")).filter(|t| !t.is_empty())
}

/// Signs of a virtual machine, as the kernel shows them to the guest.
#[derive(Clone, Debug, Default)]
pub struct MachineSigns {
    /// `/proc/cpuinfo`'s text (x86's `flags` line carries `hypervisor`
    /// in a guest; ARM's `Features` line has no such flag).
    pub cpuinfo: String,
    /// The device tree's root `compatible` (`/proc/device-tree/compatible`
    /// or `/sys/firmware/devicetree/base/compatible`), its NUL-separated
    /// strings as read; `None` on a machine without a device tree (x86,
    /// ACPI).
    pub dt_compatible: Option<String>,
    /// `/sys/hypervisor/type` (`xen`), where the kernel has it.
    pub hypervisor_type: Option<String>,
    /// DMI's `sys_vendor` and `product_name`, where present
    /// (`/sys/class/dmi` is absent on device-tree boards).
    pub dmi: Vec<String>,
}

impl MachineSigns {
    /// The signs of this machine.
    pub fn read() -> MachineSigns {
        let dt = [
            "/proc/device-tree/compatible",
            "/sys/firmware/devicetree/base/compatible",
        ]
        .iter()
        .find_map(|p| fs::read(p).ok())
        .map(|b| String::from_utf8_lossy(&b).into_owned());
        MachineSigns {
            cpuinfo: fs::read_to_string("/proc/cpuinfo").unwrap_or_default(),
            dt_compatible: dt,
            hypervisor_type: first_line("/sys/hypervisor/type").filter(|t| !t.is_empty()),
            dmi: ["sys_vendor", "product_name"]
                .iter()
                .filter_map(|f| first_line(format!("/sys/class/dmi/id/{f}")))
                .filter(|v| !v.is_empty())
                .collect(),
        }
    }

    /// Evidence of a virtual machine, in words; `None` when there is
    /// none. In order: the CPU's `hypervisor` flag (x86 guests; the
    /// evidence is then DMI's vendor and product, or the flag itself); the
    /// device tree of qemu's `virt` board (`linux,dummy-virt`, the machine
    /// of `qemu-system-aarch64/arm -M virt`, under TCG or KVM alike); a
    /// Xen guest (`/sys/hypervisor/type`); DMI naming a hypervisor's
    /// machine (an ARM guest booted through UEFI and ACPI has DMI and no
    /// device tree).
    pub fn virtual_machine(&self) -> Option<String> {
        const VM_VENDORS: [&str; 8] = [
            "QEMU",
            "KVM",
            "VMware",
            "VirtualBox",
            "innotek",
            "Xen",
            "Bochs",
            "Virtual Machine",
        ];
        let dmi = self.dmi.join(" ");
        let flagged = cpuinfo_field(&self.cpuinfo, "flags")
            .is_some_and(|f| f.split_whitespace().any(|f| f == "hypervisor"));
        if flagged {
            return Some(if dmi.is_empty() {
                "the CPU's hypervisor flag".into()
            } else {
                dmi
            });
        }
        let dt = self.dt_compatible.as_deref().unwrap_or_default();
        if dt.split('\0').any(|c| c.trim() == "linux,dummy-virt") {
            return Some("qemu virt machine (device tree linux,dummy-virt)".into());
        }
        if let Some(t) = &self.hypervisor_type {
            return Some(format!("{t} guest (/sys/hypervisor/type)"));
        }
        VM_VENDORS.iter().any(|v| dmi.contains(v)).then_some(dmi)
    }
}

/// Evidence that this machine is virtual ([`MachineSigns::virtual_machine`]).
pub fn virtual_machine() -> Option<String> {
    MachineSigns::read().virtual_machine()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_write_counters_are_read_from_the_kernels_text() {
        let stat = "  1184   0  81170   440  3321  1702 262672  9316  0  3788  9756  0 0 0 0 0 0\n";
        assert_eq!(sectors_written(stat), Some(262_672));
        assert_eq!(sectors_written("1 2 3"), None);
        let io = "rchar: 4092\nwchar: 3\nsyscr: 8\nsyscw: 1\nread_bytes: 0\nwrite_bytes: 4096\ncancelled_write_bytes: 0\n";
        assert_eq!(io_write_bytes(io), Some(4096));
        assert_eq!(io_write_bytes("rchar: 1\n"), None);
    }

    #[test]
    fn jbd2_info_gives_the_largest_transaction() {
        let info = "25055 transactions (25055 requested), each up to 10922 blocks\naverage: \n";
        assert_eq!(jbd2_max_transaction_blocks(info), Some(10922));
        assert_eq!(jbd2_max_transaction_blocks("average:\n"), None);
    }

    #[test]
    fn dumpe2fs_journal_size_reads_both_spellings_and_units() {
        assert_eq!(
            dumpe2fs_journal_bytes("Inode count: 5\nTotal journal size:       128M\n"),
            Some(128 << 20)
        );
        assert_eq!(
            dumpe2fs_journal_bytes("Journal size:             1024k\n"),
            Some(1 << 20)
        );
        assert_eq!(dumpe2fs_journal_bytes("Inode count: 5\n"), None);
    }

    #[test]
    fn meminfo_fields_are_bytes() {
        let t = "MemTotal:       24576000 kB\nMemAvailable:     512000 kB\n";
        assert_eq!(parse_meminfo(t, "MemAvailable"), Some(512_000 * 1024));
        assert_eq!(parse_meminfo(t, "MemTotal"), Some(24_576_000 * 1024));
        assert_eq!(parse_meminfo(t, "SwapTotal"), None);
    }

    #[test]
    fn cpuinfo_fields_are_found_by_exact_key() {
        let t = "processor\t: 0\nmodel name\t: Cortex-A53\nflags\t\t: fpu tsc constant_tsc\n";
        assert_eq!(
            cpuinfo_field(t, "model name").as_deref(),
            Some("Cortex-A53")
        );
        assert_eq!(
            cpuinfo_field(t, "flags").as_deref(),
            Some("fpu tsc constant_tsc")
        );
        assert_eq!(cpuinfo_field(t, "model"), None);
    }

    #[test]
    fn a_kernel_runs_its_own_and_its_compat_architecture_only() {
        assert!(runs_natively("x86_64", "x86_64"));
        assert!(runs_natively("x86_64", "x86"));
        assert!(runs_natively("aarch64", "aarch64"));
        assert!(runs_natively("aarch64", "arm"));
        assert!(runs_natively("armv7l", "arm"));
        assert!(!runs_natively("x86_64", "aarch64"));
        assert!(!runs_natively("x86_64", "arm"));
        assert!(!runs_natively("armv7l", "aarch64"));
    }

    #[test]
    fn a_virtual_machine_is_known_by_flag_device_tree_xen_or_dmi() {
        let signs = |cpuinfo: &str, dt: Option<&str>, dmi: &[&str]| MachineSigns {
            cpuinfo: cpuinfo.into(),
            dt_compatible: dt.map(str::to_string),
            hypervisor_type: None,
            dmi: dmi.iter().map(|s| s.to_string()).collect(),
        };
        let x86_guest = "processor\t: 0\nflags\t\t: fpu tsc hypervisor constant_tsc\n";
        assert_eq!(
            signs(x86_guest, None, &["QEMU", "Standard PC (Q35 + ICH9, 2009)"]).virtual_machine(),
            Some("QEMU Standard PC (Q35 + ICH9, 2009)".into())
        );
        assert_eq!(
            signs(x86_guest, None, &[]).virtual_machine(),
            Some("the CPU's hypervisor flag".into())
        );
        let x86_metal = "flags\t\t: fpu tsc constant_tsc\n";
        assert_eq!(
            signs(x86_metal, None, &["Dell Inc.", "PowerEdge R650"]).virtual_machine(),
            None
        );
        // qemu-system-aarch64 -M virt: ARM's cpuinfo has no hypervisor
        // flag, no DMI, and the device tree says it.
        let arm = "processor\t: 0\nBogoMIPS\t: 125.00\nFeatures\t: fp asimd evtstrm cpuid\n";
        assert_eq!(
            signs(arm, Some("linux,dummy-virt\0"), &[]).virtual_machine(),
            Some("qemu virt machine (device tree linux,dummy-virt)".into())
        );
        let pi = "raspberrypi,4-model-b\0brcm,bcm2711\0";
        assert_eq!(signs(arm, Some(pi), &[]).virtual_machine(), None);
        // An ARM guest through UEFI and ACPI: DMI, no device tree.
        assert_eq!(
            signs(arm, None, &["QEMU", "KVM Virtual Machine"]).virtual_machine(),
            Some("QEMU KVM Virtual Machine".into())
        );
        let xen = MachineSigns {
            hypervisor_type: Some("xen".into()),
            ..signs(arm, Some("xen,xenvm-4.17\0xen,xenvm\0"), &[])
        };
        assert_eq!(
            xen.virtual_machine(),
            Some("xen guest (/sys/hypervisor/type)".into())
        );
    }
}
