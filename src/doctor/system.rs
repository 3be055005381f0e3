//! The system-wide checks: write-back settings, rtrec's own journal, CPU
//! frequency and idle states, isolation, the kernel's preemption and RT
//! throttling, memory (huge pages, swap, locking), tracefs, and whether a
//! hypervisor sits under it all; one function each (listed in
//! [`CHECKS`], joined by `super::checks`).

use std::fs;
use std::path::Path;

use rtrec_host::{machine, procstat};
use rtrec_units::format_size;

use super::verdict::{read_trim, Area, Facts, Finding, Spec};

/// This group's heading.
const GROUP: Area = Area::System;

/// The system checks in the report's order; each row sits above its function.
pub const CHECKS: &[Spec] = &[
    VM_DIRTY,
    JOURNAL_LEFTOVERS,
    CPU_GOVERNOR,
    CPU_IDLE,
    ISOLCPUS,
    NOHZ_FULL,
    RT_THROTTLING,
    PREEMPT,
    THP,
    SWAP,
    MEMLOCK,
    TRACEFS,
    HYPERVISOR,
    STEAL_TIME,
];

const VM_DIRTY: Spec = Spec::new(GROUP, "vm-dirty", "periodic write-back", vm_dirty);
/// `vm-dirty`: periodic write-back on.
fn vm_dirty(_: &Facts) -> Finding {
    match rtrec_host::sysctl::DirtySettings::read() {
        Err(e) => Finding::skip("?", format!("cannot read vm.dirty_*: {e}")),
        Ok(d) if d.dirty_writeback_centisecs == 0 => Finding::warn(
            d.to_string(),
            "periodic write-back is off (a killed benchmark's FOFF?)",
            "rtrec tune --restore, or sysctl -w vm.dirty_writeback_centisecs=500",
        ),
        Ok(d) => Finding::pass(
            d.to_string(),
            "rtrec's flush thread bounds dirty memory itself (`rtrec record --flush window`)",
        ),
    }
}

const JOURNAL_LEFTOVERS: Spec = Spec::new(
    GROUP,
    "journal-leftovers",
    "settings left changed by rtrec",
    journal_leftovers,
);
/// `journal-leftovers`: no setting left changed by a dead rtrec, none held
/// by a running one.
fn journal_leftovers(_: &Facts) -> Finding {
    let s = match rtrec_host::journal_status() {
        Err(e) => return Finding::skip("?", e.to_string()),
        Ok(s) if s.is_clear() => {
            return Finding::pass("empty", "no setting is changed by rtrec now")
        }
        Ok(s) => s,
    };
    let changes = |alive: bool| -> usize {
        s.owners
            .iter()
            .filter(|o| o.alive == alive)
            .map(|o| o.changes.len())
            .sum()
    };
    let (dead, live) = (changes(false), changes(true));
    let found = format!(
        "{dead} left by dead processes, {live} held by running ones{}",
        s.lock_holder
            .as_deref()
            .map(|h| format!(", lock held by {h}"))
            .unwrap_or_default()
    );
    if dead > 0 {
        Finding::warn(
            found,
            "a killed rtrec left settings changed",
            "rtrec tune --restore",
        )
    } else {
        Finding::warn(
            found,
            "another rtrec is changing settings right now; measurements now would see them",
            "wait for it (rtrec tune status)",
        )
    }
}

const CPU_GOVERNOR: Spec = Spec::new(
    GROUP,
    "cpu-governor",
    "CPU frequency governor",
    cpu_governor,
);
/// `cpu-governor`: `performance` on every CPU (or no cpufreq).
fn cpu_governor(_: &Facts) -> Finding {
    let governors: Vec<String> = (0..1024)
        .map_while(|c| {
            fs::metadata(format!("/sys/devices/system/cpu/cpu{c}"))
                .ok()
                .map(|_| c)
        })
        .filter_map(|c| {
            read_trim(format!(
                "/sys/devices/system/cpu/cpu{c}/cpufreq/scaling_governor"
            ))
        })
        .collect();
    if governors.is_empty() {
        Finding::pass(
            "no cpufreq",
            "the CPU frequency is not scaled by Linux (fixed, or a VM)",
        )
    } else if governors.iter().all(|g| g == "performance") {
        Finding::pass("performance", "no frequency ramp-up after idle")
    } else {
        let mut g = governors;
        g.dedup();
        Finding::warn(
            g.join(","),
            "after idle the CPU runs slow until the governor ramps up",
            "cpupower frequency-set -g performance",
        )
    }
}

const CPU_IDLE: Spec = Spec::new(
    GROUP,
    "cpu-idle",
    "deepest idle state's exit latency",
    cpu_idle,
);
/// `cpu-idle`: the deepest idle state's exit latency at most 100 µs.
fn cpu_idle(_: &Facts) -> Finding {
    let deepest = (0..16)
        .map_while(|s| {
            read_trim(format!(
                "/sys/devices/system/cpu/cpu0/cpuidle/state{s}/latency"
            ))
        })
        .filter_map(|l| l.parse::<u64>().ok())
        .max();
    let driver = read_trim("/sys/devices/system/cpu/cpuidle/current_driver")
        .unwrap_or_else(|| "none".into());
    match deepest {
        None => Finding::pass(
            format!("driver {driver}, no states"),
            "no idle states to wake from",
        ),
        Some(us) if us > 100 => Finding::warn(
            format!("driver {driver}, deepest exit {us} µs"),
            "waking from the deepest idle state adds to every period's lateness",
            "boot with processor.max_cstate=1 (or hold /dev/cpu_dma_latency at 0 while recording)",
        ),
        Some(us) => Finding::pass(
            format!("driver {driver}, deepest exit {us} µs"),
            "idle exit latencies are small",
        ),
    }
}

/// The isolated CPUs (`isolcpus=`), empty when none.
fn isolated() -> String {
    read_trim("/sys/devices/system/cpu/isolated").unwrap_or_default()
}

const ISOLCPUS: Spec = Spec::new(GROUP, "isolcpus", "isolated CPUs", isolcpus);
/// `isolcpus`: a CPU kept for the recorder.
fn isolcpus(_: &Facts) -> Finding {
    let isolated = isolated();
    if isolated.is_empty() {
        Finding::warn(
            "none",
            "the recorder shares every CPU with the rest of the system",
            "boot with isolcpus=N nohz_full=N and record with --rt --cpu N",
        )
    } else {
        Finding::pass(
            isolated,
            "CPUs kept free for the recorder (`rtrec record --cpu`)",
        )
    }
}

const NOHZ_FULL: Spec = Spec::new(GROUP, "nohz_full", "no tick on isolated CPUs", nohz_full);
/// `nohz_full`: isolated CPUs without the scheduler tick.
fn nohz_full(_: &Facts) -> Finding {
    let isolated = isolated();
    let nohz = read_trim("/sys/devices/system/cpu/nohz_full")
        .filter(|n| n != "(null)")
        .unwrap_or_default();
    match (isolated.is_empty(), nohz.is_empty()) {
        (true, true) => Finding::pass("none", "not needed without isolated CPUs"),
        (_, false) => Finding::pass(nohz, "no scheduler tick on these CPUs while one task runs"),
        (false, true) => Finding::warn(
            "none",
            "the isolated CPUs still take the scheduler tick",
            format!("boot with nohz_full={isolated}"),
        ),
    }
}

const RT_THROTTLING: Spec = Spec::new(GROUP, "rt-throttling", "RT throttling", rt_throttling);
/// `rt-throttling`: on, so a runaway RT task cannot hang the machine.
fn rt_throttling(_: &Facts) -> Finding {
    match read_trim("/proc/sys/kernel/sched_rt_runtime_us").as_deref() {
        None => Finding::skip("?", "sched_rt_runtime_us cannot be read"),
        Some("-1") => Finding::warn(
            "-1 (off)",
            "a runaway SCHED_FIFO task can starve the whole machine",
            "sysctl -w kernel.sched_rt_runtime_us=950000",
        ),
        Some(v) => Finding::pass(
            format!("{v} µs of each second"),
            "RT tasks are throttled only if they run flat out; rtrec's sleep every period",
        ),
    }
}

const PREEMPT: Spec = Spec::new(GROUP, "preempt", "kernel preemption model", preempt);
/// `preempt`: a PREEMPT_RT kernel, or at least full preemption.
///
/// Design choice: a `PREEMPT_DYNAMIC` kernel (Debian's, and this project's
/// development VM) picks its model at boot, so the fix for `none` or
/// `voluntary` is a boot parameter, `preempt=full`, not a new kernel. Under
/// `none` a SCHED_FIFO producer woken while another task is in a system
/// call waits until that task reaches a scheduling point: the endurance run
/// (docs/endurance.md) traced most of its missed periods to exactly that.
/// The model in force is read from the kernel command line (`preempt=`),
/// then from debugfs (`sched/preempt`, where readable), then from the
/// kernel's build configuration in `/boot`; where none of them says, the
/// finding says so instead of guessing.
fn preempt(_: &Facts) -> Finding {
    let version = read_trim("/proc/sys/kernel/version").unwrap_or_default();
    if read_trim("/sys/kernel/realtime").as_deref() == Some("1") || version.contains("PREEMPT_RT") {
        return Finding::pass(
            "PREEMPT_RT",
            "bounded scheduling latency for `rtrec record --rt`",
        );
    }
    let rt_kernel = rt_kernel_fix(std::env::consts::ARCH);
    if !version.contains("PREEMPT_DYNAMIC") {
        let model = if version.contains("PREEMPT") {
            "PREEMPT"
        } else {
            "no forced preemption"
        };
        return Finding::warn(
            model,
            "without PREEMPT_RT, kernel code can delay the producer's wake-up by milliseconds",
            rt_kernel,
        );
    }
    let release = read_trim("/proc/sys/kernel/osrelease").unwrap_or_default();
    let mode = dynamic_preempt_mode(
        &read_trim("/proc/cmdline").unwrap_or_default(),
        read_trim("/sys/kernel/debug/sched/preempt").as_deref(),
        fs::read_to_string(format!("/boot/config-{release}"))
            .ok()
            .as_deref(),
    );
    match mode {
        Some((m @ ("full" | "lazy"), from)) => Finding::pass(
            format!("PREEMPT_DYNAMIC, {m} ({from})"),
            "a woken SCHED_FIFO producer preempts kernel code at once (PREEMPT_RT bounds the rest)",
        ),
        Some((m, from)) => Finding::warn(
            format!("PREEMPT_DYNAMIC, {m} ({from})"),
            "a woken SCHED_FIFO producer waits until the task in a system call reaches a scheduling point: missed periods of milliseconds",
            format!("boot with preempt=full (this kernel switches at boot, no new kernel needed), or {rt_kernel}"),
        ),
        None => Finding::warn(
            "PREEMPT_DYNAMIC, model not known (no preempt= at boot, no /boot config)",
            "under the models none and voluntary a woken SCHED_FIFO producer waits for kernel code: missed periods of milliseconds",
            format!("boot with preempt=full (this kernel switches at boot, no new kernel needed), or {rt_kernel}"),
        ),
    }
}

/// How to get a PREEMPT_RT kernel on architecture `arch` (Rust's names):
/// Debian's RT flavour for it (`linux-image-rt-amd64`, `-rt-arm64`, and
/// `-rt-armmp` for 32-bit ARM), or a sentence that names no package where
/// Debian has none.
///
/// Design choice: the package is named by this program's architecture,
/// which is the userland's (the one `apt` installs for), not the
/// kernel's: a 32-bit userland on a 64-bit ARM kernel gets `armmp`.
fn rt_kernel_fix(arch: &str) -> String {
    let package = match arch {
        "x86_64" => "linux-image-rt-amd64",
        "aarch64" => "linux-image-rt-arm64",
        "arm" => "linux-image-rt-armmp",
        _ => return "install a PREEMPT_RT kernel (one built with CONFIG_PREEMPT_RT=y, from the distribution or the board's vendor)".into(),
    };
    format!("install a PREEMPT_RT kernel (Debian: apt install {package})")
}

/// The preemption model of a `PREEMPT_DYNAMIC` kernel and where it was
/// read: the command line's `preempt=`, debugfs's `sched/preempt` (the
/// model in parentheses, `none (voluntary) full lazy`), or the build's
/// default (`CONFIG_PREEMPT_NONE=y`, …, in the kernel's config file).
fn dynamic_preempt_mode(
    cmdline: &str,
    debugfs: Option<&str>,
    config: Option<&str>,
) -> Option<(&'static str, &'static str)> {
    const MODES: [&str; 4] = ["none", "voluntary", "full", "lazy"];
    let known = |m: &str| MODES.iter().copied().find(|k| *k == m);
    if let Some(m) = cmdline
        .split_whitespace()
        .take_while(|w| *w != "--")
        .filter_map(|w| w.strip_prefix("preempt="))
        .last()
        .and_then(known)
    {
        return Some((m, "preempt= on the kernel command line"));
    }
    if let Some(m) = debugfs
        .and_then(|d| d.split_whitespace().find(|w| w.starts_with('(')))
        .and_then(|w| known(w.trim_matches(|c| c == '(' || c == ')')))
    {
        return Some((m, "debugfs sched/preempt"));
    }
    let config = config?;
    let set = |opt: &str| config.lines().any(|l| l.trim() == format!("{opt}=y"));
    let m = if set("CONFIG_PREEMPT_LAZY") {
        "lazy"
    } else if set("CONFIG_PREEMPT") {
        "full"
    } else if set("CONFIG_PREEMPT_VOLUNTARY") {
        "voluntary"
    } else if set("CONFIG_PREEMPT_NONE") {
        "none"
    } else {
        return None;
    };
    Some((m, "the kernel's build default"))
}

const THP: Spec = Spec::new(GROUP, "thp", "transparent huge pages", thp);
/// `thp`: transparent huge pages not `always`.
fn thp(_: &Facts) -> Finding {
    let path = "/sys/kernel/mm/transparent_hugepage/enabled";
    match read_trim(path) {
        None => Finding::pass("not built", "no huge-page compaction stalls"),
        Some(t) if t.contains("[always]") => Finding::warn(
            "always",
            "page faults may stall on compaction to make huge pages",
            format!("echo madvise > {path}"),
        ),
        Some(t) => Finding::pass(
            t.split(['[', ']']).nth(1).unwrap_or(&t).to_string(),
            "huge pages only where asked for",
        ),
    }
}

const SWAP: Spec = Spec::new(GROUP, "swap", "swap", swap);
/// `swap`: none, or `--rt` to lock the recorder in memory.
fn swap(_: &Facts) -> Finding {
    let swaps = fs::read_to_string("/proc/swaps").unwrap_or_default();
    let n = swaps
        .lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .count();
    if n == 0 {
        Finding::pass("none", "nothing of the recorder can be swapped out")
    } else {
        Finding::warn(
            format!("{n} swap area(s)"),
            "without `rtrec record --rt` (mlockall) the recorder's pages can be swapped out",
            "record with --rt, or swapoff -a",
        )
    }
}

const MEMLOCK: Spec = Spec::new(GROUP, "memlock", "RLIMIT_MEMLOCK for record --rt", memlock);
/// `memlock`: RLIMIT_MEMLOCK room for what `--rt` locks (the ring and the
/// program; root is exempt).
fn memlock(f: &Facts) -> Finding {
    match rtrec_sys::memlock_limit() {
        None => Finding::pass("unlimited", "`rtrec record --rt` can lock all memory"),
        Some(_) if rtrec_sys::effective_uid() == 0 => {
            Finding::pass("root", "root may lock memory beyond RLIMIT_MEMLOCK")
        }
        Some(b) if b < f.ring_bytes * 2 => Finding::warn(
            format_size(b),
            format!(
                "less than `rtrec record --rt` needs to lock (the {} ring and the program)",
                format_size(f.ring_bytes)
            ),
            "ulimit -l unlimited (or memlock in /etc/security/limits.conf)",
        ),
        Some(b) => Finding::pass(format_size(b), "enough for `rtrec record --rt`"),
    }
}

const TRACEFS: Spec = Spec::new(GROUP, "tracefs", "tracefs for record --explain", tracefs);
/// `tracefs`: mounted, so `--explain` can attribute slow calls.
fn tracefs(_: &Facts) -> Finding {
    let path = rtrec_host::tracefs::TRACEFS;
    if let Err(m) = rtrec_host::features::detect(rtrec_host::features::Feature::Tracefs) {
        return Finding::warn(
            m.reason.clone(),
            "`rtrec record --explain` cannot attribute slow calls",
            m.remedy,
        );
    }
    if Path::new(path).join("trace").exists() {
        Finding::pass(path, "`rtrec record --explain` can attribute slow calls")
    } else if rtrec_sys::effective_uid() != 0 {
        Finding::skip("not root", "tracefs is root's")
    } else {
        Finding::warn(
            "not mounted",
            "`rtrec record --explain` cannot attribute slow calls",
            format!("mount -t tracefs nodev {path}"),
        )
    }
}

const HYPERVISOR: Spec = Spec::new(GROUP, "hypervisor", "virtual machine", hypervisor);
/// `hypervisor`: bare metal.
///
/// Design choice: a virtual machine is known by what its kernel shows the
/// guest ([`rtrec_host::machine::MachineSigns::virtual_machine`]): x86's
/// `hypervisor` CPU flag, which ARM's cpuinfo has no counterpart of, so on
/// ARM and other device-tree machines also the device tree of qemu's
/// `virt` board, a Xen guest's `/sys/hypervisor/type`, and DMI naming a
/// hypervisor's machine (where DMI exists: device-tree boards have none).
/// Whether qemu runs the guest under KVM or translates it (TCG) the guest
/// cannot tell; either way its timings are not the board's.
fn hypervisor(_: &Facts) -> Finding {
    judge_machine(machine::virtual_machine())
}

/// The judgment of [`hypervisor`] from the evidence of a virtual machine.
fn judge_machine(evidence: Option<String>) -> Finding {
    match evidence {
        None => Finding::pass(
            "bare metal",
            "no sign of a host between the recorder and the CPU (CPU flag, device tree, DMI)",
        ),
        Some(e) => Finding::warn(
            e,
            "a virtual machine: the host's scheduling (or qemu's translation) shows in every latency (never trust one maximum)",
            "measure on the target hardware",
        ),
    }
}

const STEAL_TIME: Spec = Spec::new(
    GROUP,
    "steal-time",
    "CPU time stolen by a hypervisor",
    steal_time,
);
/// `steal-time`: under 1 % over a short sample (200 ms) and since boot.
fn steal_time(_: &Facts) -> Finding {
    // (total ticks, steal ticks) of the `cpu` line.
    let read = || procstat::stat().map(|s| (s.all.total(), s.all.steal));
    let Some((t0, s0)) = read() else {
        return Finding::skip("?", "/proc/stat cannot be read");
    };
    std::thread::sleep(std::time::Duration::from_millis(200));
    let (t1, s1) = read().unwrap_or((t0, s0));
    let pct = |s: u64, t: u64| {
        if t == 0 {
            0.0
        } else {
            100.0 * s as f64 / t as f64
        }
    };
    let now = pct(s1 - s0, t1 - t0);
    let boot = pct(s0, t0);
    let found = format!("{now:.1}% now, {boot:.2}% since boot");
    if now >= 1.0 || boot >= 1.0 {
        Finding::warn(
            found,
            "the hypervisor takes the CPU away: periods will be late by whole time slices",
            "give the VM dedicated CPUs (pinning) or measure on hardware",
        )
    } else if machine::virtual_machine().is_some() {
        Finding::pass(found, "the host gives this VM its CPUs for now")
    } else {
        Finding::pass(found, "no hypervisor steals time")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::verdict::Status;

    #[test]
    fn preempt_mode_comes_from_the_command_line_then_debugfs_then_the_build() {
        let cfg = "CONFIG_PREEMPT_BUILD=y\nCONFIG_PREEMPT_NONE=y\n# CONFIG_PREEMPT is not set\n";
        let from_cmdline = "preempt= on the kernel command line";
        assert_eq!(
            dynamic_preempt_mode(
                "quiet preempt=full ro",
                Some("(none) voluntary full lazy"),
                Some(cfg)
            ),
            Some(("full", from_cmdline))
        );
        // The last preempt= counts, as for the kernel; words after `--` are init's.
        assert_eq!(
            dynamic_preempt_mode("preempt=none preempt=lazy -- preempt=full", None, None),
            Some(("lazy", from_cmdline))
        );
        assert_eq!(
            dynamic_preempt_mode("quiet", Some("none voluntary (full) lazy"), Some(cfg)),
            Some(("full", "debugfs sched/preempt"))
        );
        assert_eq!(
            dynamic_preempt_mode("quiet", None, Some(cfg)),
            Some(("none", "the kernel's build default"))
        );
        assert_eq!(
            dynamic_preempt_mode("preempt=bogus", None, Some("CONFIG_PREEMPT_VOLUNTARY=y")),
            Some(("voluntary", "the kernel's build default"))
        );
        assert_eq!(dynamic_preempt_mode("quiet", None, None), None);
        assert_eq!(
            dynamic_preempt_mode("quiet", None, Some("CONFIG_HZ=250")),
            None
        );
    }

    #[test]
    fn the_rt_kernel_package_is_named_by_architecture() {
        assert!(rt_kernel_fix("x86_64").ends_with("apt install linux-image-rt-amd64)"));
        assert!(rt_kernel_fix("aarch64").ends_with("apt install linux-image-rt-arm64)"));
        assert!(rt_kernel_fix("arm").ends_with("apt install linux-image-rt-armmp)"));
        let other = rt_kernel_fix("riscv64");
        assert!(
            other.contains("CONFIG_PREEMPT_RT=y") && !other.contains("apt"),
            "{other}"
        );
    }

    #[test]
    fn a_virtual_machine_warns_with_its_evidence_and_bare_metal_passes() {
        let vm = judge_machine(Some(
            "qemu virt machine (device tree linux,dummy-virt)".into(),
        ));
        assert_eq!(
            (vm.status, vm.found.as_str()),
            (
                Status::Warn,
                "qemu virt machine (device tree linux,dummy-virt)"
            )
        );
        let metal = judge_machine(None);
        assert_eq!(
            (metal.status, metal.found.as_str()),
            (Status::Pass, "bare metal")
        );
    }
}
