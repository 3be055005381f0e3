//! The I/O scheduler of a block device (`/sys/block/DEV/queue/scheduler`):
//! read, and changed only through a [`Journal`], which records the one in
//! use before another is set; and the scheduler's tunables
//! (`queue/iosched/NAME`, e.g. BFQ's `slice_idle`, `strict_guarantees`),
//! read and journaled the same way. Machine-wide, so changing it needs the
//! [`GlobalLock`](crate::lock::GlobalLock).

use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::change::{Change, EntryId};
use crate::error::{io_err, Result};
use crate::journal::Journal;
use crate::kernfs::{device_name, iosched_tunable_path, scheduler_path, write_file};

/// The I/O scheduler in use on block device `device` (`vda` or `/dev/vda`;
/// a whole disk, not a partition): the bracketed name in
/// `/sys/block/DEV/queue/scheduler`, e.g. `mq-deadline`, or `none`.
///
/// # Errors
/// `InvalidInput` for a malformed name; the error of reading the file.
pub fn read_scheduler(device: &str) -> io::Result<String> {
    let name = device_name(device).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let text = fs::read_to_string(scheduler_path(name))?;
    // A queue without a choice of scheduler shows just "none".
    Ok(bracketed(&text).unwrap_or(text.trim()).to_string())
}

/// The scheduler in force, bracketed in a `queue/scheduler` text
/// (`mq-deadline [bfq] none`).
fn bracketed(text: &str) -> Option<&str> {
    match (text.find('['), text.find(']')) {
        (Some(open), Some(close)) if open < close => Some(&text[open + 1..close]),
        _ => None,
    }
}

/// The scheduler in force (bracketed in `queue/scheduler`) of the block
/// device holding `path`, or of its whole disk for a partition; `None`
/// when it cannot be read or none is bracketed.
pub fn scheduler_of(path: &Path) -> Option<String> {
    let dev = fs::metadata(path).ok()?.dev();
    rtrec_sys::blockdev::queue_attribute(dev, "scheduler", |t| Some(bracketed(t)?.to_string()))
}

/// Sets the I/O scheduler of `device` to `scheduler`, recording the old one.
///
/// # Errors
/// As [`crate::sysctl::set`]; [`Error::Missing`](crate::Error::Missing) for
/// `bfq` on a kernel without BFQ; `EINVAL` from the kernel for another
/// scheduler it does not offer.
pub fn set_scheduler(journal: &Journal, device: &str, scheduler: &str) -> Result<EntryId> {
    let name = device_name(device)?;
    if scheduler == "bfq" {
        // "Invalid argument" from the kernel says nothing: name BFQ.
        crate::features::detect(crate::features::Feature::Bfq)
            .map_err(|m| crate::Error::Missing(m.to_string()))?;
    }
    let old = read_scheduler(name)
        .map_err(io_err(format_args!("reading the I/O scheduler of {name}")))?;
    let id = journal.record(Change::Scheduler {
        device: name.to_string(),
        old,
    })?;
    if let Err(e) = write_file(&scheduler_path(name), scheduler) {
        let _ = journal.forget(id);
        return Err(io_err(format_args!(
            "setting the I/O scheduler of {name} to {scheduler}"
        ))(e));
    }
    Ok(id)
}

/// BFQ's tunables that the isolation studies record and vary, in the order
/// reports print them.
pub const BFQ_TUNABLES: [&str; 6] = [
    "slice_idle",
    "fifo_expire_sync",
    "fifo_expire_async",
    "max_budget",
    "low_latency",
    "strict_guarantees",
];

/// The value of tunable `name` of the scheduler in use on `device`.
///
/// # Errors
/// `InvalidInput` for a malformed name; the error of reading the file
/// (`NotFound` when the scheduler in use has no such tunable).
pub fn read_tunable(device: &str, name: &str) -> io::Result<String> {
    let path = iosched_tunable_path(device, name)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    Ok(fs::read_to_string(path)?.trim().to_string())
}

/// Every tunable of [`BFQ_TUNABLES`] the scheduler in use on `device` has,
/// with its value (`slice_idle=8 …`).
pub fn bfq_tunables(device: &str) -> Vec<(String, String)> {
    BFQ_TUNABLES
        .iter()
        .filter_map(|n| read_tunable(device, n).ok().map(|v| (n.to_string(), v)))
        .collect()
}

/// Sets tunable `name` of the scheduler in use on `device` to `value`,
/// recording the old value first.
///
/// # Errors
/// As [`set_scheduler`]; `NotFound` when the scheduler has no such tunable.
pub fn set_tunable(journal: &Journal, device: &str, name: &str, value: &str) -> Result<EntryId> {
    let dev = device_name(device)?;
    let path = iosched_tunable_path(dev, name)?;
    let old =
        read_tunable(dev, name).map_err(io_err(format_args!("reading tunable {name} of {dev}")))?;
    let id = journal.record(Change::IoschedTunable {
        device: dev.to_string(),
        name: name.to_string(),
        old,
    })?;
    if let Err(e) = write_file(&path, value) {
        let _ = journal.forget(id);
        return Err(io_err(format_args!(
            "setting tunable {name} of {dev} to {value}"
        ))(e));
    }
    Ok(id)
}
