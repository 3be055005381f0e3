//! The checks of the filesystem under DIR: its type, its mount options, its
//! journal and its free space, one function each (listed in
//! [`CHECKS`], joined by `super::checks`).

use std::fs;

use rtrec_host::machine;
use rtrec_host::mounts::MountEntry;
use rtrec_units::format_size;

use super::verdict::{Area, Facts, Finding, Spec};

/// This group's heading.
const GROUP: Area = Area::Filesystem;

/// The filesystem checks in the report's order; each row sits above its function.
pub const CHECKS: &[Spec] = &[
    FS_TYPE,
    MOUNT_RW,
    MOUNT_NOATIME,
    MOUNT_LAZYTIME,
    MOUNT_DELALLOC,
    MOUNT_DATA_MODE,
    MOUNT_BARRIER,
    MOUNT_DISCARD,
    JOURNAL_SIZE,
    FREE_SPACE,
];

/// The mount under DIR, or the skip that says there is none.
fn mount(f: &Facts) -> Result<&MountEntry, Finding> {
    f.mount
        .as_ref()
        .ok_or_else(|| Finding::skip("?", "the directory is in no mount of /proc/self/mounts"))
}

/// The mount's options, one per entry.
fn options(m: &MountEntry) -> Vec<&str> {
    m.options.split(',').collect()
}

fn has(m: &MountEntry, option: &str) -> bool {
    options(m).contains(&option)
}

/// The fix that remounts with `option` and keeps it.
fn remount(m: &MountEntry, option: &str) -> String {
    format!(
        "mount -o remount,{option} {0} (and add {option} in /etc/fstab)",
        m.target.display()
    )
}

/// The skip of an ext4-only check on another filesystem.
fn ext4_only(m: &MountEntry, what: &str) -> Option<Finding> {
    (m.fstype != "ext4").then(|| Finding::skip(&m.fstype, what))
}

const FS_TYPE: Spec = Spec::new(GROUP, "fs-type", "filesystem type", fs_type);
/// `fs-type`: ext4, the filesystem the published figures are for.
fn fs_type(f: &Facts) -> Finding {
    let m = match mount(f) {
        Ok(m) => m,
        Err(skip) => return skip,
    };
    match m.fstype.as_str() {
        "ext4" => Finding::pass("ext4", "the filesystem the published studies measured"),
        "xfs" | "btrfs" | "f2fs" => Finding::warn(
            &m.fstype,
            "a journaling filesystem, but the published figures are for ext4: measure with `rtrec bench --dir`",
            format!("rtrec bench --dir {} --cases ALL", f.checked.display()),
        ),
        "tmpfs" | "ramfs" => Finding::warn(
            &m.fstype,
            "in memory: nothing survives a power cut",
            "record into a directory on a disk (--dir)",
        ),
        other => Finding::warn(
            other,
            "not a filesystem rtrec was measured on",
            "record on ext4 (mkfs.ext4 -J size=128 …)",
        ),
    }
}

const MOUNT_RW: Spec = Spec::new(GROUP, "mount-rw", "mounted read-write", read_write);
/// `mount-rw`: a read-only mount cannot take a recording at all.
fn read_write(f: &Facts) -> Finding {
    let m = match mount(f) {
        Ok(m) => m,
        Err(skip) => return skip,
    };
    if has(m, "ro") {
        Finding::fail(
            "ro",
            "the filesystem is mounted read-only: a recording cannot create its files",
            format!("mount -o remount,rw {}", m.target.display()),
        )
    } else {
        Finding::pass("rw", "files can be created and written")
    }
}

const MOUNT_NOATIME: Spec = Spec::new(GROUP, "mount-noatime", "no access-time writes", noatime);
/// `mount-noatime`: reads must not write access times.
fn noatime(f: &Facts) -> Finding {
    let m = match mount(f) {
        Ok(m) => m,
        Err(skip) => return skip,
    };
    if has(m, "noatime") {
        return Finding::pass("noatime", "reads do not write access times");
    }
    let opts = options(m);
    let atime = opts
        .iter()
        .find(|o| o.ends_with("atime"))
        .map_or("relatime", |o| *o);
    Finding::warn(
        atime,
        "reads can write access times, extra metadata writes beside the recording",
        remount(m, "noatime"),
    )
}

const MOUNT_LAZYTIME: Spec = Spec::new(
    GROUP,
    "mount-lazytime",
    "file times kept in memory",
    lazytime,
);
/// `mount-lazytime`: file times kept in memory.
fn lazytime(f: &Facts) -> Finding {
    let m = match mount(f) {
        Ok(m) => m,
        Err(skip) => return skip,
    };
    if has(m, "lazytime") {
        return Finding::pass(
            "lazytime",
            "file times are kept in memory, not written on every write()",
        );
    }
    // What a dirtied mtime costs depends on the file system: a journal
    // commit where there is a journal; a metadata write elsewhere; nothing
    // on a file system that lives in memory (the finding of issue 33: the
    // doctor spoke of a journal on tmpfs).
    let cost =
        match m.fstype.as_str() {
            "tmpfs" | "ramfs" => return Finding::skip(
                &m.fstype,
                "a file system in memory: file times never reach storage, lazytime changes nothing",
            ),
            "ext4" | "ext3" | "xfs" | "jfs" | "f2fs" => "a journal transaction per second",
            "btrfs" => "a copy-on-write metadata update per commit",
            _ => "an inode write to storage per write-back",
        };
    Finding::warn(
        "no lazytime",
        format!("every write() may dirty the inode's mtime, {cost}"),
        remount(m, "lazytime"),
    )
}

const MOUNT_DELALLOC: Spec = Spec::new(
    GROUP,
    "mount-delalloc",
    "delayed allocation (ext4)",
    delalloc,
);
/// `mount-delalloc`: ext4 allocates blocks at write-back, not in write().
fn delalloc(f: &Facts) -> Finding {
    let m = match mount(f) {
        Ok(m) => m,
        Err(skip) => return skip,
    };
    if let Some(skip) = ext4_only(m, "an ext4 option") {
        return skip;
    }
    if has(m, "nodelalloc") {
        Finding::warn(
            "nodelalloc",
            "blocks are allocated inside write(), in the producer's latency",
            remount(m, "delalloc"),
        )
    } else {
        Finding::pass("delalloc", "block allocation is deferred to write-back")
    }
}

const MOUNT_DATA_MODE: Spec = Spec::new(GROUP, "mount-data-mode", "data=ordered (ext4)", data_mode);
/// `mount-data-mode`: ext4's `data=ordered`, as the studies.
fn data_mode(f: &Facts) -> Finding {
    let m = match mount(f) {
        Ok(m) => m,
        Err(skip) => return skip,
    };
    if let Some(skip) = ext4_only(m, "an ext4 option") {
        return skip;
    }
    let fresh_mount = format!(
        "mount with data=ordered in /etc/fstab ({}; needs a fresh mount)",
        m.target.display()
    );
    match options(m)
        .iter()
        .find_map(|o| o.strip_prefix("data="))
        .unwrap_or("ordered")
    {
        "ordered" => Finding::pass("data=ordered", "the mode the studies measured"),
        "journal" => Finding::warn(
            "data=journal",
            "every byte is written twice, through the journal",
            fresh_mount,
        ),
        other => Finding::warn(
            format!("data={other}"),
            "after a crash a file may show stale blocks; the studies used data=ordered",
            fresh_mount,
        ),
    }
}

const MOUNT_BARRIER: Spec = Spec::new(GROUP, "mount-barrier", "flushes reach the device", barrier);
/// `mount-barrier`: flushes reach the device (no `nobarrier`, no
/// `barrier=0`) where the device has a cache to flush.
///
/// Without barriers the filesystem no longer sends a cache flush down at
/// `fsync` and at a journal commit: on a card with a volatile write cache
/// (`queue/write_cache` says `write back`: most eMMC) the writes of a
/// durable point may still be only in that cache when the power goes, and
/// journal blocks may reach the media before the data they order. A device
/// that says `write through` has no such cache: the kernel sends it no
/// flush either way, so barriers change nothing there and the check says
/// so rather than claim a cache the device lacks. `data=writeback` is
/// judged by `mount-data-mode`.
fn barrier(f: &Facts) -> Finding {
    let m = match mount(f) {
        Ok(m) => m,
        Err(skip) => return skip,
    };
    let cache = f.device.as_deref().and_then(|d| machine::write_cache(d).0);
    judge_barrier(m, cache.as_deref())
}

/// The judgment of [`barrier`] from the mount and the device's
/// `queue/write_cache` (`None`: not known).
fn judge_barrier(m: &MountEntry, cache: Option<&str>) -> Finding {
    let off = options(m)
        .into_iter()
        .find(|o| matches!(*o, "nobarrier" | "barrier=0"));
    let through = cache == Some("write through");
    match off {
        Some(o) if through => Finding::pass(
            o,
            format!("{o}, but the device has no volatile cache (queue/write_cache: write through): a completed write is on the media, there is nothing to flush"),
        ),
        Some(o) => Finding::warn(
            o,
            format!(
                "{o}: fsync no longer flushes the device's write cache ({}), so a published durable point is not durable",
                cache.map_or("if it has one".into(), |c| format!("queue/write_cache: {c}"))
            ),
            format!(
                "mount with barriers in /etc/fstab (remove {o} for {}; needs a fresh mount)",
                m.target.display()
            ),
        ),
        None if through => Finding::pass(
            "barrier",
            "the device has no volatile cache (queue/write_cache: write through): a completed write is on the media, and no flush is needed (the kernel sends none)",
        ),
        None => Finding::pass(
            "barrier",
            format!(
                "fsync flushes the device's write cache ({}): a durable point is on the media",
                cache.map_or("if it has one".into(), |c| format!("queue/write_cache: {c}"))
            ),
        ),
    }
}

const MOUNT_DISCARD: Spec = Spec::new(GROUP, "mount-discard", "no online discard", discard);
/// `mount-discard`: no online TRIM in the write path.
fn discard(f: &Facts) -> Finding {
    let m = match mount(f) {
        Ok(m) => m,
        Err(skip) => return skip,
    };
    if has(m, "discard") {
        let mp = m.target.display();
        Finding::warn(
            "discard",
            "online discard sends TRIMs on every delete, stalls on many devices (eMMC, SD)",
            format!("mount -o remount,nodiscard {mp} and run fstrim {mp} while idle"),
        )
    } else {
        Finding::pass(
            "nodiscard",
            "no TRIM in the write path (use fstrim while idle)",
        )
    }
}

const JOURNAL_SIZE: Spec = Spec::new(GROUP, "journal-size", "ext4 journal size", journal_size);
/// `journal-size`: an ext4 journal of at least the studies' 128 MiB.
fn journal_size(f: &Facts) -> Finding {
    let m = match mount(f) {
        Ok(m) => m,
        Err(skip) => return skip,
    };
    if let Some(skip) = ext4_only(m, "an ext4 journal") {
        return skip;
    }
    match machine::journal_bytes(m).or_else(|| machine::jbd2_journal_bytes(m)) {
        None if m.source.starts_with("/dev/") && machine::jbd2_info(m).is_none() => Finding::warn(
            "no journal",
            format!("{} has no jbd2 journal: after a power cut only fsck repairs the metadata, and the durability contract assumes a journal", m.source),
            format!("tune2fs -J size=128 {} (unmounted)", m.source),
        ),
        None => Finding::skip(
            "?",
            format!("dumpe2fs could not read the superblock of {} (needs root, e2fsprogs and the device node)", m.source),
        ),
        Some(b) if b < 128 << 20 => Finding::warn(
            format_size(b),
            "a journal smaller than the studies' 128 MiB forces commits sooner",
            format!("tune2fs -O ^has_journal {0} && tune2fs -J size=128 {0} (unmounted)", m.source),
        ),
        Some(b) => Finding::pass(format_size(b), "at least the studies' 128 MiB"),
    }
}

const FREE_SPACE: Spec = Spec::new(
    GROUP,
    "free-space",
    "free space for the planned recording",
    free_space,
);
/// `free-space`: room for the planned recording, and for its pool; and
/// the file size an open-ended recording gets here, by the same function
/// `record` calls (`rtrec_engine::sizing::open_ended_file_size`), so the
/// two agree on what fits.
fn free_space(f: &Facts) -> Finding {
    let dir = &f.checked;
    match fs::File::open(dir).and_then(rtrec_sys::available_bytes) {
        Err(e) => Finding::skip("?", format!("statvfs failed: {e}")),
        // rtrec_sys::available_bytes's answer for a file system that
        // reports no capacity (FAT through FUSE).
        Ok(u64::MAX) => Finding::warn(
            "unknown",
            "the file system reports no capacity: rtrec refuses nothing for its size, and a full card ends a recording at its first failed write",
            format!("check the free space of {} yourself (df shows 0 for such a file system)", dir.display()),
        ),
        Ok(a) => free_space_of(a, f.planned_bytes, dir),
    }
}

/// [`free_space`]'s verdict for `avail` bytes free.
fn free_space_of(avail: u64, planned: u64, dir: &std::path::Path) -> Finding {
    let p = format_size(planned);
    let files = match rtrec_engine::sizing::open_ended_file_size(avail) {
        Err(_) => {
            return Finding::fail(
                format_size(avail),
                format!(
                    "an open-ended `rtrec record` without --file-size refuses here: its files default to a quarter of the free space and at least {}",
                    format_size(rtrec_engine::sizing::MIN_DEFAULT_FILE_SIZE)
                ),
                format!(
                    "free space in {} or give `rtrec record --file-size` (a file and the next one must fit)",
                    dir.display()
                ),
            )
        }
        Ok(s) if s.from == Some(rtrec_engine::SizeFrom::SmallCard) => format!(
            "open-ended recordings get files of {} (a quarter of the free space)",
            format_size(s.file_size)
        ),
        Ok(s) => format!(
            "open-ended recordings get files of {}",
            format_size(s.file_size)
        ),
    };
    if avail < planned {
        Finding::fail(
            format_size(avail),
            format!("less than the planned {p}: the recording would end early; {files}"),
            format!(
                "free space in {} or plan a smaller recording (--planned)",
                dir.display()
            ),
        )
    } else if avail < planned.saturating_mul(2) {
        Finding::warn(
            format_size(avail),
            format!("enough for {p}, not for a second file pool of the same size; {files}"),
            format!(
                "free space in {} (`rtrec pool status` shows what the pool holds)",
                dir.display()
            ),
        )
    } else {
        Finding::pass(
            format_size(avail),
            format!("room for the planned {p} and its pool; {files}"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::verdict::Status;

    fn facts(line: &str) -> Facts {
        let m = rtrec_host::mounts::parse_mounts(line).remove(0);
        Facts::of(&std::env::temp_dir(), Some(m))
    }

    #[test]
    fn free_space_fails_where_an_open_ended_recording_would_refuse() {
        let dir = std::path::Path::new("/data");
        // The 8 MiB card of issue 31: 5.86 MiB free, 4 MiB planned.
        let small = free_space_of(6_146_048, 4 << 20, dir);
        assert_eq!(small.status, Status::Warn, "{small:?}");
        assert!(small.why.contains("files of 1 MiB"), "{small:?}");
        let tiny = free_space_of(3 << 20, 1 << 20, dir);
        assert_eq!(tiny.status, Status::Fail, "{tiny:?}");
        assert!(
            tiny.fix
                .as_deref()
                .unwrap_or("")
                .contains("rtrec record --file-size"),
            "{tiny:?}"
        );
        let big = free_space_of(100 << 30, 4 << 30, dir);
        assert_eq!(big.status, Status::Pass, "{big:?}");
        assert!(big.why.contains("files of 64 MiB"), "{big:?}");
    }

    #[test]
    fn lazytime_speaks_of_a_journal_only_where_there_is_one() {
        let tmpfs = lazytime(&facts("tmpfs / tmpfs rw,relatime 0 0\n"));
        assert_eq!(tmpfs.status, Status::Skip, "{tmpfs:?}");
        assert!(!tmpfs.why.contains("journal"), "{tmpfs:?}");
        let vfat = lazytime(&facts("/dev/mmcblk0p1 / vfat rw,relatime 0 0\n"));
        assert_eq!(vfat.status, Status::Warn);
        assert!(!vfat.why.contains("journal"), "{vfat:?}");
        let ext4 = lazytime(&facts("/dev/vda / ext4 rw,relatime 0 0\n"));
        assert!(ext4.why.contains("journal"), "{ext4:?}");
    }

    #[test]
    fn mount_options_are_judged_one_check_each() {
        let f = facts("/dev/vda / ext4 rw,relatime,discard,data=journal 0 0\n");
        assert_eq!(fs_type(&f).status, Status::Pass);
        assert_eq!(read_write(&f).status, Status::Pass);
        assert_eq!(noatime(&f).status, Status::Warn);
        assert_eq!(lazytime(&f).status, Status::Warn);
        assert_eq!(delalloc(&f).status, Status::Pass);
        assert_eq!(data_mode(&f).status, Status::Warn);
        assert_eq!(discard(&f).status, Status::Warn);
    }

    #[test]
    fn nobarrier_and_barrier_0_warn_that_the_durable_point_is_not_durable() {
        for (line, option) in [
            (
                "/dev/mmcblk0p2 /data ext4 rw,noatime,nobarrier 0 0\n",
                "nobarrier",
            ),
            (
                "/dev/mmcblk0p2 /data ext4 rw,barrier=0,data=ordered 0 0\n",
                "barrier=0",
            ),
        ] {
            let c = barrier(&facts(line));
            assert_eq!(
                (c.status, c.found.as_str()),
                (Status::Warn, option),
                "{line}"
            );
            assert!(c.why.contains("not durable"), "{c:?}");
            let m = &facts(line).mount.unwrap();
            let back = judge_barrier(m, Some("write back"));
            assert_eq!(back.status, Status::Warn);
            assert!(back.why.contains("write back"), "{back:?}");
            // A device without a volatile cache gets no flush either way.
            let through = judge_barrier(m, Some("write through"));
            assert_eq!(
                (through.status, through.found.as_str()),
                (Status::Pass, option)
            );
            assert!(through.why.contains("nothing to flush"), "{through:?}");
        }
        let c = barrier(&facts(
            "/dev/mmcblk0p2 /data ext4 rw,noatime,barrier=1 0 0\n",
        ));
        assert_eq!(c.status, Status::Pass);
    }

    #[test]
    fn barriers_claim_no_cache_the_device_says_it_lacks() {
        let m = &facts("/dev/mmcblk0 /card ext4 rw,relatime 0 0\n")
            .mount
            .unwrap();
        let through = judge_barrier(m, Some("write through"));
        assert_eq!(through.status, Status::Pass);
        assert!(
            through.why.contains("no volatile cache")
                && !through.why.contains("flushes the device's"),
            "{through:?}"
        );
        let back = judge_barrier(m, Some("write back"));
        assert!(
            back.why
                .contains("flushes the device's write cache (queue/write_cache: write back)"),
            "{back:?}"
        );
        assert!(judge_barrier(m, None).why.contains("if it has one"));
    }

    #[test]
    fn a_read_only_mount_fails_with_a_remount_read_write() {
        let f = facts("/dev/sdb1 /data ext4 ro,noatime 0 0\n");
        let c = read_write(&f);
        assert_eq!((c.status, c.found.as_str()), (Status::Fail, "ro"));
        assert_eq!(c.fix.as_deref(), Some("mount -o remount,rw /data"));
    }

    #[test]
    fn ext4_options_are_skipped_on_other_filesystems() {
        let f = facts("tmpfs /tmp tmpfs rw,nodelalloc 0 0\n");
        assert_eq!(fs_type(&f).status, Status::Warn);
        assert_eq!(delalloc(&f).status, Status::Skip);
        assert_eq!(data_mode(&f).status, Status::Skip);
        assert_eq!(journal_size(&f).status, Status::Skip);
    }

    #[test]
    fn a_directory_in_no_mount_is_skipped_not_guessed() {
        let f = Facts::of(&std::env::temp_dir(), None);
        for c in [fs_type(&f), read_write(&f), noatime(&f), journal_size(&f)] {
            assert_eq!(c.status, Status::Skip, "{c:?}");
        }
    }
}
