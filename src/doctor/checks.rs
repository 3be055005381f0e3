//! The checks of `rtrec doctor`, one function each: read a fact of the
//! filesystem, the device or the system, judge it against what real-time
//! recording needs, say why in one line and give the command that fixes it.
//!
//! Design choices:
//! - Every check reads files under `/proc` and `/sys` (and `dumpe2fs` for
//!   the ext4 journal, as the bench does); none changes anything and none
//!   needs root, so `doctor` can run beside a recording. A fact that cannot
//!   be read is `skip` with the reason, never a guess.
//! - The verdicts are conservative: `fail` only where a recording cannot
//!   meet its promise (not enough free space); everything that only makes
//!   latency worse or less predictable is `warn`.
//! - The parsers of kernel text are separate pure functions, tested on
//!   sample text.

use std::fs;
use std::path::Path;

use rtrec_host::machine;
use rtrec_host::mounts::MountEntry;
use serde::Serialize;

/// The verdict of one check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Fit for real-time recording.
    Pass,
    /// Works, but latency will be worse or less predictable.
    Warn,
    /// A recording cannot keep its promise here.
    Fail,
    /// The fact could not be read (the reason says why).
    Skip,
}

impl Status {
    /// The word printed in the table.
    pub fn word(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Warn => "WARN",
            Status::Fail => "FAIL",
            Status::Skip => "skip",
        }
    }
}

/// One check's result.
#[derive(Clone, Debug, Serialize)]
pub struct Check {
    /// Stable name (`mount-noatime`), for scripts.
    pub id: &'static str,
    /// `filesystem`, `device` or `system`.
    pub area: &'static str,
    /// The verdict.
    pub status: Status,
    /// What was found, as the kernel says it.
    pub found: String,
    /// One line: why this verdict.
    pub why: String,
    /// The command that fixes it (warn and fail only).
    pub fix: Option<String>,
}

fn check(
    id: &'static str,
    area: &'static str,
    status: Status,
    found: impl Into<String>,
    why: impl Into<String>,
    fix: Option<String>,
) -> Check {
    Check {
        id,
        area,
        status,
        found: found.into(),
        why: why.into(),
        fix: if matches!(status, Status::Warn | Status::Fail) {
            fix
        } else {
            None
        },
    }
}

fn read_trim(path: impl AsRef<Path>) -> Option<String> {
    fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

/// The checks of the filesystem holding `dir` (an existing directory),
/// for a recording of `planned` bytes.
pub fn filesystem(dir: &Path, m: Option<&MountEntry>, planned: u64) -> Vec<Check> {
    let area = "filesystem";
    let Some(m) = m else {
        return vec![check(
            "fs-type",
            area,
            Status::Skip,
            "?",
            "the directory is in no mount of /proc/self/mounts",
            None,
        )];
    };
    let mp = m.target.display().to_string();
    let opts: Vec<&str> = m.options.split(',').collect();
    let has = |o: &str| opts.contains(&o);
    let ext4 = m.fstype == "ext4";
    let remount = |o: &str| {
        Some(format!(
            "mount -o remount,{o} {mp} (and add {o} in /etc/fstab)"
        ))
    };
    let mut out = Vec::new();
    out.push(match m.fstype.as_str() {
        "ext4" => check("fs-type", area, Status::Pass, "ext4", "the filesystem the published studies measured", None),
        "xfs" | "btrfs" | "f2fs" => check(
            "fs-type", area, Status::Warn, &m.fstype,
            "a journaling filesystem, but the published figures are for ext4: measure with `rtrec bench --dir`",
            Some(format!("rtrec bench --dir {} --cases ALL", dir.display())),
        ),
        "tmpfs" | "ramfs" => check(
            "fs-type", area, Status::Warn, &m.fstype,
            "in memory: nothing survives a power cut",
            Some("record into a directory on a disk (--dir)".into()),
        ),
        other => check(
            "fs-type", area, Status::Warn, other,
            "not a filesystem rtrec was measured on",
            Some("record on ext4 (mkfs.ext4 -J size=128 …)".into()),
        ),
    });
    out.push(if has("noatime") {
        check(
            "mount-noatime",
            area,
            Status::Pass,
            "noatime",
            "reads do not write access times",
            None,
        )
    } else {
        let atime = opts
            .iter()
            .find(|o| o.ends_with("atime"))
            .map_or("relatime", |o| *o);
        check(
            "mount-noatime",
            area,
            Status::Warn,
            atime,
            "reads can write access times, extra metadata writes beside the recording",
            remount("noatime"),
        )
    });
    out.push(if has("lazytime") {
        check(
            "mount-lazytime",
            area,
            Status::Pass,
            "lazytime",
            "file times are kept in memory, not written on every write()",
            None,
        )
    } else {
        check(
            "mount-lazytime",
            area,
            Status::Warn,
            "no lazytime",
            "every write() may dirty the inode's mtime, a journal transaction per second",
            remount("lazytime"),
        )
    });
    out.push(if !ext4 {
        check(
            "mount-delalloc",
            area,
            Status::Skip,
            &m.fstype,
            "an ext4 option",
            None,
        )
    } else if has("nodelalloc") {
        check(
            "mount-delalloc",
            area,
            Status::Warn,
            "nodelalloc",
            "blocks are allocated inside write(), in the producer's latency",
            remount("delalloc"),
        )
    } else {
        check(
            "mount-delalloc",
            area,
            Status::Pass,
            "delalloc",
            "block allocation is deferred to write-back",
            None,
        )
    });
    out.push(if !ext4 {
        check(
            "mount-data-mode",
            area,
            Status::Skip,
            &m.fstype,
            "an ext4 option",
            None,
        )
    } else {
        match opts
            .iter()
            .find_map(|o| o.strip_prefix("data="))
            .unwrap_or("ordered")
        {
            "ordered" => check(
                "mount-data-mode",
                area,
                Status::Pass,
                "data=ordered",
                "the mode the studies measured",
                None,
            ),
            "journal" => check(
                "mount-data-mode",
                area,
                Status::Warn,
                "data=journal",
                "every byte is written twice, through the journal",
                Some(format!(
                    "mount with data=ordered in /etc/fstab ({mp}; needs a fresh mount)"
                )),
            ),
            other => check(
                "mount-data-mode",
                area,
                Status::Warn,
                format!("data={other}"),
                "after a crash a file may show stale blocks; the studies used data=ordered",
                Some(format!(
                    "mount with data=ordered in /etc/fstab ({mp}; needs a fresh mount)"
                )),
            ),
        }
    });
    out.push(if has("discard") {
        check(
            "mount-discard",
            area,
            Status::Warn,
            "discard",
            "online discard sends TRIMs on every delete, stalls on many devices (eMMC, SD)",
            Some(format!(
                "mount -o remount,nodiscard {mp} and run fstrim {mp} while idle"
            )),
        )
    } else {
        check(
            "mount-discard",
            area,
            Status::Pass,
            "nodiscard",
            "no TRIM in the write path (use fstrim while idle)",
            None,
        )
    });
    out.push(if !ext4 {
        check("journal-size", area, Status::Skip, &m.fstype, "an ext4 journal", None)
    } else {
        match machine::journal_bytes(m).or_else(|| machine::jbd2_journal_bytes(m)) {
            None if m.source.starts_with("/dev/") && machine::jbd2_info(m).is_none() => check("journal-size", area, Status::Warn,
                "no journal",
                format!("{} has no jbd2 journal: after a power cut only fsck repairs the metadata, and the durability contract assumes a journal", m.source),
                Some(format!("tune2fs -J size=128 {} (unmounted)", m.source))),
            None => check("journal-size", area, Status::Skip, "?",
                format!("dumpe2fs could not read the superblock of {} (needs root, e2fsprogs and the device node)", m.source), None),
            Some(b) if b < 128 << 20 => check("journal-size", area, Status::Warn, rtrec_units::format_size(b),
                "a journal smaller than the studies' 128 MiB forces commits sooner",
                Some(format!("tune2fs -O ^has_journal {0} && tune2fs -J size=128 {0} (unmounted)", m.source))),
            Some(b) => check("journal-size", area, Status::Pass, rtrec_units::format_size(b), "at least the studies' 128 MiB", None),
        }
    });
    out.push(free_space(dir, planned));
    out
}

fn free_space(dir: &Path, planned: u64) -> Check {
    let area = "filesystem";
    let avail = fs::File::open(dir).and_then(rtrec_sys::available_bytes);
    let p = rtrec_units::format_size(planned);
    match avail {
        Err(e) => check(
            "free-space",
            area,
            Status::Skip,
            "?",
            format!("statvfs failed: {e}"),
            None,
        ),
        Ok(a) if a < planned => check(
            "free-space",
            area,
            Status::Fail,
            rtrec_units::format_size(a),
            format!("less than the planned {p}: the recording would end early"),
            Some(format!(
                "free space in {} or plan less (--size)",
                dir.display()
            )),
        ),
        Ok(a) if a < planned.saturating_mul(2) => check(
            "free-space",
            area,
            Status::Warn,
            rtrec_units::format_size(a),
            format!("enough for {p}, not for a second file pool of the same size"),
            Some(format!(
                "free space in {} (`rtrec pool status` shows what the pool holds)",
                dir.display()
            )),
        ),
        Ok(a) => check(
            "free-space",
            area,
            Status::Pass,
            rtrec_units::format_size(a),
            format!("room for the planned {p} and its pool"),
            None,
        ),
    }
}

/// What kind of device a whole-disk name is.
pub fn device_kind(dev: &str, rotational: bool) -> &'static str {
    if dev.starts_with("loop") {
        "loop"
    } else if dev.starts_with("mmcblk") {
        "eMMC/SD"
    } else if dev.starts_with("nvme") {
        "NVMe"
    } else if dev.starts_with("vd") {
        "virtio"
    } else if rotational {
        "rotational disk"
    } else {
        "SSD"
    }
}

/// The checks of the block device `dev` (a whole disk, `vda`).
pub fn device(dev: Option<&str>) -> Vec<Check> {
    let area = "device";
    let Some(dev) = dev else {
        let skip = |id| {
            check(
                id,
                area,
                Status::Skip,
                "?",
                "no block device under this directory (tmpfs, network or overlay)",
                None,
            )
        };
        return vec![
            skip("device-kind"),
            skip("io-scheduler"),
            skip("io-scheduler-tunables"),
            skip("bfq-weight"),
        ];
    };
    let q = format!("/sys/block/{dev}/queue");
    let rotational = read_trim(format!("{q}/rotational")).as_deref() == Some("1");
    let kind = device_kind(dev, rotational);
    let mut out = Vec::new();
    out.push(match kind {
        "loop" => {
            let backing = read_trim(format!("/sys/block/{dev}/loop/backing_file")).unwrap_or_default();
            check("device-kind", area, Status::Warn, format!("{dev}: loop ({backing})"),
                "an image file: latency is that of the filesystem and device under it",
                Some("record on the real device, or run `rtrec doctor` on the image's directory too".into()))
        }
        "eMMC/SD" => check("device-kind", area, Status::Warn, format!("{dev}: {kind}"),
            "flash with its own garbage collection: stalls of 100s of ms are common; measure with `rtrec bench`",
            Some("rtrec bench --dir DIR (on this device)".into())),
        "rotational disk" => check("device-kind", area, Status::Warn, format!("{dev}: {kind}"),
            "seeks add milliseconds whenever another reader or writer moves the head", Some("record on flash (SSD, NVMe, eMMC)".into())),
        "virtio" => check("device-kind", area, Status::Warn, format!("{dev}: {kind}"),
            "a virtual disk: the host's I/O and caches are in every figure", Some("measure on the target board itself".into())),
        _ => check("device-kind", area, Status::Pass, format!("{dev}: {kind}"), "a local flash device", None),
    });
    let sched_text = read_trim(format!("{q}/scheduler")).unwrap_or_default();
    let sched = rtrec_host::iosched::read_scheduler(dev).unwrap_or_else(|_| "?".into());
    out.push(match sched.as_str() {
        "mq-deadline" | "none" | "kyber" => check(
            "io-scheduler",
            area,
            Status::Pass,
            &sched,
            "bounded dispatch, no idling",
            None,
        ),
        "bfq" => check(
            "io-scheduler",
            area,
            Status::Pass,
            "bfq",
            "fair between processes; pair it with --io-weight",
            None,
        ),
        "?" => check(
            "io-scheduler",
            area,
            Status::Skip,
            "?",
            "the scheduler file cannot be read",
            None,
        ),
        other => check(
            "io-scheduler",
            area,
            Status::Warn,
            other,
            "a scheduler that may idle or reorder for throughput",
            Some(format!("echo mq-deadline > {q}/scheduler")),
        ),
    });
    let tunables = scheduler_tunables(&q);
    let wbt = read_trim(format!("{q}/wbt_lat_usec"));
    let found = format!(
        "{}{}",
        if tunables.is_empty() {
            "no tunables".to_string()
        } else {
            tunables.join(" ")
        },
        wbt.as_deref()
            .map(|w| format!(" wbt_lat_usec={w}"))
            .unwrap_or_default()
    );
    out.push(match wbt.as_deref() {
        Some(w) if w != "0" && sched != "bfq" => check("io-scheduler-tunables", area, Status::Warn, found,
            "write-back throttling holds writes back when reads are slow; the bench's figures were taken without it",
            Some(format!("echo 0 > {q}/wbt_lat_usec"))),
        _ => check("io-scheduler-tunables", area, Status::Pass, found, "no throttling of writes in the block layer", None),
    });
    let offers_bfq = sched_text
        .split_whitespace()
        .any(|s| s.trim_matches(['[', ']']) == "bfq");
    out.push(if offers_bfq {
        check(
            "bfq-weight",
            area,
            Status::Pass,
            "bfq offered",
            "--io-weight can give the recorder a larger share",
            None,
        )
    } else {
        check(
            "bfq-weight",
            area,
            Status::Warn,
            format!("offered: {sched_text}"),
            "BFQ is not offered, so I/O weights (--io-weight) have no effect",
            Some("modprobe bfq".into()),
        )
    });
    out
}

fn scheduler_tunables(queue: &str) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(format!("{queue}/iosched"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter_map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    Some(format!("{name}={}", read_trim(e.path())?))
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// `Max locked memory` soft limit from `/proc/self/limits` text, bytes
/// (`None`: unlimited).
pub fn memlock_limit(limits: &str) -> Option<Option<u64>> {
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max locked memory"))?;
    let soft = line["Max locked memory".len()..]
        .split_whitespace()
        .next()?;
    Some(if soft == "unlimited" {
        None
    } else {
        Some(soft.parse().ok()?)
    })
}

/// The `cpu` line of `/proc/stat`: (total jiffies, steal jiffies).
pub fn cpu_times(stat: &str) -> Option<(u64, u64)> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    Some((v.iter().take(8).sum(), *v.get(7)?))
}

/// The system-wide checks. `ring_bytes`: what `--rt` must lock.
pub fn system(ring_bytes: u64) -> Vec<Check> {
    let area = "system";
    let mut out = Vec::new();
    out.push(match rtrec_host::sysctl::DirtySettings::read() {
        Err(e) => check(
            "vm-dirty",
            area,
            Status::Skip,
            "?",
            format!("cannot read vm.dirty_*: {e}"),
            None,
        ),
        Ok(d) => {
            let found = d.to_string();
            if d.dirty_writeback_centisecs == 0 {
                check(
                    "vm-dirty",
                    area,
                    Status::Warn,
                    found,
                    "periodic write-back is off (a killed benchmark's FOFF?)",
                    Some(
                        "rtrec tune --restore, or sysctl -w vm.dirty_writeback_centisecs=500"
                            .into(),
                    ),
                )
            } else {
                check(
                    "vm-dirty",
                    area,
                    Status::Pass,
                    found,
                    "rtrec's flush thread bounds dirty memory itself (--flush window)",
                    None,
                )
            }
        }
    });
    out.push(match rtrec_host::journal_status() {
        Err(e) => check(
            "journal-leftovers",
            area,
            Status::Skip,
            "?",
            e.to_string(),
            None,
        ),
        Ok(s) if s.is_clear() => check(
            "journal-leftovers",
            area,
            Status::Pass,
            "empty",
            "no setting is changed by rtrec now",
            None,
        ),
        Ok(s) => {
            let dead: usize = s
                .owners
                .iter()
                .filter(|o| !o.alive)
                .map(|o| o.changes.len())
                .sum();
            let live: usize = s
                .owners
                .iter()
                .filter(|o| o.alive)
                .map(|o| o.changes.len())
                .sum();
            let found = format!(
                "{dead} left by dead processes, {live} held by running ones{}",
                s.lock_holder
                    .as_deref()
                    .map(|h| format!(", lock held by {h}"))
                    .unwrap_or_default()
            );
            if dead > 0 {
                check(
                    "journal-leftovers",
                    area,
                    Status::Warn,
                    found,
                    "a killed rtrec left settings changed",
                    Some("rtrec tune --restore".into()),
                )
            } else {
                check(
                    "journal-leftovers",
                    area,
                    Status::Warn,
                    found,
                    "another rtrec is changing settings right now; measurements now would see them",
                    Some("wait for it (rtrec tune status)".into()),
                )
            }
        }
    });
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
    out.push(if governors.is_empty() {
        check(
            "cpu-governor",
            area,
            Status::Pass,
            "no cpufreq",
            "the CPU frequency is not scaled by Linux (fixed, or a VM)",
            None,
        )
    } else if governors.iter().all(|g| g == "performance") {
        check(
            "cpu-governor",
            area,
            Status::Pass,
            "performance",
            "no frequency ramp-up after idle",
            None,
        )
    } else {
        let mut g = governors.clone();
        g.dedup();
        check(
            "cpu-governor",
            area,
            Status::Warn,
            g.join(","),
            "after idle the CPU runs slow until the governor ramps up",
            Some("cpupower frequency-set -g performance".into()),
        )
    });
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
    out.push(match deepest {
        None => check("cpu-idle", area, Status::Pass, format!("driver {driver}, no states"), "no idle states to wake from", None),
        Some(us) if us > 100 => check("cpu-idle", area, Status::Warn, format!("driver {driver}, deepest exit {us} µs"),
            "waking from the deepest idle state adds to every period's lateness",
            Some("boot with processor.max_cstate=1 (or hold /dev/cpu_dma_latency at 0 while recording)".into())),
        Some(us) => check("cpu-idle", area, Status::Pass, format!("driver {driver}, deepest exit {us} µs"), "idle exit latencies are small", None),
    });
    let isolated = read_trim("/sys/devices/system/cpu/isolated").unwrap_or_default();
    let nohz = read_trim("/sys/devices/system/cpu/nohz_full").unwrap_or_default();
    let nohz = if nohz == "(null)" {
        String::new()
    } else {
        nohz
    };
    out.push(if isolated.is_empty() {
        check(
            "isolcpus",
            area,
            Status::Warn,
            "none",
            "the recorder shares every CPU with the rest of the system",
            Some("boot with isolcpus=N nohz_full=N and record with --rt --cpu N".into()),
        )
    } else {
        check(
            "isolcpus",
            area,
            Status::Pass,
            isolated.clone(),
            "CPUs kept free for the recorder (--cpu)",
            None,
        )
    });
    out.push(match (isolated.is_empty(), nohz.is_empty()) {
        (true, true) => check(
            "nohz_full",
            area,
            Status::Pass,
            "none",
            "not needed without isolated CPUs",
            None,
        ),
        (_, false) => check(
            "nohz_full",
            area,
            Status::Pass,
            nohz,
            "no scheduler tick on these CPUs while one task runs",
            None,
        ),
        (false, true) => check(
            "nohz_full",
            area,
            Status::Warn,
            "none",
            "the isolated CPUs still take the scheduler tick",
            Some(format!("boot with nohz_full={isolated}")),
        ),
    });
    let rt_runtime = read_trim("/proc/sys/kernel/sched_rt_runtime_us");
    out.push(match rt_runtime.as_deref() {
        None => check(
            "rt-throttling",
            area,
            Status::Skip,
            "?",
            "sched_rt_runtime_us cannot be read",
            None,
        ),
        Some("-1") => check(
            "rt-throttling",
            area,
            Status::Warn,
            "-1 (off)",
            "a runaway SCHED_FIFO task can starve the whole machine",
            Some("sysctl -w kernel.sched_rt_runtime_us=950000".into()),
        ),
        Some(v) => check(
            "rt-throttling",
            area,
            Status::Pass,
            format!("{v} µs of each second"),
            "RT tasks are throttled only if they run flat out; rtrec's sleep every period",
            None,
        ),
    });
    let version = read_trim("/proc/sys/kernel/version").unwrap_or_default();
    let rt =
        read_trim("/sys/kernel/realtime").as_deref() == Some("1") || version.contains("PREEMPT_RT");
    out.push(if rt {
        check(
            "preempt",
            area,
            Status::Pass,
            "PREEMPT_RT",
            "bounded scheduling latency for --rt",
            None,
        )
    } else {
        let model = if version.contains("PREEMPT_DYNAMIC") {
            "PREEMPT_DYNAMIC"
        } else if version.contains("PREEMPT") {
            "PREEMPT"
        } else {
            "no forced preemption"
        };
        check(
            "preempt",
            area,
            Status::Warn,
            model,
            "without PREEMPT_RT, kernel code can delay the producer's wake-up by milliseconds",
            Some("install a PREEMPT_RT kernel (Debian: apt install linux-image-rt-amd64)".into()),
        )
    });
    let thp_path = "/sys/kernel/mm/transparent_hugepage/enabled";
    out.push(match read_trim(thp_path) {
        None => check(
            "thp",
            area,
            Status::Pass,
            "not built",
            "no huge-page compaction stalls",
            None,
        ),
        Some(t) if t.contains("[always]") => check(
            "thp",
            area,
            Status::Warn,
            "always",
            "page faults may stall on compaction to make huge pages",
            Some(format!("echo madvise > {thp_path}")),
        ),
        Some(t) => check(
            "thp",
            area,
            Status::Pass,
            t.split(['[', ']']).nth(1).unwrap_or(&t).to_string(),
            "huge pages only where asked for",
            None,
        ),
    });
    let swaps = fs::read_to_string("/proc/swaps").unwrap_or_default();
    let n = swaps
        .lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .count();
    out.push(if n == 0 {
        check(
            "swap",
            area,
            Status::Pass,
            "none",
            "nothing of the recorder can be swapped out",
            None,
        )
    } else {
        check(
            "swap",
            area,
            Status::Warn,
            format!("{n} swap area(s)"),
            "without --rt (mlockall) the recorder's pages can be swapped out",
            Some("record with --rt, or swapoff -a".into()),
        )
    });
    let limits = fs::read_to_string("/proc/self/limits").unwrap_or_default();
    let root = rtrec_sys::effective_uid() == 0;
    out.push(match memlock_limit(&limits) {
        None => check(
            "memlock",
            area,
            Status::Skip,
            "?",
            "/proc/self/limits cannot be read",
            None,
        ),
        Some(None) => check(
            "memlock",
            area,
            Status::Pass,
            "unlimited",
            "--rt can lock all memory",
            None,
        ),
        Some(Some(_)) if root => check(
            "memlock",
            area,
            Status::Pass,
            "root",
            "root may lock memory beyond RLIMIT_MEMLOCK",
            None,
        ),
        Some(Some(b)) if b < ring_bytes * 2 => check(
            "memlock",
            area,
            Status::Warn,
            rtrec_units::format_size(b),
            format!(
                "less than --rt needs to lock (the {} ring and the program)",
                rtrec_units::format_size(ring_bytes)
            ),
            Some("ulimit -l unlimited (or memlock in /etc/security/limits.conf)".into()),
        ),
        Some(Some(b)) => check(
            "memlock",
            area,
            Status::Pass,
            rtrec_units::format_size(b),
            "enough for --rt",
            None,
        ),
    });
    let tracefs = Path::new(rtrec_host::tracefs::TRACEFS);
    out.push(if tracefs.join("trace").exists() {
        check(
            "tracefs",
            area,
            Status::Pass,
            rtrec_host::tracefs::TRACEFS,
            "--explain can attribute slow calls",
            None,
        )
    } else if !root {
        check(
            "tracefs",
            area,
            Status::Skip,
            "not root",
            "tracefs is root's",
            None,
        )
    } else {
        check(
            "tracefs",
            area,
            Status::Warn,
            "not mounted",
            "--explain cannot attribute slow calls",
            Some(format!(
                "mount -t tracefs nodev {}",
                rtrec_host::tracefs::TRACEFS
            )),
        )
    });
    let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let flagged = cpuinfo
        .lines()
        .any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == "hypervisor"));
    let vendor = [
        read_trim("/sys/hypervisor/type"),
        read_trim("/sys/class/dmi/id/sys_vendor"),
        read_trim("/sys/class/dmi/id/product_name"),
    ]
    .into_iter()
    .flatten()
    .filter(|s| !s.is_empty())
    .collect::<Vec<_>>()
    .join(" ");
    out.push(if flagged {
        check("hypervisor", area, Status::Warn, if vendor.is_empty() { "yes".into() } else { vendor },
            "a virtual machine: the host's scheduling shows in every latency (never trust one maximum)",
            Some("measure on the target hardware".into()))
    } else {
        check("hypervisor", area, Status::Pass, "bare metal", "no host between the recorder and the CPU", None)
    });
    out.push(steal(flagged));
    out
}

/// Steal time over a short sample (200 ms) and since boot.
fn steal(vm: bool) -> Check {
    let area = "system";
    let read = || {
        fs::read_to_string("/proc/stat")
            .ok()
            .as_deref()
            .and_then(cpu_times)
    };
    let Some((t0, s0)) = read() else {
        return check(
            "steal-time",
            area,
            Status::Skip,
            "?",
            "/proc/stat cannot be read",
            None,
        );
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
        check(
            "steal-time",
            area,
            Status::Warn,
            found,
            "the hypervisor takes the CPU away: periods will be late by whole time slices",
            Some("give the VM dedicated CPUs (pinning) or measure on hardware".into()),
        )
    } else if vm {
        check(
            "steal-time",
            area,
            Status::Pass,
            found,
            "the host gives this VM its CPUs for now",
            None,
        )
    } else {
        check(
            "steal-time",
            area,
            Status::Pass,
            found,
            "no hypervisor steals time",
            None,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memlock_limit_reads_the_soft_limit_or_unlimited() {
        let t = "Limit                     Soft Limit           Hard Limit           Units\n\
                 Max locked memory         8388608              8388608              bytes\n";
        assert_eq!(memlock_limit(t), Some(Some(8 << 20)));
        let u = "Max locked memory         unlimited            unlimited            bytes\n";
        assert_eq!(memlock_limit(u), Some(None));
        assert_eq!(memlock_limit("nothing"), None);
    }

    #[test]
    fn cpu_times_sum_the_first_eight_fields_and_take_steal() {
        let s = "cpu  10 0 20 100 5 1 2 7 0 0\ncpu0 1 2 3\n";
        assert_eq!(cpu_times(s), Some((145, 7)));
        assert_eq!(cpu_times("intr 1"), None);
    }

    #[test]
    fn devices_are_named_by_kind() {
        assert_eq!(device_kind("mmcblk0", false), "eMMC/SD");
        assert_eq!(device_kind("nvme0n1", false), "NVMe");
        assert_eq!(device_kind("vda", true), "virtio");
        assert_eq!(device_kind("loop3", false), "loop");
        assert_eq!(device_kind("sda", true), "rotational disk");
        assert_eq!(device_kind("sda", false), "SSD");
    }

    #[test]
    fn mount_options_are_judged_one_check_each() {
        let m = rtrec_host::mounts::parse_mounts(
            "/dev/vda / ext4 rw,relatime,discard,data=journal 0 0\n",
        );
        let dir = std::env::temp_dir();
        let c = filesystem(&dir, Some(&m[0]), 1);
        let status = |id: &str| c.iter().find(|c| c.id == id).unwrap().status;
        assert_eq!(status("fs-type"), Status::Pass);
        assert_eq!(status("mount-noatime"), Status::Warn);
        assert_eq!(status("mount-lazytime"), Status::Warn);
        assert_eq!(status("mount-delalloc"), Status::Pass);
        assert_eq!(status("mount-data-mode"), Status::Warn);
        assert_eq!(status("mount-discard"), Status::Warn);
        assert!(c
            .iter()
            .filter(|c| c.status == Status::Warn)
            .all(|c| c.fix.is_some()));
        assert!(c
            .iter()
            .filter(|c| c.status == Status::Pass)
            .all(|c| c.fix.is_none()));
    }
}
