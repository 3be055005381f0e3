//! The I/O scheduler of a block device (`/sys/block/DEV/queue/scheduler`):
//! read, and changed only through a [`Journal`], which records the one in
//! use before another is set. Machine-wide, so changing it needs the
//! [`GlobalLock`](crate::lock::GlobalLock).

use std::fs;
use std::io;

use crate::change::{Change, EntryId};
use crate::error::{io_err, Result};
use crate::journal::Journal;
use crate::kernfs::{device_name, scheduler_path, write_file};

/// The I/O scheduler in use on block device `device` (`vda` or `/dev/vda`;
/// a whole disk, not a partition): the bracketed name in
/// `/sys/block/DEV/queue/scheduler`, e.g. `mq-deadline`, or `none`.
///
/// # Errors
/// `InvalidInput` for a malformed name; the error of reading the file.
pub fn read_scheduler(device: &str) -> io::Result<String> {
    let name = device_name(device).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let text = fs::read_to_string(scheduler_path(name))?;
    let in_use = match (text.find('['), text.find(']')) {
        (Some(open), Some(close)) if open < close => &text[open + 1..close],
        // A queue without a choice of scheduler shows just "none".
        _ => text.trim(),
    };
    Ok(in_use.to_string())
}

/// Sets the I/O scheduler of `device` to `scheduler`, recording the old one.
///
/// # Errors
/// As [`crate::sysctl::set`]; `EINVAL` from the kernel for a scheduler it does not offer.
pub fn set_scheduler(journal: &Journal, device: &str, scheduler: &str) -> Result<EntryId> {
    let name = device_name(device)?;
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
