//! The sysfs directory of a block device by its number
//! (`/sys/dev/block/MAJ:MIN`) and the attributes of its request queue
//! (`queue/NAME`), a partition's read from its whole disk.
//!
//! Design choices:
//! - **Here, below the engine**: every other reader of `/proc` and `/sys`
//!   is in `rtrec-host`, but the engine's direct I/O needs the device's
//!   logical block size ([`crate::direct::logical_block_size`]) and the
//!   engine must not depend on `rtrec-host`; this crate is the lowest
//!   every user reaches (the engine, `rtrec-host`, the binary), so the one
//!   resolution of a device number to its sysfs directory lives here.
//! - **A partition's queue is its disk's**: a partition has no `queue/` of
//!   its own; its directory sits inside its whole disk's, so `../queue/`
//!   is tried after `queue/`.

use std::path::PathBuf;

/// `/sys/dev/block/MAJ:MIN` of device number `dev` (`st_dev`,
/// `st_rdev`): a symbolic link to the device's directory.
pub fn sysfs_dir(dev: u64) -> PathBuf {
    let (maj, min) = (rustix::fs::major(dev), rustix::fs::minor(dev));
    PathBuf::from(format!("/sys/dev/block/{maj}:{min}"))
}

/// Attribute `name` of the request queue of device `dev` (`queue/NAME`),
/// or of its whole disk when `dev` is a partition (see the module docs):
/// the first of the two files that reads and that `parse` accepts.
pub fn queue_attribute<T>(dev: u64, name: &str, parse: impl Fn(&str) -> Option<T>) -> Option<T> {
    let base = sysfs_dir(dev);
    [
        base.join("queue").join(name),
        base.join("../queue").join(name),
    ]
    .iter()
    .find_map(|p| parse(&std::fs::read_to_string(p).ok()?))
}

/// Whether the file system holding `fd` sits on rotating media: its
/// device's `queue/rotational` (the kernel's answer, which a loop device
/// inherits from its backing file's device). `None` when the file system
/// has no block device (tmpfs, FUSE, NFS) or sysfs does not say.
pub fn rotational(fd: impl std::os::fd::AsFd) -> Option<bool> {
    let dev = rustix::fs::fstat(fd).ok()?.st_dev;
    queue_attribute(dev, "rotational", |s| match s.trim() {
        "1" => Some(true),
        "0" => Some(false),
        _ => None,
    })
}
