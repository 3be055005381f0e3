//! The checks of the block device under DIR: what kind of device it is,
//! its write cache, its I/O scheduler and tunables, and (with `--probe`) its measured flush
//! latency; one function each (listed in [`CHECKS`], joined by
//! `super::checks`).

use std::fs;
use std::path::Path;

use rtrec_units::{format_duration, format_size_per_s};

use super::verdict::{read_trim, Area, Facts, Finding, Spec};

/// This group's heading.
const GROUP: Area = Area::Device;

/// The device checks in the report's order; each row sits above its function.
pub const CHECKS: &[Spec] = &[
    DEVICE_KIND,
    WRITE_CACHE,
    IO_SCHEDULER,
    IO_SCHEDULER_TUNABLES,
    BFQ_WEIGHT,
    DEVICE_PROBE,
];

/// A flush (4 KiB write + `fdatasync`) p99 above this is a warning: etcd's
/// published bound for its write-ahead log, the nearest published figure
/// for "a log that must be durable soon" (docs/devices.md, DEVICES.md S24).
pub const FLUSH_P99_WARN_NS: u64 = 10_000_000;

/// What kind of device a whole-disk name is; for an MMC block device
/// (`mmcblkN`) the MMC core's card type (`device/type`: `SD`, or `MMC` for
/// an eMMC) names it, `eMMC/SD` where it cannot be read.
pub fn device_kind_of(dev: &str, rotational: bool, mmc_type: Option<&str>) -> &'static str {
    if dev.starts_with("loop") {
        "loop"
    } else if dev.starts_with("mmcblk") {
        match mmc_type {
            Some("SD" | "SDcombo") => "SD card",
            Some("MMC") => "eMMC",
            _ => "eMMC/SD",
        }
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

/// The device under DIR, or the skip that says there is none.
fn device(f: &Facts) -> Result<&str, Finding> {
    f.device.as_deref().ok_or_else(|| {
        Finding::skip(
            "?",
            "no block device under this directory (tmpfs, network or overlay)",
        )
    })
}

/// `/sys/block/DEV/queue`.
fn queue(dev: &str) -> String {
    format!("/sys/block/{dev}/queue")
}

/// The scheduler in use (`?` when it cannot be read).
fn scheduler(dev: &str) -> String {
    rtrec_host::iosched::read_scheduler(dev).unwrap_or_else(|_| "?".into())
}

const DEVICE_KIND: Spec = Spec::new(GROUP, "device-kind", "kind of block device", device_kind);
/// `device-kind`: local flash passes; a loop image, an SD card or eMMC, a
/// disk or a virtual disk each warn with what to measure.
fn device_kind(f: &Facts) -> Finding {
    let dev = match device(f) {
        Ok(d) => d,
        Err(skip) => return skip,
    };
    let rotational = read_trim(format!("{}/rotational", queue(dev))).as_deref() == Some("1");
    let mmc_type = rtrec_host::machine::mmc_type(dev);
    let kind = device_kind_of(dev, rotational, mmc_type.as_deref());
    let found = format!("{dev}: {kind}");
    match kind {
        "loop" => {
            let backing = rtrec_host::loopdev::backing_file(&Path::new("/dev").join(dev))
                .map(|b| b.display().to_string())
                .unwrap_or_default();
            Finding::warn(
                format!("{dev}: loop ({backing})"),
                "an image file: latency is that of the filesystem and device under it",
                "record on the real device, or run `rtrec doctor` on the image's directory too",
            )
        }
        "SD card" | "eMMC" | "eMMC/SD" => Finding::warn(
            found,
            "flash with its own garbage collection: stalls of 100s of ms are common; measure with `rtrec bench`",
            "rtrec bench --dir DIR (on this device)",
        ),
        "rotational disk" => Finding::warn(
            found,
            "seeks add milliseconds whenever another reader or writer moves the head",
            "record on flash (SSD, NVMe, eMMC)",
        ),
        "virtio" => Finding::warn(
            found,
            "a virtual disk: the host's I/O and caches are in every figure",
            "measure on the target board itself",
        ),
        _ => Finding::pass(found, "a local flash device"),
    }
}

const WRITE_CACHE: Spec = Spec::new(
    GROUP,
    "write-cache",
    "the device's write cache",
    write_cache,
);
/// `write-cache`: what the device says of its write cache, and what that
/// means for a durable point.
fn write_cache(f: &Facts) -> Finding {
    let dev = match device(f) {
        Ok(d) => d,
        Err(skip) => return skip,
    };
    let (mode, fua) = rtrec_host::machine::write_cache(dev);
    judge_write_cache(mode.as_deref(), fua)
}

/// The judgment of [`write_cache`] from `queue/write_cache` and
/// `queue/fua`.
///
/// Design choice: every readable answer passes. A volatile cache is what
/// the durability contract is written for: a durable point is published
/// only after `fdatasync`, whose cache flush puts it on the media; what
/// breaks that is a mount without barriers (`mount-barrier` warns), and a
/// device that acknowledges a flush it did not do cannot be seen from
/// here (the crash-state study, docs/durability.md). What the cache costs
/// in latency is the flush that `--probe` measures. So the check says
/// which case the device is, and why the durable point holds in it.
fn judge_write_cache(mode: Option<&str>, fua: Option<bool>) -> Finding {
    let Some(mode) = mode else {
        return Finding::skip("?", "queue/write_cache cannot be read");
    };
    let found = match fua {
        Some(fua) => format!("{mode}, fua {}", u8::from(fua)),
        None => mode.to_string(),
    };
    match (mode, fua) {
        ("write through", _) => Finding::pass(
            found,
            "no volatile cache: a write is on the media when the device completes it, so a durable point needs no cache flush (the kernel sends none)",
        ),
        ("write back", Some(true)) => Finding::pass(
            found,
            "a volatile cache: a durable point is on the media only after the cache flush fdatasync sends (barriers on: mount-barrier); journal commits go through it with FUA",
        ),
        ("write back", _) => Finding::pass(
            found,
            "a volatile cache without FUA: a durable point is on the media only after the cache flush fdatasync sends (barriers on: mount-barrier), and each journal commit costs a second flush in place of FUA",
        ),
        _ => Finding::skip(found, "a write cache mode this check does not know"),
    }
}

const IO_SCHEDULER: Spec = Spec::new(GROUP, "io-scheduler", "I/O scheduler", io_scheduler);
/// `io-scheduler`: one that dispatches without idling.
fn io_scheduler(f: &Facts) -> Finding {
    let dev = match device(f) {
        Ok(d) => d,
        Err(skip) => return skip,
    };
    match scheduler(dev).as_str() {
        s @ ("mq-deadline" | "none" | "kyber") => Finding::pass(s, "bounded dispatch, no idling"),
        "bfq" => Finding::pass(
            "bfq",
            "fair between processes; pair it with `rtrec record --io-weight`",
        ),
        "?" => Finding::skip("?", "the scheduler file cannot be read"),
        other => Finding::warn(
            other,
            "a scheduler that may idle or reorder for throughput",
            format!("echo mq-deadline > {}/scheduler", queue(dev)),
        ),
    }
}

/// The scheduler's tunables, `name=value`, sorted.
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

const IO_SCHEDULER_TUNABLES: Spec = Spec::new(
    GROUP,
    "io-scheduler-tunables",
    "write-back throttling",
    io_scheduler_tunables,
);
/// `io-scheduler-tunables`: no write-back throttling (except under bfq).
fn io_scheduler_tunables(f: &Facts) -> Finding {
    let dev = match device(f) {
        Ok(d) => d,
        Err(skip) => return skip,
    };
    let q = queue(dev);
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
    match wbt.as_deref() {
        Some(w) if w != "0" && scheduler(dev) != "bfq" => Finding::warn(
            found,
            "write-back throttling holds writes back when reads are slow; the bench's figures were taken without it",
            format!("echo 0 > {q}/wbt_lat_usec"),
        ),
        _ => Finding::pass(found, "no throttling of writes in the block layer"),
    }
}

const BFQ_WEIGHT: Spec = Spec::new(
    GROUP,
    "bfq-weight",
    "BFQ offered for I/O weights",
    bfq_weight,
);
/// `bfq-weight`: BFQ offered, so I/O weights can work.
fn bfq_weight(f: &Facts) -> Finding {
    let dev = match device(f) {
        Ok(d) => d,
        Err(skip) => return skip,
    };
    let offered = read_trim(format!("{}/scheduler", queue(dev))).unwrap_or_default();
    if offered
        .split_whitespace()
        .any(|s| s.trim_matches(['[', ']']) == "bfq")
    {
        Finding::pass(
            "bfq offered",
            "`rtrec record --io-weight` can give the recorder a larger share",
        )
    } else {
        // The kernel-wide cause, from the one detection the tests and the
        // studies use (rtrec_host::features): no BFQ at all, an unloaded
        // module, or BFQ offered by other devices but not this one.
        match rtrec_host::features::detect(rtrec_host::features::Feature::Bfq) {
            Err(m) => Finding::warn(
                format!("offered: {offered}"),
                format!(
                    "{}, so I/O weights (`rtrec record --io-weight`) have no effect",
                    m.reason
                ),
                m.remedy,
            ),
            Ok(()) => Finding::warn(
                format!("offered: {offered}"),
                "this device does not offer BFQ, so I/O weights (`rtrec record --io-weight`) have no effect",
                "record on a device whose queue offers bfq",
            ),
        }
    }
}

/// Runs the short probe (`--probe`) in `dir`, which must exist: it writes
/// only inside it. The measured profile, checked by the same parser as any
/// profile, or why there is none.
pub fn run_probe(dir: &Path) -> Result<rtrec_emu::Profile, String> {
    if !dir.is_dir() {
        return Err(format!(
            "'{}' does not exist; the probe writes only inside DIR",
            dir.display()
        ));
    }
    let quiet = !std::io::IsTerminal::is_terminal(&std::io::stderr());
    let short = rtrec_emu::probe::Extent::SHORT;
    let r = rtrec_emu::probe::probe_extent(dir, "doctor", short, |step| {
        if !quiet {
            eprintln!("rtrec doctor: probe {step}");
        }
    })
    .map_err(|e| format!("the short probe in '{}' failed: {e}", dir.display()))?;
    rtrec_emu::Profile::from_file(r.profile, "measured by the probe").map_err(|e| e.to_string())
}

const DEVICE_PROBE: Spec = Spec::new(
    GROUP,
    "device-probe",
    "measured flush latency (--probe)",
    device_probe,
);
/// `device-probe`: with `--probe`, the flush p99 of the short probe
/// against [`FLUSH_P99_WARN_NS`]; without it, a skip naming the commands
/// that measure.
fn device_probe(f: &Facts) -> Finding {
    let p = match &f.probe {
        None => return Finding::skip(
            "not measured",
            "doctor reads settings only; `rtrec doctor --probe` measures briefly (16 MiB), `rtrec device probe DIR` in full (about 100 MiB), `rtrec bench --dir DIR` its write() latency",
        ),
        Some(Err(e)) if e.contains("does not exist") => return Finding::skip("not measured", e),
        Some(Err(e)) => {
            return Finding::warn(
                "probe failed",
                e,
                format!("rtrec device probe {}", f.dir.display()),
            )
        }
        Some(Ok(p)) => p,
    };
    let flush_p99 = p.flush_tail_ns.max(p.flush_ns);
    let found = format!(
        "write {}, read {}; flush {} median, {} p99 (above a 4 KiB write); 4 KiB write {}",
        format_size_per_s(p.write_bytes_per_s),
        format_size_per_s(p.read_bytes_per_s),
        format_duration(p.flush_ns),
        format_duration(flush_p99),
        format_duration(p.write_latency_ns)
    );
    if flush_p99 > FLUSH_P99_WARN_NS {
        Finding::warn(
            found,
            format!(
                "a flush p99 above {} (etcd's bound for its log): every jbd2 commit and fsync waits this long; the ring must ride out such stalls",
                format_duration(FLUSH_P99_WARN_NS)
            ),
            format!(
                "rtrec device probe {} -o board.json && rtrec bench --device board.json",
                f.dir.display()
            ),
        )
    } else {
        Finding::pass(
            found,
            format!(
                "flush p99 within {} (short probe: 16 MiB; `rtrec device probe` measures GC stalls over 64 MiB)",
                format_duration(FLUSH_P99_WARN_NS)
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::verdict::Status;

    #[test]
    fn devices_are_named_by_kind() {
        assert_eq!(device_kind_of("mmcblk0", false, Some("SD")), "SD card");
        assert_eq!(device_kind_of("mmcblk1", false, Some("MMC")), "eMMC");
        assert_eq!(device_kind_of("mmcblk0", false, None), "eMMC/SD");
        assert_eq!(device_kind_of("nvme0n1", false, None), "NVMe");
        assert_eq!(device_kind_of("vda", true, None), "virtio");
        assert_eq!(device_kind_of("loop3", false, None), "loop");
        assert_eq!(device_kind_of("sda", true, None), "rotational disk");
        assert_eq!(device_kind_of("sda", false, None), "SSD");
    }

    #[test]
    fn the_write_cache_is_said_as_the_kernel_says_it() {
        // qemu's SD card (sdhci-pci): no volatile cache.
        let sd = judge_write_cache(Some("write through"), Some(false));
        assert_eq!(
            (sd.status, sd.found.as_str()),
            (Status::Pass, "write through, fua 0")
        );
        assert!(sd.why.contains("no cache flush"), "{sd:?}");
        // An eMMC with a cache and FUA (qemu 10's emmc, most real ones).
        let emmc = judge_write_cache(Some("write back"), Some(true));
        assert_eq!(
            (emmc.status, emmc.found.as_str()),
            (Status::Pass, "write back, fua 1")
        );
        assert!(emmc.why.contains("fdatasync"), "{emmc:?}");
        let no_fua = judge_write_cache(Some("write back"), Some(false));
        assert!(no_fua.why.contains("without FUA"), "{no_fua:?}");
        assert_eq!(judge_write_cache(None, None).status, Status::Skip);
        assert_eq!(judge_write_cache(Some("odd"), None).status, Status::Skip);
    }
}
